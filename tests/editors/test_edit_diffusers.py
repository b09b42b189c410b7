"""diffusers-edit with a tiny random pipeline of every family (built from configs like diffusers'
own tests, saved with save_pretrained, loaded back from the folder), unit level and through a
build: edit stage (seeded, deterministic), auto-QC, QA, review queue and the audit."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from editors.base import EditFailure, EditorError, EditRequest, EditResult
from editors.diffusers_edit import FAMILIES, DiffusersEditEditor, working_size

AREA = 64 * 64
CLASSES = {
    "flux-kontext": "FluxKontextPipeline",
    "flux-kontext-inpaint": "FluxKontextInpaintPipeline",
    "flux2-klein": "Flux2KleinPipeline",
    "flux2-klein-inpaint": "Flux2KleinInpaintPipeline",
    "longcat-image-edit": "LongCatImageEditPipeline",
    "qwen-image-edit": "QwenImageEditPipeline",
    "qwen-image-edit-plus": "QwenImageEditPlusPipeline",
    "qwen-image-edit-inpaint": "QwenImageEditInpaintPipeline",
}


def _requests(seed: int = 0) -> list[EditRequest]:
    rng = np.random.default_rng(0)
    a = rng.integers(0, 255, (48, 64, 3), dtype=np.uint8)
    b = rng.integers(0, 255, (60, 45, 3), dtype=np.uint8)
    return [
        EditRequest("a", a, "remove the red ball", "relational_erasure", "remove", seed, (5, 5, 20, 20)),
        EditRequest("b", b, "make the cup blue", "counterfactual_attribute", "attribute", seed + 1, (3, 3, 19, 19)),
    ]


def test_every_family_has_a_tiny_model_and_a_row():
    assert set(CLASSES.values()) == set(FAMILIES)


@pytest.mark.parametrize("family", sorted(CLASSES))
def test_each_family_loads_from_its_folder_edits_at_the_working_size_and_is_seeded(tiny_edit_families, family):
    ed = DiffusersEditEditor(
        {
            "model": str(tiny_edit_families[family]),
            "steps": 2,
            "process_area": AREA,
            "batch_size": 2,
            "max_sequence_length": 32,
        }
    )
    reqs = _requests()
    out = ed.edit_batch(reqs)
    fam = FAMILIES[CLASSES[family]]
    assert type(ed.pipe).__name__ == CLASSES[family] and ed.resolved_params() == {
        "pipeline": CLASSES[family],
        "memory_plan": "single",
        "quantization": "none",
    }
    for r, res in zip(reqs, out):
        assert isinstance(res, EditResult) and res.image.shape == r.image.shape and res.image.dtype == np.uint8
        h, w = r.image.shape[:2]
        assert (
            res.meta["working_size"] == list(working_size(w, h, AREA, 16, fam.min_side))
            and res.meta["pipeline"] == CLASSES[family]
        )
        assert res.meta["raw_size"] != [w, h]  # ran at the working size and came back
        assert not np.array_equal(res.image, r.image)
        if fam.mask:  # inpaint: the mask is reported and nothing outside it changed
            assert res.mask is not None and res.mask.any() and not res.mask.all()
            assert np.array_equal(res.image[~res.mask], r.image[~res.mask])
            assert not np.array_equal(res.image[res.mask], r.image[res.mask])
        else:
            assert res.mask is None
    again = ed.edit_batch(reqs)
    other = ed.edit_batch(_requests(7)[:1])
    assert [o.image.tobytes() for o in out] == [o.image.tobytes() for o in again]
    assert out[0].image.tobytes() != other[0].image.tobytes()


def test_inpaint_families_refuse_moves_and_additions(tiny_edit_families):
    ed = DiffusersEditEditor({"model": str(tiny_edit_families["flux2-klein-inpaint"])})
    img = np.zeros((64, 64, 3), np.uint8)
    move = EditRequest("m", img, "move the cup left", "alteration_tracing", "move", 0, (3, 3, 9, 9))
    refusal = ed.supports(move)
    assert (
        isinstance(refusal, EditFailure)
        and refusal.reason == "unsupported_edit_type"
        and "Flux2KleinInpaintPipeline" in refusal.detail
    )
    assert (
        ed.supports(EditRequest("r", img, "remove the cup", "relational_erasure", "remove", 0, (3, 3, 9, 9))) is None
    )
    plain = DiffusersEditEditor({"model": str(tiny_edit_families["flux2-klein"])})
    assert plain.supports(move) is None


def test_the_class_is_read_from_model_index_or_named(tiny_edit_families, tmp_path):
    from editors.diffusers_edit import pipeline_name

    assert pipeline_name(str(tiny_edit_families["longcat-image-edit"]), "auto", "t") == "LongCatImageEditPipeline"
    assert pipeline_name("black-forest-labs/FLUX.1-Kontext-dev", "auto", "t") == "FluxKontextPipeline"
    assert pipeline_name(str(tmp_path), "Flux2KleinPipeline", "t") == "Flux2KleinPipeline"
    with pytest.raises(EditorError, match="set the `pipeline` param"):
        pipeline_name(str(tmp_path), "auto", "t")
    with pytest.raises(EditorError, match="StableDiffusionPipeline.*not an editing family"):
        pipeline_name(str(tmp_path), "StableDiffusionPipeline", "t")


def test_family_defaults_reach_the_call_and_params_override_them(tiny_edit_families):
    kontext = DiffusersEditEditor({"model": str(tiny_edit_families["flux-kontext"]), "process_area": AREA})
    kontext.ensure_loaded()
    req = _requests()[:1]
    kw = kontext._kwargs(req, (80, 48))
    assert (
        kw["num_inference_steps"] == 28
        and kw["guidance_scale"] == 3.5
        and kw["max_area"] == 80 * 48
        and kw["_auto_resize"] is False
    )
    assert "negative_prompt" not in kw and "true_cfg_scale" not in kw
    qwen = DiffusersEditEditor(
        {"model": str(tiny_edit_families["qwen-image-edit"]), "steps": 3, "true_cfg_scale": 2.0}
    )
    qwen.ensure_loaded()
    kw = qwen._kwargs(req, (80, 48))
    assert (
        kw["num_inference_steps"] == 3
        and kw["true_cfg_scale"] == 2.0
        and kw["negative_prompt"] == [" "]
        and "guidance_scale" not in kw
    )
    klein = DiffusersEditEditor({"model": str(tiny_edit_families["flux2-klein"])})
    klein.ensure_loaded()
    kw = klein._kwargs(req, (80, 64))
    assert kw["num_inference_steps"] == 4 and kw["guidance_scale"] == 1.0 and not isinstance(kw["generator"], list)


def test_lora_is_loaded_and_scaled(tiny_edit_families, tmp_path):
    """A LoRA on the FLUX.1 Kontext transformer (diffusers' format) changes the edit; at scale 0 it does not."""
    import torch
    from diffusers import FluxKontextPipeline, FluxTransformer2DModel
    from peft import LoraConfig, get_peft_model_state_dict

    folder = tiny_edit_families["flux-kontext"]
    transformer = FluxTransformer2DModel.from_pretrained(folder / "transformer")
    torch.manual_seed(0)
    transformer.add_adapter(
        LoraConfig(r=2, lora_alpha=2, target_modules=["to_q", "to_k", "to_v"], init_lora_weights=False)
    )
    FluxKontextPipeline.save_lora_weights(tmp_path, transformer_lora_layers=get_peft_model_state_dict(transformer))
    base = {"model": str(folder), "steps": 2, "process_area": AREA}
    reqs = _requests()[:1]
    plain = DiffusersEditEditor(base).edit_batch(reqs)[0].image
    with_lora = DiffusersEditEditor(base | {"lora": str(tmp_path)}).edit_batch(reqs)[0].image
    off = DiffusersEditEditor(base | {"lora": str(tmp_path), "lora_scale": 0.0}).edit_batch(reqs)[0].image
    assert not np.array_equal(plain, with_lora) and np.array_equal(plain, off)


def test_no_plan_is_fp8_and_cpu_refuses_quantization_and_offload(tiny_edit_families):
    import torch
    from pydantic import ValidationError

    from editors.diffusers_edit import DiffusersEditParams

    with pytest.raises(ValidationError):
        DiffusersEditParams(model="x/y", quantization="fp8")
    if torch.cuda.is_available():
        pytest.skip("checks the CPU-only refusals")
    model = str(tiny_edit_families["flux2-klein"])
    with pytest.raises(EditorError, match="quantization='int8' needs a CUDA device"):
        DiffusersEditEditor({"model": model, "quantization": "int8", "device": "cpu"}).ensure_loaded()
    with pytest.raises(EditorError, match="model_offload' needs a CUDA device"):
        DiffusersEditEditor({"model": model, "memory_plan": "model_offload", "device": "cpu"}).ensure_loaded()


# --------------------------------------------------------------------------- the edit stage and a build
PARAMS = {"steps": 2, "process_area": AREA, "batch_size": 2, "max_sequence_length": 32}


def _stage_run(root: Path, rows: list[dict], families: tuple[str, ...], folders: dict[str, Path]):
    from edit_helpers import write_instructions

    from flows.config import config_from_dict
    from storage.fs import RunFS
    from tasks.engine.base import RunContext
    from tasks.engine.runner import run_stage
    from tasks.stages.edit import EditStage

    write_instructions(root, rows)
    editors = [{"name": "diffusers-edit", "label": f, "params": {"model": str(folders[f])} | PARAMS} for f in families]
    ctx = RunContext(
        RunFS.open(str(root)),
        config_from_dict({"run": {"seed": 5, "shard_size": 4, "workers": 1}, "editors": editors}),
    )
    run_stage(EditStage(), ctx)
    return ctx


@pytest.fixture(scope="module")
def stage_rows(scene_objects, sample_dir) -> list[dict]:
    from edit_helpers import instruction_row

    objs = scene_objects[:3]
    return [
        instruction_row(objs[0], sample_dir, "remove", f"remove the {objs[0]['name']}", task="relational_erasure"),
        instruction_row(
            objs[1],
            sample_dir,
            "attribute",
            f"make the {objs[1]['name']} blue",
            task="counterfactual_attribute",
            new_attribute="blue",
        ),
        instruction_row(objs[2], sample_dir, "move", f"move the {objs[2]['name']} to the left"),
    ]


@pytest.fixture(scope="module")
def family_stage(tmp_path_factory, stage_rows, tiny_edit_families):
    return _stage_run(tmp_path_factory.mktemp("families"), stage_rows, tuple(sorted(CLASSES)), tiny_edit_families)


def test_every_family_through_the_edit_stage(family_stage, stage_rows):
    from storage.image_store import ImageStore
    from storage.stage_store import read_artifact

    edits = read_artifact(family_stage.run, "edit", "edits").to_pylist()
    rejects = read_artifact(family_stage.run, "edit", "rejects").to_pylist()
    done = Counter((r["instruction_id"], r["editor"]) for r in edits)
    done.update(
        (json.loads(r["payload_json"])["instruction_id"], json.loads(r["payload_json"])["editor"]) for r in rejects
    )
    assert done == Counter({(i["id"], f): 1 for i in stage_rows for f in CLASSES})
    inpaint = {f for f, c in CLASSES.items() if FAMILIES[c].mask}
    assert sorted((json.loads(r["payload_json"])["editor"], r["reason"]) for r in rejects) == sorted(
        (f, "unsupported_edit_type") for f in inpaint
    )
    images = ImageStore(family_stage.run)
    for r in edits:
        recorded = json.loads(r["editor_params_json"])
        assert recorded["name"] == "diffusers-edit" and recorded["params"]["process_area"] == AREA
        qc = json.loads(r["qc_json"])
        assert (
            r["status"] in ("ok", "auto_rejected")
            and {"change_inside", "psnr_outside"} <= set(qc["metrics"])
            and "verification" in qc
        )
        assert qc["editor_meta"]["pipeline"] == CLASSES[r["editor"]]
        edited, original = images.get_array(r["edited_image"]), images.get_array(r["original_image"])
        assert edited.shape == original.shape == (r["height"], r["width"], 3) and not np.array_equal(edited, original)


def test_the_stage_is_seeded_and_byte_identical_in_a_fresh_run(family_stage, stage_rows, tiny_edit_families, tmp_path):
    from storage.image_store import ImageStore
    from storage.stage_store import read_artifact

    pick = ("flux2-klein", "longcat-image-edit")
    other = _stage_run(tmp_path / "again", stage_rows, pick, tiny_edit_families)
    first = {r["id"]: r for r in read_artifact(family_stage.run, "edit", "edits").to_pylist() if r["editor"] in pick}
    second = {r["id"]: r for r in read_artifact(other.run, "edit", "edits").to_pylist()}
    assert first and first.keys() == second.keys()
    a, b = ImageStore(family_stage.run), ImageStore(other.run)
    for k, r in first.items():
        assert r["seed"] == second[k]["seed"] and a.get_bytes(r["edited_image"]) == b.get_bytes(
            second[k]["edited_image"]
        )


BUILD_FAMILIES = ("flux-kontext", "flux2-klein-inpaint")


@pytest.fixture(scope="module")
def family_build(tmp_path_factory, sample_dir, tiny_edit_families):
    """A small build of the sample (relational erasure, counterfactual attribute) with two
    families: mine, instruct, edit, qa, review."""
    import yaml

    from flows.config import CONFIG_DIR, config_from_dict
    from flows.runtime import run_pipeline
    from storage.fs import RunFS

    data = yaml.safe_load((CONFIG_DIR / "demo.yaml").read_text())
    data["sources"] = {"visual_genome": str(sample_dir / "visual_genome"), "fsc147": str(sample_dir / "fsc147")}
    data["mine"]["tasks"] = ["relational_erasure", "counterfactual_attribute"]
    data["mine"]["relational_erasure"].update(n_min=2, images_per_pair=1)
    data["mine"]["counterfactual_attribute"].update(n_min=2, images_per_attribute=1)
    data["run"]["workers"] = 1
    data["editors"] = [
        {"name": "diffusers-edit", "label": f, "params": {"model": str(tiny_edit_families[f])} | PARAMS}
        for f in BUILD_FAMILIES
    ]
    cfg = config_from_dict(data)
    root = tmp_path_factory.mktemp("family-build") / "run"
    run_pipeline(cfg, str(root), orchestrator="local")
    return RunFS.open(str(root)), cfg


def test_a_build_questions_the_edits_and_the_audit_finds_every_gold_answer_true(family_build, sample_dir):
    from storage.stage_store import read_artifact
    from tasks.tools.audit import run_audit

    run, _ = family_build
    edits = {r["id"]: r for r in read_artifact(run, "edit", "edits").to_pylist()}
    assert {r["editor"] for r in edits.values()} == set(BUILD_FAMILIES)
    asked = {q["edit_id"] for q in read_artifact(run, "qa", "questions").to_pylist()}
    assert {i for i, r in edits.items() if r["status"] == "ok"} <= asked  # every edit past auto-QC was questioned
    out = run_audit(run, sample_dir / "sample_truth.json")
    assert out["items"] > 0 and out["fraction"] == 1.0, json.dumps(out["per_task"], indent=1)[:3000]


def test_each_editor_declares_its_licence(family_build):
    from editors.registry import editor_licence

    _, cfg = family_build
    spec = {s.key: s for s in cfg.editors}
    kontext = editor_licence(spec["flux-kontext"].name, spec["flux-kontext"].params)
    assert (kontext.name, kontext.commercial_use, kontext.source) == ("other", False, "model card")
    inpaint = spec["flux2-klein-inpaint"]
    assert editor_licence(inpaint.name, inpaint.params).commercial_use is True
    assert editor_licence("no-such-editor").commercial_use is None  # the card and the report flag it
