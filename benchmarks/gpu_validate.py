"""Validate the model editors at real size on a CUDA device: memory per plan against the
preflight's prediction, seconds per denoising step and per edit, and CUDA against CPU pixels.

What it does (``--size real``, the default; one H100 run is meant to take under ~8 minutes):

1. Builds Qwen-Image-Edit-2511 (20.4 B transformer, 8.3 B Qwen2.5-VL text encoder, VAE) from
   the published configs the preflight keeps (``editors.architectures.KNOWN``), random weights
   created directly on the GPU in bf16 (``torch.device`` as the default device; no weights
   file, no hub, no CPU copy). The tokenizer is the offline one the tests train (token ids only
   need to be below the vocabulary size); the image processor is Qwen2-VL's default.
2. For every memory plan the card can run (``single``, ``two_phase``, ``model_offload``; ``split``
   with 2+ GPUs) it hands the pipeline to ``QwenImageEditEditor.attach`` and runs the editor's
   own call path (``encode_ahead`` then ``editors.runtime.run_batch``, as the edit stage does)
   at 512 and 1024 px for two small step counts, after one warm-up call. s/step is the
   difference of the two runs over the difference of the steps (the fixed part, text encoding
   and VAE, cancels); s/edit is the fixed part plus the configured steps x s/step (``two_phase``:
   its encoder <-> transformer round trip, timed alone, counted once per 256-item shard instead
   of once per one-item call). No plan starts after ``--budget-s`` (listed as skipped). Peak = ``torch.cuda.max_memory_allocated``
   over the 1024 px runs (all GPUs of the plan), against the preflight's figure for the same
   card and settings (``editors.memory.evaluate``: the numbers ``reactbench preflight``
   prints). Off by more than 10% is flagged. int8/int4 plans are listed as skipped: quantizing
   needs a saved checkpoint (diffusers quantizes while loading), which random weights are not.
3. SAM ViT-H (segment-anything's builder) and a LaMa stand-in of big-lama's size (about 46 M
   parameters of 3x3 convolutions at a quarter of the resolution: the real FFC network ships
   only as a TorchScript file) go through ``SamLamaEditor.edit_batch`` on a 500x375 image (Visual
   Genome's typical size): ``sam_lama_s_per_edit``.
4. Every diffusers-edit family (``FAMILY_MODELS``: FLUX.1 Kontext dev and its inpaint variant,
   FLUX.2 klein 4B / 9B and inpaint, LongCat-Image-Edit, Qwen-Image-Edit inpaint) is rebuilt
   from its published configs with random weights on the GPU and run through
   ``DiffusersEditEditor`` at 1024 px (single plan): ``families.<name>`` holds s/step, s/edit at
   the family's default steps, and the peak against the preflight's prediction.
5. The tiny random models (tests/tiny_checkpoints.py) edit the same requests on CUDA (bf16,
   ``two_phase``) and on the CPU (float32, ``single``): ``cuda_matches_cpu`` when the mean
   absolute pixel difference is at most ``--tolerance`` (4 levels of 255; bf16 against float32
   through two denoising steps of a random model; the CPU run of ``--size tiny`` prints the same
   figure for bf16 against float32 on the CPU, ``bf16_mean_abs_diff``).

``--size tiny`` runs every step with the tiny models on the CPU (plans the CPU cannot run are
listed as skipped; no memory figures), so the code path is tested in ``make test``
(tests/editors/test_gpu_validate.py). Ends with one JSON line:
``{"gpu", "plans": {plan: {"peak_gb", "predicted_gb", "s_per_step_<side>", "s_per_edit_<side>"}},
"families": {family: {"s_per_step_<side>", "s_per_edit_<side>", "peak_gb", ...}}, "sam_lama_s_per_edit", "cuda_matches_cpu", ...}``. ``--record`` appends the measured s/edit to
``editors/gpu_timings.json`` (the build-time estimate's table); ``--from-manifest FILE`` copies a
real build's edit-manifest timings there instead.

Imports stay light (torch, diffusers, transformers, accelerate, pydantic, segment-anything and the
project's ``editors`` package; no Prefect, pyarrow or fsspec), so ``benchmarks/gpu_validate.sh``
runs it on a CUDA machine's own Python after installing only the wheels in benchmarks/.wheels.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# The test helpers by file location, not as `tests.tiny_checkpoints` (a `tests` package installed by
# latex2sympy2 would shadow the repository's folder).
sys.path.insert(0, str(ROOT / "tests"))

FLAG = 0.10  # predicted vs measured peak: more than 10% off is a preflight bug
MODEL = "Qwen/Qwen-Image-Edit-2511"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@contextmanager
def materialise_on(device: str, dtype: Any) -> Iterator[None]:
    """New tensors are created on ``device`` in ``dtype``: a 20 B model is initialised in place on
    the GPU, never in float32 and never on the CPU."""
    import torch

    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            yield
    finally:
        torch.set_default_dtype(old)


def component_configs(size: str, tiny_folder: Path) -> dict[str, dict[str, Any]]:
    """The transformer / VAE / text-encoder configs to build: the published ones the preflight
    keeps (``editors.architectures.KNOWN``), or the tiny test pipeline's, read back from its folder."""
    from editors.architectures import KNOWN, pipeline_configs

    if size == "real":
        return {name: dict(cfg) for name, (_, _, cfg) in KNOWN[MODEL].items()}
    from tiny_checkpoints import build_qwen_image_edit

    if not (tiny_folder / "model_index.json").is_file():
        build_qwen_image_edit(tiny_folder, plus=True)
    return {c.name: c.config for c in pipeline_configs(str(tiny_folder), "tiny pipeline", "gpu_validate").components}


