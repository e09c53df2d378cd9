"""What happens: `step(world, event)` applies one enabled event and returns the new world.

The protocol plug-in is resolved once per step and handed to the handler of the
event's kind. Ticks, deliveries and RPC failures are nearly every step: their
handlers build the next world in one go. A node transition's outputs are routed by
one function, `route`: `Send` and `Respond` go to the network, everything else is an
observation that the protocol's ghost sees and the caller gets back. Faults change
what a ghost derives from the whole world (who can reach whom), so the ghost sees
each fault too. A `Scripted` event runs its scenario action through the action's own
`apply` (the script language, reference_impl.core.scenario, sits above the world).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import reference_impl.core.network as net_mod
from reference_impl.core.events import (
    FAULT_EVENTS,
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
from reference_impl.core.network import Respond, Send
from reference_impl.core.plugin import Protocol, protocol
from reference_impl.core.schedule import event_time
from reference_impl.core.world import World, index_of, restarted_since, set_node, since_after


def step(w: World, event: Any) -> tuple[World, tuple]:
    """Apply one enabled event. Returns the new world and the observations, each as
    (node_index, observation); node_index is -1 for world-level observations."""
    now = event_time(w, event)
    p = protocol(w.cfg.protocol)
    kind = type(event)
    node_step = _NODE_STEPS.get(kind)
    if node_step is not None:
        return node_step(w, p, event, now)
    handler = _WORLD_STEPS.get(kind)
    if handler is None:  # a protocol-specific event
        return p.ext_apply(w, event, now)
    if now != w.now:
        w = w.evolve(now=now)
    w, obs = handler(w, p, event)
    if kind in _GHOST_SEES:
        w = w.evolve(ghost=p.ghost_update(w.ghost, w, -1, event))
    return w, obs


def route(w: World, p: Protocol, i: int, outs: tuple) -> tuple[World, tuple]:
    """Route node i's outputs in world `w` (which already holds node i's new state and
    the time): sends and replies to the network, observations to the ghost and out."""
    net = w.net
    ghost = w.ghost
    obs: list = []
    index = None
    for out in outs:
        kind = type(out)
        if kind is Send:
            if index is None:
                index = index_of(w.cfg)
            net = net_mod.send(net, w.now, i, index[out.dst], out.msg, out.ctx, out.timeout_ms, out.scanned)
        elif kind is Respond:
            net = net_mod.reply(net, w.now, out.rpc, out.msg)
        else:
            ghost = p.ghost_update(ghost, w.evolve(net=net, ghost=ghost), i, out)
            obs.append((i, out))
    return w.evolve(net=net, ghost=ghost), tuple(obs)


def apply_outs(w: World, i: int, outs: tuple) -> tuple[World, tuple]:
    """Route the outputs of a transition run outside `step` (scenario actions)."""
    return route(w, protocol(w.cfg.protocol), i, outs) if outs else (w, ())


def apply_fault(w: World, event: Any) -> tuple[World, tuple]:
    """Apply a fault or Calm event now, as `step` does (used by scenario actions)."""
    p = protocol(w.cfg.protocol)
    w, obs = _WORLD_STEPS[type(event)](w, p, event)
    return w.evolve(ghost=p.ghost_update(w.ghost, w, -1, event)), obs


# --- node events ---


def _node_did(w: World, p: Protocol, now: int, i: int, n: Any, outs: tuple, net: Any = None,
              fresh: Any = None) -> tuple[World, tuple]:
    """The world after node i became `n` at `now` with outputs `outs` (and, when given, a new
    network and set of fresh nodes)."""
    nodes = w.nodes
    since = since_after(w, i, n, now, p) if n is not nodes[i] else w.since
    w = w.evolve(now=now, nodes=nodes[:i] + (n,) + nodes[i + 1:], since=since,
                 net=w.net if net is None else net, fresh=w.fresh if fresh is None else fresh)
    return route(w, p, i, outs) if outs else (w, ())


def _tick(w: World, p: Protocol, ev: Tick, now: int) -> tuple[World, tuple]:
    i = ev.node
    if p.on_thread_tick is None:
        n, outs = p.on_tick(w.cfg.proto, w.nodes[i], now, ev.draw)
    else:
        n, outs = p.on_thread_tick(w.cfg.proto, w.nodes[i], ev.thread, now, ev.draw)
    if i in w.fresh:
        return _node_did(w, p, now, i, n, outs, fresh=w.fresh - {i})
    return _node_did(w, p, now, i, n, outs)


def _deliver(w: World, p: Protocol, ev: Deliver, now: int) -> tuple[World, tuple]:
    env, net = net_mod.take(w.net, ev.env)
    dst = env.dst
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
    return _node_did(w, p, now, dst, n, outs, net=net)


def _rpc_fail(w: World, p: Protocol, ev: RpcFail, now: int) -> tuple[World, tuple]:
    rpc = net_mod.find_rpc(w.net, ev.rpc)
    net = net_mod.close_rpc(w.net, ev.rpc)
    i = rpc.requester
    if not w.alive[i]:
        return w.evolve(now=now, net=net), ()
    n, outs = p.on_response(w.cfg.proto, w.nodes[i], rpc.ctx, w.cfg.ids[rpc.responder], None, now)
    return _node_did(w, p, now, i, n, outs, net=net)


_NODE_STEPS = {Tick: _tick, Deliver: _deliver, RpcFail: _rpc_fail}


# --- world events: faults, the quiet tail, the script ---


def _fault(w: World, **history: Any) -> World:
    return w.evolve(history=w.history.evolve(last_fault_ms=w.now, **history))


def crash_node(w: World, i: int, kind: str = "process") -> World:
    """Node i goes down; `kind` ("process", "os", "disk") says what its storage keeps."""
    return _down(w, protocol(w.cfg.protocol), i, kind)


def restart_node(w: World, i: int) -> World:
    """Node i starts again from what survived its crash."""
    return _up(w, protocol(w.cfg.protocol), i)


def _down(w: World, p: Protocol, i: int, kind: str) -> World:
    n = p.crash(w.cfg.proto, w.nodes[i], kind)
    if p.ghost_crash is not None:  # the ghost sees what the crash destroys before it is gone
        w = w.evolve(ghost=p.ghost_crash(w.ghost, w, i, kind, n))
    alive = w.alive[:i] + (False,) + w.alive[i + 1:]
    reset = p.down_is_silent is None or not p.down_is_silent(w.cfg.proto, n)
    w = set_node(w, i, n).evolve(alive=alive, net=net_mod.node_down(w.net, i, w.now, reset))
    h = w.history
    return _fault(w, crashes=h.crashes + 1, os_crashes=h.os_crashes + (kind != "process"),
                  disk_losses=h.disk_losses + (kind == "disk"),
                  lost_writes=h.lost_writes | {i} if kind != "process" else h.lost_writes)


def _up(w: World, p: Protocol, i: int) -> World:
    n = p.restart(w.cfg.proto, w.nodes[i], w.now)
    alive = w.alive[:i] + (True,) + w.alive[i + 1:]
    since = restarted_since(w, i, n)  # a restarted process starts its threads now
    return _fault(set_node(w, i, n).evolve(alive=alive, fresh=w.fresh | {i}, since=since))


def _drop(w: World, p: Protocol, ev: Drop) -> tuple[World, tuple]:
    env = net_mod.find(w.net, ev.env)
    w = w.evolve(net=net_mod.remove(w.net, ev.env))
    if (env.src, env.dst) in w.net.cut:
        return w, ()  # lost behind a cut link: a consequence of that fault, not a new one
    return _fault(w), ()


def _duplicate(w: World, p: Protocol, ev: Duplicate) -> tuple[World, tuple]:
    return _fault(w.evolve(net=net_mod.duplicate(w.net, ev.env))), ()


def _crash(w: World, p: Protocol, ev: Crash) -> tuple[World, tuple]:
    return _down(w, p, ev.node, ev.kind()), ((ev.node, ev),)


def _restart(w: World, p: Protocol, ev: Restart) -> tuple[World, tuple]:
    return _up(w, p, ev.node), ((ev.node, ev),)


def _partition(w: World, p: Protocol, ev: Partition) -> tuple[World, tuple]:
    group_of = {node: g for g, members in enumerate(ev.groups) for node in members}
    n = len(w.nodes)
    cut = {(a, b) for a in range(n) for b in range(n)
           if a != b and group_of.get(a, -1) != group_of.get(b, -1)}
    return _fault(w.evolve(net=w.net.evolve(cut=w.net.cut | frozenset(cut)))), ((-1, ev),)


def _cut_link(w: World, p: Protocol, ev: CutLink) -> tuple[World, tuple]:
    return _fault(w.evolve(net=w.net.evolve(cut=w.net.cut | {(ev.src, ev.dst)}))), ((-1, ev),)


def _heal(w: World, p: Protocol, ev: Heal) -> tuple[World, tuple]:
    return _fault(w.evolve(net=w.net.evolve(cut=frozenset()))), ((-1, ev),)


def _calm(w: World, p: Protocol, ev: Calm) -> tuple[World, tuple]:
    w = w.evolve(net=w.net.evolve(cut=frozenset()),
                 history=w.history.evolve(calm=True, calm_at_ms=w.now, last_fault_ms=w.now))
    obs: list = [(-1, ev)]
    for i, up in enumerate(w.alive):
        if not up:
            w = _up(w, p, i)
            obs.append((i, Restart(node=i)))
    return w.evolve(history=w.history.evolve(last_fault_ms=w.now)), tuple(obs)


def _scripted(w: World, p: Protocol, ev: Scripted) -> tuple[World, tuple]:
    action = w.cfg.script[ev.index]
    return action.apply(w.evolve(script_pos=ev.index + 1))


_GHOST_SEES = frozenset(FAULT_EVENTS + (Calm,))

_WORLD_STEPS: dict[type, Callable[[World, Protocol, Any], tuple[World, tuple]]] = {
    Drop: _drop, Duplicate: _duplicate,
    Crash: _crash, Restart: _restart, Partition: _partition, CutLink: _cut_link, Heal: _heal,
    Calm: _calm, Scripted: _scripted,
}
