"""What the diffusers editors share: loading a pipeline (dtype, device, offload, quantization,
LoRA) with clear errors, per-item seeded generators, the per-step time-budget check, working
sizes and the patched working area, bringing outputs back to uint8 at the source size, and
:class:`DiffusionEditor`, the base of the editors with memory plans (plan choice, the ``load``
prologue, grouping by working size, the preflight profile)."""

from __future__ import annotations

import importlib
import threading
from abc import abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

import numpy as np
import numpy.typing as npt
from PIL import Image

from editors.base import EditFailure, Editor, EditorError, EditRequest, EditResult, missing_extra
from editors.budget import check_deadline
from editors.memory import Profile, choose
from editors.weights import pick_device, resolve_file, resolve_model, torch_dtype
from storage.config_base import Section

if TYPE_CHECKING:
    import torch
    from diffusers import DiffusionPipeline, PipelineQuantizationConfig

Dimensions = Callable[[int, float], tuple[int, ...]]  # diffusers' calculate_dimensions(area, ratio)

NATIVE_AREA = 1024 * 1024  # the ~1024x1024 working area the pipelines default to
_PATCH_LOCK = threading.Lock()


def load_pipeline(
    cls: type[DiffusionPipeline],
    model: str,
    editor: str,
    what: str,
    dtype: str,
    device: str,
    cpu_offload: str = "none",
    place: bool = True,
    **kwargs: object,
) -> tuple[DiffusionPipeline, str]:
    """``cls.from_pretrained`` on a resolved local folder or hub id; returns (pipeline, device).
    ``place=False`` leaves the components on the CPU (in ``device``'s dtype) for the caller to place."""
    ref = resolve_model(model, what, editor)
    dev = pick_device(device)
    try:
        pipe = cls.from_pretrained(ref, dtype=torch_dtype(dtype, dev), **kwargs)
    except (OSError, ValueError) as exc:
        raise EditorError(f"editor {editor!r}: cannot load {cls.__name__} from {ref!r}: {exc}") from exc
    if cpu_offload != "none":
        if not dev.startswith("cuda"):
            raise EditorError(
                f"editor {editor!r}: cpu_offload={cpu_offload!r} needs a CUDA device (device is {dev!r})"
            )
        (pipe.enable_model_cpu_offload if cpu_offload == "model" else pipe.enable_sequential_cpu_offload)()
    elif place:
        pipe.to(dev)
    pipe.set_progress_bar_config(disable=True)
    return pipe, dev


def load_lora(pipe: DiffusionPipeline, lora: str, editor: str, weight_name: str | None, scale: float) -> None:
    """Attach LoRA weights (local file or folder, or hub id) as one adapter at ``scale``."""
    path = Path(lora).expanduser()
    if path.is_file():
        ref = str(resolve_file(str(path), "LoRA weights", editor).parent)
        weight_name = weight_name or path.name
    elif path.exists():
        ref = str(path)
    else:
        ref = resolve_model(lora, "LoRA weights", editor)
    kwargs = {"weight_name": weight_name} if weight_name else {}
    try:
        pipe.load_lora_weights(ref, adapter_name="edit_lora", **kwargs)
    except (OSError, ValueError) as exc:
        raise EditorError(f"editor {editor!r}: cannot load LoRA {lora!r}: {exc}") from exc
    pipe.set_adapters(["edit_lora"], adapter_weights=[scale])


def generators(seeds: Sequence[int]) -> list[torch.Generator]:
    """One CPU generator per item, so an item's noise does not depend on its batch neighbours."""
    import torch

    return [torch.Generator("cpu").manual_seed(int(s)) for s in seeds]


def stop_when_over_budget(
    pipe: DiffusionPipeline, step: int, timestep: torch.Tensor | int, callback_kwargs: dict[str, torch.Tensor]
) -> dict[str, torch.Tensor]:
    """``callback_on_step_end`` of every diffusers call: an abandoned call (its item ran over
    ``time_budget_s``, editors/budget.py) stops at the next denoising step instead of holding
    the GPU for the rest of its steps."""
    check_deadline(f"denoising step {step + 1}")
    return callback_kwargs


