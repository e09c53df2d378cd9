"""Tolerant validation: search for a reference execution that explains an implementation log.

Theory of operation
-------------------
An implementation log (histories/impl_log.py, docs/conformance.md) records what happened
in the implementation's own terms. Validating it means finding a reference execution
(a sequence of world events) that writes it, the way TLA+ trace validation searches a
spec's behaviours for one that matches an etcd raft or CCF log.

The checker keeps a *frontier*: the reference executions (as search states) that explain
the log up to the current line. A search state is a world, the lines the reference has
written that the log has not shown yet (*pending*, each with the time the reference
wrote it), and per node how many draws it has written. For the next log line it tries,
from every frontier state:

1. a pending line that matches it (the oldest): the implementation wrote it later than
   the reference's order would suggest (a *reordering*, e.g. a handler thread logging
   while the maintainer is mid-round);
2. else a breadth-first search over reference events: ticks, deliveries, RPC failures
   and message drops that the reference enables, each at a time chosen to match the log,
   until an event writes the line. Events on the way that write nothing the log records
   are *hidden* (a round's parse tick, a reply to a finished round, a drop behind a cut
   link); lines they or the explaining event write besides the line go to pending, and
   must appear later in the log, within the slack of their time.

World facts (crash, restart, partition, heal) are applied when their line comes, whatever
the fault profile says. A `MemberState`-like snapshot line is explained by a state whose
node shows those fields. The states that explain the line, deduplicated, form the next
frontier.

Time is the implementation's clock. Its `t_ms` is an observation: the reference's time
of the event that writes a line may differ from it by the slack (`--slack-ms`, default 50
ms: thread scheduling, log-writing delay). The reference runs with Java timing plus the
same allowance on top of its own windows: a due tick may fire up to its loop period plus
the slack late (`Tick.late`), a message takes 0 to the declared maximum delay plus the
slack, an async RPC timeout fires within Netty's scan period (`RpcFail.late`); the search
picks the lateness that puts each event at its line's time. Lines with no `t_ms` only
constrain the order, within a window of lines. A logged draw (`nextInt(bound) = r`) is the
smallest tick draw that scales to r; an unlogged one is an unknown the search tries.

Bounds (`Options`): at most `max_depth` reference events between two log lines, at most
`max_states` search states expanded per line, at most `beam` executions kept between
lines. The report says how often each was hit; a log rejected after a bound was hit may
be explainable with a larger bound.
"""

from __future__ import annotations

import bisect
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import attrs

from histories import impl_log as il
from reference_impl import core
from reference_impl.core import faults
from reference_impl.core import network as net_mod

ANY_DRAW = core.DRAW_SPAN - 1
PROBES = (0, 1, 2, 3, ANY_DRAW)  # draws that tell whether a tick's outcome depends on its draw
CHECKPOINT_EVERY = 32  # lines between checkpoints the search may go back to
CHECKPOINTS = 8
WIDENINGS = 2  # how often the beam is widened (x4 each time) before a line is rejected
MAX_BEAM = 64
HIDDEN_LATE_MS = 5  # a tick that writes nothing fires at most this long after its own window (below)
TRAIL = 6  # reference events a state remembers, for reports
BACKTRACK = (32, 192)  # lines the search goes back at least when it widens the beam the first and second time


@attrs.define
class Options:
    slack_ms: int = 50
    max_depth: int = 6
    max_states: int = 3000
    beam: int = 4
    window: int = 400  # lines within which a line the reference wrote must appear when the log has no t_ms
    draw_grid: int = 32  # draws tried for an unlogged draw


@attrs.define
class Stats:
    reference_events: int = 0
    hidden_events: int = 0
    reordered_lines: int = 0
    late_ms_total: int = 0
    late_ms_max: int = 0
    skew_ms_max: int = 0
    draws_inferred: int = 0
    states_expanded: int = 0
    frontier_max: int = 0
    depth_bound_hits: int = 0
    state_bound_hits: int = 0
    beam_cuts: int = 0
    beam_widenings: int = 0


class State:
    """A reference execution explaining a log prefix. `key` identifies it for deduplication;
    the counters say how much of it was inferred (not part of the key)."""

    __slots__ = (
        "_hash",
        "_key",
        "_overdue",
        "draws",
        "drift",
        "events",
        "guessed",
        "hidden",
        "late",
        "pending",
        "reordered",
        "skew",
        "trail",
        "w",
    )

    def __init__(self, w: core.World, pending: tuple, draws: tuple, hidden: int = 0, reordered: int = 0,
                 late: int = 0, skew: int = 0, events: int = 0, trail: tuple = (), drift: int = 0,
                 guessed: int = 0) -> None:
        self.w, self.pending, self.draws = w, pending, draws
        self.hidden, self.reordered, self.late, self.skew, self.events = hidden, reordered, late, skew, events
        self.drift = drift  # the sum of |reference time - log time| over the lines explained
        self.guessed = guessed  # draws the log does not show
        self.trail = trail  # the last few reference events, for reports
        self._key = None
        self._hash = None
        self._overdue = None

    def but(self, **changes: Any) -> State:
        """A copy with some fields changed (the memoised key, hash and due ticks recomputed)."""
        fields = {name: getattr(self, name) for name in ("w", "pending", "draws", "hidden", "reordered", "late",
                                                          "skew", "events", "trail", "drift", "guessed")}
        fields.update(changes)
        return State(**fields)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(self.key())
        return self._hash

    def __eq__(self, other: object) -> bool:
        """Equal keys: the same times, node states (by hash), messages and pending lines. Two
        executions whose node states collide in their hashes would merge; with 64-bit hashes of
        a few thousand states that does not happen in practice."""
        return isinstance(other, State) and hash(self) == hash(other) and self.key() == other.key()

    def key(self) -> Any:
        """Envelope and RPC ids depend on the order in which independent events were taken,
        so the key leaves them out: two executions that differ only in that order merge."""
        if self._key is None:
            w = self.w
            net = w.net
            flight = frozenset((e.src, e.dst, _hash_of(e.msg), e.sent_ms, e.reply) for e in net.flight)
            rpcs = frozenset((r.requester, r.responder, r.deadline_ms, _hash_of(r.ctx), r.window) for r in net.rpcs)
            pending = tuple(sorted((lid, tau) for lid, tau, _ in self.pending))
            nodes = tuple(_hash_of(n) for n in w.nodes)
            self._key = (w.now, nodes, w.alive, flight, rpcs, net.cut, w.since, w.fresh, pending, self.draws)
        return self._key

    def score(self) -> tuple:
        return (self.drift, len(self.pending), self.events, self.hidden, self.late)


