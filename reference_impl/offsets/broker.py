"""Consumer offsets on the brokers (RocketMQ 4.9.4): ConsumerOffsetManager, SlaveSynchronize,
the pull path with its broker suggestion, and the offset requests.

Theory of operation
-------------------
A broker group is a master (`brokerId` 0) and a slave (`brokerId` 1); there is no
failover. Every broker keeps `ConsumerOffsetManager.offsetTable` ("topic@group" ->
queue -> offset) in memory and writes it to consumerOffset.json every 5 s
(`flushConsumerOffsetInterval`, first after 10 s). `commitOffset` overwrites whatever
is there, lower values included (it only logs). A process crash loses what was
committed since the last write; a restart loads the file.

Both brokers accept `UPDATE_CONSUMER_OFFSET` (ConsumerManageProcessor has no role
check) and answer `QUERY_CONSUMER_OFFSET`. A pull may carry the consumer's offset; only
a master stores it (`storeOffsetEnable` needs `brokerRole != SLAVE`).

The slave runs `SlaveSynchronize#syncAll` at a fixed rate (3 s, then every 10 s). Its
`syncConsumerOffset` asks `masterAddr` for its whole table and `putAll`s it: per
"topic@group" key the master's inner map replaces the slave's; keys the master lacks
stay. `masterAddr` is what the last registration result said (the name server returns
it to a slave while the master is registered, null otherwise), so after the master
dies the slave stops syncing, and after it returns the slave overwrites its offsets
with the master's at most one registration period plus one sync period later.

The pull path is `PullMessageProcessor#processRequest` over
`DefaultMessageStore#getMessage`, including `suggestPullingFromSlave` (`diff > memory`:
the consumer is further behind the CommitLog's end than `accessMessageInMemoryMaxRatio`
of the machine's RAM) and the `suggestWhichBrokerId` assignments exactly as written:
with `slaveReadEnable` false the suggestion is always the master, and the
`PULL_RETRY_IMMEDIATELY` a slave sets is overwritten by the status switch (dead code).

Replication is an abstraction of the `ha` protocol (reference_impl.ha*): the slave asks
the master every `ha_transfer_interval_ms` for the CommitLog after its own max offset
and appends it whole. The byte stream, its framing and its faults are the `ha`
protocol's business; here only "the slave has a prefix of the master's messages, some
time behind" matters (docs/offsets.md).
"""

from __future__ import annotations

from reference_impl.core.network import Send
from reference_impl.core.state import EMPTY, FrozenMap
from reference_impl.offsets.records import (
    GROUP,
    TOPIC,
    TOPIC_GROUP_SEPARATOR,
    Appended,
    Broker,
    ConsumerOffsetSerializeWrapper,
    CqUnit,
    GetAllConsumerOffset,
    GetMessageStatus,
    HaBatch,
    HaTransfer,
    MasterAddrLearnt,
    OffsetCommitted,
    OffsetQueried,
    OffsetsConfig,
    OffsetsPersisted,
    OffsetsSynced,
    PullMessage,
    PullResponse,
    PullServed,
    QueryConsumerOffset,
    QueryConsumerOffsetResponse,
    RegisterBroker,
    RegisterBrokerResult,
    SendMessage,
    SendResult,
    Store,
    UpdateConsumerOffset,
)
from reference_impl.rocketmq import MASTER_ID, ResponseCode

Out = tuple


def key_of(topic: str = TOPIC, group: str = GROUP) -> str:
    """ConsumerOffsetManager: topic + TOPIC_GROUP_SEPARATOR + group."""
    return topic + TOPIC_GROUP_SEPARATOR + group


def is_slave(b: Broker) -> bool:
    """BrokerRole.SLAVE: a brokerId other than MixAll.MASTER_ID."""
    return b.broker_id != MASTER_ID


# --- ConsumerOffsetManager ---


