"""Branch-level unit tests of the offsets reference: brokers (ConsumerOffsetManager, SlaveSynchronize,
getMessage, PullMessageProcessor, ConsumerManageProcessor), clients (findBrokerAddressInSubscribe,
PullAPIWrapper, RemoteBrokerOffsetStore, rebalance) and the route source."""

import pytest

from reference_impl import core
from reference_impl.core import network as net_mod
from reference_impl.core.network import Send
from reference_impl.core.state import FrozenMap
from reference_impl.offsets import broker as ob
from reference_impl.offsets import client as oc
from reference_impl.offsets import ghost as gh
from reference_impl.offsets.records import (
    ConsumerOffsetSerializeWrapper,
    GetAllConsumerOffset,
    GetMessageStatus,
    GetRouteInfo,
    OffsetCommitted,
    OffsetQueried,
    OffsetRead,
    OffsetsConfig,
    PullMessage,
    PullResponse,
    PullSent,
    PullState,
    QueryConsumerOffset,
    QueryConsumerOffsetResponse,
    RegisterBroker,
    RegisterBrokerResult,
    RouteData,
    SendMessage,
    UpdateConsumerOffset,
)
from reference_impl.offsets.world import make_config
from reference_impl.rocketmq import ResponseCode

C = OffsetsConfig()
KEY = ob.key_of()


def broker(broker_id=0, messages=0, size=100, queues=1):
    b = ob.boot(C, "n0" if broker_id == 0 else "n1", broker_id, 0)
    m = ob.boot(C, "n0", 0, 0)
    for k in range(messages):
        m, _, _ = ob.put_message(C, m, SendMessage(msg_id=f"m{k}", queue_id=k % queues, size=size))
    return b.evolve(store=m.store)


def pull(b, offset, c=C, commit=-1):
    req = PullMessage(group="g", topic="T", queue_id=0, queue_offset=offset, max_msg_nums=c.pull_batch_size,
                      commit_offset=max(commit, 0), has_commit_offset=commit >= 0)
    return ob.process_pull(c, b, req)


# --- ConsumerOffsetManager ---


def test_commit_offset_accepts_a_lower_offset_and_returns_the_old_one():
    t, old = ob.commit_offset(FrozenMap(), KEY, 0, 10)
    assert old == -1 and ob.query_offset(t, KEY, 0) == 10
    t, old = ob.commit_offset(t, KEY, 0, 4)
    assert old == 10 and ob.query_offset(t, KEY, 0) == 4
    assert ob.query_offset(t, KEY, 1) == -1 and ob.query_offset(t, "other@g", 0) == -1


def test_put_all_replaces_each_key_whole_and_keeps_keys_the_master_lacks():
    slave = FrozenMap({KEY: FrozenMap({0: 50, 1: 60}), "X@g": FrozenMap({0: 7})})
    master = FrozenMap({KEY: FrozenMap({0: 10})})
    got = ob.put_all(slave, master)
    assert got[KEY] == FrozenMap({0: 10})  # queue 1 is gone, queue 0 went back from 50 to 10
    assert got["X@g"] == FrozenMap({0: 7})
    assert ob.put_all(slave, FrozenMap()) is slave


def test_crash_loses_unpersisted_commits_and_restart_loads_the_file():
    b = ob.boot(C, "n0", 0, 0)
    b, _ = ob.update_consumer_offset(b, UpdateConsumerOffset(group=ob.GROUP, topic=ob.TOPIC, queue_id=0,
                                                             commit_offset=5))
    b, _ = ob.on_tick(C, b, C.flush_consumer_offset_initial_ms)  # the first persist, at 10 s
    assert b.persisted[KEY][0] == 5 and b.next_persist_ms == 15_000
    b, _ = ob.update_consumer_offset(b, UpdateConsumerOffset(group=ob.GROUP, topic=ob.TOPIC, queue_id=0,
                                                             commit_offset=9))
    b = ob.start(C, ob.crash(b, "process"), 12_000)
    assert b.offset_table[KEY][0] == 5


