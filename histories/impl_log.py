"""Implementation logs: JSON Lines, schema `rmqspec.log/1` (docs/conformance.md).

An implementation (the real DLedger, a port in another language) writes what happened
at its own log points: a send, a handler call with its request and answer, a future
completing, a state change, a random draw, and the world's facts (a crash, a restart, a
partition). Unlike a trace (`rmqspec.trace/1`) it names no reference event, no
envelope id and no reference-internal step; the tolerant checker (histories/tolerant.py)
searches for a reference execution that writes it.

This module reads and validates such a log (hardened like the trace reader: overlong or
non-JSON lines, unknown log points, bad fields are errors naming the line), and maps a
reference step to the lines an implementation would write for it (`step_lines`), through
the protocol's log-point table (`reference_impl/<protocol>/log_points.py`). `from_run`
writes the log of a reference history, which the tests then make realistic.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterable, Iterator
from types import ModuleType
from typing import IO, Any

import attrs

from histories import formats
from histories import trace as trace_mod
from reference_impl import core
from reference_impl.core import codec
from reference_impl.core import network as net_mod
from reference_impl.core.state import encode

SCHEMA = "rmqspec.log/1"
WORLD_POINTS = ("crash", "restart", "partition", "heal")
MAX_LINES = 1_000_000
MAX_DELAY_MS = 60_000  # a delay window wider than a minute is no network the search should explore
IGNORED = frozenset(("t_ms", "node", "at", "error", "thread", "note"))  # never compared


class LogError(trace_mod.TraceError):
    """A log that cannot be read or does not describe a world of ours (exit 2). Its message
    names the line itself."""

    def __init__(self, message: str, where: str = "log") -> None:
        super().__init__(where, None, "", message)


def log_points(protocol: str) -> ModuleType:
    """The protocol's log-point table (reference_impl/<protocol>/log_points.py)."""
    if protocol not in core.protocol_names():
        raise LogError(f"unknown protocol {protocol!r}; known: {', '.join(core.protocol_names())}")
    try:
        return importlib.import_module(f"reference_impl.{protocol}.log_points")
    except ModuleNotFoundError:
        raise LogError(f"protocol {protocol!r} has no implementation log points yet "
                       f"(docs/conformance.md says how to add them)") from None


@attrs.define(frozen=True)
class LogLine:
    """One event line: `pos` its index among the log's events, `line` its line in the file,
    `t` its time relative to the log's origin (None: not recorded), `node` the node's index
    (-1: the world), `fields` what is compared (a subset of what the reference writes)."""

    pos: int
    line: int
    t: int | None
    node: int
    at: str
    fields: dict
    raw: dict

    def describe(self, ids: tuple[str, ...]) -> str:
        who = ids[self.node] if self.node >= 0 else "world"
        t = f"t_ms={self.raw['t_ms']}" if "t_ms" in self.raw else "no t_ms"
        body = ", ".join(f"{k}={_short(v)}" for k, v in self.fields.items())
        return f"line {self.line} ({t}) {who} {self.at}" + (f" {body}" if body else "")


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
    lines: list[LogLine]
    points: frozenset[str]  # the log points the implementation writes
    origin: int  # the t_ms the reference's time 0 stands for
    delay_ms: tuple[int, int]  # the transport's message delays, as the header declares them

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
    """Read and validate a whole implementation log (`where` names it in errors)."""
    try:
        return parse(trace_mod.read_lines(f, where))
    except LogError as e:
        raise LogError(e.message, where) from None


