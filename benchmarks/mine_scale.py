"""Mining at Visual Genome scale: parse floor, full mining, peak memory, and a naive reference.

Generates once (cached under ``benchmarks/.cache/vg_scale``) a synthetic annotation set with
VG's shape and size: 108,077 images, ~3.8M objects, ~2.3M relationships, ~2.8M attribute
annotations, Zipf-like name / predicate / attribute frequencies, names written the messy way
VG writes them, a few boxes outside their image, and an empty placeholder file per image.
Then measures, each phase in a fresh subprocess (so peak RSS is that phase's own), each at
least twice (``--repeat``), reporting the median:

  parse   the floor: a parse-only pass of the reader the stage uses. With ``mine.reader: auto``
          both readers are measured (DuckDB's queries into Arrow; msgspec's block reader into
          Structs) and the faster is the floor
  mine    the whole ``mine`` stage through the runner: read, mine RE + CA + AT with the paper's
          thresholds (N_min 50, θ 0.2), write every artifact (candidates, stats, rejects, manifest)
  naive   json.load + Python dict counting of the same statistics, on a 10% subset
  ours    our statistics on the same 10% subset

and prints a table, then one JSON line with parse_floor_s, mine_s, peak_rss_mb,
naive_subset_s, ours_subset_s, speedup_vs_naive. Exits non-zero when the naive reference and
ours disagree on the subset (kept pairs, dominant attributes, crowded images).

Usage: python benchmarks/mine_scale.py [--scale 0.1] [--repeat 2] [--images N] [--regenerate]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CACHE = ROOT / "benchmarks" / ".cache" / "vg_scale"
N_IMAGES = 108_077
OBJ_PER_IMAGE = 35.2  # 3.8M / 108k
REL_PER_IMAGE = 21.3  # 2.3M / 108k
ATTR_PER_OBJECT = 0.41  # with the planted dominant attributes: ~2.8M annotations over 3.8M objects
SUBSET_FRACTION = 0.10
FILES = ("image_data.json", "objects.json", "relationships.json", "attributes.json")


# ----------------------------------------------------------------------------- data
def _zipf_sampler(rng, n: int, s: float):
    import numpy as np

    cdf = np.cumsum(1.0 / np.arange(1, n + 1) ** s)
    cdf /= cdf[-1]
    return lambda k: np.minimum(np.searchsorted(cdf, rng.random(k)), n - 1).tolist()


def _vocab(prefix: str, n: int) -> list[str]:
    """Distinct pseudo-words: 'ka', 'kebo', ... (no real words needed to exercise the code)."""
    syll = ["ka", "be", "lo", "mi", "tu", "ra", "se", "no", "vi", "do", "pe", "gu", "fa", "zi", "ho", "we"]
    out = []
    for i in range(n):
        w, k = "", i + 1
        while k:
            w += syll[k % 16]
            k //= 16
        out.append(f"{prefix}{w}")
    return out


def generate(out: Path, n_images: int, seed: int = 0) -> dict[str, int]:
    """Write the synthetic VG-format set (streamed to disk image by image)."""
    import msgspec
    import numpy as np

    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    (out / "VG_100K").mkdir(exist_ok=True)
    names = _vocab("", 20_000)
    planted = _vocab(
        "pr", 500
    )  # classes that only appear as planted pairs (strong co-occurrence, like wheel-skateboard)
    pick_planted = _zipf_sampler(rng, 250, 1.1)
    preds = ["on", "has", "in", "of", "wearing", "near", "behind", "holding", "next to", "on top of"] + _vocab(
        "p", 3_000
    )
    attrs = ["white", "black", "blue", "green", "red", "brown", "wooden", "large", "small", "metal"] + _vocab(
        "q", 15_000
    )
    pick_name, pick_pred, pick_attr = (
        _zipf_sampler(rng, len(names), 1.05),
        _zipf_sampler(rng, len(preds), 1.2),
        _zipf_sampler(rng, len(attrs), 1.1),
    )
    enc = msgspec.json.Encoder()
    counts = Counter()
    files = {f: open(out / f, "wb") for f in FILES}
    for f in files.values():
        f.write(b"[")
    oid, rid = 1_000_000, 4_000_000
    batch = 2000
    for start in range(1, n_images + 1, batch):
        ids = range(start, min(n_images, start + batch - 1) + 1)
        n_obj = rng.poisson(OBJ_PER_IMAGE, len(ids)).clip(2)
        name_ids = pick_name(int(n_obj.sum()))
        plants = pick_planted(len(ids))
        plant_on = (rng.random(len(ids)) < 0.3).tolist()
        ncursor = 0
        img_out, obj_out, rel_out, att_out = [], [], [], []
        for slot, (iid, n) in enumerate(zip(ids, n_obj.tolist())):
            W, H = int(rng.choice([500, 640, 800])), int(rng.choice([375, 480, 600]))
            img_out.append(
                {
                    "width": W,
                    "url": f"https://cs.stanford.edu/people/rak248/VG_100K/{iid}.jpg",
                    "height": H,
                    "image_id": iid,
                    "coco_id": None,
                    "flickr_id": None,
                }
            )
            ws = rng.integers(5, W // 2, n)
            hs = rng.integers(5, H // 2, n)
            xs = rng.integers(0, W - ws)
            ys = rng.integers(0, H - hs)
            outside = rng.random(n) < 0.004
            xs[outside] += W
            objs, aobjs = [], []
            n_att = rng.poisson(ATTR_PER_OBJECT, n).tolist()
            att_ids = pick_attr(int(sum(n_att)))
            acursor = 0
            ws, hs, xs, ys = ws.tolist(), hs.tolist(), xs.tolist(), ys.tolist()
            for k in range(n):
                j = name_ids[ncursor + k]
                nm = names[j]
                if plant_on[slot] and k < 2:  # the planted pair: two dedicated classes, linked below
                    nm = planted[plants[slot] + 250 * k]
                style = (oid + k) % 11
                raw = (
                    nm + "s"
                    if style == 3
                    else (nm.capitalize() if style == 5 else (f"the {nm}" if style == 7 else nm))
                )
                o = {
                    "synsets": [f"{nm}.n.01"] if style != 9 else [],
                    "h": hs[k],
                    "object_id": oid + k,
                    "merged_object_ids": [],
                    "names": [raw],
                    "w": ws[k],
                    "y": ys[k],
                    "x": xs[k],
                }
                objs.append(o)
                a = dict(o)
                if j < 300 and (oid + k) % 2 == 0:  # frequent classes have a dominant attribute
                    a["attributes"] = [attrs[j % 40]]
                    counts["attributes"] += 1
                if n_att[k]:
                    a["attributes"] = a.get("attributes", []) + [
                        attrs[j] if (j + k) % 5 else f" {attrs[j].upper()} "
                        for j in att_ids[acursor : acursor + n_att[k]]
                    ]
                    acursor += n_att[k]
                    counts["attributes"] += n_att[k]
                aobjs.append(a)
            ncursor += n
            n_rel = min(int(rng.poisson(REL_PER_IMAGE)), n * 2)
            subj, objj = rng.integers(0, n, n_rel), rng.integers(0, n, n_rel)
            if plant_on[slot] and n_rel:
                subj[0], objj[0] = 1, 0  # the smaller-named planted class "on" its partner
            pids = pick_pred(n_rel)
            rels = []
            for s, t, p in zip(subj.tolist(), objj.tolist(), pids):
                so, oo = objs[s], objs[t]
                sd = {k2: so[k2] for k2 in ("object_id", "x", "y", "w", "h", "synsets")}
                od = {k2: oo[k2] for k2 in ("object_id", "x", "y", "w", "h", "synsets")}
                sd["name" if rid % 2 else "names"] = so["names"][0] if rid % 2 else so["names"]
                od["names" if rid % 2 else "name"] = oo["names"] if rid % 2 else oo["names"][0]
                rels.append(
                    {
                        "predicate": preds[p] if rid % 13 else preds[p].upper(),
                        "object": od,
                        "relationship_id": rid,
                        "synsets": [],
                        "subject": sd,
                    }
                )
                rid += 1
            oid += n
            obj_out.append({"image_id": iid, "objects": objs, "image_url": img_out[-1]["url"]})
            rel_out.append({"relationships": rels, "image_id": iid})
            att_out.append({"image_id": iid, "attributes": aobjs})
            counts["objects"] += int(n)
            counts["relationships"] += len(rels)
        for fname, elems in zip(FILES, (img_out, obj_out, rel_out, att_out)):
            body = b", ".join(enc.encode(e) for e in elems)
            if start > 1:
                files[fname].write(b", ")
            files[fname].write(body)
        for iid in ids:
            (out / "VG_100K" / f"{iid}.jpg").touch()
    for f in files.values():
        f.write(b"]")
        f.close()
    counts["images"] = n_images
    (out / "counts.json").write_text(json.dumps(dict(counts)))
    return dict(counts)


def make_subset(src: Path, dst: Path, fraction: float) -> None:
    """The first ``fraction`` of the images of every file (same order, same format)."""
    from miners.jsonstream import iter_array  # noqa: F401  (the subset is cut with plain json: it is small)

    dst.mkdir(parents=True, exist_ok=True)
    images = json.loads((src / "image_data.json").read_text())
    keep = {im["image_id"] for im in images[: int(len(images) * fraction)]}
    (dst / "image_data.json").write_text(json.dumps([im for im in images if im["image_id"] in keep]))
    del images
    for name in FILES[1:]:
        data = json.loads((src / name).read_text())
        (dst / name).write_text(json.dumps([e for e in data if e["image_id"] in keep]))
        del data
    if not (dst / "VG_100K").exists():
        os.symlink(src / "VG_100K", dst / "VG_100K")


# ----------------------------------------------------------------------------- phases
STAGE_TASKS = ["relational_erasure", "counterfactual_attribute", "alteration_tracing"]


def _stage_config(root: Path | None = None):
    from flows.config import config_from_dict

    return config_from_dict(
        {"mine": {"tasks": STAGE_TASKS}, **({"sources": {"visual_genome": str(root)}} if root else {})}
    )


def _warm_imports() -> None:
    """Module imports are a once-per-process cost, excluded from every timing (as for the naive reference)."""
    import duckdb  # noqa: F401
    import pyarrow.compute  # noqa: F401

    try:
        import pandas  # noqa: F401  (pyarrow imports it on first array conversion)
    except ImportError:
        pass
    import pyarrow.parquet  # noqa: F401

    import tasks.engine.runner  # noqa: F401
    import tasks.stages.mine  # noqa: F401


def phase_parse_msgspec(root: Path) -> dict[str, float]:
    """The msgspec block reader's floor: stream-decode the four files into our Structs, nothing else."""
    from miners.jsonstream import gc_paused, iter_array
    from miners.vg_format import (
        ATTRIBUTES_KEYS,
        IMAGE_DATA_KEYS,
        OBJECTS_KEYS,
        RELATIONSHIPS_KEYS,
        VGImage,
        VGImageAttributes,
        VGImageObjects,
        VGImageRelationships,
    )

    block = _stage_config().mine.block_mb << 20
    t = time.perf_counter()
    n = 0
    with gc_paused():
        for name, typ, keys in (
            ("image_data.json", VGImage, IMAGE_DATA_KEYS),
            ("objects.json", VGImageObjects, OBJECTS_KEYS),
            ("relationships.json", VGImageRelationships, RELATIONSHIPS_KEYS),
            ("attributes.json", VGImageAttributes, ATTRIBUTES_KEYS),
        ):
            for batch in iter_array(str(root / name), typ, keys, block_bytes=block):
                n += len(batch)
    return {"seconds": time.perf_counter() - t, "elements": n}


