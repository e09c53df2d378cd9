"""Ghost variables of the nameserver world: history that properties and reports need.

Nothing here is read by a node. The ghost records, per NameServer, which broker
addresses registered with it and were not removed since (NS-2); which clients could
reach which NameServer since when, and when a NameServer last answered each client's
route fetch (NS-11); every message's stored copies and failed attempts (duplicates,
NS-5/9/10); when each broker died and when a send was last routed to it, and when each
NameServer dropped it (the measured figures); and the concrete causes of RocketMQ's
known violations (a MQFaultStrategy fallback, a rewritten shared MessageQueue, a role
change registered oneway, an unregister by id, a reset registration).
"""

from __future__ import annotations

from typing import Any

from reference_impl import core, rocketmq
from reference_impl.core.state import EMPTY, FrozenMap, record
from reference_impl.nameserver import admin
from reference_impl.nameserver import broker as nb
from reference_impl.nameserver import client_routes as cr
from reference_impl.nameserver import namesrv as ns
from reference_impl.nameserver import producer as pr
from reference_impl.nameserver import remoting as rm
from reference_impl.nameserver import route_info as ri

RETIRE_MS = 2000  # a finished send's record is kept this long for copies still in flight
FALLBACK_PATHS = ("fault_pick_one_at_least", "fault_fallback")


def repeats_failed_broker(o: pr.QueueSelected) -> bool:
    """NS-4's violation: a retry chose the broker that had just failed although the queue list it
    chose from held a queue of another broker."""
    return (o.attempt > 0 and o.last_broker is not None and o.broker == o.last_broker
            and any(b != o.last_broker for b in o.brokers))


@record
class Roles:
    """Node indices by role, from the node ids (ns*, b*-m / b*-s*, p*, c*)."""

    namesrvs: tuple
    brokers: tuple
    producers: tuple
    consumers: tuple
    index: FrozenMap  # node id -> index

    @property
    def clients(self) -> tuple:
        return self.producers + self.consumers


_ROLES: dict[tuple, Roles] = {}
_LAST_ROLES: list = [None, None]  # (ids, roles) of the last call: worlds keep their ids tuple


def roles(ids: tuple) -> Roles:
    if _LAST_ROLES[0] is ids:
        return _LAST_ROLES[1]
    r = _ROLES.get(ids)
    _LAST_ROLES[0] = ids
    if r is None:
        def pick(prefix: str) -> tuple:
            return tuple(i for i, x in enumerate(ids) if x.startswith(prefix))
        r = _ROLES[ids] = Roles(namesrvs=pick("ns"), brokers=pick("b"), producers=pick("p"), consumers=pick("c"),
                                index=FrozenMap((x, i) for i, x in enumerate(ids)))
    _LAST_ROLES[1] = r
    return r


@record
class DeathWindow:
    died_ms: int
    silent: bool  # crashed with its machine (no FIN)
    last_routed_ms: int = -1
    removed_by: frozenset = frozenset()  # NameServers that dropped it since


@record
class MsgGhost:
    producer: str
    started_ms: int
    stale: bool  # began while a dead broker was still in the producer's route
    copies: int = 0
    stored_attempts: frozenset = frozenset()
    failed_attempts: frozenset = frozenset()
    done_ms: int = -1
    ok: bool = False


@record
class SendStats:
    started: int = 0
    ok: int = 0
    failed: int = 0
    stale_started: int = 0
    stale_ok: int = 0
    stale_failed: int = 0
    duplicated_msgs: int = 0  # messages stored more than once
    retry_dups: int = 0  # extra copies made by a retry after an attempt the producer saw fail
    stale_retry_dups: int = 0
    unexplained_dups: int = 0  # extra copies no failed attempt explains
    failed_but_stored: int = 0  # sends reported failed whose message was stored anyway


