"""Images and static files.

An image is served only when its path is an image-store path (``images/ab/<sha256>.<ext>``)
naming a regular file inside the run's image store (no symbolic link anywhere on the way,
on a local run directory) whose bytes hash to the name: a file swapped in or linked from
elsewhere is a 404, never served. The path is matched against one strict pattern before
anything touches the file system, so a hostile path (NUL byte, ``..``, encoded slashes,
overlong names, non-hex digests, other extensions) is a 404 and never reaches ``os``.
"""

from __future__ import annotations

import os
import re
import stat

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import Response

from storage.fs import RunFS
from storage.hashing import sha256_hex
from storage.image_store import ImageStore
from tasks.review.web import HERE, ctx

router = APIRouter()
STATIC_FILES = {"review.js": "text/javascript", "review.css": "text/css"}
IMAGE_TYPES = {"png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "webp": "image/webp"}
NOT_FOUND = "no such image in the run's image store"
# images/<first two hex digits>/<sha256 hex>.<known extension>, nothing else (fullmatch)
STORE_PATH = re.compile(r"images/([0-9a-f]{2})/(\1[0-9a-f]{62})\.(" + "|".join(IMAGE_TYPES) + ")")


def read_store_image(run: RunFS, rel: str) -> bytes | None:
    """The bytes of a verified image-store file, or None (for any path that is not one)."""
    if STORE_PATH.fullmatch(rel) is None or not ImageStore(run)._is_store_path(rel):
        return None
    if run.local:
        root = os.path.realpath(run.root)
        full = os.path.join(run.root, *rel.split("/"))
        try:
            if os.path.realpath(full) != os.path.join(root, *rel.split("/")) or not stat.S_ISREG(
                os.lstat(full).st_mode
            ):
                return None
            fd = os.open(full, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except (OSError, ValueError):  # ValueError: a NUL byte (the pattern already refuses it)
            return None
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return None
            data = f.read()
    else:
        if not run.exists(rel):
            return None
        data = run.read_bytes(rel)
    return data if sha256_hex(data) == rel.rsplit("/", 1)[-1].split(".")[0] else None


@router.get("/images/{rel:path}")
def image(request: Request, rel: str) -> Response:
    # a store path needs no percent-encoding: an encoded character (%2f, %00, %2e) is refused as
    # sent, before the decoded path could mean something else
    encoded = request.scope.get("raw_path", b"").split(b"?", 1)[0]
    data = read_store_image(ctx(request).run, rel) if encoded == b"/images/" + rel.encode("utf-8", "replace") else None
    if data is None:
        raise HTTPException(404, NOT_FOUND)
    return Response(
        data,
        media_type=IMAGE_TYPES[rel.rsplit(".", 1)[-1]],
        headers={"Cache-Control": "private, max-age=31536000, immutable"},
    )


@router.get("/static/{name}")
def static(name: str) -> Response:
    if name not in STATIC_FILES:
        raise HTTPException(404, "no such file")
    return Response(
        (HERE / "static" / name).read_bytes(),
        media_type=STATIC_FILES[name],
        headers={"Cache-Control": "private, max-age=300"},
    )
