"""The offsets world: a master and a slave, a route source, producers and one consumer group.

Theory of operation
-------------------
Nodes: brokers `n0` (master, brokerId 0) and `n1` (slave, brokerId 1) of broker name
`broker-a` (reference_impl.offsets.broker); `ns0`, a route source standing for the
name servers (brokers register every 30 s; it forgets a broker 120 s after its last
registration, or at once when the broker's process dies and its connection closes);
producers `p0`.. that feed the topic's queues through the master; consumers `c0`.. of
one group that pull, consume and commit (reference_impl.offsets.client).

Two kinds of world event are this protocol's own (`World.ext`):

- `Rebalance(node)`: the consumer's RebalanceService runs, every 20 s, and at once when
  the set of live consumers differs from what it saw last (the broker notifies a group
  when a member's connection opens or closes). The group is the live consumers: the
  broker's ConsumerManager is not modelled, so membership changes are seen at once.
- `ChannelDestroyed(node)`: the route source notices that a dead broker's connection
  closed (the OS sends FIN for a killed process) unless the link is cut.

Faults: broker and consumer crashes (process: the CommitLog and consumerOffset.json
survive), restarts, partitions and one-way cuts (including the route source: the
clients' routes go stale), message loss. A consumer restart or a crash hands its
queues over to the others.
"""

from __future__ import annotations

from typing import Any

from reference_impl import core, rocketmq
from reference_impl.core import inputs
from reference_impl.core.state import freeze, record
from reference_impl.offsets import broker as ob
from reference_impl.offsets import client as oc
from reference_impl.offsets import ghost as gh
from reference_impl.offsets.records import (
    BROKER_NAME,
    Broker,
    Consumer,
    GetMessageStatus,
    OffsetsConfig,
    Producer,
    PullStatus,
    RouteSource,
)


@record
class Rebalance:
    node: int


@record
class ChannelDestroyed:
    node: int


@record
class RebalanceClock:
    """Per consumer index: (next periodic run, what its last run saw: see _view)."""

    due: tuple = ()


# --- nodes ---


def boot(c: OffsetsConfig, node_id: str, i: int, now: int) -> Any:
    """Start node `node_id`: broker, route source, producer or consumer."""
    if node_id in c.brokers:
        return ob.boot(c, node_id, c.brokers.index(node_id), now)
    if node_id == c.namesrv:
        return oc.boot_route_source(node_id, now)
    if node_id in c.producers:
        return Producer(id=node_id, next_send_ms=now + 1000)
    return oc.boot_consumer(c, node_id, now)


def wake_at(c: OffsetsConfig, n: Any) -> int:
    """Dispatch on the node's type."""
    t = type(n)
    if t is Broker:
        return ob.wake_at(n)
    if t is Consumer:
        return oc.consumer_wake(n)
    if t is Producer:
        return oc.producer_wake(c, n)
    return n.next_scan_ms


def on_tick(c: OffsetsConfig, n: Any, now: int, draw: int) -> tuple[Any, tuple]:
    """Dispatch on the node's type."""
    t = type(n)
    if t is Broker:
        return ob.on_tick(c, n, now)
    if t is Consumer:
        return oc.consumer_tick(c, n, now)
    if t is Producer:
        return oc.producer_tick(c, n, now)
    return oc.scan_not_active_broker(n, now), ()


def on_request(c: OffsetsConfig, n: Any, msg: Any, rpc: int, now: int) -> tuple[Any, Any, tuple]:
    """Brokers' request processors; the route source's REGISTER_BROKER and GET_ROUTEINFO_BY_TOPIC."""
    if type(n) is Broker:
        return ob.on_request(c, n, msg, rpc, now)
    if type(n) is RouteSource:
        if type(msg) is oc.RegisterBroker:
            addr = c.brokers[msg.broker_id]
            n, result = oc.register_broker(n, addr, msg, now)
            return n, result, ()
        return n, oc.pickup_topic_route_data(n), ()
    raise TypeError(f"{n.id} does not serve {msg!r}")


