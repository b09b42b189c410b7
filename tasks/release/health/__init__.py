"""The benchmark's health: whether a model can score without looking (trivial and blind prior
baselines), whether answers are balanced, whether items repeat, and how the build's mix
compares with the paper's Table 2 (issue 40). Read by ``reactbench report health``, the
dataset card and ``reactbench export --strict``."""
