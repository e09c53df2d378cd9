"""JSON values on the wire, checked against their kind: the helpers every subject's codec uses.

A kind is an Enum class (the value's Java name; an IntEnum takes Java's int code, and a
code the enum does not know stays an int), "int" (within a Java long), "bool", "id" (a string), "id?" (a
string or null) or "map:KIND" (an object of such values). A value of the wrong kind is a
`WireError` naming where it is (`state.memberState.currTerm must be an integer, got '3'`).
"""

from __future__ import annotations

import enum
import json
from typing import Any

from reference_impl.core.state import FrozenMap


JAVA_LONG = (-(1 << 63), (1 << 63) - 1)  # every integer on the wire is a Java int or long


class WireError(ValueError):
    """A wire object is not a valid case or answer; the message names the field."""


def plain(obj: Any) -> Any:
    """JSON data as a parser returns it (IntEnum codes as plain ints)."""
    return json.loads(json.dumps(obj))


def obj(d: Any, where: str) -> dict:
    if not isinstance(d, dict):
        raise WireError(f"{where} must be an object, got {show(d)}")
    return d


def get(d: dict, key: str, where: str, kind: Any = None) -> Any:
    if key not in d:
        raise WireError(f"{where} lacks {key!r}")
    return d[key] if kind is None else value(d[key], kind, f"{where}.{key}")


def show(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def value(v: Any, kind: Any, where: str) -> Any:
    """Check a wire value against its kind and convert it to the reference's value."""
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        if issubclass(kind, int):
            if isinstance(v, int) and not isinstance(v, bool):
                try:
                    return kind(v)
                except ValueError:
                    return v
        else:
            try:
                return kind(v)
            except (ValueError, TypeError):
                pass
        raise WireError(f"{where} must be one of {[e.value for e in kind]}, got {show(v)}")
    if kind == "int":
        if isinstance(v, int) and not isinstance(v, bool) and JAVA_LONG[0] <= v <= JAVA_LONG[1]:
            return v
        if isinstance(v, int) and not isinstance(v, bool):
            raise WireError(f"{where} must be an integer that a Java long holds, got {show(v)}")
        raise WireError(f"{where} must be an integer, got {show(v)}")
    if kind == "bool":
        if isinstance(v, bool):
            return v
        raise WireError(f"{where} must be true or false, got {show(v)}")
    if kind in ("id", "id?"):
        if isinstance(v, str) or (v is None and kind == "id?"):
            return v
        raise WireError(f"{where} must be a node id{' or null' if kind == 'id?' else ''}, got {show(v)}")
    if isinstance(kind, str) and kind.startswith("map:"):
        inner = kind[4:]
        return FrozenMap((k, value(x, inner, f"{where}.{k}")) for k, x in obj(v, where).items())
    raise AssertionError(f"unknown kind {kind!r}")
