"""The offset handlers' decisions, restated from RocketMQ 4.9.4's Java (docs/properties.md: OFF-7..OFF-13).

OFF-1/OFF-2 judge outcomes (what a consumer resumes from), and a wrong decision on the way is
often absorbed: a lost commit is made good by the next persistAll, a wrong load by the next
commits. Each property here judges one decision on the step that makes it, over (before,
event, after, observations), written from the Java method and branch it names and not from
the reference's functions:

- OFF-7 `BrokerController#initialize` -> `ConsumerOffsetManager#load` (ConfigManager#load):
  a broker that starts holds exactly the table its last persist wrote (nothing before the first).
- OFF-8 `ConfigManager#persist`, scheduled by BrokerController#initialize every
  flushConsumerOffsetInterval after 10 s (and after each slave sync): what it writes is the
  table in memory at that moment, and a running broker writes it that often.
- OFF-9 `RebalancePushImpl#removeUnnecessaryMessageQueue` (clustering, concurrent consumption):
  a consumer that drops a queue at a rebalance first commits its latest offset for it
  (`offsetStore.persist(mq)`: updateConsumeOffsetToBroker to the master, else the first
  address), then forgets it (`removeOffset`).
- OFF-10 `ConsumerManageProcessor#updateConsumerOffset` and PullMessageProcessor's
  `storeOffsetEnable` branch (`ConsumerOffsetManager#commitOffset`): every offset a broker
  takes is the one an UPDATE_CONSUMER_OFFSET or a master's pull delivered to it at that step,
  sent by a consumer, and it takes it whatever its value.
- OFF-11 `ConsumerManageProcessor#queryConsumerOffset`: the answer is the table's offset; without
  one, 0 when the queue's first message is not "in disk" (or the queue is empty), else
  QUERY_NOT_FOUND.
- OFF-12 `SlaveSynchronize#syncConsumerOffset` and `AdminBrokerProcessor#getAllConsumerOffset`:
  a slave asks only with a masterAddr that is not itself, the master answers its whole table,
  and the slave putAll's exactly the answer it got (OFF-3 judges the putAll).
- OFF-13 `RebalancePushImpl#computePullFromWhereWithException` (CONSUME_FROM_FIRST_OFFSET) after
  `RemoteBrokerOffsetStore#readOffset(READ_FROM_STORE)`: a consumer taking a queue resumes at
  the broker's answer, at 0 on QUERY_NOT_FOUND, and does not take it when the query failed.
"""

from __future__ import annotations

from typing import Any

from reference_impl import core
from reference_impl.core import network as net_mod
from reference_impl.core.state import EMPTY
from reference_impl.offsets.broker import key_of
from reference_impl.offsets.records import (
    Broker,
    CommitSent,
    ConsumerOffsetSerializeWrapper,
    GetAllConsumerOffset,
    OffsetCommitted,
    OffsetRead,
    OffsetsPersisted,
    OffsetsSynced,
    PullMessage,
    QueryConsumerOffset,
    QueryConsumerOffsetResponse,
    QueueDropped,
    UpdateConsumerOffset,
)
from reference_impl.rocketmq import MASTER_ID, ResponseCode
from spec import bounds
from spec.properties import Property

PERSIST_INITIAL_MS = 10_000  # BrokerController#initialize: scheduleAtFixedRate(persist, 1000 * 10, interval)

_WHY: list = [None, ""]  # (world after, why) of the last decision found wrong


def _wrong(after: core.World, why: str) -> bool:
    _WHY[0], _WHY[1] = after, why
    return False


def _why(w: core.World) -> str:
    return _WHY[1] if _WHY[0] is w else "see the trace"


def _brokers(w: core.World) -> range:
    return range(len(w.cfg.proto.brokers))


def _new_envelopes(before: core.World, after: core.World) -> list:
    first = before.net.next_id
    out = []
    for env in reversed(after.net.flight):
        if env.id < first:
            break
        out.append(env)
    return out


def _delivered(before: core.World, event: Any) -> Any:
    """The envelope this step delivers, if it is a delivery."""
    return net_mod.find(before.net, event.env) if type(event) is core.Deliver else None


def _offset(table: Any, queue_id: int) -> int:
    inner = table.get(key_of())
    return inner.get(queue_id, -1) if inner is not None else -1


# --- OFF-7: a start loads exactly what the last persist wrote ---


