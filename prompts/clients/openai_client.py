"""The ``openai`` backend: any OpenAI-compatible chat-completions server (vLLM, SGLang, OpenAI, ...).

Requests run on one private asyncio loop in a background thread, behind one pool of
``concurrency`` slot tokens, so the configured concurrency bounds the whole process even
when several shards call ``complete`` from different threads. Transient failures (429, 5xx, timeouts, dropped
connections) are retried with exponential backoff and jitter; what still fails comes back as
an ``MLLMResponse`` with ``error`` set. The API key is read from the environment variable the
config names and is never stored, logged or cached.

Every request is counted by the client's circuit breaker (``prompts.clients.endpoint``), a
failed attempt that is then retried as much as one that is not (a 429 asking to slow down
excepted): once too many of the last requests failed, the client stops (calls in flight are
cancelled, new ones refused) and ``complete`` raises ``EndpointFailing``. Two deadlines need no
tuning: a call gets ``call_budget_s`` for all its attempts and backoff together, and a stall
watch stops the client when requests are in flight and the server has answered none of them
for ``stall_s`` (a server that accepts connections and then never answers). Counts per server
go to ``prompts.clients.call_stats`` for the manifests and the command's last line.
:meth:`OpenAIClient.abort` (a stop signal) stops the client with ``CallsAborted``.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import random
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prompts.clients import call_stats
from prompts.clients.base import ChatMessage, MLLMRequest, MLLMResponse
from prompts.clients.endpoint import (
    CallsAborted,
    CircuitBreaker,
    EndpointError,
    EndpointFailing,
    endpoint_url,
    one_line,
    resolve_api_key,
    track,
)
from prompts.config import MLLMConfig

if TYPE_CHECKING:
    import openai

RETRY_STATUS = {408, 409, 425, 429}
POOL_CONNECTIONS = 8  # connections per HTTP pool (see _setup)


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 5
    base_s: float = 1.0
    max_s: float = 30.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Exponential backoff with jitter (0.5x-1.5x), at least the server's Retry-After, capped."""
        d = min(self.max_s, self.base_s * (2**attempt)) * (0.5 + random.random())
        if retry_after is not None:
            d = max(d, retry_after)
        return min(d, self.max_s)


@dataclass(frozen=True)
class Deadlines:
    """How long the client waits: one HTTP request (``timeout_s``) and its connection
    (``connect_timeout_s``, at most ``timeout_s``), one call with all its attempts and backoff
    (``call_budget_s``), and a server that answers none of the requests in flight (``stall_s``;
    0: no stall watch)."""

    timeout_s: float = 120.0
    connect_timeout_s: float = 10.0
    call_budget_s: float = 300.0
    stall_s: float = 30.0


def to_openai_messages(messages: list[ChatMessage]) -> list[dict[str, object]]:
    """Our messages (images as bytes) -> OpenAI chat messages (images as base64 data URLs)."""
    out = []
    for m in messages:
        content = m["content"]
        if isinstance(content, list):
            parts = []
            for p in content:
                if p.get("type") == "image":
                    b64 = base64.b64encode(p["data"]).decode("ascii")
                    parts.append(
                        {"type": "image_url", "image_url": {"url": f"data:{p.get('mime', 'image/png')};base64,{b64}"}}
                    )
                else:
                    parts.append({"type": "text", "text": p["text"]})
            content = parts
        out.append({"role": m["role"], "content": content})
    return out


