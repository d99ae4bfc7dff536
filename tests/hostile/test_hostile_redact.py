"""Issue 13, item 3: secrets got past redaction into --json output (a diagnostic's subject,
the keys of a plan report's ``uncertainty.referenceResolution``), into trajectories (notes,
queries, summaries, staged content, plan arguments, the raw text of a refused decision) and
into store commit messages and labels. Each test puts every form of secret the redactor
missed (and the others it must catch) into the input and asserts that none of them appears
anywhere: not in stdout or stderr, not in any byte of any file under AIRA_HOME (the model
store, the run's store and trajectory, sqlite files included)."""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
import tempfile
import zlib
from pathlib import Path

import pytest
from cli_runner import RunAira
from runtime_factory import (
    BOX_CAP,
    DEFINE_CAP,
    FILLET_CAP,
    MASS_PROPERTIES_CAP,
    VOLUME_RANGE_CAP,
    composite_steps,
    make_runtime,
)
from test_plan_cli import PLUGIN, _install
from unchanged import assert_unchanged, snapshot

from aira_core.contracts.plan import IntentFrame
from aira_core.extensions import StepReply, StepRequest
from aira_core.runtime.tiers import TIERS
from aira_core.step.loop import StepHost
from aira_core.step.trajectory import TrajectoryWriter

PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJsZWFrZWQtc2VjcmV0In0"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)

# (the secret as it is written in the input, what of it must appear nowhere)
SECRETS: list[tuple[str, str]] = [
    ('"Authorization": "Basic dXNlcjpodW50ZXIyMg=="', "dXNlcjpodW50ZXIyMg"),
    ("Authorization: Bearer beaRER0secret0value99", "beaRER0secret0value99"),
    ('token="t0kenSECRETvalue1"', "t0kenSECRETvalue1"),
    ("key=k3ySECRETvalue2", "k3ySECRETvalue2"),
    ("secret_key=skSECRETvalue", "skSECRETvalue"),
    ("private_key=pkSECRETvalue", "pkSECRETvalue"),
    ("password=hunterSECRET", "hunterSECRET"),
    ("ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"),
    ("gho_Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2", "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"),
    ("github_pat_11ABCDEFG0_SECRETpatSECRETpat12", "SECRETpatSECRETpat12"),
    ("AKIAQ7X2M4N8P1R5T9V3", "Q7X2M4N8P1R5T9V3"),
    ("ASIAY34FZKBOKMUTVV7A", "Y34FZKBOKMUTVV7A"),
    ("https://alice:pa55SECRETword@example.com/x", "pa55SECRETword"),
    ("sk-proj-SECRET0123456789abcdef", "SECRET0123456789abcdef"),
    ("sk-0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef"),  # DeepSeek
    ("xoxb-123456789012-SECRETslackTOKEN", "SECRETslackTOKEN"),
    (
        "https://b.s3.amazonaws.com/o?X-Amz-Credential=AKID0SECRETcred&X-Amz-Signature=5ecre7deadbeef00",
        "5ecre7deadbeef00",
    ),
    ("https://acct.blob.core.windows.net/c?sv=2024&sig=SAS0SECRETsig%3D", "SAS0SECRETsig"),
    (
        f"-----BEGIN PRIVATE KEY-----\n{PEM_BODY}\nSECRETpemLINE2\n-----END PRIVATE KEY-----",
        PEM_BODY,
    ),
    (JWT, "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"),
]
ALL = "\n".join(text for text, _ in SECRETS)


def _inflated(path: Path) -> list[bytes]:
    """The zlib-compressed cells of an SQLite file, inflated: the model store keeps document
    bodies compressed, so their text is not in the file's raw bytes."""
    if not path.read_bytes().startswith(b"SQLite format 3\x00"):
        return []
    out = []
    # read from a copy (with its WAL): opening the file itself would make -wal/-shm files
    # beside it, a change on disk the refusal did not make
    copy = Path(tempfile.mkdtemp()) / "db.sqlite3"
    shutil.copyfile(path, copy)
    if Path(f"{path}-wal").exists():
        shutil.copyfile(f"{path}-wal", f"{copy}-wal")
    db = sqlite3.connect(copy)
    try:
        tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            for row in db.execute(f'SELECT * FROM "{table}"'):
                for cell in row:
                    if not isinstance(cell, bytes):
                        continue
                    if cell.startswith(b"\x00aira.frame/1\n"):  # refs, newline, then zlib
                        cell = cell.partition(b"\n")[2].partition(b"\n")[2]
                    with contextlib.suppress(zlib.error):
                        out.append(zlib.decompressobj().decompress(cell))
    finally:
        db.close()
        shutil.rmtree(copy.parent)
    return out


