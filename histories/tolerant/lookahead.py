"""The log side of the search: the log's lines indexed for looking ahead, the lines the
reference writes (interned), and whether and when a line the reference writes can appear."""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Callable
from itertools import islice
from typing import Any

import attrs

from histories import impl_log as il
from histories import reference_log as rl
from histories.tolerant.records import Options, State, Stats
from histories.tolerant.scheduler import java_slack, java_thread_slack, world_config
from reference_impl import core


class Lookahead:
    """The log, indexed, and the lines the reference has written so far."""

    def __init__(self, log: il.ImplLog, opts: Options | None = None,
                 progress: Callable[[int, int], None] | None = None) -> None:
        self.log = log
        self.opts = opts or Options()
        self.lp = il.log_points(log.protocol)
        self.cfg = world_config(log, self.opts)
        self.own_slack = java_slack(log.cfg.protocol)
        self.own_thread_slack = java_thread_slack(log.cfg.protocol)  # a server's threads' own slack
        self.thread_wakes = core.protocol(log.cfg.protocol).thread_wakes
        self.loop_phase = getattr(self.lp, "loop_phase", None)  # a loop the log does not show (checker.kept)
        self.progress = progress
        self.stats = Stats()
        self.lines = log.lines
        self.n = len(self.lines)
        ids = self.cfg.ids
        self.ids = ids
        self.thread_of = {at: p.thread for at, p in self.lp.POINTS.items()}
        # (node, at) -> positions, for looking ahead; each node's logged draws (bound, r); the
        # times of each node's lines that its own threads write (not a handler's)
        self.by_point: dict[tuple[int, str], array] = {}
        self.draw_logged = self.lp.NEXT_INT in log.points
        self.draw_lines: list[list[tuple[int, int]]] = [[] for _ in ids]
        self.maintainer_times: list[array] = [array("q") for _ in ids]
        self.t_last = None
        for ln in self.lines:
            where = self.by_point.get((ln.node, ln.at))
            if where is None:
                where = self.by_point[(ln.node, ln.at)] = array("l")
            where.append(ln.pos)
            if ln.at == self.lp.NEXT_INT and "bound" in ln.fields and "r" in ln.fields:
                self.draw_lines[ln.node].append((ln.fields["bound"], ln.fields["r"]))
            if ln.t is not None:
                self.t_last = ln.t if self.t_last is None else max(self.t_last, ln.t)
                if ln.node >= 0 and self.thread_of.get(ln.at) not in ("handler", "callback"):
                    self.maintainer_times[ln.node].append(ln.t)
        index = {x: i for i, x in enumerate(ids)}
        self.injected = {ln.pos for ln in self.lines if log.outside and il.is_outside_request(
            self.lp, log.outside, index, ln.at, ln.fields)}  # outside clients' requests: facts
        self.injected_order = sorted(self.injected)
        self.interned: dict[tuple, int] = {}
        self.written: dict[int, tuple[int, str, dict]] = {}  # line id -> (node, at, fields)
        self.last_use: dict[int, int] = {}  # line id -> the log position at which it was last written
        self.next_lid = 0
        self.match_memo: dict[tuple[int, int], bool] = {}
        self.points = log.points
        self.near: list = []
        self.current_pos = 0
        self.failing_pos = 0
        self.hidden_memo: dict[tuple[int, int], tuple[State, bool]] = {}
        self.step_memo: dict[tuple, tuple] = {}
        self.retries: list[tuple[int, int, int, int]] = []  # (from line, beam, states, stopped at line)
        self.answer_after: dict[str, tuple[str, ...]] = getattr(self.lp, "ANSWER_AFTER", {})
        self.reply_at: dict[str, str] = getattr(self.lp, "REPLY_AT", {})

    def intern(self, line: tuple[int, str, dict]) -> int:
        """The id of a line the reference writes (its messages still records, so hashable)."""
        node, at, fields = line
        k = (node, at, tuple(fields.items()))
        lid = self.interned.get(k)
        if lid is None:
            lid = self.interned[k] = self.next_lid
            self.next_lid += 1
            self.written[lid] = (node, at, {f: rl.enc(v) if attrs.has(type(v)) or isinstance(v, tuple) else v
                                            for f, v in fields.items()})  # records and tuples in their JSON form
        self.last_use[lid] = self.current_pos
        return lid

    def forget_lines(self, keep: int, live: set) -> None:
        """Forget the lines the reference wrote that no execution holds and that were last
        written before log position `keep` (the search goes back no further)."""
        old = [lid for lid, used in self.last_use.items() if used < keep and lid not in live]
        for lid in old:
            del self.written[lid], self.last_use[lid]
        if old:
            gone = set(old)
            self.interned = {k: lid for k, lid in self.interned.items() if lid not in gone}

    def matches(self, pos: int, lid: int) -> bool:
        k = (pos, lid)
        r = self.match_memo.get(k)
        if r is None:
            lines = self.lines
            node, at, fields = self.written[lid]
            r = self.match_memo[k] = (node == lines.node[pos] and at == lines.point_names[lines.at[pos]]
                                      and il.subset(lines.fields(pos), fields))
        return r

    def on_time(self, t: int | None, tau: int) -> bool:
        return t is None or abs(tau - t) <= self.opts.slack_ms

    def after(self, node: int, at: str, pos: int) -> tuple[Any, int]:
        """The positions of node's lines at log point `at`, and the index of the first at or after `pos`."""
        where = self.by_point.get((node, at), ())
        return where, bisect.bisect_left(where, pos)

    def feasible(self, pos: int, lid: int, tau: int, causes: frozenset = frozenset()) -> bool:
        """Whether a line the reference wrote at `tau` can still appear after position `pos`."""
        node, at, _ = self.written[lid]
        slack = self.opts.slack_ms
        where, k = self.after(node, at, pos + 1)
        time_of = self.lines.t_at
        for p in islice(where, k, None):
            t = time_of(p)
            if t is not None:
                if t > tau + slack:
                    break
                if t < tau - slack:
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
            for lid, tau, born, _ in s.pending:
                if ln.pos - born > self.opts.window:
                    return lid
            return None
        for lid, tau, born, _ in s.pending:
            if tau + self.opts.slack_ms < ln.t:
                return lid
        return None

    def target_time(self, pos: int, lid: int, earliest: int, latest: int) -> int | None:
        """The time of the first line from `pos` on that the line `lid` may be, near [earliest, latest]."""
        node, at, _ = self.written[lid]
        slack = self.opts.slack_ms
        where, k = self.after(node, at, pos)
        time_of = self.lines.t_at
        for p in islice(where, k, None):
            t = time_of(p)
            if t is None or t > latest + slack:
                return None
            if t >= earliest - slack and self.matches(p, lid):
                return t
        return None

    def predicted(self, w: core.World, ev: Any, pos: int, earliest: int, latest: int) -> Any:
        """For a delivery or an RPC failure: False if the line it will write cannot be in the log
        then (so it need not be taken now), else the time of the log line it will be, or None."""
        pred = rl.predict(self.lp, w, ev)
        if pred is None or pred[1] not in self.points:
            return None
        node, at, known = pred
        slack = self.opts.slack_ms
        where, k = self.after(node, at, pos)
        lines = self.lines
        for p in islice(where, k, None):
            t = lines.t_at(p)
            if t is None:
                if p > pos + self.opts.window:
                    break
            elif t > latest + slack:
                break
            elif t < earliest - slack:
                continue
            fields = lines.fields(p)
            if all(k not in fields or il.subset(fields[k], v) for k, v in known.items()):
                return t
        return None if self.cut_off(pos, earliest) else False

    def imminent(self, j: int, ln: il.LogLine) -> bool:
        """Whether node j's own thread writes a line within the slack of line `ln` (its tick may
        have to come first: its request may reach ln's node before ln's event)."""
        times = self.maintainer_times[j]
        if ln.t is None:
            return True
        k = bisect.bisect_left(times, ln.t - self.opts.slack_ms)
        return k < len(times) and times[k] <= ln.t + self.opts.slack_ms

    def nearest_line(self, lid: int, tau: int) -> il.LogLine | None:
        """The log's line most like `lid`: same node and log point, then like with like (a
        request with a request, of the same type, to the same peer), then nearest in time."""
        node, at, fields = self.written[lid]
        want = _shape(fields)
        best = None
        for p in self.by_point.get((node, at), ()):
            ln = self.lines[p]
            got = _shape(ln.fields)
            gap = abs(ln.t - tau) if ln.t is not None else abs(p - self.failing_pos)
            rank = (got[0] != want[0], got[1] != want[1], ln.fields.get("peer") != fields.get("peer"), gap)
            if best is None or rank < best[0]:
                best = (rank, ln)
        return None if best is None else best[1]

    def nearest(self, lid: int, tau: int) -> str:
        """Where the log has the line most like `lid`, and how it differs."""
        node, at, fields = self.written[lid]
        ln = self.nearest_line(lid, tau)
        if ln is None:
            return f"; the log has no {at} line of {self.ids[node] if node >= 0 else 'the world'}"
        diff = il.differences(ln.fields, fields)
        where = f"; the nearest in the log, line {ln.line} (t_ms={ln.t_ms})"
        return where + (", differs: " + "; ".join(diff) if diff else ", is the same line at another time")

    def where_in_log(self, lid: int) -> str:
        """Where the log shows line `lid` from the line being explained on, if it does."""
        node, at, _ = self.written[lid]
        for p in self.by_point.get((node, at), ()):
            if p >= self.current_pos and self.matches(p, lid):
                ln = self.lines[p]
                return f" (the log shows it later, at line {ln.line})"
        return " (the log never shows it after)"

    def describe_lid(self, lid: int) -> str:
        node, at, fields = self.written[lid]
        who = self.ids[node] if node >= 0 else "world"
        body = ", ".join(f"{k}={il._short(v)}" for k, v in fields.items())
        return f"{who} {at} {body}".rstrip()


def _shape(fields: dict) -> tuple:
    """Which messages a line holds (request, response) and their types."""
    keys = tuple(k for k in ("request", "response") if k in fields)
    return keys, tuple(fields[k].get("type") if isinstance(fields[k], dict) else None for k in keys)
