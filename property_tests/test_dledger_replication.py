"""Leader and follower replication (DLedgerEntryPusher 0.2.6): one test per branch of handleAppend,
the QuorumAckChecker, the EntryDispatcher and the EntryHandler."""

from __future__ import annotations

import pytest

from property_tests.support.dledger import PEERS3, body, leader_store, member, node_cfg
from reference_impl.core.network import Respond, Send
from reference_impl.core.state import FrozenMap
from reference_impl.dledger_log import entry_dispatcher as ed
from reference_impl.dledger_log import entry_handler as eh
from reference_impl.dledger_log import entry_pusher as ep
from reference_impl.dledger_log import store as st
from reference_impl.election.records import Code, Role

CFG = node_cfg()
LEADER = member("n0", Role.LEADER, 2)


def pusher(cfg: st.NodeConfig = CFG) -> ep.Pusher:
    return ep.new_pusher(cfg, "n0", 0)


def append(cfg: st.NodeConfig, m, s, p, now: int = 0, key: str = "a"):
    req = ep.AppendEntryRequest(group="default", remote_id=m.self_id, body=body(key))
    return ep.handle_append(cfg, m, s, p, req, now)


# --- handleAppend ---


@pytest.mark.parametrize(("m", "remote", "group", "code"), [
    (LEADER, "n1", "default", Code.UNKNOWN_MEMBER),
    (LEADER, "n0", "other", Code.UNKNOWN_GROUP),
    (member("n0", Role.FOLLOWER, 2, leader="n1"), "n0", "default", Code.NOT_LEADER),
    (LEADER.evolve(transferee="n1"), "n0", "default", Code.LEADER_TRANSFERRING)])
def test_handle_append_guards_answer_at_once_with_pos_minus_one(m, remote, group, code) -> None:
    req = ep.AppendEntryRequest(group=group, remote_id=remote, body=body())
    s, p, pos, done = ep.handle_append(CFG, m, st.empty(), pusher(), req, 0)
    assert (pos, done.code, s.end_index) == (-1, code, -1)


def test_handle_append_dledger_exception_response_copies_the_requests_base_info() -> None:
    """DLedgerServer#handleAppend's catch (DLedgerException): response.copyBaseInfo(request), so the term is
    the request's (DLedgerClient never sets it: -1), not the server's; leaderId is the member's."""
    req = ep.AppendEntryRequest(group="default", remote_id="n0", body=body())
    m = member("n0", Role.FOLLOWER, 7, leader="n1")
    _, _, _, done = ep.handle_append(CFG, m, st.empty(), pusher(), req, 0)
    assert ep.response_of(done) == ep.AppendEntryResponse(code=Code.NOT_LEADER, term=-1, leader_id="n1")


def test_handle_append_pending_full_response_carries_the_current_term_and_self() -> None:
    """DLedgerServer#handleAppend, isPendingFull: LEADER_PENDING_FULL with currTerm and leaderId = selfId."""
    cfg = node_cfg(max_pending_requests_num=1)
    s, p = st.empty(), pusher(cfg)
    for key in "ab":
        s, p, _, _ = append(cfg, LEADER, s, p, key=key)
    _, _, _, done = append(cfg, LEADER, s, p, key="x")
    assert ep.response_of(done) == ep.AppendEntryResponse(code=Code.LEADER_PENDING_FULL, term=2, leader_id="n0")


def test_quorum_ack_checker_success_response_carries_the_leader_id() -> None:
    """QuorumAckChecker#doWork completes a future with term currTerm, index, leaderId = selfId and pos."""
    s, p, _, _ = append(CFG, LEADER, st.empty(), pusher())
    s, p, outs = ep.quorum_ack_checker(CFG, LEADER, s, with_marks(p, 2, n1=0), 10)
    (done,) = outs
    assert ep.response_of(done) == ep.AppendEntryResponse(code=Code.SUCCESS, index=0, pos=0, term=2, leader_id="n0")


def test_wait_quorum_ack_timeout_response_carries_the_leader_id() -> None:
    """checkResponseFuturesTimeout: WAIT_QUORUM_ACK_TIMEOUT, term currTerm, index, leaderId = selfId, pos unset."""
    s, p, _, _ = append(CFG, LEADER, st.empty(), pusher())
    _, _, (done,) = ep.quorum_ack_checker(CFG, LEADER, s, p, 2500)
    assert ep.response_of(done) == ep.AppendEntryResponse(code=Code.WAIT_QUORUM_ACK_TIMEOUT, index=0, term=2,
                                                          leader_id="n0")