def leaks(*outputs: str, roots: tuple[Path, ...] = ()) -> list[str]:
    """Every (secret, place) where a secret's marker appears: in an output, or in the bytes of
    a file under ``roots``."""
    found = []
    places = [(f"output {i}", out.encode()) for i, out in enumerate(outputs)]
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                places.append((str(path), path.read_bytes()))
                places += [(f"{path} (inflated)", data) for data in _inflated(path)]
    for _, marker in SECRETS:
        found += [f"{marker} in {where}" for where, data in places if marker.encode() in data]
    return found


@pytest.fixture
def installed(register_plugin, aira: RunAira, tmp_path: Path) -> RunAira:  # type: ignore[no-untyped-def]
    """The FAKE analytic kernel and its package, registered and trusted (test_plan_cli.py)."""
    return _install(register_plugin, aira, tmp_path, "aira-fake-kernel", PLUGIN)


@pytest.mark.parametrize(("text", "marker"), SECRETS)
def test_a_diagnostic_subject_in_json_output_holds_no_secret(
    aira: RunAira, aira_home: Path, text: str, marker: str
) -> None:
    # `model show REV`: an unknown branch is named in the diagnostic's subject, which was
    # printed as the user gave it (the message was redacted, the subject was not).
    assert aira("model", "init").returncode == 0
    before = snapshot(aira_home)
    out = aira("model", "show", "--json", "--", text)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    error = json.loads(out.stdout)["error"]
    assert error["code"] in {
        "STORE_BRANCH_UNKNOWN",
        "STORE_BRANCH_INVALID",
        "STORE_REVISION_UNKNOWN",
    }
    assert "<redacted>" in json.dumps(error)
    assert not leaks(out.stdout, out.stderr, roots=(aira_home,))
    assert_unchanged(before, aira_home)


def test_plan_report_reference_keys_hold_no_secret(
    installed: RunAira, aira_home: Path, tmp_path: Path
) -> None:
    aira = installed
    base = json.loads(aira("model", "init", "--json").stdout)["rev"]
    steps = [s.to_wire() for s in composite_steps()]
    # The fillet and the check name bodies by references as the plan writes them: each
    # reference is a key of uncertainty.referenceResolution.
    steps[2]["args"]["target"] = f"b:{ALL}"
    steps[3]["args"]["target"] = "b:" + SECRETS[0][0]
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"baseRevision": base, "steps": steps}))
    before = snapshot(aira_home / "models")  # (the catalog's state may note what it admitted)
    out = aira("plan", "check", str(plan), "--json")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    report = json.loads(out.stdout)
    assert "PLAN_REFERENCE_UNRESOLVED" in [d["code"] for d in report["diagnostics"]]
    keys = report["uncertainty"]["referenceResolution"]
    assert any("<redacted>" in key for key in keys)
    assert not leaks(out.stdout, out.stderr, roots=(aira_home,))
    human = aira("plan", "check", str(plan))
    assert not leaks(human.stdout, human.stderr)
    assert_unchanged(before, aira_home / "models")


