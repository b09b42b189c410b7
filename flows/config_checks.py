"""The checks of a run config that need the machine it runs on, made before a run starts.

The config models (``flows/config.py`` and the sections) refuse what is wrong anywhere: a bad
key, an inverted range, a seed numpy cannot take. What is wrong only *here* waits for the
command that runs stages: a source folder that does not exist on this machine or holds other
files, more worker threads than this machine can run. A saved config is read again on other
machines (``export``, ``eval``, ``status``), so these are no part of validation; a stage
command calls :func:`check_runnable` after validation and before its run directory is touched,
and a refusal is the same one line, exit 2, no run directory, as a bad key.
"""

from __future__ import annotations

import os
from typing import Any

from flows.config import ConfigError
from tasks.engine.build_config import BuildConfig

WORKERS_PER_CPU = 32  # shard threads mostly wait on a model server or the disk
JSON_STARTS = (b"{", b"[")


def machine_cpus() -> int:
    """CPUs this process may run on (its affinity mask, not the host's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def check_runnable(cfg: BuildConfig, stages: list[str] | None, source: str) -> None:
    """Refuse (:class:`ConfigError`, ``source`` named) a config this machine cannot run for
    ``stages`` (None: every stage): worker threads past what it can run; when ``mine`` runs, a
    task with no source, source files missing or not in their format, and a ``mine.extend_from``
    that is neither a release nor a mined run."""
    limit = WORKERS_PER_CPU * machine_cpus()
    if cfg.run.workers > limit:
        raise ConfigError(
            f"{source}: run.workers: {cfg.run.workers} is more than this machine can run "
            f"({machine_cpus()} CPU(s), at most {limit} workers); lower it, e.g. run.workers: {min(limit, 8)}"
        )
    if stages is None or "mine" in stages:
        from miners.extend import extend_problem  # lazily, as source_problem's imports: they load pyarrow

        problem = source_problem(cfg) or extend_problem(cfg.mine.extend_from)
        if problem is not None:
            raise ConfigError(f"{source}: {problem}")


def source_problem(cfg: BuildConfig) -> str | None:
    """Why mining cannot start on the configured sources (a task without a source, a required
    file missing, a folder where a file is expected, a JSON file that is not JSON), or None."""
    import fsspec

    from tasks.engine.base import StageInputError
    from tasks.stages.mine import needed_sources, required_source_files

    try:
        units = needed_sources(cfg)
        files = required_source_files(cfg)
    except StageInputError as exc:
        return f"{exc}; set it in the sources section"
    missing: list[str] = []
    for path in files:
        fs, p = fsspec.core.url_to_fs(path)
        if not fs.exists(p):
            missing.append(path)
            continue
        if fs.isdir(p):
            return f"{_setting(units, path)}: {path} is a folder; a file is expected there"
        if _expects_json(units, path) and not _looks_like_json(fs, p):
            return (
                f"{_setting(units, path)}: {path} is not JSON (it does not start with {{ or [); check the source path"
            )
    if missing:
        return (
            f"{_setting(units, missing[0])}: source annotation files not found: {', '.join(missing)} "
            "(relative paths are read from the current folder; `reactbench sample-data data/sample` writes the demo data)"
        )
    return None


def _setting(units: list[dict[str, str]], path: str) -> str:
    """``sources.<name>`` of the source a required file belongs to."""
    from miners.sources import BUILTIN

    for unit in units:
        if path == unit["root"] or path.startswith(unit["root"].rstrip("/") + "/"):
            name = unit["source"]
            return f"sources.{name}" if name in BUILTIN else f"sources.other.{name}"
    return "sources"


def _expects_json(units: list[dict[str, str]], path: str) -> bool:
    """A ``.json`` file, or a source given as one JSON file (a COCO instances file of any name)."""
    from miners.sources import source_spec

    if path.endswith(".json"):
        return True
    return any(path == u["root"] and "JSON" in source_spec(u["source"]).format for u in units)


def _looks_like_json(fs: Any, path: str) -> bool:
    """False for a text file that does not start like JSON (a class list, a CSV, a README given as
    the source). Empty, binary or otherwise encoded files are left to the streaming readers,
    whose one line names the byte and the encoding (``miners/jsonstream.py``)."""
    with fs.open(path, "rb") as f:
        head = f.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    if not head or not (0x20 <= head[0] < 0x7F):
        return True
    return head.startswith(JSON_STARTS)
