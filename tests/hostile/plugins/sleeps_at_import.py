"""HOSTILE: blocks while it is imported (AIRA_HOSTILE_SLEEP seconds, default 120)."""

import os
import time

time.sleep(float(os.environ.get("AIRA_HOSTILE_SLEEP", "120")))
