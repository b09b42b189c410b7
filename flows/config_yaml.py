"""Reading a config file's YAML with bounds, before anything trusts it.

A config is small and hand-written, yet YAML lets a few hundred bytes expand into billions of
nodes (the "billion laughs": nested aliases), nest past Python's recursion limit, or name one
key twice (the last silently wins). The free-form sections (``orchestration.ray_init``,
``editors[].params``) accept any mapping, so pydantic cannot bound them. This module refuses
all of that up front, each with one line naming the file and the field:

* files over :data:`MAX_BYTES` are refused before they are read;
* an event pass (PyYAML's parser is a state machine, not recursive) bounds nesting depth and the
  number of aliases before anything is composed;
* the composed node graph is walked once with memoised sizes, so an expansion past
  :data:`MAX_NODES` or a recursive alias is refused without being expanded;
* a mapping naming one key twice is refused (PyYAML keeps the last one silently).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

MAX_BYTES = 1 << 20  # a hand-written config is a few KB; 1 MiB leaves room for long prompt lists
MAX_DEPTH = 32  # mappings / sequences inside each other
MAX_ALIASES = 256  # `*name` references in one file
MAX_NODES = 100_000  # scalars, mappings and sequences once every alias is expanded


class YamlRefused(ValueError):
    """Text the bounded reader refuses; the message starts with the source and the field."""


def read_config_text(path: Path) -> str:
    """The UTF-8 text of a config file: refused when missing, too large or not UTF-8 (file named)."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise YamlRefused(f"{path}: config file not found") from None
    if size > MAX_BYTES:
        raise YamlRefused(f"{path}: {size} bytes, over the {MAX_BYTES}-byte limit of a config file")
    return decode_config(path.read_bytes(), str(path))


def decode_config(data: bytes, source: str) -> str:
    """``data`` as UTF-8, or an error naming ``source``, the line and the offending byte."""
    if len(data) > MAX_BYTES:
        raise YamlRefused(f"{source}: {len(data)} bytes, over the {MAX_BYTES}-byte limit of a config file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise YamlRefused(
            f"{source}: line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); save the file as UTF-8"
        ) from None


def load_bounded(text: str, source: str) -> Any:
    """``yaml.safe_load(text)`` within the limits above; :class:`YamlRefused` names source and field."""
    if len(text.encode("utf-8")) > MAX_BYTES:
        raise YamlRefused(f"{source}: over the {MAX_BYTES}-byte limit of a config file")
    try:
        _check_events(text, source)
        loader = yaml.SafeLoader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            _check_graph(node, source)
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        raise YamlRefused(f"{source}: not valid YAML: {yaml_problem(exc)}") from None


def yaml_problem(exc: yaml.YAMLError) -> str:
    """PyYAML's several-line message as one line: the problem and where."""
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or str(exc).splitlines()[0]
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else str(problem)


def _check_events(text: str, source: str) -> None:
    """Depth and alias count from the event stream, with the field path where a limit is crossed."""
    path: list[Any] = []  # keys and indices down to the current node
    frames: list[list[Any]] = []  # per open collection: [kind, expecting_key, next_index]
    aliases = 0

    def enter_value() -> None:
        if not frames:
            return
        frame = frames[-1]
        if frame[0] == "seq":
            path.append(frame[2])
            frame[2] += 1

    def leave_value() -> None:
        if frames and (frames[-1][0] == "seq" or not frames[-1][1]):
            if path:
                path.pop()
            if frames[-1][0] == "map":
                frames[-1][1] = True

    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.AliasEvent):
            aliases += 1
            if aliases > MAX_ALIASES:
                raise YamlRefused(
                    f"{source}: {_dotted(path)}: more than {MAX_ALIASES} aliases (*name) in one config file"
                )
        if isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            if frames and frames[-1][0] == "map" and frames[-1][1]:  # a key
                frames[-1][1] = False
                path.append(event.value if isinstance(event, yaml.ScalarEvent) else "?")
                if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                    raise YamlRefused(
                        f"{source}: {_dotted(path[:-1])}: a mapping key must be a plain value (line {event.start_mark.line + 1})"
                    )
                continue
            enter_value()
            if isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent)):
                leave_value()
            else:
                if len(frames) >= MAX_DEPTH:
                    raise YamlRefused(f"{source}: {_dotted(path)}: nested deeper than {MAX_DEPTH} levels")
                frames.append(["map", True, 0] if isinstance(event, yaml.MappingStartEvent) else ["seq", False, 0])
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            frames.pop()
            leave_value()


def _check_graph(root: yaml.Node, source: str) -> None:
    """Expanded size (memoised per node), recursive aliases and duplicate keys, naming the field."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: yaml.Node, path: list[Any]) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            raise YamlRefused(f"{source}: {_dotted(path)}: a recursive alias (a value that contains itself)")
        open_nodes.add(key)
        total = 1
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for k, v in node.value:
                name = k.value if isinstance(k, yaml.ScalarNode) else "?"
                if name in seen and name != "<<":
                    raise YamlRefused(
                        f"{source}: {_dotted([*path, name])}: duplicate key (lines {seen[name]} and {k.start_mark.line + 1}); keep one"
                    )
                seen[name] = k.start_mark.line + 1
                total += size(k, [*path, name]) + size(v, [*path, name])
        elif isinstance(node, yaml.SequenceNode):
            for i, v in enumerate(node.value):
                total += size(v, [*path, i])
        open_nodes.discard(key)
        if total > MAX_NODES:
            raise YamlRefused(
                f"{source}: {_dotted(path)}: expands to more than {MAX_NODES} values (aliases nested in aliases?)"
            )
        sizes[key] = total
        return total

    size(root, [])


def _dotted(path: list[Any]) -> str:
    """``orchestration.ray_init.a`` / ``editors[0].params``; ``<root>`` for the top level."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "<root>"