def test_handle_append_parks_a_future_and_raises_the_leaders_mark() -> None:
    s, p, pos, done = append(CFG, LEADER, st.empty(), pusher(), now=7)
    assert done is None and pos == 0 and p.pending[2][0].created_ms == 7
    assert ep.peer_water_mark(CFG, p, 2, "n0") == 0


def test_pending_full_is_more_than_max_pending_requests() -> None:
    cfg = node_cfg(max_pending_requests_num=2)
    s, p = st.empty(), pusher(cfg)
    for k in range(3):
        s, p, pos, done = append(cfg, LEADER, s, p, key=str(k))
        assert done is None
    s, p, pos, done = append(cfg, LEADER, s, p, key="x")
    assert (pos, done.code, s.end_index) == (-1, Code.LEADER_PENDING_FULL, 2)


@pytest.mark.parametrize(("version", "immediate"), [("0.2.6", True), ("0.3.1.2", False)])
def test_single_node_group_answers_at_once_only_in_0_2_6(version: str, immediate: bool) -> None:
    cfg = node_cfg(peers=("n0",), dledger_version=version)
    _, _, _, done = append(cfg, LEADER, st.empty(), pusher(cfg))
    assert (done is not None and done.code is Code.SUCCESS) == immediate


# --- QuorumAckChecker ---


def with_marks(p: ep.Pusher, term: int, **marks: int) -> ep.Pusher:
    for peer, index in marks.items():
        p = ep.update_peer_water_mark(CFG, p, term, peer, index)
    return p


def test_quorum_index_is_the_median_of_the_current_terms_marks() -> None:
    p = with_marks(pusher(), 2, n0=9, n1=4, n2=7)
    assert ep.quorum_index(p, 2) == 7
    cfg5 = node_cfg(peers=("n0", "n1", "n2", "n3", "n4"))
    p5 = ep.new_pusher(cfg5, "n0", 0)
    for peer, index in dict(n0=9, n1=1, n2=5, n3=3, n4=8).items():
        p5 = ep.update_peer_water_mark(cfg5, p5, 2, peer, index)
    assert ep.quorum_index(p5, 2) == 5


def test_checker_commits_the_quorum_index_and_completes_futures_up_to_it() -> None:
    s, p = st.empty(), pusher()
    for k in range(3):
        s, p, _, _ = append(CFG, LEADER, s, p, key=str(k))
    p = with_marks(p, 2, n1=1)
    s, p, outs = ep.quorum_ack_checker(CFG, LEADER, s, p, 10)
    assert s.committed_index == 1
    assert sorted((o.index, o.code) for o in outs) == [(0, Code.SUCCESS), (1, Code.SUCCESS)]
    assert set(p.pending[2]) == {2} and p.last_quorum_index == 1


def test_wait_quorum_ack_timeout_at_2500_ms_leaves_the_entry_and_the_future() -> None:
    s, p, _, _ = append(CFG, LEADER, st.empty(), pusher(), now=0)
    s, p, outs = ep.quorum_ack_checker(CFG, LEADER, s, p, 2499)
    assert outs == ()
    s, p, outs = ep.quorum_ack_checker(CFG, LEADER, s, p, 2500)
    assert [(o.index, o.code) for o in outs] == [(0, Code.WAIT_QUORUM_ACK_TIMEOUT)]
    assert s.end_index == 0 and p.pending[2][0].done
    p = with_marks(p, 2, n1=0)  # a late ack still commits it, silently
    s, p, outs = ep.quorum_ack_checker(CFG, LEADER, s, p, 2600)
    assert s.committed_index == 0 and outs == ()


def test_futures_of_an_older_term_complete_term_changed() -> None:
    """QuorumAckChecker#doWork, pendingAppendResponsesByTerm.size() > 1: TERM_CHANGED with the member's
    leaderId and no term set (-1)."""
    s, p, _, _ = append(CFG, LEADER, st.empty(), pusher())
    newer = LEADER.evolve(curr_term=3)
    s, p, outs = ep.quorum_ack_checker(CFG, newer, s, p, 5)
    assert [(o.index, o.code, o.term, o.leader_id) for o in outs] == [(0, Code.TERM_CHANGED, -1, "n0")]
    assert set(p.pending) == {3} and set(p.water_marks) == {3}


