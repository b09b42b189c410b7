"""Leasing: which open items an annotator holds now, and taking new ones.

Open items come from the derived item-state table through its ``(stage, available, seq)``
index. A candidate list can be stale by the time an item is leased (on PostgreSQL the
candidate query's snapshot predates leases committed while it ran), so :func:`try_lease`
re-checks the item's capacity (decisions + live leases < k) in the leasing transaction; the
(item, slot) primary key of leases is the last line of defence.

Every request of an annotator asks for the next item, so this runs in plain SQL
(:class:`storage.review_db.Sql`): on PostgreSQL ``BEGIN``, the renewal, the candidates (with
what the page shows of them), the capacity re-check, the lease and ``COMMIT``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, TypeVar

from storage.review_db import Sql, sql_transaction
from tasks.review.rules import Account, check_stage

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from tasks.review.views import ItemView

T = TypeVar("T")

# Tries of a request that found the stage's open items all locked by other transactions (each a
# few ms: a decision or a lease commits in about that); then it answers with nothing.
LOCKED_RETRIES = 25

# Open items the user has neither decided nor leased, with a free slot, in queue order.
CANDIDATES_SQL = """
SELECT s.item_id FROM review_item_state s
WHERE s.stage = :stage AND s.available = 1
  AND s.n + (SELECT count(*) FROM review_leases l WHERE l.item_id = s.item_id AND l.expires_at > :now) < :k
  AND NOT EXISTS (SELECT 1 FROM review_events d WHERE d.item_id = s.item_id AND d.kind = 'decision' AND d.annotator_id = :me)
  AND NOT EXISTS (SELECT 1 FROM review_leases m WHERE m.item_id = s.item_id AND m.annotator_id = :me)
