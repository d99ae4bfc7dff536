"""``aira mcp serve`` as a user runs it: a real process with the installed OCCT kernel, driven
by the SDK's Client over stdio (as Claude Desktop starts it) and over streamable HTTP (two
clients on one store)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aira_core.step.runner import bundled_script

from .conftest import call, codes, envelope, open_task, status

pytest.importorskip("cadquery")
pytestmark = pytest.mark.anyio

BRACKET_HEAD = "rev:sha256:1442b44f7cf76e73f19895994f95ee4c370520b0afdbdd2a4c8a5db582e0c5e2"
"""The head `aira demo` reaches for the bracket (tests/gateway/test_gateway_demo.py): a
revision id is a content address, so the same plans through MCP make the same part."""


def server_env() -> dict[str, str]:
    """What the child gets: this test's AIRA_HOME and cache, the OCCT plugin only."""
    env = {k: os.environ[k] for k in ("AIRA_HOME", "AIRA_CACHE", "PATH") if k in os.environ}
    return {**env, "AIRA_PLUGINS": "occt", "AIRA_EMBEDDER": "hashing"}


def serve_args(store: Path, *extra: str) -> list[str]:
    return ["-m", "aira_core.cli", "mcp", "serve", "--store", str(store), *extra]


async def test_the_bracket_over_stdio_ends_in_its_revision_and_a_step_file(
    tmp_path: Path,
) -> None:
    from mcp import Client, StdioServerParameters

    script = bundled_script("bracket")
    params = StdioServerParameters(
        command=sys.executable, args=serve_args(tmp_path / "store.sqlite3"), env=server_env()
    )
    async with Client(params) as client:
        assert len((await client.list_tools()).tools) == 11
        task = await open_task(client, intent=script.intent.goal)
        outcomes = []
        for decision in script.decisions:
            d = decision.to_wire() if hasattr(decision, "to_wire") else dict(decision)
            acts = d["acts"] if d["act"] == "batch" else [d]
            for act in acts:
                if act["act"] == "lookup" and "query" in act:
                    r = await call(client, "catalog_search", task=task, intent=act["query"])
                elif act["act"] == "lookup":
                    r = await call(
                        client, "catalog_describe", task=task, capabilityId=act["capability"]
                    )
                elif act["act"] == "read":
                    r = await call(client, "model_read", task=task)
                elif act["act"] == "plan":
                    r = await call(client, "model_proposePatch", task=task, plan=act["plan"])
                    if not r.is_error:
                        for name in ("model_preview", "model_validate", "model_commit"):
                            r = await call(client, name, task=task)
                            assert not r.is_error, (name, r.content[0].text)
                elif act["act"] == "inspect":
                    r = await call(
                        client, "model_read", task=task, query=act["query"], args=act["args"]
                    )
                else:
                    continue  # note, done: the step host's own acts
                outcomes.append((act["act"], r.is_error, codes(r)[:1]))
        # the first plan is refused by plan.check (its fillet has no selection), its repair
        # is committed and read back; the task stays open for more (as in the step host)
        plans = [o for o in outcomes if o[0] == "plan"]
        assert plans == [("plan", True, ["PLAN_ARGS_INVALID"]), ("plan", False, [])]
        assert all(not err for act, err, _ in outcomes if act != "plan")
        final = envelope(r)
        assert final["data"]["state"] == "committed" and "terminal" not in final["data"]
        assert final["data"]["rev"] == BRACKET_HEAD  # observedRevision: the same, not repeated
        assert final["data"]["result"]["volume"] > 0
        step = await client.read_resource(f"aira://tasks/{task}/part.step")
        text = step.contents[0].text
        assert text.startswith("ISO-10303-21") and "MANIFOLD_SOLID_BREP" in text
        svg = (await client.read_resource(f"aira://tasks/{task}/part.svg")).contents[0].text
        assert svg.lstrip().startswith(("<?xml", "<svg"))
        stl = (await client.read_resource(f"aira://tasks/{task}/part.stl")).contents[0]
        assert getattr(stl, "blob", None)  # binary: base64 on the wire