def test_leak_check_raises_the_leaders_own_mark_in_a_new_term_once_a_second() -> None:
    s = leader_store(CFG.log, 3, term=1)
    p = pusher()
    _, p, _ = ep.quorum_ack_checker(CFG, LEADER, s, p, 1000)
    assert ep.peer_water_mark(CFG, p, 2, "n0") == -1
    _, p, _ = ep.quorum_ack_checker(CFG, LEADER, s, p, 1001)
    assert ep.peer_water_mark(CFG, p, 2, "n0") == 2


@pytest.mark.parametrize(("version", "committed"), [("0.2.6", 2), ("0.3.1.2", 2), ("fixed", -1)])
def test_an_older_terms_entry_is_committed_by_counting_unless_fixed(version: str, committed: int) -> None:
    cfg = node_cfg(dledger_version=version)
    s = leader_store(cfg.log, 3, term=1)
    p = with_marks(ep.new_pusher(cfg, "n0", 0), 2, n0=2, n1=2)
    s, p, _ = ep.quorum_ack_checker(cfg, LEADER, s, p, 10)
    assert s.committed_index == committed


def test_checker_goes_on_at_once_after_acknowledging_and_polls_otherwise() -> None:
    """QuorumAckChecker#doWork: ackNum > 0 loops again at once; ackNum == 0 ends in waitForRunning(1), so work
    that falls due later (a future's timeout, the leak check) is noticed within 1 ms unless a wakeup() comes."""
    s, p, _, _ = append(CFG, LEADER, st.empty(), pusher())
    s, p, _ = ep.quorum_ack_checker(CFG, LEADER, s, with_marks(p, 2, n1=0), 10)
    assert p.checker_woken and ep.checker_slack(CFG, p, 0) == 0
    s, p, _ = ep.quorum_ack_checker(CFG, LEADER, s, p, 11)
    assert not p.checker_woken and ep.checker_slack(CFG, p, 0) == 1
    assert ep.wake_checker(p).checker_woken and ep.checker_slack(CFG, ep.wake_checker(p), 0) == 0
    assert ep.checker_slack(CFG, ep.wake_checker(p), 1012) == 1  # a timer is polled, woken or not


@pytest.mark.parametrize(("version", "acked"), [("0.2.6", [0]), ("0.3.1.2", [0, 1])])
def test_check_response_futures_elapsed_bound_by_version(version: str, acked: list) -> None:
    """checkResponseFuturesElapsed completes futures `< endIndex` in 0.2.6 and `<= endIndex` in 0.3.x: a
    future at the quorum index left by the ack loop (needCheck) completes at the leak check only in 0.3.x."""
    cfg = node_cfg(dledger_version=version)
    p = ep.new_pusher(cfg, "n0", 0)
    futures = FrozenMap({0: ep.PendingAppend(pos=0, created_ms=0, ref="a"),
                         1: ep.PendingAppend(pos=64, created_ms=0, ref="b")})
    done = ep.check_response_futures_elapsed(futures, 1 if cfg.log.v026 else 2, 2, "n0")[1]
    assert [o.index for o in done] == acked


def test_checker_is_idle_while_not_leader() -> None:
    s, p, _, _ = append(CFG, LEADER, st.empty(), pusher())
    follower = member("n0", Role.FOLLOWER, 3, leader="n1")
    assert ep.checker_wake_at(CFG, follower, p) == -1
    assert ep.quorum_ack_checker(CFG, follower, s, p, 99999)[1] is p


# --- EntryDispatcher ---


def dispatcher(p: ep.Pusher, peer: str = "n1") -> tuple[int, ep.Dispatcher]:
    k = next(i for i, d in enumerate(p.dispatchers) if d.peer == peer)
    return k, p.dispatchers[k]


def test_a_new_term_starts_in_compare() -> None:
    p = pusher()
    k, d = dispatcher(p)
    p = ed._put(p, k, d.evolve(type=ep.PushType.APPEND, term=1, leader_id="n0", compare_index=-1, write_index=5))
    p, d, ok = ed.check_and_fresh_state(CFG, LEADER, p, p.dispatchers[k])
    assert ok and (d.type, d.term, d.compare_index) == (ep.PushType.COMPARE, 2, -1)


