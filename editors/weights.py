"""Where model weights come from: a local path or a hub id, with ``HF_HUB_OFFLINE`` respected.

Missing weights fail before any work starts, with the path or id and how to obtain them.
"""

from __future__ import annotations

import os
from pathlib import Path

from editors.base import EditorError


class WeightsNotFound(EditorError):
    """The configured weights are not on this machine (and may not be downloaded)."""


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def looks_like_path(ref: str) -> bool:
    """Hub ids are exactly ``owner/name``; anything else is meant as a local path."""
    return ref.startswith(("/", "./", "../", "~")) or ref.count("/") != 1 or Path(ref).expanduser().exists()


def cached_file(repo: str, filename: str) -> Path | None:
    """``filename`` of hub repo ``repo`` when it sits in the local Hugging Face cache (no download)."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - huggingface_hub comes with the gpu extra
        return None
    found = try_to_load_from_cache(repo, filename)
    return Path(found) if isinstance(found, str) else None


def resolve_model(ref: str, what: str, editor: str) -> str:
    """A loadable reference for ``from_pretrained``: the local folder, or the hub id when it may be
    fetched (online) or sits in the local hub cache (offline)."""
    path = Path(ref).expanduser()
    if path.exists():
        return str(path)
    if looks_like_path(ref):
        raise WeightsNotFound(
            f"editor {editor!r}: {what} not found at local path {str(path)!r}. Point the `model` param at a folder "
            f"saved with save_pretrained, or give a hub id such as 'owner/name' (download with `hf download owner/name`)."
        )
    if offline():
        try:
            from huggingface_hub import snapshot_download

            return snapshot_download(ref, local_files_only=True)
        except Exception as exc:  # not in the cache
            raise WeightsNotFound(
                f"editor {editor!r}: {what} {ref!r} is not in the local Hugging Face cache and HF_HUB_OFFLINE is set. "
                f"Fetch it on a machine with network (`hf download {ref}`, then copy the cache or a folder here), "
                f"or unset HF_HUB_OFFLINE to let it download ({type(exc).__name__})."
            ) from None
    return ref


def resolve_file(ref: str | None, what: str, editor: str, env: str | None = None, hint: str = "") -> Path:
    """A local weights file (TorchScript, SAM checkpoint): the param, else ``env``; must exist."""
    value = ref or (os.environ.get(env) if env else None)
    if not value:
        source = f"the param or the {env} environment variable" if env else "the param"
        raise WeightsNotFound(f"editor {editor!r}: no {what} configured; set {source}. {hint}".strip())
    path = Path(value).expanduser()
    if not path.is_file():
        raise WeightsNotFound(f"editor {editor!r}: {what} not found at {str(path)!r}. {hint}".strip())
    return path


def pick_device(device: str) -> str:
    """``auto``: CUDA when present, else CPU."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def torch_dtype(name: str, device: str) -> object:
    """bf16/fp16 on accelerators; CPUs fall back to float32 unless asked explicitly."""
    import torch

    table = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
    if name == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    return table[name]
