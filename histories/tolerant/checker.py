"""The whole log: the frontier of executions, the beam, checkpoints to go back to, the verdict."""

from __future__ import annotations

import time
from typing import Any

from histories import impl_log as il
from histories.tolerant.records import BACKTRACK, CHECKPOINT_EVERY, CHECKPOINTS, MAX_BEAM, WIDENINGS, Result, State
from histories.tolerant.search import Search
from reference_impl import core
from reference_impl.core import network as net_mod


class Checker(Search):
    """Explains a log line by line (`run`)."""

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
            if pos % 500 == 0:
                if self.progress is not None:
                    self.progress(pos, self.n)
                self.forget(pos)
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

    def forget(self, pos: int) -> None:
        """Drop the memos about lines the search can no longer look at (it goes back at most
        BACKTRACK[-1] lines), so that memory stays bounded by the search, not the log."""
        keep = pos - BACKTRACK[-1] - CHECKPOINT_EVERY
        if keep > 0:
            self.match_memo = {k: v for k, v in self.match_memo.items() if k[0] >= keep}
        self.hidden_memo.clear()

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
