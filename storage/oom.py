"""Recognising and recovering from out-of-memory errors, for every model runner (editors, the
local MLLM backend). Looks torch up in ``sys.modules`` so light modules never import it."""

from __future__ import annotations

import gc
import sys


def is_out_of_memory(exc: BaseException) -> bool:
    """True for CUDA/MPS/CPU allocation failures (torch's OutOfMemoryError or its message)."""
    if isinstance(exc, MemoryError):
        return True
    torch = sys.modules.get("torch")
    oom_type = getattr(torch, "OutOfMemoryError", None) if torch is not None else None
    if oom_type is not None and isinstance(exc, oom_type):
        return True
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()


def free_memory() -> None:
    """Release what an OOM left behind before the retry."""
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()
