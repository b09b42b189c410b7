"""The ``openai`` backend against a real HTTP server on 127.0.0.1 with scripted failures.

Covers 429, 500, a timeout, a non-retryable 400, a malformed HTTP body, a malformed answer
that is re-asked, answers that stay unparseable, "not applicable", bounded concurrency, the
response cache (a hit costs no request) and the API key staying out of everything written.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from dummy_server import DummyServer, Reply, image_urls, message_text
from mllm_helpers import re_candidate

from prompts.clients.base import MLLMRequest
from prompts.clients.factory import make_client
from prompts.clients.openai_client import Deadlines, OpenAIClient, RetryPolicy
from prompts.config import MLLMConfig
from storage.fs import RunFS
from tasks.engine.config import InstructConfig
from tasks.stages.instruct import instruct_candidates

VALID = "remove: {t}\nkeep: skateboard\ninstruction: Remove the {t} from the skateboard; preserve the skateboard deck and do not alter the background."
MALFORMED = "Well, looking at this picture I would probably take away the {t}, it seems the most natural choice."


def cfg(url: str, **kw: object) -> MLLMConfig:
    base = dict(
        backend="openai",
        model="dummy-vl",
        base_url=url,
        concurrency=8,
        timeout_s=0.5,
        max_retries=2,
        retry_base_s=0.01,
        retry_max_s=0.05,
        parse_retries=2,
        api_key_env="RB_TEST_KEY",
    )
    base.update(kw)
    return MLLMConfig(**base)


def test_scripted_failures_become_rows_and_rejects(
    scripted_server, image_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, script = scripted_server
    monkeypatch.setenv("RB_TEST_KEY", "sk-test-secret-123")
    ok = lambda t: Reply(VALID.format(t=t))  # noqa: E731
    script.plans = {
        "wheel": [Reply(status=429, text="slow down"), ok("wheel")],
        "mouse": [Reply(status=500), Reply(status=503), ok("mouse")],
        "saddle": [Reply(delay_s=1.0, text="too late"), ok("saddle")],
        "lid": [Reply(MALFORMED.format(t="lid")), ok("lid")],
        "pedal": [Reply(raw_body="{this is not json"), ok("pedal")],
        "leash": [Reply(status=500)],
        "strap": [Reply(status=400, text="bad request: unknown model")],
        "bolt": [Reply("remove: bolt\nkeep: skateboard\ninstruction: 把螺栓从滑板上移除，保持背景不变。")],
        "cap": [Reply("Current instance is not applicable.")],
    }
    img = str(image_dir / "scene.png")
    cands = {t: re_candidate(img, target_name=t, target_object_id=i) for i, t in enumerate(script.plans, start=10)}
    client = make_client(cfg(server.base_url), None)
    rows, rejects = instruct_candidates(client, list(cands.values()), cfg(server.base_url), InstructConfig())
    by_cand = {r["candidate_id"]: r for r in rows}
    status = {t: by_cand[c["id"]]["status"] for t, c in cands.items()}
    assert status == {
        "wheel": "applicable",
        "mouse": "applicable",
        "saddle": "applicable",
        "lid": "applicable",
        "pedal": "applicable",
        "leash": "failed",
        "strap": "failed",
        "bolt": "failed",
        "cap": "not_applicable",
    }
    # requests actually sent per item: retries on 429/5xx/timeout/malformed body; none on 400
    assert dict(script.calls) == {
        "wheel": 2,
        "mouse": 3,
        "saddle": 2,
        "lid": 2,
        "pedal": 2,
        "leash": 3,
        "strap": 1,
        "bolt": 3,
        "cap": 1,
    }
    reasons = {r["id"]: r["reason"] for r in rejects}
    assert reasons == {
        cands["leash"]["id"]: "llm_error",
        cands["strap"]["id"]: "llm_error",
        cands["bolt"]["id"]: "llm_unparseable",
    }
    bolt = next(r for r in rejects if r["id"] == cands["bolt"]["id"])
    payload = json.loads(bolt["payload_json"])
    assert "螺栓" in payload["raw"] and "English" in payload["error"]
    assert "500" in next(r for r in rejects if r["id"] == cands["leash"]["id"])["detail"]
    assert "400" in next(r for r in rejects if r["id"] == cands["strap"]["id"])["detail"]
    # the re-ask carries the conversation and the validation error
    second = script.bodies["lid"][1]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert second[1]["content"] == MALFORMED.format(t="lid")
    assert "could not be used" in second[2]["content"]
    # provenance and raw text on the rows
    lid = by_cand[cands["lid"]["id"]]
    assert (lid["prompt_name"], lid["prompt_version"], lid["backend"], lid["model_id"]) == (
        "re_instruction",
        "1",
        "openai",
        "dummy-vl",
    )
    assert lid["raw_response"] == VALID.format(t="lid")
    assert json.loads(lid["fields_json"])["remove"] == "lid"
    # images travel as base64 PNG data URLs; the key as a bearer token, and only there
    url = image_urls(script.bodies["wheel"][0])[0]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == Path(img).read_bytes()
    assert server.headers_seen[0]["Authorization"] == "Bearer sk-test-secret-123"
    assert all("sk-test-secret" not in json.dumps(r) for r in rows + rejects)


def test_cache_hit_costs_no_request_and_no_cache_bypasses(
    scripted_server, image_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, script = scripted_server
    monkeypatch.setenv("RB_TEST_KEY", "sk-never-on-disk-42")
    script.default = lambda body: Reply(VALID.format(t="wheel"))
    cache = RunFS.open(str(tmp_path / "run")).sub("cache", "mllm")
    cand = re_candidate(str(image_dir / "scene.jpg"))
    c = cfg(server.base_url)
    rows1, _ = instruct_candidates(make_client(c, cache), [cand], c, InstructConfig())
    assert len(server.requests) == 1
    rows2, _ = instruct_candidates(make_client(c, cache), [cand], c, InstructConfig())
    assert len(server.requests) == 1 and rows1 == rows2
    assert image_urls(server.requests[0])[0].startswith("data:image/jpeg;base64,")
    cached_files = list((tmp_path / "run" / "cache" / "mllm").rglob("*.json"))
    assert len(cached_files) == 1 and "wheel" in cached_files[0].read_text()
    instruct_candidates(make_client(c, cache, no_cache=True), [cand], c, InstructConfig())
    assert len(server.requests) == 2
    # another sampling parameter is another key
    c2 = cfg(server.base_url, temperature=0.7)
    instruct_candidates(make_client(c2, cache), [cand], c2, InstructConfig())
    assert len(server.requests) == 3
    assert server.headers_seen[0]["Authorization"] == "Bearer sk-never-on-disk-42"
    assert not [p for p in (tmp_path / "run").rglob("*") if p.is_file() and b"sk-never-on-disk" in p.read_bytes()]


@pytest.mark.parametrize("concurrency", [4, 12])  # 12: two connection pools share the bound
def test_concurrency_is_bounded_across_threads(concurrency: int) -> None:
    import threading

    server = DummyServer(lambda body: Reply("ok", delay_s=0.15))
    server.start()
    try:
        client = OpenAIClient(
            "m",
            base_url=server.base_url,
            concurrency=concurrency,
            deadlines=Deadlines(timeout_s=5),
            retry=RetryPolicy(0),
        )
        req = MLLMRequest("re_instruction", "1", [{"role": "user", "content": "hi"}])
        results: list[list] = []
        threads = [
            threading.Thread(target=lambda: results.append(client.complete([req] * concurrency))) for _ in range(2)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert server.max_inflight == concurrency and len(server.requests) == 2 * concurrency
        assert all(r.text == "ok" and r.error is None for batch in results for r in batch)
        client.close()
    finally:
        server.stop()


def test_missing_key_without_base_url_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RB_NO_SUCH_KEY", raising=False)
    with pytest.raises(ValueError, match="RB_NO_SUCH_KEY"):
        make_client(MLLMConfig(backend="openai", model="gpt-x", api_key_env="RB_NO_SUCH_KEY"), None)


def test_message_text_helper_reads_the_prompt() -> None:
    body = {
        "messages": [
            {
                "role": "user",
                "content": [{"type": "image_url", "image_url": {"url": "data:,"}}, {"type": "text", "text": "hello"}],
            }
        ]
    }
    assert message_text(body) == "hello"


def test_backoff_grows_with_jitter_and_cap() -> None:
    p = RetryPolicy(max_retries=5, base_s=1.0, max_s=10.0)
    delays = [p.delay(k) for k in range(6)]
    assert 0.5 <= delays[0] <= 1.5 and 1.0 <= delays[1] <= 3.0 and all(d <= 10.0 for d in delays)
    assert p.delay(0, retry_after=4.0) >= 4.0
