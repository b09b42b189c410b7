"""The model-server guards of the ``openai`` backend (issue 31.1), against a real HTTP server:
the check before work, the circuit breaker and the abort a stop signal triggers."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from dummy_server import DummyServer, Reply

from prompts.clients.base import MLLMRequest
from prompts.clients.endpoint import (
    CallsAborted,
    CircuitBreaker,
    EndpointDown,
    EndpointFailing,
    abort_model_calls,
    probe_endpoint,
)
from prompts.clients.openai_client import OpenAIClient
from prompts.config import MLLMConfig


def _cfg(url: str, **kw) -> MLLMConfig:
    return MLLMConfig(backend="openai", model="m", base_url=url, **kw)


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _req(text: str = "hello") -> MLLMRequest:
    return MLLMRequest("p", "1", [{"role": "user", "content": text}])


def test_a_closed_port_is_refused_in_one_line_naming_the_url() -> None:
    url = closed_port_url()
    started = time.monotonic()
    with pytest.raises(EndpointDown) as err:
        probe_endpoint(_cfg(url))
    assert time.monotonic() - started < 5
    assert str(err.value).startswith(f"model server {url} (model 'm'): cannot connect") and "\n" not in str(err.value)


def test_a_model_the_server_does_not_list_is_named_with_what_it_lists() -> None:
    with DummyServer(lambda b: Reply("x"), models=["qwen-7b", "llava"]) as url:
        with pytest.raises(
            EndpointDown, match=r"does not serve this model \(its /models lists 'qwen-7b', 'llava'\); fix mllm.model"
        ):
            probe_endpoint(_cfg(url))
        probe_endpoint(_cfg(url).model_copy(update={"model": "llava"}))  # listed: passes


def test_a_server_without_a_model_list_is_judged_by_its_answer() -> None:
    with DummyServer(lambda b: Reply("x")) as url:  # no /v1/models route (404)
        probe_endpoint(_cfg(url))
    with DummyServer(lambda b: Reply("x"), probe_reply=Reply(status=503, text="model is loading")) as url:
        with pytest.raises(EndpointDown, match=r"a one-token test request failed: HTTP 503: .*model is loading"):
            probe_endpoint(_cfg(url))
    with DummyServer(lambda b: Reply("x"), probe_reply=Reply(raw_body="<html>proxy login</html>")) as url:
        with pytest.raises(EndpointDown, match="not a chat completion"):
            probe_endpoint(_cfg(url))


def test_a_refused_key_names_the_variable_it_came_from(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RB_PROBE_KEY", "sk-wrong")
    with DummyServer(lambda b: Reply("x"), probe_reply=Reply(status=401, text="invalid key")) as url:
        with pytest.raises(EndpointDown, match=r"HTTP 401") as err:
            probe_endpoint(_cfg(url, api_key_env="RB_PROBE_KEY"))
    assert "sk-wrong" not in str(err.value)


def test_an_answer_slower_than_the_probe_timeout_stops_the_check() -> None:
    with DummyServer(lambda b: Reply("x"), probe_reply=Reply("late", delay_s=5)) as url:
        started = time.monotonic()
        with pytest.raises(EndpointDown, match=r"no answer within 0.5 s \(mllm.probe_timeout_s\)"):
            probe_endpoint(_cfg(url, probe_timeout_s=0.5))
        assert time.monotonic() - started < 3


def test_the_breaker_counts_against_the_whole_window() -> None:
    b = CircuitBreaker(window=10, failure_rate=0.2)  # trips on the 3rd failure among the last 10 calls
    assert not b.record("e1") and not b.record("e2")  # 2 of 2 failed: not yet (2 is not more than 2)
    for _ in range(8):
        assert not b.record(None)
    assert not b.record("e3")  # e1 has left the window: still 2 failures among the last 10
    assert not b.record("e4")  # e2 has left it too
    assert b.record("e5")  # a success has left it: 3 failures among the last 10
    b2 = CircuitBreaker(window=10, failure_rate=0.2)
    assert [b2.record(e) for e in ["x", None, "y", None, "z"]] == [False, False, False, False, True]
    assert (
        "3 of the last 5 requests failed, more than the 2 of 10 allowed" in b2.describe()
        and "last error: z" in b2.describe()
    )
    never = CircuitBreaker(window=4, failure_rate=1.0)
    assert not any(never.record("e") for _ in range(20))


def test_a_tripped_breaker_stops_the_calls_in_flight_and_refuses_new_ones() -> None:
    """Every second call fails; the third failure among the last 10 trips the breaker: the batch
    raises EndpointFailing instead of returning rows of errors, and so does every later batch,
    without a request sent; a slow call in another thread's batch is cut too."""
    count = {"n": 0}
    lock = threading.Lock()

    def responder(body: dict) -> Reply:
        if "slow" in str(body):
            return Reply("late", delay_s=30)
        with lock:
            count["n"] += 1
            n = count["n"]
        return Reply("ok") if n % 2 else Reply(status=500, text="boom")

    with DummyServer(responder) as url:
        client = OpenAIClient.from_config(
            _cfg(url, max_retries=0, concurrency=4, breaker_window=10, breaker_failure_rate=0.2)
        )
        slow: dict = {}

        def ask_slow() -> None:
            try:
                client.complete([_req("slow")])
            except EndpointFailing as exc:
                slow["err"] = exc
                slow["at"] = time.monotonic()

        t = threading.Thread(target=ask_slow)
        t.start()
        time.sleep(0.3)
        batches = 0
        with pytest.raises(EndpointFailing) as err:
            for _ in range(5):
                batches += 1
                client.complete([_req(), _req()])  # one of the two fails
        assert batches == 3
        tripped = time.monotonic()
        t.join(10)
        assert slow and slow["at"] - tripped < 2, "the slow call was not cut when the breaker tripped"
        sent = client.requests_sent
        with pytest.raises(EndpointFailing):
            client.complete([_req()])
        assert client.requests_sent == sent and client.stopped
        client.close()
    assert str(err.value).startswith(f"model server {url} (model 'm'): 3 of the last")


def test_abort_cuts_a_slow_call_at_once() -> None:
    with DummyServer(lambda b: Reply("late", delay_s=30)) as url:
        client = OpenAIClient.from_config(_cfg(url, max_retries=0))
        got: dict = {}

        def ask() -> None:
            started = time.monotonic()
            try:
                client.complete([_req()])
            except CallsAborted as exc:
                got["err"], got["s"] = exc, time.monotonic() - started

        t = threading.Thread(target=ask)
        t.start()
        time.sleep(0.5)
        abort_model_calls("stopped by SIGINT")
        t.join(5)
        client.close()
    assert got and got["s"] < 2 and "SIGINT" in str(got["err"])