def parse(numbered: Iterable[tuple[int, dict]]) -> ImplLog:
    it: Iterator[tuple[int, dict]] = iter(numbered)
    try:
        n, header = next(it)
    except StopIteration:
        raise LogError("empty log") from None
    if header.get("schema") != SCHEMA:
        raise LogError(f"line {n}: schema is {header.get('schema')!r}, expected {SCHEMA!r}")
    protocol = header.get("protocol")
    if not isinstance(protocol, str):
        raise LogError(f"line {n}: header lacks 'protocol'")
    lp = log_points(protocol)
    nodes = header.get("nodes")
    if (not isinstance(nodes, list) or not 1 <= len(nodes) <= trace_mod.MAX_NODES
            or not all(isinstance(x, str) and codec.NODE_ID.match(x) for x in nodes) or len(set(nodes)) != len(nodes)):
        raise LogError(f"line {n}: 'nodes' must list 1..{trace_mod.MAX_NODES} distinct node ids")
    config = header.get("config", {})
    if not isinstance(config, dict):
        raise LogError(f"line {n}: 'config' must be an object")
    try:
        cfg = lp.make_config(tuple(nodes), config)
    except (TypeError, ValueError) as e:
        raise LogError(f"line {n}: bad config: {e}") from None
    facts = set(WORLD_POINTS) | set(getattr(lp, "FACTS", ()))  # the world's, and the protocol's own faults
    known = set(lp.POINTS) | {lp.SNAPSHOT} | facts
    points = header.get("log_points")
    if points is None:
        chosen = frozenset(known)
    elif isinstance(points, list) and all(isinstance(p, str) for p in points):
        unknown = set(points) - known
        if unknown:
            raise LogError(f"line {n}: unknown log point(s) {sorted(unknown)}; known: {sorted(known)}")
        chosen = frozenset(points) | frozenset(facts)
    else:
        raise LogError(f"line {n}: 'log_points' must be a list of log point names")
    delay = header.get("net_delay_ms", [0, 5])
    if (not isinstance(delay, list) or len(delay) != 2 or not all(_is_int(x) and x >= 0 for x in delay)
            or delay[0] > delay[1] or delay[1] > MAX_DELAY_MS):
        raise LogError(f"line {n}: 'net_delay_ms' must be [min, max] with 0 <= min <= max <= {MAX_DELAY_MS}")
    ids = tuple(nodes)
    index = {x: i for i, x in enumerate(ids)}
    lines: list[LogLine] = []
    origin: int | None = None
    last_t = None
    for n, d in it:
        if len(lines) >= MAX_LINES:
            raise LogError(f"line {n}: more than {MAX_LINES} events")
        at = d.get("at")
        if at not in known:
            raise LogError(f"line {n}: unknown log point {at!r} for {protocol}")
        if at not in chosen:
            raise LogError(f"line {n}: log point {at!r} is not in the header's 'log_points'")
        t = d.get("t_ms")
        if t is not None:
            if not _is_int(t) or not 0 <= t < 1 << 63:  # a Java long: epoch ms or a monotonic clock
                raise LogError(f"line {n}: t_ms must be a non-negative integer (a Java long)")
            if last_t is not None and t < last_t:
                raise LogError(f"line {n}: t_ms {t} goes back (previous {last_t}); merge logs in time order")
            last_t = t
            if origin is None and at not in facts:
                origin = t  # the first node started (world facts before it, e.g. nodes not started, happen at 0)
            if origin is not None and t - origin > formats.MAX_TIME_MS:
                raise LogError(f"line {n}: t_ms is {t - origin} ms after the log's first node event; a log spans "
                               f"at most {formats.MAX_TIME_MS} ms (the reference's clock is a Java int)")
        node_id = d.get("node")
        if at in ("partition", "heal"):
            node = -1
        elif node_id not in index:
            raise LogError(f"line {n}: 'node' must be one of {list(ids)}")
        else:
            node = index[node_id]
        fields = _fields(lp, at, d, index, n)
        lines.append(LogLine(pos=len(lines), line=n, t=t, node=node, at=at, fields=fields, raw=d))
    origin = origin or 0
    lines = [ln if ln.t is None else attrs.evolve(ln, t=max(0, ln.t - origin)) for ln in lines]
    down = header.get("down", [])
    if not isinstance(down, list) or any(x not in index for x in down):
        raise LogError("header: 'down' must list node ids")
    if down:
        cfg = cfg.evolve(down=tuple(sorted(index[x] for x in down)))
    return ImplLog(header=header, protocol=protocol, cfg=cfg, lines=lines, points=chosen, origin=origin,
                   delay_ms=(delay[0], delay[1]))


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _fields(lp: ModuleType, at: str, d: dict, index: dict, n: int) -> dict:
    """The fields of a line that the checker compares, validated."""
    fields = {k: v for k, v in d.items() if k not in IGNORED}
    if at == "crash":
        if not isinstance(fields.get("os", False), bool):
            raise LogError(f"line {n}: crash 'os' must be true or false")
        return {"os": fields.get("os", False), "reason": fields.get("reason")}
    if at == "partition":
        groups = fields.get("groups")
        if (not isinstance(groups, list) or not groups
                or not all(isinstance(g, list) and all(x in index for x in g) for g in groups)):
            raise LogError(f"line {n}: partition 'groups' must be lists of node ids")
        return {"groups": [[index[x] for x in g] for g in groups]}
    if at in ("restart", "heal") or at in getattr(lp, "FACTS", ()):
        return {}
    if at == lp.SNAPSHOT:
        state = fields.get("state")
        if not isinstance(state, dict):
            raise LogError(f"line {n}: {at} needs a 'state' object")
        return {"state": state}
    if at == lp.NEXT_INT:
        bound, r = fields.get("bound"), fields.get("r")
        if bound is not None and (not _is_int(bound) or bound <= 0):
            raise LogError(f"line {n}: 'bound' must be a positive integer")
        if r is not None and (not _is_int(r) or r < 0 or (bound is not None and r >= bound)):
            raise LogError(f"line {n}: 'r' must be an integer in [0, bound)")
        return fields
    for key in ("request", "response"):
        if key in fields and not isinstance(fields[key], dict):
            raise LogError(f"line {n}: '{key}' must be an object")
    if "peer" in fields and fields["peer"] not in index:
        raise LogError(f"line {n}: 'peer' must be one of {list(index)}")
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