# --- SlaveSynchronize and registration ---


def test_sync_all_needs_a_master_addr_other_than_itself():
    s = ob.boot(C, "n1", 1, 0)
    assert s.next_sync_ms == 3000 and s.master_addr is None
    s2, outs = ob.sync_all(C, s, 3000)
    assert outs == () and s2.next_sync_ms == 13_000
    _, outs = ob.sync_all(C, s.evolve(master_addr="n1"), 3000)
    assert outs == ()
    _, outs = ob.sync_all(C, s.evolve(master_addr="n0"), 3000)
    assert [o.msg for o in outs] == [GetAllConsumerOffset()] and outs[0].dst == "n0"


def test_sync_result_is_put_all_then_persist_and_a_failure_changes_nothing():
    s = ob.boot(C, "n1", 1, 0).evolve(offset_table=FrozenMap({KEY: FrozenMap({0: 40})}))
    assert ob.on_all_consumer_offset(s, "n0", None) == (s, ())
    s2, outs = ob.on_all_consumer_offset(s, "n0", ConsumerOffsetSerializeWrapper(
        offset_table=FrozenMap({KEY: FrozenMap({0: 12})})))
    assert s2.offset_table[KEY][0] == 12 and s2.persisted == s2.offset_table and outs[0].before == s.offset_table


def test_register_result_sets_master_addr_on_a_slave_only():
    s = ob.boot(C, "n1", 1, 0)
    s, outs = ob.on_register_result(s, RegisterBrokerResult(master_addr="n0"))
    assert s.master_addr == "n0" and outs
    assert ob.on_register_result(s, None)[0].master_addr == "n0"  # a failed registration changes nothing
    assert ob.on_register_result(s, RegisterBrokerResult(master_addr=None))[0].master_addr is None
    m = ob.boot(C, "n0", 0, 0)
    assert ob.on_register_result(m, RegisterBrokerResult(master_addr="x"))[0].master_addr is None


# --- DefaultMessageStore#getMessage ---


@pytest.mark.parametrize("broker_id,offset,status,next_begin", [
    (0, 3, GetMessageStatus.OFFSET_OVERFLOW_ONE, 3),
    (0, 9, GetMessageStatus.OFFSET_OVERFLOW_BADLY, 3),  # the master corrects to its max offset
    (1, 9, GetMessageStatus.OFFSET_OVERFLOW_BADLY, 9),  # a slave without offsetCheckInSlave does not
    (0, 1, GetMessageStatus.FOUND, 3),
])
def test_get_message_statuses(broker_id, offset, status, next_begin):
    b = broker(broker_id, messages=3)
    got = ob.get_message(C, b, 0, offset, 32)
    assert got[0] is status and got[2] == next_begin and got[4] == 3


def test_get_message_empty_queue_and_unknown_queue():
    b = broker(0)
    assert ob.get_message(C, b, 0, 5, 32)[0:3] == (GetMessageStatus.NO_MESSAGE_IN_QUEUE, (), 0)
    assert ob.get_message(C, b, 7, 5, 32)[0] is GetMessageStatus.NO_MATCHED_LOGIC_QUEUE


def test_get_message_batch_limits_in_memory_and_in_disk():
    big = OffsetsConfig(total_physical_memory_size=1 << 30)
    b = broker(0, messages=50)
    assert len(ob.get_message(big, b, 0, 0, 100)[1]) == 32  # maxTransferCountOnMessageInMemory
    assert len(ob.get_message(big, b, 0, 0, 5)[1]) == 5  # maxMsgNums
    tiny = OffsetsConfig(total_physical_memory_size=10)  # everything is "in disk"
    assert len(ob.get_message(tiny, b, 0, 0, 100)[1]) == 8  # maxTransferCountOnMessageInDisk


def test_suggest_pulling_from_slave_when_the_backlog_exceeds_memory():
    b = broker(0, messages=200, size=100)  # 20,000 bytes; memory = 40 % of 20,000 = 8,000
    assert ob.get_message(C, b, 0, 0, 32)[5] is True  # diff = 20,000 - 3,200 > 8,000
    assert ob.get_message(C, b, 0, 150, 32)[5] is False  # diff = 20,000 - 18,100 <= 8,000


