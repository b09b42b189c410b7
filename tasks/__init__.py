"""Stages: plain-Python stage logic (mine, instruct, edit, qa, review, export, evaluate)."""
