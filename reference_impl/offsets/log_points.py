"""The offsets protocol's implementation log points: what RocketMQ 4.9.4's brokers, route source
and clients, instrumented at their natural log points, write when the reference takes a step
(docs/conformance.md, "Consumer offsets' log points").

A broker writes every `ConsumerOffsetManager#commitOffset` (the offset stored and the one it
replaced: a commit below it is RocketMQ's OFF-2, logged, never refused), each scheduled flush of
its table to consumerOffset.json (`ConsumerOffsetManager#persist`: what a process crash keeps), the request handlers that read or move offsets
(`PullMessageProcessor#processRequest`, `ConsumerManageProcessor#updateConsumerOffset`,
`#queryConsumerOffset`, `AdminBrokerProcessor#getAllConsumerOffset`) and, on the slave,
`SlaveSynchronize#syncConsumerOffset` (its GET_ALL_CONSUMER_OFFSET and the table it put), its
registrations and their answers (a slave's masterAddr comes from them), and the sends it stores.
A consumer writes its pulls and their results (`MQClientAPIImpl#pullMessage`), the broker it
chose for a pull (`PullAPIWrapper#pullKernelImpl`), an OFFSET_ILLEGAL correction
(`DefaultMQPushConsumerImpl.PullCallback#onSuccess`), each message consumed, its commits
(`RemoteBrokerOffsetStore#updateConsumeOffsetToBroker`), the offset it resumes a queue from
(`RebalancePushImpl#computePullFromWhere`) and a queue it gives up
(`RebalanceImpl#removeUnnecessaryMessageQueue`); a producer its sends.

Replication is the reference's abstraction of the `ha` protocol (reference_impl/offsets/broker.py):
one copy round is the slave's report of its max offset and the master's batch after it, logged at
`HAService.HAClient#reportSlaveMaxOffset` and `HAService.HAClient#dispatchReadRequest` with the
CommitLog offset the slave reached (`max_phy_offset`), not the bytes. The route source `ns0` stands
for the NameServers; its scan writes nothing.

Nothing here is a random draw (`logs_draws` False, one draw class per tick).
"""

from __future__ import annotations

from typing import Any

import attrs

from reference_impl import core
from reference_impl.core.state import record, thaw
from reference_impl.offsets import world as ow
from reference_impl.offsets.records import (
    Broker,
    CommitSent,
    Consumed,
    Consumer,
    OffsetCommitted,
    OffsetCorrected,
    OffsetRead,
    OffsetsSynced,
    PullSent,
    QueueDropped,
    RouteSource,
    Sent,
)


@attrs.frozen
class LogPoint:
    """One log point: where Java writes it, on which thread, and its fields."""

    at: str
    thread: str  # "maintainer" (a node's scheduled task), "handler", "client" (a client's own threads), "any"
    fields: str
    when: str


NEXT_INT = "java.util.Random#nextInt"  # never logged here
SNAPSHOT = "snapshot"
COMMIT_AT = "ConsumerOffsetManager#commitOffset"
PERSIST_AT = "ConsumerOffsetManager#persist"
SYNC_AT = "SlaveSynchronize#syncConsumerOffset"
HA_REPORT_AT = "HAService.HAClient#reportSlaveMaxOffset"
HA_DISPATCH_AT = "HAService.HAClient#dispatchReadRequest"
PULL_CHOICE_AT = "PullAPIWrapper#pullKernelImpl"
CORRECTION_AT = "DefaultMQPushConsumerImpl.PullCallback#onSuccess"
CONSUME_AT = "MessageListenerConcurrently#consumeMessage"
UPDATE_AT = "RemoteBrokerOffsetStore#updateConsumeOffsetToBroker"
RESUME_AT = "RebalancePushImpl#computePullFromWhere"
DROP_AT = "RebalanceImpl#removeUnnecessaryMessageQueue"
SEND_DONE_AT = "DefaultMQProducer#send"

