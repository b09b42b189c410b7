"""The admin dashboard's numbers, all derived from items and events on each request."""

from __future__ import annotations

import json
import statistics
import time
from collections import Counter, defaultdict
from typing import Any

from tasks.review.agreement import fleiss_kappa, pairwise_cohen
from tasks.review.queue import ReviewQueue
from tasks.review.rules import DECISION_KINDS, REASONS, RETIRED, STAGES, Account, current_decisions

IDLE_GAP_S = 600.0  # gaps longer than this between two decisions count as a break, not work


def _rate(acc: int, rej: int) -> float | None:
    return acc / (acc + rej) if acc + rej else None


def dashboard(queue: ReviewQueue, now: float | None = None) -> dict[str, Any]:
    """Progress per stage / task / editor, acceptance rates, reasons, throughput, agreement."""
    now = time.time() if now is None else now
    items = {r.id: r for r in queue.items()}
    res = queue.resolutions()
    users = queue.users()
    events = queue.events(kinds=DECISION_KINDS)
    current = current_decisions(events)
    stages = {stage: _stage_progress(items, res, stage) for stage in STAGES}
    return {
        "k": queue.k,
        "stages": stages,
        "by_task": _grouped(items, res, "task"),
        "by_editor": _grouped(items, res, "editor"),
        "by_task_editor": _grouped(items, res, "task+editor"),
        "reasons": _reason_rows(items, current),
        "throughput": _throughput(events, users, now),
        "agreement": {stage: _agreement(items, current, users, stage) for stage in STAGES},
        "active_leases": queue.active_leases(),
        "disputed": stages["edit"]["disputed"] + stages["qa"]["disputed"],
    }


def _name(users: dict[int, Account], uid: int) -> str:
    return users[uid].name if uid in users else str(uid)


def _stage_progress(items: dict[str, Any], res: dict[str, tuple[str, int]], stage: str) -> dict[str, Any]:
    """A stage's items by outcome (retired ones counted apart) and the fraction decided."""
    outcomes = Counter(res.get(i, ("pending", 0))[0] for i, it in items.items() if it.stage == stage)
    total = sum(1 for it in items.values() if it.stage == stage) - outcomes[RETIRED]
    return {
        "total": total,
        "accept": outcomes["accept"],
        "reject": outcomes["reject"],
        "disputed": outcomes["disputed"],
        "pending": total - outcomes["accept"] - outcomes["reject"] - outcomes["disputed"],
        "done_fraction": (outcomes["accept"] + outcomes["reject"]) / total if total else 0.0,
        "retired": outcomes[RETIRED],
    }


def _grouped(items: dict[str, Any], res: dict[str, tuple[str, int]], key: str) -> list[dict[str, Any]]:
    """Live edit items grouped by ``key`` (item fields joined by ``+``): outcomes and acceptance."""
    groups: dict[tuple, Counter] = defaultdict(Counter)
    for i, it in items.items():
        if it.stage != "edit" or res.get(i, ("pending", 0))[0] == RETIRED:
            continue
        k = tuple(getattr(it, f) for f in key.split("+"))
        groups[k]["total"] += 1
        groups[k][res.get(i, ("pending", 0))[0]] += 1
    rows = []
    for k, c in sorted(groups.items()):
        rows.append(
            {
                "key": " / ".join(k),
                "total": c["total"],
                "accept": c["accept"],
                "reject": c["reject"],
                "disputed": c["disputed"],
                "done_fraction": (c["accept"] + c["reject"]) / c["total"],
                "acceptance": _rate(c["accept"], c["reject"]),
            }
        )
    return rows


def _reason_rows(items: dict[str, Any], current: dict[str, dict[int, Any]]) -> list[dict[str, Any]]:
    """Per stage and reason code: how many current rejections name it, and their share."""
    reasons: dict[str, Counter] = {s: Counter() for s in STAGES}
    rejections: Counter[str] = Counter()
    for i, decs in current.items():
        st = items[i].stage if i in items else None
        for e in decs.values():
            if st and e.verdict == "reject":
                rejections[st] += 1
                reasons[st].update(json.loads(e.reasons_json or "[]"))
    return [
        {
            "stage": st,
            "reason": code,
            "label": REASONS.get(code, code),
            "count": reasons[st][code],
            "share": reasons[st][code] / rejections[st] if rejections[st] else 0.0,
        }
        for st in STAGES
        for code in REASONS
        if reasons[st][code]
    ]


def _throughput(events: list[Any], users: dict[int, Account], now: float) -> list[dict[str, Any]]:
    """Per annotator: decisions, those in the last hour, and the median working gap between two."""
    per_user: dict[int, list[float]] = defaultdict(list)
    for e in events:
        if e.kind == "decision":
            per_user[e.annotator_id].append(e.created_at)
    throughput = []
    for uid, times in sorted(per_user.items(), key=lambda kv: users[kv[0]].name if kv[0] in users else ""):
        times.sort()
        gaps = [b - a for a, b in zip(times, times[1:]) if b - a <= IDLE_GAP_S]
        throughput.append(
            {
                "annotator": _name(users, uid),
                "decisions": len(times),
                "last_hour": sum(1 for t in times if t >= now - 3600),
                "median_seconds": statistics.median(gaps) if gaps else None,
                "per_hour": 3600.0 / statistics.median(gaps) if gaps and statistics.median(gaps) > 0 else None,
            }
        )
    return throughput


def _agreement(
    items: dict[str, Any], current: dict[str, dict[int, Any]], users: dict[int, Account], stage: str
) -> dict[str, Any]:
    """A stage's agreement: Fleiss' kappa over items with several reviewers, Cohen's per pair."""
    labels: dict[str, dict[str, str]] = defaultdict(dict)
    multi = []
    for i, decs in current.items():
        if i not in items or items[i].stage != stage:
            continue
        for uid, e in decs.items():
            labels[_name(users, uid)][i] = e.verdict
        if len(decs) >= 2:
            multi.append([e.verdict for e in decs.values()])
    pairs = pairwise_cohen(labels, min_shared=2)
    return {
        "items": len(multi),
        "fleiss": fleiss_kappa(multi),
        "cohen": [{"a": a, "b": b, "kappa": k, "shared": n} for (a, b), (k, n) in sorted(pairs.items())],
    }
