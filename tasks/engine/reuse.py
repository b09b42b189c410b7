"""Item reuse inside a stage: the hook each stage calls around its editor / model calls.

A stage's shard asks :meth:`ItemReuse.map` for its items' results: items whose key is in the
reuse store (``storage.reuse_store``) come back from there, the others go, as one batch, to the
stage's own compute function and are stored, the shard's results together in one pack. The stage assembles its rows in item order either
way, so a rebuild is byte-identical to a fresh build.

``--force`` turns reuse off (every item computed again, entries overwritten);
``--force-items editor=KEY`` or ``--force-items stage=NAME`` does so for one component and makes
its stage run again even if its key did not change.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from storage.fs import RunFS
from storage.hashing import sha256_hex
from storage.rejects import RejectRow
from storage.reuse_store import Entry, ReuseCounts, ReuseStore, ShardEntries, item_key
from storage.task_spec import task_hook, task_ids
from tasks.engine.base import RunContext

if TYPE_CHECKING:
    from prompts.clients.base import MLLMClient, MLLMResponse, PromptInput

FORCE_OPTION = "force"  # RunContext.options: recompute every item (set by the runner on --force)
FORCE_ITEMS_OPTION = "force_items"  # RunContext.options: ["editor=KEY", "stage=NAME", ...]
REUSE_STAGES = ("instruct", "edit", "qa")  # stages that reuse items (their components below)

__all__ = [
    "FORCE_ITEMS_OPTION",
    "FORCE_OPTION",
    "Entry",
    "ItemReuse",
    "check_force_items",
    "code_version",
    "forces_stage",
    "package_version",
    "parse_force_items",
]


def parse_force_items(values: Iterable[str]) -> list[tuple[str, str]]:
    """``["editor=NAME", "stage=qa"]`` -> [("editor", "NAME"), ("stage", "qa")]; bad forms raise
    ValueError naming the value."""
    out = []
    for raw in values:
        kind, sep, name = str(raw).partition("=")
        kind, name = kind.strip(), name.strip()
        if not sep or kind not in ("editor", "stage") or not name:
            raise ValueError(
                f"--force-items {raw!r}: expected editor=KEY (one editor's edits) or stage=NAME ({', '.join(REUSE_STAGES)})"
            )
        if kind == "stage" and name not in REUSE_STAGES:
            raise ValueError(f"--force-items {raw!r}: stage must be one of {', '.join(REUSE_STAGES)}")
        out.append((kind, name))
    return out


def check_force_items(values: Iterable[str], editor_keys: Sequence[str]) -> list[str]:
    """Validate ``--force-items`` against the config; returns the values unchanged."""
    values = list(values)
    for kind, name in parse_force_items(values):
        if kind == "editor" and name not in editor_keys:
            raise ValueError(
                f"--force-items editor={name}: no configured editor has that key (configured: {', '.join(editor_keys)})"
            )
    return values


def forces_stage(stage: str, options: dict[str, Any]) -> bool:
    """True when ``--force-items`` names a component of ``stage`` (the stage then runs again)."""
    for kind, name in parse_force_items(options.get(FORCE_ITEMS_OPTION) or ()):
        if (kind == "stage" and name == stage) or (kind == "editor" and stage == "edit"):
            return True
    return False


def _forced(stage: str, component: str, options: dict[str, Any]) -> bool:
    if options.get(FORCE_OPTION):
        return True
    for kind, name in parse_force_items(options.get(FORCE_ITEMS_OPTION) or ()):
        if (kind == "stage" and name == stage) or (kind == "editor" and component == f"edit:{name}"):
            return True
    return False


@functools.cache
def _file_hash(path: str) -> str:
    return sha256_hex(Path(path).read_bytes())


def code_version(*objects: object) -> str:
    """The code version of a component: a hash of the source files of the given modules,
    classes or packages (a package counts all its ``.py`` files). Any edit to that code makes
    its items compute again; a release that leaves it alone keeps them."""
    files: set[str] = set()
    for obj in objects:
        module = (
            importlib.import_module(obj)
            if isinstance(obj, str)
            else (obj if inspect.ismodule(obj) else inspect.getmodule(obj))
        )
        if module is None or not getattr(module, "__file__", None):
            raise ValueError(f"no source file for {obj!r}")
        path = Path(module.__file__)  # type: ignore[arg-type]
        if path.name == "__init__.py":
            files.update(str(p) for p in path.parent.rglob("*.py"))
        else:
            files.add(str(path))
    return sha256_hex("".join(f"{Path(f).name}:{_file_hash(f)};" for f in sorted(files)))[:16]


# Our own top-level packages: a hook living in one of them counts its module only (the stages
# hash those rooms already); a plugin's hook counts its whole package, helpers included.
CORE_PACKAGES = frozenset({"storage", "miners", "prompts", "editors", "tasks", "flows"})


def task_code(task: str, *hooks: str) -> list[ModuleType]:
    """The code behind the task's hooks among ``hooks``, for :func:`code_version`: a plugin's
    edited hook, or a helper module its hook calls, recomputes its items. Hooks may be functions,
    classes or instances (``eval_rules``); plain data hooks (paths, tables) carry no code."""
    out: list[ModuleType] = []
    for name in hooks:
        hook = task_hook(task, name)
        module = inspect.getmodule(hook if callable(hook) else type(hook)) if hook is not None else None
        if module is None or not getattr(module, "__file__", None):
            continue  # builtins (str, dict, ...) or code without a source file
        out.append(module if module.__name__.partition(".")[0] in CORE_PACKAGES else _package_root(module))
    return out


def _package_root(module: ModuleType) -> ModuleType:
    """The outermost package of ``module`` that has files of its own (a namespace package such as
    ``acme`` in ``acme.reactbench_plugin`` has none, so its first regular package is taken)."""
    parts = module.__name__.split(".")
    for i in range(1, len(parts)):
        package = sys.modules.get(".".join(parts[:i]))
        if package is not None and getattr(package, "__file__", None):
            return package
    return module


def answer_code(backend: str) -> str | None:
    """What an evaluation answer depends on beyond its request: nothing for a model (the model
    id is in the request key), the rules code for the offline ``rules`` backend, which is
    ``prompts`` plus every registered task's ``eval_rules`` (a plugin's package included)."""
    if backend != "rules":
        return None
    return code_version("prompts", *(code for task in task_ids() for code in task_code(task, "eval_rules")))


def package_version(package: str) -> str:
    """``code_version`` of a whole package of ours (e.g. ``prompts``)."""
    return code_version(package)


def transient_reasons(ctx: RunContext) -> frozenset[str]:
    """Reject reasons that are passing failures (retried by a rerun, never stored)."""
    try:
        return frozenset(ctx.config.orchestration.rerun_reject_reasons)
    except AttributeError:
        from tasks.engine.config import TRANSIENT_REJECT_REASONS

        return frozenset(TRANSIENT_REJECT_REASONS)


@dataclass
class ItemReuse:
    """One shard's view of the reuse store for one component (``edit:<editor>``, ``instruct``, ``analysis``)."""

    store: ReuseStore
    run: RunFS
    stage: str
    component: str
    enabled: bool = True
    transient: frozenset[str] = frozenset()
    counts: ReuseCounts = field(default_factory=ReuseCounts)

    @classmethod
    def for_shard(cls, ctx: RunContext, stage: str, component: str) -> ItemReuse:
        reuse_dir = getattr(getattr(ctx.config, "run", None), "reuse_dir", None)
        return cls(
            store=ReuseStore.open(ctx.run, reuse_dir),
            run=ctx.run,
            stage=stage,
            component=component,
            enabled=not _forced(stage, component, ctx.options),
            transient=transient_reasons(ctx),
        )

    def key(self, **parts: object) -> str:
        return item_key(component=self.component, **parts)

    def keeps(self, rejects: Iterable[RejectRow]) -> bool:
        """False when an item's rejects include a transient reason (so a rerun retries it)."""
        return not any(r.get("reason") in self.transient for r in rejects)

    def lookup(self, keys: Iterable[str | None]) -> ShardEntries:
        """The shard's stored entries of this component (None keys left out): one listing of the
        shard's pack folder and one round of reads (:meth:`ReuseStore.shard`); nothing is read
        when reuse is off, so every item is a miss."""
        return self.store.shard(self.component, [k for k in keys if k], read=self.enabled)

    def map(self, keys: Sequence[str | None], compute: Callable[[list[int]], list[Entry]]) -> list[Any]:
        """The value of every item: from the store when its key is there, else from
        ``compute(indices of the misses)`` (one call, so the stage can batch), which returns
        one :class:`Entry` per miss, in order. A None key means "not reusable" (e.g. the
        source image could not be read: computing it yields the reject that says so). The
        shard's new results are written together, as one pack."""
        values: list[Any] = [None] * len(keys)
        misses: list[int] = []
        damaged = self.store.damaged
        view = self.lookup(keys)
        for i, key in enumerate(keys):
            hit = view.get(key, self.run) if (key and self.enabled) else None
            if hit is None:
                misses.append(i)
            else:
                values[i] = hit.value
        self.counts.reused += len(keys) - len(misses)
        self.counts.computed += len(misses)
        self.counts.damaged += self.store.damaged - damaged
        new: dict[str, Entry] = {}
        if misses:
            entries = compute(misses)
            if len(entries) != len(misses):
                raise RuntimeError(f"{self.component}: computed {len(entries)} results for {len(misses)} items")
            for i, entry in zip(misses, entries):
                # the same JSON round trip a stored value takes, so fresh and reused items are alike
                values[i] = json.loads(json.dumps(entry.value))
                if keys[i] and entry.keep:
                    new[keys[i]] = entry  # type: ignore[index]
        view.publish(new, self.run)
        return values


def complete_with_reuse(reuse: ItemReuse, client: MLLMClient, requests: list[PromptInput]) -> list[MLLMResponse]:
    """``client.complete(requests)`` for the requests whose answer is not stored (evaluation
    answers: the key is what determines the answer, as in the MLLM response cache, plus the
    rules code for the offline rules backend, :func:`answer_code`). Transport errors are never stored."""
    from prompts.clients.base import MLLMResponse
    from prompts.clients.cache import cache_key

    code = answer_code(client.backend)
    keys = [reuse.key(request=cache_key(client.backend, client.model_id, r), code=code) for r in requests]

    def run(misses: list[int]) -> list[Entry]:
        got = client.complete([requests[i] for i in misses])
        return [
            Entry(
                {"text": r.text, "model_id": r.model_id, "backend": r.backend, "error": r.error}, keep=r.error is None
            )
            for r in got
        ]

    return [MLLMResponse(v["text"], v["model_id"], v["backend"], error=v["error"]) for v in reuse.map(keys, run)]
