"""The NameServer's and the producer's routing decisions, restated from RocketMQ 4.9.4's Java
(docs/properties.md: NS-12..NS-15).

NS-1..NS-11 judge outcomes (a dead broker leaves the tables, the tables converge, a retry
avoids the failed broker). A handler that decides wrongly is often absorbed before an outcome
shows it: the next registration 30 s later rewrites a wrong entry, a route answer missing a
broker is corrected by the next poll. Each property here judges one decision on the step that
makes it, over (before, event, after, observations), written from the Java method and branch
it names and not from the reference's functions (which it must agree with):

- NS-12 `RouteInfoManager#registerBroker` (REGISTER_BROKER, as an RPC or one-way): on a
  channel the NameServer accepted, the broker name joins its cluster; the address goes under
  its id, and any other id holding the same address is removed ("switch slave to master");
  its live entry is (now, the request's DataVersion, the channel, the HA address); a master's
  (id 0) topics create or update their queue data exactly when its DataVersion differs from
  the live entry's or this is its first registration (no broker data, or no address under
  that id), and nothing else in the tables changes; a slave's result names the master's
  address and HA address when the master has a live entry. On an unknown channel nothing
  changes (the RPC gets a RST).
- NS-13 `RouteInfoManager#unregisterBroker`, `#scanNotActiveBroker`, `#onChannelDestroy`
  (via BrokerHousekeepingService and the IdleStateHandler): outside registration, a live entry
  goes only by an UNREGISTER_BROKER of that address, by the scan when it is older than
  brokerChannelExpiredTime, or with its own channel (closed by the peer, idle, or by the scan);
  an address leaves brokerAddrTable only by an UNREGISTER_BROKER of its name and id (by id,
  whatever the address) or as its live entry goes; a broker name's queue data goes only when
  the name's last address goes, and queue data never changes otherwise; a due scan leaves no
  expired entry, and a tick leaves no channel idle for serverChannelMaxIdleTimeSeconds.
- NS-14 `DefaultRequestProcessor#getRouteInfoByTopic` / `RouteInfoManager#pickupTopicRouteData`:
  the answer is TOPIC_NOT_EXIST when the topic has no queue data or none of its broker names has
  broker data; else SUCCESS with the topic's queue data and the broker data of those names.
- NS-15 `MQFaultStrategy#selectOneMessageQueue` with sendLatencyFaultEnable off (the default) ->
  `TopicPublishInfo#selectOneMessageQueue(lastBrokerName)`, as `DefaultMQProducerImpl#sendDefaultImpl`
  calls it: lastBrokerName is null for a send's first attempt and the previous attempt's broker for
  a retry; the queue is the list's entry at the send thread's index after its last increment
  (Math.abs(index) % size); a first attempt increments once; a retry increments until a queue of
  another broker, and one more time if a whole round was lastBrokerName's. Each choice starts from
  the index the choice before left in that TopicPublishInfo (several can happen in one step: an
  attempt that throws before writing a request is retried at once), and the send and the table,
  which hold the same object, keep the index the step's last choice left.
- NS-16 `MQClientInstance#updateTopicRouteInfoFromNameServer` and `#cleanOfflineBroker`: a
  client's cached route of a topic changes only when a GET_ROUTEINFO_BY_TOPIC answer SUCCESS
  reaches it, and then becomes that very route, with the broker address table taking each of
  its brokers' addresses (it may skip both only when the route equals the cached one); a
  TOPIC_NOT_EXIST or failed fetch keeps both; otherwise the address table changes only by
  cleanOfflineBroker at its period, which keeps exactly the addresses some cached route names.

Bounds (brokerChannelExpiredTime, serverChannelMaxIdleTimeSeconds) are RocketMQ's defaults from
spec/bounds.py, or the user's overrides.
"""

from __future__ import annotations

from typing import Any

from reference_impl import core, rocketmq
from reference_impl.core import network as net_mod
from reference_impl.core.events import Deliver, Tick
from reference_impl.nameserver import client_routes as cr
from reference_impl.nameserver import namesrv as ns
from reference_impl.nameserver import producer as pr
from reference_impl.nameserver import route_info as ri
from spec import bounds
from spec.properties import Property

