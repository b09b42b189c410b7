"""``eval`` through the real ``openai`` backend against an OpenAI-compatible server on 127.0.0.1
that answers in messy prose, with an LLM judge that sometimes answers off-format."""

from __future__ import annotations

import pytest
from dummy_server import DummyServer, Reply, image_urls, message_text
from eval_helpers import write_run

from storage.parquet_io import ArtifactReader
from tasks.release.evaluate.run import EvalRequest, run_eval
from tasks.release.evaluate.schemas import ANSWERS


def responder(body):
    text = message_text(body)
    if "You grade answers" in text:
        if "what changed" in text.lower():
            return Reply(
                "Hmm, hard to say. It depends on how you look at it."
            )  # never parses: offline judge takes over
        return Reply("**Verdict:** no_hallucination\nfallback: false\nreason: matches the reference")
    if "name the mechanism" in text or "Tagged_Text" in text:
        return Reply("label: other\nrationale: n/a")
    cot = "Final answer:" in text
    if "Reply with the letter" in text or ("letter>" in text):
        return Reply("Let me compare each option carefully.\nFinal answer: **B**" if cot else "The answer is (B).")
    if "Yes or No" in text or "Final answer: Yes" in text:
        return Reply("Looking at the bun, I do not see it.\n\nFinal answer: No" if cot else "No, there isn't.")
    return Reply("Step by step: the spot is empty.\nFinal answer: nothing is there" if cot else "Nothing is there.")


def test_eval_with_openai_backend_and_llm_judge(tmp_path, eval_config, monkeypatch):
    monkeypatch.setenv("RB_EVAL_KEY", "sk-eval-secret")
    run = write_run(tmp_path / "r", verified=False)
    with DummyServer(responder) as url:
        cfg = eval_config.model_copy(
            update={
                "mllm": eval_config.mllm.model_copy(update={"api_key_env": "RB_EVAL_KEY", "parse_retries": 1}),
                "eval": eval_config.eval.model_copy(
                    update={"judge": "openai:judge-1", "judge_base_url": url, "spans": False}
                ),
            }
        )
        out = run_eval(run, cfg, EvalRequest("openai:dummy-vl", unverified=True, base_url=url))
    rows = ArtifactReader(run, f"{out.folder}/answers", ANSWERS).rows()
    assert out.folder == "eval/openai-dummy-vl-unverified"
    assert {r["backend"] for r in rows} == {"openai"} and {r["model_id"] for r in rows} == {"dummy-vl"}
    assert all(r["status"] == "ok" for r in rows)
    yn = [r for r in rows if r["qtype"] == "YN"]
    assert {r["parsed"] for r in yn} == {"No"}
    assert {r["parsed"] for r in rows if r["qtype"] == "MC"} == {"B"}
    judges = {(r["task"], r["judge"]) for r in rows if r["qtype"] == "SA"}
    assert ("relational_erasure", "llm") in judges
    assert ("alteration_tracing", "rules_fallback") in judges
    re_sa = next(r for r in rows if r["task"] == "relational_erasure" and r["qtype"] == "SA")
    assert re_sa["correct"] and re_sa["judge_model"] == "openai:judge-1"
    # the secret never reaches an artifact
    for path in run.walk_files(out.folder):
        assert b"sk-eval-secret" not in run.fs.cat_file(path)


def test_pair_questions_send_two_images(tmp_path, eval_config, monkeypatch):
    monkeypatch.setenv("RB_EVAL_KEY", "sk-eval-secret")
    run = write_run(tmp_path / "r", verified=False)
    server = DummyServer(responder)
    with server as url:
        cfg = eval_config.model_copy(
            update={
                "mllm": eval_config.mllm.model_copy(update={"api_key_env": "RB_EVAL_KEY"}),
                "eval": eval_config.eval.model_copy(
                    update={"modes": ("standard",), "subcauses": False, "spans": False}
                ),
            }
        )
        run_eval(run, cfg, EvalRequest("openai:dummy-vl", unverified=True, base_url=url, no_cache=True))
    answering = [b for b in server.requests if "You grade answers" not in message_text(b)]
    pairs = [b for b in answering if "Comparing the two pictures" in message_text(b)]
    singles = [b for b in answering if "Comparing the two pictures" not in message_text(b)]
    assert pairs and all(len(image_urls(b)) == 2 for b in pairs)
    assert singles and all(len(image_urls(b)) == 1 for b in singles)
    assert all(b.get("temperature") == pytest.approx(0.2) for b in answering)
