"""The ``edit`` stage: every applicable instruction through every configured editor, then auto-QC.

A task that edits nothing (its spec's ``edits_image`` is False: dense counting) has its instructions
become one ``none`` row each whose edited image is the original, so QA, review and export treat
every task alike. Editors are chosen by the instruction's ``edit_type``, never by its task.

Shards are (editor, chunk of instructions), editor-major, so a worker keeps one model busy. In a
shard, images of the next batch are read while the editor runs the current batch, and QC, PNG
encoding and store writes of the previous batch run beside it; the editor call itself is the
only thing on the critical path. Originals are stored as their source bytes, edits as PNG,
both through ``ctx.images``. Rows are keyed by (instruction id, editor key).
"""

from __future__ import annotations

import functools
import io
import json
import os
import posixpath
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np
from PIL import Image

from editors.base import EditFailure, Editor, EditRequest, EditResult, canonical_edit_type
from editors.budget import with_budget
from editors.config import EditorSpec
from editors.qc import check_edit
from editors.registry import create_editor, get_editor
from editors.runtime import Outcome, encode_ahead, limit_opencv_threads, timed_batch
from editors.verify import verify_result
from prompts.config import MLLMConfig
from storage import addresses, schemas
from storage.hashing import canonical_json, stable_id
from storage.image_store import BadImage, decode_source
from storage.json_columns import candidate_of, context_objects, instruction_fields
from storage.rejects import RejectRow, reject
from storage.rows import EditRow, InstructionRow
from storage.task_spec import all_tasks, task_hook
from tasks.engine.base import DEVICE_OPTION, RunContext, ShardResult, Stage, chunk
from tasks.engine.build_config import BuildConfig
from tasks.engine.reuse import Entry, ItemReuse, code_version
from tasks.stages.verify_model import model_checks_configured, model_verify
from tasks.stages.verify_model import stage_key as verify_model_key

STAGE = "edit"
INSTRUCTION_COLUMNS = [
    "id",
    *schemas.ITEM_COLUMNS,
    "status",
    "instruction",
    "edit_type",
    "target_box",
    "target_name",
    "fields_json",
]
NO_EDITOR = "none"  # the editor name of dense-counting rows, which edit nothing
KEEP_ORIGINAL_EXT = {"jpg": "jpg", "jpeg": "jpg", "png": "png", "webp": "webp", "bmp": "bmp"}


def needs_edit(row: InstructionRow) -> bool:
    """Applicable instructions that an editor must carry out (dense counting edits nothing)."""
    return row["status"] == "applicable" and not passes_through(row)


def _edits_image(task: str) -> bool:
    """The task's ``edits_image`` (storage/task_spec.py); an unregistered task is edited."""
    spec = all_tasks().get(task)
    return spec.edits_image if spec is not None else True


def passes_through(row: InstructionRow) -> bool:
    """Applicable instructions with nothing to edit (a task whose spec has ``edits_image=False``, such as dense
    counting, or an ``edit_type`` of ``none``): one ``none`` row each."""
    return row["status"] == "applicable" and (
        not _edits_image(row["task"]) or (row.get("edit_type") or "").lower() == "none"
    )


def read_source(row: InstructionRow, edit_id: str, payload: dict[str, object]) -> tuple[bytes, np.ndarray] | RejectRow:
    """The source image's bytes and RGB pixels, or the reject row saying why it cannot be used."""
    import fsspec

    where = f"instruction {row['id']} (image {row['image_path']})"
    try:
        with fsspec.open(row["image_path"], "rb") as f:
            data = f.read()
    except (FileNotFoundError, IsADirectoryError) as exc:
        return reject(edit_id, STAGE, "image_missing", f"{where}: {exc}", payload)
    except OSError as exc:  # permissions, a remote store refusing the read, ...
        return reject(edit_id, STAGE, "image_unreadable", f"{where}: {type(exc).__name__}: {exc}", payload)
    try:
        image = np.asarray(decode_source(data, where).convert("RGB"))
    except BadImage as exc:  # corrupt, truncated, or above the one pixel limit of source images
        return reject(edit_id, STAGE, "image_too_large" if exc.too_large else "image_unreadable", str(exc), payload)
    h, w = image.shape[:2]
    if (w, h) != (row["width"], row["height"]):
        return reject(
            edit_id,
            STAGE,
            "image_size_mismatch",
            f"{where}: file is {w}x{h}, annotations say {row['width']}x{row['height']}",
            payload,
        )
    return data, image