class OpenAIClient:
    backend = "openai"
    uses_images = True

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        concurrency: int = 32,
        deadlines: Deadlines = Deadlines(),
        retry: RetryPolicy = RetryPolicy(),
        breaker: CircuitBreaker | None = None,
        max_error_rate: float = 1.0,
    ):
        self.model_id = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.concurrency = concurrency
        self.timeout_s = deadlines.timeout_s
        self.connect_timeout_s = min(deadlines.connect_timeout_s, deadlines.timeout_s)
        self.retry = retry
        self.breaker = breaker or CircuitBreaker()
        self.call_budget_s = deadlines.call_budget_s
        self.stall_s = deadlines.stall_s
        self.stats = call_stats.server(self.url, model, max_error_rate)
        self._in_flight = 0  # HTTP requests sent and not yet answered (the stall watch's concern)
        self._busy_since = 0.0  # when the requests in flight went from none to some
        self._last_answer = 0.0  # when the server last answered anything (an error status too)
        self._slowest = 0.0  # the longest a request has waited for its answer
        self._watch: asyncio.Task[None] | None = None
        resolve_api_key(api_key_env, base_url)  # fail early, before any work
        self._stopped: EndpointError | CallsAborted | None = None  # set once: every later call raises it
        self._batches: set[asyncio.Task[list[MLLMResponse]]] = (
            set()
        )  # running batches, cancelled when the client stops
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._sdks: list[openai.AsyncOpenAI] = []
        self._slots: asyncio.Queue[int] | None = None
        self._lock = threading.Lock()
        self.requests_sent = 0  # HTTP attempts, including retries
        track(self)

    @classmethod
    def from_config(cls, cfg: MLLMConfig) -> OpenAIClient:
        return cls(
            cfg.model,
            base_url=cfg.base_url,
            api_key_env=cfg.api_key_env,
            concurrency=cfg.concurrency,
            deadlines=Deadlines(cfg.timeout_s, cfg.connect_timeout_s, cfg.call_budget_s, cfg.stall_s),
            retry=RetryPolicy(cfg.max_retries, cfg.retry_base_s, cfg.retry_max_s),
            breaker=CircuitBreaker(cfg.breaker_window, cfg.breaker_failure_rate),
            max_error_rate=cfg.max_error_rate,
        )

    @property
    def url(self) -> str:
        return endpoint_url(self.base_url)

    @property
    def stopped(self) -> bool:
        """The breaker tripped or the calls were aborted: this client answers nothing more."""
        return self._stopped is not None

    # -- event loop ------------------------------------------------------------------
    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                t = threading.Thread(target=loop.run_forever, name="openai-client-loop", daemon=True)
                t.start()
                self._loop, self._thread = loop, t
                asyncio.run_coroutine_threadsafe(self._setup(), loop).result()
            return self._loop

    async def _setup(self) -> None:
        import httpx
        import openai

        # Several small connection pools instead of one big one: httpcore's pool bookkeeping is
        # quadratic in its connection count, which costs a whole core at ~100 requests/s with 64
        # connections. Each slot token is bound to one pool, and a pool never has more requests
        # than connections, so nothing queues inside httpcore.
        n_pools = max(1, -(-self.concurrency // POOL_CONNECTIONS))
        key = resolve_api_key(self.api_key_env, self.base_url)
        timeout = httpx.Timeout(self.timeout_s, connect=self.connect_timeout_s)
        self._sdks = [
            openai.AsyncOpenAI(
                base_url=self.base_url,
                api_key=key,
                timeout=timeout,
                max_retries=0,  # retries are ours: same policy for every error kind
                http_client=httpx.AsyncClient(
                    limits=httpx.Limits(max_connections=POOL_CONNECTIONS, max_keepalive_connections=POOL_CONNECTIONS),
                    timeout=timeout,
                ),
            )
            for _ in range(n_pools)
        ]
        self._slots = asyncio.Queue()
        for i in range(self.concurrency):
            self._slots.put_nowait(i % n_pools)
        if self.stall_s > 0:
            self._watch = asyncio.get_running_loop().create_task(self._watch_stalls())

    @property
    def stall_limit(self) -> float:
        """How long the server may answer nothing: ``stall_s``, or twice its slowest answer so far
        when that is longer (a server that answered slowly before is not a stalled one)."""
        return max(self.stall_s, 2 * self._slowest)

    def _answered(self, sent: float) -> None:
        now = time.monotonic()
        self._last_answer = now
        self._slowest = max(self._slowest, now - sent)

    async def _watch_stalls(self) -> None:
        """Stop the client when requests are in flight and none was answered for ``stall_s``.

        A server that accepts connections and answers the endpoint check, then never answers a
        request, would otherwise hold every call for its whole timeout and retries (about
        6 x 120 s with the defaults) before the breaker counts a single failure."""
        tick = min(1.0, self.stall_s / 4)
        while self._stopped is None:
            await asyncio.sleep(tick)
            if not self._in_flight:
                continue
            quiet = time.monotonic() - max(self._busy_since, self._last_answer)
            if quiet >= self.stall_limit:
                self._stop(
                    EndpointFailing(
                        self.url,
                        self.model_id,
                        f"answered none of the {self._in_flight} requests in flight for {quiet:.0f} s (mllm.stall_s "
                        f"{self.stall_s:g}): it accepts connections but does not answer; a server that takes longer "
                        f"than that for its first answer needs a higher mllm.stall_s",
                    )
                )

    def close(self) -> None:
        with self._lock:
            loop, self._loop = self._loop, None
        if loop is not None:
            if self._watch is not None:
                loop.call_soon_threadsafe(self._watch.cancel)
            for sdk in self._sdks:
                asyncio.run_coroutine_threadsafe(sdk.close(), loop).result()
            loop.call_soon_threadsafe(loop.stop)
            if self._thread is not None:
                self._thread.join(timeout=5)

    # -- stopping --------------------------------------------------------------------
    def abort(self, reason: str) -> None:
        """Abandon the calls in flight and refuse new ones (the process is stopping); thread-safe."""
        loop = self._loop
        if loop is None:
            self._stopped = self._stopped or CallsAborted(reason)
            return
        try:
            loop.call_soon_threadsafe(self._stop, CallsAborted(reason))
        except RuntimeError:  # the loop is closed
            pass

    def _stop(self, why: EndpointError | CallsAborted) -> None:
        """(On the loop.) Stop once: cancel every running batch; their ``complete`` raises ``why``."""
        if self._stopped is None:
            self._stopped = why
        for task in list(self._batches):
            task.cancel()

    def _raise_stopped(self) -> None:
        why = self._stopped
        if isinstance(why, EndpointError):
            raise why.again()
        raise CallsAborted(str(why))

    # -- requests --------------------------------------------------------------------
    def complete(self, requests: list[MLLMRequest]) -> list[MLLMResponse]:
        if self._stopped is not None:
            self._raise_stopped()
        if not requests:
            return []
        loop = self._ensure_loop()
        future = asyncio.run_coroutine_threadsafe(self._batch(requests), loop)
        try:
            return future.result()
        except concurrent.futures.CancelledError:  # the batch was cancelled: the client stopped
            if self._stopped is not None:
                self._raise_stopped()
            raise

    async def _batch(self, requests: list[MLLMRequest]) -> list[MLLMResponse]:
        task = asyncio.current_task()
        assert task is not None
        self._batches.add(task)
        try:
            if self._stopped is not None:
                raise asyncio.CancelledError
            return list(await asyncio.gather(*(self._one(r) for r in requests)))
        finally:
            self._batches.discard(task)

    async def _one(self, req: MLLMRequest) -> MLLMResponse:
        resp, failed_attempts = await self._attempts(req)
        call_stats.count(
            self.stats,
            calls=1,
            failed_calls=resp.error is not None,
            answered_after_retry=resp.error is None and failed_attempts > 0,
        )
        return resp

    def _record(self, error: str | None, *, counted: bool = True, retried: bool = False) -> None:
        """Count one request: in the process's statistics, and (``counted``) in the breaker,
        which stops the client when too many of the last requests failed."""
        call_stats.count(self.stats, requests=1, failed_requests=error is not None, retried=retried)
        if counted and self.breaker.record(error):
            self._stop(EndpointFailing(self.url, self.model_id, self.breaker.describe()))

    async def _attempts(self, req: MLLMRequest) -> tuple[MLLMResponse, int]:
        """The call's answer, and how many of its attempts failed. Every attempt is counted by
        the breaker as it ends, so a server failing every second request stops the stage even
        though each call would succeed on its retry; all attempts share ``call_budget_s``."""
        import httpx
        import openai

        messages = to_openai_messages(req.messages)
        deadline = time.monotonic() + self.call_budget_s
        last, failed = "", 0
        for attempt in range(self.retry.max_retries + 1):
            retry_after: float | None = None
            left = deadline - time.monotonic()
            if left <= 0:
                break
            error: str | None = None
            throttled = False  # a 429 asks the client to slow down: retried, not held against the server
            final = False  # an error no retry can mend (a 4xx other than the RETRY_STATUS ones)
            assert self._slots is not None
            pool = await self._slots.get()  # the concurrency bound, across all threads' batches
            if not self._in_flight:
                self._busy_since = time.monotonic()
            self._in_flight += 1
            sent = time.monotonic()
            try:
                self.requests_sent += 1
                # messages are already in wire format: passing them as extra_body (which replaces the
                # empty list in the JSON) skips the SDK's TypedDict walk, ~0.7 ms CPU per request
                resp = await self._sdks[pool].chat.completions.create(
                    model=self.model_id,
                    messages=[],
                    extra_body={"messages": messages},
                    temperature=req.temperature,
                    max_tokens=req.max_tokens,
                    timeout=httpx.Timeout(min(self.timeout_s, left), connect=min(self.connect_timeout_s, left)),
                )
                self._answered(sent)
                text = (resp.choices[0].message.content or "") if resp.choices else ""
            except openai.APITimeoutError:
                error = f"timeout after {min(self.timeout_s, left):g}s"
            except openai.APIConnectionError as exc:
                error = f"connection error: {exc}"
            except openai.APIStatusError as exc:
                self._answered(sent)
                error = f"HTTP {exc.status_code}: {one_line(exc.message)}"
                final = exc.status_code < 500 and exc.status_code not in RETRY_STATUS
                throttled = exc.status_code == 429
                retry_after = _retry_after(exc)
            except (openai.APIResponseValidationError, ValueError) as exc:  # a body that is not a completion
                self._answered(sent)
                error = f"malformed response: {one_line(str(exc))}"
            except Exception as exc:  # never let one request sink the batch
                error, final = f"{exc.__class__.__name__}: {one_line(str(exc))}", True
            finally:
                self._in_flight -= 1
                self._slots.put_nowait(pool)
            if error is None:
                self._record(None)
                return MLLMResponse(text, self.model_id, self.backend), failed
            failed += 1
            last = error
            delay = self.retry.delay(attempt, retry_after)
            again = (
                not final and attempt < self.retry.max_retries and time.monotonic() + delay < deadline
            )  # out of budget: this attempt was the last
            self._record(error, counted=not (throttled and again), retried=again)
            if final:
                return MLLMResponse("", self.model_id, self.backend, error=error), failed
            if not again:
                break
            await asyncio.sleep(delay)
        budget = time.monotonic() >= deadline or failed < self.retry.max_retries + 1
        why = f"out of its {self.call_budget_s:g} s (mllm.call_budget_s)" if budget else ""
        return (
            MLLMResponse(
                "",
                self.model_id,
                self.backend,
                error=f"gave up after {failed} attempt{'s' * (failed != 1)}{' ' + why if why else ''}: {last or 'no time left for a request'}",
            ),
            failed,
        )


def _retry_after(exc: BaseException) -> float | None:
    try:
        value = exc.response.headers.get("retry-after")
        return float(value) if value is not None else None
    except (AttributeError, ValueError):
        return None
