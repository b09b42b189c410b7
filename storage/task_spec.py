"""Tasks by id: one :class:`TaskSpec` per cause of hallucination, all registered through the
``reactbench.tasks`` entry points (the four built-in tasks too, in this project's pyproject).

Why one object: adding a task used to mean edits in ~20 files (weights, labels, if/elif chains
in every stage). Now every stage, the evaluation and the exports ask the spec. A third-party
package declares in its own pyproject::

    [project.entry-points."reactbench.tasks"]
    my_task = "my_pkg.task:TASK"

Why hooks are import strings: the spec sits at the bottom (``storage``) so every room can read
it, while its behaviour lives in the rooms above (a miner in ``miners/``, prompts in
``prompts/``, question synthesis in ``tasks/``). A hook given as ``"module:attr"`` is imported
on first use (:meth:`TaskSpec.hook`), so reading a spec imports no miner, model or web code.
A plugin may pass callables instead.

Why this module imports nothing: the registry (entry points, importing hooks) is the task room's,
``tasks/engine/registry.py``, which installs itself here (:func:`use_registry`) when ``tasks`` is
imported. The lookups below (:func:`all_tasks`, :meth:`TaskSpec.hook`, ...) call the installed
registry, so every import of a task module is made by ``tasks`` code, never by a room below it
(``tests/flows/test_runtime_layers.py`` watches a demo build for it).

The id literal of a task appears only in its own modules (``TaskSpec.modules``);
``tests/flows/test_task_literals.py`` fails on any other.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

ENTRY_POINT_GROUP = "reactbench.tasks"

Hook = str | Callable[..., Any] | None


class TaskError(ValueError):
    """An unknown task id, an entry point that does not give a :class:`TaskSpec`, or a spec the
    core cannot run (an unknown hook name, a hook with the wrong signature, a malformed sub-cause
    taxonomy or judging rule): one line naming the task's package and the field."""


@dataclass(frozen=True)
class HookSpec:
    """What one named hook of ``TaskSpec.hooks`` (:class:`TaskHooks`) is: ``call`` (a function, or a callable object,
    called with ``params`` in that order), ``object`` (an instance the core reads, such as a
    ``PromptSpec`` or ``EvalRules``) or ``data`` (a value written in the spec itself)."""

    kind: str
    params: tuple[str, ...] = ()
    doc: str = ""


# Every hook a task may set in ``hooks`` (a :class:`TaskHooks` field each; the documentation of each is in :class:`TaskSpec`).
# A name not listed here is refused when the spec is made: a typo must not silently leave a task
# without questions. The core calls each ``call`` hook with exactly these positional arguments.
HOOKS: Mapping[str, HookSpec] = {
    "vg_reads": HookSpec(
        "data", doc="Visual Genome files the visual_genome miner reads: ('relationships', 'attributes')"
    ),
    "instruct_prompt": HookSpec("object", doc="prompts.spec.PromptSpec asked once per candidate"),
    "instruct_context": HookSpec("call", ("candidate", "ctx"), "-> dict: prompt context beyond the core's"),
    "instruct_rules": HookSpec("call", ("ctx",), "-> dict | None: the rules backend's answer to instruct_prompt"),
    "instruct_rows": HookSpec("call", ("candidate", "fields"), "-> list[dict]: instruction rows"),
    "instruct_dedup": HookSpec("call", ("rows", "cfg"), "-> (kept rows, reject rows)"),
    "untouched_objects": HookSpec("call", ("fields",), "-> list[str]: objects the edit must leave alone"),
    "analysis_prompt": HookSpec("object", doc="prompts.spec.PromptSpec asked about each edit"),
    "analysis_rules": HookSpec("call", ("ctx",), "-> dict | None: the rules backend's answer to analysis_prompt"),
    "analysis_fields": HookSpec("call", ("edit",), "-> (verdict, fields) without a model"),
    "qa_slots": HookSpec("call", ("edit", "fields", "settings"), "-> dict[str, str] | list[Problem]"),
    "qa_beaf": HookSpec("call", ("edit", "fields", "values"), "-> dict | None: the object a removal took away"),
    "qa_templates": HookSpec("data", doc="'package:path/inside.yaml', the question templates"),
    "prior_terms": HookSpec("call", ("ann",), "-> list[str]: the words of the prior answer"),
    "subcause_facts": HookSpec("call", ("facts",), "-> dict: the facts the sub-cause classifier sees"),
    "eval_rules": HookSpec("object", doc="prompts.eval_rules.EvalRules: the rules backend's evaluation answers"),
    "sa_judge": HookSpec("object", doc="one of prompts.offline_judge.RULES, named as 'prompts.offline_judge:<RULE>'"),
    "audit_item": HookSpec(
        "call", ("edit", "questions", "analysis", "truth", "images"), "-> tasks.tools.audit.ItemAudit"
    ),
    "audit_checks": HookSpec("call", ("scene", "problems"), "-> None: appends what the gold answers get wrong"),
}


