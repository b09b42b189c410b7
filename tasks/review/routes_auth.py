"""Login and logout. Sessions live in the database only (no cache), so a logout through any
server process ends the session in every other one at once. Each login attempt is decided
in one transaction by :func:`tasks.review.login.attempt_login` (limits per client and over
unknown clients; past a limit the client waits, 429 with ``Retry-After``)."""

from __future__ import annotations

import secrets

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import RedirectResponse, Response

from storage.review_db import write_lock
from tasks.review.accounts import SESSION_SECONDS, close_session
from tasks.review.bodies import LoginForm, known_fields
from tasks.review.login import DEVICE_SECONDS, attempt_login
from tasks.review.web import HERE, LOGIN_CSRF_COOKIE, SESSION_COOKIE, check_csrf, ctx, render, run_sync, validate

router = APIRouter()
DEVICE_COOKIE = "rb_device"  # a browser that logged in before (tasks.review.login)


def _css() -> str:
    return (HERE / "static" / "review.css").read_text("utf-8")


def _client(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def _locked(queue, fn, *args):  # noqa: ANN001, ANN202
    """A small write behind the queue's in-process SQLite writer lock (queues with the
    queue's writers instead of polling in SQLite's busy handler)."""
    with write_lock(queue.engine):
        return fn(*args)


@router.get("/login")
def login_page(request: Request) -> Response:
    token = request.cookies.get(LOGIN_CSRF_COOKIE) or secrets.token_urlsafe(24)
    response = render(request, "login.html", login_csrf=token, css=_css())
    response.set_cookie(LOGIN_CSRF_COOKIE, token, httponly=True, samesite="strict", secure=ctx(request).secure_cookies)
    return response


@router.post("/login")
async def login(request: Request) -> Response:
    web = ctx(request)
    form = validate(LoginForm, known_fields(await request.form(), ("csrf_token", "secret")))
    cookie = request.cookies.get(LOGIN_CSRF_COOKIE, "")
    if not cookie or not secrets.compare_digest(form.csrf_token, cookie):
        raise HTTPException(403, "missing or wrong CSRF token; reload the login page")
    result = await run_sync(
        attempt_login, web.queue.engine, _client(request), form.secret, request.cookies.get(DEVICE_COOKIE)
    )
    if result.retry_after is not None:
        wait = result.retry_after
        refused = render(
            request,
            "login.html",
            status=429,
            login_csrf=cookie,
            error=f"Too many refused logins; try again in {wait:.0f} s.",
            css=_css(),
        )
        refused.headers["Retry-After"] = str(int(wait + 0.999))
        return refused
    if result.user is None:
        return render(request, "login.html", status=401, login_csrf=cookie, error="Unknown secret.", css=_css())
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        result.token,
        httponly=True,
        samesite="strict",
        secure=web.secure_cookies,
        max_age=SESSION_SECONDS,
    )
    response.set_cookie(
        DEVICE_COOKIE,
        result.device,
        httponly=True,
        samesite="strict",
        secure=web.secure_cookies,
        max_age=int(DEVICE_SECONDS),
    )
    response.delete_cookie(LOGIN_CSRF_COOKIE)
    return response


@router.post("/logout")
async def logout(request: Request) -> Response:
    check_csrf((await request.form()).get("csrf_token"), request)
    web = ctx(request)
    await run_sync(_locked, web.queue, close_session, web.queue.engine, request.cookies.get(SESSION_COOKIE))
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE)
    return response


@router.get("/")
def home(request: Request) -> Response:
    return RedirectResponse("/admin" if request.state.user.is_admin else "/review/edit", status_code=303)
