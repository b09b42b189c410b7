"""Running an editor on a batch the way a GPU worker must: serialised model calls, inference mode,
out-of-memory handled by halving the batch and finally refusing the one item, and a single bad
item isolated instead of failing its neighbours, and a per-item time budget (``editors.budget``)
so one pathological item becomes an ``editor_timeout`` reject instead of stalling the shard."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from editors.base import EditFailure, Editor, EditorError, EditRequest, EditResult
from editors.budget import EditTimeout, run_within
from storage.oom import free_memory, is_out_of_memory

Outcome = EditResult | EditFailure


def limit_opencv_threads() -> None:
    """One OpenCV thread per caller. OpenCV's own pool spins between calls and competes with
    torch's OpenMP threads: measured 2-4x slower model calls on a 2-core CPU with it on
    (benchmarks/edit_overhead.py). Parallelism comes from shards and the stage's I/O threads."""
    import cv2

    if cv2.getNumThreads() != 1:
        cv2.setNumThreads(1)


def _invoke(
    editor: Editor, requests: Sequence[EditRequest], start: Callable[[], None] = lambda: None
) -> list[Outcome]:
    """The editor call itself; ``start`` marks when its time budget starts (after the model lock)."""
    if editor.uses_model:  # pipelines keep scheduler state: one call at a time per model
        import torch

        with editor.lock, torch.inference_mode():
            start()
            return editor.edit_batch(list(requests))
    start()  # stateless CPU editors run on every worker thread at once
    return editor.edit_batch(list(requests))


def _call(editor: Editor, requests: Sequence[EditRequest]) -> list[Outcome]:
    budget = getattr(editor, "time_budget_s", None)
    if budget:
        out = run_within(
            budget * len(requests),
            lambda start: _invoke(editor, requests, start),
            f"editor {editor.name!r} on {len(requests)} item(s)",
        )
    else:
        out = _invoke(editor, requests)
    if len(out) != len(requests):
        raise EditorError(f"editor {editor.name!r} returned {len(out)} results for {len(requests)} requests")
    return out


def run_batch(editor: Editor, requests: Sequence[EditRequest]) -> list[Outcome]:
    """One outcome per request, in order. OOM halves the batch and retries; a single item that
    still runs out of memory becomes ``out_of_memory``; a batch over its time budget is retried
    item by item and an item over its own budget becomes ``editor_timeout``; any other error on
    a batch is retried item by item so only the culprit becomes ``editor_failed``. ``EditorError`` (bad config,
    missing weights) concerns every item and propagates."""
    todo = [(i, r) for i, r in enumerate(requests)]
    outcomes: list[Outcome | None] = [None] * len(requests)
    runnable = []
    for i, r in todo:
        refused = editor.supports(r)
        if refused is not None:
            outcomes[i] = refused
        else:
            runnable.append((i, r))
    for (i, _), outcome in zip(runnable, _run([r for _, r in runnable], editor)):
        outcomes[i] = outcome
    return outcomes  # type: ignore[return-value]


def _run(requests: list[EditRequest], editor: Editor) -> list[Outcome]:
    if not requests:
        return []
    try:
        return _call(editor, requests)
    except EditorError:
        raise
    except EditTimeout as exc:
        if len(requests) == 1:
            return [
                EditFailure(
                    "editor_timeout", f"{exc} (time_budget_s {getattr(editor, 'time_budget_s', None)} per item)"
                )
            ]
        out_t: list[Outcome] = []
        for r in requests:
            out_t.extend(_run([r], editor))
        return out_t
    except BaseException as exc:  # noqa: BLE001 - classify, then isolate
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        if is_out_of_memory(exc):
            free_memory()
            if len(requests) == 1:
                return [EditFailure("out_of_memory", f"{type(exc).__name__}: {str(exc)[:300]} (even alone)")]
            half = len(requests) // 2
            return _run(requests[:half], editor) + _run(requests[half:], editor)
        if len(requests) == 1:
            return [EditFailure("editor_failed", f"{type(exc).__name__}: {str(exc)[:500]}")]
        out: list[Outcome] = []
        for r in requests:
            out.extend(_run([r], editor))
        return out


def timed_batch(editor: Editor, requests: Sequence[EditRequest]) -> tuple[list[Outcome], float]:
    """:func:`run_batch` plus the wall seconds spent inside the editor."""
    started = time.perf_counter()
    out = run_batch(editor, requests)
    return out, time.perf_counter() - started


def encode_ahead(editor: Editor, batches: Sequence[Sequence[EditRequest]]) -> None:
    """Two-phase editors: embed every batch of a shard before the first edit (one encoder/denoiser
    swap per shard). A batch whose encoding fails is left to ``edit_batch``, which encodes it
    itself, so a failure there is classified per item as usual."""
    import torch

    with editor.lock, torch.inference_mode():
        for batch in batches:
            runnable = [r for r in batch if editor.supports(r) is None]
            if not runnable:
                continue
            try:
                editor.encode(runnable)  # type: ignore[attr-defined]
            except EditorError:
                raise
            except Exception:  # noqa: BLE001 - retried, and reported, by the edit call
                continue