def build_pipeline(configs: dict[str, dict[str, Any]], device: str, dtype: Any) -> Any:
    """A QwenImageEditPlusPipeline built from ``configs`` with random weights created on ``device``
    in ``dtype``. The tokenizer is the offline one the tests train (token ids only need to be below
    the vocabulary size); the image processor is Qwen2-VL's default."""
    import torch
    from diffusers import (
        AutoencoderKLQwenImage,
        FlowMatchEulerDiscreteScheduler,
        QwenImageEditPlusPipeline,
        QwenImageTransformer2DModel,
    )
    from tiny_checkpoints import QWEN_SPECIAL, qwen_tokenizer
    from transformers import (
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2VLImageProcessor,
        Qwen2VLProcessor,
    )
    from transformers.models.qwen2_vl.video_processing_qwen2_vl import Qwen2VLVideoProcessor

    plain = lambda cfg: {k: v for k, v in cfg.items() if not k.startswith("_")}  # noqa: E731
    tokenizer = qwen_tokenizer()
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in QWEN_SPECIAL}
    te_cfg = Qwen2_5_VLConfig.from_dict(plain(configs["text_encoder"]))
    te_cfg.image_token_id, te_cfg.video_token_id = ids["<|image_pad|>"], ids["<|video_pad|>"]
    te_cfg.vision_start_token_id, te_cfg.vision_end_token_id = ids["<|vision_start|>"], ids["<|vision_end|>"]
    started = time.perf_counter()
    with materialise_on(device, dtype), torch.no_grad():
        transformer = QwenImageTransformer2DModel.from_config(plain(configs["transformer"]))
        vae = AutoencoderKLQwenImage.from_config(plain(configs["vae"]))
        encoder = Qwen2_5_VLForConditionalGeneration(te_cfg)
    n = sum(p.numel() for m in (transformer, vae, encoder) for p in m.parameters())
    log(
        f"built {n / 1e9:.2f} B parameters on {device} ({str(dtype).split('.')[-1]}) in {time.perf_counter() - started:.1f} s"
    )
    chat = "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    processor = Qwen2VLProcessor(
        image_processor=Qwen2VLImageProcessor(),
        tokenizer=tokenizer,
        video_processor=Qwen2VLVideoProcessor(),
        chat_template=chat,
    )
    pipe = QwenImageEditPlusPipeline(
        transformer=transformer.eval(),
        vae=vae.eval(),
        scheduler=FlowMatchEulerDiscreteScheduler(),
        text_encoder=encoder.eval(),
        tokenizer=tokenizer,
        processor=processor,
    )
    pipe.set_progress_bar_config(disable=True)
    return pipe


