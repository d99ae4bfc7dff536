"""The warm CLI host (aira_core/cli/warm.py): with AIRA_WARM=1 a read-only --json command is
answered by one per-user process that outlives a command, exactly as the command's own
process would answer it; whenever the host cannot answer, the command runs in its own
process. Real processes, the installed plugins, a private XDG_RUNTIME_DIR per test."""

from __future__ import annotations

import atexit
import base64
import contextlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aira_core.cli.warm import SOCKET_DIR, host_key, hosts_under, servable

AIRA = [sys.executable, "-m", "aira_core.cli"]
SEARCH = ["catalog", "search", "round the vertical edges by 2 mm", "--json"]
PLUGINS = {"AIRA_PLUGINS": "occt"}
"""The OCCT kernel and its capability package (the session's processes load none)."""


_NEUTRAL: list[Path] = []


def neutral() -> Path:
    """An empty directory of this test run: without Aira's code (unlike the checkout the
    tests run in, whose callers get a host of their own) and without anything else."""
    if not _NEUTRAL:
        _NEUTRAL.append(Path(tempfile.mkdtemp(prefix="aira-warm-cwd-")))
        atexit.register(shutil.rmtree, _NEUTRAL[0], True)
    return _NEUTRAL[0]


def run(
    env: dict[str, str], *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``aira *args`` in ``cwd`` (default: :func:`neutral`)."""
    return subprocess.run(
        [sys.executable, "-m", "aira_core.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd or neutral(),
    )


def wait_for(predicate: Any, seconds: float = 90.0) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("timed out waiting")


def the_host(runtime: Path) -> int:
    """The pid of the one host under ``runtime`` once its socket is up."""
    folder = runtime / SOCKET_DIR
    wait_for(lambda: list(folder.glob("*.sock")) and len(hosts_under(runtime)) == 1)
    (pid,) = hosts_under(runtime)
    return pid


def served_by(pid: int, cwd: Path) -> bool:
    """A served command runs in the caller's working directory: the host is left there."""
    try:
        return Path(os.readlink(f"/proc/{pid}/cwd")) == cwd
    except FileNotFoundError:  # gone
        return False


def stop_hosts(runtime: Path) -> None:
    for pid in hosts_under(runtime):
        os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One AIRA_HOME whose catalog was built once (conformance on the real kernel)."""
    where = tmp_path_factory.mktemp("warm-home")
    env = {**os.environ, "AIRA_HOME": str(where), **PLUGINS}
    env.pop("AIRA_WARM", None)
    out = run(env, "catalog", "list", "--json")
    assert out.returncode == 0, out.stderr
    return where


def environment(home: Path, runtime: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE",)}
    env.update(
        AIRA_HOME=str(home),
        XDG_RUNTIME_DIR=str(runtime),
        AIRA_WARM="1",
        AIRA_OCCT_WARM="0",  # the kernel's own warm worker is tested apart
        **PLUGINS,
        **extra,
    )
    return env


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Path]:
    where = tmp_path / "run"
    where.mkdir(mode=0o700)
    yield where
    stop_hosts(where)


@pytest.fixture(scope="module")
def shared(home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One host for the tests that only talk to it, up before they start."""
    runtime = tmp_path_factory.mktemp("warm-run")
    runtime.chmod(0o700)
    env = environment(home, runtime)
    first = run(env, *SEARCH)
    assert first.returncode == 0, first.stderr
    pid = the_host(runtime)
    yield {"env": env, "runtime": runtime, "pid": pid, "home": home}
    stop_hosts(runtime)


def test_what_the_host_serves() -> None:
    assert servable(["catalog", "search", "fillet", "--json"])
    assert servable(["catalog", "list", "--json", "--quarantine"])
    assert servable(["plan", "check", "plan.json", "--json"])
    assert servable(["query", "massProperties", "--json"])
    assert not servable(["catalog", "list"])  # a table: it depends on the terminal
    assert not servable(["catalog", "search", "--", "--json"])  # words, not the option
    assert not servable(["plan", "check", "-", "--json"])  # stdin
    assert servable(["plan", "apply", "plan.json", "--json"])  # a write never run twice
    assert not servable(["model", "import", "part.step", "--json"])
    assert not servable(["trust", "add", "key.pub", "--json"])
    assert not servable(["catalog", "search", "x", "--json", "--help"])
    assert not servable(["run", "make a plate", "--json"])
    assert not servable([])


def test_served_commands_answer_as_their_own_process_would(
    shared: dict[str, Any], tmp_path: Path
) -> None:
    env, pid = shared["env"], shared["pid"]
    store = tmp_path / "store.sqlite3"
    init = run({**env, "AIRA_WARM": "0"}, "model", "init", "--store", str(store), "--json")
    assert init.returncode == 0, init.stderr
    stale = tmp_path / "stale.json"
    stale.write_text(json.dumps({"baseRevision": "rev:sha256:" + "0" * 64, "steps": []}))
    commands = [
        SEARCH,
        ["catalog", "list", "--json", "--quarantine"],
        ["catalog", "describe", "cap:exact.fillet@1", "--level", "L3", "--json"],
        ["catalog", "describe", "cap:no.such@1", "--json"],  # a refusal: exit 1, same words
        ["catalog", "manifest", "--json"],
        ["plan", "check", str(stale), "--store", str(store), "--json"],
        ["query", "massProperties", "--store", str(store), "--json"],
    ]
    for i, args in enumerate(commands):
        where = tmp_path / f"cwd-{i}"
        where.mkdir()
        warm = run(env, *args, cwd=where)
        assert served_by(pid, where), args
        cold = run({**env, "AIRA_WARM": "0"}, *args, cwd=where)
        assert (warm.returncode, warm.stdout, warm.stderr) == (
            cold.returncode,
            cold.stdout,
            cold.stderr,
        ), args
    assert hosts_under(shared["runtime"]) == [pid]  # one host answered them all


def test_stdout_and_stderr_keep_their_order(shared: dict[str, Any], tmp_path: Path) -> None:
    """Both streams into one pipe (``2>&1``): the same bytes in the same order."""
    env, pid = shared["env"], shared["pid"]
    args = ["catalog", "describe", "cap:no.such@1", "--json"]  # stderr, then stdout
    merged = {}
    for mode in ("1", "0"):
        out = subprocess.run(
            [sys.executable, "-m", "aira_core.cli", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=120,
            env={**env, "AIRA_WARM": mode},
            cwd=tmp_path,
        )
        merged[mode] = (out.returncode, out.stdout)
        if mode == "1":
            assert served_by(pid, tmp_path)
    assert merged["1"] == merged["0"]
    assert merged["1"][1].index(b"error: DESCRIBE_") < merged["1"][1].index(b"{")


def test_a_plan_on_stdin_runs_in_its_own_process(shared: dict[str, Any], tmp_path: Path) -> None:
    """/dev/stdin (and /dev/fd/N, /proc/self/fd/N) would be the host's own descriptors."""
    env, pid = shared["env"], shared["pid"]
    store = tmp_path / "s.sqlite3"
    init = run({**env, "AIRA_WARM": "0"}, "model", "init", "--store", str(store), "--json")
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"baseRevision": json.loads(init.stdout)["rev"], "steps": PLATE}))
    answers = []
    for mode in ("1", "0"):
        with plan.open() as stdin:  # a file on stdin: /dev/stdin is a regular file
            out = subprocess.run(
                [*AIRA, "plan", "check", "/dev/stdin", "--store", str(store), "--json"],
                stdin=stdin,
                capture_output=True,
                text=True,
                timeout=120,
                env={**env, "AIRA_WARM": mode},
                cwd=tmp_path,
            )
        answers.append((out.returncode, out.stdout))
    assert answers[0] == answers[1] and answers[0][0] == 0, answers
    assert json.loads(answers[0][1])["ok"]
    assert not served_by(pid, tmp_path)