def test_commit_messages_and_labels_reach_no_store_and_no_output(
    aira: RunAira, aira_home: Path, tmp_path: Path
) -> None:
    assert aira("model", "init").returncode == 0
    patch = tmp_path / "patch.json"
    param = {"id": "p1", "label": f"width {ALL}", "type": "Length", "value": 20}
    body = {"ops": [{"op": "parameter.add", "parameter": {**param, "min": 1, "max": 100}}]}
    patch.write_text(json.dumps(body))
    out = aira("model", "patch", str(patch), "-m", f"widen it {ALL}", "--json")
    assert out.returncode == 0, out.stderr
    outputs = [out.stdout, out.stderr]
    for args in (["log"], ["show"], ["read", "--select", '["parameters"]']):
        for flag in ([], ["--json"]):
            shown = aira("model", *args, *flag)
            assert shown.returncode == 0, shown.stderr
            outputs += [shown.stdout, shown.stderr]
    log = json.loads(aira("model", "log", "--json").stdout)
    assert "<redacted>" in json.dumps(log)
    assert not leaks(*outputs, roots=(aira_home,))


def decisions() -> list[dict[str, object]]:
    """Decisions that put every secret into every field a model writes."""
    steps = [s.to_wire() for s in composite_steps()]
    steps[3]["label"] = f"volume {ALL}"  # a plan argument that becomes a document label
    queries = ("box plate block", "fillet round edges", "define a parameter", "volume range")
    lookups: list[dict[str, object]] = [
        *({"act": "lookup", "query": query} for query in queries),
        *(
            {"act": "lookup", "capability": cap}
            for cap in (DEFINE_CAP, BOX_CAP, FILLET_CAP, VOLUME_RANGE_CAP, MASS_PROPERTIES_CAP)
        ),
    ]
    return [
        {"act": "note", "note": f"remember {ALL}"},
        {"act": "lookup", "query": f"box plate block {ALL}"},
        *lookups,
        {"act": "read", "select": [["parameters"]], "note": ALL},
        {"act": "fly", "why": ALL},  # refused: its raw text is what the trajectory keeps
        {"act": "stage", "name": "notes.txt", "mediaType": "text/plain", "content": ALL},
        {"act": "plan", "summary": f"the rounded plate {ALL}", "plan": {"steps": steps}},
        {"act": "done", "summary": f"done {ALL}", "note": ALL},
    ]


def script(tmp_path: Path) -> Path:
    """A decision script (user-authored: its intent too) holding every secret."""
    path = tmp_path / "secret-script.json"
    path.write_text(
        json.dumps(
            {
                "format": "aira.decision-script/1",
                "name": "plate",
                "intent": {"goal": f"a 40 x 30 x 10 plate, rounded 2 mm {ALL}"},
                "tier": "T128",
                "decisions": decisions(),
            }
        )
    )
    return path


@pytest.mark.parametrize("as_json", [True, False])
def test_a_run_writes_no_secret_of_the_model_into_its_trajectory_or_store(
    installed: RunAira, aira_home: Path, tmp_path: Path, as_json: bool
) -> None:
    aira = installed
    flags = ["--json"] if as_json else []
    out = aira("run", "--script", str(script(tmp_path)), "--kernel", "fake-analytic", *flags)
    assert "Traceback" not in out.stderr
    assert out.returncode in (0, 1), out.stderr
    runs = list((aira_home / "runs").iterdir())
    assert len(runs) == 1
    trajectory = (runs[0] / "trajectory.jsonl").read_text()
    records = [json.loads(line) for line in trajectory.splitlines()]
    acts = [r.get("decision", {}).get("act") for r in records if "step" in r]
    # the secrets went through every kind of act, and the refused one kept its raw text
    assert {"note", "lookup", "read", "stage", "plan", "done"} <= set(acts)
    committed = [r for r in records if r.get("result", {}).get("rev")]
    assert committed, "the plan committed: its labels and message are in the run's store"
    assert any("raw" in r.get("decision", {}) for r in records if "step" in r)
    assert "<redacted>" in trajectory
    shown = aira("trace", "show", str(runs[0] / "trajectory.jsonl"), *flags)
    assert not leaks(out.stdout, out.stderr, shown.stdout, shown.stderr, roots=(aira_home,))


class Model:
    """A decision source as a provider's model would be: text, here every decision of
    :func:`decisions` with every secret in it, and one that is not JSON at all."""

    name = "model:hostile"

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts

    def decide(self, request: StepRequest) -> StepReply:
        step = request.step
        text = self.texts[step] if step < len(self.texts) else '{"act": "abstain", "reason": "x"}'
        return StepReply(text=text, call_id=request.call_id, provider="hostile", model=self.name)


