"""Consumer offsets on the clients (RocketMQ 4.9.4): which broker a consumer pulls from and
commits to, and the client's offset store. Also the world's route source and producers.

Theory of operation
-------------------
A push consumer (clustering mode, `CONSUME_FROM_FIRST_OFFSET`) of group
`please_rename_unique_group_name` holds:

- `brokerAddrTable` for the one broker name (brokerId -> address), replaced by every
  route it fetches (`pollNameServerInterval` = 30 s from 10 ms after start); a failed
  fetch or TOPIC_NOT_EXIST keeps the old table, so the view can be stale;
- `RemoteBrokerOffsetStore.offsetTable` (queue -> offset) in memory, sent to a broker
  every `persistConsumerOffsetInterval` = 5 s (first after 10 s) with
  `updateConsumeOffsetToBroker`: `findBrokerAddressInSubscribe(name, MASTER_ID, true)`
  (the master only), else `findBrokerAddressInSubscribe(name, MASTER_ID, false)`
  (any address: the slave while the master is out of the route), one-way;
- `PullAPIWrapper.pullFromWhichNodeTable` (queue -> the brokerId the last pull response
  suggested); each pull goes to `findBrokerAddressInSubscribe(name,
  recalculatePullFromWhichNode(mq), false)` and carries the consumer's offset unless
  that broker is a slave;
- per assigned queue, the PullRequest's next offset and the ProcessQueue. Consuming a
  message sets the offset to the ProcessQueue's next message (or one past the last) with
  `updateOffset(mq, offset, increaseOnly = true)`.

A queue it gains in a rebalance (every 20 s, and at once when the group changes) is
read from a broker (`readOffset(READ_FROM_STORE)`: the same broker choice as a commit):
an offset, else 0 on QUERY_NOT_FOUND, else (a failed RPC) the queue is not taken this
round. A queue it loses is persisted to a broker and forgotten. A crash loses the
in-memory table (a `kill -9`: no shutdown hook).

Simplifications (docs/offsets.md): the route fetch in `updateConsumeOffsetToBroker` and
`pullKernelImpl` is asynchronous (the lookup retries on the cached table, the refresh
runs in the background); long polling is a client-side wait of `pull_idle_wait_ms`
after NO_NEW_MSG / NO_MATCHED_MSG; OFFSET_ILLEGAL drops the queue at once (Java waits
10 s); consumption is one message at a time, in queue order.
"""

from __future__ import annotations

from reference_impl.core.network import Send
from reference_impl.core.state import EMPTY, FrozenMap
from reference_impl.offsets.records import (
    GROUP,
    TOPIC,
    CommitSent,
    Consumed,
    Consumer,
    GetRouteInfo,
    OffsetRead,
    OffsetsConfig,
    Producer,
    PullMessage,
    PullResponse,
    PullSent,
    PullState,
    PullStatus,
    QueryConsumerOffset,
    QueryConsumerOffsetResponse,
    OffsetCorrected,
    QueueDropped,
    RegisterBroker,
    RegisterBrokerResult,
    RouteData,
    RouteSource,
    RouteUpdated,
    SendMessage,
    SendResult,
    Sent,
    UpdateConsumerOffset,
)
from reference_impl.rocketmq import MASTER_ID, ResponseCode

Out = tuple

BROKER_CHANNEL_EXPIRED_TIME = 120_000  # RouteInfoManager
SCAN_NOT_ACTIVE_BROKER_MS = 10_000  # NamesrvController: scanNotActiveBroker every 10 s (initial 5 s)


# --- MQClientInstance ---


