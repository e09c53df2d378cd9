"""The tolerant checker's records: its options and statistics, a search state (one reference
execution explaining a log prefix), and the result with its reports."""

from __future__ import annotations

from typing import Any

import attrs

from histories import impl_log as il
from reference_impl import core

ANY_DRAW = core.DRAW_SPAN - 1
PROBES = (0, 1, 2, 3, ANY_DRAW)  # draws that tell whether a tick's outcome depends on its draw
CHECKPOINT_EVERY = 32  # lines between checkpoints the search may go back to
CHECKPOINTS = 8
WIDENINGS = 2  # how often the beam is widened (x4 each time) before a line is rejected
MAX_BEAM = 64
HIDDEN_LATE_MS = 5  # a tick that writes nothing fires at most this long after its own window (Search.due_by)
TRAIL = 6  # reference events a state remembers, for reports
BACKTRACK = (32, 192)  # lines the search goes back at least when it widens the beam the first and second time
RETRY_BUDGET = 4  # a retry from a checkpoint expands at most this many times max_states in all


@attrs.define
class Options:
    """The checker's tolerance and bounds (docs/conformance.md, "Tolerant validation")."""

    slack_ms: int = 50  # scheduling allowance on the reference's windows, and |t_ms - reference time| at most
    max_depth: int = 6  # reference events that write something, between two log lines
    max_states: int = 3000  # search states expanded per log line
    beam: int = 4  # executions kept between lines (widened x4 twice, from a checkpoint, before a rejection)
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
    line_states_max: int = 0  # the most search states one line took (all executions of the frontier)


class State:
    """A reference execution explaining a log prefix. `key` identifies it for deduplication;
    the counters say how much of it was inferred (not part of the key).

    `pending` holds the lines the reference wrote that the log has not shown yet, each as
    (line id, reference time, log position when written, causes): `causes` are the pending
    lines it must come after in the log (an answer after the append it reports, a delivery's
    lines after the send). `node_in[i]` are the pending lines every later line of node i must
    come after (a future's completion before what the node does with the answer), and
    `env_in` maps an envelope in flight to the pending lines its delivery's lines must come
    after (its send line, and what that depended on). A line is identified by (line id, time)."""

    __slots__ = (
        "_hash",
        "_key",
        "_overdue",
        "draws",
        "drift",
        "env_in",
        "events",
        "guessed",
        "hidden",
        "late",
        "node_in",
        "pending",
        "reordered",
        "skew",
        "trail",
        "w",
    )

    def __init__(self, w: core.World, pending: tuple, draws: tuple, hidden: int = 0, reordered: int = 0,
                 late: int = 0, skew: int = 0, events: int = 0, trail: tuple = (), drift: int = 0,
                 guessed: int = 0, node_in: tuple = (), env_in: tuple = ()) -> None:
        self.w, self.pending, self.draws = w, pending, draws
        self.hidden, self.reordered, self.late, self.skew, self.events = hidden, reordered, late, skew, events
        self.drift = drift  # the sum of |reference time - log time| over the lines explained
        self.guessed = guessed  # draws the log does not show
        self.trail = trail  # the last few reference events, for reports
        self.node_in = node_in or (NONE,) * len(w.nodes)
        self.env_in = env_in  # ((envelope id, causes), ...), only envelopes with causes
        self._key = None
        self._hash = None
        self._overdue = None

    def but(self, **changes: Any) -> State:
        """A copy with some fields changed (the memoised key, hash and due ticks recomputed)."""
        fields = {name: getattr(self, name) for name in ("w", "pending", "draws", "hidden", "reordered", "late",
                                                          "skew", "events", "trail", "drift", "guessed", "node_in",
                                                          "env_in")}
        fields.update(changes)
        return State(**fields)

    def pending_ids(self) -> set:
        return {(p[0], p[1]) for p in self.pending}

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
            pending = tuple(sorted((lid, tau, causes) for lid, tau, _, causes in self.pending))
            nodes = tuple(_hash_of(n) for n in w.nodes)
            envs: Any = ()
            if self.env_in:
                by_id = {e.id: e for e in net.flight}
                envs = frozenset(((e.src, e.dst, _hash_of(e.msg), e.sent_ms, e.reply), c)
                                 for i, c in self.env_in if (e := by_id.get(i)) is not None)
            # the world's own events' state too: a step that only moves it (a rebalance that finds
            # nothing to do) is a different execution
            self._key = (w.now, nodes, w.alive, flight, rpcs, net.cut, w.since, w.fresh, pending, self.draws,
                         self.node_in, envs, _hash_of(w.ext))
        return self._key

    def score(self) -> tuple:
        return (self.drift, len(self.pending), self.events, self.hidden, self.late)

    def loop_phases(self, phase: Any) -> tuple:
        """The phases of the nodes' loops that the log does not show (the protocol's log points'
        `loop_phase`, per live node; () without one): until such a loop acts, the log cannot tell
        executions that differ only in its phase apart (histories.tolerant.checker.kept)."""
        if phase is None:
            return ()
        w = self.w
        c = w.cfg.proto
        return tuple(phase(c, n, w.now) if up else None for n, up in zip(w.nodes, w.alive))

    def down_state(self) -> tuple:
        """What the nodes that are down kept (their states, by hash): a down node writes nothing,
        so the log tells executions that differ only here apart once the node restarts."""
        w = self.w
        return tuple(_hash_of(n) for n, up in zip(w.nodes, w.alive) if not up)


