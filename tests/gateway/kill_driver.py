"""One gateway step in a process of its own, for the kill tests (test_gateway_kill.py): the
test SIGKILLs it mid-call and runs it again as the resume.

    python tests/gateway/kill_driver.py BASE_URL LEDGER TASK_ID sync|jobs

It opens the ledger, builds a gateway on a provider pointed at the fake (which runs in the
test's process), asks it for step 0 and prints one JSON line: ``{"text": …}`` for a reply,
``{"code": …}`` for an AiraError (a GatewayPaused included). The read timeout and the call
deadline are long (the test kills the process well before either), the watch pauses not at
all between polls.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import REFUSALS, step_request

from aira_core.diagnostics import AiraError
from aira_core.gateway.gateway import Gateway, Route, WatchPolicy
from aira_core.gateway.http import Timeouts
from aira_core.gateway.ledger import AttemptLedger
from aira_core.gateway.openai_compat import OpenAICompatProvider
from aira_core.gateway.transports import ToolTransport
from aira_core.testing.jobs import FakeJobProvider

PATIENT = Timeouts(connect=1.0, read=20.0, write=1.0, pool=1.0)
"""Longer than any kill takes: the process is killed while it waits, never times out."""


def main(argv: list[str]) -> int:
    base_url, ledger_path, task_id, mode = argv
    kind = FakeJobProvider if mode == "jobs" else OpenAICompatProvider
    provider = kind("fake", base_url, ["m1"], acceptance=REFUSALS, timeouts=PATIENT)
    ledger = AttemptLedger.open(ledger_path)
    try:
        gateway = Gateway(
            [Route(provider, "m1")],
            ledger,
            task_id,
            ToolTransport(),
            deadline_s=20.0,
            watch=WatchPolicy(interval_s=0.0, max_failures=3),
        )
        try:
            reply = gateway.decide(step_request(0))
        except AiraError as exc:
            print(json.dumps({"code": exc.code}), flush=True)
            return 0
        print(json.dumps({"text": reply.text, "callId": reply.call_id}), flush=True)
        return 0
    finally:
        ledger.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
