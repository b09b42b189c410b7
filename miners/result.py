"""What mining one source returns: candidates, statistics and rejects (``MineResult``).

Its own module so that the source registry (``miners/sources.py``) and every source can name it
without importing each other's readers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from miners.candidates import Selection
from storage.rejects import RejectRow
from storage.rows import CandidateRow


@dataclass
class MineResult:
    """Candidates and rejects as rows; the statistics as Arrow tables (the stage writes them as
    they are: VG has ~0.8M pair rows and ~1M attribute rows); ``pair_stats`` / ``attribute_stats``
    give them as rows for inspection."""

    candidates: list[CandidateRow] = field(default_factory=list)
    pair_table: pa.Table | None = None
    attribute_table: pa.Table | None = None
    rejects: list[RejectRow] = field(default_factory=list)
    summary: dict[str, object] = field(default_factory=dict)

    @property
    def pair_stats(self) -> list[dict[str, object]]:
        return self.pair_table.to_pylist() if self.pair_table is not None else []

    @property
    def attribute_stats(self) -> list[dict[str, object]]:
        return self.attribute_table.to_pylist() if self.attribute_table is not None else []

    def add(self, sel: Selection) -> None:
        self.candidates.extend(sel.rows)
        self.rejects.extend(sel.rejects)

    def source_summary(self, source: str, *, apart: tuple[str, ...] = ()) -> dict[str, object]:
        """The mine manifest's section of one source: ``{source: summary}`` (every count the source
        and its tasks' miners put in ``summary``, a plugin task's included), with the ``apart``
        keys as sections of their own."""
        out: dict[str, object] = {k: self.summary[k] for k in apart if k in self.summary}
        out[source] = {k: v for k, v in self.summary.items() if k not in apart}
        return out

    def finish(self) -> MineResult:
        """Sort rows and drop repeated rejects (one missing image can be met by several tasks)."""
        self.candidates.sort(key=lambda r: (r["task"], r["variant"], r["id"]))
        seen: set[tuple[str, str]] = set()
        rej = []
        for r in self.rejects:
            k = (r["id"], r["reason"])
            if k not in seen:
                seen.add(k)
                rej.append(r)
        self.rejects = sorted(rej, key=lambda r: (r["id"], r["reason"]))
        return self