def commit_offset(table: FrozenMap, key: str, queue_id: int, offset: int) -> tuple[FrozenMap, int]:
    """ConsumerOffsetManager#commitOffset(key, queueId, offset): put, whatever the old value
    (a lower offset is only logged, "[NOTIFYME]update consumer offset less than store").
    Returns the table and the old value (-1: none)."""
    inner = table.get(key)
    if inner is None:
        return table.set(key, FrozenMap({queue_id: offset})), -1
    old = inner.get(queue_id, -1)
    return table.set(key, inner.set(queue_id, offset)), old


def query_offset(table: FrozenMap, key: str, queue_id: int) -> int:
    """ConsumerOffsetManager#queryOffset(group, topic, queueId): the value, or -1."""
    inner = table.get(key)
    return inner.get(queue_id, -1) if inner is not None else -1


def persist(b: Broker) -> Broker:
    """ConfigManager#persist: consumerOffset.json := the table (tmp, bak, rename; atomic here)."""
    return b.evolve(persisted=b.offset_table)


def put_all(slave: FrozenMap, master: FrozenMap) -> FrozenMap:
    """ConcurrentHashMap#putAll as syncConsumerOffset uses it: per key, the master's inner map
    replaces the slave's (not a merge, not a max); keys only the slave has stay."""
    if not master:
        return slave
    d = dict(slave.items())
    d.update(master.items())
    return FrozenMap(d)


# --- lifecycle ---


def boot(c: OffsetsConfig, node_id: str, broker_id: int, now: int) -> Broker:
    """BrokerStartup: an empty store, then start()."""
    return start(c, Broker(id=node_id, broker_id=broker_id, store=Store(cqs=((),) * c.queues)), now)


def start(c: OffsetsConfig, b: Broker, now: int) -> Broker:
    """BrokerController#initialize (ConsumerOffsetManager#load) and #start: the persist task,
    handleSlaveSynchronize (slave: masterAddr := null, syncAll in 3 s), registerBrokerAll at once."""
    slave = is_slave(b)
    return b.evolve(offset_table=b.persisted, master_addr=None,
                    next_persist_ms=now + c.flush_consumer_offset_initial_ms, next_register_ms=now,
                    next_sync_ms=now + c.slave_sync_initial_ms if slave else -1,
                    next_ha_ms=now if slave else -1, ha_in_flight=False)


def crash(b: Broker, kind: str) -> Broker:
    """A process crash: the CommitLog survives (page cache) and consumerOffset.json; the table
    in memory and every thread's state are gone (no shutdown hook persists it)."""
    return b.evolve(offset_table=EMPTY, master_addr=None, next_persist_ms=-1, next_register_ms=-1,
                    next_sync_ms=-1, next_ha_ms=-1, ha_in_flight=False)


def wake_at(b: Broker) -> int:
    """The earliest time one of the broker's scheduled tasks is due (-1: never)."""
    times = [t for t in (b.next_persist_ms, b.next_register_ms, b.next_sync_ms,
                         -1 if b.ha_in_flight else b.next_ha_ms) if t >= 0]
    return min(times) if times else -1


def on_tick(c: OffsetsConfig, b: Broker, now: int) -> tuple[Broker, Out]:
    """BrokerController's scheduled tasks that are due: ConsumerOffsetManager#persist, registerBrokerAll,
    SlaveSynchronize#syncAll, and the slave's replication request."""
    outs: Out = ()
    if 0 <= b.next_persist_ms <= now:
        b = persist(b).evolve(next_persist_ms=now + c.flush_consumer_offset_interval)
        outs += (OffsetsPersisted(table=b.persisted),)
    if 0 <= b.next_register_ms <= now:
        b, more = register_broker_all(c, b, now)
        outs += more
    if 0 <= b.next_sync_ms <= now:
        b, more = sync_all(c, b, now)
        outs += more
    if not b.ha_in_flight and 0 <= b.next_ha_ms <= now:
        outs += (Send(dst=master_of(c), msg=HaTransfer(from_phy=b.store.max_phy), ctx=("ha",),
                      timeout_ms=c.broker_rpc_timeout_ms),)
        b = b.evolve(ha_in_flight=True)
    return b, outs


