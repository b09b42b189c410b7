"""``reactbench audit``: is every gold answer of every queued item true of its image?

For a run built from the bundled sample, ``sample_truth.json`` holds every drawn shape. The
audit rebuilds what each edited image shows from that truth plus the editor's own record
(``qc_json.editor_meta`` and the mask it reports: which object was erased / recoloured / moved /
cloned, and to what), then checks the claims each question's gold answer rests on:

- RE: the erased object's class is gone from its place (no visible instance of the truth class
  overlaps the target box), what the analysis says remains is still there;
- CA: the object now shows the new colour (the editor's mask covers it), which reads apart from
  the original, and no other object of its class keeps the original colour in the probed half;
- AT: the performed operation is the planned one (side of a move / add, class of a replacement),
  no other object was erased with it, the control object (any object of its class) was not
  touched, and the wrong change (C_prime) is not what happened;
- DC: the gold count is the number of drawn objects, counting options ascend;
- BEAF: "is there X?" is Yes exactly when an instance of X's class is visible.

Without truth, the audit reports the verification verdicts of the queued edits only.
"""

from __future__ import annotations

import io
import json
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from storage.annotation.boxes import intersection
from storage.annotation.coverage import LOST_ABOVE, covered
from storage.annotation.names import basic_name
from storage.json_columns import candidate_of, context_objects, instruction_fields, load_json_column
from storage.task_spec import task_hook
from tasks.engine.intact import require_intact
from tasks.engine.suggest import suggest

if TYPE_CHECKING:
    from storage.fs import RunFS
    from storage.image_store import ImageStore
    from tasks.engine.build_config import BuildConfig


@dataclass
class ItemAudit:
    edit_id: str
    task: str
    editor: str
    problems: list[str] = field(default_factory=list)
    questions: int = 0

    @property
    def consistent(self) -> bool:
        return not self.problems


class World:
    """One image's drawn objects before and after an edit, from the truth and the editor's record."""

    def __init__(self, image: dict[str, Any], annotations: list[dict[str, Any]]):
        from miners.sample_data import MIN_VISIBLE, object_mask

        self.min_visible = MIN_VISIBLE

        self.w, self.h = int(image["width"]), int(image["height"])
        self.objects = {oid: dict(o, id=oid, erased=False, touched=0.0) for oid, o in image["objects"].items()}
        self._mask = lambda oid: object_mask({"images": {"i": image}}, "i", oid, visible_only=True)
        self._full = lambda oid: object_mask({"images": {"i": image}}, "i", oid)
        # annotation names -> truth classes ("rock" annotates a drawn stone)
        self.synonyms: dict[str, set[str]] = defaultdict(set)
        for o in self.objects.values():
            self.synonyms[o["name"]].add(o["name"])
        for a in annotations:
            t = self.objects.get(str(a.get("id")))
            if t is not None and a.get("name"):
                self.synonyms[basic_name(a["name"])].add(t["name"])
        self.added: list[dict[str, Any]] = []

    def find(self, box: list[float] | None) -> dict[str, Any] | None:
        if not box:
            return None
        for o in self.objects.values():
            if all(abs(float(a) - float(b)) <= 1.0 for a, b in zip(o["box"], box)):
                return o
        return None

    def apply_mask(self, mask: np.ndarray | None) -> None:
        """Mark objects whose visible pixels the edit overwrote (erased: more than
        ``storage.annotation.coverage.LOST_ABOVE`` of them, the rule the edit-stage verification shares)."""
        if mask is None:
            return
        for oid, o in self.objects.items():
            m = self._mask(oid)
            if m.any() and self.shows(o):
                frac = covered(m, mask)
                o["touched"] = frac
                o["erased"] = o["erased"] or frac > LOST_ABOVE

    def classes(self, name: str) -> set[str]:
        n = basic_name(name)
        return self.synonyms.get(n, set()) | ({n} if n in self.synonyms else set())

    def shows(self, o: dict[str, Any]) -> bool:
        """Whether enough of the drawn object is in view to be seen as one: at least
        ``miners.sample_data.MIN_VISIBLE`` of its pixels, the rule by which the sample annotates
        (a sliver peeking out from behind another object is in the truth, unannotated, and no
        viewer could name it)."""
        if "shows" not in o:
            full = self._full(o["id"])
            o["shows"] = bool(full.any()) and float(self._mask(o["id"]).sum()) >= self.min_visible * float(full.sum())
        return bool(o["shows"])

    def visible(self, name: str, box: list[float] | None = None) -> list[dict[str, Any]]:
        """Instances of ``name``'s class still visible (overlapping ``box`` by > 10 % of their area, if given)."""
        cls = self.classes(name) or {basic_name(name)}
        out = [o for o in self.objects.values() if o["name"] in cls and not o["erased"] and self.shows(o)] + [
            a for a in self.added if a["name"] in cls
        ]
        if box is not None:
            out = [o for o in out if intersection(o["box"], box) > 0.1 * o["box"][2] * o["box"][3]]
        return out


