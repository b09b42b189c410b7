"""Orchestration: Prefect flows, the config schema and the `reactbench` CLI."""