def test_relative_paths_are_the_callers(shared: dict[str, Any], tmp_path: Path) -> None:
    """The same words in two directories: each checks its own plan against its own store."""
    env, pid = shared["env"], shared["pid"]
    box = {"id": "plate", "capability": "cap:exact.box@1", "label": "plate"}
    answers = {}
    for name, length in (("a", 40), ("b", 50)):
        where = tmp_path / name
        where.mkdir()
        init = run(
            {**env, "AIRA_WARM": "0"}, "model", "init", "--store", "s.sqlite3", "--json", cwd=where
        )
        plan = {
            "baseRevision": json.loads(init.stdout)["rev"],
            "steps": [{**box, "args": {"length": length, "width": 30, "height": 10}}],
        }
        (where / "plan.json").write_text(json.dumps(plan))
        args = ["plan", "check", "plan.json", "--store", "s.sqlite3", "--json"]
        out = run({**env, "COLUMNS": "40"}, *args, cwd=where)
        assert served_by(pid, where)
        assert out.returncode == 0, out.stdout + out.stderr
        answers[name] = json.loads(out.stdout)
        assert answers[name] == json.loads(run({**env, "AIRA_WARM": "0"}, *args, cwd=where).stdout)
    assert answers["a"]["ok"] and answers["b"]["ok"]
    assert answers["a"]["planId"] != answers["b"]["planId"]


