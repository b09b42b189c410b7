"""Is a release's metadata what a venue checks? Croissant validity, RecordSets against the Parquet,
RAI fields filled, the canary in every text file.

Builds the demo twice (``configs/demo.yaml`` as it is, MC shuffled once; and with ``qa.mc_mode:
cyclic``), exports each with every format (``--unverified --vlmevalkit --lmms-eval``), then for each
release: runs ``mlcroissant validate``, loads every RecordSet with ``mlcroissant`` and compares each
record (id, question, gold, options, rotation, image count) with the release's Parquet rows, counts
the non-empty RAI fields and the text files that carry the canary GUID. Prints one line per release
side by side, and ends with one JSON line:

  croissant_valid  every release validated with no error and no warning
  recordsets       RecordSets per release (the ``all`` config plus one per task)
  records_match    every RecordSet loaded with the Parquet's record count and values
  rai_fields       non-empty ``rai:`` fields (the smallest over the releases; the issue asks >= 14)
  canary_files     text files carrying the canary / text files (over both releases)
  diff, ids_stable, pinned_revision, diff_more_images   from ``benchmarks/release_versions.py``
                   (run here in a temporary folder): the diff of an extension by one more editor,
                   the same ids on a rebuild with other shards, the lmms-eval revision and the
                   VLMEvalKit md5s pinned, and the diff of an extension by more source images
                   (``mine.extend_from``); ``--skip-versions`` leaves them null

    .venv/bin/python benchmarks/release_metadata.py
    .venv/bin/python benchmarks/release_metadata.py --sample data/sample --out /tmp/release_metadata
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
CACHE = ROOT / "benchmarks" / ".cache" / "release_metadata"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _run(cmd: list[str]) -> str:
    proc = subprocess.run(cmd, env=_env(), capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{(proc.stdout + proc.stderr)[-3000:]}")
    return proc.stdout + proc.stderr


def build_and_export(sample: Path, out: Path, mode: str) -> tuple[Path, float]:
    """The demo built with ``qa.mc_mode: mode`` and exported with every format: (release, export seconds)."""
    config = yaml.safe_load((ROOT / "configs" / "demo.yaml").read_text())
    config["sources"] = {"visual_genome": str(sample / "visual_genome"), "fsc147": str(sample / "fsc147")}
    config.setdefault("qa", {})["mc_mode"] = mode
    out.mkdir(parents=True, exist_ok=True)
    (out / f"demo-{mode}.yaml").write_text(yaml.safe_dump(config))
    run, release = out / f"run-{mode}", out / f"release-{mode}"
    print(f"building the demo ({mode} MC) into {run} ...", flush=True)
    _run([str(BIN / "reactbench"), "build", "-c", str(out / f"demo-{mode}.yaml"), "--run-dir", str(run)])
    t = time.perf_counter()
    _run(
        [str(BIN / "reactbench"), "export", "--run-dir", str(run), "--out", str(release)]
        + ["--unverified", "--vlmevalkit", "--lmms-eval", "--replace"]
    )
    return release, time.perf_counter() - t


def check(release: Path) -> dict:
    """Validate and load the release's croissant.json; compare with its Parquet rows."""
    import mlcroissant as mlc
    import pyarrow.parquet as pq

    from storage.fs import RunFS
    from tasks.release.export.canary import files_without, is_text

    t = time.perf_counter()
    proc = subprocess.run(
        [str(BIN / "mlcroissant"), "validate", "--jsonld", str(release / "croissant.json")],
        capture_output=True,
        text=True,
    )
    valid = proc.returncode == 0 and "WARNING" not in proc.stdout + proc.stderr
    validate_s = time.perf_counter() - t
    parquet = {r["id"]: r for f in sorted(release.glob("data/*/*.parquet")) for r in pq.read_table(f).to_pylist()}
    t = time.perf_counter()
    ds = mlc.Dataset(str(release / "croissant.json"))
    match, loaded = True, 0
    names = [rs.uuid for rs in ds.metadata.record_sets]
    for name in names:
        want = {i for i, r in parquet.items() if name == "all" or r["task"] == name}
        seen = set()
        for rec in ds.records(name):
            row = parquet.get(rec[f"{name}/id"].decode())
            ok = (
                row is not None
                and rec[f"{name}/question"].decode() == row["question"]
                and rec[f"{name}/answer"].decode() == row["answer"]
                and [o.decode() for o in rec[f"{name}/options"]] == row["options"]
                and rec[f"{name}/rotation"] == row["rotation"]
                and len(rec[f"{name}/images"]) == len(row["images"])
            )
            match = match and ok
            if row is not None:
                seen.add(row["id"])
            loaded += 1
        match = match and seen == want
    load_s = time.perf_counter() - t
    doc = json.loads((release / "croissant.json").read_text())
    rai = sorted(k for k, v in doc.items() if k.startswith("rai:") and v)
    guid = subprocess.run(
        [str(BIN / "reactbench"), "release", "canary", "--release", str(release)],
        capture_output=True,
        text=True,
        env=_env(),
    ).stdout.strip()
    texts = [p for p in release.rglob("*") if p.is_file() and is_text(str(p))]
    missing = files_without(RunFS.open(str(release)), guid) if guid else [str(p) for p in texts]
    return {
        "valid": valid,
        "validate_s": validate_s,
        "recordsets": len(names),
        "records": loaded,
        "load_s": load_s,
        "match": match,
        "rai": rai,
        "text_files": len(texts),
        "canary_files": len(texts) - len(missing),
        "guid": guid,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sample", default=str(ROOT / "data" / "sample"), help="sample data (reactbench sample-data)")
    ap.add_argument("--out", default=str(CACHE), help="where the runs and releases are written")
    ap.add_argument("--skip-versions", action="store_true", help="without the versions steps (release_versions.py)")
    args = ap.parse_args()
    sample, out = Path(args.sample), Path(args.out)
    if not (sample / "visual_genome").exists():
        _run([str(BIN / "reactbench"), "sample-data", str(sample)])
    results = {}
    for mode in ("shuffle", "cyclic"):
        release, export_s = build_and_export(sample, out, mode)
        results[mode] = {**check(release), "export_s": export_s}
    print(
        f"{'release':9} {'valid':>5} {'sets':>4} {'records':>8} {'match':>5} {'RAI':>4} {'canary':>7} {'export s':>8} {'validate s':>10} {'load s':>7}"
    )
    for mode, r in results.items():
        print(
            f"{mode:9} {str(r['valid']):>5} {r['recordsets']:4d} {r['records']:8,d} {str(r['match']):>5} {len(r['rai']):4d} "
            f"{r['canary_files']:3d}/{r['text_files']:<3d} {r['export_s']:8.1f} {r['validate_s']:10.1f} {r['load_s']:7.1f}"
        )
    guids = {r["guid"] for r in results.values()}
    print(f"canary GUID (one per benchmark, both builds): {', '.join(sorted(guids))}")
    figures = {
        "croissant_valid": all(r["valid"] for r in results.values()),
        "recordsets": min(r["recordsets"] for r in results.values()),
        "records_match": all(r["match"] for r in results.values()),
        "rai_fields": min(len(r["rai"]) for r in results.values()),
        "canary_files": f"{sum(r['canary_files'] for r in results.values())}/{sum(r['text_files'] for r in results.values())}",
        "canary_same_guid": len(guids) == 1,
        "records": {m: r["records"] for m, r in results.items()},
        "diff": None,
        "ids_stable": None,
        "pinned_revision": None,
        "diff_more_images": None,
    }
    if not args.skip_versions:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import tempfile

        from release_versions import measure  # the sibling script: extensions, rebuild, pins

        with tempfile.TemporaryDirectory(prefix="release-versions-") as work:
            versions = measure(Path(work))
        figures.update({k: versions[k] for k in ("diff", "ids_stable", "pinned_revision", "diff_more_images")})
    print(json.dumps(figures))
    ok = figures["croissant_valid"] and figures["records_match"] and figures["rai_fields"] >= 14
    if not args.skip_versions:
        additions = [figures["diff"], figures["diff_more_images"]]
        ok = ok and figures["ids_stable"] and figures["pinned_revision"]
        ok = ok and all(d["added"] > 0 and d["removed"] == 0 and d["changed"] == 0 for d in additions)
    sys.exit(0 if ok and all(r["canary_files"] == r["text_files"] for r in results.values()) else 1)


if __name__ == "__main__":
    main()
