"""``aira catalog``: signed capability packages (new, lint, sign, verify, keygen), the
production catalog, and disclosure over it (search, describe, manifest, signatures)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from aira_core.cli._options import JsonFlag, _catalog, command_group
from aira_core.cli._output import _console, _json_text, _print_diagnostics, _print_json, _table

catalog_app = command_group("Signed capability packages and the production catalog.")


@catalog_app.command("list")
def catalog_list(
    as_json: JsonFlag = False,
    quarantine: Annotated[
        bool, typer.Option("--quarantine", help="Also show quarantined packages and why.")
    ] = False,
) -> None:
    """Show the production catalog (and, with --quarantine, what was kept out and why)."""
    catalog = _catalog(quiet=as_json)
    if as_json:
        _print_json(catalog.to_json(quarantine=quarantine))
        return
    rows = [
        [
            p.manifest.name,
            p.manifest.version,
            p.manifest.publisher,
            p.signature.key_id,
            str(len(p.manifest.descriptors)),
        ]
        for p in sorted(catalog.packages.values(), key=lambda p: p.manifest.name)
    ]
    console = _console()
    if rows:
        _table(
            "Production catalog", ["package", "version", "publisher", "key", "capabilities"], rows
        )
    else:
        console.print("The production catalog is empty: no admitted capability packages.")
    console.print(f"authoringLockHash    {catalog.authoring_lock_hash()}", soft_wrap=True)
    console.print(f"discoveryCatalogHash {catalog.discovery_catalog_hash()}", soft_wrap=True)
    if catalog.quarantine and not quarantine:
        console.print(
            f"[yellow]{len(catalog.quarantine)} package(s) in quarantine; "
            "see `aira catalog list --quarantine`[/yellow]"
        )
    if quarantine:
        from rich.markup import escape

        for q in catalog.quarantine:
            what = f"{q.name} {q.version or ''} (plugin {q.source.plugin}, {q.source.distribution})"
            console.print(f"[yellow]quarantined[/yellow] {escape(what)}")
            _print_diagnostics(list(q.reasons))


def _registered_capability_ids() -> set[str]:
    from aira_core.catalog.package import parse_package
    from aira_core.plugins import get_registry

    ids: set[str] = set()
    for entry in get_registry().entries("capability_packages"):
        parsed = parse_package(entry.obj)
        if parsed.manifest is not None:
            ids.update(d.capability_id for d in parsed.manifest.descriptors)
    return ids


def _lint_path(path: Path) -> tuple[Any, list[Any]]:
    from aira_core.catalog.lint import lint_manifest
    from aira_core.catalog.package import parse_package, source_from_path

    parsed = parse_package(source_from_path(path))
    if parsed.manifest is None:
        return parsed, parsed.diagnostics
    return parsed, lint_manifest(parsed.manifest, known_capabilities=_registered_capability_ids())


@catalog_app.command("new")
def catalog_new(
    name: Annotated[
        str, typer.Argument(help="Package name: lowercase words joined by . or - (acme.brackets).")
    ],
    directory: Annotated[
        Path | None,
        typer.Option(
            "--dir",
            help="Where to make it (default: ./aira-pack-<name>); it must not exist, or be empty.",
        ),
    ] = None,
    publisher: Annotated[
        str | None,
        typer.Option("--publisher", help="Who signs it (default: the name's first word)."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Make a new capability package, a distribution of its own: a workflow, a repair and a
    validator, lint clean, with tests; not signed (sign it with your own key).

    The other kinds (authoring.operation, model.query, converter, importer, exporter) are
    run by a kernel, which a package of data cannot bring (a kernel plugin does), so the
    package has none. Nothing is written unless all of it is."""
    import shlex

    from aira_core.catalog.scaffold import default_directory, scaffold_names, write_scaffold

    names = scaffold_names(name, publisher)
    target = directory if directory is not None else default_directory(names)
    write_scaffold(names, target)
    shown = str(target)  # as the user gave it: a private absolute path is not printed
    package_dir = names.package_dir()
    key = f"{names.publisher}.pem"
    steps = [
        f"cd {shlex.quote(shown)}",
        "pip install -e . && pytest",
        f"aira catalog lint {package_dir}",
        f"aira catalog keygen {key}",
        f"aira catalog sign {package_dir} --key {key}",
        f"aira trust add {names.publisher} {names.publisher}.pub",
        "pip install .",
        "aira catalog list",
    ]
    if as_json:
        _print_json(
            {
                "format": "aira.catalog-new/1",
                "package": names.name,
                "publisher": names.publisher,
                "distribution": names.distribution,
                "directory": shown,
                "packageDir": package_dir,
                "capabilities": names.capability_ids(),
                "signed": False,
                "nextSteps": steps,
            }
        )
        return
    typer.echo(
        f"made {names.name} (publisher {names.publisher}, distribution {names.distribution}) "
        f"in {shown}: {len(names.capability_ids())} capabilities, not signed"
    )
    typer.echo("next steps:")
    for step in steps:
        typer.echo(f"  {step}")


