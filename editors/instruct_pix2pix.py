"""``instruct-pix2pix``: diffusers' StableDiffusionInstructPix2PixPipeline, the ablation's second
diffusion editor (text guidance plus image guidance, no mask). Inputs are scaled so the long side
is at most ``max_side`` (multiples of 8), batched by working size, and brought back to the source size.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from PIL import Image
from pydantic import Field

from editors.base import EditFailure, Editor, EditRequest, EditResult, missing_extra
from editors.diffusion import back_to_source, generators, load_pipeline, stop_when_over_budget, to_uint8
from storage.config_base import Section

if TYPE_CHECKING:
    from editors.memory import Profile


class InstructPix2PixParams(Section):
    model: str = Field("timbrooks/instruct-pix2pix", description="hub id or local folder saved with save_pretrained")
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = "auto"
    device: str = "auto"
    steps: int = Field(20, ge=1)
    guidance_scale: float = Field(7.5, ge=0)
    image_guidance_scale: float = Field(1.5, ge=0)
    max_side: int = Field(768, ge=16, description="long side of the working size")
    cpu_offload: Literal["none", "model", "sequential"] = "none"
    batch_size: int = Field(4, ge=1)
    prompt_template: str = "{instruction}"


def working_size(width: int, height: int, max_side: int) -> tuple[int, int]:
    scale = min(1.0, max_side / max(width, height))
    return max(8, int(width * scale) // 8 * 8), max(8, int(height * scale) // 8 * 8)


class InstructPix2PixEditor(Editor):
    name = "instruct-pix2pix"
    Params = InstructPix2PixParams
    uses_model = True

    @classmethod
    def memory_profile(cls, params: InstructPix2PixParams, key: str, target: str) -> Profile:
        """UNet, CLIP text encoder and VAE sized on the meta device. Activations per image at
        ``max_side``: the UNet runs three guidance branches at once (text, image, none)."""
        from editors.architectures import count_params, pipeline_configs
        from editors.memory import DTYPE_BYTES, Component, Profile, transformer_activation, vae_activation

        configs = pipeline_configs(params.model, "InstructPix2Pix weights", f"editor {key!r}")
        dtype = params.dtype if params.dtype != "auto" else ("bfloat16" if target == "cuda" else "float32")
        b = DTYPE_BYTES[dtype]
        area = params.max_side**2
        roles = {"unet": "denoiser", "text_encoder": "text_encoder", "vae": "vae"}
        comps = []
        for spec in configs.components:
            if spec.name not in roles:
                continue
            n, lin = count_params(spec)
            if spec.name == "unet":
                act = transformer_activation(
                    area / 64, spec.config.get("block_out_channels", [320])[0], 3 * params.batch_size, b
                )
            elif spec.name == "vae":
                act = vae_activation(
                    area, spec.config.get("block_out_channels", [128])[0], params.batch_size, b, cpu=target == "cpu"
                )
            else:
                act = transformer_activation(77, spec.config.get("hidden_size", 768), 2 * params.batch_size, b)
            comps.append(Component(f"{key}/{spec.name}", roles[spec.name], n, lin, b, act))
        layout = "model_offload" if params.cpu_offload == "model" else "single"
        return Profile(key, comps, f"{params.model} ({configs.source})", (layout,), ("none",), layout)

    def load(self) -> None:
        try:
            from diffusers import StableDiffusionInstructPix2PixPipeline
        except ImportError as exc:
            raise missing_extra(self.name, exc) from exc
        p = self.params
        self.pipe, self.device = load_pipeline(
            StableDiffusionInstructPix2PixPipeline,
            p.model,
            self.name,
            "InstructPix2Pix weights",
            p.dtype,
            p.device,
            p.cpu_offload,
            safety_checker=None,
            requires_safety_checker=False,
        )

    def edit_batch(self, requests: Sequence[EditRequest]) -> list[EditResult | EditFailure]:
        self.ensure_loaded()
        p = self.params
        groups: dict[tuple[int, int], list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault(working_size(r.image.shape[1], r.image.shape[0], p.max_side), []).append(i)
        results: list[EditResult | EditFailure | None] = [None] * len(requests)
        for size, idx in groups.items():
            for k in range(0, len(idx), p.batch_size):
                part = [requests[i] for i in idx[k : k + p.batch_size]]
                images = [Image.fromarray(r.image, "RGB").resize(size, Image.Resampling.LANCZOS) for r in part]
                out = self.pipe(
                    prompt=[
                        p.prompt_template.format(instruction=r.instruction, target_name=r.target_name or "")
                        for r in part
                    ],
                    image=images,
                    num_inference_steps=p.steps,
                    guidance_scale=p.guidance_scale,
                    image_guidance_scale=p.image_guidance_scale,
                    generator=generators([r.seed for r in part]),
                    output_type="np",
                    callback_on_step_end=stop_when_over_budget,
                ).images
                for i, r, img in zip(idx[k : k + p.batch_size], part, out):
                    image, raw = back_to_source(to_uint8(img), r.image.shape[1], r.image.shape[0])
                    results[i] = EditResult(image, None, {"raw_size": raw, "working_size": list(size)})
        return results  # type: ignore[return-value]


__all__ = ["InstructPix2PixEditor", "InstructPix2PixParams"]
