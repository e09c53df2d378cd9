"""Time, and what may happen next in a world.

Theory of operation
-------------------
Time advances only through events. Each node says when it next has work to do
(`wake_at`, and never before that wake time was set: `World.since`); under Java timing
its tick may fire up to `tick_slack` ms later (the period of the Java loop that notices
it; the start-up stagger for a node's first tick), so a tick is a window like a
delivery. A node that runs several threads (`Protocol.threads`) says so for each thread
(`thread_wakes`, `thread_slack`, its own `since`): every thread is an actor with its own
window and its own `Tick(node, thread)`. Each message may be delivered within the delay window of the fault profile;
each open RPC fails at its deadline, an invokeAsync timeout within one scan period of
Netty's response table after it (reference_impl.core.network); a scenario script pins
actions at given times. The *horizon* is the earliest time by which something must
have happened: the earliest end of those windows and deadlines. Every tick, delivery
and RPC failure whose window has opened by the horizon is enabled, in any order;
script actions and the quiet tail are enabled when they are due exactly at the
horizon. A delivery happens at the earliest time its window allows; a tick or an RPC
failure at its wake time or deadline plus the `late` it carries (`tick_window` and
`rpc_window` say which values are possible). Faults (crash, partition, loss,
duplication, ...) are enabled at the present instant while the profile allows them.

Messages are delivered in any order, except those the protocol says travel in send order
(`Protocol.fifo`: one TCP connection read by one handling thread, such as DLedger's pushes
under `push_processor` "single_thread"). Such a message is *held* while an older such
message is in flight on the same (src, dst) link (flight is in send order; a duplicate's
copy is a new, later envelope): its delivery is not enabled and its window does not
bound the horizon, which the oldest one's does. Once it is the oldest, its window counts
again, and if that has closed meanwhile it is due at once. Behind a cut link nothing is
held: a message whose window closes there is lost, as any other.

`enabled(w)` is `protocol_events(w) + fault_events(w)`; the order is part of the
seeded chooser's contract (a seed names a history), so it is stable: the quiet tail, the
script, the ticks (node by node, a node's threads in index order), deliveries (in send
order), RPC failures, the protocol's own events. `event_time(w, e)`
is when `e` happens and `is_enabled(w, e)` checks an event from a trace.

Memos keep the hot path cheap without changing any answer. `_LAST`, `_LAST_EVENTS` and
`_LAST_WAKES` remember the horizon, the protocol events and the (wake time, slack) of
every thread of every node of the last world asked (`_LAST_HELD` the held envelopes of the last network
and world config asked), since the chooser, `step`, a replay's `is_enabled`
and the shrinker's default steps ask several times about the same world. A step changes
one node or two, so `_wakes` of the next world takes the entry of each node whose
inputs are those of the last world: the very same state object, the same `since`, up
in both, fresh in both or in neither, the same world config object and the same
protocol functions (`wake_at`, `tick_slack`); any other node is computed anew. The
memo holds one world, so it keeps nothing else alive. All are memos of pure functions
of immutable values; `forget` empties them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import reference_impl.core.network as net_mod
from reference_impl.core.events import (
    Calm,
    Crash,
    CutLink,
    Deliver,
    Drop,
    Duplicate,
    Heal,
    Partition,
    Restart,
    RpcFail,
    Scripted,
    Tick,
)
from reference_impl.core.faults import FAULT_KINDS
from reference_impl.core.plugin import protocol
from reference_impl.core.world import World, forget_wakes, wake_of

CALM_DELAY_MS = (1, 5)  # message delays once the quiet tail has begun

_LAST: list = [None, -1]  # [world, its horizon]
_LAST_EVENTS: list = [None, ()]  # [world, its protocol events]
_LAST_WAKES: list = [None, None, None]  # [world, its _wakes, (wake_at, tick_slack) they were computed with]
_LAST_HELD: list = [None, None, frozenset()]  # [network, world config, the ids of its held envelopes]
_NONE_HELD: frozenset = frozenset()


def forget() -> None:
    """Empty every memo of wake times. They remember pure functions of immutable values;
    only replacing a protocol's function in place (a test's mutant) makes an entry stale."""
    _LAST[:] = [None, -1]
    _LAST_EVENTS[:] = [None, ()]
    _LAST_WAKES[:] = [None, None, None]
    _LAST_HELD[:] = [None, None, _NONE_HELD]
    _DELIVERS.clear()
    forget_wakes()


def wake_times(w: World) -> list[int]:
    """When each node's next tick may fire at the earliest (-1: down, or nothing to do):
    its `wake_at` (for a threaded node, the earliest of its threads'), but never before
    that wake time was set (`World.since`)."""
    out = []
    for pairs in _wakes(w):
        if len(pairs) == 1:
            out.append(pairs[0][0])
        else:
            out.append(min((t for t, _ in pairs if t >= 0), default=-1))
    return out


def thread_wake_times(w: World, i: int) -> tuple[int, ...]:
    """When each thread of node i may next fire at the earliest (-1: down, or nothing to do);
    one entry for a node that is one actor."""
    return tuple(t for t, _ in _wakes(w)[i])


_DOWN = ((-1, 0),)


def _wakes(w: World) -> list[tuple[tuple[int, int], ...]]:
    """Per node, the (earliest tick time, slack) of each of its threads (one pair for a node
    that is one actor); slack is how much later the tick may fire: the protocol's
    `tick_slack` (`thread_slack`) under Java timing, at least the start-up stagger for a
    node that has not run since it (re)started, 0 under pinned timing."""
    last, last_out, last_fns = _LAST_WAKES
    if last is w:
        return last_out
    p = protocol(w.cfg.protocol)
    threaded = p.thread_wakes is not None
    wake_at, slack_of = (p.thread_wakes, p.thread_slack) if threaded else (p.wake_at, p.tick_slack)
    if last is not None and (last.cfg is not w.cfg or last_fns[0] is not wake_at or last_fns[1] is not slack_of):
        last = None  # nothing to take over (module docstring)
    c = w.cfg.proto
    prof = w.cfg.profile
    java = prof.timing == "java"
    stagger = prof.stagger_ms if java else 0
    fresh, since_all = w.fresh, w.since
    if last is not None:
        lnodes, lsince, lalive, lfresh = last.nodes, last.since, last.alive, last.fresh
        same_fresh = fresh is lfresh
    out = []
    for i, (n, up) in enumerate(zip(w.nodes, w.alive)):
        if not up:
            out.append(_DOWN if not threaded else ((-1, 0),) * len(since_all[i]))
        elif (last is not None and n is lnodes[i] and since_all[i] == lsince[i] and lalive[i]
              and (same_fresh or (i in fresh) == (i in lfresh))):
            out.append(last_out[i])
        elif not threaded:
            t = wake_of(w, n, wake_at)
            if t < 0:
                out.append(_DOWN)
            else:
                since = since_all[i]
                slack = slack_of(c, n, since, t) if java and slack_of is not None else 0
                if stagger > slack and i in fresh:
                    slack = stagger
                out.append(((max(t, since), slack),))
        else:
            pairs = []
            starting = stagger if i in fresh else 0
            for k, (t, since) in enumerate(zip(wake_of(w, n, wake_at), since_all[i])):
                if t < 0:
                    pairs.append((-1, 0))
                    continue
                slack = slack_of(c, n, k, since, t) if java and slack_of is not None else 0
                pairs.append((max(t, since), max(slack, starting)))
            out.append(tuple(pairs))
    _LAST_WAKES[0], _LAST_WAKES[1], _LAST_WAKES[2] = w, out, (wake_at, slack_of)
    return out


def horizon(w: World) -> int:
    """The earliest time something must happen; -1 if nothing ever will."""
    if _LAST[0] is w:
        return _LAST[1]
    return _remember(w, _horizon(w, _wakes(w)))


def _remember(w: World, h: int) -> int:
    _LAST[0], _LAST[1] = w, h
    return h


def tick_window(w: World, i: int, thread: int = 0) -> tuple[int, int]:
    """The `late` values a tick of node i's thread `thread` may carry now, in ms after its
    wake time: (earliest, latest); empty (lo > hi) when it is not enabled. Earliest makes it
    fire no sooner than now."""
    pairs = _wakes(w)[i]
    if not 0 <= thread < len(pairs):
        return 1, 0
    wake, slack = pairs[thread]
    h = horizon(w)
    if wake < 0 or h < 0 or wake > h:
        return 1, 0
    lo = max(0, w.now - wake)
    return lo, max(lo, min(slack, h - wake))  # overdue beyond its slack: now, and only now


def rpc_window(w: World, rpc_id: int) -> tuple[int, int]:
    """The `late` values an RpcFail of open RPC `rpc_id` may carry now, in ms after its
    deadline (an invokeAsync timeout: up to one response-table scan period under Java
    timing); empty when it is not enabled."""
    rpc = net_mod.find_rpc(w.net, rpc_id)
    h = horizon(w)
    if rpc is None or h < 0 or rpc.deadline_ms > h:
        return 1, 0
    window = rpc.window if w.cfg.profile.timing == "java" else 0
    lo = max(0, w.now - rpc.deadline_ms)
    return lo, max(lo, min(window, h - rpc.deadline_ms))


def _horizon(w: World, wakes: Sequence[tuple[tuple[int, int], ...]]) -> int:
    h = -1
    for pairs in wakes:
        for t, slack in pairs:
            if t >= 0 and (h < 0 or t + slack < h):
                h = t + slack
    net = w.net
    if net.flight:
        dmax = delay_window(w)[1]
        held = _held(w)
        for env in net.flight:
            if held and env.id in held:
                continue  # its window counts once the older ones on its link are gone
            t = env.sent_ms + dmax
            if h < 0 or t < h:
                h = t
    cfg = w.cfg
    prof = cfg.profile
    if net.rpcs:
        java = prof.timing == "java"
        for rpc in net.rpcs:
            t = rpc.deadline_ms + rpc.window if java else rpc.deadline_ms
            if h < 0 or t < h:
                h = t
    script = cfg.script
    if w.script_pos < len(script):
        t = script[w.script_pos].at_ms
        if h < 0 or t < h:
            h = t
    calm_at = prof.calm_at_ms
    if calm_at is not None and not w.history.calm and (h < 0 or calm_at < h):
        h = calm_at
    if w.ext is not None:
        t = protocol(cfg.protocol).ext_deadline(w)
        if t >= 0 and (h < 0 or t < h):
            h = t
    return max(h, w.now) if h >= 0 else -1


def delay_window(w: World) -> tuple[int, int]:
    return CALM_DELAY_MS if w.history.calm else w.cfg.profile.delay_ms


def _held(w: World) -> frozenset[int]:
    """The ids of the envelopes in flight whose delivery waits for an older one on their link:
    messages the protocol delivers in send order (`Protocol.fifo`) behind an older such
    message from the same node to the same node (module docstring). None behind a cut link."""
    net = w.net
    if _LAST_HELD[0] is net and _LAST_HELD[1] is w.cfg:
        return _LAST_HELD[2]
    fifo = protocol(w.cfg.protocol).fifo
    held = _NONE_HELD
    if fifo is not None and net.flight:
        c = w.cfg.proto
        cut = net.cut
        links: set = set()
        ids: list = []
        for env in net.flight:
            if fifo(c, env.msg):
                link = (env.src, env.dst)
                if link not in links:
                    links.add(link)
                elif not (cut and link in cut):
                    ids.append(env.id)
        if ids:
            held = frozenset(ids)
    _LAST_HELD[0], _LAST_HELD[1], _LAST_HELD[2] = net, w.cfg, held
    return held


# --- what may happen next ---


def enabled(w: World) -> list:
    """Every event that may happen next: protocol events, then faults."""
    return protocol_events(w) + fault_events(w)


_TICKS = tuple(Tick(node=i) for i in range(64))  # events are immutable: share the common ones
_THREAD_TICKS: dict[tuple[int, int], Tick] = {}  # (node, thread) -> its Tick, made once
# A message stays in flight for several steps and is listed at each: its Deliver is made once.
# Bounded like the other memos; an envelope id names one envelope within a history.
_DELIVERS: dict[int, Deliver] = {}


def protocol_events(w: World) -> list:
    """Ticks, deliveries, RPC failures, the script and the quiet tail that are due by the horizon."""
    return list(due_events(w))


def due_events(w: World) -> tuple:
    """`protocol_events` as a tuple, without the copy (the seeded chooser's read)."""
    if _LAST_EVENTS[0] is not w:
        _LAST_EVENTS[0], _LAST_EVENTS[1] = w, tuple(_protocol_events(w))
    return _LAST_EVENTS[1]


def _protocol_events(w: World) -> list:
    wakes = _wakes(w)
    h = _horizon(w, wakes)
    _LAST[0], _LAST[1] = w, h
    if h < 0:
        return []
    events: list = []
    cfg = w.cfg
    if cfg.profile.calm_at_ms == h and not w.history.calm:
        events.append(Calm())
    if w.script_pos < len(cfg.script) and cfg.script[w.script_pos].at_ms == h:
        events.append(Scripted(index=w.script_pos))
    for i, pairs in enumerate(wakes):
        if len(pairs) == 1:
            t = pairs[0][0]
            if 0 <= t <= h:
                events.append(_TICKS[i])
            continue
        for k, (t, _) in enumerate(pairs):
            if 0 <= t <= h:
                events.append(_thread_tick(i, k))
    net = w.net
    if net.flight:
        dmin, dmax = delay_window(w)
        cut = net.cut
        held = _held(w)
        for env in net.flight:
            if cut and (env.src, env.dst) in cut:
                if env.sent_ms + dmax <= h:
                    events.append(Drop(env=env.id))  # its window closed behind a cut link: lost
            elif env.sent_ms + dmin <= h and not (held and env.id in held):
                d = _DELIVERS.get(env.id)
                if d is None:
                    if len(_DELIVERS) > 4096:
                        _DELIVERS.clear()
                    d = _DELIVERS[env.id] = Deliver(env=env.id)
                events.append(d)
    for rpc in net.rpcs:
        if rpc.deadline_ms <= h:
            events.append(RpcFail(rpc=rpc.id))
    if w.ext is not None:
        events += protocol(cfg.protocol).ext_events(w, h)
    return events


def _thread_tick(i: int, k: int) -> Tick:
    ev = _THREAD_TICKS.get((i, k))
    if ev is None:
        ev = _THREAD_TICKS[(i, k)] = Tick(node=i, thread=k)
    return ev


def crashable(w: World) -> list[int]:
    """Live nodes random faults may crash."""
    allowed = w.cfg.crashable
    return [i for i, up in enumerate(w.alive) if up and (not allowed or i in allowed)]


def fault_kinds(w: World) -> list[str]:
    """The fault kinds (FaultProfile weight names) that have at least one event now."""
    prof = w.cfg.profile
    if w.history.calm:
        return []
    kinds = []
    flight, cut = w.net.flight, w.net.cut
    if prof.loss and any(not (cut and (e.src, e.dst) in cut) for e in flight):
        kinds.append("loss")
    if prof.duplicate and flight:
        kinds.append("duplicate")
    up = bool(crashable(w)) if prof.crash or prof.os_crash or prof.disk_loss else False
    if prof.crash and up:
        kinds.append("crash")
    if prof.os_crash and up:
        kinds.append("os_crash")
    if prof.disk_loss and up:
        kinds.append("disk_loss")
    if prof.restart and not all(w.alive):
        kinds.append("restart")
    n = len(w.nodes)
    if prof.partition and n > 1:
        kinds.append("partition")
    if prof.one_way and len(cut) < n * (n - 1):
        kinds.append("one_way")
    if prof.heal and cut:
        kinds.append("heal")
    if prof.ext:
        ext_faults = protocol(w.cfg.protocol).ext_faults
        for kind, weight in prof.ext:
            if weight and ext_faults is not None and ext_faults(w, kind):
                kinds.append(kind)
    return kinds


def fault_events(w: World, kinds: Sequence[str] | None = None) -> list:
    """Faults the profile allows now (none once the quiet tail has begun), optionally of given kinds only."""
    events: list = []
    cut = w.net.cut
    n = len(w.nodes)
    for kind in fault_kinds(w) if kinds is None else kinds:
        if kind == "loss":
            events.extend(Drop(env=e.id) for e in w.net.flight if not (cut and (e.src, e.dst) in cut))
        elif kind == "duplicate":
            events.extend(Duplicate(env=e.id) for e in w.net.flight)
        elif kind in ("crash", "os_crash", "disk_loss"):
            events.extend(Crash(node=i, os=kind != "crash", disk=kind == "disk_loss") for i in crashable(w))
        elif kind == "restart":
            events.extend(Restart(node=i) for i in range(n) if not w.alive[i])
        elif kind == "partition":
            events.extend(Partition(groups=g) for g in isolations(n))
        elif kind == "one_way":
            events.extend(CutLink(src=a, dst=b) for a in range(n) for b in range(n) if a != b and (a, b) not in cut)
        elif kind == "heal":
            events.append(Heal())
        elif kind not in FAULT_KINDS:
            events.extend(protocol(w.cfg.protocol).ext_faults(w, kind))
    return events


def isolations(n: int) -> list[tuple[tuple[int, ...], ...]]:
    """The symmetric partitions the fault chooser picks from: each node alone, and
    (for 4+ nodes) each split into a minority and a majority of consecutive ids."""
    out = [((i,), tuple(j for j in range(n) if j != i)) for i in range(n)]
    if n >= 4:
        for size in range(2, (n - 1) // 2 + 1):
            for start in range(n):
                minority = tuple(sorted((start + k) % n for k in range(size)))
                rest = tuple(j for j in range(n) if j not in minority)
                g = (minority, rest)
                if g not in out:
                    out.append(g)
    return out


def is_enabled(w: World, event: Any) -> bool:
    """Whether `event` (with any draw, and a `late` its window allows) may happen next;
    used to validate replayed traces."""
    if isinstance(event, Tick):
        lo, hi = tick_window(w, event.node, event.thread) if 0 <= event.node < len(w.nodes) else (1, 0)
        return lo <= event.late <= hi and Tick(node=event.node, thread=event.thread) in protocol_events(w)
    if isinstance(event, RpcFail):
        lo, hi = rpc_window(w, event.rpc)
        return lo <= event.late <= hi and RpcFail(rpc=event.rpc) in protocol_events(w)
    return event in protocol_events(w) or event in fault_events(w)  # enabled(w), the faults only when needed


def deadline(w: World, event: Any) -> int:
    """The latest time a protocol event listed by `protocol_events(w)` may happen: the end
    of its window (a tick's wake time plus its Java-timing slack, a message's send time
    plus the longest delay, an RPC's deadline plus its scan window); the horizon for
    events due exactly there. A history that takes every event before its deadline
    passes is one the world allows (the shrinker's default steps rely on this). A listed
    delivery of a message sent in order (`Protocol.fifo`) is the oldest on its link, so its
    own window is the one that counts."""
    if isinstance(event, Tick):
        wake, slack = _wakes(w)[event.node][event.thread]
        return max(w.now, wake + slack)
    if isinstance(event, (Deliver, Drop)):
        return net_mod.find(w.net, event.env).sent_ms + delay_window(w)[1]
    if isinstance(event, RpcFail):
        rpc = net_mod.find_rpc(w.net, event.rpc)
        return rpc.deadline_ms + (rpc.window if w.cfg.profile.timing == "java" else 0)
    return event_time(w, event)


def event_time(w: World, event: Any) -> int:
    """The time at which `event` happens: the horizon for due events, earlier for deliveries."""
    kind = type(event)
    if kind is Deliver:
        env = net_mod.find(w.net, event.env)
        return max(w.now, env.sent_ms + delay_window(w)[0])
    if kind is Tick:
        return max(w.now, _wakes(w)[event.node][event.thread][0] + event.late)
    if kind is RpcFail:
        return max(w.now, net_mod.find_rpc(w.net, event.rpc).deadline_ms + event.late)
    if kind is Scripted or kind is Calm:
        return horizon(w)
    return w.now
