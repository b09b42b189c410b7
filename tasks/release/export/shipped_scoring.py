"""The reply parsers and the offline short-answer judge as files a release ships.

A release scored outside reactbench (lmms-eval today; any other evaluator's export that wants
our verdicts) must read replies exactly as ``reactbench eval`` does. Rather than a second
parser, it ships verbatim copies of ``prompts/eval_parsing.py`` and ``prompts/offline_judge.py``
(both standard-library only); the judge's one import of ours is pointed at the shipped parser.
Exporters take the files from here, so there is one source of truth and nothing to keep in sync.
"""

from __future__ import annotations

from pathlib import Path

import prompts.eval_parsing
import prompts.offline_judge

PARSING_FILE = "reactbench_parsing.py"
JUDGE_FILE = "reactbench_judge.py"
_JUDGE_IMPORT = "from prompts.eval_parsing import"


def scoring_files() -> dict[str, str]:
    """``{file name: source}`` of the shipped parser and judge (import them side by side)."""
    parsing = Path(prompts.eval_parsing.__file__).read_text(encoding="utf-8")
    judge = Path(prompts.offline_judge.__file__).read_text(encoding="utf-8")
    if _JUDGE_IMPORT not in judge:
        raise RuntimeError(
            "prompts/offline_judge.py no longer imports prompts.eval_parsing as the shipped copy expects"
        )
    module = PARSING_FILE.removesuffix(".py")
    return {PARSING_FILE: parsing, JUDGE_FILE: judge.replace(_JUDGE_IMPORT, f"from {module} import")}
