"""The root run config: one strict pydantic model composed of the rooms' own sections.

``load_config(path)`` reads YAML and fails with every bad key named by its dotted path
(``mine.relational_erasure.n_min: ...``). The resolved config (defaults filled in) is saved
into each run directory as ``config.yaml``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, ValidationError, field_validator

from editors.config import EditorSpec
from flows.config_yaml import YamlRefused, decode_config, load_bounded, read_config_text
from miners.config import MineConfig
from prompts.config import MLLMConfig
from storage.config_base import Section, describe_errors
from tasks.engine.config import (
    TRANSIENT_REJECT_REASONS,
    EditConfig,
    EvalConfig,
    ExportConfig,
    InstructConfig,
    QAConfig,
    ReviewConfig,
)
from tasks.release.export.datasheet import DatasheetConfig
from tasks.release.health.config import HealthConfig

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"
DEFAULT_CONFIG = CONFIG_DIR / "demo.yaml"


MAX_SEED = 2**32 - 1  # numpy's RandomState / SeedSequence range of a single seed
MAX_SHARD_SIZE = 1_000_000  # one shard is one task run held in memory
MAX_WORKERS = 4096  # threads; the machine a stage runs on bounds it further (flows/config_checks.py)


class RunSettings(Section):
    seed: int = Field(
        0,
        description="seed of every random choice (sampling, MC shuffles, editor seeds); 0 .. 2**32-1, as numpy takes it",
    )
    shard_size: int = Field(
        64, ge=1, le=MAX_SHARD_SIZE, description="items per shard (one task run each), 1 .. 1,000,000"
    )
    workers: int = Field(
        2,
        description="shards processed at once by the thread runner: 1 .. 32 per CPU of the machine running the stage",
    )
    reuse_dir: str | None = Field(
        None,
        description="per-item reuse store shared by several run directories (any fsspec URL); default <run>/reuse",
    )

    @field_validator("seed", mode="before")
    @classmethod
    def _seed_numpy_takes(cls, seed: Any) -> Any:
        """numpy seeds a generator with 0 .. 2**32-1; outside it a run would fail at its first draw."""
        if isinstance(seed, int) and not isinstance(seed, bool) and not 0 <= seed <= MAX_SEED:
            raise ValueError(f"{seed} is outside 0 .. {MAX_SEED} (2**32-1, the seeds numpy takes); pick a seed in it")
        return seed

    @field_validator("workers", mode="before")
    @classmethod
    def _workers_bounded(cls, workers: Any) -> Any:
        """Each worker is a thread; past a few thousand a machine refuses to start them."""
        if isinstance(workers, int) and not isinstance(workers, bool) and not 1 <= workers <= MAX_WORKERS:
            raise ValueError(f"{workers} is outside 1 .. {MAX_WORKERS}; a few per CPU is typical, e.g. 8")
        return workers


class SourcesConfig(Section):
    visual_genome: str | None = Field(
        None,
        description="folder with image_data.json, objects.json, relationships.json, attributes.json and the images",
    )
    fsc147: str | None = Field(
        None,
        description="folder with annotation_FSC147_384.json, ImageClasses_FSC147.txt, Train_Test_Val_FSC_147.json, images_384_VarV2/",
    )
    coco: str | None = Field(
        None,
        description="a COCO-format instances JSON (COCO 2014/2017, LVIS v1, ...); images in the folder its name gives (instances_val2017.json -> ../val2017/), its coco_url's folder, or images/",
    )
    other: dict[str, str] = Field(
        default_factory=dict,
        description="settings of third-party sources (the reactbench.sources entry points), by source name",
    )

    @field_validator("other")
    @classmethod
    def _other_sources_are_registered(cls, other: dict[str, str]) -> dict[str, str]:
        """A misspelt source name fails here, before a run starts, with the names that exist."""
        from miners.sources import BUILTIN, available

        known = available()
        for name in other:
            if name in BUILTIN:
                raise ValueError(f"{name!r} is a built-in source: set sources.{name} instead")
            if name not in known:
                raise ValueError(
                    f"unknown source {name!r}; registered sources: {', '.join(known)} "
                    "(third-party sources register under the entry-point group 'reactbench.sources')"
                )
        return other


class OrchestrationConfig(Section):
    task_runner: Literal["threads", "ray"] = Field(
        "threads",
        description="where shard tasks run in Prefect mode: threads, or ray (prefect-ray) for several GPUs / nodes",
    )
    ray_address: str | None = Field(None, description="Ray cluster address; None starts a local Ray instance")
    ray_init: dict[str, Any] = Field(
        default_factory=dict, description="extra ray.init arguments for a local Ray instance, e.g. {num_cpus: 8}"
    )
    gpus_per_edit_task: float = Field(0.0, ge=0, description="GPUs Ray reserves for each edit shard task (ray runner)")
    retries: int = Field(1, ge=0, description="retries of a failed shard task")
    retry_delay_s: float = Field(5.0, ge=0, description="seconds between shard retries")
    retry_transient_only: bool = Field(
        True, description="retry only network/timeout/out-of-memory errors; false: retry every failed shard"
    )
    gpu_concurrency_limit: str | None = Field(
        None, description="Prefect global concurrency limit each edit shard holds a slot of (one slot per GPU)"
    )
    gpu_devices: tuple[int, ...] = Field(
        (), description="GPU indices on this node that edit shards lease one at a time (threads runner)"
    )
    device_lock_dir: str | None = Field(
        None, description="folder of the per-GPU lock files (default: <tmp>/reactbench-gpu-locks)"
    )
    rerun_reject_reasons: tuple[str, ...] = Field(
        TRANSIENT_REJECT_REASONS,
        description="reject reasons of transient item failures: a rerun recomputes the shards holding such rejects (their other items come from the reuse store)",
    )


class BuildConfig(Section):
    version: Literal[1] = Field(1, description="config format version")
    run: RunSettings = RunSettings()
    sources: SourcesConfig = SourcesConfig()
    mine: MineConfig = MineConfig()
    mllm: MLLMConfig = MLLMConfig()
    instruct: InstructConfig = InstructConfig()
    editors: tuple[EditorSpec, ...] = Field(
        (EditorSpec(name="classical"),),
        description="editors run on the same instructions (several = an ablation); each {name, params, label}",
    )
    edit: EditConfig = EditConfig()
    qa: QAConfig = QAConfig()
    review: ReviewConfig = ReviewConfig()
    orchestration: OrchestrationConfig = OrchestrationConfig()
    export: ExportConfig = ExportConfig()
    eval: EvalConfig = EvalConfig()
    health: HealthConfig = HealthConfig()
    datasheet: DatasheetConfig = DatasheetConfig()

    @field_validator("editors")
    @classmethod
    def _editor_keys_are_distinct(cls, editors: tuple[EditorSpec, ...]) -> tuple[EditorSpec, ...]:
        """Rows are keyed by (instruction, editor key): two entries with one key would overwrite each other."""
        if not editors:
            raise ValueError("list at least one editor (e.g. `- name: classical`)")
        from editors.registry import available

        known = available()
        seen: dict[str, int] = {}
        for i, spec in enumerate(editors):
            if spec.name not in known:
                raise ValueError(f"editors[{i}].name: unknown editor {spec.name!r}; valid choices: {', '.join(known)}")
            _check_editor_params(i, spec)
            if spec.key == "none":
                raise ValueError(
                    f"editors[{i}]: the key 'none' is reserved for the unedited dense-counting rows; set another `label`"
                )
            if spec.key in seen:
                raise ValueError(
                    f"editors[{seen[spec.key]}] and editors[{i}] both write rows as editor {spec.key!r}; give one of them a distinct `label`"
                )
            seen[spec.key] = i
        return editors


def _check_editor_params(i: int, spec: EditorSpec) -> None:
    """An editor's ``params`` validate here, with the config, not when the edit stage starts."""
    from editors.base import EditorError
    from editors.registry import editor_class

    try:
        params_model = editor_class(spec.name).Params
    except EditorError as exc:  # a third-party editor whose entry point fails to load
        raise ValueError(f"editors[{i}].name: {exc}") from None
    try:
        params_model.model_validate(dict(spec.params))
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise ValueError(
            f"editors[{i}].params.{where}: {err['msg'].removeprefix('Value error, ')} for editor {spec.name!r}{more}"
        ) from None