def master_of(c: OffsetsConfig) -> str:
    """The master's address, the slave's HA master (haMasterAddress is static here)."""
    return c.brokers[0]


# --- registration and slave synchronisation ---


def register_broker_all(c: OffsetsConfig, b: Broker, now: int) -> tuple[Broker, Out]:
    """BrokerController#registerBrokerAll (periodic, every registerNameServerPeriod)."""
    send = Send(dst=c.namesrv, msg=RegisterBroker(broker_id=b.broker_id), ctx=("register",),
                timeout_ms=c.broker_rpc_timeout_ms * 2)  # registerBrokerTimeoutMills 6000
    return b.evolve(next_register_ms=now + c.register_name_server_period), (send,)


def on_register_result(b: Broker, result: RegisterBrokerResult | None) -> tuple[Broker, Out]:
    """BrokerController#doRegisterBrokerAll: slaveSynchronize.setMasterAddr(result.getMasterAddr()).
    A failed registration leaves masterAddr as it was."""
    if result is None or not is_slave(b) or result.master_addr == b.master_addr:
        return b, ()
    return b.evolve(master_addr=result.master_addr), (MasterAddrLearnt(master_addr=result.master_addr),)


def sync_all(c: OffsetsConfig, b: Broker, now: int) -> tuple[Broker, Out]:
    """SlaveSynchronize#syncAll -> syncConsumerOffset: nothing if masterAddr is null or is this
    broker; else GET_ALL_CONSUMER_OFFSET to the master (topic config, delay offsets and
    subscription groups are not modelled)."""
    b = b.evolve(next_sync_ms=now + c.slave_sync_period_ms)
    addr = b.master_addr
    if addr is None or addr == b.id:
        return b, ()
    return b, (Send(dst=addr, msg=GetAllConsumerOffset(), ctx=("sync", addr), timeout_ms=c.broker_rpc_timeout_ms),)


def on_all_consumer_offset(b: Broker, master: str, resp: ConsumerOffsetSerializeWrapper | None
                           ) -> tuple[Broker, Out]:
    """syncConsumerOffset, after getAllConsumerOffset returned: putAll, then persist. An
    exception (timeout, refused) is only logged."""
    if resp is None:
        return b, ()
    before = b.offset_table
    b = persist(b.evolve(offset_table=put_all(before, resp.offset_table)))
    return b, (OffsetsSynced(master=master, table=resp.offset_table, before=before),
               OffsetsPersisted(table=b.persisted))


# --- the store ---


def put_message(c: OffsetsConfig, b: Broker, msg: SendMessage) -> tuple[Broker, SendResult, Out]:
    """SendMessageProcessor -> DefaultMessageStore#putMessage: a slave refuses
    (checkStoreStatus: SERVICE_NOT_AVAILABLE); a master appends to the CommitLog and the
    queue (the ReputMessageService dispatch is immediate here)."""
    if is_slave(b):
        return b, SendResult(code=ResponseCode.SERVICE_NOT_AVAILABLE), ()
    s = b.store
    unit = CqUnit(phy=s.max_phy, size=msg.size, msg_id=msg.msg_id)
    b = b.evolve(store=append(s, msg.queue_id, unit))
    qo = len(s.cqs[msg.queue_id])
    return b, SendResult(code=ResponseCode.SUCCESS, queue_offset=qo), (
        Appended(msg_id=msg.msg_id, queue_id=msg.queue_id, queue_offset=qo),)


def append(s: Store, queue_id: int, unit: CqUnit) -> Store:
    """CommitLog#putMessage + ReputMessageService's dispatch to the consume queue, at once."""
    cqs = s.cqs[:queue_id] + (s.cqs[queue_id] + (unit,),) + s.cqs[queue_id + 1:]
    return Store(cqs=cqs, max_phy=unit.phy + unit.size, log=s.log + ((queue_id, unit),))


