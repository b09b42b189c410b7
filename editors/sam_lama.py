"""``sam-lama``: BEAF-style object removal. SAM (segment-anything) turns the annotation box into a
mask (best-scored of the three multimask outputs), the mask is dilated (default 15 px), LaMa
inpaints it, and the result is composited so only masked pixels change.

LaMa is loaded as a TorchScript file under the simple-lama-inpainting contract, implemented
here rather than depended on (that package pins numpy<2 and pillow<10; see docs/editors.md):
``model(image, mask)`` with image float32 [1,3,H,W] in 0..1 and mask int64 0/1 [1,1,H,W], both
padded (symmetric) to a multiple of 8; the output keeps the padded size, so it is cropped here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from pydantic import Field

from editors.base import EditFailure, Editor, EditorError, EditRequest, EditResult, missing_extra
from editors.masks import box_mask, clip_box, dilate
from editors.weights import pick_device, resolve_file
from storage.config_base import Section

if TYPE_CHECKING:
    from editors.licences import Licence
    from editors.memory import Profile

LAMA_ENV = "LAMA_MODEL"
SAM_ENV = "SAM_CHECKPOINT"
LAMA_HINT = (
    "Download big-lama.pt (the TorchScript file simple-lama-inpainting uses, from the "
    "enesmsahin/simple-lama-inpainting releases) and set LAMA_MODEL=/path/big-lama.pt or the `lama_model` param."
)
SAM_HINT = "Download a SAM checkpoint (e.g. sam_vit_h_4b8939.pth from the segment-anything README) and set the `sam_checkpoint` param or SAM_CHECKPOINT."


class SamLamaParams(Section):
    sam_checkpoint: str | None = Field(None, description=f"SAM weights (.pth); default: ${SAM_ENV}")
    sam_model_type: str = Field(
        "vit_h", description="segment-anything builder name: vit_h | vit_l | vit_b | a registered one"
    )
    lama_model: str | None = Field(None, description=f"LaMa TorchScript file; default: ${LAMA_ENV}")
    dilation_px: int = Field(15, ge=0)
    use_sam: bool = Field(True, description="false: inpaint the dilated box (no SAM weights needed)")
    pad_modulo: int = Field(8, ge=1)
    device: str = "auto"


def pad_to_modulo(array: np.ndarray, modulo: int) -> np.ndarray:
    """Symmetric padding at the bottom/right up to a multiple of ``modulo`` (H, W are the first axes)."""
    h, w = array.shape[:2]
    ph, pw = (-h) % modulo, (-w) % modulo
    if ph == 0 and pw == 0:
        return array
    pad = [(0, ph), (0, pw)] + [(0, 0)] * (array.ndim - 2)
    return np.pad(array, pad, mode="symmetric")


class SamLamaEditor(Editor):
    name = "sam-lama"
    Params = SamLamaParams
    uses_model = True
    supported = frozenset({"remove"})
    attribute_values = {}  # removal only: no attribute is rendered

    @classmethod
    def licence(cls, params: Section) -> Licence:
        """segment-anything's SAM and big-lama are both released under Apache-2.0."""
        from editors.licences import Licence

        return Licence("Apache-2.0 (SAM) + Apache-2.0 (LaMa)", True, "known checkpoint")

    @classmethod
    def memory_profile(cls, params: Section, key: str, target: str) -> Profile:
        """SAM built on the meta device from segment-anything's builder; LaMa counted from its file.
        Activations (fp32): SAM's ViT on 64x64 tokens of 1024x1024, LaMa at about 1024x1024 with
        64 channels (both rough: not checked against measurements)."""
        import torch
        from accelerate import init_empty_weights

        from editors.architectures import count_module_params
        from editors.memory import Component, Profile, transformer_activation, vae_activation

        comps = []
        if params.use_sam:
            from segment_anything import sam_model_registry

            if params.sam_model_type not in sam_model_registry:
                raise EditorError(
                    f"editor {key!r}: sam_model_type {params.sam_model_type!r} is not one of {sorted(sam_model_registry)}"
                )
            with init_empty_weights():
                sam = sam_model_registry[params.sam_model_type](checkpoint=None)
            n, lin = count_module_params(sam)
            width = sam.image_encoder.patch_embed.proj.out_channels
            comps.append(Component(f"{key}/sam", "model", n, lin, 4, transformer_activation(64 * 64, width, 1, 4)))
        lama = resolve_file(params.lama_model, "LaMa TorchScript model", key, env=LAMA_ENV, hint=LAMA_HINT)
        n, lin = count_module_params(torch.jit.load(str(lama), map_location="cpu"))
        comps.append(
            Component(f"{key}/lama", "model", n, lin, 4, vae_activation(1024 * 1024, 64, 1, 4, cpu=target == "cpu"))
        )
        return Profile(key, comps, "segment-anything builder + LaMa file")

    def load(self) -> None:
        try:
            import torch
        except ImportError as exc:
            raise missing_extra(self.name, exc) from exc
        p = self.params
        self.device = pick_device(p.device)
        lama_path = resolve_file(p.lama_model, "LaMa TorchScript model", self.name, env=LAMA_ENV, hint=LAMA_HINT)
        try:
            self.lama = torch.jit.load(str(lama_path), map_location=self.device).eval()
        except RuntimeError as exc:
            raise EditorError(f"editor {self.name!r}: {lama_path} is not a TorchScript file: {exc}") from exc
        self.predictor = None
        if p.use_sam:
            try:
                from segment_anything import SamPredictor, sam_model_registry
            except ImportError as exc:
                raise missing_extra(self.name, exc, "segment-anything") from exc
            sam_path = resolve_file(p.sam_checkpoint, "SAM checkpoint", self.name, env=SAM_ENV, hint=SAM_HINT)
            if p.sam_model_type not in sam_model_registry:
                raise EditorError(
                    f"editor {self.name!r}: sam_model_type {p.sam_model_type!r} is not one of {sorted(sam_model_registry)}"
                )
            try:
                sam = sam_model_registry[p.sam_model_type](checkpoint=str(sam_path))
            except RuntimeError as exc:  # wrong architecture for the checkpoint
                raise EditorError(
                    f"editor {self.name!r}: {sam_path} does not fit SAM {p.sam_model_type!r}: {str(exc)[:300]}"
                ) from exc
            self.predictor = SamPredictor(sam.to(self.device).eval())

    def segment(self, image: np.ndarray, box: Sequence[float]) -> tuple[np.ndarray, dict[str, object]]:
        """SAM's best-scored multimask answer to the box prompt; the box itself when SAM finds nothing."""
        h, w = image.shape[:2]
        if self.predictor is None:
            return box_mask(box, w, h), {"mask_source": "box"}
        x0, y0, x1, y1 = clip_box(box, w, h)
        self.predictor.set_image(image)
        masks, scores, _ = self.predictor.predict(
            box=np.array([x0, y0, x1 - 1, y1 - 1], dtype=np.float32), multimask_output=True
        )
        best = int(np.argmax(scores))
        mask = masks[best].astype(bool)
        meta = {"mask_source": "sam", "sam_scores": [round(float(s), 5) for s in scores], "sam_choice": best}
        if not mask.any():
            return box_mask(box, w, h), meta | {"mask_source": "box_fallback"}
        return mask, meta

    def inpaint(self, image: np.ndarray, mask: np.ndarray) -> np.ndarray:
        import torch

        h, w = image.shape[:2]
        img = pad_to_modulo(image.astype(np.float32) / 255.0, self.params.pad_modulo)
        msk = pad_to_modulo(mask.astype(np.int64), self.params.pad_modulo)
        t_img = torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1)))[None].to(self.device)
        t_msk = torch.from_numpy(np.ascontiguousarray(msk))[None, None].to(self.device)
        with torch.inference_mode():
            out = self.lama(t_img, t_msk)[0].permute(1, 2, 0).float().cpu().numpy()
        out = np.clip(out[:h, :w] * 255.0, 0, 255).round().astype(np.uint8)  # the contract leaves the padding on
        return out

    def edit_batch(self, requests: Sequence[EditRequest]) -> list[EditResult | EditFailure]:
        self.ensure_loaded()
        results: list[EditResult | EditFailure] = []
        for r in requests:
            if r.box is None:
                results.append(EditFailure("missing_target_box", "sam-lama prompts SAM with the target box"))
                continue
            try:
                mask, meta = self.segment(r.image, r.box)
            except ValueError as exc:
                results.append(EditFailure("edit_geometry", str(exc)))
                continue
            hole = dilate(mask, self.params.dilation_px)
            filled = self.inpaint(r.image, hole)
            out = np.where(hole[:, :, None], filled, r.image)
            results.append(EditResult(out, hole, meta | {"dilation_px": self.params.dilation_px}))
        return results
