"""Implementation logs: JSON Lines, schema `rmqspec.log/1` (docs/conformance.md).

An implementation (the real DLedger, a port in another language) writes what happened
at its own log points: a send, a handler call with its request and answer, a future
completing, a state change, a random draw, and the world's facts (a crash, a restart, a
partition, a cut link). Unlike a trace (`rmqspec.trace/1`) it names no reference event,
no envelope id and no reference-internal step; the tolerant checker (histories/tolerant)
searches for a reference execution that writes it.

This module reads and validates such a log, hardened like the trace reader: overlong or
non-JSON lines, unknown log points, a list where a node id belongs, a lone surrogate, an
integer beyond a Java long, a node in two partition groups are errors naming the file,
the line and the field. It keeps the log compact (`Lines`: a few columns per line and
where to find the line again), since a log may be larger than the memory its parsed JSON
would take. What the reference writes for a step is histories/reference_log.py.
"""

from __future__ import annotations

import importlib
import json
import re
from array import array
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from types import ModuleType
from typing import IO, Any

import attrs

from histories import formats
from histories import trace as trace_mod
from reference_impl import core
from reference_impl.core import codec
from reference_impl.core.inputs import show
from reference_impl.core.state import encode

SCHEMA = "rmqspec.log/1"
WORLD_POINTS = ("crash", "restart", "partition", "cut", "heal")
MAX_LINES = 1_000_000
MAX_DELAY_MS = 60_000  # a delay window wider than a minute is no network the search should explore
IGNORED = frozenset(("t_ms", "node", "at", "error", "thread", "note"))  # never compared
JAVA_LONG_MIN, JAVA_LONG_MAX = -(1 << 63), (1 << 63) - 1
CACHED_LINES = 8192  # parsed lines kept at once: the search looks at a window of the log, not all of it
CLIENT_MODES = ("modelled", "outside")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # a JSON escape that may decode to a lone surrogate
_SURROGATE = re.compile("[\ud800-\udfff]")
_LONG_RUN = re.compile(r"\d{19}")  # an integer with 19 digits or more may not fit a Java long


class LogError(trace_mod.TraceError):
    """A log that cannot be read or does not describe a world of ours (exit 2): one line naming
    the file, the line and the field."""

    def __init__(self, message: str, where: str = "log", line: int | None = None, field: str = "") -> None:
        super().__init__(where, line, field, message)

    def named(self, where: str) -> LogError:
        return LogError(self.message, where, self.line, self.path)


def log_points(protocol: str) -> ModuleType:
    """The protocol's log-point table (reference_impl/<protocol>/log_points.py)."""
    if protocol not in core.protocol_names():
        raise LogError(f"unknown protocol {protocol!r}; known: {', '.join(core.protocol_names())}")
    try:
        return importlib.import_module(f"reference_impl.{protocol}.log_points")
    except ModuleNotFoundError:
        raise LogError(f"protocol {protocol!r} has no implementation log points yet "
                       f"(docs/conformance.md says how to add them)") from None


class LogLine:
    """One event line, a view of the log's columns: `pos` its index among the log's events,
    `line` its line in the file, `t` its time relative to the log's origin (None: not
    recorded), `t_ms` the time as the log wrote it, `node` the node's index (-1: the world),
    `at` its log point. `fields` (what is compared, a subset of what the reference writes) and
    `raw` (the line as written) are read from the log when asked for: the log keeps its lines
    compact, not as parsed JSON."""

    __slots__ = ("_lines", "at", "line", "node", "pos", "t", "t_ms")

    def __init__(self, lines: Lines, pos: int) -> None:
        self._lines, self.pos = lines, pos
        t_ms = lines.t_ms[pos]
        self.t_ms = None if t_ms < 0 else t_ms
        self.t = None if t_ms < 0 else max(0, t_ms - lines.origin)
        self.line, self.node, self.at = lines.number[pos], lines.node[pos], lines.point_names[lines.at[pos]]

    @property
    def fields(self) -> dict:
        return self._lines.fields(self.pos)

    @property
    def raw(self) -> dict:
        return self._lines.raw(self.pos)

    def describe(self, ids: tuple[str, ...]) -> str:
        who = ids[self.node] if self.node >= 0 else "world"
        t = f"t_ms={self.t_ms}" if self.t_ms is not None else "no t_ms"
        body = ", ".join(f"{k}={_short(v)}" for k, v in self.fields.items())
        return f"line {self.line} ({t}) {who} {self.at}" + (f" {body}" if body else "")