def test_is_the_batch_full_never_with_an_empty_batch():
    assert not ob.is_the_batch_full(C, 10**9, 1, 0, 0, True)
    assert ob.is_the_batch_full(C, 1, 1, 10, 1, False)


# --- PullMessageProcessor ---


@pytest.mark.parametrize("slave_read,from_slave,expected", [(False, False, 0), (False, True, 0),
                                                             (True, False, 0), (True, True, 1)])
def test_suggest_which_broker_id(slave_read, from_slave, expected):
    c = OffsetsConfig(slave_read_enable=slave_read)
    for broker_id in (0, 1):
        suggest, _ = ob.suggest_which_broker_id(c, broker(broker_id), from_slave)
        assert suggest == expected


def test_slave_without_slave_read_still_serves_the_pull_retry_immediately_is_overwritten():
    s = broker(1, messages=5)
    assert ob.suggest_which_broker_id(C, s, False)[1] is ResponseCode.PULL_RETRY_IMMEDIATELY
    _, resp, _ = pull(s, 0)
    assert resp.code is ResponseCode.SUCCESS and len(resp.msgs) == 5 and resp.suggest_which_broker_id == 0


def test_offset_moved_on_a_slave_becomes_retry_immediately_with_the_group_broker_id():
    c = OffsetsConfig(slave_read_enable=True, sub_broker_id=1)
    _, resp, _ = pull(broker(1, messages=2), 9, c)
    assert resp.code is ResponseCode.PULL_RETRY_IMMEDIATELY and resp.suggest_which_broker_id == 1
    _, resp, _ = pull(broker(0, messages=2), 9, c)
    assert resp.code is ResponseCode.PULL_OFFSET_MOVED and resp.next_begin_offset == 2


def test_empty_queue_codes_depend_on_the_request_offset():
    assert pull(broker(0), 0)[1].code is ResponseCode.PULL_NOT_FOUND
    assert pull(broker(0), 4)[1].code is ResponseCode.PULL_OFFSET_MOVED


def test_only_a_master_stores_the_offset_a_pull_carries():
    m, _, outs = pull(broker(0, messages=3), 0, commit=2)
    assert m.offset_table["T@g"][0] == 2 and outs[-1].stored_commit == 2
    s, _, outs = pull(broker(1, messages=3), 0, commit=2)
    assert not s.offset_table and outs[-1].stored_commit == -1


# --- ConsumerManageProcessor ---


def test_a_slave_accepts_update_consumer_offset():
    s, outs = ob.on_message(broker(1), UpdateConsumerOffset(group="g", topic="T", queue_id=0, commit_offset=3))
    assert s.offset_table["T@g"][0] == 3 and outs[0].old == -1


def test_query_consumer_offset_branches():
    q = QueryConsumerOffset(group=ob.GROUP, topic=ob.TOPIC, queue_id=0)
    b = broker(0, messages=3)
    assert ob.query_consumer_offset(C, b, q) == QueryConsumerOffsetResponse(code=ResponseCode.SUCCESS, offset=0)
    far = broker(0, messages=200)  # the first message is "in disk"
    assert ob.query_consumer_offset(C, far, q).code is ResponseCode.QUERY_NOT_FOUND
    b2, _ = ob.update_consumer_offset(far, UpdateConsumerOffset(group=ob.GROUP, topic=ob.TOPIC, queue_id=0,
                                                                commit_offset=17))
    assert ob.query_consumer_offset(C, b2, q).offset == 17


def test_a_slave_refuses_sends():
    assert ob.put_message(C, broker(1), SendMessage(msg_id="m", queue_id=0, size=1))[1].code is \
        ResponseCode.SERVICE_NOT_AVAILABLE