# --- what the reference writes ---


def step_lines(lp: ModuleType, before: core.World, event: Any, after: core.World, obs: tuple, raw: bool = False
               ) -> list[tuple[int, str, dict]]:
    """The lines (node index, log point, fields) an implementation writes for one reference
    step: the network's (a send, a handler call, a completion) and each node's own
    (lp.node_lines); world facts (crash, restart, partition, heal) are the log's own lines.
    `raw`: messages as the reference's records (hashable) instead of their JSON form."""
    code = _same if raw else enc
    out: list[tuple[int, str, dict]] = []
    c = after.cfg.proto
    ids = after.cfg.ids
    by_node: dict[int, list] = {}
    for i, o in obs:
        by_node.setdefault(i, []).append(o)
    kind = type(event)
    fresh = [e for e in after.net.flight if e.id >= before.net.next_id]
    if kind is core.Tick:
        i = event.node
        out += [(i, at, f) for at, f in lp.node_lines(c, True, before.nodes[i], after.nodes[i], by_node.get(i, []),
                                                       event.draw)]
        out += _sends(lp, ids, fresh, i, code=code)
    elif kind is core.Deliver:
        env = net_mod.find(before.net, event.env)
        if env.reply:
            rpc = net_mod.find_rpc(before.net, env.rpc)
            i = env.dst
            if rpc is not None and before.alive[i]:
                out.append((i, lp.COMPLETE_AT[type(env.msg).__name__],
                            {"peer": ids[env.src], "response": code(env.msg)}))
                out += [(i, at, f) for at, f in lp.node_lines(c, False, before.nodes[i], after.nodes[i],
                                                               by_node.get(i, []), 0)]
                out += _sends(lp, ids, fresh, i, code=code)
        elif before.alive[env.dst]:
            j = env.dst
            out += [(j, at, f) for at, f in lp.node_lines(c, False, before.nodes[j], after.nodes[j],
                                                           by_node.get(j, []), 0)]
            handled: dict = {"peer": ids[env.src], "request": code(env.msg)}
            for e in fresh:
                if e.reply and e.rpc == env.rpc:
                    handled["response"] = code(e.msg)
            at = lp.HANDLE_AT.get(type(env.msg).__name__)
            if at is not None:
                out.append((j, at, handled))
            out += _sends(lp, ids, fresh, j, env.rpc, code=code)
    elif kind is core.RpcFail:
        rpc = net_mod.find_rpc(before.net, event.rpc)
        i = rpc.requester
        if before.alive[i]:
            reply = lp.failed_reply(rpc.ctx)
            out.append((i, lp.COMPLETE_AT[type(reply).__name__], {"peer": ids[rpc.responder], "response": code(reply)}))
            out += [(i, at, f) for at, f in lp.node_lines(c, False, before.nodes[i], after.nodes[i],
                                                           by_node.get(i, []), 0)]
            out += _sends(lp, ids, fresh, i, code=code)
    elif getattr(lp, "ext_lines", None) is not None and kind not in core.FAULT_EVENTS + (core.Calm, core.Scripted):
        out += lp.ext_lines(before, event, after, obs)  # a protocol's own world event (a TCP segment read)
    return out