def store_original(ctx: RunContext, path: str, data: bytes, image: np.ndarray) -> str:
    """Originals keep their source bytes in the image store (re-encoded only for odd formats)."""
    ext = KEEP_ORIGINAL_EXT.get(posixpath.splitext(path)[1].lower().lstrip("."))
    return ctx.images.put_bytes(data, ext) if ext else ctx.images.put_array(image)


def item_seed(run_seed: int, instruction_id: str) -> int:
    """Per-instruction seed: the same for every editor, so an ablation compares like with like."""
    return int(stable_id(int(run_seed), instruction_id, STAGE), 16) % (2**31)


def editor_specs(ctx: RunContext) -> list[EditorSpec]:
    """The configured editors (their keys are checked distinct when the config loads)."""
    return list(ctx.config.editors)


class EditWork(TypedDict):
    """One edit shard's plan entry: the index of its editor in ``editors`` (None: the rows pass
    through unedited) and its instruction rows."""

    editor: int | None
    rows: list[InstructionRow]


@dataclass
class Loaded:
    """An instruction with its decoded source image (or the reject it became)."""

    row: InstructionRow
    edit_id: str
    seed: int
    request: EditRequest | None = None
    original_rel: str | None = None
    rejected: RejectRow | None = None


class EditStage(Stage):
    name = STAGE
    outputs = addresses.outputs(addresses.EDITS)
    upstream = ("instruct",)
    uses_gpu = True  # editor models: the runner leases a device per shard (orchestration.gpu_devices, Ray GPUs)

    def config_section(self, ctx: RunContext) -> dict[str, object]:
        return {
            "editors": [s.stage_key() for s in ctx.config.editors],
            "edit": ctx.config.edit.stage_key(),
            "seed": ctx.seed,
            "verify_model": verify_model_key(ctx),
        }

    def model_endpoints(self, config: BuildConfig) -> list[MLLMConfig]:
        return [config.mllm] if model_checks_configured(config) else []

    def plan(self, ctx: RunContext) -> list[EditWork]:
        specs = editor_specs(ctx)
        table = addresses.INSTRUCTIONS.reader(ctx.run).read().select(INSTRUCTION_COLUMNS)
        rows = sorted(table.to_pylist(), key=lambda r: r["id"])
        chunks = chunk([r for r in rows if needs_edit(r)], ctx.shard_size)
        unedited = chunk([r for r in rows if passes_through(r)], ctx.shard_size)
        return [{"editor": i, "rows": c} for i in range(len(specs)) for c in chunks] + [
            {"editor": None, "rows": c} for c in unedited
        ]

    def process_shard(self, ctx: RunContext, index: int, work: EditWork) -> ShardResult:
        if work["editor"] is None:
            return self._pass_through(ctx, work["rows"])
        spec = editor_specs(ctx)[work["editor"]]
        cfg = ctx.config.edit
        limit_opencv_threads()
        # The device an orchestrator placed this shard on (ctx.options["device"], e.g. cuda:1)
        # changes where the model runs, not what the row records: ids stay the same on any GPU.
        editor = get_editor(spec.name, spec.params, keep_loaded=cfg.keep_loaded, device=ctx.options.get(DEVICE_OPTION))
        bare = editor
        params_json, fixed = shard_fixed(ctx, spec, editor, editor.resolved_params())
        editor = with_budget(editor, spec.time_budget_s)  # over it: an editor_timeout reject (editors/budget.py)
        rows: list[InstructionRow] = work["rows"]
        size = max(1, min(cfg.batch_size, editor.max_batch))
        clock = {"seconds": 0.0, "items": 0}  # editor wall time of this shard (the manifest's timing record)

        def finish(
            loaded: list[Loaded], outcomes: list[Outcome], per_item: float
        ) -> tuple[list[EditRow], list[RejectRow]]:
            clock["seconds"] += per_item * len(outcomes)
            clock["items"] += len(outcomes)
            return self._finish_batch(ctx, spec, params_json, loaded, outcomes, per_item)

        load = lambda batch: [self._load(ctx, spec, params_json, r) for r in batch]  # noqa: E731

        def compute(todo: list[InstructionRow]) -> tuple[list[EditRow], list[RejectRow]]:
            """Edit the items the reuse store does not hold."""
            batches: list[Any] = [todo[i : i + size] for i in range(0, len(todo), size)]
            load_batch = load
            if editor.encodes_first:  # two-phase memory plan: embed every item to edit, then edit them
                batches = [load(b) for b in batches]
                started = time.perf_counter()
                encode_ahead(editor, [[x.request for x in items if x.request is not None] for items in batches])
                clock["seconds"] += time.perf_counter() - started
                load_batch = lambda items: items  # noqa: E731
            edits: list[EditRow] = []
            rejects: list[RejectRow] = []
            for e, r in self._pipeline(batches, editor, load_batch, finish, cfg.overlap_io):
                edits.extend(e)
                rejects.extend(r)
            return edits, rejects

        reuse = ItemReuse.for_shard(ctx, STAGE, f"edit:{spec.key}")
        ids = [stable_id(r["id"], spec.key, params_json, item_seed(ctx.seed, r["id"])) for r in rows]
        result = reused_shard(reuse, rows, ids, [edit_item_key(reuse, ctx, r, fixed) for r in rows], compute)
        if clock["items"]:
            result.extra["timing"] = timing_record(spec, bare, clock["seconds"], clock["items"])
        return result

    @staticmethod
    def _pipeline(
        batches: list[list[InstructionRow]],
        editor: Editor,
        load: Any,
        finish: Callable[[list[Loaded], list[Outcome], float], tuple[list[EditRow], list[RejectRow]]],
        overlap: bool,
    ) -> list[tuple[list[EditRow], list[RejectRow]]]:
        """Per batch: load -> editor call -> finish. With ``overlap``, the next batch loads and the
        previous one finishes on helper threads while the editor runs, so only the editor call is
        on the critical path (measured in benchmarks/edit_overhead.py)."""
        if not overlap:
            out = []
            for batch in batches:
                loaded = load(batch)
                ready = [x for x in loaded if x.request is not None]
                outcomes, seconds = timed_batch(editor, [x.request for x in ready]) if ready else ([], 0.0)
                out.append(finish(loaded, outcomes, seconds / max(1, len(ready))))
            return out
        finished: list[Future] = []
        # Finishing (QC, PNG, writes) goes item by item on two threads: the last batch of a shard,
        # which nothing overlaps, drains in half the time; results are collected in item order.
        with (
            ThreadPoolExecutor(1, thread_name_prefix="edit-load") as loader,
            ThreadPoolExecutor(2, thread_name_prefix="edit-finish") as finisher,
        ):
            pending = loader.submit(load, batches[0]) if batches else None
            for b in range(len(batches)):
                loaded = pending.result()  # type: ignore[union-attr]
                pending = loader.submit(load, batches[b + 1]) if b + 1 < len(batches) else None
                ready = [x for x in loaded if x.request is not None]
                outcomes, seconds = timed_batch(editor, [x.request for x in ready]) if ready else ([], 0.0)
                it = iter(outcomes)
                for x in loaded:
                    finished.append(
                        finisher.submit(
                            finish, [x], [next(it)] if x.request is not None else [], seconds / max(1, len(ready))
                        )
                    )
            return [f.result() for f in finished]

    # -- per item ------------------------------------------------------------------------
    def _load(self, ctx: RunContext, spec: EditorSpec, params_json: str, row: InstructionRow) -> Loaded:
        seed = item_seed(ctx.seed, row["id"])
        edit_id = stable_id(row["id"], spec.key, params_json, seed)
        item = Loaded(row, edit_id, seed)
        payload = {"instruction_id": row["id"], "editor": spec.key, "image_path": row["image_path"]}
        source = read_source(row, edit_id, payload)
        if isinstance(source, dict):
            item.rejected = source
            return item
        data, image = source
        try:
            fields, context = _fields(row)
        except ValueError as exc:  # a malformed candidate or fields_json: the reject names the instruction
            item.rejected = reject(edit_id, STAGE, "bad_request", str(exc), payload)
            return item
        if context:
            fields.setdefault("_context", context)
        try:
            item.request = EditRequest(
                id=edit_id,
                image=image,
                instruction=row.get("instruction") or "",
                task=row["task"],
                edit_type=row.get("edit_type"),
                seed=seed,
                box=tuple(row["target_box"]) if row.get("target_box") else None,  # type: ignore[arg-type]
                target_name=row.get("target_name"),
                fields=fields,
            )
        except ValueError as exc:
            item.rejected = reject(edit_id, STAGE, "bad_request", f"instruction {row['id']}: {exc}", payload)
            return item
        item.original_rel = store_original(ctx, row["image_path"], data, image)
        return item

    def _pass_through(self, ctx: RunContext, rows: list[InstructionRow]) -> ShardResult:
        """Dense counting edits nothing: one row per instruction (editor ``none``) whose edited
        image is the original, so QA, review and export treat every task alike."""
        reuse = ItemReuse.for_shard(ctx, STAGE, f"edit:{NO_EDITOR}")
        ids = [stable_id(r["id"], NO_EDITOR, item_seed(ctx.seed, r["id"])) for r in rows]
        fixed = {"code": edit_code_version(None)}
        keys = [edit_item_key(reuse, ctx, r, fixed) for r in rows]
        return reused_shard(reuse, rows, ids, keys, lambda todo: self._pass_through_rows(ctx, todo))

    def _pass_through_rows(self, ctx: RunContext, rows: list[InstructionRow]) -> tuple[list[EditRow], list[RejectRow]]:
        result = ShardResult(outputs={"edits": []}, rows_in=len(rows))
        for row in rows:
            seed = item_seed(ctx.seed, row["id"])
            edit_id = stable_id(row["id"], NO_EDITOR, seed)
            source = read_source(
                row, edit_id, {"instruction_id": row["id"], "editor": NO_EDITOR, "image_path": row["image_path"]}
            )
            if isinstance(source, dict):
                result.rejects.append(source)
                continue
            original = store_original(ctx, row["image_path"], *source)
            edit = {k: row[k] for k in schemas.ITEM_COLUMNS}
            edit.update(
                id=edit_id,
                instruction_id=row["id"],
                instruction=row.get("instruction"),
                edit_type="none",
                target_name=row.get("target_name"),
                target_box=row.get("target_box"),
                instruction_fields_json=row.get("fields_json"),
                editor=NO_EDITOR,
                editor_params_json="{}",
                seed=seed,
                status="ok",
                original_image=original,
                edited_image=original,
                mask_image=None,
                qc_json=canonical_json({"passed": True, "note": "no edit: the task asks about the original image"}),
                edit_seconds=None,
            )
            result.outputs["edits"].append(edit)
        return result.outputs["edits"], result.rejects

    def _finish_batch(
        self,
        ctx: RunContext,
        spec: EditorSpec,
        params_json: str,
        loaded: list[Loaded],
        outcomes: list[Outcome],
        per_item: float,
    ) -> tuple[list[EditRow], list[RejectRow]]:
        edits, rejects = [], []
        it = iter(outcomes)
        for item in loaded:
            if item.rejected is not None:
                rejects.append(item.rejected)
                continue
            outcome = next(it)
            payload = {"instruction_id": item.row["id"], "editor": spec.key}
            if isinstance(outcome, EditFailure):
                rejects.append(
                    reject(
                        item.edit_id,
                        STAGE,
                        outcome.reason,
                        f"instruction {item.row['id']}, editor {spec.key}: {outcome.detail}",
                        payload,
                    )
                )
                continue
            try:
                edits.append(self._row(ctx, spec, params_json, item, outcome, per_item))
            except ValueError as exc:
                rejects.append(
                    reject(
                        item.edit_id,
                        STAGE,
                        "editor_bad_output",
                        f"instruction {item.row['id']}, editor {spec.key}: {exc}",
                        payload,
                    )
                )
        model_verify(ctx, edits)  # yes/no checks by an image-seeing MLLM, when one is configured
        return edits, rejects

    def _row(
        self, ctx: RunContext, spec: EditorSpec, params_json: str, item: Loaded, res: EditResult, seconds: float
    ) -> EditRow:
        req = item.request
        assert req is not None
        h, w = req.image.shape[:2]
        edited, raw_size = fit_to_source(res.image, w, h)
        if isinstance(res.meta.get("raw_size"), (list, tuple)) and len(res.meta["raw_size"]) == 2:
            raw_size = (
                int(res.meta["raw_size"][0]),
                int(res.meta["raw_size"][1]),
            )  # the editor resized it back itself
        kind = canonical_edit_type(req.edit_type)
        box = list(req.box) if req.box is not None else [0.0, 0.0, float(w), float(h)]
        dest = res.meta.get("destination_box") or req.fields.get("destination_box")
        change = [box]
        if dest is not None and kind in ("move", "add"):
            change = [list(dest)] if kind == "add" else [box, list(dest)]
        qc = check_edit(req.image, edited, change, ctx.config.edit.qc, raw_size=raw_size)
        untouched = task_hook(req.task, "untouched_objects")  # the task's behaviour, handed down to the verifier
        verdict = verify_result(req, edited, res, ctx.config.edit.qc.verify, untouched)
        qc_doc = qc.to_json() | {"change_boxes": change, "editor_meta": res.meta, "verification": verdict.to_json()}
        mask_rel = None
        if res.mask is not None and res.mask.shape == (h, w):
            mask_rel = ctx.images.put_bytes(
                _png(res.mask.astype(np.uint8) * 255, "L", ctx.config.edit.png_compress_level), "png"
            )
        row = {k: item.row[k] for k in schemas.ITEM_COLUMNS}
        row.update(
            id=item.edit_id,
            instruction_id=item.row["id"],
            instruction=item.row.get("instruction"),
            edit_type=item.row.get("edit_type"),
            target_name=item.row.get("target_name"),
            target_box=item.row.get("target_box"),
            instruction_fields_json=item.row.get("fields_json"),
            editor=spec.key,
            editor_params_json=params_json,
            seed=item.seed,
            status="ok" if qc.passed and verdict.passed else "auto_rejected",
            original_image=item.original_rel,
            edited_image=ctx.images.put_bytes(_png(edited, "RGB", ctx.config.edit.png_compress_level), "png"),
            mask_image=mask_rel,
            qc_json=canonical_json(qc_doc),
            edit_seconds=round(seconds, 4) if ctx.config.edit.record_timings else None,
        )
        return row

    def finalize(self, ctx: RunContext, summary: dict[str, Any]) -> dict[str, Any]:
        table = addresses.EDITS.reader(ctx.run).read().select(["editor", "status", "editor_params_json"])
        per: dict[str, dict[str, int]] = {}
        seen: dict[tuple[str, str], None] = {}
        for r in table.to_pylist():
            per.setdefault(r["editor"], {"ok": 0, "auto_rejected": 0})
            per[r["editor"]][r["status"]] = per[r["editor"]].get(r["status"], 0) + 1
            seen[(r["editor"], r["editor_params_json"] or "{}")] = None
        plans: dict[str, list[str]] = {}  # memory plans the rows were made with (an ablation tells runs apart)
        for editor, params_json in seen:
            params = json.loads(params_json).get("params", {})
            if "memory_plan" in params:
                plan = params["memory_plan"] + (
                    "" if params.get("quantization", "none") == "none" else f"+{params['quantization']}"
                )
                if plan not in plans.setdefault(editor, []):
                    plans[editor].append(plan)
        out: dict[str, Any] = {"per_editor": per, "memory_plans": plans} if plans else {"per_editor": per}
        done = set(summary["completed_shards"])
        timings = merge_timings(
            [
                m["extra"]["timing"]
                for m in self.store(ctx).markers()
                if m["shard"] in done and "timing" in (m.get("extra") or {})
            ]
        )
        if timings:
            out["timings"] = timings
        return out


