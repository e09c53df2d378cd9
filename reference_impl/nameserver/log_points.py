"""The NameServer protocol's implementation log points: what RocketMQ 4.9.4's NameServers,
brokers and clients, instrumented at their natural log points, write when the reference takes a
step (docs/conformance.md, "The NameServer's log points").

A NameServer writes its request handlers (`RouteInfoManager#registerBroker`, `#unregisterBroker`,
`#pickupTopicRouteData`: the request and the answer), every run of its scan
(`RouteInfoManager#scanNotActiveBroker`, with the brokers it removed) and every channel close or
idle event that removed a live broker (`RouteInfoManager#onChannelDestroy`). A broker writes each
REGISTER_BROKER and UNREGISTER_BROKER it sends and the answers (`BrokerOuterAPI#registerBroker`,
`#unregisterBroker`), the end of each registration round (`BrokerOuterAPI#registerBrokerAll`: how
many NameServers answered, and the master address of the first answer) and the send requests it
handles. A client writes its route requests and answers
(`MQClientAPIImpl#getTopicRouteInfoFromNameServer`), what each route update did
(`MQClientInstance#updateTopicRouteInfoFromNameServer`), and a producer its queue choices
(`MQFaultStrategy#selectOneMessageQueue`), its failed attempts (`MQFaultStrategy#updateFaultItem`
with isolation), its SEND_MESSAGE requests and answers (`MQClientAPIImpl#sendMessage`) and what
each send returned or threw (`DefaultMQProducer#send`).

The TCP side of Netty remoting (connects, FIN, RST, idle closes) writes no line: the reference's
`Connect`, `Connected`, `Fin` and `Reset` segments are hidden events the search infers. A request
that reaches a process on a channel it does not know is answered with a RST before any handler
runs: no handler line (`handle_at`). A failed RPC completes with an exception, which the caller's
own lines show (`failed_reply` is None).

Faults besides crash, restart, partition and heal are operator actions the log states as facts:
`create_topic` (a master's `updateTopic`, node: the master) and `delete_topic` (`mqadmin
deleteTopic`, no node).

The random draws of a client (its first NameServer, the send thread's `ThreadLocalIndex` start,
whether a send that timed out at its whole budget reads 3000 or 3001 ms) are no `Random#nextInt`
the client logs: the search infers them from the lines they decide.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from reference_impl import core
from reference_impl.core.state import FrozenMap, thaw
from reference_impl.nameserver import admin
from reference_impl.nameserver import broker as nb
from reference_impl.nameserver import client_routes as cr
from reference_impl.nameserver import consumer as co
from reference_impl.nameserver import namesrv as ns
from reference_impl.nameserver import producer as pr
from reference_impl.nameserver import queue_selection as qs
from reference_impl.nameserver import route_info as ri
from reference_impl.nameserver import world as ns_world



@attrs.frozen
class LogPoint:
    """One log point: where Java writes it, on which thread, and its fields."""

    at: str
    thread: str  # "maintainer" (a node's scheduled task), "handler", "client" (a client's own threads), "any"
    fields: str
    when: str


NEXT_INT = "java.util.Random#nextInt"  # never logged here (logs_draws is False for every node)
SNAPSHOT = "snapshot"

POINTS = {p.at: p for p in (
    LogPoint("NettyRemotingClient#createChannel", "client", "peer (the server), request (Connect)",
             "a client (a broker, a producer, a consumer) begins to connect to a NameServer"),
    LogPoint("NettyConnectManageHandler#channelActive", "handler", "peer (the client)",
             "a NameServer accepted a connection"),
    LogPoint("NettyConnectManageHandler#channelInactive", "handler", "peer (the client)",
             "a NameServer's channel closed: the client's FIN, the idle handler, the scan's close"),
    LogPoint("RouteInfoManager#registerBroker", "handler", "peer (the broker), request (RegisterBroker), response",
             "DefaultRequestProcessor handled REGISTER_BROKER (a one-way registration: no response)"),
    LogPoint("RouteInfoManager#unregisterBroker", "handler", "peer, request (UnregisterBroker), response",
             "DefaultRequestProcessor handled UNREGISTER_BROKER"),
    LogPoint("RouteInfoManager#pickupTopicRouteData", "handler", "peer, request (GetRouteInfo), response",
             "DefaultRequestProcessor handled GET_ROUTEINFO_BY_TOPIC"),
    LogPoint("RouteInfoManager#scanNotActiveBroker", "maintainer", "removed (broker addresses)",
             "every run of the NameServer's scheduled scan"),
    LogPoint("RouteInfoManager#onChannelDestroy", "any", "broker_addr, reason (close, idle)",
             "a channel's close or idle event removed a live broker"),
    LogPoint("BrokerOuterAPI#registerBroker", "maintainer", "peer (the NameServer), request; completion: response",
             "a REGISTER_BROKER written to a NameServer, and its answer"),
    LogPoint("BrokerOuterAPI#unregisterBroker", "maintainer", "peer, request; completion: response",
             "an UNREGISTER_BROKER written to a NameServer, and its answer"),
    LogPoint("BrokerOuterAPI#registerBrokerAll", "maintainer", "results, master_addr",
             "registerBrokerAll returned (every NameServer answered, or the round's timeout)"),
    LogPoint("SendMessageProcessor#sendMessage", "handler", "peer (the producer), request (SendMessage), response",
             "a broker answered a SEND_MESSAGE"),
    LogPoint("MQClientAPIImpl#getTopicRouteInfoFromNameServer", "client", "peer, request; completion: response",
             "a GET_ROUTEINFO_BY_TOPIC written to a NameServer, and its answer"),
    LogPoint("MQClientInstance#updateTopicRouteInfoFromNameServer", "client", "topic, outcome",
             "a route update finished: changed, unchanged, TOPIC_NOT_EXIST, or the remoting exception"),
    LogPoint("MQFaultStrategy#selectOneMessageQueue", "client", "msg_id, attempt, last_broker, broker, queue_id",
             "a producer chose the queue of an attempt"),
    LogPoint("MQFaultStrategy#updateFaultItem", "client", "msg_id, attempt, broker, isolation (true)",
             "an attempt failed"),
    LogPoint("MQClientAPIImpl#sendMessage", "client", "peer (the broker), request; completion: response",
             "a SEND_MESSAGE written to a broker, and its answer"),
    LogPoint("DefaultMQProducer#send", "client", "msg_id, status (SendStatus) or exception (its class)",
             "a synchronous send returned or threw"),
    LogPoint("AdminBrokerProcessor#deleteTopic", "handler", "topic, code (0 deleted, 1 SYSTEM_ERROR from a slave)",
             "a broker answered mqadmin deleteTopic's DELETE_TOPIC_IN_BROKER"),
    LogPoint("RouteInfoManager#deleteTopic", "handler", "topic, cluster_name",
             "a NameServer handled mqadmin deleteTopic's DELETE_TOPIC_IN_NAMESRV"),
)}

SEND_AT = {"Connect": "NettyRemotingClient#createChannel", "RegisterBroker": "BrokerOuterAPI#registerBroker", "UnregisterBroker": "BrokerOuterAPI#unregisterBroker",
           "GetRouteInfo": "MQClientAPIImpl#getTopicRouteInfoFromNameServer",
           "SendMessage": "MQClientAPIImpl#sendMessage"}
HANDLE_AT = {"RegisterBroker": "RouteInfoManager#registerBroker",
             "UnregisterBroker": "RouteInfoManager#unregisterBroker",
             "GetRouteInfo": "RouteInfoManager#pickupTopicRouteData",
             "SendMessage": "SendMessageProcessor#sendMessage"}
# A completion is keyed by the reply's class; UNREGISTER_BROKER's answer is the plain `Response`.
COMPLETE_AT = {"RegisterBrokerResponse": "BrokerOuterAPI#registerBroker",
               "Response": "BrokerOuterAPI#unregisterBroker",
               "RouteResponse": "MQClientAPIImpl#getTopicRouteInfoFromNameServer",
               "SendResponse": "MQClientAPIImpl#sendMessage"}
# the channel a request came on is the reference's own (an implementation's transport has its own)
INTERNAL_FIELDS = {"Connect": ("chan",), "RegisterBroker": ("chan",), "UnregisterBroker": ("chan",), "GetRouteInfo": ("chan",)}
# operator actions a log states as facts: the node they act on, or the world
FACTS = {"create_topic": "node", "delete_topic": "world"}
# the facts whose step writes lines: the registration an updateTopic sends, the requests of mqadmin deleteTopic
FACTS_WRITE = ("create_topic", "delete_topic")
DELETE_IN_BROKER_AT = "AdminBrokerProcessor#deleteTopic"
DELETE_IN_NAMESRV_AT = "RouteInfoManager#deleteTopic"
SYSTEM_ERROR = 1  # ResponseCode.SYSTEM_ERROR: AdminBrokerProcessor#validateSlave refuses a slave's topic change
DESTROY_REASONS = {"channel_closed": "close", "channel_idle": "idle"}


def failed_reply(ctx: Any) -> None:
    """A failed invokeSync throws (RemotingTimeoutException, RemotingConnectException,
    RemotingSendRequestException); it completes with no response. What the caller did about it is
    in its own lines (a route update's outcome, a failed attempt)."""
    return None


def handle_at(w: core.World, env: Any) -> str | None:
    """The handler line a request delivered in `w` writes: none when the NameServer does not know
    the channel it came on (the OS answers with a RST; no processor runs)."""
    at = HANDLE_AT.get(type(env.msg).__name__)
    if at is None:
        return None
    n = w.nodes[env.dst]
    chan = getattr(env.msg, "chan", None)
    if type(n) is ns.NameServer and chan not in n.channels:
        return None
    if type(n) is nb.Broker and (n.stopping is not None or n.exited):
        return None  # the remoting server is shut down: the connection is reset
    return at


def _exception(error: str) -> str:
    """The Java class of an exception the model names `Class:detail`."""
    return error.split(":", 1)[0]


def node_lines(c: Any, on_tick: bool, before: Any, after: Any, obs: list, draw: int) -> list[tuple[str, dict]]:
    """The lines one node writes for one reference step, besides the network's."""
    out: list[tuple[str, dict]] = []
    if type(after) is ns.NameServer:
        if type(before) is ns.NameServer and before.channels is not after.channels:
            out += [("NettyConnectManageHandler#channelInactive", {"peer": chan.client})
                    for chan in before.channels if chan not in after.channels]
            out += [("NettyConnectManageHandler#channelActive", {"peer": chan.client})
                    for chan in after.channels if chan not in before.channels]
        if on_tick and type(before) is ns.NameServer and after.next_scan_ms != before.next_scan_ms:
            expired = tuple(sorted(o.broker_addr for o in obs if type(o) is ns.BrokerRemoved and o.reason == "expired"))
            out.append(("RouteInfoManager#scanNotActiveBroker", {"removed": expired}))
        for o in obs:
            if type(o) is ns.BrokerRemoved and o.reason in DESTROY_REASONS:
                out.append(("RouteInfoManager#onChannelDestroy",
                            {"broker_addr": o.broker_addr, "reason": DESTROY_REASONS[o.reason]}))
        return out
    for o in obs:
        t = type(o)
        if t is nb.RegisterRoundDone:
            fields: dict = {"results": len(o.ok)}
            if o.ok:
                fields["master_addr"] = o.master_addr
            out.append(("BrokerOuterAPI#registerBrokerAll", fields))
        elif t is cr.RouteRefreshed:
            outcome = o.outcome if o.outcome in ("changed", "unchanged", "TOPIC_NOT_EXIST") else _exception(o.outcome)
            out.append(("MQClientInstance#updateTopicRouteInfoFromNameServer", {"topic": o.topic, "outcome": outcome}))
        elif t is pr.QueueSelected:
            out.append(("MQFaultStrategy#selectOneMessageQueue",
                        {"msg_id": o.msg_id, "attempt": o.attempt, "last_broker": o.last_broker, "broker": o.broker,
                         "queue_id": o.queue_id}))
        elif t is pr.AttemptFailed:
            out.append(("MQFaultStrategy#updateFaultItem",
                        {"msg_id": o.msg_id, "attempt": o.attempt, "broker": o.broker, "isolation": True}))
        elif t is pr.SendDone:
            if o.status in pr.SEND_OK_CODES.values():
                out.append(("DefaultMQProducer#send", {"msg_id": o.msg_id, "status": o.status}))
            else:
                out.append(("DefaultMQProducer#send", {"msg_id": o.msg_id, "exception": _exception(o.status)}))
    return out


def snapshot(c: Any, n: Any, alive: bool) -> dict | None:
    """A node's state as its process reads it: a NameServer's tables, a broker's role and master
    address, a producer's queue lists, a consumer's subscribe info (ns_world.observe, without
    the times and counters an implementation's clock or workload makes its own)."""
    shown = ns_world.observe(c, n, alive)
    t = type(n)
    if t is ns.NameServer:
        return {k: shown[k] for k in ("live_brokers", "broker_addrs", "topic_queues")}
    if t is nb.Broker:
        return {k: shown[k] for k in ("role", "broker_id", "master_addr")}
    if t is pr.Producer:
        return {"publish_queues": shown["publish_queues"]}
    if t is co.Consumer:
        return {"subscribe": shown["subscribe"]}
    return None


def logs_draws(n: Any) -> bool:
    """No node logs a draw: the search infers a client's from the lines they decide."""
    return False


# --- the draws a tick may take (histories/tolerant: one draw per class the model tells apart) ---


def draw_classes(w: core.World, i: int, times: tuple[int, int], upcoming: Any) -> tuple[int, ...]:
    """The draws worth trying for node i's tick, which fires within `times` (earliest, latest):
    one per way the tick can use its draw that the log ahead (`upcoming`: lines with `node`,
    `at`, `fields`, from the line being explained on) does not already decide.

    A draw decides which NameServer a client asks first (`namesrvIndex`, while not yet chosen:
    the client's next `createChannel` to a NameServer shows it), and for a send that starts in
    the tick, where the send thread's `ThreadLocalIndex` starts in a queue list that has none yet
    (the send's first `selectOneMessageQueue` shows it when the list is known now), where
    `whichItemWorst` starts (modulo the halves of the fault table it can meet), and whether a send
    that times out at its whole budget reads 3000 or 3001 ms (producer.timed_out; only a send
    with a failed attempt can tell). Anything else about a draw the model never reads."""
    n = w.nodes[i]
    t = type(n)
    if t is not pr.Producer and t is not co.Consumer:
        return (0,)
    c = w.cfg.proto
    mine = [ln for ln in upcoming if ln.node == i]
    rc = n.client.remoting
    ns_classes: tuple = (None,)
    if rc.namesrv_index is None and len(rc.namesrv_addr_list) > 1:
        first = next((ln.fields.get("peer") for ln in mine if ln.at == "NettyRemotingClient#createChannel"
                      and ln.fields.get("peer") in rc.namesrv_addr_list), None)
        ns_classes = (rc.namesrv_addr_list.index(first),) if first is not None else tuple(
            range(len(rc.namesrv_addr_list)))
    queue_mod, worst_mod, lags = 1, 1, (None,)
    if t is pr.Producer and n.op is None and 0 <= n.next_send_ms <= times[1]:
        groups = max(1, sum(1 for x in w.cfg.ids if x.startswith("b") and x.endswith("-m")))
        msg_id = f"{n.self_id}-{n.sent + 1}"
        ahead = _until_done(mine, msg_id)
        failed = any(ln.at == "MQFaultStrategy#updateFaultItem" and ln.fields.get("msg_id", msg_id) == msg_id
                     for ln in mine)
        lags = (0, 1) if ahead is None or failed else (None,)
        info = n.publish.get(c.producer.topic)
        if info is None or not info.ok():  # the route comes first: any list its masters can give
            per = max((tc.write_queue_nums for tc in c.topics if tc.topic_name == c.producer.topic), default=1)
            queue_mod = math.lcm(*(k * per for k in range(1, groups + 1)))
        elif info.send_which_queue is None:
            queue_mod = len(info.message_queue_list)
        if n.send_latency_fault_enable and n.lft.which_item_worst is None:
            worst_mod = math.lcm(*range(1, max(2, groups) // 2 + 1))
        draws = [d for d in _draws(len(rc.namesrv_addr_list), ns_classes, queue_mod, worst_mod, lags)]
        if queue_mod > 1 and ahead is not None:
            k = next((k for k, ln in enumerate(ahead) if ln.at == "MQFaultStrategy#selectOneMessageQueue"), None)
            if k is not None:
                if info is None or not info.ok():  # the list the route this send fetches gives
                    info = _fetched(c, ahead)
                if info is not None and info.ok():
                    when = times if ahead[k].t is None else (*times, ahead[k].t)
                    draws = [d for d in draws if _selects(c, n, info, d, when, ahead[k].fields)] or draws
        return tuple(draws)
    return _draws(len(rc.namesrv_addr_list), ns_classes, 1, 1, (None,))


def _until_done(lines: list, msg_id: str) -> list | None:
    """The node's lines up to the end of send `msg_id` (its DefaultMQProducer#send line); None if
    the send does not end within them."""
    for k, ln in enumerate(lines):
        if ln.at == "DefaultMQProducer#send" and ln.fields.get("msg_id") == msg_id:
            return lines[:k + 1]
    return None


def _fetched(c: Any, lines: list) -> Any:
    """The publish info the first route answer among a client's `lines` gives (None: none); a
    step's lines may come in any order, so the answer may follow the choice it made possible."""
    resp = next((ln.fields.get("response") for ln in lines
                 if ln.at == "MQClientAPIImpl#getTopicRouteInfoFromNameServer" and "response" in ln.fields), None)
    route = resp.get("route") if isinstance(resp, dict) else None
    if not isinstance(route, dict):
        return None
    try:
        queues = tuple(ri.QueueData(broker_name=q["broker_name"], read_queue_nums=q["read_queue_nums"],
                                    write_queue_nums=q["write_queue_nums"], perm=q["perm"])
                       for q in route["queue_datas"])
        brokers = tuple(ri.BrokerData(cluster=b.get("cluster", ""), broker_name=b["broker_name"],
                                      broker_addrs=FrozenMap((int(k), a) for k, a in b["broker_addrs"]))
                        for b in route["broker_datas"])
    except (KeyError, TypeError, ValueError):
        return None
    topic = c.producer.topic
    return cr.topic_route_data_to_publish_info(topic, ri.TopicRouteData(queue_datas=queues, broker_datas=brokers))


def _selects(c: Any, n: Any, info: Any, d: int, times: tuple[int, ...], chosen: dict) -> bool:
    """Whether a send started with draw `d` picks the queue `chosen` shows first at one of `times`
    (the ends of the tick's window, the choice's own line: the fault table's availability depends
    on the time)."""
    cfg = pr.fault_cfg(c.producer, n)
    for now in times:
        _, _, sel = qs.select_one_message_queue(cfg, info, n.lft, None, now, d)
        if sel.mq.broker_name == chosen.get("broker", sel.mq.broker_name) and \
                sel.mq.queue_id == chosen.get("queue_id", sel.mq.queue_id):
            return True
    return False


_DRAWS: dict[tuple, tuple[int, ...]] = {}


def _draws(ns_count: int, ns_classes: tuple, queue_mod: int, worst_mod: int, lags: tuple) -> tuple[int, ...]:
    """The smallest draw of each class: the NameServer asked first, (d % 999 + 1) % ns_count (None:
    any); (d & 0xFF) % queue_mod; (d >> 8) % worst_mod; bit 15 (None: any). See
    remoting.invoke_sync, queue_selection.select_one_message_queue and producer.timed_out."""
    key = (ns_count, ns_classes, queue_mod, worst_mod, lags)
    hit = _DRAWS.get(key)
    if hit is None:
        found: dict[tuple, int] = {}
        for d in range(core.DRAW_SPAN):
            k = ((d % 999 + 1) % ns_count, (d & 0xFF) % queue_mod, (d >> 8) % worst_mod, (d >> 15) & 1)
            if (ns_classes[0] is None or k[0] in ns_classes) and (lags[0] is None or k[3] in lags):
                found.setdefault(k if lags[0] is not None else k[:3], d)
        if ns_classes[0] is None:  # any NameServer: one draw per the other classes
            merged: dict[tuple, int] = {}
            for k, d in found.items():
                merged.setdefault(k[1:], d)
            found = merged
        hit = _DRAWS[key] = tuple(sorted(found.values()))
    return hit


# --- facts ---


def fact_fields(at: str, fields: dict) -> dict:
    """A fact line's fields, checked (ValueError names what is wrong)."""
    topic = fields.get("topic")
    if not isinstance(topic, str) or not topic:
        raise ValueError(f"{at} needs a 'topic'")
    if at == "create_topic":
        return {"topic": topic, "read_queue_nums": _queue_nums(fields, "read_queue_nums"),
                "write_queue_nums": _queue_nums(fields, "write_queue_nums")}
    return {"topic": topic}


def _queue_nums(fields: dict, key: str) -> int:
    v = fields.get(key, 4)
    if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= 1024:
        raise ValueError(f"'{key}' must be an integer in 1..1024")
    return v


def fact_event(w: core.World, node: int, at: str, fields: dict) -> Any:
    """The world event a fact line stands for (None: it cannot happen in `w`)."""
    if at == "create_topic":
        n = w.nodes[node]
        if not w.alive[node] or type(n) is not nb.Broker or not nb.is_master(n) or n.exited:
            return None
        if (fields["read_queue_nums"], fields["write_queue_nums"]) != (4, 4):
            return None  # the operator's updateTopic of the model creates 4 queues
        return ns_world.CreateTopic(node=node, topic=fields["topic"])
    return ns_world.DeleteTopic(topic=fields["topic"])


def fact_line(w: core.World, event: Any) -> tuple[int, str, dict] | None:
    """The fact line of an operator action the reference applied (for logs written from histories)."""
    if isinstance(event, ns_world.CreateTopic):
        return event.node, "create_topic", {"topic": event.topic, "read_queue_nums": 4, "write_queue_nums": 4}
    if isinstance(event, ns_world.DeleteTopic):
        return -1, "delete_topic", {"topic": event.topic}
    return None


def ext_lines(before: core.World, event: Any, after: core.World, obs: tuple) -> list[tuple[int, str, dict]]:
    """The lines of an operator action besides its fact line: for `mqadmin deleteTopic`
    (admin.delete_topic_sub_command), each broker's answer to DELETE_TOPIC_IN_BROKER in turn (a
    master deletes, a slave refuses; a broker that is down writes nothing) and each NameServer's
    DELETE_TOPIC_IN_NAMESRV; an updateTopic's registration is a send (histories.impl_log)."""
    index = {nid: i for i, nid in enumerate(after.cfg.ids)}
    cluster = after.cfg.proto.broker.broker_cluster_name
    out: list[tuple[int, str, dict]] = []
    for _, o in obs:
        if type(o) is not admin.DeleteTopicDone:
            continue
        out += [(index[a], DELETE_IN_BROKER_AT, {"topic": o.topic, "code": 0}) for a in o.brokers]
        if o.stopped_at in index and before.alive[index[o.stopped_at]] and o.reason is not None \
                and o.reason.startswith("a slave"):
            out.append((index[o.stopped_at], DELETE_IN_BROKER_AT, {"topic": o.topic, "code": SYSTEM_ERROR}))
        out += [(index[a], DELETE_IN_NAMESRV_AT, {"topic": o.topic, "cluster_name": cluster})
                for a in o.name_servers]
    return out


# --- configuration ---


def make_config(nodes: tuple[str, ...], config: dict) -> core.WorldConfig:
    """The world a header describes: its nodes are NameServers ns0.., broker groups b<g>-m,
    b<g>-s.., producers p0.. and consumers c0.., as the reference names them; `config` holds
    the keys `--config` takes (docs/nameserver.md) besides the shape, which the nodes give."""
    ids = tuple(nodes)
    namesrvs = [x for x in ids if x.startswith("ns")]
    groups = sorted({x.split("-", 1)[0] for x in ids if x.startswith("b")}, key=lambda g: int(g[1:] or -1))
    slaves = sum(1 for x in ids if x.startswith("b0-s"))
    shape = {"name_servers": len(namesrvs), "slaves": slaves, "producers": sum(1 for x in ids if x.startswith("p")),
             "consumers": sum(1 for x in ids if x.startswith("c") and not x.startswith("cl"))}
    clash = set(shape) & set(config)
    if clash:
        raise ValueError(f"the nodes give the shape; leave {sorted(clash)} out of the config")
    cfg = ns_world.make_config(len(groups), {**shape, **config})
    if cfg.ids != ids:
        raise ValueError(f"nameserver nodes are NameServers ns0.., broker groups b0.. (b<g>-m, b<g>-s, b<g>-s2, ..., "
                         f"the same slaves in each), producers p0.. and consumers c0.., in that order; "
                         f"expected {list(cfg.ids)}")
    return cfg


def header_config(cfg: core.WorldConfig) -> dict:
    """The header's `config` for a world of ours: the overrides it was made with, but the shape."""
    return {k: v for k, v in thaw(cfg.overrides).items()
            if k not in ("name_servers", "slaves", "producers", "consumers")}