@dataclass(frozen=True)
class TaskHooks:
    """The hooks of one task, one typed attribute per name of :data:`HOOKS` (each ``None`` unless
    set): a misspelt hook is a ``TypeError`` where the spec is written, not a task that silently
    gets no questions. A ``call`` or ``object`` hook is a ``"module:attr"`` string (imported on first
    use) or the value itself. What each one is, from :data:`HOOKS`:
    """

    vg_reads: tuple[str, ...] | str | None = None
    instruct_prompt: Hook = None
    instruct_context: Hook = None
    instruct_rules: Hook = None
    instruct_rows: Hook = None
    instruct_dedup: Hook = None
    untouched_objects: Hook = None
    analysis_prompt: Hook = None
    analysis_rules: Hook = None
    analysis_fields: Hook = None
    qa_slots: Hook = None
    qa_beaf: Hook = None
    qa_templates: str | None = None
    prior_terms: Hook = None
    subcause_facts: Hook = None
    eval_rules: Hook = None
    sa_judge: str | None = None
    audit_item: Hook = None
    audit_checks: Hook = None


TaskHooks.__doc__ = (TaskHooks.__doc__ or "") + "".join(
    f"\n    - ``{name}`` ({spec.kind}{', called as (' + ', '.join(spec.params) + ')' if spec.params else ''}): {spec.doc}"
    for name, spec in HOOKS.items()
)


# The offline judging rules a task may name in ``sa_judge`` (the constants of
# ``prompts.offline_judge``, which imports nothing of ours: its copy ships with every release, so a
# task cannot add a rule; ``tests/evaluate/test_release_task_specs.py`` keeps the two lists equal).
JUDGE_RULE_NAMES = ("OVERLAP", "DENIAL", "CHANGE", "COUNT")
VG_READS = ("relationships", "attributes")
EVAL_RULES_METHODS = ("answer", "reasoning", "subcause", "span_type", "span_phrases")
SUBCAUSE_CODE = "SC-{}"  # the n-th sub-cause of a task is SC-n (the classifier's labels: SC-1..SC-n, other)


@dataclass(frozen=True)
class InstalledRegistry:
    """What the task room's registry gives this module: ``specs()`` (every spec by id, in benchmark
    order), ``load(ref)`` (a ``"module:attr"`` imported by the task room) and ``register(spec)``."""

    specs: Callable[[], dict[str, TaskSpec]]
    load: Callable[[str], object]
    register: Callable[[TaskSpec], TaskSpec]


_INSTALLED: list[InstalledRegistry] = []


def use_registry(registry: InstalledRegistry) -> None:
    """Install the task registry (``tasks/engine/registry.py`` does, once, when ``tasks`` is imported)."""
    _INSTALLED[:] = [registry]


