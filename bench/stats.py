"""Statistics and the result table: samples, p50/p99, interleaved measurement, PASS/MISS rows."""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Stats:
    samples: list[float] = field(default_factory=list)  # milliseconds

    @property
    def p50(self) -> float:
        return statistics.median(self.samples) if self.samples else float("nan")

    @property
    def p99(self) -> float:
        if not self.samples:
            return float("nan")
        ordered = sorted(self.samples)
        return ordered[min(len(ordered) - 1, max(0, int(round(0.99 * len(ordered) + 0.5)) - 1))]

    def to_json(self) -> dict[str, Any]:
        return {
            "p50_ms": self.p50,
            "p99_ms": self.p99,
            "n": len(self.samples),
            "min_ms": min(self.samples) if self.samples else None,
            "max_ms": max(self.samples) if self.samples else None,
        }


def measure(
    fn: Callable[[int], Any],
    n: int,
    *,
    budget: float | None = None,
    warmup: int = 1,
    minimum: int = 3,
) -> Stats:
    """Call ``fn(i)`` ``n`` times (fewer once ``budget`` seconds are spent, but at least
    ``minimum``) after ``warmup`` unmeasured calls; wall time per call in ms."""
    for i in range(warmup):
        fn(-1 - i)
    stats = Stats()
    started = time.perf_counter()
    for i in range(n):
        t = time.perf_counter()
        fn(i)
        stats.samples.append((time.perf_counter() - t) * 1000)
        if budget is not None and i + 1 >= minimum and time.perf_counter() - started > budget:
            break
    return stats


def measure_interleaved(
    fns: list[Callable[[], Any]], n: int, *, budget: float | None = None, minimum: int = 3
) -> list[Stats]:
    """Like ``measure`` for several calls sampled in turn (one warmup each), so that their
    ratios are not skewed by load that comes and goes."""
    for fn in fns:
        fn()
    stats = [Stats() for _ in fns]
    started = time.perf_counter()
    for i in range(n):
        for fn, into in zip(fns, stats, strict=True):
            t = time.perf_counter()
            fn()
            into.samples.append((time.perf_counter() - t) * 1000)
        if budget is not None and i + 1 >= minimum and time.perf_counter() - started > budget:
            break
    return stats


@dataclass
class Row:
    name: str
    value: Stats | float | None
    unit: str = "ms"
    baseline: Stats | float | None = None
    baseline_name: str = ""
    ratio: float | None = None  # value / baseline unless given
    target: str = ""
    ok: bool | None = None
    note: str = ""

    def p50(self) -> float | None:
        return self.value.p50 if isinstance(self.value, Stats) else self.value

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "unit": self.unit,
            "target": self.target,
            "verdict": None if self.ok is None else ("PASS" if self.ok else "MISS"),
            "note": self.note,
            "ratio": self.ratio,
            "baselineName": self.baseline_name,
        }
        for key, value in (("value", self.value), ("baseline", self.baseline)):
            out[key] = value.to_json() if isinstance(value, Stats) else value
        return out


def fmt(value: float | None, unit: str = "ms") -> str:
    if value is None or value != value:
        return "-"
    if unit == "ms":
        return (
            f"{value:,.2f}" if value < 10 else f"{value:,.1f}" if value < 1000 else f"{value:,.0f}"
        )
    if unit in ("MiB",):
        return f"{value:,.1f}"
    return f"{value:,.0f}"


def render(rows: list[Row]) -> str:
    header = ("metric", "p50", "p99", "unit", "baseline p50", "ratio", "target", "verdict")
    lines = []
    for row in rows:
        if isinstance(row.value, Stats):
            p50, p99 = fmt(row.value.p50, row.unit), fmt(row.value.p99, row.unit)
        else:
            p50, p99 = fmt(row.value, row.unit), ""
        base = row.baseline.p50 if isinstance(row.baseline, Stats) else row.baseline
        base_text = "" if base is None else f"{fmt(base, row.unit)} ({row.baseline_name})"
        ratio = "" if row.ratio is None else f"{row.ratio:,.2f}x"
        verdict = "" if row.ok is None else ("PASS" if row.ok else "MISS")
        lines.append((row.name, p50, p99, row.unit, base_text, ratio, row.target, verdict))
    widths = [max(len(str(x[i])) for x in [header, *lines]) for i in range(len(header))]
    out = [
        "  ".join(str(h).ljust(w) for h, w in zip(header, widths, strict=True)),
        "  ".join("-" * w for w in widths),
    ]
    for line in lines:
        out.append(
            "  ".join(
                str(c).rjust(w) if 1 <= i <= 5 else str(c).ljust(w)
                for i, (c, w) in enumerate(zip(line, widths, strict=True))
            )
        )
    notes = [f"  * {r.name}: {r.note}" for r in rows if r.note]
    return "\n".join(out + (["", "notes:"] + notes if notes else []))


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)