@record
class NsGhost:
    registered: FrozenMap = EMPTY  # namesrv -> frozenset of broker addresses (NS-2)
    unregistered_by_id: frozenset = frozenset()  # (namesrv, addr): unregisterBroker removed another id
    resets: FrozenMap = EMPTY  # (namesrv, peer) -> last time its request was reset
    role_changes: FrozenMap = EMPTY  # broker addr -> time of its last role change
    last_registered: FrozenMap = EMPTY  # (namesrv, broker addr) -> (time, broker id) of its latest registration there
    msgs: FrozenMap = EMPTY  # msg id -> MsgGhost, for sends not yet retired
    stats: SendStats = SendStats()
    dead: FrozenMap = EMPTY  # broker addr -> DeathWindow, while it is down
    dead_routed_ms: tuple = ()  # per finished death: last send routed to it - death
    ns_detect: tuple = ()  # (silent, ms from death to a NameServer dropping it)
    # NS-4: the cause of the latest retry that went back to the broker that just failed through the
    # fault strategy's fallback, and the first such retry no fallback explains. A step can make
    # several selections, so a later one that repeats nothing must not erase an earlier repeat's cause.
    fallback_repeat: str | None = None
    unexplained_repeat: str | None = None
    rewritten: frozenset = frozenset()  # (producer, topic, publish-info epoch) whose list was rewritten
    reach_since: FrozenMap = EMPTY  # (client, namesrv) -> since when both are up and linked both ways
    last_answer: FrozenMap = EMPTY  # client -> last time a NameServer answered its route fetch
    call_timeouts: FrozenMap = EMPTY  # client -> last "invokeSync call timeout" after connecting
    # client -> its route calls since its last answer that failed in transport, each (time,
    # NameServer, exception, the fault that explains it or None): NS-11's `transport-faults` cause
    failed_calls: FrozenMap = EMPTY
    # (namesrv, master addr) -> (time, topics the master held but did not send): the NameServer's
    # first registration of that master (after its own restart, or after dropping the master) came
    # from registerIncrementBrokerData, which carries one topic (NS-3's `incremental-first` cause)
    partial_first: FrozenMap = EMPTY
    # (namesrv, topic, broker name) -> (time, master addr, the QueueData the NameServer listed, where
    # the command stopped, why):
    # mqadmin deleteTopic dropped the topic on that master, then stopped (at a slave in 4.9.4, or at a
    # broker or NameServer that did not answer) before it reached this NameServer (NS-3's
    # `delete-stopped` cause)
    stale_topics: FrozenMap = EMPTY
    # (namesrv, topic, broker name) -> (time, master addr, the NameServer's DataVersion of it then):
    # mqadmin deleteTopic dropped that broker's queue data of the topic at this NameServer but never
    # asked its master, which the NameServer the command asked did not list (NS-3's `delete-missed`)
    kept_topics: FrozenMap = EMPTY


def ghost_init(cfg: core.WorldConfig) -> NsGhost:
    r = roles(cfg.ids)
    reach = FrozenMap(((cfg.ids[c], cfg.ids[n]), 0) for c in r.clients for n in r.namesrvs
                      if c not in cfg.down and n not in cfg.down)
    return NsGhost(registered=FrozenMap((cfg.ids[n], frozenset()) for n in r.namesrvs), reach_since=reach,
                   last_answer=FrozenMap((cfg.ids[c], 0) for c in r.clients))


def reach_since(w: core.World, before: FrozenMap) -> FrozenMap:
    r = roles(w.cfg.ids)
    ids, cut, alive = w.cfg.ids, w.net.cut, w.alive
    out = {}
    for c in r.clients:
        for n in r.namesrvs:
            if alive[c] and alive[n] and (c, n) not in cut and (n, c) not in cut:
                key = (ids[c], ids[n])
                out[key] = before.get(key, w.now)
    return FrozenMap(out)


