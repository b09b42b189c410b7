"""How big are the VLMEvalKit TSVs of a release next to the images and text they hold?

Reads ``<release>/vlmevalkit/*.tsv`` (``reactbench export --vlmevalkit``) and, per file and in
all, compares the TSV bytes with the base64 size of the distinct images (or before/after pairs)
the file carries plus its text, and with what inlining the images in every row would cost
(the single-TSV form this replaced). The TSVs carry every image as PNG (VLMEvalKit re-saves
images under their name's extension, so JPEG originals are converted losslessly); the script
also compares those PNG bytes with the source bytes the release's Parquet files hold. Ends with
one JSON line: ``rows``, ``tsv_bytes``, ``distinct_b64_plus_text``, ``ratio`` (worst file),
``release_ratio`` (all files over the release's distinct images once plus all text),
``inline_bytes``, ``images`` (distinct), ``jpeg_sources``, ``source_bytes``, ``png_bytes``,
``png_growth`` (PNG over source bytes).

    .venv/bin/python benchmarks/vlmevalkit_size.py releases/demo
"""

from __future__ import annotations

import argparse
import csv
import io
import json
from pathlib import Path

import pyarrow.parquet as pq

csv.field_size_limit(1 << 30)


def measure(path: Path) -> dict[str, int]:
    text = path.read_text(encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO(text), delimiter="\t"))
    carried = {r["index"]: r["image"] for r in rows if len(r["image"]) > 64}
    image_b64 = sum(len(v) for v in carried.values())
    other = len(text.encode()) - sum(len(r["image"]) for r in rows)
    inline = other + sum(len(carried[r["image"]]) if len(r["image"]) <= 64 else len(r["image"]) for r in rows)
    units, padding = {}, {}
    for r in rows:
        v = r["image"]
        if len(v) <= 64:
            continue
        names = json.loads(r["image_path"]) if r["image_path"].startswith("[") else [r["image_path"]]
        for name, b in zip(names, json.loads(v) if v.startswith("[") else [v]):
            units[name.rsplit(".", 1)[0]] = len(b)
            padding[name.rsplit(".", 1)[0]] = len(b) - len(b.rstrip("="))
    return {
        "rows": len(rows),
        "tsv_bytes": len(text.encode()),
        "distinct_b64": image_b64,
        "text": other,
        "inline_bytes": inline,
        "_images": units,
        "_padding": padding,
    }


def source_sizes(release: Path) -> dict[str, tuple[int, bool]]:
    """Content-hash stem -> (source bytes, is JPEG) of every image the release's Parquet files hold."""
    out: dict[str, tuple[int, bool]] = {}
    for f in sorted((release / "data").glob("*/*.parquet")):
        for images in pq.read_table(f, columns=["images"]).column("images").to_pylist():
            for im in images:
                out[im["path"].rsplit(".", 1)[0]] = (len(im["bytes"]), im["bytes"][:3] == b"\xff\xd8\xff")
    return out


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
        print(
            f"{name:28} {r['rows']:6d} {r['tsv_bytes'] / 1e6:9.2f} {base / 1e6:12.2f} {r['tsv_bytes'] / base:6.3f} {r['inline_bytes'] / 1e6:10.2f}"
        )
    images: dict[str, int] = {}
    padding: dict[str, int] = {}
    for r in results.values():
        images.update(r["_images"])
        padding.update(r["_padding"])
    tsv = sum(r["tsv_bytes"] for r in results.values())
    text = sum(r["text"] for r in results.values())
    release_base = sum(images.values()) + text
    print(
        f"{'all files':28} {sum(r['rows'] for r in results.values()):6d} {tsv / 1e6:9.2f} {release_base / 1e6:12.2f} {tsv / release_base:6.3f} "
        f"{sum(r['inline_bytes'] for r in results.values()) / 1e6:10.2f}   (distinct images of the whole release counted once)"
    )
    sources = source_sizes(Path(args.release))
    png = sum(images[k] * 3 // 4 - padding[k] for k in images if k in sources)  # base64 -> bytes
    src = sum(sources[k][0] for k in images if k in sources)
    jpeg = sum(1 for k in images if k in sources and sources[k][1])
    print(
        f"{len(images)} distinct images ({jpeg} JPEG at the source): {src / 1e6:.2f} MB as sources, {png / 1e6:.2f} MB as PNG ({png / max(src, 1):.3f}x)"
    )
    print(
        json.dumps(
            {
                "rows": sum(r["rows"] for r in results.values()),
                "tsv_bytes": tsv,
                "distinct_b64_plus_text": sum(r["distinct_b64"] + r["text"] for r in results.values()),
                "ratio": round(worst, 4),
                "release_ratio": round(tsv / release_base, 4),
                "inline_bytes": sum(r["inline_bytes"] for r in results.values()),
                "images": len(images),
                "jpeg_sources": jpeg,
                "source_bytes": src,
                "png_bytes": png,
                "png_growth": round(png / max(src, 1), 4),
            }
        )
    )


if __name__ == "__main__":
    main()
