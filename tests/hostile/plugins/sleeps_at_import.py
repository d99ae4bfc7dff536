"""HOSTILE: blocks while it is imported (AIRA_HOSTILE_SLEEP seconds, default 120; touching
AIRA_HOSTILE_MARK first)."""

import os
import time
from pathlib import Path

if os.environ.get("AIRA_HOSTILE_MARK"):
    Path(os.environ["AIRA_HOSTILE_MARK"]).touch()

time.sleep(float(os.environ.get("AIRA_HOSTILE_SLEEP", "120")))