@pytest.mark.parametrize(("version", "compare_index"), [("0.2.6", 1), ("fixed", -1)])
def test_compare_index_left_in_compare_survives_into_a_new_leadership(version: str, compare_index: int) -> None:
    cfg = node_cfg(dledger_version=version)
    p = ep.new_pusher(cfg, "n0", 0)
    k, d = dispatcher(p)
    p = ed._put(p, k, d.evolve(type=ep.PushType.COMPARE, term=1, leader_id="n0", compare_index=1))
    _, d, _ = ed.check_and_fresh_state(cfg, LEADER, p, p.dispatchers[k])
    assert d.compare_index == compare_index


def fresh(p: ep.Pusher, **fields) -> tuple[int, ep.Pusher]:
    k, d = dispatcher(p)
    return k, ed._put(p, k, d.evolve(term=2, leader_id="n0", **fields))


def test_an_empty_leader_does_not_compare() -> None:
    k, p = fresh(pusher())
    p, outs = ed.dispatcher_do_work(CFG, LEADER, st.empty(), p, k, 0)
    assert outs == () and ed.dispatcher_wake_at(CFG, LEADER, st.empty(), p, p.dispatchers[k]) == -1


def test_compare_sends_the_leaders_end_entry_and_blocks() -> None:
    """EntryDispatcher#doCompare: COMPARE of the leader's end entry, then responseFuture.get(3, SECONDS):
    the thread has nothing to do until the future completes or the 3 s are up."""
    s = leader_store(CFG.log, 3, term=2)
    k, p = fresh(pusher())
    p, outs = ed.dispatcher_do_work(CFG, LEADER, s, p, k, 10)
    (send,) = outs
    assert send.msg.type is ep.PushType.COMPARE and send.msg.entry == st.get(s, 2)
    d = p.dispatchers[k]
    assert d.waiting and d.blocked is ep.PushType.COMPARE and ed.dispatcher_wake_at(CFG, LEADER, s, p, d) == 3010
    assert ed.dispatcher_do_work(CFG, LEADER, s, p, k, 3009) == (p, ())


def blocked(kind: ep.PushType = ep.PushType.COMPARE, **fields) -> tuple[int, ep.Pusher]:
    """Dispatcher n1 blocked in get on push 1 (sent at 0)."""
    return fresh(pusher(), waiting=1, blocked=kind, wait_until=3000, seq=1, **fields)


def compare_reply(s: st.Store, compare_index: int, code: Code, begin: int, end: int):
    """The COMPARE reply completes the future (delivery), then the thread goes on (its next step)."""
    k, p = blocked(compare_index=compare_index)
    resp = ep.PushEntryResponse(code=code, term=2, index=compare_index, begin_index=begin, end_index=end)
    p, outs = ed.on_push_response(CFG, LEADER, s, p, ("push", "COMPARE", "n1", 1, 2), resp, 5)
    assert outs == () and p.dispatchers[k].response == resp and ed.dispatcher_wake_at(
        CFG, LEADER, s, p, p.dispatchers[k]) == 0
    p, outs = ed.dispatcher_do_work(CFG, LEADER, s, p, k, 5)
    return p, p.dispatchers[k], outs


S5 = leader_store(CFG.log, 5, term=2)


def test_compare_success_at_the_followers_end_moves_to_append() -> None:
    """doCompare: SUCCESS and compareIndex == endIndex -> changeState(APPEND), which wakes the QuorumAckChecker."""
    p, d, outs = compare_reply(S5, 3, Code.SUCCESS, 0, 3)
    assert (d.type, d.write_index, d.waiting, outs) == (ep.PushType.APPEND, 4, 0, ())
    assert ep.peer_water_mark(CFG, p, 2, "n1") == 3 and p.checker_woken


def test_compare_success_below_the_followers_end_truncates_there() -> None:
    p, d, outs = compare_reply(S5, 3, Code.SUCCESS, 0, 7)
    assert d.type is ep.PushType.TRUNCATE and outs[0].msg.type is ep.PushType.TRUNCATE
    assert outs[0].msg.entry.index == 3