NONE: frozenset = frozenset()


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
                       "line_states_max": s.line_states_max,
                       "depth_bound_hits": s.depth_bound_hits, "state_bound_hits": s.state_bound_hits,
                       "beam_cuts": s.beam_cuts, "beam_widenings": s.beam_widenings},
            "bounds": attrs.asdict(self.options),
        }
        if not self.accepted:
            out["failing_line"] = None if self.failing is None else {
                "line": self.failing.line, "t_ms": self.failing.t_ms, "text": self.failing.raw}
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
        where = (f"at line {self.failing.line} (t_ms={self.failing.t_ms})" if self.failing is not None
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
                           f"{st.get('role')} term {st.get('term')} voted {st.get('voted_for')} "
                           f"leader {st.get('leader')}")
                for n, st in c["nodes"].items())
            out.append(f"  closest execution {k} (reference at t_ms={c['t_ms']}): {nodes}")
            if c["last_events"]:
                out.append(f"    its last events: {', '.join(c['last_events'])}")
            for p in c["pending"]:
                out.append(f"    written, not yet in the log: {p}")
            for need in c["needed"]:
                out.append(f"    near miss: {need}")
        out.append(f"  search: {s.states_expanded} states expanded, at most {s.line_states_max} for one line; "
                   f"bounds: {bounds}")
        return "\n".join(out)


_HASHES: dict[int, tuple[Any, int]] = {}  # id(value) -> (value, hash): node states and messages are shared
_MEMO_SIZE = 1 << 18
_PARTS: dict[type, tuple[tuple[str, bool], ...]] = {}


def _hash_of(v: Any) -> int:
    """A hash of v made of its parts' hashes, each remembered while that very object is in the
    memo: a node's next state shares most of its parts (its store's entries, its member) with
    the one before, and records do not cache their hash, so hashing a node anew would walk its
    whole log at every step. Plain values and small records are hashed as they are."""
    hit = _HASHES.get(id(v))
    if hit is not None and hit[0] is v:
        return hit[1]
    if len(_HASHES) > _MEMO_SIZE:
        _HASHES.clear()
    cls = type(v)
    parts = _PARTS.get(cls)
    if parts is None:
        parts = _PARTS[cls] = _parts(cls)
    if parts:
        h = hash((cls, tuple(_hash_of(getattr(v, name)) if deep else hash(getattr(v, name)) for name, deep in parts)))
    elif cls is tuple and len(v) > 8:
        h = hash(tuple(_hash_of(x) for x in v))
    else:
        h = hash(v)
    _HASHES[id(v)] = (v, h)
    return h


def forget_hashes() -> None:
    """Drop the hash memo (Checker.forget, every few hundred lines): it holds each value it
    hashed alive, so kept for a whole log it held the states of every execution the search
    looked at, up to its size (a 40,000-line log: 268 MB peak, growing with the log)."""
    _HASHES.clear()


def _parts(cls: type) -> tuple[tuple[str, bool], ...]:
    """A record's fields, each with whether to hash it by its parts (records and tuples, which
    may be large) or as it is (plain values, small maps that cache their hash)."""
    if not attrs.has(cls):
        return ()
    return tuple((f.name, f.type not in _PLAIN_TYPES) for f in attrs.fields(cls))


_PLAIN_TYPES = {"int", "str", "bool", "str | None", "int | None", "float", int, str, bool}


def _skew(t: int | None, tau: int) -> int:
    return 0 if t is None else abs(tau - t)