MASTER_ID = 0  # MixAll.MASTER_ID
POSITIVE_MASK = 0x7FFFFFFF  # ThreadLocalIndex#incrementAndGet: Math.abs(index & POSITIVE_MASK)

_WHY: list = [None, ""]


def _wrong(after: core.World, why: str) -> bool:
    _WHY[0], _WHY[1] = after, why
    return False


def _why(w: core.World) -> str:
    return _WHY[1] if _WHY[0] is w else "see the trace"


def _delivered(before: core.World, event: Any, kind: type) -> tuple[int, Any]:
    """(destination, envelope) of a request or message of type `kind` this step delivers to a live
    node, else (-1, None)."""
    if type(event) is not Deliver:
        return -1, None
    env = net_mod.find(before.net, event.env)
    if env is None or env.reply or type(env.msg) is not kind or not before.alive[env.dst]:
        return -1, None
    return env.dst, env


def _reply(after: core.World, rpc: int) -> Any:
    """The reply to `rpc` this step put on the network (None when the network dropped it)."""
    for env in reversed(after.net.flight):
        if env.reply and env.rpc == rpc:
            return env.msg
    return None


def _namesrv_stepped(before: core.World, event: Any) -> int:
    if type(event) is Tick:
        i = event.node
    elif type(event) is Deliver:
        env = net_mod.find(before.net, event.env)
        if env is None or env.reply:
            return -1
        i = env.dst
    else:
        return -1
    return i if before.alive[i] and type(before.nodes[i]) is ns.NameServer else -1


def _queue_data(broker_name: str, tc: ri.TopicConfig) -> ri.QueueData:
    return ri.QueueData(broker_name=broker_name, read_queue_nums=tc.read_queue_nums,
                        write_queue_nums=tc.write_queue_nums, perm=tc.perm, topic_sys_flag=tc.topic_sys_flag)


def _without(table: Any, key: Any) -> dict:
    return {k: v for k, v in table.items() if k != key}


# --- NS-12: registerBroker ---