def stale_route(w: core.World, p: pr.Producer, topic: str) -> bool:
    """A broker the producer would send to (the master address it knows) is down."""
    info = p.publish.get(topic)
    if info is None:
        return False
    index = roles(w.cfg.ids).index
    for name in {q.broker_name for q in info.message_queue_list}:
        addr = cr.find_broker_address_in_publish(p.client, name)
        if addr is not None and addr in index and not w.alive[index[addr]]:
            return True
    return False


def ghost_update(g: NsGhost, w: core.World, i: int, obs: Any) -> NsGhost:
    """Fold one observation of node i into the ghost (the step of its type in `UPDATES`; others
    leave it as it is), or a world event (node -1: faults, operators, the quiet tail)."""
    if i < 0:
        return _world_event(g, w, obs)
    step = UPDATES.get(type(obs))
    return g if step is None else step(g, w, i, obs)


def _queue_selected(g: NsGhost, w: core.World, i: int, obs: pr.QueueSelected) -> NsGhost:
    if not repeats_failed_broker(obs):
        return g
    me = w.cfg.ids[i]
    if obs.path in FALLBACK_PATHS:
        return g.evolve(fallback_repeat=(
            f"{me} has sendLatencyFaultEnable and every broker was marked unavailable, so MQFaultStrategy "
            f"fell back ({obs.path}), which ignores lastBrokerName: retry {obs.attempt} of {obs.msg_id} "
            f"went back to {obs.broker}"))
    if g.unexplained_repeat is not None:
        return g
    return g.evolve(unexplained_repeat=(
        f"{me}'s retry {obs.attempt} of {obs.msg_id} went back to {obs.broker}, which had just failed, by "
        f"{obs.path} although {', '.join(b for b in obs.brokers if b != obs.broker)} had a queue in its list"))


def _attempt_sent(g: NsGhost, w: core.World, i: int, obs: pr.AttemptSent) -> NsGhost:
    d = g.dead.get(obs.broker_addr)
    return g.evolve(dead=g.dead.set(obs.broker_addr, d.evolve(last_routed_ms=w.now))) if d is not None else g


def _attempt_failed(g: NsGhost, w: core.World, i: int, obs: pr.AttemptFailed) -> NsGhost:
    m = g.msgs.get(obs.msg_id)
    if m is None:
        return g
    return g.evolve(msgs=g.msgs.set(obs.msg_id, m.evolve(failed_attempts=m.failed_attempts | {obs.attempt})))


def _route_refreshed(g: NsGhost, w: core.World, i: int, obs: cr.RouteRefreshed) -> NsGhost:
    me = w.cfg.ids[i]
    if obs.outcome in ("changed", "unchanged", "TOPIC_NOT_EXIST", "error"):
        return g.evolve(last_answer=g.last_answer.set(me, w.now), failed_calls=g.failed_calls.without(me))
    if obs.outcome == rm.CALL_TIMEOUT_EXCEPTION:
        return g.evolve(call_timeouts=g.call_timeouts.set(me, w.now))
    if obs.outcome in (rm.TIMEOUT_EXCEPTION, rm.SEND_REQUEST_EXCEPTION, rm.CONNECT_EXCEPTION):
        calls = g.failed_calls.get(me, ())[-7:] + ((w.now, obs.namesrv, obs.outcome, _call_fault(w, me, obs)),)
        return g.evolve(failed_calls=g.failed_calls.set(me, calls))
    return g


def _broker_registered(g: NsGhost, w: core.World, i: int, obs: ns.BrokerRegistered) -> NsGhost:
    me = w.cfg.ids[i]
    g = g.evolve(last_registered=g.last_registered.set((me, obs.broker_addr), (w.now, obs.broker_id)))
    if obs.first and obs.broker_id == 0:
        g = _first_registration(g, w, me, obs)
        if any(k[0] == me and v[1] == obs.broker_addr for k, v in g.kept_topics.items()):
            # a first registration carries every topic the master holds: nothing is kept out now
            g = g.evolve(kept_topics=FrozenMap((k, v) for k, v in g.kept_topics.items()
                                               if not (k[0] == me and v[1] == obs.broker_addr)))
    regs = g.registered.get(me, frozenset())
    return g if obs.broker_addr in regs else g.evolve(registered=g.registered.set(me, regs | {obs.broker_addr}))