def _registry() -> InstalledRegistry:
    if not _INSTALLED:
        raise TaskError(
            "no task registry in this process: import tasks (tasks/engine/registry.py installs it; "
            "flows and every stage do)"
        )
    return _INSTALLED[0]


def load_hook(ref: object) -> Any:
    """``"pkg.module:attr"`` -> the attribute (imported now, by the task registry); a callable is returned as is."""
    if not isinstance(ref, str):
        return ref
    if not ref.partition(":")[2]:
        raise TaskError(f"hook {ref!r} must read 'module:attribute'")
    return _registry().load(ref)


@dataclass(frozen=True)
class TaskSpec:
    """Everything the pipeline knows about one task.

    Data: ``id`` (the ``task`` column of every row), ``short`` (RE, CA, ...: column and metric
    names), ``label`` (review UI), ``weight`` (its share of React-Score; weights are renormalised
    over the tasks a benchmark holds), ``order`` (benchmark order: sorts tasks in reports and
    exports), ``probes_prior`` (questions can fall back on a prior answer: HalluRate, control
    variant), ``edits_image`` (False: items are unedited source images, like dense counting),
    ``card_text`` (one line in the dataset card), ``eval_text`` (``label``/``cause``/``note`` for
    evaluation prompts), ``subcauses`` ((code, name, description) triples), ``reference_counts``
    (the published benchmark's ``images`` and ``questions`` for the task, e.g. the ReactBench
    paper's Table 2: the health report sets the build's mix beside them; empty for a new task).

    ``hooks`` of the build stages (instruct, edit, qa), each optional unless said:
      - ``instruct_prompt``: a ``prompts.spec.PromptSpec``, asked once per candidate (the instruct
        stage; required for the task's candidates to get instructions, else ``unknown_task``).
        With the ``analysis_prompt`` it is in the prompt catalogue (``prompts.catalogue``)
        without a ``register_prompt`` call; a plugin's spec sets ``template_dir`` to its folder;
      - ``instruct_context(candidate: dict, ctx: dict) -> dict``: the prompt context of a
        candidate beyond the core's (``prompts.instruct_prompts.candidate_context``: names, boxes,
        locations, neighbours), e.g. what the task's miner planned in ``extra_json``; the
        ``instruct_rules`` answer sees the same context;
      - ``instruct_rules(ctx: dict) -> dict | None``: the offline ``rules`` backend's answer to
        the ``instruct_prompt`` (marked ``@prompts.rules_api.rules_answer(<prompt name>)``);
        ``prompts.rules`` lists it without a ``register_rules`` call;
      - ``instruct_rows(candidate: dict, fields: dict) -> list[dict]``: the prompt's validated
        answer -> one dict per instruction row: ``fields`` (stored as ``fields_json``), optional
        ``slot`` (id suffix when a candidate yields several rows) and ``status`` (default
        ``applicable``), and the columns to set (``instruction``, ``edit_type``, ``target_box``,
        ``target_name``). Default ``tasks.stages.instruct:instruct_rows_edit_plan`` (one row with
        the answer's ``instruction`` and ``edit_type``). The edit stage picks editors by
        ``edit_type`` alone (``remove``, ``attribute``, ``move``, ``add``, ``replace``; a move
        or an add takes ``destination_box`` from the fields);
      - ``instruct_dedup(rows: list[dict], cfg: InstructConfig) -> (kept rows, reject rows)``:
        drops near-duplicate instructions among the task's applicable rows of one shard (when
        ``instruct.dedup_counterfactuals`` is on); the task's candidates are then sharded per
        (task, ``target_name``);
      - ``untouched_objects(fields: dict) -> list[str]``: names of objects the task's questions say
        the edit left unchanged (alteration tracing's control object B'); the edit stage's
        verification rejects an edit that touches any object of their class, or whose own target
        is of their class (``editors.verify``);
      - ``analysis_prompt``: a ``PromptSpec`` the qa stage asks about each edit (two images)
        for the fields its questions are filled from; ``analysis_rules(ctx) -> dict | None``
        its rules answer, as ``instruct_rules``;
      - ``analysis_fields(edit: dict) -> (verdict: str, fields: dict)``: the fields without a
        model (from the edit plan, a true count); takes precedence over ``analysis_prompt``;
        raises ``KeyError`` / ``TypeError`` / ``ValueError`` on a row it cannot use;
      - ``qa_slots(edit: dict, fields: dict, settings: RenderSettings) -> dict[str, str] |
        list[Problem]``: the question templates' slot values (``tasks.stages.qa.synthesis``;
        required for questions), or the problems why there can be none;
      - ``qa_beaf(edit: dict, fields: dict, values: dict) -> dict | None``: for the BEAF pairs
        (``qa.beaf``), ``{"removed": class name, "same_type_elsewhere": bool}`` when the edit
        removed an object, else ``None``;
      - ``qa_templates``: not a hook but a package resource, ``"package:path/inside.yaml"``, the
        task's question-template file (``tasks.stages.qa.templates``; required for questions).
    ``edits_image`` False makes the edit stage pass the task's instructions through unedited.

    The ``hooks`` names and their signatures are :data:`HOOKS`; a spec the core cannot run
    (unknown name, wrong signature, malformed sub-causes, a judging rule the core does not ship)
    raises :class:`TaskError` when it is made, naming the task's package and the field.

    Hooks (``"module:attr"`` strings or callables; ``None`` where the task has no such step):
    ``params`` (the pydantic Section class of ``mine.<id>``), ``miners`` (source name -> miner
    called by that source with its scan), ``modules`` (the task's own modules: the only places its
    id literal may appear), ``hooks`` (a :class:`TaskHooks`: further named hooks a stage reads with
    :meth:`hook`; ``extra``, a name -> hook map, is the API 1.0 spelling, converted into ``hooks``).

    Mining (``miners/dispatch.py`` holds the same contract next to the code that calls it):

    - ``params``: a ``storage.config_base.Section`` subclass. ``mine.<id>`` in a run config
      validates against it (unknown keys fail with their path ``mine.<id>.<key>``); its defaults
      are filled in for every registered task; read it with ``config.mine.params_for(id)``. A
      ``control: bool | None`` field, when present, is the task's own switch over ``mine.control``.
    - ``miners``: ``{source name: "module:function"}``. A source that feeds the task (it feeds
      exactly the tasks whose spec names it here) reads its files once, then calls, for each
      requested task in benchmark order, ``miner(job: miners.dispatch.MineJob) -> None`` with
      ``job.task`` (this id: the ``task`` column and the key of every seeded choice), ``job.source``,
      ``job.scan`` (``visual_genome`` / ``coco``: a ``miners.vg_scan.Scan``: ``images``,
      ``names.names``, ``predicates.names`` (canonical), and numpy columns ``objects``
      (``img, oid, nid, x, y, w, h, valid``) and ``relations`` (``img, rid, pid, s_oid, s_nid,
      sx, sy, sw, sh, o_oid, o_nid, ox, oy, ow, oh, valid``); ``fsc147``: a
      ``miners.fsc147.FSCData``), ``job.rows`` (the source's row builder: ``image_path(iid, sel)``,
      ``row(task, variant, iid, path, target=..., partner=..., **columns)``; None for FSC147 and
      statistics-only runs), ``job.params``, ``job.control``, ``job.config`` (the ``mine``
      section), ``job.seed``, ``job.result`` (the source's ``MineResult``: ``add(selection)``,
      ``pair_table``, ``attribute_table``, ``summary``) and ``job.candidates`` (False: statistics
      only). It returns nothing: it writes into ``job.result``.
    - ``hooks.vg_reads``: the optional Visual Genome files the task's ``visual_genome`` miner
      reads, a tuple of ``"relationships"`` / ``"attributes"`` (or ``"module:attr"`` naming one);
      image_data and objects are always read, attributes.json whenever present. A named file that
      is missing fails the mine stage naming the task.

    ``hooks`` of the release side (audit, review, evaluation, export); each is optional:
      - ``prior_terms(ann: dict) -> list[str]``: the words stating an item's prior answer, from
        its gathered annotations (``tasks.release.items``; none without the hook); ``ann["rubric"]``
        holds its questions' rubric fields (first value per key), so a task can state its prior
        in its question templates;
      - ``subcause_facts(facts: dict) -> dict``: renames / adds the facts the sub-cause
        classifier is shown (``tasks.release.evaluate.attribute``);
      - ``eval_rules``: a ``prompts.eval_rules.EvalRules`` instance, the rules backend's offline
        ``answer(ctx) -> str | None``, ``reasoning(ctx) -> str``, ``subcause(response, facts) ->
        str``, ``span_type(facts) -> str``, ``span_phrases(response, facts) -> list[str]``
        (default ``PRIOR_RULES``: answers from the prior);
      - ``sa_judge``: a ``str``, the offline short-answer judge's rule, one of
        ``prompts.offline_judge.RULES`` (``OVERLAP`` default, ``DENIAL``, ``CHANGE``, ``COUNT``);
        releases write it into their task table, so it must be one of those;
      - ``audit_item(edit, questions, analysis, truth, images) -> tasks.tools.audit.ItemAudit``:
        audits an item on its own (unedited items such as counting); without it the item is
        replayed on the sample truth's world and then
      - ``audit_checks(scene: tasks.tools.audit.EditScene, problems: list[str]) -> None``: appends
        what the task's gold answers get wrong about the edited scene.
    The review UI shows ``label``; the dataset card ``card_text``; exports and reports ``short``
    and ``order``; React-Score ``weight``; HalluRate ``probes_prior``; the evaluation prompts
    ``eval_text`` and ``subcauses``.
    """

    id: str
    short: str
    label: str
    weight: float
    order: int = 100
    probes_prior: bool = False
    edits_image: bool = True
    card_text: str = ""
    eval_text: Mapping[str, str] = field(default_factory=dict)
    subcauses: tuple[tuple[str, str, str], ...] = ()
    reference_counts: Mapping[str, int] = field(default_factory=dict)
    params: Hook = None
    miners: Mapping[str, str | Callable[..., Any]] = field(default_factory=dict)
    modules: tuple[str, ...] = ()
    hooks: TaskHooks = field(default_factory=TaskHooks)
    extra: Mapping[str, str | Callable[..., Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.id.isidentifier() or self.id != self.id.lower():
            raise TaskError(
                f"task id {self.id!r} must be a lower-case identifier (it names config sections and files)"
            )
        if not 0 <= self.weight:
            raise self._error("weight", f"{self.weight} must be >= 0")
        self._check_subcauses()
        for name, ref in self.extra.items():
            self._check_extra(name, ref, f"extra[{name!r}]")
        if self.extra:  # API 1.0 plugins: the hooks as a name -> value map, converted here
            both = sorted(n for n in self.extra if getattr(self.hooks, n) is not None)
            if both:
                raise self._error("extra", f"{', '.join(both)} also set in hooks (set each hook once, in hooks)")
            object.__setattr__(self, "hooks", replace(self.hooks, **self.extra))
            object.__setattr__(self, "extra", {})
        else:
            for name, ref in self.hook_refs().items():
                self._check_extra(name, ref, f"hooks.{name}")
        for source, ref in self.miners.items():
            self._check_ref(f"miners[{source!r}]", ref, ("job",))
        if self.params is not None and not isinstance(self.params, (str, type)):
            raise self._error("params", f"must be 'module:Class' or a Section class, got {type(self.params).__name__}")

    @property
    def package(self) -> str:
        """The package that declares the task (its first own module's top package: the folder to fix)."""
        return self.modules[0] if self.modules else "?"

    def _error(self, field_name: str, problem: str) -> TaskError:
        return TaskError(f"task {self.id!r} (package {self.package}): {field_name}: {problem}")

    def _check_subcauses(self) -> None:
        """Sub-causes are (code, name, description), coded SC-1..SC-n in order: the classifier's
        labels. A task may declare as many as it needs (the prompt lists them all)."""
        for i, sc in enumerate(self.subcauses, 1):
            if not (isinstance(sc, tuple) and len(sc) == 3 and all(isinstance(v, str) and v.strip() for v in sc)):
                raise self._error(
                    f"subcauses[{i - 1}]",
                    f"must be a (code, name, description) triple of non-empty strings, got {sc!r}",
                )
            if sc[0] != SUBCAUSE_CODE.format(i):
                raise self._error(
                    f"subcauses[{i - 1}]", f"code {sc[0]!r} must be {SUBCAUSE_CODE.format(i)!r} (SC-1..SC-n, in order)"
                )

    def hook_refs(self) -> dict[str, object]:
        """The hooks this task sets, by name, as declared (strings not yet imported)."""
        return {
            f.name: getattr(self.hooks, f.name) for f in fields(self.hooks) if getattr(self.hooks, f.name) is not None
        }

    def _check_extra(self, name: str, ref: object, where: str) -> None:
        spec = HOOKS.get(name)
        if spec is None:
            raise self._error(where, f"unknown hook; known: {', '.join(sorted(HOOKS))}")
        if name == "qa_templates":
            if not (isinstance(ref, str) and ":" in ref and ref.endswith((".yaml", ".yml"))):
                raise self._error(where, f"must read 'package:path/inside.yaml', got {ref!r}")
        elif name == "vg_reads":
            if isinstance(ref, str):
                self._check_ref(where, ref, None)
            elif not (isinstance(ref, tuple) and set(ref) <= set(VG_READS)):
                raise self._error(where, f"must be a tuple of {VG_READS} or 'module:attr', got {ref!r}")
        elif name == "sa_judge":
            rule = ref.partition(":")[2] if isinstance(ref, str) else None
            if not (isinstance(ref, str) and ref.startswith("prompts.offline_judge:") and rule in JUDGE_RULE_NAMES):
                raise self._error(
                    where,
                    f"must name a rule the core ships, one of "
                    f"{', '.join('prompts.offline_judge:' + r for r in JUDGE_RULE_NAMES)}; got {ref!r}",
                )
        else:
            self._check_ref(where, ref, spec.params if spec.kind == "call" else None)

    def _check_ref(self, where: str, ref: object, params: tuple[str, ...] | None) -> None:
        """A hook is ``"module:attr"`` (checked when loaded) or a value; a callable's signature
        must take ``params`` positionally."""
        if isinstance(ref, str):
            module, _, attr = ref.partition(":")
            if not (module and attr):
                raise self._error(where, f"{ref!r} must read 'module:attribute'")
            return
        if params is not None:
            check_signature(ref, params, lambda problem: self._error(where, problem))

    def check_loaded(self, name: str, value: Any) -> Any:
        """``value`` (the loaded hook ``name``) checked against :data:`HOOKS`; returned as is."""
        spec = HOOKS.get(name)
        if spec is not None and spec.kind == "call":
            check_signature(value, spec.params, lambda problem: self._error(f"hooks.{name}", problem))
        elif name == "eval_rules":
            missing = [m for m in EVAL_RULES_METHODS if not callable(getattr(value, m, None))]
            if missing:
                raise self._error(
                    f"hooks.{name}",
                    f"{type(value).__name__} lacks {', '.join(missing)} (an EvalRules has all of {', '.join(EVAL_RULES_METHODS)})",
                )
        return value

    def has(self, name: str) -> bool:
        """Whether the task defines the hook ``name`` (a field or a ``hooks`` entry)."""
        value = getattr(self, name, None) if name in self.__dataclass_fields__ else getattr(self.hooks, name, None)
        return bool(value)

    def hook(self, name: str) -> Any:
        """The hook ``name`` loaded (a field such as ``params`` or a ``hooks`` entry); a ``call``
        hook whose signature does not take the arguments the core passes fails naming the field."""
        ref = getattr(self, name) if name in self.__dataclass_fields__ else getattr(self.hooks, name, None)
        if not ref:
            raise TaskError(f"task {self.id!r} has no {name!r} hook")
        return self.check_loaded(name, self._load(name if name in self.__dataclass_fields__ else f"hooks.{name}", ref))

    def _load(self, where: str, ref: object) -> Any:
        try:
            return load_hook(ref)
        except (ImportError, AttributeError) as exc:
            raise self._error(where, f"{ref!r} does not load: {exc}") from exc

    def miner(self, source: str) -> Any:
        """The miner this task runs on ``source``'s scan, or ``None`` when the source cannot feed it."""
        ref = self.miners.get(source)
        if not ref:
            return None
        where = f"miners[{source!r}]"
        miner = self._load(where, ref)
        check_signature(miner, ("job",), lambda problem: self._error(where, problem))
        return miner

    def check_hooks(self) -> None:
        """Load every hook and check it (signatures included): what ``reactbench tasks --check``
        and the tests run, so a wrong hook fails before a build reaches the stage that calls it."""
        for name, ref in self.hook_refs().items():
            if HOOKS[name].kind != "data" or (name == "vg_reads" and isinstance(ref, str)):
                self.hook(name)
        for source in self.miners:
            self.miner(source)
        if self.params:
            self.hook("params")


def check_signature(fn: object, params: tuple[str, ...], error: Callable[[str], TaskError]) -> None:
    """``fn`` must be callable with ``len(params)`` positional arguments; else ``error(problem)``."""
    if not callable(fn):
        raise error(f"must be callable as ({', '.join(params)}), got {type(fn).__name__}")
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return  # a builtin without a signature: called as documented
    try:
        sig.bind(*params)
    except TypeError as exc:
        raise error(
            f"{getattr(fn, '__qualname__', fn)!s}{sig} cannot be called as ({', '.join(params)}): {exc}"
        ) from None


def register_task(spec: TaskSpec) -> TaskSpec:
    """Register a task in this process (tests, notebooks); entry points are the durable way."""
    return _registry().register(spec)


def _all() -> dict[str, TaskSpec]:
    return _registry().specs()


def all_tasks() -> dict[str, TaskSpec]:
    """Every registered task by id, in benchmark order (``order``, then id)."""
    return dict(_all())


def task_ids() -> tuple[str, ...]:
    """Every registered task id, in benchmark order."""
    return tuple(_all())


def task_spec(task_id: str) -> TaskSpec:
    """The spec registered under ``task_id``; unknown ids list what exists."""
    specs = _all()
    if task_id not in specs:
        raise TaskError(
            f"unknown task {task_id!r}; registered: {', '.join(specs)} "
            f"(third-party tasks register under the entry-point group {ENTRY_POINT_GROUP!r})"
        )
    return specs[task_id]


def task_hook(task_id: str, name: str, default: Any = None) -> Any:
    """The hook ``name`` of the task ``task_id``, loaded; ``default`` when the task is not
    registered here or has no such hook (the one optional-hook lookup every room uses)."""
    spec = _all().get(task_id)
    return spec.hook(name) if spec is not None and spec.has(name) else default


def check_task_id(task_id: str) -> str:
    """A config validator: the id when registered, else a ValueError listing the choices."""
    if task_id not in _all():
        raise ValueError(f"unknown task {task_id!r}; choices: {', '.join(_all())}")
    return task_id


def task_order(task_id: str) -> tuple[int, str]:
    """Sort key: benchmark order, unknown tasks last."""
    spec = _all().get(task_id)
    return (spec.order, task_id) if spec else (1 << 30, task_id)
