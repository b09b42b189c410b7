"""Dense counting numbers: wrong counts and ranges derived from the true count, and their checks.

Every number is a pure function of (count, seed), so reruns give the same questions; the checks
re-verify the invariants the questions rely on (a wrong count is never the true one, exactly one
range holds the count, ranges have equal width, the SA range spans at most ``SA_MAX_SPAN``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from math import ceil

SA_MAX_SPAN = 6  # the SA range answer may span at most this many integers (both ends included)


@dataclass(frozen=True)
class CountPlan:
    count: int
    wrong_counts: tuple[int, int]  # Q2, Q3
    yn_range: tuple[int, int]  # Q4, inclusive, contains the count
    sa_range: tuple[int, int]  # Q6 reference answer, inclusive
    mc_counts: tuple[int, ...]  # Q7: five counts, ascending, the true one among them
    mc_ranges: tuple[tuple[int, int], ...]  # Q8: four contiguous ranges of equal width
    correct_range: int  # index into mc_ranges

    def slots(self) -> dict[str, str]:
        """String slot values for the DC templates."""
        wrong_mc = [c for c in self.mc_counts if c != self.count]
        bins = [f"{lo}-{hi}" for lo, hi in self.mc_ranges]
        wrong_bins = [b for i, b in enumerate(bins) if i != self.correct_range]
        return {
            "count": str(self.count),
            "wrong_count_1": str(self.wrong_counts[0]),
            "wrong_count_2": str(self.wrong_counts[1]),
            "range_lo": str(self.yn_range[0]),
            "range_hi": str(self.yn_range[1]),
            "sa_range": f"{self.sa_range[0]}-{self.sa_range[1]}",
            "sa_max_span": str(SA_MAX_SPAN),
            **{f"mc_wrong_count_{i + 1}": str(c) for i, c in enumerate(wrong_mc)},
            "mc_correct_range": bins[self.correct_range],
            **{f"mc_wrong_range_{i + 1}": b for i, b in enumerate(wrong_bins)},
        }


def _draws(seed: int, count: int, n: int) -> list[int]:
    digest = hashlib.sha256(f"dc\x1f{seed}\x1f{count}".encode()).digest()
    return list(digest[:n])


def plan_counts(count: int, seed: int) -> CountPlan:
    """Wrong counts and ranges around ``count`` (an int >= 1), seeded so the true value's rank varies."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"dense counting needs an integer count >= 1, got {count!r}")
    d = _draws(seed, count, 16)
    step = max(1, round(count * 0.12))
    # Q2/Q3: one above, one below (or a second above when below would go under 1).
    up = count + step * (1 + d[0] % 2)
    down = count - step * (1 + d[1] % 2)
    if down < 1:
        down = up + step
    wrong = (up, down) if d[2] % 2 else (down, up)
    # Q4: an inclusive range around the count, each side 1..2 steps wide.
    yn = (max(0, count - step * (1 + d[3] % 2)), count + step * (1 + d[4] % 2))
    # Q6: a reference range of exactly SA_MAX_SPAN integers holding the count.
    k = min(d[5] % SA_MAX_SPAN, count)
    sa = (count - k, count - k + SA_MAX_SPAN - 1)
    # Q7: five distinct counts with irregular gaps; the true count's rank is seeded.
    gaps = [step + d[6 + i] % (step // 2 + 1) for i in range(4)]
    rank = d[10] % 5
    while rank > 0 and count - sum(gaps[:rank]) < 0:
        rank -= 1
    below = [count - sum(gaps[: i + 1]) for i in range(rank)]
    above = [count + sum(gaps[rank : rank + i + 1]) for i in range(4 - rank)]
    mc_counts = tuple(sorted(below + [count] + above))
    # Q8: four contiguous equal-width ranges; which one holds the count, and where in it, is seeded.
    width = max(2, ceil(count / 4))
    offset = d[11] % min(width, count + 1)
    allowed = [j for j in range(4) if count - offset - j * width >= 0]
    j = allowed[d[12] % len(allowed)]
    start = count - offset - j * width
    ranges = tuple((start + i * width, start + (i + 1) * width - 1) for i in range(4))
    return CountPlan(count, wrong, yn, sa, mc_counts, ranges, j)


def check_counts(plan: CountPlan) -> list[tuple[str, str]]:
    """Broken DC invariants as (reason_code, detail); empty when the plan is valid."""
    bad: list[tuple[str, str]] = []
    n = plan.count
    for w in plan.wrong_counts:
        if w < 0 or w == n:
            bad.append(("dc_invalid_wrong_count", f"wrong count {w} for true count {n}"))
    if plan.wrong_counts[0] == plan.wrong_counts[1]:
        bad.append(("dc_invalid_wrong_count", f"the two wrong counts are equal ({plan.wrong_counts[0]})"))
    lo, hi = plan.yn_range
    if not (0 <= lo <= n <= hi):
        bad.append(("dc_range_misses_count", f"YN range {lo}-{hi} does not hold {n}"))
    lo, hi = plan.sa_range
    if not (0 <= lo <= n <= hi):
        bad.append(("dc_range_misses_count", f"SA range {lo}-{hi} does not hold {n}"))
    if hi - lo + 1 > SA_MAX_SPAN:
        bad.append(("dc_sa_range_too_wide", f"SA range {lo}-{hi} spans {hi - lo + 1} > {SA_MAX_SPAN} numbers"))
    counts = plan.mc_counts
    if len(counts) != 5 or len(set(counts)) != 5 or n not in counts or min(counts) < 0:
        bad.append(
            (
                "dc_invalid_wrong_count",
                f"MC counts {list(counts)} must be 5 distinct non-negative values including {n}",
            )
        )
    widths = {hi - lo for lo, hi in plan.mc_ranges}
    if len(plan.mc_ranges) != 4 or len(widths) != 1:
        bad.append(("dc_range_width_unequal", f"MC ranges {list(plan.mc_ranges)} are not 4 ranges of equal width"))
    holding = [i for i, (lo, hi) in enumerate(plan.mc_ranges) if lo <= n <= hi]
    if holding != [plan.correct_range]:
        bad.append(
            (
                "dc_range_misses_count",
                f"MC ranges {list(plan.mc_ranges)}: exactly range {plan.correct_range} must hold {n}",
            )
        )
    if any(lo < 0 or hi < lo for lo, hi in plan.mc_ranges):
        bad.append(("dc_invalid_range", f"MC ranges {list(plan.mc_ranges)} must be non-negative and ordered"))
    return bad
