"""The ``transformers`` backend on a tiny random Qwen2.5-VL saved to disk and loaded back through
``from_pretrained(folder)``, the path a real checkpoint takes. Random weights decode to
garbage, so the tests check shapes of the flow (one answer per request, batching, the
prompt runner's unparseable path, rows and rejects), never the generated words."""

from __future__ import annotations

from pathlib import Path

import pytest
from mllm_helpers import png_bytes, re_candidate
from tiny_qwen import build_tiny_qwen25_vl

from prompts.clients.base import MLLMRequest
from prompts.clients.factory import make_client
from prompts.config import MLLMConfig
from tasks.engine.config import InstructConfig
from tasks.stages.instruct import instruct_candidates


@pytest.fixture(scope="session")
def tiny_qwen_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_qwen25_vl(tmp_path_factory.mktemp("tiny-qwen25-vl"))


@pytest.fixture(scope="session")
def tiny_client(tiny_qwen_dir: Path):
    return make_client(MLLMConfig(backend="transformers", model=str(tiny_qwen_dir), batch_size=2, max_tokens=6), None)


def test_batched_generation_one_answer_per_request(tiny_client) -> None:
    assert type(tiny_client.model).__name__ == "Qwen2_5_VLForConditionalGeneration"
    reqs = [
        MLLMRequest(
            "re_instruction",
            "1",
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "image", "data": png_bytes(i, (40 + 8 * i, 32)), "mime": "image/png"},
                        {"type": "text", "text": f"describe {i}"},
                    ],
                }
            ],
            max_tokens=5,
        )
        for i in range(3)
    ]
    reqs.append(MLLMRequest("re_instruction", "1", [{"role": "user", "content": "text only"}], max_tokens=5))
    out = tiny_client.complete(reqs)
    assert len(out) == 4
    assert all(r.error is None and r.backend == "transformers" and r.model_id == tiny_client.model_id for r in out)
    assert all(isinstance(r.text, str) for r in out)
    # deterministic (greedy): the same request gives the same text, alone or in a batch
    assert tiny_client.complete(reqs[:1])[0].text == out[0].text


def test_garbage_answers_go_through_reask_to_llm_unparseable(tiny_client, image_dir: Path) -> None:
    cand = re_candidate(str(image_dir / "scene.png"))
    cfg = MLLMConfig(backend="transformers", model=tiny_client.model_id, parse_retries=1, max_tokens=6)
    rows, rejects = instruct_candidates(tiny_client, [cand], cfg, InstructConfig())
    assert [r["status"] for r in rows] == ["failed"]
    assert rows[0]["backend"] == "transformers" and rows[0]["prompt_name"] == "re_instruction"
    assert [r["reason"] for r in rejects] == ["llm_unparseable"] and "2 attempt(s)" in rejects[0]["detail"]


def test_missing_checkpoint_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="no-model-here"):
        make_client(MLLMConfig(backend="transformers", model=str(tmp_path / "no-model-here")), None)


def test_out_of_memory_halves_the_batch_then_fails_only_the_item(tiny_qwen_dir: Path) -> None:
    """The real tiny model behind a memory budget: batches above one request 'run out of memory'."""
    import torch

    from prompts.clients.transformers_client import TransformersClient

    class OneAtATime(TransformersClient):
        calls: list[int] = []

        def _generate(self, batch):
            type(self).calls.append(len(batch))
            if len(batch) > 1 or "huge" in str(batch[0].messages):
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
            return super()._generate(batch)

    client = OneAtATime(str(tiny_qwen_dir), batch_size=4)
    reqs = [
        MLLMRequest("re_instruction", "1", [{"role": "user", "content": t}], max_tokens=4)
        for t in ("a", "b", "huge", "c")
    ]
    out = client.complete(reqs)
    assert OneAtATime.calls == [4, 2, 1, 1, 2, 1, 1]
    assert [r.error is None for r in out] == [True, True, False, True]
    assert out[2].error.startswith("out of memory even alone: OutOfMemoryError")
