"""The HTML page around the charts: one self-contained file, escaped text, inline CSS."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.25rem; margin-top: 2rem; border-bottom: 1px solid #ddd; } h3 { font-size: 1.05rem; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; font-size: 0.9rem; }
th, td { border: 1px solid #ddd; padding: 0.25rem 0.6rem; text-align: right; } th:first-child, td:first-child { text-align: left; }
th { background: #f4f4f4; }
.banner { background: #fff3cd; border: 1px solid #e0c36a; padding: 0.7rem 1rem; margin: 1rem 0; font-weight: 600; }
.charts { display: flex; flex-wrap: wrap; gap: 1.5rem; align-items: flex-start; }
.thumbs { display: flex; flex-wrap: wrap; gap: 0.5rem; } .thumbs figure { margin: 0; font-size: 0.8rem; text-align: center; }
.thumbs img { width: 160px; height: auto; border: 1px solid #ccc; display: block; }
.muted { color: #777; font-size: 0.85rem; }
figure.chart-box { margin: 0; } figure.chart-box figcaption { font-weight: 600; font-size: 0.9rem; margin-bottom: 0.3rem; }
"""


def table(header: Sequence[str], rows: Sequence[Sequence[object]], cls: str = "") -> str:
    """An HTML table; cells are escaped, floats shown with one decimal, None as n/a."""

    def cell(v: object) -> str:
        if v is None:
            return "n/a"
        if isinstance(v, float):
            return f"{v:.1f}"
        return escape(str(v))

    head = "".join(f"<th>{escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in r) + "</tr>" for r in rows)
    return f'<table class="{escape(cls)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def page(
    title: str, sections: Sequence[tuple[str, str]], banner: str | None = None, subtitle: str | None = None
) -> str:
    """A full HTML document; ``sections`` are (heading, already-safe HTML body)."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title>",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<style>{CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
    ]
    if subtitle:
        parts.append(f'<p class="muted">{escape(subtitle)}</p>')
    if banner:
        parts.append(f'<div class="banner" role="alert">{escape(banner)}</div>')
    for heading, body in sections:
        parts.append(f"<section><h2>{escape(heading)}</h2>{body}</section>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def figure(svg: str) -> str:
    """Wrap a chart with a visible caption taken from its ``<title>``."""
    import re

    m = re.search(r"<title>(.*?)</title>", svg)
    caption = m.group(1) if m else ""
    return f'<figure class="chart-box"><figcaption>{caption}</figcaption>{svg}</figure>'