def find_broker_address_in_subscribe(broker_addrs: FrozenMap, broker_id: int, only_this_broker: bool
                                     ) -> tuple[str, bool] | None:
    """MQClientInstance#findBrokerAddressInSubscribe: (address, slave) or None. The id asked
    for; for a slave id, then `brokerId + 1` (DLedger groups shift slave ids); unless
    onlyThisBroker, then the map's first entry (a HashMap of small Long keys iterates in
    ascending order: the master if present, else the lowest slave id)."""
    if not broker_addrs:
        return None
    addr = broker_addrs.get(broker_id)
    slave = broker_id != MASTER_ID
    found = addr is not None
    if not found and slave:
        addr = broker_addrs.get(broker_id + 1)
        found = addr is not None
    if not found and not only_this_broker:
        first = min(broker_addrs)
        addr, slave, found = broker_addrs[first], first != MASTER_ID, True
    return (addr, slave) if found else None


# --- PullAPIWrapper ---


def recalculate_pull_from_which_node(n: Consumer, queue_id: int) -> int:
    """PullAPIWrapper#recalculatePullFromWhichNode (connectBrokerByUser = false): the suggestion, else the master."""
    return n.pull_from_which_node.get(queue_id, MASTER_ID)


def update_pull_from_which_node(n: Consumer, queue_id: int, broker_id: int) -> Consumer:
    """PullAPIWrapper#updatePullFromWhichNode (from processPullResult, on every response)."""
    if n.pull_from_which_node.get(queue_id) == broker_id:
        return n
    return n.evolve(pull_from_which_node=n.pull_from_which_node.set(queue_id, broker_id))


def pull_kernel_impl(c: OffsetsConfig, n: Consumer, queue_id: int, now: int) -> tuple[Consumer, Out]:
    """DefaultMQPushConsumerImpl#pullMessage -> PullAPIWrapper#pullKernelImpl for one queue."""
    ps = n.assigned[queue_id]
    broker_id = recalculate_pull_from_which_node(n, queue_id)
    found = find_broker_address_in_subscribe(n.broker_addrs, broker_id, False)
    if found is None:  # "The broker[...] not exist": executePullRequestLater(3 s)
        n = _set_pull(n, queue_id, ps.evolve(next_pull_ms=now + c.pull_time_delay_mills_when_exception))
        return _want_route(n, now), (PullSent(queue_id=queue_id, offset=ps.next_offset, broker_id=broker_id,
                                              addr=None, commit=False),)
    addr, slave = found
    commit_value = n.offset_table.get(queue_id, -1)  # readOffset(mq, READ_FROM_MEMORY)
    commit = commit_value > 0 and not slave  # commitOffsetEnable; PullSysFlag.clearCommitOffsetFlag on a slave
    req = PullMessage(group=GROUP, topic=TOPIC, queue_id=queue_id, queue_offset=ps.next_offset,
                      max_msg_nums=c.pull_batch_size, commit_offset=commit_value if commit else 0,
                      has_commit_offset=commit)
    n = _set_pull(n, queue_id, ps.evolve(in_flight=True))
    send = Send(dst=addr, msg=req, ctx=("pull", n.incarnation, queue_id, ps.next_offset), timeout_ms=c.pull_timeout_ms)
    return n, (PullSent(queue_id=queue_id, offset=ps.next_offset, broker_id=broker_id, addr=addr, commit=commit),
               send)


PULL_STATUS = {ResponseCode.SUCCESS: PullStatus.FOUND, ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
               ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
               ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL}  # MQClientAPIImpl#processPullResponse