def test_slave_appends_only_what_follows_its_max_offset():
    m = broker(0, messages=3)
    s = broker(1)
    batch = ob.ha_serve(m, ob.HaTransfer(from_phy=0))
    s = ob.on_ha_batch(C, s, batch, 0)
    assert s.store == m.store
    assert ob.on_ha_batch(C, s, batch, 0).store == m.store  # a repeat appends nothing
    assert ob.ha_serve(m, ob.HaTransfer(from_phy=m.store.max_phy)).units == ()


# --- client: findBrokerAddressInSubscribe, PullAPIWrapper, RemoteBrokerOffsetStore ---


def test_find_broker_address_in_subscribe_branches():
    both = FrozenMap({0: "m", 1: "s"})
    assert oc.find_broker_address_in_subscribe(both, 0, True) == ("m", False)
    assert oc.find_broker_address_in_subscribe(both, 1, False) == ("s", True)
    slave_only = FrozenMap({1: "s"})
    assert oc.find_broker_address_in_subscribe(slave_only, 0, True) is None
    assert oc.find_broker_address_in_subscribe(slave_only, 0, False) == ("s", True)  # the first entry
    assert oc.find_broker_address_in_subscribe(FrozenMap({0: "m", 2: "s2"}), 1, True) == ("s2", True)  # id + 1
    assert oc.find_broker_address_in_subscribe(FrozenMap({0: "m"}), 3, False) == ("m", False)
    assert oc.find_broker_address_in_subscribe(FrozenMap(), 0, False) is None


def consumer(addrs=None, **kw):
    n = oc.boot_consumer(C, "c0", 0).evolve(broker_addrs=FrozenMap(addrs if addrs is not None else {0: "n0", 1: "n1"}))
    return n.evolve(**kw)


def test_pull_follows_the_suggestion_and_carries_the_offset_only_to_a_master():
    n = consumer(assigned=FrozenMap({0: PullState(next_offset=5, next_pull_ms=0)}), offset_table=FrozenMap({0: 5}))
    n1, outs = oc.pull_kernel_impl(C, n, 0, 0)
    assert outs[0] == PullSent(queue_id=0, offset=5, broker_id=0, addr="n0", commit=True)
    n = oc.update_pull_from_which_node(n, 0, 1)
    _, outs = oc.pull_kernel_impl(C, n, 0, 0)
    assert outs[0] == PullSent(queue_id=0, offset=5, broker_id=1, addr="n1", commit=False)
    assert not outs[1].msg.has_commit_offset


def test_pull_with_no_broker_waits_and_refreshes_the_route():
    n = consumer({}, assigned=FrozenMap({0: PullState(next_offset=0, next_pull_ms=0)}), next_route_ms=30_000)
    n2, outs = oc.pull_kernel_impl(C, n, 0, 100)
    assert outs[0].addr is None and n2.assigned[0].next_pull_ms == 3100 and n2.next_route_ms == 100


def test_pull_response_records_the_suggestion_and_corrects_the_offset_when_idle():
    n = consumer(assigned=FrozenMap({0: PullState(next_offset=5, in_flight=True)}), offset_table=FrozenMap({0: 2}))
    resp = PullResponse(code=ResponseCode.PULL_NOT_FOUND, msgs=(), next_begin_offset=5, min_offset=0, max_offset=5,
                        suggest_which_broker_id=1)
    n2, _ = oc.on_pull_response(C, n, 0, 5, resp, 10)
    assert n2.pull_from_which_node[0] == 1 and n2.offset_table[0] == 5 and n2.assigned[0].next_pull_ms == 210
    assert oc.on_pull_response(C, n, 0, 4, resp, 10) == (n, ())  # a stale response


def test_offset_illegal_commits_the_new_offset_and_drops_the_queue():
    n = consumer(assigned=FrozenMap({0: PullState(next_offset=9, in_flight=True)}))
    resp = PullResponse(code=ResponseCode.PULL_OFFSET_MOVED, msgs=(), next_begin_offset=3, min_offset=0,
                        max_offset=3, suggest_which_broker_id=0)
    n2, outs = oc.on_pull_response(C, n, 0, 9, resp, 10)
    assert 0 not in n2.assigned and any(isinstance(o, Send) and o.msg.commit_offset == 3 for o in outs)


