"""A world: the nodes of one protocol, the network between them, faults, and ghost history.

Theory of operation
-------------------
A world is one immutable value. It changes only through `step(world, event)`, and
`enabled(world)` lists every event that may happen next. All nondeterminism is the
choice among those events (plus the `draw` a tick carries), so one world serves the
Hypothesis machines, the seeded fuzzer, the exhaustive explorer and trace replay.

Time advances only through events. Each node says when it next has work to do
(`wake_at`); each message may be delivered within the delay window of the fault
profile; each open RPC times out at its deadline; a scenario script pins actions at
given times. The *horizon* is the earliest of those deadlines. Events that are due at
the horizon are enabled, and so is every delivery whose window has opened by then, so
a delivery can happen before the horizon, in any order. Faults (crash, partition, loss,
duplication, ...) are enabled at the present instant while the profile allows them.

A protocol plugs in through a `Protocol` value: how to boot, tick, answer requests and
replies, crash and restart a node, what its ghost variables record, and what its
observable state (the trace's `state`) is. Ghost variables exist only so properties can
be stated; nothing in a protocol's transitions reads them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from reference_impl import network as net_mod
from reference_impl.network import Network, Respond, Send
from reference_impl.state import EMPTY, FrozenMap, record

DRAW_SPAN = 1 << 16  # a tick's draw is uniform in [0, DRAW_SPAN)


# --- events (one per action of the world, as raft.tla has one per message type) ---


@record
class Tick:
    """The node's threads that are due at the horizon run; `draw` feeds its random choice."""

    node: int
    draw: int = 0


@record
class Deliver:
    env: int  # Envelope.id


@record
class Drop:
    env: int


@record
class Duplicate:
    env: int


@record
class RpcFail:
    """An open RPC's callback fires with no response (timeout, refused or reset connection)."""

    rpc: int


@record
class Crash:
    """The node's process dies. `os`: the machine goes down too and unsynced writes are lost."""

    node: int
    os: bool = False


@record
class Restart:
    node: int


@record
class Partition:
    """Cut every link between nodes of different groups (both directions)."""

    groups: tuple[tuple[int, ...], ...]


@record
class CutLink:
    """Cut one direction of one link: `src` can no longer reach `dst`."""

    src: int
    dst: int


@record
class Heal:
    pass


@record
class Calm:
    """The quiet tail begins: links heal, down nodes restart, no more faults."""


@record
class Scripted:
    """Action `index` of the scenario script, at its time."""

    index: int


@record
class Client:
    """A client request of the protocol (append, send, pull, ...); `action` is protocol data."""

    node: int
    action: Any


FAULT_EVENTS = (Drop, Duplicate, Crash, Restart, Partition, CutLink, Heal)


@record
class FaultProfile:
    """Which faults may happen, how often (weights the seeded chooser uses per step), and when they stop.

    `delay_ms` is the window within which a message is delivered unless lost.
    `calm_at_ms`: from then on no faults; links heal and down nodes restart (the quiet tail).
    """

    name: str = "none"
    delay_ms: tuple[int, int] = (1, 5)
    loss: float = 0.0
    duplicate: float = 0.0
    crash: float = 0.0
    os_crash: float = 0.0
    restart: float = 0.0
    partition: float = 0.0
    one_way: float = 0.0
    heal: float = 0.0
    client: float = 0.0
    calm_at_ms: int | None = None
    description: str = ""

    def any_faults(self) -> bool:
        return any((self.loss, self.duplicate, self.crash, self.os_crash, self.partition, self.one_way))


@record
class History:
    """Ghost variables every world keeps, for bounded properties and reports."""

    last_fault_ms: int = -1
    crashes: int = 0
    os_crashes: int = 0
    calm: bool = False
    calm_at_ms: int = -1


@record
class WorldConfig:
    protocol: str
    ids: tuple[str, ...]
    proto: Any  # the protocol's own config record
    profile: FaultProfile = FaultProfile()
    script: tuple = ()  # scenario actions (reference_impl.scenario), sorted by time
    down: tuple[int, ...] = ()  # nodes not started at time 0


@record
class World:
    cfg: WorldConfig
    now: int
    nodes: tuple
    alive: tuple[bool, ...]
    net: Network
    ghost: Any
    history: History = History()
    script_pos: int = 0
    vars: FrozenMap = EMPTY  # scenario bindings (`let`)


