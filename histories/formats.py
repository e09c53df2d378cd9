"""The formats users hand us, checked at the door: strict JSON, and a schema per format.

Theory of operation
-------------------
Every file or JSON argument (a trace's header and steps, a scenario file, `--config`,
an implementation's log) goes through two steps before anything of ours reads it:

1. `loads(text, where, line)`: strict JSON. Refused: duplicate keys (which of two values
   did the writer mean?), `NaN`/`Infinity` and numbers that overflow a double (no finite
   value), integers of more than MAX_DIGITS digits, nesting deeper than MAX_DEPTH, and
   text that is not UTF-8.
2. `check(value, schema, where, line)`: the value as the schema's typed record
   (`reference_impl.core.inputs.structure`, cattrs underneath): types, ranges, node ids,
   sizes and counts. A record may add checks that span fields in `__attrs_post_init__`.

Both raise `FormatError`, one line naming the file, the line and the field:
`trace.jsonl line 3: config.script must be a list of actions, got 5`. Any other reader
(check-trace's tolerant mode, a future format) uses the same two calls with its own
schema records. The published JSON Schemas (docs/schemas/) describe the same formats for
implementers who validate their traces with their own tools; a test holds them to what
the tool writes and refuses.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, ClassVar

import attrs

from reference_impl.core import inputs
from reference_impl.core.inputs import JAVA_INT_MAX, InputError, check_fields, show

MAX_DEPTH = 32  # JSON nesting: our own formats need 8
MAX_DIGITS = 20  # an integer's digits: every number of ours fits a Java long
MAX_LINE_BYTES = 4 << 20  # a JSON Lines line (bytes, not characters)
MAX_TIME_MS = JAVA_INT_MAX  # simulated times: about 24.8 days
MAX_STEPS = 10 ** 9
MAX_SCRIPT_ACTIONS = 100_000
NODE_ID = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$"
_NODE_ID = re.compile(NODE_ID)
_LONG_DIGITS = re.compile(r"\d{%d}" % (MAX_DIGITS + 1))
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def escape(text: str) -> str:
    """Text from a file made safe for a terminal: control characters, terminal escapes and
    bidi overrides as `\\xNN` / `\\uNNNN`, so a message stays on one line and means what it shows."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}",
                        text)


class FormatError(ValueError):
    """Input that does not fit its format: `where` (a file, or a flag such as `--config`),
    `line` (JSON Lines, else None), `path` (the field) and `message`."""

    def __init__(self, where: str, line: int | None, path: str, message: str) -> None:
        super().__init__(where, line, path, message)
        self.where, self.line, self.path, self.message = where, line, path, message

    def __str__(self) -> str:
        place = self.where + (f" line {self.line}" if self.line is not None else "")
        what = f"{self.path} {self.message}" if self.path else self.message
        return escape(f"{place}: {what}")


# --- 1. strict JSON ---


def _pairs(pairs: list[tuple[str, Any]]) -> dict:
    d = dict(pairs)
    if len(d) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise _JsonRefused(f"has the key {dup!r} twice")
    return d


class _JsonRefused(ValueError):
    pass


def _constant(name: str) -> Any:
    raise _JsonRefused(f"has {name}, which JSON does not allow (numbers must be finite)")


def _float(text: str) -> float:
    v = float(text)
    if not math.isfinite(v):
        raise _JsonRefused(f"has the number {text[:30]}, beyond what a double holds")
    return v


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise _JsonRefused(f"has an integer of {len(text.lstrip('-'))} digits (at most {MAX_DIGITS})")
    return int(text)


JsonRefused = _JsonRefused


def strict_decoder() -> json.JSONDecoder:
    """A decoder with `loads`'s refusals but for the depth (which the caller checks with
    `depth`), for a reader that parses a document piece by piece (conform.vectors_file);
    it raises JsonRefused, and RecursionError for very deep nesting."""
    return json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_constant, parse_float=_float, parse_int=_int)


def depth(value: Any) -> int:
    """How deeply containers nest in `value` (a scalar: 0), level by level, without recursion;
    it stops counting past MAX_DEPTH."""
    level, d = [value], 0
    while level:
        nxt = []
        for v in level:
            if type(v) is dict:
                v = v.values()
            elif type(v) is not list:
                continue
            nxt += [x for x in v if type(x) is dict or type(x) is list]
        if not nxt and not any(type(v) is dict or type(v) is list for v in level):
            return d
        d += 1
        if d > MAX_DEPTH:
            return d
        level = nxt
    return d