def test_a_command_the_host_does_not_serve_runs_here_and_starts_nothing(
    home: Path, runtime: Path
) -> None:
    env = environment(home, runtime)
    assert run(env, "catalog", "list").returncode == 0  # a table
    assert run(env, "schema", "plan").returncode == 0
    time.sleep(0.5)
    assert hosts_under(runtime) == []
    assert not (runtime / SOCKET_DIR).exists()


def test_a_directory_others_can_enter_is_refused_and_the_command_runs_here(
    home: Path, runtime: Path
) -> None:
    (runtime / SOCKET_DIR).mkdir(mode=0o755)
    (runtime / SOCKET_DIR).chmod(0o755)
    env = environment(home, runtime)
    out = run(env, *SEARCH)
    assert out.returncode == 0 and json.loads(out.stdout)["hits"], out.stdout[-3000:]
    time.sleep(0.5)
    assert hosts_under(runtime) == []
    assert list((runtime / SOCKET_DIR).iterdir()) == []


def test_changed_code_retires_the_host(home: Path, runtime: Path, tmp_path: Path) -> None:
    """A distribution installed in (or removed from) a folder on sys.path is code the host
    did not load: it retires, the command runs in its own process, the next call starts a
    new one. Other files written there (a project folder on PYTHONPATH) are not code."""
    extra = tmp_path / "site"
    extra.mkdir()
    env = environment(
        home,
        runtime,
        PYTHONPATH=os.pathsep.join([str(extra), *filter(None, [os.environ.get("PYTHONPATH")])]),
    )
    assert run(env, *SEARCH).returncode == 0
    old = the_host(runtime)
    expected = run({**env, "AIRA_WARM": "0"}, *SEARCH).stdout
    (extra / "notes.txt").write_text("a project's file\n")
    (tmp_path / "a").mkdir()
    assert run(env, *SEARCH, cwd=tmp_path / "a").stdout == expected
    assert served_by(old, tmp_path / "a")  # still the same host
    dist = extra / "new_thing-1.0.dist-info"  # what pip leaves
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: new-thing\nVersion: 1.0\n")
    out = run(env, *SEARCH, cwd=tmp_path)
    assert out.returncode == 0 and out.stdout == expected
    assert not served_by(old, tmp_path)  # it answered "stale" and left
    wait_for(lambda: old not in hosts_under(runtime))
    new = the_host(runtime)  # started by the call that found the old one stale
    assert new != old


