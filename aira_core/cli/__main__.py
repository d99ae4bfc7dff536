"""``python -m aira_core.cli``: the same as the ``aira`` console script."""

from aira_core.cli import main

main()
