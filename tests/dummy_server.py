"""A small OpenAI-compatible chat-completions server on 127.0.0.1, for tests and benchmarks.

It speaks real HTTP (aiohttp), so the ``openai`` backend is exercised end to end: SDK, JSON,
status codes, timeouts, connection reuse. What it answers is up to a ``responder`` function:
given the request body it returns a :class:`Reply` (status, text, delay). Two settings model a
real server's surroundings: ``models`` (the ids ``GET /v1/models`` lists; None: no such route,
as some servers have) and ``fail_every`` (every n-th chat request is answered HTTP 500 whatever
the responder says: 2 fails half of the calls). The endpoint check's one-token request (header
``X-Reactbench-Probe``) is kept apart, so responders and request counts see only the work: it
is answered with ``probe_reply`` (None: by the responder), listed in ``probes`` rather than
``requests``, and never failed or counted by ``fail_every``. Nothing here is used by the
pipeline itself.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from prompts.clients.endpoint import PROBE_HEADER


@dataclass
class Reply:
    text: str = ""
    status: int = 200
    delay_s: float = 0.0
    raw_body: str | None = None  # send this body verbatim instead of a completion (malformed JSON tests)
    headers: dict[str, str] | None = None


Responder = Callable[[dict[str, Any]], Reply]


def message_text(body: dict[str, Any]) -> str:
    """All text parts of all messages, joined (what a responder usually keys on)."""
    out = []
    for m in body.get("messages", []):
        c = m.get("content")
        if isinstance(c, str):
            out.append(c)
        elif isinstance(c, list):
            out.extend(p.get("text", "") for p in c if p.get("type") == "text")
    return "\n".join(out)


def image_urls(body: dict[str, Any]) -> list[str]:
    urls = []
    for m in body.get("messages", []):
        c = m.get("content")
        if isinstance(c, list):
            urls.extend(p["image_url"]["url"] for p in c if p.get("type") == "image_url")
    return urls


def completion_body(text: str, model: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-dummy",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


class DummyServer:
    """``with DummyServer(responder) as url: ...`` runs the server in a background thread."""

    def __init__(
        self,
        responder: Responder,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        models: list[str] | None = None,
        fail_every: int = 0,
        probe_reply: Reply | None = Reply("ready"),
    ):
        self.responder = responder
        self.probe_reply = probe_reply
        self.models = models
        self.fail_every = fail_every
        self.probes: list[dict[str, Any]] = []
        self.chat_requests = 0  # numbered as they arrive, for fail_every
        self.host = host
        self.port = port
        self.requests: list[dict[str, Any]] = []
        self.headers_seen: list[dict[str, str]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: Any = None
        self._ready = threading.Event()
        self.inflight = 0
        self.max_inflight = 0
        self._stopping = asyncio.Event()

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    async def _handle(self, request: Any) -> Any:
        from aiohttp import web

        body = await request.json()
        probe = PROBE_HEADER in request.headers
        if probe:
            self.probes.append(body)
        else:
            self.requests.append(body)
            self.headers_seen.append(dict(request.headers))
        self.chat_requests += not probe
        if self.fail_every and not probe and self.chat_requests % self.fail_every == 0:
            reply = Reply(status=500, text=f"scripted failure of request {self.chat_requests}")
        elif probe and self.probe_reply is not None:
            reply = self.probe_reply
        else:
            reply = self.responder(body)
        self.inflight += 1
        self.max_inflight = max(self.max_inflight, self.inflight)
        try:
            if reply.delay_s:  # cut short when the server stops (a slow reply must not hold the shutdown)
                try:
                    await asyncio.wait_for(self._stopping.wait(), reply.delay_s)
                except TimeoutError:
                    pass
        finally:
            self.inflight -= 1
        if reply.raw_body is not None:
            return web.Response(
                text=reply.raw_body, status=reply.status, content_type="application/json", headers=reply.headers
            )
        if reply.status != 200:
            err = {
                "error": {
                    "message": reply.text or f"scripted status {reply.status}",
                    "type": "scripted",
                    "code": reply.status,
                }
            }
            return web.json_response(err, status=reply.status, headers=reply.headers)
        return web.json_response(completion_body(reply.text, body.get("model", "")), headers=reply.headers)

    async def _models(self, request: Any) -> Any:
        from aiohttp import web

        return web.json_response(
            {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "dummy"} for m in self.models or []]}
        )

    async def _stats(self, request: Any) -> Any:
        from aiohttp import web

        return web.json_response({"requests": len(self.requests), "max_inflight": self.max_inflight})

    async def _start(self) -> None:
        from aiohttp import web

        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._handle)
        app.router.add_get("/stats", self._stats)
        if self.models is not None:
            app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, backlog=1024)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def start(self) -> str:
        self._loop = asyncio.new_event_loop()

        def run() -> None:
            assert self._loop is not None
            asyncio.set_event_loop(self._loop)
            self._loop.run_until_complete(self._start())
            self._ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="dummy-openai-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("dummy OpenAI server did not start within 10 s")
        return self.base_url

    def stop(self) -> None:
        if self._loop is None:
            return
        self._loop.call_soon_threadsafe(self._stopping.set)
        fut = asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop)
        fut.result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._loop = None

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def serve_forever(responder: Responder, host: str, port: int, ready: Any = None) -> None:
    """Run a server in the current process until killed (benchmarks start it in a child process)."""
    server = DummyServer(responder, host, port)
    server.start()
    if ready is not None:
        ready.put(server.port)
    threading.Event().wait()