@catalog_app.command("lint")
def catalog_lint(
    path: Annotated[Path, typer.Argument(help="Package directory or manifest.")],
    as_json: JsonFlag = False,
) -> None:
    """Lint a capability package; exit 1 if there are findings."""
    parsed, findings = _lint_path(path)
    if as_json:
        _print_json(
            {
                "format": "aira.lint/1",
                "package": parsed.source.name,
                "ok": not findings,
                "findings": [f.model_dump(mode="json", exclude_none=True) for f in findings],
            }
        )
    elif findings:
        from rich.markup import escape

        name = escape(parsed.source.name)  # a file or package name, not markup
        _console().print(f"[red]{len(findings)} finding(s)[/red] in {name}:")
        _print_diagnostics(findings)
    else:
        typer.echo(
            f"{parsed.source.name}: lint clean ({len(parsed.manifest.descriptors)} capabilities)"
        )
    if findings:
        raise typer.Exit(1)


@catalog_app.command("sign")
def catalog_sign(
    path: Annotated[Path, typer.Argument(help="Package directory or manifest.")],
    key: Annotated[Path, typer.Option("--key", help="Ed25519 private key (PKCS#8 PEM).")],
) -> None:
    """Sign a lint-clean package; writes manifest.sig beside the manifest."""
    from aira_core.catalog.package import signature_path
    from aira_core.catalog.signing import load_private_key, public_key_path, sign_manifest
    from aira_core.catalog.trust import TrustPolicy
    from aira_core.files import write_file

    private = load_private_key(key)
    parsed, findings = _lint_path(path)
    if findings:
        _console().print(f"[red]not signed:[/red] {len(findings)} lint finding(s)")
        _print_diagnostics(findings)
        raise typer.Exit(1)
    sig = sign_manifest(parsed.raw, private, parsed.manifest.publisher)
    # the trust store is read before anything is written: a damaged one refuses the command
    # with the package as it was
    trusted = any(r.key.key_id == sig.key_id for r in TrustPolicy.load().records())
    out = signature_path(path)
    # replaces the package's signature, atomically and never through a symlink
    write_file(out, (json.dumps(sig.to_wire(), indent=2) + "\n").encode(), force=True)
    typer.echo(
        f"signed {parsed.manifest.name} {parsed.manifest.version} as "
        f"{sig.publisher} with key {sig.key_id} -> {out.name}"
    )
    if not trusted:
        pub = public_key_path(key)  # the public half keygen wrote beside the key, if it did
        named = pub.name if pub.is_file() else "<base64 public key>"
        typer.echo(
            f"note: key {sig.key_id} is not in your trust store; "
            f"`aira trust add {sig.publisher} {named}` to admit this package"
        )