# ---------------------------------------------------------------------------- timing record


def timing_record(spec: EditorSpec, editor: Editor, seconds: float, items: int) -> dict[str, Any]:
    """What one shard measured: the editor's wall seconds over the items it computed, with the GPU,
    memory plan, steps and resolution they ran at (the build-time estimate's measured figures,
    editors/timing.py; reused items are not counted). Kept in the shard marker, not the rows, so
    the artifacts stay byte-identical."""
    from editors.timing import device_name, resolution_of

    p = editor.params
    resolved = editor.resolved_params()  # the editor has run, so this loads nothing
    plan, quant = resolved.get("memory_plan", "single"), resolved.get("quantization", "none")
    area = getattr(p, "process_area", None) or (1024 * 1024 if hasattr(p, "process_area") else None)
    return {
        "editor": spec.name,
        "key": spec.key,
        "model": getattr(p, "model", None),
        "gpu": device_name(str(getattr(editor, "device", "cpu"))),
        "plan": plan if quant in ("none", None) else f"{plan}+{quant}",
        "steps": type(editor).edit_steps(p),
        "resolution": resolution_of(area),
        "seconds": round(seconds, 4),
        "items": items,
    }


def merge_timings(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Shard records summed per (editor key, GPU, plan, steps, resolution), with ``s_per_edit``."""
    out: dict[str, dict[str, Any]] = {}
    for r in records:
        name = "|".join(str(r.get(k)) for k in ("key", "gpu", "plan", "steps", "resolution"))
        acc = out.setdefault(name, {**r, "seconds": 0.0, "items": 0})
        acc["seconds"] = round(acc["seconds"] + r["seconds"], 4)
        acc["items"] += r["items"]
        acc["s_per_edit"] = round(acc["seconds"] / acc["items"], 4)
    return out


def shard_fixed(
    ctx: RunContext, spec: EditorSpec, editor: Editor, resolved: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    """(params_json, the parts every item key of a shard shares). Rows record the params with
    defaults filled and the load's choices (``resolved``: the memory plan), not the placed
    device; the key holds the bare editor's own class and params."""
    params_json = canonical_json(
        {"name": spec.name, "params": create_editor(spec.name, spec.params).params_dict() | resolved}
    )
    fixed = {
        "editor": [spec.key, params_json, reuse_params(editor)],
        "edit": ctx.config.edit.stage_key(),
        "verify_model": verify_model_key(ctx),
        "code": edit_code_version(editor),
    }
    return params_json, fixed


def pending_items(ctx: RunContext, plans: dict[str, tuple[str, str]]) -> dict[str, tuple[int, int]]:
    """Per editor key: (items to edit, items the reuse store does not hold), computed with the item
    keys a build would use (``plans``: the memory plan per model editor, as the preflight chose
    it), without loading any model. Empty when the run has no instructions yet."""
    reader = addresses.INSTRUCTIONS.reader(ctx.run)
    if not reader.exists():
        return {}
    rows = [r for r in reader.read().select(INSTRUCTION_COLUMNS).to_pylist() if needs_edit(r)]
    out = {}
    for spec in editor_specs(ctx):
        editor = create_editor(spec.name, spec.params)
        resolved = type(editor).plan_params(*plans[spec.key]) if spec.key in plans else {}
        _, fixed = shard_fixed(ctx, spec, editor, resolved)
        reuse = ItemReuse.for_shard(ctx, STAGE, f"edit:{spec.key}")
        keys = [edit_item_key(reuse, ctx, r, fixed) for r in rows]
        stored = reuse.lookup(keys)
        held = sum(1 for k in keys if k and stored.holds(k, ctx.run))
        out[spec.key] = (len(rows), len(rows) - held)
    return out


# ---------------------------------------------------------------------------- item reuse


def reuse_params(editor: Editor) -> list[object]:
    """The placed editor's resolved parameters (memory-plan settings such as dtype or offload
    included; the device it landed on is not: rows are the same on any GPU), plus whatever else
    an editor declares output-changing through an optional ``reuse_fingerprint()``."""
    params = {k: v for k, v in editor.params_dict().items() if k != "device"}
    fingerprint = getattr(editor, "reuse_fingerprint", None)
    return [params, fingerprint() if callable(fingerprint) else None]


def edit_code_version(editor: Editor | None) -> str:
    """This stage's code (with the model checks), the editors package, and the editor's own module (which may live elsewhere)."""
    parts: list[object] = ["tasks.stages.edit", "tasks.stages.verify_model", "editors"]
    if editor is not None:
        parts.append(type(editor))
    return code_version(*parts)


def source_digest(path: str) -> str | None:
    """sha256 of a source image's bytes; None when it cannot be read (the item is then computed,
    which yields the reject that says why). A local file is hashed once per process for as long
    as its size, inode and times stay the same (the build's preflight estimate and the edit
    stage key the same images); a file replaced in between is hashed again."""
    import fsspec

    from storage.hashing import sha256_hex

    if "://" not in path or path.startswith("file://"):
        local = path.removeprefix("file://")
        try:
            st = os.stat(local)
        except OSError:
            return None
        return _local_digest(local, st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
    try:
        with fsspec.open(path, "rb") as f:
            return sha256_hex(f.read())
    except OSError:
        return None


@functools.lru_cache(maxsize=65536)
def _local_digest(path: str, size: int, inode: int, mtime_ns: int, ctime_ns: int) -> str | None:
    from storage.hashing import sha256_hex

    try:
        with open(path, "rb") as f:
            return sha256_hex(f.read())
    except OSError:
        return None


def edit_item_key(reuse: ItemReuse, ctx: RunContext, row: InstructionRow, fixed: dict[str, Any]) -> str | None:
    """An instruction's item key: what the editor and QC see (the instruction's columns, the
    candidate's annotated context, the source image's content), the editor's resolved parameters,
    the output-changing settings, the item seed and the code version. Dataset statistics that the
    candidate row carries (pair counts, ranks) change when the dataset grows and are not in it:
    ``reused_shard`` carries them into the row from the current instruction."""
    digest = source_digest(row["image_path"])
    if digest is None:
        return None
    try:
        _, context = _fields(row)
    except ValueError:
        return None  # computed: its reject says what is wrong
    instruction = {k: row.get(k) for k in INSTRUCTION_COLUMNS if k != "candidate_json"}
    return reuse.key(
        instruction=instruction, context=context, source=digest, seed=item_seed(ctx.seed, row["id"]), **fixed
    )


def reused_shard(
    reuse: ItemReuse,
    rows: list[InstructionRow],
    ids: list[str],
    keys: list[str | None],
    compute: Callable[[list[InstructionRow]], tuple[list[EditRow], list[RejectRow]]],
) -> ShardResult:
    """One shard through the reuse store: ``compute(rows)`` -> (edits, rejects) runs on the rows
    whose key is not stored; rows and rejects come out in row order either way."""

    def run(misses: list[int]) -> list[Entry]:
        edits, rejects = compute([rows[i] for i in misses])
        by_id: dict[str, dict[str, Any]] = {e["id"]: {"edit": e} for e in edits}
        for r in rejects:
            by_id.setdefault(r["id"], {"rejects": []}).setdefault("rejects", []).append(r)
        out = []
        for i in misses:
            value = by_id.get(ids[i])
            if value is None:
                raise RuntimeError(f"edit {ids[i]} (instruction {rows[i]['id']}) produced neither a row nor a reject")
            edit = value.get("edit")
            images = [edit["original_image"], edit["edited_image"], edit.get("mask_image")] if edit else []
            out.append(Entry(value, [i for i in images if i], keep=reuse.keeps(value.get("rejects", []))))
        return out

    result = ShardResult(outputs={"edits": []}, rows_in=len(rows))
    for row, value in zip(rows, reuse.map(keys, run)):
        if value.get("edit") is not None:
            result.outputs["edits"].append({**value["edit"], **{k: row[k] for k in schemas.ITEM_COLUMNS}})
        result.rejects.extend(value.get("rejects", []))
    result.items = reuse.counts.as_dict()
    return result


def _fields(row: InstructionRow) -> tuple[dict[str, Any], list[Any]]:
    """The instruction's structured fields and the candidate's other annotated objects; a malformed
    value of either raises ``ValueError`` naming the instruction (the caller's ``bad_request``)."""
    owner = f"instruction {row['id']}"
    fields = instruction_fields(row, owner)
    candidate = candidate_of(row, owner)
    if candidate.get("target_synset"):  # what verification needs to tell a synonym of the target
        fields.setdefault("_target_synset", candidate["target_synset"])
    return fields, context_objects(candidate, owner)


def fit_to_source(image: np.ndarray, width: int, height: int) -> tuple[np.ndarray, tuple[int, int]]:
    """The editor's output as HxWx3 uint8 at the source size, and its raw (width, height)."""
    arr = np.asarray(image)
    if arr.ndim != 3 or arr.shape[2] not in (3, 4):
        raise ValueError(f"editor output has shape {arr.shape}, expected HxWx3")
    if arr.dtype != np.uint8:
        if np.issubdtype(arr.dtype, np.floating) and float(np.nanmax(arr)) <= 1.0 + 1e-6:
            arr = arr * 255.0
        arr = np.clip(np.nan_to_num(arr), 0, 255).round().astype(np.uint8)
    arr = np.ascontiguousarray(arr[:, :, :3])
    raw = (arr.shape[1], arr.shape[0])
    if raw != (width, height):
        arr = np.asarray(Image.fromarray(arr, "RGB").resize((width, height), Image.Resampling.LANCZOS))
    return arr, raw


def _png(array: np.ndarray, mode: str, level: int) -> bytes:
    """Lossless PNG bytes (QC and review must see the real pixels); ``level`` trades time for size."""
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(array), mode).save(buf, format="PNG", optimize=False, compress_level=level)
    return buf.getvalue()