def _broker_removed(g: NsGhost, w: core.World, i: int, obs: ns.BrokerRemoved) -> NsGhost:
    me = w.cfg.ids[i]
    g = g.evolve(registered=g.registered.set(me, g.registered.get(me, frozenset()) - {obs.broker_addr}))
    d = g.dead.get(obs.broker_addr)
    if d is not None and me not in d.removed_by:
        g = g.evolve(dead=g.dead.set(obs.broker_addr, d.evolve(removed_by=d.removed_by | {me})),
                     ns_detect=g.ns_detect + ((d.silent, w.now - d.died_ms),))
    return g


def _broker_unregistered(g: NsGhost, w: core.World, i: int, obs: ns.BrokerUnregistered) -> NsGhost:
    if obs.removed_addr != obs.broker_addr:  # another address, or nothing, was under that id
        return g.evolve(unregistered_by_id=g.unregistered_by_id | {(w.cfg.ids[i], obs.broker_addr)})
    return g


def _connection_reset(g: NsGhost, w: core.World, i: int, obs: ns.ConnectionReset) -> NsGhost:
    return g.evolve(resets=g.resets.set((w.cfg.ids[i], obs.peer), w.now))


def _role_changed(g: NsGhost, w: core.World, i: int, obs: nb.RoleChanged) -> NsGhost:
    return g.evolve(role_changes=g.role_changes.set(w.cfg.ids[i], w.now))


def _queue_rewritten(g: NsGhost, w: core.World, i: int, obs: pr.QueueRewritten) -> NsGhost:
    info = w.nodes[i].publish.get(obs.topic)
    return g.evolve(rewritten=g.rewritten | {(w.cfg.ids[i], obs.topic, info.epoch if info is not None else -1)})


def _call_fault(w: core.World, client: str, obs: Any) -> str | None:
    """The fault that explains a route call failing in transport, seen when it failed: its
    NameServer was down or cut off from the client, or a fault happened while the call was
    open (mqClientApiTimeout: a lost request or reply). None: nothing explains it."""
    index = roles(w.cfg.ids).index
    n, c = index.get(obs.namesrv), index.get(client)
    if n is None or c is None:
        return None
    if not w.alive[n]:
        return f"{obs.namesrv} was down"
    if (c, n) in w.net.cut or (n, c) in w.net.cut:
        return f"{obs.namesrv} was cut off"
    if w.history.last_fault_ms >= w.now - _api_timeout(w, c):
        return f"a fault at {w.history.last_fault_ms} ms while the call was open"
    return None


def _api_timeout(w: core.World, c: int) -> int:
    """The client's mqClientApiTimeout: a route call is open at most this long."""
    proto = w.cfg.proto
    clients = proto.producer.client if c in roles(w.cfg.ids).producers else proto.consumer
    return clients.mq_client_api_timeout


def _first_registration(g: NsGhost, w: core.World, me: str, obs: Any) -> NsGhost:
    """Record which of the master's topics its first registration with this NameServer left out."""
    key = (me, obs.broker_addr)
    index = roles(w.cfg.ids).index
    held = set(w.nodes[index[obs.broker_addr]].topic_config) if obs.broker_addr in index else set()
    missing = frozenset(held - set(obs.topics))
    if missing:
        return g.evolve(partial_first=g.partial_first.set(key, (w.now, missing)))
    return g.evolve(partial_first=g.partial_first.without(key)) if key in g.partial_first else g