@catalog_app.command("verify")
def catalog_verify(
    path: Annotated[Path, typer.Argument(help="Package directory or manifest.")],
    as_json: JsonFlag = False,
) -> None:
    """Verify a package's signature against the trust store; exit 1 if it does not verify."""
    from aira_core.catalog.package import parse_package, source_from_path
    from aira_core.catalog.trust import TrustPolicy
    from aira_core.diagnostics import AiraError, Diagnostic

    result: Any
    try:
        source = source_from_path(path)
    except AiraError as exc:  # not a package: the documented failure form, as a bad manifest
        package, result = path.name or str(path), exc.diagnostic
    else:
        package = source.name
        parsed = parse_package(source)
        if parsed.raw is None or not isinstance(parsed.raw, dict):
            result = (
                parsed.diagnostics[0]
                if parsed.diagnostics
                else Diagnostic(
                    code="MANIFEST_NOT_JSON", message="manifest.json is not a JSON object"
                )
            )
        else:
            publisher = parsed.raw.get("publisher")
            result = TrustPolicy.load().verify(parsed.canonical, str(publisher), source.signature)
    ok = not isinstance(result, Diagnostic)
    if as_json:
        body: dict[str, Any] = {"format": "aira.verify/1", "package": package, "ok": ok}
        if ok:
            body.update(publisher=result.publisher, keyId=result.key_id)
        else:
            body["error"] = result.model_dump(mode="json", exclude_none=True)
        _print_json(body)
    elif ok:
        typer.echo(f"{package}: signature OK (publisher {result.publisher}, key {result.key_id})")
    else:
        typer.echo(f"error: {result.code}: {result.message}", err=True)
    if not ok:
        raise typer.Exit(1)