class ConfigError(ValueError):
    """A config file that does not validate; the message names the file and every bad key path."""


def _format_errors(source: str, exc: ValidationError) -> str:
    """One line: the file, then each bad key path with what is wrong (``; `` between several)."""
    return f"{source}: " + describe_errors(exc)


def config_from_dict(data: dict[str, Any], source: str = "<config>") -> BuildConfig:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping, got {type(data).__name__}")
    try:
        return BuildConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_errors(source, exc)) from None


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> BuildConfig:
    """Load a YAML config (the embedded demo config when ``path`` is None) and apply overrides.

    ``overrides`` maps dotted key paths to values, e.g. ``{"mllm.backend": "openai"}``.
    """
    path = Path(path) if path else DEFAULT_CONFIG
    try:
        text = read_config_text(path)
    except YamlRefused as exc:
        raise ConfigError(str(exc)) from None
    return config_from_yaml(text, str(path), overrides)


def config_from_yaml(text: str, source: str, overrides: dict[str, Any] | None = None) -> BuildConfig:
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
    config: BuildConfig | dict[str, Any] | str | Path | None = None,
    overrides: dict[str, Any] | None = None,
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


def set_dotted(data: dict[str, Any], dotted: str, value: Any) -> None:
    """Set ``a.b.c`` in nested dicts, creating the levels on the way (config overrides)."""
    node = data
    keys = dotted.split(".")
    for k in keys[:-1]:
        node = node.setdefault(k, {})
    node[keys[-1]] = value


def dump_config(config: BuildConfig) -> str:
    """The resolved config as YAML (every default filled in), as saved in the run directory."""
    return yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False, allow_unicode=True)
