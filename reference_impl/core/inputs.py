"""Values from outside, checked at the door: config records from JSON, bounded fields.

Theory of operation
-------------------
A config record's field annotations are its schema. Two functions enforce it:

- `check_fields(record)` runs in the `__attrs_post_init__` of every config record, so a
  record built from a trace header, a scenario's `config`, `--config` or by hand holds
  only values of its annotated types and within bounds: an `int` is an int (not a bool,
  a float or a string) within the field's `LIMITS` entry, else within 0..JAVA_INT_MAX
  (RocketMQ's config fields are Java ints and longs, and none of the modelled ones is
  negative); a `float` is finite; a `str` and a tuple are at most MAX_STR / MAX_ITEMS
  long, with elements of their annotated type. A record class states its own bounds in
  `LIMITS: ClassVar[dict]` (field name -> (low, high); for a tuple, of its elements;
  for a string, of its length). `POSITIVE` is the usual one: periods and timeouts that
  a Java `scheduleAtFixedRate` or `Thread.sleep` would refuse at 0.
- `structure(value, type, path)` turns parsed JSON into that type with cattrs, strictly:
  no conversion ("3" is not 3, 3.0 is not 3, a string is not a list), unknown keys are
  refused, an optional `"type"` key of a record must name its class (traces carry it).

Both raise `InputError`, which names the field by its path (`dledger.max_heart_beat_leak`);
callers above prefix where the value came from (`trace.jsonl line 1: config.proto....`).
Nothing here is on a hot path: records are checked when they are built, and configs are
built once per history.
"""

from __future__ import annotations

import enum
import math
import types
import typing
from typing import Any

import attrs
import cattrs
from cattrs.errors import ClassValidationError, IterableValidationError

JAVA_INT_MAX = (1 << 31) - 1
POSITIVE = (1, JAVA_INT_MAX)
INT_RANGE = (0, JAVA_INT_MAX)
FLOAT_RANGE = (0.0, float(JAVA_INT_MAX))
MAX_STR = 256  # names, ids, versions; a field that needs more says so in LIMITS
MAX_ITEMS = 1024  # elements of a tuple field


