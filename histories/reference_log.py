"""The log the reference writes: the lines an implementation writes for each reference step,
at the protocol's log points (docs/conformance.md).

`step_lines` maps one reference step to its lines through the protocol's log-point table
(reference_impl/<protocol>/log_points.py): the network's (a send, a handler call, a
completion) and each node's own (`node_lines`: state changes, store writes, draws). The
tolerant checker (histories/tolerant) searches for reference executions whose lines are a
log; `LogWriter` writes the log of a reference history, which the tests then make realistic.
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import IO, Any

from histories.impl_log import SCHEMA, log_points
from reference_impl import core
from reference_impl.core import network as net_mod
from reference_impl.core.state import encode


# What a line is to the lines around it (step_lines(..., tagged=True)); the tolerant checker
# orders lines by these (docs/conformance.md, "What comes first"):
SEND = "send"  # a request sent: before its delivery
ANSWER = "answer"  # a handler's answer (with the request, or deferred): before its delivery
ARRIVAL = "arrival"  # a request taken, its answer deferred (logged before or after the handler filed it)
COMPLETION = "completion"  # a future completing: before what the node does with its answer
NODE = "node"  # a node's own line: a state change, a store write, a draw
INPUTS = (COMPLETION,)  # lines every later line of their node comes after


def handle_at(lp: ModuleType, w: core.World, env: Any) -> str | None:
    """The handler line a request delivered in `w` writes: the protocol's `handle_at` when it has
    one (a request refused before any handler runs writes none), else its HANDLE_AT table."""
    hook = getattr(lp, "handle_at", None)
    return hook(w, env) if hook is not None else lp.HANDLE_AT.get(type(env.msg).__name__)


def step_lines(lp: ModuleType, before: core.World, event: Any, after: core.World, obs: tuple, raw: bool = False,
               tagged: bool = False) -> list[tuple]:
    """The lines (node index, log point, fields) an implementation writes for one reference
    step: the network's (a send, a handler call, a completion) and each node's own
    (lp.node_lines); world facts (crash, restart, partition, cut, heal) are the log's own lines.
    `raw`: messages as the reference's records (hashable) instead of their JSON form;
    `tagged`: each line also says what it is (SEND, ANSWER, ARRIVAL, COMPLETION, NODE) and which
    envelope it carries (a send's or an answer's; -1 for the others)."""
    code = _same if raw else enc
    out: list[tuple] = []
    c = after.cfg.proto
    ids = after.cfg.ids
    by_node: dict[int, list] = {}
    for i, o in obs:
        by_node.setdefault(i, []).append(o)
    kind = type(event)
    fresh = [e for e in after.net.flight if e.id >= before.net.next_id]

    def own(i: int, on_tick: bool, draw: int) -> list[tuple]:
        return [(i, at, f, NODE, -1)
                for at, f in lp.node_lines(c, on_tick, before.nodes[i], after.nodes[i], by_node.get(i, []), draw)]

    if kind is core.Tick:
        i = event.node
        out += own(i, True, event.draw)
        out += _sends(lp, ids, fresh, i, code=code)
    elif kind is core.Deliver:
        env = net_mod.find(before.net, event.env)
        if env.reply:
            rpc = net_mod.find_rpc(before.net, env.rpc)
            i = env.dst
            if rpc is not None and before.alive[i]:
                at = lp.COMPLETE_AT.get(type(env.msg).__name__)
                if at is not None:
                    out.append((i, at, {"peer": ids[env.src], "response": code(env.msg)}, COMPLETION, -1))
                out += own(i, False, 0)
                out += _sends(lp, ids, fresh, i, code=code)
        elif before.alive[env.dst]:
            j = env.dst
            handled: dict = {"peer": ids[env.src], "request": code(env.msg)}
            carries = -1
            for e in fresh:
                if e.reply and e.rpc == env.rpc:
                    handled["response"] = code(e.msg)
                    carries = e.id
            at = handle_at(lp, before, env)
            out += own(j, False, 0)
            if at is not None:
                out.append((j, at, handled, ANSWER if carries >= 0 else ARRIVAL, carries))
            out += _sends(lp, ids, fresh, j, env.rpc, code=code)
    elif kind is core.RpcFail:
        rpc = net_mod.find_rpc(before.net, event.rpc)
        i = rpc.requester
        if before.alive[i]:
            reply = lp.failed_reply(rpc.ctx)
            if reply is not None:  # None: a failed call whose caller's own lines show it
                out.append((i, lp.COMPLETE_AT[type(reply).__name__],
                            {"peer": ids[rpc.responder], "response": code(reply)}, COMPLETION, -1))
            out += own(i, False, 0)
            out += _sends(lp, ids, fresh, i, code=code)
    elif getattr(lp, "ext_lines", None) is not None and kind not in core.FAULT_EVENTS + (core.Calm, core.Scripted):
        # a protocol's own world event (a TCP segment read): its lines are the nodes' own
        out += [(i, at, f, NODE, -1) for i, at, f in lp.ext_lines(before, event, after, obs)]
        for i in sorted({e.src for e in fresh if not e.reply}):  # requests it made a node send (an updateTopic's)
            out += _sends(lp, ids, fresh, i, code=code)
    return out if tagged else [x[:3] for x in out]


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
            at = lp.COMPLETE_AT.get(type(env.msg).__name__)
            return None if at is None else (env.dst, at, {"peer": ids[env.src], "response": enc(env.msg)})
        at = handle_at(lp, w, env)
        if at is None or not w.alive[env.dst]:
            return None
        return env.dst, at, {"peer": ids[env.src], "request": enc(env.msg)}
    if isinstance(event, core.RpcFail):
        rpc = net_mod.find_rpc(w.net, event.rpc)
        if not w.alive[rpc.requester]:
            return None
        reply = lp.failed_reply(rpc.ctx)
        if reply is None:
            return None
        return rpc.requester, lp.COMPLETE_AT[type(reply).__name__], {"peer": ids[rpc.responder], "response": enc(reply)}
    return None


def _sends(lp: ModuleType, ids: tuple[str, ...], fresh: list, i: int, answered: int = 0, code: Any = None
           ) -> list[tuple]:
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
                out.append((i, at, {"peer": ids[e.dst], "request": code(e.msg)}, SEND, e.id))
        elif e.rpc != answered:
            at = reply_at.get(type(e.msg).__name__)
            if at is not None:
                out.append((i, at, {"peer": ids[e.dst], "response": code(e.msg)}, ANSWER, e.id))
    return out


def world_line(w: core.World, event: Any, lp: ModuleType | None = None) -> tuple[int, str, dict] | None:
    """The log line of a world fact the reference applied (for logs written from histories); a
    protocol's own facts (`fact_line`: a topic created) first."""
    if lp is not None and hasattr(lp, "fact_line"):
        line = lp.fact_line(w, event)
        if line is not None:
            return line
    if isinstance(event, core.Crash) and not event.disk:
        return event.node, "crash", {"os": event.os}
    if isinstance(event, core.Restart):
        return event.node, "restart", {}
    if isinstance(event, core.Partition):
        return -1, "partition", {"groups": [[w.cfg.ids[i] for i in g] for g in event.groups]}
    if isinstance(event, core.CutLink):
        return -1, "cut", {"src": w.cfg.ids[event.src], "dst": w.cfg.ids[event.dst]}
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
        looser scheduler); `steps`: tag each line with the reference step that wrote it
        (`_step`), what the line is (`_kind`: step_lines' tags), the envelope it carries (`_env`)
        and the envelope its step delivered (`_gets`), for tests that move lines as an
        implementation's log would and no further;
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
        node, at, fields = world_line(w, event, self.lp)
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
        fact = world_line(after, event, self.lp)
        if fact is not None:
            self._fact(after, event)
            if fact[1] in getattr(self.lp, "FACTS_WRITE", ()):  # an operator's command: the requests it sends
                self._lines(i, before, event, after, obs)
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
        if isinstance(event, core.Duplicate) or (isinstance(event, core.Crash) and event.disk):
            raise ValueError(f"{type(event).__name__} has no log line; use a profile without it")
        self._lines(i, before, event, after, obs)

    def _lines(self, i: int, before: core.World, event: Any, after: core.World, obs: tuple) -> None:
        """The lines of one step as the log writes them (a fact's requests too)."""
        ids = after.cfg.ids
        internal = getattr(self.lp, "INTERNAL_FIELDS", {})
        gets = event.env if isinstance(event, core.Deliver) else -1
        for node, at, fields, kind, env in step_lines(self.lp, before, event, after, obs, tagged=True):
            for k in ("request", "response"):
                drop = internal.get(fields[k].get("type")) if isinstance(fields.get(k), dict) else None
                if drop:
                    fields = dict(fields, **{k: {f: v for f, v in fields[k].items() if f not in drop}})
            fields = {k: encode(v) if isinstance(v, tuple) else v for k, v in fields.items()}  # as JSON reads it
            self.events.append({"t_ms": after.now, "node": ids[node], "at": at, **fields})
            if self.tag:
                self.events[-1].update(_step=i, _kind=kind, _env=env, _gets=gets)

    def lines(self) -> list[dict]:
        return [self.header] + self.events

    def dump(self, out: IO[str]) -> None:
        for d in self.lines():
            out.write(json.dumps(d, separators=(",", ":")) + "\n")