def test_what_a_model_writes_reaches_no_trajectory_and_no_store(tmp_path: Path) -> None:
    ctx, kernel, repo = make_runtime(tmp_path / "run")
    texts = [json.dumps(d) for d in decisions()]
    texts.insert(1, f"not json at all {ALL}")  # refused: the trajectory keeps its raw text
    path = tmp_path / "run" / "trajectory.jsonl"
    writer = TrajectoryWriter(path, {"script": "plate"})
    intent = IntentFrame(goal="a 40 x 30 x 10 plate, rounded 2 mm")
    host = StepHost(
        ctx,
        kernel,
        Model(texts),
        task_id="t1",
        intent=intent,
        tier=TIERS["T128"],
        trajectory=writer,
    )
    outcome = host.run()
    writer.close()
    repo.close()
    results = [(r["decision"].get("act"), r["result"]["status"]) for r in outcome.records]
    assert ("plan", "ok") in results, results  # the plan committed: labels and message stored
    assert any("raw" in r["decision"] for r in outcome.records)
    assert not leaks(roots=(tmp_path / "run",))


@pytest.mark.parametrize(
    "token",
    [
        text
        for text, _ in SECRETS
        if all(c.isalnum() or c in "._-" for c in text) and len(text) <= 64
    ],
)
def test_a_branch_named_by_a_credential_is_refused(
    installed: RunAira, aira_home: Path, tmp_path: Path, token: str
) -> None:
    # A branch name is kept in the store and shown by every command: it cannot be redacted
    # (it would no longer name the branch), so one that holds a credential is refused.
    aira = installed
    base = json.loads(aira("model", "init", "--json").stdout)["rev"]
    plan = tmp_path / "plan.json"
    steps = [s.to_wire() for s in composite_steps()]
    plan.write_text(json.dumps({"baseRevision": base, "steps": steps}))
    before = snapshot(aira_home / "models")
    out = aira("plan", "apply", str(plan), "--branch", f"task/{token}", "--json")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "STORE_BRANCH_INVALID" in out.stdout
    assert not leaks(out.stdout, out.stderr, roots=(aira_home,))
    assert_unchanged(before, aira_home / "models")


# -- issue 32, item 2: one rule for values ------------------------------------------------------


def test_a_string_parameters_value_reaches_no_store_and_no_output(
    aira: RunAira, aira_home: Path, tmp_path: Path
) -> None:
    """A String parameter's value (and an operation argument's text) holding every form of
    secret was stored as written, and `model show` printed it; it is redacted before it is
    stored, as a label is."""
    assert aira("model", "init").returncode == 0
    patch = tmp_path / "patch.json"
    param = {"id": "p1", "label": "note", "type": "String", "value": f"see {ALL}"}
    patch.write_text(json.dumps({"ops": [{"op": "parameter.add", "parameter": param}]}))
    out = aira("model", "patch", str(patch), "--json")
    assert out.returncode == 0, out.stderr
    outputs = [out.stdout, out.stderr]
    for args in (["show"], ["read", "--select", '["parameters"]'], ["export", "--format", "amir"]):
        for flag in ([], ["--json"]):
            shown = aira("model", *args, *flag)
            outputs += [shown.stdout, shown.stderr]
    read = json.loads(aira("model", "read", "--select", '["parameters"]', "--json").stdout)
    assert "<redacted>" in json.dumps(read)
    assert not leaks(*outputs, roots=(aira_home,))