def ns12(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    i, env = _delivered(before, event, ns.RegisterBroker)
    if i < 0 or type(before.nodes[i]) is not ns.NameServer:
        return True
    req, name = env.msg, after.cfg.ids[i]
    n0, n1 = before.nodes[i], after.nodes[i]
    b, a = n0.rim, n1.rim
    if req.chan not in n0.channels:
        if a is not b:
            return _wrong(after, f"{name} changed its tables for a registration of {req.broker_addr} on a channel it "
                                 f"never accepted")
        return True
    bd0 = b.broker_addr_table.get(req.broker_name)
    first = bd0 is None or req.broker_id not in bd0.broker_addrs
    addrs = {k: v for k, v in (bd0.broker_addrs.items() if bd0 is not None else ())
             if not (v == req.broker_addr and k != req.broker_id)}
    addrs[req.broker_id] = req.broker_addr
    bd1 = a.broker_addr_table.get(req.broker_name)
    cluster = bd0.cluster if bd0 is not None else req.cluster_name
    if bd1 is None or dict(bd1.broker_addrs.items()) != addrs or bd1.cluster != cluster or \
            _without(a.broker_addr_table, req.broker_name) != _without(b.broker_addr_table, req.broker_name):
        return _wrong(after, f"{name} registered {req.broker_addr} as {req.broker_name} id {req.broker_id}: "
                             f"brokerAddrs {dict(bd1.broker_addrs.items()) if bd1 else None}, want {addrs} (and no "
                             f"other broker name touched)")
    names = b.cluster_addr_table.get(req.cluster_name, frozenset())
    if a.cluster_addr_table.get(req.cluster_name) != names | {req.broker_name} or \
            _without(a.cluster_addr_table, req.cluster_name) != _without(b.cluster_addr_table, req.cluster_name):
        return _wrong(after, f"{name} did not add {req.broker_name} to cluster {req.cluster_name} alone")
    version = req.topic_config.data_version if req.topic_config is not None else ri.DataVersion()
    live = a.broker_live_table.get(req.broker_addr)
    if live is None or (live.last_update_timestamp, live.data_version, live.channel, live.ha_server_addr) != (
            after.now, version, req.chan, req.ha_server_addr) or \
            _without(a.broker_live_table, req.broker_addr) != _without(b.broker_live_table, req.broker_addr):
        return _wrong(after, f"{name}'s live entry of {req.broker_addr} is {live}; registerBroker puts ({after.now}, "
                             f"{version}, the request's channel, {req.ha_server_addr}) and touches no other entry")
    prev = b.broker_live_table.get(req.broker_addr)
    takes = req.topic_config is not None and req.broker_id == MASTER_ID and (
        prev is None or prev.data_version != version or first)
    want = {t: dict(q.items()) for t, q in b.topic_queue_table.items()}
    if takes:
        for tc in req.topic_config.topic_config_table.values():
            want.setdefault(tc.topic_name, {})[req.broker_name] = _queue_data(req.broker_name, tc)
    got = {t: dict(q.items()) for t, q in a.topic_queue_table.items()}
    if got != want:
        return _wrong(after, f"{name} registered {req.broker_addr} (id {req.broker_id}, DataVersion {version}, "
                             f"held {prev.data_version if prev else None}, first {first}): its queue data "
                             f"{'should take' if takes else 'should keep'} the carried topics; it changed "
                             f"{sorted(t for t in set(got) | set(want) if got.get(t) != want.get(t))}")
    seen = [o for j, o in obs if j == i and type(o) is ns.BrokerRegistered]
    if len(seen) != 1 or seen[0].first != first:
        return _wrong(after, f"{name} observed registration of {req.broker_addr} as first={[o.first for o in seen]}; "
                             f"registerFirst is {first}")
    if env.rpc:
        reply = _reply(after, env.rpc)
        master = addrs.get(MASTER_ID) if req.broker_id != MASTER_ID else None
        master_live = a.broker_live_table.get(master) if master is not None else None
        want_result = (master_live.ha_server_addr, master) if master_live is not None else (None, None)
        if reply is not None and (reply.code != rocketmq.ResponseCode.SUCCESS or
                                  (reply.ha_server_addr, reply.master_addr) != want_result):
            return _wrong(after, f"{name} answered {req.broker_addr}'s registration with master "
                                 f"{reply.master_addr} (HA {reply.ha_server_addr}); RegisterBrokerResult names "
                                 f"{want_result[1]} (HA {want_result[0]})")
    return True


# --- NS-13: removal (unregisterBroker, scanNotActiveBroker, onChannelDestroy) ---


def ns13(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    i = _namesrv_stepped(before, event)
    if i < 0:
        return True
    n0, n1 = before.nodes[i], after.nodes[i]
    b, a = n0.rim, n1.rim
    name = after.cfg.ids[i]
    is_tick = type(event) is Tick
    env = net_mod.find(before.net, event.env) if type(event) is Deliver else None
    msg = env.msg if env is not None else None
    if type(msg) is ns.RegisterBroker and msg.chan in n0.channels:
        return True  # NS-12 judges the whole registration
    expired = bounds.setting(after, "broker_channel_expired_time")
    idle = bounds.setting(after, "server_channel_max_idle_time_seconds") * 1000
    scanned = is_tick and n0.next_scan_ms <= after.now
    unregister = msg if type(msg) is ns.UnregisterBroker and msg.chan in n0.channels else None
    closed = {c for c in n0.channels if c not in n1.channels}
    if closed:
        for addr, live in b.broker_live_table.items():
            if live.channel in closed and addr in a.broker_live_table:
                return _wrong(after, f"{name} closed {addr}'s channel and kept its live entry (onChannelDestroy finds "
                                     f"the entry by its channel)")
    if b is not a:
        gone_live = set()
        for addr, live in b.broker_live_table.items():
            if addr in a.broker_live_table:
                if a.broker_live_table[addr] != live:
                    return _wrong(after, f"{name} changed {addr}'s live entry outside a registration")
                continue
            why = (unregister is not None and unregister.broker_addr == addr) or \
                (scanned and live.last_update_timestamp + expired < after.now) or live.channel in closed
            if not why:
                return _wrong(after, f"{name} dropped {addr}'s live entry (registered {after.now - live.last_update_timestamp} "
                                     f"ms ago, its channel open) without an UNREGISTER_BROKER of it, an expiry or its "
                                     f"channel's close")
            gone_live.add(addr)
        if unregister is not None:
            bd = b.broker_addr_table.get(unregister.broker_name)
            want_addrs = {k: v for k, v in bd.broker_addrs.items() if k != unregister.broker_id} if bd else None
            bd1 = a.broker_addr_table.get(unregister.broker_name)
            got_addrs = dict(bd1.broker_addrs.items()) if bd1 is not None else None
            if bd is not None and got_addrs != (want_addrs or None):
                return _wrong(after, f"{name} unregistered {unregister.broker_name} id {unregister.broker_id}: "
                                     f"brokerAddrs {got_addrs}, want {want_addrs or None} (removal by id)")
        if any(addr not in b.broker_live_table for addr in a.broker_live_table):
            return _wrong(after, f"{name} gained a live entry outside a registration")
        gone_names = set()
        for bname, bd in b.broker_addr_table.items():
            bd1 = a.broker_addr_table.get(bname)
            left = bd1.broker_addrs if bd1 is not None else {}
            for bid, addr in bd.broker_addrs.items():
                if bid in left and left[bid] == addr:
                    continue
                by_id = unregister is not None and unregister.broker_name == bname and unregister.broker_id == bid
                if bid in left or not (by_id or addr in gone_live):
                    return _wrong(after, f"{name} dropped {bname} id {bid} ({addr}) without an UNREGISTER_BROKER of "
                                         f"that name and id or its live entry going")
            if bd1 is None:
                gone_names.add(bname)
            elif len(bd1.broker_addrs) > len(bd.broker_addrs) or bd1.cluster != bd.cluster:
                return _wrong(after, f"{name} changed {bname}'s broker data outside a registration")
            elif not bd1.broker_addrs:
                return _wrong(after, f"{name} kept {bname} with no address (its last address went, so does the name)")
        if any(bname not in b.broker_addr_table for bname in a.broker_addr_table):
            return _wrong(after, f"{name} gained broker data outside a registration")
        want = {}
        for topic, queues in b.topic_queue_table.items():
            kept = {bn: q for bn, q in queues.items() if bn not in gone_names}
            if kept:
                want[topic] = kept
        got = {t: dict(q.items()) for t, q in a.topic_queue_table.items()}
        if got != want:
            return _wrong(after, f"{name}'s queue data changed outside a registration beyond the broker names that "
                                 f"went ({sorted(gone_names)}): {sorted(t for t in set(got) | set(want) if got.get(t) != want.get(t))}")
        for cluster, names in b.cluster_addr_table.items():
            if a.cluster_addr_table.get(cluster, frozenset()) != names - gone_names:
                return _wrong(after, f"{name}'s cluster {cluster} lost a broker name that still has an address, or "
                                     f"kept one that went")
    if scanned:
        late = [addr for addr, live in a.broker_live_table.items() if live.last_update_timestamp + expired < after.now]
        if late:
            return _wrong(after, f"{name}'s scanNotActiveBroker ran at {after.now} and kept {late}, older than "
                                 f"{expired} ms")
    if is_tick and idle > 0:
        stale = [c for c, last in n1.channels.items() if last + idle <= after.now]
        if stale:
            return _wrong(after, f"a tick of {name} kept channel(s) idle for {idle} ms or more: {stale[:2]}")
    return True


# --- NS-14: the route answer is pickupTopicRouteData of the tables ---


def ns14(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    i, env = _delivered(before, event, ns.GetRouteInfo)
    if i < 0 or type(before.nodes[i]) is not ns.NameServer or not env.rpc:
        return True
    reply = _reply(after, env.rpc)
    if reply is None or env.msg.chan not in before.nodes[i].channels:
        return True
    rim = before.nodes[i].rim
    queues = rim.topic_queue_table.get(env.msg.topic)
    names = sorted(queues) if queues is not None else []
    datas = tuple(rim.broker_addr_table[n] for n in names if n in rim.broker_addr_table)
    name = after.cfg.ids[i]
    if not datas:
        if reply.code != rocketmq.ResponseCode.TOPIC_NOT_EXIST:
            return _wrong(after, f"{name} answered {env.msg.topic}'s route {reply.code} though it holds no "
                                 f"{'queue data' if queues is None else 'broker data of its brokers'} (TOPIC_NOT_EXIST)")
        return True
    route = reply.route
    if reply.code != rocketmq.ResponseCode.SUCCESS or route is None or \
            route.queue_datas != tuple(queues[n] for n in names) or route.broker_datas != datas:
        return _wrong(after, f"{name}'s route answer for {env.msg.topic} ({reply.code}) is not its tables: queue data of "
                             f"{names}, broker data of {[d.broker_name for d in datas]}")
    return True


# --- NS-15: the producer's queue choice ---


def _probe(queues: tuple, index: int) -> Any:
    """The queue at a send index: ThreadLocalIndex masks it (POSITIVE_MASK), TopicPublishInfo takes
    Math.abs(index) % size."""
    return queues[(index & POSITIVE_MASK) % len(queues)]


def _select(queues: tuple, index: int, last: str | None) -> tuple[Any, int]:
    """TopicPublishInfo#selectOneMessageQueue(lastBrokerName) from the send index `index`: (the queue
    taken, the index after). Without lastBrokerName one increment; with it, up to one increment per
    queue until a queue of another broker, else one more increment (selectOneMessageQueue())."""
    if last is None:
        return _probe(queues, index + 1), index + 1
    for _ in range(len(queues)):
        index += 1
        if _probe(queues, index).broker_name != last:
            return _probe(queues, index), index
    return _probe(queues, index + 1), index + 1


def _send_selections(obs: tuple, i: int) -> dict:
    """msg_id -> the QueueSelected of producer `i` in this step, in order (one send can choose several
    times in one step: an attempt that throws before any network call, as MQClientException for a
    broker without an address, is retried at once)."""
    sends: dict = {}
    for j, o in obs:
        if j == i and type(o) is pr.QueueSelected:
            sends.setdefault(o.msg_id, []).append(o)
    return sends


def _chose_right(after: core.World, name: str, p0: pr.Producer, p1: pr.Producer, sends: dict) -> bool:
    """Walk each send's choices of this step from the index its TopicPublishInfo held before it.

    Indexes are kept per TopicPublishInfo object (its `epoch`): a send keeps the object it started
    with, the table holds the same object until a route change replaces it, and the next send of
    the thread continues from the index the last one left there. An object first used in this step
    (a route fetched for this send) starts from the send's draw, as the model seeds ThreadLocalIndex
    (Java: Math.abs(random.nextInt()))."""
    index = {info.epoch: info.send_which_queue for info in p0.publish.values()}
    if p0.op is not None and p0.op.tpi is not None:
        index[p0.op.tpi.epoch] = p0.op.tpi.send_which_queue
    walked = set()
    for msg_id, selections in sends.items():
        op0 = p0.op if p0.op is not None and p0.op.msg_id == msg_id else None
        op1 = p1.op if p1.op is not None and p1.op.msg_id == msg_id else None
        tpi = op0.tpi if op0 is not None and op0.tpi is not None else op1.tpi if op1 is not None else None
        if tpi is None or not tpi.message_queue_list:
            continue  # begun (or given its route) and ended in this step: its TopicPublishInfo is in neither state
        queues, draw = tpi.message_queue_list, (op0 or op1).draw
        at = index.get(tpi.epoch)
        at = draw & 0xFF if at is None else at
        last = op0.mq.broker_name if op0 is not None and op0.mq is not None else None
        for o in selections:
            if o.last_broker != last:
                return _wrong(after, f"{name} chose a queue for {msg_id} (attempt {o.attempt}) with lastBrokerName "
                                     f"{o.last_broker}; its previous attempt went to {last}")
            mq, nxt = _select(queues, at, last)
            if (mq.broker_name, mq.queue_id) != (o.broker, o.queue_id):
                return _wrong(after, f"{name} chose {o.broker}/{o.queue_id} for {msg_id} (attempt {o.attempt}); "
                                     f"selectOneMessageQueue({last}) from index {at} over "
                                     f"{[q.broker_name for q in queues]} takes {mq.broker_name}/{mq.queue_id} "
                                     f"at index {nxt}")
            at, last = nxt, o.broker
        index[tpi.epoch] = at
        walked.add(tpi.epoch)
    held = list(p1.publish.items()) + ([("the send", p1.op.tpi)] if p1.op is not None and p1.op.tpi is not None else [])
    for where, info in held:
        if info.epoch in walked and info.send_which_queue != index[info.epoch]:
            return _wrong(after, f"{name}'s TopicPublishInfo ({where}) holds index {info.send_which_queue} after "
                                 f"this step's choices; they leave it at {index[info.epoch]}")
    return True


def ns15(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    for i in sorted({j for j, o in obs if type(o) is pr.QueueSelected}):
        p0, p1 = before.nodes[i], after.nodes[i]
        if type(p1) is not pr.Producer or p1.send_latency_fault_enable:
            continue
        if not _chose_right(after, after.cfg.ids[i], p0, p1, _send_selections(obs, i)):
            return False
    return True


# --- NS-16: the client's cached routes and broker addresses ---


def _route_answer(before: core.World, event: Any) -> tuple[int, Any]:
    """(client index, RouteResponse) when this step delivers a route answer to a live client."""
    if type(event) is not Deliver:
        return -1, None
    env = net_mod.find(before.net, event.env)
    if env is None or not env.reply or type(env.msg) is not ns.RouteResponse or not before.alive[env.dst]:
        return -1, None
    return env.dst, env.msg


def _cleaned(table: Any, routes: Any) -> dict:
    """cleanOfflineBroker: each broker name keeps the addresses some cached route names; names left
    with none go."""
    known = {addr for route in routes.values() for bd in route.broker_datas for addr in bd.broker_addrs.values()}
    out = {}
    for name, addrs in table.items():
        kept = {bid: a for bid, a in addrs.items() if a in known}
        if kept:
            out[name] = kept
    return out


def _plain(table: Any) -> dict:
    return {name: dict(addrs.items()) for name, addrs in table.items()}


def ns16(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    i, resp = _route_answer(before, event)
    stepped = i if i >= 0 else (event.node if type(event) is Tick and before.alive[event.node] else -1)
    if stepped < 0:
        return True
    c0, c1 = getattr(before.nodes[stepped], "client", None), getattr(after.nodes[stepped], "client", None)
    if type(c0) is not cr.ClientInstance or type(c1) is not cr.ClientInstance:
        return True
    name = after.cfg.ids[stepped]
    ok = resp is not None and resp.code == rocketmq.ResponseCode.SUCCESS and resp.route is not None
    refreshed = [o for j, o in obs if j == stepped and type(o) is cr.RouteRefreshed]
    for o in refreshed:
        if o.outcome in ("changed", "unchanged") and not ok:
            return _wrong(after, f"{name} took a route of {o.topic} ({o.outcome}) from an answer that was not SUCCESS")
        if ok and o.outcome in ("changed", "unchanged") and c1.topic_route_table.get(o.topic) != resp.route:
            return _wrong(after, f"{name}'s cached route of {o.topic} is not the route the SUCCESS answer brought")
        if ok and o.outcome == "unchanged" and c0.topic_route_table.get(o.topic) != resp.route:
            return _wrong(after, f"{name} found {o.topic}'s new route unchanged though it differs from the cached one "
                                 f"(topicRouteDataIsChange)")
    routes0, routes1 = c0.topic_route_table, c1.topic_route_table
    if routes0 is not routes1:
        changed = [t for t in set(routes0) | set(routes1) if routes0.get(t) != routes1.get(t)]
        if changed and (not ok or len(changed) != 1 or routes1.get(changed[0]) != resp.route or
                        not any(o.topic == changed[0] and o.outcome == "changed" for o in refreshed)):
            return _wrong(after, f"{name}'s cached route of {changed} changed without a SUCCESS answer bringing it")
    old, new = _plain(c0.broker_addr_table), _plain(c1.broker_addr_table)
    if type(event) is Tick:
        want = _cleaned(c0.broker_addr_table, routes1) if c0.next_clean_ms <= after.now else old
        if new != want:
            return _wrong(after, f"{name}'s broker address table is {new} after a tick; cleanOfflineBroker "
                                 f"{'leaves' if c0.next_clean_ms <= after.now else '(not due) leaves'} {want}")
        return True
    if any(o.outcome == "changed" for o in refreshed):
        want = dict(old)
        for bd in resp.route.broker_datas:
            want[bd.broker_name] = dict(bd.broker_addrs.items())
    else:
        want = old
    if new != want:
        return _wrong(after, f"{name}'s broker address table changed {old} -> {new} on a route answer; "
                             f"updateTopicRouteInfoFromNameServer leaves {want}")
    return True


PROPERTIES = [
    Property(id="NS-12", protocol="nameserver", kind="safety", holds_step=ns12, explain=_why,
             statement="RouteInfoManager#registerBroker: on an accepted channel, the name joins its cluster, the "
                       "address goes under its id (removed under any other id), its live entry is (now, the "
                       "request's DataVersion, channel, HA address), a master's topics update queue data exactly when "
                       "its DataVersion changed or it registers first, nothing else changes, and a slave's result "
                       "names a live master; on an unknown channel nothing changes."),
    Property(id="NS-13", protocol="nameserver", kind="safety", holds_step=ns13, explain=_why,
             statement="unregisterBroker / scanNotActiveBroker / onChannelDestroy: outside registration a live entry "
                       "goes only by an UNREGISTER_BROKER of its address, an expiry (brokerChannelExpiredTime, 120 s) "
                       "at a scan, or its own channel's close; an address leaves brokerAddrTable only by an "
                       "UNREGISTER_BROKER of its name and id or with its live entry; queue data goes only with the "
                       "name's last address; a due scan leaves no expired entry and a tick no channel idle for "
                       "serverChannelMaxIdleTimeSeconds (120 s)."),
    Property(id="NS-14", protocol="nameserver", kind="safety", holds_step=ns14, explain=_why,
             statement="DefaultRequestProcessor#getRouteInfoByTopic / pickupTopicRouteData: TOPIC_NOT_EXIST when "
                       "the topic has no queue data or none of its brokers has broker data, else SUCCESS with the "
                       "topic's queue data and the broker data of those names, as the tables hold them."),
    Property(id="NS-15", protocol="nameserver", kind="safety", holds_step=ns15, explain=_why,
             statement="TopicPublishInfo#selectOneMessageQueue(lastBrokerName) (sendLatencyFaultEnable off), as "
                       "sendDefaultImpl calls it: lastBrokerName is the previous attempt's broker (none for the "
                       "first); the queue at the send index after its last increment; one increment for a first "
                       "attempt; a retry increments until another broker's queue, or once more after a whole round "
                       "of lastBrokerName's; each choice continues from the index the one before left, and the send "
                       "and the table keep the index the last choice left."),
    Property(id="NS-16", protocol="nameserver", kind="safety", holds_step=ns16, explain=_why,
             statement="MQClientInstance#updateTopicRouteInfoFromNameServer / #cleanOfflineBroker: a client's cached "
                       "route changes only to the very route a SUCCESS answer brings, with its brokers' addresses "
                       "taken; TOPIC_NOT_EXIST or a failed fetch keeps both; otherwise the address table changes only "
                       "by cleanOfflineBroker at its period, keeping exactly the addresses a cached route names."),
]