def _png(images: ImageStore, rel: str | None) -> np.ndarray | None:
    if not rel:
        return None
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(images.get_bytes(rel))).convert("L")) > 127


def audit_item(
    edit: dict[str, Any],
    questions: list[dict[str, Any]],
    analysis: dict[str, Any],
    truth: dict[str, Any],
    images: ImageStore,
) -> ItemAudit:
    """Check every gold answer of one queued edit against the truth."""
    item = ItemAudit(edit["id"], edit["task"], edit["editor"], questions=len(questions))
    p = item.problems
    own_audit = task_hook(edit["task"], "audit_item")
    if own_audit is not None:
        return own_audit(edit, questions, analysis, truth, images)
    image = truth["images"].get(str(edit["image_id"]))
    if image is None:
        return ItemAudit(
            edit["id"], edit["task"], edit["editor"], [f"no truth for image {edit['image_id']}"], len(questions)
        )
    owner = f"edit {edit['id']}"
    annotations = context_objects(candidate_of(edit, owner), owner)
    world = World(image, annotations)
    before = World(image, annotations)
    qc = json.loads(edit.get("qc_json") or "{}")
    meta = qc.get("editor_meta") or {}
    fields = instruction_fields(edit, owner)
    mask = _png(images, edit.get("mask_image"))
    box = list(edit.get("target_box") or [])
    target = world.find(box)
    if target is None:
        p.append(f"target box {box} is no drawn object")
        return item
    kind = (edit.get("edit_type") or "").lower()
    op = meta.get("operation")
    if kind in ("remove", "delete"):
        world.apply_mask(mask)
        if not target["erased"]:
            p.append(f"the {target['name']} was not erased (mask covers {target['touched']:.0%})")
    elif kind == "attribute":
        tmask = world._mask(target["id"])
        cover = float((tmask & mask).sum()) / max(1, tmask.sum()) if mask is not None else 0.0
        if op != "colour" or cover < 0.8:
            p.append(f"recolour record {op!r} covers {cover:.0%} of the {target['name']}")
        else:
            target["colour"] = meta.get("value")
    elif kind in ("move", "add", "replace"):
        placed = dict(target)
        if kind == "replace":
            donor = world.find(meta.get("donor_box"))
            world.apply_mask(mask)
            if donor is None:
                p.append(f"replace: donor {meta.get('donor_box')} is no drawn object")
            else:
                donor["erased"] = False  # copied from, not changed
                world.added.append(dict(donor, box=box))
                target["erased"] = True
        else:
            dest = meta.get("destination_box")
            hole = mask.copy() if mask is not None else None
            world.apply_mask(hole)
            if kind == "add":
                target["erased"] = False
            world.added.append(dict(placed, box=dest, erased=False))
    task_checks = task_hook(edit["task"], "audit_checks")
    if task_checks is not None:
        task_checks(EditScene(edit, world, before, target, analysis, questions, fields, meta, kind, box), p)
    for q in questions:
        if q["question_set"] == "beaf":
            _check_beaf(q, world if q["image_role"] == "edited" else before, p)
    return item


@dataclass
class EditScene:
    """What the ``audit_checks`` hook of a task is given about one edited item: the world after
    and before the edit, the target object, the analysis, the questions and the editor's record."""

    edit: dict[str, Any]
    world: World
    before: World
    target: dict[str, Any]
    analysis: dict[str, Any]
    questions: list[dict[str, Any]]
    fields: dict[str, Any]
    meta: dict[str, Any]
    kind: str
    box: list[Any]