@catalog_app.command("keygen")
def catalog_keygen(
    out: Annotated[
        Path, typer.Argument(help="Where to write the private key (PKCS#8 PEM, mode 0600).")
    ],
) -> None:
    """Make a new Ed25519 signing key; writes its public key beside it (NAME.pub, for `aira
    trust add`) and prints the public key and key id."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from aira_core.catalog.signing import key_id, private_key_pem, public_key_b64, public_key_path
    from aira_core.files import write_file

    key = Ed25519PrivateKey.generate()
    public = public_key_b64(key.public_key())
    # a key is never replaced (no --force): KEY_EXISTS for any file or symlink at either
    # path; a refused public half takes back the private key just made, so both or neither
    never = "a signing key is never overwritten; choose another path"
    written = write_file(
        out, private_key_pem(key), mode=0o600, exists_code="KEY_EXISTS", hint=never
    )
    pub = public_key_path(out)
    try:
        write_file(pub, f"{public}\n".encode(), mode=0o644, exists_code="KEY_EXISTS", hint=never)
    except BaseException:
        written.unlink(missing_ok=True)
        raise
    typer.echo(f"public key {public}")
    typer.echo(f"key id     {key_id(key.public_key())}")
    typer.echo(f"wrote      {out.name} (private, keep it) and {pub.name} (public)")


# -- discovery -------------------------------------------------------------------------------


def _disclosure(*, quiet: bool = False) -> Any:
    """Disclosure for the local user: the production catalog, the local grant, and the
    runtime snapshot of the installed kernels (without starting any of them), assembled as
    a task assembles its own."""
    from aira_core.catalog.disclosure import catalog_disclosure, kernels_snapshot
    from aira_core.catalog.policy import LOCAL_GRANT
    from aira_core.plugins import get_registry

    registry = get_registry()
    snapshot = kernels_snapshot(
        registry.named("kernels").values(), registry.named("validators").values()
    )
    return catalog_disclosure(_catalog(quiet=quiet), snapshot=snapshot, grant=LOCAL_GRANT)


@catalog_app.command("search")
def catalog_search(
    intent: Annotated[str, typer.Argument(help="What you want to do, in any words.")],
    top_k: Annotated[int, typer.Option("--top-k", help="At most this many hits (≤ 32).")] = 8,
    kind: Annotated[
        list[str] | None, typer.Option("--kind", help="Only this kind (repeatable).")
    ] = None,
    max_risk: Annotated[
        str | None, typer.Option("--max-risk", help="low, medium, high or critical.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """catalog.search: capabilities for an intent (L1 hits), or an explicit no match."""
    from pydantic import ValidationError

    from aira_core.contracts.search import SearchRequest
    from aira_core.diagnostics import AiraError

    try:
        request = SearchRequest.model_validate(
            {
                "intent": intent,
                "topK": top_k,
                "includeKinds": kind or [],
                "constraints": {"maxRisk": max_risk} if max_risk else {},
            },
            by_name=False,
        )
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = "/".join(str(p) for p in first["loc"])
        raise AiraError("SEARCH_REQUEST_INVALID", f"{first['msg']} at /{where}") from None
    response = _disclosure(quiet=as_json).search(request)
    if as_json:
        _print_json(response.to_wire())
        return
    if response.no_match:
        typer.echo(f"no match: {response.no_match_reason}")
        return
    _table(
        f"Hits for {intent!r}",
        ["capability", "kind", "relevance", "applicability", "why matched"],
        [
            [
                h.capability_id,
                h.kind.value,
                f"{h.retrieval_relevance:.2f}",
                h.runtime_applicability.value,
                ", ".join(h.why_matched[:4]),
            ]
            for h in response.hits
        ],
    )


@catalog_app.command("describe")
def catalog_describe(
    capability: Annotated[str, typer.Argument(help="A capability id, e.g. cap:exact.fillet@1.")],
    level: Annotated[
        str, typer.Option("--level", help="L2 (contract), L3 (+ guidance) or L4 (+ applicability).")
    ] = "L2",
    as_json: JsonFlag = False,
) -> None:
    """catalog.describe: a capability's contract (L2), guidance (L3) or applicability (L4)."""
    answer = _disclosure(quiet=as_json).describe(capability, level.upper())
    if as_json:
        _print_json(answer)
        return
    contract = answer["contract"]
    typer.echo(f"{contract['capabilityId']}  {contract['kind']}  {contract['title']}")
    typer.echo(f"  {contract['summary']}")
    from aira_core.catalog.signatures import signature

    typer.echo("  " + signature(capability, contract["inputSchema"], kind=contract["kind"]))
    for key in ("guidance", "applicability"):
        if key in answer:
            typer.echo(_json_text(answer[key]))


@catalog_app.command("manifest")
def catalog_manifest(as_json: JsonFlag = False) -> None:
    """interface.manifest (L0): versions, taxonomy root, meta-operations, snapshots, limits."""
    from aira_core.runtime.contract import CONTRACT_VERSION, MetaOperation

    manifest = _disclosure(quiet=as_json).manifest(
        meta_operations=[o.value for o in MetaOperation], contract_version=CONTRACT_VERSION
    )
    if as_json:
        _print_json(manifest)
        return
    shown = {k: v for k, v in manifest.items() if k != "contracts"}
    typer.echo(_json_text(shown))
    if manifest.get("contracts"):
        typer.echo(f"small catalog: {len(manifest['contracts'])} contracts inlined (see --json)")


@catalog_app.command("signatures")
def catalog_signatures_cmd(
    capabilities: Annotated[list[str], typer.Argument(help="Capability ids.")],
) -> None:
    """Compact step signatures of capabilities (what a step capsule shows a model)."""
    from aira_core.catalog.capabilities import capability_index
    from aira_core.catalog.signatures import LEGEND, catalog_signatures
    from aira_core.diagnostics import AiraError

    index = capability_index(_catalog())
    unknown = [c for c in capabilities if c not in index]
    if unknown:
        raise AiraError(
            "CAPABILITY_UNKNOWN", f"not in the production catalog: {', '.join(unknown)}"
        )
    typer.echo(LEGEND)
    typer.echo(catalog_signatures(index, capabilities))
