"""MLLM clients: protocol, OpenAI-compatible, transformers, rules, and the response cache."""