def ha_serve(b: Broker, req: HaTransfer) -> HaBatch:
    """The master's side of the replication abstraction: its CommitLog after the slave's max offset."""
    log = b.store.log
    k = len(log)
    while k > 0 and log[k - 1][1].phy >= req.from_phy:
        k -= 1
    return HaBatch(units=log[k:])


def on_ha_batch(c: OffsetsConfig, b: Broker, batch: HaBatch | None, now: int) -> Broker:
    """The slave appends what follows its own max offset (a gap or an overlap is ignored, as
    HAClient drops a frame whose offset is not its max offset)."""
    b = b.evolve(ha_in_flight=False, next_ha_ms=now + c.ha_transfer_interval_ms)
    if batch is None:
        return b
    s = b.store
    for qid, unit in batch.units:
        if unit.phy == s.max_phy:
            s = append(s, qid, unit)
    return b.evolve(store=s)


def check_in_disk_by_commit_offset(c: OffsetsConfig, offset_py: int, max_offset_py: int) -> bool:
    """DefaultMessageStore#checkInDiskByCommitOffset: (maxOffsetPy - offsetPy) > memory."""
    return (max_offset_py - offset_py) > c.memory()


def is_the_batch_full(c: OffsetsConfig, size_py: int, max_msg_nums: int, buffer_total: int, message_total: int,
                      is_in_disk: bool) -> bool:
    """DefaultMessageStore#isTheBatchFull."""
    if buffer_total == 0 or message_total == 0:
        return False
    if max_msg_nums <= message_total:
        return True
    if is_in_disk:
        return (buffer_total + size_py > c.max_transfer_bytes_on_message_in_disk
                or message_total > c.max_transfer_count_on_message_in_disk - 1)
    return (buffer_total + size_py > c.max_transfer_bytes_on_message_in_memory
            or message_total > c.max_transfer_count_on_message_in_memory - 1)


def next_offset_correction(c: OffsetsConfig, b: Broker, old: int, new: int) -> int:
    """DefaultMessageStore#nextOffsetCorrection: a slave without offsetCheckInSlave keeps `old`."""
    return new if not is_slave(b) or c.offset_check_in_slave else old


def get_message(c: OffsetsConfig, b: Broker, queue_id: int, offset: int, max_msg_nums: int
                ) -> tuple[GetMessageStatus, tuple, int, int, int, bool]:
    """DefaultMessageStore#getMessage: (status, messages, nextBeginOffset, minOffset, maxOffset,
    suggestPullingFromSlave). No filter, no file deletion (minOffset is 0)."""
    s = b.store
    if not 0 <= queue_id < len(s.cqs):
        return GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, (), next_offset_correction(c, b, offset, 0), 0, 0, False
    cq = s.cqs[queue_id]
    min_offset, max_offset = 0, len(cq)
    if max_offset == 0:
        return GetMessageStatus.NO_MESSAGE_IN_QUEUE, (), next_offset_correction(c, b, offset, 0), 0, 0, False
    if offset < min_offset:
        return (GetMessageStatus.OFFSET_TOO_SMALL, (), next_offset_correction(c, b, offset, min_offset), min_offset,
                max_offset, False)
    if offset == max_offset:
        return (GetMessageStatus.OFFSET_OVERFLOW_ONE, (), next_offset_correction(c, b, offset, offset), min_offset,
                max_offset, False)
    if offset > max_offset:
        return (GetMessageStatus.OFFSET_OVERFLOW_BADLY, (), next_offset_correction(c, b, offset, max_offset),
                min_offset, max_offset, False)
    max_offset_py = s.max_phy
    msgs: list = []
    total = 0
    i = 0
    max_phy_pulling = 0
    for unit in cq[offset:]:  # the consume-queue buffer from `offset` to the end of its file
        max_phy_pulling = unit.phy
        in_disk = check_in_disk_by_commit_offset(c, unit.phy, max_offset_py)
        if is_the_batch_full(c, unit.size, max_msg_nums, total, len(msgs), in_disk):
            break
        msgs.append((offset + i, unit.msg_id))
        total += unit.size
        i += 1
    diff = max_offset_py - max_phy_pulling
    return GetMessageStatus.FOUND, tuple(msgs), offset + i, min_offset, max_offset, diff > c.memory()


