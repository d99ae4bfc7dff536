"""Where Aira keeps per-user state (``AIRA_HOME`` or a per-user config directory) and what it
derives from what is installed (``AIRA_CACHE``)."""

from __future__ import annotations

import os
from pathlib import Path


def aira_home() -> Path:
    """``$AIRA_HOME`` if set, else the platform's per-user config directory for ``aira``.

    Not created here; writers create it when they first write.
    """
    env = os.environ.get("AIRA_HOME")
    if env:
        return Path(env).expanduser()
    import platformdirs  # only needed when no AIRA_HOME is set

    return Path(platformdirs.user_config_dir("aira", appauthor=False))


def aira_cache() -> Path:
    """``$AIRA_CACHE`` if set, else ``cache`` under :func:`aira_home`: what is derived from
    the installed packages (built search indexes, the sentence model's arrays), safe to
    delete and rebuilt when missing. Several homes may share one cache (tests do)."""
    env = os.environ.get("AIRA_CACHE")
    if env:
        return Path(env).expanduser()
    return aira_home() / "cache"
