"""A model server that is down or failing stops the work in seconds, with one line naming it.

Without this, a dead endpoint looked like a successful build: every call failed after its
retries, each failure became an ``llm_error`` reject, and the command exited 0 minutes later.
Three guards, shared by every command that talks to a server (the ``openai`` backend):

* :func:`probe_endpoint` checks the server before any work: it answers, it lists the model
  (when it offers ``/v1/models``), and one one-token request comes back. A failure is an
  :class:`EndpointDown`;
* :class:`CircuitBreaker` watches the requests while a stage runs (retried ones too); once more
  than the configured share of the last requests failed, or none was answered for
  ``mllm.stall_s`` while some were in flight (the client's stall watch), the client stops (:class:`EndpointFailing`): calls in flight are
  cancelled and new ones refused, so the stage's running shards fail without a marker (they
  are recomputed on resume) and the runner stops the stage;
* :func:`abort_model_calls` cuts the calls in flight when the process is told to stop (Ctrl-C,
  SIGTERM): a shard waiting on a slow or dead server is abandoned at once instead of holding the
  command for minutes (:class:`CallsAborted`).

None of these errors is worth a shard retry (``retryable = False``, read by
``tasks.engine.retries``).
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # httpx is imported where a server is checked
    import httpx

    from prompts.config import MLLMConfig

DEFAULT_URL = "https://api.openai.com/v1"  # the SDK's default when mllm.base_url is unset
PROBE_HEADER = "X-Reactbench-Probe"  # marks the check's requests, for whoever reads the server's logs


class EndpointError(RuntimeError):
    """A model server cannot be used; the message is one line naming its URL and what failed."""

    retryable = False  # another attempt of the shard would meet the same server

    def __init__(self, url: str, model: str, problem: str):
        self.url, self.model, self.problem = url, model, problem
        super().__init__(f"model server {url} (model {model!r}): {problem}")

    def again(self) -> EndpointError:
        """A fresh copy to raise in another thread (one exception object must not be raised
        concurrently: each raise rewrites its traceback)."""
        return type(self)(self.url, self.model, self.problem)


class EndpointDown(EndpointError):
    """The check before the work failed: nothing was asked of the server."""


class EndpointFailing(EndpointError):
    """The circuit breaker tripped while a stage ran."""


class CallsAborted(RuntimeError):
    """The process is stopping (a signal): calls in flight were abandoned."""

    retryable = False


def endpoint_url(base_url: str | None) -> str:
    return (base_url or DEFAULT_URL).rstrip("/")


def resolve_api_key(env_name: str, base_url: str | None) -> str:
    """The key from the environment; a local server without auth gets a placeholder."""
    key = os.environ.get(env_name)
    if key:
        return key
    if base_url:
        return "EMPTY"  # vLLM / SGLang accept any key unless started with --api-key
    raise ValueError(
        f"mllm.backend 'openai' without mllm.base_url talks to api.openai.com and needs an API key: "
        f"set the environment variable {env_name} (the name is configurable as mllm.api_key_env)"
    )


class CircuitBreaker:
    """Trips when more than ``failure_rate`` x ``window`` of the last ``window`` requests failed.

    The client records every request, a failed attempt that is then retried too: retries must
    not hide a server that fails every second request. Counting against the whole window (not
    the requests seen so far) means a few early failures cannot trip it: with the defaults
    (50, 0.2) it takes 11 failures among the last 50 requests.
    """

    def __init__(self, window: int = 50, failure_rate: float = 0.2):
        self.window = max(1, int(window))
        self.limit = failure_rate * self.window
        self._calls: deque[bool] = deque(maxlen=self.window)  # True: failed
        self._failed = 0
        self._lock = threading.Lock()
        self.last_error: str | None = None

    def record(self, error: str | None) -> bool:
        """Count one finished request (``error`` None: it was answered); True when this one trips it."""
        with self._lock:
            if len(self._calls) == self.window:
                self._failed -= self._calls[0]
            self._calls.append(error is not None)
            self._failed += error is not None
            if error is not None:
                self.last_error = error
            return error is not None and self._failed > self.limit

    def describe(self) -> str:
        with self._lock:
            n, failed = len(self._calls), self._failed
        return (
            f"{failed} of the last {n} requests failed, more than the {self.limit:g} of {self.window} allowed "
            f"(mllm.breaker_failure_rate x mllm.breaker_window); last error: {self.last_error}"
        )


# -- stopping every client of the process --------------------------------------------------
class Abortable(Protocol):
    def abort(self, reason: str) -> None: ...


_LIVE: weakref.WeakSet[Abortable] = weakref.WeakSet()


def track(client: Abortable) -> None:
    """Register a client whose calls :func:`abort_model_calls` must be able to cut."""
    _LIVE.add(client)


def abort_model_calls(reason: str) -> None:
    """Abandon every call in flight in this process (called on the first stop signal): the
    shards waiting on them fail at once and are recomputed on resume."""
    for client in list(_LIVE):
        client.abort(reason)


# -- the check before work ------------------------------------------------------------------
def probe_endpoint(cfg: MLLMConfig) -> None:
    """Check the server of an ``MLLMConfig`` (``openai`` backend); raise :class:`EndpointDown`.

    Three steps, each bounded by ``mllm.connect_timeout_s`` to connect and ``mllm.probe_timeout_s``
    to answer: ``GET /models`` (a server that does not offer the list is not refused for it), the
    model among the listed ids, and a one-token chat completion that must come back as one.
    """
    import httpx

    url = endpoint_url(cfg.base_url)
    key = resolve_api_key(cfg.api_key_env, cfg.base_url)

    def down(problem: str) -> EndpointDown:
        return EndpointDown(url, cfg.model, problem)

    timeout = httpx.Timeout(cfg.probe_timeout_s, connect=min(cfg.connect_timeout_s, cfg.probe_timeout_s))
    headers = {"Authorization": f"Bearer {key}", PROBE_HEADER: "1"}
    with httpx.Client(timeout=timeout, headers=headers, follow_redirects=True) as http:
        listed = _request(http, "GET", f"{url}/models", down, cfg)
        if listed.status_code in (401, 403):
            raise down(f"refused the API key from ${cfg.api_key_env} (HTTP {listed.status_code})")
        if listed.status_code == 200:
            ids = _model_ids(listed)
            if ids is not None and cfg.model not in ids:
                shown = (
                    ", ".join(repr(i) for i in ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
                    if ids
                    else "no model"
                )
                raise down(f"does not serve this model (its /models lists {shown}); fix mllm.model or --model")
        body = {
            "model": cfg.model,
            "messages": [{"role": "user", "content": "Reply with one word: ready"}],
            "max_tokens": 1,
            "temperature": 0,
        }
        answer = _request(http, "POST", f"{url}/chat/completions", down, cfg, json=body)
        if answer.status_code != 200:
            raise down(f"a one-token test request failed: HTTP {answer.status_code}: {one_line(answer.text)}")
        try:
            ok = isinstance(answer.json().get("choices"), list)
        except ValueError:
            ok = False
        if not ok:
            raise down(
                f"answered a one-token test request with something that is not a chat completion: {one_line(answer.text)}"
            )


def _request(
    http: httpx.Client,
    method: str,
    url: str,
    down: Callable[[str], EndpointDown],
    cfg: MLLMConfig,
    json: dict[str, object] | None = None,
) -> httpx.Response:
    import httpx

    try:
        return http.request(method, url, json=json)
    except httpx.ConnectTimeout:
        raise down(
            f"no connection within {cfg.connect_timeout_s:g} s (mllm.connect_timeout_s); is the host up and the port open?"
        ) from None
    except httpx.TimeoutException:
        raise down(
            f"{method} {url.rsplit('/', 1)[-1]}: no answer within {cfg.probe_timeout_s:g} s (mllm.probe_timeout_s)"
        ) from None
    except httpx.HTTPError as exc:
        raise down(
            f"cannot connect ({one_line(str(exc)) or type(exc).__name__}); start the server or fix mllm.base_url / --base-url"
        ) from None


def _model_ids(resp: httpx.Response) -> list[str] | None:
    """The ids of an OpenAI-style model list, or None when the body is not one."""
    try:
        data = resp.json().get("data")
    except (ValueError, AttributeError):
        return None
    if not isinstance(data, list):
        return None
    return [str(m.get("id")) for m in data if isinstance(m, dict) and m.get("id") is not None]


def one_line(text: str, n: int = 200) -> str:
    """``text`` on one line, cut to ``n`` characters (server bodies go into one-line messages)."""
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 3] + "..."
