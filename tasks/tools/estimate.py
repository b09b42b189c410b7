"""Build-time estimate: how much GPU time the pending edits need on the planned GPUs, and whether
that fits a time window (``reactbench preflight --window-h``; also printed when a build starts).

Pending edits are counted with the item keys the edit stage will use (tasks/stages/edit.py
``pending_items``), so items the reuse store holds cost nothing; a run without instructions yet
takes ``--items`` (instructions expected) or leaves the count unknown. Seconds per edit come from
``editors/timing.py`` with their source (measured | scaled | formula). Each model editor runs its
pending items on ``replicas`` copies of its memory plan side by side; the window advice scales the
time by steps (linear), by resolution (the FLOPs formula's ratio) and by GPU count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from editors.memory import GPUS_PER_REPLICA
from editors.timing import (
    SOURCES,
    EditCost,
    canonical_gpu,
    edit_cost,
    guess_gpu,
    load_table,
    manifest_entries,
    resolution_of,
)

if TYPE_CHECKING:
    from tasks.engine.build_config import BuildConfig

FEW_STEP_LORA_STEPS = (8, 4)  # published few-step distillations of Qwen-Image-Edit (Lightning LoRAs)
SMALLER_SIDES = (768, 512)


@dataclass
class EditorEstimate:
    key: str
    name: str
    plan: str | None  # None: no model (CPU work), or nothing fits
    replicas: int
    gpus_per_replica: int
    items: int | None
    pending: int | None
    steps: int | None
    resolution: int | None
    cost: EditCost
    params: Any = None

    @property
    def replica_seconds(self) -> float | None:
        if self.plan is None:
            return 0.0
        if self.pending is None or self.cost.s_per_edit is None:
            return None
        return self.pending * self.cost.s_per_edit


@dataclass
class BuildEstimate:
    gpu: str | None
    gpu_note: str
    gpus: int
    window_h: float | None
    pending_source: str  # run | --items | unknown
    editors: list[EditorEstimate] = field(default_factory=list)
    advice: list[str] = field(default_factory=list)

    @property
    def pending_edits(self) -> int | None:
        counts = [e.pending for e in self.editors]
        return None if not counts or any(c is None for c in counts) else sum(counts)  # type: ignore[misc]

    @property
    def models(self) -> list[EditorEstimate]:
        return [e for e in self.editors if e.plan is not None]

    @property
    def wall_h(self) -> float | None:
        parts = [e.replica_seconds for e in self.models]
        if any(p is None for p in parts):
            return None
        return round(sum(p / max(1, e.replicas) for p, e in zip(parts, self.models)) / 3600, 3)  # type: ignore[operator]

    @property
    def gpu_hours(self) -> float | None:
        parts = [e.replica_seconds for e in self.models]
        if any(p is None for p in parts):
            return None
        return round(sum(p * e.gpus_per_replica for p, e in zip(parts, self.models)) / 3600, 3)  # type: ignore[operator]

    @property
    def s_per_edit(self) -> float | None:
        """The model editors' seconds per edit (pending-weighted mean when there are several)."""
        ms = self.models
        if not ms or any(e.cost.s_per_edit is None for e in ms):
            return None
        weights = [e.pending or 0 for e in ms] if any(e.pending for e in ms) else [1] * len(ms)
        return round(sum(e.cost.s_per_edit * w for e, w in zip(ms, weights)) / sum(weights), 3)  # type: ignore[operator]

    @property
    def s_per_edit_source(self) -> str | None:
        """The weakest source among the model editors (a sum is only as good as its worst part)."""
        ms = self.models
        return max((e.cost.source for e in ms), key=SOURCES.index) if ms else None

    @property
    def fits_window(self) -> bool | None:
        if self.window_h is None or self.wall_h is None:
            return None
        return self.wall_h <= self.window_h

    def to_json(self) -> dict[str, Any]:
        return {
            "pending_edits": self.pending_edits,
            "s_per_edit": self.s_per_edit,
            "s_per_edit_source": self.s_per_edit_source,
            "gpu_hours": self.gpu_hours,
            "wall_h": self.wall_h,
            "fits_window": self.fits_window,
            "estimate_gpu": self.gpu,
            "fit_advice": self.advice,
        }

    def lines(self) -> list[str]:
        """The human-readable estimate (one line per editor, the total, the window advice)."""
        out = [
            f"build-time estimate on {self.gpu or 'an unknown GPU kind'} ({self.gpu_note}); pending items from {self.pending_source}:"
        ]
        for e in self.editors:
            if e.plan is None:
                out.append(f"  {e.key}: {e.pending if e.pending is not None else '?'} pending edit(s), no GPU model")
                continue
            s = f"{e.cost.s_per_edit:g} s/edit" if e.cost.s_per_edit is not None else "s/edit unknown"
            out.append(
                f"  {e.key}: {e.pending if e.pending is not None else '?'} pending edit(s) x {s} [{e.cost.source}: {e.cost.note}]; "
                f"{e.plan} x {e.replicas} replica(s), {e.steps} steps at {e.resolution} px"
            )
        if self.wall_h is not None:
            out.append(
                f"  total: {self.gpu_hours} GPU-hours, {self.wall_h} h wall on {self.gpus} GPU(s)"
                + (
                    ""
                    if self.window_h is None
                    else f"; {'fits' if self.fits_window else 'does NOT fit'} a {self.window_h:g} h window"
                )
            )
        out.extend(f"  to fit: {a}" for a in self.advice)
        return out


