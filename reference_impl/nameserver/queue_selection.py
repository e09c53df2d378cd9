"""Which queue a producer sends to: TopicPublishInfo, MQFaultStrategy, LatencyFaultToleranceImpl (4.9.4).

Theory of operation
-------------------
Every send attempt asks `MQFaultStrategy#selectOneMessageQueue(tpInfo, lastBrokerName)`.

- `sendLatencyFaultEnable` false (the default): `TopicPublishInfo#selectOneMessageQueue
  (lastBrokerName)` probes the queue list round-robin (each probe advances the send
  thread's `ThreadLocalIndex`) for a queue of another broker than the one that just
  failed; if every queue belongs to it, it takes the next queue anyway.
- `sendLatencyFaultEnable` true: the first queue, round-robin, whose broker the
  `LatencyFaultToleranceImpl` deems available (lastBrokerName is ignored); if none is,
  `pickOneAtLeast()` picks a broker from the fault table (available first, then lower
  latency, then earlier start; one of the better half) and, in 4.9.4-4.9.7, **rewrites the
  MessageQueue object it took from the route list** to that broker and a new queue id.
  The list shares that object, so the rewrite stays in the producer's route until the
  route changes (4.9.8 returns a new MessageQueue instead: `fault_fallback_mutates_queue`).

`updateFaultItem(broker, latency, isolation)` after each attempt marks the broker
unavailable for `notAvailableDuration` of the first `latencyMax` the latency reaches
(an exception counts as 30000 ms: 600 s).

`ThreadLocalIndex` starts at `Math.abs(random.nextInt())`; the model draws it from the
send's random draw when first used (low byte for `sendWhichQueue`, high byte for
`whichItemWorst`), which only matters modulo the list size. Fault-item ties keep
insertion order (Java: the ConcurrentHashMap's).
"""

from __future__ import annotations

from reference_impl.core.state import EMPTY, FrozenMap, record
from reference_impl.nameserver.client_routes import MessageQueue, TopicPublishInfo

POSITIVE_MASK = 0x7FFFFFFF
ISOLATION_LATENCY_MS = 30000  # MQFaultStrategy#updateFaultItem: isolation ? 30000 : currentLatency


@record
class FaultStrategyConfig:
    """MQFaultStrategy fields (4.9.4 defaults)."""

    send_latency_fault_enable: bool = False
    latency_max: tuple = (50, 100, 550, 1000, 2000, 3000, 15000)
    not_available_duration: tuple = (0, 0, 30000, 60000, 120000, 180000, 600000)
    fault_fallback_mutates_queue: bool = True  # 4.9.4-4.9.7: mq.setBrokerName/setQueueId; 4.9.8: new MessageQueue


@record
class FaultItem:
    """LatencyFaultToleranceImpl.FaultItem"""

    name: str
    current_latency: int
    start_timestamp: int

    def is_available(self, now: int) -> bool:
        return now - self.start_timestamp >= 0


@record
class LatencyFaultTolerance:
    """LatencyFaultToleranceImpl: the fault table and the whichItemWorst ThreadLocalIndex."""

    fault_item_table: FrozenMap = EMPTY  # brokerName -> FaultItem
    which_item_worst: int | None = None


@record
class Selection:
    """What selectOneMessageQueue did. `path`: how the queue was chosen; `rewrite`: (position,
    old queue, new queue) when the fallback rewrote the shared MessageQueue."""

    mq: MessageQueue
    path: str
    rewrite: tuple | None = None


def increment_and_get(index: int | None, seed: int) -> tuple[int, int]:
    """ThreadLocalIndex#incrementAndGet: (new index, Math.abs(index & POSITIVE_MASK))."""
    if index is None:
        index = seed
    index += 1
    return index, index & POSITIVE_MASK


# --- LatencyFaultToleranceImpl ---


def update_fault_item(lft: LatencyFaultTolerance, name: str, current_latency: int, not_available_duration: int,
                      now: int) -> LatencyFaultTolerance:
    """LatencyFaultToleranceImpl#updateFaultItem"""
    item = FaultItem(name=name, current_latency=current_latency, start_timestamp=now + not_available_duration)
    return lft.evolve(fault_item_table=lft.fault_item_table.set(name, item))


def is_available(lft: LatencyFaultTolerance, name: str, now: int) -> bool:
    """LatencyFaultToleranceImpl#isAvailable: unknown brokers are available."""
    item = lft.fault_item_table.get(name)
    return item is None or item.is_available(now)


def remove(lft: LatencyFaultTolerance, name: str) -> LatencyFaultTolerance:
    """LatencyFaultToleranceImpl#remove"""
    return lft.evolve(fault_item_table=lft.fault_item_table.without(name))


def pick_one_at_least(lft: LatencyFaultTolerance, now: int, seed: int) -> tuple[LatencyFaultTolerance, str | None]:
    """LatencyFaultToleranceImpl#pickOneAtLeast: sort (available first, lower latency, earlier
    start); the first if fewer than two items, else one of the better half by whichItemWorst."""
    items = sorted(lft.fault_item_table.values(),
                   key=lambda f: (not f.is_available(now), f.current_latency, f.start_timestamp))
    if not items:
        return lft, None
    half = len(items) // 2
    if half <= 0:
        return lft, items[0].name
    worst, value = increment_and_get(lft.which_item_worst, seed)
    return lft.evolve(which_item_worst=worst), items[value % half].name