def test_an_idle_host_exits_and_removes_its_socket(home: Path, runtime: Path) -> None:
    """Idle means no command: connections that run nothing do not keep it up."""
    env = environment(home, runtime, AIRA_WARM_IDLE="3")  # long enough to be seen
    assert run(env, *SEARCH).returncode == 0
    pid = the_host(runtime)
    (path,) = (runtime / SOCKET_DIR).glob("*.sock")

    def poked_and_gone() -> bool:
        with contextlib.suppress(OSError):
            exchange(path, b"\x00\x00\x00\x02[]")
        return pid not in hosts_under(runtime)

    wait_for(poked_and_gone, seconds=30)
    assert list((runtime / SOCKET_DIR).glob("*.sock")) == []


def b64(*args: str) -> list[str]:
    return [base64.b64encode(a.encode()).decode() for a in args]


def frame(message: Any) -> bytes:
    data = json.dumps(message).encode()
    return struct.pack(">I", len(data)) + data


def request(
    path: Path, args: list[str], env: dict[str, str], cwd: Path, over: dict[str, Any] | None = None
) -> bytes:
    """A request as a caller sends it (``over``: what to change in it)."""
    here = os.stat(cwd)
    said = {
        "key": path.stem,
        "argv": b64(*args),
        "env": dict(env),
        "cwd": str(cwd),
        "cwdId": [here.st_dev, here.st_ino],
        "umask": 0o22,
        **(over or {}),
    }
    return frame(said)


def exchange(path: Path, data: bytes, *, hold: bool = False) -> bytes:
    """Send ``data``, say no more, and read what comes back until the host closes (``hold``:
    without closing this side first, which to a host running a command is Ctrl-C)."""
    got = b""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(15)
        sock.connect(str(path))
        sock.sendall(data)
        if not hold:
            sock.shutdown(socket.SHUT_WR)
        while chunk := sock.recv(1 << 16):
            got += chunk
    return got


def test_garbage_and_strangers_on_the_socket_get_nothing_and_change_nothing(
    shared: dict[str, Any], tmp_path: Path
) -> None:
    env, pid, runtime = shared["env"], shared["pid"], shared["runtime"]
    (path,) = (runtime / SOCKET_DIR).glob("*.sock")
    box = tmp_path / "box"
    box.mkdir()
    good = {"path": path, "args": SEARCH, "env": env, "cwd": box}
    attempts = [
        b"",  # connect and leave
        b"\x00\x00\x00\x05{not",  # a broken frame, then silence
        b"\xff\xff\xff\xff",  # a frame too large to read
        b"\x00\x00\x00\x02[]",  # not a request
        request(**good, over={"key": "someone-else"}),
        request(**good, over={"argv": ["%%%"]}),  # not base64
        request(**good, over={"argv": []}),  # `aira`: not served
        request(**{**good, "args": ["trust", "add", "k.pub", "--json"]}),  # not served
        request(**good, over={"env": []}),  # env: a list
        request(**good, over={"env": {**env, "A=B": "1"}}),  # names no process can have
        request(**good, over={"env": {**env, "": "1"}}),
        request(**good, over={"env": {**env, "X": "a\0b"}}),
        request(**good, over={"cwd": "relative/dir"}),
        request(**good, over={"cwd": str(box) + "\0x"}),
        request(**good, over={"cwdId": [0, 0]}),  # not the directory the caller stands in
        request(**good, over={"umask": -1}),
        request(**good, over={"umask": True}),
        request(**good),  # and no go: not run
    ]
    for data in attempts:
        reply = exchange(path, data)
        assert reply in (b"", frame_of("fallback"), frame_of("accepted"))
        assert not served_by(pid, box), data  # nothing ran there
    # said go, standing somewhere else than it says (another mount, a replaced directory):
    # the host runs nothing and the caller runs it itself
    other = tmp_path / "other"
    other.mkdir()
    there = os.stat(box)
    said = request(path, SEARCH, env, other, over={"cwdId": [there.st_dev, there.st_ino]})
    assert exchange(path, said + frame({"go": True})) == frame_of("accepted") + frame_of("fallback")
    # an encoding this interpreter knows but no text stream can have: run it yourself
    for encoding in (["hex", "strict"], ["utf\u00008", "strict"]):
        said = request(path, SEARCH, env, box, over={"encoding": encoding})
        got = exchange(path, said + frame({"go": True}), hold=True)
        assert got == frame_of("accepted") + frame_of("fallback"), got[:200]
    where = tmp_path / "after"
    where.mkdir()
    out = run(env, *SEARCH, cwd=where)
    assert out.returncode == 0 and json.loads(out.stdout)["hits"]
    assert served_by(pid, where)  # the same host, still answering