def on_response(c: OffsetsConfig, n: Any, ctx: Any, peer: str, resp: Any, now: int) -> tuple[Any, tuple]:
    """Dispatch on the node's type."""
    t = type(n)
    if t is Broker:
        return ob.on_response(c, n, ctx, resp, now)
    if t is Consumer:
        return oc.consumer_response(c, n, ctx, peer, resp, now)
    return oc.producer_response(c, n, ctx, resp, now)


def on_message(c: OffsetsConfig, n: Any, msg: Any, peer: str, now: int) -> tuple[Any, tuple]:
    """One-way requests: updateConsumerOffsetOneway to a broker."""
    if type(n) is Broker:
        return ob.on_message(n, msg, peer)
    raise TypeError(f"{n.id} takes no one-way {msg!r}")


def crash(c: OffsetsConfig, n: Any, kind: str) -> Any:
    """Every crash is a process crash here (docs/offsets.md): the broker keeps its CommitLog and
    consumerOffset.json, a client loses everything."""
    t = type(n)
    if t is Broker:
        return ob.crash(n, kind)
    if t is Producer:
        return n.evolve(in_flight=False)
    if t is Consumer:
        return n
    return n.evolve(live=oc.EMPTY_ROUTE)


def restart(c: OffsetsConfig, n: Any, now: int) -> Any:
    """A broker starts from its CommitLog and consumerOffset.json; a client starts afresh."""
    t = type(n)
    if t is Broker:
        return ob.start(c, n.evolve(incarnation=n.incarnation + 1), now)
    if t is Consumer:
        return oc.boot_consumer(c, n.id, now, n.incarnation + 1)
    if t is Producer:
        return n.evolve(next_send_ms=now)
    return oc.boot_route_source(n.id, now)


# --- the world's own events ---


def ext_init(cfg: core.WorldConfig) -> RebalanceClock:
    """Every consumer's RebalanceService is due at once."""
    return RebalanceClock(due=tuple((0, None) for _ in cfg.ids))


_ROLES: dict = {}  # cfg.ids -> (consumer indices, route source index, broker indices)


def _roles(w: core.World) -> tuple:
    """Consumer, route source and broker indexes of a world's ids (cached)."""
    hit = _ROLES.get(w.cfg.ids)
    if hit is None:
        c, ids = w.cfg.proto, w.cfg.ids
        hit = _ROLES[ids] = (tuple(i for i, x in enumerate(ids) if x in c.consumers), ids.index(c.namesrv),
                             tuple(ids.index(b) for b in c.brokers))
    return hit


def _members(w: core.World) -> tuple[str, ...]:
    """The group: live consumers."""
    ids, alive = w.cfg.ids, w.alive
    return tuple(ids[i] for i in _roles(w)[0] if alive[i])


def _view(n: Consumer, members: tuple) -> tuple:
    """What a consumer's last rebalance saw: a change runs it again at once (a consumer starts
    with rebalanceImmediately once it has the topic's route; the broker notifies the group of
    a member joining or leaving)."""
    return n.incarnation, members, bool(n.broker_addrs)


_PENDING: list = [None, None]  # (world, result) of the last scan: the world asks twice per step


def _pending(w: core.World) -> tuple[list, int]:
    """The world's own events and the earliest due time (cached per world)."""
    if _PENDING[0] is w:
        return _PENDING[1]
    consumers, ns, brokers = _roles(w)
    members = _members(w)
    events: list = []
    due = -1
    for i in consumers:
        if not w.alive[i]:
            continue
        t, seen = w.ext.due[i]
        if seen != _view(w.nodes[i], members):
            t = w.now
        events.append((t, Rebalance(node=i)))
        due = t if due < 0 or t < due else due
    if w.alive[ns]:
        live = w.nodes[ns].live
        for i in brokers:
            if not w.alive[i] and w.cfg.ids[i] in live and (i, ns) not in w.net.cut:
                events.append((w.now, ChannelDestroyed(node=i)))
                due = w.now
    result = (events, due)
    _PENDING[0], _PENDING[1] = w, result
    return result


