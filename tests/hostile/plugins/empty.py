"""HOSTILE: an empty plugin module. Installed as a distribution declaring the entry point
name ``occt`` (the first-party kernel's), it must not withdraw the real kernel."""