def to_uint8(image: npt.ArrayLike) -> np.ndarray:
    arr = np.asarray(image)
    if arr.dtype != np.uint8:
        arr = (np.clip(arr, 0.0, 1.0) * 255.0).round().astype(np.uint8)
    return arr


def back_to_source(image: np.ndarray, width: int, height: int) -> tuple[np.ndarray, list[int]]:
    """Resize a model output to the source size; also return its raw [width, height]."""
    raw = [int(image.shape[1]), int(image.shape[0])]
    if raw != [width, height]:
        image = np.asarray(Image.fromarray(image, "RGB").resize((width, height), Image.Resampling.LANCZOS))
    return image, raw


def quantization_config(quant: str) -> PipelineQuantizationConfig | None:
    """diffusers' pipeline quantization config putting the transformer in 8 or 4 bits (None: none)."""
    if quant in ("none", "auto"):
        return None
    from diffusers import PipelineQuantizationConfig

    if quant == "int8":
        return PipelineQuantizationConfig(
            quant_backend="bitsandbytes_8bit",
            quant_kwargs={"load_in_8bit": True},
            components_to_quantize=["transformer"],
        )
    return PipelineQuantizationConfig(
        quant_backend="bitsandbytes_4bit",
        quant_kwargs={"load_in_4bit": True, "bnb_4bit_quant_type": "nf4", "bnb_4bit_compute_dtype": "bfloat16"},
        components_to_quantize=["transformer"],
    )