@record
class Protocol:
    """What a protocol supplies to the world. `n` below is a node state, `c` the protocol config."""

    name: str
    boot: Callable  # (c, node_id, index, now) -> n
    wake_at: Callable  # (c, n) -> int, -1 for never
    on_tick: Callable  # (c, n, now, draw) -> (n, outs)
    on_request: Callable  # (c, n, msg, rpc_id, now) -> (n, reply | None, outs)
    on_response: Callable  # (c, n, ctx, peer_id, reply | None, now) -> (n, outs)
    on_message: Callable | None  # (c, n, msg, peer_id, now) -> (n, outs), one-way messages
    crash: Callable  # (c, n, os) -> n (what survives)
    restart: Callable  # (c, n, now) -> n
    ghost_init: Callable  # (cfg) -> ghost
    ghost_update: Callable  # (ghost, world_before_ghost, node_index, obs) -> ghost
    observe: Callable  # (c, n, alive) -> dict, the trace's per-node observable state
    make_config: Callable  # (nodes, overrides: dict) -> WorldConfig with that protocol's defaults
    load_config: Callable  # (dict from dump_config) -> the protocol config record
    script_action: Callable | None = None  # (world, do, node_index, args) -> (world, obs): protocol actions
    script_actions: tuple[str, ...] = ()  # the names script_action understands
    client_events: Callable | None = None  # (world) -> list[Client]
    on_client: Callable | None = None  # (c, n, action, now) -> (n, outs)


_REGISTRY: dict[str, Callable[[], Protocol]] = {}


def register(name: str, loader: Callable[[], Protocol]) -> None:
    _REGISTRY[name] = loader


_LOADED: dict[str, Protocol] = {}


def protocol(name: str) -> Protocol:
    p = _LOADED.get(name)
    if p is None:
        if name not in _REGISTRY:
            raise KeyError(name)
        p = _LOADED[name] = _REGISTRY[name]()
    return p


def protocol_names() -> list[str]:
    return sorted(_REGISTRY)


def init(cfg: WorldConfig) -> World:
    p = protocol(cfg.protocol)
    nodes = tuple(p.boot(cfg.proto, node_id, i, 0) for i, node_id in enumerate(cfg.ids))
    alive = tuple(i not in cfg.down for i in range(len(cfg.ids)))
    return World(cfg=cfg, now=0, nodes=nodes, alive=alive, net=Network(), ghost=p.ghost_init(cfg))


# --- time ---


def wake_times(w: World) -> list[int]:
    p = protocol(w.cfg.protocol)
    c = w.cfg.proto
    return [p.wake_at(c, n) if up else -1 for n, up in zip(w.nodes, w.alive)]


_LAST_HORIZON: list = [None, -1]  # (world, horizon) of the last call: step() asks again for the same world


def horizon(w: World, wakes: Sequence[int] | None = None) -> int:
    """The earliest time something must happen; -1 if nothing ever will."""
    if _LAST_HORIZON[0] is w:
        return _LAST_HORIZON[1]
    h = _horizon(w, wakes)
    _LAST_HORIZON[0], _LAST_HORIZON[1] = w, h
    return h


def _horizon(w: World, wakes: Sequence[int] | None) -> int:
    h = -1
    for t in wakes if wakes is not None else wake_times(w):
        if t >= 0 and (h < 0 or t < h):
            h = t
    dmax = w.cfg.profile.delay_ms[1] if not w.history.calm else CALM_DELAY_MS[1]
    for env in w.net.flight:
        t = env.sent_ms + dmax
        if h < 0 or t < h:
            h = t
    for rpc in w.net.rpcs:
        if h < 0 or rpc.deadline_ms < h:
            h = rpc.deadline_ms
    script = w.cfg.script
    if w.script_pos < len(script):
        t = script[w.script_pos].at_ms
        if h < 0 or t < h:
            h = t
    calm_at = w.cfg.profile.calm_at_ms
    if calm_at is not None and not w.history.calm and (h < 0 or calm_at < h):
        h = calm_at
    return max(h, w.now) if h >= 0 else -1


CALM_DELAY_MS = (1, 5)