def ext_deadline(w: core.World) -> int:
    """The earliest due time of a Rebalance or ChannelDestroyed (-1: none)."""
    return _pending(w)[1]


def ext_events(w: core.World, horizon: int) -> list:
    """Rebalance and ChannelDestroyed events due by the horizon."""
    return [ev for t, ev in _pending(w)[0] if t <= horizon]


def ext_apply(w: core.World, ev: Any, now: int) -> tuple[core.World, tuple]:
    """Run a consumer's rebalance, or drop a dead broker from the route source."""
    c: OffsetsConfig = w.cfg.proto
    if now != w.now:
        w = w.evolve(now=now)
    if isinstance(ev, Rebalance):
        i = ev.node
        members = _members(w)
        n, outs = oc.do_rebalance(c, w.nodes[i], members, now)
        due = w.ext.due
        clock = RebalanceClock(due=due[:i] + ((now + c.rebalance_interval_ms, _view(n, members)),) + due[i + 1:])
        return core.apply_outs(core.set_node(w.evolve(ext=clock), i, n), i, outs)
    if isinstance(ev, ChannelDestroyed):
        ns = w.cfg.ids.index(c.namesrv)
        rs = oc.on_channel_destroy(w.nodes[ns], w.cfg.ids[ev.node])
        return core.set_node(w, ns, rs), ((ns, ev),)
    raise TypeError(f"not an offsets event: {ev!r}")


# --- observable state ---


def table_json(t: Any) -> dict:
    """An offset table as JSON-friendly nested dicts."""
    return {k: {str(q): v for q, v in sorted(inner.items())} for k, inner in sorted(t.items())}


def observe(c: OffsetsConfig, n: Any, alive: bool) -> dict:
    """The observable state of one node (docs/trace-format.md, protocol `offsets`)."""
    t = type(n)
    if t is Broker:
        return {"alive": alive, "role": "SLAVE" if ob.is_slave(n) else "MASTER", "broker_id": n.broker_id,
                "offset_table": table_json(n.offset_table), "queue_max_offsets": [len(q) for q in n.store.cqs],
                "max_phy_offset": n.store.max_phy, "master_addr": n.master_addr if alive else None}
    if t is Consumer:
        return {"alive": alive, "role": "CONSUMER",
                "broker_addrs": {str(k): a for k, a in sorted(n.broker_addrs.items())},
                "assigned": {str(q): ps.next_offset for q, ps in sorted(n.assigned.items())},
                "offset_table": {str(q): v for q, v in sorted(n.offset_table.items())},
                "pull_from_which_node": {str(q): v for q, v in sorted(n.pull_from_which_node.items())},
                "consumed": n.consumed}
    if t is Producer:
        return {"alive": alive, "role": "PRODUCER", "sent": n.sent, "acked": n.acked, "failed": n.failed}
    return {"alive": alive, "role": "NAMESRV", "brokers": {a: bid for a, (bid, _) in sorted(n.live.items())}}


def describe(node_id: str, now: dict, before: dict | None) -> str | None:
    """Timeline lines: role changes, the route a consumer sees, queues it holds, a slave's master."""
    if before is None or now.get("alive") != before.get("alive"):
        return None
    if now["role"] == "CONSUMER":
        parts = []
        if now["broker_addrs"] != before["broker_addrs"]:
            parts.append(f"route {BROKER_NAME}: {now['broker_addrs'] or 'none'}")
        if set(now["assigned"]) != set(before["assigned"]):
            parts.append(f"queues {sorted(now['assigned'])}")
        return "; ".join(parts) or None
    if now["role"] == "SLAVE" and now["master_addr"] != before["master_addr"]:
        return f"masterAddr {now['master_addr']}"
    return None