def tiny_pipeline(folder: Path, device: str, dtype: Any) -> Any:
    """The tiny random Plus pipeline loaded from its folder, as a downloaded one would be."""
    from diffusers import QwenImageEditPlusPipeline
    from tiny_checkpoints import build_qwen_image_edit

    if not (folder / "model_index.json").is_file():
        build_qwen_image_edit(folder, plus=True)
    pipe = QwenImageEditPlusPipeline.from_pretrained(folder, dtype=dtype).to(device)
    pipe.set_progress_bar_config(disable=True)
    return pipe


def requests(n: int, width: int, height: int, seed: int = 0) -> list[Any]:
    """Edit requests on seeded synthetic images (a grey scene with a coloured box to act on)."""
    import numpy as np

    from editors.base import EditRequest

    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        img = rng.integers(90, 140, size=(height, width, 3), dtype=np.uint8)
        box = (width * 0.3, height * 0.3, width * 0.3, height * 0.35)
        x, y, w, h = (int(v) for v in box)
        img[y : y + h, x : x + w] = rng.integers(0, 255, size=3, dtype=np.uint8)
        out.append(
            EditRequest(f"r{i}", img, "remove the box", "validate", "remove", seed + i, box=box, target_name="box")
        )
    return out


def qwen_editor(pipe: Any, plan: str, device: str, model: str) -> Any:
    """A QwenImageEditEditor running ``pipe`` under ``plan`` (its real call path; only loading is skipped)."""
    from editors.qwen_image_edit import QwenImageEditEditor

    ed = QwenImageEditEditor(
        {
            "model": model,
            "memory_plan": plan,
            "quantization": "none",
            "device": device,
            "pipeline": "plus",
            **({"text_encoder_device": "cuda:1"} if plan == "split" else {}),
        }
    )
    ed.kind, ed.layout, ed.quant = "plus", plan, "none"
    if plan == "model_offload":
        pipe.enable_model_cpu_offload(device=device)
    elif plan == "single":
        pipe.to(device)
    ed.attach(pipe, device)
    return ed


def run_editor(ed: Any, reqs: list[Any]) -> tuple[list[Any], float]:
    """The edit stage's editor calls: two-phase encoding first, then the batch; wall seconds."""
    from editors.base import EditResult
    from editors.runtime import encode_ahead, run_batch

    started = time.perf_counter()
    if ed.encodes_first:
        encode_ahead(ed, [reqs])
    out = run_batch(ed, reqs)
    seconds = time.perf_counter() - started
    bad = [o for o in out if not isinstance(o, EditResult)]
    if bad:
        raise RuntimeError(f"editor failed under plan {ed.layout}: {bad[0]}")
    return out, seconds


def cuda_sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def reset_peaks() -> None:
    import torch

    from storage.oom import free_memory

    free_memory()
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            torch.cuda.reset_peak_memory_stats(i)


def peak_gb(devices: list[int]) -> float | None:
    import torch

    if not torch.cuda.is_available():
        return None
    return round(max(torch.cuda.max_memory_allocated(i) for i in devices) / 1e9, 2)


def guarded(what: str, measure: Any) -> dict[str, Any]:
    """``measure()``, or ``{"error": ...}`` when it raises on a CUDA device: one failing plan (an
    out-of-memory, a driver error) must not cost the whole run its JSON line. On the CPU (the
    tiny run inside ``make test``) errors propagate, so the test sees them."""
    import torch

    if not torch.cuda.is_available():
        return measure()
    try:
        return measure()
    except Exception as exc:  # noqa: BLE001 - reported in the JSON line, the other plans go on
        log(f"{what} failed: {type(exc).__name__}: {exc}")
        reset_peaks()
        return {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}


def predicted_gb(model: str, plan: str, side: int, gpus: int, memory: float) -> float:
    """The preflight's per-GPU peak for this plan, card and working area (``editors.memory``)."""
    from editors.memory import evaluate
    from editors.qwen_image_edit import QwenImageEditParams, memory_profile

    params = QwenImageEditParams(
        model=model, pipeline="plus", process_area=side * side, dtype="bfloat16", memory_plan=plan, quantization="none"
    )
    profile = memory_profile(params, "validate", "cuda")
    return evaluate(profile.components, plan, "none", max(gpus, 2 if plan == "split" else 1), memory).peak_gb


