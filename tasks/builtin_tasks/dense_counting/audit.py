"""DC's audit: the gold counts of an unedited item against the sample's FSC147 truth."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tasks.plugin_api import ItemAudit, candidate_of


def audit_item(
    edit: dict[str, Any], questions: list[dict[str, Any]], analysis: dict[str, Any], truth: dict[str, Any], images: Any
) -> ItemAudit:
    """An ``audit_item`` hook for unedited counting items: the gold counts against the drawn
    objects of the sample's FSC147 truth (counting options ascend)."""
    item = ItemAudit(edit["id"], edit["task"], edit["editor"], questions=len(questions))
    p = item.problems
    cand = candidate_of(edit, f"edit {edit['id']}")
    fsc = truth.get("fsc147", {}).get(Path(edit["image_path"]).name)
    if fsc is None:
        return ItemAudit(
            edit["id"], edit["task"], edit["editor"], [f"no truth for {edit['image_path']}"], len(questions)
        )
    n = int(fsc["count"])
    for q in questions:
        _check_count(q, n, p)
    if int(cand.get("count") or -1) != n:
        p.append(f"candidate count {cand.get('count')} != drawn {n}")
    return item


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
