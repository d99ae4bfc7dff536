"""The ``aira`` command line.

Only typer is imported at the top: each command imports what it needs, so ``aira --help``
stays fast and never loads a plugin. Expected failures print ``error: CODE: message`` and
exit 1; there is never a traceback unless ``AIRA_DEBUG=1``.
"""

from __future__ import annotations

import json
import os
import re
import sys
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer

app = typer.Typer(
    name="aira",
    help="Aira: the host between AI models and CAD kernels.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
catalog_app = typer.Typer(
    help="Signed capability packages and the production catalog.", no_args_is_help=True
)
trust_app = typer.Typer(help="Publishers and keys trusted to admit packages.", no_args_is_help=True)
model_app = typer.Typer(help="The AMIR model: revisions, history, pages.", no_args_is_help=True)
plan_app = typer.Typer(help="Composite plans: check and apply.", no_args_is_help=True)
bench_app = typer.Typer(help="Benchmarks anyone can repeat.", no_args_is_help=True)
app.add_typer(catalog_app, name="catalog")
app.add_typer(trust_app, name="trust")
app.add_typer(model_app, name="model")
app.add_typer(plan_app, name="plan")
app.add_typer(bench_app, name="bench")

JsonFlag = Annotated[bool, typer.Option("--json", help="Machine-readable output (stable).")]


def _json_text(obj: Any) -> str:
    """``obj`` as JSON text for stdout. NaN, Infinity, a lone surrogate or a value nested too
    deeply to write is ``OUTPUT_NOT_JSON``: what aira prints as JSON always parses."""
    try:
        text = json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False)
        text.encode("utf-8")  # a lone surrogate would fail on the way out, half printed
        return text
    except (ValueError, RecursionError) as exc:
        from aira_core.diagnostics import AiraError

        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)[:200]
        raise AiraError(
            "OUTPUT_NOT_JSON", f"the result cannot be printed as JSON: {reason}"
        ) from None


def _print_json(obj: Any) -> None:
    typer.echo(_json_text(obj))


def _loads(data: bytes | str, name: str, code: str) -> Any:
    """The one reader of the JSON a user gives the command line, files and arguments alike:
    as strict as a manifest (``canonical.loads_strict``: no duplicate key, NaN/Infinity,
    inexact integer, bad UTF-8 or nesting beyond ``canonical.MAX_DEPTH``). Refused as
    ``code``, the message naming the input as ``name``."""
    from aira_core.canonical import StrictJSONError, loads_strict
    from aira_core.diagnostics import AiraError

    if isinstance(data, str):
        try:
            # argv keeps bytes that are not UTF-8 as lone surrogates: give them back, so
            # loads_strict refuses them as it refuses them in a file.
            data = data.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            raise AiraError(code, f"{name} is not UTF-8 text") from None
    try:
        return loads_strict(data, name)[0]
    except StrictJSONError as exc:
        raise AiraError(code, str(exc)) from None


def _read_json_file(
    path: Path, what: str, code: str = "INPUT_NOT_JSON", unreadable: str = "INPUT_UNREADABLE"
) -> Any:
    """The JSON in the file at ``path`` (a ``what``, e.g. "patch"), read by :func:`_loads`."""
    from aira_core.diagnostics import AiraError

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise AiraError(unreadable, f"cannot read {what} {path.name!r}: {exc.strerror}") from None
    return _loads(data, f"{what} {path.name!r}", code)


def _console() -> Any:
    from rich.console import Console

    return Console(highlight=False)


def _table(title: str, columns: list[str], rows: list[list[str]]) -> None:
    from rich.table import Table
    from rich.text import Text

    # Titles and cells hold user, model and catalog text: plain Text, never rich markup, so
    # "[/x]" prints as written instead of failing (or styling) the output.
    table = Table(title=Text(title, style="table.title"), title_justify="left")
    for col in columns:
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    _console().print(table)


def _print_diagnostics(diags: list[Any]) -> None:
    from rich.markup import escape

    console = _console()
    for d in diags:
        console.print(f"  [red]{d.code}[/red] {escape(d.message)}")


# -- plugins -------------------------------------------------------------------------------


@app.command("plugins")
def plugins_cmd(as_json: JsonFlag = False) -> None:
    """List installed plugins, what they register, and the ones that failed to load."""
    from aira_core.extensions import EXTENSION_TYPES
    from aira_core.plugins import get_registry

    registry = get_registry()
    registered: dict[str, dict[str, list[str]]] = {}
    for ext in EXTENSION_TYPES:
        for name, entry in registry.by_type[ext.key].items():
            registered.setdefault(entry.plugin, {}).setdefault(ext.key, []).append(name)
    if as_json:
        _print_json(
            {
                "format": "aira.plugins/1",
                "plugins": [
                    {**p.to_json(), "registered": registered.get(p.name, {})}
                    for p in registry.plugins
                ],
                "errors": [e.to_json() for e in registry.errors],
            }
        )
        return
    rows = [
        [
            p.name,
            p.distribution,
            p.version or "",
            p.status,
            "; ".join(
                f"{k}: {', '.join(sorted(v))}"
                for k, v in sorted(registered.get(p.name, {}).items())
            ),
        ]
        for p in registry.plugins
    ]
    _table("Plugins", ["name", "distribution", "version", "status", "registers"], rows)
    if registry.errors:
        from rich.markup import escape

        console = _console()
        console.print(f"[red]{len(registry.errors)} plugin error(s):[/red]")
        for e in registry.errors:
            where = f"{e.distribution} {e.version}" if e.version else e.distribution
            console.print(f"  [red]{e.code}[/red] {escape(f'{e.plugin} ({where}): {e.message}')}")


# -- catalog -------------------------------------------------------------------------------