@attrs.define
class Result:
    accepted: bool
    lines: int
    explained: int  # lines explained in a row from the start
    seconds: float
    stats: Stats
    options: Options
    failing: il.LogLine | None = None
    reason: str = ""
    candidates: list = attrs.Factory(list)
    best: State | None = None

    def summary(self, ids: tuple[str, ...]) -> dict:
        s = self.stats
        out = {
            "ok": self.accepted, "lines": self.lines, "explained": self.explained, "seconds": round(self.seconds, 3),
            "inferred": {"reference_events": s.reference_events, "hidden_events": s.hidden_events,
                         "reordered_lines": s.reordered_lines, "draws_inferred": s.draws_inferred,
                         "late_ms_total": s.late_ms_total, "late_ms_max": s.late_ms_max,
                         "skew_ms_max": s.skew_ms_max},
            "search": {"states_expanded": s.states_expanded, "frontier_max": s.frontier_max,
                       "depth_bound_hits": s.depth_bound_hits, "state_bound_hits": s.state_bound_hits,
                       "beam_cuts": s.beam_cuts, "beam_widenings": s.beam_widenings},
            "bounds": attrs.asdict(self.options),
        }
        if not self.accepted:
            out["failing_line"] = None if self.failing is None else {
                "line": self.failing.line, "t_ms": self.failing.raw.get("t_ms"), "text": self.failing.raw}
            out["reason"] = self.reason
            out["candidates"] = self.candidates
        return out


    def text(self, log: il.ImplLog) -> str:
        """The verdict for people: what was inferred, or where and why the search failed."""
        s, o = self.stats, self.options
        bounds = (f"slack {o.slack_ms} ms, at most {o.max_depth} reference events and {o.max_states} states per "
                  f"line, beam {o.beam}" + (f" (widened {s.beam_widenings} times)" if s.beam_widenings else ""))
        if self.accepted:
            accepted = (f"check-trace: ACCEPTED: the {self.lines} lines of this {log.protocol} log are explained by "
                        f"{s.reference_events} reference events ({self.seconds:.2f} s)")
            inferred = (f"  inferred: {s.hidden_events} hidden events, {s.reordered_lines} lines logged after a later "
                        f"event of the reference, {s.draws_inferred} unlogged draws, {s.late_ms_total} ms of loop "
                        f"lateness; the log's t_ms differ from the reference's by {s.skew_ms_max} ms at most")
            search = f"  search: {s.states_expanded} states expanded, frontier <= {s.frontier_max}; bounds: {bounds}"
            return f"{accepted}\n{inferred}\n{search}"
        where = (f"at line {self.failing.line} (t_ms={self.failing.raw.get('t_ms')})" if self.failing is not None
                 else "at the end of the log")
        head = (f"check-trace: REJECTED {where}, after {self.explained} of {self.lines} lines were explained "
                f"({self.seconds:.2f} s)")
        out = [head]
        if self.failing is not None:
            out.append(f"  {self.failing.describe(log.ids)}")
        out.append(f"  {self.reason}")
        for k, c in enumerate(self.candidates, 1):
            nodes = "; ".join(
                f"{n} " + ("down" if st.get("alive") is False else
                           f"{st.get('role')} term {st.get('term')} voted {st.get('voted_for')} leader {st.get('leader')}")
                for n, st in c["nodes"].items())
            out.append(f"  closest execution {k} (reference at t_ms={c['t_ms']}): {nodes}")
            if c["last_events"]:
                out.append(f"    its last events: {', '.join(c['last_events'])}")
            for p in c["pending"]:
                out.append(f"    written, not yet in the log: {p}")
            for need in c["needed"]:
                out.append(f"    near miss: {need}")
        out.append(f"  search: {s.states_expanded} states expanded; bounds: {bounds}")
        return "\n".join(out)


# --- the reference under the implementation's scheduler ---

_TOLERANT: dict[tuple[str, int], str] = {}


def tolerant_protocol(name: str, slack: int) -> str:
    """The protocol `name` with every tick's window widened by `slack` ms (Java's loop period
    plus a scheduling allowance), registered under a name of its own; the node transitions
    are the protocol's own."""
    key = (name, slack)
    if key not in _TOLERANT:
        p = core.protocol(name)
        own = p.tick_slack

        def tick_slack(c: Any, n: Any, since: int, own: Callable | None = own) -> int:
            return (own(c, n, since) if own is not None else 0) + slack

        derived = f"{name}+slack{slack}"
        wrapped = p.evolve(name=derived, tick_slack=tick_slack)
        core.register(derived, lambda wrapped=wrapped: wrapped)
        _TOLERANT[key] = derived
    return _TOLERANT[key]


