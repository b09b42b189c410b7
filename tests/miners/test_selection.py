"""Candidate selection on the sample: fields, filters, caps, seeds, controls, AT edit types, DC bins."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from mining_helpers import mine_config

from miners.fsc147 import bin_of, read_fsc147
from miners.mine import mine_fsc147, mine_visual_genome
from miners.sample_data import load_truth
from storage.hashing import stable_id
from tasks.builtin_tasks.alteration_tracing.miner import assign_edit_type


def _by(rows, task, variant="targeted"):
    return [r for r in rows if r["task"] == task and r["variant"] == variant]


def test_re_candidates_carry_what_later_stages_need(mined_vg) -> None:
    re = _by(mined_vg.candidates, "relational_erasure")
    kept = {(p["a"], p["b"]) for p in mined_vg.pair_stats if p["kept"]}
    assert {("cup", "table"), ("skateboard", "wheel")} <= kept
    assert ("ball", "grass") not in kept
    assert 30 <= len(re) <= 60  # a few dozen for the demo thresholds
    for c in re:
        assert tuple(sorted((c["target_name"], c["partner_name"]))) in kept
        assert c["image_path"].endswith(f"/{c['image_id']}.jpg") and Path(c["image_path"]).is_file()
        W, H = c["width"], c["height"]
        x, y, w, h = c["target_box"]
        assert 0.003 <= w * h / (W * H) <= 0.5
        assert w * h <= c["partner_box"][2] * c["partner_box"][3]  # the smaller entity is erased
        assert (
            c["predicate"]
            and c["direction"] in ("target_is_subject", "target_is_object")
            and c["edit_type"] == "remove"
        )
        ctx = json.loads(c["context_json"])
        assert c["target_object_id"] not in {o["id"] for o in ctx}
        assert c["partner_object_id"] in {o["id"] for o in ctx}
        assert all({"id", "name", "box", "attributes", "relations"} <= set(o) for o in ctx)
        extra = json.loads(c["extra_json"])
        assert extra["pair"]["c_ab"] >= 20
    per_pair = Counter(tuple(sorted((c["target_name"], c["partner_name"]))) for c in re)
    assert max(per_pair.values()) <= 6


def test_wheel_on_skateboard_reads_naturally(mined_vg) -> None:
    c = next(c for c in _by(mined_vg.candidates, "relational_erasure") if c["partner_name"] == "skateboard")
    assert c["target_name"] == "wheel" and c["predicate"] == "on" and c["direction"] == "target_is_subject"
    assert json.loads(c["extra_json"])["triplet"] == ["wheel", "on", "skateboard"]


def test_controls_are_off_by_default_and_isolate_the_cause(vg_root: str, mined_vg) -> None:
    plain = mine_visual_genome(vg_root, mine_config(), seed=0)
    assert not [c for c in plain.candidates if c["variant"] == "control"]
    kept = {(p["a"], p["b"]) for p in mined_vg.pair_stats if p["kept"]}
    re_ctrl = _by(mined_vg.candidates, "relational_erasure", "control")
    assert re_ctrl
    targeted_ids = {c["id"] for c in mined_vg.candidates}
    for c in re_ctrl:
        ctx = json.loads(c["context_json"])
        remaining = {o["name"] for o in ctx}
        assert all(tuple(sorted((c["target_name"], n))) not in kept for n in remaining if n != c["target_name"])
        assert json.loads(c["extra_json"])["control_for"] in targeted_ids
    ca_ctrl = _by(mined_vg.candidates, "counterfactual_attribute", "control")
    dominant = {(a["object"], a["attribute"]) for a in mined_vg.attribute_stats if a["kept"]}
    assert ca_ctrl and all((c["target_name"], c["attribute"]) not in dominant for c in ca_ctrl)
    assert mine_config(relational_erasure__control=False, control=True).control_for("relational_erasure") is False


def test_ca_candidates_are_dominant_and_in_range(mined_vg) -> None:
    stats = {(a["object"], a["attribute"]): a for a in mined_vg.attribute_stats}
    ca = _by(mined_vg.candidates, "counterfactual_attribute")
    assert ca
    for c in ca:
        s = stats[(c["target_name"], c["attribute"])]
        assert s["kept"] and s["rank"] == c["attribute_rank"] and s["c_oa"] >= 20 and s["p_a_given_o"] >= 0.3
        assert c["attribute"] in json.loads(c["extra_json"])["target_attributes"]
    ranks = Counter(a["object"] for a in mined_vg.attribute_stats if a["kept"])
    assert max(ranks.values()) <= 3


def test_at_targets_rotation_and_delete_rule(mined_vg) -> None:
    at = _by(mined_vg.candidates, "alteration_tracing")
    assert 10 <= len(at) <= 24
    for c in at:
        ctx = json.loads(c["context_json"])
        assert len(ctx) + 1 > 15
        x, y, w, h = c["target_box"]
        assert w * h / (c["width"] * c["height"]) < 0.2
        same = 1 + sum(o["name"] == c["target_name"] for o in ctx)
        assert c["same_instance_count"] == same
        assert sorted([c["edit_type"], *c["fallback_chain"]]) == sorted(
            {"delete", "add", "replace", "move"} - ({"delete"} if same < 2 else set())
        )
    assigned = Counter(json.loads(c["extra_json"])["assigned_edit_type"] for c in at)
    assert set(assigned) == {
        "delete",
        "add",
        "replace",
        "move",
    }  # a per-image hash draw: every type, not exactly balanced
    # the id names the edit a candidate carries: one id never stands for two different edits
    assert all(
        c["id"]
        == stable_id(c["task"], c["variant"], c["source"], int(c["image_id"]), c["target_object_id"], c["edit_type"])
        for c in at
    )


def test_assign_edit_type_fallbacks() -> None:
    types = ("delete", "add", "replace", "move")
    assert assign_edit_type(0, types, 3) == ("delete", ["add", "replace", "move"], "delete")
    assert assign_edit_type(0, types, 1) == ("add", ["replace", "move"], "delete")
    assert assign_edit_type(3, types, 1) == ("move", ["add", "replace"], "move")
    assert assign_edit_type(7, types, 2) == ("move", ["delete", "add", "replace"], "move")


def test_same_seed_same_candidates_other_seed_differs(vg_root: str, mined_vg) -> None:
    again = mine_visual_genome(vg_root, mine_config(control=True), seed=0)
    assert again.candidates == mined_vg.candidates and again.rejects == mined_vg.rejects
    other = mine_visual_genome(vg_root, mine_config(control=True), seed=1)
    assert {c["id"] for c in other.candidates} != {c["id"] for c in mined_vg.candidates}
    assert other.pair_stats == mined_vg.pair_stats  # statistics do not depend on the seed


def test_dense_counting_counts_bins_and_rejects(fsc_root: str, sample_dir: Path) -> None:
    cfg = mine_config()
    res = mine_fsc147(fsc_root, cfg, seed=0)
    truth = load_truth(sample_dir)["fsc147"]
    assert len(res.candidates) >= 10
    per_bin = Counter(bin_of(c["count"], cfg.dense_counting.bins) for c in res.candidates)
    assert max(per_bin.values()) <= 3 and len(per_bin) >= 4
    for c in res.candidates:
        assert c["count"] == truth[c["image_id"]]["count"] == len(c["points"])
        assert c["class_name"] == truth[c["image_id"]]["class"]
        assert 5 <= c["count"] <= 150 and Path(c["image_path"]).is_file()
        assert len(json.loads(c["extra_json"])["exemplar_boxes"]) == 3
    # the sample's defective images (no class line, no image file) are rejects when drawn; draw every image
    everything = mine_fsc147(fsc_root, mine_config(dense_counting__per_bin=10_000), seed=0)
    assert {r["reason"] for r in everything.rejects} == {"missing_class", "missing_image"}
    only_test = mine_fsc147(fsc_root, mine_config(dense_counting__splits=["test"]), seed=0)
    data = read_fsc147(fsc_root)
    assert only_test.candidates and all(data.splits[c["image_id"]] == "test" for c in only_test.candidates)


def test_bin_edges() -> None:
    edges = (10, 25, 50)
    assert [bin_of(n, edges) for n in (9, 10, 24, 25, 49, 50, 51)] == [None, 0, 0, 1, 1, 1, None]


@pytest.mark.parametrize("bad", ["2.jpg  apples", "\tapples"])
def test_malformed_class_lines_are_rejects(tmp_path: Path, bad: str) -> None:
    from miners.fsc147 import read_classes

    (tmp_path / "c.txt").write_text(f"1.jpg\tcoins\n{bad}\n")
    classes, problems = read_classes(str(tmp_path / "c.txt"))
    assert (
        classes == {"1.jpg": "coins"}
        and problems[0]["reason"] == "malformed_entry"
        and "line 2" in problems[0]["detail"]
    )


def test_duckdb_and_msgspec_readers_give_the_same_result(vg_root: str, mined_vg, tmp_path: Path) -> None:
    from miners.mine import scan_visual_genome
    from miners.sample_data import generate_sample
    from tasks.stages.mine import task_miners

    slow = mine_visual_genome(vg_root, mine_config(control=True, reader="msgspec"), seed=0)
    assert slow.candidates == mined_vg.candidates and slow.rejects == mined_vg.rejects
    assert slow.pair_stats == mined_vg.pair_stats and slow.attribute_stats == mined_vg.attribute_stats
    # the sample's objects.json has a non-numeric coordinate: DuckDB refuses it, msgspec reads it
    readers = scan_visual_genome(
        vg_root, mine_config(), task_miners("visual_genome", ("relational_erasure", "counterfactual_attribute"))
    ).readers
    assert readers == {"objects": "msgspec", "relationships": "duckdb", "attributes": "duckdb"}
    clean = tmp_path / "clean"
    generate_sample(clean, seed=3, defects=False)
    fast_scan = scan_visual_genome(
        str(clean / "visual_genome"), mine_config(), task_miners("visual_genome", ("relational_erasure",))
    )
    assert set(fast_scan.readers.values()) == {"duckdb"}
    fast = mine_visual_genome(str(clean / "visual_genome"), mine_config(control=True), seed=0)
    ref = mine_visual_genome(str(clean / "visual_genome"), mine_config(control=True, reader="msgspec"), seed=0)
    assert (
        fast.candidates == ref.candidates
        and fast.pair_stats == ref.pair_stats
        and fast.attribute_stats == ref.attribute_stats
    )
    assert fast.rejects == ref.rejects


def test_new_fsc147_images_never_reorder_the_chosen_ones(fsc_root: str) -> None:
    """Bottom-k by file name: an added image (here one whose name sorts before every other, which
    shifts every position) can take at most one place in its bin and moves no other choice."""
    import dataclasses

    from miners.fsc147 import select

    params = mine_config().dense_counting
    data = read_fsc147(fsc_root)
    before = {c["image_id"] for c in select(data, params, seed=0, task="dense_counting").rows}
    grown = dataclasses.replace(
        data, annotations=dict(data.annotations), classes=dict(data.classes), splits=dict(data.splits)
    )
    added = []
    for i, name in enumerate(sorted(before)):  # a twin of each chosen image, under a name sorting first
        twin = f"0000{i:02d}_{name}"
        grown.annotations[twin], grown.classes[twin], grown.splits[twin] = (
            data.annotations[name],
            data.classes[name],
            data.splits[name],
        )
        added.append(twin)
    after = {
        c["image_id"]
        for c in select(grown, params, seed=0, task="dense_counting").rows
        if not c["image_id"].startswith("0000")
    }
    assert after <= before, "an image chosen now was not chosen before: the order of old images changed"
    moved = before - after
    assert len(moved) <= sum(
        1 for c in select(grown, params, seed=0, task="dense_counting").rows if c["image_id"] in added
    ), "only new images displace old ones"
