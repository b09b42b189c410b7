"""The root run config: one strict pydantic model composed of the rooms' own sections.

It lives here, in ``tasks.engine``, beside the stage contract, so that ``RunContext.config`` names
its type and a stage reads its settings typed; ``flows.config`` loads and validates YAML into it
(and re-exports these names, the ones a user's script imports).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator

from editors.config import EditorSpec
from prompts.config import MLLMConfig
from storage.config_base import Section
from tasks.engine.config import (
    TRANSIENT_REJECT_REASONS,
    DatasheetConfig,
    EditConfig,
    EvalConfig,
    ExportConfig,
    HealthConfig,
    InstructConfig,
    QAConfig,
    ReviewConfig,
)
from tasks.engine.mine_config import MineConfig

__all__ = [
    "MAX_SEED",
    "MAX_SHARD_SIZE",
    "MAX_WORKERS",
    "BuildConfig",
    "OrchestrationConfig",
    "RunSettings",
    "SourcesConfig",
]

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
