"""Content-addressed image store under ``<run>/images/``: identical bytes are stored once; and
the one decoder of source images (``decode_source``), with the one pixel limit every stage uses."""

from __future__ import annotations

import contextlib
import io
import posixpath
import threading
import warnings
from collections.abc import Iterator

import numpy as np
from PIL import Image, UnidentifiedImageError

from storage.fs import RunFS
from storage.hashing import sha256_hex

IMAGES_DIR = "images"


class ImageDamaged(ValueError):
    """A stored image's bytes do not hash to its name (changed or damaged since it was stored)."""


class ImageStore:
    def __init__(self, run: RunFS):
        self.run = run

    def put_bytes(self, data: bytes, ext: str) -> str:
        """Store bytes; return the run-relative path ``images/ab/<sha256>.<ext>``."""
        ext = ext.lower().lstrip(".")
        digest = sha256_hex(data)
        rel = f"{IMAGES_DIR}/{digest[:2]}/{digest}.{ext}"
        if not self.intact(rel):  # absent, or a damaged copy: (re)written, never kept as it is
            self.run.write_bytes_atomic(rel, data)
        return rel

    def intact(self, rel: str) -> bool:
        """True when the stored bytes hash to the name they are stored under (the store's one
        integrity check: a flipped bit or a file written over shows here)."""
        try:
            return self.read_intact(rel) is not None
        except ImageDamaged:
            return False

    def read_intact(self, rel: str) -> bytes | None:
        """The stored bytes of ``rel`` when they hash to its name; None when it is absent (or not
        a store path); :class:`ImageDamaged` when they do not. The bytes checked are the bytes
        returned: a copy made from them (a shared reuse store into a run) is the checked one."""
        if not self._is_store_path(rel):
            return None
        try:
            data = self.run.read_bytes(rel)
        except FileNotFoundError:
            return None
        if sha256_hex(data) != posixpath.basename(rel).split(".")[0]:
            raise ImageDamaged(f"image {self.run.sub(rel).url}: its bytes do not hash to its name")
        return data

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

    def sizes(self) -> dict[str, int]:
        """Every stored image's size in bytes, by run-relative path: one listing of the store (a
        paginated LIST on an object store), where asking image by image would send a HEAD each."""
        return {rel: size for rel, size in self.run.file_sizes(IMAGES_DIR).items() if self._is_store_path(rel)}

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


# The largest source image any stage decodes (Visual Genome, FSC147, any future source), in
# pixels: 50 MP, far above the datasets' images (VG ~0.2-0.5 MP, FSC147 ~0.2 MP). Larger files
# are refused from their header, before decoding, so a decompression bomb cannot take a stage down.
MAX_SOURCE_PIXELS = 50_000_000

_DECODING = threading.Lock()


class BadImage(ValueError):
    """A source image that cannot be used. ``too_large``: above :data:`MAX_SOURCE_PIXELS`; the
    message names the file and says why, in words that are the same on every run (no object
    addresses), so rejects are repeatable."""

    def __init__(self, message: str, too_large: bool = False):
        super().__init__(message)
        self.too_large = too_large


@contextlib.contextmanager
def _strict_decoding() -> Iterator[None]:
    """Truncated images raise while decoding, whatever the process set: some libraries (lmms-eval
    among them) switch Pillow's process-wide ``LOAD_TRUNCATED_IMAGES`` on at import, which would
    make a truncated image pass for a whole one."""
    from PIL import ImageFile

    with _DECODING:
        saved, ImageFile.LOAD_TRUNCATED_IMAGES = ImageFile.LOAD_TRUNCATED_IMAGES, False
        try:
            yield
        finally:
            ImageFile.LOAD_TRUNCATED_IMAGES = saved


def check_source_size(data: bytes, where: str) -> None:
    """:class:`BadImage` (``too_large``) when the header of a source image promises more than
    :data:`MAX_SOURCE_PIXELS` pixels; nothing is decoded. For stages that pass bytes on (to a
    model) without decoding them; a file that is not an image is left to its decoder to name."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            w, h = Image.open(io.BytesIO(data)).size
        except (Image.DecompressionBombError, Image.DecompressionBombWarning):
            raise BadImage(
                f"{where}: refused before decoding, above the {MAX_SOURCE_PIXELS:,}-pixel limit for source images",
                True,
            ) from None
        except Exception:  # not an image, or a damaged header: the decoder (or the model) says what is wrong
            return
    if w * h > MAX_SOURCE_PIXELS:
        raise BadImage(
            f"{where}: {w}x{h} = {w * h:,} pixels, above the {MAX_SOURCE_PIXELS:,}-pixel limit for source images", True
        )


def decode_source(data: bytes, where: str) -> Image.Image:
    """A source image's bytes, fully decoded under the one pixel limit; :class:`BadImage` naming
    ``where`` otherwise (empty, not an image, truncated, or above :data:`MAX_SOURCE_PIXELS`)."""
    if not data:
        raise BadImage(f"{where}: empty file (0 bytes)")
    check_source_size(data, where)
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            im = Image.open(io.BytesIO(data))
            with _strict_decoding():
                im.load()  # decodes everything: a truncated file fails here, not in a later stage
            return im
        except UnidentifiedImageError:  # its message holds the repr of our buffer (an address)
            raise BadImage(f"{where}: not a readable image ({len(data):,} bytes): not a known image format") from None
        except Exception as exc:  # PIL raises OSError, SyntaxError, ValueError ... on a damaged file
            raise BadImage(
                f"{where}: not a readable image ({len(data):,} bytes): {exc.__class__.__name__}: {exc}"
            ) from None


def read_image_rgb(path: str) -> np.ndarray:
    """Read any source image (local path or fsspec URL) as an RGB uint8 array (under the pixel limit)."""
    import fsspec

    with fsspec.open(path, "rb") as f:
        data = f.read()
    return np.asarray(decode_source(data, path).convert("RGB"))