@pytest.mark.parametrize(("compare_index", "begin", "end", "next_index", "truncate"), [
    (4, 0, 2, 2, None),  # past the follower's end: jump down to it
    (3, 0, 6, 2, None),  # mismatch inside its range: walk back one
    (4, 6, 9, None, 0),  # no overlap: truncate at the leader's begin
    (0, 0, 3, None, 0),  # walking below the leader's begin: truncate at begin
])
def test_compare_mismatch_branches(compare_index, begin, end, next_index, truncate) -> None:
    """doCompare's branches; a revised compareIndex goes round the loop to the next COMPARE at once
    (the same doWork), a truncation pushes TRUNCATE and blocks again."""
    p, d, outs = compare_reply(S5, compare_index, Code.INCONSISTENT_STATE, begin, end)
    (send,) = outs
    if truncate is None:
        assert (d.type, d.compare_index, send.msg.type) == (ep.PushType.COMPARE, next_index, ep.PushType.COMPARE)
        assert send.msg.entry.index == next_index and d.blocked is ep.PushType.COMPARE
    else:
        assert d.type is ep.PushType.TRUNCATE and send.msg.entry.index == truncate
        assert d.blocked is ep.PushType.TRUNCATE and d.wait_until == 5 + 3000


def test_a_failed_compare_sleeps_500_ms_in_compare() -> None:
    """DLedgerRpcNettyService completes a failed push with NETWORK_ERROR: doCompare's check throws,
    doWork catches: changeState(-1, COMPARE) and DLedgerUtils.sleep(500)."""
    k, p = blocked(compare_index=3)
    p, _ = ed.on_push_response(CFG, LEADER, S5, p, ("push", "COMPARE", "n1", 1, 2), None, 100)
    assert p.dispatchers[k].response.code is Code.NETWORK_ERROR
    p, outs = ed.dispatcher_do_work(CFG, LEADER, S5, p, k, 100)
    d = p.dispatchers[k]
    assert (d.type, d.waiting, d.sleep_until, d.compare_index, outs) == (ep.PushType.COMPARE, 0, 600, 3, ())


@pytest.mark.parametrize("kind", [ep.PushType.COMPARE, ep.PushType.TRUNCATE])
def test_do_compare_and_do_truncate_get_times_out_after_3_s_then_compare_again_500_ms_later(kind) -> None:
    """EntryDispatcher#doCompare / #doTruncate: responseFuture.get(3, SECONDS) throws a TimeoutException
    3 s after the push, long before the RPC's own timeout; doWork catches it, changeState(-1, COMPARE),
    sleeps 500 ms and compares again. The reply that comes later finds no one waiting."""
    k, p = blocked(kind, compare_index=3, truncate_index=3, type=kind)
    assert ed.dispatcher_wake_at(CFG, LEADER, S5, p, p.dispatchers[k]) == 3000
    p, outs = ed.dispatcher_do_work(CFG, LEADER, S5, p, k, 3000)
    d = p.dispatchers[k]
    assert (d.type, d.waiting, d.sleep_until, outs) == (ep.PushType.COMPARE, 0, 3500, ())
    late = ep.PushEntryResponse(code=Code.SUCCESS, term=2, index=3, begin_index=0, end_index=3)
    assert ed.on_push_response(CFG, LEADER, S5, p, ("push", kind.value, "n1", 1, 2), late, 3100)[0] is p
    assert ed.dispatcher_wake_at(CFG, LEADER, S5, p, d) == 3500
    p, outs = ed.dispatcher_do_work(CFG, LEADER, S5, p, k, 3500)
    (send,) = outs
    assert send.msg.type is ep.PushType.COMPARE and p.dispatchers[k].wait_until == 6500


def test_dledger_rpc_netty_service_push_failure_response() -> None:
    """DLedgerRpcNettyService#push, no response: copyBaseInfo(request) (its term), code NETWORK_ERROR,
    index null and beginIndex/endIndex never set (0)."""
    r = ep.failed_push_response(("push", "COMPARE", "n1", 7, 4))
    assert (r.code, r.term, r.index, r.begin_index, r.end_index) == (Code.NETWORK_ERROR, 4, None, 0, 0)


def test_truncate_success_appends_after_the_truncated_index() -> None:
    """doTruncate: SUCCESS -> lastPushCommitTimeMs, changeState(truncateIndex, APPEND)."""
    k, p = blocked(ep.PushType.TRUNCATE, type=ep.PushType.TRUNCATE, truncate_index=2)
    resp = ep.PushEntryResponse(code=Code.SUCCESS, term=2, index=2, begin_index=0, end_index=2)
    p, _ = ed.on_push_response(CFG, LEADER, S5, p, ("push", "TRUNCATE", "n1", 1, 2), resp, 9)
    p, _ = ed.dispatcher_do_work(CFG, LEADER, S5, p, k, 9)
    d = p.dispatchers[k]
    assert (d.type, d.write_index, ep.peer_water_mark(CFG, p, 2, "n1")) == (ep.PushType.APPEND, 3, 2)
    assert d.last_push_commit_ms == 9 and p.checker_woken


