"""Frozen state records, a hashable mapping, and their JSON form, shared by every protocol.

Every value a world holds is immutable, hashable and comparable, so the explorer
can deduplicate states and a replay can compare them. `record` makes a slotted,
keyword-only attrs class, hashed and compared by its fields, plus an
`evolve(**changes)` method generated per class: transitions call it on the hot
path, and `attrs.evolve` costs several times as much because it introspects the
fields on every call.

Immutability is a rule of the code, checked where it is tested: with
`RMQSPEC_FROZEN_RECORDS=1` (the test suite sets it, property_tests/__init__.py)
records are `attrs.frozen`, so any assignment to a field raises. Elsewhere they
are plain slotted classes without a `__setattr__`, so `evolve` copies a record
with direct slot stores (`new.x = self.x`), about three times as fast as going
past a frozen class's `__setattr__` with the slot descriptors. Nothing else
differs: the same fields, equality, hash and JSON form.

`encode` turns any such value into JSON-able data (traces, reports): records become
objects tagged with their class name (`{"type": "VoteRequest", ...}`), enums their
value, tuples and frozensets lists. `freeze` and `thaw` convert parsed JSON (scenario
actions) to hashable values and back.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

import attrs

T = TypeVar("T")


# Frozen records in tests (module docstring); read once, when the records are made.
FROZEN = os.environ.get("RMQSPEC_FROZEN_RECORDS", "") == "1"


def record(cls: type[T]) -> type[T]:
    """Make `cls` a slotted, keyword-only attrs class with a fast `evolve` (frozen when FROZEN)."""
    if FROZEN:
        cls = attrs.frozen(kw_only=True)(cls)
    else:
        cls = attrs.define(kw_only=True, unsafe_hash=True, on_setattr=attrs.setters.NO_OP)(cls)
    cls.evolve = _make_evolve(cls, FROZEN)  # type: ignore[attr-defined]
    return cls


def _make_evolve(cls: type, frozen: bool) -> Any:
    """`evolve` for `cls`: a new instance with every field copied, the given ones changed.
    Each field is a keyword parameter defaulting to a marker, so a call binds its changes
    directly (no **kwargs dict, no setattr by name). A frozen class refuses `new.x = ...`,
    so its copy writes through the slot descriptors, as attrs' own generated __init__ does
    for frozen classes."""
    names = [f.name for f in attrs.fields(cls)]
    assert not {"_self", "_new_", "_KEEP", "_new", "_cls"} & set(names), names
    env: dict[str, Any] = {"_new": object.__new__, "_cls": cls, "_KEEP": _KEEP}
    params = ", ".join(f"{name}=_KEEP" for name in names)
    body = [f"def evolve(_self, *, {params}):" if names else "def evolve(_self):", "    _new_ = _new(_cls)"]
    for name in names:
        value = f"_self.{name} if {name} is _KEEP else {name}"
        if frozen:
            env[f"_set_{name}"] = getattr(cls, name).__set__
            body.append(f"    _set_{name}(_new_, {value})")
        else:
            body.append(f"    _new_.{name} = {value}")
    body.append("    return _new_")
    exec("\n".join(body), env)  # noqa: S102 - generated from the class's own field names
    evolve = env["evolve"]
    evolve.__doc__ = f"Return a copy of this {cls.__name__} with the given fields replaced."
    return evolve


_KEEP = object()  # evolve's default: this field keeps its value


class FrozenMap(Mapping):
    """An immutable, hashable dict. `set`/`without` return new maps."""

    __slots__ = ("_d", "_h")

    def __init__(self, items: Any = ()) -> None:
        self._d = dict(items)
        self._h: int | None = None

    @classmethod
    def _wrap(cls, d: dict) -> FrozenMap:
        new = object.__new__(cls)
        new._d = d
        new._h = None
        return new

    def __getitem__(self, key: Any) -> Any:
        return self._d[key]

    def get(self, key: Any, default: Any = None) -> Any:
        return self._d.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._d

    # The Mapping mixins iterate through __getitem__; a dict's own views are several times faster.
    def keys(self):  # type: ignore[override]
        return self._d.keys()

    def values(self):  # type: ignore[override]
        return self._d.values()

    def items(self):  # type: ignore[override]
        return self._d.items()

    def __iter__(self) -> Iterator:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __hash__(self) -> int:
        if self._h is None:
            self._h = hash(frozenset(self._d.items()))
        return self._h

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenMap):
            return self._d == other._d
        return NotImplemented

    def __repr__(self) -> str:
        return f"FrozenMap({self._d!r})"

    def set(self, key: Any, value: Any) -> FrozenMap:
        d = dict(self._d)
        d[key] = value
        return FrozenMap._wrap(d)

    def without(self, key: Any) -> FrozenMap:
        if key not in self._d:
            return self
        d = dict(self._d)
        del d[key]
        return FrozenMap._wrap(d)


EMPTY = FrozenMap()


# --- JSON form ---


def freeze(v: Any) -> Any:
    """Parsed JSON as hashable values: objects become FrozenMaps, lists tuples."""
    if isinstance(v, dict):
        return FrozenMap((k, freeze(x)) for k, x in v.items())
    if isinstance(v, list):
        return tuple(freeze(x) for x in v)
    return v


def thaw(v: Any) -> Any:
    """The inverse of `freeze`."""
    if isinstance(v, FrozenMap):
        return {k: thaw(x) for k, x in v.items()}
    if isinstance(v, tuple):
        return [thaw(x) for x in v]
    return v


def encode(value: Any) -> Any:
    """Any world value as JSON-able data."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, FrozenMap):
        if all(isinstance(k, str) for k in value):
            return {k: encode(v) for k, v in value.items()}
        return [[encode(k), encode(v)] for k, v in value.items()]
    if isinstance(value, (tuple, list)):
        return [encode(v) for v in value]
    if isinstance(value, frozenset):
        return sorted((encode(v) for v in value), key=repr)
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    if attrs.has(type(value)):
        out = {"type": type(value).__name__}
        for f in attrs.fields(type(value)):
            out[f.name] = encode(getattr(value, f.name))
        return out
    raise TypeError(f"cannot encode {value!r}")


def encode_fields(value: Any) -> dict:
    """A record's fields as JSON-able data, without the type tag."""
    return {f.name: encode(getattr(value, f.name)) for f in attrs.fields(type(value))}
