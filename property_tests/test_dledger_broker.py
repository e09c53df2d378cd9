"""RocketMQ on DLedger: one test per branch of DLedgerCommitLog, DLedgerRoleChangeHandler, the
broker's put and pull paths, the name server's registration and the producer's retries."""

from __future__ import annotations

import pytest

from property_tests.support.dledger import node_cfg
from reference_impl import rocketmq
from reference_impl.core.network import Respond, Send
from reference_impl.core.state import FrozenMap
from reference_impl.dledger_commitlog import broker as bk
from reference_impl.dledger_commitlog import clients as cc
from reference_impl.dledger_commitlog import commitlog as cl
from reference_impl.dledger_log import entry_pusher as ep
from reference_impl.dledger_log import store as st
from reference_impl.election import member_state as mstate
from reference_impl.election import records as el
from reference_impl.election.records import Code, Role

CFG = node_cfg()
BC = bk.BrokerConfig(mapped_file_size_commit_log=4096)


def broker(self_id: str = "n0", leader: str | None = "n0", store: cl.MessageStore | None = None) -> bk.Broker:
    return bk.boot(CFG, BC, self_id, 0, store=store, forced_leader=leader)


def send(b: bk.Broker, key: str = "k", queue: int = 0, now: int = 0):
    return bk.handle_send(CFG, b, bk.SendMessageRequest(key=key, topic="T", queue_id=queue, length=100), 7, now)


# --- DLedgerCommitLog ---


@pytest.mark.parametrize(("code", "status"), [
    (Code.SUCCESS, "PUT_OK"), (Code.NOT_LEADER, "SERVICE_NOT_AVAILABLE"), (Code.DISK_FULL, "SERVICE_NOT_AVAILABLE"),
    (Code.INCONSISTENT_LEADER, "SERVICE_NOT_AVAILABLE"), (Code.LEADER_NOT_READY, "SERVICE_NOT_AVAILABLE"),
    (Code.WAIT_QUORUM_ACK_TIMEOUT, "OS_PAGECACHE_BUSY"), (Code.LEADER_PENDING_FULL, "OS_PAGECACHE_BUSY"),
    (Code.TERM_CHANGED, "UNKNOWN_ERROR")])
def test_put_status_of_each_dledger_code(code: Code, status: str) -> None:
    assert cl.put_status(code).value == status


def test_max_offset_is_the_committed_position() -> None:
    s = st.empty()
    assert cl.get_max_offset(s) == 0
    assert cl.get_max_offset(s.evolve(min_pos=8192)) == 8192
    assert cl.get_max_offset(s.evolve(min_pos=8192, committed_pos=9000)) == 9000


def test_the_append_hook_writes_pos_plus_48() -> None:
    e = st.Entry(index=0, term=0, pos=1000, size=148, body=cl.Message(key="k", topic="T", queue_id=0, length=100))
    assert cl.append_hook(e).body.phys_offset == 1048


def test_upgrade_seals_the_old_log_and_starts_dledger_at_the_next_file() -> None:
    msgs = tuple(cl.Message(key=f"o{i}", topic="T", queue_id=0, queue_offset=i, length=1000) for i in range(5))
    old = cl.build_old_commitlog(msgs, 4096)
    assert [m.phys_offset for m in old.messages] == [0, 1000, 2000, 3000, 4096]  # a 5th: 4000 + 1000 + 8 > 4096
    ms = cl.MessageStore(old=old)
    for m in old.messages:
        ms = cl.put_unit(ms, m)
    s, ms = cl.recover(st.empty(), ms, 4096)
    assert (ms.divided_offset, ms.old.wrote_pos, ms.old.sealed, s.min_pos) == (8192, 8192, True, 8192)
    assert ms.delete_dledger_disabled and cl.get_max_offset(s) == 8192 and cl.dispatch_behind_bytes(s, ms) == 0
    assert ms.topic_queue_table == FrozenMap({0: 5})
    assert cl.get_message(ms, s, 4096).key == "o4"


