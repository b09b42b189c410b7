"""qwen-image-edit with tiny random-weight QwenImageEdit(Plus) pipelines loaded from a local folder."""

from __future__ import annotations

import numpy as np
import pytest

from editors.base import EditRequest, EditResult
from editors.qwen_image_edit import QwenImageEditEditor, working_size
from editors.weights import WeightsNotFound

AREA = 64 * 64


def _requests(seed: int = 0) -> list[EditRequest]:
    rng = np.random.default_rng(0)
    a = rng.integers(0, 255, (48, 64, 3), dtype=np.uint8)
    b = rng.integers(0, 255, (60, 45, 3), dtype=np.uint8)
    c = rng.integers(0, 255, (30, 40, 3), dtype=np.uint8)  # same aspect as a: batched with it
    return [
        EditRequest("a", a, "remove the red ball", "relational_erasure", "remove", seed, (5, 5, 10, 10)),
        EditRequest("b", b, "make the cup blue", "counterfactual_attribute", "attribute", seed + 1, (3, 3, 9, 9)),
        EditRequest("c", c, "move the chair left", "alteration_tracing", "move", seed + 2, (1, 1, 8, 8)),
    ]


@pytest.fixture(scope="module")
def edit_editor(tiny_qwen_edit):
    ed = QwenImageEditEditor(
        {"model": str(tiny_qwen_edit), "steps": 2, "process_area": AREA, "batch_size": 4, "true_cfg_scale": 2.0}
    )
    ed.ensure_loaded()
    return ed


def test_edit_pipeline_loads_from_a_local_folder_and_returns_source_sizes(edit_editor):
    assert edit_editor.kind == "edit" and type(edit_editor.pipe).__name__ == "QwenImageEditPipeline"
    reqs = _requests()
    out = edit_editor.edit_batch(reqs)
    for r, res in zip(reqs, out):
        assert isinstance(res, EditResult)
        assert res.image.shape == r.image.shape and res.image.dtype == np.uint8
        w, h = r.image.shape[1], r.image.shape[0]
        assert res.meta["working_size"] == list(working_size(w, h, AREA))
        assert res.meta["raw_size"] != [w, h]  # it really ran at the working size and came back
        assert not np.array_equal(res.image, r.image)


def test_same_seed_same_pixels_other_seed_other_pixels(edit_editor):
    first = edit_editor.edit_batch(_requests(0)[:1])[0]
    again = edit_editor.edit_batch(_requests(0)[:1])[0]
    other = edit_editor.edit_batch(_requests(7)[:1])[0]
    assert first.image.tobytes() == again.image.tobytes()
    assert first.image.tobytes() != other.image.tobytes()


def test_plus_pipeline_edits_one_prompt_per_call(tiny_qwen_edit_plus):
    ed = QwenImageEditEditor(
        {"model": str(tiny_qwen_edit_plus), "steps": 2, "process_area": AREA, "batch_size": 4, "true_cfg_scale": 1.0}
    )
    ed.ensure_loaded()
    assert ed.kind == "plus" and ed.max_batch == 1
    reqs = _requests()[:2]
    out = ed.edit_batch(reqs)
    assert [o.image.shape for o in out] == [r.image.shape for r in reqs]
    assert out[0].meta["pipeline"] == "plus"


def test_missing_local_weights_name_the_path(tmp_path):
    missing = tmp_path / "no-such-model"
    ed = QwenImageEditEditor({"model": str(missing)})
    with pytest.raises(WeightsNotFound, match="no-such-model"):
        ed.ensure_loaded()


def test_offline_hub_id_not_in_cache_says_how_to_get_it(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    ed = QwenImageEditEditor({"model": "Qwen/Qwen-Image-Edit-2511"})
    with pytest.raises(WeightsNotFound, match=r"Qwen/Qwen-Image-Edit-2511.*HF_HUB_OFFLINE.*hf download"):
        ed.ensure_loaded()


def test_lora_is_loaded_and_scaled(tiny_qwen_edit, tmp_path_factory):
    from tiny_checkpoints import build_qwen_lora

    lora = build_qwen_lora(tiny_qwen_edit, tmp_path_factory.mktemp("lora"))
    reqs = _requests()[:1]
    base = dict(model=str(tiny_qwen_edit), steps=2, process_area=AREA, true_cfg_scale=1.0)
    plain = QwenImageEditEditor(base).edit_batch(reqs)[0].image
    with_lora = QwenImageEditEditor(base | {"lora": str(lora)}).edit_batch(reqs)[0].image
    off = (
        QwenImageEditEditor(base | {"lora": str(lora / "pytorch_lora_weights.safetensors"), "lora_scale": 0.0})
        .edit_batch(reqs)[0]
        .image
    )
    assert not np.array_equal(plain, with_lora)
    assert np.array_equal(plain, off)


def test_cpu_offload_without_cuda_is_a_clear_error(tiny_qwen_edit):
    import torch

    if torch.cuda.is_available():
        pytest.skip("offload works on CUDA machines; this checks the CPU-only refusal")
    from editors.base import EditorError

    with pytest.raises(EditorError, match="cpu_offload='model' needs a CUDA device"):
        QwenImageEditEditor({"model": str(tiny_qwen_edit), "cpu_offload": "model"}).ensure_loaded()


@pytest.mark.parametrize("budget_spent", [True, False], ids=["spent", "left"])
def test_a_call_over_its_budget_stops_at_the_next_denoising_step(edit_editor, budget_spent: bool):
    """The abandoned call of an item over ``time_budget_s`` must not hold the GPU for its
    remaining steps: the pipeline's step callback checks the budget (editors/diffusion.py)."""
    from editors.budget import EditTimeout, set_deadline

    set_deadline(-1.0 if budget_spent else 600.0)
    try:
        if budget_spent:
            with pytest.raises(EditTimeout, match="denoising step 1"):
                edit_editor.edit_batch(_requests()[:1])
        else:
            assert isinstance(edit_editor.edit_batch(_requests()[:1])[0], EditResult)
    finally:
        set_deadline(None)