class InputError(ValueError):
    """A value from outside that does not fit its schema. `path` names the field
    (`dledger.max_heart_beat_leak`, `script[3].at_ms`); `str()` is one readable line."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(path, message)
        self.path = path
        self.message = message

    def at(self, prefix: str) -> InputError:
        """The same error one level further out (`prefix` is the enclosing field)."""
        return InputError(join(prefix, self.path), self.message)

    def __str__(self) -> str:
        return f"{self.path} {self.message}" if self.path else self.message


def join(prefix: str, path: str) -> str:
    if not prefix:
        return path
    if not path:
        return prefix
    return prefix + path if path.startswith("[") else f"{prefix}.{path}"


def show(value: Any, limit: int = 60) -> str:
    """A value as an error message quotes it: short, one line, control characters escaped."""
    text = repr(value) if not isinstance(value, (dict, list)) else type(value).__name__
    if isinstance(value, dict):
        text = "an object"
    elif isinstance(value, list):
        text = f"a list of {len(value)}"
    elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10 ** 18:
        text = f"an integer of {len(str(abs(value)))} digits"
    return text if len(text) <= limit else text[:limit - 3] + "..."


# --- the kinds of value an annotation allows ---


def _describe(tp: Any) -> str:
    if tp is int:
        return "an integer"
    if tp is float:
        return "a number"
    if tp is bool:
        return "true or false"
    if tp is str:
        return "a string"
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "one of " + ", ".join(repr(m.value) for m in tp)
    origin = typing.get_origin(tp)
    if origin is tuple:
        return "a list"
    if origin in (typing.Union, types.UnionType):
        return " or ".join("null" if a is type(None) else _describe(a) for a in typing.get_args(tp))
    if attrs.has(tp):
        return "an object"
    return "a JSON value"


def _limits(cls: type) -> dict:
    return getattr(cls, "LIMITS", {})


def _check(value: Any, tp: Any, bounds: tuple | None, path: str) -> None:
    """Raise InputError unless `value` is of type `tp` within `bounds`."""
    if tp is Any or tp is typing.Any:
        return
    if tp is bool:
        if type(value) is not bool:
            raise InputError(path, f"must be true or false, got {show(value)}")
        return
    if tp is int:
        if type(value) is not int:
            raise InputError(path, f"must be an integer, got {show(value)}")
        lo, hi = bounds or INT_RANGE
        if not lo <= value <= hi:
            raise InputError(path, f"must be an integer in {lo}..{hi}, got {show(value)}")
        return
    if tp is float:
        if type(value) not in (int, float) or not math.isfinite(value):
            raise InputError(path, f"must be a finite number, got {show(value)}")
        lo, hi = bounds or FLOAT_RANGE
        if not lo <= value <= hi:
            raise InputError(path, f"must be a number in {lo}..{hi}, got {show(value)}")
        return
    if tp is str:
        if type(value) is not str:
            raise InputError(path, f"must be a string, got {show(value)}")
        lo, hi = bounds or (0, MAX_STR)
        if not lo <= len(value) <= hi:
            raise InputError(path, f"must be a string of {lo}..{hi} characters, got {len(value)}")
        return
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        if not isinstance(value, tp):
            raise InputError(path, f"must be {_describe(tp)}, got {show(value)}")
        return
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return
        last: InputError | None = None
        for arg in args:
            if arg is type(None):
                continue
            try:
                _check(value, arg, bounds, path)
                return
            except InputError as e:
                last = e
        if len([a for a in args if a is not type(None)]) == 1 and last is not None:
            raise InputError(path, last.message.replace("must be ", "must be null or ", 1))
        raise InputError(path, f"must be {_describe(tp)}, got {show(value)}")
    if origin is tuple or tp is tuple:
        if type(value) is not tuple:
            raise InputError(path, f"must be a list, got {show(value)}")
        args = typing.get_args(tp)
        if len(value) > MAX_ITEMS:
            raise InputError(path, f"must have at most {MAX_ITEMS} elements, got {len(value)}")
        if len(args) == 2 and args[1] is Ellipsis:
            for i, x in enumerate(value):
                _check(x, args[0], bounds, f"{path}[{i}]")
        elif args:
            if len(value) != len(args):
                raise InputError(path, f"must have {len(args)} elements, got {len(value)}")
            for i, (x, a) in enumerate(zip(value, args)):
                _check(x, a, bounds, f"{path}[{i}]")
        else:  # an untyped tuple: JSON scalars
            for i, x in enumerate(value):
                if x is not None and type(x) not in (bool, int, float, str):
                    raise InputError(f"{path}[{i}]", f"must be a number, string, boolean or null, got {show(x)}")
        return
    if isinstance(tp, type):
        if not isinstance(value, tp):
            raise InputError(path, f"must be {_describe(tp)}, got {show(value)}")


_HINTS: dict[type, list[tuple[str, Any, tuple | None]]] = {}  # per record class: (field, type, bounds)


def check_value(value: Any, tp: Any, bounds: tuple | None = None, path: str = "") -> None:
    """Raise InputError unless `value` is of type `tp` (an annotation) within `bounds`."""
    _check(value, tp, bounds, path)


def _fields(cls: type) -> list[tuple[str, Any, tuple | None]]:
    out = _HINTS.get(cls)
    if out is None:
        hints = typing.get_type_hints(cls)
        limits = _limits(cls)
        out = _HINTS[cls] = [(f.name, hints.get(f.name, Any), limits.get(f.name)) for f in attrs.fields(cls)]
    return out


def check_fields(obj: Any) -> None:
    """Raise InputError naming the first field of the record `obj` whose value is not of its
    annotated type within its bounds. Config records call it in `__attrs_post_init__`."""
    for name, tp, bounds in _fields(type(obj)):
        _check(getattr(obj, name), tp, bounds, name)


# --- structuring parsed JSON (cattrs) ---


_TYPE_ONLY = {int: (-(1 << 80), 1 << 80), float: (-1e308, 1e308), str: (0, 1 << 30), bool: None}


def _strict(tp: type) -> Any:
    """A scalar of exactly this type; its bounds are the enclosing record's (`check_fields`)."""
    def hook(value: Any, _: Any) -> Any:
        _check(value, tp, _TYPE_ONLY[tp], "")
        return value
    return hook


def _exact(tp: type, what: str) -> Any:
    """A bare `dict` or `list` annotation: exactly that JSON container, contents unchecked here."""
    def hook(value: Any, _: Any) -> Any:
        if type(value) is not tp:
            raise InputError("", f"must be {what}, got {show(value)}")
        return value
    return hook


def _tuple_hook(tp: Any) -> Any:
    args = typing.get_args(tp)

    def hook(value: Any, _: Any) -> tuple:
        if type(value) not in (list, tuple):
            raise InputError("", f"must be a list, got {show(value)}")
        if len(value) > MAX_ITEMS:
            raise InputError("", f"must have at most {MAX_ITEMS} elements, got {len(value)}")
        if len(args) == 2 and args[1] is Ellipsis:
            kinds = [args[0]] * len(value)
        elif args:
            if len(value) != len(args):
                raise InputError("", f"must have {len(args)} elements, got {len(value)}")
            kinds = list(args)
        else:
            kinds = [Any] * len(value)
        out = []
        for i, (x, k) in enumerate(zip(value, kinds)):
            try:
                out.append(x if k is Any else _converter.structure(x, k))
            except Exception as e:  # noqa: BLE001 - turned into one InputError below
                raise _first(e).at(f"[{i}]") from None
        return tuple(out)
    return hook


