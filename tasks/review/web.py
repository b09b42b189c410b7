"""Plumbing shared by the review app's routers: the per-app context, rendering, CSRF and
admin checks, body validation with pydantic, and how items are shown to each role."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from fastapi import HTTPException, Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape
from pydantic import BaseModel, ValidationError

from storage.fs import RunFS
from storage.task_spec import all_tasks
from tasks.review.queue import ReviewQueue
from tasks.review.rules import REASONS, STAGES, Account, NotAllowed, UnknownItem
from tasks.review.views import ItemView

if TYPE_CHECKING:
    from fastapi.exceptions import RequestValidationError

HERE = Path(__file__).resolve().parent
SESSION_COOKIE = "rb_session"
LOGIN_CSRF_COOKIE = "rb_login_csrf"


def task_labels() -> dict[str, str]:
    """Task id -> the label the review UI shows (``TaskSpec.label`` of every registered task)."""
    return {t: spec.label for t, spec in all_tasks().items()}


HIDDEN_FROM_ANNOTATORS = ("editor",)  # blind review: who made the edit is not shown

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")


@dataclass
class WebContext:
    """What every route of one app needs (kept on ``app.state.review``)."""

    run: RunFS
    queue: ReviewQueue
    env: Environment
    secure_cookies: bool


def make_env() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(HERE / "templates")), autoescape=select_autoescape(["html"]), auto_reload=False
    )
    env.globals.update(REASONS=REASONS, TASK_LABELS=task_labels(), STAGES=STAGES)
    env.filters["pct"] = lambda v: "—" if v is None else f"{100 * v:.0f}%"
    env.filters["num"] = lambda v, d=2: "—" if v is None else f"{v:.{d}f}"
    return env


def ctx(request: Request) -> WebContext:
    return request.app.state.review


def render(request: Request, template: str, status: int = 200, **values: object) -> HTMLResponse:
    user = getattr(request.state, "user", None)
    html = ctx(request).env.get_template(template).render(user=user, csrf=getattr(request.state, "csrf", ""), **values)
    return HTMLResponse(html, status_code=status, headers={"Cache-Control": "no-store"})


def describe_errors(
    exc: ValidationError | RequestValidationError, where: str = "body"
) -> tuple[str, list[dict[str, str]]]:
    """A one-line message naming each refused field, and the fields as a list (pydantic's
    ValidationError or FastAPI's RequestValidationError; the refused input is not echoed)."""
    fields = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ())) or where
        fields.append({"field": loc, "error": str(err.get("msg", "invalid"))})
    return "; ".join(f"{f['field']}: {f['error']}" for f in fields), fields


class BodyInvalid(HTTPException):
    """422 naming the fields pydantic refused."""

    def __init__(self, message: str, fields: list[dict[str, str]]):
        super().__init__(422, message)
        self.fields = fields


def validate(model: type[M], data: object) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise BodyInvalid(*describe_errors(exc)) from None


def validate_json(model: type[M], raw: bytes) -> M:
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        raise BodyInvalid(*describe_errors(exc)) from None


def check_csrf(token: object, request: Request) -> None:
    """A form's ``csrf_token`` must be the session's (checked before the body is validated)."""
    if not isinstance(token, str) or len(token) > 200 or not secrets.compare_digest(token, request.state.csrf):
        raise HTTPException(403, "missing or wrong CSRF token; reload the page")


def csrf_header(request: Request) -> None:
    if not secrets.compare_digest(request.headers.get("x-csrf-token", ""), request.state.csrf):
        raise HTTPException(403, "missing or wrong X-CSRF-Token header")


def require_admin(request: Request) -> Account:
    user: Account = request.state.user
    if not user.is_admin:
        raise HTTPException(403, "admins only")
    return user


def check_stage(stage: str) -> None:
    if stage not in STAGES:
        raise HTTPException(404, f"unknown review stage {stage!r}")


def get_view(queue: ReviewQueue, user: Account, item_id: str) -> ItemView:
    try:
        return queue.get_item(user, item_id)
    except UnknownItem as exc:
        raise HTTPException(404, str(exc)) from None
    except NotAllowed as exc:
        raise HTTPException(403, str(exc)) from None


def public(view: ItemView, user: Account) -> dict[str, Any]:
    """What a page or API client may see of an item (the editor only for admins)."""
    payload = dict(view.payload)
    if not user.is_admin:
        for key in HIDDEN_FROM_ANNOTATORS:
            payload.pop(key, None)
    box = payload.get("target_box")
    w, h = payload.get("width") or 0, payload.get("height") or 0
    box_pct = None
    if box and len(box) == 4 and w and h:
        box_pct = {
            "left": 100 * box[0] / w,
            "top": 100 * box[1] / h,
            "width": 100 * box[2] / w,
            "height": 100 * box[3] / h,
        }
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
        "images": image_urls(view),
    }
    if user.is_admin:
        out["editor"] = view.editor
    return out


def image_urls(view: ItemView) -> dict[str, str]:
    p = view.payload
    return {"original": f"/images/{p['original_image']}", "edited": f"/images/{p['edited_image']}"}


async def run_sync(fn: Callable[..., T], *args: object) -> T:
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(fn, *args)