_ENCODED: dict[int, tuple[Any, Any]] = {}  # id(message) -> (message, its encoding); a memo of a pure function


def _same(msg: Any) -> Any:
    return msg


def enc(msg: Any) -> Any:
    """`encode` of a message, remembered while that very object is in the memo."""
    hit = _ENCODED.get(id(msg))
    if hit is not None and hit[0] is msg:
        return hit[1]
    if len(_ENCODED) > 65536:
        _ENCODED.clear()
    out = encode(msg)
    _ENCODED[id(msg)] = (msg, out)
    return out


def predict(lp: ModuleType, w: core.World, event: Any) -> tuple[int, str, dict] | None:
    """The network line a delivery or an RPC failure will write, as far as it is known before
    the step (a handler line without its response); None if it writes none."""
    ids = w.cfg.ids
    if isinstance(event, core.Deliver):
        env = net_mod.find(w.net, event.env)
        if env.reply:
            if net_mod.find_rpc(w.net, env.rpc) is None or not w.alive[env.dst]:
                return None
            return env.dst, lp.COMPLETE_AT[type(env.msg).__name__], {"peer": ids[env.src], "response": enc(env.msg)}
        at = lp.HANDLE_AT.get(type(env.msg).__name__)
        if at is None or not w.alive[env.dst]:
            return None
        return env.dst, at, {"peer": ids[env.src], "request": enc(env.msg)}
    if isinstance(event, core.RpcFail):
        rpc = net_mod.find_rpc(w.net, event.rpc)
        if not w.alive[rpc.requester]:
            return None
        reply = lp.failed_reply(rpc.ctx)
        return rpc.requester, lp.COMPLETE_AT[type(reply).__name__], {"peer": ids[rpc.responder], "response": enc(reply)}
    return None


def _sends(lp: ModuleType, ids: tuple[str, ...], fresh: list, i: int, answered: int = 0, code: Any = None
           ) -> list[tuple[int, str, dict]]:
    """Node i's new requests (client-side send lines) and its answers to requests it took
    earlier (a deferred answer: the handler's log point with the response); `answered` is the
    RPC whose answer is part of the handler line of this very step."""
    code = code or enc
    out = []
    reply_at = getattr(lp, "REPLY_AT", {})
    for e in fresh:
        if e.src != i:
            continue
        if not e.reply:
            at = lp.SEND_AT.get(type(e.msg).__name__)
            if at is not None:
                out.append((i, at, {"peer": ids[e.dst], "request": code(e.msg)}))
        elif e.rpc != answered:
            at = reply_at.get(type(e.msg).__name__)
            if at is not None:
                out.append((i, at, {"peer": ids[e.dst], "response": code(e.msg)}))
    return out


def world_line(w: core.World, event: Any) -> tuple[int, str, dict] | None:
    """The log line of a world fact the reference applied (for logs written from histories)."""
    if isinstance(event, core.Crash) and not event.disk:
        return event.node, "crash", {"os": event.os}
    if isinstance(event, core.Restart):
        return event.node, "restart", {}
    if isinstance(event, core.Partition):
        return -1, "partition", {"groups": [[w.cfg.ids[i] for i in g] for g in event.groups]}
    if isinstance(event, core.Heal):
        return -1, "heal", {}
    return None


