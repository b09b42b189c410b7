"""Seconds per edit on a given GPU kind: measured where someone measured it, else scaled from the
closest measured card by bf16 throughput, else a FLOPs formula; the source is always stated.

The measured figures live in ``editors/gpu_timings.json`` (filled by ``benchmarks/gpu_validate.py
--record`` and, from real builds, by copying the edit manifest's ``extra.timings`` with
``gpu_validate.py --from-manifest``); a preflight with ``--run-dir`` also reads that run's own
manifest. Nothing in the table is guessed: it starts empty, so until a CUDA machine has run the
script every estimate is ``formula``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

TABLE = Path(__file__).with_name("gpu_timings.json")
# Dense bf16 tensor-core peak (TFLOPS, FP32 accumulate, no sparsity) and memory (GB), from the
# vendors' datasheets. Longest names are matched first ("H100 PCIe" before "H100").
GPU_SPECS: dict[str, tuple[float, float]] = {
    "H200": (989.0, 141.0),
    "H100 PCIe": (756.0, 80.0),
    "H100": (989.0, 80.0),
    "A100": (312.0, 80.0),
    "L40S": (362.0, 48.0),
    "A40": (149.7, 48.0),
    "RTX A6000": (154.8, 48.0),
    "A6000": (154.8, 48.0),
    "RTX 4090": (165.2, 24.0),
    "L4": (121.0, 24.0),
    "A10": (125.0, 24.0),
}
# Fraction of the bf16 peak a diffusion transformer reaches at these sequence lengths (8k tokens
# at 1024 px): an assumption, replaced by measurements as soon as a card has been measured.
ASSUMED_MFU = 0.4
SOURCES = ("measured", "scaled", "formula", "unknown")  # best first


@dataclass
class TimingEntry:
    """One measured figure: an editor (and model) under a memory plan at a step count and resolution."""

    gpu: str
    editor: str
    model: str | None
    plan: str
    steps: int | None
    resolution: int | None  # side of the working area in pixels (1024 = ~1024x1024)
    s_per_edit: float
    source: str = "gpu_validate"  # gpu_validate | build
    measured_at: str | None = None


@dataclass
class EditCost:
    """Seconds per edit and where the figure came from (``measured | scaled | formula | unknown``)."""

    s_per_edit: float | None
    source: str
    note: str


def canonical_gpu(name: str | None) -> str | None:
    """``"NVIDIA H100 80GB HBM3"`` -> ``"H100"``; None for a card not in :data:`GPU_SPECS`."""
    if not name:
        return None
    up = name.upper()
    for key in sorted(GPU_SPECS, key=len, reverse=True):
        if key.upper() in up:
            return "RTX A6000" if key == "A6000" else key
    return None


def guess_gpu(memory_gb: float) -> str | None:
    """The slowest known card with this much memory (a conservative estimate when no name is given)."""
    same = [k for k, (_, mem) in GPU_SPECS.items() if abs(mem - memory_gb) <= 2 and k != "A6000"]
    return min(same, key=lambda k: GPU_SPECS[k][0], default=None)


def tflops(gpu: str | None) -> float | None:
    key = canonical_gpu(gpu)
    return GPU_SPECS[key][0] if key else None


def device_name(device: str) -> str:
    """The GPU's name (``torch.cuda.get_device_name``) for a CUDA device, else ``"cpu"``."""
    if not str(device).startswith("cuda"):
        return "cpu"
    import torch

    return torch.cuda.get_device_name(torch.device(device).index or 0)


def resolution_of(area: int | None) -> int | None:
    """Side in pixels of a square working area (what the table and the window advice speak in)."""
    return None if area is None else round(math.sqrt(area))


def load_table(extra: Iterable[TimingEntry] = (), path: Path = TABLE) -> list[TimingEntry]:
    """The packaged measured figures plus ``extra`` (e.g. the current run's manifest)."""
    doc = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"entries": []}
    return [TimingEntry(**e) for e in doc.get("entries", [])] + list(extra)


def record(entries: Iterable[TimingEntry], path: Path = TABLE) -> int:
    """Append measured figures on real GPUs to the table (CPU figures are not GPU timings); returns how many."""
    doc = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"entries": []}
    new = [asdict(e) for e in entries if e.gpu != "cpu" and e.s_per_edit > 0]
    doc["entries"] = [*doc.get("entries", []), *new]
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return len(new)


def manifest_entries(manifest: dict[str, Any] | None) -> list[TimingEntry]:
    """The timing records an edit manifest holds (``extra.timings``: one per editor and GPU)."""
    timings = ((manifest or {}).get("extra") or {}).get("timings") or {}
    out = []
    for rec in timings.values():
        if rec.get("items") and rec.get("seconds") is not None:
            out.append(
                TimingEntry(
                    rec["gpu"],
                    rec["editor"],
                    rec.get("model"),
                    rec.get("plan") or "single",
                    rec.get("steps"),
                    rec.get("resolution"),
                    round(rec["seconds"] / rec["items"], 4),
                    "build",
                    (manifest or {}).get("finished_at"),
                )
            )
    return out


def _steps_scaled(entry: TimingEntry, steps: int | None) -> float:
    """s/edit at ``steps``, linear in the denoising steps (what dominates a diffusion edit)."""
    if steps and entry.steps:
        return entry.s_per_edit * steps / entry.steps
    return entry.s_per_edit


def edit_cost(
    table: list[TimingEntry],
    gpu: str | None,
    editor: str,
    model: str | None,
    plan: str,
    steps: int | None,
    resolution: int | None,
    flops: float | None,
) -> EditCost:
    """s/edit for this card and settings: measured, else scaled from the closest measured card by
    bf16 throughput, else ``flops`` / (peak x :data:`ASSUMED_MFU`)."""
    mine = canonical_gpu(gpu) or gpu
    same = [
        e for e in table if e.editor == editor and e.model == model and e.plan == plan and e.resolution == resolution
    ]
    here = [e for e in same if (canonical_gpu(e.gpu) or e.gpu) == mine]
    if here:
        e = min(here, key=lambda x: abs((x.steps or 0) - (steps or 0)))
        scaled = f", scaled from {e.steps} to {steps} steps" if steps and e.steps and e.steps != steps else ""
        return EditCost(round(_steps_scaled(e, steps), 3), "measured", f"measured on {e.gpu} ({e.source}){scaled}")
    peak = tflops(gpu)
    others = [e for e in same if tflops(e.gpu)]
    if peak and others:
        e = min(others, key=lambda x: abs(math.log(tflops(x.gpu) / peak)))  # type: ignore[operator]
        s = _steps_scaled(e, steps) * tflops(e.gpu) / peak  # type: ignore[operator]
        return EditCost(
            round(s, 3),
            "scaled",
            f"estimate: measured on {e.gpu}, scaled by bf16 throughput ({tflops(e.gpu):g} -> {peak:g} TFLOPS)",
        )
    if peak and flops:
        s = flops / (peak * 1e12 * ASSUMED_MFU)
        return EditCost(
            round(s, 3),
            "formula",
            f"estimate: {flops / 1e15:.1f} PFLOP per edit at {ASSUMED_MFU:.0%} of {canonical_gpu(gpu)}'s {peak:g} bf16 TFLOPS",
        )
    why = "unknown GPU kind (pass --gpu-name)" if not peak else f"no FLOPs formula for {editor!r}"
    return EditCost(None, "unknown", f"never measured, and {why}")
