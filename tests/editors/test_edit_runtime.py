"""Batch running: failures isolated to their item, config errors stop the stage, weights resolution."""

from __future__ import annotations

import numpy as np
import pytest

from editors.base import EditFailure, Editor, EditorError, EditRequest, EditResult
from editors.runtime import is_out_of_memory, run_batch
from editors.weights import WeightsNotFound, resolve_model


def _req(i: int, text: str = "ok") -> EditRequest:
    return EditRequest(str(i), np.full((8, 8, 3), i, np.uint8), text, "t", "remove", i, (1, 1, 4, 4))


class Fragile(Editor):
    name = "test-fragile"
    batches: list[int] = []

    def edit_batch(self, requests):
        Fragile.batches.append(len(requests))
        if any(r.instruction == "bad" for r in requests):
            raise ValueError("cannot parse this one")
        if any(r.instruction == "config" for r in requests):
            raise EditorError("weights vanished")
        return [EditResult(r.image + 1) for r in requests]


def test_an_error_is_retried_item_by_item_so_only_the_culprit_fails():
    Fragile.batches.clear()
    out = run_batch(Fragile(), [_req(0), _req(1, "bad"), _req(2)])
    assert Fragile.batches == [3, 1, 1, 1]
    assert isinstance(out[0], EditResult) and isinstance(out[2], EditResult)
    assert isinstance(out[1], EditFailure) and out[1].reason == "editor_failed" and "cannot parse" in out[1].detail


def test_editor_errors_concern_every_item_and_propagate():
    with pytest.raises(EditorError, match="weights vanished"):
        run_batch(Fragile(), [_req(0, "config")])


def test_out_of_memory_is_recognised():
    import torch

    assert is_out_of_memory(torch.OutOfMemoryError("CUDA out of memory"))
    assert is_out_of_memory(RuntimeError("MPS backend out of memory"))
    assert is_out_of_memory(MemoryError())
    assert not is_out_of_memory(RuntimeError("shape mismatch"))


def test_offline_hub_id_resolves_from_the_local_cache(monkeypatch, tmp_path):
    hub = tmp_path / "hub"
    repo = hub / "models--acme--tiny-editor"
    snap = repo / "snapshots" / ("a" * 40)
    snap.mkdir(parents=True)
    (snap / "model_index.json").write_text("{}")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("a" * 40)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    import huggingface_hub.constants as c

    monkeypatch.setattr(c, "HF_HUB_CACHE", str(hub))
    monkeypatch.setattr(c, "HF_HUB_OFFLINE", True)
    assert resolve_model("acme/tiny-editor", "weights", "x") == str(snap)
    with pytest.raises(WeightsNotFound, match="acme/other.*hf download acme/other"):
        resolve_model("acme/other", "weights", "x")


def test_online_hub_ids_pass_through_and_bad_paths_fail(monkeypatch, tmp_path):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    assert resolve_model("acme/tiny-editor", "weights", "x") == "acme/tiny-editor"  # diffusers downloads it
    with pytest.raises(WeightsNotFound, match="local path"):
        resolve_model(str(tmp_path / "models" / "qwen"), "weights", "x")