def test_reopened_dledger_keeps_its_divided_offset_and_drops_dirty_units() -> None:
    s = st.empty(min_pos=8192)
    leader = mstate.Member(self_id="n0", role=Role.LEADER, leader_id="n0")
    for i in range(3):
        s, _ = st.append_as_leader(CFG.log, s, leader, cl.Message(key=f"d{i}", topic="T", queue_id=0, queue_offset=i,
                                                                  length=100), 0, cl.append_hook)
    units = tuple((e.pos + 48, 100) for e in s.entries)
    ms = cl.MessageStore(consume_queues=FrozenMap({0: units}))
    short = s.evolve(entries=s.entries[:2])
    _, ms2 = cl.recover(short, ms, 4096)
    assert ms2.divided_offset == 8192 and ms2.consume_queues[0] == units[:2]


def test_reput_dispatches_the_committed_prefix_only() -> None:
    b = broker()
    for i in range(3):
        b, _, _ = send(b, key=f"k{i}")
    s = b.node.store
    assert cl.reput_wake_at(s, b.store) == -1  # nothing committed yet
    s = st.update_committed_index(CFG.log, s, 0, 0, 1, 0)
    ms = cl.do_reput(s, b.store)
    assert [u[0] for u in ms.consume_queues[0]] == [e.pos + 48 for e in s.entries[:2]]
    assert ms.reput_from == s.committed_pos and cl.dispatch_behind_bytes(s, ms) == 0


def test_consume_queue_skips_what_is_already_built() -> None:
    m = cl.Message(key="a", topic="T", queue_id=0, queue_offset=0, phys_offset=48, length=100)
    ms = cl.put_unit(cl.MessageStore(), m)
    assert cl.put_unit(ms, m) is ms
    assert cl.put_unit(ms, m.evolve(phys_offset=500, queue_offset=0)).consume_queues[0][-1] == (500, 100)


def test_delete_expired_file_keeps_dledger_deletion_off_while_old_files_remain() -> None:
    old = cl.build_old_commitlog(tuple(cl.Message(key=f"o{i}", topic="T", queue_id=0, length=1000)
                                       for i in range(5)), 4096)
    ms = cl.MessageStore(old=old.evolve(sealed=True, wrote_pos=8192))
    ms, n = cl.delete_expired_file(ms)
    assert (n, ms.old.min_offset, ms.delete_dledger_disabled) == (1, 4096, True)
    ms, n = cl.delete_expired_file(ms)
    assert (n, ms.old.messages, ms.delete_dledger_disabled) == (1, (), True)
    ms, n = cl.delete_expired_file(ms)
    assert (n, ms.delete_dledger_disabled) == (2 ** 31 - 1, False)


# --- the put path ---


def test_a_slave_refuses_puts() -> None:
    b = broker(leader="n1").evolve(broker_role=rocketmq.BrokerRole.SLAVE)
    _, resp, outs = send(b)
    assert resp.code is rocketmq.ResponseCode.SERVICE_NOT_AVAILABLE
    assert [o.status for o in outs if isinstance(o, bk.PutResult)] == [rocketmq.PutMessageStatus.SERVICE_NOT_AVAILABLE]


def test_a_rejected_append_is_os_pagecache_busy_at_once() -> None:
    b = broker(leader="n1")  # ASYNC_MASTER as configured, but DLedger says NOT_LEADER
    b2, resp, _ = send(b)
    assert resp.code is rocketmq.ResponseCode.SYSTEM_ERROR and b2.store.topic_queue_table == b.store.topic_queue_table


def test_the_queue_offset_is_reserved_before_the_quorum() -> None:
    b, resp, outs = send(broker())
    assert resp is None and b.store.topic_queue_table == FrozenMap({0: 1})
    assert [type(o).__name__ for o in outs] == ["Appended"]
    b, _, _ = send(b, key="k2")
    assert b.node.store.entries[1].body.queue_offset == 1


