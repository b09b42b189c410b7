"""Issue 42.1-2 at the client: the call budget, the stall watch, retried failures counted by the
breaker, and the counts per server, against a real HTTP server on 127.0.0.1. The same faults
through the real ``reactbench`` with the default settings: tests/faults/test_fault_endpoints.py."""

from __future__ import annotations

import threading
import time

import pytest
from dummy_server import DummyServer, Reply

from prompts.clients import call_stats
from prompts.clients.base import MLLMRequest
from prompts.clients.endpoint import EndpointFailing
from prompts.clients.openai_client import OpenAIClient
from prompts.config import MLLMConfig


def _client(url: str, **kw) -> OpenAIClient:
    return OpenAIClient.from_config(MLLMConfig(backend="openai", model="m", base_url=url, **kw))


def _req(text: str = "hello") -> MLLMRequest:
    return MLLMRequest("p", "1", [{"role": "user", "content": text}])


def test_the_stall_watch_stops_a_client_whose_server_answers_nothing() -> None:
    """Requests in flight and no answer for ``stall_s``: the client stops naming the server,
    although each request's own timeout (120 s) and retries are far from spent."""
    with DummyServer(lambda b: Reply("late", delay_s=60)) as url:
        client = _client(url, stall_s=1.0)
        client._ensure_loop()  # the SDK loaded: its import takes seconds on a busy machine
        started = time.monotonic()
        with pytest.raises(EndpointFailing) as err:
            client.complete([_req(), _req()])
        took = time.monotonic() - started
        client.close()
    assert 0.9 < took < 4, took
    assert str(err.value).startswith(f"model server {url} (model 'm'): answered none of the 2 requests in flight")
    assert "mllm.stall_s 1" in str(err.value) and client.stopped


def test_the_stall_limit_grows_with_the_slowest_answer() -> None:
    """A server that took 5 s for an answer before may be quiet for 10 s before it is called stalled."""
    client = _client("http://127.0.0.1:9/v1", stall_s=3.0)
    assert client.stall_limit == 3.0
    client._answered(time.monotonic() - 5.0)
    assert 9.9 < client.stall_limit < 10.5


def test_a_call_never_outlives_its_budget_whatever_its_retries() -> None:
    """Every attempt times out; six attempts of 2 s each would take 12 s and more: the budget
    of 1.5 s ends the call, which comes back as an error saying so."""
    with DummyServer(lambda b: Reply("late", delay_s=30)) as url:
        client = _client(url, timeout_s=2, max_retries=5, retry_base_s=0, call_budget_s=1.5, stall_s=0)
        client._ensure_loop()
        started = time.monotonic()
        (resp,) = client.complete([_req()])
        took = time.monotonic() - started
        client.close()
    assert took < 3, took
    assert resp.error and "mllm.call_budget_s" in resp.error and "timeout" in resp.error, resp.error


def test_retried_failures_trip_the_breaker_and_429s_do_not() -> None:
    """Every second request fails with HTTP 500: each call succeeds on its retry, yet the
    failures count, and the breaker stops the client. Every second request answered 429 (slow
    down) and then retried is not held against the server: the calls come back."""
    count = {"n": 0}
    lock = threading.Lock()
    status = {"code": 500}

    def responder(body: dict) -> Reply:
        with lock:
            count["n"] += 1
            n = count["n"]
        return Reply(status=status["code"], text="busy") if n % 2 == 0 else Reply("ok")

    with DummyServer(responder) as url:
        failing = _client(url, retry_base_s=0, breaker_window=10, breaker_failure_rate=0.2)
        with pytest.raises(EndpointFailing, match=r"3 of the last \d+ requests failed"):
            for _ in range(10):
                failing.complete([_req()])
        failing.close()
        status["code"] = 429
        throttled = _client(url, retry_base_s=0, breaker_window=10)
        assert [r.text for r in throttled.complete([_req() for _ in range(6)])] == ["ok"] * 6
        throttled.close()


def test_the_counts_per_server_give_requests_failures_and_retries() -> None:
    n = {"i": 0}

    def responder(body: dict) -> Reply:
        n["i"] += 1
        return Reply(status=503, text="x") if n["i"] == 2 else Reply("ok")

    with DummyServer(responder) as url:
        before = call_stats.snapshot()
        client = _client(url, retry_base_s=0, concurrency=1, max_error_rate=0.1)
        assert [r.text for r in client.complete([_req(), _req(), _req()])] == ["ok"] * 3
        client.close()
        (calls,) = call_stats.since(before)
    assert calls == {
        "url": url,
        "model": "m",
        "calls": 3,
        "requests": 4,
        "failed_requests": 1,
        "retried": 1,
        "answered_after_retry": 1,
        "failed_calls": 0,
        "error_rate": 0.25,
    }
    lines, over = call_stats.retry_report()
    (line,) = [ln for ln in lines if url in ln]
    assert over and "1 of 4 requests failed (25.0 %)" in line and "more than mllm.max_error_rate 0.1" in line, line
    call_stats.reset()
