"""A client's routes (MQClientInstance, 4.9.4): route polling, the broker address table,
and the route -> publish / subscribe conversions. Reusable by any client node.

Theory of operation
-------------------
Models `MQClientInstance#updateTopicRouteInfoFromNameServer` (the scheduled run every
`pollNameServerInterval` = 30 s from 10 ms after start, and the single-topic call a
producer makes when it has no route), `topicRouteDataIsChange`, `cleanOfflineBroker`
(every `heartbeatBrokerInterval` = 30 s from 1 s), `findBrokerAddressInPublish`, and
the static `topicRouteData2TopicPublishInfo` / `topicRouteData2TopicSubscribeInfo`.

A fetch is one `invokeSync(null, GET_ROUTEINFO_BY_TOPIC, mqClientApiTimeout)` to the
chosen NameServer (reference_impl.nameserver.remoting). Its outcome:
- a route: if it differs from the cached one (or the caller's info needs it), the broker
  address table gets every broker's addresses, the caller rebuilds its publish or
  subscribe info, and the route is cached;
- TOPIC_NOT_EXIST: an MQClientException, caught and logged: **the old route is kept**;
- a RemotingException (timeout, connect, reset): thrown as IllegalStateException; the
  scheduled run stops for the remaining topics, a producer's send fails.

Not modelled: the `lockNamesrv` lock that serializes the timer's and the send thread's
NameServer calls (their calls may overlap here), client heartbeats to brokers, and
fetching the NameServer address list (it is configured).
"""

from __future__ import annotations

from typing import ClassVar

from reference_impl import rocketmq
from reference_impl.core.inputs import check_fields, positive
from reference_impl.core.state import EMPTY, FrozenMap, record
from reference_impl.nameserver import namesrv as ns
from reference_impl.nameserver import remoting as rm
from reference_impl.nameserver import route_info as ri


@record
class ClientConfig:
    """ClientConfig defaults (4.9.4) and MQClientInstance#startScheduledTask's delays."""

    poll_name_server_interval: int = 30000
    poll_initial_delay_ms: int = 10
    heartbeat_broker_interval: int = 30000
    heartbeat_initial_delay_ms: int = 1000
    mq_client_api_timeout: int = 3000
    netty: rm.NettyClientConfig = rm.NettyClientConfig()

    LIMITS: ClassVar[dict] = positive("poll_name_server_interval", "heartbeat_broker_interval", "mq_client_api_timeout")

    def __attrs_post_init__(self) -> None:
        check_fields(self)


@record
class MessageQueue:
    """org.apache.rocketmq.common.message.MessageQueue"""

    topic: str
    broker_name: str
    queue_id: int

    def __str__(self) -> str:
        return f"{self.broker_name}:{self.queue_id}"


@record
class TopicPublishInfo:
    """TopicPublishInfo. `epoch` tells TopicPublishInfo objects apart: a send keeps using the
    object it started with even after a route change replaces it in the table."""

    message_queue_list: tuple = ()
    send_which_queue: int | None = None  # the send thread's ThreadLocalIndex; None until first drawn
    have_topic_router_info: bool = False
    topic_route_data: ri.TopicRouteData | None = None
    epoch: int = 0

    def ok(self) -> bool:
        """TopicPublishInfo#ok"""
        return bool(self.message_queue_list)


@record
class RouteRefreshed:
    """Observation: a route fetch finished. `outcome`: changed, unchanged, TOPIC_NOT_EXIST, or an exception."""

    topic: str
    namesrv: str
    outcome: str


@record
class ClientInstance:
    client_id: str
    remoting: rm.RemotingClient
    topic_route_table: FrozenMap = EMPTY  # topic -> TopicRouteData
    broker_addr_table: FrozenMap = EMPTY  # brokerName -> (brokerId -> address)
    next_poll_ms: int = 0
    next_clean_ms: int = 0
    poll_topics: tuple = ()  # topics the running scheduled update still has to fetch
    polling: bool = False  # a scheduled update's fetch is in flight


