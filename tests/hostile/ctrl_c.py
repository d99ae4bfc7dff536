"""A real Ctrl-C: ``aira`` started as a process, SIGINT sent once the hostile plugin code it
runs says (by touching a marker file) that it has started to block."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def interrupted(*args: str, mark: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m aira_core.cli *args`` with ``env`` (plus ``AIRA_HOSTILE_MARK``), send
    SIGINT when ``mark`` appears; what the process then did. Fails rather than hangs."""
    if "PYTHONPATH" in env and os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], os.environ["PYTHONPATH"]])
    process = subprocess.Popen(
        [sys.executable, "-m", "aira_core.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "300", "AIRA_HOSTILE_MARK": str(mark), **env},
    )
    try:
        deadline = time.monotonic() + 90
        while not mark.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the plugin code never started: {process.communicate()}")
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
