"""The ``continuity`` plugin's registration: three adapters, one per role, found by the
loader — and discovery stays cheap (the adapters' modules load on a run's first call)."""

from __future__ import annotations

import os
import subprocess
import sys

CODE = """
import sys
from aira_core.integrations import Integrations, registered_integrations
found = registered_integrations()
print(sorted((a.role, a.name) for a in found))
print(sorted(m for m in sys.modules if m.startswith("aira_continuity.")))
seam = Integrations(found)  # the host accepts them: one per role, each with its methods
print(all(seam.active(role) is not None for role in ("intent", "continuity", "guard")))
"""


def test_the_plugin_registers_three_adapters_without_loading_them() -> None:
    env = {**os.environ, "AIRA_PLUGINS": "continuity"}
    out = subprocess.run(
        [sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120, env=env
    )
    assert out.returncode == 0, out.stderr
    roles, loaded, accepted = out.stdout.splitlines()
    assert roles == (
        "[('continuity', 'aira-continuity-snapshots'), ('guard', 'aira-continuity-guard'), "
        "('intent', 'aira-continuity-intent')]"
    )
    assert loaded == "['aira_continuity.plugin']"
    assert accepted == "True"
