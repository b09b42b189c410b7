"""Stage keys come from the config sections a stage reads (``Section.stage_key``), not from
hand-kept key lists: a setting that changes answers reruns every stage that reads it, one
that only changes how a stage runs reruns nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.config import BuildConfig, load_config
from flows.runtime import run_pipeline
from storage.fs import RunFS
from storage.hashing import config_hash
from tasks.engine.base import RunContext


def _sample_config(sample_dir: Path, **mllm: object) -> BuildConfig:
    sources = {
        "sources.visual_genome": str(sample_dir / "visual_genome"),
        "sources.fsc147": str(sample_dir / "fsc147"),
    }
    return load_config(None, {**sources, **{f"mllm.{k}": v for k, v in mllm.items()}})


def test_changing_the_endpoint_reruns_instruct_and_concurrency_does_not(sample_dir: Path, tmp_path: Path) -> None:
    run_dir = str(tmp_path / "run")
    first = run_pipeline(_sample_config(sample_dir), run_dir, ["mine", "instruct"], orchestrator="local")
    assert first.summaries[1].shards_run > 0
    calm = run_pipeline(
        _sample_config(sample_dir, concurrency=3, timeout_s=9.0), run_dir, ["instruct"], orchestrator="local"
    )
    assert calm.summaries[0].all_skipped, "concurrency and timeouts do not change answers"
    moved = run_pipeline(
        _sample_config(sample_dir, base_url="http://127.0.0.1:9/v1"), run_dir, ["instruct"], orchestrator="local"
    )
    assert moved.summaries[0].shards_run == moved.summaries[0].shards_total > 0, (
        "another endpoint may answer differently"
    )


@pytest.mark.parametrize("stage_name", ["instruct", "qa"])
def test_stages_reading_the_mllm_section_key_it_the_same_way(stage_name: str, tmp_path: Path) -> None:
    from flows.stages import get_stage

    def key(**mllm: object) -> str:
        cfg = load_config(None, {f"mllm.{k}": v for k, v in mllm.items()})
        return config_hash(get_stage(stage_name).config_section(RunContext(RunFS.open(str(tmp_path)), cfg))["mllm"])

    base = key()
    assert key(base_url="http://gpu:8000/v1") != base and key(temperature=0.5) != base and key(parse_retries=0) != base
    assert key(concurrency=1, timeout_s=5.0, max_retries=0, cache=False, api_key_env="K") == base


def test_new_settings_join_the_key_unless_declared_otherwise() -> None:
    from pydantic import Field

    from storage.config_base import NOT_IN_STAGE_KEY, Section

    class Inner(Section):
        a: int = 1
        speed: int = Field(2, json_schema_extra=NOT_IN_STAGE_KEY)

    class Outer(Section):
        inner: Inner = Inner()
        b: str = "x"

    assert Outer().stage_key() == {"inner": {"a": 1}, "b": "x"}


def test_edit_key_ignores_budgets_and_batching_but_not_what_changes_pixels(tmp_path: Path) -> None:
    from tasks.stages.edit import EditStage

    def key(**changes: object) -> str:
        return config_hash(
            EditStage().config_section(RunContext(RunFS.open(str(tmp_path)), load_config(None, changes)))
        )

    base = key()
    demo_editor = {"name": "classical", "params": {"dilation_px": 5}}
    speed_only = {
        "edit.batch_size": 1,
        "edit.keep_loaded": 2,
        "edit.overlap_io": False,
        "editors": [{**demo_editor, "time_budget_s": 30}],
    }
    assert key(**speed_only) == base
    assert key(**{"edit.png_compress_level": 6}) != base and key(**{"edit.qc.min_psnr_outside": 25.0}) != base
    assert key(editors=[{"name": "classical", "params": {"dilation_px": 5, "mask_method": "ellipse"}}]) != base