class Lines(Sequence):
    """The log's event lines as columns (line number, time, node, log point) and, for the
    fields, where each line is: an offset into the log file (read again when the search looks
    at the line, a few thousand kept parsed), the line's text (a log read from a pipe), or the
    parsed object (a log given as objects, as the tests do). Memory is a few dozen bytes per
    line plus the parsed window, not the log's JSON."""

    def __init__(self, lp: ModuleType, index: dict[str, int], where: str) -> None:
        self.lp, self.index, self.where = lp, index, where
        self.point_names: list[str] = []
        self.point_ids: dict[str, int] = {}
        self.number, self.t_ms, self.node, self.at = array("q"), array("q"), array("h"), array("H")
        self.origin = 0  # the t_ms of time 0 (LogLine.t is relative to it, at least 0)
        self.offsets = array("q")
        self.kept: list[Any] = []  # texts or objects, when the lines cannot be read again
        self.file: Any = None
        self.cache: OrderedDict[int, tuple[dict, dict]] = OrderedDict()

    def add(self, n: int, t: int | None, node: int, at: str, where: Any) -> None:
        k = self.point_ids.get(at)
        if k is None:
            k = self.point_ids[at] = len(self.point_names)
            self.point_names.append(at)
        self.number.append(n)
        self.t_ms.append(-1 if t is None else t)
        self.node.append(node)
        self.at.append(k)
        if isinstance(where, int):
            self.offsets.append(where)
        else:
            self.kept.append(where)

    def __len__(self) -> int:
        return len(self.number)

    def t_at(self, pos: int) -> int | None:
        """Line `pos`'s time relative to the origin (LogLine.t), without making a view of it."""
        t_ms = self.t_ms[pos]
        return None if t_ms < 0 else max(0, t_ms - self.origin)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [LogLine(self, k) for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return LogLine(self, i)

    def __iter__(self) -> Iterator[LogLine]:
        return (LogLine(self, k) for k in range(len(self)))

    def _load(self, pos: int) -> tuple[dict, dict]:
        hit = self.cache.get(pos)
        if hit is not None:
            self.cache.move_to_end(pos)
            return hit
        if self.file is not None:
            self.file.seek(self.offsets[pos])
            d = formats.loads(self.file.readline(trace_mod.MAX_LINE_BYTES + 1), self.where, self.number[pos])
        else:
            d = self.kept[pos]
            if not isinstance(d, dict):
                d = formats.loads(d, self.where, self.number[pos])
        fields = _fields(self.lp, self.point_names[self.at[pos]], d, self.index, self.number[pos])
        if len(self.cache) >= CACHED_LINES:
            self.cache.popitem(last=False)
        hit = self.cache[pos] = (fields, d)
        return hit

    def fields(self, pos: int) -> dict:
        return self._load(pos)[0]

    def raw(self, pos: int) -> dict:
        return self._load(pos)[1]


def _short(v: Any) -> str:
    if isinstance(v, dict):
        keys = ("type", "term", "vote_result", "code", "leader_id", "index", "role", "voted_for", "leader")
        return "{" + ", ".join(f"{k}: {v[k]}" for k in keys if k in v) + "}"
    return json.dumps(v)


@attrs.define
class ImplLog:
    header: dict
    protocol: str
    cfg: core.WorldConfig  # the world the log describes (fault-free; faults come from its lines)
    lines: Lines
    points: frozenset[str]  # the log points the implementation writes
    origin: int  # the t_ms the reference's time 0 stands for
    delay_ms: tuple[int, int]  # the transport's message delays, as the header declares them
    outside: frozenset[int] = frozenset()  # nodes outside the world: their requests are facts

    @property
    def ids(self) -> tuple[str, ...]:
        return self.cfg.ids


def is_log(f: IO[str]) -> bool:
    """Whether a seekable file is an implementation log (its header's schema); rewinds it."""
    first = f.readline(trace_mod.MAX_LINE_BYTES + 1)
    f.seek(0)
    try:
        header = json.loads(first)
    except (json.JSONDecodeError, RecursionError, ValueError):
        return False
    return isinstance(header, dict) and isinstance(header.get("schema"), str) and header["schema"].startswith(
        "rmqspec.log/")


def read(f: IO[str] | IO[bytes], where: str = "log") -> ImplLog:
    """Read and validate a whole implementation log (`where` names it in errors). A seekable
    binary file is read once to validate it and then again, line by line, as the search
    looks at its lines: it must stay open while the log is checked."""
    try:
        reread = isinstance(f.read(0), bytes) and f.seekable()
        return parse(_numbered(f, where, reread), where, f if reread else None)
    except LogError as e:
        raise e.named(where) from None
    except formats.FormatError as e:
        raise LogError(e.message, where, e.line, e.path) from None


def _numbered(f: IO[str] | IO[bytes], where: str, reread: bool) -> Iterator[tuple[int, dict, Any]]:
    """(line number, object, how to find the line again) for each line that is not blank: its
    offset in a file read again later, else its text."""
    n = 0
    while True:
        offset = f.tell() if reread else None
        text = f.readline(trace_mod.MAX_LINE_BYTES + 1)
        if not text:
            return
        n += 1
        size = len(text) if isinstance(text, bytes) else len(text.encode("utf-8", "surrogatepass"))
        if size > trace_mod.MAX_LINE_BYTES:
            raise LogError(f"longer than {trace_mod.MAX_LINE_BYTES} bytes", where, n)
        if not text.strip():
            continue
        d = formats.loads(text, where, n)
        if not isinstance(d, dict):
            raise LogError(f"not a JSON object, got {show(d)}", where, n)
        if reread and _suspect(text):
            _plain(d, n, "")
        yield n, d, offset if reread else text


def parse(numbered: Iterable[tuple[int, dict]] | Iterable[tuple[int, dict, Any]], where: str = "log",
          file: Any = None) -> ImplLog:
    """A log from its numbered objects (line number, object[, how to find it again])."""
    it = iter(numbered)
    try:
        n, header, *_ = next(it)
    except StopIteration:
        raise LogError("empty log") from None
    _plain(header, n, "")
    if header.get("schema") != SCHEMA:
        raise LogError(f"is {show(header.get('schema'))}, expected {SCHEMA!r}", line=n, field="schema")
    protocol = header.get("protocol")
    if not isinstance(protocol, str):
        raise LogError(f"must name a protocol, got {show(protocol)}", line=n, field="protocol")
    lp = log_points(protocol)
    nodes = header.get("nodes")
    if (not isinstance(nodes, list) or not 1 <= len(nodes) <= trace_mod.MAX_NODES
            or not all(isinstance(x, str) and codec.NODE_ID.match(x) for x in nodes) or len(set(nodes)) != len(nodes)):
        raise LogError(f"must list 1..{trace_mod.MAX_NODES} distinct node ids", line=n, field="nodes")
    config = header.get("config", {})
    if not isinstance(config, dict):
        raise LogError("must be an object", line=n, field="config")
    clients = header.get("clients", "modelled")
    if clients not in CLIENT_MODES:
        raise LogError(f"must be one of {list(CLIENT_MODES)}, got {show(clients)}", line=n, field="clients")
    if clients == "outside" and not hasattr(lp, "outside_nodes"):
        raise LogError(f"protocol {protocol} has no clients to leave outside", line=n, field="clients")
    try:
        cfg = lp.make_config(tuple(nodes), config)
        if clients == "outside":
            cfg = lp.clients_outside(cfg)
    except (TypeError, ValueError) as e:
        raise LogError(f"bad config: {e}", line=n, field="config") from None
    outside = frozenset(lp.outside_nodes(cfg)) if clients == "outside" else frozenset()
    facts = set(WORLD_POINTS) | set(getattr(lp, "FACTS", ()))  # the world's, and the protocol's own faults
    known = set(lp.POINTS) | {lp.SNAPSHOT} | facts
    if outside:
        known -= set(getattr(lp, "CLIENT_POINTS", ()))
    points = header.get("log_points")
    if points is None:
        chosen = frozenset(known)
    elif isinstance(points, list) and all(isinstance(p, str) for p in points):
        unknown = set(points) - known
        if unknown:
            raise LogError(f"unknown log point(s) {sorted(unknown)}; known: {sorted(known)}", line=n,
                           field="log_points")
        chosen = frozenset(points) | frozenset(facts)
    else:
        raise LogError("must be a list of log point names", line=n, field="log_points")
    delay = header.get("net_delay_ms", [0, 5])
    if (not isinstance(delay, list) or len(delay) != 2 or not all(_is_int(x) and x >= 0 for x in delay)
            or delay[0] > delay[1] or delay[1] > MAX_DELAY_MS):
        raise LogError(f"must be [min, max] with 0 <= min <= max <= {MAX_DELAY_MS}", line=n, field="net_delay_ms")
    ids = tuple(nodes)
    index = {x: i for i, x in enumerate(ids)}
    down = header.get("down", [])
    if not isinstance(down, list) or not all(isinstance(x, str) and x in index for x in down):
        raise LogError("must list node ids", line=n, field="down")
    lines = Lines(lp, index, where)
    lines.file = file
    origin: int | None = None
    last_t = None
    for n, d, *again in it:
        if len(lines) >= MAX_LINES:
            raise LogError(f"more than {MAX_LINES} events", line=n)
        at = d.get("at")
        if not isinstance(at, str) or at not in known:
            raise LogError(f"unknown log point {show(at)} for {protocol}", line=n, field="at")
        if at not in chosen:
            raise LogError(f"log point {at!r} is not in the header's 'log_points'", line=n, field="at")
        t = d.get("t_ms")
        if t is not None:
            if not _is_int(t) or not 0 <= t < 1 << 63:  # a Java long: epoch ms or a monotonic clock
                raise LogError("must be a non-negative integer (a Java long)", line=n, field="t_ms")
            if last_t is not None and t < last_t:
                raise LogError(f"{t} goes back (previous {last_t}); merge logs in time order", line=n, field="t_ms")
            last_t = t
            if origin is None and at not in facts:
                origin = t  # the first node started (world facts before it, e.g. nodes not started, happen at 0)
            if origin is not None and t - origin > formats.MAX_TIME_MS:
                raise LogError(f"is {t - origin} ms after the log's first node event; a log spans at most "
                               f"{formats.MAX_TIME_MS} ms (the reference's clock is a Java int)", line=n, field="t_ms")
        node_id = d.get("node")
        if at in ("partition", "heal", "cut") or protocol_facts(lp).get(at) == "world":
            node = -1
        elif not isinstance(node_id, str) or node_id not in index:
            raise LogError(f"must be one of {list(ids)}, got {show(node_id)}", line=n, field="node")
        else:
            node = index[node_id]
        if node in outside:
            raise LogError(f"{node_id} is outside the world (header 'clients'): it writes no lines", line=n,
                           field="node")
        if not again or _suspect(again[0]):
            _plain(d, n, "")
        fields = _fields(lp, at, d, index, n)  # validated now; read again when the search needs them
        if outside and is_outside_request(lp, outside, index, at, fields):
            try:
                lp.outside_request(cfg.proto, node_id, fields["request"], f"{fields['peer']}@{n}")
            except ValueError as e:
                raise LogError(f"an outside client's request the model cannot take: {e}", line=n,
                               field="request") from None
        lines.add(n, t, node, at, again[0] if again else d)
    lines.origin = origin or 0
    if down:
        cfg = cfg.evolve(down=tuple(sorted(index[x] for x in down)))
    return ImplLog(header=header, protocol=protocol, cfg=cfg, lines=lines, points=chosen, origin=origin or 0,
                   delay_ms=(delay[0], delay[1]), outside=outside)


def is_outside_request(lp: ModuleType, outside: frozenset[int], index: dict, at: str, fields: dict) -> bool:
    """Whether a line is a server taking a request from a node outside the world (a fact)."""
    return at in lp.HANDLE_AT.values() and "request" in fields and index.get(fields.get("peer")) in outside


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _plain(v: Any, n: int, path: str) -> None:
    """Refuse what no Java log holds and Python would stumble on later: a string with a lone
    surrogate (JSON's "\\ud800", which no UTF-8 text can carry) and an integer beyond a Java long."""
    if isinstance(v, str):
        if _SURROGATE.search(v):
            raise LogError("holds a lone UTF-16 surrogate (\\ud800-\\udfff): not Unicode text", line=n,
                           field=path or "a string")
    elif isinstance(v, dict):
        for k, x in v.items():
            if _SURROGATE.search(k):
                raise LogError("holds a key with a lone UTF-16 surrogate: not Unicode text", line=n,
                               field=path or "an object")
            _plain(x, n, f"{path}.{k}" if path else k)
    elif isinstance(v, list):
        for k, x in enumerate(v):
            _plain(x, n, f"{path}[{k}]")
    elif _is_int(v) and not JAVA_LONG_MIN <= v <= JAVA_LONG_MAX:
        raise LogError("is beyond a Java long", line=n, field=path or "a number")


def _suspect(where: Any) -> bool:
    """Whether a line's text may hold what `_plain` refuses (an offset: the text was checked as read)."""
    if isinstance(where, int):
        return False
    text = where.decode("utf-8", "replace") if isinstance(where, bytes) else where
    return bool(_SURROGATE_ESCAPE.search(text) or _SURROGATE.search(text) or _LONG_RUN.search(text))


def _node_ids(v: Any, index: dict, n: int, field: str) -> list[int]:
    if not isinstance(v, list) or not all(isinstance(x, str) and x in index for x in v):
        raise LogError(f"must be a list of node ids of {list(index)}", line=n, field=field)
    return [index[x] for x in v]


def _fields(lp: ModuleType, at: str, d: dict, index: dict, n: int) -> dict:
    """The fields of a line that the checker compares, validated."""
    fields = {k: v for k, v in d.items() if k not in IGNORED}
    if at == "crash":
        if not isinstance(fields.get("os", False), bool):
            raise LogError("must be true or false", line=n, field="os")
        return {"os": fields.get("os", False), "reason": fields.get("reason")}
    if at == "partition":
        groups = fields.get("groups")
        if not isinstance(groups, list) or not groups:
            raise LogError("must be lists of node ids", line=n, field="groups")
        out = [_node_ids(g, index, n, f"groups[{k}]") for k, g in enumerate(groups)]
        seen: set[int] = set()
        for k, g in enumerate(out):
            twice = seen & set(g) or (len(set(g)) != len(g) and {x for x in g if g.count(x) > 1})
            if twice:
                who = sorted(list(index)[x] for x in twice)[0]
                raise LogError(f"{who} is in two partition groups (a node is on one side)", line=n,
                               field=f"groups[{k}]")
            seen |= set(g)
        return {"groups": out}
    if at == "cut":
        src, dst = fields.get("src"), fields.get("dst")
        for name, v in (("src", src), ("dst", dst)):
            if not isinstance(v, str) or v not in index:
                raise LogError(f"must be one of {list(index)}, got {show(v)}", line=n, field=name)
        if src == dst:
            raise LogError("a link joins two different nodes", line=n, field="dst")
        if not isinstance(fields.get("both", False), bool):
            raise LogError("must be true or false", line=n, field="both")
        return {"src": index[src], "dst": index[dst], "both": fields.get("both", False)}
    if at in protocol_facts(lp) and hasattr(lp, "fact_fields"):
        try:
            return lp.fact_fields(at, fields)
        except ValueError as e:
            raise LogError(str(e), line=n, field=at) from None
    if at in ("restart", "heal") or at in getattr(lp, "FACTS", ()):
        return {}
    if at == lp.SNAPSHOT:
        state = fields.get("state")
        if not isinstance(state, dict):
            raise LogError(f"{at} needs a 'state' object", line=n, field="state")
        return {"state": state}
    if at == lp.NEXT_INT:
        bound, r = fields.get("bound"), fields.get("r")
        if bound is not None and (not _is_int(bound) or bound <= 0):
            raise LogError("must be a positive integer", line=n, field="bound")
        if r is not None and (not _is_int(r) or r < 0 or (bound is not None and r >= bound)):
            raise LogError("must be an integer in [0, bound)", line=n, field="r")
        return fields
    for key in ("request", "response"):
        if key in fields and not isinstance(fields[key], dict):
            raise LogError("must be an object", line=n, field=key)
    if "peer" in fields and (not isinstance(fields["peer"], str) or fields["peer"] not in index):
        raise LogError(f"must be one of {list(index)}, got {show(fields['peer'])}", line=n, field="peer")
    return fields


def subset(log: Any, ref: Any) -> bool:
    """Whether what the log recorded agrees with what the reference writes: every field the
    log has must be there with the same value (objects compared the same way, recursively)."""
    if isinstance(log, dict):
        if not isinstance(ref, dict):
            return False
        for k, v in log.items():
            if k not in ref or not subset(v, ref[k]):
                return False
        return True
    return log == ref


def differences(log: dict, ref: dict, prefix: str = "") -> list[str]:
    """The fields where a log line and a reference line disagree, for reports."""
    out = []
    for k, v in log.items():
        if k not in ref:
            out.append(f"{prefix}{k}: the reference writes no such field")
        elif isinstance(v, dict) and isinstance(ref[k], dict):
            out += differences(v, ref[k], f"{prefix}{k}.")
        elif v != ref[k]:
            out.append(f"{prefix}{k}: log {json.dumps(v)}, reference {json.dumps(encode(ref[k]))}")
    return out


def protocol_facts(lp: ModuleType) -> dict:
    """The protocol's own world facts (operator actions such as a topic created, an HA
    connection reset), `at` -> "node" or "world": what the log point acts on. A protocol with
    operator facts also has `fact_fields`, `fact_event` and `fact_line`
    (reference_impl/nameserver/log_points.py)."""
    named = getattr(lp, "FACTS", {})
    return named if isinstance(named, dict) else {at: "node" for at in named}
