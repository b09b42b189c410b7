"""Named, versioned prompts: a Jinja2 template file plus the pydantic schema its answer must fit.

The bottom of ``prompts/``: it imports no prompt module. The prompt modules define their specs as
plain values; ``prompts.catalogue`` lists them. The name and version go into every row a prompt
produces.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

import jinja2
import pydantic

TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"


@dataclass(frozen=True)
class PromptSpec:
    """One prompt: ``template`` is a file name under ``prompts/templates/`` (or under ``template_dir``,
    the folder a plugin ships its templates in); ``n_images`` images are attached."""

    name: str
    version: str
    template: str
    output: type[pydantic.BaseModel]
    n_images: int
    template_dir: str | None = None

    @property
    def folder(self) -> Path:
        """The folder the template is read from."""
        return Path(self.template_dir) if self.template_dir else TEMPLATE_DIR

    @property
    def path(self) -> Path:
        """The template file."""
        return self.folder / self.template


@lru_cache(maxsize=1)
def prompt_fingerprints(specs: Iterable[PromptSpec]) -> dict[str, list[str]]:
    """Name -> [version, template hash] of each prompt: hashed into a stage key, so editing a
    template re-runs the stages that use it even when nobody bumped its version."""
    from storage.hashing import sha256_hex

    return {s.name: [s.version, sha256_hex(s.path.read_bytes())[:12]] for s in specs}


def _env(folder: Path = TEMPLATE_DIR) -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(folder)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render(spec: PromptSpec, context: dict[str, Any]) -> str:
    """Render the prompt text; a missing context key raises naming the prompt and the key."""
    try:
        return _env(spec.folder).get_template(spec.template).render(**context).strip() + "\n"
    except jinja2.UndefinedError as exc:
        raise KeyError(f"prompt {spec.name!r} v{spec.version}: context misses a value: {exc.message}") from None
