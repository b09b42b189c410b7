"""``qa.balance_yes_no``: each "No" question with a declared twin is asked in both polarities.

The paper's question sets are mostly "No" (CA and RE Q1-Q4, AT's control questions), so a model
that always says "No" scores far above chance on them. With the setting on, each such question is
rendered twice: its original form and its positively phrased twin (gold "Yes", wording in the
task's template file under ``twins``). Which form is the targeted one, the question that stays in
its set (``main`` / ``control``) under the original qid and counts in the headline, rotates
deterministically: per edit, every other twin-bearing question of a set (starting from a seeded
bit of the edit), so each edit's targeted set holds as many twins as originals. The other form
goes to the ``twin`` question set, asked and audited but outside the headline, as BEAF's are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tasks.stages.qa import mc
from tasks.stages.qa.templates import QuestionTemplate

TWIN_SET = "twin"


def twin_first(run_seed: int, edit_id: str, set_name: str) -> bool:
    """Whether the edit's first twin-bearing question of ``set_name`` is asked as the twin."""
    return mc.question_seed(run_seed, edit_id, f"{set_name}/balance") % 2 == 1


def balanced_forms(
    templates: Sequence[QuestionTemplate],
    twins: Mapping[str, QuestionTemplate],
    set_name: str,
    run_seed: int,
    edit_id: str,
) -> list[tuple[QuestionTemplate, str, bool]]:
    """(template, question set, is-twin) for every question of one set of one edit, the twins
    added: the targeted form in ``set_name``, the other in :data:`TWIN_SET`."""
    out: list[tuple[QuestionTemplate, str, bool]] = []
    flip = twin_first(run_seed, edit_id, set_name)
    for t in templates:
        twin = twins.get(t.qid)
        if twin is None:
            out.append((t, set_name, False))
            continue
        if flip:
            out += [(twin, set_name, True), (t, TWIN_SET, False)]
        else:
            out += [(t, set_name, False), (twin, TWIN_SET, True)]
        flip = not flip
    return out