def _deleted(g: NsGhost, w: core.World, done: admin.DeleteTopicDone) -> NsGhost:
    """Where mqadmin deleteTopic left a NameServer's queue data and a master's topics apart."""
    index = roles(w.cfg.ids).index
    stale, kept = dict(g.stale_topics.items()), dict(g.kept_topics.items())
    for nid in w.cfg.proto.name_servers:
        n = w.nodes[index[nid]]
        if not w.alive[index[nid]] or nid in done.name_servers:
            continue
        for name, qd in n.rim.topic_queue_table.get(done.topic, {}).items():
            master = n.rim.broker_addr_table.get(name)
            addr = master.broker_addrs.get(rocketmq.MASTER_ID) if master is not None else None
            if addr in done.brokers:
                stale[(nid, done.topic, name)] = (w.now, addr, qd, done.stopped_at, done.reason)
    for nid, name in done.removed:
        n = w.nodes[index[nid]]
        master = n.rim.broker_addr_table.get(name)
        addr = master.broker_addrs.get(rocketmq.MASTER_ID) if master is not None else None
        live = n.rim.broker_live_table.get(addr) if addr is not None else None
        if addr in index and addr not in done.brokers and live is not None \
                and done.topic in w.nodes[index[addr]].topic_config:
            kept[(nid, done.topic, name)] = (w.now, addr, live.data_version)
    return g.evolve(stale_topics=FrozenMap(stale), kept_topics=FrozenMap(kept))


def _world_event(g: NsGhost, w: core.World, ev: Any) -> NsGhost:
    """Faults, operators and the quiet tail: reachability, deaths, restarts, deleted topics."""
    if type(ev) is admin.DeleteTopicDone:
        return _deleted(g, w, ev)
    r = roles(w.cfg.ids)
    g = g.evolve(reach_since=reach_since(w, g.reach_since))
    if isinstance(ev, core.Crash):
        node = w.cfg.ids[ev.node]
        if ev.node in r.namesrvs:
            g = g.evolve(registered=g.registered.set(node, frozenset()),
                         partial_first=FrozenMap((k, v) for k, v in g.partial_first.items() if k[0] != node),
                         stale_topics=FrozenMap((k, v) for k, v in g.stale_topics.items() if k[0] != node),
                         kept_topics=FrozenMap((k, v) for k, v in g.kept_topics.items() if k[0] != node))
        elif ev.node in r.brokers:
            g = g.evolve(dead=g.dead.set(node, DeathWindow(died_ms=w.now, silent=ev.os)))
        else:
            g = g.evolve(last_answer=g.last_answer.set(node, -1))  # a client that is down is owed nothing
    elif isinstance(ev, (core.Restart, core.Calm)):
        g = _revived(g, w, [ev.node] if isinstance(ev, core.Restart) else range(len(w.nodes)))
    return g


def _revived(g: NsGhost, w: core.World, nodes) -> NsGhost:
    r = roles(w.cfg.ids)
    for k in nodes:
        if not w.alive[k]:
            continue
        node = w.cfg.ids[k]
        d = g.dead.get(node)
        if d is not None:
            routed = d.last_routed_ms - d.died_ms if d.last_routed_ms >= 0 else 0
            g = g.evolve(dead=g.dead.without(node), dead_routed_ms=g.dead_routed_ms + (routed,))
        if k in r.clients and g.last_answer.get(node, 0) < 0:
            g = g.evolve(last_answer=g.last_answer.set(node, w.now))  # a restarted client starts afresh
    return g


def _started(g: NsGhost, w: core.World, i: int, obs: pr.SendStarted) -> NsGhost:
    p = w.nodes[i]
    stale = stale_route(w, p, w.cfg.proto.producer.topic)
    msgs = g.msgs
    if len(msgs) > 64:  # prune now and then: finished sends whose copies can no longer arrive
        msgs = FrozenMap((k, m) for k, m in msgs.items() if m.done_ms < 0 or w.now - m.done_ms <= RETIRE_MS)
    msgs = msgs.set(obs.msg_id, MsgGhost(producer=w.cfg.ids[i], started_ms=w.now, stale=stale))
    s = g.stats
    s = s.evolve(started=s.started + 1, stale_started=s.stale_started + stale)
    return g.evolve(msgs=msgs, stats=s)