def delay_window(w: World) -> tuple[int, int]:
    return CALM_DELAY_MS if w.history.calm else w.cfg.profile.delay_ms


# --- what may happen next ---


def enabled(w: World) -> list:
    """Every event that may happen next: protocol events, then faults."""
    return protocol_events(w) + fault_events(w)


def protocol_events(w: World) -> list:
    """Ticks, deliveries, RPC failures, the script and the quiet tail that are due by the horizon."""
    wakes = wake_times(w)
    h = horizon(w, wakes)
    if h < 0:
        return client_events(w)
    events: list = []
    if w.cfg.profile.calm_at_ms == h and not w.history.calm:
        events.append(Calm())
    if w.script_pos < len(w.cfg.script) and w.cfg.script[w.script_pos].at_ms == h:
        events.append(Scripted(index=w.script_pos))
    for i, t in enumerate(wakes):
        if t >= 0 and t <= h:
            events.append(Tick(node=i))
    dmin, dmax = delay_window(w)
    cut = w.net.cut
    for env in w.net.flight:
        if cut and (env.src, env.dst) in cut:
            if env.sent_ms + dmax <= h:
                events.append(Drop(env=env.id))  # its window closed behind a cut link: lost
        elif env.sent_ms + dmin <= h:
            events.append(Deliver(env=env.id))
    for rpc in w.net.rpcs:
        if rpc.deadline_ms <= h:
            events.append(RpcFail(rpc=rpc.id))
    return events + client_events(w)


def client_events(w: World) -> list:
    p = protocol(w.cfg.protocol)
    if p.client_events is None or w.cfg.profile.client <= 0:
        return []
    return p.client_events(w)


def fault_events(w: World) -> list:
    """Faults the profile allows now (none once the quiet tail has begun)."""
    prof = w.cfg.profile
    if w.history.calm:
        return []
    events: list = []
    cut = w.net.cut
    if prof.loss or prof.duplicate:
        for env in w.net.flight:
            if prof.loss and not (cut and (env.src, env.dst) in cut):
                events.append(Drop(env=env.id))
            if prof.duplicate:
                events.append(Duplicate(env=env.id))
    n = len(w.nodes)
    if prof.crash or prof.os_crash:
        for i in range(n):
            if w.alive[i]:
                if prof.crash:
                    events.append(Crash(node=i))
                if prof.os_crash:
                    events.append(Crash(node=i, os=True))
    if prof.restart:
        events.extend(Restart(node=i) for i in range(n) if not w.alive[i])
    if prof.partition and n > 1:
        events.extend(Partition(groups=g) for g in isolations(n))
    if prof.one_way:
        events.extend(CutLink(src=a, dst=b) for a in range(n) for b in range(n)
                      if a != b and (a, b) not in cut)
    if prof.heal and cut:
        events.append(Heal())
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
    """Whether `event` (with any draw) may happen next; used to validate replayed traces."""
    probe = event.evolve(draw=0) if isinstance(event, Tick) else event
    return probe in enabled(w)


# --- what happens ---


def event_time(w: World, event: Any) -> int:
    """The time at which `event` happens: the horizon for due events, earlier for deliveries."""
    if isinstance(event, Deliver):
        env = net_mod.find(w.net, event.env)
        return max(w.now, env.sent_ms + delay_window(w)[0])
    if isinstance(event, (Tick, RpcFail, Scripted, Calm)):
        return horizon(w)
    return w.now


def step(w: World, event: Any) -> tuple[World, tuple]:
    """Apply one enabled event. Returns the new world and the observations, each as
    (node_index, observation); node_index is -1 for world-level observations."""
    now = event_time(w, event)
    if now != w.now:
        w = w.evolve(now=now)
    w, obs = _HANDLERS[type(event)](w, event)
    if type(event) in _GHOST_SEES:
        w = _ghost_sees(w, event)
    return w, obs


def _ghost_sees(w: World, event: Any) -> World:
    """Faults change what the ghost derives from the whole world (who can reach whom)."""
    return w.evolve(ghost=protocol(w.cfg.protocol).ghost_update(w.ghost, w, -1, event))


def apply_fault(w: World, event: Any) -> tuple[World, tuple]:
    """Apply a fault or Calm event now, as `step` does (used by scenario actions)."""
    w, obs = _HANDLERS[type(event)](w, event)
    return _ghost_sees(w, event), obs


