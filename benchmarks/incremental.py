"""Incremental rebuilds: what adding an editor, extending the images or changing the QA
templates costs once finished items are reused (issue 18).

Steps, all in one run directory on the sample data (rules MLLM backend, classical editors):

  full      build mine -> instruct -> edit -> qa with two editors
  (b)       regenerate the sample with 10% more VG images (same seed: the first images are
            byte-identical) into the same folder, same two editors
                                                    -> only new items should call an editor
                                                       (extend_fraction = (b) / full)
  (a)       add a third editor (on the extended data) -> only its items should call an editor
  (c)       bump the QA templates' version          -> no editor call, no model request

Then a fresh build of the final config in a new run directory; its Parquet files must equal
the incremental run's byte for byte. Editor calls are counted at ``editors.runtime.run_batch``
(every editor request of the edit stage goes through it) and model requests at the rules
client, both by wrapping the real functions (the editors and the backend still run). The QA
template change of (c) is made in this process (the packaged file is read with its version line
bumped), so the checkout is never modified, even by a killed run.

Run: ``python benchmarks/incremental.py`` (a few minutes on two cores). Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

STAGES = ["mine", "instruct", "edit", "qa"]
TEMPLATE_TASK = "relational_erasure"  # (c) bumps this task's question-template version


class Counters:
    """Editor requests and model requests seen since the last ``take()``."""

    def __init__(self) -> None:
        self.editor = 0
        self.model = 0

    def install(self) -> None:
        import editors.runtime as runtime
        from prompts.clients.rules import RulesClient

        run_batch, complete = runtime.run_batch, RulesClient.complete

        def counted_run_batch(editor: Any, requests: Any, *a: Any, **k: Any) -> Any:
            self.editor += len(requests)
            return run_batch(editor, requests, *a, **k)

        def counted_complete(client: Any, requests: Any) -> Any:
            self.model += len(requests)
            return complete(client, requests)

        runtime.run_batch = counted_run_batch
        RulesClient.complete = counted_complete  # type: ignore[method-assign]

    def take(self) -> tuple[int, int]:
        out = (self.editor, self.model)
        self.editor = self.model = 0
        return out


def config(data: Path, editors: list[dict[str, Any]]) -> Any:
    from flows.config import config_from_dict

    return config_from_dict(
        {
            "version": 1,
            "run": {"seed": 0, "shard_size": 16, "workers": 2},
            "sources": {"visual_genome": str(data / "visual_genome"), "fsc147": str(data / "fsc147")},
            "mine": {
                "tasks": ["relational_erasure", "counterfactual_attribute", "alteration_tracing", "dense_counting"],
                "relational_erasure": {"n_min": 20, "theta": 0.2, "area_range": [0.003, 0.5], "images_per_pair": 6},
                "counterfactual_attribute": {
                    "n_min": 20,
                    "theta": 0.3,
                    "area_range": [0.003, 0.8],
                    "images_per_attribute": 2,
                },
                "alteration_tracing": {"max_images": 24},
                "dense_counting": {"count_range": [5, 150], "bins": [5, 10, 25, 50, 100, 150], "per_bin": 3},
            },
            "mllm": {"backend": "rules", "model": "rules-v1"},
            "editors": editors,
            "qa": {"beaf": True},
        }
    )


def build(cfg: Any, run_dir: Path) -> list[Any]:
    from flows.runtime import run_pipeline

    return run_pipeline(cfg, str(run_dir), STAGES, orchestrator="local").summaries


def edits_expected(run_dir: Path) -> int:
    """Instructions an editor must carry out: what one added editor should edit."""
    from storage import schemas
    from storage.fs import RunFS
    from storage.stage_store import read_artifact
    from tasks.stages.edit import needs_edit

    rows = read_artifact(RunFS.open(str(run_dir)), "instruct", "instructions", schemas.INSTRUCTIONS).to_pylist()
    return sum(1 for r in rows if needs_edit(r))


def parquet_snapshot(run_dir: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(run_dir)): p.read_bytes() for s in STAGES for p in sorted((run_dir / s).rglob("*.parquet"))
    }


def images_of(run_dir: Path) -> set[str]:
    return {str(p.relative_to(run_dir)) for p in (run_dir / "images").rglob("*.*") if not p.name.startswith(".tmp-")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    from miners.sample_data import N_VG_IMAGES, generate_sample

    counters = Counters()
    counters.install()
    tmp = Path(tempfile.mkdtemp(prefix="reactbench-incremental-"))
    data, run, fresh = tmp / "data", tmp / "run", tmp / "fresh"
    two = [
        {"name": "classical", "label": "classical-box", "params": {"mask_method": "box"}},
        {"name": "classical", "label": "classical-ellipse", "params": {"mask_method": "ellipse"}},
    ]
    three = [
        *two,
        {"name": "classical", "label": "classical-ns", "params": {"mask_method": "box", "inpaint_method": "ns"}},
    ]
    template_change = ExitStack()  # entered at (c), left after the fresh build
    lines = []
    try:
        generate_sample(data, seed=0)
        t = time.perf_counter()
        build(config(data, two), run)
        full_editor, full_model = counters.take()
        lines.append(
            f"full build, 2 editors:       {full_editor:5d} editor calls {full_model:5d} model requests  {time.perf_counter() - t:6.1f} s"
        )

        t = time.perf_counter()
        extra = round(N_VG_IMAGES * 0.10)
        generate_sample(data, seed=0, vg_images=N_VG_IMAGES + extra)
        summaries = build(config(data, two), run)
        extend_editor, extend_model = counters.take()
        edit_summary = next(s for s in summaries if s.stage == "edit")
        lines.append(
            f"(b) +{extra} images (+10%):      {extend_editor:5d} editor calls {extend_model:5d} model requests  {time.perf_counter() - t:6.1f} s  "
            f"(edit items reused {edit_summary.items_reused}, computed {edit_summary.items_computed})"
        )

        t = time.perf_counter()
        expected = edits_expected(run)
        build(config(data, three), run)
        add_editor, add_model = counters.take()
        lines.append(
            f"(a) add a third editor:      {add_editor:5d} editor calls {add_model:5d} model requests  {time.perf_counter() - t:6.1f} s  (expected {expected})"
        )

        t = time.perf_counter()
        template_change.enter_context(bumped_template_version(TEMPLATE_TASK))
        summaries = build(config(data, three), run)
        qa_editor, qa_model = counters.take()
        qa_summary = next(s for s in summaries if s.stage == "qa")
        lines.append(
            f"(c) QA templates version+1:   {qa_editor:5d} editor calls {qa_model:5d} model requests  {time.perf_counter() - t:6.1f} s  "
            f"(qa items reused {qa_summary.items_reused}, computed {qa_summary.items_computed})"
        )

        t = time.perf_counter()
        build(config(data, three), fresh)
        fresh_editor, fresh_model = counters.take()
        lines.append(
            f"fresh build of the final:    {fresh_editor:5d} editor calls {fresh_model:5d} model requests  {time.perf_counter() - t:6.1f} s"
        )
        identical = parquet_snapshot(run) == parquet_snapshot(fresh) and images_of(fresh) <= images_of(run)
    finally:
        template_change.close()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    for line in lines:
        print(line)
    # (b) runs on the same two editors as the full build, so the full build is its denominator
    fraction = extend_editor / max(1, full_editor)
    print(f"extend: {extend_editor} / {full_editor} editor calls of the full two-editor build = {fraction:.3f}")
    print(
        json.dumps(
            {
                "full_editor_calls": full_editor,
                "add_editor_calls": add_editor,
                "add_editor_expected": expected,
                "extend_editor_calls": extend_editor,
                "extend_fraction": round(fraction, 4),
                "qa_change_editor_calls": qa_editor,
                "qa_change_model_requests": qa_model,
                "identical_to_fresh": identical,
            }
        )
    )


@contextmanager
def bumped_template_version(task: str) -> Iterator[None]:
    """While inside, the question templates of ``task`` read as their packaged text with the
    top-level ``version:`` one higher (as if a template author had bumped it)."""
    import tasks.stages.qa.templates as templates

    read = templates._read_text

    def bumped(name: str) -> str:
        return _bump_version(read(name), name) if name == task else read(name)

    templates._read_text = bumped
    templates.question_set.cache_clear()
    try:
        yield
    finally:
        templates._read_text = read
        templates.question_set.cache_clear()


def _bump_version(text: str, name: str) -> str:
    out, done = [], False
    for line in text.splitlines(keepends=True):
        if not done and line.startswith("version:"):
            line = f"version: {int(line.split(':', 1)[1].strip()) + 1}\n"
            done = True
        out.append(line)
    if not done:
        raise SystemExit(f"the question templates of {name}: no top-level 'version:' line to bump")
    return "".join(out)


if __name__ == "__main__":
    main()