def describe_obs(w: core.World, node_id: str, o: Any) -> str | None:
    """Timeline lines for slave syncs that change offsets, resumes, and lower commits."""
    name = type(o).__name__
    if name == "OffsetsSynced" and any(o.before.get(k) != v for k, v in o.table.items()):
        return f"syncConsumerOffset from {o.master}: {table_json(o.table)}"
    if name == "OffsetRead":
        return f"resumes queue {o.queue_id} at {o.offset} (read from {o.addr}, answer {o.answer})"
    if name == "OffsetCommitted" and o.offset < o.old:
        return f"commit {o.offset} of queue {o.queue_id} below {o.old} accepted ({o.via})"
    return None


def final_line(observed: dict) -> str:
    """The summary's final line: each broker's offsets and what each consumer consumed."""
    parts = []
    for node, o in observed.items():
        if o.get("role") in ("MASTER", "SLAVE"):
            parts.append(f"{node} {o['offset_table']}")
        elif o.get("role") == "CONSUMER":
            parts.append(f"{node} consumed {o['consumed']}")
    return "; ".join(parts)


# --- scenario hooks ---


SCRIPT_ACTIONS = ("persist_offsets", "rebalance")


def script_action(w: core.World, do: str, i: int, args: dict) -> tuple[core.World, tuple]:
    """`persist_offsets`: the consumer's persistAll runs now; `rebalance`: its RebalanceService runs now."""
    c: OffsetsConfig = w.cfg.proto
    n = w.nodes[i]
    if type(n) is not Consumer:
        raise ValueError(f"{w.cfg.ids[i]} is not a consumer")
    if do == "persist_offsets":
        n, outs = oc.persist_all(c, n, w.now)
        return core.apply_outs(core.set_node(w, i, n), i, outs)
    if do == "rebalance":
        return ext_apply(w, Rebalance(node=i), w.now)
    raise ValueError(f"unknown offsets action {do!r}")


# --- config ---


_KEYS = {a.name for a in OffsetsConfig.__attrs_attrs__} - {"brokers", "namesrv", "producers", "consumers"}


def _check(c: OffsetsConfig) -> OffsetsConfig:
    """Validate a config (bad input exits 2)."""

    if len(c.brokers) != 2:
        raise ValueError("offsets models one master and one slave (2 brokers)")
    if len(c.producers) > 8 or len(c.consumers) > 8:
        raise ValueError("offsets has at most 8 producers and 8 consumers")
    return c


def make_config(nodes: int = 2, overrides: dict | None = None) -> core.WorldConfig:
    """Brokers n0 (master) and n1 (slave), route source ns0, producers p0.. and consumers c0..
    with RocketMQ 4.9.4 defaults. `overrides`: OffsetsConfig keys, `producers` (default 1) and
    `consumers` (default 2)."""
    opts = dict(overrides or {})
    producers = opts.pop("producers", 1)
    consumers = opts.pop("consumers", 2)
    for name, v in (("producers", producers), ("consumers", consumers)):
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= 8:
            raise ValueError(f"{name} must be an integer in 0..8")
    if nodes != 2:
        raise ValueError("offsets has exactly 2 brokers (a master and a slave): --nodes 2")
    unknown = set(opts) - _KEYS
    if unknown:
        raise ValueError(f"unknown offsets config key(s): {', '.join(sorted(unknown))}")
    c = _check(OffsetsConfig(producers=tuple(f"p{k}" for k in range(producers)),
                             consumers=tuple(f"c{k}" for k in range(consumers)),
                             **inputs.structure_fields(OffsetsConfig, opts)))
    ids = c.brokers + (c.namesrv,) + c.producers + c.consumers
    crashable = tuple(ids.index(x) for x in c.brokers + c.consumers)
    return core.WorldConfig(protocol="offsets", ids=ids, proto=c, crashable=crashable,
                            overrides=freeze(dict(overrides or {})))


def load_config(d: dict) -> OffsetsConfig:
    """The config from a trace header."""
    return _check(inputs.structure(d, OffsetsConfig))


