"""Named, versioned prompts: a Jinja2 template file plus the pydantic schema its answer must fit.

The bottom of ``prompts/``: it imports no prompt module. The prompt modules define their specs as
plain values; ``prompts.catalogue`` lists them. The name and version go into every row a prompt
produces.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

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


def prompt_fingerprints(specs: Iterable[PromptSpec]) -> dict[str, list[str]]:
    """Name -> [version, template hash] of each prompt: hashed into a stage key, so editing a
    template re-runs the stages that use it even when nobody bumped its version. The hash is of
    the same bytes :func:`render` compiled (:func:`_loaded`), so a key never names one text while
    the stage renders another."""
    return {s.name: [s.version, _loaded(s).digest] for s in specs}


@dataclass(frozen=True)
class _Loaded:
    """One template file as last read: its stat stamp, the hash of its bytes and the compiled template."""

    stamp: tuple[int, int, int]  # (mtime_ns, size, inode): a file edited or replaced on disk differs
    digest: str
    template: jinja2.Template


_LOADED: dict[Path, _Loaded] = {}  # per template file, for this process; a race compiles twice, harmless


@cache
def environment(folder: Path) -> jinja2.Environment:
    """The Jinja environment of one template folder, built once per process (building one and
    compiling a template cost ~2.8 ms, more than the whole render of an eval prompt)."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(folder)),  # for {% include %} between templates of a folder
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _loaded(spec: PromptSpec) -> _Loaded:
    """The template of ``spec``, compiled once per process and again only when its file changes on
    disk (one ``stat`` per call: a long-lived worker picks up an edited template, as the stage
    keys do)."""
    path = spec.path
    st = path.stat()
    stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
    hit = _LOADED.get(path)
    if hit is None or hit.stamp != stamp:
        from storage.hashing import sha256_hex

        data = path.read_bytes()
        env = environment(spec.folder)
        code = env.compile(data.decode("utf-8"), spec.template, str(path))
        hit = _Loaded(stamp, sha256_hex(data)[:12], env.template_class.from_code(env, code, env.make_globals(None)))
        _LOADED[path] = hit
    return hit


def render(spec: PromptSpec, context: dict[str, object]) -> str:
    """Render the prompt text; a missing context key raises naming the prompt and the key."""
    try:
        return _loaded(spec).template.render(**context).strip() + "\n"
    except jinja2.UndefinedError as exc:
        raise KeyError(f"prompt {spec.name!r} v{spec.version}: context misses a value: {exc.message}") from None