def test_consume_one_advances_the_offset_to_the_next_message():
    n = consumer(assigned=FrozenMap({0: PullState(next_offset=3, process=((1, "a"), (2, "b")))}))
    n, outs = oc.consume_one(C, n, 0)
    assert n.offset_table[0] == 2 and outs[0].queue_offset == 1
    n, _ = oc.consume_one(C, n, 10)
    assert n.offset_table[0] == 3 and n.next_consume_ms == -1


def test_commit_goes_to_the_master_else_the_first_address_else_nowhere():
    _, outs = oc.update_consume_offset_to_broker(C, consumer({0: "n0", 1: "n1"}), 0, 7, 0)
    assert outs[0].addr == "n0"
    for addrs, want in (({1: "n1"}, "n1"), ({}, None)):  # after the route refresh, which changed nothing
        _, outs = oc.update_consume_offset_to_broker(C, consumer(addrs), 0, 7, 0, refreshed=True)
        assert outs[0].addr == want


def test_update_consume_offset_to_broker_refreshes_the_route_when_the_master_is_not_found():
    """RemoteBrokerOffsetStore#updateConsumeOffsetToBroker, `null == findBrokerResult` after the
    onlyThisBroker lookup: updateTopicRouteInfoFromNameServer(topic) on the caller's thread, then the
    lookup without onlyThisBroker in the refreshed table. A real 4.9.4 consumer whose master was down
    asked the route source before each commit (property_tests/impl_logs/rocketmq-4.9.4/offsets/
    master_crash_restart.jsonl, t_ms=35000), and once the master had re-registered, its commit went
    to the master, not to the slave its cached route still named (t_ms=45000)."""
    n = consumer({1: "n1"})
    n2, outs = oc.update_consume_offset_to_broker(C, n, 0, 7, 0)
    assert [type(o.msg) for o in outs] == [GetRouteInfo] and outs[0].dst == C.namesrv
    assert n2.next_route_ms == n.next_route_ms and not n2.route_in_flight  # not the periodic poll
    back = RouteData(broker_addrs=FrozenMap({0: "n0", 1: "n1"}))
    n3, outs = oc.consumer_response(C, n2, outs[0].ctx, C.namesrv, back, 1)
    assert n3.broker_addrs == back.broker_addrs
    sends = [o for o in outs if isinstance(o, Send)]
    assert [(s.dst, s.msg.commit_offset) for s in sends] == [("n0", 7)]
    # the refresh failed (or TOPIC_NOT_EXIST): the commit goes to the first address of the old table
    ctx = oc.route_then(C, n2, ("commit", (0,), 7))[0].ctx
    n3, outs = oc.consumer_response(C, n2, ctx, C.namesrv, None, 1)
    assert [(s.dst, s.msg.commit_offset) for s in outs if isinstance(s, Send)] == [("n1", 7)]


def test_persist_all_refreshes_the_route_once_when_the_refresh_brings_the_master_back():
    """RemoteBrokerOffsetStore#persistAll calls updateConsumeOffsetToBroker queue after queue on one
    thread: the first refresh that finds the master serves every later queue (one route request), one
    that does not is made again by the next queue; each later queue's offset is read when its turn comes."""
    n = consumer({1: "n1"}, assigned=FrozenMap({0: PullState(next_offset=5), 1: PullState(next_offset=9)}),
                 offset_table=FrozenMap({0: 5, 1: 9}))
    n2, outs = oc.persist_all(C, n, 0)
    assert [type(o.msg) for o in outs] == [GetRouteInfo]
    ctx = outs[0].ctx
    back = RouteData(broker_addrs=FrozenMap({0: "n0", 1: "n1"}))
    n3 = n2.evolve(offset_table=n2.offset_table.set(1, 10))  # consumed meanwhile
    _, outs = oc.consumer_response(C, n3, ctx, C.namesrv, back, 1)
    assert [(o.dst, o.msg.queue_id, o.msg.commit_offset) for o in outs if isinstance(o, Send)] == [("n0", 0, 5), ("n0", 1, 10)]
    _, outs = oc.consumer_response(C, n3, ctx, C.namesrv, RouteData(broker_addrs=FrozenMap({1: "n1"})), 1)
    # still no master: queue 0 goes to the slave, queue 1 refreshes again
    assert [(o.dst, type(o.msg).__name__) for o in outs if isinstance(o, Send)] == [("n1", "UpdateConsumerOffset"), (C.namesrv, "GetRouteInfo")]


