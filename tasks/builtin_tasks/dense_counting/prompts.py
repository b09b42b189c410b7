"""DC's prompt: the ambiguity filter of a counting image, its answer schema and the offline
``rules`` backend's answer (named in ``task.py``)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

from pydantic import field_validator, model_validator

from tasks.plugin_api import (
    PromptOutput,
    PromptSpec,
    rules_answer,
)

TEMPLATES = str(Path(__file__).parent / "templates")  # the prompt templates this package ships


class DCAmbiguity(PromptOutput):
    has_ambiguity: bool
    severity: Literal["none", "mild", "moderate", "severe"]

    @field_validator("severity", mode="before")
    @classmethod
    def _lower(cls, v: object) -> object:
        return v.strip().strip(".").lower() if isinstance(v, str) else v

    @model_validator(mode="after")
    def _consistent(self) -> DCAmbiguity:
        if self.has_ambiguity != (self.severity in ("moderate", "severe")):
            raise ValueError("has_ambiguity must be false for severity none/mild and true for moderate/severe")
        return self

    @property
    def keep(self) -> bool:
        return self.severity in ("none", "mild")


DC_AMBIGUITY = PromptSpec("dc_ambiguity", "1", "dc_ambiguity.j2", DCAmbiguity, 1, template_dir=TEMPLATES)


@rules_answer("dc_ambiguity")
def dc_ambiguity(ctx: dict[str, object]) -> dict[str, object] | None:
    """Crowding as the ambiguity signal: median nearest-neighbour distance over the even spacing."""
    import numpy as np

    pts = np.asarray([[float(p[0]), float(p[1])] for p in ctx.get("points") or []], dtype=np.float64).reshape(-1, 2)
    w, h = ctx["width"], ctx["height"]
    outside = int(np.sum((pts[:, 0] < 0) | (pts[:, 0] > w) | (pts[:, 1] < 0) | (pts[:, 1] > h)))
    if len(pts) < 2:
        severity = "none"
    else:
        nn = np.empty(len(pts))
        for s in range(0, len(pts), 512):  # blocks keep memory flat for thousands of points
            d = np.hypot(pts[s : s + 512, None, 0] - pts[None, :, 0], pts[s : s + 512, None, 1] - pts[None, :, 1])
            d[np.arange(d.shape[0]), np.arange(s, s + d.shape[0])] = np.inf
            nn[s : s + d.shape[0]] = d.min(axis=1)
        spacing = math.sqrt(w * h / len(pts))
        ratio = float(np.sort(nn)[len(nn) // 2]) / max(spacing, 1e-9)
        severity = "none" if ratio >= 0.35 else "mild" if ratio >= 0.2 else "moderate" if ratio >= 0.1 else "severe"
    if outside and severity in ("none", "mild"):
        severity = "moderate"
    return {"has_ambiguity": severity in ("moderate", "severe"), "severity": severity}
