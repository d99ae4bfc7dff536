"""HOSTILE: raises KeyboardInterrupt while it is imported (as if the user pressed Ctrl-C)."""

raise KeyboardInterrupt
