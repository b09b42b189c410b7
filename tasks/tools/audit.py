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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from prompts.locations import region_words
from storage.boxes import intersection
from storage.colours import colour_of, colours_apart
from storage.coverage import LOST_ABOVE, covered
from storage.json_columns import candidate_of, context_objects
from storage.names import basic_name
from storage.task_spec import task_hook
from tasks.engine.suggest import suggest

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
        ``storage.coverage.LOST_ABOVE`` of them, the rule the edit-stage verification shares)."""
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
        out = [o for o in self.objects.values() if o["name"] in cls and not o["erased"] and self.shows(o)] + [a for a in self.added if a["name"] in cls]
        if box is not None:
            out = [o for o in out if intersection(o["box"], box) > 0.1 * o["box"][2] * o["box"][3]]
        return out


def _png(images: Any, rel: str | None) -> np.ndarray | None:
    if not rel:
        return None
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(images.get_bytes(rel))).convert("L")) > 127


def audit_item(edit: dict[str, Any], questions: list[dict[str, Any]], analysis: dict[str, Any], truth: dict[str, Any], images: Any) -> ItemAudit:
    """Check every gold answer of one queued edit against the truth."""
    item = ItemAudit(edit["id"], edit["task"], edit["editor"], questions=len(questions))
    p = item.problems
    own_audit = task_hook(edit["task"], "audit_item")
    if own_audit is not None:
        return own_audit(edit, questions, analysis, truth, images)
    image = truth["images"].get(str(edit["image_id"]))
    if image is None:
        return ItemAudit(edit["id"], edit["task"], edit["editor"], [f"no truth for image {edit['image_id']}"], len(questions))
    owner = f"edit {edit['id']}"
    annotations = context_objects(candidate_of(edit, owner), owner)
    world = World(image, annotations)
    before = World(image, annotations)
    qc = json.loads(edit.get("qc_json") or "{}")
    meta = qc.get("editor_meta") or {}
    fields = json.loads(edit.get("instruction_fields_json") or "{}")
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


def audit_count_item(edit: dict[str, Any], questions: list[dict[str, Any]], analysis: dict[str, Any], truth: dict[str, Any], images: Any) -> ItemAudit:
    """An ``audit_item`` hook for unedited counting items: the gold counts against the drawn
    objects of the sample's FSC147 truth (counting options ascend)."""
    item = ItemAudit(edit["id"], edit["task"], edit["editor"], questions=len(questions))
    p = item.problems
    cand = candidate_of(edit, f"edit {edit['id']}")
    fsc = truth.get("fsc147", {}).get(Path(edit["image_path"]).name)
    if fsc is None:
        return ItemAudit(edit["id"], edit["task"], edit["editor"], [f"no truth for {edit['image_path']}"], len(questions))
    n = int(fsc["count"])
    for q in questions:
        _check_count(q, n, p)
    if int(cand.get("count") or -1) != n:
        p.append(f"candidate count {cand.get('count')} != drawn {n}")
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


def check_erasure(s: EditScene, p: list[str]) -> None:
    """An ``audit_checks`` hook: the erased object's class is gone from its place, what remains is there."""
    _check_re(s.world, s.before, s.target, s.analysis, s.questions, p)


def check_attribute(s: EditScene, p: list[str]) -> None:
    """An ``audit_checks`` hook: the object shows the new colour, apart from the original."""
    _check_ca(s.world, s.target, s.analysis, p, s.before)


def check_change(s: EditScene, p: list[str]) -> None:
    """An ``audit_checks`` hook: the performed operation is the planned one, the control untouched."""
    _check_at(s.world, s.target, s.fields, s.meta, s.kind, s.box, p)


