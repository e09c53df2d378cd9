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
    forget_hashes,
)
from histories.tolerant.diagnosis import Diagnosis
from reference_impl import core


def kept(states: list[State], beam: int, phase: Any = None) -> list[State]:
    """The executions the frontier keeps (`states` best first): the `beam` best of each state
    the down nodes may be in, at most MAX_BEAM in all. A down node writes nothing, so until it
    restarts the log cannot tell executions that differ in what it kept apart, and the score
    ranks them by the rest: a slave whose flush ran just before its OS crash is one hidden event
    more than one whose flush did not, and the other's timing variants of the live nodes would
    fill the beam and drop it, or keep it only in a variant whose timing goes wrong later
    (async_slave_os_crash: the restart's connectMaster reports 6,000 bytes, 180 lines on). Each
    such state keeps the live nodes' best executions; with no node down this is the plain beam.
    The same holds for the phase of a loop the log does not show (`phase`: the protocol's
    `loop_phase`, State.loop_phases): a new leader's DLedgerRoleChangeHandler checks every 100 ms
    from its election and writes nothing until it makes the broker master, and the execution
    whose election came a ms before its line (Search._early) has more drift than the one at the
    line's time, whose checks may fall after a commit that came before them in Java (realistic
    crash log, seed 5: 1,000 ms on, the master line shows which)."""
    beam = max(beam, 1)
    if len(states) <= beam:
        return states
    taken: dict[tuple, int] = {}
    out = []
    for s in states:
        k = (s.down_state(), s.loop_phases(phase))
        if taken.get(k, 0) < beam:
            taken[k] = taken.get(k, 0) + 1
            out.append(s)
            if len(out) >= MAX_BEAM:
                break
    return out


class Checker(Diagnosis):
    """Explains a log line by line (`run`)."""

    def run(self, stop: int | None = None) -> Any:
        """Explain the lines one by one, keeping the `beam` best executions. When none explains
        a line, go back to a checkpoint and try again with a beam four times as wide (twice at
        most), since the execution that explains it may have been cut. The work is bounded: at
        most `max_states` search states per line (shared by the executions of the frontier), and
        at most RETRY_BUDGET times that for each retry from a checkpoint; a retry whose budget is
        spent fails where it is, and the next one (if any) starts."""
        start = time.perf_counter()
        opts = self.opts
        frontier = [State(core.init(self.cfg), (), (0,) * len(self.ids))]
        checkpoints: list[tuple[int, list[State]]] = []
        beam, level, wide_until = opts.beam, 0, -1
        pos = 0
        explained = 0
        retry_left = 0  # states a retry from a checkpoint may still expand
        first_failure: tuple | None = None  # the line the first attempt could not explain, and why
        cuts: list[int] = []  # the lines after which the beam dropped executions
        wide_from = 0  # where the current retry began
        self.retries = []
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
            spent = level and retry_left < 0  # this retry's budget is spent: it fails here
            if not nxt or spent:
                if not nxt and (first_failure is None or ln.pos > first_failure[0].pos):
                    first_failure = (ln, frontier, dead, stopped, list(self.near))
                if level:
                    self.retries.append((self.lines[wide_from].line, beam, RETRY_BUDGET * opts.max_states - retry_left,
                                         ln.line))
                back = None
                while level < WIDENINGS and checkpoints:
                    level += 1
                    back = ([c for c in checkpoints if c[0] <= pos - BACKTRACK[level - 1]] or checkpoints[:1])[-1]
                    if any(c >= back[0] for c in cuts):
                        break  # an execution was dropped since then: a wider beam may keep the one that explains
                    back = None  # nothing was dropped: the same executions would fail the same way
                if back is not None:
                    pos, frontier = back
                    wide_from = pos
                    beam = min(opts.beam * 4 ** level, MAX_BEAM)
                    wide_until = max(wide_until, first_failure[0].pos + CHECKPOINT_EVERY)
                    retry_left = RETRY_BUDGET * opts.max_states
                    self.stats.beam_widenings += 1
                    checkpoints = [c for c in checkpoints if c[0] <= pos]
                    continue
                failing, frontier, dead, stopped, self.near = first_failure
                return self.reject(frontier, failing, dead, stopped, start)
            states = sorted(nxt.values(), key=State.score)
            frontier = kept(states, beam, self.loop_phase)
            if len(states) > len(frontier):
                self.stats.beam_cuts += 1
                cuts = (cuts + [pos])[-4 * CHECKPOINTS:]
            if pos % CHECKPOINT_EVERY == CHECKPOINT_EVERY - 1:
                frontier_kept = states[:MAX_BEAM]
                checkpoints = (checkpoints + [(pos + 1, frontier_kept)])[-CHECKPOINTS:]
            self.stats.frontier_max = max(self.stats.frontier_max, len(frontier))
            pos += 1
            explained = max(explained, pos)
            if pos > wide_until and level:
                beam, level, first_failure, self.retries = opts.beam, 0, None, []
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
        self.step_memo.clear()  # its steps name lines by id, and an id forgotten here is gone
        forget_hashes()
