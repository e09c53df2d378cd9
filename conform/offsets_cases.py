"""Consumer-offsets cases: Hypothesis strategies for `rmqspec conform --protocol offsets`, and the
deterministic edge cases `rmqspec vectors` writes first.

A case's broker is what a broker holds after a few calls, not free values: its consume queues are
made by appending messages (sizes from a pool, so that the first unit of a queue is sometimes
further behind the CommitLog's end than the memory the store allows and sometimes not), and its
offset table by applying 0 to 8 of the reference's own commits and slave synchronisations to an
empty one. Then one more call is the case's input. The pools make the relations the Java code
branches on come up often: a commit below the stored offset (overwritten, only logged), a query of
a queue never committed (0 when the queue's first message is in memory or the queue is empty,
QUERY_NOT_FOUND when it is "in disk"), a queue id beyond the topic's queues, a key of another topic
or group, a master's table that lacks the slave's keys (putAll keeps them) or holds a key with fewer
queues (putAll replaces the inner map whole), a masterAddr that is null or the broker itself (no
request), a failed request (nothing changes, nothing is written).
"""

from __future__ import annotations

from collections.abc import Iterator

from hypothesis import assume
from hypothesis import strategies as st

from conform.offsets import (
    INPUTS,
    Case,
    GetAllConsumerOffset,
    QueryConsumerOffset,
    SyncConsumerOffset,
    UpdateConsumerOffset,
    run,
)
from reference_impl.core.state import FrozenMap
from reference_impl.offsets import broker as ob
from reference_impl.offsets import records as rec

TOPICS = ("TopicTest", "TopicB", "%RETRY%please_rename_unique_group_name")
GROUPS = ("please_rename_unique_group_name", "group-b")
QUEUES = 4
QUEUE_IDS = (0, 1, 2, 3, 4)  # 4: beyond the topic's queues
OFFSETS = (0, 1, 2, 5, 17, 32, 100, 1 << 40)
SIZES = (100, 1000, 4000)
MEMORY = ((20_000, 40), (20_000, 10), (1_000_000, 40))  # (totalPhysicalMemorySize, accessMessageInMemoryMaxRatio)
MASTER, SLAVE = "10.0.1.1:10911", "10.0.1.2:10911"
BASE_NOW = 1_000_000


def pick(draw: st.DrawFn, options: list | tuple) -> object:
    return draw(st.sampled_from(tuple(options)))


@st.composite
def stores(draw: st.DrawFn) -> rec.Store:
    """A CommitLog of 0..12 messages spread over the topic's queues."""
    s = rec.Store(cqs=((),) * QUEUES)
    for i in range(draw(st.integers(0, 12))):
        unit = rec.CqUnit(phy=s.max_phy, size=pick(draw, SIZES), msg_id=f"m{i}")
        s = ob.append(s, draw(st.integers(0, QUEUES - 1)), unit)
    return s


def held(b: rec.Broker | None) -> list[tuple[str, str, int, int]]:
    """(topic, group, queue id, offset) of every offset the broker holds."""
    if b is None:
        return []
    out = []
    for key, inner in b.offset_table.items():
        topic, _, group = key.rpartition(ob.TOPIC_GROUP_SEPARATOR)
        out += [(topic, group, q, o) for q, o in inner.items()]
    return out


@st.composite
def tables(draw: st.DrawFn, b: rec.Broker | None = None) -> FrozenMap:
    """A table as a master's answer: 0..3 keys of 1..4 queues; half the keys are the broker's own."""
    out = {}
    mine = held(b)
    for _ in range(draw(st.integers(0, 3))):
        if mine and draw(st.booleans()):
            topic, group, _, _ = pick(draw, mine)
        else:
            topic, group = pick(draw, TOPICS), pick(draw, GROUPS)
        queues = draw(st.lists(st.sampled_from(QUEUE_IDS), min_size=1, max_size=4, unique=True))
        out[ob.key_of(topic, group)] = FrozenMap(sorted((q, pick(draw, OFFSETS)) for q in queues))
    return FrozenMap(sorted(out.items()))


@st.composite
def calls(draw: st.DrawFn, kind: str, b: rec.Broker | None = None) -> object:
    """One call; half the commits and queries name an offset the broker holds (a commit then goes one
    below it, one above it or anywhere)."""
    mine = held(b)
    if kind in ("update_consumer_offset", "query_consumer_offset"):
        topic, group, queue_id, stored = pick(draw, TOPICS), pick(draw, GROUPS), pick(draw, QUEUE_IDS), None
        if mine and draw(st.booleans()):
            topic, group, queue_id, stored = pick(draw, mine)
        if kind == "query_consumer_offset":
            return QueryConsumerOffset(topic=topic, group=group, queue_id=queue_id)
        offset = pick(draw, OFFSETS)
        if stored is not None and draw(st.booleans()):
            offset = max(0, stored + pick(draw, (-1, 1)))
        return UpdateConsumerOffset(topic=topic, group=group, queue_id=queue_id, commit_offset=offset)
    if kind == "get_all_consumer_offset":
        return GetAllConsumerOffset()
    return SyncConsumerOffset(response=draw(tables(b)) if draw(st.integers(0, 4)) else None)


