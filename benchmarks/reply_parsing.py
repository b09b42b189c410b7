"""How often the reply parser agrees with a careful human grader, over the shapes table.

The table is ``tests/evaluate/reply_shapes.py``: every reply shape with the verdict a grader
gives it (``None`` for a hedge, a bound, a self-contradiction: no answer). A shape *agrees* when
``prompts.eval_parsing`` reads the same verdict; it is *credited wrong* when the parser reads an
answer the grader did not see there (a verdict where the grader has none, or another one), the
one kind of miss that changes a score in the model's favour or against it unseen. An unparseable
reply the grader could read is a disagreement that costs the model the point, and is counted.

``--baseline FILE`` also scores another copy of the parser (for example the previous release's
``reactbench_parsing.py``, or ``git show main:prompts/eval_parsing.py > /tmp/old.py``) on the same
table, side by side. Ends with one JSON line: ``shapes``, ``agree``, ``disagree``,
``credited_wrong``, ``agree_pct``, per table, and the baseline's figures when given.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "evaluate"))

import reply_shapes  # noqa: E402  (the table lives with the tests that pin it)


def _load(path: Path) -> ModuleType:
    name = f"parser_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules[name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


def tables(parser: ModuleType) -> dict[str, tuple[list[tuple[str, bool, Any]], Any]]:
    """Each table of shapes with the parser call that reads it."""
    return {
        "yes_no": (reply_shapes.YES_NO, parser.extract_yes_no),
        "choice": (reply_shapes.CHOICE, lambda t, c: parser.extract_choice(t, reply_shapes.MC_OPTIONS, c)),
        "choice_text": (
            reply_shapes.CHOICE_OBJECTS,
            lambda t, c: parser.extract_choice(t, reply_shapes.MC_OBJECTS, c),
        ),
        "count": (reply_shapes.COUNT, parser.extract_number),
        "range": (reply_shapes.RANGES, parser.extract_range),
        "segment": (reply_shapes.SEGMENTS, parser.answer_segment),
    }


def score(parser: ModuleType) -> tuple[dict[str, Any], list[str]]:
    """Agreement figures over every table, and one line per disagreement."""
    out: dict[str, Any] = {"shapes": 0, "agree": 0, "disagree": 0, "credited_wrong": 0, "tables": {}}
    misses = []
    for name, (rows, read) in tables(parser).items():
        t = {"shapes": len(rows), "agree": 0, "credited_wrong": 0}
        for text, cot, want in rows:
            try:
                got = read(text, cot)
            except Exception as exc:  # a parser that raises reads nothing
                got = f"<raised {type(exc).__name__}>"
            if got == want:
                t["agree"] += 1
                continue
            wrong = got not in (None, "") and name != "segment"
            t["credited_wrong"] += wrong
            misses.append(
                f"{name:8s} {'CREDITED WRONG' if wrong else 'unread':14s} {text!r} (cot={cot}): grader {want!r}, parser {got!r}"
            )
        out["tables"][name] = t
        out["shapes"] += t["shapes"]
        out["agree"] += t["agree"]
        out["credited_wrong"] += t["credited_wrong"]
    out["disagree"] = out["shapes"] - out["agree"]
    out["agree_pct"] = round(100.0 * out["agree"] / max(out["shapes"], 1), 2)
    return out, misses


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", type=Path, help="another copy of the parser to score on the same table")
    ap.add_argument("--show", action="store_true", help="print every disagreement")
    args = ap.parse_args(argv)
    current, misses = score(_load(ROOT / "prompts" / "eval_parsing.py"))
    figures: dict[str, Any] = {k: current[k] for k in ("shapes", "agree", "disagree", "credited_wrong", "agree_pct")}
    figures["tables"] = current["tables"]
    print(
        f"prompts/eval_parsing.py: {current['agree']}/{current['shapes']} shapes read as the grader does ({current['agree_pct']}%), {current['credited_wrong']} credited wrong"
    )
    if args.baseline:
        base, base_misses = score(_load(args.baseline))
        figures["baseline"] = {k: base[k] for k in ("shapes", "agree", "disagree", "credited_wrong", "agree_pct")}
        print(
            f"{args.baseline}: {base['agree']}/{base['shapes']} ({base['agree_pct']}%), {base['credited_wrong']} credited wrong"
        )
        if args.show:
            print("baseline misses:", *base_misses, sep="\n  ")
    for line in misses if args.show or len(misses) <= 20 else misses[:20]:
        print("  " + line)
    print(json.dumps(figures, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
