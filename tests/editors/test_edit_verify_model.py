"""Model checks of edits: yes/no questions on the original and the edited image, asked through the
real ``openai`` backend against the loopback OpenAI-compatible server, and through the tiny
random Qwen2.5-VL with the ``transformers`` backend."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from dummy_server import DummyServer, Reply, image_urls, message_text
from edit_helpers import instruction_row, write_instructions

from flows.config import config_from_dict
from storage.fs import RunFS
from storage.stage_store import read_artifact
from tasks.engine.base import RunContext
from tasks.engine.runner import run_stage
from tasks.stages.edit import EditStage
from tasks.stages.qa.unverified import verify_reject


def _responder(original: bytes, truthful: bool):
    """Answers "is there ...?" yes on the original image; on the edited one no (truthful) or yes (lying)."""

    def reply(body: dict[str, Any]) -> Reply:
        assert "Is there" in message_text(body)
        data = base64.b64decode(image_urls(body)[0].split(",", 1)[1])
        on_original = data == original
        return Reply(text="answer: yes" if (on_original or not truthful) else "answer: no")

    return reply


def _run(tmp_path: Path, row: dict[str, Any], mllm: dict[str, Any]) -> tuple[list[dict], list[dict]]:
    write_instructions(tmp_path, [row])
    cfg = config_from_dict(
        {"run": {"seed": 1, "shard_size": 4, "workers": 1}, "editors": [{"name": "classical"}], "mllm": mllm}
    )
    ctx = RunContext(RunFS.open(str(tmp_path)), cfg)
    run_stage(EditStage(), ctx)
    edits = read_artifact(ctx.run, "edit", "edits").to_pylist()
    rejects = read_artifact(ctx.run, "edit", "rejects").to_pylist()
    return edits, rejects


@pytest.mark.parametrize("truthful", [True, False], ids=["truthful-model", "model-sees-the-object"])
def test_openai_model_check_accepts_or_rejects_a_removal(tmp_path, scene_objects, sample_dir, monkeypatch, truthful):
    monkeypatch.setenv("RB_TEST_KEY", "k")
    obj = scene_objects[0]
    row = instruction_row(obj, sample_dir, "remove", f"remove the {obj['name']}", task="relational_erasure")
    original = Path(obj["path"]).read_bytes()
    server = DummyServer(_responder(original, truthful))
    with server as url:
        edits, rejects = _run(
            tmp_path,
            row,
            {
                "backend": "openai",
                "model": "dummy-vl",
                "base_url": url,
                "api_key_env": "RB_TEST_KEY",
                "max_retries": 0,
                "timeout_s": 5,
            },
        )
        assert len(server.requests) == 2  # one question, on the original and on the edited image
    (edit,) = edits
    verdict = json.loads(edit["qc_json"])["verification"]
    assert verdict["method"] == "pixels+model"
    assert verdict["checks"]["model"]["expected"] == ["yes", "no"]
    assert not rejects  # edit/rejects hold only requests that yielded no edit
    if truthful:
        assert verdict["passed"] and edit["status"] == "ok" and verify_reject(edit) is None
    else:
        assert not verdict["passed"] and edit["status"] == "auto_rejected"
        failed = verify_reject(edit)  # what the qa stage records when it passes over the edit
        assert failed["reason"] == "verify_failed" and failed["stage"] == "qa" and "model check" in failed["detail"]


def test_rules_backend_asks_no_model(tmp_path, scene_objects, sample_dir):
    obj = scene_objects[0]
    row = instruction_row(obj, sample_dir, "remove", f"remove the {obj['name']}", task="relational_erasure")
    edits, _ = _run(tmp_path, row, {"backend": "rules", "model": "rules-v1"})
    assert json.loads(edits[0]["qc_json"])["verification"]["method"] == "pixels"


def test_tiny_qwen_model_check_records_its_verdict(tmp_path, scene_objects, sample_dir):
    pytest.importorskip("transformers")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "prompts"))
    from tiny_qwen import build_tiny_qwen25_vl

    model = build_tiny_qwen25_vl(tmp_path / "tiny-qwen")
    obj = scene_objects[0]
    row = instruction_row(obj, sample_dir, "remove", f"remove the {obj['name']}", task="relational_erasure")
    edits, rejects = _run(
        tmp_path / "run",
        row,
        {"backend": "transformers", "model": str(model), "batch_size": 2, "max_tokens": 6, "parse_retries": 0},
    )
    verdict = json.loads(edits[0]["qc_json"])["verification"]
    model_check = verdict["checks"]["model"]
    assert model_check["question"].startswith("Is there") and len(model_check["answers"]) == 2
    # random weights give no readable yes/no: the edit is not passed on an unchecked claim
    if None in model_check["answers"]:
        assert (
            not verdict["passed"]
            and edits[0]["status"] == "auto_rejected"
            and verify_reject(edits[0])["reason"] == "verify_failed"
        )