def loads(text: str | bytes, where: str, line: int | None = None) -> Any:
    """Parse one JSON document strictly (see the module's docstring), or raise FormatError."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise FormatError(where, line, "", f"is not UTF-8 text (byte {e.start})") from None
    # Integers are parsed by json's C code unless the text has a run of MAX_DIGITS+ digits
    # somewhere (then each integer is measured; a run inside a string costs only that check).
    long_digits = _LONG_DIGITS.search(text) is not None
    try:
        value = json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant, parse_float=_float,
                           **({"parse_int": _int} if long_digits else {}))
    except _JsonRefused as e:
        raise FormatError(where, line, "", f"JSON {e}") from None
    except RecursionError:
        raise FormatError(where, line, "", f"JSON nests deeper than {MAX_DEPTH} levels") from None
    except (json.JSONDecodeError, ValueError) as e:
        raise FormatError(where, line, "", f"not JSON ({e})") from None
    if depth(value) > MAX_DEPTH:
        raise FormatError(where, line, "", f"JSON nests deeper than {MAX_DEPTH} levels")
    return value


# --- 2. schemas ---


def check(value: Any, schema: Any, where: str, line: int | None = None, path: str = "") -> Any:
    """`value` (parsed JSON) as `schema` (a record class or a type), or FormatError naming
    where, line and field. The reusable entry point for every format."""
    try:
        return inputs.structure(value, schema, path)
    except InputError as e:
        raise FormatError(where, line, e.path, e.message) from None


def node_id(value: str, path: str) -> str:
    if not _NODE_ID.match(value):
        raise InputError(path, f"must be a node id (a letter or digit, then up to 63 of letters, digits, "
                               f"'_', '.', ':', '-'), got {show(value)}")
    return value


@attrs.frozen(kw_only=True)
class TraceHeader:
    """A trace's first line (docs/trace-format.md). `config` is checked by `codec.load_config`."""

    schema: str
    protocol: str
    config: dict
    nodes: tuple[str, ...] | None = None
    seed: int | None = None
    until_ms: int | None = None
    shrunk: dict | None = None  # a shrunk counterexample's provenance (spark_harness.counterexample)
    explore: Any = None  # the explorer's bound, for a trace it found (model_checks.explore)
    reference: str | None = None  # which reference wrote it (histories.trace.reference_digest)
    model: int | None = None  # which model of its protocol (histories.trace.MODEL_CHANGES; absent: the first)

    LIMITS: ClassVar[dict] = {"protocol": (1, 64), "nodes": (1, 64), "seed": (-(1 << 63), (1 << 63) - 1),
                              "until_ms": (0, MAX_TIME_MS), "reference": (1, 64), "model": (0, 1 << 16)}

    def __attrs_post_init__(self) -> None:
        check_fields(self)
        for k, x in enumerate(self.nodes or ()):
            node_id(x, f"nodes[{k}]")


# An event names nodes by id; its other fields by kind (docs/trace-format.md, "Events").
EVENT_FIELDS: dict[str, dict[str, Any]] = {
    "tick": {"node": str, "thread": str, "draw": int, "late": int},
    "deliver": {"id": int, "src": str, "dst": str, "msg": Any},
    "drop": {"id": int, "src": str, "dst": str, "msg": Any},
    "duplicate": {"id": int, "src": str, "dst": str, "msg": Any},
    "rpc_fail": {"rpc": int, "requester": str, "responder": str, "late": int},
    "crash": {"node": str, "os": bool, "disk": bool},
    "restart": {"node": str},
    "partition": {"groups": tuple[tuple[str, ...], ...]},
    "cut": {"src": str, "dst": str},
    "heal": {},
    "calm": {},
    "script": {"index": int, "do": str},
    "ext": {"event": Any},
}
_REQUIRED_FIELDS = {"tick": ("node",), "deliver": ("src", "dst"), "drop": ("src", "dst"), "duplicate": ("src", "dst"),
                    "rpc_fail": ("requester", "responder"), "crash": ("node",), "restart": ("node",),
                    "partition": ("groups",), "cut": ("src", "dst"), "script": ("index",), "ext": ("event",)}
_EVENT_BOUNDS = {"draw": (0, (1 << 16) - 1), "late": (0, 60_000), "id": (0, JAVA_INT_MAX), "rpc": (0, JAVA_INT_MAX),
                 "index": (0, MAX_SCRIPT_ACTIONS - 1), "node": (1, 64), "thread": (1, 256), "src": (1, 64), "dst": (1, 64),
                 "requester": (1, 64), "responder": (1, 64), "do": (1, 64), "groups": (1, 64)}