def _gpu(report: Any, gpu_name: str | None) -> tuple[str | None, str]:
    if gpu_name:
        return canonical_gpu(gpu_name) or gpu_name, "--gpu-name"
    if report.gpu_source == "torch.cuda":
        import torch

        name = torch.cuda.get_device_name(0)
        return canonical_gpu(name) or name, "torch.cuda"
    guess = guess_gpu(report.gpu_memory_gb) if report.gpus else None
    if guess:
        return guess, f"assumed from {report.gpu_memory_gb:g} GB: the slowest such card; pass --gpu-name"
    return None, "pass --gpu-name"


def _settings(params: Any, cls: Any = None) -> tuple[int | None, int | None]:
    steps = cls.edit_steps(params) if cls is not None else getattr(params, "steps", None)
    area = getattr(params, "process_area", None) or (1024 * 1024 if hasattr(params, "process_area") else None)
    return steps, resolution_of(area)


def estimate_build(
    cfg: BuildConfig,
    report: Any,
    *,
    run_dir: str | None = None,
    items: int | None = None,
    gpu_name: str | None = None,
    window_h: float | None = None,
) -> BuildEstimate:
    """The estimate for the editors of ``cfg`` under the plans ``report`` (a ``PreflightReport``) chose."""
    from editors.registry import editor_class

    gpu, note = _gpu(report, gpu_name)
    fits = {f.key: f for f in report.fits_list}
    plans = {k: (f.plan.layout, f.plan.quant) for k, f in fits.items() if f.plan is not None}
    pending, extra, source = _pending(cfg, run_dir, plans)
    if not pending and items is not None:
        pending, source = {e.key: (items, items) for e in cfg.editors}, "--items"
    table = load_table(extra)
    est = BuildEstimate(gpu, note, report.gpus, window_h, source)
    for spec in cfg.editors:
        cls = editor_class(spec.name)
        params = cls.Params.model_validate(dict(spec.params or {}))
        fit = fits.get(spec.key)
        total, todo = pending.get(spec.key, (None, None))
        steps, res = _settings(params, cls)
        if fit is None or fit.target != "cuda" or fit.plan is None:
            why = (
                "no GPU model"
                if fit is None
                else ("runs on the CPU" if fit.target != "cuda" else "no memory plan fits")
            )
            est.editors.append(
                EditorEstimate(
                    spec.key, spec.name, None, 0, 0, total, todo, steps, res, EditCost(None, "unknown", why), params
                )
            )
            continue
        flops = cls.edit_flops(params, spec.key)
        cost = edit_cost(table, gpu, spec.name, getattr(params, "model", None), fit.plan.name, steps, res, flops)
        gpr = GPUS_PER_REPLICA.get(fit.plan.layout, 1)
        est.editors.append(
            EditorEstimate(
                spec.key, spec.name, fit.plan.name, fit.plan.replicas, gpr, total, todo, steps, res, cost, params
            )
        )
    if est.fits_window is False:
        est.advice = window_advice(est)
    return est


def _pending(
    cfg: BuildConfig, run_dir: str | None, plans: dict[str, tuple[str, str]]
) -> tuple[dict[str, tuple[int, int]], list[Any], str]:
    """(per editor: items, pending), the run's own measured timings, where the counts came from."""
    if not run_dir:
        return {}, [], "unknown (pass --run-dir of a run with instructions, or --items)"
    from storage.fs import RunFS
    from tasks.engine.base import RunContext
    from tasks.stages.edit import EditStage, pending_items

    run = RunFS.open(run_dir)
    ctx = RunContext(run, cfg)
    extra = manifest_entries(EditStage().store(ctx).read_manifest())
    counts = pending_items(ctx, plans)
    return (
        counts,
        extra,
        (
            "the run's instructions and reuse store"
            if counts
            else "unknown (the run has no instructions yet; pass --items)"
        ),
    )


def window_advice(est: BuildEstimate) -> list[str]:
    """Settings that would bring the wall time under the window, each with its estimated hours."""
    wall, window = est.wall_h or 0.0, est.window_h or 0.0
    out: list[str] = []
    main = max(est.models, key=lambda e: e.replica_seconds or 0.0)
    if main.steps:
        need = math.floor(main.steps * window / wall)
        if need >= 1:
            out.append(
                f"steps {main.steps} -> {need} (~{wall * need / main.steps:.2f} h, s/edit taken as linear in steps)"
            )
        lora = ", ".join(f"{s} steps ~{wall * s / main.steps:.2f} h" for s in FEW_STEP_LORA_STEPS if s < main.steps)
        if lora:
            out.append(
                f"a few-step distillation LoRA (`lora:` in the editor params, with its steps and true_cfg_scale 1): {lora}"
                + (", about half that again without true CFG" if getattr(main.params, "true_cfg_scale", 0) > 1 else "")
            )
    base = type_flops(main, main.params)
    if base and main.resolution:
        for side in SMALLER_SIDES:
            if side < main.resolution:
                ratio = type_flops(main, main.params.model_copy(update={"process_area": side * side})) / base
                out.append(f"process_area {side}x{side} (~{wall * ratio:.2f} h, FLOPs ratio {ratio:.2f})")
    per = main.gpus_per_replica or 1
    replicas = math.ceil(max(1, main.replicas) * wall / window)
    out.append(
        f"--gpus {replicas * per} (~{wall * max(1, main.replicas) / replicas:.2f} h; {per} GPU(s) per replica under {main.plan})"
    )
    return out


def type_flops(e: EditorEstimate, params: Any) -> float | None:
    from editors.registry import editor_class

    return editor_class(e.name).edit_flops(params, e.key)
