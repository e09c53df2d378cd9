"""The protocol plug-in: what a protocol supplies to the generic world, and the registry.

A protocol is one `Protocol` value (`PROTOCOL` in its package's `world` module).
`n` below is a node state, `c` the protocol's config record. The world resolves the
plug-in once per step (`protocol(cfg.protocol)`) and calls these functions; it never
looks inside a node.

The registry maps a protocol's name to a loader, so that a protocol is imported the
first time a world of it is built (reference_impl/__init__.py registers the six; a
user module may register more, e.g. the test-only mutants). `_LOADED` memoises the
loaders' results: a loaded protocol never changes.
"""

from __future__ import annotations

from collections.abc import Callable

from reference_impl.core.state import record


@record
class Protocol:
    """What a protocol supplies to the world (docs/architecture.md has the table): what it is.
    How the tools show it and on which cluster sizes they run it is another record, in the
    layer that reads it (histories.presentation)."""

    name: str
    # the node: pure transitions
    boot: Callable  # (c, node_id, index, now) -> n
    wake_at: Callable  # (c, n) -> int, -1 for never
    on_tick: Callable  # (c, n, now, draw) -> (n, outs)
    on_request: Callable  # (c, n, msg, rpc_id, now) -> (n, reply | None, outs)
    on_response: Callable  # (c, n, ctx, peer_id, reply | None, now) -> (n, outs)
    on_message: Callable | None  # (c, n, msg, peer_id, now) -> (n, outs), one-way messages
    crash: Callable  # (c, n, kind) -> n, what survives a "process", "os" or "disk" crash
    restart: Callable  # (c, n, now) -> n
    # history variables for properties; nodes never read them
    ghost_init: Callable  # (cfg) -> ghost
    ghost_update: Callable  # (ghost, world_before_ghost, node_index, obs) -> ghost
    # (ghost, world, node_index, kind, crashed) -> ghost, called as node i crashes ("process", "os",
    # "disk"), with the world before the crash and `crashed`, what the node keeps: what the crash
    # destroys (an unflushed tail, a term file) is evidence for the causes of expected violations,
    # and after the crash it is gone. None: nothing to record.
    ghost_crash: Callable | None = None
    observe: Callable  # (c, n, alive) -> dict, the trace's per-node observable state
    # configuration
    make_config: Callable  # (nodes, overrides: dict) -> WorldConfig with that protocol's defaults
    load_config: Callable  # (dict from dump_config) -> the protocol config record
    # (c, ids) -> None: raise ValueError unless `ids` are the nodes config `c` describes (a trace
    # header names both; a node the config does not know would break the world's routing)
    check_ids: Callable | None = None
    profiles: tuple = ()  # FaultProfiles calibrated for this protocol (override the shared ones by name)
    branches: tuple = ()  # the result codes a fuzz run's branch coverage counts (enum members)
    script_action: Callable | None = None  # (world, do, node_index, args) -> (world, obs): protocol actions
    script_actions: tuple[str, ...] = ()  # the names script_action understands
    # Protocol-specific world events (e.g. a TCP stream delivering a segment of bytes):
    ext_init: Callable | None = None  # (cfg) -> the initial World.ext
    ext_deadline: Callable | None = None  # (world) -> earliest time one of its events is due, -1: none
    ext_events: Callable | None = None  # (world, horizon) -> its events enabled by the horizon
    ext_apply: Callable | None = None  # (world, event, now) -> (world, observations)
    # Protocol-specific fault kinds (FaultProfile.ext names their weights); applied through ext_apply,
    # which should record them as faults (History.last_fault_ms):
    ext_faults: Callable | None = None  # (world, kind) -> the fault events of that kind enabled now
    # (c, n, since, wake) -> ms: how much later than its wake time a node's tick may fire under
    # Java timing, `since` being when the node's wake time was set (a condition falling due
    # while DLedger's StateMaintainer sleeps its 10 ms is noticed at its next loop) and `wake`
    # its `wake_at(c, n)` (>= 0), which the world has already computed; None: ticks fire on time.
    tick_slack: Callable | None = None
    # A node that runs several threads (a DLedger server: its state maintainer, entry handler, one
    # dispatcher per peer, quorum ack checker, flush service), each an actor of its own: it has its
    # own wake time, `since` and lateness, and fires as its own `Tick(node, thread)`. None: the node
    # is one actor (`wake_at`, `on_tick`, `tick_slack`). With threads, `wake_at` is the earliest of them.
    threads: Callable | None = None  # (c, n) -> tuple[str, ...]: the names of node n's threads (fixed per node)
    thread_wakes: Callable | None = None  # (c, n) -> tuple[int, ...]: when each thread next has work, -1 never
    on_thread_tick: Callable | None = None  # (c, n, thread, now, draw) -> (n, outs): one pass of that thread
    thread_slack: Callable | None = None  # (c, n, thread, since, wake) -> ms: `tick_slack` for one thread
    # (c, n) -> bool for a down node: True when its machine is off, so it neither refuses
    # connections nor resets them and RPCs to it time out (None: a down node always refuses).
    down_is_silent: Callable | None = None
    # (c, msg) -> bool: `msg` is delivered in send order on its link, after every older such message
    # from the same node to the same node (one TCP connection read by one handling thread); None:
    # the network reorders every message freely (core/schedule.py, `_held`).
    fifo: Callable | None = None


_REGISTRY: dict[str, Callable[[], Protocol]] = {}
_LOADED: dict[str, Protocol] = {}
_UNLISTED: set[str] = set()


def register(name: str, loader: Callable[[], Protocol], *, listed: bool = True) -> None:
    """`listed=False`: a variant made for one job (the trace checker's protocol under an
    implementation's scheduler), found by name but not one of the protocols that `--protocol
    all` and the CLI's choices name."""
    _REGISTRY[name] = loader
    if not listed:
        _UNLISTED.add(name)


def protocol(name: str) -> Protocol:
    try:
        p = _LOADED.get(name)
    except TypeError:  # an unhashable name from a file
        raise KeyError(repr(name)) from None
    if p is None:
        if name not in _REGISTRY:
            raise KeyError(name)
        p = _LOADED[name] = _REGISTRY[name]()
    return p


def protocol_names() -> list[str]:
    return sorted(n for n in _REGISTRY if n not in _UNLISTED)
