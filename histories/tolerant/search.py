"""Explaining one log line: the breadth-first search over reference events from one execution,
each event timed to the log, with the draws the log shows or the search infers."""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Callable
from typing import Any

from histories import impl_log as il
from histories import reference_log as rl
from histories.tolerant.lookahead import Lookahead
from histories.tolerant.records import ANY_DRAW, HIDDEN_LATE_MS, NONE, PROBES, TRAIL, State, _skew
from reference_impl import core
from reference_impl.core import faults
from reference_impl.core import network as net_mod


SIBLING = "the log does not show it with the line its step writes"
STEP_MEMO = 1 << 15  # reference steps remembered (Search.stepped)


class Search(Lookahead):
    """The per-line search (`explain`) and the events it takes."""

    def lines_of(self, before: core.World, ev: Any, after: core.World, obs: tuple) -> list[tuple[int, str, int]]:
        """The lines a step writes at the log points the implementation writes: (line id, what
        it is, the envelope it carries) (reference_log.step_lines)."""
        points = self.points
        return [(self.intern(x[:3]), x[3], x[4])
                for x in rl.step_lines(self.lp, before, ev, after, obs, raw=True, tagged=True) if x[1] in points]

    def stepped(self, w: core.World, ev: Any, now: int | None = None) -> tuple[core.World, core.World, list]:
        """(world before, world after, lines written) for event `ev` in world `w` (at `now`, when
        given, for a delivery): remembered while `w` is, since executions that differ only in
        their pending lines fire the same events from the same world."""
        k = (id(w), ev, now)
        hit = self.step_memo.get(k)
        if hit is not None and hit[0] is w:
            return hit[1]
        before = w if now is None or now == w.now else w.evolve(now=now)
        after, obs = core.step(before, ev)
        out = (before, after, self.lines_of(before, ev, after, obs))
        if len(self.step_memo) > STEP_MEMO:
            self.step_memo.clear()
        self.step_memo[k] = (w, out)
        return out

    def fire(self, s: State, ev: Any, pos: int, line_t: int | None) -> list[tuple[core.World, list[int], Any, bool]]:
        """The successor worlds for one enabled event, with the lines each writes and the event
        with its chosen time (and draw); one per draw tried when a tick's draw is unknown."""
        w = s.w
        if isinstance(ev, core.Tick):
            i, k = ev.node, ev.thread
            lo, hi = core.tick_window(w, i, k)
            if lo > hi:
                return []
            wake = core.thread_wake_times(w, i)[k]  # `late` counts from this thread's own wake time
            out = []
            for draw, inferred in self.draws_for(s, i, pos, lo, k):
                def make(late: int, draw: int = draw) -> tuple[core.World, Any, int | None]:
                    return w, ev.evolve(draw=draw, late=late), None
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
                pos, lambda late: (w, core.RpcFail(rpc=ev.rpc, late=late), None), lo, hi, deadline, line_t, target)]
        if isinstance(ev, core.Deliver):
            env = net_mod.find(w.net, ev.env)
            earliest = max(w.now, env.sent_ms + core.delay_window(w)[0])
            latest = max(earliest, core.horizon(w))
            target = self.predicted(w, ev, pos, earliest, latest)
            if target is False:
                return []

            def make_delivery(late: int) -> tuple[core.World, Any, int | None]:
                return w, ev, (earliest + late if late else None)
            return [x + (False,) for x in self._timed(pos, make_delivery, 0, latest - earliest, earliest, line_t,
                                                      target)]
        _, after, lids = self.stepped(w, ev)
        return [(after, lids, ev, False)]

    def _timed(self, pos: int, make: Callable[[int], tuple[core.World, Any, int | None]], lo: int, hi: int,
               base: int, line_t: int | None, target: int | None = None) -> list[tuple[core.World, list, Any]]:
        """Step at the earliest time the event's window allows; if the first line it writes
        appears in the log later, step again at that line's time (within the window), keeping
        the earliest time too when the protocol's nodes run a loop the log does not show
        (`_early`). An event that writes nothing at its earliest time is tried at the time of
        the line being explained as well, since what it writes may depend on when it happens (a
        leader steps down only once its lease has run out), or, for a process's first step after
        it (re)started, its thread's next step at once after it writes the line (a cold JVM's
        first candidate round, after maintainAsCandidate's first step)."""
        if target is not None:
            late = min(hi, max(lo, target - base))
            w, ev, now = make(late)
            _, after, lids = self.stepped(w, ev, now)
            return [(after, lids, ev)] + (self._early(make, lo, lids) if late != lo else [])
        w, ev, now = make(lo)
        _, after, lids = self.stepped(w, ev, now)
        if hi <= lo:
            return [(after, lids, ev)]
        if lids:
            target = self.target_time(pos, lids[0][0], base + lo, base + hi)
            if target is not None:
                late = min(hi, max(lo, target - base))
                if late != lo:
                    early = [(after, lids, ev)] if self.loop_phase is not None else []
                    w, ev, now = make(late)
                    _, after, lids = self.stepped(w, ev, now)
                    return [(after, lids, ev)] + [x for x in early if _same_lines(x[1], lids)]
            return [(after, lids, ev)]
        out = [(after, lids, ev)]
        if line_t is not None:
            late = min(hi, max(lo, line_t - base))
            if late != lo:
                w2, ev2, now2 = make(late)
                _, after2, lids2 = self.stepped(w2, ev2, now2)
                if lids2 or (isinstance(ev2, core.Tick) and ev2.node in w2.fresh and _goes_on(after2, ev2)):
                    out.append((after2, lids2, ev2))
        return out

    def _early(self, make: Callable[[int], tuple[core.World, Any, int | None]], lo: int, lids: list
               ) -> list[tuple[core.World, list, Any]]:
        """The event at the earliest time its window allows, when it writes the same lines there
        as at its line's time: a thread writes its line after the event, a few ms later under
        load, so the event may have been earlier than its line. Tried only for a protocol whose
        nodes run a loop the log does not show (its log points' `loop_phase`): such a loop keeps
        the time of the event it started from (DLedgerRoleChangeHandler's 100 ms checks, from
        the election), and whether its check falls before or after another thread's commit of
        the same ms depends on it; elsewhere what depends on an event's time writes a line of its
        own and is timed by it."""
        if self.loop_phase is None:
            return []
        w, ev, now = make(lo)
        _, after, early = self.stepped(w, ev, now)
        return [(after, early, ev)] if _same_lines(early, lids) else []

    def draws_for(self, s: State, i: int, pos: int, lo: int, thread: int = 0) -> list[tuple[int, bool]]:
        """The draws to try for a tick of node i's thread `thread`: the next draw the log shows
        for the node (the smallest draw that scales to its r; a thread that draws nothing
        ignores it), or, when the log does not show one, unknowns."""
        w = s.w
        if self.draw_logged and self.lp.logs_draws(w.nodes[i]):
            k = s.draws[i]
            if k < len(self.draw_lines[i]):
                bound, r = self.draw_lines[i][k]
                return [((r * core.DRAW_SPAN + bound - 1) // bound, False)]
            return [(0, False)]  # the log shows no more draws of this node: it must not draw (or the log ends)
        classes = getattr(self.lp, "draw_classes", None)
        if classes is not None:  # the protocol names one draw per way its tick can use a draw
            wake = core.thread_wake_times(w, i)[thread]
            lo_hi = core.tick_window(w, i, thread)
            draws = classes(w, i, (wake + lo_hi[0], wake + lo_hi[1]), self.lines[pos:pos + self.opts.window])
            return [(draws[0], False)] if len(draws) == 1 else [(d, True) for d in draws]
        probes = []
        for d in PROBES:
            _, after, lids = self.stepped(w, core.Tick(node=i, draw=d, late=lo, thread=thread))
            probes.append((after.nodes[i], tuple(lids)))
        if all(p == probes[0] for p in probes[1:]):
            return [(0, False)]  # this tick draws nothing (or nothing that matters)
        return self.unknown_draws(s, i, pos, lo, thread)

    def unknown_draws(self, s: State, i: int, pos: int, lo: int, thread: int = 0) -> list[tuple[int, bool]]:
        """An unlogged draw: one draw for each different set of lines the tick may write (a
        client's choice of server), the one that puts the node's next wake-up nearest its next
        maintainer-thread line in the log, and the largest."""
        w = s.w
        nxt = None
        lines = self.lines
        for p in range(pos, min(pos + self.opts.window, self.n)):
            if lines.node[p] == i and self.thread_of.get(lines.point_names[lines.at[p]]) == "maintainer":
                t = lines.t_at(p)
                if t is not None and t > w.now:
                    nxt = t
                    break
        grid = self.opts.draw_grid
        draws = sorted(set(PROBES) | {ANY_DRAW * k // (grid - 1) for k in range(grid)})
        best: dict[tuple, tuple[int, int]] = {}
        # draws that give the node's transition the same outcome give the same step: the step
        # (routing, the lines it writes) is taken once per outcome, not once per draw
        tick_at = core.event_time(w, core.Tick(node=i, draw=0, late=lo, thread=thread))
        p = core.protocol(w.cfg.protocol)

        def tick_outcome(draw: int) -> Any:
            if p.on_thread_tick is None:
                return p.on_tick(w.cfg.proto, w.nodes[i], tick_at, draw)
            return p.on_thread_tick(w.cfg.proto, w.nodes[i], thread, tick_at, draw)
        outcomes: list[tuple[Any, tuple, int]] = []
        for d in draws:
            outcome = tick_outcome(d)
            known = next((x for x in outcomes if x[0] == outcome), None)
            if known is None:
                _, after, lids = self.stepped(w, core.Tick(node=i, draw=d, late=lo, thread=thread))
                known = (outcome, tuple(lids), core.thread_wake_times(after, i)[thread])
                outcomes.append(known)
            _, key, wake = known
            score = abs(wake - nxt) if nxt is not None and wake >= 0 else (0 if d == ANY_DRAW else 1)
            if key not in best or score < best[key][0]:
                best[key] = (score, d)
        chosen = {d for _, d in best.values()} | {ANY_DRAW}
        return [(d, True) for d in sorted(chosen)]

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
        events = self.fact(w, ln)
        if not events:
            return None
        before = w.evolve(now=tau) if tau > w.now else w
        d = _skew(ln.t, tau)
        trail = (s.trail + ((w, ln.at),))[-TRAIL:]
        if ln.at in getattr(self.lp, "FACTS_WRITE", ()):  # an operator's command: the requests it sends
            # its lines are pending like any step's, with their causes: a request's delivery
            # after the line that sends it (the command comes from outside: no node line before it)
            (ev,) = events
            after, obs = core.step(before, ev)
            ns, _ = self.advance(s.but(w=before), ev, after, self.lines_of(before, ev, after, obs), ln, s)
            if ns is None:
                return None
            return ns.but(skew=max(ns.skew, d), events=s.events + 1, trail=trail, drift=ns.drift + d)
        after = before
        for ev in events:
            after, _ = core.step(after, ev)
        return s.but(w=after, skew=max(s.skew, d), events=s.events + 1, trail=trail, drift=s.drift + d)

    def fact(self, w: core.World, ln: il.LogLine) -> list:
        """The world events a fact's line stands for ([]: it cannot happen now)."""
        if ln.at == "crash":
            return [core.Crash(node=ln.node, os=bool(ln.fields.get("os")))] if w.alive[ln.node] else []
        if ln.at == "restart":
            return [core.Restart(node=ln.node)] if not w.alive[ln.node] else []
        if ln.at == "partition":
            return [core.Partition(groups=tuple(tuple(g) for g in ln.fields["groups"]))]
        if ln.at == "cut":
            f = ln.fields
            return [core.CutLink(src=f["src"], dst=f["dst"])] + (
                [core.CutLink(src=f["dst"], dst=f["src"])] if f["both"] else [])
        if ln.at == "heal":
            return [core.Heal()]
        if ln.at in getattr(self.lp, "FACTS", ()):
            if hasattr(self.lp, "fact_event"):  # a fact with fields (a topic created)
                ev = self.lp.fact_event(w, ln.node, ln.at, ln.fields)
            else:
                ev = self.lp.fact(w, ln.node, ln.at)  # a protocol's own fault (an HA connection reset)
            return [ev] if ev is not None else []
        return []

    def inject(self, s: State, ln: il.LogLine) -> State | None:
        """A request from a node outside the world (the log's clients, header "clients":
        "outside"): sent by that node at the line's time, a fact; its delivery writes the line.
        None: not now (the reference has work due before the line's time), or sent already."""
        w = s.w
        client = self.ids.index(ln.fields["peer"])
        outs = self.lp.outside_request(w.cfg.proto, self.ids[ln.node], ln.fields["request"],
                                       f"{ln.fields['peer']}@{ln.line}")
        if not w.alive[client] or any(e.src == client and e.msg == outs[0].msg for e in w.net.flight):
            return None
        if any(self.matches(ln.pos, p[0]) for p in s.pending):
            return None  # delivered already, its line pending
        h = core.horizon(w)
        tau = w.now if ln.t is None else max(w.now, ln.t if h < 0 else min(ln.t, h))
        if ln.t is not None and abs(tau - ln.t) > self.opts.slack_ms:
            return None
        after, _ = core.apply_outs(w.evolve(now=tau) if tau > w.now else w, client, outs)
        return s.but(w=after)

    def injected_near(self, pos: int, t: int | None, here: bool) -> list[int]:
        """The outside requests that may be sent before line `pos` is explained: its own, and
        those whose lines come after it within the slack (a handler's arrival line may be logged
        after what the handler did, docs/conformance.md "What comes first")."""
        out = [pos] if here else []
        if t is None:
            return out
        k = bisect.bisect_right(self.injected_order, pos)
        time_of = self.lines.t_at
        while k < len(self.injected_order):
            p = self.injected_order[k]
            tp = time_of(p)
            if tp is None or tp > t + self.opts.slack_ms:
                break
            out.append(p)
            k += 1
        return out

    def explain(self, s: State, ln: il.LogLine, budget: int) -> tuple[list[State], int, bool]:
        """The executions that explain line `ln` from execution `s`, the search states expanded
        for it, and whether the state budget (not the depth) stopped the search."""
        pos = ln.pos
        is_event = ln.at in self.lp.POINTS
        outside = pos in self.injected
        if is_event:  # an outside request taken early (its arrival line logged after its effects) is pending
            ready = None
            for k, (lid, tau, _, causes) in enumerate(s.pending):
                if self.matches(pos, lid) and self.on_time(ln.t, tau):
                    if causes and causes & (s.pending_ids() - {(lid, tau)}):
                        ready = ready or (k, causes)
                        continue
                    d = _skew(ln.t, tau)
                    return [s.but(pending=s.pending[:k] + s.pending[k + 1:], reordered=s.reordered + 1,
                                  skew=max(s.skew, d), drift=s.drift + d)], 0, False
            if ready is not None:
                lid, tau = s.pending[ready[0]][:2]
                self.miss(s, s, "pending", lid, self.too_early(s, ready[1]))
        opts = self.opts
        slack = opts.slack_ms
        goals: list[State] = []
        queue = deque([(s, 0)])
        seen = {s}
        first_goal_depth = opts.max_depth
        expanded = 0
        stopped = False
        while queue:
            st, depth = queue.popleft()
            for p in self.injected_near(pos, ln.t, outside):
                if p != pos and any(self.matches(p, q[0]) for q in st.pending):
                    continue  # taken already: its arrival line is pending
                sent = self.inject(st, self.lines[p])
                if sent is not None and sent not in seen:
                    seen.add(sent)
                    queue.appendleft((sent, depth))
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
            if expanded >= budget:
                self.stats.state_bound_hits += 1
                stopped = True
                break
            expanded += 1
            w = st.w
            if ln.t is not None and w.now > ln.t + slack:
                continue
            root = st
            for ev in self.candidates(root, ln):
                for st, after, written, fired, inferred in self.fire_settled(root, ev, pos, ln.t):
                    if ln.t is not None and after.now > ln.t + slack:
                        continue
                    ns, consumed = self.advance(st, fired, after, written, ln if is_event else None, s)
                    if ns is None:
                        continue
                    ns.guessed += inferred
                    if ns in seen:
                        continue
                    seen.add(ns)
                    if consumed:
                        goals.append(ns)
                        first_goal_depth = min(first_goal_depth, depth + 1)
                    elif not written and (isinstance(fired, core.Drop) or self.closes_at(st.w, fired,
                                                                                        core.horizon(st.w))):
                        # it writes nothing (a drop behind a cut link, a round's parse, a flush) and
                        # the reference must take it before anything later: it costs no depth
                        queue.appendleft((ns, depth))
                    else:
                        queue.append((ns, depth + 1))
        self.stats.states_expanded += expanded
        return goals, expanded, stopped and not goals

    def advance(self, st: State, fired: Any, after: core.World, written: list[tuple[int, str, int]],
                ln: il.LogLine | None, root: State) -> tuple[State | None, bool]:
        """Execution `st` after event `fired` (world `after`) wrote `written` (line id, what it
        is, envelope it carries): the line `ln` consumed if the event writes it on time and
        after everything it must come after, the other lines pending (each must be in the log
        ahead, within the slack), and what later lines must come after. None: no such execution.

        What comes first (docs/conformance.md): a delivery's lines after the line that sent
        the message (a send, or a handler's answer); every line of a node after the node's
        earlier completion lines still pending (a callback logs before completing its future,
        and the node acts on the answer after); within a step, the completion first and an
        answer after the node's own lines (a follower's append before its reply)."""
        before = st.w
        tau = after.now
        pending = list(st.pending)
        ids = st.pending_ids()
        actor = self.actor(before, fired)
        gets = fired.env if type(fired) is core.Deliver else -1
        deps: set = set(st.node_in[actor]) if actor >= 0 else set()
        if gets >= 0:
            for e, c in st.env_in:
                if e == gets:
                    deps |= c
        deps &= ids
        inputs: set = set()
        own: list[tuple[tuple[int, int], str, Any]] = []  # the step's own lines pending: (id, point, index)
        carried: dict[int, frozenset] = {}
        draws, skew, drift = st.draws, st.skew, st.drift
        consumed = False
        pos = ln.pos if ln is not None else -1
        for lid, kind, env in sorted(written, key=_ORDER):
            node, at, _ = self.written[lid]
            if at == self.lp.NEXT_INT:
                draws = draws[:node] + (draws[node] + 1,) + draws[node + 1:]
            causes = deps | (inputs if kind not in rl.INPUTS else set())
            if kind == rl.ANSWER and own:
                response = self.written[lid][2].get("response")
                causes = causes | self.reported(at, getattr(response, "get", lambda k: None)("index"), own)
            causes = frozenset(causes)
            if ln is not None and not consumed and self.matches(pos, lid):
                if not self.on_time(ln.t, tau):
                    self.miss(root, st, fired, lid, f"at t={tau}, the log's t={ln.t} is beyond the slack")
                elif causes:
                    self.miss(root, st, fired, lid, self.too_early(st, causes, pending))
                else:
                    consumed = True
                    skew = max(skew, _skew(ln.t, tau))
                    drift += _skew(ln.t, tau)
                    if env >= 0:
                        carried[env] = NONE
                    continue
            if ln is not None and node == ln.node and at == ln.at:
                self.miss(root, st, fired, lid, None)
            if not self.feasible(pos, lid, tau, causes):
                writes_it = ln is not None and any(self.matches(pos, x[0]) for x in written)
                self.miss(root, st, fired, lid, SIBLING if writes_it else "the log does not show it then",
                          frozenset(x[0] for x in written))
                return None, False
            pending.append((lid, tau, pos, causes))
            ids.add((lid, tau))
            if kind in rl.INPUTS:
                inputs.add((lid, tau))
            elif kind == rl.NODE:
                own.append(((lid, tau), at, self.written[lid][2].get("index")))
            if env >= 0:
                carried[env] = causes | {(lid, tau)}
        for e in after.net.flight:
            if e.id >= before.net.next_id and e.id not in carried:  # sent, its line not logged
                answer_at = self.reply_at.get(type(e.msg).__name__, "")
                reported = self.reported(answer_at, getattr(e.msg, "index", None), own) if e.reply else set()
                carried[e.id] = frozenset(deps | inputs | reported)
        node_in = st.node_in
        if actor >= 0:
            node_in = node_in[:actor] + (frozenset(deps | inputs),) + node_in[actor + 1:]
        env_in = [(e, c) for e, c in st.env_in if e != gets] + [(e, c) for e, c in carried.items() if c]
        node_in, env_in = _pruned(ids, node_in, env_in, after)
        late = getattr(fired, "late", 0)
        ns = State(after, tuple(pending), draws, st.hidden + (not written), st.reordered, st.late + late, skew,
                   st.events + 1, (st.trail + ((before, fired),))[-TRAIL:], drift, st.guessed, node_in, env_in)
        return ns, consumed

    def reported(self, at: str, index: Any, own: list) -> set:
        """The step's own pending lines that an answer at log point `at` reports, so comes after
        (the protocol's `ANSWER_AFTER`: a follower's append before its answer to the push):
        those at the listed points with an index at most the answer's (a step that appends
        several entries answers each after its own append)."""
        points = self.answer_after.get(at)
        if not points:
            return set()
        return {ident for ident, point, i in own
                if point in points and (index is None or i is None or i <= index)}

    def too_early(self, s: State, causes: frozenset, pending: list | None = None) -> str:
        """Why a line the reference writes cannot be the log's line yet: the lines it must come
        after that the log has not shown, the most recent first (the quorum's answers before the
        pushes they answer)."""
        waiting = {(p[0], p[1]) for p in (pending if pending is not None else s.pending)}
        first = sorted((c for c in causes if c in waiting), key=lambda c: (-c[1], -c[0]))
        if not first:
            return "the reference writes it only after lines the log does not show before it"
        shown = "; ".join(f"{self.describe_lid(lid)}{self.where_in_log(lid)}" for lid, _ in first[:2])
        more = f" (and {len(first) - 2} more)" if len(first) > 2 else ""
        return f"the reference writes it only after {shown}{more}, which the log does not show before it"

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
                if ((rpc.requester == x or rpc.responder == x or self.closes_at(w, ev, h))
                        and self.first_to_fail(w, rpc)):
                    out.append(ev)
            else:
                out.append(ev)
        return out

    def due_by(self, s: State) -> list[tuple[int, int, int]]:
        """For each thread whose tick is enabled (a node that is one actor is one thread): (node,
        thread, the time by which it must have fired if it writes nothing: its wake time plus
        its own loop slack, not the allowance, plus HIDDEN_LATE_MS). The allowance lets a tick
        be late when its lines show it was; a tick that writes nothing (a round's parse, a loop
        that finds nothing to do, a new leader's dispatcher with nothing to push) is taken on
        time, before another thread's event moves the clock past it, or the search would
        explain a log with the reference's rounds shifted by one (each within the slack)."""
        if s._overdue is None:
            w = s.w
            out = []
            for j in range(len(w.nodes)):
                for k, wake in enumerate(core.thread_wake_times(w, j)):
                    if wake < 0:
                        continue
                    lo, hi = core.tick_window(w, j, k)
                    if lo > hi:
                        continue
                    out.append((j, k, wake + self.own_slack_of(w, j, k) + HIDDEN_LATE_MS))
            s._overdue = out
        return s._overdue

    def own_slack_of(self, w: core.World, j: int, k: int) -> int:
        """Thread k of node j's own slack under Java timing (its loop's, without the allowance),
        at least the start-up stagger while the node has not run since it (re)started."""
        n = w.nodes[j]
        if self.own_thread_slack is not None:
            wakes = core.wake_of(w, n, self.thread_wakes)
            own = self.own_thread_slack(w.cfg.proto, n, k, w.since[j][k], wakes[k])
        elif self.own_slack is not None:
            own = self.own_slack(w.cfg.proto, n, w.since[j], core.wake_of(w, n))
        else:
            own = 0
        if j in w.fresh:  # Java's own stagger: the allowance on it is for ticks whose lines show them late
            own = max(own, faults.STAGGER_MS)
        return own

    def hidden_tick(self, s: State, j: int, k: int) -> bool:
        """Whether the due tick of node j's thread k writes nothing (memoised per state and thread)."""
        key = (id(s), j, k)
        hit = self.hidden_memo.get(key)
        if hit is None or hit[0] is not s:
            w = s.w
            _, _, lids = self.stepped(w, core.Tick(node=j, draw=0, late=core.tick_window(w, j, k)[0], thread=k))
            if len(self.hidden_memo) > 4096:
                self.hidden_memo.clear()
            hit = self.hidden_memo[key] = (s, not lids)
        return hit[1]

    def overdue_at(self, s: State, t: int, mover: tuple[int, int] = (-1, -1)) -> list[tuple[int, int]]:
        """The threads (node, thread) whose ticks write nothing and must have fired before `t`,
        but the event's own (`mover`, Search.mover)."""
        return [(j, k) for j, k, by in self.due_by(s)
                if not _moves(mover, j, k) and by < t and self.hidden_tick(s, j, k)]

    def actor(self, w: core.World, ev: Any) -> int:
        """The node an event acts on (-1: none)."""
        if isinstance(ev, core.Tick):
            return ev.node
        if isinstance(ev, core.Deliver):
            return net_mod.find(w.net, ev.env).dst
        if isinstance(ev, core.RpcFail):
            return net_mod.find_rpc(w.net, ev.rpc).requester
        return -1

    def mover(self, w: core.World, ev: Any) -> tuple[int, int]:
        """The thread an event is (node, thread), or for a delivery or an RPC failure its node
        (node, -1: every thread of it), whose due ticks `settle` leaves alone."""
        return (ev.node, ev.thread) if isinstance(ev, core.Tick) else (self.actor(w, ev), -1)

    def fire_settled(self, s: State, ev: Any, pos: int, line_t: int | None) -> list:
        """`fire`, but an event that moves the clock past another thread's due tick that writes
        nothing is taken after that tick (`settle`): (the state it was taken from, world after,
        lines, event, inferred draw) for each choice."""
        out = []
        for after, lids, fired, inferred in self.fire(s, ev, pos, line_t):
            tau = after.now
            mover = self.mover(s.w, fired)
            if tau <= s.w.now or not self.overdue_at(s, tau, mover):
                out.append((s, after, lids, fired, inferred))
                continue
            settled = self.settle(s, tau, mover)
            if settled is None:
                continue
            for after2, lids2, fired2, inferred2 in self.fire(settled, ev, pos, line_t):
                if after2.now <= settled.w.now or not self.overdue_at(settled, after2.now, mover):
                    out.append((settled, after2, lids2, fired2, inferred2))
        return out

    def settle(self, s: State, tau: int, mover: tuple[int, int]) -> State | None:
        """Take, in the order they fall due, the ticks of threads other than `mover`'s that write
        nothing and are due before `tau`, each at its earliest time."""
        for _ in range(4 * sum(len(core.thread_wake_times(s.w, j)) for j in range(len(self.ids)))):
            due = [(by, j, k) for j, k, by in self.due_by(s)
                   if not _moves(mover, j, k) and by < tau and self.hidden_tick(s, j, k)]
            if not due:
                return s
            _, j, k = min(due)
            w = s.w
            ev = core.Tick(node=j, draw=0, late=core.tick_window(w, j, k)[0], thread=k)
            _, after, lids = self.stepped(w, ev)
            if lids:
                return None
            s, _ = self.advance(s, ev, after, [], None, s)
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
            if (r.requester == rpc.requester and r.responder == rpc.responder
                    and type(self.lp.failed_reply(r.ctx)) is type(self.lp.failed_reply(rpc.ctx))
                    and (r.deadline_ms, r.id) < (rpc.deadline_ms, rpc.id)
                    and core.rpc_window(w, r.id)[0] <= core.rpc_window(w, r.id)[1]):
                return False
        return True

    def closes_at(self, w: core.World, ev: Any, h: int) -> bool:
        """Whether the event's window closes at the horizon: the reference must take it (or
        another such event) before anything later."""
        if isinstance(ev, core.Tick):
            j, k = ev.node, ev.thread
            # a server's threads keep their own window (scheduler.tolerant_protocol); a node that
            # is one actor has the allowance on top
            allowance = self.opts.slack_ms if self.own_thread_slack is None else 0
            return core.thread_wake_times(w, j)[k] + self.own_slack_of(w, j, k) + allowance <= h
        if isinstance(ev, (core.Deliver, core.Drop)):
            env = net_mod.find(w.net, ev.env)
            return env.sent_ms + core.delay_window(w)[1] <= h
        if isinstance(ev, core.RpcFail):
            rpc = net_mod.find_rpc(w.net, ev.rpc)
            return rpc.deadline_ms + rpc.window <= h
        return True

    def miss(self, root: State, s: State, ev: Any, lid: int, why: str | None,
             step: frozenset = frozenset()) -> None:
        """Remember a near miss for the report: from frontier state `root`, an event taken in
        state `s` writes a line like the failing one (`why` None: it differs in its fields);
        `step`: the lines that event writes, when the report needs them (a sibling's)."""
        mine = [n for n in self.near if n[0] is root]
        if len(mine) < 6 and not any(n[3] == lid and n[4] == why for n in mine):
            self.near.append((root, s, ev, lid, why, step))


_RANK = {rl.COMPLETION: 0, rl.ARRIVAL: 1, rl.NODE: 1, rl.SEND: 1, rl.ANSWER: 2}


def _ORDER(line: tuple[int, str, int]) -> int:
    """A step's lines in the order Java writes them: the input first, an answer last."""
    return _RANK[line[1]]


def _goes_on(after: core.World, ev: Any) -> bool:
    """Whether a tick's thread goes on at once with the next step of the same pass (a candidate's
    round after the lock is released: maintainAsCandidate's two steps), so that its writing-nothing
    first step is late when the second's lines are."""
    return isinstance(ev, core.Tick) and 0 <= core.thread_wake_times(after, ev.node)[ev.thread] <= after.now


def _same_lines(a: list, b: list) -> bool:
    """Whether two steps write the same lines (by line id, in order)."""
    return bool(a) and len(a) == len(b) and all(x[0] == y[0] for x, y in zip(a, b))


def _moves(mover: tuple[int, int], j: int, k: int) -> bool:
    """Whether thread k of node j is the event's own (`Search.mover`: thread -1 is all of a node)."""
    return mover[0] == j and mover[1] in (-1, k)


def _pruned(ids: set, node_in: tuple, env_in: list, after: core.World) -> tuple[tuple, tuple]:
    """The causes that still matter: lines still pending, envelopes still in flight."""
    node_in = tuple(c & ids if c else c for c in node_in)
    if env_in:
        live = {e.id for e in after.net.flight}
        env_in = sorted((e, c & ids) for e, c in env_in if e in live and c & ids)
    return node_in, tuple(env_in)
