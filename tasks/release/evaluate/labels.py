"""What an evaluated model is, in words a reader of a report cannot miss.

The offline ``rules`` backend answers from the item's annotations (the dense-counting truth, the
objects before the edit): it is an ORACLE, not a baseline, and every report that shows it says so.
A ``--blind`` run (the language-only run: images and annotations withheld) is labelled as such
beside it; a blind ``rules`` run reads no annotations, so it is no oracle.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from storage import addresses
from storage.fs import RunFS

if TYPE_CHECKING:
    from tasks.release.evaluate.summary import Metrics

ORACLE_BACKENDS = ("rules",)  # answers read from the annotations, not from the image
ORACLE_LABEL = "ORACLE (reads the annotations, not the image)"
BLIND_LABEL = "BLIND (images withheld: answered from the question text alone)"


def is_oracle(backend: str | None) -> bool:
    """Whether answers of ``backend`` come from the annotations rather than from looking."""
    return (backend or "") in ORACLE_BACKENDS


def model_labels(backend: str | None, blind: bool) -> dict[str, Any]:
    """The ``metrics.json`` keys that say what the model is: ``oracle``, ``blind`` and ``label``
    (the words, or None for an ordinary model run with its images)."""
    oracle = is_oracle(backend) and not blind  # a blind run withholds the annotations too
    words = [w for w, on in ((ORACLE_LABEL, oracle), (BLIND_LABEL, blind)) if on]
    return {"oracle": oracle, "blind": bool(blind), "label": "; ".join(words) or None}


def metrics_label(metrics: Metrics) -> str | None:
    """The label of a stored ``metrics.json`` (older files without one: derived from the backend)."""
    if "label" in metrics:
        return metrics["label"]
    return model_labels((metrics.get("model") or {}).get("backend"), bool(metrics.get("blind")))["label"]


def folder_label(run: RunFS, folder: str) -> str:
    """An evaluation folder's name for a report (``rules-rules-v1 [ORACLE (...)]``), its label read
    from its ``metrics.json`` (the bare name when there is none yet)."""
    path = folder if folder.startswith(addresses.evaluation("")) else addresses.evaluation(folder)
    try:
        label = metrics_label(json.loads(run.read_text(path, "metrics.json")))
    except (FileNotFoundError, ValueError):
        return folder
    return f"{folder} [{label}]" if label else folder
