"""Typed loading of YAML/JSON mappings into dataclasses.

Every file format of the workspace (skillsmith.yaml, benchmark.yaml, candidate.yaml, …) is a
dataclass; this module turns a parsed mapping into one, or raises a one-line :class:`FormatError`
that names the file, the dotted field and what was expected. Keeping it generic means each format
declares its shape once, as type hints, instead of hand-writing checks.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, cast, get_args, get_origin, get_type_hints

from engine.core.errors import FormatError

T = TypeVar("T")

_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}


def _describe(tp: Any) -> str:
    origin = get_origin(tp)
    if tp in _TYPE_NAMES:
        return _TYPE_NAMES[tp]
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(tp))
    if origin in (list, tuple):
        return "a list"
    if origin is dict:
        return "a mapping"
    if dataclasses.is_dataclass(tp):
        return "a mapping"
    if origin in (Union, types.UnionType):
        return " or ".join(_describe(a) for a in get_args(tp) if a is not type(None))
    return getattr(tp, "__name__", str(tp))


def _convert(value: Any, tp: Any, path: Path, field: str) -> Any:
    origin = get_origin(tp)
    if tp is Any:
        return value
    if origin in (Union, types.UnionType):
        args = get_args(tp)
        if value is None and type(None) in args:
            return None
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _convert(value, arg, path, field)
            except FormatError:
                continue
        raise FormatError(path, field, f"expected {_describe(tp)}, got {value!r}")
    if origin is Literal:
        if value in get_args(tp):
            return value
        raise FormatError(path, field, f"expected {_describe(tp)}, got {value!r}")
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise FormatError(path, field, f"expected true or false, got {value!r}")
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise FormatError(path, field, f"expected an integer, got {value!r}")
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise FormatError(path, field, f"expected a number, got {value!r}")
    if tp is str:
        if isinstance(value, str):
            return value
        raise FormatError(path, field, f"expected a string, got {value!r}")
    if origin in (list, tuple):
        if not isinstance(value, list):
            raise FormatError(path, field, f"expected a list, got {value!r}")
        (item_tp, *_) = get_args(tp) or (Any,)
        items = [_convert(v, item_tp, path, f"{field}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin is dict:
        if not isinstance(value, dict):
            raise FormatError(path, field, f"expected a mapping, got {value!r}")
        key_tp, val_tp = get_args(tp) or (Any, Any)
        return {
            _convert(k, key_tp, path, f"{field}.{k}"): _convert(v, val_tp, path, f"{field}.{k}")
            for k, v in value.items()
        }
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return from_mapping(tp, value, path, field)
    raise TypeError(f"schema: unsupported type {tp!r} for {field}")


@functools.cache
def _shape(cls: Any) -> tuple[dict[str, Any], dict[str, dataclasses.Field[Any]]]:
    """A class's resolved type hints and fields: resolving hints evaluates every annotation
    string, which cost more than the conversion itself when done per nested object."""
    return get_type_hints(cls), {f.name: f for f in dataclasses.fields(cls)}


def from_mapping(cls: type[T], data: Any, path: Path | str, prefix: str = "") -> T:
    """Build dataclass ``cls`` from ``data``; unknown keys and wrong types are format errors."""
    path = Path(path)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise FormatError(path, prefix or None, f"expected a mapping, got {type(data).__name__}")
    hints, fields = _shape(cast(Any, cls))
    unknown = [k for k in data if k not in fields]
    if unknown:
        known = ", ".join(sorted(fields))
        name = f"{prefix}.{unknown[0]}" if prefix else str(unknown[0])
        raise FormatError(path, name, f"unknown key (known: {known})")
    kwargs: dict[str, Any] = {}
    for name, f in fields.items():
        dotted = f"{prefix}.{name}" if prefix else name
        if name in data:
            kwargs[name] = _convert(data[name], hints[name], path, dotted)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise FormatError(path, dotted, f"is required ({_describe(hints[name])})")
    return cls(**kwargs)


def to_mapping(obj: Any) -> Any:
    """Plain YAML/JSON-ready data from a dataclass tree (tuples become lists)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_mapping(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_mapping(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_mapping(v) for k, v in obj.items()}
    return obj


def load_yaml(path: Path | str) -> Any:
    """Parse a YAML file; a syntax error becomes a one-line FormatError with the line number."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FormatError(path, None, "file not found") from None
    except UnicodeDecodeError:
        raise FormatError(path, None, "file is not UTF-8 text") from None
    return parse_yaml(text, path)


def parse_yaml(text: str, path: Path | str, first_line: int = 1) -> Any:
    """Parse YAML text read from ``path`` (starting at line ``first_line`` of it, for a piece of
    a file) with the C loader; a syntax error is a one-line FormatError naming the file line."""
    # Imported here: PyYAML costs a tenth of a second to import on a busy machine, and the
    # workbench paints its first frame (and quick commands answer) before any YAML is read.
    import yaml

    try:
        return yaml.load(text, Loader=_loader())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + first_line if mark is not None else None
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise FormatError(Path(path), None, f"invalid YAML: {problem}", line=line) from None


@functools.cache
def _loader() -> Any:
    """libyaml's loader: it parses about ten times faster (the TUI reads hundreds of candidate
    files); the pure-Python one stands in where PyYAML was built without it."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_dataclass(cls: type[T], path: Path | str) -> T:
    return from_mapping(cls, load_yaml(path), path)


__all__ = ["from_mapping", "load_dataclass", "load_yaml", "parse_yaml", "to_mapping"]
