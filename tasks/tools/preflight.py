"""Preflight: will this config's build run on these GPUs, and is everything it names here?

Checks, in seconds and before any stage: every editor name resolves, its params validate, its
weights (local folders, LoRA files, SAM / LaMa files, hub ids when offline) are where the config
says; every model (editor components, a ``transformers`` MLLM backend) is sized on the meta device
and a memory plan is chosen for the GPUs (``torch.cuda``, or the ``--gpus`` / ``--gpu-memory-gb``
flags); an ``openai`` MLLM endpoint answers. ``build`` runs it when ``edit`` is among its stages.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from editors.base import EditorError
from editors.memory import GPUS_PER_REPLICA, RESERVE_GB, PlanFit, Profile, choose, gb
from editors.weights import cached_file, looks_like_path, resolve_file, resolve_model

if TYPE_CHECKING:
    from tasks.engine.build_config import BuildConfig

ESTIMATE_KEYS = ("pending_edits", "s_per_edit", "s_per_edit_source", "gpu_hours", "wall_h", "fits_window")

# ``reactbench preflight``'s exit status per verdict (2 stays a config or usage error, for every
# command): a nightly job gates on "fits" and tells "does not fit" from "could not be sized".
FITS, PROBLEMS, DOES_NOT_FIT, NOT_SIZED = "fits", "problems", "does not fit", "not sized"
EXIT_CODES = {FITS: 0, PROBLEMS: 1, DOES_NOT_FIT: 3, NOT_SIZED: 4}


@dataclass
class Problem:
    severity: str  # error | warning
    where: str
    detail: str


@dataclass
class ModelFit:
    key: str
    profile: Profile
    plan: PlanFit | None
    tried: list[PlanFit]
    target: str  # cuda | cpu


@dataclass
class PreflightReport:
    gpus: int
    gpu_memory_gb: float
    gpu_source: str
    fits_list: list[ModelFit] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    estimate: Any = None  # tasks.tools.estimate.BuildEstimate when edit runs
    unsized: list[str] = field(
        default_factory=list
    )  # models whose memory could not be sized (a missing extra or config)
    window_h: float | None = None  # the --window-h asked about, if any

    @property
    def fits(self) -> bool:
        return all(f.plan is not None for f in self.fits_list)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def ok(self) -> bool:
        return self.fits and not self.errors

    @property
    def verdict(self) -> str:
        """fits | does not fit (memory, or the --window-h) | not sized (a model, or the time asked
        about) | problems (something the config names is missing); the first that applies."""
        window = self.estimate.fits_window if self.estimate is not None else None
        if not self.fits or window is False:
            return DOES_NOT_FIT
        if self.unsized or (self.window_h is not None and window is None):
            return NOT_SIZED
        return PROBLEMS if self.errors else FITS

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    @property
    def plan(self) -> str:
        plans = [(f.key, f.plan.name if f.plan else "none fits") for f in self.fits_list] + [
            (k, "not sized") for k in self.unsized
        ]
        if not plans:
            return "no models"
        if len(plans) == 1:
            return plans[0][1]
        return ", ".join(f"{k}: {p}" for k, p in plans)

    @property
    def peak_gb(self) -> float:
        peaks = [f.plan.peak_gb if f.plan else min((t.peak_gb for t in f.tried), default=0.0) for f in self.fits_list]
        return max(peaks, default=0.0)

    def to_json(self) -> dict[str, Any]:
        models = {c.name: c.params for f in self.fits_list for c in f.profile.components}
        verdict = self.verdict
        return {
            "verdict": verdict,
            "exit_code": EXIT_CODES[verdict],
            # True only for a sized plan that fits; None when a model could not be sized
            "gpus": self.gpus,
            "gpu_memory_gb": self.gpu_memory_gb,
            "fits": None if self.unsized and self.fits else self.fits,
            "plan": self.plan,
            "peak_gb": self.peak_gb,
            "models": models,
            "ok": self.ok,
            "problems": [f"{p.severity}: {p.where}: {p.detail}" for p in self.problems],
            **(self.estimate.to_json() if self.estimate is not None else dict.fromkeys(ESTIMATE_KEYS)),
        }

    def verdict_line(self) -> str:
        """The verdict and its exit status, in one line (``reactbench preflight``'s last on stderr)."""
        why = {
            FITS: "every model has a memory plan"
            + (f" and the pending edits fit {self.window_h:g} h" if self.window_h is not None else ""),
            DOES_NOT_FIT: "; ".join(
                [
                    f"{f.key}: no memory plan fits {self.gpus} GPU(s) of {self.gpu_memory_gb:g} GB"
                    for f in self.fits_list
                    if f.plan is None
                ]
                + (
                    [f"the pending edits need {self.estimate.wall_h} h, over the {self.window_h:g} h window"]
                    if self.estimate is not None and self.estimate.fits_window is False
                    else []
                )
            ),
            NOT_SIZED: "; ".join(
                [f"{k}: its models could not be sized" for k in self.unsized]
                + (
                    ["the pending edits are unknown (give --items, or --run-dir of a run with instructions)"]
                    if self.window_h is not None and (self.estimate is None or self.estimate.fits_window is None)
                    else []
                )
            ),
            PROBLEMS: f"{len(self.errors)} error(s) above",
        }[self.verdict]
        return f"preflight: {self.verdict}: {why} (exit {self.exit_code})"

    def fix(self) -> str:
        """What to change, in one paragraph (printed when the build stops)."""
        lines = [f"{p.where}: {p.detail}" for p in self.errors]
        for f in self.fits_list:
            if f.plan is None:
                usable = [t for t in f.tried if self.gpus >= GPUS_PER_REPLICA.get(t.layout, 1)] or f.tried
                smallest = min(usable, key=lambda t: t.peak_gb)
                big = max(f.profile.components, key=lambda c: c.need(smallest.quant))
                lines.append(
                    f"{f.key}: no memory plan fits {self.gpus} GPU(s) of {self.gpu_memory_gb:g} GB ({self.gpu_memory_gb - RESERVE_GB:g} GB usable each); "
                    f"the smallest, {smallest.name}, needs {smallest.peak_gb} GB per GPU ({big.name} alone: {gb(big.need(smallest.quant)):.1f} GB). "
                    f"Use GPUs with more memory, lower process_area / batch_size"
                    + (", or allow quantization (quantization: auto)." if len(f.profile.quants) < 3 else ".")
                )
        return "\n".join(lines)


CPU_ONLY = "CPU only: no model editor or transformers backend to place"


def gpu_needed(cfg: BuildConfig, stages: set[str]) -> bool:
    """Whether the stages that run place a model on a GPU: an editor with model weights (edit), or
    the ``transformers`` MLLM backend (instruct, qa). A CPU-only config (classical editors, the
    ``rules`` or ``openai`` backend) never imports torch for its preflight: that import alone
    costs ~1.7 CPU-s and ~730 MB, most of a CPU build's memory. An editor name that does not
    resolve counts as no GPU here; the preflight reports it as an error."""
    from editors.base import Editor
    from editors.registry import editor_class

    if "edit" in stages:
        for spec in cfg.editors:
            try:
                cls = editor_class(spec.name)
            except EditorError:
                continue
            if cls.uses_model or cls.memory_profile.__func__ is not Editor.memory_profile.__func__:  # type: ignore[attr-defined]
                return True
    return bool(stages & {"instruct", "qa"}) and cfg.mllm.backend == "transformers"


def detect_gpus(gpus: int | None, gpu_memory_gb: float | None) -> tuple[int, float, str]:
    """(count, memory per GPU in GB, where that came from): the flags win, else torch.cuda."""
    if gpus is not None or gpu_memory_gb is not None:
        if gpu_memory_gb is None:
            raise ValueError("--gpus needs --gpu-memory-gb (memory per GPU, in GB)")
        return (1 if gpus is None else gpus), float(gpu_memory_gb), "flags"
    try:
        import torch
    except ImportError:
        return 0, 0.0, "no torch: CPU"
    if not torch.cuda.is_available():
        return 0, 0.0, "no CUDA device: CPU"
    n = torch.cuda.device_count()
    mem = min(torch.cuda.get_device_properties(i).total_memory for i in range(n)) / 1e9
    return n, round(mem, 2), "torch.cuda"


def _check_model_ref(ref: str, what: str, key: str, known: bool) -> Problem | None:
    """A local folder must exist; a hub id must be cached when offline (built-in defaults are
    sized from their known architecture, but their weights are still needed to edit)."""
    where = f"editor {key!r}"
    try:
        resolve_model(ref, what, key)
    except EditorError as exc:
        return Problem("error", where, str(exc))
    if not looks_like_path(ref):
        if cached_file(ref, "model_index.json") is None and cached_file(ref, "config.json") is None:
            sized = "sized from its known architecture; " if known else ""
            return Problem(
                "warning",
                where,
                f"{what} {ref!r} is not in the local Hugging Face cache ({sized}downloaded when the stage starts)",
            )
    return None


def _editor_checks(name: str, params: Any, key: str) -> list[Problem]:
    """Files an editor's params name, checked without loading anything."""
    from editors.architectures import KNOWN

    where = f"editor {key!r}"
    out: list[Problem] = []
    model = getattr(params, "model", None)
    if isinstance(model, str):
        p = _check_model_ref(model, "model weights", key, model in KNOWN)
        if p:
            out.append(p)
    lora = getattr(params, "lora", None)
    if lora:
        path = Path(lora).expanduser()
        if not path.exists():
            if looks_like_path(lora):
                out.append(
                    Problem("error", where, f"LoRA weights not found at {str(path)!r}; fix `lora` or give a hub id")
                )
            else:
                p = _check_model_ref(lora, "LoRA weights", key, False)
                if p:
                    out.append(p)
    if name == "sam-lama":
        from editors.sam_lama import LAMA_ENV, LAMA_HINT, SAM_ENV, SAM_HINT

        files = [("LaMa TorchScript model", params.lama_model, LAMA_ENV, LAMA_HINT)]
        if params.use_sam:
            files.append(("SAM checkpoint", params.sam_checkpoint, SAM_ENV, SAM_HINT))
        for what, ref, env, hint in files:
            try:
                resolve_file(ref, what, key, env=env, hint=hint)
            except EditorError as exc:
                out.append(Problem("error", where, str(exc)))
    return out


def _fit(profile: Profile, gpus: int, memory: float, target: str) -> ModelFit:
    if target == "cpu":
        placement = {c.name: "cpu" for c in profile.components}
        peak = gb(
            sum(c.weight_bytes() for c in profile.components)
            + max((c.activation_bytes for c in profile.components), default=0)
        )
        plan = PlanFit("cpu", "none", round(peak, 2), [round(peak, 2)], placement, True)
        return ModelFit(profile.key, profile, plan, [plan], target)
    best, tried = choose(profile.components, gpus, memory, profile.layouts, profile.quants)
    return ModelFit(profile.key, profile, best, tried, target)


def _endpoint_problem(base_url: str | None, timeout_s: float = 3.0) -> Problem | None:
    """Any HTTP answer (even 401/404) means the server is there; no answer is a warning."""
    if not base_url:
        return Problem("error", "mllm", "backend openai needs mllm.base_url")
    url = base_url.rstrip("/") + "/models"
    try:
        urllib.request.urlopen(urllib.request.Request(url, method="GET"), timeout=timeout_s).close()  # noqa: S310 - configured URL
    except urllib.error.HTTPError:
        return None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return Problem(
            "warning",
            "mllm",
            f"endpoint {base_url} did not answer ({reason}); instruct and qa need it (cached answers excepted)",
        )
    return None


def _mllm_profile(cfg: BuildConfig) -> Profile:
    from editors.architectures import count_params, pipeline_configs
    from editors.memory import DTYPE_BYTES, Component, mllm_activation

    m = cfg.mllm
    configs = pipeline_configs(m.model, "MLLM weights", "mllm")
    spec = configs.components[0]
    target = "cuda" if m.device.startswith("cuda") else "cpu"
    dtype = m.dtype if m.dtype != "auto" else ("bfloat16" if target == "cuda" else "float32")
    text = spec.config.get("text_config") or spec.config
    heads = text.get("num_attention_heads", 1)
    head_dim = text.get("head_dim") or text.get("hidden_size", 0) // max(1, heads)
    act = mllm_activation(
        4096,
        text.get("hidden_size", 0),
        text.get("num_hidden_layers", 0),
        text.get("num_key_value_heads", heads) * head_dim,
        text.get("vocab_size", spec.config.get("vocab_size", 0)),
        m.batch_size,
        DTYPE_BYTES[dtype],
    )
    n, lin = count_params(spec)
    return Profile(
        "mllm", [Component("mllm/model", "model", n, lin, DTYPE_BYTES[dtype], act)], f"{m.model} ({configs.source})"
    )


def run_preflight(
    cfg: BuildConfig,
    gpus: int | None = None,
    gpu_memory_gb: float | None = None,
    stages: list[str] | None = None,
    *,
    run_dir: str | None = None,
    items: int | None = None,
    gpu_name: str | None = None,
    window_h: float | None = None,
) -> PreflightReport:
    """Check ``cfg`` (a ``BuildConfig``) for the stages that will run (all when None); with edit
    among them, also estimate the GPU time of its pending items (``tasks.tools.estimate``)."""
    from editors.registry import editor_class

    wanted = set(stages) if stages else {"mine", "instruct", "edit", "qa", "review"}
    if gpus is None and gpu_memory_gb is None and not gpu_needed(cfg, wanted):
        n, mem, source = 0, 0.0, CPU_ONLY
    else:
        n, mem, source = detect_gpus(gpus, gpu_memory_gb)
    report = PreflightReport(n, mem, source, window_h=window_h)
    if "edit" in wanted:
        for spec in cfg.editors:
            where = f"editor {spec.key!r}"
            try:
                cls = editor_class(spec.name)
                editor = cls(spec.params)
            except EditorError as exc:
                report.problems.append(Problem("error", where, str(exc)))
                continue
            report.problems.extend(_editor_checks(spec.name, editor.params, spec.key))
            device = getattr(editor.params, "device", "auto")
            target = "cpu" if n == 0 or str(device).startswith("cpu") else "cuda"
            try:
                profile = cls.memory_profile(editor.params, spec.key, target)
            except ImportError as exc:
                report.problems.append(
                    Problem(
                        "error",
                        where,
                        f"sizing its models needs the gpu extra: pip install 'reactbench-pipeline[gpu]' ({exc})",
                    )
                )
                report.unsized.append(spec.key)
                continue
            except EditorError as exc:
                report.problems.append(Problem("error", where, str(exc)))
                report.unsized.append(spec.key)
                continue
            if profile is not None:
                report.fits_list.append(_fit(profile, n, mem, target))
        _add_estimate(report, cfg, run_dir=run_dir, items=items, gpu_name=gpu_name, window_h=window_h)
    if wanted & {"instruct", "qa"}:
        if cfg.mllm.backend == "openai":
            p = _endpoint_problem(cfg.mllm.base_url)
            if p:
                report.problems.append(p)
        elif cfg.mllm.backend == "transformers":
            try:
                profile = _mllm_profile(cfg)
                report.fits_list.append(
                    _fit(profile, n, mem, "cuda" if n and cfg.mllm.device.startswith("cuda") else "cpu")
                )
            except (EditorError, ImportError) as exc:
                report.problems.append(Problem("error", "mllm", str(exc)))
                report.unsized.append("mllm")
    return report


def _add_estimate(report: PreflightReport, cfg: BuildConfig, **kwargs: Any) -> None:
    """The build-time estimate; a failure to estimate is a warning, never a refusal."""
    from tasks.tools.estimate import estimate_build

    try:
        report.estimate = estimate_build(cfg, report, **kwargs)
    except (EditorError, ImportError, OSError, ValueError) as exc:
        report.problems.append(Problem("warning", "estimate", f"no build-time estimate: {exc}"))


def table_rows(report: PreflightReport) -> list[tuple[str, str, str, str]]:
    """(component, params, bytes, placement) per component, under the chosen (or smallest) plan."""
    rows = []
    for f in report.fits_list:
        plan = f.plan or min(f.tried, key=lambda t: t.peak_gb)
        for c in f.profile.components:
            rows.append(
                (
                    c.name,
                    f"{c.params / 1e9:.3f} B",
                    f"{gb(c.weight_bytes(plan.quant)):.2f} GB + {gb(c.activation_bytes):.2f} GB act.",
                    plan.placement.get(c.name, "-"),
                )
            )
    return rows


def json_line(report: PreflightReport) -> str:
    return json.dumps(report.to_json())


class PreflightFailed(RuntimeError):
    """The config cannot run here: the message holds the problems and the fix; ``report`` the table."""

    def __init__(self, message: str, report: PreflightReport) -> None:
        super().__init__(message)
        self.report = report


def require_preflight(
    cfg: BuildConfig, stages: list[str] | None, run_dir: str | None = None
) -> PreflightReport | None:
    """The gate before a build (CLI and Prefect alike): raise ``PreflightFailed`` when ``edit`` will
    run and the config names something missing or no memory plan fits; the report (with the
    build-time estimate of ``run_dir``'s pending edits) otherwise, None when edit does not run."""
    if stages is not None and "edit" not in stages:
        return None
    report = run_preflight(cfg, stages=stages, run_dir=run_dir)
    if not report.ok:
        raise PreflightFailed(
            f"preflight failed, nothing was run:\n{report.fix()}\n(see `reactbench preflight --config ...` for the table)",
            report,
        )
    return report