def test_fetch_consume_offset_from_broker_refreshes_the_route_when_the_master_is_not_found():
    """RemoteBrokerOffsetStore#fetchConsumeOffsetFromBroker, the same branch: the query waits for the
    refresh; a queue dropped meanwhile is not queried."""
    n = consumer({1: "n1"}, assigned=FrozenMap({0: PullState()}))
    n2, outs = oc.fetch_consume_offset_from_broker(C, n, 0, 0)
    assert [type(o.msg) for o in outs] == [GetRouteInfo]
    ctx = outs[0].ctx
    _, outs = oc.consumer_response(C, n2, ctx, C.namesrv, RouteData(broker_addrs=FrozenMap({0: "n0", 1: "n1"})), 1)
    assert [(o.dst, type(o.msg)) for o in outs if isinstance(o, Send)] == [("n0", QueryConsumerOffset)]
    _, outs = oc.consumer_response(C, n2.evolve(assigned=FrozenMap()), ctx, C.namesrv, None, 1)
    assert not [o for o in outs if isinstance(o, Send)]


def test_read_offset_outcomes_and_compute_pull_from_where():
    n = consumer(assigned=FrozenMap({0: PullState()}))
    got, _ = oc.on_offset_answer(n, 0, "n0", QueryConsumerOffsetResponse(code=ResponseCode.SUCCESS, offset=7), 0)
    assert got.assigned[0].next_offset == 7 and got.offset_table[0] == 7
    got, _ = oc.on_offset_answer(n, 0, "n0", QueryConsumerOffsetResponse(code=ResponseCode.QUERY_NOT_FOUND), 0)
    assert got.assigned[0].next_offset == 0  # -1 -> CONSUME_FROM_FIRST_OFFSET -> 0
    got, outs = oc.on_offset_answer(n, 0, "n0", None, 0)
    assert 0 not in got.assigned and outs[0].answer == -2


@pytest.mark.parametrize("queues,cids,expected", [
    (4, ("a", "b"), {"a": (0, 1), "b": (2, 3)}),
    (3, ("a", "b"), {"a": (0, 1), "b": (2,)}),
    (2, ("a", "b", "c"), {"a": (0,), "b": (1,), "c": ()}),
])
def test_allocate_averagely(queues, cids, expected):
    assert {c: oc.allocate_averagely(queues, cids, c) for c in cids} == expected


def test_rebalance_persists_and_forgets_a_lost_queue_and_reads_a_gained_one():
    n = consumer(assigned=FrozenMap({0: PullState(next_offset=4)}), offset_table=FrozenMap({0: 4}))
    n2, outs = oc.do_rebalance(C, n, ("c0", "c1"), 0)  # c0 keeps queue 0
    assert n2 == n and outs == ()
    n3, outs = oc.do_rebalance(C, n.evolve(id="c1"), ("c0", "c1"), 0)  # now queue 1 is ours and 0 is not
    assert set(n3.assigned) == {1} and 0 not in n3.offset_table
    assert [type(o.msg).__name__ for o in outs if isinstance(o, Send)] == ["UpdateConsumerOffset",
                                                                           "QueryConsumerOffset"]


def test_persist_all_commits_assigned_queues_and_forgets_the_rest():
    n = consumer(assigned=FrozenMap({0: PullState(next_offset=1)}), offset_table=FrozenMap({0: 1, 1: 9}))
    n2, outs = oc.persist_all(C, n, 10_000)
    assert dict(n2.offset_table) == {0: 1} and n2.next_persist_ms == 15_000
    assert [o.msg.commit_offset for o in outs if isinstance(o, Send)] == [1]


