"""DeepSeek's prices as data: ``prices.json`` (package data) holds, per model, the USD per 1M
tokens of input served from DeepSeek's cache (``hit``), other input (``miss``) and output, at
peak and off-peak, the peak windows (Beijing time), the date the table took effect and its
source. Prices change often (peers.md §3): a new table is a new file, not new code.

Chinese public holidays are billed off-peak by DeepSeek and are not modelled: on such a day
an estimate made here is the peak one, so it may be high, never low.

Read on first use (a provider's ``prepare``), never at import or registration.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta, timezone
from pathlib import Path
from typing import Any

from aira_core.diagnostics import AiraError
from aira_core.gateway.chat import Prices
from aira_core.gateway.config import PROVIDER_CONFIG_INVALID

PRICES_FILE = Path(__file__).with_name("prices.json")
FORMAT = "aira.deepseek-prices/1"
PEAK = "peak"
OFF_PEAK = "off-peak"
PERIODS = (PEAK, OFF_PEAK)
PRICE_KEYS = ("hit", "miss", "output")


@dataclass(frozen=True)
class PeakHours:
    """When DeepSeek bills peak prices: ``weekdays`` (0 = Monday) and ``windows`` (start
    inclusive, end exclusive) in the local time of ``zone`` (UTC+8 for DeepSeek)."""

    zone: timezone
    weekdays: frozenset[int]
    windows: tuple[tuple[time, time], ...]

    def period_at(self, when: datetime) -> str:
        """``"peak"`` or ``"off-peak"`` at the instant ``when`` (a naive time is taken as
        UTC)."""
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        local = when.astimezone(self.zone)
        clock = local.time().replace(tzinfo=None)
        if local.weekday() in self.weekdays and any(a <= clock < b for a, b in self.windows):
            return PEAK
        return OFF_PEAK


@dataclass(frozen=True)
class PriceTable:
    """The price rows of each model by period, and what they are: since when and from where."""

    effective: str
    source: str
    peak: PeakHours
    rows: Mapping[str, Mapping[str, Prices]]

    def at(self, model: str, when: datetime) -> tuple[Prices, str] | None:
        """The prices of ``model`` for a call sent at ``when``, and the name of the row
        (``"deepseek-flash peak (prices of 2026-08-16)"``); ``None`` for a model without."""
        periods = self.rows.get(model)
        if periods is None:
            return None
        period = self.peak.period_at(when)
        return periods[period], f"{model} {period} (prices of {self.effective})"


class _Invalid(Exception):
    pass


def load(path: Path = PRICES_FILE) -> PriceTable:
    """The price table in ``path``; ``PROVIDER_CONFIG_INVALID`` naming what is wrong (the
    file's name and the key path) when it is not one."""
    try:
        document = json.loads(path.read_bytes())
        return _table(document)
    except OSError:
        problem = "cannot be read"
    except ValueError:
        problem = "is not JSON"
    except _Invalid as exc:
        problem = str(exc)
    raise AiraError(PROVIDER_CONFIG_INVALID, f"the DeepSeek price table {path.name} {problem}")


@functools.cache
def shipped() -> PriceTable:
    """The table this plugin ships (read once per process)."""
    return load()


def _table(document: Any) -> PriceTable:
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise _Invalid(f"is not a {FORMAT} document")
    for key in ("effective", "source"):
        if not isinstance(document.get(key), str) or not document[key]:
            raise _Invalid(f"has no {key}")
    if document.get("currency") != "USD" or document.get("unit") != "per 1M tokens":
        raise _Invalid("must give USD per 1M tokens")
    models = document.get("models")
    if not isinstance(models, dict) or not models:
        raise _Invalid("has no models")
    rows = {str(model): _periods(row, f"models.{model}") for model, row in models.items()}
    return PriceTable(
        effective=document["effective"],
        source=document["source"],
        peak=_peak(document.get("peak")),
        rows=rows,
    )


def _periods(value: Any, where: str) -> dict[str, Prices]:
    if not isinstance(value, dict) or set(value) != set(PERIODS):
        raise _Invalid(f"{where} must have exactly {' and '.join(PERIODS)}")
    out = {}
    for period in PERIODS:
        row = value[period]
        if not isinstance(row, dict) or set(row) != set(PRICE_KEYS):
            raise _Invalid(f"{where}.{period} must have exactly {', '.join(PRICE_KEYS)}")
        numbers = []
        for key in PRICE_KEYS:
            n = row[key]
            if isinstance(n, bool) or not isinstance(n, int | float) or not math.isfinite(n):
                raise _Invalid(f"{where}.{period}.{key} must be a number")
            if n < 0:
                raise _Invalid(f"{where}.{period}.{key} must not be negative")
            numbers.append(float(n))
        out[period] = Prices(*numbers)
    return out


def _peak(value: Any) -> PeakHours:
    if not isinstance(value, dict):
        raise _Invalid("has no peak hours")
    offset = value.get("utc_offset_hours")
    if isinstance(offset, bool) or not isinstance(offset, int) or not -14 <= offset <= 14:
        raise _Invalid("peak.utc_offset_hours must be a whole number of hours (-14 to 14)")
    weekdays = value.get("weekdays")
    if not isinstance(weekdays, list) or not all(
        isinstance(d, int) and not isinstance(d, bool) and 0 <= d <= 6 for d in weekdays
    ):
        raise _Invalid("peak.weekdays must be a list of 0 (Monday) to 6")
    windows = value.get("windows")
    if not isinstance(windows, list):
        raise _Invalid("peak.windows must be a list of [start, end] times")
    parsed = []
    for i, window in enumerate(windows):
        try:
            start, end = (time.fromisoformat(t) for t in window)
        except (TypeError, ValueError):
            raise _Invalid(f"peak.windows[{i}] must be [start, end] as HH:MM") from None
        if not start < end:
            raise _Invalid(f"peak.windows[{i}] must end after it starts")
        parsed.append((start, end))
    return PeakHours(timezone(timedelta(hours=offset)), frozenset(weekdays), tuple(parsed))
