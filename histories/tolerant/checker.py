"""The whole log: the frontier of executions, the beam, checkpoints to go back to, the verdict."""

from __future__ import annotations

import time
from typing import Any

from histories import impl_log as il
from histories.tolerant.records import (
    BACKTRACK,
    CHECKPOINT_EVERY,
    CHECKPOINTS,
    MAX_BEAM,
    RETRY_BUDGET,
    WIDENINGS,
    Result,
    State,
)
from histories.tolerant.search import SIBLING, Search
from reference_impl import core
from reference_impl.core import network as net_mod


class Checker(Search):
    """Explains a log line by line (`run`)."""

    def run(self, stop: int | None = None) -> Any:
        """Explain the lines one by one, keeping the `beam` best executions. When none explains
        a line, go back to a checkpoint and try again with a beam four times as wide (twice at
        most), since the execution that explains it may have been cut. The work is bounded: at
        most `max_states` search states per line (shared by the executions of the frontier), and
        at most RETRY_BUDGET times that for each retry from a checkpoint."""
        start = time.perf_counter()
        opts = self.opts
        frontier = [State(core.init(self.cfg), (), (0,) * len(self.ids))]
        checkpoints: list[tuple[int, list[State]]] = []
        beam, level, wide_until = opts.beam, 0, -1
        pos = 0
        explained = 0
        retry_left = 0  # states a retry from a checkpoint may still expand
        first_failure: tuple | None = None  # the line the first attempt could not explain, and why
        while pos < self.n:
            if pos == stop:
                return frontier  # for debugging: the executions that explain the lines before `stop`
            ln = self.lines[pos]
            self.current_pos = pos
            if pos % CHECKPOINT_EVERY == 0 and (not checkpoints or checkpoints[-1][0] < pos):
                checkpoints = (checkpoints + [(pos, frontier)])[-CHECKPOINTS:]
            if pos % 500 == 0:
                if self.progress is not None:
                    self.progress(pos, self.n)
                self.forget(pos, frontier, checkpoints)
            self.near = []
            nxt, dead, used, stopped = self.step_frontier(frontier, ln)
            if level:
                retry_left -= used
            if not nxt or (level and retry_left < 0):
                if first_failure is None or ln.pos > first_failure[0].pos:
                    first_failure = (ln, frontier, dead, stopped, list(self.near))
                if level < WIDENINGS and checkpoints and (not level or retry_left >= 0):
                    level += 1
                    back = [c for c in checkpoints if c[0] <= pos - BACKTRACK[level - 1]] or checkpoints[:1]
                    pos, frontier = back[-1]
                    beam = min(opts.beam * 4 ** level, MAX_BEAM)
                    wide_until = max(wide_until, ln.pos + CHECKPOINT_EVERY)
                    retry_left = RETRY_BUDGET * opts.max_states
                    self.stats.beam_widenings += 1
                    checkpoints = [c for c in checkpoints if c[0] <= pos]
                    continue
                failing, frontier, dead, stopped, self.near = first_failure
                return self.reject(frontier, failing, dead, stopped, start)
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
                beam, level, first_failure = opts.beam, 0, None
        finished = [s for s in frontier if all(self.cut_off(self.n, p[1]) for p in s.pending)]
        if not finished:
            s = frontier[0]
            lid, tau = next(p for p in s.pending if not self.cut_off(self.n, p[1]))[:2]
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

    def step_frontier(self, frontier: list[State], ln: il.LogLine) -> tuple[dict, list, int, bool]:
        """Explain line `ln` from every execution of the frontier, sharing the line's budget of
        search states among them: (the executions that explain it, the executions that cannot
        go on and why, states expanded, whether the budget stopped a search)."""
        nxt: dict[Any, State] = {}
        dead: list[tuple[State, str]] = []
        left = self.opts.max_states
        used_total, stopped = 0, False
        for k, s in enumerate(frontier):
            gone = self.expired(s, ln)
            if gone is not None:
                why = f"the reference wrote {self.describe_lid(gone)} and the log does not show it within the slack"
                dead.append((s, why))
                continue
            share = max(1, left // (len(frontier) - k))
            goals, used, hit = self.explain(s, ln, share)
            left -= used
            used_total += used
            stopped = stopped or hit
            for g in goals:
                old = nxt.get(g)
                if old is None or g.score() < old.score():
                    nxt[g] = g
        self.stats.line_states_max = max(self.stats.line_states_max, used_total)
        return nxt, dead, used_total, stopped and not nxt

    def forget(self, pos: int, frontier: list[State], checkpoints: list) -> None:
        """Drop the memos about lines the search can no longer look at (it goes back at most
        BACKTRACK[-1] lines), so that memory stays bounded by the search, not the log."""
        keep = pos - BACKTRACK[-1] - CHECKPOINT_EVERY
        if keep > 0:
            self.match_memo = {k: v for k, v in self.match_memo.items() if k[0] >= keep}
            live = {p[0] for s in frontier for p in s.pending}
            live |= {p[0] for _, states in checkpoints for s in states for p in s.pending}
            self.forget_lines(keep, live)
        self.hidden_memo.clear()

    def reject(self, frontier: list[State], ln: il.LogLine, dead: list, stopped: bool, start: float) -> Result:
        """The verdict on a line nothing explains. It names the line that differs and the field:
        when the reference writes the line but not the rest of its step as the log has it, the
        log's line of that step that differs; when it writes the line only after a line the log
        shows later (or never), that line. It says that a larger bound might explain the line
        only when the state budget, not the search's depth, stopped the search."""
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
        elif stopped:
            reason += (f" (the search of this line stopped at its bound of {self.opts.max_states} states: "
                       f"a larger --max-states might explain it)")
        cands = [self.candidate(s, [n for n in self.near if n[0] is s]) for s in frontier[:3]]
        return Result(accepted=False, lines=self.n, explained=ln.pos, seconds=time.perf_counter() - start,
                      stats=self.stats, options=self.opts, failing=failing, reason=reason, candidates=cands)

    def closest_difference(self, ln: il.LogLine) -> str:
        """The fields in which the nearest line the reference writes at the failing line's node
        and log point (of the same shape) differs from it."""
        best: list[str] | None = None
        for _, _, _, lid, why in self.near:
            if why is None:
                diff = il.differences(ln.fields, self.written[lid][2])
                if diff and (best is None or len(diff) < len(best)):
                    best = diff
        return "; ".join(best) if best else ""

    def differing_sibling(self, ln: il.LogLine) -> tuple[il.LogLine, str] | None:
        """When an event writes the failing line but another line of its step is not in the log
        as the reference writes it: the log's line most like that one, and how it differs."""
        found = None
        for _, st, _, lid, why in self.near:
            if why != SIBLING:
                continue
            other = self.nearest_line(lid, ln.t if ln.t is not None else st.w.now)
            if other is None:
                continue
            diff = il.differences(other.fields, self.written[lid][2])
            rank = (not diff, len(diff), abs(other.pos - ln.pos))
            if found is None or rank < found[0]:
                found = (rank, other, lid, diff)
        if found is None:
            return None
        _, other, lid, diff = found
        if diff:
            return other, (f"{other.describe(self.ids)} differs from the line the reference writes in the step "
                           f"that writes line {ln.line}: {'; '.join(diff)}")
        return ln, (f"the step that writes {ln.describe(self.ids)} also writes {self.describe_lid(lid)}, which the "
                    f"log shows only at line {other.line} (t_ms={other.t_ms}), beyond the slack")

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
                "pending": [f"{self.describe_lid(p[0])} (written at t={p[1] + self.log.origin})" for p in s.pending],
                "last_events": [self.describe_event(before, e) for before, e in s.trail],
                "needed": needed}