def world_config(log: il.ImplLog, opts: Options) -> core.WorldConfig:
    prof = faults.FaultProfile(name="tolerant", delay_ms=(0, log.delay_ms[1] + opts.slack_ms), timing="java",
                               description="the implementation's scheduler: Java timing plus the slack")
    return log.cfg.evolve(protocol=tolerant_protocol(log.cfg.protocol, opts.slack_ms), profile=prof)


# --- the search ---


class Checker:
    def __init__(self, log: il.ImplLog, opts: Options | None = None,
                 progress: Callable[[int, int], None] | None = None) -> None:
        self.log = log
        self.opts = opts or Options()
        self.lp = il.log_points(log.protocol)
        self.cfg = world_config(log, self.opts)
        self.own_slack = core.protocol(log.cfg.protocol).tick_slack
        self.progress = progress
        self.stats = Stats()
        self.lines = log.lines
        self.n = len(self.lines)
        ids = self.cfg.ids
        self.ids = ids
        # (node, at) -> positions, for looking ahead
        self.by_point: dict[tuple[int, str], list[int]] = {}
        for ln in self.lines:
            self.by_point.setdefault((ln.node, ln.at), []).append(ln.pos)
        self.draw_logged = self.lp.NEXT_INT in log.points
        self.draw_lines: list[list[il.LogLine]] = [[] for _ in ids]
        for ln in self.lines:
            if ln.at == self.lp.NEXT_INT and "bound" in ln.fields and "r" in ln.fields:
                self.draw_lines[ln.node].append(ln)
        self.t_last = max((ln.t for ln in self.lines if ln.t is not None), default=None)
        self.interned: dict[tuple, int] = {}
        self.written: list[tuple[int, str, dict]] = []
        self.match_memo: dict[tuple[int, int], bool] = {}
        self.points = log.points
        self.thread_of = {at: p.thread for at, p in self.lp.POINTS.items()}
        self.maintainer_times: list[list[int]] = [[] for _ in ids]
        for ln in self.lines:  # the times of each node's lines that its own threads write (not a handler's)
            if ln.t is not None and ln.node >= 0 and self.thread_of.get(ln.at) not in ("handler", "callback"):
                self.maintainer_times[ln.node].append(ln.t)
        self.near: list = []
        self.hidden_memo: dict[tuple[int, int], tuple[State, bool]] = {}

    # lines the reference writes, interned so that pending tuples hash cheaply
    def intern(self, line: tuple[int, str, dict]) -> int:
        """The id of a line the reference writes (its messages still records, so hashable)."""
        node, at, fields = line
        k = (node, at, tuple(fields.items()))
        lid = self.interned.get(k)
        if lid is None:
            lid = self.interned[k] = len(self.written)
            self.written.append((node, at, {f: il.enc(v) if attrs.has(type(v)) else v for f, v in fields.items()}))
        return lid

    def matches(self, pos: int, lid: int) -> bool:
        k = (pos, lid)
        r = self.match_memo.get(k)
        if r is None:
            ln = self.lines[pos]
            node, at, fields = self.written[lid]
            r = self.match_memo[k] = node == ln.node and at == ln.at and il.subset(ln.fields, fields)
        return r

    def on_time(self, t: int | None, tau: int) -> bool:
        return t is None or abs(tau - t) <= self.opts.slack_ms

    def feasible(self, pos: int, lid: int, tau: int) -> bool:
        """Whether a line the reference wrote at `tau` can still appear after position `pos`."""
        node, at, _ = self.written[lid]
        slack = self.opts.slack_ms
        for p in self.by_point.get((node, at), ()):
            if p <= pos:
                continue
            ln = self.lines[p]
            if ln.t is not None:
                if ln.t > tau + slack:
                    break
                if ln.t < tau - slack:
                    continue
            elif p > pos + self.opts.window:
                break
            if self.matches(p, lid):
                return True
        return self.cut_off(pos, tau)

    def cut_off(self, pos: int, tau: int) -> bool:
        """The log may have ended before the implementation wrote a line the reference wrote at `tau`."""
        if self.t_last is not None:
            return tau >= self.t_last - self.opts.slack_ms
        return pos + self.opts.window >= self.n

    def expired(self, s: State, ln: il.LogLine) -> int | None:
        """A pending line that can no longer appear when the log has reached line `ln`."""
        if ln.t is None:
            for lid, tau, born in s.pending:
                if ln.pos - born > self.opts.window:
                    return lid
            return None
        for lid, tau, born in s.pending:
            if tau + self.opts.slack_ms < ln.t:
                return lid
        return None

    # --- firing one reference event at the time the log wants ---

    def lines_of(self, before: core.World, ev: Any, after: core.World, obs: tuple) -> list[int]:
        """The ids of the lines a step writes, at the log points the implementation writes."""
        points = self.points
        return [self.intern(x) for x in il.step_lines(self.lp, before, ev, after, obs, raw=True) if x[1] in points]

    def fire(self, s: State, ev: Any, pos: int, line_t: int | None) -> list[tuple[core.World, list[int], Any, bool]]:
        """The successor worlds for one enabled event, with the lines each writes and the event
        with its chosen time (and draw); one per draw tried when a tick's draw is unknown."""
        w = s.w
        if isinstance(ev, core.Tick):
            i = ev.node
            lo, hi = core.tick_window(w, i)
            if lo > hi:
                return []
            wake = core.wake_times(w)[i]
            out = []
            for draw, inferred in self.draws_for(s, i, pos, lo):
                def make(late: int, draw: int = draw) -> tuple[core.World, Any]:
                    return w, core.Tick(node=i, draw=draw, late=late)
                out += [x + (inferred,) for x in self._timed(pos, make, lo, hi, wake, line_t)]
            return out
        if isinstance(ev, core.RpcFail):
            lo, hi = core.rpc_window(w, ev.rpc)
            if lo > hi:
                return []
            deadline = net_mod.find_rpc(w.net, ev.rpc).deadline_ms
            target = self.predicted(w, ev, pos, deadline + lo, deadline + hi)
            if target is False:
                return []
            return [x + (False,) for x in self._timed(
                pos, lambda late: (w, core.RpcFail(rpc=ev.rpc, late=late)), lo, hi, deadline, line_t, target)]
        if isinstance(ev, core.Deliver):
            env = net_mod.find(w.net, ev.env)
            earliest = max(w.now, env.sent_ms + core.delay_window(w)[0])
            latest = max(earliest, core.horizon(w))
            target = self.predicted(w, ev, pos, earliest, latest)
            if target is False:
                return []

            def make_delivery(late: int) -> tuple[core.World, Any]:
                return (w.evolve(now=earliest + late) if late else w), ev
            return [x + (False,) for x in self._timed(pos, make_delivery, 0, latest - earliest, earliest, line_t,
                                                      target)]
        after, obs = core.step(w, ev)
        return [(after, self.lines_of(w, ev, after, obs), ev, False)]

    def predicted(self, w: core.World, ev: Any, pos: int, earliest: int, latest: int) -> Any:
        """For a delivery or an RPC failure: False if the line it will write cannot be in the log
        then (so it need not be taken now), else the time of the log line it will be, or None."""
        pred = il.predict(self.lp, w, ev)
        if pred is None or pred[1] not in self.points:
            return None
        node, at, known = pred
        slack = self.opts.slack_ms
        for p in self.by_point.get((node, at), ()):
            if p < pos:
                continue
            ln = self.lines[p]
            if ln.t is None:
                if p > pos + self.opts.window:
                    break
            elif ln.t > latest + slack:
                break
            elif ln.t < earliest - slack:
                continue
            if all(k not in ln.fields or il.subset(ln.fields[k], v) for k, v in known.items()):
                return ln.t
        return None if self.cut_off(pos, earliest) else False

    def _timed(self, pos: int, make: Callable[[int], tuple[core.World, Any]], lo: int, hi: int, base: int,
               line_t: int | None, target: int | None = None) -> list[tuple[core.World, list[int], Any]]:
        """Step at the earliest time the event's window allows; if the first line it writes
        appears in the log later, step again at that line's time (within the window). An
        event that writes nothing at its earliest time is tried at the time of the line being
        explained as well, since what it writes may depend on when it happens (a leader steps
        down only once its lease has run out)."""
        if target is not None:
            before, ev = make(min(hi, max(lo, target - base)))
            after, obs = core.step(before, ev)
            return [(after, self.lines_of(before, ev, after, obs), ev)]
        before, ev = make(lo)
        after, obs = core.step(before, ev)
        lids = self.lines_of(before, ev, after, obs)
        if hi <= lo:
            return [(after, lids, ev)]
        if lids:
            target = self.target_time(pos, lids[0], base + lo, base + hi)
            if target is not None:
                late = min(hi, max(lo, target - base))
                if late != lo:
                    before, ev = make(late)
                    after, obs = core.step(before, ev)
                    lids = self.lines_of(before, ev, after, obs)
            return [(after, lids, ev)]
        out = [(after, lids, ev)]
        if line_t is not None:
            late = min(hi, max(lo, line_t - base))
            if late != lo:
                before2, ev2 = make(late)
                after2, obs2 = core.step(before2, ev2)
                lids2 = self.lines_of(before2, ev2, after2, obs2)
                if lids2:
                    out.append((after2, lids2, ev2))
        return out

    def target_time(self, pos: int, lid: int, earliest: int, latest: int) -> int | None:
        """The time of the first line from `pos` on that the line `lid` may be, near [earliest, latest]."""
        node, at, _ = self.written[lid]
        slack = self.opts.slack_ms
        for p in self.by_point.get((node, at), ()):
            if p < pos:
                continue
            ln = self.lines[p]
            if ln.t is None:
                return None
            if ln.t > latest + slack:
                return None
            if ln.t >= earliest - slack and self.matches(p, lid):
                return ln.t
        return None

    def draws_for(self, s: State, i: int, pos: int, lo: int) -> list[tuple[int, bool]]:
        """The draws to try for node i's tick: the next draw the log shows for it (the smallest
        draw that scales to its r), or, when the log does not show one, unknowns."""
        w = s.w
        if self.draw_logged and self.lp.logs_draws(w.nodes[i]):
            k = s.draws[i]
            if k < len(self.draw_lines[i]):
                f = self.draw_lines[i][k].fields
                return [((f["r"] * core.DRAW_SPAN + f["bound"] - 1) // f["bound"], False)]
            return [(0, False)]  # the log shows no more draws of this node: it must not draw (or the log ends)
        probes = []
        for d in PROBES:
            ev = core.Tick(node=i, draw=d, late=lo)
            after, obs = core.step(w, ev)
            probes.append((after.nodes[i], tuple(self.lines_of(w, ev, after, obs))))
        if all(p == probes[0] for p in probes[1:]):
            return [(0, False)]  # this tick draws nothing (or nothing that matters)
        return self.unknown_draws(s, i, pos, lo)

    def unknown_draws(self, s: State, i: int, pos: int, lo: int) -> list[tuple[int, bool]]:
        """An unlogged draw: one draw for each different set of lines the tick may write (a
        client's choice of server), the one that puts the node's next wake-up nearest its next
        maintainer-thread line in the log, and the largest."""
        w = s.w
        nxt = None
        for ln in self.lines[pos:pos + self.opts.window]:
            if ln.node == i and self.thread_of.get(ln.at) == "maintainer" and ln.t is not None and ln.t > w.now:
                nxt = ln.t
                break
        grid = self.opts.draw_grid
        draws = sorted(set(PROBES) | {ANY_DRAW * k // (grid - 1) for k in range(grid)})
        best: dict[tuple, tuple[int, int]] = {}
        for d in draws:
            ev = core.Tick(node=i, draw=d, late=lo)
            after, obs = core.step(w, ev)
            key = tuple(self.lines_of(w, ev, after, obs))
            wake = core.wake_times(after)[i]
            score = abs(wake - nxt) if nxt is not None and wake >= 0 else (0 if d == ANY_DRAW else 1)
            if key not in best or score < best[key][0]:
                best[key] = (score, d)
        chosen = {d for _, d in best.values()} | {ANY_DRAW}
        return [(d, True) for d in sorted(chosen)]

    # --- explaining one line ---

    def goal(self, s: State, ln: il.LogLine) -> State | None:
        """For a world fact or a snapshot line: the state that explains it from `s`, if any."""
        w = s.w
        slack = self.opts.slack_ms
        h = core.horizon(w)
        if ln.at == self.lp.SNAPSHOT:
            if ln.t is not None and 0 <= h < ln.t - slack:
                return None  # the reference has due work before the snapshot was taken
            if not w.alive[ln.node]:
                return None
            shown = self.lp.snapshot(w.cfg.proto, w.nodes[ln.node], True)
            return s if shown is not None and il.subset(ln.fields["state"], shown) else None
        tau = w.now
        if ln.t is not None:
            tau = max(w.now, ln.t if h < 0 else min(ln.t, h))
            if abs(tau - ln.t) > slack:
                return None
        ev = self.fact(w, ln)
        if ev is None:
            return None
        after, _ = core.step(w.evolve(now=tau) if tau > w.now else w, ev)
        d = _skew(ln.t, tau)
        return s.but(w=after, skew=max(s.skew, d), events=s.events + 1, trail=(s.trail + ((w, ln.at),))[-TRAIL:],
                     drift=s.drift + d)

    def fact(self, w: core.World, ln: il.LogLine) -> Any:
        if ln.at == "crash":
            return core.Crash(node=ln.node, os=bool(ln.fields.get("os"))) if w.alive[ln.node] else None
        if ln.at == "restart":
            return core.Restart(node=ln.node) if not w.alive[ln.node] else None
        if ln.at == "partition":
            return core.Partition(groups=tuple(tuple(g) for g in ln.fields["groups"]))
        if ln.at == "heal":
            return core.Heal()
        return None

    def explain(self, s: State, ln: il.LogLine) -> list[State]:
        pos = ln.pos
        is_event = ln.at in self.lp.POINTS
        if is_event:
            for k, (lid, tau, _) in enumerate(s.pending):
                if self.matches(pos, lid) and self.on_time(ln.t, tau):
                    d = _skew(ln.t, tau)
                    return [s.but(pending=s.pending[:k] + s.pending[k + 1:], reordered=s.reordered + 1,
                                  skew=max(s.skew, d), drift=s.drift + d)]
        opts = self.opts
        slack = opts.slack_ms
        goals: list[State] = []
        queue = deque([(s, 0)])
        seen = {s}
        first_goal_depth = opts.max_depth
        expanded = 0
        while queue:
            st, depth = queue.popleft()
            if not is_event:
                g = self.goal(st, ln)
                if g is not None:
                    goals.append(g)
                    first_goal_depth = min(first_goal_depth, depth)
                    if ln.at == self.lp.SNAPSHOT:
                        continue  # events after a snapshot can as well be taken when their lines come
                    # a fact may come before or after an event due at the same time (a restart
                    # and a request to the restarted node): try both orders
            if goals and depth > first_goal_depth:
                continue
            if depth >= opts.max_depth:
                self.stats.depth_bound_hits += 1
                continue
            if expanded >= opts.max_states:
                self.stats.state_bound_hits += 1
                break
            expanded += 1
            w = st.w
            if ln.t is not None and w.now > ln.t + slack:
                continue
            root = st
            for ev in self.candidates(root, ln):
                for st, after, lids, fired, inferred in self.fire_settled(root, ev, pos, ln.t):
                    tau = after.now
                    if ln.t is not None and tau > ln.t + slack:
                        continue
                    pending = list(st.pending)
                    draws = st.draws
                    consumed = False
                    skew = st.skew
                    drift = st.drift
                    ok = True
                    for lid in lids:
                        node, at, _ = self.written[lid]
                        if at == self.lp.NEXT_INT:
                            draws = draws[:node] + (draws[node] + 1,) + draws[node + 1:]
                        if is_event and not consumed and self.matches(pos, lid):
                            if self.on_time(ln.t, tau):
                                consumed = True
                                skew = max(skew, _skew(ln.t, tau))
                                drift += _skew(ln.t, tau)
                                continue
                            self.miss(s, st, fired, lid, f"at t={tau}, the log's t={ln.t} is beyond the slack")
                        if is_event and node == ln.node and at == ln.at:
                            self.miss(s, st, fired, lid, None)
                        if not self.feasible(pos, lid, tau):
                            self.miss(s, st, fired, lid, "the log does not show it then")
                            ok = False
                            break
                        pending.append((lid, tau, pos))
                    if not ok:
                        continue
                    late = getattr(fired, "late", 0)
                    ns = State(after, tuple(pending), draws, st.hidden + (not lids), st.reordered, st.late + late,
                               skew, st.events + 1, (st.trail + ((st.w, fired),))[-TRAIL:], drift,
                               st.guessed + inferred)
                    if ns in seen:
                        continue
                    seen.add(ns)
                    if consumed:
                        goals.append(ns)
                        first_goal_depth = min(first_goal_depth, depth + 1)
                    elif not lids and (isinstance(fired, core.Drop) or self.closes_at(st.w, fired, core.horizon(st.w))):
                        # it writes nothing (a drop behind a cut link, a round's parse, a flush) and
                        # the reference must take it before anything later: it costs no depth
                        queue.appendleft((ns, depth))
                    else:
                        queue.append((ns, depth + 1))
        self.stats.states_expanded += expanded
        return goals

    def candidates(self, s: State, ln: il.LogLine) -> list:
        """The events worth taking before line `ln`: those that act on its node (its ticks, the
        messages to it, the replies to its requests, its RPCs' failures), and those the
        reference must take next anyway (their window closes at the horizon). Any other event
        commutes with these and is taken when its own line comes."""
        w = s.w
        x = ln.node
        h = core.horizon(w)
        out = []
        for ev in core.protocol_events(w):
            if isinstance(ev, core.Tick):
                if ev.node == x or self.closes_at(w, ev, h) or self.imminent(ev.node, ln):
                    out.append(ev)
            elif isinstance(ev, core.Drop):
                out.append(ev)  # a message lost behind a cut link: costs no depth
            elif isinstance(ev, core.Deliver):
                env = net_mod.find(w.net, ev.env)
                if (env.dst == x or env.src == x or self.closes_at(w, ev, h)) and self.oldest(w, env):
                    out.append(ev)
            elif isinstance(ev, core.RpcFail):
                rpc = net_mod.find_rpc(w.net, ev.rpc)
                if (rpc.requester == x or rpc.responder == x or self.closes_at(w, ev, h)) and self.first_to_fail(w, rpc):
                    out.append(ev)
            else:
                out.append(ev)
        return out

    def due_by(self, s: State) -> list[tuple[int, int]]:
        """For each node whose tick is enabled: the time by which it must have fired if it writes
        nothing (its wake time plus the protocol's own loop slack, not the allowance, plus
        HIDDEN_LATE_MS). The allowance lets a tick be late when its lines show it was; a tick
        that writes nothing (a round's parse, a loop that finds nothing to do) is taken on time,
        before another node's event moves the clock past it, or the search would explain a log
        with the reference's rounds shifted by one (each within the slack)."""
        if s._overdue is None:
            w = s.w
            out = []
            own_slack = self.own_slack
            for j, wake in enumerate(core.wake_times(w)):
                if wake < 0:
                    continue
                lo, hi = core.tick_window(w, j)
                if lo > hi:
                    continue
                own = own_slack(w.cfg.proto, w.nodes[j], w.since[j]) if own_slack is not None else 0
                if j in w.fresh:
                    own = max(own, w.cfg.profile.stagger_ms)
                out.append((j, wake + own + HIDDEN_LATE_MS))
            s._overdue = out
        return s._overdue

    def hidden_tick(self, s: State, j: int) -> bool:
        """Whether node j's due tick writes nothing (memoised per state and node)."""
        k = (id(s), j)
        hit = self.hidden_memo.get(k)
        if hit is None or hit[0] is not s:
            w = s.w
            ev = core.Tick(node=j, draw=0, late=core.tick_window(w, j)[0])
            after, obs = core.step(w, ev)
            if len(self.hidden_memo) > 4096:
                self.hidden_memo.clear()
            hit = self.hidden_memo[k] = (s, not self.lines_of(w, ev, after, obs))
        return hit[1]

    def overdue_at(self, s: State, t: int, actor: int = -1) -> list[int]:
        """The nodes (but `actor`) whose ticks write nothing and must have fired before `t`."""
        return [j for j, by in self.due_by(s) if j != actor and by < t and self.hidden_tick(s, j)]

    def actor(self, w: core.World, ev: Any) -> int:
        """The node an event acts on (-1: none)."""
        if isinstance(ev, core.Tick):
            return ev.node
        if isinstance(ev, core.Deliver):
            return net_mod.find(w.net, ev.env).dst
        if isinstance(ev, core.RpcFail):
            return net_mod.find_rpc(w.net, ev.rpc).requester
        return -1

    def fire_settled(self, s: State, ev: Any, pos: int, line_t: int | None) -> list:
        """`fire`, but an event that moves the clock past another node's due tick that writes
        nothing is taken after that tick (`settle`): (the state it was taken from, world after,
        lines, event, inferred draw) for each choice."""
        out = []
        for after, lids, fired, inferred in self.fire(s, ev, pos, line_t):
            tau = after.now
            actor = self.actor(s.w, fired)
            if tau <= s.w.now or not self.overdue_at(s, tau, actor):
                out.append((s, after, lids, fired, inferred))
                continue
            settled = self.settle(s, tau, actor)
            if settled is None:
                continue
            for after2, lids2, fired2, inferred2 in self.fire(settled, ev, pos, line_t):
                if after2.now <= settled.w.now or not self.overdue_at(settled, after2.now, actor):
                    out.append((settled, after2, lids2, fired2, inferred2))
        return out

    def settle(self, s: State, tau: int, actor: int) -> State | None:
        """Take, in the order they fall due, the ticks of nodes other than `actor` that write
        nothing and are due before `tau`, each at its earliest time."""
        for _ in range(4 * len(self.ids)):
            due = [(by, j) for j, by in self.due_by(s) if j != actor and by < tau and self.hidden_tick(s, j)]
            if not due:
                return s
            _, j = min(due)
            w = s.w
            ev = core.Tick(node=j, draw=0, late=core.tick_window(w, j)[0])
            after, obs = core.step(w, ev)
            if self.lines_of(w, ev, after, obs):
                return None
            s = s.but(w=after, hidden=s.hidden + 1, late=s.late + ev.late, events=s.events + 1,
                      trail=(s.trail + ((w, ev),))[-TRAIL:])
        return None

    def oldest(self, w: core.World, env: Any) -> bool:
        """Of identical messages in flight on one link (a candidate's repeated requests), the
        oldest is delivered first: the handler writes the same line for each, and TCP keeps
        their order; taking them in any order would only multiply the executions."""
        for e in w.net.flight:
            if e.id < env.id and e.src == env.src and e.dst == env.dst and e.reply == env.reply and e.msg == env.msg:
                return False
        return True

    def first_to_fail(self, w: core.World, rpc: Any) -> bool:
        """Of the open RPCs between two nodes whose failure writes the same line, the one with the
        earliest deadline fails first (Netty's scan expires them in that order or at once)."""
        for r in w.net.rpcs:
            if (r.requester == rpc.requester and r.responder == rpc.responder and type(self.lp.failed_reply(r.ctx)) is type(self.lp.failed_reply(rpc.ctx))
                    and (r.deadline_ms, r.id) < (rpc.deadline_ms, rpc.id)
                    and core.rpc_window(w, r.id)[0] <= core.rpc_window(w, r.id)[1]):
                return False
        return True

    def imminent(self, j: int, ln: il.LogLine) -> bool:
        """Whether node j's own thread writes a line within the slack of line `ln` (its tick may
        have to come first: its request may reach ln's node before ln's event)."""
        times = self.maintainer_times[j]
        if ln.t is None:
            return True
        k = bisect.bisect_left(times, ln.t - self.opts.slack_ms)
        return k < len(times) and times[k] <= ln.t + self.opts.slack_ms

    def closes_at(self, w: core.World, ev: Any, h: int) -> bool:
        """Whether the event's window closes at the horizon: the reference must take it (or
        another such event) before anything later."""
        if isinstance(ev, core.Tick):
            j = ev.node
            own = self.own_slack(w.cfg.proto, w.nodes[j], w.since[j]) if self.own_slack is not None else 0
            if j in w.fresh:
                own = max(own, w.cfg.profile.stagger_ms)
            return core.wake_times(w)[j] + own + self.opts.slack_ms <= h
        if isinstance(ev, (core.Deliver, core.Drop)):
            env = net_mod.find(w.net, ev.env)
            return env.sent_ms + core.delay_window(w)[1] <= h
        if isinstance(ev, core.RpcFail):
            rpc = net_mod.find_rpc(w.net, ev.rpc)
            return rpc.deadline_ms + rpc.window <= h
        return True

    def miss(self, root: State, s: State, ev: Any, lid: int, why: str | None) -> None:
        """Remember a near miss for the report: from frontier state `root`, an event taken in
        state `s` writes a line like the failing one (`why` None: it differs in its fields)."""
        mine = [n for n in self.near if n[0] is root]
        if len(mine) < 6 and not any(n[3] == lid and n[4] == why for n in mine):
            self.near.append((root, s, ev, lid, why))

    # --- the whole log ---

    def run(self, stop: int | None = None) -> Any:
        """Explain the lines one by one, keeping the `beam` best executions. When none explains
        a line, go back to a checkpoint and try again with a beam four times as wide (twice at
        most), since the execution that explains it may have been cut."""
        start = time.perf_counter()
        opts = self.opts
        frontier = [State(core.init(self.cfg), (), (0,) * len(self.ids))]
        checkpoints: list[tuple[int, list[State]]] = []
        beam, level, wide_until = opts.beam, 0, -1
        pos = 0
        explained = 0
        while pos < self.n:
            if pos == stop:
                return frontier  # for debugging: the executions that explain the lines before `stop`
            ln = self.lines[pos]
            if pos % CHECKPOINT_EVERY == 0 and (not checkpoints or checkpoints[-1][0] < pos):
                checkpoints = (checkpoints + [(pos, frontier)])[-CHECKPOINTS:]
            if self.progress is not None and pos % 500 == 0:
                self.progress(pos, self.n)
            self.near = []
            nxt: dict[Any, State] = {}
            dead: list[tuple[State, str]] = []
            for s in frontier:
                gone = self.expired(s, ln)
                if gone is not None:
                    why = f"the reference wrote {self.describe_lid(gone)} and the log does not show it within the slack"
                    dead.append((s, why))
                    continue
                for g in self.explain(s, ln):
                    old = nxt.get(g)
                    if old is None or g.score() < old.score():
                        nxt[g] = g
            if not nxt:
                if level < WIDENINGS and checkpoints:
                    level += 1
                    back = [c for c in checkpoints if c[0] <= pos - BACKTRACK[level - 1]] or checkpoints[:1]
                    pos, frontier = back[-1]
                    beam = min(opts.beam * 4 ** level, MAX_BEAM)
                    wide_until = max(wide_until, ln.pos + CHECKPOINT_EVERY)
                    self.stats.beam_widenings += 1
                    checkpoints = [c for c in checkpoints if c[0] <= pos]
                    continue
                return self.reject(frontier, ln, dead, start)
            states = sorted(nxt.values(), key=State.score)
            if len(states) > beam:
                self.stats.beam_cuts += 1
            frontier = states[:max(beam, 1)]
            if pos % CHECKPOINT_EVERY == CHECKPOINT_EVERY - 1:
                frontier_kept = states[:MAX_BEAM]
                checkpoints = (checkpoints + [(pos + 1, frontier_kept)])[-CHECKPOINTS:]
            self.stats.frontier_max = max(self.stats.frontier_max, len(frontier))
            pos += 1
            explained = max(explained, pos)
            if pos > wide_until and level:
                beam, level = opts.beam, 0
        finished = [s for s in frontier if all(self.cut_off(self.n, tau) for _, tau, _ in s.pending)]
        if not finished:
            s = frontier[0]
            lid, tau, _ = next(p for p in s.pending if not self.cut_off(self.n, p[1]))
            return Result(accepted=False, lines=self.n, explained=explained, seconds=time.perf_counter() - start,
                          stats=self.stats, options=self.opts, failing=None,
                          reason=f"the log ends, but the reference wrote {self.describe_lid(lid)} at "
                                 f"t={tau + self.log.origin} and the log never shows it",
                          candidates=[self.candidate(x, []) for x in frontier[:3]])
        best = min(finished, key=State.score)
        st = self.stats
        st.reference_events, st.hidden_events, st.reordered_lines = best.events, best.hidden, best.reordered
        st.late_ms_total, st.skew_ms_max, st.draws_inferred = best.late, best.skew, best.guessed
        return Result(accepted=True, lines=self.n, explained=self.n, seconds=time.perf_counter() - start,
                      stats=st, options=self.opts, best=best)

    def reject(self, frontier: list[State], ln: il.LogLine, dead: list, start: float) -> Result:
        bounds = []
        if self.stats.state_bound_hits:
            bounds.append(f"the state bound ({self.opts.max_states} per line) was hit")
        if self.stats.depth_bound_hits:
            bounds.append(f"the depth bound ({self.opts.max_depth} events per line) was hit")
        reason = f"nothing in the reference explains {ln.describe(self.ids)}"
        if dead and len(dead) == len(frontier):
            reason = dead[0][1]
        if bounds:
            reason += " (" + "; ".join(bounds) + ": a larger bound might explain it)"
        self.failing_pos = ln.pos
        cands = [self.candidate(s, [n for n in self.near if n[0] is s]) for s in frontier[:3]]
        return Result(accepted=False, lines=self.n, explained=ln.pos, seconds=time.perf_counter() - start,
                      stats=self.stats, options=self.opts, failing=ln, reason=reason, candidates=cands)

    # --- reports ---

    def nearest(self, lid: int, tau: int) -> str:
        """Where the log has the line most like `lid` (same node and log point, nearest in time)."""
        node, at, fields = self.written[lid]
        best = None
        for p in self.by_point.get((node, at), ()):
            ln = self.lines[p]
            gap = abs(ln.t - tau) if ln.t is not None else abs(p - self.failing_pos)
            if best is None or gap < best[0]:
                best = (gap, ln)
        if best is None:
            return f"; the log has no {at} line of {self.ids[node] if node >= 0 else 'the world'}"
        ln = best[1]
        diff = il.differences(ln.fields, fields)
        where = f"; the nearest in the log, line {ln.line} (t_ms={ln.raw.get('t_ms')})"
        return where + (", differs: " + "; ".join(diff) if diff else ", is the same line at another time")

    def describe_lid(self, lid: int) -> str:
        node, at, fields = self.written[lid]
        who = self.ids[node] if node >= 0 else "world"
        body = ", ".join(f"{k}={il._short(v)}" for k, v in fields.items())
        return f"{who} {at} {body}".rstrip()

    def describe_event(self, w: core.World, ev: Any) -> str:
        ids = self.ids
        if isinstance(ev, core.Tick):
            return f"tick {ids[ev.node]} (draw {ev.draw}, late {ev.late})"
        if isinstance(ev, core.Deliver):
            env = net_mod.find(w.net, ev.env)
            if env is None:
                return "delivery"
            return f"delivery {ids[env.src]}->{ids[env.dst]} {type(env.msg).__name__}"
        if isinstance(ev, core.RpcFail):
            rpc = net_mod.find_rpc(w.net, ev.rpc)
            return f"RPC failure {ids[rpc.requester]}->{ids[rpc.responder]}" if rpc else "RPC failure"
        return type(ev).__name__ if not isinstance(ev, str) else ev

    def candidate(self, s: State, near: list) -> dict:
        w = s.w
        nodes = {}
        for i, node_id in enumerate(self.ids):
            shown = self.lp.snapshot(w.cfg.proto, w.nodes[i], w.alive[i]) if w.alive[i] else {"alive": False}
            nodes[node_id] = shown if shown is not None else {}
        needed = []
        for _, st, ev, lid, why in near:
            if why is None:
                diff = il.differences(self.lines[self.failing_pos].fields, self.written[lid][2])
                why = "differs from the log: " + "; ".join(diff) if diff else "the log shows it elsewhere"
            elif why.startswith("the log does not show it"):
                why += self.nearest(lid, st.w.now)
            needed.append(f"{self.describe_event(st.w, ev)} writes {self.describe_lid(lid)}: {why}")
        return {"t_ms": w.now + self.log.origin, "nodes": nodes,
                "pending": [f"{self.describe_lid(lid)} (written at t={tau + self.log.origin})"
                            for lid, tau, _ in s.pending],
                "last_events": [self.describe_event(before, e) for before, e in s.trail],
                "needed": needed}


_HASHES: dict[int, tuple[Any, int]] = {}  # id(value) -> (value, hash): node states and messages are shared


def _hash_of(v: Any) -> int:
    """hash(v), remembered while that very object is in the memo (records do not cache their
    hash, and a node's state is hashed again for every execution that holds it)."""
    hit = _HASHES.get(id(v))
    if hit is not None and hit[0] is v:
        return hit[1]
    if len(_HASHES) > 1 << 16:
        _HASHES.clear()
    h = hash(v)
    _HASHES[id(v)] = (v, h)
    return h


def _skew(t: int | None, tau: int) -> int:
    return 0 if t is None else abs(tau - t)


def check(log: il.ImplLog, opts: Options | None = None, progress: Callable[[int, int], None] | None = None) -> Result:
    return Checker(log, opts, progress).run()
