"""The card's YAML front matter keys a hub and a venue read, and the licence roll-up behind them.

The roll-up goes over every source dataset of the released rows and every editor whose images are
released: one licence when they all share it, else ``other`` with each part named (and, for weights
that forbid commercial use or declare no licence, the card keeps its warning lines:
``tasks.release.export.licences``).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tasks.release.export.content import EditorStat
    from tasks.release.export.rows import ReleaseRow

# source -> hub licence id, licence URL, commercial use, hub source id, home page
SOURCE_LICENCES: dict[str, dict[str, Any]] = {
    "visual_genome": {
        "id": "cc-by-4.0",
        "url": "https://creativecommons.org/licenses/by/4.0/",
        "commercial": True,
        "hub": "extended|visual_genome",
        "home": "https://homes.cs.washington.edu/~ranjay/visualgenome/",
    },
    "coco": {
        "id": "cc-by-4.0",
        "url": "https://creativecommons.org/licenses/by/4.0/",
        "commercial": True,
        "hub": "extended|coco",
        "home": "https://cocodataset.org/",
    },
    "fsc147": {
        "id": "unknown",
        "url": "https://github.com/cvlab-stonybrook/LearningToCountEverything",
        "commercial": None,
        "hub": "extended|other-fsc147",
        "home": "https://github.com/cvlab-stonybrook/LearningToCountEverything",
    },
}
EDITOR_IDS = {"Apache-2.0": "apache-2.0", "MIT": "mit", "none (no model weights)": None}
TASK_IDS = {"MC": "multiple-choice-qa", "YN": "visual-question-answering", "SA": "visual-question-answering"}


def licence_rollup(sources: list[str], editors: list[EditorStat]) -> dict[str, Any]:
    """``id`` (hub licence id: the shared one, else ``other``), ``urls`` (Croissant ``license``),
    ``parts`` (one line per source and editor) and ``restricted`` (parts that are non-commercial
    or unknown). ``editors``: ``tasks.release.export.card.editor_stats`` entries with items released."""
    ids: list[str] = []
    urls: list[str] = []
    parts: list[str] = []
    restricted: list[str] = []
    for s in sources:
        info = SOURCE_LICENCES.get(s, {"id": "unknown", "url": None, "commercial": None})
        ids.append(info["id"])
        if info["url"]:
            urls.append(info["url"])
        parts.append(f"source {s}: {info['id']}")
        if info["commercial"] is not True:
            restricted.append(f"source {s}")
    for e in editors:
        lic = e["licence"]
        hub = EDITOR_IDS.get(lic.name, "other")
        if hub is not None:  # an editor without weights adds no licence of its own
            ids.append(hub)
            urls.append(lic.name)
        parts.append(f"editor {e['editor']}: {lic.label}")
        if lic.commercial_use is not True:
            restricted.append(f"editor {e['editor']}")
    distinct = sorted(set(ids))
    return {
        "id": distinct[0] if len(distinct) == 1 and distinct[0] not in ("unknown", "other") else "other",
        "urls": sorted(set(urls)),
        "parts": parts,
        "restricted": restricted,
    }


def front_matter(rows: list[ReleaseRow], editors: list[EditorStat], verified: bool) -> dict[str, Any]:
    """The header keys the card adds: task ids, size and source datasets, who annotated, and the
    licence roll-up (``license`` plus ``license_name`` / ``license_details`` when it is ``other``)."""
    sources = sorted({r["source"] for r in rows if r.get("source")})
    released = Counter(r.get("editor") for r in rows)
    rollup = licence_rollup(sources, [e for e in editors if released.get(e["editor"])])
    qtypes = sorted({r["qtype"] for r in rows})
    header: dict[str, Any] = {
        "license": rollup["id"],
        "task_ids": sorted({TASK_IDS[q] for q in qtypes if q in TASK_IDS}),
        "annotations_creators": ["machine-generated"] + (["expert-generated"] if verified else []),
        "language_creators": ["machine-generated"],
        "multilinguality": ["monolingual"],
        "source_datasets": [SOURCE_LICENCES.get(s, {}).get("hub", f"extended|other-{s}") for s in sources],
    }
    if rollup["id"] == "other":
        header["license_name"] = "reactbench-mixed"  # a slug, as the hub asks; the parts are in license_details
        header["license_details"] = "; ".join(rollup["parts"]) + (
            f". Restricted or unknown: {', '.join(rollup['restricted'])}" if rollup["restricted"] else ""
        )
    return header