def _check_beaf(q: dict[str, Any], world: World, p: list[str]) -> None:
    m = re.match(r"Is there (?:an? )?(.+?) in this image\?", q["text"])
    if not m:
        p.append(f"BEAF {q['qid']}: unparsed question {q['text']!r}")
        return
    there = bool(world.visible(m.group(1)))
    if ("Yes" if there else "No") != q["gold"]:
        p.append(
            f"BEAF {q['qid']} ({q['image_role']}): {q['text']!r} gold {q['gold']} but the {m.group(1)} is {'there' if there else 'absent'}"
        )


def find_truth(config: BuildConfig | None) -> Path | None:
    """``sample_truth.json`` next to the sources of ``config`` (the run's saved config, resolved by
    the caller; None when the run has none), if the bundled sample wrote one."""
    if config is None:
        return None
    for key in ("visual_genome", "fsc147"):
        src = getattr(config.sources, key)
        if src:
            cand = Path(src).parent / "sample_truth.json"
            if cand.exists():
                return cand
    return None


def run_audit(
    run: RunFS, truth_path: Path | None, progress: Callable[[int, int], None] | None = None
) -> dict[str, Any]:
    """Audit every queued item of ``run``; per task and editor: consistent / inconsistent with examples.

    One questions shard at a time (the qa stage writes all of an item's questions in one shard),
    so memory holds the queued edits' rows and one shard's questions, not the benchmark's.
    ``progress(done, total)`` is called as items are audited."""
    from storage import addresses
    from storage.image_store import ImageStore
    from tasks.review.stage import QUEUE

    require_intact(run, ("review", "edit", "qa"))  # sizes and sha256 of every file read below
    queue = QUEUE.reader(run)
    if not queue.exists():
        raise FileNotFoundError(
            f"{run.url}: no review/queue; run `{suggest('build', '--run-dir', run.url)}` (or the review stage) first"
        )
    queued = {r["edit_id"] for r in queue.iter_rows(["edit_id"])}
    edits = {e["id"]: e for e in addresses.EDITS.reader(run).iter_rows() if e["id"] in queued}
    if truth_path is None:
        per: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for e in edits.values():
            v = json.loads(e.get("qc_json") or "{}").get("verification") or {}
            per[f"{e['task']}/{e['editor']}"]["verified" if v.get("passed", True) else "failed_verification"] += 1
        return {
            "mode": "verification",
            "items": len(edits),
            "per_task_editor": {k: dict(v) for k, v in sorted(per.items())},
        }
    truth = json.loads(Path(truth_path).read_text(encoding="utf-8"))
    analysis = {
        a["edit_id"]: load_json_column(a["fields_json"], "fields_json", f"analysis of edit {a['edit_id']}")
        for a in addresses.ANALYSIS.reader(run).iter_rows(["edit_id", "status", "fields_json"])
        if a["status"] == "ok" and a["edit_id"] in edits
    }
    images = ImageStore(run)
    per_task: dict[str, dict[str, Any]] = {}
    done: set[str] = set()

    def record(a: ItemAudit) -> None:
        t = per_task.setdefault(a.task, {"items": 0, "consistent": 0, "per_editor": {}, "examples": []})
        e = t["per_editor"].setdefault(a.editor, {"items": 0, "consistent": 0})
        for d in (t, e):
            d["items"] += 1
            d["consistent"] += int(a.consistent)
        if not a.consistent and len(t["examples"]) < 5:
            t["examples"].append({"edit_id": a.edit_id, "editor": a.editor, "problems": a.problems[:3]})
        done.add(a.edit_id)
        if progress is not None:
            progress(len(done), len(edits))

    for table in addresses.QUESTIONS.reader(run).iter_tables():
        qs: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for q in table.to_pylist():
            if q["edit_id"] in edits:
                qs[q["edit_id"]].append(q)
        for edit_id in sorted(qs):
            if edit_id in done:
                raise RuntimeError(
                    f"{run.url}: the questions of edit {edit_id} span two qa shards; the audit would check half of them"
                )
            record(audit_item(edits[edit_id], qs[edit_id], analysis.get(edit_id, {}), truth, images))
    for edit_id in sorted(set(edits) - done):  # queued with no question left (retired items keep none)
        record(audit_item(edits[edit_id], [], analysis.get(edit_id, {}), truth, images))
    n = sum(t["items"] for t in per_task.values())
    k = sum(t["consistent"] for t in per_task.values())
    return {
        "mode": "truth",
        "truth": str(truth_path),
        "items": n,
        "consistent": k,
        "fraction": round(k / n, 4) if n else None,
        "per_task": per_task,
    }