def phase_parse_duckdb(root: Path) -> dict[str, float]:
    """The DuckDB reader's floor, as the stage runs it: image_data.json through msgspec, then the
    same DuckDB queries the stage runs (same columns, same threads) into Arrow tables, nothing else."""
    import duckdb

    from miners import vg_duckdb
    from miners.vg_format import read_image_data

    _warm_imports()
    cfg = _stage_config().mine
    t = time.perf_counter()
    images, _ = read_image_data(str(root / "image_data.json"), cfg.block_mb << 20)
    rows = len(images)
    for kind in ("objects", "relationships", "attributes"):
        con = duckdb.connect()
        try:
            con.execute(f"SET threads TO {cfg.threads}")
            con.execute("SET preserve_insertion_order = true")
            con.execute("SET enable_progress_bar = false")
            rows += con.sql(vg_duckdb._query(kind, str(root / f"{kind}.json"))).to_arrow_table().num_rows
        finally:
            con.close()
    return {"seconds": time.perf_counter() - t, "rows": rows}


def phase_mine(root: Path) -> dict[str, float]:
    """The whole ``mine`` stage through the real runner: read, mine RE + CA + AT with the paper's
    thresholds, write every artifact (candidates, pair_stats, attribute_stats, rejects, manifest)."""
    import tempfile

    from storage.fs import RunFS
    from tasks.engine.base import RunContext
    from tasks.engine.runner import run_stage
    from tasks.stages.mine import MineStage

    _warm_imports()
    cfg = _stage_config(root)
    with tempfile.TemporaryDirectory(prefix="mine_scale_run_") as run_dir:
        ctx = RunContext(RunFS.open(run_dir), cfg, {"progress": False})
        t = time.perf_counter()
        summary = run_stage(MineStage(), ctx, force=True)
        seconds = time.perf_counter() - t
        manifest = MineStage().store(ctx).read_manifest() or {}
    cands = sum(manifest.get("extra", {}).get("candidates_by_task", {}).values())
    return {
        "seconds": seconds,
        "candidates": cands,
        "pair_rows": summary.rows_out.get("pair_stats", 0),
        "attribute_rows": summary.rows_out.get("attribute_stats", 0),
        "rejects": summary.rejected,
    }