ORDER BY s.seq
LIMIT :limit
"""

# The same candidates with what a page shows of them (items never change), so a new lease needs
# no second read of its item: it has no decision of the user (the candidates exclude those) and,
# re-checked and locked in this transaction, its outcome is pending.
CANDIDATE_ITEMS_SQL = CANDIDATES_SQL.replace(
    "SELECT s.item_id FROM review_item_state s",
    "SELECT s.item_id, i.stage, i.edit_id, i.task, i.variant, i.editor, i.payload_json FROM review_item_state s "
    "JOIN review_items i ON i.id = s.item_id",
)

_SLOTS_SQL = (
    "SELECT s.available, s.n, l.slot, l.expires_at FROM review_item_state s "
    "LEFT JOIN review_leases l ON l.item_id = s.item_id WHERE s.item_id = :item_id"
)
_RENEW_SQL = (
    "UPDATE review_leases SET expires_at = :expires_at WHERE annotator_id = :me AND stage = :stage "
    "RETURNING item_id, leased_at, expires_at"
)
_INSERT_LEASE_SQL = (
    "INSERT INTO review_leases (item_id, slot, annotator_id, stage, leased_at, expires_at) "
    "VALUES (:item_id, :slot, :me, :stage, :now, :expires_at)"
)


def candidate_rows(sql: Sql, user: Account, stage: str, k: int, now: float, limit: int) -> list[tuple]:
    """Up to ``limit`` open items ``user`` could lease, as (id, stage, edit_id, task, variant,
    editor, payload_json) rows (locked with SKIP LOCKED on PostgreSQL)."""
    text = CANDIDATE_ITEMS_SQL + (" FOR UPDATE OF s SKIP LOCKED" if sql.postgres else "")
    return sql.rows(text, {"stage": stage, "now": now, "k": k, "me": user.id, "limit": limit})


def candidate_ids(sql: Sql, user: Account, stage: str, k: int, now: float, limit: int) -> list[str]:
    """The ids of :func:`candidate_rows`."""
    return [r[0] for r in candidate_rows(sql, user, stage, k, now, limit)]


def try_lease(sql: Sql, item_id: str, user: Account, stage: str, k: int, now: float, lease_seconds: float) -> bool:
    """Lease one slot of ``item_id`` to ``user`` when the item is still open and has capacity."""
    # one read for the item's state and all its lease slots; expired slots are freed
    rows = sql.rows(_SLOTS_SQL, {"item_id": item_id})
    if not rows or not rows[0][0]:
        return False
    if any(r[2] is not None and r[3] <= now for r in rows):
        sql.run(
            "DELETE FROM review_leases WHERE item_id = :item_id AND expires_at <= :now",
            {"item_id": item_id, "now": now},
        )
    active = {r[2] for r in rows if r[2] is not None and r[3] > now}
    if rows[0][1] + len(active) >= k:  # the capacity re-check: the candidate list may be stale
        return False
    slot = min(set(range(k)) - active)
    sql.run(
        _INSERT_LEASE_SQL,
        {
            "item_id": item_id,
            "slot": slot,
            "me": user.id,
            "stage": stage,
            "now": now,
            "expires_at": now + lease_seconds,
        },
    )
    return True


def lease_from(
    sql: Sql, candidates: Iterable[str], user: Account, stage: str, k: int, now: float, lease_seconds: float
) -> list[str]:
    """Lease what can still be leased of ``candidates``; returns the items leased."""
    return [i for i in candidates if try_lease(sql, i, user, stage, k, now, lease_seconds)]


class LeasingMixin:
    """``ReviewQueue.next_items``: renew the user's leases and top them up."""

    engine: Engine
    k: int
    lease_seconds: float
    clock: Callable[[], float]

    def next_items(self, user: Account, stage: str, want: int = 2) -> list[str]:
        """Items leased to ``user`` in ``stage``, topped up to ``want`` (the first is shown, the
        second preloaded). Renews the user's leases in that stage."""
        check_stage(stage)

        def run(sql: Sql) -> tuple[list[str], bool]:
            _now, mine, busy = self._next(sql, user, stage, want)
            return [item_id for item_id, _ in mine], busy

        return self._leasing(run)

    def next_views(self, user: Account, stage: str, want: int = 2) -> list[ItemView]:
        """:meth:`next_items` and the items as pages show them, in one transaction."""
        check_stage(stage)

        def run(sql: Sql) -> tuple[list[ItemView], bool]:
            now, mine, busy = self._next(sql, user, stage, want)
            return [
                self._get_item(sql, user, item_id)
                if new is None  # held before: read with the user's lease and decision
                else self._leased_view(sql, new, now + self.lease_seconds)  # type: ignore[attr-defined]
                for item_id, new in mine
            ], busy

        return self._leasing(run)

    def _leasing(self, run: Callable[[Sql], tuple[list[T], bool]]) -> list[T]:
        """``run`` in a transaction, again (after a few ms) while it found nothing only because
        the open items were locked by other annotators' transactions: "nothing for you" must
        mean the stage has nothing open, not that a decision on its last item was in flight."""
        for attempt in range(LOCKED_RETRIES):
            found, busy = self._run(run)  # type: ignore[attr-defined]
            if not busy:
                break
            time.sleep(min(0.002 * (attempt + 1), 0.02))
        return found

    def _next(
        self, sql: Sql, user: Account, stage: str, want: int
    ) -> tuple[float, list[tuple[str, tuple | None]], bool]:
        """The time of the request, the user's items in the order they took them (item id, its
        candidate row when leased now, None when renewed), and whether nothing was found only
        because open items were locked (PostgreSQL's SKIP LOCKED passes over them)."""
        now = self.clock()
        renewed = sql.rows(_RENEW_SQL, {"expires_at": now + self.lease_seconds, "me": user.id, "stage": stage})
        mine: list[tuple[str, tuple | None]] = [(r[0], None) for r in sorted(renewed, key=lambda r: (r[1], r[0]))]
        for _round in range(10):  # a candidate can turn out taken (PostgreSQL snapshot race); try the next ones
            need = want - len(mine)
            if need <= 0:
                break
            candidates = candidate_rows(sql, user, stage, self.k, now, need)
            if not candidates:
                break
            mine += [
                (r[0], r) for r in candidates if try_lease(sql, r[0], user, stage, self.k, now, self.lease_seconds)
            ]
        busy = (
            not mine
            and sql.postgres
            and bool(sql.rows(CANDIDATES_SQL, {"stage": stage, "now": now, "k": self.k, "me": user.id, "limit": 1}))
        )
        return now, mine[: max(want, 1)], busy

    def active_leases(self) -> int:
        with sql_transaction(self.engine, write=False) as sql:
            return int(sql.row("SELECT count(*) FROM review_leases WHERE expires_at > :now", {"now": self.clock()})[0])  # type: ignore[index]
