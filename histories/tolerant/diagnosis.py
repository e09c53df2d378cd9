"""Rejections that teach: which line differs and in which field, what the reference writes there
instead (like with like: a request with a request), what it needs first, and whether a larger
bound could change the verdict.

When no execution explains a line, the checker has the frontier it reached (the closest
executions) and the near misses its search met. This module turns them into the verdict:

- a line of the failing line's step that differs (the search takes a step's lines together, so
  the line it stops at may be the step's first one while the difference is in the next);
- the fields in which the closest line the reference writes there differs, among lines of the
  same shape (a request is compared with a request, of the same type, to the same peer);
- a line that comes too early: the reference writes it only after a line the log shows later
  or never (an answer before its quorum);
- what the reference does next when it is left alone (`run_on`): from the closest execution,
  the reference's own events in time order until it writes the failing line, and what it
  wrote first; for a failed RPC, the reference's own failure line;
- "a larger bound might explain it" only when the line's state budget stopped the search.
"""

from __future__ import annotations

import time
from typing import Any

from histories import impl_log as il
from histories import reference_log as rl
from histories.tolerant.records import Result, State
from histories.tolerant.search import SIBLING, Search
from reference_impl import core
from reference_impl.core import network as net_mod

RUN_ON_EVENTS = 300  # reference events `run_on` takes at most, looking for the failing line
STEP_SPREAD_MS = 5  # how far apart in the log one step's lines may be to be named as the step's (reports only)