def _apply_outs(w: World, i: int, outs: tuple, obs: list) -> World:
    """Route a node's outputs: sends and replies to the network, observations to the ghost."""
    if not outs:
        return w
    p = protocol(w.cfg.protocol)
    net = w.net
    ghost = w.ghost
    index_of = _index_of(w.cfg)
    for out in outs:
        if isinstance(out, Send):
            net = net_mod.send(net, w.now, i, index_of[out.dst], out.msg, out.ctx, out.timeout_ms)
        elif isinstance(out, Respond):
            net = net_mod.reply(net, w.now, out.rpc, out.msg)
        else:
            ghost = p.ghost_update(ghost, w, i, out)
            obs.append((i, out))
    return w.evolve(net=net, ghost=ghost)


_INDEX_CACHE: dict[tuple[str, ...], dict[str, int]] = {}


def _index_of(cfg: WorldConfig) -> dict[str, int]:
    d = _INDEX_CACHE.get(cfg.ids)
    if d is None:
        d = _INDEX_CACHE[cfg.ids] = {node_id: i for i, node_id in enumerate(cfg.ids)}
    return d


def set_node(w: World, i: int, n: Any) -> World:
    nodes = w.nodes
    return w.evolve(nodes=nodes[:i] + (n,) + nodes[i + 1:])


def _on_tick(w: World, ev: Tick) -> tuple[World, tuple]:
    p = protocol(w.cfg.protocol)
    n, outs = p.on_tick(w.cfg.proto, w.nodes[ev.node], w.now, ev.draw)
    obs: list = []
    return _apply_outs(set_node(w, ev.node, n), ev.node, outs, obs), tuple(obs)


def _on_deliver(w: World, ev: Deliver) -> tuple[World, tuple]:
    env = net_mod.find(w.net, ev.env)
    net = net_mod.remove(w.net, ev.env)
    p = protocol(w.cfg.protocol)
    obs: list = []
    if env.reply:
        rpc = net_mod.find_rpc(net, env.rpc)
        if rpc is None or not w.alive[env.dst]:
            return w.evolve(net=net), ()  # the RPC already completed or failed
        w = w.evolve(net=net_mod.close_rpc(net, env.rpc))
        n, outs = p.on_response(w.cfg.proto, w.nodes[env.dst], rpc.ctx, w.cfg.ids[env.src], env.msg, w.now)
        return _apply_outs(set_node(w, env.dst, n), env.dst, outs, obs), tuple(obs)
    if not w.alive[env.dst]:
        if env.rpc:
            net = net_mod.fail_now(net, env.rpc, w.now)  # connection refused
        return w.evolve(net=net), ()
    w = w.evolve(net=net)
    if env.rpc:
        n, answer, outs = p.on_request(w.cfg.proto, w.nodes[env.dst], env.msg, env.rpc, w.now)
        w = set_node(w, env.dst, n)
        if answer is not None:
            w = w.evolve(net=net_mod.reply(w.net, w.now, env.rpc, answer))
    else:
        n, outs = p.on_message(w.cfg.proto, w.nodes[env.dst], env.msg, w.cfg.ids[env.src], w.now)
        w = set_node(w, env.dst, n)
    return _apply_outs(w, env.dst, outs, obs), tuple(obs)


def _on_rpc_fail(w: World, ev: RpcFail) -> tuple[World, tuple]:
    rpc = net_mod.find_rpc(w.net, ev.rpc)
    w = w.evolve(net=net_mod.close_rpc(w.net, ev.rpc))
    if not w.alive[rpc.requester]:
        return w, ()
    p = protocol(w.cfg.protocol)
    n, outs = p.on_response(w.cfg.proto, w.nodes[rpc.requester], rpc.ctx, w.cfg.ids[rpc.responder], None, w.now)
    obs: list = []
    return _apply_outs(set_node(w, rpc.requester, n), rpc.requester, outs, obs), tuple(obs)


def _fault(w: World, **history: Any) -> World:
    return w.evolve(history=w.history.evolve(last_fault_ms=w.now, **history))


def _on_drop(w: World, ev: Drop) -> tuple[World, tuple]:
    return _fault(w.evolve(net=net_mod.remove(w.net, ev.env))), ()


