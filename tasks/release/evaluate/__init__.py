"""Evaluation of a model on a built benchmark: answering, judging, metrics, sub-causes, spans."""
