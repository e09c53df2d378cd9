"""A world: the nodes of one protocol, the network between them, faults, and ghost history.

Theory of operation
-------------------
A world is one immutable value. It changes only through `step(world, event)`
(reference_impl.core.transitions), and `enabled(world)` (reference_impl.core.schedule) lists
every event that may happen next. All nondeterminism is the choice among those events
(plus the `draw` a tick carries), so one world serves the Hypothesis machines, the
seeded fuzzer, the exhaustive explorer and trace replay.

A protocol plugs in through a `Protocol` value (reference_impl.core.plugin): how to
boot, tick, answer requests and replies, crash and restart a node, what its ghost
variables record, and what its observable state (the trace's `state`) is. Ghost
variables exist only so properties can be stated; nothing in a protocol's transitions
reads them.
"""

from __future__ import annotations

from typing import Any

from reference_impl.core.faults import FaultProfile
from reference_impl.core.network import Network
from reference_impl.core.plugin import protocol
from reference_impl.core.state import EMPTY, FrozenMap, record


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
    # Scenario actions (reference_impl.core.scenario.Action), sorted by time. Each carries
    # its own `apply`, so the world runs a script without knowing the script language.
    script: tuple = ()
    down: tuple[int, ...] = ()  # nodes not started at time 0
    crashable: tuple[int, ...] = ()  # nodes random faults may crash; empty: all
    # The config values the user set, by the keys the protocol's make_config takes. A property
    # states its bounds from RocketMQ's documented defaults (spec/bounds.py) and reads a value
    # here only when the user overrode it, never the protocol config's own defaults.
    overrides: FrozenMap = EMPTY


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
    # Java timing (reference_impl.core.schedule): when each node's wake time last changed,
    # since a thread cannot act on a condition before the state that makes it due exists (for
    # a protocol whose nodes run several threads, `Protocol.threads`, the entry is a tuple: when
    # each thread's wake time last changed); and the nodes whose threads have not run since they
    # (re)started, whose first tick may come up to the profile's start-up stagger late
    # (processes never start at the same instant).
    since: tuple = ()
    fresh: frozenset[int] = frozenset()


def init(cfg: WorldConfig) -> World:
    p = protocol(cfg.protocol)
    nodes = tuple(p.boot(cfg.proto, node_id, i, 0) for i, node_id in enumerate(cfg.ids))
    alive = tuple(i not in cfg.down for i in range(len(cfg.ids)))
    if p.thread_wakes is None:
        since: tuple = (0,) * len(nodes)
    else:
        since = tuple((0,) * len(p.thread_wakes(cfg.proto, n)) for n in nodes)
    return World(cfg=cfg, now=0, nodes=nodes, alive=alive, net=Network(), ghost=p.ghost_init(cfg),
                 ext=p.ext_init(cfg) if p.ext_init is not None else None, since=since,
                 fresh=frozenset(i for i, up in enumerate(alive) if up))


def set_node(w: World, i: int, n: Any) -> World:
    """Node i's state becomes `n` at `w.now`."""
    nodes = w.nodes
    if n is nodes[i]:
        return w
    return w.evolve(nodes=nodes[:i] + (n,) + nodes[i + 1:], since=since_after(w, i, n, w.now))


_WAKE: dict[int, tuple[Any, Any, Any, Any]] = {}  # id(node state) -> (state, config, wake function, its answer)


def wake_of(w: World, n: Any, wake_at: Any = None) -> Any:
    """The protocol's `wake_at` of node state `n` (memoised by the state's identity while
    that very object is in the memo, and only for the same config and the same `wake_at`:
    one state object may be shared by worlds of different configs, and a test may swap a
    protocol's functions). A caller that holds the protocol passes its `wake_at`, or its
    `thread_wakes` for the tuple of a threaded node's wake times (memoised the same way)."""
    if wake_at is None:
        wake_at = protocol(w.cfg.protocol).wake_at
    c = w.cfg.proto
    hit = _WAKE.get(id(n))
    if hit is not None and hit[0] is n and hit[1] is c and hit[2] is wake_at:
        return hit[3]
    t = wake_at(c, n)
    if len(_WAKE) > 4096:
        _WAKE.clear()
    _WAKE[id(n)] = (n, c, wake_at, t)
    return t


def forget_wakes() -> None:
    """Empty the wake_at memo (schedule.forget)."""
    _WAKE.clear()


def since_after(w: World, i: int, n: Any, now: int, p: Any = None) -> tuple:
    """`World.since` once node i's state becomes `n` at `now`: its entry moves to now when
    the node's wake time changed (a condition that was already due stays due since then);
    for a threaded node (`Protocol.threads`), the entry of each thread whose wake time changed."""
    if p is None:
        p = protocol(w.cfg.protocol)
    fn = p.thread_wakes
    if fn is None:
        fn = p.wake_at
        if wake_of(w, n, fn) == wake_of(w, w.nodes[i], fn):
            return w.since
        return w.since[:i] + (now,) + w.since[i + 1:]
    new, old = wake_of(w, n, fn), wake_of(w, w.nodes[i], fn)
    if new == old:
        return w.since
    entry = tuple(now if a != b else t for a, b, t in zip(new, old, w.since[i]))
    return w.since[:i] + (entry,) + w.since[i + 1:]


def restarted_since(w: World, i: int, n: Any) -> tuple:
    """`World.since` once node i (re)starts as `n` at `w.now`: every thread of it starts now."""
    p = protocol(w.cfg.protocol)
    entry = w.now if p.thread_wakes is None else (w.now,) * len(p.thread_wakes(w.cfg.proto, n))
    return w.since[:i] + (entry,) + w.since[i + 1:]


_INDEX: dict[tuple[str, ...], dict[str, int]] = {}  # ids -> {id: index}; a memo of a pure function


def index_of(cfg: WorldConfig) -> dict[str, int]:
    """Node id -> node index (protocols address nodes by id, the network by index)."""
    d = _INDEX.get(cfg.ids)
    if d is None:
        d = _INDEX[cfg.ids] = {node_id: i for i, node_id in enumerate(cfg.ids)}
    return d