def check_event(d: Any, path: str = "event") -> dict:
    """The shape of a trace step's event (whether it can happen is the replay's question)."""
    if type(d) is not dict:
        raise InputError(path, f"must be an object with a 'kind', got {show(d)}")
    kind = d.get("kind")
    if type(kind) is not str or kind not in EVENT_FIELDS:
        raise InputError(f"{path}.kind", f"must be one of {', '.join(EVENT_FIELDS)}, got {show(kind)}")
    fields = EVENT_FIELDS[kind]
    for key, value in d.items():
        if key == "kind":
            continue
        if key not in fields:
            raise InputError(path, f"({kind}) has an unknown key {show(key)}")
        tp = fields[key]
        if tp in (int, str, bool):
            inputs.check_value(value, tp, _EVENT_BOUNDS.get(key), f"{path}.{key}")
        elif tp is not Any:
            inputs.structure(value, tp, f"{path}.{key}")
    for key in _REQUIRED_FIELDS.get(kind, ()):
        if key not in d:
            raise InputError(f"{path}.{key}", f"is required for a {kind} event")
    for key in ("node", "src", "dst", "requester", "responder"):
        if key in d:
            node_id(d[key], f"{path}.{key}")
    if kind == "partition":
        seen: dict[str, int] = {}
        for g, group in enumerate(d["groups"]):
            for k, x in enumerate(group):
                node_id(x, f"{path}.groups[{g}][{k}]")
                if x in seen:
                    raise InputError(f"{path}.groups[{g}][{k}]", f"names {x} again: it is in group {seen[x]} "
                                                                 "already (a node is in one group at most)")
                seen[x] = g
    return d


@attrs.frozen(kw_only=True)
class TraceStep:
    """One step line: `i`, `t_ms`, the event, the observable state after it, observations."""

    i: int | None = None
    t_ms: int | None = None
    event: Any = None
    state: dict | None = None
    obs: list | None = None

    LIMITS: ClassVar[dict] = {"i": (0, MAX_STEPS), "t_ms": (0, MAX_TIME_MS)}

    def __attrs_post_init__(self) -> None:
        check_fields(self)
        if self.event is not None:
            check_event(self.event)
        for node, fields in (self.state or {}).items():
            node_id(node, "state")
            if type(fields) is not dict:
                raise InputError(f"state.{node}", f"must be an object of observable fields, got {show(fields)}")


@attrs.frozen(kw_only=True)
class TraceResult:
    """The closing line: `{"result": {...}}`; nothing may follow it."""

    result: dict


def extension(d: dict) -> dict:
    """The line without its extension keys (`x_...`, `x-...`: free for other tools, ignored here)."""
    if any(isinstance(k, str) and k[:2] in ("x_", "x-") for k in d):
        return {k: v for k, v in d.items() if k[:2] not in ("x_", "x-")}
    return d


@attrs.frozen(kw_only=True)
class ScenarioDoc:
    """A scenario file (docs/scenario-format.md); `config` is the protocol's and `steps` the
    script's, each checked by its owner (`make_config`, `scenario.parse_actions`)."""

    protocol: str
    until_ms: int
    schema: str = "rmqspec.scenario/1"
    name: str | None = None
    description: str = ""
    java_test: str | None = None
    nodes: int = 3
    config: dict = attrs.Factory(dict)
    seed: int = 0
    faults: str = "none"
    timing: str | None = None
    down: tuple[str, ...] = ()
    steps: list = attrs.Factory(list)

    LIMITS: ClassVar[dict] = {"protocol": (1, 64), "until_ms": (1, MAX_TIME_MS), "name": (0, 200),
                              "description": (0, 10_000), "java_test": (0, 300), "nodes": (1, 64),
                              "seed": (-(1 << 63), (1 << 63) - 1), "faults": (1, 64), "timing": (1, 16),
                              "down": (1, 64)}

    def __attrs_post_init__(self) -> None:
        check_fields(self)
        if len(self.steps) > MAX_SCRIPT_ACTIONS:
            raise InputError("steps", f"must have at most {MAX_SCRIPT_ACTIONS:,} actions, got {len(self.steps):,}")


MAX_OVERRIDES = 256


def check_overrides(value: Any, where: str) -> dict:
    """`--config` (and a scenario's `config`): a JSON object of protocol config overrides, each
    checked by the protocol's `make_config` against its config records."""
    if type(value) is not dict:
        raise FormatError(where, None, "", f"must be a JSON object of config overrides, got {show(value)}")
    if len(value) > MAX_OVERRIDES:
        raise FormatError(where, None, "", f"has {len(value)} keys, at most {MAX_OVERRIDES}")
    for key in value:
        if not 1 <= len(key) <= 64:
            raise FormatError(where, None, "", f"has a key of {len(key)} characters (1..64)")
    return value