@catalog_app.command("list")
def catalog_list(
    as_json: JsonFlag = False,
    quarantine: Annotated[
        bool, typer.Option("--quarantine", help="Also show quarantined packages and why.")
    ] = False,
) -> None:
    """Show the production catalog (and, with --quarantine, what was kept out and why)."""
    from aira_core.catalog.catalog import build_catalog

    catalog = build_catalog()
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
    from aira_core.catalog.signing import load_private_key, sign_manifest
    from aira_core.catalog.trust import TrustPolicy

    private = load_private_key(key)
    parsed, findings = _lint_path(path)
    if findings:
        _console().print(f"[red]not signed:[/red] {len(findings)} lint finding(s)")
        _print_diagnostics(findings)
        raise typer.Exit(1)
    sig = sign_manifest(parsed.raw, private, parsed.manifest.publisher)
    out = signature_path(path)
    out.write_text(json.dumps(sig.to_wire(), indent=2) + "\n")
    trusted = any(r.key.key_id == sig.key_id for r in TrustPolicy.load().records())
    typer.echo(
        f"signed {parsed.manifest.name} {parsed.manifest.version} as "
        f"{sig.publisher} with key {sig.key_id} -> {out.name}"
    )
    if not trusted:
        typer.echo(
            f"note: key {sig.key_id} is not in your trust store; "
            f"`aira trust add {sig.publisher} PUBLIC_KEY` to admit this package"
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
    """Make a new Ed25519 signing key; prints its public key and key id."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from aira_core.catalog.signing import key_id, private_key_pem, public_key_b64
    from aira_core.diagnostics import AiraError

    if out.exists():
        raise AiraError("KEY_EXISTS", f"{out.name!r} exists; refusing to overwrite a key")
    key = Ed25519PrivateKey.generate()
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(private_key_pem(key))
    typer.echo(f"public key {public_key_b64(key.public_key())}")
    typer.echo(f"key id     {key_id(key.public_key())}")


# -- discovery -------------------------------------------------------------------------------


def _disclosure() -> Any:
    """Disclosure for the local user: the production catalog, the local grant, and the
    runtime snapshot of the installed kernels (without starting any of them)."""
    from datetime import UTC

    from aira_core.catalog.catalog import build_catalog
    from aira_core.catalog.disclosure import catalog_disclosure
    from aira_core.contracts.capability import RuntimeCapabilitySnapshot
    from aira_core.plugins import get_registry
    from aira_core.runtime.plan import LOCAL_GRANT

    components = []
    for kernel in get_registry().named("kernels").values():
        snapshot = getattr(kernel, "runtime_snapshot", None)
        if callable(snapshot):
            components += snapshot().components
    runtime = (
        RuntimeCapabilitySnapshot(captured_at=datetime.now(UTC), components=components)
        if components
        else None
    )
    return catalog_disclosure(build_catalog(), snapshot=runtime, grant=LOCAL_GRANT)


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
    response = _disclosure().search(request)
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
    answer = _disclosure().describe(capability, level.upper())
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

    manifest = _disclosure().manifest(
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
    from aira_core.catalog.catalog import build_catalog
    from aira_core.catalog.signatures import LEGEND, catalog_signatures
    from aira_core.diagnostics import AiraError
    from aira_core.runtime.plan import capability_index

    index = capability_index(build_catalog())
    unknown = [c for c in capabilities if c not in index]
    if unknown:
        raise AiraError(
            "CAPABILITY_UNKNOWN", f"not in the production catalog: {', '.join(unknown)}"
        )
    typer.echo(LEGEND)
    typer.echo(catalog_signatures(index, capabilities))


@bench_app.command("discovery")
def bench_discovery(
    queries: Annotated[
        Path, typer.Option("--queries", help="The query set (aira.discovery-benchmark/1).")
    ] = Path("benchmarks/discovery/queries.json"),
    as_json: JsonFlag = False,
) -> None:
    """Recall@1/@5, MRR, no-match accuracy and latency of catalog search over the benchmark
    queries: BM25 alone, the default hybrid, and the hybrid with embeddings if installed."""
    from aira_core.catalog import embeddings, evaluation
    from aira_core.catalog.catalog import build_catalog
    from aira_core.diagnostics import AiraError

    name, items = evaluation.load_queries(queries)
    catalog = build_catalog()
    package = catalog.packages.get(name)
    if package is None:
        raise AiraError(
            "BENCH_CATALOG_MISSING",
            f"the benchmark searches package {name!r}, which is not in the production catalog",
        )
    results = evaluation.run(
        package.descriptors(), package.manifest.schemas, items, embedder=embeddings.load()
    )
    report = {"format": "aira.bench.discovery/1", "catalog": name, "configurations": results}
    if as_json:
        _print_json(report)
        return
    columns = ["recallAt1", "recallAt5", "mrr", "noMatchAccuracy", "falseNoMatch", "p50Ms", "p95Ms"]
    rows = []
    for config, result in results.items():
        if "skipped" in result:
            rows.append([config, result["skipped"], *[""] * (len(columns) - 1)])
            continue
        for half in ("all", "dev", "test"):
            if half in result:
                rows.append([f"{config} ({half})", *[str(result[half][c]) for c in columns]])
    _table(
        f"Discovery benchmark: {len(items)} queries over {name}", ["configuration", *columns], rows
    )


# -- the step host: run, demo, trace ------------------------------------------------------------

TierOption = Annotated[
    str | None, typer.Option("--tier", help="T32, T128 or T200 (default: the script's).")
]


def _run_dir(name: str) -> Path:
    from aira_core.config import aira_home

    stamp = datetime.now().strftime("%Y%m%dT%H%M%S%f")
    return aira_home() / "runs" / f"{name}-{stamp}"


def _shown(path: Path) -> str:
    """A path as the user may see it: relative to AIRA_HOME (no private absolute paths)."""
    from aira_core.config import aira_home

    try:
        return "$AIRA_HOME/" + path.relative_to(aira_home()).as_posix()
    except ValueError:
        return path.name


def _progress(record: dict[str, Any]) -> None:
    decision = record["decision"]
    act = decision.get("act", "?")
    result = record["result"]
    status = result.get("status", "?")
    extra = result.get("code") or result.get("rev", "")[:24] or result.get("terminal") or ""
    typer.echo(
        f"  step {record['step']:>2}  round {record['round']}  {act:<8} "
        f"prompt {record['promptTokens']:>6}/{record['budgetTokens']} tok  {status} {extra}"
    )


def _run_one(
    script: Any, kernel: Any, tier: str | None, trajectory: Path | None, quiet: bool
) -> Any:
    from aira_core.step.runner import run_script

    where = _run_dir(script.name)
    return run_script(
        script,
        kernel=kernel,
        store=where / "store.sqlite3",
        trajectory=trajectory or where / "trajectory.jsonl",
        tier_name=tier,
        outputs=where,
        on_step=None if quiet else _progress,
    )


def _run_report(run: Any) -> dict[str, Any]:
    o = run.outcome
    return {
        "script": run.script.name,
        "terminal": o.terminal.value if o.terminal else None,
        "reason": o.reason,
        "head": o.head,
        "steps": o.steps,
        "rounds": o.rounds,
        "maxPromptTokens": o.max_prompt_tokens,
        "budgetTokens": o.records[0]["budgetTokens"] if o.records else None,
        "trajectory": _shown(run.trajectory),
        "files": {k: _shown(v) for k, v in run.files.items()},
    }


@app.command("run")
def run_cmd(
    script: Annotated[Path, typer.Option("--script", help="An aira.decision-script/1 file.")],
    tier: TierOption = None,
    trajectory: Annotated[
        Path | None, typer.Option("--trajectory", help="Where to write the trajectory (JSONL).")
    ] = None,
    resume: Annotated[
        Path | None,
        typer.Option("--resume", help="A run directory (store + trajectory) to continue."),
    ] = None,
    kernel: KernelOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Run a decision script through the bounded-step host on a new store (or continue an
    interrupted run with --resume). Exit 0 only when the runtime says completed."""
    from aira_core.step.runner import resume_script
    from aira_core.step.trajectory import ensure_new_trajectory, load_script

    loaded = load_script(script)
    if resume is None and trajectory is not None:
        # Before the run's directory and store exist: a refused run leaves nothing behind.
        ensure_new_trajectory(trajectory)
    chosen = _kernel(kernel, "running a task")
    if not as_json:
        typer.echo(f"{loaded.name}: {loaded.title or loaded.intent.goal}")
    if resume is not None:
        run = resume_script(
            loaded,
            kernel=chosen,
            store=resume / "store.sqlite3",
            trajectory=trajectory or resume / "trajectory.jsonl",
            tier_name=tier,
            outputs=resume,
            on_step=None if as_json else _progress,
        )
    else:
        run = _run_one(loaded, chosen, tier, trajectory, as_json)
    report = _run_report(run)
    if as_json:
        _print_json({"format": "aira.run/1", **report})
    else:
        typer.echo(f"  -> {report['terminal']} ({report['reason']}), head {report['head']}")
    if report["terminal"] != "completed":
        raise typer.Exit(1)


@app.command("demo")
def demo_cmd(
    tier: TierOption = None,
    kernel: KernelOption = None,
    as_json: JsonFlag = False,
) -> None:
    """The main job, on embedded defaults: replay the bundled design tasks (a mounting
    bracket, a flanged shaft, a parametric edit) step by step on the OCCT kernel, then write
    each task's STEP file, SVG preview and trajectory. No API key needed."""
    from aira_core.step.runner import BUNDLED, bundled_script

    chosen = _kernel(kernel, "the demo builds real geometry")
    reports = []
    for name in BUNDLED:
        script = bundled_script(name)
        if not as_json:
            typer.echo(f"\n{script.title}")
        reports.append(_run_report(_run_one(script, chosen, tier, None, as_json)))
    if as_json:
        _print_json({"format": "aira.demo/1", "tasks": reports})
    else:
        typer.echo("")
        _table(
            "Demo",
            ["task", "end", "steps", "rounds", "max prompt / B (tok)"],
            [
                [
                    r["script"],
                    str(r["terminal"]),
                    str(r["steps"]),
                    str(r["rounds"]),
                    f"{r['maxPromptTokens']} / {r['budgetTokens']}",
                ]
                for r in reports
            ],
        )
        for r in reports:
            where = r["trajectory"].rsplit("/", 1)[0]
            names = [p.rsplit("/", 1)[1] for p in r["files"].values()]
            typer.echo(f"{r['script']}: {where}/ {' '.join([*names, 'trajectory.jsonl'])}")
    if any(r["terminal"] != "completed" for r in reports):
        raise typer.Exit(1)


@bench_app.command("capsule")
def bench_capsule(
    tier: TierOption = None,
    kernel: KernelOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Per bundled task: the largest capsule + log against B, the input sent against a
    transcript baseline from the same trajectory, and the host's overhead per step."""
    from aira_core.step.bench import OVERHEAD_TARGET_MS, capsule_report
    from aira_core.step.runner import BUNDLED, bundled_script

    chosen = _kernel(kernel, "the bundled tasks build real geometry")
    reports = {}
    for name in BUNDLED:
        run = _run_one(bundled_script(name), chosen, tier, None, True)
        reports[name] = {
            "terminal": run.outcome.terminal.value if run.outcome.terminal else None,
            **capsule_report(run.outcome.records),
        }
    if as_json:
        _print_json(
            {
                "format": "aira.bench.capsule/1",
                "targetOverheadP50Ms": OVERHEAD_TARGET_MS,
                "tasks": reports,
            }
        )
        return
    _table(
        "Bounded host per bundled task",
        [
            "task",
            "steps",
            "max prompt / B (tok)",
            "input vs transcript (tok)",
            "ratio",
            "overhead p50/p95 ms",
        ],
        [
            [
                name,
                str(r["steps"]),
                f"{r['maxPromptTokens']} / {r['budgetTokens']}",
                f"{r['inputTokens']} vs {r['transcriptTokens']}",
                str(r["ratio"]),
                f"{r['overheadP50Ms']} / {r['overheadP95Ms']}",
            ]
            for name, r in reports.items()
        ],
    )
    typer.echo(f"target: host overhead p50 <= {OVERHEAD_TARGET_MS} ms per step")


trace_app = typer.Typer(help="Trajectories of step-host runs.", no_args_is_help=True)
app.add_typer(trace_app, name="trace")


@trace_app.command("show")
def trace_show(
    file: Annotated[Path, typer.Argument(help="A trajectory (JSONL).")],
    as_json: JsonFlag = False,
) -> None:
    """One line per step: act, capsule and log size, result; then how the task ended."""
    from aira_core.step.trajectory import read_trajectory

    # read_trajectory checked every record's shape: the fields used here are there and typed.
    header, records = read_trajectory(file)
    if as_json:
        _print_json({"header": header, "records": records})
        return
    rows = [
        [
            str(r["step"]),
            str(r["round"]),
            r["decision"].get("act") or "?",
            f"{r['capsuleBytes']}",
            f"{r['logBytes']}",
            f"{r['promptTokens']}/{r['budgetTokens']}",
            f"{r['result']['status']} {r['result'].get('code') or ''}".rstrip(),
        ]
        for r in records
        if "step" in r
    ]
    _table(
        f"{header.get('script') or file.name} ({header.get('tier')})",
        ["step", "round", "act", "capsule B", "log B", "prompt tok", "result"],
        rows,
    )
    end = next((r for r in records if "end" in r), None)
    if end:
        typer.echo(f"end: {end['terminal']} ({end['reason']}), head {end['head']}")


# -- trust ---------------------------------------------------------------------------------


@trust_app.command("list")
def trust_list(as_json: JsonFlag = False) -> None:
    """Show trusted publishers and keys (built-in and your own)."""
    from datetime import UTC

    from aira_core.catalog.trust import TrustPolicy

    now = datetime.now(UTC)
    keys = [r.to_json(now) for r in TrustPolicy.load().records()]
    if as_json:
        _print_json({"format": "aira.trust/1", "keys": keys})
        return
    _table(
        "Trusted keys",
        ["publisher", "key id", "public key", "expires", "state"],
        [
            [
                k["publisher"],
                k["keyId"],
                k["publicKey"],
                k["expiresAt"] or "never",
                "revoked"
                if k["revoked"]
                else "expired"
                if k["expired"]
                else ("built-in" if k["builtin"] else "trusted"),
            ]
            for k in keys
        ],
    )


@trust_app.command("add")
def trust_add(
    publisher: str,
    public_key: Annotated[str, typer.Argument(help="base64 of the raw 32-byte key")],
    expires: Annotated[
        datetime | None,
        typer.Option("--expires", help="Expiry (ISO date or date-time, UTC if no zone)."),
    ] = None,
) -> None:
    """Trust a publisher's public key."""
    import re
    from datetime import UTC

    from aira_core.catalog.trust import add_key
    from aira_core.contracts.package import PACKAGE_NAME_PATTERN
    from aira_core.diagnostics import AiraError

    if not re.match(PACKAGE_NAME_PATTERN, publisher):
        raise AiraError(
            "TRUST_PUBLISHER_INVALID",
            f"publisher {publisher!r} must be lowercase words joined by . or -",
        )
    if expires is not None and expires.tzinfo is None:
        expires = expires.replace(tzinfo=UTC)
    key = add_key(publisher, public_key, expires)
    typer.echo(f"trusted key {key.key_id} for {publisher}")


@trust_app.command("revoke")
def trust_revoke(key_id: str) -> None:
    """Revoke a key (built-in keys too); packages signed with it go to quarantine."""
    from aira_core.catalog.trust import revoke_key

    record = revoke_key(key_id)
    typer.echo(f"revoked key {record.key.key_id} of {record.publisher}")


# -- schema --------------------------------------------------------------------------------


# -- model ---------------------------------------------------------------------------------

StoreOption = Annotated[
    Path | None,
    typer.Option("--store", help="Store file (default: models/store.sqlite3 in AIRA_HOME)."),
]
BranchOption = Annotated[str, typer.Option("--branch", help="main or task/<id>.")]


def _repository(store: Path | None) -> Any:
    from aira_core.model.repository import ModelRepository

    return ModelRepository.open(store)


def _rev(repo: Any, ref: str) -> str:
    """A revision id, or a branch name standing for its head."""
    return repo.head(ref) if not ref.startswith("rev:") else ref


@model_app.command("init")
def model_init(
    document: Annotated[
        Path | None, typer.Option("--from", help="Start from this AMIR document (JSON).")
    ] = None,
    kernel: KernelOption = None,
    store: StoreOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Create the store and its main branch (empty, or from a document).

    A document's node inputs are checked against the operations of the admitted catalog,
    as `aira model patch` checks them; if it has assertions, it is evaluated and each
    assertion validated on the installed kernel (the only one, or --kernel NAME), as at
    every commit. A refused document creates nothing.
    """
    from pydantic import ValidationError

    from aira_core.contracts.amir import AmirDocument
    from aira_core.diagnostics import AiraError
    from aira_core.model.patch import PatchRejected, validate_document
    from aira_core.model.repository import ModelRepository

    chosen = _kernel(kernel, "--kernel") if kernel is not None else None
    doc = None
    if document is not None:
        try:
            doc = AmirDocument.model_validate(_read_json_file(document, "document"), by_name=False)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            raise AiraError(
                "AMIR_DOCUMENT_INVALID",
                f"{document.name}: {first['msg']} at "
                + "/".join(str(p) for p in first["loc"])
                + f" ({exc.error_count()} errors)",
            ) from None
    signatures = _catalog_signatures() if doc is not None else None
    if doc is not None and doc.assertions:
        # Stored with failing assertions, the document would refuse every later patch (each
        # commit re-checks them): checked as a commit is, operations first, then the kernel.
        problems = validate_document(doc, signatures)
        if problems:
            raise PatchRejected(problems)
        needed = (
            f"the document has {len(doc.assertions)} assertion(s), "
            "checked on a kernel before it is stored"
        )
        _check_assertions(chosen or _kernel(None, needed), AmirDocument(), doc)
    with ModelRepository.open(store, signatures) as repo:
        revision = repo.init(doc)
    if as_json:
        _print_json({"format": "aira.model.init/1", "branch": "main", "rev": revision.rev})
    else:
        typer.echo(f"initialised main at {revision.rev}")


@model_app.command("log")
def model_log(
    branch: BranchOption = "main",
    limit: Annotated[int, typer.Option("--limit", min=1)] = 20,
    store: StoreOption = None,
    as_json: JsonFlag = False,
) -> None:
    """A branch's history, newest first."""
    with _repository(store) as repo:
        records = repo.store.log(branch, limit)
    rows = [
        {
            "seq": r.seq,
            "branch": r.branch,
            "rev": r.rev,
            "parent": r.parent,
            "kind": r.kind,
            "message": r.message,
            "createdAt": r.created_at,
        }
        for r in records
    ]
    if as_json:
        _print_json({"format": "aira.model.log/1", "branch": branch, "records": rows})
        return
    _table(
        f"History of {branch}",
        ["seq", "kind", "rev", "message", "at"],
        [[str(r["seq"]), r["kind"], r["rev"], r["message"], r["createdAt"]] for r in rows],
    )


@model_app.command("show")
def model_show(
    rev: Annotated[str, typer.Argument(help="A revision id, or a branch for its head.")] = "main",
    store: StoreOption = None,
    as_json: JsonFlag = False,
) -> None:
    """The summary of a revision: counts, block hashes, roots and the first aliases."""
    with _repository(store) as repo:
        summary = repo.summary(_rev(repo, rev))
    if as_json:
        _print_json(summary.to_wire())
        return
    console = _console()
    console.print(f"revision {summary.rev}", soft_wrap=True)
    for block, count in summary.counts.items():
        console.print(f"  {block:<11} {count:>5}  {summary.blocks[block]}", soft_wrap=True)
    if summary.aliases:
        _table("Aliases", ["alias", "id"], [[a, i] for a, i in summary.aliases.items()])
    if summary.aliases_omitted:
        console.print(f"  {summary.aliases_omitted} more aliases: `aira model read --select`")


@model_app.command("read")
def model_read(
    select: Annotated[
        str, typer.Option("--select", help='A path: \'["nodes","n:base"]\' or nodes/n:base.')
    ],
    rev: Annotated[str, typer.Option("--rev", help="Revision or branch.")] = "main",
    limit: Annotated[int, typer.Option("--limit", min=1)] = 50,
    offset: Annotated[int, typer.Option("--offset", min=0)] = 0,
    store: StoreOption = None,
    as_json: JsonFlag = False,
) -> None:
    """A bounded page of a revision: a block, or one entity by alias or id."""
    if select.lstrip().startswith("["):
        path = _loads(select, "--select", "SELECT_PATH_INVALID")
    else:
        path = [part for part in select.split("/") if part]
    with _repository(store) as repo:
        page = repo.select(_rev(repo, rev), path, limit, offset)
    body = page.to_wire()
    if as_json:
        _print_json(body)
        return
    typer.echo(_json_text(body))


@model_app.command("diff")
def model_diff(
    rev_a: Annotated[str, typer.Argument(help="Revision or branch.")],
    rev_b: Annotated[str, typer.Argument(help="Revision or branch.")],
    store: StoreOption = None,
    as_json: JsonFlag = False,
) -> None:
    """The blocks that changed between two revisions."""
    with _repository(store) as repo:
        a, b = _rev(repo, rev_a), _rev(repo, rev_b)
        changed = repo.diff(a, b)
    if as_json:
        _print_json({"format": "aira.model.diff/1", "from": a, "to": b, "changedBlocks": changed})
        return
    typer.echo("\n".join(changed) if changed else "no block changed")


def _catalog_signatures() -> Any:
    """Operation signatures of the admitted production catalog."""
    from aira_core.catalog.catalog import build_catalog
    from aira_core.model.operations import signatures_from_descriptors

    catalog = build_catalog()
    return signatures_from_descriptors(
        (d, p.manifest.schemas) for p in catalog.packages.values() for d in p.manifest.descriptors
    )


KernelOption = Annotated[
    str | None, typer.Option("--kernel", help="Kernel name (default: the only one installed).")
]


def _kernel(name: str | None, needed_for: str) -> Any:
    """The installed kernel called ``name``, or the only one installed; else
    ``KERNEL_UNAVAILABLE`` saying what it was ``needed_for``."""
    from aira_core.diagnostics import AiraError
    from aira_core.plugins import get_registry

    kernels = get_registry().named("kernels")
    installed = ", ".join(sorted(kernels)) or "none"
    if name is not None and name not in kernels:
        raise AiraError(
            "KERNEL_UNAVAILABLE", f"no kernel named {name!r} ({needed_for}); installed: {installed}"
        )
    if name is None and len(kernels) != 1:
        raise AiraError(
            "KERNEL_UNAVAILABLE",
            f"{needed_for}: "
            + ("no kernel is installed" if not kernels else "choose a kernel with --kernel")
            + f"; installed: {installed}",
        )
    return kernels[name] if name is not None else next(iter(kernels.values()))


def _check_assertions(kernel: Any, before: Any, document: Any) -> None:
    """Evaluate ``document`` on ``kernel`` and validate every assertion; raise
    :class:`PatchRejected` with the diagnostics of what failed."""
    from aira_core.diagnostics import AiraError, Diagnostic
    from aira_core.model.patch import PatchRejected, changed_nodes

    try:
        evaluation = kernel.evaluate(document, changed_nodes(before, document))
        outcomes = (
            [kernel.validate(document, a) for a in document.assertions] if evaluation.ok else []
        )
    except Exception as exc:  # a kernel bug: a code, not a traceback
        raise AiraError(
            "KERNEL_FAILED",
            f"the kernel {kernel.name!r} raised {type(exc).__name__}: {exc}",
        ) from None
    if not evaluation.ok:
        raise PatchRejected(
            [d.model_copy(update={"phase": "preview"}) for d in evaluation.diagnostics]
        )
    failing = [
        d.model_copy(update={"phase": "validate"})
        for o in outcomes
        if not o.passed
        for d in (
            o.diagnostics
            or [
                Diagnostic(
                    code="ASSERTION_FAILED",
                    subject=o.assertion,
                    message=f"assertion {o.assertion} failed: {dict(o.measured)}",
                )
            ]
        )
    ]
    if failing:
        raise PatchRejected(failing)


@model_app.command("patch")
def model_patch(
    patch: Annotated[Path, typer.Argument(help='AMIR patch JSON: {"ops": [...]}.')],
    branch: BranchOption = "main",
    expect: Annotated[
        str | None, typer.Option("--expect", help="Refuse unless the head is this revision.")
    ] = None,
    message: Annotated[str, typer.Option("--message", "-m")] = "",
    kernel: KernelOption = None,
    store: StoreOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Apply an AMIR patch to a branch head and commit it (all or nothing).

    Node inputs are checked against the operations of the admitted catalog; an operation
    that no admitted capability provides is refused. Assertions are re-checked on every
    commit: if the patched document has assertions, it is evaluated and each assertion
    validated on the installed kernel (the only one, or --kernel NAME), and any failure
    refuses the commit with its diagnostics. A document with assertions cannot be
    committed without a kernel: KERNEL_UNAVAILABLE.
    """
    from aira_core.model.patch import apply_patch
    from aira_core.model.repository import ModelRepository

    ops = _read_json_file(patch, "patch")
    with ModelRepository.open(store, _catalog_signatures()) as repo:
        head = expect or repo.head(branch)
        before = repo.document(head)
        chosen = _kernel(kernel, "--kernel") if kernel is not None else None
        document = apply_patch(before, ops, repo.signatures)
        if document.assertions:
            needed = (
                f"the patched document has {len(document.assertions)} assertion(s), "
                "re-checked on a kernel at every commit"
            )
            _check_assertions(chosen or _kernel(None, needed), before, document)
        revision = repo.commit(branch, head, document, message or f"patch {patch.name}")
    if as_json:
        _print_json(
            {"format": "aira.model.patch/1", "branch": branch, "from": head, "rev": revision.rev}
        )
        return
    typer.echo(f"{branch}: {head} -> {revision.rev}")


@model_app.command("export")
def model_export(
    file_format: Annotated[
        str, typer.Option("--format", help="step, stl, 3mf, svg, or mesh (display-mesh JSON).")
    ],
    out: Annotated[Path, typer.Option("--out", help="File to write.")],
    body: Annotated[
        str | None, typer.Option("--body", help="Body alias or id (default: all bodies).")
    ] = None,
    rev: Annotated[str, typer.Option("--rev", help="Revision or branch.")] = "main",
    kernel: KernelOption = None,
    store: StoreOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Export a revision's bodies through the kernel (a file outside the model)."""
    from aira_core.diagnostics import AiraError

    chosen = _kernel(kernel, f"exporting {file_format}")
    with _repository(store) as repo:
        at = _rev(repo, rev)
        document = repo.document(at)
        target = repo.aliases(at).resolve(body) if body is not None else None
    data = chosen.export(document, file_format.lower(), target)
    if not data:
        reasons = getattr(chosen, "last_export_diagnostics", None) or []
        detail = "; ".join(f"{d.code}: {d.message}" for d in reasons)
        raise AiraError(
            "EXPORT_FAILED",
            f"the kernel wrote nothing for {file_format!r}" + (f" ({detail})" if detail else ""),
        )
    try:
        out.write_bytes(data)
    except OSError as exc:
        raise AiraError("EXPORT_FAILED", f"cannot write {out.name!r}: {exc.strerror}") from None
    if as_json:
        _print_json(
            {
                "format": "aira.model.export/1",
                "rev": at,
                "body": target,
                "fileFormat": file_format.lower(),
                "bytes": len(data),
                "out": out.name,
            }
        )
    else:
        typer.echo(f"wrote {len(data)} bytes of {file_format.lower()} to {out.name}")


IMPORT_MAX_BYTES = 8 * 1024 * 1024
"""An imported file's content is stored in every later revision: keep it bounded."""


@model_app.command("import")
def model_import(
    file: Annotated[Path, typer.Argument(help="The file to import.")],
    file_format: Annotated[
        str | None, typer.Option("--format", help="step (default: from the file's suffix).")
    ] = None,
    label: Annotated[
        str | None, typer.Option("--label", help="Label of the new body (alias b:<label>).")
    ] = None,
    branch: BranchOption = "main",
    kernel: KernelOption = None,
    store: StoreOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Import a file as a new body through an admitted importer (e.g. cap:io.importStep@1);
    the file's content goes into the revision, so the model does not depend on the file."""
    from aira_core.catalog.catalog import build_catalog
    from aira_core.contracts.capability import CapabilityKind, short_name
    from aira_core.contracts.plan import Plan
    from aira_core.diagnostics import AiraError
    from aira_core.model.aliases import label_alias_safe

    kind = (file_format or file.suffix.lstrip(".")).lower()
    kind = {"stp": "step"}.get(kind, kind)
    importers = {
        short_name(cap).lower(): cap
        for cap, d in build_catalog().capabilities().items()
        if d.kind is CapabilityKind.IMPORTER
    }
    capability = importers.get(f"import{kind}")
    if capability is None:
        known = sorted(
            name.removeprefix("import") for name in importers if name.startswith("import")
        )
        raise AiraError(
            "IMPORT_UNSUPPORTED",
            f"no admitted importer reads {kind or 'this file'!r}; known: "
            + (", ".join(known) or "none"),
        )
    try:
        size = file.stat().st_size
        if size > IMPORT_MAX_BYTES:
            raise AiraError(
                "IMPORT_FAILED", f"{file.name!r} is {size} bytes; at most {IMPORT_MAX_BYTES}"
            )
        text = file.read_text(encoding="utf-8", errors="strict")
    except UnicodeDecodeError:
        raise AiraError("IMPORT_FAILED", f"{file.name!r} is not a text file") from None
    except OSError as exc:
        raise AiraError("IMPORT_FAILED", f"cannot read {file.name!r}: {exc.strerror}") from None
    if label is not None and not label_alias_safe(label):
        raise AiraError(
            "LABEL_INVALID",
            f"--label {label[:60]!r} cannot be an alias: a letter, then up to 47 letters, digits, "
            "'_' or '-', and not shaped like a short id",
        )
    chosen = _kernel(kernel, f"importing {kind}")
    ctx = _plan_context(store, branch, None, None)
    try:
        head = ctx.repository.head(branch)
        aliases = ctx.repository.aliases(head)
    except Exception:
        ctx.repository.close()
        raise
    if label is None:  # the file's name, made alias-safe and free ('plate v2.step' -> plate_v2)
        stem = re.sub(r"[^A-Za-z0-9_-]+", "_", file.stem).strip("_-")[:40] or "import"
        base = stem if label_alias_safe(stem) else f"import_{stem}"[:47]
        label = base
        n = 2
        while f"b:{label}" in aliases:
            label, n = f"{base}_{n}", n + 1
    elif f"b:{label}" in aliases:
        ctx.repository.close()
        raise AiraError("LABEL_TAKEN", f"b:{label} already names a body; choose another --label")
    step = {"id": "import", "capability": capability, "label": label, "args": {"data": text}}
    the_plan = Plan.model_validate({"baseRevision": head, "steps": [step]}, by_name=False)
    if not as_json:
        typer.echo(f"importing {file.name} as b:{label}")
    _apply_and_report(ctx, chosen, the_plan, publish=False, approve=False, as_json=as_json)


@model_app.command("revert")
def model_revert(
    rev: Annotated[str, typer.Argument(help="The revision to restore.")],
    branch: BranchOption = "main",
    store: StoreOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Restore an earlier revision as a new history record (history is never rewritten)."""
    with _repository(store) as repo:
        head = repo.head(branch)
        revision = repo.revert(branch, head, rev, f"revert to {rev}")
    if as_json:
        _print_json(
            {"format": "aira.model.revert/1", "branch": branch, "from": head, "rev": revision.rev}
        )
        return
    typer.echo(f"{branch}: {head} -> {revision.rev}")


# -- plan ----------------------------------------------------------------------------------


def _load_model(path: Path, model: Any, what: str) -> Any:
    from pydantic import ValidationError

    from aira_core.diagnostics import AiraError

    try:
        return model.model_validate(_read_json_file(path, what), by_name=False)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = "/".join(str(p) for p in first["loc"])
        raise AiraError(
            f"{what.upper().replace(' ', '_')}_INVALID",
            f"{path.name}: {first['msg']} at /{where} ({exc.error_count()} errors)",
        ) from None


def _plan_context(store: Path | None, branch: str, grant: Path | None, intent: Path | None) -> Any:
    from aira_core.catalog.catalog import build_catalog
    from aira_core.contracts.capability import SessionGrant
    from aira_core.contracts.plan import IntentFrame
    from aira_core.runtime.plan import LOCAL_GRANT, PlanContext

    catalog = build_catalog()
    repo = _repository(store)
    return PlanContext(
        catalog=catalog,
        repository=repo,
        branch=branch,
        grant=_load_model(grant, SessionGrant, "grant") if grant else LOCAL_GRANT,
        intent=_load_model(intent, IntentFrame, "intent frame") if intent else None,
    )


GrantOption = Annotated[
    Path | None, typer.Option("--grant", help="Session Grant JSON (default: the local user's).")
]
IntentOption = Annotated[Path | None, typer.Option("--intent", help="Intent Frame JSON.")]


@plan_app.command("check")
def plan_check(
    plan: Annotated[Path, typer.Argument(help="Plan JSON.")],
    branch: BranchOption = "main",
    grant: GrantOption = None,
    intent: IntentOption = None,
    store: StoreOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Run plan.check: every static check, no kernel call. Exit 1 if the plan fails."""
    from aira_core.contracts.plan import Plan
    from aira_core.runtime.plan import check_plan

    the_plan = _load_model(plan, Plan, "plan")
    ctx = _plan_context(store, branch, grant, intent)
    try:
        report, _ = check_plan(the_plan, ctx)
    finally:
        ctx.repository.close()
    if as_json:
        _print_json(report.to_wire())
    elif report.ok:
        typer.echo(f"{report.plan_id}: ok")
    else:
        from rich.markup import escape

        _console().print(
            f"[red]{len(report.diagnostics)} finding(s)[/red] "
            f"(first failing step: {escape(str(report.failed_step))})"
        )
        _print_diagnostics(report.diagnostics)
    if not report.ok:
        raise typer.Exit(1)


@plan_app.command("apply")
def plan_apply(
    plan: Annotated[Path, typer.Argument(help="Plan JSON.")],
    branch: BranchOption = "main",
    grant: GrantOption = None,
    intent: IntentOption = None,
    kernel: KernelOption = None,
    publish: Annotated[
        bool, typer.Option("--publish", help="Publish the task branch to main afterwards.")
    ] = False,
    approve: Annotated[
        bool,
        typer.Option(
            "--approve",
            help="Approve the plan's risk and the publish, if the grant asks for approval.",
        ),
    ] = False,
    store: StoreOption = None,
    as_json: JsonFlag = False,
) -> None:
    """check → propose → preview → validate → commit; prints the observation envelope.

    A task branch that does not exist yet is created at the plan's base revision. Exit 1
    unless the envelope's status is success.
    """
    from aira_core.contracts.plan import Plan

    the_plan = _load_model(plan, Plan, "plan")
    chosen = _kernel(kernel, "a plan is previewed and validated on a kernel")
    ctx = _plan_context(store, branch, grant, intent)
    _apply_and_report(ctx, chosen, the_plan, publish=publish, approve=approve, as_json=as_json)


def _apply_and_report(
    ctx: Any, kernel: Any, the_plan: Any, *, publish: bool, approve: bool, as_json: bool
) -> None:
    """Run a plan through the transaction and print its envelope (the repository is closed
    afterwards); exit 1 unless it succeeded."""
    from aira_core.runtime.transaction import Transaction

    try:
        request_id = f"req:{the_plan.plan_id().split(':')[-1][:16]}"
        envelope = Transaction(ctx, kernel).apply(
            the_plan, request_id, publish=publish, approved=approve
        )
    finally:
        ctx.repository.close()
    if as_json:
        _print_json(envelope.to_wire())
    else:
        from rich.markup import escape

        console = _console()
        console.print(escape(f"{envelope.status}: {envelope.observed_revision}"), soft_wrap=True)
        for key in ("stage", "failedStep", "rev", "published"):
            if envelope.data.get(key):
                console.print(escape(f"  {key}: {envelope.data[key]}"), soft_wrap=True)
        _print_diagnostics(envelope.diagnostics)
    if envelope.status != "success":
        raise typer.Exit(1)


@app.command("query")
def query_cmd(
    name: Annotated[str, typer.Argument(help="cap:query.massProperties@1 or massProperties.")],
    args: Annotated[str, typer.Option("--args", help="Arguments as JSON.")] = "{}",
    rev: Annotated[str, typer.Option("--rev", help="Revision or branch.")] = "main",
    kernel: KernelOption = None,
    store: StoreOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Run an admitted query capability on a revision (the head of main by default)."""
    from aira_core.catalog.catalog import build_catalog
    from aira_core.contracts.capability import CapabilityKind, find_capability
    from aira_core.diagnostics import AiraError

    arguments = _loads(args, "--args", "ARGS_INVALID")
    if not isinstance(arguments, dict):
        raise AiraError("ARGS_INVALID", "--args must be a JSON object")
    descriptors = build_catalog().capabilities()
    cap, known = find_capability(descriptors, name, CapabilityKind.MODEL_QUERY)
    if cap is None:
        raise AiraError(
            "QUERY_UNKNOWN", f"no admitted query {name!r}; known: " + (", ".join(known) or "none")
        )
    ref = descriptors[cap].target[1]
    chosen = _kernel(kernel, f"running {cap}")
    with _repository(store) as repo:
        at = _rev(repo, rev)
        aliases = repo.aliases(at)
        # Body references are aliases to the model; the kernel takes ids.
        result = chosen.query(repo.document(at), ref, aliases.resolve_values(arguments))
    body = {
        "format": "aira.query/1",
        "capability": cap,
        "rev": at,
        "data": dict(result.data),
        "diagnostics": [d.model_dump(mode="json", exclude_none=True) for d in result.diagnostics],
    }
    if as_json:
        _print_json(body)
    else:
        typer.echo(_json_text(body["data"]))
        _print_diagnostics(list(result.diagnostics))
    if result.diagnostics:
        raise typer.Exit(1)


@app.command("schema")
def schema_cmd(
    name: Annotated[
        str | None, typer.Argument(help="Contract name; omit to list the names.")
    ] = None,
) -> None:
    """Print the generated JSON Schema of a contract (e.g. capability-descriptor)."""
    from aira_core.contracts import DOCUMENTS, SCHEMAS, json_schema

    if name is None:
        for n in sorted({*SCHEMAS, *DOCUMENTS}):
            typer.echo(n)
        return
    _print_json(json_schema(name))


USAGE_INVALID = "USAGE_INVALID"
"""A command line typer/click cannot parse (unknown option, bad value, missing argument);
exit code 2, as click's own usage errors."""


def _json_requested(args: list[str]) -> bool:
    """Whether the command line asks for --json (before a ``--``): then a failure is printed
    as JSON on stdout too, even one typer reports before the command runs."""
    for arg in args:
        if arg == "--":
            return False
        if arg == "--json":
            return True
    return False


def _failure(exc: Exception) -> tuple[list[Any], int]:
    """The diagnostics and exit status of a command that raised ``exc``."""
    # Imported here, not at the top: pydantic would cost `aira --help` ~70 ms.
    from aira_core.diagnostics import AiraError, Diagnostic

    if isinstance(exc, AiraError):  # a refused patch or document lists every problem
        return list(getattr(exc, "diagnostics", None) or [exc.diagnostic]), 1
    if _is_click_error(exc):
        where = getattr(getattr(exc, "ctx", None), "command_path", None) or "aira"
        message = f"{exc.format_message()} (`{where} --help` shows the usage)"
        return [Diagnostic(code=USAGE_INVALID, message=message)], int(exc.exit_code)
    if isinstance(exc, typer.Abort):
        return [Diagnostic(code="ABORTED", message="aborted")], 1
    if isinstance(exc, OSError):  # a path the user gave us: name the file, not the path
        name = os.path.basename(str(exc.filename or "")) or "a file"
        return [Diagnostic(code="IO_ERROR", message=f"{exc.strerror or exc} ({name})")], 1
    if os.environ.get("AIRA_DEBUG") == "1":
        raise exc  # the traceback, for whoever debugs the bug
    message = (
        f"{type(exc).__name__}: {exc} (this is a bug in aira; AIRA_DEBUG=1 shows the traceback)"
    )
    return [Diagnostic(code="INTERNAL_ERROR", message=message)], 2


def _is_click_error(exc: Exception) -> bool:
    """A usage error from typer's parser: click's ClickException, which typer >= 0.2x
    vendors under its own TyperException."""
    bases = [getattr(typer, "TyperException", None)]
    try:
        import click

        bases.append(click.ClickException)
    except ImportError:
        pass
    return isinstance(exc, tuple(b for b in bases if b is not None))


def _error_json(diagnostics: list[Any]) -> str:
    """``{"error": Diagnostic}`` (with ``"errors"``: all of them, when there are several)."""
    from aira_core.diagnostics import AiraError

    wire = [d.model_dump(mode="json", exclude_none=True) for d in diagnostics]
    try:
        return _json_text({"error": wire[0], **({"errors": wire} if len(wire) > 1 else {})})
    except AiraError:  # a kernel's expected/actual JSON cannot hold: code and message still can
        return _json_text({"error": {k: wire[0][k] for k in ("code", "message", "severity")}})


def main() -> None:
    """Console-script entry point: expected errors get a code and a message, no traceback.

    Every failure prints ``error: CODE: message`` on stderr (one line per problem) and, when
    --json was asked for, ``{"error": Diagnostic}`` on stdout (``"errors"`` too, when there
    are several). Exit 1 for a refused input, 2 for a usage error (or a bug).
    """
    args = sys.argv[1:]
    try:
        # Not standalone: typer's usage errors reach us instead of a Rich box without a code.
        status = app(args=args, prog_name="aira", standalone_mode=False)
    except Exception as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # a bare group: its help, as typer does
            if exc.format_message():  # typer's Rich help printed itself already
                exc.show()
            sys.exit(exc.exit_code)
        diagnostics, status = _failure(exc)
        from aira_core.diagnostics import redact

        for d in diagnostics:
            typer.echo(f"error: {redact(str(d))}", err=True)
        if _json_requested(args):
            typer.echo(_error_json(diagnostics))
    sys.exit(status if isinstance(status, int) else 0)


if __name__ == "__main__":
    main()