def boot(cc: ClientConfig, client_id: str, namesrvs: tuple, now: int, inc: int = 0) -> ClientInstance:
    """MQClientInstance#start: the scheduled tasks begin."""
    return ClientInstance(client_id=client_id, remoting=rm.init_client(client_id, inc, namesrvs),
                          next_poll_ms=now + cc.poll_initial_delay_ms,
                          next_clean_ms=now + cc.heartbeat_initial_delay_ms)


def restart(cc: ClientConfig, ci: ClientInstance, now: int) -> ClientInstance:
    return boot(cc, ci.client_id, ci.remoting.namesrv_addr_list, now, inc=ci.remoting.inc + 1)


def wake_at(ci: ClientInstance) -> int:
    return min(ci.next_poll_ms, ci.next_clean_ms)


# --- conversions (static in MQClientInstance) ---


def topic_route_data_to_publish_info(topic: str, route: ri.TopicRouteData, epoch: int = 0) -> TopicPublishInfo:
    """MQClientInstance#topicRouteData2TopicPublishInfo (no order topic conf): for each
    writable QueueData, sorted by broker name, whose broker has a master, writeQueueNums queues."""
    queues = []
    by_name = {bd.broker_name: bd for bd in route.broker_datas}
    for qd in sorted(route.queue_datas, key=lambda q: q.broker_name):
        if not ri.PermName.is_writeable(qd.perm):
            continue
        bd = by_name.get(qd.broker_name)
        if bd is None or rocketmq.MASTER_ID not in bd.broker_addrs:
            continue
        queues.extend(MessageQueue(topic=topic, broker_name=qd.broker_name, queue_id=i)
                      for i in range(qd.write_queue_nums))
    return TopicPublishInfo(message_queue_list=tuple(queues), topic_route_data=route, epoch=epoch)


def topic_route_data_to_subscribe_info(topic: str, route: ri.TopicRouteData) -> frozenset:
    """MQClientInstance#topicRouteData2TopicSubscribeInfo: readable QueueData, readQueueNums each."""
    return frozenset(MessageQueue(topic=topic, broker_name=qd.broker_name, queue_id=i)
                     for qd in route.queue_datas if ri.PermName.is_readable(qd.perm)
                     for i in range(qd.read_queue_nums))


def topic_route_data_is_change(old: ri.TopicRouteData | None, new: ri.TopicRouteData | None) -> bool:
    """MQClientInstance#topicRouteDataIsChange: sorted deep equality (routes are kept sorted here)."""
    return old is None or new is None or old != new


def find_broker_address_in_publish(ci: ClientInstance, broker_name: str) -> str | None:
    """MQClientInstance#findBrokerAddressInPublish: the master's address, if known."""
    addrs = ci.broker_addr_table.get(broker_name)
    return addrs.get(rocketmq.MASTER_ID) if addrs else None


# --- fetching routes ---


def update_topic_route(cc: ClientConfig, ci: ClientInstance, topic: str, purpose: tuple, now: int,
                       draw: int | None = None) -> tuple[ClientInstance, tuple]:
    """MQClientInstance#updateTopicRouteInfoFromNameServer(topic, ...): send the fetch.
    `purpose` comes back in the `rm.Done` the caller then hands to `route_done`."""
    req = ns.GetRouteInfo(chan=None, topic=topic)
    rc, outs = rm.invoke_sync(cc.netty, ci.remoting, None, req, cc.mq_client_api_timeout, purpose, now, draw)
    return ci.evolve(remoting=rc), outs


def route_done(ci: ClientInstance, topic: str, done: rm.Done, need_update: bool
               ) -> tuple[ClientInstance, RouteRefreshed, ri.TopicRouteData | None]:
    """The rest of updateTopicRouteInfoFromNameServer once the fetch finished. Returns the
    route when the caller must rebuild its publish/subscribe info (`changed`), else None."""
    if done.error is not None:
        return ci, RouteRefreshed(topic=topic, namesrv=done.target, outcome=done.error), None
    resp = done.response
    if not isinstance(resp, ns.RouteResponse) or resp.code != rocketmq.ResponseCode.SUCCESS:
        # getTopicRouteInfoFromNameServer throws MQClientException: caught, the old route stays.
        code = "TOPIC_NOT_EXIST" if getattr(resp, "code", None) == rocketmq.ResponseCode.TOPIC_NOT_EXIST else "error"
        return ci, RouteRefreshed(topic=topic, namesrv=done.target, outcome=code), None
    route = resp.route
    changed = topic_route_data_is_change(ci.topic_route_table.get(topic), route) or need_update
    if not changed:
        return ci, RouteRefreshed(topic=topic, namesrv=done.target, outcome="unchanged"), None
    table = dict(ci.broker_addr_table.items())
    for bd in route.broker_datas:
        table[bd.broker_name] = bd.broker_addrs
    ci = ci.evolve(broker_addr_table=FrozenMap(table), topic_route_table=ci.topic_route_table.set(topic, route))
    return ci, RouteRefreshed(topic=topic, namesrv=done.target, outcome="changed"), route


