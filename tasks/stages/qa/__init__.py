"""QA synthesis (the ``qa`` stage): per-edit analysis, then deterministic question rendering.

Light on import: the stage class and rendering functions pull in no model code.
"""

from tasks.stages.qa.render import Problem, Rendered, RenderSettings, render_questions
from tasks.stages.qa.stage import QAStage, qa_edits
from tasks.stages.qa.synthesis import questions_for_edit

__all__ = ["Problem", "QAStage", "Rendered", "RenderSettings", "qa_edits", "questions_for_edit", "render_questions"]
