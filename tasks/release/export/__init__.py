"""Release forms of a built benchmark: a Hugging Face ``datasets`` folder with a dataset card,
and optionally a VLMEvalKit TSV and lmms-eval task files."""