def swap_seconds(ed: Any) -> float:
    """Two-phase plan: one encoder <-> transformer round trip (a shard of ``SHARD`` items pays it once)."""
    cuda_sync()
    started = time.perf_counter()
    ed._set_phase("encode")
    ed._set_phase("denoise")
    cuda_sync()
    return time.perf_counter() - started


SHARD = 256  # run.shard_size of configs/reactbench.yaml


def measure_plan(ed: Any, sides: list[int], probe: tuple[int, int], steps: int) -> dict[str, Any]:
    """s/step and s/edit per side (two step counts: the difference), peak memory at the largest side.
    One-item calls pay a two-phase swap each; s/edit counts it once per ``SHARD`` items instead."""
    out: dict[str, Any] = {}
    devices = sorted({0, 1} if ed.layout == "split" else {0})
    swap = swap_seconds(ed) if ed.layout == "two_phase" else 0.0
    if swap:
        out["swap_s"] = round(swap, 3)
    for side in sides:
        times = []
        for n in probe:
            ed.params = ed.params.model_copy(update={"steps": n, "process_area": side * side})
            reqs = requests(1, side, side)
            if side == max(sides) and n == max(probe):
                reset_peaks()
            cuda_sync()
            _, seconds = run_editor(ed, reqs)
            cuda_sync()
            times.append(seconds)
        per_step = max(0.0, (times[1] - times[0]) / (probe[1] - probe[0]))
        fixed = max(0.0, times[0] - probe[0] * per_step - swap * (1 - 1 / SHARD))
        out[f"s_per_step_{side}"] = round(per_step, 4)
        out[f"s_per_edit_{side}"] = round(fixed + steps * per_step, 3)
    out["peak_gb"] = peak_gb(devices)
    return out


def sam_lama_editor(size: str, device: str) -> Any:
    """SamLamaEditor with SAM (ViT-H, or the tiny test architecture) and a LaMa-sized stand-in, random weights, on ``device``."""
    import torch
    from segment_anything import SamPredictor, sam_model_registry

    from editors.sam_lama import SamLamaEditor

    sam_type = "vit_h"
    if size == "tiny":
        from tiny_checkpoints import register_tiny_sam

        sam_type = register_tiny_sam()
    # Built on the CPU and moved (2.6 GB for ViT-H): segment-anything makes buffers with the legacy
    # torch.Tensor constructor, which a default-device context does not reach.
    torch.manual_seed(0)
    with torch.no_grad():
        sam = sam_model_registry[sam_type](checkpoint=None).eval().to(device)
        lama = torch.jit.script(
            lama_standin(8 if size == "tiny" else 64, 1 if size == "tiny" else 9).eval().to(device)
        )
    ed = SamLamaEditor({"sam_model_type": sam_type, "device": device})
    ed.device, ed.lama, ed.predictor, ed._loaded = device, lama, SamPredictor(sam), True
    return ed


