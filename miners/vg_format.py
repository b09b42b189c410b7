"""Visual Genome 1.0/1.2/1.4 file shapes as msgspec Structs, and where its files and images live.

The Structs list only the fields mining reads (msgspec skips the rest quickly). Both
spellings the published versions use are accepted: ``image_id``/``id``, ``object_id``/``id``,
``names`` (list) / ``name`` (string) / ``object_names`` (list: VG 1.0's ``attributes.json``).
``gc=False``: millions of these are created per file
and none forms a reference cycle.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterator
from dataclasses import dataclass

import msgspec

from miners.jsonstream import BadElement, decode_file, iter_array


class VGImage(msgspec.Struct, gc=False):
    image_id: int | None = None
    id: int | None = None
    width: int | None = None
    height: int | None = None
    url: str | None = None
    coco_id: int | None = None
    flickr_id: int | None = None


class VGObject(msgspec.Struct, gc=False):
    object_id: int | None = -1  # -1: absent (VG 1.0 says "id")
    id: int | None = -1
    x: float = float("nan")
    y: float = float("nan")
    w: float = float("nan")
    h: float = float("nan")
    names: list[str] | None = None
    name: str | None = None
    object_names: list[str] | None = None  # VG 1.0 attributes.json
    synsets: list[str] | None = None


class VGAttributed(VGObject, gc=False):
    attributes: list[str] | None = None


class VGRelationship(msgspec.Struct, gc=False):
    subject: VGObject
    object: VGObject
    predicate: str = ""
    relationship_id: int | None = None
    id: int | None = None
    synsets: list[str] | None = None


class VGImageObjects(msgspec.Struct, gc=False):
    image_id: int | None = None
    id: int | None = None
    objects: list[VGObject] = []


class VGImageAttributes(msgspec.Struct, gc=False):
    image_id: int | None = None
    id: int | None = None
    attributes: list[VGAttributed] = []


class VGImageRelationships(msgspec.Struct, gc=False):
    image_id: int | None = None
    id: int | None = None
    relationships: list[VGRelationship] = []


# Loose forms: the element parsed, the strict type did not; decode parts one by one.
class LooseImage(msgspec.Struct, gc=False):
    image_id: int | None = None
    id: int | None = None
    objects: list[msgspec.Raw] | None = None
    attributes: list[msgspec.Raw] | None = None
    relationships: list[msgspec.Raw] | None = None


# Keys a top-level element of each file may start with (boundary proposals only).
OBJECTS_KEYS = ("image_id", "objects", "image_url")
ATTRIBUTES_KEYS = ("image_id", "attributes", "image_url")
RELATIONSHIPS_KEYS = ("image_id", "relationships", "image_url")
IMAGE_DATA_KEYS = ("image_id", "id", "width", "height", "url", "coco_id", "flickr_id")

FILES = ("image_data.json", "objects.json", "relationships.json", "attributes.json")
IMAGE_FOLDERS = ("VG_100K", "VG_100K_2", "images")


def element_image_id(e: VGImageObjects | VGImageAttributes | VGImageRelationships | LooseImage) -> int | None:
    return e.image_id if e.image_id is not None else e.id


def object_id(o: VGObject) -> int | None:
    oid = o.object_id if o.object_id is not None and o.object_id >= 0 else o.id
    return oid if oid is not None and oid >= 0 else None


def object_raw_name(o: VGObject) -> str | None:
    """The first name, whichever way the version spells it."""
    if o.names:
        return o.names[0]
    if o.name is None and o.object_names:
        return o.object_names[0]
    return o.name


def iter_elements(path: str, kind: str, block_bytes: int) -> Iterator[list[object]]:
    """Batches of one VG per-image file (``objects``, ``attributes`` or ``relationships``)."""
    elem, keys = {
        "objects": (VGImageObjects, OBJECTS_KEYS),
        "attributes": (VGImageAttributes, ATTRIBUTES_KEYS),
        "relationships": (VGImageRelationships, RELATIONSHIPS_KEYS),
    }[kind]
    yield from iter_array(path, elem, keys, block_bytes=block_bytes)


def loose(bad: BadElement) -> LooseImage | None:
    """Second chance for an element that failed the strict type: per-part decoding."""
    try:
        return msgspec.json.decode(bad.raw, type=LooseImage)
    except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError):
        return None


@dataclass(frozen=True)
class ImageInfo:
    width: int
    height: int
    url: str | None


def read_image_data(path: str, block_bytes: int) -> tuple[dict[int, ImageInfo], list[tuple[str, str]]]:
    """``image_data.json`` -> {image_id: info}, plus (reason, detail) problems found."""
    images: dict[int, ImageInfo] = {}
    problems: list[tuple[str, str]] = []
    for batch in iter_array(path, VGImage, IMAGE_DATA_KEYS, block_bytes=block_bytes):
        for e in batch:
            if isinstance(e, BadElement):
                where = f" (element at byte offset {e.at})" if e.at is not None else ""
                problems.append(("malformed_image_entry", f"{path}{where}: {e.error}: {e.raw[:200]!r}"))
                continue
            iid = e.image_id if e.image_id is not None else e.id
            if iid is None or not e.width or not e.height or e.width <= 0 or e.height <= 0:
                problems.append(
                    (
                        "malformed_image_entry",
                        f"{path}: image entry without id or size: {msgspec.json.encode(e)[:200]!r}",
                    )
                )
                continue
            if iid in images:
                problems.append(("duplicate_image_id", f"{path}: image_id {iid} listed twice"))
                continue
            images[iid] = ImageInfo(int(e.width), int(e.height), e.url)
    return images, problems


class ImageLocator:
    """Finds an image file: the folder named in its URL, else VG_100K, VG_100K_2, images/, or the root."""

    def __init__(self, root: str, image_dir: str | None = None):
        self.root = root.rstrip("/")
        self.folders = (
            [image_dir] if image_dir else [posixpath.join(self.root, d) for d in IMAGE_FOLDERS] + [self.root]
        )
        self._local = "://" not in self.root

    def candidates(self, image_id: int, url: str | None) -> list[str]:
        """Paths to try, in order: the URL's folder and file name under the root, that file name
        in each image folder, then ``<image_id>.jpg`` in each (VG 1.0 lists the original source
        URLs, e.g. ``.../VG100/Images/web_static_office/vgabox0.jpg``, for files published as
        ``VG_100K*/<image_id>.jpg``)."""
        own = f"{image_id}.jpg"
        name = posixpath.basename(url) if url else own
        out = []
        if url:
            folder = posixpath.basename(posixpath.dirname(url))
            out.append(posixpath.join(self.root, folder, name))
        out += [posixpath.join(f, name) for f in self.folders]
        if name != own:
            out += [posixpath.join(f, own) for f in self.folders]
        return list(dict.fromkeys(out))

    def find(self, image_id: int, url: str | None) -> str | None:
        for c in self.candidates(image_id, url):
            if self._exists(c):
                return c
        return None

    def _exists(self, path: str) -> bool:
        if self._local:
            return os.path.isfile(path)
        import fsspec

        fs, p = fsspec.core.url_to_fs(path)
        return fs.exists(p)


__all__ = [
    "VGImage",
    "VGObject",
    "VGAttributed",
    "VGRelationship",
    "VGImageObjects",
    "VGImageAttributes",
    "VGImageRelationships",
    "LooseImage",
    "iter_elements",
    "read_image_data",
    "ImageLocator",
    "decode_file",
]
