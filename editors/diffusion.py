"""What the diffusers editors share: loading a pipeline (dtype, device, offload, LoRA) with clear
errors, per-item seeded generators, the per-step time-budget check, and bringing outputs back to
uint8 at the source size."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from editors.base import EditorError
from editors.budget import check_deadline
from editors.weights import pick_device, resolve_file, resolve_model, torch_dtype


def load_pipeline(
    cls: Any,
    model: str,
    editor: str,
    what: str,
    dtype: str,
    device: str,
    cpu_offload: str = "none",
    place: bool = True,
    **kwargs: Any,
) -> tuple[Any, str]:
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


def load_lora(pipe: Any, lora: str, editor: str, weight_name: str | None, scale: float) -> None:
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


def generators(seeds: Sequence[int]) -> list[Any]:
    """One CPU generator per item, so an item's noise does not depend on its batch neighbours."""
    import torch

    return [torch.Generator("cpu").manual_seed(int(s)) for s in seeds]


def stop_when_over_budget(pipe: Any, step: int, timestep: Any, callback_kwargs: dict[str, Any]) -> dict[str, Any]:
    """``callback_on_step_end`` of every diffusers call: an abandoned call (its item ran over
    ``time_budget_s``, editors/budget.py) stops at the next denoising step instead of holding
    the GPU for the rest of its steps."""
    check_deadline(f"denoising step {step + 1}")
    return callback_kwargs


def to_uint8(image: Any) -> np.ndarray:
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