def test_a_completed_future_answers_the_send() -> None:
    b, _, _ = send(broker())
    r = ep.AppendResult(code=Code.WAIT_QUORUM_ACK_TIMEOUT, index=0, term=0, pos=-1,
                        ref=("put", 7, b.node.store.entries[0].body), future_pos=0)
    outs = bk.answer_puts(b, (r,))
    resp = next(o for o in outs if isinstance(o, Respond)).msg
    put = next(o for o in outs if isinstance(o, bk.PutResult))
    assert resp.code is rocketmq.ResponseCode.SYSTEM_ERROR and (put.status, put.offset) == (
        rocketmq.PutMessageStatus.OS_PAGECACHE_BUSY, 48)
    assert b.node.store.end_index == 0  # the entry stays in the log


def test_pull_reads_units_at_their_offsets() -> None:
    b = broker()
    for i in range(3):
        b, _, _ = send(b, key=f"k{i}")
    s = st.update_committed_index(CFG.log, b.node.store, 0, 0, 2, 0)
    b = b.evolve(node=b.node.evolve(store=s), store=cl.do_reput(s, b.store))
    resp = bk.handle_pull(BC, b, bk.PullMessageRequest(queue_id=0, offset=1))
    assert [m.key for m in resp.messages] == ["k1", "k2"] and resp.next_begin_offset == 3
    pulled = bk.handle_pull(BC, b, bk.PullMessageRequest(queue_id=0, offset=3))
    assert pulled.code is rocketmq.ResponseCode.PULL_NOT_FOUND
    assert bk.handle_pull(BC, b, bk.PullMessageRequest(queue_id=0, offset=9)).next_begin_offset == 3


# --- DLedgerRoleChangeHandler and BrokerController ---


def role_change(b: bk.Broker, term: int, role: Role) -> bk.Broker:
    return bk.queue_role_changes(b, (el.RoleChanged(term=term, role=role, leader=None),))


@pytest.mark.parametrize(("self_id", "broker_id"), [("n0", 1), ("n1", 2), ("n2", 3)])
def test_follower_changes_to_slave_with_its_dledger_id(self_id: str, broker_id: int) -> None:
    b, outs = bk.run_role_handler(BC, role_change(broker(self_id, leader="n9"), 1, Role.FOLLOWER), 0)
    assert (b.broker_role, b.broker_id) == (rocketmq.BrokerRole.SLAVE, broker_id)
    (reg,) = [o for o in outs if isinstance(o, Send)]
    assert reg.timeout_ms is None and reg.msg.broker_id == broker_id  # registerBrokerAll one-way


def test_candidate_changes_to_slave_only_if_not_slave_already() -> None:
    b, outs = bk.run_role_handler(BC, role_change(broker(), 1, Role.CANDIDATE), 0)
    assert b.broker_role is rocketmq.BrokerRole.SLAVE and outs
    b, outs = bk.run_role_handler(BC, role_change(b, 1, Role.CANDIDATE), 5)
    assert outs == () and not b.role_tasks


def test_leader_waits_for_commit_and_dispatch_before_mastering() -> None:
    b = broker()
    b, _, _ = send(b)
    b = role_change(b, 0, Role.LEADER)
    b, outs = bk.run_role_handler(BC, b, 10)
    assert b.broker_role is rocketmq.BrokerRole.ASYNC_MASTER and b.role_wait_until == 110 and outs == ()
    s = st.update_committed_index(CFG.log, b.node.store, 0, 0, 0, 20)
    b = b.evolve(node=b.node.evolve(store=s))
    b, _ = bk.run_role_handler(BC, b, 110)
    assert b.broker_role is rocketmq.BrokerRole.ASYNC_MASTER  # committed, but not dispatched yet
    b = b.evolve(store=cl.do_reput(s, b.store))
    b, outs = bk.run_role_handler(BC, b, 210)
    assert (b.broker_role, b.broker_id, b.role_tasks) == (rocketmq.BrokerRole.SYNC_MASTER, 0, ())
    assert any(isinstance(o, bk.BecameMaster) for o in outs)


def test_leader_task_gives_up_when_leadership_is_lost() -> None:
    b = role_change(broker(leader="n1"), 3, Role.LEADER)
    b, outs = bk.run_role_handler(BC, b, 0)
    assert b.role_tasks == () and b.broker_role is rocketmq.BrokerRole.ASYNC_MASTER and outs == ()


