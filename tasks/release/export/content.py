"""What a release's descriptions (the dataset card, ``croissant.json``) are written about.

The export hands one :class:`ReleaseContent` to each writer instead of the same name, rows,
editor statistics and verification flag as separate arguments, so the card and the Croissant
file cannot be handed two different views of one release.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from tasks.release.export.rows import ReleaseRow

if TYPE_CHECKING:
    from editors.licences import Licence


class EditorStat(TypedDict):
    """One editor's line in the card and ``croissant.json`` (:func:`tasks.release.export.card.editor_stats`):
    edits made, auto-QC pass rate and human acceptance (percent), its weights' licence, its parameters
    (the recorded JSON, or the list of them when its rows differ)."""

    editor: str
    name: str
    edits: int
    auto_qc_pass_rate: float | None
    human_acceptance: float | None
    licence: Licence
    params: str | list[str]


@dataclass(frozen=True)
class ReleaseContent:
    """One release as its descriptions see it.

    ``rows``: the released rows in release order, text only (:func:`tasks.release.export.rows.release_row`);
    ``editors``: per-editor statistics (:func:`tasks.release.export.card.editor_stats`);
    ``guid``: the canary's GUID; ``measured_biases``: the health figures' sentences for
    ``rai:dataBiases`` (:func:`tasks.release.health.figures.health_biases_text`)."""

    name: str
    rows: list[ReleaseRow]
    editors: list[EditorStat]
    verified: bool
    guid: str = ""
    measured_biases: Sequence[str] = ()