class LogWriter:
    """A step hook that writes the implementation log of a reference history: the lines every
    step writes, in the order the reference takes them, with the reference's time as t_ms,
    a snapshot of every node at its start, and the faults as world facts."""

    def __init__(self, cfg: core.WorldConfig, snapshots: bool = True, protocol: str | None = None,
                 steps: bool = False, snapshot_ms: int | None = 1000) -> None:
        """`protocol`: the name to write when `cfg` runs a variant of it (the tolerant checker's
        looser scheduler); `steps`: tag each line with the reference step that wrote it (`_step`);
        `snapshot_ms`: also a snapshot of every live node every so often (as the DLedger harness
        writes one a second)."""
        self.snapshot_ms = snapshot_ms if snapshots else None
        self.next_snapshot = snapshot_ms or 0
        self.cfg = cfg
        protocol = protocol or cfg.protocol
        self.lp = log_points(protocol)
        self.tag = steps
        self.header = {"schema": SCHEMA, "protocol": protocol, "nodes": list(cfg.ids),
                       "config": self.lp.header_config(cfg), "net_delay_ms": list(cfg.profile.delay_ms),
                       "source": "rmqspec reference history"}
        if cfg.down:
            self.header["down"] = [cfg.ids[i] for i in cfg.down]
        self.events: list[dict] = []
        self.snapshots = snapshots
        w = core.init(cfg)
        if snapshots:
            for i, up in enumerate(w.alive):
                if up:
                    self.events += self._snapshot(w, i)

    def _snapshot(self, w: core.World, i: int) -> list[dict]:
        state = self.lp.snapshot(w.cfg.proto, w.nodes[i], w.alive[i])
        return [] if state is None else [{"t_ms": w.now, "node": w.cfg.ids[i], "at": self.lp.SNAPSHOT, "state": state}]

    def _fact(self, w: core.World, event: Any) -> None:
        node, at, fields = world_line(w, event)
        self.events.append({"t_ms": w.now, "node": w.cfg.ids[node] if node >= 0 else None, "at": at, **fields})
        if isinstance(event, core.Restart) and self.snapshots:
            self.events += self._snapshot(w, event.node)

    def step(self, i: int, before: core.World, event: Any, after: core.World, obs: tuple) -> None:
        ids = after.cfg.ids
        while self.snapshot_ms and after.now >= self.next_snapshot:  # taken between two events
            for j, up in enumerate(before.alive):
                if up:
                    self.events += [dict(d, t_ms=self.next_snapshot) for d in self._snapshot(before, j)]
            self.next_snapshot += self.snapshot_ms
        if world_line(after, event) is not None:
            self._fact(after, event)
            return
        if isinstance(event, core.Calm):  # the quiet tail: links heal, down nodes restart
            if before.net.cut:
                self._fact(after, core.Heal())
            for _, o in obs:
                if isinstance(o, core.Restart):
                    self._fact(after, o)
            return
        fact_line = getattr(self.lp, "fact_line", None)
        own = fact_line(before, event) if fact_line is not None else None
        if own is not None:  # a protocol's own fault (an HA connection reset)
            node, at, fields = own
            self.events.append({"t_ms": after.now, "node": ids[node], "at": at, **fields})
            return
        if isinstance(event, (core.CutLink, core.Duplicate)) or (isinstance(event, core.Crash) and event.disk):
            raise ValueError(f"{type(event).__name__} has no log line; use a profile without it")
        internal = getattr(self.lp, "INTERNAL_FIELDS", {})
        for node, at, fields in step_lines(self.lp, before, event, after, obs):
            for k in ("request", "response"):
                drop = internal.get(fields[k].get("type")) if isinstance(fields.get(k), dict) else None
                if drop:
                    fields = dict(fields, **{k: {f: v for f, v in fields[k].items() if f not in drop}})
            self.events.append({"t_ms": after.now, "node": ids[node], "at": at, **fields})
            if self.tag:
                self.events[-1]["_step"] = i

    def lines(self) -> list[dict]:
        return [self.header] + self.events

    def dump(self, out: IO[str]) -> None:
        for d in self.lines():
            out.write(json.dumps(d, separators=(",", ":")) + "\n")