def on_pull_response(c: OffsetsConfig, n: Consumer, queue_id: int, offset: int, resp: PullResponse | None, now: int
                     ) -> tuple[Consumer, Out]:
    """PullCallback of DefaultMQPushConsumerImpl#pullMessage, after PullAPIWrapper#processPullResult."""
    ps = n.assigned.get(queue_id)
    if ps is None or not ps.in_flight or ps.next_offset != offset:
        return n, ()  # the queue was dropped or re-assigned meanwhile
    ps = ps.evolve(in_flight=False)
    if resp is None:  # onException: executePullRequestLater(pullTimeDelayMillsWhenException)
        return _set_pull(n, queue_id, ps.evolve(next_pull_ms=now + c.pull_time_delay_mills_when_exception)), ()
    n = update_pull_from_which_node(n, queue_id, resp.suggest_which_broker_id)
    status = PULL_STATUS[resp.code]
    if status is PullStatus.FOUND:
        ps = ps.evolve(next_offset=resp.next_begin_offset, process=ps.process + resp.msgs, next_pull_ms=now)
        n = _set_pull(n, queue_id, ps)
        if resp.msgs and n.next_consume_ms < 0:
            n = n.evolve(next_consume_ms=now + c.consume_ms)
        return n, ()
    if status is PullStatus.OFFSET_ILLEGAL:
        # updateOffset(mq, nextBeginOffset, false); persist(mq); removeProcessQueue(mq)
        n = n.evolve(offset_table=n.offset_table.set(queue_id, resp.next_begin_offset))
        n, outs = update_consume_offset_to_broker(n, queue_id, resp.next_begin_offset, now)
        n = n.evolve(assigned=n.assigned.without(queue_id), offset_table=n.offset_table.without(queue_id))
        fixed = OffsetCorrected(queue_id=queue_id, asked=offset, corrected=resp.next_begin_offset)
        return n, (fixed,) + outs + (QueueDropped(queue_id=queue_id, why="OFFSET_ILLEGAL"),)
    ps = ps.evolve(next_offset=resp.next_begin_offset, next_pull_ms=now + c.pull_idle_wait_ms)
    n = _set_pull(n, queue_id, ps)
    if not ps.process:  # correctTagsOffset
        n = update_offset(n, queue_id, resp.next_begin_offset, True)
    return n, ()


def _set_pull(n: Consumer, queue_id: int, ps: PullState) -> Consumer:
    """Replace one queue's PullRequest/ProcessQueue state."""
    return n.evolve(assigned=n.assigned.set(queue_id, ps))


# --- RemoteBrokerOffsetStore ---


def update_offset(n: Consumer, queue_id: int, offset: int, increase_only: bool) -> Consumer:
    """RemoteBrokerOffsetStore#updateOffset (increaseOnly: MixAll.compareAndIncreaseOnly)."""
    old = n.offset_table.get(queue_id)
    if old is not None and increase_only and offset <= old:
        return n
    return n.evolve(offset_table=n.offset_table.set(queue_id, offset))


def commit_broker(n: Consumer) -> tuple[str, bool] | None:
    """The broker choice of updateConsumeOffsetToBroker and fetchConsumeOffsetFromBroker:
    findBrokerAddressInSubscribe(name, MASTER_ID, true), else (.., false)."""
    found = find_broker_address_in_subscribe(n.broker_addrs, MASTER_ID, True)
    if found is None:
        found = find_broker_address_in_subscribe(n.broker_addrs, MASTER_ID, False)
    return found


def update_consume_offset_to_broker(n: Consumer, queue_id: int, offset: int, now: int) -> tuple[Consumer, Out]:
    """RemoteBrokerOffsetStore#updateConsumeOffsetToBroker(mq, offset, isOneway = true)."""
    found = commit_broker(n)
    if found is None:  # MQClientException "The broker[...] not exist", logged by persistAll
        return _want_route(n, now), (CommitSent(queue_id=queue_id, offset=offset, addr=None),)
    req = UpdateConsumerOffset(group=GROUP, topic=TOPIC, queue_id=queue_id, commit_offset=offset)
    return n, (CommitSent(queue_id=queue_id, offset=offset, addr=found[0]), Send(dst=found[0], msg=req))


def persist_all(c: OffsetsConfig, n: Consumer, now: int) -> tuple[Consumer, Out]:
    """RemoteBrokerOffsetStore#persistAll(processQueueTable keys): commit every assigned queue's
    offset; forget the others."""
    outs: Out = ()
    for queue_id in sorted(n.offset_table):
        if queue_id in n.assigned:
            n, more = update_consume_offset_to_broker(n, queue_id, n.offset_table[queue_id], now)
            outs += more
    unused = [q for q in n.offset_table if q not in n.assigned]
    if unused:
        table = n.offset_table
        for q in unused:
            table = table.without(q)
        n = n.evolve(offset_table=table)
    return n.evolve(next_persist_ms=now + c.persist_consumer_offset_interval), outs


