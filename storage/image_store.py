"""Content-addressed image store under ``<run>/images/``: identical bytes are stored once."""

from __future__ import annotations

import io
import posixpath

import numpy as np
from PIL import Image

from storage.fs import RunFS
from storage.hashing import sha256_hex

IMAGES_DIR = "images"


class ImageStore:
    def __init__(self, run: RunFS):
        self.run = run

    def put_bytes(self, data: bytes, ext: str) -> str:
        """Store bytes; return the run-relative path ``images/ab/<sha256>.<ext>``."""
        ext = ext.lower().lstrip(".")
        digest = sha256_hex(data)
        rel = f"{IMAGES_DIR}/{digest[:2]}/{digest}.{ext}"
        if not (self.run.exists(rel) and self.intact(rel)):  # a damaged copy is replaced, never kept
            self.run.write_bytes_atomic(rel, data)
        return rel

    def intact(self, rel: str) -> bool:
        """True when the stored bytes hash to the name they are stored under (the store's one
        integrity check: a flipped bit or a file written over shows here)."""
        if not self._is_store_path(rel):
            return False
        try:
            data = self.run.read_bytes(rel)
        except FileNotFoundError:
            return False
        return sha256_hex(data) == posixpath.basename(rel).split(".")[0]

    def put_array(self, rgb: np.ndarray) -> str:
        """Store an RGB uint8 array as PNG (lossless, so quality checks see the real pixels)."""
        if rgb.dtype != np.uint8 or rgb.ndim != 3 or rgb.shape[2] != 3:
            raise ValueError(f"expected an HxWx3 uint8 RGB array, got {rgb.dtype} {rgb.shape}")
        buf = io.BytesIO()
        Image.fromarray(rgb, "RGB").save(buf, format="PNG", optimize=False, compress_level=6)
        return self.put_bytes(buf.getvalue(), "png")

    def get_bytes(self, rel: str) -> bytes:
        self._check(rel)
        return self.run.read_bytes(rel)

    def get_array(self, rel: str) -> np.ndarray:
        return np.asarray(Image.open(io.BytesIO(self.get_bytes(rel))).convert("RGB"))

    def exists(self, rel: str) -> bool:
        return self._is_store_path(rel) and self.run.exists(rel)

    @staticmethod
    def _is_store_path(rel: str) -> bool:
        parts = rel.split("/")
        return (
            len(parts) == 3
            and parts[0] == IMAGES_DIR
            and len(parts[1]) == 2
            and all(c in "0123456789abcdef" for c in parts[1])
            and parts[2].split(".")[0].startswith(parts[1])
            and all(c in "0123456789abcdef" for c in parts[2].split(".")[0])
            and ".." not in rel
        )

    def _check(self, rel: str) -> None:
        if not self._is_store_path(rel):
            raise ValueError(f"not an image-store path: {rel!r}")


def read_image_rgb(path: str) -> np.ndarray:
    """Read any source image (local path or fsspec URL) as an RGB uint8 array."""
    import fsspec

    with fsspec.open(path, "rb") as f:
        data = f.read()
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