def phase_ours(root: Path) -> dict[str, float]:
    """Our statistics (no candidates) on the subset, with the stage's reader: what the naive reference computes."""
    from miners.mine import mine_visual_genome
    from tasks.engine.mine_config import MineConfig

    _warm_imports()
    cfg = MineConfig(tasks=tuple(STAGE_TASKS))
    t = time.perf_counter()
    res = mine_visual_genome(str(root), cfg, seed=0, candidates=False)
    return {
        "seconds": time.perf_counter() - t,
        "pairs_kept": res.summary.get("pairs_kept", 0),
        "attributes_kept": res.summary.get("attributes_kept", 0),
        "crowded": res.summary.get("crowded_images", 0),
    }


def phase_naive(root: Path) -> dict[str, float]:
    """The reference: json.load everything, count with dicts and sets (same definitions)."""
    from storage.annotation.names import basic_attribute, basic_name

    t = time.perf_counter()
    images = {im["image_id"]: im for im in json.load(open(root / "image_data.json"))}
    objects = json.load(open(root / "objects.json"))
    rels = json.load(open(root / "relationships.json"))
    attrs = json.load(open(root / "attributes.json"))

    def name(o):
        return basic_name(o["names"][0] if o.get("names") else o.get("name", ""))

    def inside(o, im):
        W, H = im["width"], im["height"]
        return (
            o["w"] > 0
            and o["h"] > 0
            and o["x"] >= -0.02 * W
            and o["y"] >= -0.02 * H
            and o["x"] + o["w"] <= 1.02 * W
            and o["y"] + o["h"] <= 1.02 * H
        )

    present = defaultdict(set)
    crowded = {}
    for e in objects:
        im = images[e["image_id"]]
        ok = [o for o in e["objects"] if inside(o, im)]
        crowded[e["image_id"]] = len(ok)
        for o in ok:
            present[name(o)].add(e["image_id"])
    linked = defaultdict(set)
    for e in rels:
        im = images[e["image_id"]]
        for r in e["relationships"]:
            if not (inside(r["subject"], im) and inside(r["object"], im)):
                continue
            a, b = name(r["subject"]), name(r["object"])
            present[a].add(e["image_id"])
            present[b].add(e["image_id"])
            if a != b:
                linked[tuple(sorted((a, b)))].add(e["image_id"])
    kept = []
    for (a, b), imgs in linked.items():
        c = len(imgs)
        if c >= 50 and max(c / len(present[a]), c / len(present[b])) >= 0.2:
            kept.append((a, b))
    c_o, c_oa = Counter(), Counter()
    for e in attrs:
        im = images[e["image_id"]]
        for o in e["attributes"]:
            if not inside(o, im):
                continue
            n = name(o)
            c_o[n] += 1
            for a in {basic_attribute(x) for x in o.get("attributes") or []}:
                c_oa[(n, a)] += 1
    passing = defaultdict(list)
    for (o, a), c in c_oa.items():
        if c >= 50 and c / c_o[o] >= 0.2:
            passing[o].append((-c / c_o[o], a))
    dominant = [(o, a) for o, lst in passing.items() for _, a in sorted(lst)[:3]]
    return {
        "seconds": time.perf_counter() - t,
        "pairs_kept": len(kept),
        "dominant": len(dominant),
        "crowded": sum(v > 15 for v in crowded.values()),
    }