def test_only_the_periodic_registration_teaches_a_slave_the_master_address() -> None:
    b, _ = bk.run_role_handler(BC, role_change(broker("n1", leader="n0"), 1, Role.FOLLOWER), 0)
    assert b.master_addr is None
    b, _ = bk.on_response(CFG, b, ("register",), "ns0", bk.RegisterBrokerResult(master_addr="n0"), 5)
    assert b.master_addr == "n0"


# --- name server and producer ---


def test_register_broker_switches_an_address_between_ids() -> None:
    ns = cc.NameServer(self_id="ns0", broker_addrs=FrozenMap({0: "n0", 2: "n1"}))
    ns = cc.register_broker(ns, bk.RegisterBroker(broker_name="", broker_id=0, addr="n1"))
    assert ns.broker_addrs == FrozenMap({0: "n1"})
    ns, result = cc.namesrv_on_request(ns, bk.RegisterBroker(broker_name="", broker_id=1, addr="n0"))
    assert result.master_addr == "n1" and ns.broker_addrs == FrozenMap({0: "n1", 1: "n0"})


class W:
    topic, queues, send_interval_ms, message_length = "T", 2, 500, 100


def test_producer_retries_system_error_within_three_attempts_and_3_s() -> None:
    p = cc.Producer(self_id="p0", route=FrozenMap({0: "n0"}), next_poll_ms=99999)
    p, outs = cc.producer_on_tick(W, p, 0)
    assert outs[0].timeout_ms == 3000 and outs[0].msg.queue_id == 0
    busy = bk.SendMessageResponse(code=rocketmq.ResponseCode.SYSTEM_ERROR)
    p, outs = cc.producer_on_response(W, p, ("send", "p0-1", 1), "n0", busy, 2500)
    assert outs[0].retried and outs[1].timeout_ms == 500 and outs[1].msg.queue_id == 1
    p, outs = cc.producer_on_response(W, p, ("send", "p0-1", 2), "n0", None, 3000)
    assert not outs[0].retried and outs[1].status == "FAILED" and p.sending is None


def test_producer_without_a_master_fails_at_once_and_polls() -> None:
    p = cc.Producer(self_id="p0", route=FrozenMap({2: "n1"}), next_poll_ms=99999)
    p, outs = cc.producer_on_tick(W, p, 0)
    assert outs[0].status == "FAILED" and p.next_poll_ms == 0


def test_after_a_failover_a_slave_learns_its_master_only_at_its_next_periodic_registration() -> None:
    """changeToSlave / changeToMaster register one-way, so the surviving slave's masterAddr names the
    old master (or nothing) until its periodic registration (every 30 s) answers with the new one."""
    from reference_impl import core
    from reference_impl.core import chooser
    from reference_impl.dledger_commitlog import world as cw

    w = core.init(cw.make_config(3, {"producers": 0, "consumers": 0}))
    ch = chooser.SeededChooser(7)
    while not any(b.broker_role is rocketmq.BrokerRole.SYNC_MASTER for b in w.nodes[:3]) or w.now < 31_000:
        w, _ = core.step(w, ch.choose(w))
    old = next(i for i, b in enumerate(w.nodes[:3]) if b.broker_role is rocketmq.BrokerRole.SYNC_MASTER)
    w, _ = core.apply_fault(w, core.Crash(node=old))
    mastered_at, learned_at, new = None, None, None
    while learned_at is None and w.now < 120_000:
        w, obs = core.step(w, ch.choose(w))
        for i, o in obs:
            if isinstance(o, bk.BecameMaster) and mastered_at is None:
                mastered_at, new = w.now, w.cfg.ids[i]
        if new is not None:
            slave = next(b for i, b in enumerate(w.nodes[:3]) if i != old and w.cfg.ids[i] != new)
            if slave.master_addr == new:
                learned_at = w.now
            else:
                assert slave.master_addr in (w.cfg.ids[old], None)
    assert mastered_at is not None and learned_at is not None
    assert 0 < learned_at - mastered_at <= 30_000 + 20