# --- TopicPublishInfo ---


def select_one(tpi: TopicPublishInfo, seed: int) -> tuple[TopicPublishInfo, int]:
    """TopicPublishInfo#selectOneMessageQueue(): the next position round-robin."""
    index, value = increment_and_get(tpi.send_which_queue, seed)
    return tpi.evolve(send_which_queue=index), value % len(tpi.message_queue_list)


def select_avoiding(tpi: TopicPublishInfo, last_broker_name: str | None, seed: int
                    ) -> tuple[TopicPublishInfo, Selection]:
    """TopicPublishInfo#selectOneMessageQueue(lastBrokerName)"""
    queues = tpi.message_queue_list
    if last_broker_name is None:
        tpi, pos = select_one(tpi, seed)
        return tpi, Selection(mq=queues[pos], path="round_robin")
    for _ in range(len(queues)):
        tpi, pos = select_one(tpi, seed)
        if queues[pos].broker_name != last_broker_name:
            return tpi, Selection(mq=queues[pos], path="avoid_last")
    tpi, pos = select_one(tpi, seed)
    return tpi, Selection(mq=queues[pos], path="only_last")


def get_queue_id_by_broker(tpi: TopicPublishInfo, broker_name: str | None) -> int:
    """TopicPublishInfo#getQueueIdByBroker: the broker's writeQueueNums in the route, or -1."""
    for qd in tpi.topic_route_data.queue_datas if tpi.topic_route_data is not None else ():
        if qd.broker_name == broker_name:
            return qd.write_queue_nums
    return -1


# --- MQFaultStrategy ---


def select_one_message_queue(cfg: FaultStrategyConfig, tpi: TopicPublishInfo, lft: LatencyFaultTolerance,
                             last_broker_name: str | None, now: int, draw: int
                             ) -> tuple[TopicPublishInfo, LatencyFaultTolerance, Selection]:
    """MQFaultStrategy#selectOneMessageQueue. `draw` seeds the ThreadLocalIndexes on first use."""
    queue_seed, worst_seed = draw & 0xFF, draw >> 8
    if not cfg.send_latency_fault_enable:
        tpi, sel = select_avoiding(tpi, last_broker_name, queue_seed)
        return tpi, lft, sel
    queues = tpi.message_queue_list
    index, value = increment_and_get(tpi.send_which_queue, queue_seed)
    tpi = tpi.evolve(send_which_queue=index)
    for i in range(len(queues)):
        mq = queues[(value + i) % len(queues)]  # Math.abs(index++) % size
        if is_available(lft, mq.broker_name, now):
            return tpi, lft, Selection(mq=mq, path="fault_available")
    lft, not_best = pick_one_at_least(lft, now, worst_seed)
    write_queue_nums = get_queue_id_by_broker(tpi, not_best)
    if write_queue_nums > 0:
        tpi, pos = select_one(tpi, queue_seed)
        old = queues[pos]
        index, value = increment_and_get(tpi.send_which_queue, queue_seed)
        tpi = tpi.evolve(send_which_queue=index)
        new = MessageQueue(topic=old.topic, broker_name=not_best, queue_id=value % write_queue_nums)
        if cfg.fault_fallback_mutates_queue:
            # mq.setBrokerName(notBestBroker); mq.setQueueId(...): the route list's own object.
            tpi = tpi.evolve(message_queue_list=queues[:pos] + (new,) + queues[pos + 1:])
            return tpi, lft, Selection(mq=new, path="fault_pick_one_at_least", rewrite=(pos, old, new))
        return tpi, lft, Selection(mq=new, path="fault_pick_one_at_least")
    if not_best is not None:
        lft = remove(lft, not_best)
    # (remove(null) throws a NullPointerException, caught: the same fallback)
    tpi, pos = select_one(tpi, queue_seed)
    return tpi, lft, Selection(mq=queues[pos], path="fault_fallback")


def compute_not_available_duration(cfg: FaultStrategyConfig, current_latency: int) -> int:
    """MQFaultStrategy#computeNotAvailableDuration"""
    for i in range(len(cfg.latency_max) - 1, -1, -1):
        if current_latency >= cfg.latency_max[i]:
            return cfg.not_available_duration[i]
    return 0


def mq_update_fault_item(cfg: FaultStrategyConfig, lft: LatencyFaultTolerance, broker_name: str,
                         current_latency: int, isolation: bool, now: int) -> LatencyFaultTolerance:
    """MQFaultStrategy#updateFaultItem"""
    if not cfg.send_latency_fault_enable:
        return lft
    duration = compute_not_available_duration(cfg, ISOLATION_LATENCY_MS if isolation else current_latency)
    return update_fault_item(lft, broker_name, current_latency, duration, now)