def peak_rss_mb() -> float:
    """This process's own high-water RSS (VmHWM; ru_maxrss would include the parent's after fork)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_phase(phase: str, root: Path) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--phase", phase, "--root", str(root)], capture_output=True, text=True
    )
    if out.returncode != 0:
        sys.exit(f"phase {phase} failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def repeated(phase: str, root: Path, repeat: int) -> dict[str, float]:
    """Run a phase ``repeat`` times (each in a fresh process): median seconds, highest peak RSS."""
    runs = [run_phase(phase, root) for _ in range(repeat)]
    out = dict(runs[-1])
    out["seconds"] = statistics.median(r["seconds"] for r in runs)
    out["all_seconds"] = [round(r["seconds"], 2) for r in runs]
    out["peak_rss_mb"] = max(r["peak_rss_mb"] for r in runs)
    return out


PHASES = {
    "parse_msgspec": phase_parse_msgspec,
    "parse_duckdb": phase_parse_duckdb,
    "mine": phase_mine,
    "naive": lambda r: phase_naive(r),
    "ours": phase_ours,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=N_IMAGES, help="images of the synthetic set (default: VG's 108,077)")
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of --images, for a quick check (e.g. 0.1)")
    ap.add_argument("--repeat", type=int, default=2, help="runs per phase (at least 2; the median is reported)")
    ap.add_argument("--regenerate", action="store_true")
    ap.add_argument("--phase", choices=sorted(PHASES))
    ap.add_argument("--root")
    args = ap.parse_args()
    if args.phase:
        result = PHASES[args.phase](Path(args.root))
        result["peak_rss_mb"] = peak_rss_mb()
        print(json.dumps(result))
        return
    repeat = max(2, args.repeat)
    n_images = max(100, int(args.images * args.scale))
    full = CACHE / f"full_{n_images}"
    subset = CACHE / f"subset_{n_images}"
    if args.regenerate or not (full / "counts.json").exists():
        t = time.perf_counter()
        counts = generate(full, n_images)
        print(f"generated {counts} in {time.perf_counter() - t:.1f} s -> {full}", file=sys.stderr)
    if args.regenerate or not (subset / "attributes.json").exists():
        make_subset(full, subset, SUBSET_FRACTION)
    counts = json.loads((full / "counts.json").read_text())
    size_mb = sum((full / f).stat().st_size for f in FILES) / 2**20
    reader = _stage_config().mine.reader
    from miners.vg_duckdb import available

    floors = {}
    if reader in ("auto", "duckdb") and available():
        floors["duckdb"] = repeated("parse_duckdb", full, repeat)
    if reader in ("auto", "msgspec") or not floors:
        floors["msgspec"] = repeated("parse_msgspec", full, repeat)
    floor_name = min(floors, key=lambda k: floors[k]["seconds"])
    parse = floors[floor_name]
    mine = repeated("mine", full, repeat)
    naive = repeated("naive", subset, repeat)
    ours = repeated("ours", subset, repeat)
    print(
        f"data: {counts['images']:,} images, {counts['objects']:,} objects, {counts['relationships']:,} relationships, "
        f"{counts['attributes']:,} attribute annotations, {size_mb:,.0f} MB of JSON; median of {repeat} runs per phase"
    )
    print(f"{'phase':<44}{'seconds':>10}{'peak RSS MB':>14}   runs")
    for name, ph in floors.items():
        label = f"parse floor, {name} reader" + (" (floor)" if name == floor_name else "")
        print(f"{label:<44}{ph['seconds']:>10.1f}{ph['peak_rss_mb']:>14.0f}   {ph['all_seconds']}")
    print(
        f"{'mine stage RE+CA+AT, all artifacts (full)':<44}{mine['seconds']:>10.1f}{mine['peak_rss_mb']:>14.0f}   {mine['all_seconds']}"
    )
    print(
        f"{'naive json.load + dicts (10%)':<44}{naive['seconds']:>10.1f}{naive['peak_rss_mb']:>14.0f}   {naive['all_seconds']}"
    )
    print(
        f"{'ours, same statistics (10%)':<44}{ours['seconds']:>10.1f}{ours['peak_rss_mb']:>14.0f}   {ours['all_seconds']}"
    )
    print(
        f"mine / parse floor = {mine['seconds'] / parse['seconds']:.2f}x (target <= 2) ; naive / ours = {naive['seconds'] / ours['seconds']:.1f}x (target >= 5) ; "
        f"candidates {mine['candidates']}, pair rows {mine['pair_rows']}, attribute rows {mine['attribute_rows']}, rejects {mine['rejects']}"
    )
    same = (naive["pairs_kept"], naive["dominant"], naive["crowded"]) == (
        ours["pairs_kept"],
        ours["attributes_kept"],
        ours["crowded"],
    )
    print(
        f"subset agreement (kept pairs, dominant attributes, crowded images): naive {naive['pairs_kept']}, {naive['dominant']}, {naive['crowded']}; "
        f"ours {ours['pairs_kept']}, {ours['attributes_kept']}, {ours['crowded']} -> {'same' if same else 'DIFFERENT'}"
    )
    print(
        json.dumps(
            {
                "parse_floor_s": round(parse["seconds"], 2),
                "mine_s": round(mine["seconds"], 2),
                "peak_rss_mb": round(mine["peak_rss_mb"], 1),
                "naive_subset_s": round(naive["seconds"], 2),
                "ours_subset_s": round(ours["seconds"], 2),
                "speedup_vs_naive": round(naive["seconds"] / ours["seconds"], 2),
            }
        )
    )
    if not same:
        sys.exit("the naive reference and our mining disagree on the subset's statistics")


if __name__ == "__main__":
    main()