def frame_of(word: str) -> bytes:
    data = json.dumps({word: True}, separators=(",", ":")).encode()
    return struct.pack(">I", len(data)) + data


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_another_users_process_gets_no_answer(home: Path) -> None:
    """Opened to every user for the test (the directory's own check keeps them out of a
    real one), a stranger's request is not answered: the host asks the socket who it is."""
    runtime = Path(tempfile.mkdtemp(prefix="aira-warm-"))
    try:
        runtime.chmod(0o755)  # a stranger must reach the socket for the host's check to count
        env = environment(home, runtime)
        assert run(env, *SEARCH).returncode == 0
        pid = the_host(runtime)
        folder = runtime / SOCKET_DIR
        (path,) = folder.glob("*.sock")
        said = request(path, SEARCH, {}, Path("/"))
        folder.chmod(0o755)
        path.chmod(0o777)
        readable, writable = os.pipe()
        child = os.fork()
        if child == 0:  # nobody; it says what it got through the pipe, then ends at once
            said = b"nothing"
            try:
                os.setgid(65534)
                os.setuid(65534)
                with socket.socket(socket.AF_UNIX) as sock:
                    sock.settimeout(15)
                    sock.connect(str(path))
                    sock.sendall(said)
                    said = sock.recv(64) or b"nothing"
            except (ConnectionResetError, BrokenPipeError):
                pass  # closed unread: nothing
            except BaseException as exc:
                said = repr(exc).encode()
            os.write(writable, said)
            os._exit(0)
        os.close(writable)
        os.waitpid(child, 0)
        with os.fdopen(readable, "rb") as pipe:
            assert pipe.read() == b"nothing"
        assert hosts_under(runtime) == [pid]
    finally:
        stop_hosts(runtime)
        shutil.rmtree(runtime, ignore_errors=True)


def _unshare_works(*flags: str) -> bool:
    try:
        return subprocess.run(["unshare", *flags, "true"], capture_output=True).returncode == 0
    except OSError:
        return False