def test_a_type_changed_while_blocked_in_do_truncate_still_resumes_do_truncate() -> None:
    """An APPEND's INCONSISTENT_STATE callback may set the type to COMPARE while the thread is blocked in
    doTruncate's get; get returns into doTruncate all the same, which moves to APPEND."""
    k, p = blocked(ep.PushType.TRUNCATE, type=ep.PushType.COMPARE, truncate_index=2)
    resp = ep.PushEntryResponse(code=Code.SUCCESS, term=2, index=2, begin_index=0, end_index=2)
    p, _ = ed.on_push_response(CFG, LEADER, S5, p, ("push", "TRUNCATE", "n1", 1, 2), resp, 9)
    p, _ = ed.dispatcher_do_work(CFG, LEADER, S5, p, k, 9)
    assert (p.dispatchers[k].type, p.dispatchers[k].write_index) == (ep.PushType.APPEND, 3)


def test_append_pushes_every_new_entry_then_commits_after_a_quiet_second() -> None:
    k, p = fresh(with_marks(pusher(), 2, n1=1), type=ep.PushType.APPEND, write_index=2)
    p, outs = ed.dispatcher_do_work(CFG, LEADER, S5, p, k, 100)
    assert [o.msg.entry.index for o in outs if o.msg.type is ep.PushType.APPEND] == [2, 3, 4]
    d = p.dispatchers[k]
    assert ed.dispatcher_wake_at(CFG, LEADER, S5, p, d) == 1101  # COMMIT, or the re-push of 2, at 1101
    p, outs = ed.dispatcher_do_work(CFG, LEADER, S5, p, k, 1101)
    kinds = sorted((o.msg.type.value, o.msg.entry.index if o.msg.entry else None) for o in outs)
    assert kinds == [("APPEND", 2), ("COMMIT", None)]


def test_append_replies() -> None:
    """doAppendInner's whenComplete: SUCCESS raises the mark and wakes the QuorumAckChecker;
    INCONSISTENT_STATE -> COMPARE; anything else (a failed push's NETWORK_ERROR too) is only logged."""
    k, p = fresh(pusher(), type=ep.PushType.APPEND, write_index=5, pending_map=FrozenMap({3: 0, 4: 0}))
    ok = ep.PushEntryResponse(code=Code.SUCCESS, term=1, index=3)
    p2, _ = ed.on_push_response(CFG, LEADER, S5, p, ("push", "APPEND", "n1", 9, 2), ok, 5)
    assert ep.peer_water_mark(CFG, p2, 1, "n1") == 3  # keyed by the reply's (request's) term
    assert 3 not in p2.dispatchers[k].pending_map and p2.checker_woken and not p.checker_woken
    bad = ep.PushEntryResponse(code=Code.INCONSISTENT_STATE, term=2, index=4)
    p3, _ = ed.on_push_response(CFG, LEADER, S5, p, ("push", "APPEND", "n1", 9, 2), bad, 5)
    assert p3.dispatchers[k].type is ep.PushType.COMPARE and not p3.dispatchers[k].pending_map
    for other in (None, ep.PushEntryResponse(code=Code.REPEATED_PUSH, term=2, index=4)):
        assert ed.on_push_response(CFG, LEADER, S5, p, ("push", "APPEND", "n1", 9, 2), other, 5)[0] is p


def test_append_of_an_index_below_the_begin_goes_back_to_compare() -> None:
    s = S5.evolve(entries=S5.entries[3:], begin_index=3)
    k, p = fresh(pusher(), type=ep.PushType.APPEND, write_index=1)
    p, outs = ed.dispatcher_do_work(CFG, LEADER, s, p, k, 0)
    assert p.dispatchers[k].type is ep.PushType.COMPARE and outs == ()


# --- EntryHandler ---


F = member("n1", Role.FOLLOWER, 2, leader="n0")


def push(kind: ep.PushType, entry: st.Entry | None, term: int = 2, commit: int = -1, seq: int = 1,
         leader: str = "n0") -> ep.PushEntryRequest:
    return ep.PushEntryRequest(group="default", remote_id="n1", leader_id=leader, term=term, type=kind, entry=entry,
                               commit_index=commit, seq=(0, seq))


def handle(h: eh.EntryHandler, req, rpc: int, s: st.Store = st.empty(), cfg: st.NodeConfig = CFG, now: int = 0):
    return eh.handle_push(cfg, F, s, h, req, rpc, now)


