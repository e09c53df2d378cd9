"""A consumer as the NameServer protocol sees it: it polls its subscriptions' routes.

Models the route side of a push consumer's `MQClientInstance`: the scheduled route
update for each subscribed topic, and `DefaultMQPushConsumerImpl#updateTopicSubscribeInfo`
with `topicRouteData2TopicSubscribeInfo` (readable queues of every broker name, master or
not, so reading goes on from a slave while the master is gone). Pulling, rebalancing
and offsets are the `offsets` protocol's business; retry topics are not polled.
"""

from __future__ import annotations

from typing import Any

from reference_impl.core.state import EMPTY, FrozenMap, record
from reference_impl.nameserver import client_routes as cr
from reference_impl.nameserver import remoting as rm


@record
class Consumer:
    self_id: str
    client: cr.ClientInstance
    topics: tuple = ()  # subscriptions
    subscribe: FrozenMap = EMPTY  # topicSubscribeInfoTable: topic -> frozenset of MessageQueue
    fins: tuple | None = None  # after a process crash: (peer, Fin) the OS still has to send
    machine_down: bool = False


def boot(cc: cr.ClientConfig, self_id: str, namesrvs: tuple, topics: tuple, now: int, inc: int = 0) -> Consumer:
    return Consumer(self_id=self_id, client=cr.boot(cc, self_id, namesrvs, now, inc), topics=topics)


def crash(n: Consumer, kind: str) -> Consumer:
    fins = rm.fins_on_crash(n.client.remoting) if kind == "process" else None
    return n.evolve(fins=fins, machine_down=kind != "process")


def restart(cc: cr.ClientConfig, n: Consumer, now: int) -> Consumer:
    return boot(cc, n.self_id, n.client.remoting.namesrv_addr_list, n.topics, now,
                n.client.remoting.inc + 1).evolve(fins=n.fins)


def wake_at(cc: cr.ClientConfig, n: Consumer) -> int:
    return cr.wake_at(n.client)


def on_tick(cc: cr.ClientConfig, n: Consumer, now: int, draw: int) -> tuple[Consumer, tuple]:
    ci = n.client
    outs: tuple = ()
    if now >= ci.next_clean_ms:
        ci = cr.clean_offline_broker(cc, ci)
    if now >= ci.next_poll_ms:
        ci, outs = cr.start_poll(cc, ci, n.topics, now, draw)
    return _dispatch(cc, n.evolve(client=ci), outs, now)


def on_response(cc: cr.ClientConfig, n: Consumer, ctx: Any, peer: str, resp: Any, now: int
                ) -> tuple[Consumer, tuple]:
    rc, outs = rm.on_invoke_response(cc.netty, n.client.remoting, ctx, resp, now)
    return _dispatch(cc, n.evolve(client=n.client.evolve(remoting=rc)), outs, now)


def _dispatch(cc: cr.ClientConfig, n: Consumer, outs: tuple, now: int) -> tuple[Consumer, tuple]:
    rest: tuple = ()
    for o in outs:
        if not isinstance(o, rm.Done):
            rest += (o,)
            continue
        topic = o.purpose[-1]
        # DefaultMQPushConsumerImpl#isSubscribeTopicNeedUpdate: subscribed but no subscribe info yet.
        ci, seen, route = cr.route_done(n.client, topic, o, topic in n.topics and topic not in n.subscribe)
        if route is not None:
            n = n.evolve(subscribe=n.subscribe.set(topic, cr.topic_route_data_to_subscribe_info(topic, route)))
        ci, more = cr.poll_done(cc, ci, o, now)
        n, more = _dispatch(cc, n.evolve(client=ci), more, now)
        rest += (seen,) + more
    return n, rest


def on_message(cc: cr.ClientConfig, n: Consumer, msg: Any, peer: str, now: int) -> tuple[Consumer, tuple]:
    if isinstance(msg, rm.Fin):
        return n.evolve(client=cr.on_fin(n.client, peer, msg.chan)), ()
    return n, ()
