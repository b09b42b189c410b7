"""The review web app: server-rendered pages for annotators and admins, and a small JSON API.

Security model: every route but ``/login`` needs a session (cookie holding a random token
whose hash is stored; looked up in the database on every request, so a logout anywhere ends
it everywhere at once); every POST carries the session's CSRF token (form field
``csrf_token`` or header ``X-CSRF-Token``); every body is validated by a pydantic model
(:mod:`tasks.review.bodies`, 422 naming the field) after a size cap (413); Jinja2
autoescapes all user text and a strict Content-Security-Policy forbids inline scripts;
images are served only as verified image-store files (:mod:`tasks.review.routes_files`).

The routes live in routers by audience: ``routes_auth`` (login), ``routes_review``
(annotator pages), ``routes_admin``, ``routes_api`` (JSON) and ``routes_files``.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from storage.fs import DiskFull, RunFS
from storage.review_db import LoopReads
from tasks.review import routes_admin, routes_api, routes_auth, routes_files, routes_review
from tasks.review.accounts import session_user_on_loop
from tasks.review.bodies import MAX_BODY_BYTES
from tasks.review.queue import ReviewQueue
from tasks.review.web import SESSION_COOKIE, BodyInvalid, WebContext, describe_errors, make_env, render

PUBLIC_PATHS = frozenset({"/login"})
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self'; style-src 'self' 'unsafe-inline'; script-src 'self'; "
        "object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}


def create_app(run_dir: str, queue: ReviewQueue, secure_cookies: bool = False) -> FastAPI:
    """The FastAPI app serving one run's review queue."""
    app = FastAPI(title="reactbench review", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.review = WebContext(run=RunFS.open(run_dir), queue=queue, env=make_env(), secure_cookies=secure_cookies)
    app.add_middleware(SessionGate, queue=queue)
    app.add_middleware(BodyLimit, max_bytes=MAX_BODY_BYTES)  # outermost: nothing reads an oversized body

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Response:
        if request.url.path.startswith("/api/"):
            body: dict[str, Any] = {"error": exc.detail}
            if isinstance(exc, BodyInvalid):
                body["fields"] = exc.fields
            return JSONResponse(body, status_code=exc.status_code)
        return render(request, "error.html", status=exc.status_code, message=exc.detail, code=exc.status_code)

    @app.exception_handler(DiskFull)
    async def disk_full(request: Request, exc: DiskFull) -> Response:
        """A full disk under the queue (SQLite's file or the PostgreSQL server's): one line in
        the server's log and a 507 saying nothing was saved, not a traceback and a bare 500."""
        message = f"{exc}; nothing was saved: free some space and send it again"
        logging.getLogger("uvicorn.error").error("%s %s: %s", request.method, request.url.path, message)
        return await http_error(request, HTTPException(status_code=507, detail=message))

    @app.exception_handler(RequestValidationError)
    async def query_error(request: Request, exc: RequestValidationError) -> Response:
        message, fields = describe_errors(exc, "query")
        return await http_error(request, BodyInvalid(message, fields))

    for module in (routes_auth, routes_review, routes_files, routes_admin, routes_api):
        app.router.routes.extend(module.router.routes)  # flat: the routes are the app's own (one table to audit)
    return app


class BodyLimit:
    """Pure ASGI middleware: a request body over ``max_bytes`` is refused with 413, whether it
    declares its length or streams it."""

    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self._refuse(scope, receive, send)
            return
        seen = 0
        started = False

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise _TooLarge()
            return message

        async def watch(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, watch)
        except _TooLarge:
            if not started:
                await self._refuse(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = f"request body larger than {self.max_bytes} bytes"
        response = JSONResponse({"error": message}, status_code=413, headers={"Connection": "close"})
        await response(scope, receive, send)


class _TooLarge(Exception):
    pass


class SessionGate:
    """Pure ASGI middleware: every path but the login page needs a live session (the user and
    CSRF token land in ``request.state``); every response gets the security headers. The
    session is read from the database on every request (one statement that never waits for
    writers, outside any transaction, on the event loop: :class:`storage.review_db.LoopReads`):
    revocation needs no cache to expire."""

    def __init__(self, app: ASGIApp, queue: ReviewQueue):
        self.app = app
        self.queue = queue
        self.reads = LoopReads(queue.engine)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for k, v in SECURITY_HEADERS.items():
                    if k not in headers:
                        headers.append(k, v)
            await send(message)

        path = scope["path"]
        if path not in PUBLIC_PATHS:
            token = Request(scope).cookies.get(SESSION_COOKIE)
            found = await session_user_on_loop(self.reads, token)
            if found is None:
                if path.startswith("/api/"):
                    response: Response = JSONResponse({"error": "login required"}, status_code=401)
                else:
                    response = RedirectResponse("/login", status_code=303)
                await response(scope, receive, send_secured)
                return
            state = scope.setdefault("state", {})
            state["user"], state["csrf"] = found
        await self.app(scope, receive, send_secured)