def test_bad_options_are_codes_before_anything_starts(tmp_path: Path, aira: Any) -> None:
    store = tmp_path / "store.sqlite3"
    for args, code in [
        (["--tier", "T7"], "STEP_TIER_UNKNOWN"),
        (["--port", "9000"], "MCP_HOST_INVALID"),
        (["--http", "--host", "no-such-host.invalid"], "MCP_HOST_INVALID"),
        (["--grant", str(tmp_path / "missing.json")], "INPUT_UNREADABLE"),
        (["--kernel", "nope"], "KERNEL_UNAVAILABLE"),
        (["--allow-publish", "--grant", str(tmp_path / "g.json")], "GRANT_INVALID"),
    ]:
        result = aira("mcp", "serve", "--store", str(store), *args)
        assert result.returncode != 0, args
        assert "Traceback" not in result.stdout + result.stderr
        if code is not None:
            assert code in result.stdout + result.stderr, (args, result.stdout, result.stderr)
    assert not store.exists()


# -- streamable HTTP: two clients, one store ----------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    port = _free_port()
    store = tmp_path / "store.sqlite3"
    child = subprocess.Popen(
        [sys.executable, *serve_args(store, "--http", "--port", str(port))],
        env=server_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert child.poll() is None, child.stderr.read().decode() if child.stderr else ""
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp", store
    finally:
        child.terminate()
        child.wait(30)


BOX = "cap:exact.box@1"


async def _design(url: str, length: int) -> tuple[str, str]:
    from mcp import Client

    async with Client(url) as client:
        task = await open_task(client)
        assert not (await call(client, "catalog_search", task=task, intent="box")).is_error
        assert not (await call(client, "catalog_describe", task=task, capabilityId=BOX)).is_error
        plan = {
            "steps": [
                {
                    "id": "block",
                    "capability": BOX,
                    "label": "block",
                    "args": {"length": length, "width": 10, "height": 5},
                }
            ]
        }
        r = await call(client, "model_proposePatch", task=task, plan=plan)
        for name in ("model_preview", "model_validate", "model_commit"):
            assert not r.is_error, r.content[0].text
            r = await call(client, name, task=task)
        assert not r.is_error, r.content[0].text
        return task, envelope(r)["data"]["rev"]


async def test_two_clients_over_http_commit_to_their_own_tasks(
    http_server: tuple[str, Path],
) -> None:
    import anyio

    from aira_core.model.store import ModelStore

    url, store = http_server
    results: dict[int, tuple[str, str]] = {}

    async def one(length: int) -> None:
        results[length] = await _design(url, length)

    async with anyio.create_task_group() as group:
        group.start_soon(one, 20)
        group.start_soon(one, 30)
    (task_a, rev_a), (task_b, rev_b) = results[20], results[30]
    assert task_a != task_b and rev_a != rev_b
    with ModelStore(store) as opened:  # both revisions are in the store, on their branches
        assert opened.head(f"task/{task_a}") == rev_a
        assert opened.head(f"task/{task_b}") == rev_b
        assert json.dumps(opened.branches()).count("task/mcp-") == 2


@pytest.mark.parametrize("http", [False, True])
def test_a_store_that_cannot_be_opened_is_its_code_before_any_transport_starts(
    tmp_path: Path, http: bool
) -> None:
    transport = ["--http", "--port", str(_free_port())] if http else []
    store = tmp_path / "store.sqlite3"
    store.write_bytes(b"this is no SQLite database" * 100)
    before = store.read_bytes()
    done = subprocess.run(
        [sys.executable, *serve_args(store, *transport)],
        env=server_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("error: STORE_"), done.stderr
    assert "Traceback" not in done.stderr and "streamable HTTP" not in done.stderr
    assert str(tmp_path) not in done.stderr  # no private absolute path
    assert store.read_bytes() == before


# -- the shared corpus over stdio ---------------------------------------------------------------

FILLET = "cap:exact.fillet@1"
VOLUME = "cap:validate.volumeRange@1"


def _occt_plan(steps: list[dict[str, Any]], k: int) -> dict[str, Any]:
    """The plan a corpus step proposes on OCCT: a 20 mm cube with rounded vertical edges;
    a fillet too large where the next preview must fail, a volume range the cube misses
    where the next validation must; one more box on top of a commit."""
    if any(s["operation"] == "model.commit" for s in steps[:k]):
        args = {"length": 5, "width": 5, "height": 5}
        return {"steps": [{"id": "more", "capability": BOX, "label": "more", "args": args}]}
    fails: dict[str, Any] = {}
    for later in steps[k + 1 :]:
        if later["operation"] == "model.proposePatch":
            break
        fails.setdefault(later["operation"], later.get("diagnostic"))
    radius = 50 if fails.get("model.preview") else 2
    vmax = 10.0 if fails.get("model.validate") else 10_000.0
    return {
        "steps": [
            {
                "id": "cube",
                "capability": BOX,
                "label": "cube",
                "args": {"length": 20, "width": 20, "height": 20},
            },
            {
                "id": "round",
                "capability": FILLET,
                "args": {
                    "target": "cube",
                    "edges": {"body": "cube", "select": "|Z", "entity": "Edge"},
                    "radius": radius,
                },
            },
        ],
        "acceptanceAssertions": [
            {
                "validatorRef": "validate.volumeRange@1.0.0",
                "target": "cube",
                "args": {"min": 1.0, "max": vmax},
            }
        ],
    }


async def test_the_shared_corpus_over_stdio_has_the_runtimes_outcomes(tmp_path: Path) -> None:
    from mcp import Client, StdioServerParameters

    from aira_core.runtime.contract import load_corpus

    cases = [
        *(("legal", c) for c in load_corpus("legal_sequences")),
        *(("illegal", c) for c in load_corpus("illegal_sequences")),
    ]
    replayed = 0
    for n, (kind, case) in enumerate(cases):
        if case.get("start", "ready") != "ready":
            continue
        # a server of its own per case: what one server has shown an agent carries over to
        # its later tasks, and each case starts from a task that has discovered nothing
        params = StdioServerParameters(
            command=sys.executable,
            args=serve_args(tmp_path / f"store{n}.sqlite3"),
            env=server_env(),
        )
        async with Client(params) as client:
            steps = case["steps"]
            task = await open_task(client)
            outcomes = []
            texts: list[str] = []
            for k, s in enumerate(steps):
                op = s["operation"]
                args: dict[str, Any] = {}
                if op == "catalog.search":
                    args = {
                        "intent": "box with filleted edges and a volume range check",
                        "topK": 20,
                    }
                elif op == "catalog.describe":
                    for cap in (BOX, FILLET):
                        await call(client, "catalog_describe", task=task, capabilityId=cap)
                    args = {"capabilityId": VOLUME}
                elif op == "model.proposePatch":
                    args = {"plan": _occt_plan(steps, k)}
                r = await call(client, op.replace(".", "_"), task=task, **args)
                texts.append(r.content[0].text.split("\n")[0])
                e = envelope(r)
                first = (e.get("nextActions") or [None])[0]
                first = first["tool"] if isinstance(first, dict) else first
                outcomes.append((status(e), codes(r), e["data"].get("state"), first))
            name = case["name"]
            if kind == "legal":
                states = [s["state"] for s in steps]
                assert [o[2] for o in outcomes] == states, (name, outcomes, texts)
                for outcome, s in zip(outcomes, steps, strict=True):
                    assert (outcome[0] == "failed") == bool(s.get("diagnostic")), (name, outcome)
            else:
                expected = case["expected"]
                at = expected["refusedAt"]
                refused = outcomes[at]
                if steps[at]["operation"] in ("model.preview", "model.validate") and (
                    steps[at - 1]["operation"] == steps[at]["operation"]
                ):
                    # over MCP a check is idempotent (its annotation says so): the same check
                    # again, the task unmoved, answers as the first did, instead of the
                    # runtime's refusal of the second
                    assert refused == outcomes[at - 1], (name, outcomes)
                    assert outcomes[at - 1][2] == expected["state"], (name, outcomes)
                    replayed += 1
                    continue
                assert refused[1] == [expected["code"]], (name, outcomes)
                named = (expected["nextOperation"] or "").replace(".", "_") or None
                assert refused[3] == named, (name, outcomes)
                assert refused[2] == expected["state"], (name, outcomes)
            replayed += 1
    assert replayed >= 13


PLATE_PLAN = {
    "steps": [
        {
            "id": "plate",
            "capability": "cap:exact.box@1",
            "label": "plate",
            "args": {"length": 60, "width": 40, "height": 5},
        },
        {
            "id": "holes",
            "capability": "cap:exact.hole@1",
            "args": {
                "target": "b:plate",
                "face": {"body": "b:plate", "select": ">Z", "entity": "Face"},
                "diameter": 4.5,
                "points": [[25, 15], [-25, 15], [25, -15], [-25, -15]],
            },
        },
    ],
    "acceptanceAssertions": [
        {
            "validatorRef": "validate.volumeRange@1.0.0",
            "target": "b:plate",
            "args": {"min": 11000, "max": 12000},
        }
    ],
}


async def test_a_known_plan_reaches_its_revision_in_three_calls_over_stdio(
    tmp_path: Path,
) -> None:
    """The agent's shortest path on a fresh server, as a user's client runs it: task_open
    naming the capabilities, model_apply, and a read-back of the committed head."""
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=serve_args(tmp_path / "store.sqlite3"), env=server_env()
    )
    caps = ["cap:exact.box@1", "cap:exact.hole@1", "cap:validate.volumeRange@1"]
    async with Client(params) as client:
        opened = await call(
            client, "task_open", intent="a plate with four holes", capabilities=caps
        )
        task = envelope(opened)["data"]["task"]
        applied = await call(client, "model_apply", task=task, plan=PLATE_PLAN)
        assert not applied.is_error, applied.content[0].text
        done = envelope(applied)["data"]
        assert done["bodies"]["b:plate"]["volume"] == pytest.approx(11681.9, abs=0.1)
        assert done["assertions"] and all(done["assertions"].values())
        read = await call(client, "model_read", task=task)
        assert envelope(read)["data"]["summary"]["rev"] == done["rev"]
        # what the model read in all: a small multiple of the plan it wrote
        shown = sum(len(r.content[0].text.encode()) for r in (opened, applied, read))
        assert shown < 4 * len(json.dumps(PLATE_PLAN, separators=(",", ":")))
        # an exporter is no plan step: described, it names the resource that runs it
        await call(client, "catalog_search", task=task, intent="export the part as STL")
        described = await call(
            client, "catalog_describe", task=task, capabilityId="cap:io.exportStl@1"
        )
        assert not described.is_error, described.content[0].text
        run = envelope(described)["data"]["run"]["resource"]
        assert run == f"aira://tasks/{task}/part.stl{{?tolerance,angularTolerance}}"
        stl = await client.read_resource(f"aira://tasks/{task}/part.stl?tolerance=0.05")
        assert stl.contents[0].mime_type == "model/stl"


async def test_the_part_as_a_picture_over_stdio(tmp_path: Path) -> None:
    """model_read view=picture: the head's summary and one PNG beside it, the part drawn in
    each of its four views, within the picture's byte bound, the part.png resource's bytes;
    before a body there is nothing to draw, said with a code, and the task goes on."""
    import base64
    import io

    import numpy as np
    from mcp import Client, StdioServerParameters
    from PIL import Image

    from aira_core.report.picture import BAR, CELL, LAYOUT, MAX_BYTES, PAD

    params = StdioServerParameters(
        command=sys.executable, args=serve_args(tmp_path / "store.sqlite3"), env=server_env()
    )
    caps = ["cap:exact.box@1", "cap:exact.hole@1", "cap:validate.volumeRange@1"]
    async with Client(params) as client:
        task = envelope(await call(client, "task_open", capabilities=caps))["data"]["task"]
        empty = await call(client, "model_read", task=task, view="picture")
        assert not empty.is_error and codes(empty) == ["REPORT_PICTURE_EMPTY"]
        assert envelope(empty)["status"] == "partial" and len(empty.content) == 1
        refused = await call(client, "model_read", task=task, view="picture", query="boundingBox")
        assert refused.is_error and codes(refused) == ["ARGS_INVALID"]
        applied = await call(client, "model_apply", task=task, plan=PLATE_PLAN)
        assert not applied.is_error, applied.content[0].text
        read = await call(client, "model_read", task=task, view="picture")
        assert not read.is_error, read.content[0].text
        data = envelope(read)["data"]
        assert data["summary"]["rev"] == envelope(applied)["data"]["rev"]
        assert [c.type for c in read.content] == ["text", "image"]
        image = read.content[1]
        assert image.mime_type == "image/png"
        png = base64.b64decode(image.data)
        assert data["picture"] == {
            "uri": f"aira://tasks/{task}/part.png",
            "mimeType": "image/png",
            "bytes": len(png),
        }
        assert len(png) <= MAX_BYTES
        picture = Image.open(io.BytesIO(png)).convert("RGB")
        # the part's shaded pixels (neither white background, grey panel nor dark ink) in
        # each view: the orthographic views at one scale, the plate's largest side filling
        # the room, so each view's box is its sides in mm at that scale
        left, top_pad, right, bottom = PAD
        scale = min(CELL - left - right, CELL - top_pad - bottom) / 60
        sides = {"top": (60, 40), "front": (60, 5), "right": (40, 5)}
        for name, column, row in LAYOUT:
            top = row * (CELL + BAR) + BAR
            cell = np.asarray(picture.crop((column * CELL, top, (column + 1) * CELL, top + CELL)))
            shaded = (cell.max(axis=-1).astype(int) - cell.min(axis=-1)) > 24
            ys, xs = np.nonzero(shaded)
            assert shaded.sum() > 0.01 * CELL * CELL, name
            if name in sides:
                drawn = (xs.max() - xs.min() + 1, ys.max() - ys.min() + 1)
                expected = tuple(mm * scale for mm in sides[name])
                assert drawn == pytest.approx(expected, abs=4), (name, drawn, expected)
        resource = await client.read_resource(f"aira://tasks/{task}/part.png")
        assert base64.b64decode(resource.contents[0].blob) == png


async def test_the_selection_grammar_is_stated_once_and_referenced(tmp_path: Path) -> None:
    """A contract's selection inputs reference the grammar they share; the first describe
    that uses it states it in full, later ones only name it, and it is a resource."""
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=serve_args(tmp_path / "store.sqlite3"), env=server_env()
    )
    async with Client(params) as client:
        caps = ["cap:exact.hole@1", "cap:exact.fillet@1"]
        task = envelope(await call(client, "task_open", capabilities=caps))["data"]["task"]
        first = envelope(await call(client, "catalog_describe", task=task, capabilityId=caps[0]))
        props = first["data"]["contract"]["inputSchema"]["properties"]
        ref = props["face"]["$ref"]
        assert ref.startswith("grammar:selection-") and props["at"]["$ref"] == ref
        assert props["face"]["description"].startswith("The one planar face")
        name = ref.removeprefix("grammar:")
        grammar = first["data"]["grammars"][name]
        assert grammar["x-amir-type"] == "Selection" and "CadQuery" in grammar["description"]
        again = await call(client, "catalog_describe", task=task, capabilityId=caps[1])
        shown = envelope(again)["data"]
        assert "grammars" not in shown
        assert shown["contract"]["inputSchema"]["properties"]["edges"]["$ref"] == ref
        read = await client.read_resource(f"aira://grammars/{name}")
        assert json.loads(read.contents[0].text) == grammar
        # the hole's contract, grammar included, is about half what it was spelled out twice
        assert len(first_text := json.dumps(first)) < 12_000, len(first_text)