def _check_count(q: dict[str, Any], n: int, p: list[str]) -> None:
    text, gold = q["text"], q["gold"]
    if q["qtype"] == "YN":
        m = re.search(r"exactly (\d+)", text)
        r = re.search(r"from (\d+) to (\d+)", text)
        truth = (int(m.group(1)) == n) if m else (int(r.group(1)) <= n <= int(r.group(2))) if r else None
        if truth is not None and ("Yes" if truth else "No") != gold:
            p.append(f"DC {q['qid']}: {text!r} gold {gold} but {n} drawn")
    elif q["qtype"] == "SA" and q["qid"] == "Q5" and gold != str(n):
        p.append(f"DC Q5 gold {gold} != {n}")
    elif q["qtype"] == "MC":
        opts = q["options"] or []
        right = opts["ABCDEFGH".index(gold)]
        nums = [int(x) for x in re.findall(r"\d+", right)]
        ok = (nums == [n]) if len(nums) == 1 else (len(nums) == 2 and nums[0] <= n <= nums[1])
        if not ok:
            p.append(f"DC {q['qid']}: gold option {right!r} does not hold {n}")
        firsts = [int(re.findall(r"\d+", o)[0]) for o in opts]
        if q.get("rotation", 0) == 0 and firsts != sorted(firsts):
            p.append(f"DC {q['qid']}: options {opts} are not ascending")


def _check_re(world: World, before: World, target: dict[str, Any], a: dict[str, Any], questions: list[dict[str, Any]], p: list[str]) -> None:
    name = a.get("B_name") or target["name"]
    left = world.visible(name, target["box"])
    if left:
        p.append(f"RE: a {name} is still visible at the erased place ({[o['box'] for o in left]})")
    rem = str(a.get("remaining_at_A") or "")
    for n in re.findall(r"the ([a-z ]+?)(?= and | with|,|$)", rem):
        if "background" not in n and not world.visible(n.strip()):
            p.append(f"RE: remaining_at_A names the {n.strip()}, which is gone")
    for k in ("absurd_object_1", "absurd_object_2"):
        n = re.sub(r"^(a|an) ", "", str(a.get(k) or ""))
        if n and world.visible(n):
            p.append(f"RE: the absurd object {n!r} is in the picture")


def _check_ca(world: World, target: dict[str, Any], a: dict[str, Any], p: list[str], before: World) -> None:
    new, orig = colour_of(a.get("C_new_attribute") or ""), colour_of(a.get("B_original_attribute") or "")
    shown = target.get("colour")
    if new is None or new != shown:
        p.append(f"CA: gold new colour {a.get('C_new_attribute')!r} but the {target['name']} shows {shown!r}")
    if orig is None or before.objects[target["id"]]["colour"] != orig:
        p.append(f"CA: original attribute {a.get('B_original_attribute')!r} is not the drawn colour {before.objects[target['id']]['colour']!r}")
    elif shown and not colours_apart(shown, orig):
        p.append(f"CA: new colour {shown!r} cannot be told from the original {orig!r}")
    for k in ("plausible_wrong_attribute_1", "plausible_wrong_attribute_2"):
        c = colour_of(a.get(k) or "")
        if c and shown and not colours_apart(c, shown):
            p.append(f"CA: wrong option {a.get(k)!r} reads as the shown {shown!r}")
    half = "upper" if target["box"][1] + target["box"][3] / 2 < world.h / 2 else "lower"
    region = region_words(target["box"], world.w, world.h)
    for o in world.objects.values():
        if o["id"] == target["id"] or o["name"] != target["name"] or o["colour"] != orig or o["erased"]:
            continue
        oh = "upper" if o["box"][1] + o["box"][3] / 2 < world.h / 2 else "lower"
        if oh == half or region_words(o["box"], world.w, world.h) == region:
            p.append(f"CA: another {orig} {o['name']} is in the {oh} half / {region} (Q3/Q7/Q11 say there is none)")


