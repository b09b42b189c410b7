"""The annotator pages: the next item, an item, deciding, undo, previous decision."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from tasks.review.bodies import MAX_EVENT_ID, DecisionForm, decision_form_data
from tasks.review.rules import Account, LeaseLost, NotAllowed, QueueError, UnknownItem
from tasks.review.validation import QuestionError
from tasks.review.views import ItemView
from tasks.review.web import check_csrf, check_stage, ctx, get_view, image_urls, public, render, run_sync, validate

router = APIRouter()
EventQuery = Annotated[int | None, Query(ge=0, le=MAX_EVENT_ID)]


def item_page(
    request: Request, view: ItemView, preload: list[ItemView], status: int = 200, **extra: Any
) -> HTMLResponse:
    user: Account = request.state.user
    return render(
        request,
        f"item_{view.stage}.html",
        status=status,
        stage=view.stage,
        item=public(view, user),
        preload=[image_urls(p) for p in preload],
        progress=ctx(request).queue.progress(user, view.stage),
        **extra,
    )


async def _csrf_form(request: Request) -> None:
    check_csrf((await request.form()).get("csrf_token"), request)


@router.get("/review/{stage}", response_class=HTMLResponse)
def review_next(request: Request, stage: str) -> Response:
    check_stage(stage)
    queue, user = ctx(request).queue, request.state.user
    views = queue.next_views(user, stage, want=2)
    if not views:
        return render(request, "empty.html", stage=stage, progress=queue.progress(user, stage))
    return item_page(request, views[0], views[1:])


@router.get("/review/{stage}/item/{item_id}", response_class=HTMLResponse)
def review_item(request: Request, stage: str, item_id: str, ev: EventQuery = None) -> Response:
    check_stage(stage)
    view = get_view(ctx(request).queue, request.state.user, item_id)
    if view.stage != stage:
        return RedirectResponse(f"/review/{view.stage}/item/{item_id}", status_code=303)
    return item_page(request, view, [], history_event=ev)


@router.post("/review/{stage}/item/{item_id}/decide")
async def review_decide(request: Request, stage: str, item_id: str) -> Response:
    check_stage(stage)
    raw = await request.form()
    check_csrf(raw.get("csrf_token"), request)
    form = validate(DecisionForm, decision_form_data(raw, with_questions=stage == "qa"))
    return await _decide(request, stage, item_id, form)


async def _decide(request: Request, stage: str, item_id: str, form: DecisionForm) -> Response:
    queue, user = ctx(request).queue, request.state.user
    updates = {qid: q.model_dump(exclude_none=True) for qid, q in form.questions.items()} if stage == "qa" else None
    try:
        await run_sync(
            lambda: queue.decide(user, item_id, form.verdict, list(form.reasons), form.note, question_updates=updates)
        )
    except QuestionError as exc:
        view = get_view(queue, user, item_id)
        return item_page(
            request,
            view,
            [],
            status=422,
            errors={exc.question_id: f"{exc.field}: {exc.message}"},
            submitted=updates or {},
            form_error=str(exc),
        )
    except LeaseLost as exc:
        return render(request, "error.html", status=409, code=409, message=str(exc), next_url=f"/review/{stage}")
    except UnknownItem as exc:
        raise HTTPException(404, str(exc)) from None
    except QueueError as exc:
        view = get_view(queue, user, item_id)
        return item_page(request, view, [], status=400, form_error=str(exc), submitted=updates or {})
    return RedirectResponse(f"/review/{stage}", status_code=303)


@router.post("/review/{stage}/undo")
async def review_undo(request: Request, stage: str) -> Response:
    check_stage(stage)
    await _csrf_form(request)
    try:
        item_id = await run_sync(ctx(request).queue.retract_last, request.state.user, stage)
    except NotAllowed as exc:
        raise HTTPException(409, str(exc)) from None
    return RedirectResponse(f"/review/{stage}/item/{item_id}" if item_id else f"/review/{stage}", status_code=303)


@router.get("/review/{stage}/previous")
def review_previous(request: Request, stage: str, before: EventQuery = None) -> Response:
    check_stage(stage)
    found = ctx(request).queue.previous(request.state.user, stage, before)
    if found is None:
        return RedirectResponse(f"/review/{stage}", status_code=303)
    item_id, event_id = found
    return RedirectResponse(f"/review/{stage}/item/{item_id}?ev={event_id}", status_code=303)