def fetch_consume_offset_from_broker(c: OffsetsConfig, n: Consumer, queue_id: int, now: int) -> tuple[Consumer, Out]:
    """RemoteBrokerOffsetStore#readOffset(mq, READ_FROM_STORE) -> fetchConsumeOffsetFromBroker."""
    found = commit_broker(n)
    if found is None:
        return on_offset_answer(n.evolve(assigned=n.assigned.set(queue_id, PullState())), queue_id, None, None, now)
    req = QueryConsumerOffset(group=GROUP, topic=TOPIC, queue_id=queue_id)
    return n, (Send(dst=found[0], msg=req, ctx=("query", n.incarnation, queue_id), timeout_ms=c.offset_rpc_timeout_ms),)


def on_offset_answer(n: Consumer, queue_id: int, addr: str | None, resp: QueryConsumerOffsetResponse | None, now: int
                     ) -> tuple[Consumer, Out]:
    """readOffset's outcome, then RebalancePushImpl#computePullFromWhere (CONSUME_FROM_FIRST_OFFSET):
    an offset >= 0 is used; -1 (QUERY_NOT_FOUND, an MQBrokerException) means 0; -2 (any other
    exception) leaves the queue unassigned until the next rebalance."""
    ps = n.assigned.get(queue_id)
    if ps is None or ps.next_offset != -1:
        return n, ()
    if resp is None:
        answer = -2
    elif resp.code is ResponseCode.SUCCESS:
        answer = resp.offset
        n = update_offset(n, queue_id, answer, False)
    else:
        answer = -1
    start = answer if answer >= 0 else 0 if answer == -1 else -1
    if start < 0:
        n = n.evolve(assigned=n.assigned.without(queue_id))
        return n, (OffsetRead(queue_id=queue_id, offset=-1, addr=addr, answer=answer),)
    n = n.evolve(assigned=n.assigned.set(queue_id, PullState(next_offset=start, next_pull_ms=now)))
    return n, (OffsetRead(queue_id=queue_id, offset=start, addr=addr, answer=answer),)


# --- RebalanceImpl ---


def allocate_averagely(queues: int, cids: tuple[str, ...], me: str) -> tuple[int, ...]:
    """AllocateMessageQueueAveragely#allocate over queue ids 0..queues-1 and the sorted consumer ids."""
    if me not in cids or queues == 0:
        return ()
    index, n_cid = cids.index(me), len(cids)
    mod = queues % n_cid
    if queues <= n_cid:
        average = 1
    elif mod > 0 and index < mod:
        average = queues // n_cid + 1
    else:
        average = queues // n_cid
    start = index * average if mod > 0 and index < mod else index * average + mod
    span = min(average, queues - start)
    return tuple((start + i) % queues for i in range(max(0, span)))


def do_rebalance(c: OffsetsConfig, n: Consumer, members: tuple[str, ...], now: int) -> tuple[Consumer, Out]:
    """RebalanceImpl#rebalanceByTopic (clustering) -> updateProcessQueueTableInRebalance. Needs the
    topic's subscribe info (a route received); `members` is the group as the broker knows it."""
    if not n.broker_addrs:
        return n, ()
    mine = set(allocate_averagely(c.queues, tuple(sorted(members)), n.id))
    outs: Out = ()
    for queue_id in sorted(n.assigned):
        if queue_id not in mine:  # removeUnnecessaryMessageQueue: persist(mq), removeOffset(mq)
            offset = n.offset_table.get(queue_id)
            if offset is not None:
                n, more = update_consume_offset_to_broker(n, queue_id, offset, now)
                outs += more
            n = n.evolve(assigned=n.assigned.without(queue_id), offset_table=n.offset_table.without(queue_id))
            outs += (QueueDropped(queue_id=queue_id, why="rebalance"),)
    for queue_id in sorted(mine):
        if queue_id not in n.assigned:  # removeDirtyOffset, then computePullFromWhere
            n = n.evolve(offset_table=n.offset_table.without(queue_id), assigned=n.assigned.set(queue_id, PullState()))
            n, more = fetch_consume_offset_from_broker(c, n, queue_id, now)
            outs += more
    return n, outs


