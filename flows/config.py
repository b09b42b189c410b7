"""Loading the root run config (``tasks.engine.build_config.BuildConfig``, re-exported here).

``load_config(path)`` reads YAML and fails with every bad key named by its dotted path
(``mine.relational_erasure.n_min: ...``). The resolved config (defaults filled in) is saved
into each run directory as ``config.yaml``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from flows.config_yaml import YamlRefused, decode_config, load_bounded, read_config_text
from storage.config_base import describe_errors
from tasks.engine.build_config import (
    MAX_SEED,
    MAX_SHARD_SIZE,
    MAX_WORKERS,
    BuildConfig,
    OrchestrationConfig,
    RunSettings,
    SourcesConfig,
)

__all__ = [
    "CONFIG_DIR",
    "DEFAULT_CONFIG",
    "MAX_SEED",
    "MAX_SHARD_SIZE",
    "MAX_WORKERS",
    "BuildConfig",
    "ConfigError",
    "OrchestrationConfig",
    "RunSettings",
    "SourcesConfig",
    "config_from_dict",
    "config_from_yaml",
    "config_source",
    "dump_config",
    "load_config",
    "resolve_run_config",
    "saved_config",
    "saved_run_config",
    "set_dotted",
]

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"
DEFAULT_CONFIG = CONFIG_DIR / "demo.yaml"


class ConfigError(ValueError):
    """A config file that does not validate; the message names the file and every bad key path."""


def _format_errors(source: str, exc: ValidationError) -> str:
    """One line: the file, then each bad key path with what is wrong (``; `` between several)."""
    return f"{source}: " + describe_errors(exc)


def config_from_dict(data: object, source: str = "<config>") -> BuildConfig:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping, got {type(data).__name__}")
    try:
        return BuildConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_errors(source, exc)) from None


def load_config(path: str | Path | None = None, overrides: Mapping[str, object] | None = None) -> BuildConfig:
    """Load a YAML config (the embedded demo config when ``path`` is None) and apply overrides.

    ``overrides`` maps dotted key paths to values, e.g. ``{"mllm.backend": "openai"}``.
    """
    path = Path(path) if path else DEFAULT_CONFIG
    try:
        text = read_config_text(path)
    except YamlRefused as exc:
        raise ConfigError(str(exc)) from None
    return config_from_yaml(text, str(path), overrides)


def config_from_yaml(text: str, source: str, overrides: Mapping[str, object] | None = None) -> BuildConfig:
    """A config from YAML text; ``source`` names it in every error."""
    try:
        data = load_bounded(text, source)
    except YamlRefused as exc:
        raise ConfigError(str(exc)) from None
    if data is None:  # an empty or comment-only file would silently be every default
        raise ConfigError(
            f"{source}: the config file is empty (or holds only comments); start from a complete one, e.g. configs/demo.yaml"
        )
    for dotted, value in (overrides or {}).items():
        set_dotted(data, dotted, value)
    return config_from_dict(data, source)


def resolve_run_config(
    config: BuildConfig | dict[str, object] | str | Path | None = None,
    overrides: Mapping[str, object] | None = None,
    *,
    run_dir: str | Path | None = None,
) -> BuildConfig:
    """The config of a command or flow run, by one rule for all of them.

    ``config`` wins when given: a YAML path, a mapping (flow parameters) or a loaded config.
    Otherwise the run directory's saved ``config.yaml`` (local run directories), else the
    embedded demo config. ``overrides`` (dotted keys; None values ignored, as unset CLI flags)
    apply on top, and everything validates here, before any stage runs.
    """
    overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
    if isinstance(config, BuildConfig):
        if not overrides:  # validated already (and frozen): no JSON round trip
            return config
        config = config.model_dump(mode="json")
    if isinstance(config, dict):
        if not overrides:
            return config_from_dict(config)
        data = config_from_dict(config).model_dump(mode="json")
        for dotted, value in overrides.items():
            set_dotted(data, dotted, value)
        return config_from_dict(data, "<config + overrides>")
    if config:
        return load_config(config, overrides)
    saved = saved_config(run_dir) if run_dir is not None else None
    if saved is not None:
        return config_from_yaml(saved[1], saved[0], overrides)
    return load_config(None, overrides)


def config_source(config: str | Path | None, run_dir: str | Path) -> str:
    """Where :func:`resolve_run_config` takes a command's config from, to name in a refusal:
    ``config`` when given, else the run's saved ``config.yaml``, else the embedded demo config."""
    if config:
        return str(config)
    saved = saved_config(run_dir)
    return saved[0] if saved is not None else str(DEFAULT_CONFIG)


def saved_run_config(run_dir: str | Path) -> BuildConfig | None:
    """The run directory's own saved config, validated; None when it has none. For commands that
    read a run as it was built (``audit``) and must not fall back to the demo config."""
    saved = saved_config(run_dir)
    return None if saved is None else config_from_yaml(saved[1], saved[0])


def saved_config(run_dir: str | Path) -> tuple[str, str] | None:
    """(address, text) of the run directory's ``config.yaml`` (local folder or fsspec URL), if any."""
    from storage.addresses import CONFIG_FILE
    from storage.fs import RunFS

    run = RunFS.open(str(run_dir))
    where = run.url.rstrip("/") + "/" + CONFIG_FILE
    try:
        return where, decode_config(run.read_bytes(CONFIG_FILE), where)
    except (FileNotFoundError, IsADirectoryError):
        return None
    except YamlRefused as exc:
        raise ConfigError(str(exc)) from None


def set_dotted(data: dict[str, Any], dotted: str, value: object) -> None:
    """Set ``a.b.c`` in nested dicts, creating the levels on the way (config overrides)."""
    node = data
    keys = dotted.split(".")
    for k in keys[:-1]:
        node = node.setdefault(k, {})
    node[keys[-1]] = value


def dump_config(config: BuildConfig) -> str:
    """The resolved config as YAML (every default filled in), as saved in the run directory."""
    return yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False, allow_unicode=True)