# PullMessageProcessor's switch on the store status (4.9.4): the response code it sets.
STATUS_CODES = {
    GetMessageStatus.FOUND: ResponseCode.SUCCESS,
    GetMessageStatus.NO_MATCHED_MESSAGE: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.OFFSET_OVERFLOW_BADLY: ResponseCode.PULL_OFFSET_MOVED,
    GetMessageStatus.OFFSET_OVERFLOW_ONE: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_TOO_SMALL: ResponseCode.PULL_OFFSET_MOVED,
}


def suggest_which_broker_id(c: OffsetsConfig, b: Broker, from_slave: bool) -> tuple[int, ResponseCode | None]:
    """PullMessageProcessor#processRequest's suggestWhichBrokerId assignments, in source order.
    Returns the suggestion and the code the SLAVE branch sets (None: none), which the status
    switch then overwrites: dead code, so a slave with slaveReadEnable=false still serves."""
    suggest = c.which_broker_when_consume_slowly if from_slave else MASTER_ID
    code = None
    if is_slave(b) and not c.slave_read_enable:
        code = ResponseCode.PULL_RETRY_IMMEDIATELY
        suggest = MASTER_ID
    if c.slave_read_enable:
        suggest = c.which_broker_when_consume_slowly if from_slave else c.sub_broker_id
    else:
        suggest = MASTER_ID
    return suggest, code


def process_pull(c: OffsetsConfig, b: Broker, req: PullMessage, rpc: int = -1) -> tuple[Broker, PullResponse, Out]:
    """PullMessageProcessor#processRequest (brokerAllowSuspend = true; the long-polling hold is
    not modelled: PULL_NOT_FOUND is answered at once). `rpc`: the request's RPC, whose requester
    the piggy-backed commit is attributed to (commitOffset's clientHost)."""
    status, msgs, nxt, lo, hi, from_slave = get_message(c, b, req.queue_id, req.queue_offset, req.max_msg_nums)
    suggest, _overwritten = suggest_which_broker_id(c, b, from_slave)
    if status in (GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, GetMessageStatus.NO_MESSAGE_IN_QUEUE):
        code = ResponseCode.PULL_OFFSET_MOVED if req.queue_offset != 0 else ResponseCode.PULL_NOT_FOUND
    else:
        code = STATUS_CODES[status]
    if code is ResponseCode.PULL_OFFSET_MOVED and is_slave(b) and not c.offset_check_in_slave:
        code = ResponseCode.PULL_RETRY_IMMEDIATELY
        suggest = c.sub_broker_id
    stored = -1
    if req.has_commit_offset and not is_slave(b):  # storeOffsetEnable
        key = key_of(req.topic, req.group)
        table, old = commit_offset(b.offset_table, key, req.queue_id, req.commit_offset)
        b = b.evolve(offset_table=table)
        stored = req.commit_offset
        outs: Out = (OffsetCommitted(group=req.group, queue_id=req.queue_id, offset=req.commit_offset, old=old,
                                     via="pull", rpc=rpc),)
    else:
        outs = ()
    resp = PullResponse(code=code, msgs=msgs, next_begin_offset=nxt, min_offset=lo, max_offset=hi,
                        suggest_which_broker_id=suggest)
    served = PullServed(group=req.group, queue_id=req.queue_id, offset=req.queue_offset, status=status, code=code,
                        suggest=suggest, suggest_from_slave=from_slave, next_begin_offset=nxt, msgs=len(msgs),
                        stored_commit=stored)
    return b, resp, outs + (served,)