class Diagnosis(Search):
    """The verdict on a line nothing explains."""

    relaxed = False  # run_on: any time and any line ahead will do

    def on_time(self, t: int | None, tau: int) -> bool:
        return self.relaxed or super().on_time(t, tau)

    def feasible(self, pos: int, lid: int, tau: int, causes: frozenset = frozenset()) -> bool:
        return self.relaxed or super().feasible(pos, lid, tau, causes)

    def reject(self, frontier: list[State], ln: il.LogLine, dead: list, stopped: bool, start: float) -> Result:
        """The verdict on line `ln`, which no execution of `frontier` explains."""
        self.failing_pos = ln.pos
        failing, reason = ln, f"nothing in the reference explains {ln.describe(self.ids)}"
        closest = self.closest_difference(ln)
        if closest:
            reason += f"; the closest line the reference writes there differs in {closest}"
        if dead and len(dead) == len(frontier):
            reason = dead[0][1]
        causal = [n for n in self.near if n[4] is not None and "only after" in n[4]]
        sibling = self.differing_sibling(ln)
        if causal:
            reason = f"{ln.describe(self.ids)} comes too early: {causal[0][4]}"
        elif sibling is not None:
            failing, reason = sibling
        else:
            failure = self.failure_line(frontier[0], ln) if frontier else ""
            later = failure or (self.run_on(frontier[0], ln) if frontier else "")
            if later:
                reason += f"; {later}"
            if stopped and not failure:
                reason += (f" (the search of this line stopped at its bound of {self.opts.max_states} states: "
                           f"a larger --max-states might explain it)")
        for begun, beam, used, reached in self.retries:
            reason += (f"; retried from line {begun} with a beam of {beam} ({used} states), which stopped at line "
                       f"{reached}")
        cands = [self.candidate(s, [n for n in self.near if n[0] is s]) for s in frontier[:3]]
        return Result(accepted=False, lines=self.n, explained=ln.pos, seconds=time.perf_counter() - start,
                      stats=self.stats, options=self.opts, failing=failing, reason=reason, candidates=cands)

    def closest_difference(self, ln: il.LogLine) -> str:
        """The fields in which the nearest line the reference writes at the failing line's node
        and log point, of the same shape, differs from it."""
        best: list[str] | None = None
        shape = _shape(ln.fields)
        for _, _, _, lid, why, _ in self.near:
            if why is None and _shape(self.written[lid][2]) == shape:
                diff = il.differences(ln.fields, self.written[lid][2])
                if diff and (best is None or len(diff) < len(best)):
                    best = diff
        return "; ".join(best) if best else ""

    def differing_sibling(self, ln: il.LogLine) -> tuple[il.LogLine, str] | None:
        """When an event writes the failing line but another line of its step is not in the log
        as the reference writes it: the log's line that differs (within the slack of the step),
        or the failing line with the line of its step that the log lacks."""
        found = None
        for _, st, _, lid, why, step in self.near:
            if why != SIBLING:
                continue
            other = self.nearest_line(lid, ln.t if ln.t is not None else st.w.now)
            if other is None:
                continue
            diff = il.differences(other.fields, self.written[lid][2])
            near = ((ln.t is None or other.t is None or abs(other.t - ln.t) <= STEP_SPREAD_MS)
                    and self.within_step(ln, other, step))
            rank = (not near, not diff, len(diff), abs(other.pos - ln.pos))
            if found is None or rank < found[0]:
                found = (rank, other, lid, diff, near)
        if found is None:
            return None
        _, other, lid, diff, near = found
        if diff and near:
            return other, (f"{other.describe(self.ids)} differs from the line the reference writes in the step "
                           f"that writes line {ln.line}: {'; '.join(diff)}")
        where = (f"the nearest, line {other.line} (t_ms={other.t_ms}), differs: {'; '.join(diff)}" if diff else
                 f"the log shows it only at line {other.line} (t_ms={other.t_ms}), beyond the slack")
        return ln, (f"the step that writes {ln.describe(self.ids)} also writes {self.describe_lid(lid)}, which the "
                    f"log does not show then; {where}")

    def within_step(self, ln: il.LogLine, other: il.LogLine, step: frozenset) -> bool:
        """Whether the log's line `other` may be a line of the step that writes `ln`: every line
        of that node between the two is one the step writes too (a later step's line between
        them, such as the request a follower handles next, makes `other` a later step's)."""
        lo, hi = sorted((ln.pos, other.pos))
        lines = self.lines
        return all(lines.node[p] != ln.node or any(self.matches(p, lid) for lid in step) for p in range(lo + 1, hi))

    def failure_line(self, s: State, ln: il.LogLine) -> str:
        """For a log line that completes an RPC: the line the reference writes when that RPC
        fails (the future's sentinel response), when it differs from the log's."""
        if "response" not in ln.fields or "peer" not in ln.fields or ln.node < 0:
            return ""
        w = s.w
        peer = self.ids.index(ln.fields["peer"])
        for rpc in w.net.rpcs:
            if rpc.requester != ln.node or rpc.responder != peer:
                continue
            pred = rl.predict(self.lp, w, core.RpcFail(rpc=rpc.id))
            if pred is None or pred[1] != ln.at:
                continue
            ref = pred[2]
            diff = il.differences(ln.fields, ref)
            if not diff:
                continue
            return (f"the reference's own line for this RPC's failure, due from t_ms="
                    f"{rpc.deadline_ms + self.log.origin} to {rpc.deadline_ms + rpc.window + self.log.origin}, "
                    f"differs: {'; '.join(diff)}")
        return ""

    def run_on(self, s: State, ln: il.LogLine) -> str:
        """The reference left alone from execution `s` (its events in time order, at their
        earliest times, the draws the log shows): when it writes the failing line, and what it
        writes first that the log does not show before it."""
        self.relaxed = True
        near = self.near
        self.near = []
        try:
            st = s
            for _ in range(RUN_ON_EVENTS):
                w = st.w
                events = sorted(core.protocol_events(w),
                                key=lambda ev: (core.event_time(w, ev), _KIND.get(type(ev), 9)))
                events = [ev for ev in events if not isinstance(ev, core.Drop)] or events
                if not events:
                    return ""
                ev = events[0]
                if isinstance(ev, core.Tick):
                    lo = core.tick_window(w, ev.node, ev.thread)[0]
                    ev = ev.evolve(draw=self.draws_for(st, ev.node, ln.pos, lo, ev.thread)[0][0], late=lo)
                after, obs = core.step(w, ev)
                written = self.lines_of(w, ev, after, obs)
                nxt, consumed = self.advance(st, ev, after, written, ln, st)
                early = [n for n in self.near if n[4] is not None and "only after" in n[4]]
                if consumed:
                    return (f"left alone, the reference writes it at t_ms={after.now + self.log.origin}, after "
                            f"{self.describe_event(w, ev)}")
                if early:
                    return f"left alone, the reference writes it {early[0][4].removeprefix('the reference writes it ')}"
                if nxt is None:
                    return ""
                st = nxt
            return (f"left alone for {RUN_ON_EVENTS} events (to t_ms={st.w.now + self.log.origin}), the reference "
                    f"never writes it")
        finally:
            self.relaxed = False
            self.near = near

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
        for _, st, ev, lid, why, _ in near:
            if why is None:
                diff = il.differences(self.lines[self.failing_pos].fields, self.written[lid][2])
                why = "differs from the log: " + "; ".join(diff) if diff else "the log shows it elsewhere"
            elif why.startswith("the log does not show it"):
                why += self.nearest(lid, st.w.now)
            needed.append(f"{self.describe_event(st.w, ev)} writes {self.describe_lid(lid)}: {why}")
        return {"t_ms": w.now + self.log.origin, "nodes": nodes,
                "pending": [f"{self.describe_lid(p[0])} (written at t={p[1] + self.log.origin})" for p in s.pending],
                "last_events": [self.describe_event(before, e) for before, e in s.trail],
                "needed": needed}


_KIND = {core.Deliver: 0, core.RpcFail: 1, core.Tick: 2}


def _shape(fields: dict) -> tuple:
    keys = tuple(k for k in ("request", "response") if k in fields)
    return keys, tuple(fields[k].get("type") if isinstance(fields[k], dict) else None for k in keys)
