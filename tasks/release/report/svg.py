"""Small inline-SVG charts: radar, horizontal bars, stacked bars.

Generated as text so a report is one self-contained HTML file that renders offline in any
browser. Every chart is an ``<svg class="chart" data-kind=...>`` with a ``<title>``; values
are in percent (0-100). Labels are escaped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from html import escape

PALETTE = ("#2f6db5", "#d9622b", "#3a9a5b", "#8a4fb8", "#c2a11f", "#1aa3a3", "#b8456b", "#6b6b6b")


def _fmt(v: float | None, counts: bool = False) -> str:
    """One decimal for percentages and seconds; whole numbers for counts."""
    if v is None:
        return "n/a"
    return str(int(round(v))) if counts else f"{v:.1f}"


def significant(v: float | None, digits: int = 3) -> str:
    """``digits`` significant figures (0.0123, 4.56, 29,800): small seconds stay readable, large
    counts keep their digits grouped instead of an exponent."""
    if v is None:
        return "n/a"
    v += 0.0  # no "-0"
    if abs(v) >= 10 ** (digits - 1):
        return f"{round(v, digits - 1 - math.floor(math.log10(abs(v)))):,.0f}"
    return f"{v:.{digits}g}"


def radar(
    axes: Sequence[str], series: Sequence[tuple[str, Sequence[float | None]]], title: str, size: int = 360
) -> str:
    """A radar chart: one polygon per series over the given axes (0 at the centre, 100 at the rim)."""
    n = len(axes)
    if n < 3:
        raise ValueError(f"a radar chart needs at least 3 axes, got {n}")
    pad = 90  # room for axis labels on the left
    cx, cy = pad + size / 2, size / 2
    r = size / 2 - 70
    pts = lambda k, frac: (
        cx + frac * r * math.sin(2 * math.pi * k / n),
        cy - frac * r * math.cos(2 * math.pi * k / n),
    )  # noqa: E731
    full = pad + size + 300
    out = [
        f'<svg class="chart" data-kind="radar" role="img" width="{full}" height="{size}" viewBox="0 0 {full} {size}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
    ]
    for ring in (0.25, 0.5, 0.75, 1.0):
        ring_pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in (pts(k, ring) for k in range(n)))
        out.append(f'<polygon class="grid" points="{ring_pts}" fill="none" stroke="#ccc" stroke-width="1"/>')
    for k, label in enumerate(axes):
        x, y = pts(k, 1.0)
        lx, ly = pts(k, 1.18)
        anchor = "middle" if abs(lx - cx) < 5 else ("start" if lx > cx else "end")
        out.append(f'<line x1="{cx:.1f}" y1="{cy:.1f}" x2="{x:.1f}" y2="{y:.1f}" stroke="#bbb"/>')
        out.append(f'<text x="{lx:.1f}" y="{ly + 4:.1f}" text-anchor="{anchor}" font-size="12">{escape(label)}</text>')
    for i, (name, values) in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        poly = " ".join(
            f"{x:.1f},{y:.1f}" for x, y in (pts(k, max(0.0, min(100.0, v or 0.0)) / 100) for k, v in enumerate(values))
        )
        tip = "; ".join(f"{a}: {_fmt(v)}" for a, v in zip(axes, values))
        out.append(
            f'<polygon class="series" data-series="{escape(name)}" points="{poly}" fill="{color}" fill-opacity="0.18" stroke="{color}" stroke-width="2"><title>{escape(name)}: {escape(tip)}</title></polygon>'
        )
        out.append(f'<rect x="{pad + size + 10}" y="{20 + 18 * i}" width="12" height="12" fill="{color}"/>')
        out.append(f'<text x="{pad + size + 28}" y="{30 + 18 * i}" font-size="12">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def hbars(
    items: Sequence[tuple[str, float | None]],
    title: str,
    width: int = 560,
    max_value: float = 100.0,
    unit: str = "%",
    fmt: Callable[[float | None], str] | None = None,
) -> str:
    """Horizontal bars, one per (label, value); ``None`` values are drawn as n/a. ``fmt`` writes a
    value (default: one decimal, whole numbers without a unit); seconds that differ in the third
    decimal need :func:`significant`."""
    bar_h, gap, left = 18, 6, 220
    height = max(1, len(items)) * (bar_h + gap) + 30
    scale = (width - left - 60) / (max_value or 1.0)
    out = [
        f'<svg class="chart" data-kind="bars" role="img" width="{width}" height="{height}" viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
    ]
    for i, (label, value) in enumerate(items):
        y = 10 + i * (bar_h + gap)
        w = 0.0 if value is None else max(0.0, min(max_value, value)) * scale
        out.append(f'<text x="{left - 6}" y="{y + 13}" text-anchor="end" font-size="12">{escape(label)}</text>')
        shown = fmt(value) if fmt else _fmt(value, counts=not unit)
        out.append(
            f'<rect class="bar" x="{left}" y="{y}" width="{max(w, 1.0):.1f}" height="{bar_h}" fill="{PALETTE[0]}"><title>{escape(label)}: {shown}</title></rect>'
        )
        out.append(
            f'<text x="{left + w + 4:.1f}" y="{y + 13}" font-size="11">{shown}{escape(unit) if value is not None else ""}</text>'
        )
    out.append("</svg>")
    return "\n".join(out)


def stacked(rows: Sequence[tuple[str, Sequence[tuple[str, float]]]], title: str, width: int = 640) -> str:
    """100%-stacked horizontal bars: per row, (segment label, percent) parts, with a legend."""
    bar_h, gap, left = 22, 8, 200
    names: list[str] = []
    for _, parts in rows:
        names += [p for p, _ in parts if p not in names]
    colors = {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(names)}
    height = max(1, len(rows)) * (bar_h + gap) + 40
    span = width - left - 20
    out = [
        f'<svg class="chart" data-kind="stacked" role="img" width="{width}" height="{height}" viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
    ]
    for i, (label, parts) in enumerate(rows):
        y = 10 + i * (bar_h + gap)
        out.append(f'<text x="{left - 6}" y="{y + 15}" text-anchor="end" font-size="12">{escape(label)}</text>')
        x = float(left)
        for name, pct in parts:
            w = span * max(0.0, pct) / 100.0
            out.append(
                f'<rect class="bar" x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{colors[name]}"><title>{escape(label)} / {escape(name)}: {pct:.1f}%</title></rect>'
            )
            x += w
    ly = height - 18
    for i, name in enumerate(names):
        lx = left + i * 110
        out.append(
            f'<rect x="{lx}" y="{ly}" width="10" height="10" fill="{colors[name]}"/><text x="{lx + 14}" y="{ly + 9}" font-size="11">{escape(name)}</text>'
        )
    out.append("</svg>")
    return "\n".join(out)