def check_ids(c: OffsetsConfig, ids: tuple[str, ...]) -> None:
    want = c.brokers + (c.namesrv,) + c.producers + c.consumers
    if want != ids:
        raise ValueError(f"the config's brokers, NameServer, producers and consumers are {list(want)}, not {list(ids)}")



# --- fault profiles, calibrated for this world (docs/offsets.md) ---
# A world of 2 brokers, 1 producer and 2 consumers takes about 2,800 events per simulated
# minute when idle, 5,000-6,000 while the producer sends. Crashes pick among the brokers
# and consumers; a down node restarts after ~20-40 s on average, long enough for the route
# to lose the master (and commits to go to the slave) and for the master's return to
# trigger the slave's sync.

CALM_AT_MS = 240_000

PROFILES = (
    core.FaultProfile(name="gentle", delay_ms=(1, 20), loss=0.002, crash=0.0001, restart=0.002, calm_at_ms=CALM_AT_MS,
                      description="Rare loss (a lost one-way commit), the odd broker or consumer crash."),
    core.FaultProfile(name="crash", delay_ms=(1, 10), crash=0.0004, restart=0.002, calm_at_ms=CALM_AT_MS,
                      description="Broker and consumer process crashes and restarts: master down and back, "
                                "consumer restarts and queue hand-over."),
    core.FaultProfile(name="partition", delay_ms=(1, 10), partition=0.0003, one_way=0.0002, heal=0.0005,
                      calm_at_ms=CALM_AT_MS,
                      description="Partitions and one-way cuts (route source included: stale routes), then heals."),
    core.FaultProfile(name="standard", delay_ms=(1, 50), loss=0.003, duplicate=0.001, crash=0.0004, restart=0.002,
                      partition=0.0002, one_way=0.0001, heal=0.0005, calm_at_ms=CALM_AT_MS,
                      description="Everything this world has: loss, duplication, crashes and restarts of brokers and "
                                "consumers, partitions, stale routes."),
    core.FaultProfile(name="lossy", delay_ms=(1, 200), loss=0.01, duplicate=0.005, calm_at_ms=CALM_AT_MS,
                      description="Loss (pulls, queries, one-way commits), duplication, reordering."),
    core.FaultProfile(name="hostile", delay_ms=(1, 200), loss=0.01, duplicate=0.003, crash=0.0008, restart=0.002,
                      partition=0.0004, one_way=0.0002, heal=0.0005, calm_at_ms=CALM_AT_MS,
                      description="standard, harsher. No OS crashes: every crash here is a process crash "
                                "(docs/offsets.md)."),
    core.FaultProfile(name="master-crash", delay_ms=(1, 10), crash=0.0004, restart=0.002, calm_at_ms=CALM_AT_MS,
                      description="As `crash`, for `simulate --faults master-crash` (see docs/offsets.md)."),
)


# Result codes where the Java code switches: a fuzz run's branch coverage counts each one.
_RC = rocketmq.ResponseCode
BRANCHES = (*GetMessageStatus, *PullStatus, _RC.SUCCESS, _RC.SYSTEM_ERROR, _RC.SERVICE_NOT_AVAILABLE,
            _RC.PULL_NOT_FOUND, _RC.PULL_RETRY_IMMEDIATELY, _RC.PULL_OFFSET_MOVED, _RC.QUERY_NOT_FOUND)


PROTOCOL = core.Protocol(
    name="offsets", boot=boot, wake_at=wake_at, on_tick=on_tick, on_request=on_request, on_response=on_response,
    on_message=on_message, crash=crash, restart=restart, ghost_init=gh.init, ghost_update=gh.update,
    observe=observe, make_config=make_config, load_config=load_config, check_ids=check_ids, script_action=script_action,
    script_actions=SCRIPT_ACTIONS, bench_nodes=(2,), default_nodes=2, ext_init=ext_init, ext_deadline=ext_deadline,
    ext_events=ext_events, ext_apply=ext_apply, describe=describe, describe_obs=describe_obs, final_line=final_line,
    profiles=PROFILES, branches=BRANCHES)