def _check_at(world: World, target: dict[str, Any], f: dict[str, Any], meta: dict[str, Any], kind: str, box: list[float], p: list[str]) -> None:
    c = str(f.get("C") or "").lower()
    if kind in ("move", "add"):
        dest = meta.get("destination_box")
        side = "left" if dest and dest[0] < box[0] else "right"
        if side not in c:
            p.append(f"AT: C says {c!r} but the copy went {side}")
    if kind == "replace":
        donor = world.find(meta.get("donor_box"))
        wanted = basic_name(str(f.get("replacement") or ""))
        if donor is None or not wanted or wanted not in c or donor["name"] not in world.classes(wanted):
            p.append(f"AT: C says {c!r} but the clone is a {donor and donor['name']}")
    if kind == "delete" and not world.visible(target["name"]):
        p.append("AT: delete left no other instance of its class (the set needs two)")
    cp = str(f.get("C_prime") or "").lower()
    verbs = {"delete": "removed", "add": "added", "replace": "replaced", "move": "moved"}
    if verbs.get(kind, "?") in cp:
        p.append(f"AT: C_prime {cp!r} describes what happened")
    for o in world.objects.values():
        if o["id"] != target["id"] and o["erased"]:
            p.append(f"AT: the edit also erased the {o['name']} ({o['touched']:.0%} of it); the questions name one change")
    bp = f.get("B_prime") or ""
    for o in world.objects.values():
        if o["name"] in world.classes(bp) and o["touched"] > 0:
            p.append(f"AT: the control object {bp} was touched by the edit ({o['touched']:.0%})")
    for a in world.added:
        for o in world.objects.values():
            if o["name"] in world.classes(bp) and a.get("box") and intersection(a["box"], o["box"]) > 0:
                p.append(f"AT: the copy covers the control object {bp}")


def _check_beaf(q: dict[str, Any], world: World, p: list[str]) -> None:
    m = re.match(r"Is there (?:an? )?(.+?) in this image\?", q["text"])
    if not m:
        p.append(f"BEAF {q['qid']}: unparsed question {q['text']!r}")
        return
    there = bool(world.visible(m.group(1)))
    if ("Yes" if there else "No") != q["gold"]:
        p.append(f"BEAF {q['qid']} ({q['image_role']}): {q['text']!r} gold {q['gold']} but the {m.group(1)} is {'there' if there else 'absent'}")


def find_truth(config: Any | None) -> Path | None:
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


def run_audit(run: Any, truth_path: Path | None, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Audit every queued item of ``run``; per task and editor: consistent / inconsistent with examples.

    One questions shard at a time (the qa stage writes all of an item's questions in one shard),
    so memory holds the queued edits' rows and one shard's questions, not the benchmark's.
    ``progress(done, total)`` is called as items are audited."""
    from storage import addresses
    from storage.image_store import ImageStore
    from tasks.review.stage import QUEUE

    queue = QUEUE.reader(run)
    if not queue.exists():
        raise FileNotFoundError(f"{run.url}: no review/queue; run `{suggest('build', '--run-dir', run.url)}` (or the review stage) first")
    queued = {r["edit_id"] for r in queue.iter_rows(["edit_id"])}
    edits = {e["id"]: e for e in addresses.EDITS.reader(run).iter_rows() if e["id"] in queued}
    if truth_path is None:
        per: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for e in edits.values():
            v = (json.loads(e.get("qc_json") or "{}").get("verification") or {})
            per[f"{e['task']}/{e['editor']}"]["verified" if v.get("passed", True) else "failed_verification"] += 1
        return {"mode": "verification", "items": len(edits), "per_task_editor": {k: dict(v) for k, v in sorted(per.items())}}
    truth = json.loads(Path(truth_path).read_text(encoding="utf-8"))
    analysis = {a["edit_id"]: json.loads(a["fields_json"] or "{}") for a in addresses.ANALYSIS.reader(run).iter_rows(["edit_id", "status", "fields_json"])
                if a["status"] == "ok" and a["edit_id"] in edits}
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
                raise RuntimeError(f"{run.url}: the questions of edit {edit_id} span two qa shards; the audit would check half of them")
            record(audit_item(edits[edit_id], qs[edit_id], analysis.get(edit_id, {}), truth, images))
    for edit_id in sorted(set(edits) - done):  # queued with no question left (retired items keep none)
        record(audit_item(edits[edit_id], [], analysis.get(edit_id, {}), truth, images))
    n = sum(t["items"] for t in per_task.values())
    k = sum(t["consistent"] for t in per_task.values())
    return {"mode": "truth", "truth": str(truth_path), "items": n, "consistent": k, "fraction": round(k / n, 4) if n else None, "per_task": per_task}