def lama_standin(width: int, blocks: int) -> Any:
    """LaMa's calling contract with big-lama's scale (width 64, 9 residual blocks at 8x width, a
    quarter of the resolution: ~46 M parameters); its FFC layers are not reproduced."""
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, c: int) -> None:
            super().__init__()
            self.a, self.b = nn.Conv2d(c, c, 3, padding=1), nn.Conv2d(c, c, 3, padding=1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.b(torch.relu(self.a(x)))

    class Standin(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            w = width
            self.down = nn.Sequential(
                nn.Conv2d(4, w, 7, padding=3),
                nn.ReLU(),
                nn.Conv2d(w, 2 * w, 3, 2, 1),
                nn.ReLU(),
                nn.Conv2d(2 * w, 4 * w, 3, 2, 1),
                nn.ReLU(),
                nn.Conv2d(4 * w, 8 * w, 3, 2, 1),
                nn.ReLU(),
            )
            self.mid = nn.Sequential(*[Block(8 * w) for _ in range(blocks)])
            self.up = nn.Sequential(
                nn.ConvTranspose2d(8 * w, 4 * w, 4, 2, 1),
                nn.ReLU(),
                nn.ConvTranspose2d(4 * w, 2 * w, 4, 2, 1),
                nn.ReLU(),
                nn.ConvTranspose2d(2 * w, w, 4, 2, 1),
                nn.ReLU(),
                nn.Conv2d(w, 3, 7, padding=3),
            )

        def forward(self, image: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            m = mask.to(image.dtype)
            fill = torch.sigmoid(self.up(self.mid(self.down(torch.cat([image * (1 - m), m], dim=1)))))
            return image * (1 - m) + fill * m

    return Standin()


def time_sam_lama(size: str, device: str) -> float:
    ed = sam_lama_editor(size, device)
    reqs = requests(2 if size == "tiny" else 4, 500, 375, seed=5)
    run_editor(ed, reqs[:1])  # warm-up (cuDNN autotune, allocator)
    cuda_sync()
    _, seconds = run_editor(ed, reqs)
    cuda_sync()
    return round(seconds / len(reqs), 4)


def compare_pixels(folder: Path, device: str, plan: str) -> float:
    """Mean absolute difference (0-255) between the tiny pipeline in bf16 on ``device`` under
    ``plan`` and in float32 on the CPU under ``single``, same requests and seeds."""
    import numpy as np
    import torch

    reqs = requests(2, 96, 72, seed=11)
    settings = {"steps": 2, "process_area": 64 * 64, "true_cfg_scale": 2.0}
    outs = []
    for dev, dtype, p in ((device, torch.bfloat16, plan), ("cpu", torch.float32, "single")):
        ed = qwen_editor(tiny_pipeline(folder, dev, dtype), p, dev, str(folder))
        ed.params = ed.params.model_copy(update=settings)
        outs.append([o.image.astype(np.float64) for o in run_editor(ed, reqs)[0]])
    return round(float(np.mean([np.abs(a - b).mean() for a, b in zip(*outs)])), 3)


# diffusers-edit families: (hub id of the published configs, tiny family folder of tests/tiny_checkpoints.py).
FAMILY_MODELS = {
    "flux-kontext": ("black-forest-labs/FLUX.1-Kontext-dev", "flux-kontext"),
    "flux-kontext-inpaint": ("black-forest-labs/FLUX.1-Kontext-dev", "flux-kontext-inpaint"),
    "flux2-klein-4b": ("black-forest-labs/FLUX.2-klein-4B", "flux2-klein"),
    "flux2-klein-9b": ("black-forest-labs/FLUX.2-klein-9B", "flux2-klein"),
    "flux2-klein-inpaint": ("black-forest-labs/FLUX.2-klein-4B", "flux2-klein-inpaint"),
    "longcat-image-edit": ("meituan-longcat/LongCat-Image-Edit", "longcat-image-edit"),
    "qwen-image-edit-inpaint": ("Qwen/Qwen-Image-Edit-2511", "qwen-image-edit-inpaint"),
}


def family_pipeline(family: str, size: str, folder: Path, device: str, dtype: Any) -> tuple[Any, str]:
    """(pipeline, model ref) of a diffusers-edit family: the tiny pipeline loaded from its folder,
    or (``real``) the same pipeline with every model component rebuilt from the published configs
    (``editors.architectures.KNOWN``) with random weights created on ``device``; tokenizers and
    processors stay the tiny ones (token ids only need to be below the vocabulary size)."""
    import diffusers
    import transformers
    from tiny_checkpoints import build_edit_family

    from editors.architectures import KNOWN
    from editors.diffusers_edit import FAMILIES, pipeline_name

    hub, tiny = FAMILY_MODELS[family]
    path = folder / tiny
    if not (path / "model_index.json").is_file():
        build_edit_family(path, tiny)
    cls = getattr(diffusers, FAMILIES[pipeline_name(str(path), "auto", "gpu_validate")].pipeline)
    pipe = cls.from_pretrained(path, dtype=dtype)
    if size == "real":
        plain = lambda cfg: {k: v for k, v in cfg.items() if not k.startswith("_")}  # noqa: E731
        parts = dict(pipe.components)
        started = time.perf_counter()
        for name, (lib, klass, cfg) in KNOWN[hub].items():
            if (
                name == "text_encoder" and lib == "transformers" and "vision_config" in cfg
            ):  # the tiny tokenizer's special-token ids
                cfg = dict(cfg) | {
                    k: getattr(parts[name].config, k)
                    for k in ("image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id")
                }
            with materialise_on(device, dtype), __import__("torch").no_grad():
                if lib == "diffusers":
                    parts[name] = getattr(diffusers, klass).from_config(plain(cfg))
                else:
                    k = getattr(transformers, klass)
                    parts[name] = k(k.config_class.from_dict(plain(cfg)))
            parts[name].eval()
        log(f"{family}: built {hub}'s components on {device} in {time.perf_counter() - started:.1f} s")
        pipe = cls(**parts)
    pipe.to(device)
    pipe.set_progress_bar_config(disable=True)
    return pipe, hub if size == "real" else str(path)


def family_editor(pipe: Any, model: str, device: str, area: int, steps: int) -> Any:
    """A DiffusersEditEditor running ``pipe`` (its real call path; only loading is skipped)."""
    from editors.diffusers_edit import DiffusersEditEditor

    ed = DiffusersEditEditor(
        {
            "model": model,
            "device": device,
            "memory_plan": "single",
            "quantization": "none",
            "process_area": area,
            "steps": steps,
        }
    )
    ed.pipe, ed.device, ed.layout, ed.quant, ed._loaded = pipe, device, "single", "none", True
    return ed


def measure_family(
    family: str, size: str, folder: Path, device: str, dtype: Any, side: int, probe: tuple[int, int], memory: float
) -> dict[str, Any]:
    """s/step, s/edit at the family's default steps and peak memory (single plan) at ``side`` px."""
    from editors.diffusers_edit import DiffusersEditParams, memory_profile
    from editors.memory import evaluate

    reset_peaks()
    pipe, model = family_pipeline(family, size, folder, device, dtype)
    ed = family_editor(pipe, model, device, side * side, 1)
    default_steps = ed.family.steps
    run_editor(ed, requests(1, side, side))  # warm-up
    secs = []
    for steps in probe:
        ed.params = ed.params.model_copy(update={"steps": steps})
        cuda_sync()
        secs.append(run_editor(ed, requests(1, side, side, seed=steps))[1])
    per_step = max(0.0, (secs[1] - secs[0]) / (probe[1] - probe[0]))
    fixed = max(0.0, secs[0] - probe[0] * per_step)
    fig: dict[str, Any] = {
        "pipeline": ed.family.pipeline,
        "default_steps": default_steps,
        f"s_per_step_{side}": round(per_step, 4),
        f"s_per_edit_{side}": round(fixed + default_steps * per_step, 3),
        "peak_gb": peak_gb([0]),
    }
    if size == "real":
        params = DiffusersEditParams(
            model=model, process_area=side * side, dtype="bfloat16", memory_plan="single", quantization="none"
        )
        fig["predicted_gb"] = evaluate(
            memory_profile(params, family, "cuda").components, "single", "none", 1, memory or 80.0
        ).peak_gb
        if fig["peak_gb"] is not None:
            fig["off_by"] = round(fig["peak_gb"] / fig["predicted_gb"] - 1, 3)
            fig["flag"] = abs(fig["off_by"]) > FLAG
    return fig


def plans_here(size: str) -> tuple[list[str], dict[str, str]]:
    """(plans this machine can run, skipped plan -> why)."""
    import torch

    skipped: dict[str, str] = {}
    cuda = torch.cuda.is_available() and size == "real"
    plans = ["single", "two_phase"]
    if cuda:
        plans.append("model_offload")  # last: its offload hooks stay on the modules
    else:
        skipped["model_offload"] = "needs CUDA"
    if cuda and torch.cuda.device_count() >= 2:
        plans.insert(1, "split")
    else:
        skipped["split"] = "needs 2+ GPUs"
    try:
        import bitsandbytes  # noqa: F401

        why = "quantization happens while loading a saved checkpoint; random weights have none (not measured)"
    except ImportError:
        why = "bitsandbytes is not installed"
    skipped.update({"int8": why, "int4": why})
    return plans, skipped


def validate(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    started = time.perf_counter()
    from editors.timing import device_name

    cuda = torch.cuda.is_available()
    if args.size == "real" and not cuda:
        raise SystemExit("--size real needs a CUDA device; use --size tiny on the CPU")
    device = "cuda:0" if cuda and args.size == "real" else "cpu"
    gpu = device_name(device)
    sides = [512, 1024] if args.size == "real" else [64, 96]
    probe = (2, 4) if args.size == "real" else (1, 2)
    memory = torch.cuda.get_device_properties(0).total_memory / 1e9 if cuda else 0.0
    gpus = torch.cuda.device_count() if cuda else 0
    plans, skipped = plans_here(args.size)
    result: dict[str, Any] = {
        "gpu": gpu,
        "size": args.size,
        "configured_steps": args.steps,
        "plans": {},
        "skipped": skipped,
    }
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    with tempfile.TemporaryDirectory(prefix="gpu-validate-") as tmp:
        tiny = Path(tmp) / "tiny-qwen-image-edit-plus"
        model = MODEL if args.size == "real" else str(tiny)
        if args.only_families:
            plans = []
            skipped.update({p: "--only-families" for p in ("single", "two_phase", "model_offload", "sam-lama")})
        pipe = build_pipeline(component_configs(args.size, tiny), device, dtype) if plans else None
        warm = (
            qwen_editor(pipe, "single", device, model) if plans else None
        )  # kernels, allocator, cuDNN autotune: before any timing
        if warm is not None:
            warm.params = warm.params.model_copy(update={"steps": 1, "process_area": min(sides) ** 2})
            run_editor(warm, requests(1, min(sides), min(sides)))
        for plan in plans:
            if time.perf_counter() - started > args.budget_s:
                skipped[plan] = f"out of time (--budget-s {args.budget_s:g})"
                continue
            log(f"plan {plan}: {probe} steps at {sides} px ...")
            fig = guarded(
                f"plan {plan}",
                lambda p=plan: measure_plan(qwen_editor(pipe, p, device, model), sides, probe, args.steps),
            )
            fig["predicted_gb"] = predicted_gb(model, plan, max(sides), gpus, memory or 80.0)
            if fig.get("peak_gb") is not None:
                fig["off_by"] = round(fig["peak_gb"] / fig["predicted_gb"] - 1, 3)
                fig["flag"] = abs(fig["off_by"]) > FLAG
            result["plans"][plan] = fig
        pipe = warm = None  # free the real-size models before SAM / LaMa
        reset_peaks()
        sam_lama = (
            {"s": None} if args.only_families else guarded("sam-lama", lambda: {"s": time_sam_lama(args.size, device)})
        )
        result["sam_lama_s_per_edit"] = sam_lama.get("s")
        if "error" in sam_lama:
            result["sam_lama_error"] = sam_lama["error"]
        families = [f for f in FAMILY_MODELS if not args.families or f in args.families.split(",")]
        result["families"] = {}
        side = 1024 if args.size == "real" else 64
        for family in families:
            if time.perf_counter() - started > args.budget_s + args.family_budget_s:
                result["skipped"][family] = "out of time (--family-budget-s)"
                continue
            log(f"family {family}: {probe} steps at {side} px ...")
            result["families"][family] = guarded(
                f"family {family}",
                lambda f=family: measure_family(
                    f, args.size, Path(tmp) / "families", device, dtype, side, probe, memory
                ),
            )
        if cuda and not args.skip_compare:
            diff = guarded("CUDA vs CPU", lambda: {"d": compare_pixels(tiny, "cuda:0", "two_phase")})
            result.update(
                cuda_mean_abs_diff=diff.get("d"),
                cuda_matches_cpu=None if "d" not in diff else diff["d"] <= args.tolerance,
            )
        else:
            result["cuda_matches_cpu"] = None  # no CUDA device here
            result["bf16_mean_abs_diff"] = compare_pixels(tiny, "cpu", "two_phase")
    result["tolerance"] = args.tolerance
    return result


def print_table(result: dict[str, Any]) -> None:
    log(f"\n{result['gpu']} ({result['size']}): peak memory and speed per memory plan")
    for plan, f in result["plans"].items():
        if "error" in f:
            log(f"  {plan:14s} FAILED: {f['error']}")
            continue
        speed = ", ".join(f"{k} {v}" for k, v in f.items() if k.startswith("s_per_"))
        mem = f"measured {f['peak_gb']} GB vs predicted {f['predicted_gb']} GB" + (
            " <- more than 10% off" if f.get("flag") else ""
        )
        log(
            f"  {plan:14s} {mem if f['peak_gb'] is not None else 'predicted ' + str(f['predicted_gb']) + ' GB (no CUDA: not measured)'}; {speed}"
        )
    for plan, why in result["skipped"].items():
        log(f"  {plan:14s} skipped: {why}")
    log(f"  sam-lama: {result['sam_lama_s_per_edit']} s/edit; CUDA matches CPU: {result['cuda_matches_cpu']}")
    for family, fig in result.get("families", {}).items():
        log(f"  {family}: {fig}")


def record_result(result: dict[str, Any], table: Path) -> int:
    from editors.timing import TimingEntry, record

    side = max(
        (int(k.rsplit("_", 1)[1]) for f in result["plans"].values() for k in f if k.startswith("s_per_edit_")),
        default=0,
    )
    entries = [
        TimingEntry(
            result["gpu"],
            "qwen-image-edit",
            MODEL,
            plan,
            result["configured_steps"],
            s,
            f[f"s_per_edit_{s}"],
            "gpu_validate",
            time.strftime("%Y-%m-%d"),
        )
        for plan, f in result["plans"].items()
        for s in (side // 2, side)
        if f"s_per_edit_{s}" in f
    ]
    return record(entries, table)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--size",
        choices=("real", "tiny"),
        default="real",
        help="real: published sizes on CUDA; tiny: test models on the CPU",
    )
    ap.add_argument(
        "--steps", type=int, default=40, help="configured denoising steps s/edit is extrapolated to (the paper: 40)"
    )
    ap.add_argument(
        "--tolerance",
        type=float,
        default=4.0,
        help="mean absolute pixel difference (0-255) allowed between CUDA bf16 and CPU float32",
    )
    ap.add_argument(
        "--budget-s",
        type=float,
        default=330,
        help="start no further plan after this many seconds (the rest are listed as skipped)",
    )
    ap.add_argument(
        "--families",
        default="",
        help="comma-separated diffusers-edit families to time (default: all of FAMILY_MODELS)",
    )
    ap.add_argument(
        "--only-families",
        action="store_true",
        help="time the diffusers-edit families only (no Qwen plans, no sam-lama)",
    )
    ap.add_argument(
        "--family-budget-s",
        type=float,
        default=180,
        help="seconds beyond --budget-s the families may take (the rest are listed as skipped)",
    )
    ap.add_argument("--skip-compare", action="store_true", help="skip the tiny CUDA-vs-CPU comparison")
    ap.add_argument(
        "--record", action="store_true", help="append the measured s/edit to editors/gpu_timings.json (CUDA runs only)"
    )
    ap.add_argument(
        "--from-manifest",
        metavar="FILE",
        help="copy a real build's edit/manifest.json timings into editors/gpu_timings.json and exit",
    )
    ap.add_argument(
        "--table", type=Path, default=None, help="timing table to append to (default: editors/gpu_timings.json)"
    )
    args = ap.parse_args()
    from editors.timing import TABLE

    table = args.table or TABLE
    if args.from_manifest:
        from editors.timing import manifest_entries, record

        n = record(manifest_entries(json.loads(Path(args.from_manifest).read_text(encoding="utf-8"))), table)
        print(json.dumps({"recorded": n}))
        return
    started = time.perf_counter()
    result = validate(args)
    result["wall_s"] = round(time.perf_counter() - started, 1)
    print_table(result)
    if args.record:
        result["recorded"] = record_result(result, table)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
