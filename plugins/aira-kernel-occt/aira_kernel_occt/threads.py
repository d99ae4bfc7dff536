"""ISO metric threads as numbers: designations, pitches, the basic profile and the volume a
modeled thread removes. No CadQuery here; :func:`aira_kernel_occt.geometry._thread` builds
the solid from these and checks its result against :func:`removed_volume`.

The profile is the basic profile of ISO 68-1: flanks at 60°, fundamental triangle height
H = √3/2·P, thread depth 5H/8 between the major and the minor diameter, a flat of P/8 at
the major diameter and of P/4 at the minor diameter. A modeled thread is the groove between
the teeth, swept along a helix and cut from the body.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

COARSE_PITCH: dict[float, float] = {
    1: 0.25, 1.2: 0.25, 1.4: 0.3, 1.6: 0.35, 1.8: 0.35, 2: 0.4, 2.5: 0.45, 3: 0.5,
    3.5: 0.6, 4: 0.7, 5: 0.8, 6: 1.0, 7: 1.0, 8: 1.25, 10: 1.5, 12: 1.75, 14: 2.0,
    16: 2.0, 18: 2.5, 20: 2.5, 22: 2.5, 24: 3.0, 27: 3.0, 30: 3.5, 33: 3.5, 36: 4.0,
    39: 4.0, 42: 4.5, 45: 4.5, 48: 5.0, 52: 5.0, 56: 5.5, 60: 5.5, 64: 6.0,
}  # fmt: skip
"""ISO 261 coarse pitches (mm) by nominal diameter (mm): what ``M8`` means."""

MIN_PITCH = 0.2
"""The finest pitch modeled (mm): ISO 261's finest for M1.6 and up."""
MAX_DIAMETER = 300.0
MAX_TURNS = 100
"""A longer thread is refused (``THREAD_TOO_LONG``): 100 turns took 19 s to cut (M3 × 50 mm,
two cores, busy), a longer one runs towards the worker's 60 s deadline."""

TAN30 = math.tan(math.radians(30))
DESIGNATION = re.compile(r"^M(\d+(?:\.\d+)?)(?:\s*[x×]\s*(\d+(?:\.\d+)?))?$", re.IGNORECASE)


class ThreadError(ValueError):
    """A designation or a size that no thread has; ``code`` is the diagnostic."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Thread:
    """An ISO metric thread: nominal (major) diameter and pitch, mm."""

    diameter: float
    pitch: float

    @property
    def name(self) -> str:
        coarse = COARSE_PITCH.get(self.diameter) == self.pitch
        return f"M{self.diameter:g}" + ("" if coarse else f"x{self.pitch:g}")

    @property
    def depth(self) -> float:
        """5H/8: from the major to the basic minor diameter, radially."""
        return 5 / 8 * math.sqrt(3) / 2 * self.pitch

    @property
    def minor(self) -> float:
        """The basic minor diameter D1 = D - 1.0825·P (an internal thread's bore)."""
        return self.diameter - 2 * self.depth

    @property
    def tap_drill(self) -> float:
        """The usual tap drill, D - P: an internal thread's bore may be D1 up to this."""
        return self.diameter - self.pitch

    def bore_range(self) -> tuple[float, float]:
        """The bore diameters an internal thread of this size is cut into."""
        slack = 0.05 * self.pitch
        return self.minor - slack, self.tap_drill + slack

    def shaft_range(self) -> tuple[float, float]:
        """The shaft diameters an external thread of this size is cut into."""
        slack = 0.05 * self.pitch
        return self.diameter - slack, self.diameter + slack

    def groove(self, internal: bool) -> list[tuple[float, float]]:
        """The groove's outline as (radius, axial offset) points around the helix point,
        reaching past the body's surface (into the air) by 0.08·P along the flanks, so the
        cut never grazes it. External: from the root at the minor diameter out; internal:
        from the root at the major diameter in."""
        p, r_major, e = self.pitch, self.diameter / 2, 0.08 * self.pitch
        if internal:  # flat P/8 at the major diameter, 3P/4 wide at the minor
            root, flat, face = r_major, p / 16, r_major - self.depth - e
            wide = 3 * p / 8 + e * TAN30
        else:  # flat P/4 at the minor diameter, 7P/8 wide at the major
            root, flat, face = r_major - self.depth, p / 8, r_major + e
            wide = 7 * p / 16 + e * TAN30
        return [(face, -wide), (root, -flat), (root, flat), (face, wide)]

    def width(self, r: float, internal: bool) -> float:
        """The groove's axial width at radius ``r``."""
        if internal:
            return self.pitch / 8 + 2 * (self.diameter / 2 - r) * TAN30
        return self.pitch / 4 + 2 * (r - (self.diameter / 2 - self.depth)) * TAN30

    def removed_volume(self, surface_radius: float, length: float, internal: bool) -> float:
        """The volume (mm³) a modeled thread of axial ``length`` removes from a solid band
        around a cylindrical face of ``surface_radius``: per turn, the groove's area inside
        the material swept about the axis (Pappus), 2π∫ r·w(r) dr, times length / P."""
        if internal:
            lo, hi = surface_radius, self.diameter / 2
        else:
            lo, hi = self.diameter / 2 - self.depth, surface_radius
        # w(r) = a + b·r on the band: ∫ r·(a + b·r) dr = a(r²)/2 + b(r³)/3
        b = -2 * TAN30 if internal else 2 * TAN30
        a = self.width(0.0, internal)
        moment = a * (hi**2 - lo**2) / 2 + b * (hi**3 - lo**3) / 3
        return 2 * math.pi * moment * length / self.pitch


def parse(designation: object) -> Thread:
    """``M8`` (coarse pitch, ISO 261) or ``M8x1`` (the pitch given) as a :class:`Thread`;
    ``THREAD_SIZE_INVALID`` for anything else."""
    text = designation.strip() if isinstance(designation, str) else None
    match = DESIGNATION.match(text) if text else None
    if match is None:
        raise ThreadError(
            "THREAD_SIZE_INVALID",
            f"size {str(designation)[:40]!r} is no ISO metric thread: give 'M<diameter>' "
            "(coarse pitch, e.g. 'M8') or 'M<diameter>x<pitch>' (e.g. 'M8x1')",
        )
    diameter = float(match.group(1))
    if not 1 <= diameter <= MAX_DIAMETER:
        raise ThreadError(
            "THREAD_SIZE_INVALID",
            f"M{diameter:g}: a metric thread here is 1 to {MAX_DIAMETER:g} mm in diameter",
        )
    if match.group(2) is None:
        pitch = COARSE_PITCH.get(diameter)
        if pitch is None:
            known = ", ".join(f"M{d:g}" for d in COARSE_PITCH)
            raise ThreadError(
                "THREAD_SIZE_INVALID",
                f"M{diameter:g} has no ISO 261 coarse pitch; give the pitch ('M{diameter:g}x"
                f"<pitch>') or a coarse size: {known}",
            )
    else:
        pitch = float(match.group(2))
    most = round(diameter / 4, 6)  # a deeper tooth would leave no core
    if not MIN_PITCH <= pitch <= most:
        raise ThreadError(
            "THREAD_SIZE_INVALID",
            f"pitch {pitch:g} mm on M{diameter:g}: a pitch is {MIN_PITCH:g} mm to a quarter "
            f"of the diameter ({most:g} mm)",
        )
    return Thread(diameter, pitch)
