"""How much of the edit stage's wall time is spent outside the editor call?

Runs the real edit stage (image reads, prefetch, auto-QC, PNG encoding, content-addressed
writes, Parquet shards) with a tiny random-weight QwenImageEditPipeline on the CPU over a few
hundred sample instructions, one worker (one GPU's worth), with ``overlap_io`` on (the
default) and off, and side by side the same editor called in a bare
loop on the same requests; the variants alternate over a few rounds and medians are reported.
Ends with one JSON line:
``items``, ``wall_s``, ``editor_s``, ``overhead_fraction``, ``s_per_image``.

    .venv/bin/python benchmarks/edit_overhead.py --items 240 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def instruction_rows(sample: Path, n: int) -> list[dict]:
    """``n`` applicable instructions over the sample's drawn objects, edit types in rotation."""
    from miners.sample_data import load_truth
    from storage.hashing import canonical_json, stable_id

    truth = load_truth(sample)
    kinds = [("remove", "remove the {}"), ("attribute", "make the {} blue"), ("move", "move the {} a little"), ("add", "add another {}")]
    rows = []
    for image_id in sorted(truth["images"], key=int):
        im = truth["images"][image_id]
        if not (sample / im["file"]).exists():
            continue
        for oid, obj in sorted(im["objects"].items()):
            kind, text = kinds[len(rows) % len(kinds)]
            cand = {"id": f"c{oid}", "context_json": "[]"}
            rows.append({
                "id": stable_id("bench", image_id, oid, kind), "task": "alteration_tracing", "variant": "targeted",
                "source": "visual_genome", "image_id": image_id, "image_path": str(sample / im["file"]), "width": im["width"],
                "height": im["height"], "candidate_id": cand["id"], "candidate_json": canonical_json(cand), "status": "applicable",
                "instruction": text.format(obj["name"]), "edit_type": kind, "target_box": [float(v) for v in obj["box"]],
                "target_name": obj["name"], "fields_json": "{}",
            })
            if len(rows) == n:
                return rows
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=240)
    ap.add_argument("--rounds", type=int, default=2, help="interleaved repetitions of every variant (medians reported)")
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--area", type=int, default=64 * 64, help="working area of the tiny pipeline (pixels)")
    ap.add_argument("--batch-size", type=int, default=4)
    args = ap.parse_args()

    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from rich.console import Console

    from editors.base import EditRequest
    from editors.registry import clear_cache, get_editor
    from editors.runtime import run_batch
    from tests.tiny_checkpoints import build_qwen_image_edit
    from flows.config import config_from_dict
    from miners.sample_data import generate_sample
    from storage.fs import RunFS
    from storage.image_store import read_image_rgb
    from storage.stage_store import ShardResult, StageStore, read_artifact
    from tasks.base import RunContext
    from tasks.edit import EditStage, item_seed
    from tasks.runner import run_stage

    console = Console(stderr=True)
    with tempfile.TemporaryDirectory(prefix="edit-overhead-") as tmp:
        tmp_path = Path(tmp)
        console.print("building sample data and a tiny Qwen-Image-Edit pipeline ...")
        generate_sample(tmp_path / "sample", seed=0)
        model = build_qwen_image_edit(tmp_path / "tiny-qwen")
        rows = instruction_rows(tmp_path / "sample", args.items)
        params = {"model": str(model), "steps": args.steps, "process_area": args.area, "batch_size": args.batch_size, "true_cfg_scale": 1.0}
        clear_cache()
        editor = get_editor("qwen-image-edit", params)  # loaded once per process: kept out of every timing

        def stage_run(overlap: bool, round_: int) -> tuple[float, float, int, int]:
            run = RunFS.open(str(tmp_path / f"run-{int(overlap)}-{round_}"))
            store = StageStore(run, "instruct", {"instructions": "instructions"})
            store.write_shard(0, "bench", ShardResult(outputs={"instructions": rows}, rows_in=len(rows)))
            store.write_manifest({"stage": "instruct", "status": "complete", "key": "bench", "output_fingerprint": store.output_fingerprint()})
            cfg = config_from_dict({
                "run": {"seed": 0, "shard_size": 64, "workers": 1},
                "editors": [{"name": "qwen-image-edit", "params": params}],
                "edit": {"batch_size": args.batch_size, "record_timings": True, "overlap_io": overlap},
            })
            console.print(f"round {round_}: edit stage over {len(rows)} instructions, overlap_io={overlap} ...")
            started = time.perf_counter()
            summary = run_stage(EditStage(), RunContext(run, cfg))
            wall = time.perf_counter() - started
            editor_s = sum(r["edit_seconds"] or 0.0 for r in read_artifact(run, "edit", "edits").to_pylist())
            return wall, editor_s, summary.rows_out["edits"] + summary.rejected, summary.rejected

        requests = [
            EditRequest(r["id"], read_image_rgb(r["image_path"]), r["instruction"], r["task"], r["edit_type"], item_seed(0, r["id"]), tuple(r["target_box"]))
            for r in rows
        ]

        def bare_run(round_: int) -> float:
            console.print(f"round {round_}: bare editor loop on the same requests ...")
            started = time.perf_counter()
            for i in range(0, len(requests), args.batch_size):
                run_batch(editor, requests[i : i + args.batch_size])
            return time.perf_counter() - started

        console.print("warm-up (kernel caches for every working size and batch size) ...")
        for size in (args.batch_size, 1, 2, 3):
            for shape in {r.image.shape for r in requests}:
                run_batch(editor, [r for r in requests if r.image.shape == shape][:size])

        # Interleaved rounds, so a change in machine load hits every variant alike; medians reported.
        runs: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        bare_s: list[float] = []
        n = rejected = 0
        for round_ in range(args.rounds):
            for overlap in (True, False):
                wall, editor_s, n, rejected = stage_run(overlap, round_)
                runs[overlap].append((wall, editor_s))
            bare_s.append(bare_run(round_))

    def median(values: list[float]) -> float:
        return statistics.median(values)

    bare = median(bare_s)
    wall, editor_s = median([w for w, _ in runs[True]]), median([e for _, e in runs[True]])
    wall_off, editor_off = median([w for w, _ in runs[False]]), median([e for _, e in runs[False]])
    overhead = max(0.0, (wall - editor_s) / wall)
    print(f"items                                {n} ({n - rejected} edits, {rejected} rejects), median of {args.rounds} interleaved rounds")
    print(f"bare editor loop, same items         {bare:8.2f} s")
    print(f"stage, overlap_io=true (default)     {wall:8.2f} s   editor calls {editor_s:8.2f} s   outside {overhead:6.1%}   wall/bare {wall / bare:6.3f}")
    print(f"stage, overlap_io=false              {wall_off:8.2f} s   editor calls {editor_off:8.2f} s   outside {max(0.0, (wall_off - editor_off) / wall_off):6.1%}   wall/bare {wall_off / bare:6.3f}")
    print(f"seconds per image (default stage)    {wall / max(1, n):8.4f}")
    print(json.dumps({"items": n, "wall_s": round(wall, 3), "editor_s": round(editor_s, 3), "overhead_fraction": round(overhead, 4), "s_per_image": round(wall / max(1, n), 4)}))

if __name__ == "__main__":
    main()