@pytest.mark.skipif(not _unshare_works("-m"), reason="needs unshare (mount namespaces)")
def test_a_process_of_the_same_user_in_another_mount_namespace_gets_no_answer(
    shared: dict[str, Any], tmp_path: Path
) -> None:
    """A sandbox of the same uid sees other files: it must not borrow the host's view."""
    env, runtime = shared["env"], shared["runtime"]
    (path,) = (runtime / SOCKET_DIR).glob("*.sock")
    said = request(path, SEARCH, env, tmp_path)
    script = (
        "import socket, sys\n"
        "s = socket.socket(socket.AF_UNIX); s.settimeout(15); s.connect(sys.argv[1])\n"
        "got = b''\n"
        "try:\n"
        "    s.sendall(bytes.fromhex(sys.argv[2])); s.shutdown(socket.SHUT_WR)\n"
        "    while chunk := s.recv(65536): got += chunk\n"
        "except (ConnectionResetError, BrokenPipeError): pass  # closed unanswered\n"
        "print(got.hex())\n"
    )
    for flags in (["-m"], ["-m", "-U", "-r"]):  # same uid, another mount (and user) namespace
        if not _unshare_works(*flags):
            continue
        out = subprocess.run(
            ["unshare", *flags, sys.executable, "-c", script, str(path), said.hex()],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "", flags  # not even a reply
    assert run(env, *SEARCH, cwd=tmp_path).returncode == 0
    assert served_by(shared["pid"], tmp_path)  # the host itself still answers its own


def test_a_caller_in_a_checkout_gets_a_host_with_the_checkouts_code(tmp_path: Path) -> None:
    """``python -m`` imports from the working directory first: in a directory with Aira's
    code (a checkout) the host must too, so its key differs; elsewhere it is left out."""
    checkout = tmp_path / "checkout"
    (checkout / "aira_pack_demo.egg-info").mkdir(parents=True)  # what `pip install -e` leaves
    plain = tmp_path / "plain"
    plain.mkdir()
    script = (
        "from aira_core.cli.warm import host_key, import_path; print(host_key(), import_path()[0])"
    )
    said = {}
    for where in (plain, checkout, tmp_path / "plain"):
        out = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, cwd=where, timeout=60
        )
        assert out.returncode == 0, out.stderr
        said[where] = out.stdout.split()
    assert said[checkout][1] == str(checkout)  # imported from, by the host too
    assert said[plain][1] != str(plain)
    assert said[checkout][0] != said[plain][0]


def test_the_key_names_the_interpreter_path_and_aira_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = host_key()
    monkeypatch.setenv("AIRA_SOME_SETTING", "x")  # a plugin may have read it as it loaded
    assert host_key() != before
    monkeypatch.delenv("AIRA_SOME_SETTING")
    assert host_key() == before
    for kept in ("MMGT_OPT", "CSF_LANGUAGE", "OMP_NUM_THREADS", "LD_PRELOAD"):
        monkeypatch.setenv(kept, "0")  # read once, by a library as it loads in the host
        assert host_key() != before, kept
        monkeypatch.delenv(kept)
    monkeypatch.setenv("COLUMNS", "17")  # the caller's, per command: not the host's state
    assert host_key() == before


PLATE = [
    {
        "id": "plate",
        "capability": "cap:exact.box@1",
        "label": "plate",
        "args": {"length": 40, "width": 30, "height": 10},
    },
    {
        "id": "round",
        "capability": "cap:exact.fillet@1",
        "args": {
            "target": "b:plate",
            "radius": 2,
            "edges": {"body": "b:plate", "select": "|Z", "entity": "Edge"},
        },
    },
]


def new_store(env: dict[str, str], where: Path) -> tuple[Path, Path]:
    """A fresh store in ``where`` and the plate plan bound to its head."""
    store = where / "store.sqlite3"
    init = run({**env, "AIRA_WARM": "0"}, "model", "init", "--store", str(store), "--json")
    assert init.returncode == 0, init.stderr
    plan = where / "plate.json"
    plan.write_text(json.dumps({"baseRevision": json.loads(init.stdout)["rev"], "steps": PLATE}))
    return store, plan


def commits(env: dict[str, str], store: Path) -> list[str]:
    log = run({**env, "AIRA_WARM": "0"}, "model", "log", "--store", str(store), "--json")
    return [r["rev"] for r in json.loads(log.stdout)["records"]]