def test_handle_push_files_requests_without_checks() -> None:
    h = eh.EntryHandler()
    h, r = handle(h, push(ep.PushType.APPEND, S5.entries[0], term=9), 1)
    assert r is None and 0 in h.write_requests
    h, r = handle(h, push(ep.PushType.APPEND, S5.entries[0]), 2)
    assert r.code is Code.REPEATED_PUSH
    h, r = handle(h, push(ep.PushType.COMPARE, S5.entries[0]), 3)
    assert r is None and not h.write_requests and len(h.queue) == 1  # COMPARE drops the waiting appends
    h, r = handle(h, push(ep.PushType.APPEND, None), 4)
    assert r.code is Code.UNEXPECTED_ARGUMENT
    assert handle(h, push(ep.PushType.COMMIT, None).evolve(remote_id="n2"), 5)[1].code is Code.UNKNOWN_MEMBER


def test_queue_capacity_only_refuses_in_0_3_x() -> None:
    cfg = node_cfg(dledger_version="0.3.1.2")
    h = eh.EntryHandler(queue=tuple(eh.PushWait(request=push(ep.PushType.COMMIT, None), rpc=i, created_ms=0)
                                    for i in range(1024)))
    assert handle(h, push(ep.PushType.COMMIT, None), 9, cfg=cfg)[1].code is Code.PUSH_REQUEST_IS_FULL
    assert handle(h, push(ep.PushType.COMMIT, None), 9)[1] is None


def test_do_work_appends_one_entry_per_pass_and_takes_the_commit_index_clamped() -> None:
    """EntryHandler#doWork: one handleDoAppend per pass, each with its updateCommittedIndex (clamped to
    the new end), the loop going on at once (woken) while the next index waits; then the gap."""
    h = eh.EntryHandler()
    for i in (1, 0, 3):
        h, _ = handle(h, push(ep.PushType.APPEND, S5.entries[i], commit=4, seq=i + 1), 10 + i)
    s = st.empty()
    seen = []
    for _ in range(2):
        assert eh.wake_at(CFG, F, s, h) == 0 and eh.slack(CFG, h, 0) == 0
        s, h, outs = eh.do_work(CFG, F, s, h, 5)
        seen.append((s.end_index, s.committed_index, [(o.rpc, o.msg.code) for o in outs]))
    assert seen == [(0, 0, [(10, Code.SUCCESS)]), (1, 1, [(11, Code.SUCCESS)])]
    assert set(h.write_requests) == {3} and eh.wake_at(CFG, F, s, h) == 1000


def test_handler_is_woken_by_handle_push_and_polls_otherwise() -> None:
    """ShutdownAbleThread: handlePush's wakeup() makes the next pass come at once; after a pass that found
    nothing (checkAbnormalFuture, waitForRunning(1)) the thread notices new work within its 1 ms poll."""
    h = eh.EntryHandler()
    assert not h.woken and eh.slack(CFG, h, 0) == 1
    h, _ = handle(h, push(ep.PushType.COMMIT, None, commit=0), 1)
    assert h.woken and eh.slack(CFG, h, 0) == 0
    s, h, _ = eh.do_work(CFG, F, S5, h, 0)
    assert h.woken  # the loop goes on after a unit of work
    h = h.evolve(write_requests=FrozenMap({9: eh.PushWait(request=push(ep.PushType.APPEND, S5.entries[4]), rpc=2,
                                                            created_ms=0)}))
    s, h, _ = eh.do_work(CFG, F, st.empty(), h, 1000)
    assert not h.woken and eh.slack(CFG, h, eh.wake_at(CFG, F, st.empty(), h)) == 1


def test_append_of_another_term_or_leader_is_inconsistent() -> None:
    for req in (push(ep.PushType.APPEND, S5.entries[0], term=1), push(ep.PushType.APPEND, S5.entries[0],
                                                                       leader="n2")):
        h, _ = handle(eh.EntryHandler(), req, 1)
        s, h, outs = eh.do_work(CFG, F, st.empty(), h, 0)
        assert s.end_index == -1 and outs[0].msg.code is Code.INCONSISTENT_STATE


