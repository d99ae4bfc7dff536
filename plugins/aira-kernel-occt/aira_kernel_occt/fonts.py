"""The font text profiles are drawn in: bundled, so a part's letters are the same on every
machine (a system font differs from one to the next, or is missing on a server).

``fonts/DejaVuSans-Latin.ttf`` is DejaVu Sans 2.37 (Bitstream Vera licence with DejaVu's
changes in the public domain; ``fonts/LICENSE``) cut down to Basic Latin, Latin-1, Latin
Extended-A and a few signs (– — ‘ ’ “ ” • … ‰ € ™ Ω − ∞ ≤ ≥ ⌀ ←↑→↓), 42 KB, with
fontTools' subsetter. A character it lacks is refused (``TEXT_GLYPH_MISSING``), never drawn in
a fallback font.
"""

from __future__ import annotations

from pathlib import Path

FONT = Path(__file__).parent / "fonts" / "DejaVuSans-Latin.ttf"
FONT_NAME = "DejaVu Sans"
CAP_HEIGHT = 1493 / 2048
"""The height of a capital (H) as a fraction of the font size (the em): text is sized by it."""
MAX_CHARACTERS = 100