@pytest.mark.parametrize(
    "ident", ["ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "AKIAQ7X2M4N8P1R5T9V3"]
)
def test_an_id_holding_a_credential_is_refused_and_nothing_is_stored(
    aira: RunAira, aira_home: Path, tmp_path: Path, ident: str
) -> None:
    """An id is kept for good and others refer to it: redacting it would break them, so a
    credential-shaped id is refused with its code and the store is as it was."""
    assert aira("model", "init").returncode == 0
    before = snapshot(aira_home / "models")
    patch = tmp_path / "patch.json"
    param = {"id": ident, "label": "width", "type": "Length", "value": 20}
    patch.write_text(json.dumps({"ops": [{"op": "parameter.add", "parameter": param}]}))
    out = aira("model", "patch", str(patch), "--json")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert json.loads(out.stdout)["error"]["code"] == "AMIR_CREDENTIAL_IN_ID"
    assert not leaks(out.stdout, out.stderr)
    assert_unchanged(before, aira_home / "models")


# -- issue 32, item 2: the MCP server's results and resources -----------------------------------


def test_the_mcp_servers_results_and_resources_hold_no_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every form of secret, put by an agent into every text a tool takes (the intent, a
    search, a capability id, a plan's labels and a String parameter's value, a request id, a
    query), is in no tool result, no resource the server lists or a client can name, and no
    byte of the store. Through the SDK's own Client on the real server (fake kernel)."""
    import anyio
    from mcp import Client

    from aira_core.mcp.engine import Engine
    from aira_core.mcp.server import build_server
    from aira_core.mcp.tools import MODEL_APPLY
    from aira_core.model.store import ModelStore

    monkeypatch.setattr(ModelStore, "CHECK_SAME_THREAD", False)  # as tests/mcp_server do
    ctx, kernel, repository = make_runtime(tmp_path)
    steps = [{k: v for k, v in s.to_wire().items() if k != "dependsOn"} for s in composite_steps()]
    steps[0]["args"] = {"name": "note", "value": f"see {ALL}", "type": "String"}
    steps[1]["args"]["length"] = 40
    steps[3]["label"] = f"volume {ALL}"
    texts: list[str] = []

    def shown(result: object) -> None:
        texts.extend(getattr(block, "text", "") for block in result.content)  # type: ignore[attr-defined]
        texts.append(json.dumps(result.structured_content))  # type: ignore[attr-defined]

    async def agent() -> None:
        async with Client(build_server(Engine(None, kernel=kernel, context=ctx))) as client:
            caps = [DEFINE_CAP, BOX_CAP, FILLET_CAP, VOLUME_RANGE_CAP, MASS_PROPERTIES_CAP]
            opened = await client.call_tool(
                "task_open", {"intent": f"a plate {ALL}", "capabilities": caps}
            )
            shown(opened)
            task = json.loads(opened.content[0].text)["data"]["task"]
            calls = [
                ("catalog_search", {"intent": f"box plate {ALL}"}),
                ("catalog_search", {"intent": ALL}),
                ("catalog_describe", {"capabilityId": ALL[:200]}),
                ("catalog_describe", {"capabilityIds": [t[:200] for t, _ in SECRETS[:8]]}),
                (MODEL_APPLY, {"plan": {"steps": steps}, "requestId": "r1"}),
                ("model_read", {"select": [["parameters"]]}),
                ("model_read", {"query": ALL[:200]}),
                ("model_read", {"repair": ALL[:200]}),
                ("model_read", {"requestId": SECRETS[13][0]}),
                ("model_proposePatch", {"plan": {"steps": [{**steps[3], "id": ALL[:60]}]}}),
            ]
            for name, arguments in calls:
                result = await client.call_tool(name, {"task": task, **arguments})
                shown(result)
            committed = repository.head(f"task/{task}")
            assert committed != repository.head("main"), "the plan with the secrets committed"
            uris = [str(r.uri) for r in (await client.list_resources()).resources]
            uris += [
                f"aira://tasks/{task}/model",
                f"aira://tasks/{task}/trace",
                f"aira://tasks/{task}/revisions/{committed}",
                *(f"aira://tasks/{task}/part.{fmt}" for fmt in ("step", "stl", "3mf", "svg")),
                f"aira://{ALL[:100]}",
            ]
            for uri in uris:
                try:
                    read = await client.read_resource(uri)
                except Exception as exc:  # a refusal: its message is output too
                    texts.append(str(exc))
                    continue
                for content in read.contents:
                    texts.append(getattr(content, "text", None) or getattr(content, "blob", ""))

    anyio.run(agent)
    repository.close()
    everything = "\n".join(texts)
    assert "<redacted>" in everything and '"state"' in everything
    assert not leaks(*texts, roots=(tmp_path,))
