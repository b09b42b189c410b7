"""The ``edit`` stage: every applicable instruction through every configured editor, then auto-QC.

Dense counting edits nothing: its instructions become one ``none`` row each whose edited image is
the original, so QA, review and export treat every task alike.

Shards are (editor, chunk of instructions), editor-major, so a worker keeps one model busy. In a
shard, images of the next batch are read while the editor runs the current batch, and QC, PNG
encoding and store writes of the previous batch run beside it; the editor call itself is the
only thing on the critical path. Originals are stored as their source bytes, edits as PNG,
both through ``ctx.images``. Rows are keyed by (instruction id, editor key).
"""

from __future__ import annotations

import io
import json
import posixpath
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image

from editors.base import EditFailure, EditRequest, EditResult, canonical_edit_type
from editors.config import EditorSpec
from editors.qc import check_edit
from editors.registry import create_editor, get_editor
from editors.runtime import encode_ahead, limit_opencv_threads, timed_batch
from storage import schemas
from storage.hashing import canonical_json, stable_id
from storage.rejects import reject
from storage.stage_store import read_artifact
from tasks.base import DEVICE_OPTION, RunContext, ShardResult, Stage, chunk

STAGE = "edit"
ITEM_COLUMNS = [f.name for f in schemas.ITEM_FIELDS]
INSTRUCTION_COLUMNS = ["id", *ITEM_COLUMNS, "status", "instruction", "edit_type", "target_box", "target_name", "fields_json"]
NO_EDITOR = "none"  # the editor name of dense-counting rows, which edit nothing
KEEP_ORIGINAL_EXT = {"jpg": "jpg", "jpeg": "jpg", "png": "png", "webp": "webp", "bmp": "bmp"}


def needs_edit(row: dict[str, Any]) -> bool:
    """Applicable instructions that an editor must carry out (dense counting edits nothing)."""
    return row["status"] == "applicable" and not passes_through(row)


def passes_through(row: dict[str, Any]) -> bool:
    """Applicable instructions with nothing to edit (dense counting): one ``none`` row each."""
    return row["status"] == "applicable" and (row["task"] == "dense_counting" or (row.get("edit_type") or "").lower() == "none")


def read_source(row: dict[str, Any], edit_id: str, payload: dict[str, Any]) -> tuple[bytes, np.ndarray] | dict[str, Any]:
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
        image = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
    except Exception as exc:  # corrupt or truncated file
        return reject(edit_id, STAGE, "image_unreadable", f"{where}: {type(exc).__name__}: {exc}", payload)
    h, w = image.shape[:2]
    if (w, h) != (row["width"], row["height"]):
        return reject(edit_id, STAGE, "image_size_mismatch", f"{where}: file is {w}x{h}, annotations say {row['width']}x{row['height']}", payload)
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


@dataclass
class Loaded:
    """An instruction with its decoded source image (or the reject it became)."""

    row: dict[str, Any]
    edit_id: str
    seed: int
    request: EditRequest | None = None
    original_rel: str | None = None
    rejected: dict[str, Any] | None = None