def _record_hook(cls: type) -> Any:
    inner = cattrs.gen.make_dict_structure_fn(cls, _converter, _cattrs_forbid_extra_keys=True)

    def hook(value: Any, _: Any) -> Any:
        if type(value) is not dict:
            raise InputError("", f"must be an object, got {show(value)}")
        if "type" in value and "type" not in attrs.fields_dict(cls):
            if value["type"] != cls.__name__:
                raise InputError("type", f"must be {cls.__name__!r}, got {show(value['type'])}")
            value = {k: v for k, v in value.items() if k != "type"}
        return inner(value, cls)
    return hook


def _enum_hook(tp: type) -> Any:
    def hook(value: Any, _: Any) -> Any:
        if isinstance(value, tp):
            return value
        for m in tp:
            if type(m.value) is type(value) and m.value == value:
                return m
        raise InputError("", f"must be {_describe(tp)}, got {show(value)}")
    return hook


_converter = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
for _tp in (int, float, bool, str):
    _converter.register_structure_hook(_tp, _strict(_tp))
_converter.register_structure_hook_func(lambda t: t is Any, lambda v, _: v)
_converter.register_structure_hook(dict, _exact(dict, "an object"))
_converter.register_structure_hook(list, _exact(list, "a list"))
_converter.register_structure_hook_factory(lambda t: typing.get_origin(t) is tuple or t is tuple, _tuple_hook)
_converter.register_structure_hook_factory(lambda t: isinstance(t, type) and issubclass(t, enum.Enum), _enum_hook)
_converter.register_structure_hook_factory(attrs.has, _record_hook)


def _first(e: BaseException, path: str = "") -> InputError:
    """The first error of a cattrs error tree as one InputError with its path."""
    if isinstance(e, InputError):
        return e.at(path) if path else e
    if isinstance(e, ClassValidationError):
        with_notes, without = e.group_exceptions()
        for sub, note in with_notes:
            return _first(sub, join(path, note.name))
        for sub in without:
            return _first(sub, path)
    if isinstance(e, IterableValidationError):
        with_notes, without = e.group_exceptions()
        for sub, note in with_notes:
            return _first(sub, f"{path}[{note.index}]")
        for sub in without:
            return _first(sub, path)
    if isinstance(e, cattrs.errors.ForbiddenExtraKeysError):
        return InputError(path, f"has unknown key(s): {', '.join(sorted(map(str, e.extra_fields)))}")
    if isinstance(e, KeyError):  # cattrs: a required field is missing (the note names it)
        return InputError(path, "is required")
    if isinstance(e, (TypeError, ValueError)):
        text = str(e.args[0]) if e.args else str(e)
        if "missing" in text and "required" in text:  # attrs' __init__: a field without a default
            return InputError(path, f"lacks a required field: {text.split(':', 1)[-1].strip()}")
        return InputError(path, text)
    raise e


def structure(value: Any, tp: Any, path: str = "") -> Any:
    """Parsed JSON as a value of type `tp` (a record, a tuple type, a scalar type), or
    InputError naming the first field that does not fit."""
    try:
        return _converter.structure(value, tp)
    except RecursionError:
        raise InputError(path, "is nested too deeply") from None
    except Exception as e:  # noqa: BLE001 - every failure becomes one InputError
        raise _first(e).at(path) if path else _first(e) from None


def field_type(cls: type, name: str) -> Any:
    """The resolved annotation of field `name` of record class `cls`."""
    for n, tp, _ in _fields(cls):
        if n == name:
            return tp
    raise KeyError(name)


def positive(*names: str) -> dict:
    """LIMITS entries for fields that must be at least 1 (periods, timeouts, sizes)."""
    return dict.fromkeys(names, POSITIVE)


def structure_fields(cls: type, values: dict, path: str = "") -> dict:
    """JSON values for some fields of record class `cls` (config overrides), each structured
    to its field's type; the record's own `check_fields` then checks the bounds."""
    names = attrs.fields_dict(cls)
    out = {}
    for key, value in values.items():
        if key not in names:
            raise InputError(join(path, str(key)), f"is not a field of {cls.__name__}")
        out[key] = structure(value, field_type(cls, key), join(path, key))
    return out


_REQUIRED = object()


def arg(args: Any, name: str, tp: Any, bounds: tuple | None = None, default: Any = _REQUIRED) -> Any:
    """One argument of a scenario action (`args` maps names to JSON values): of type `tp`
    within `bounds`, or `default` when absent (required when no default is given)."""
    if name not in args:
        if default is _REQUIRED:
            raise InputError(name, "is required")
        return default
    value = args[name]
    _check(value, tp, bounds, name)
    return value