# --- the route source ---


def test_route_source_gives_a_slave_the_master_while_registered_and_expires_silent_brokers():
    rs = oc.boot_route_source("ns0", 0)
    rs, r = oc.register_broker(rs, "n1", RegisterBroker(broker_id=1), 0)
    assert r.master_addr is None
    rs, _ = oc.register_broker(rs, "n0", RegisterBroker(broker_id=0), 10)
    rs, r = oc.register_broker(rs, "n1", RegisterBroker(broker_id=1), 20)
    assert r.master_addr == "n0" and dict(oc.pickup_topic_route_data(rs).broker_addrs) == {0: "n0", 1: "n1"}
    rs = oc.scan_not_active_broker(rs, 120_015)
    assert set(rs.live) == {"n1"}
    assert oc.on_channel_destroy(rs, "n1").live == FrozenMap()


def test_consumer_keeps_its_route_when_the_fetch_fails_or_is_empty():
    n = consumer(route_in_flight=True)
    assert oc.consumer_response(C, n, ("route", 0), "ns0", None, 0)[0].broker_addrs == n.broker_addrs
    empty = oc.pickup_topic_route_data(oc.boot_route_source("ns0", 0))
    assert oc.consumer_response(C, n, ("route", 0), "ns0", empty, 0)[0].broker_addrs == n.broker_addrs


# --- the ghost: the evidence of the rebalance race (OFF-2 `commit-after-read`) ---


def _race(commit_by="c0", committer_took=True, commit_first=False, resumed=36, reader_restarts=False):
    """n0 holds 36 for queue 0; c1 asks for it; `commit_by` commits 37 (after the answer unless
    `commit_first`); c1 resumes at `resumed`. Returns the regression the ghost records."""
    w = core.init(make_config(2, {}))
    ids = w.cfg.ids
    n0, c1 = ids.index("n0"), ids.index("c1")

    def hold(w, v):
        return core.set_node(w, n0, w.nodes[n0].evolve(offset_table=FrozenMap({KEY: FrozenMap({0: v})})))

    def commit(g, w, v, old, client):
        return hold(w, v), gh.update(g, hold(w, v), n0, OffsetCommitted(group=ob.GROUP, queue_id=0, offset=v, old=old,
                                                                        via="update", client=client))

    g = w.ghost
    if committer_took:
        g = g.evolve(resumed=g.resumed.set((commit_by, 0), (0, 0)))
    w, g = commit(g, w, 36, -1, "c1")
    if commit_first:
        w, g = commit(g, w, 37, 36, commit_by)
    net = net_mod.send(w.net, w.now, c1, n0, QueryConsumerOffset(group=ob.GROUP, topic=ob.TOPIC, queue_id=0), (),
                       5000)
    w = w.evolve(net=net)
    g = gh.update(g, w, n0, OffsetQueried(group=ob.GROUP, queue_id=0, offset=36, rpc=net.next_id - 1))
    if not commit_first:
        w, g = commit(g, w, 37, 36, commit_by)
    if reader_restarts:
        g = gh.update(g, w, -1, core.Restart(node=c1))
    g = gh.update(g, w, c1, OffsetRead(queue_id=0, offset=resumed, addr="n0", answer=36))
    assert len(g.regressions) == 1 and g.regressions[0].held == 37
    return g.regressions[0]


def test_commit_after_read_needs_another_owners_commit_after_an_honest_answer():
    r = _race()
    assert r.code == "commit-after-read" and "c0, which had taken the queue before, committed 37 to n0" in r.cause
    assert _race(commit_by="c1").code is None  # the reader's own commit
    assert _race(committer_took=False).code is None  # a consumer that never had the queue
    assert _race(commit_first=True).code is None  # n0 answered 36 while it held 37: it lost a commit
    assert _race(resumed=35).code is None  # c1 resumed below what n0 answered
    assert _race(reader_restarts=True).code is None  # the answer was to c1's previous process
