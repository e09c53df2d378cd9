"""Explaining one log line: the breadth-first search over reference events from one execution,
each event timed to the log, with the draws the log shows or the search infers."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from histories import impl_log as il
from histories.tolerant.lookahead import Lookahead
from histories.tolerant.records import ANY_DRAW, HIDDEN_LATE_MS, PROBES, TRAIL, State, _skew
from reference_impl import core
from reference_impl.core import network as net_mod


class Search(Lookahead):
    """The per-line search (`explain`) and the events it takes."""

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
        if ln.at in getattr(self.lp, "FACTS", ()):
            return self.lp.fact(w, ln.node, ln.at)  # a protocol's own fault (an HA connection reset)
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
                own = own_slack(w.cfg.proto, w.nodes[j], w.since[j], core.wake_of(w, w.nodes[j])) \
                    if own_slack is not None else 0
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

    def closes_at(self, w: core.World, ev: Any, h: int) -> bool:
        """Whether the event's window closes at the horizon: the reference must take it (or
        another such event) before anything later."""
        if isinstance(ev, core.Tick):
            j = ev.node
            own = self.own_slack(w.cfg.proto, w.nodes[j], w.since[j], core.wake_of(w, w.nodes[j])) \
                if self.own_slack is not None else 0
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