# --- the consumer node ---


def boot_consumer(c: OffsetsConfig, node_id: str, now: int, incarnation: int = 0) -> Consumer:
    """DefaultMQPushConsumer#start: MQClientInstance's scheduled tasks."""
    return Consumer(id=node_id, next_route_ms=now + 10, next_persist_ms=now + c.persist_initial_ms,
                    incarnation=incarnation)


def _want_route(n: Consumer, now: int) -> Consumer:
    """updateTopicRouteInfoFromNameServer(topic), run in the background here."""
    return n if n.route_in_flight or n.next_route_ms <= now else n.evolve(next_route_ms=now)


def consumer_wake(n: Consumer) -> int:
    """The earliest time one of the consumer's tasks is due (-1: never)."""
    times = [n.next_persist_ms, n.next_consume_ms, -1 if n.route_in_flight else n.next_route_ms]
    times += [ps.next_pull_ms for ps in n.assigned.values() if not ps.in_flight and ps.next_offset >= 0]
    due = [t for t in times if t >= 0]
    return min(due) if due else -1


def consumer_tick(c: OffsetsConfig, n: Consumer, now: int) -> tuple[Consumer, Out]:
    """MQClientInstance's scheduled tasks (route poll, persistAll), consumption and due pulls."""
    outs: Out = ()
    if not n.route_in_flight and 0 <= n.next_route_ms <= now:
        n = n.evolve(route_in_flight=True, next_route_ms=now + c.poll_name_server_interval)
        outs += (Send(dst=c.namesrv, msg=GetRouteInfo(), ctx=("route", n.incarnation), timeout_ms=3000),)
    if 0 <= n.next_consume_ms <= now:
        n, more = consume_one(c, n, now)
        outs += more
    for queue_id in sorted(n.assigned):
        ps = n.assigned[queue_id]
        if not ps.in_flight and ps.next_offset >= 0 and 0 <= ps.next_pull_ms <= now:
            n, more = pull_kernel_impl(c, n, queue_id, now)
            outs += more
    if 0 <= n.next_persist_ms <= now:
        n, more = persist_all(c, n, now)
        outs += more
    return n, outs


def consume_one(c: OffsetsConfig, n: Consumer, now: int) -> tuple[Consumer, Out]:
    """ConsumeMessageConcurrentlyService: one message consumed (the lowest queue id with work),
    then ProcessQueue#removeMessage and updateOffset(mq, offset, increaseOnly = true)."""
    for queue_id in sorted(n.assigned):
        ps = n.assigned[queue_id]
        if ps.process:
            (offset, msg_id), rest = ps.process[0], ps.process[1:]
            nxt = rest[0][0] if rest else offset + 1
            n = update_offset(_set_pull(n, queue_id, ps.evolve(process=rest)), queue_id, nxt, True)
            n = n.evolve(consumed=n.consumed + 1)
            more = any(p.process for p in n.assigned.values())
            return (n.evolve(next_consume_ms=now + c.consume_ms if more else -1),
                    (Consumed(queue_id=queue_id, queue_offset=offset, msg_id=msg_id),))
    return n.evolve(next_consume_ms=-1), ()


def consumer_response(c: OffsetsConfig, n: Consumer, ctx: tuple, peer: str, resp, now: int) -> tuple[Consumer, Out]:
    """A consumer's RPC returned (None: failed): a route fetch, a pull or an offset query."""
    kind, inc = ctx[0], ctx[1]
    if inc != n.incarnation:
        return n, ()
    if kind == "route":
        n = n.evolve(route_in_flight=False)
        if resp is None or not resp.broker_addrs or resp.broker_addrs == n.broker_addrs:
            return n, ()  # failure or TOPIC_NOT_EXIST: the old route stays
        return n.evolve(broker_addrs=resp.broker_addrs), (RouteUpdated(broker_addrs=resp.broker_addrs),)
    if kind == "pull":
        return on_pull_response(c, n, ctx[2], ctx[3], resp, now)
    if kind == "query":
        return on_offset_answer(n, ctx[2], peer, resp, now)
    raise ValueError(ctx)


