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

import attrs

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
    """The node's process dies. `os`: the machine goes down too and unsynced writes are lost.
    `disk`: the machine's disk is lost as well (it comes back empty)."""

    node: int
    os: bool = False
    disk: bool = False

    def kind(self) -> str:
        return "disk" if self.disk else "os" if self.os else "process"


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


FAULT_EVENTS = (Drop, Duplicate, Crash, Restart, Partition, CutLink, Heal)


def _ext_weights(v: Any) -> tuple[tuple[str, float], ...]:
    return tuple((str(k), float(w)) for k, w in v)


@record
class FaultProfile:
    """Which faults may happen, how often (weights the seeded chooser uses per step), and when they stop.

    `delay_ms` is the window within which a message is delivered unless lost.
    `calm_at_ms`: from then on no faults; links heal and down nodes restart (the quiet tail).
    `ext`: weights of the protocol's own fault kinds (`Protocol.ext_faults`), e.g. HA's
    `conn_drop`; `getattr(profile, kind)` reads them like the generic weights.
    """

    name: str = "none"
    delay_ms: tuple[int, int] = (1, 5)
    loss: float = 0.0
    duplicate: float = 0.0
    crash: float = 0.0
    os_crash: float = 0.0
    disk_loss: float = 0.0
    restart: float = 0.0
    partition: float = 0.0
    one_way: float = 0.0
    heal: float = 0.0
    calm_at_ms: int | None = None
    description: str = ""
    ext: tuple[tuple[str, float], ...] = attrs.field(default=(), converter=_ext_weights)

    def __getattr__(self, name: str) -> float:
        # only reached for names that are not fields: the protocol's own fault kinds
        if not name.startswith("_"):
            for kind, weight in object.__getattribute__(self, "ext"):
                if kind == name:
                    return weight
        raise AttributeError(name)

    def __attrs_post_init__(self) -> None:
        d = self.delay_ms
        if not (isinstance(d, tuple) and len(d) == 2 and all(isinstance(x, int) and not isinstance(x, bool)
                                                             for x in d) and 0 <= d[0] <= d[1]):
            raise ValueError(f"delay_ms must be two integers 0 <= min <= max, got {d!r}")
        for name in ("loss", "duplicate", "crash", "os_crash", "disk_loss", "restart", "partition", "one_way",
                     "heal"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0:
                raise ValueError(f"fault weight {name} must be a non-negative number, got {v!r}")
        if self.calm_at_ms is not None and (not isinstance(self.calm_at_ms, int) or self.calm_at_ms < 0):
            raise ValueError(f"calm_at_ms must be a non-negative integer or null, got {self.calm_at_ms!r}")

    def any_faults(self) -> bool:
        return any((self.loss, self.duplicate, self.crash, self.os_crash, self.disk_loss, self.partition,
                    self.one_way)) or any(w for _, w in self.ext)


@record
class History:
    """Ghost variables every world keeps, for bounded properties and reports."""

    last_fault_ms: int = -1
    crashes: int = 0
    os_crashes: int = 0
    disk_losses: int = 0
    lost_writes: frozenset[int] = frozenset()  # nodes that ever lost unsynced writes (OS crash or disk loss)
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
    crashable: tuple[int, ...] = ()  # nodes random faults may crash; empty: all


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
    ext: Any = None  # protocol-specific world state (e.g. HA's TCP byte streams); see Protocol.ext_*


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
    crash: Callable  # (c, n, kind) -> n, what survives a "process", "os" or "disk" crash
    restart: Callable  # (c, n, now) -> n
    ghost_init: Callable  # (cfg) -> ghost
    ghost_update: Callable  # (ghost, world_before_ghost, node_index, obs) -> ghost
    observe: Callable  # (c, n, alive) -> dict, the trace's per-node observable state
    make_config: Callable  # (nodes, overrides: dict) -> WorldConfig with that protocol's defaults
    load_config: Callable  # (dict from dump_config) -> the protocol config record
    script_action: Callable | None = None  # (world, do, node_index, args) -> (world, obs): protocol actions
    script_actions: tuple[str, ...] = ()  # the names script_action understands
    bench_nodes: tuple[int, ...] = (3,)  # cluster sizes `rmqspec bench` measures
    # Protocol-specific world events (e.g. a TCP stream delivering a segment of bytes):
    ext_init: Callable | None = None  # (cfg) -> the initial World.ext
    ext_deadline: Callable | None = None  # (world) -> earliest time one of its events is due, -1: none
    ext_events: Callable | None = None  # (world, horizon) -> its events enabled by the horizon
    ext_apply: Callable | None = None  # (world, event, now) -> (world, observations)
    # (c, n) -> bool for a down node: True when its machine is off, so it neither refuses
    # connections nor resets them and RPCs to it time out (None: a down node always refuses).
    down_is_silent: Callable | None = None
    # Readable output (rmqspec timeline and summary); None: the election-style defaults.
    describe: Callable | None = None  # (node_id, observed now, observed before | None) -> timeline text | None
    describe_obs: Callable | None = None  # (world, node_id, observation) -> timeline text | None
    final_line: Callable | None = None  # (observed state of every node) -> the summary's "final:" text
    # Protocol-specific fault kinds (FaultProfile.ext names their weights); applied through ext_apply,
    # which should record them as faults (History.last_fault_ms):
    ext_faults: Callable | None = None  # (world, kind) -> the fault events of that kind enabled now


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
    return World(cfg=cfg, now=0, nodes=nodes, alive=alive, net=Network(), ghost=p.ghost_init(cfg),
                 ext=p.ext_init(cfg) if p.ext_init is not None else None)


# --- time ---


_WAKES: dict[int, tuple[Any, int]] = {}  # id(node state) -> (node state, wake_at): nodes are immutable


def wake_times(w: World) -> list[int]:
    p = protocol(w.cfg.protocol)
    c = w.cfg.proto
    out = []
    for n, up in zip(w.nodes, w.alive):
        if not up:
            out.append(-1)
            continue
        hit = _WAKES.get(id(n))
        if hit is not None and hit[0] is n:
            out.append(hit[1])
            continue
        t = p.wake_at(c, n)
        if len(_WAKES) > 4096:
            _WAKES.clear()
        _WAKES[id(n)] = (n, t)
        out.append(t)
    return out


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
    if w.ext is not None:
        t = protocol(w.cfg.protocol).ext_deadline(w)
        if t >= 0 and (h < 0 or t < h):
            h = t
    return max(h, w.now) if h >= 0 else -1


CALM_DELAY_MS = (1, 5)


def delay_window(w: World) -> tuple[int, int]:
    return CALM_DELAY_MS if w.history.calm else w.cfg.profile.delay_ms


# --- what may happen next ---


def enabled(w: World) -> list:
    """Every event that may happen next: protocol events, then faults."""
    return protocol_events(w) + fault_events(w)


_TICKS = tuple(Tick(node=i) for i in range(64))  # events are immutable: share the common ones


def protocol_events(w: World) -> list:
    """Ticks, deliveries, RPC failures, the script and the quiet tail that are due by the horizon."""
    wakes = wake_times(w)
    h = _horizon(w, wakes)
    _LAST_HORIZON[0], _LAST_HORIZON[1] = w, h
    if h < 0:
        return []
    events: list = []
    if w.cfg.profile.calm_at_ms == h and not w.history.calm:
        events.append(Calm())
    if w.script_pos < len(w.cfg.script) and w.cfg.script[w.script_pos].at_ms == h:
        events.append(Scripted(index=w.script_pos))
    for i, t in enumerate(wakes):
        if 0 <= t <= h:
            events.append(_TICKS[i])
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
    if w.ext is not None:
        events += protocol(w.cfg.protocol).ext_events(w, h)
    return events


FAULT_KINDS = ("loss", "duplicate", "crash", "os_crash", "disk_loss", "restart", "partition", "one_way", "heal")


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
    kind = type(event)
    hot = _HOT.get(kind)
    if hot is not None:
        return hot(w, event, now)
    handler = _HANDLERS.get(kind)
    if handler is None:  # a protocol-specific event
        return protocol(w.cfg.protocol).ext_apply(w, event, now)
    if now != w.now:
        w = w.evolve(now=now)
    w, obs = handler(w, event)
    if kind in _GHOST_SEES:
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


def _fault(w: World, **history: Any) -> World:
    return w.evolve(history=w.history.evolve(last_fault_ms=w.now, **history))


def _on_drop(w: World, ev: Drop) -> tuple[World, tuple]:
    env = net_mod.find(w.net, ev.env)
    w = w.evolve(net=net_mod.remove(w.net, ev.env))
    if (env.src, env.dst) in w.net.cut:
        return w, ()  # lost behind a cut link: a consequence of that fault, not a new one
    return _fault(w), ()


def _on_duplicate(w: World, ev: Duplicate) -> tuple[World, tuple]:
    return _fault(w.evolve(net=net_mod.duplicate(w.net, ev.env))), ()


def crash_node(w: World, i: int, kind: str = "process") -> World:
    """Node i goes down; `kind` ("process", "os", "disk") says what its storage keeps."""
    p = protocol(w.cfg.protocol)
    n = p.crash(w.cfg.proto, w.nodes[i], kind)
    alive = w.alive[:i] + (False,) + w.alive[i + 1:]
    reset = p.down_is_silent is None or not p.down_is_silent(w.cfg.proto, n)
    w = set_node(w, i, n).evolve(alive=alive, net=net_mod.node_down(w.net, i, w.now, reset))
    h = w.history
    return _fault(w, crashes=h.crashes + 1, os_crashes=h.os_crashes + (kind != "process"),
                  disk_losses=h.disk_losses + (kind == "disk"),
                  lost_writes=h.lost_writes | {i} if kind != "process" else h.lost_writes)


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
    return crash_node(w, ev.node, ev.kind()), ((ev.node, ev),)


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


# --- the hot path: ticks, deliveries and RPC failures are nearly every step, so they
# build the next world in one go instead of through the helpers above ---


def _route(w: World, now: int, nodes: tuple, i: int, outs: tuple) -> tuple[World, tuple]:
    """The next world after node i's transition produced `outs`, and its observations."""
    net = w.net
    ghost = w.ghost
    obs: list = []
    view = None
    for out in outs:
        if isinstance(out, Send):
            net = net_mod.send(net, now, i, _index_of(w.cfg)[out.dst], out.msg, out.ctx, out.timeout_ms)
        elif isinstance(out, Respond):
            net = net_mod.reply(net, now, out.rpc, out.msg)
        else:
            if view is None:
                view = w.evolve(now=now, nodes=nodes)
            ghost = protocol(w.cfg.protocol).ghost_update(ghost, view.evolve(net=net, ghost=ghost), i, out)
            obs.append((i, out))
    return w.evolve(now=now, nodes=nodes, net=net, ghost=ghost), tuple(obs)


def _hot_tick(w: World, ev: Tick, now: int) -> tuple[World, tuple]:
    i = ev.node
    n, outs = protocol(w.cfg.protocol).on_tick(w.cfg.proto, w.nodes[i], now, ev.draw)
    nodes = w.nodes[:i] + (n,) + w.nodes[i + 1:]
    if not outs:
        return w.evolve(now=now, nodes=nodes), ()
    return _route(w, now, nodes, i, outs)


def _hot_deliver(w: World, ev: Deliver, now: int) -> tuple[World, tuple]:
    net = w.net
    env = net_mod.find(net, ev.env)
    net = net_mod.remove(net, ev.env)
    dst = env.dst
    p = protocol(w.cfg.protocol)
    if env.reply:
        rpc = net_mod.find_rpc(net, env.rpc)
        if rpc is None or not w.alive[dst]:
            return w.evolve(now=now, net=net), ()  # the RPC already completed or failed
        net = net_mod.close_rpc(net, env.rpc)
        n, outs = p.on_response(w.cfg.proto, w.nodes[dst], rpc.ctx, w.cfg.ids[env.src], env.msg, now)
    elif not w.alive[dst]:
        if env.rpc and (p.down_is_silent is None or not p.down_is_silent(w.cfg.proto, w.nodes[dst])):
            net = net_mod.fail_now(net, env.rpc, now)  # connection refused
        return w.evolve(now=now, net=net), ()
    elif env.rpc:
        n, answer, outs = p.on_request(w.cfg.proto, w.nodes[dst], env.msg, env.rpc, now)
        if answer is not None:
            net = net_mod.reply(net, now, env.rpc, answer)
    else:
        n, outs = p.on_message(w.cfg.proto, w.nodes[dst], env.msg, w.cfg.ids[env.src], now)
    nodes = w.nodes[:dst] + (n,) + w.nodes[dst + 1:]
    if not outs:
        return w.evolve(now=now, nodes=nodes, net=net), ()
    return _route(w.evolve(net=net), now, nodes, dst, outs)


def _hot_rpc_fail(w: World, ev: RpcFail, now: int) -> tuple[World, tuple]:
    rpc = net_mod.find_rpc(w.net, ev.rpc)
    net = net_mod.close_rpc(w.net, ev.rpc)
    i = rpc.requester
    if not w.alive[i]:
        return w.evolve(now=now, net=net), ()
    p = protocol(w.cfg.protocol)
    n, outs = p.on_response(w.cfg.proto, w.nodes[i], rpc.ctx, w.cfg.ids[rpc.responder], None, now)
    nodes = w.nodes[:i] + (n,) + w.nodes[i + 1:]
    if not outs:
        return w.evolve(now=now, nodes=nodes, net=net), ()
    return _route(w.evolve(net=net), now, nodes, i, outs)


_HOT = {Tick: _hot_tick, Deliver: _hot_deliver, RpcFail: _hot_rpc_fail}

_GHOST_SEES = frozenset(FAULT_EVENTS + (Calm,))

_HANDLERS: dict[type, Callable[[World, Any], tuple[World, tuple]]] = {
    Drop: _on_drop, Duplicate: _on_duplicate,
    Crash: _on_crash, Restart: _on_restart, Partition: _on_partition, CutLink: _on_cut_link, Heal: _on_heal,
    Calm: _on_calm, Scripted: _on_scripted,
}


def apply_outs(w: World, i: int, outs: tuple) -> tuple[World, tuple]:
    """Route outputs of a transition run outside `step` (scenario actions)."""
    obs: list = []
    w = _apply_outs(w, i, outs, obs)
    return w, tuple(obs)
