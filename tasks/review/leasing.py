"""Leasing: which open items an annotator holds now, and taking new ones.

Open items come from the derived item-state table through its ``(stage, available, seq)``
index. A candidate list can be stale by the time an item is leased (on PostgreSQL the
candidate query's snapshot predates leases committed while it ran), so :func:`try_lease`
re-checks the item's capacity (decisions + live leases < k) in the leasing transaction; the
(item, slot) primary key of leases is the last line of defence.
"""

from __future__ import annotations

from typing import Any, Iterable

from sqlalchemy import delete, insert, select, text, update
from sqlalchemy.engine import Connection

from storage.review_db import ItemState, Lease
from tasks.review.rules import Account, check_stage

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


def candidate_ids(conn: Connection, user: Account, stage: str, k: int, now: float, limit: int, sqlite: bool) -> list[str]:
    """Up to ``limit`` open items ``user`` could lease (locked with SKIP LOCKED on PostgreSQL)."""
    sql = CANDIDATES_SQL + ("" if sqlite else " FOR UPDATE OF s SKIP LOCKED")
    return list(conn.execute(text(sql), {"stage": stage, "now": now, "k": k, "me": user.id, "limit": limit}).scalars())


def try_lease(conn: Connection, item_id: str, user: Account, stage: str, k: int, now: float, lease_seconds: float) -> bool:
    """Lease one slot of ``item_id`` to ``user`` when the item is still open and has capacity."""
    # one read for the item's state and all its lease slots; expired slots are freed
    rows = conn.execute(
        select(ItemState.available, ItemState.n, Lease.slot, Lease.expires_at)
        .outerjoin(Lease, Lease.item_id == ItemState.item_id)
        .where(ItemState.item_id == item_id)
    ).all()
    if not rows or not rows[0].available:
        return False
    if any(r.slot is not None and r.expires_at <= now for r in rows):
        conn.execute(delete(Lease).where(Lease.item_id == item_id, Lease.expires_at <= now))
    active = {r.slot for r in rows if r.slot is not None and r.expires_at > now}
    if rows[0].n + len(active) >= k:  # the capacity re-check: the candidate list may be stale
        return False
    slot = min(set(range(k)) - active)
    conn.execute(insert(Lease).values(item_id=item_id, slot=slot, annotator_id=user.id, stage=stage, leased_at=now, expires_at=now + lease_seconds))
    return True


def lease_from(conn: Connection, candidates: Iterable[str], user: Account, stage: str, k: int, now: float, lease_seconds: float) -> list[str]:
    """Lease what can still be leased of ``candidates``; returns the items leased."""
    return [i for i in candidates if try_lease(conn, i, user, stage, k, now, lease_seconds)]


class LeasingMixin:
    """``ReviewQueue.next_items``: renew the user's leases and top them up."""

    engine: Any
    k: int
    lease_seconds: float
    clock: Any
    _sqlite: bool

    def next_items(self, user: Account, stage: str, want: int = 2) -> list[str]:
        """Items leased to ``user`` in ``stage``, topped up to ``want`` (the first is shown, the
        second preloaded). Renews the user's leases in that stage."""
        check_stage(stage)
        return self._retry(lambda conn: self._next_items(conn, user, stage, want))  # type: ignore[attr-defined]

    def next_views(self, user: Account, stage: str, want: int = 2) -> list[Any]:
        """:meth:`next_items` and the items as pages show them, in one transaction (one
        database round of BEGIN / COMMIT per request instead of one per item)."""
        check_stage(stage)
        return self._retry(lambda conn: [self._get_item(conn, user, i) for i in self._next_items(conn, user, stage, want)])  # type: ignore[attr-defined]

    def _next_items(self, conn: Connection, user: Account, stage: str, want: int) -> list[str]:
        now = self.clock()
        renewed = conn.execute(
            update(Lease)
            .where(Lease.annotator_id == user.id, Lease.stage == stage)
            .values(expires_at=now + self.lease_seconds)
            .returning(Lease.item_id, Lease.leased_at)
        ).all()
        mine = [r.item_id for r in sorted(renewed, key=lambda r: (r.leased_at, r.item_id))]
        for _round in range(10):  # a candidate can turn out taken (PostgreSQL snapshot race); try the next ones
            need = want - len(mine)
            if need <= 0:
                break
            candidates = candidate_ids(conn, user, stage, self.k, now, need, self._sqlite)
            if not candidates:
                break
            mine += lease_from(conn, candidates, user, stage, self.k, now, self.lease_seconds)
        return mine[: max(want, 1)]

    def active_leases(self) -> int:
        from sqlalchemy import func

        with self._reader.connect() as conn:  # type: ignore[attr-defined]
            return int(conn.execute(select(func.count()).select_from(Lease).where(Lease.expires_at > self.clock())).scalar_one())