POINTS = {p.at: p for p in (
    LogPoint(COMMIT_AT, "handler", "group, queue_id, offset, old (-1: none), via (update, pull)",
             "a broker stored a consumer offset (UPDATE_CONSUMER_OFFSET, or a pull's piggy-backed commit on a master)"),
    LogPoint(PERSIST_AT, "maintainer", "table (what consumerOffset.json now holds)",
             "the broker's scheduled flush of its offsets (every 5 s; a process crash loses what came after)"),
    LogPoint("PullMessageProcessor#processRequest", "handler", "peer, request (PullMessage), response (PullResponse)",
             "a broker answered a PULL_MESSAGE"),
    LogPoint("ConsumerManageProcessor#updateConsumerOffset", "handler", "peer, request (UpdateConsumerOffset)",
             "a broker took a one-way UPDATE_CONSUMER_OFFSET"),
    LogPoint("ConsumerManageProcessor#queryConsumerOffset", "handler", "peer, request, response",
             "a broker answered QUERY_CONSUMER_OFFSET"),
    LogPoint("AdminBrokerProcessor#getAllConsumerOffset", "handler", "peer, request, response (the table)",
             "the master answered the slave's GET_ALL_CONSUMER_OFFSET"),
    LogPoint("BrokerOuterAPI#getAllConsumerOffset", "maintainer", "peer, request; completion: response",
             "the slave's SlaveSynchronize asked the master for its table, and the answer"),
    LogPoint(SYNC_AT, "any", "master, table (the master's: [[topic@group, [[queue, offset], ...]], ...])",
             "the slave put the master's table"),
    LogPoint("SendMessageProcessor#sendMessage", "handler", "peer, request, response", "a broker answered a send"),
    LogPoint("BrokerOuterAPI#registerBroker", "maintainer", "peer, request; completion: response",
             "a broker registered with the route source, and the answer (a slave's master address)"),
    LogPoint("RouteInfoManager#registerBroker", "handler", "peer, request, response",
             "the route source took a registration"),
    LogPoint("RouteInfoManager#pickupTopicRouteData", "handler", "peer, request, response",
             "the route source answered a route request"),
    LogPoint(HA_REPORT_AT, "maintainer", "peer (the master), request (HaTransfer: from_phy)",
             "the slave asked for the CommitLog after its max offset"),
    LogPoint("HAConnection.WriteSocketService#run", "handler", "peer (the slave), request", "the master sent a batch"),
    LogPoint(HA_DISPATCH_AT, "client", "peer, response (HaBatch); then max_phy_offset (node line)",
             "the slave appended what followed its max offset"),
    LogPoint("MQClientAPIImpl#getTopicRouteInfoFromNameServer", "client", "peer, request; completion: response",
             "a client asked the route source for the topic's route, and the answer"),
    LogPoint(PULL_CHOICE_AT, "client", "queue_id, offset, broker_id, peer (null: broker not found)",
             "a consumer chose the broker of a pull (pullFromWhichNode, findBrokerAddressInSubscribe)"),
    LogPoint("MQClientAPIImpl#pullMessage", "client", "peer, request; completion: response",
             "a PULL_MESSAGE written, and its answer"),
    LogPoint(CORRECTION_AT, "client", "queue_id, asked, corrected",
             "OFFSET_ILLEGAL: the consumer takes nextBeginOffset in place of the offset it asked for"),
    LogPoint(CONSUME_AT, "client", "queue_id, queue_offset, msg_id", "a consumer consumed a message"),
    LogPoint(UPDATE_AT, "client", "peer, request (one-way UpdateConsumerOffset); or queue_id, offset, peer null",
             "a consumer committed an offset (null peer: no broker found, MQClientException)"),
    LogPoint("MQClientAPIImpl#queryConsumerOffset", "client", "peer, request; completion: response",
             "a consumer asked a broker for a queue's offset, and the answer"),
    LogPoint(RESUME_AT, "client", "queue_id, offset, peer, answer (-1 QUERY_NOT_FOUND, -2 failed)",
             "a consumer took a queue in a rebalance and resumes it at offset"),
    LogPoint(DROP_AT, "client", "queue_id, why", "a consumer gave a queue up"),
    LogPoint("MQClientAPIImpl#sendMessage", "client", "peer, request; completion: response",
             "a producer's SEND_MESSAGE, and its answer"),
    LogPoint(SEND_DONE_AT, "client", "msg_id, ok", "a synchronous send returned (ok) or threw"),
)}

