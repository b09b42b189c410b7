"""A task registered from outside (``register_task``, as an entry point would) is configured and
mined with no change to miners/: its ``mine.<id>`` section validates against its own params class,
the sources it has miners for feed it, and its Visual Genome miner reads relationships through
its ``vg_reads`` hook, with subject / object ids, canonical predicates and boxes in ``job.scan``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mining_helpers import image, obj, rel, write_vg
from pydantic import Field

from flows.config import ConfigError, config_from_dict, dump_config
from miners.candidates import Selection
from miners.dispatch import MineJob
from miners.mine import mine_visual_genome
from miners.sources import source_spec
from storage.config_base import Section
from storage.task_spec import TaskSpec, register_task
from tasks.engine import registry
from tasks.engine.mine_config import MineConfig
from tasks.stages.mine import fed_tasks, feeds

PLUGIN = "toy_spatial"
SEEN: list[MineJob] = []


class ToySpatialParams(Section):
    min_count: int = Field(2, ge=1, description="relationships a (subject, predicate, object) triple needs")
    predicates: tuple[str, ...] = Field(("on", "under"), description="spatial predicates considered")


def toy_miner(job: MineJob) -> None:
    """One candidate per image holding a frequent spatial triple: the subject is the target."""
    SEEN.append(job)
    r, preds, names = job.scan.relations, job.scan.predicates.names, job.scan.names.names
    counts: dict[tuple[int, int, int], int] = {}
    for s, p, o in zip(
        r["s_nid"][r["valid"]].tolist(), r["pid"][r["valid"]].tolist(), r["o_nid"][r["valid"]].tolist()
    ):
        counts[(s, p, o)] = counts.get((s, p, o), 0) + 1
    frequent = {k for k, c in counts.items() if c >= job.params.min_count and preds[k[1]] in job.params.predicates}
    job.result.summary["toy_triples"] = len(frequent)
    if not job.candidates:
        return
    sel = Selection()
    for k in np.flatnonzero(r["valid"]).tolist():
        if (int(r["s_nid"][k]), int(r["pid"][k]), int(r["o_nid"][k])) not in frequent:
            continue
        iid = int(r["img"][k])
        path = job.rows.image_path(iid, sel)
        target = {
            "id": int(r["s_oid"][k]),
            "name": names[int(r["s_nid"][k])],
            "box": [float(r[f"s{c}"][k]) for c in "xywh"],
        }
        partner = {
            "id": int(r["o_oid"][k]),
            "name": names[int(r["o_nid"][k])],
            "box": [float(r[f"o{c}"][k]) for c in "xywh"],
        }
        sel.rows.append(
            job.rows.row(
                job.task,
                "targeted",
                iid,
                path,
                target=target,
                partner=partner,
                predicate=preds[int(r["pid"][k])],
                edit_type="move",
                fallback_chain=[],
            )
        )
    job.result.add(sel)


VG_READS = ("relationships",)


@pytest.fixture
def plugin() -> Any:
    spec = register_task(
        TaskSpec(
            id=PLUGIN,
            short="TS",
            label="Toy spatial",
            weight=0.1,
            order=50,
            params=ToySpatialParams,
            miners={"visual_genome": toy_miner},
            extra={"vg_reads": f"{__name__}:VG_READS"},
        )
    )
    SEEN.clear()
    yield spec
    registry.REGISTRY.registered.pop(PLUGIN, None)
    registry._all.cache_clear()


def test_plugin_section_validates_against_its_params_class(plugin: TaskSpec) -> None:
    cfg = MineConfig.model_validate({"tasks": ["relational_erasure", PLUGIN], PLUGIN: {"min_count": 3}})
    assert cfg.params_for(PLUGIN) == ToySpatialParams(min_count=3) and getattr(cfg, PLUGIN).min_count == 3
    assert cfg.control_for(PLUGIN) is False, "a task without a control setting follows mine.control"
    sections = [
        k for k in cfg.model_dump() if k in registry.all_specs()
    ]  # installed task plugins (make test: spatial_relation) too
    assert sections == list(registry.all_specs()) and sections[:4] == [
        "relational_erasure",
        "counterfactual_attribute",
        "alteration_tracing",
        "dense_counting",
    ]
    assert sections.index(PLUGIN) > sections.index("dense_counting")
    assert cfg.stage_key()[PLUGIN] == {"min_count": 3, "predicates": ["on", "under"]}
    defaults = MineConfig.model_validate({"tasks": ["relational_erasure"]})
    assert defaults.params_for(PLUGIN) == ToySpatialParams(), "every registered task gets its defaults"
    assert PLUGIN not in defaults.stage_key(), "a task not mined keys nothing: installing a plugin re-mines no run"
    assert (
        defaults.stage_key()
        == MineConfig.model_validate({"tasks": ["relational_erasure"], PLUGIN: {"min_count": 9}}).stage_key()
    )
    with pytest.raises(ConfigError, match=rf"mine\.{PLUGIN}\.min_cout: Extra inputs are not permitted"):
        config_from_dict({"mine": {PLUGIN: {"min_cout": 3}}})
    with pytest.raises(ConfigError, match=rf"mine\.{PLUGIN}\.min_count: Input should be greater than or equal to 1"):
        config_from_dict({"mine": {PLUGIN: {"min_count": 0}}})
    with pytest.raises(ConfigError, match=rf"mine\.toy_spatail: unknown key; .*task sections: .*{PLUGIN}"):
        config_from_dict({"mine": {"toy_spatail": {}}})
    with pytest.raises(ConfigError, match=rf"mine\.tasks\.1: unknown task 'toy_spatail'; choices: .*{PLUGIN}"):
        config_from_dict({"mine": {"tasks": ["relational_erasure", "toy_spatail"]}})
    saved = config_from_dict({"mine": {"tasks": [PLUGIN]}})
    assert f"  {PLUGIN}:\n    min_count: 2\n" in dump_config(saved)


def test_a_task_without_params_refuses_a_section() -> None:
    register_task(TaskSpec(id="toy_plain", short="TP", label="Toy plain", weight=0.0))
    try:
        with pytest.raises(ConfigError, match=r"mine\.toy_plain: task 'toy_plain' takes no mine settings"):
            config_from_dict({"mine": {"toy_plain": {"x": 1}}})
        assert MineConfig().params_for("toy_plain") is None
    finally:
        registry.REGISTRY.registered.pop("toy_plain", None)
        registry._all.cache_clear()


def test_sources_feed_what_the_registry_says(plugin: TaskSpec) -> None:
    assert PLUGIN in fed_tasks(source_spec("visual_genome"))
    assert PLUGIN not in fed_tasks(source_spec("coco")) and PLUGIN not in fed_tasks(source_spec("fsc147"))
    assert feeds(source_spec("visual_genome"), [PLUGIN, "dense_counting"]) == [PLUGIN]


def _toy_vg(tmp_path: Path) -> str:
    images = [image(i) for i in range(1, 5)]
    objects, rels = [], []
    for i in range(1, 5):
        cup, table = obj(i * 10 + 1, "cup", 40, 30, 10, 10), obj(i * 10 + 2, "table", 10, 40, 80, 50)
        objects.append({"image_id": i, "objects": [cup, table]})
        rels.append({"image_id": i, "relationships": [rel(i * 100, cup, "ON", table)]})
    return write_vg(tmp_path / "vg", images, objects, rels)


def test_plugin_miner_reads_vg_relationships(plugin: TaskSpec, tmp_path: Path) -> None:
    root = _toy_vg(tmp_path)
    cfg = MineConfig.model_validate({"tasks": [PLUGIN]})  # no built-in task asks for relationships.json
    result = mine_visual_genome(root, cfg, seed=0)
    (job,) = SEEN
    assert job.task == PLUGIN and job.source == "visual_genome" and job.params == ToySpatialParams() and job.seed == 0
    assert job.scan.relations is not None, "vg_reads made the source read relationships.json"
    assert result.summary["toy_triples"] == 1
    assert len(result.candidates) == 4 and {c["task"] for c in result.candidates} == {PLUGIN}
    row = result.candidates[0]
    assert (row["target_name"], row["predicate"], row["partner_name"]) == ("cup", "on", "table")
    assert row["target_box"] == [40.0, 30.0, 10.0, 10.0] and row["partner_box"] == [10.0, 40.0, 80.0, 50.0]
    assert result.pair_table is None, "no built-in miner ran"
    stats_only = mine_visual_genome(root, cfg, seed=0, candidates=False)
    assert stats_only.candidates == [] and stats_only.summary["toy_triples"] == 1


def test_missing_file_a_plugin_reads_is_named_with_the_task(plugin: TaskSpec, tmp_path: Path) -> None:
    root = _toy_vg(tmp_path)
    Path(root, "relationships.json").unlink()
    with pytest.raises(FileNotFoundError, match=rf"{PLUGIN} needs .*relationships.json"):
        mine_visual_genome(root, MineConfig.model_validate({"tasks": [PLUGIN]}), seed=0)


def test_the_mine_stage_key_ignores_tasks_not_mined(plugin: TaskSpec, tmp_path) -> None:
    """Installing a task plugin (its defaults join every config) or editing a task that is not
    mined changes no mine stage key: no run is re-mined for it."""
    from storage.fs import RunFS
    from tasks.engine.base import RunContext
    from tasks.stages.mine import MineStage

    def section(mine: dict) -> Any:
        ctx = RunContext(run=RunFS.open(str(tmp_path)), config=config_from_dict({"mine": mine}), options={})
        return MineStage().config_section(ctx)

    base = section({"tasks": ["relational_erasure"]})
    assert PLUGIN not in base["mine"]
    assert section({"tasks": ["relational_erasure"], PLUGIN: {"min_count": 9}}) == base
    assert section({"tasks": ["relational_erasure", PLUGIN]})["mine"][PLUGIN] == {
        "min_count": 2,
        "predicates": ["on", "under"],
    }