# --- ConsumerManageProcessor ---


def update_consumer_offset(b: Broker, req: UpdateConsumerOffset, client: str = "", rpc: int = -1
                           ) -> tuple[Broker, Out]:
    """ConsumerManageProcessor#updateConsumerOffset: commitOffset, whatever the broker's role. `client`
    (one-way: the sender) or `rpc` (an RPC: its requester) is commitOffset's clientHost."""
    table, old = commit_offset(b.offset_table, key_of(req.topic, req.group), req.queue_id, req.commit_offset)
    return b.evolve(offset_table=table), (OffsetCommitted(group=req.group, queue_id=req.queue_id,
                                                          offset=req.commit_offset, old=old, via="update",
                                                          client=client, rpc=rpc),)


def query_consumer_offset(c: OffsetsConfig, b: Broker, req: QueryConsumerOffset) -> QueryConsumerOffsetResponse:
    """ConsumerManageProcessor#queryConsumerOffset: the offset if >= 0; else 0 when the queue's
    first message is not "in disk" (minOffset <= 0 && !checkInDiskByConsumeOffset(.., 0)),
    else QUERY_NOT_FOUND."""
    offset = query_offset(b.offset_table, key_of(req.topic, req.group), req.queue_id)
    if offset >= 0:
        return QueryConsumerOffsetResponse(code=ResponseCode.SUCCESS, offset=offset)
    cq = b.store.cqs[req.queue_id] if 0 <= req.queue_id < len(b.store.cqs) else ()
    in_disk = bool(cq) and check_in_disk_by_commit_offset(c, cq[0].phy, b.store.max_phy)
    if not in_disk:
        return QueryConsumerOffsetResponse(code=ResponseCode.SUCCESS, offset=0)
    return QueryConsumerOffsetResponse(code=ResponseCode.QUERY_NOT_FOUND)


def on_request(c: OffsetsConfig, b: Broker, msg, rpc: int, now: int):
    """The broker's request processors."""
    t = type(msg)
    if t is PullMessage:
        return process_pull(c, b, msg, rpc)
    if t is HaTransfer:
        return b, (ha_serve(b, msg) if not is_slave(b) else HaBatch(units=())), ()
    if t is SendMessage:
        return put_message(c, b, msg)
    if t is QueryConsumerOffset:
        resp = query_consumer_offset(c, b, msg)
        answer = resp.offset if resp.code is ResponseCode.SUCCESS else -1
        return b, resp, (OffsetQueried(group=msg.group, queue_id=msg.queue_id, offset=answer, rpc=rpc),)
    if t is GetAllConsumerOffset:
        return b, ConsumerOffsetSerializeWrapper(offset_table=b.offset_table), ()
    if t is UpdateConsumerOffset:  # sent as an RPC by a scenario (updateConsumerOffset, not oneway)
        b, outs = update_consumer_offset(b, msg, rpc=rpc)
        return b, QueryConsumerOffsetResponse(code=ResponseCode.SUCCESS), outs
    raise TypeError(f"{b.id} does not serve {msg!r}")


def on_message(b: Broker, msg, client: str = "") -> tuple[Broker, Out]:
    """One-way requests: updateConsumerOffsetOneway (from `client`)."""
    if type(msg) is UpdateConsumerOffset:
        return update_consumer_offset(b, msg, client)
    raise TypeError(f"{b.id} does not take {msg!r} one-way")


def on_response(c: OffsetsConfig, b: Broker, ctx: tuple, resp, now: int) -> tuple[Broker, Out]:
    """A broker's RPC returned (None: failed): replication, registration or getAllConsumerOffset."""
    kind = ctx[0]
    if kind == "ha":
        return on_ha_batch(c, b, resp, now), ()
    if kind == "register":
        return on_register_result(b, resp)
    if kind == "sync":
        return on_all_consumer_offset(b, ctx[1], resp)
    raise ValueError(ctx)