SEND_AT = {"GetAllConsumerOffset": "BrokerOuterAPI#getAllConsumerOffset",
           "RegisterBroker": "BrokerOuterAPI#registerBroker",
           "HaTransfer": HA_REPORT_AT, "GetRouteInfo": "MQClientAPIImpl#getTopicRouteInfoFromNameServer",
           "PullMessage": "MQClientAPIImpl#pullMessage", "UpdateConsumerOffset": UPDATE_AT,
           "QueryConsumerOffset": "MQClientAPIImpl#queryConsumerOffset", "SendMessage": "MQClientAPIImpl#sendMessage"}
HANDLE_AT = {"PullMessage": "PullMessageProcessor#processRequest",
             "UpdateConsumerOffset": "ConsumerManageProcessor#updateConsumerOffset",
             "QueryConsumerOffset": "ConsumerManageProcessor#queryConsumerOffset",
             "GetAllConsumerOffset": "AdminBrokerProcessor#getAllConsumerOffset",
             "SendMessage": "SendMessageProcessor#sendMessage", "RegisterBroker": "RouteInfoManager#registerBroker",
             "GetRouteInfo": "RouteInfoManager#pickupTopicRouteData",
             "HaTransfer": "HAConnection.WriteSocketService#run"}
COMPLETE_AT = {"ConsumerOffsetSerializeWrapper": "BrokerOuterAPI#getAllConsumerOffset",
               "RegisterBrokerResult": "BrokerOuterAPI#registerBroker", "HaBatch": HA_DISPATCH_AT,
               "RouteData": "MQClientAPIImpl#getTopicRouteInfoFromNameServer",
               "PullResponse": "MQClientAPIImpl#pullMessage",
               "QueryConsumerOffsetResponse": "MQClientAPIImpl#queryConsumerOffset",
               "SendResult": "MQClientAPIImpl#sendMessage",
               "PullException": "MQClientAPIImpl#pullMessage", "QueryException": "MQClientAPIImpl#queryConsumerOffset",
               "SyncException": "BrokerOuterAPI#getAllConsumerOffset",
               "RegisterException": "BrokerOuterAPI#registerBroker",
               "RouteException": "MQClientAPIImpl#getTopicRouteInfoFromNameServer", "HaException": HA_DISPATCH_AT,
               "SendException": "MQClientAPIImpl#sendMessage"}
# A batch's units are the reference's abstraction of HA's byte stream: the slave's max_phy_offset
# line after it says what it reached.
INTERNAL_FIELDS = {"HaBatch": ("units",)}


@record
class PullException:
    """A pull's callback got onException (RemotingConnectException, RemotingTimeoutException)."""


@record
class QueryException:
    """queryConsumerOffset threw (the queue's offset could not be read)."""


@record
class SyncException:
    """getAllConsumerOffset threw (SlaveSynchronize logs it and keeps its table)."""


@record
class RegisterException:
    """A registration threw (a slave keeps its masterAddr)."""


@record
class RouteException:
    """A route request threw."""


@record
class HaException:
    """A copy round failed (the master is down or unreachable)."""


@record
class SendException:
    """A send's invokeSync threw."""


FAILED = {"pull": PullException(), "query": QueryException(), "sync": SyncException(),
          "register": RegisterException(), "route": RouteException(), "ha": HaException(), "send": SendException()}


def failed_reply(ctx: Any) -> Any:
    """What a failed call completes with: the exception its caller catches, logged at the call's own
    point (its time decides when the caller tries again: a pull 3 s later, a copy round 200 ms)."""
    return FAILED[ctx[0]]