# --- producers (the nameserver protocol models the send path; here a producer just feeds the queues) ---


def producer_wake(c: OffsetsConfig, p: Producer) -> int:
    """When the producer sends next (-1: done or waiting)."""
    return p.next_send_ms if not p.in_flight and p.sent < c.messages else -1


def producer_tick(c: OffsetsConfig, p: Producer, now: int) -> tuple[Producer, Out]:
    """DefaultMQProducer#send (SYNC) to the master, queues round-robin; each message once."""
    if p.in_flight or p.sent >= c.messages or now < p.next_send_ms:
        return p, ()
    msg = SendMessage(msg_id=f"{p.id}-{p.sent}", queue_id=p.sent % c.queues, size=c.body_size)
    send = Send(dst=c.brokers[0], msg=msg, ctx=("send", msg.msg_id), timeout_ms=c.send_msg_timeout)
    return p.evolve(sent=p.sent + 1, in_flight=True), (send,)


def producer_response(c: OffsetsConfig, p: Producer, ctx: tuple, resp: SendResult | None, now: int
                      ) -> tuple[Producer, Out]:
    """DefaultMQProducer#send returned (None: timeout or connection failure)."""
    ok = resp is not None and resp.code is ResponseCode.SUCCESS
    p = p.evolve(in_flight=False, next_send_ms=now + c.send_interval_ms, acked=p.acked + ok, failed=p.failed + (not ok))
    return p, (Sent(msg_id=ctx[1], ok=ok),)


# --- the route source: a name server's RouteInfoManager for one broker name ---


def register_broker(rs: RouteSource, addr: str, req: RegisterBroker, now: int
                    ) -> tuple[RouteSource, RegisterBrokerResult]:
    """RouteInfoManager#registerBroker: a slave's result carries the master's address while
    the master is registered (`masterAddr`), else null."""
    rs = rs.evolve(live=rs.live.set(addr, (req.broker_id, now)))
    master = None
    if req.broker_id != MASTER_ID:
        master = next((a for a, (bid, _) in rs.live.items() if bid == MASTER_ID), None)
    return rs, RegisterBrokerResult(master_addr=master)


def pickup_topic_route_data(rs: RouteSource) -> RouteData:
    """RouteInfoManager#pickupTopicRouteData: the broker name's addresses (empty: TOPIC_NOT_EXIST),
    by id, as Java's HashMap<Long, String> of small ids iterates (not in the order the brokers
    registered, which two registrations at once leave open)."""
    return RouteData(broker_addrs=FrozenMap(sorted((bid, a) for a, (bid, _) in rs.live.items())))


def scan_not_active_broker(rs: RouteSource, now: int) -> RouteSource:
    """RouteInfoManager#scanNotActiveBroker: drop brokers silent for more than 120 s."""
    keep = {a: v for a, v in rs.live.items() if v[1] + BROKER_CHANNEL_EXPIRED_TIME >= now}
    rs = rs.evolve(next_scan_ms=now + SCAN_NOT_ACTIVE_BROKER_MS)
    return rs if len(keep) == len(rs.live) else rs.evolve(live=FrozenMap(keep))


def on_channel_destroy(rs: RouteSource, addr: str) -> RouteSource:
    """RouteInfoManager#onChannelDestroy: the broker's connection closed (its process died)."""
    return rs.evolve(live=rs.live.without(addr))


def boot_route_source(node_id: str, now: int) -> RouteSource:
    """NamesrvController#initialize: scanNotActiveBroker 5 s after start, then every 10 s."""
    return RouteSource(id=node_id, next_scan_ms=now + 5000)


EMPTY_ROUTE = EMPTY