def _done(g: NsGhost, w: core.World, i: int, obs: pr.SendDone) -> NsGhost:
    m = g.msgs.get(obs.msg_id)
    if m is None:
        return g
    ok = obs.status == "SEND_OK"
    s = g.stats
    s = s.evolve(ok=s.ok + ok, failed=s.failed + (not ok), stale_ok=s.stale_ok + (ok and m.stale),
                 stale_failed=s.stale_failed + (not ok and m.stale),
                 failed_but_stored=s.failed_but_stored + (not ok and m.copies > 0))
    return g.evolve(msgs=g.msgs.set(obs.msg_id, m.evolve(done_ms=w.now, ok=ok)), stats=s)


def _stored(g: NsGhost, w: core.World, i: int, obs: nb.MessageStored) -> NsGhost:
    m = g.msgs.get(obs.msg_id)
    if m is None:
        m = MsgGhost(producer=obs.producer, started_ms=w.now, stale=False)
    s = g.stats
    if m.copies >= 1:
        # Attempt k + 1 exists because the producer saw attempt k fail, so copies from several
        # attempts are explained when every one but the last made was seen failing, in whatever
        # order they arrive: two 0 ms attempts of one send (producer.send_kernel_impl) are in
        # flight together. A second copy of one attempt is never explained.
        attempts = m.stored_attempts | {obs.attempt}
        last = max(attempts)
        explained = obs.attempt not in m.stored_attempts and all(
            a in m.failed_attempts for a in attempts if a != last)
        if m.copies == 1:
            s = s.evolve(duplicated_msgs=s.duplicated_msgs + 1)
        if explained:
            s = s.evolve(retry_dups=s.retry_dups + 1, stale_retry_dups=s.stale_retry_dups + m.stale)
        else:
            s = s.evolve(unexplained_dups=s.unexplained_dups + 1)
    if m.done_ms >= 0 and not m.ok and m.copies == 0:
        s = s.evolve(failed_but_stored=s.failed_but_stored + 1)
    m = m.evolve(copies=m.copies + 1, stored_attempts=m.stored_attempts | {obs.attempt})
    return g.evolve(msgs=g.msgs.set(obs.msg_id, m), stats=s)


def route_expected(w: core.World) -> FrozenMap:
    """What every NameServer should list once all brokers registered: name -> {id: addr} of live brokers."""
    r = roles(w.cfg.ids)
    table: dict = {}
    for b in r.brokers:
        if w.alive[b]:
            n = w.nodes[b]
            table.setdefault(n.broker_name, {})[n.broker_id] = n.self_id
    return FrozenMap((name, FrozenMap(addrs)) for name, addrs in table.items())


def listed(rim: ri.RouteInfo) -> frozenset:
    """Every broker address a NameServer lists: live entries and route addresses."""
    addrs = set(rim.broker_live_table)
    for bd in rim.broker_addr_table.values():
        addrs.update(bd.broker_addrs.values())
    return frozenset(addrs)


# What each observation of a node does to the ghost, by its type, as core/transitions.py steps the
# world by the event's type.
UPDATES = {
    pr.QueueSelected: _queue_selected, pr.AttemptSent: _attempt_sent, pr.AttemptFailed: _attempt_failed,
    nb.MessageStored: _stored, pr.SendStarted: _started, pr.SendDone: _done, cr.RouteRefreshed: _route_refreshed,
    ns.BrokerRegistered: _broker_registered, ns.BrokerRemoved: _broker_removed,
    ns.BrokerUnregistered: _broker_unregistered, ns.ConnectionReset: _connection_reset, nb.RoleChanged: _role_changed,
    pr.QueueRewritten: _queue_rewritten,
}
