"""The bounded-step host (spec 003): tiers, ledger, capsule, decisions, log, loop, trajectory."""