def is_remoting_error(done: rm.Done) -> bool:
    """A RemotingException: updateTopicRouteInfoFromNameServer rethrows it (IllegalStateException)."""
    return done.error is not None


# --- the scheduled tasks ---


# MQClientInstance#updateTopicRouteInfoFromNameServer() collects the topics into a `new HashSet<String>()`
TOPIC_SET_CAPACITY = 16


def start_poll(cc: ClientConfig, ci: ClientInstance, topics: tuple, now: int, draw: int | None
               ) -> tuple[ClientInstance, tuple]:
    """The scheduled updateTopicRouteInfoFromNameServer(): fetch each topic in turn, in the order
    Java's HashSet of them iterates (`topics` in the order the client's tables gained them). The
    order shows when a fetch fails: the run stops there. A producer's HashSet holds TopicTest
    (bucket 9) before TBW102 (bucket 11); the model went in name order until the harness of
    property_tests/impl_logs/rocketmq-4.9.4/nameserver/ polled a real HashSet
    (`producer_namesrv_machine_restart`)."""
    ci = ci.evolve(next_poll_ms=ci.next_poll_ms + cc.poll_name_server_interval)
    if ci.polling:
        return ci, ()  # the previous run is still going (a fixed-rate task never overlaps itself)
    ordered = tuple(ri.java_hash_map_order(list(topics), TOPIC_SET_CAPACITY))
    return next_poll_topic(cc, ci.evolve(poll_topics=ordered), now, draw)


def next_poll_topic(cc: ClientConfig, ci: ClientInstance, now: int, draw: int | None = None
                    ) -> tuple[ClientInstance, tuple]:
    if not ci.poll_topics:
        return ci.evolve(polling=False), ()
    topic, rest = ci.poll_topics[0], ci.poll_topics[1:]
    ci = ci.evolve(poll_topics=rest, polling=True)
    return update_topic_route(cc, ci, topic, ("poll", topic), now, draw)


def poll_done(cc: ClientConfig, ci: ClientInstance, done: rm.Done, now: int) -> tuple[ClientInstance, tuple]:
    """After one topic of the scheduled run: an exception ends the run, else the next topic."""
    if is_remoting_error(done):
        return ci.evolve(poll_topics=(), polling=False), ()
    return next_poll_topic(cc, ci, now)


def clean_offline_broker(cc: ClientConfig, ci: ClientInstance) -> ClientInstance:
    """MQClientInstance#cleanOfflineBroker: drop addresses no cached route mentions (and
    broker names left with none). Runs with the heartbeat task."""
    ci = ci.evolve(next_clean_ms=ci.next_clean_ms + cc.heartbeat_broker_interval)
    known = {addr for route in ci.topic_route_table.values() for bd in route.broker_datas
             for addr in bd.broker_addrs.values()}
    table = {}
    for name, addrs in ci.broker_addr_table.items():
        kept = {bid: a for bid, a in addrs.items() if a in known}
        if kept:
            table[name] = addrs if len(kept) == len(addrs) else FrozenMap(kept)
    if len(table) == len(ci.broker_addr_table) and all(table[k] is v for k, v in ci.broker_addr_table.items()):
        return ci
    return ci.evolve(broker_addr_table=FrozenMap(table))


def on_fin(ci: ClientInstance, peer: str, chan: rm.ChannelId) -> ClientInstance:
    return ci.evolve(remoting=rm.on_fin(ci.remoting, peer, chan))