# ----------------------------------------------------------------------------- working sizes
def working_size(width: int, height: int, area: int, multiple: int = 16, min_side: int = 16) -> tuple[int, int]:
    """(width, height) near ``area`` pixels with the source's aspect, multiples of ``multiple``."""
    ratio = width / height
    w = (area * ratio) ** 0.5
    lo = max(multiple, -(-min_side // multiple) * multiple)
    return max(lo, int(round(w / multiple) * multiple)), max(lo, int(round(w / ratio / multiple) * multiple))


def _at_area(calculate: Dimensions, area: int) -> Dimensions:
    """``calculate_dimensions`` asked for ``area`` wherever the pipeline asks for ~1024x1024."""
    return lambda target, ratio: calculate(area if target == NATIVE_AREA else target, ratio)


@contextmanager
def patched_area(modules: Sequence[str], area: int | None, vae_at_area: bool = False) -> Iterator[None]:
    """Make pipelines whose module-level ``calculate_dimensions`` hard-codes ~1024x1024 work at
    ``area`` pixels for one call (Qwen's Plus module also keeps the condition / VAE sizes as
    constants: lowered to ``area``, or with ``vae_at_area`` the VAE size set to it). Swapped
    under a process-wide lock; model calls are serialised anyway."""
    if area is None or area == NATIVE_AREA or not modules:
        yield
        return
    mods = [importlib.import_module(m) for m in modules]
    with _PATCH_LOCK:
        saved = []
        for mod in mods:
            orig = mod.calculate_dimensions
            saved.append((mod, "calculate_dimensions", orig))
            mod.calculate_dimensions = _at_area(orig, area)
            for const in ("CONDITION_IMAGE_SIZE", "VAE_IMAGE_SIZE"):
                if hasattr(mod, const):
                    saved.append((mod, const, getattr(mod, const)))
                    grow = vae_at_area and const == "VAE_IMAGE_SIZE"
                    setattr(mod, const, area if grow else min(getattr(mod, const), area))
        try:
            yield
        finally:
            for mod, name, value in saved:
                setattr(mod, name, value)


class PlanParams(Protocol):
    """The params every editor with memory plans has (each family's pydantic ``Params``)."""

    @property
    def model(self) -> str: ...
    @property
    def dtype(self) -> str: ...
    @property
    def device(self) -> str: ...
    @property
    def memory_plan(self) -> str: ...
    @property
    def quantization(self) -> str: ...
    @property
    def process_area(self) -> int | None: ...
    @property
    def batch_size(self) -> int: ...
    @property
    def prompt_template(self) -> str: ...
    @property
    def lora(self) -> str | None: ...
    @property
    def lora_weight_name(self) -> str | None: ...
    @property
    def lora_scale(self) -> float: ...


# ----------------------------------------------------------------------------- the editor base
P = TypeVar("P", bound=PlanParams)


class DiffusionEditor(Editor, Generic[P]):
    """Base of the diffusers editors with memory plans (``editors/memory.py``): the plan chosen
    when the model loads, the ``load`` prologue (device, plan, quantization, offload, LoRA), the
    prompt, and requests grouped by working size. A family gives its pipeline class
    (:meth:`pipeline_class`), its working size (:meth:`_size`) and its preflight profile."""

    uses_model = True
    weights: ClassVar[str] = "model weights"  # what the `model` param names, for error messages
    plan_hint: ClassVar[str] = "lower process_area or batch_size"  # the fix when no plan fits
    profile_of: ClassVar[Callable[..., Profile]]  # the family's memory_profile(params, key, target)
    flops_of: ClassVar[Callable[..., float]]  # the family's edit_flops(params, key)
    layout: str
    quant: str
    device: str
    pipe: DiffusionPipeline
    params: P

    @classmethod
    def memory_profile(cls, params: Section, key: str, target: str) -> Profile:
        return cls.profile_of(params, key, target)

    @classmethod
    def edit_flops(cls, params: Section, key: str) -> float | None:
        return cls.flops_of(params, key)

    @staticmethod
    def plan_params(layout: str, quant: str) -> dict[str, str]:
        return {"memory_plan": layout, "quantization": quant}

    def _configured_plan(self) -> tuple[str, str]:
        """(layout, quantization) as the params ask, ``auto`` included."""
        return self.params.memory_plan, self.params.quantization

    def _plan_setting(self) -> str:
        """The setting that asked for model CPU offload, for the error on a machine without CUDA."""
        return "memory_plan='model_offload'"

    def _plan_gpus(self, layout: str) -> int:
        """The GPUs one replica may use when ``auto`` chooses a plan."""
        return 1

    def _resolve_plan(self, dev: str) -> tuple[str, str]:
        """(layout, quantization) for this load: as configured, or the fastest that fits the GPUs."""
        layout, quant = self._configured_plan()
        if not dev.startswith("cuda"):
            if quant in ("int8", "int4"):
                raise EditorError(
                    f"editor {self.name!r}: quantization={quant!r} needs a CUDA device (bitsandbytes); device is {dev!r}"
                )
            if layout == "model_offload":
                raise EditorError(
                    f"editor {self.name!r}: {self._plan_setting()} needs a CUDA device (device is {dev!r})"
                )
            return ("single" if layout == "auto" else layout), "none"
        if layout != "auto" and quant != "auto":
            return layout, quant
        import torch

        index = torch.device(dev).index or 0
        gpus = self._plan_gpus(layout)
        memory = torch.cuda.get_device_properties(index).total_memory / 1e9
        profile = self.memory_profile(self.params, self.name, "cuda")
        best, tried = choose(profile.components, gpus, memory, profile.layouts, profile.quants)
        if best is None:
            smallest = min(tried, key=lambda f: f.peak_gb)
            raise EditorError(
                f"editor {self.name!r}: no memory plan fits {gpus} GPU(s) of {memory:.1f} GB; the smallest, {smallest.name}, "
                f"needs {smallest.peak_gb} GB per GPU. Run `reactbench preflight` for the table; {self.plan_hint}."
            )
        return best.layout, best.quant

    @abstractmethod
    def pipeline_class(self, diffusers: ModuleType, ref: str) -> type[DiffusionPipeline]:
        """The diffusers pipeline class that loads ``ref`` (the resolved weights)."""

    def _offload(self) -> str:
        """``load_pipeline``'s ``cpu_offload`` for the chosen plan."""
        return "model" if self.layout == "model_offload" else "none"

    def load(self) -> None:
        try:
            import diffusers
            import torch  # noqa: F401
        except ImportError as exc:
            raise missing_extra(self.name, exc) from exc
        p = self.params
        ref = resolve_model(p.model, self.weights, self.name)
        cls = self.pipeline_class(diffusers, ref)
        dev = pick_device(p.device)
        self.layout, self.quant = self._resolve_plan(dev)
        extra: dict[str, object] = {}
        if self.quant != "none":
            extra["quantization_config"] = quantization_config(self.quant)
        place = self.layout not in ("split", "two_phase")
        pipe, device = load_pipeline(cls, ref, self.name, self.weights, p.dtype, dev, self._offload(), place, **extra)
        self.attach(pipe, device)
        if p.lora:
            load_lora(pipe, p.lora, self.name, p.lora_weight_name, p.lora_scale)

    def attach(self, pipe: DiffusionPipeline, device: str) -> None:
        """Make a loaded pipeline this editor's model (a family with split plans places it too)."""
        self.pipe, self.device = pipe, device

    def resolved_params(self) -> dict[str, str]:
        """The plan this load uses (recorded on every row, so runs on other hardware are told apart)."""
        self.ensure_loaded()
        return self.plan_params(self.layout, self.quant)

    def _prompt(self, req: EditRequest) -> str:
        return self.params.prompt_template.format(instruction=req.instruction, target_name=req.target_name or "")

    def _size(self, req: EditRequest) -> tuple[int, int]:
        """The (width, height) this family works on ``req`` at."""
        h, w = req.image.shape[:2]
        return working_size(w, h, self.params.process_area or NATIVE_AREA)

    def _groups(self, requests: Sequence[EditRequest]) -> list[tuple[tuple[int, int], list[int]]]:
        """Model calls: requests of one working size (the pipeline resizes a batch to its first
        image), in chunks of ``max_batch``."""
        groups: dict[tuple[int, int], list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault(self._size(r), []).append(i)
        step = self.max_batch
        return [(size, idx[k : k + step]) for size, idx in groups.items() for k in range(0, len(idx), step)]

    @property
    @abstractmethod
    def pipeline_label(self) -> str:
        """What each result's ``pipeline`` note says (the pipeline class or kind loaded)."""

    def _step_kwargs(self, reqs: Sequence[EditRequest], steps: int, budget: bool = True) -> dict[str, Any]:
        """The call arguments every family takes: steps, per-item generators, numpy output and
        (``budget``) the per-step time-budget check."""
        kw: dict[str, Any] = {
            "num_inference_steps": steps,
            "generator": generators([r.seed for r in reqs]),
            "output_type": "np",
        }
        if budget:
            kw["callback_on_step_end"] = stop_when_over_budget  # a call over its time budget stops at the next step
        return kw

    @staticmethod
    def _one_prompt(kw: dict[str, Any]) -> None:
        """Pipelines that edit one prompt per call take one generator and one negative prompt."""
        kw["generator"] = kw["generator"][0]
        if "negative_prompt" in kw:
            kw["negative_prompt"] = kw["negative_prompt"][0]

    def _run(
        self,
        image: Image.Image | list[Image.Image],
        prompt: str | list[str] | None,
        kw: dict[str, Any],
        modules: Sequence[str],
        vae_at_area: bool = False,
    ) -> list[np.ndarray]:
        """One pipeline call at the configured working area; outputs as uint8 arrays."""
        with patched_area(modules, self.params.process_area, vae_at_area):
            out = self.pipe(image=image, prompt=prompt, **kw).images
        return [to_uint8(o) for o in out]

    @abstractmethod
    def _call(
        self, reqs: Sequence[EditRequest], size: tuple[int, int]
    ) -> tuple[list[np.ndarray], list[np.ndarray | None]]:
        """One model call on ``reqs`` at working ``size``: the outputs and the masks edited inside."""

    def edit_batch(self, requests: Sequence[EditRequest]) -> list[EditResult | EditFailure]:
        self.ensure_loaded()
        results: list[EditResult | EditFailure | None] = [None] * len(requests)
        for size, part in self._groups(requests):
            outs, masks = self._call([requests[i] for i in part], size)
            for i, img, mask in zip(part, outs, masks):
                h, w = requests[i].image.shape[:2]
                out, raw = back_to_source(img, w, h)
                if mask is not None:  # inpaint: pixels outside the mask are the source's
                    out = np.where(mask[..., None], out, requests[i].image)
                meta = {"raw_size": raw, "working_size": list(size), "pipeline": self.pipeline_label}
                results[i] = EditResult(np.ascontiguousarray(out), mask, meta)
        return results  # type: ignore[return-value]
