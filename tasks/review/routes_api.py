"""The JSON API (keyboard client, load benchmark): next items, decide, progress."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import JSONResponse, Response

from tasks.review.bodies import DecisionBody
from tasks.review.rules import LeaseLost, QueueError, UnknownItem
from tasks.review.web import check_stage, csrf_header, ctx, public, run_sync, validate_json

router = APIRouter(prefix="/api")


@router.get("/next")
def api_next(request: Request, stage: str = "edit", want: Annotated[int, Query(ge=1, le=5)] = 1) -> Response:
    check_stage(stage)
    queue, user = ctx(request).queue, request.state.user
    return JSONResponse({"items": [public(view, user) for view in queue.next_views(user, stage, want=want)]})


@router.post("/items/{item_id}/decision")
async def api_decide(request: Request, item_id: str) -> Response:
    csrf_header(request)
    body = validate_json(DecisionBody, await request.body())
    queue = ctx(request).queue
    try:
        event_id = await run_sync(
            queue.decide, request.state.user, item_id, body.verdict, list(body.reasons), body.note
        )
    except LeaseLost as exc:
        raise HTTPException(409, str(exc)) from None
    except UnknownItem as exc:
        raise HTTPException(404, str(exc)) from None
    except QueueError as exc:
        raise HTTPException(400, str(exc)) from None
    return JSONResponse({"event_id": event_id})


@router.get("/progress")
def api_progress(request: Request, stage: str = "edit") -> Response:
    check_stage(stage)
    return JSONResponse(ctx(request).queue.progress(request.state.user, stage))
