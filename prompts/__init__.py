"""Everything about talking to MLLMs: versioned Jinja2 templates, output schemas, parsing, clients."""
