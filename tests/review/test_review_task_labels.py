"""The review UI names tasks by their spec's label, a registered fifth task included."""

import tasks.engine.registry as task_registry
from storage.task_spec import TaskSpec, all_tasks, register_task
from tasks.review.web import make_env, task_labels


def test_labels_come_from_the_specs(monkeypatch):
    monkeypatch.setattr(task_registry.REGISTRY, "registered", {})
    task_registry._all.cache_clear()
    try:
        assert task_labels() == {t: s.label for t, s in all_tasks().items()}
        register_task(TaskSpec(id="spatial_relation", short="SR", label="Spatial relation", weight=0.2, order=50))
        env = make_env()
        assert env.globals["TASK_LABELS"]["spatial_relation"] == "Spatial relation"
        html = env.from_string("{{ TASK_LABELS.get(t, t) }}").render(t="spatial_relation")
        assert html == "Spatial relation"
    finally:
        monkeypatch.undo()
        task_registry._all.cache_clear()