@st.composite
def brokers(draw: st.DrawFn, config: rec.OffsetsConfig, now: int) -> rec.Broker:
    """A master or a slave after 0..8 commits and synchronisations from an empty table."""
    slave = draw(st.booleans())
    b = rec.Broker(id=SLAVE if slave else MASTER, broker_id=1 if slave else 0, store=draw(stores()),
                   master_addr=pick(draw, (MASTER, MASTER, None, SLAVE)) if slave else None)
    for _ in range(draw(st.integers(0, 8))):
        kind = pick(draw, ("update_consumer_offset", "update_consumer_offset", "sync_consumer_offset"))
        b, _, _ = run(Case(config=config, broker=b, now=now, input=draw(calls(kind, b))))
    return b


@st.composite
def cases(draw: st.DrawFn, kinds: tuple[str, ...], features: frozenset) -> Case:
    """A case a driver that handles `kinds` can answer."""
    usable = [k for k in INPUTS if k in kinds]
    assume(usable)
    total, ratio = pick(draw, MEMORY)
    config = rec.OffsetsConfig(total_physical_memory_size=total, access_message_in_memory_max_ratio=ratio)
    now = BASE_NOW + draw(st.integers(0, 100_000))
    b = draw(brokers(config, now))
    return Case(config=config, broker=b, now=now, input=draw(calls(pick(draw, usable), b)))


# --- edge cases ---


def _store(*queue_sizes: tuple[int, ...]) -> rec.Store:
    s = rec.Store(cqs=((),) * QUEUES)
    i = 0
    for q, sizes in enumerate(queue_sizes):
        for size in sizes:
            s = ob.append(s, q, rec.CqUnit(phy=s.max_phy, size=size, msg_id=f"m{i}"))
            i += 1
    return s


def _table(entries: dict) -> FrozenMap:
    return FrozenMap(sorted((ob.key_of(t, g), FrozenMap(sorted(qs.items()))) for (t, g), qs in entries.items()))


def edge_cases() -> Iterator[Case]:
    config = rec.OffsetsConfig()  # memory 8000 bytes
    t, g = TOPICS[0], GROUPS[0]
    stored = _table({(t, g): {0: 17, 1: 5}, (t, GROUPS[1]): {0: 2}})
    master = rec.Broker(id=MASTER, broker_id=0, store=_store((100, 100), (4000, 4000, 4000)), offset_table=stored)
    slave = rec.Broker(id=SLAVE, broker_id=1, store=master.store, offset_table=stored, master_addr=MASTER)
    now = BASE_NOW

    def case(b: rec.Broker, inp: object) -> Case:
        return Case(config=config, broker=b, now=now, input=inp)

    yield case(master, UpdateConsumerOffset(topic=t, group=g, queue_id=0, commit_offset=32))  # forward
    yield case(master, UpdateConsumerOffset(topic=t, group=g, queue_id=0, commit_offset=2))  # backward: stored
    yield case(master, UpdateConsumerOffset(topic=TOPICS[1], group=g, queue_id=3, commit_offset=0))  # a new key
    yield case(slave, UpdateConsumerOffset(topic=t, group=g, queue_id=1, commit_offset=1))  # a slave takes it too
    yield case(master, QueryConsumerOffset(topic=t, group=g, queue_id=1))  # stored: SUCCESS 5
    yield case(master, QueryConsumerOffset(topic=t, group=g, queue_id=2))  # none, empty queue: SUCCESS 0
    yield case(master.evolve(store=_store((4000,) * 3, (100,))), QueryConsumerOffset(topic=t, group=GROUPS[1],
                                                                                     queue_id=1))  # in memory: 0
    big = master.evolve(store=_store((100,), (4000,) * 3))
    yield case(big, QueryConsumerOffset(topic=t, group=GROUPS[1], queue_id=1))  # in disk: QUERY_NOT_FOUND
    yield case(master, QueryConsumerOffset(topic=t, group=g, queue_id=4))  # no such queue: SUCCESS 0
    yield case(master, GetAllConsumerOffset())
    yield case(rec.Broker(id=MASTER, broker_id=0, store=_store()), GetAllConsumerOffset())  # an empty table
    answer = _table({(t, g): {0: 3}, (TOPICS[1], g): {0: 9}})
    yield case(slave, SyncConsumerOffset(response=answer))  # a lower offset replaces; (t, group-b) stays
    yield case(slave, SyncConsumerOffset(response=None))  # the request failed: nothing changes
    yield case(slave.evolve(master_addr=None), SyncConsumerOffset(response=answer))  # no master: no request
    yield case(slave.evolve(master_addr=SLAVE), SyncConsumerOffset(response=answer))  # itself: no request
    yield case(slave, SyncConsumerOffset(response=FrozenMap()))  # an empty answer: persisted all the same