def test_a_served_plan_apply_commits_what_its_own_process_would(
    shared: dict[str, Any], tmp_path: Path
) -> None:
    env, pid = shared["env"], shared["pid"]
    (tmp_path / "warm").mkdir()
    (tmp_path / "cold").mkdir()
    warm_store, warm_plan = new_store(env, tmp_path / "warm")
    cold_store, cold_plan = new_store(env, tmp_path / "cold")
    warm = run(
        env,
        "plan",
        "apply",
        str(warm_plan),
        "--store",
        str(warm_store),
        "--json",
        cwd=tmp_path / "warm",
    )
    assert served_by(pid, tmp_path / "warm")
    cold = run(
        {**env, "AIRA_WARM": "0"},
        "plan",
        "apply",
        str(cold_plan),
        "--store",
        str(cold_store),
        "--json",
    )
    assert warm.returncode == cold.returncode == 0, warm.stdout + warm.stderr
    w, c = json.loads(warm.stdout), json.loads(cold.stdout)
    assert w["status"] == c["status"] == "success"
    assert w["data"]["rev"] == c["data"]["rev"]  # the same revision, content-addressed
    assert commits(env, warm_store) == commits(env, cold_store)
    # applied again: refused as stale by the host as by a process, and nothing committed
    again = run(
        env, "plan", "apply", str(warm_plan), "--store", str(warm_store), "--json", cwd=tmp_path
    )
    assert again.returncode == 1 and "STEP_STALE_REVISION" in again.stdout
    assert served_by(pid, tmp_path)
    assert commits(env, warm_store) == commits(env, cold_store)


def test_a_host_killed_during_an_apply_is_reported_and_the_apply_not_run_again(
    home: Path, runtime: Path, tmp_path: Path
) -> None:
    """Whether the plan was committed is unknown to the caller: it says so (WARM_HOST_LOST)
    instead of applying it itself, and the store holds the plan at most once."""
    env = environment(home, runtime)
    assert run(env, *SEARCH).returncode == 0
    pid = the_host(runtime)
    store, plan = new_store(env, tmp_path)
    before = commits(env, store)
    where = tmp_path / "caller"
    where.mkdir()
    caller = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "aira_core.cli",
            "plan",
            "apply",
            str(plan),
            "--store",
            str(store),
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=where,
    )
    wait_for(lambda: served_by(pid, where), seconds=60)  # the host took it
    os.kill(pid, signal.SIGKILL)
    out, err = caller.communicate(timeout=60)
    assert caller.returncode == 1, out + err
    assert "WARM_HOST_LOST" in err
    assert json.loads(out)["error"]["code"] == "WARM_HOST_LOST"
    assert len(commits(env, store)) - len(before) in (0, 1)


def test_a_busy_host_does_not_hold_up_a_read(home: Path, runtime: Path, tmp_path: Path) -> None:
    """While the host runs one command, another caller's read runs in its own process
    after a short wait instead of queueing behind it."""
    env = environment(home, runtime)
    assert run(env, *SEARCH).returncode == 0
    pid = the_host(runtime)
    (path,) = (runtime / SOCKET_DIR).glob("*.sock")
    # occupy the host: a caller that took the host and never says go holds it for
    # READ_TIMEOUT (10 s) of the host's time
    with socket.socket(socket.AF_UNIX) as holder:
        holder.connect(str(path))
        holder.sendall(request(path, SEARCH, env, tmp_path))
        holder.settimeout(15)
        assert b"accepted" in holder.recv(1 << 16)
        where = tmp_path / "reader"
        where.mkdir()
        started = time.monotonic()
        out = run(env, *SEARCH, cwd=where)
        waited = time.monotonic() - started
    assert out.returncode == 0 and json.loads(out.stdout)["hits"]
    assert not served_by(pid, where)  # it ran in its own process
    assert waited < 9  # not behind the holder's 10 s