class EditStage(Stage):
    name = STAGE
    outputs = {"edits": schemas.EDITS}
    upstream = ("instruct",)

    def config_section(self, ctx: RunContext) -> Any:
        return {
            "editors": [s.model_dump(mode="json") for s in ctx.config.editors],
            "edit": ctx.config.edit.model_dump(mode="json"),
            "seed": ctx.seed,
        }

    def plan(self, ctx: RunContext) -> list[Any]:
        specs = editor_specs(ctx)
        table = read_artifact(ctx.run, "instruct", "instructions", schemas.INSTRUCTIONS).select(INSTRUCTION_COLUMNS)
        rows = sorted(table.to_pylist(), key=lambda r: r["id"])
        chunks = chunk([r for r in rows if needs_edit(r)], ctx.config.run.shard_size)
        unedited = chunk([r for r in rows if passes_through(r)], ctx.config.run.shard_size)
        return [{"editor": i, "rows": c} for i in range(len(specs)) for c in chunks] + [{"editor": None, "rows": c} for c in unedited]

    def process_shard(self, ctx: RunContext, index: int, work: Any) -> ShardResult:
        if work["editor"] is None:
            return self._pass_through(ctx, work["rows"])
        spec = editor_specs(ctx)[work["editor"]]
        cfg = ctx.config.edit
        limit_opencv_threads()
        # The device an orchestrator placed this shard on (ctx.options["device"], e.g. cuda:1)
        # changes where the model runs, not what the row records: ids stay the same on any GPU.
        editor = get_editor(spec.name, spec.params, keep_loaded=cfg.keep_loaded, device=ctx.options.get(DEVICE_OPTION))
        # Rows record the params with defaults filled and the load's choices (memory plan), not the placed device.
        params_json = canonical_json({"name": spec.name, "params": create_editor(spec.name, spec.params).params_dict() | editor.resolved_params()})
        rows: list[dict[str, Any]] = work["rows"]
        size = max(1, min(cfg.batch_size, editor.max_batch))
        batches = [rows[i : i + size] for i in range(0, len(rows), size)]
        result = ShardResult(rows_in=len(rows))
        load = lambda batch: [self._load(ctx, spec, params_json, r) for r in batch]  # noqa: E731
        if editor.encodes_first:  # two-phase memory plan: embed the whole shard, then edit it
            loaded_all = [load(b) for b in batches]
            encode_ahead(editor, [[x.request for x in items if x.request is not None] for items in loaded_all])
            batches, load = loaded_all, lambda items: items  # type: ignore[assignment]  # noqa: E731
        finish = lambda loaded, outcomes, per_item: self._finish_batch(ctx, spec, params_json, loaded, outcomes, per_item)  # noqa: E731
        for edits, rejects in self._pipeline(batches, editor, load, finish, cfg.overlap_io):
            result.outputs.setdefault("edits", []).extend(edits)
            result.rejects.extend(rejects)
        result.outputs.setdefault("edits", [])
        return result

    @staticmethod
    def _pipeline(batches: list[list[dict[str, Any]]], editor: Any, load: Any, finish: Any, overlap: bool) -> list[Any]:
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
        with ThreadPoolExecutor(1, thread_name_prefix="edit-load") as loader, ThreadPoolExecutor(2, thread_name_prefix="edit-finish") as finisher:
            pending = loader.submit(load, batches[0]) if batches else None
            for b in range(len(batches)):
                loaded = pending.result()  # type: ignore[union-attr]
                pending = loader.submit(load, batches[b + 1]) if b + 1 < len(batches) else None
                ready = [x for x in loaded if x.request is not None]
                outcomes, seconds = timed_batch(editor, [x.request for x in ready]) if ready else ([], 0.0)
                it = iter(outcomes)
                for x in loaded:
                    finished.append(finisher.submit(finish, [x], [next(it)] if x.request is not None else [], seconds / max(1, len(ready))))
            return [f.result() for f in finished]

    # -- per item ------------------------------------------------------------------------
    def _load(self, ctx: RunContext, spec: EditorSpec, params_json: str, row: dict[str, Any]) -> Loaded:
        seed = item_seed(ctx.seed, row["id"])
        edit_id = stable_id(row["id"], spec.key, params_json, seed)
        item = Loaded(row, edit_id, seed)
        payload = {"instruction_id": row["id"], "editor": spec.key, "image_path": row["image_path"]}
        source = read_source(row, edit_id, payload)
        if isinstance(source, dict):
            item.rejected = source
            return item
        data, image = source
        fields, context = _fields(row)
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

    def _pass_through(self, ctx: RunContext, rows: list[dict[str, Any]]) -> ShardResult:
        """Dense counting edits nothing: one row per instruction (editor ``none``) whose edited
        image is the original, so QA, review and export treat every task alike."""
        result = ShardResult(outputs={"edits": []}, rows_in=len(rows))
        for row in rows:
            seed = item_seed(ctx.seed, row["id"])
            edit_id = stable_id(row["id"], NO_EDITOR, seed)
            source = read_source(row, edit_id, {"instruction_id": row["id"], "editor": NO_EDITOR, "image_path": row["image_path"]})
            if isinstance(source, dict):
                result.rejects.append(source)
                continue
            original = store_original(ctx, row["image_path"], *source)
            edit = {k: row[k] for k in ITEM_COLUMNS}
            edit.update(
                id=edit_id, instruction_id=row["id"], instruction=row.get("instruction"), edit_type="none",
                target_name=row.get("target_name"), target_box=row.get("target_box"),
                instruction_fields_json=row.get("fields_json"), editor=NO_EDITOR, editor_params_json="{}", seed=seed,
                status="ok", original_image=original, edited_image=original, mask_image=None,
                qc_json=canonical_json({"passed": True, "note": "no edit: the task asks about the original image"}),
                edit_seconds=None,
            )
            result.outputs["edits"].append(edit)
        return result

    def _finish_batch(
        self, ctx: RunContext, spec: EditorSpec, params_json: str, loaded: list[Loaded], outcomes: list[Any], per_item: float
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        edits, rejects = [], []
        it = iter(outcomes)
        for item in loaded:
            if item.rejected is not None:
                rejects.append(item.rejected)
                continue
            outcome = next(it)
            payload = {"instruction_id": item.row["id"], "editor": spec.key}
            if isinstance(outcome, EditFailure):
                rejects.append(reject(item.edit_id, STAGE, outcome.reason, f"instruction {item.row['id']}, editor {spec.key}: {outcome.detail}", payload))
                continue
            try:
                edits.append(self._row(ctx, spec, params_json, item, outcome, per_item))
            except ValueError as exc:
                rejects.append(reject(item.edit_id, STAGE, "editor_bad_output", f"instruction {item.row['id']}, editor {spec.key}: {exc}", payload))
        return edits, rejects

    def _row(self, ctx: RunContext, spec: EditorSpec, params_json: str, item: Loaded, res: EditResult, seconds: float) -> dict[str, Any]:
        req = item.request
        assert req is not None
        h, w = req.image.shape[:2]
        edited, raw_size = fit_to_source(res.image, w, h)
        if isinstance(res.meta.get("raw_size"), (list, tuple)) and len(res.meta["raw_size"]) == 2:
            raw_size = (int(res.meta["raw_size"][0]), int(res.meta["raw_size"][1]))  # the editor resized it back itself
        kind = canonical_edit_type(req.edit_type)
        box = list(req.box) if req.box is not None else [0.0, 0.0, float(w), float(h)]
        dest = res.meta.get("destination_box") or req.fields.get("destination_box")
        change = [box]
        if dest is not None and kind in ("move", "add"):
            change = [list(dest)] if kind == "add" else [box, list(dest)]
        qc = check_edit(req.image, edited, change, ctx.config.edit.qc, raw_size=raw_size)
        qc_doc = qc.to_json() | {"change_boxes": change, "editor_meta": res.meta}
        mask_rel = None
        if res.mask is not None and res.mask.shape == (h, w):
            mask_rel = ctx.images.put_bytes(_png(res.mask.astype(np.uint8) * 255, "L", ctx.config.edit.png_compress_level), "png")
        row = {k: item.row[k] for k in ITEM_COLUMNS}
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
            status="ok" if qc.passed else "auto_rejected",
            original_image=item.original_rel,
            edited_image=ctx.images.put_bytes(_png(edited, "RGB", ctx.config.edit.png_compress_level), "png"),
            mask_image=mask_rel,
            qc_json=canonical_json(qc_doc),
            edit_seconds=round(seconds, 4) if ctx.config.edit.record_timings else None,
        )
        return row

    def finalize(self, ctx: RunContext, summary: dict[str, Any]) -> dict[str, Any]:
        table = read_artifact(ctx.run, STAGE, "edits", schemas.EDITS).select(["editor", "status", "editor_params_json"])
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
                plan = params["memory_plan"] + ("" if params.get("quantization", "none") == "none" else f"+{params['quantization']}")
                if plan not in plans.setdefault(editor, []):
                    plans[editor].append(plan)
        return {"per_editor": per, "memory_plans": plans} if plans else {"per_editor": per}


def _fields(row: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
    """The instruction's structured fields and the candidate's other annotated objects."""
    fields: dict[str, Any] = {}
    try:
        parsed = json.loads(row.get("fields_json") or "{}")
        fields = parsed if isinstance(parsed, dict) else {"value": parsed}
    except json.JSONDecodeError:
        fields = {}
    context: list[Any] = []
    try:
        cand = json.loads(row.get("candidate_json") or "{}")
        raw = cand.get("context_json") if isinstance(cand, dict) else None
        ctx_val = json.loads(raw) if isinstance(raw, str) else raw
        if isinstance(ctx_val, list):
            context = ctx_val
    except json.JSONDecodeError:
        context = []
    return fields, context


def fit_to_source(image: Any, width: int, height: int) -> tuple[np.ndarray, tuple[int, int]]:
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
