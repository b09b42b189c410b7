"""Admin pages: dashboard, statistics, adjudication of disputed items."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from tasks.review.bodies import AdjudicationForm, known_fields
from tasks.review.queue import ReviewQueue
from tasks.review.rules import Account, QueueError, UnknownItem, current_decisions, decision_dict, names_of
from tasks.review.stats import dashboard
from tasks.review.web import check_csrf, ctx, get_view, public, render, require_admin, run_sync, validate

router = APIRouter()


def decisions_of(queue: ReviewQueue, item_id: str, users: dict[int, Account]) -> list[dict[str, Any]]:
    """The current decision of each annotator on one item, for adjudication."""
    current = current_decisions(queue.events(kinds=("decision", "retract"), item_id=item_id)).get(item_id, {})
    rows = [{"annotator": names_of(users, uid), **decision_dict(e)} for uid, e in current.items()]
    for r in rows:
        r.pop("event_id")
    return sorted(rows, key=lambda d: d["annotator"])


@router.get("/admin", response_class=HTMLResponse)
def admin(request: Request, _: Account = Depends(require_admin)) -> Response:
    return render(request, "admin.html", stats=dashboard(ctx(request).queue))


@router.get("/admin/stats", response_class=HTMLResponse)
def admin_stats(request: Request, _: Account = Depends(require_admin)) -> Response:
    return render(request, "admin_stats.html", stats=dashboard(ctx(request).queue))


@router.get("/admin/adjudicate", response_class=HTMLResponse)
def adjudicate_list(request: Request, _: Account = Depends(require_admin)) -> Response:
    queue = ctx(request).queue
    users = queue.users()
    rows = [
        {"item": queue.get_item(request.state.user, i), "decisions": decisions_of(queue, i, users)}
        for i in queue.disputed()
    ]
    return render(request, "adjudicate_list.html", rows=rows)


@router.get("/admin/adjudicate/{item_id}", response_class=HTMLResponse)
def adjudicate_item(request: Request, item_id: str, _: Account = Depends(require_admin)) -> Response:
    queue = ctx(request).queue
    view = get_view(queue, request.state.user, item_id)
    return render(
        request,
        "adjudicate_item.html",
        item=public(view, request.state.user),
        decisions=decisions_of(queue, item_id, queue.users()),
    )


@router.post("/admin/adjudicate/{item_id}")
async def adjudicate_post(request: Request, item_id: str, boss: Account = Depends(require_admin)) -> Response:
    raw = await request.form()
    check_csrf(raw.get("csrf_token"), request)
    form = validate(AdjudicationForm, known_fields(raw, ("csrf_token", "verdict", "note")))
    try:
        await run_sync(ctx(request).queue.adjudicate, boss, item_id, form.verdict, form.note)
    except UnknownItem as exc:
        raise HTTPException(404, str(exc)) from None
    except QueueError as exc:
        raise HTTPException(400, str(exc)) from None
    return RedirectResponse("/admin/adjudicate", status_code=303)