def node_lines(c: Any, on_tick: bool, before: Any, after: Any, obs: list, draw: int) -> list[tuple[str, dict]]:
    """The lines one node writes for one reference step, besides the network's."""
    out: list[tuple[str, dict]] = []
    for o in obs:
        t = type(o)
        if t is OffsetCommitted:
            out.append((COMMIT_AT, {"group": o.group, "queue_id": o.queue_id, "offset": o.offset, "old": o.old,
                                    "via": o.via}))
        elif t is OffsetsSynced:
            out.append((SYNC_AT, {"master": o.master, "table": table_pairs(o.table)}))
        elif t is PullSent:
            out.append((PULL_CHOICE_AT, {"queue_id": o.queue_id, "offset": o.offset, "broker_id": o.broker_id,
                                         "peer": o.addr}))
        elif t is OffsetCorrected:
            out.append((CORRECTION_AT, {"queue_id": o.queue_id, "asked": o.asked, "corrected": o.corrected}))
        elif t is Consumed:
            out.append((CONSUME_AT, {"queue_id": o.queue_id, "queue_offset": o.queue_offset, "msg_id": o.msg_id}))
        elif t is CommitSent and o.addr is None:
            out.append((UPDATE_AT, {"queue_id": o.queue_id, "offset": o.offset, "peer": None}))
        elif t is OffsetRead:
            out.append((RESUME_AT, {"queue_id": o.queue_id, "offset": o.offset, "peer": o.addr, "answer": o.answer}))
        elif t is QueueDropped:
            out.append((DROP_AT, {"queue_id": o.queue_id, "why": o.why}))
        elif t is Sent:
            out.append((SEND_DONE_AT, {"msg_id": o.msg_id, "ok": o.ok}))
    if on_tick and type(after) is Broker and type(before) is Broker and after.next_persist_ms != before.next_persist_ms:
        out.append((PERSIST_AT, {"table": table_pairs(after.persisted)}))
    if type(after) is Broker and type(before) is Broker and after.store.max_phy != before.store.max_phy \
            and after.broker_id != 0:
        out.append((HA_DISPATCH_AT, {"max_phy_offset": after.store.max_phy}))
    return out


def table_pairs(table: Any) -> tuple:
    """An offset table as `[[topic@group, [[queue, offset], ...]], ...]`, sorted (hashable while the
    checker holds it; JSON lists in a log)."""
    return tuple((k, tuple(sorted(inner.items()))) for k, inner in sorted(table.items()))


def ext_lines(before: core.World, event: Any, after: core.World, obs: tuple) -> list[tuple[int, str, dict]]:
    """A rebalance (the consumer resumes and drops queues) or a route source noticing a dead
    broker's channel: each node whose state it changed writes its own lines (its requests are
    the generic send lines)."""
    c = after.cfg.proto
    by_node: dict[int, list] = {}
    for i, o in obs:
        by_node.setdefault(i, []).append(o)
    out = []
    for i, (b0, b1) in enumerate(zip(before.nodes, after.nodes)):
        if (b0 is not b1 or i in by_node) and before.alive[i]:
            out += [(i, at, f) for at, f in node_lines(c, False, b0, b1, by_node.get(i, []), 0)]
    return out


def snapshot(c: Any, n: Any, alive: bool) -> dict | None:
    """A node's state as its process reads it: a broker's role, offset table, queues' max offsets
    and master address; a consumer's queues (next pull offset) and offset table (ow.observe without
    the counters a workload makes its own)."""
    shown = ow.observe(c, n, alive)
    t = type(n)
    if t is Broker:
        return {k: shown[k] for k in ("role", "broker_id", "offset_table", "queue_max_offsets", "master_addr")}
    if t is Consumer:
        return {k: shown[k] for k in ("assigned", "offset_table")}
    if t is RouteSource:
        return {"brokers": shown["brokers"]}
    return None


def logs_draws(n: Any) -> bool:
    return False


def draw_classes(w: core.World, i: int, times: tuple[int, int], upcoming: Any) -> tuple[int, ...]:
    """No offsets node reads its tick's draw (reference_impl/offsets/world.py#on_tick)."""
    return (0,)


def make_config(nodes: tuple[str, ...], config: dict) -> core.WorldConfig:
    """The world a header describes: n0 (master), n1 (slave), ns0, producers p0.., consumers c0..;
    `config` holds OffsetsConfig keys (docs/offsets.md) besides the shape, which the nodes give."""
    ids = tuple(nodes)
    shape = {"producers": sum(1 for x in ids if x.startswith("p")),
             "consumers": sum(1 for x in ids if x.startswith("c"))}
    clash = set(shape) & set(config)
    if clash:
        raise ValueError(f"the nodes give the shape; leave {sorted(clash)} out of the config")
    cfg = ow.make_config(2, {**shape, **config})
    if cfg.ids != ids:
        raise ValueError(f"offsets nodes are n0 (master), n1 (slave), ns0, producers p0.. and consumers c0.., in that "
                         f"order; expected {list(cfg.ids)}")
    return cfg


def header_config(cfg: core.WorldConfig) -> dict:
    return {k: v for k, v in thaw(cfg.overrides).items() if k not in ("producers", "consumers")}
