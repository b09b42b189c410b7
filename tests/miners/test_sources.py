"""Sources as registrations: the registry (built-ins, ``register``, entry points), and the mine
stage planning, fingerprinting and mining through specs alone (a third-party format included)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flows.config import config_from_dict
from miners import sources
from miners.result import MineResult
from miners.sample_data import COCO_ANNOTATIONS, COCO_DIR
from miners.sources import SourceError, SourceSpec, available, source_spec
from storage.fs import RunFS
from storage.hashing import canonical_json, stable_id
from storage.parquet_io import ArtifactReader
from storage.schemas import CANDIDATES
from tasks.engine.base import RunContext
from tasks.engine.mine_config import MineConfig
from tasks.engine.runner import run_stage
from tasks.stages.mine import MineSourceMissing, MineStage, fed_tasks, feeds


def _toy_mine(path: str, cfg: MineConfig, seed: int, progress: Any = None) -> MineResult:
    """A third-party format: one DC candidate per line ``<image file> <class> <count>``."""
    result = MineResult()
    for line in Path(path).read_text().splitlines():
        name, cls, count = line.split()
        result.candidates.append(
            {
                "id": stable_id("dense_counting", "targeted", "toy", name),
                "task": "dense_counting",
                "variant": "targeted",
                "source": "toy",
                "image_id": name,
                "image_path": str(Path(path).parent / name),
                "width": 10,
                "height": 10,
                "count": int(count),
                "points": [[1.0, 1.0]] * int(count),
                "class_name": cls,
                "target_name": cls,
                "edit_type": "none",
                "fallback_chain": [],
                "context_json": canonical_json([]),
                "extra_json": canonical_json({}),
            }
        )
    result.summary["toy_images"] = len(result.candidates)
    return result.finish()


TOY = SourceSpec(
    name="toy",
    format="one line per image",
    yields=frozenset({"images", "points"}),
    own_tasks=("dense_counting",),
    setting_help="a toy.txt file",
    files=lambda p, cfg: [p],
    required=lambda p, cfg: [p],
    mine=_toy_mine,
    manifest=lambda r: {"toy": r.summary},
    images_key="toy_images",
)


@pytest.fixture
def toy_registered():
    sources.register(TOY)
    yield TOY
    sources._EXTRA.pop("toy", None)


def test_builtins_come_first_in_a_fixed_order_and_resolve_to_specs() -> None:
    assert available()[:3] == ["visual_genome", "fsc147", "coco"]
    for name in ("visual_genome", "fsc147", "coco"):
        spec = source_spec(name)
        assert spec.tasks == fed_tasks(spec)  # the plugin API 2.1 property answers as the stage
        assert spec.name == name and fed_tasks(spec) and spec.yields <= sources.YIELDS
    assert feeds(source_spec("coco"), ["counterfactual_attribute", "dense_counting", "relational_erasure"]) == [
        "dense_counting",
        "relational_erasure",
    ]


def test_unknown_source_lists_the_choices_and_bad_specs_are_refused() -> None:
    with pytest.raises(SourceError, match=r"unknown source 'objects365'.*'coco'.*reactbench\.sources"):
        source_spec("objects365")
    with pytest.raises(SourceError, match="unknown yields"):
        SourceSpec("x", "f", frozenset({"masks"}), "", TOY.files, TOY.required, TOY.mine, TOY.manifest)


def test_entry_point_sources_are_found(monkeypatch: pytest.MonkeyPatch) -> None:
    class EP:  # an entry point naming this module's TOY
        name, value, module, attr = "toy", f"{__name__}:TOY", __name__, "TOY"

    monkeypatch.setattr(sources.REGISTRY, "entry_points", lambda: {"toy": EP()})
    assert "toy" in available() and source_spec("toy") is TOY


def test_third_party_source_is_mined_by_the_stage(toy_registered: SourceSpec, tmp_path: Path) -> None:
    data = tmp_path / "toy.txt"
    data.write_text("a.jpg apple 12\nb.jpg coin 30\n")
    cfg = config_from_dict({"sources": {"other": {"toy": str(data)}}, "mine": {"tasks": ["dense_counting"]}})
    ctx = RunContext(RunFS.open(str(tmp_path / "run")), cfg)
    summary = run_stage(MineStage(), ctx)
    rows = ArtifactReader(ctx.run, "mine/candidates", CANDIDATES).rows()
    assert sorted(r["class_name"] for r in rows) == ["apple", "coin"] and summary.shards_total == 1
    manifest = MineStage().store(ctx).read_manifest()
    assert str(data) in manifest["input_fingerprints"] and manifest["extra"]["toy"]["toy_images"] == 2


def test_coco_source_through_the_stage(sample_dir: Path, tmp_path: Path) -> None:
    cfg = config_from_dict(
        {
            "sources": {"coco": str(sample_dir / COCO_DIR / COCO_ANNOTATIONS)},
            "mine": {
                "tasks": ["relational_erasure", "alteration_tracing", "dense_counting"],
                "relational_erasure": {"n_min": 20, "theta": 0.7, "area_range": [0.003, 0.5], "images_per_pair": 4},
                "dense_counting": {"count_range": [5, 60], "bins": [5, 10, 25, 60], "per_bin": 3},
            },
        }
    )
    ctx = RunContext(RunFS.open(str(tmp_path / "run")), cfg)
    summary = run_stage(MineStage(), ctx)
    rows = ArtifactReader(ctx.run, "mine/candidates", CANDIDATES).rows()
    assert {r["task"] for r in rows} == {"relational_erasure", "alteration_tracing", "dense_counting"}
    assert summary.rows_out["pair_stats"] > 0 and "ambiguous_count" in summary.reject_reasons
    from storage.schemas import PAIR_STATS

    assert {r["source"] for r in ArtifactReader(ctx.run, "mine/pair_stats", PAIR_STATS).rows(["source"])} == {"coco"}
    extra = MineStage().store(ctx).read_manifest()["extra"]
    assert extra["coco"]["images"] == 62 and extra["coco"]["crowd_regions"] >= 1
    assert json.loads(rows[0]["extra_json"])["file_name"].endswith(".jpg")


def test_a_four_parameter_mine_still_finds_its_miners_through_the_stage(sample_dir: Path, tmp_path: Path) -> None:
    """Plugin API 2.1's ``mine(setting, config, seed, progress)`` is handed no miners: it looks them
    up (``miner_specs``) and mines what the five-parameter built-in mines from the same files."""
    from miners.coco import mine_coco

    calls: list[str] = []

    def legacy_mine(path: str, cfg: MineConfig, seed: int, progress: Any = None) -> MineResult:
        from miners.dispatch import miner_specs

        calls.append(",".join(m.task for m in miner_specs("coco", cfg.tasks)))
        return mine_coco(path, cfg, seed, progress)  # no miners: it asks miner_specs itself

    legacy = SourceSpec(
        name="coco-legacy",
        format="COCO, read by a plugin written for API 2.1",
        yields=frozenset({"images", "objects"}),
        own_tasks=("relational_erasure", "dense_counting"),
        setting_help="a COCO instances JSON",
        files=lambda p, cfg: [p],
        required=lambda p, cfg: [p],
        mine=legacy_mine,
        manifest=lambda r: {"legacy": r.summary},
    )
    sources.register(legacy)
    try:
        mine = {
            "tasks": ["relational_erasure", "dense_counting"],
            "relational_erasure": {"n_min": 20, "theta": 0.7, "area_range": [0.003, 0.5], "images_per_pair": 4},
            "dense_counting": {"count_range": [5, 60], "bins": [5, 10, 25, 60], "per_bin": 3},
        }
        coco = str(sample_dir / COCO_DIR / COCO_ANNOTATIONS)
        got = {}
        for name, srcs in (("legacy", {"other": {"coco-legacy": coco}}), ("builtin", {"coco": coco})):
            ctx = RunContext(RunFS.open(str(tmp_path / name)), config_from_dict({"sources": srcs, "mine": mine}))
            run_stage(MineStage(), ctx)
            got[name] = sorted(r["id"] for r in ArtifactReader(ctx.run, "mine/candidates", CANDIDATES).rows(["id"]))
    finally:
        sources._EXTRA.pop("coco-legacy", None)
    assert calls == ["relational_erasure,dense_counting"]
    assert got["legacy"] and got["legacy"] == got["builtin"]


def test_a_task_no_configured_source_feeds_names_the_sources_that_can(sample_dir: Path, tmp_path: Path) -> None:
    cfg = config_from_dict(
        {
            "sources": {"coco": str(sample_dir / COCO_DIR / COCO_ANNOTATIONS)},
            "mine": {"tasks": ["relational_erasure", "counterfactual_attribute"]},
        }
    )
    with pytest.raises(MineSourceMissing, match=r"\['counterfactual_attribute'\] need sources.visual_genome") as info:
        run_stage(MineStage(), RunContext(RunFS.open(str(tmp_path)), cfg))
    assert "sources.coco" not in str(info.value)
    with pytest.raises(MineSourceMissing, match=r"sources.visual_genome .* or sources.coco"):
        run_stage(
            MineStage(),
            RunContext(RunFS.open(str(tmp_path / "b")), config_from_dict({"mine": {"tasks": ["relational_erasure"]}})),
        )


def test_config_refuses_unknown_or_built_in_names_under_other() -> None:
    from flows.config import ConfigError

    with pytest.raises(
        ConfigError,
        match=r"sources.other: .*unknown source 'objects365'; registered sources: visual_genome, fsc147, coco",
    ):
        config_from_dict({"sources": {"other": {"objects365": "/data/o365.json"}}})
    with pytest.raises(ConfigError, match=r"'coco' is a built-in source: set sources.coco instead"):
        config_from_dict({"sources": {"other": {"coco": "/data/x.json"}}})