def _on_duplicate(w: World, ev: Duplicate) -> tuple[World, tuple]:
    return _fault(w.evolve(net=net_mod.duplicate(w.net, ev.env))), ()


def crash_node(w: World, i: int, os: bool) -> World:
    p = protocol(w.cfg.protocol)
    n = p.crash(w.cfg.proto, w.nodes[i], os)
    alive = w.alive[:i] + (False,) + w.alive[i + 1:]
    w = set_node(w, i, n).evolve(alive=alive, net=net_mod.node_down(w.net, i, w.now))
    return _fault(w, crashes=w.history.crashes + 1, os_crashes=w.history.os_crashes + os)


def restart_node(w: World, i: int) -> World:
    p = protocol(w.cfg.protocol)
    n = p.restart(w.cfg.proto, w.nodes[i], w.now)
    alive = w.alive[:i] + (True,) + w.alive[i + 1:]
    return _fault(set_node(w, i, n).evolve(alive=alive))


def partition(w: World, groups: tuple[tuple[int, ...], ...]) -> World:
    group_of = {node: g for g, members in enumerate(groups) for node in members}
    n = len(w.nodes)
    cut = {(a, b) for a in range(n) for b in range(n)
           if a != b and group_of.get(a, -1) != group_of.get(b, -1)}
    return _fault(w.evolve(net=w.net.evolve(cut=w.net.cut | frozenset(cut))))


def _on_crash(w: World, ev: Crash) -> tuple[World, tuple]:
    return crash_node(w, ev.node, ev.os), ((ev.node, ev),)


def _on_restart(w: World, ev: Restart) -> tuple[World, tuple]:
    return restart_node(w, ev.node), ((ev.node, ev),)


def _on_partition(w: World, ev: Partition) -> tuple[World, tuple]:
    return partition(w, ev.groups), ((-1, ev),)


def _on_cut_link(w: World, ev: CutLink) -> tuple[World, tuple]:
    return _fault(w.evolve(net=w.net.evolve(cut=w.net.cut | {(ev.src, ev.dst)}))), ((-1, ev),)


def _on_heal(w: World, ev: Heal) -> tuple[World, tuple]:
    return _fault(w.evolve(net=w.net.evolve(cut=frozenset()))), ((-1, ev),)


def _on_calm(w: World, ev: Calm) -> tuple[World, tuple]:
    w = w.evolve(net=w.net.evolve(cut=frozenset()),
                 history=w.history.evolve(calm=True, calm_at_ms=w.now, last_fault_ms=w.now))
    obs: list = [(-1, ev)]
    for i, up in enumerate(w.alive):
        if not up:
            w = restart_node(w, i)
            obs.append((i, Restart(node=i)))
    return w.evolve(history=w.history.evolve(last_fault_ms=w.now)), tuple(obs)


def _on_scripted(w: World, ev: Scripted) -> tuple[World, tuple]:
    from reference_impl import scenario  # the script language sits above the world

    action = w.cfg.script[ev.index]
    w = w.evolve(script_pos=ev.index + 1)
    return scenario.apply(w, action)


def _on_client(w: World, ev: Client) -> tuple[World, tuple]:
    p = protocol(w.cfg.protocol)
    n, outs = p.on_client(w.cfg.proto, w.nodes[ev.node], ev.action, w.now)
    obs: list = []
    return _apply_outs(set_node(w, ev.node, n), ev.node, outs, obs), tuple(obs)


_GHOST_SEES = frozenset(FAULT_EVENTS + (Calm,))

_HANDLERS: dict[type, Callable[[World, Any], tuple[World, tuple]]] = {
    Tick: _on_tick, Deliver: _on_deliver, RpcFail: _on_rpc_fail, Drop: _on_drop, Duplicate: _on_duplicate,
    Crash: _on_crash, Restart: _on_restart, Partition: _on_partition, CutLink: _on_cut_link, Heal: _on_heal,
    Calm: _on_calm, Scripted: _on_scripted, Client: _on_client,
}


def apply_outs(w: World, i: int, outs: tuple) -> tuple[World, tuple]:
    """Route outputs of a transition run outside `step` (scenario actions)."""
    obs: list = []
    w = _apply_outs(w, i, outs, obs)
    return w, tuple(obs)