def off7(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    if type(event) is not core.Restart and type(event) is not core.Calm:
        return True
    for j in _brokers(after):
        b, a = before.nodes[j], after.nodes[j]
        if not after.alive[j] or b.incarnation == a.incarnation:
            continue
        wrote = before.ghost.persisted.get(a.id, (-1, EMPTY))[1]
        if a.offset_table != wrote:
            return _wrong(after, f"{a.id} started with offsets {dict(a.offset_table.get(key_of()) or {})}, but its "
                                 f"last persist wrote {dict(wrote.get(key_of()) or {})}")
    return True


# --- OFF-8: a persist writes the table in memory, every flushConsumerOffsetInterval ---


def off8(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    for i, o in obs:
        if type(o) is OffsetsPersisted and (o.table != after.nodes[i].offset_table
                                            or after.nodes[i].persisted != o.table):
            return _wrong(after, f"{after.cfg.ids[i]} wrote consumerOffset.json with a table other than the one in "
                                 f"its memory")
    interval = bounds.setting(after, "flush_consumer_offset_interval")
    g = after.ghost
    for j in _brokers(after):
        if not after.alive[j]:
            continue
        node_id = after.cfg.ids[j]
        last = max(g.persisted.get(node_id, (-1,))[0], g.started.get(node_id, 0) + PERSIST_INITIAL_MS - interval)
        if after.now - last > interval:
            return _wrong(after, f"{node_id} has not written consumerOffset.json for {after.now - last} ms "
                                 f"(flushConsumerOffsetInterval {interval})")
    return True


# --- OFF-9: a queue dropped at a rebalance is committed first ---


def commit_address(addrs: Any) -> str | None:
    """RemoteBrokerOffsetStore#updateConsumeOffsetToBroker's broker: findBrokerAddressInSubscribe(name,
    MASTER_ID, true), else (.., false): the master, else the map's first entry (ascending ids)."""
    if not addrs:
        return None
    return addrs[MASTER_ID] if MASTER_ID in addrs else addrs[min(addrs)]


def off9(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    if not obs:
        return True
    for i, o in obs:
        if type(o) is not QueueDropped or o.why != "rebalance":
            continue
        was, now = before.nodes[i], after.nodes[i]
        q = o.queue_id
        if q in now.assigned or q in now.offset_table:
            return _wrong(after, f"{was.id} dropped queue {q} at a rebalance but kept its offset or process queue")
        v = was.offset_table.get(q)
        if v is None:
            continue  # nothing to persist (readOffset from memory finds none)
        addr = commit_address(was.broker_addrs)
        sent = [e for e in _new_envelopes(before, after) if e.src == i and type(e.msg) is UpdateConsumerOffset
                and e.msg.queue_id == q]
        if addr is None:
            ok = any(j == i and type(x) is CommitSent and x.queue_id == q and x.addr is None for j, x in obs)
        else:
            ok = any(after.cfg.ids[e.dst] == addr and e.msg.commit_offset == v for e in sent)
        if not ok:
            return _wrong(after, f"{was.id} dropped queue {q} at a rebalance without committing its offset {v} to "
                                 f"{addr} first (removeUnnecessaryMessageQueue: persist, then removeOffset)")
    return True


# --- OFF-10: every commit a broker takes is one a consumer sent ---


def off10(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    env = _delivered(before, event)
    want = None
    if env is not None and env.dst in _brokers(after) and not env.reply and before.alive[env.dst]:
        m = env.msg
        if type(m) is UpdateConsumerOffset:
            want = (m.queue_id, m.commit_offset)
        elif type(m) is PullMessage and m.has_commit_offset and before.nodes[env.dst].broker_id == MASTER_ID:
            want = (m.queue_id, m.commit_offset)  # storeOffsetEnable: brokerAllowSuspend, hasCommitOffsetFlag, master
    taken = [(i, o) for i, o in obs if type(o) is OffsetCommitted]
    if want is not None:
        consumer = after.cfg.ids[env.src] in after.cfg.proto.consumers
        node = after.nodes[env.dst]
        if not consumer or [(i, (o.queue_id, o.offset)) for i, o in taken] != [(env.dst, want)] or \
                _offset(node.offset_table, want[0]) != want[1]:
            return _wrong(after, f"{node.id} was delivered offset {want[1]} for queue {want[0]} from "
                                 f"{after.cfg.ids[env.src]} and did not take exactly that")
    elif taken:
        i, o = taken[0]
        return _wrong(after, f"{after.cfg.ids[i]} took offset {o.offset} for queue {o.queue_id} that no consumer's "
                             f"request delivered")
    return True


# --- OFF-11: the answer to QUERY_CONSUMER_OFFSET ---


def query_answer(c: Any, b: Broker, queue_id: int) -> int:
    """ConsumerManageProcessor#queryConsumerOffset: the offset (-1: QUERY_NOT_FOUND)."""
    offset = _offset(b.offset_table, queue_id)
    if offset >= 0:
        return offset
    cq = b.store.cqs[queue_id] if 0 <= queue_id < len(b.store.cqs) else ()
    memory = int(c.total_physical_memory_size * (c.access_message_in_memory_max_ratio / 100.0))
    in_disk = bool(cq) and b.store.max_phy - cq[0].phy > memory  # checkInDiskByConsumeOffset(.., 0)
    return -1 if in_disk else 0


def off11(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    env = _delivered(before, event)
    if env is None or env.reply or type(env.msg) is not QueryConsumerOffset or env.dst not in _brokers(after) \
            or not before.alive[env.dst]:
        return True
    b = before.nodes[env.dst]
    want = query_answer(after.cfg.proto, b, env.msg.queue_id)
    for e in _new_envelopes(before, after):
        if e.reply and e.rpc == env.rpc and type(e.msg) is QueryConsumerOffsetResponse:
            got = e.msg.offset if e.msg.code is ResponseCode.SUCCESS else -1
            if got != want or (got < 0 and e.msg.code is not ResponseCode.QUERY_NOT_FOUND):
                return _wrong(after, f"{b.id} answered {got} to a query for queue {env.msg.queue_id}; "
                                     f"queryConsumerOffset gives {want}")
    return True


# --- OFF-12: slave sync asks the master, which answers its whole table, taken as it came ---


def off12(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    env = _delivered(before, event)
    if env is not None and not env.reply and type(env.msg) is GetAllConsumerOffset and before.alive[env.dst]:
        asker, master = before.nodes[env.src], before.nodes[env.dst]
        if asker.master_addr != master.id or asker.master_addr == asker.id:
            return _wrong(after, f"{asker.id} asked {master.id} for its offsets with masterAddr {asker.master_addr}")
        for e in _new_envelopes(before, after):
            if e.reply and e.rpc == env.rpc and (type(e.msg) is not ConsumerOffsetSerializeWrapper
                                                 or e.msg.offset_table != master.offset_table):
                return _wrong(after, f"{master.id} answered getAllConsumerOffset with a table other than its own")
    for i, o in obs:
        if type(o) is OffsetsSynced:
            if env is None or not env.reply or env.dst != i or type(env.msg) is not ConsumerOffsetSerializeWrapper \
                    or env.msg.offset_table != o.table:
                return _wrong(after, f"{after.cfg.ids[i]} put a table into its own that no getAllConsumerOffset "
                                     f"answer delivered")
    return True


# --- OFF-13: a consumer taking a queue resumes from the answer ---


def off13(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    if not obs:
        return True
    for i, o in obs:
        if type(o) is not OffsetRead:
            continue
        env = _delivered(before, event)
        if env is not None and env.reply and type(env.msg) is QueryConsumerOffsetResponse and env.dst == i:
            r = env.msg
            want = r.offset if r.code is ResponseCode.SUCCESS else 0 if r.code is ResponseCode.QUERY_NOT_FOUND else -1
        elif type(event) is core.RpcFail or env is None or env.dst != i:
            want = -1  # readOffset threw: the queue is not taken this round
        else:
            want = -1
        took = o.queue_id in after.nodes[i].assigned
        if o.offset != want or took != (want >= 0) or (took and after.nodes[i].assigned[o.queue_id].next_offset != want):
            return _wrong(after, f"{after.cfg.ids[i]} resumed queue {o.queue_id} at {o.offset} (took it: {took}); "
                                 f"computePullFromWhere gives {want} for that answer")
    return True


PROPERTIES = [
    Property(id="OFF-7", protocol="offsets", kind="safety", holds_step=off7, explain=_why,
             statement="ConsumerOffsetManager#load: a broker that starts holds exactly the offset table its last "
                       "persist wrote to consumerOffset.json."),
    Property(id="OFF-8", protocol="offsets", kind="safety", holds_step=off8, explain=_why,
             statement="ConfigManager#persist: what a broker writes to consumerOffset.json is its offset table in "
                       "memory at that moment, and a running broker writes it every flushConsumerOffsetInterval "
                       "(5 s) after its first 10 s."),
    Property(id="OFF-9", protocol="offsets", kind="safety", holds_step=off9, explain=_why,
             statement="RebalancePushImpl#removeUnnecessaryMessageQueue: a consumer that drops a queue at a "
                       "rebalance first commits its latest offset for it to the master (else the first address), "
                       "then forgets the offset."),
    Property(id="OFF-10", protocol="offsets", kind="safety", holds_step=off10, explain=_why,
             statement="ConsumerManageProcessor#updateConsumerOffset / PullMessageProcessor (storeOffsetEnable): "
                       "every offset a broker takes is the one an UPDATE_CONSUMER_OFFSET, or a pull to the master, "
                       "delivered to it at that step from a consumer, taken whatever its value."),
    Property(id="OFF-11", protocol="offsets", kind="safety", holds_step=off11, explain=_why,
             statement="ConsumerManageProcessor#queryConsumerOffset: a broker answers its table's offset; without "
                       "one, 0 when the queue's first message is not in disk, else QUERY_NOT_FOUND."),
    Property(id="OFF-12", protocol="offsets", kind="safety", holds_step=off12, explain=_why,
             statement="SlaveSynchronize#syncConsumerOffset: a slave asks only a masterAddr other than itself, the "
                       "master answers getAllConsumerOffset with its whole table, and the slave puts exactly that "
                       "answer into its own."),
    Property(id="OFF-13", protocol="offsets", kind="safety", holds_step=off13, explain=_why,
             statement="RebalancePushImpl#computePullFromWhere (CONSUME_FROM_FIRST_OFFSET): a consumer taking a "
                       "queue resumes at the broker's answer, at 0 on QUERY_NOT_FOUND, and does not take the queue "
                       "when the query failed."),
]