def test_compare_has_no_term_check_but_truncate_has() -> None:
    mine = S5
    h, _ = handle(eh.EntryHandler(), push(ep.PushType.COMPARE, S5.entries[2], term=1, leader="n2"), 1)
    _, _, outs = eh.do_work(CFG, F, mine, h, 0)
    assert outs[0].msg.code is Code.SUCCESS and outs[0].msg.end_index == 4
    h, _ = handle(eh.EntryHandler(), push(ep.PushType.TRUNCATE, S5.entries[2], term=1), 1)
    s, _, outs = eh.do_work(CFG, F, mine, h, 0)
    assert outs[0].msg.code is Code.INCONSISTENT_STATE and s is mine
    h, _ = handle(eh.EntryHandler(), push(ep.PushType.TRUNCATE, S5.entries[2], commit=9), 1)
    s, _, outs = eh.do_work(CFG, F, mine, h, 0)
    assert outs[0].msg.code is Code.SUCCESS and (s.end_index, s.committed_index) == (2, 2)


def test_one_queued_request_per_pass_in_order() -> None:
    """EntryHandler#doWork polls one request of compareOrTruncateRequests per pass."""
    h = eh.EntryHandler()
    for rpc, commit in ((1, 1), (2, 3)):
        h, _ = handle(h, push(ep.PushType.COMMIT, None, commit=commit), rpc)
    s, h, outs = eh.do_work(CFG, F, S5, h, 0)
    assert [o.rpc for o in outs] == [1] and s.committed_index == 1 and len(h.queue) == 1
    s, h, outs = eh.do_work(CFG, F, s, h, 0)
    assert [o.rpc for o in outs] == [2] and s.committed_index == 3 and not h.queue


def test_check_append_future_answers_held_entries_and_fast_forwards_the_oldest_timed_out() -> None:
    h = eh.EntryHandler()
    for i, rpc in ((1, 11), (3, 13), (4, 14)):
        h, _ = handle(h, push(ep.PushType.APPEND, S5.entries[i], seq=i), rpc)
    mine = leader_store(CFG.log, 2, term=2)  # holds 0 and 1 already; 2 is missing
    s, h, outs = eh.do_work(CFG, F, mine, h, 999)
    assert outs == ()  # the check runs once a second
    s, h, outs = eh.do_work(CFG, F, mine, h, 1000)
    assert [(o.rpc, o.msg.code) for o in outs] == [(11, Code.SUCCESS), (13, Code.INCONSISTENT_STATE)]
    assert set(h.write_requests) == {3, 4} and h.write_requests[3].answered


@pytest.mark.parametrize(("version", "drained"), [("0.2.6", False), ("0.3.1.2", True)])
def test_requests_wait_while_not_follower(version: str, drained: bool) -> None:
    cfg = node_cfg(dledger_version=version)
    candidate = member("n1", Role.CANDIDATE, 2)
    h, _ = eh.handle_push(cfg, candidate, st.empty(), eh.EntryHandler(), push(ep.PushType.COMMIT, None), 1, 0)
    _, h2, outs = eh.do_work(cfg, candidate, st.empty(), h, 0)
    assert bool(outs) == drained and (not h2.queue) == drained
    if drained:
        assert outs[0].msg.code is Code.NOT_FOLLOWER


def test_single_thread_processing_never_handles_an_overtaken_push() -> None:
    cfg = node_cfg(push_processor="single_thread")
    h, r = eh.handle_push(cfg, F, st.empty(), eh.EntryHandler(), push(ep.PushType.COMPARE, S5.entries[0], seq=5),
                          1, 0)
    h, r = eh.handle_push(cfg, F, st.empty(), h, push(ep.PushType.APPEND, S5.entries[0], seq=4), 2, 0)
    assert r is None and not h.write_requests and len(h.queue) == 1
    h, _ = handle(h, push(ep.PushType.APPEND, S5.entries[0], seq=4), 2)  # the pool handles it
    assert 0 in h.write_requests


def test_sends_and_responds_are_what_the_world_routes() -> None:
    k, p = fresh(pusher(), type=ep.PushType.APPEND, write_index=0)
    _, outs = ed.dispatcher_do_work(CFG, LEADER, S5, p, k, 0)
    assert all(isinstance(o, Send) and o.timeout_ms == 3000 for o in outs)
    h, _ = handle(eh.EntryHandler(), push(ep.PushType.APPEND, S5.entries[0]), 7)
    _, _, outs = eh.do_work(CFG, F, st.empty(), h, 0)
    assert isinstance(outs[0], Respond) and outs[0].rpc == 7
    assert PEERS3 == CFG.dledger.peers