def test_ctrl_c_interrupts_the_hosts_command_as_its_own_process(
    home: Path, runtime: Path, tmp_path: Path
) -> None:
    """Ctrl-C in a caller whose apply the host runs: the host interrupts it (as Ctrl-C in
    the command's own process would), the caller says how it ended, no traceback, and the
    host serves the next command."""
    env = environment(home, runtime)
    assert run(env, *SEARCH).returncode == 0
    pid = the_host(runtime)  # its kernel is not started yet: the first apply waits for it
    store, plan = new_store(env, tmp_path)
    before = commits(env, store)
    where = tmp_path / "caller"
    where.mkdir()
    caller = subprocess.Popen(
        [*AIRA, "plan", "apply", str(plan), "--store", str(store), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=where,
    )
    wait_for(lambda: served_by(pid, where), seconds=60)  # the host took it
    caller.send_signal(signal.SIGINT)
    out, err = caller.communicate(timeout=60)
    assert b"Traceback" not in err, err
    assert caller.returncode == 130, out + err
    assert b"ABORTED" in err
    assert json.loads(out)["error"]["code"] == "ABORTED"
    assert commits(env, store) == before  # stopped before it committed
    again = tmp_path / "again"
    again.mkdir()
    assert run(env, *SEARCH, cwd=again).returncode == 0
    assert served_by(pid, again)  # the same host, still answering


def test_a_socket_left_by_a_killed_host_is_replaced(home: Path, runtime: Path) -> None:
    env = environment(home, runtime)
    assert run(env, *SEARCH).returncode == 0
    old = the_host(runtime)
    os.kill(old, signal.SIGKILL)
    wait_for(lambda: old not in hosts_under(runtime))
    assert list((runtime / SOCKET_DIR).glob("*.sock"))  # left behind
    out = run(env, *SEARCH)  # nobody answers it: it runs here and starts a host
    assert out.returncode == 0 and json.loads(out.stdout)["hits"]
    assert the_host(runtime) != old


def test_code_fingerprint_sees_changed_and_new_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files of loaded packages outside the interpreter's prefix (editable installs),
    namespace packages' included; code written after the process started is not what
    it loaded; distributions in a sys.path folder, not its other files."""
    from aira_core.cli.warm import code_fingerprint

    site = tmp_path / "site"
    (site / "regular_pkg").mkdir(parents=True)
    (site / "regular_pkg" / "__init__.py").write_text("X = 1\n")
    (site / "spaced_pkg" / "part").mkdir(parents=True)  # a namespace package
    (site / "spaced_pkg" / "part" / "__init__.py").write_text("Y = 1\n")
    started = time.time_ns() + 5 * 10**9  # the files above are older than this process
    monkeypatch.syspath_prepend(str(site))
    import regular_pkg  # noqa: F401
    import spaced_pkg.part  # noqa: F401

    try:
        seen: dict[str, str] = {}
        assert code_fingerprint(seen, started)
        assert code_fingerprint(seen, started)  # nothing changed
        (site / "notes.txt").write_text("x\n")  # not code
        assert code_fingerprint(seen, started)
        (site / "spaced_pkg" / "part" / "__init__.py").write_text("Y = 2\n")
        assert not code_fingerprint(seen, started)  # a namespace package's file
        seen = {}
        assert code_fingerprint(seen, started)
        os.utime(site / "regular_pkg" / "__init__.py", ns=(1, 1))  # mtime back, ctime moves
        assert not code_fingerprint(seen, started)
        seen = {}
        assert code_fingerprint(seen, started)
        (site / "other-1.0.dist-info").mkdir()  # an install
        assert not code_fingerprint(seen, started)
        # first met, written after this process started (while it loaded): not what it has
        assert not code_fingerprint({}, time.time_ns() - 10**9)
    finally:
        for name in ("regular_pkg", "spaced_pkg", "spaced_pkg.part"):
            sys.modules.pop(name, None)


def test_a_socket_directory_made_under_any_umask_is_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Made under umask 0777 it would be 0000 and refused: it is made 0700."""
    from aira_core.warm import socket_dir

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    old = os.umask(0o777)
    try:
        made = socket_dir("aira-test")
    finally:
        os.umask(old)
    assert made == tmp_path / "aira-test"
    assert made.stat().st_mode & 0o777 == 0o700
