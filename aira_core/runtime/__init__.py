"""The task runtime: the Meta-operation Contract, task sessions and plans."""
