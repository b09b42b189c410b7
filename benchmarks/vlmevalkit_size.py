"""How big are the VLMEvalKit TSVs of a release next to the images and text they hold?

Reads ``<release>/vlmevalkit/*.tsv`` (``reactbench export --vlmevalkit``) and, per file and in
all, compares the TSV bytes with the base64 size of the distinct images (or before/after pairs)
the file carries plus its text, and with what inlining the images in every row would cost
(the single-TSV form this replaced). Ends with one JSON line:
``rows``, ``tsv_bytes``, ``distinct_b64_plus_text``, ``ratio`` (worst file), ``release_ratio``
(all files over the release's distinct images once plus all text), ``inline_bytes``.

    .venv/bin/python benchmarks/vlmevalkit_size.py releases/demo
"""

from __future__ import annotations

import argparse
import csv
import io
import json
from pathlib import Path

csv.field_size_limit(1 << 30)


def measure(path: Path) -> dict[str, int]:
    text = path.read_text(encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO(text), delimiter="\t"))
    carried = {r["index"]: r["image"] for r in rows if len(r["image"]) > 64}
    image_b64 = sum(len(v) for v in carried.values())
    other = len(text.encode()) - sum(len(r["image"]) for r in rows)
    inline = other + sum(len(carried[r["image"]]) if len(r["image"]) <= 64 else len(r["image"]) for r in rows)
    units = {}
    for v in carried.values():
        for b in json.loads(v) if v.startswith("[") else [v]:
            units[hash(b)] = len(b)
    return {"rows": len(rows), "tsv_bytes": len(text.encode()), "distinct_b64": image_b64, "text": other, "inline_bytes": inline, "_images": units}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("release")
    args = ap.parse_args()
    files = sorted((Path(args.release) / "vlmevalkit").glob("*.tsv"))
    if not files:
        raise SystemExit(f"{args.release}/vlmevalkit: no TSV found; export with --vlmevalkit first")
    results = {f.name: measure(f) for f in files}
    print(f"{'file':28} {'rows':>6} {'TSV MB':>9} {'b64+text MB':>12} {'ratio':>6} {'inline MB':>10}")
    worst = 0.0
    for name, r in results.items():
        base = r["distinct_b64"] + r["text"]
        worst = max(worst, r["tsv_bytes"] / base)
        print(f"{name:28} {r['rows']:6d} {r['tsv_bytes'] / 1e6:9.2f} {base / 1e6:12.2f} {r['tsv_bytes'] / base:6.3f} {r['inline_bytes'] / 1e6:10.2f}")
    images: dict[int, int] = {}
    for r in results.values():
        images.update(r["_images"])
    tsv = sum(r["tsv_bytes"] for r in results.values())
    text = sum(r["text"] for r in results.values())
    release_base = sum(images.values()) + text
    print(f"{'all files':28} {sum(r['rows'] for r in results.values()):6d} {tsv / 1e6:9.2f} {release_base / 1e6:12.2f} {tsv / release_base:6.3f} "
          f"{sum(r['inline_bytes'] for r in results.values()) / 1e6:10.2f}   (distinct images of the whole release counted once)")
    print(json.dumps({
        "rows": sum(r["rows"] for r in results.values()),
        "tsv_bytes": tsv,
        "distinct_b64_plus_text": sum(r["distinct_b64"] + r["text"] for r in results.values()),
        "ratio": round(worst, 4),
        "release_ratio": round(tsv / release_base, 4),
        "inline_bytes": sum(r["inline_bytes"] for r in results.values()),
    }))


if __name__ == "__main__":
    main()
