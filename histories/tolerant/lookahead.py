"""The log side of the search: the log's lines indexed for looking ahead, the lines the
reference writes (interned), and whether and when a line the reference writes can appear."""

from __future__ import annotations

import bisect
from collections.abc import Callable
from typing import Any

import attrs

from histories import impl_log as il
from histories.tolerant.records import Options, State, Stats
from histories.tolerant.scheduler import java_slack, world_config
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

    def imminent(self, j: int, ln: il.LogLine) -> bool:
        """Whether node j's own thread writes a line within the slack of line `ln` (its tick may
        have to come first: its request may reach ln's node before ln's event)."""
        times = self.maintainer_times[j]
        if ln.t is None:
            return True
        k = bisect.bisect_left(times, ln.t - self.opts.slack_ms)
        return k < len(times) and times[k] <= ln.t + self.opts.slack_ms

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
