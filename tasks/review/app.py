"""The review web app: server-rendered pages for annotators and admins, and a small JSON API.

Security model: every route but ``/login`` needs a session (cookie holding a random token
whose hash is stored); every POST carries the session's CSRF token (form field
``csrf_token`` or header ``X-CSRF-Token``); Jinja2 autoescapes all user text and a strict
Content-Security-Policy forbids inline scripts; images are served only when the path is an
image-store path (``images/ab/<sha256>.<ext>``) that exists.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.datastructures import FormData, MutableHeaders

from storage.fs import RunFS
from storage.image_store import ImageStore
from storage.review_db import write_lock
from tasks.review.accounts import authenticate, close_session, open_session, session_user
from tasks.review.queue import (
    REASONS,
    STAGES,
    Account,
    ItemView,
    LeaseLost,
    NotAllowed,
    QueueError,
    ReviewQueue,
    UnknownItem,
)
from tasks.review.stats import dashboard
from tasks.review.validation import QuestionError

HERE = Path(__file__).resolve().parent
SESSION_COOKIE = "rb_session"
LOGIN_CSRF_COOKIE = "rb_login_csrf"
PUBLIC_PATHS = frozenset({"/login"})
STATIC_FILES = {"review.js": "text/javascript", "review.css": "text/css"}
IMAGE_TYPES = {"png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "webp": "image/webp"}
TASK_LABELS = {
    "relational_erasure": "Relational erasure",
    "counterfactual_attribute": "Counterfactual attribute",
    "alteration_tracing": "Alteration tracing",
    "dense_counting": "Dense counting",
}
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self'; style-src 'self' 'unsafe-inline'; script-src 'self'; "
        "object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}
HIDDEN_FROM_ANNOTATORS = ("editor",)  # blind review: who made the edit is not shown


def _env() -> Environment:
    env = Environment(loader=FileSystemLoader(str(HERE / "templates")), autoescape=select_autoescape(["html"]), auto_reload=False)
    env.globals.update(REASONS=REASONS, TASK_LABELS=TASK_LABELS, STAGES=STAGES)
    env.filters["pct"] = lambda v: "—" if v is None else f"{100 * v:.0f}%"
    env.filters["num"] = lambda v, d=2: "—" if v is None else f"{v:.{d}f}"
    return env


def create_app(run_dir: str, queue: ReviewQueue, secure_cookies: bool = False) -> FastAPI:
    """The FastAPI app serving one run's review queue."""
    app = FastAPI(title="reactbench review", docs_url=None, redoc_url=None, openapi_url=None)
    env = _env()
    store = ImageStore(RunFS.open(run_dir))
    sessions = SessionCache(queue)

    # -- plumbing ----------------------------------------------------------------------
    app.add_middleware(SessionGate, sessions=sessions)

    def render(request: Request, template: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        user = getattr(request.state, "user", None)
        html = env.get_template(template).render(user=user, csrf=getattr(request.state, "csrf", ""), **ctx)
        return HTMLResponse(html, status_code=status, headers={"Cache-Control": "no-store"})

    async def form_with_csrf(request: Request) -> FormData:
        form = await request.form()
        if not secrets.compare_digest(str(form.get("csrf_token", "")), request.state.csrf):
            raise HTTPException(403, "missing or wrong CSRF token; reload the page")
        return form

    def csrf_header(request: Request) -> None:
        if not secrets.compare_digest(request.headers.get("x-csrf-token", ""), request.state.csrf):
            raise HTTPException(403, "missing or wrong X-CSRF-Token header")

    def require_admin(request: Request) -> Account:
        user: Account = request.state.user
        if not user.is_admin:
            raise HTTPException(403, "admins only")
        return user

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Response:
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": exc.detail}, status_code=exc.status_code)
        return render(request, "error.html", status=exc.status_code, message=exc.detail, code=exc.status_code)

    # -- login -------------------------------------------------------------------------
    @app.get("/login", response_class=HTMLResponse)
    def login_page(request: Request) -> Response:
        token = request.cookies.get(LOGIN_CSRF_COOKIE) or secrets.token_urlsafe(24)
        response = render(request, "login.html", login_csrf=token, css=(HERE / "static" / "review.css").read_text("utf-8"))
        response.set_cookie(LOGIN_CSRF_COOKIE, token, httponly=True, samesite="strict", secure=secure_cookies)
        return response

    @app.post("/login")
    async def login(request: Request) -> Response:
        form = await request.form()
        cookie = request.cookies.get(LOGIN_CSRF_COOKIE, "")
        if not cookie or not secrets.compare_digest(str(form.get("csrf_token", "")), cookie):
            raise HTTPException(403, "missing or wrong CSRF token; reload the login page")
        user = await _run_sync(authenticate, queue.reader, str(form.get("secret", "")))
        if user is None:
            return render(
                request, "login.html", status=401, login_csrf=cookie, error="Unknown secret.", css=(HERE / "static" / "review.css").read_text("utf-8")
            )
        token, _csrf = await _run_sync(_with_write_lock, queue, open_session, queue.engine, user)
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(SESSION_COOKIE, token, httponly=True, samesite="strict", secure=secure_cookies, max_age=12 * 3600)
        response.delete_cookie(LOGIN_CSRF_COOKIE)
        return response

    @app.post("/logout")
    def logout(request: Request, form: FormData = Depends(form_with_csrf)) -> Response:
        sessions.drop(request.cookies.get(SESSION_COOKIE))
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(SESSION_COOKIE)
        return response

    @app.get("/")
    def home(request: Request) -> Response:
        return RedirectResponse("/admin" if request.state.user.is_admin else "/review/edit", status_code=303)

    # -- review pages ------------------------------------------------------------------
    def item_page(request: Request, view: ItemView, preload: list[ItemView], status: int = 200, **extra: Any) -> HTMLResponse:
        user: Account = request.state.user
        return render(
            request,
            f"item_{view.stage}.html",
            status=status,
            stage=view.stage,
            item=_public(view, user),
            preload=[_image_urls(p) for p in preload],
            progress=queue.progress(user, view.stage),
            **extra,
        )

    @app.get("/review/{stage}", response_class=HTMLResponse)
    def review_next(request: Request, stage: str) -> Response:
        _stage(stage)
        user: Account = request.state.user
        ids = queue.next_items(user, stage, want=2)
        if not ids:
            return render(request, "empty.html", stage=stage, progress=queue.progress(user, stage))
        views = [queue.get_item(user, i) for i in ids]
        return item_page(request, views[0], views[1:])

    @app.get("/review/{stage}/item/{item_id}", response_class=HTMLResponse)
    def review_item(request: Request, stage: str, item_id: str, ev: int | None = None) -> Response:
        _stage(stage)
        view = _get(request.state.user, item_id)
        if view.stage != stage:
            return RedirectResponse(f"/review/{view.stage}/item/{item_id}", status_code=303)
        return item_page(request, view, [], history_event=ev)

    @app.post("/review/{stage}/item/{item_id}/decide")
    def review_decide(request: Request, stage: str, item_id: str, form: FormData = Depends(form_with_csrf)) -> Response:
        _stage(stage)
        user: Account = request.state.user
        verdict = str(form.get("verdict", ""))
        reasons = [str(r) for r in form.getlist("reason")]
        note = str(form.get("note", ""))
        updates = _question_updates(form) if stage == "qa" else None
        try:
            queue.decide(user, item_id, verdict, reasons, note, question_updates=updates)
        except QuestionError as exc:
            view = _get(user, item_id)
            return item_page(
                request, view, [], status=422, errors={exc.question_id: f"{exc.field}: {exc.message}"}, submitted=updates or {}, form_error=str(exc)
            )
        except LeaseLost as exc:
            return render(request, "error.html", status=409, code=409, message=str(exc), next_url=f"/review/{stage}")
        except UnknownItem as exc:
            raise HTTPException(404, str(exc)) from None
        except QueueError as exc:
            view = _get(user, item_id)
            return item_page(request, view, [], status=400, form_error=str(exc), submitted=updates or {})
        return RedirectResponse(f"/review/{stage}", status_code=303)

    @app.post("/review/{stage}/undo")
    def review_undo(request: Request, stage: str, form: FormData = Depends(form_with_csrf)) -> Response:
        _stage(stage)
        try:
            item_id = queue.retract_last(request.state.user, stage)
        except NotAllowed as exc:
            raise HTTPException(409, str(exc)) from None
        return RedirectResponse(f"/review/{stage}/item/{item_id}" if item_id else f"/review/{stage}", status_code=303)

    @app.get("/review/{stage}/previous")
    def review_previous(request: Request, stage: str, before: int | None = None) -> Response:
        _stage(stage)
        found = queue.previous(request.state.user, stage, before)
        if found is None:
            return RedirectResponse(f"/review/{stage}", status_code=303)
        item_id, event_id = found
        return RedirectResponse(f"/review/{stage}/item/{item_id}?ev={event_id}", status_code=303)

    # -- files -------------------------------------------------------------------------
    @app.get("/images/{rel:path}")
    def image(rel: str) -> Response:
        ext = rel.rsplit(".", 1)[-1].lower() if "." in rel else ""
        if ext not in IMAGE_TYPES or not store.exists(rel):
            raise HTTPException(404, "no such image in the run's image store")
        return Response(store.get_bytes(rel), media_type=IMAGE_TYPES[ext], headers={"Cache-Control": "private, max-age=31536000, immutable"})

    @app.get("/static/{name}")
    def static(name: str) -> Response:
        if name not in STATIC_FILES:
            raise HTTPException(404, "no such file")
        return Response((HERE / "static" / name).read_bytes(), media_type=STATIC_FILES[name], headers={"Cache-Control": "private, max-age=300"})

    # -- admin -------------------------------------------------------------------------
    @app.get("/admin", response_class=HTMLResponse)
    def admin(request: Request, _: Account = Depends(require_admin)) -> Response:
        return render(request, "admin.html", stats=dashboard(queue))

    @app.get("/admin/stats", response_class=HTMLResponse)
    def admin_stats(request: Request, _: Account = Depends(require_admin)) -> Response:
        return render(request, "admin_stats.html", stats=dashboard(queue))

    @app.get("/admin/adjudicate", response_class=HTMLResponse)
    def adjudicate_list(request: Request, _: Account = Depends(require_admin)) -> Response:
        users = queue.users()
        rows = []
        for item_id in queue.disputed():
            view = queue.get_item(request.state.user, item_id)
            rows.append({"item": view, "decisions": _decisions(queue, item_id, users)})
        return render(request, "adjudicate_list.html", rows=rows)

    @app.get("/admin/adjudicate/{item_id}", response_class=HTMLResponse)
    def adjudicate_item(request: Request, item_id: str, _: Account = Depends(require_admin)) -> Response:
        view = _get(request.state.user, item_id)
        return render(
            request, "adjudicate_item.html", item=_public(view, request.state.user), decisions=_decisions(queue, item_id, queue.users())
        )

    @app.post("/admin/adjudicate/{item_id}")
    def adjudicate_post(request: Request, item_id: str, form: FormData = Depends(form_with_csrf), boss: Account = Depends(require_admin)) -> Response:
        try:
            queue.adjudicate(boss, item_id, str(form.get("verdict", "")), str(form.get("note", "")))
        except UnknownItem as exc:
            raise HTTPException(404, str(exc)) from None
        except QueueError as exc:
            raise HTTPException(400, str(exc)) from None
        return RedirectResponse("/admin/adjudicate", status_code=303)

    # -- JSON API (keyboard client, load benchmark) -------------------------------------
    @app.get("/api/next")
    def api_next(request: Request, stage: str = "edit", want: int = 1) -> Response:
        _stage(stage)
        user: Account = request.state.user
        ids = queue.next_items(user, stage, want=max(1, min(want, 5)))
        items = [_public(queue.get_item(user, i), user) for i in ids]
        return JSONResponse({"items": items})

    @app.post("/api/items/{item_id}/decision")
    async def api_decide(request: Request, item_id: str) -> Response:
        csrf_header(request)
        try:
            body = await request.json()
        except ValueError:
            raise HTTPException(400, "body must be JSON: {verdict, reasons, note}") from None
        if not isinstance(body, dict):
            raise HTTPException(400, "body must be a JSON object: {verdict, reasons, note}")
        try:
            event_id = await _run_sync(
                queue.decide,
                request.state.user,
                item_id,
                str(body.get("verdict", "")),
                [str(r) for r in body.get("reasons") or []],
                str(body.get("note") or ""),
            )
        except LeaseLost as exc:
            raise HTTPException(409, str(exc)) from None
        except UnknownItem as exc:
            raise HTTPException(404, str(exc)) from None
        except QueueError as exc:
            raise HTTPException(400, str(exc)) from None
        return JSONResponse({"event_id": event_id})

    @app.get("/api/progress")
    def api_progress(request: Request, stage: str = "edit") -> Response:
        _stage(stage)
        return JSONResponse(queue.progress(request.state.user, stage))

    def _get(user: Account, item_id: str) -> ItemView:
        try:
            return queue.get_item(user, item_id)
        except UnknownItem as exc:
            raise HTTPException(404, str(exc)) from None
        except NotAllowed as exc:
            raise HTTPException(403, str(exc)) from None

    return app


MISS = object()


class SessionGate:
    """Pure ASGI middleware: every path but the login page needs a live session (the user and
    CSRF token land in ``request.state``); every response gets the security headers."""

    def __init__(self, app: Any, sessions: "SessionCache"):
        self.app = app
        self.sessions = sessions

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_secured(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for k, v in SECURITY_HEADERS.items():
                    if k not in headers:
                        headers.append(k, v)
            await send(message)

        path = scope["path"]
        if path not in PUBLIC_PATHS:
            token = Request(scope).cookies.get(SESSION_COOKIE)
            found = self.sessions.peek(token)  # cache hit: no thread hop, no query
            if found is MISS:
                found = await _run_sync(self.sessions.get, token)
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


class SessionCache:
    """Session lookups cached for a few seconds (one query less per request); logout through
    this process drops the entry at once."""

    TTL_S = 5.0

    def __init__(self, queue: ReviewQueue):
        self.queue = queue
        self._cache: dict[str, tuple[float, tuple[Account, str] | None]] = {}
        self._lock = threading.Lock()

    def peek(self, token: str | None) -> Any:
        """The cached lookup, or :data:`MISS` when it must be read from the database."""
        if not token:
            return None
        with self._lock:
            hit = self._cache.get(token)
        return hit[1] if hit and time.monotonic() - hit[0] < self.TTL_S else MISS

    def get(self, token: str | None) -> tuple[Account, str] | None:
        if not token:
            return None
        now = time.monotonic()
        found = session_user(self.queue.reader, token)  # read-only: a snapshot, never waits for writers
        with self._lock:
            if len(self._cache) > 10_000:
                self._cache.clear()
            self._cache[token] = (now, found)
        return found

    def drop(self, token: str | None) -> None:
        with self._lock:
            self._cache.pop(token or "", None)
        _with_write_lock(self.queue, close_session, self.queue.engine, token)


def _with_write_lock(queue: ReviewQueue, fn: Any, *args: Any) -> Any:
    """Run a small write (login sessions) behind the queue's in-process SQLite writer lock, so
    it queues with the queue's writers instead of polling in SQLite's busy handler."""
    with write_lock(queue.engine):
        return fn(*args)


async def _run_sync(fn: Any, *args: Any) -> Any:
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(fn, *args)


def _stage(stage: str) -> None:
    if stage not in STAGES:
        raise HTTPException(404, f"unknown review stage {stage!r}")


def _public(view: ItemView, user: Account) -> dict[str, Any]:
    """What a page or API client may see of an item (the editor only for admins)."""
    payload = dict(view.payload)
    if not user.is_admin:
        for key in HIDDEN_FROM_ANNOTATORS:
            payload.pop(key, None)
    box = payload.get("target_box")
    w, h = payload.get("width") or 0, payload.get("height") or 0
    box_pct = None
    if box and len(box) == 4 and w and h:
        box_pct = {"left": 100 * box[0] / w, "top": 100 * box[1] / h, "width": 100 * box[2] / w, "height": 100 * box[3] / h}
    out = {
        "id": view.id,
        "stage": view.stage,
        "task": view.task,
        "variant": view.variant,
        "payload": payload,
        "box_pct": box_pct,
        "questions": view.questions,
        "my_decision": view.my_decision,
        "leased": view.lease_expires_at is not None,
        "resolution": view.resolution,
        "images": _image_urls(view),
    }
    if user.is_admin:
        out["editor"] = view.editor
    return out


def _image_urls(view: ItemView) -> dict[str, str]:
    p = view.payload
    return {"original": f"/images/{p['original_image']}", "edited": f"/images/{p['edited_image']}"}


def _question_updates(form: FormData) -> dict[str, dict[str, Any]]:
    """Inline edits posted by the QA page: fields ``q-<id>-text|options|gold|invalid`` per ``qids``."""
    updates: dict[str, dict[str, Any]] = {}
    for qid in form.getlist("qids"):
        qid = str(qid)
        upd: dict[str, Any] = {"invalid": form.get(f"q-{qid}-invalid") == "1"}
        for name in ("text", "gold"):
            if f"q-{qid}-{name}" in form:
                upd[name] = str(form.get(f"q-{qid}-{name}"))
        if f"q-{qid}-options" in form:
            upd["options"] = [line for line in str(form.get(f"q-{qid}-options")).splitlines()]
        updates[qid] = upd
    return updates


def _decisions(queue: ReviewQueue, item_id: str, users: dict[int, Account]) -> list[dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    for e in queue.events(kinds=("decision", "retract"), item_id=item_id):
        if e.kind == "retract":
            out.pop(e.annotator_id, None)
        else:
            out[e.annotator_id] = {
                "annotator": users[e.annotator_id].name if e.annotator_id in users else str(e.annotator_id),
                "verdict": e.verdict,
                "reasons": json.loads(e.reasons_json or "[]"),
                "note": e.note or "",
            }
    return sorted(out.values(), key=lambda d: d["annotator"])
