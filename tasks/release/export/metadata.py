"""The release's metadata step, run last in the staging folder before it is sealed: the canary
into every text file, then ``croissant.json`` over the finished files (their sha256 final)."""

from __future__ import annotations

from storage.fs import RunFS
from tasks.engine.build_config import BuildConfig
from tasks.release.export.canary import stamp_release
from tasks.release.export.content import ReleaseContent
from tasks.release.export.croissant import build_croissant, warnings_for, write_croissant
from tasks.release.export.provenance import read_provenance

DEFAULT_VERSION = "1.0.0"


def release_version(config: BuildConfig) -> str:
    """The release's version for the Croissant file (which requires one): ``export.version``, else
    :data:`DEFAULT_VERSION` for an unversioned export."""
    return str(config.export.version or DEFAULT_VERSION)


def write_metadata(
    run: RunFS, out: RunFS, config: BuildConfig, files: list[str], content: ReleaseContent
) -> tuple[list[str], list[str]]:
    """Stamp ``files`` (release paths in ``out``) with the canary (``content.guid``) and write
    ``croissant.json``; returns the paths added and the warnings (author's fields left empty)."""
    stamp_release(out, files, content.guid)
    prov = read_provenance(run, config, content.verified)
    doc = build_croissant(out, files, prov, config, content, version=release_version(config))
    return [write_croissant(out, doc)], warnings_for(config.datasheet)
