"""Preferred leader and leadership transfer: DLedgerServer#checkPreferredLeader and
#handleLeadershipTransfer (both sides), the transferee's catch-up wait, DLedgerLeaderElector
#handleLeadershipTransfer / #handleTakeLeadership and TakeLeadershipTask#check."""

from __future__ import annotations

import pytest

from histories import runner
from property_tests.support.election import CFG3, follower, leader, member, roles, sends
from reference_impl import core
from reference_impl.core import faults
from reference_impl.core.network import Respond
from reference_impl.core.state import FrozenMap
from reference_impl.election import leader_elector as elector
from reference_impl.election import member_state as mstate
from reference_impl.election import records as el
from reference_impl.election import server as srv
from reference_impl.election import world as election_world

C = el.Code
PREF = CFG3.evolve(preferred_leader_ids="n2")


def live(**peers):
    return FrozenMap(peers)


def transfer_req(term=3, transfer_id="n0", transferee="n1", to="n0", index=10, group="default"):
    return el.LeadershipTransferRequest(group=group, remote_id=to, term=term, transfer_id=transfer_id,
                                        transferee_id=transferee, take_leadership_ledger_index=index,
                                        leader_id=transfer_id)


# --- checkPreferredLeader ---


def preferred_leader(**fields):
    base = {"term": 3, "ledger_end_index": 100, "peers_live_table": live(n1=True, n2=True),
            "peer_water_marks": FrozenMap({"n1": 95, "n2": 90})}
    return leader(**(base | fields))


def test_check_preferred_leader_hands_over_to_the_live_preferred_peer():
    """The leader sends a take-leadership request to the preferred peer, marks it transferee and blocks on the reply."""
    m, outs = srv.check_preferred_leader(PREF, preferred_leader())
    assert (m.transferee, m.transfer_in_flight) == ("n2", True)
    (s,) = sends(outs)
    assert s.dst == "n2" and s.msg == el.LeadershipTransferRequest(
        group="default", remote_id="n2", term=3, transfer_id="n0", transferee_id="n2",
        take_leadership_ledger_index=100, leader_id="n0")


@pytest.mark.parametrize("cfg, m", [
    (PREF, follower(term=3)),  # !isLeader
    (CFG3, preferred_leader()),  # preferredLeaderIds == null
    (PREF, preferred_leader(transferee="n1")),  # a transfer is under way
    (CFG3.evolve(preferred_leader_ids="n0;n2"), preferred_leader()),  # self is preferred
    (PREF, preferred_leader(peers_live_table=live(n1=True))),  # n2 absent from peersLiveTable
    (PREF, preferred_leader(peers_live_table=live(n2=False))),  # n2 not online
    (CFG3.evolve(preferred_leader_ids="n9"), preferred_leader()),  # not a peer member
    (PREF, preferred_leader(peer_water_marks=FrozenMap({"n2": -900}))),  # minFallBehind 1000 >= 1000
], ids=["not-leader", "no-preferred", "transferring", "self-preferred", "not-in-live-table", "offline",
        "not-a-peer", "too-far-behind"])
def test_check_preferred_leader_does_nothing(cfg, m):
    """Each early return and filter of checkPreferredLeader leaves the leader as it is."""
    assert srv.check_preferred_leader(cfg, m) == (m, ())


def test_check_preferred_leader_picks_the_least_behind_and_first_on_ties():
    """Among live preferred peers the smallest fallBehind wins (strict <, so the first listed on a tie)."""
    cfg = CFG3.evolve(preferred_leader_ids="n9;n1;n2")
    assert srv.check_preferred_leader(cfg, preferred_leader())[0].transferee == "n1"  # 5 behind vs 10
    tie = preferred_leader(peer_water_marks=FrozenMap({"n1": 90, "n2": 90}))
    assert srv.check_preferred_leader(cfg, tie)[0].transferee == "n1"


def test_check_preferred_leader_keeps_a_lagging_peer_in_the_running():
    """A peer with fallBehind >= 1000 is only logged, not removed: a less-lagging one is still chosen."""
    m = preferred_leader(ledger_end_index=5000, peer_water_marks=FrozenMap({"n1": 1000, "n2": 4500}))
    assert srv.check_preferred_leader(CFG3.evolve(preferred_leader_ids="n1;n2"), m)[0].transferee == "n2"


def test_leader_wakes_for_the_preferred_leader_check_on_its_fixed_rate_grid():
    """scheduleAtFixedRate(1000, 1000): a leader also wakes at the check's grid; a late check stays on the grid."""
    m = leader(term=1, last_send_heart_beat_time=1500, next_loop_ms=1510, next_check_preferred_ms=2000)
    assert (srv.wake_at(CFG3, m), srv.wake_at(PREF, m)) == (3501, 2000)
    assert srv.wake_at(PREF, m.evolve(transfer_in_flight=True)) == 3501  # the check is blocked on a transfer
    assert srv.wake_at(PREF, follower(term=1, last_leader_heart_beat_time=0, next_check_preferred_ms=2000)) == 6001
    m2, _ = srv.on_tick(PREF, m, 2000, 0)
    assert m2.next_check_preferred_ms == 3000
    assert srv.on_tick(PREF, m2, 3450, 0)[0].next_check_preferred_ms == 4000


# --- DLedgerLeaderElector#handleLeadershipTransfer (old leader) ---


@pytest.mark.parametrize("m, term, code", [
    (leader(term=4), 3, C.INCONSISTENT_TERM),
    (follower(term=3), 3, C.NOT_LEADER),
    (leader(term=3, transferee="n2"), 3, C.LEADER_TRANSFERRING),
    (follower(term=4), 3, C.INCONSISTENT_TERM),  # the term is checked before the role
], ids=["term", "not-leader", "transferring", "term-before-role"])
def test_elector_handle_leadership_transfer_guards(m, term, code):
    """currTerm != term -> INCONSISTENT_TERM; !isLeader -> NOT_LEADER; transferee set -> LEADER_TRANSFERRING."""
    m2, resp, outs = elector.handle_leadership_transfer(CFG3, m, term, "n1")
    assert (resp.code, resp.term) == (code, m.curr_term)
    assert m2 == m and outs == ()


def test_transfer_reply_failure_clears_the_transferee():
    """response.code != SUCCESS -> setTransferee(null), and the operator's request gets the reply."""
    m, _, _ = elector.handle_leadership_transfer(CFG3, leader(term=3), 3, "n1", admin_rpc=77)
    resp = el.LeadershipTransferResponse(code=C.TAKE_LEADERSHIP_FAILED, term=3)
    m2, outs = elector.on_leadership_transfer_response(CFG3, m, 3, "n1", 77, resp)
    assert (m2.transferee, m2.transfer_in_flight) == (None, False)
    assert outs == (el.TransferDone(transferee="n1", code=C.TAKE_LEADERSHIP_FAILED), Respond(rpc=77, msg=resp))


def test_transfer_rpc_failure_is_a_network_error():
    """A failed RPC completes the transfer with NETWORK_ERROR and clears the transferee."""
    m, _, _ = elector.handle_leadership_transfer(CFG3, leader(term=3), 3, "n1")
    m2, outs = elector.on_leadership_transfer_response(CFG3, m, 3, "n1", 0, None)
    assert m2.transferee is None and outs == (el.TransferDone(transferee="n1", code=C.NETWORK_ERROR),)


def test_transfer_success_while_still_leader_of_the_term_also_clears_the_transferee():
    """The thenApply clears the transferee when currTerm == term and transferee != null, even on SUCCESS."""
    m, _, _ = elector.handle_leadership_transfer(CFG3, leader(term=3), 3, "n1")
    m2, _ = elector.on_leadership_transfer_response(CFG3, m, 3, "n1", 0, el.LeadershipTransferResponse(term=4))
    assert m2.transferee is None and m2.role is el.Role.LEADER


# --- DLedgerServer#handleLeadershipTransfer ---


def server(m, req, now=1000):
    return srv.server_handle_leadership_transfer(CFG3, m, req, rpc=5, now=now)


@pytest.mark.parametrize("m, req, code", [
    (leader(term=3), transfer_req(to="n1"), C.UNKNOWN_MEMBER),
    (leader(term=3), transfer_req(group="g2"), C.UNKNOWN_GROUP),
    (leader(term=3), transfer_req(transferee="n7"), C.UNKNOWN_MEMBER),
    (leader(term=4), transfer_req(), C.INCONSISTENT_TERM),
    (follower(term=3), transfer_req(), C.NOT_LEADER),
    (leader(term=3, ledger_end_index=2000, peer_water_marks=FrozenMap({"n1": 1000})), transfer_req(),
     C.FALL_BEHIND_TOO_MUCH),
], ids=["remote-id", "group", "transferee-not-peer", "term", "not-leader", "fall-behind"])
def test_server_leader_side_guards(m, req, code):
    """transferId == selfId: member, group, transferee, term, leader, fall-behind checks, each with its code."""
    m2, resp, outs = server(m, req)
    assert (resp.code, resp.term) == (code, req.term)
    assert m2 == m and outs == ()


def test_server_leader_side_starts_the_transfer_and_answers_later():
    """All checks pass (fall-behind 999 < 1000) -> the elector's transfer; the operator's reply is deferred."""
    m = leader(term=3, ledger_end_index=1999, peer_water_marks=FrozenMap({"n1": 1000}))
    m2, resp, outs = server(m, transfer_req())
    assert resp is None and m2.transferee == "n1"
    (s,) = sends(outs)
    assert s.dst == "n1" and s.ctx == ("transfer", 3, "n1", 5)


def test_server_transferee_side_rejects_a_transfer_from_a_non_leader():
    """transfereeId == selfId but transferId != leaderId -> INCONSISTENT_LEADER."""
    m = follower("n1", term=3, leader="n2")
    m2, resp, _ = server(m, transfer_req(to="n1"))
    assert resp.code is C.INCONSISTENT_LEADER and m2 == m


def test_server_neither_side_is_unexpected_argument():
    """Neither transferId nor transfereeId is self -> UNEXPECTED_ARGUMENT with term = currTerm."""
    _, resp, _ = server(follower("n2", term=5, leader="n0"), transfer_req(to="n2", term=3))
    assert (resp.code, resp.term) == (C.UNEXPECTED_ARGUMENT, 5)


def test_caught_up_transferee_takes_leadership_at_once():
    """Caught up -> handleTakeLeadership: candidate for term+1 with needIncreaseTermImmediately."""
    m = follower("n1", term=3, leader="n0", ledger_end_index=10)
    m2, resp, outs = server(m, transfer_req(to="n1", index=10))
    assert resp is None  # answered when TakeLeadershipTask decides
    assert (m2.role, m2.curr_term, m2.term_to_take_leadership, m2.need_increase_term_immediately) == (
        el.Role.CANDIDATE, 3, 4, True)
    assert roles(outs) == [(4, el.Role.CANDIDATE)] and m2.take_leadership.waiting_for_index is False


# --- the transferee's catch-up wait ---


def waiting(now=1000, ledger_end_index=7):
    m = follower("n1", term=3, leader="n0", ledger_end_index=ledger_end_index)
    m2, resp, _ = server(m, transfer_req(to="n1", index=10), now=now)
    assert resp is None and m2.take_leadership.waiting_for_index
    return m2


def test_lagging_transferee_waits_until_the_timeout_then_fails():
    """fallBehind > 0: poll; costTime > leadershipTransferWaitTimeout (1000 ms) -> TAKE_LEADERSHIP_FAILED."""
    m = waiting(now=1000)
    assert srv.wake_at(CFG3.evolve(enable_leader_elector=False), m) == 2001
    m2, resp, _ = srv.take_leadership_wait_step(CFG3, m, 2000)
    assert resp is None and m2 == m
    m3, resp, _ = srv.take_leadership_wait_step(CFG3, m, 2001)
    assert (resp.code, resp.term) == (C.TAKE_LEADERSHIP_FAILED, 3)
    assert m3.take_leadership is None and m3.role is el.Role.FOLLOWER


def test_lagging_transferee_that_catches_up_takes_leadership():
    """Once the store reaches the leader's index the wait ends in handleTakeLeadership."""
    m = mstate.update_ledger_index_and_term(waiting(now=1000), 10, 3)
    assert srv.wake_at(CFG3.evolve(enable_leader_elector=False), m) == 0  # due now
    m2, resp, _ = srv.take_leadership_wait_step(CFG3, m, 1500)
    assert resp is None and m2.term_to_take_leadership == 4 and m2.role is el.Role.CANDIDATE


def test_on_tick_answers_the_transfer_rpc_when_the_wait_fails():
    """The failed wait's reply goes back on the LEADERSHIP_TRANSFER RPC."""
    _, outs = srv.on_tick(CFG3, waiting(now=1000), 2001, 0)
    (r,) = [o for o in outs if isinstance(o, Respond)]
    assert r.rpc == 5 and r.msg.code is C.TAKE_LEADERSHIP_FAILED


def test_handle_take_leadership_rejects_a_stale_term():
    """currTerm != request.term -> INCONSISTENT_TERM with term = currTerm, no candidacy."""
    m = waiting().evolve(curr_term=4)
    m = mstate.update_ledger_index_and_term(m, 10, 3)
    m2, resp, outs = elector.handle_take_leadership(CFG3, m, 1500)
    assert (resp.code, resp.term) == (C.INCONSISTENT_TERM, 4)
    assert m2.role is el.Role.FOLLOWER and m2.take_leadership is None and outs == ()


# --- TakeLeadershipTask#check ---


def pending_task(target=4):
    wait = mstate.TakeLeadershipWait(rpc=9, request=transfer_req(term=target - 1, to="n1"), started=0,
                                     waiting_for_index=False)
    return member("n1", curr_term=target, term_to_take_leadership=target, take_leadership=wait)


@pytest.mark.parametrize("term, role, code", [
    (5, el.Role.LEADER, C.EXPIRED_TERM),
    (5, el.Role.CANDIDATE, C.EXPIRED_TERM),
    (4, el.Role.LEADER, C.SUCCESS),
    (4, el.Role.FOLLOWER, C.TAKE_LEADERSHIP_FAILED),
    (3, el.Role.FOLLOWER, C.TAKE_LEADERSHIP_FAILED),
    (3, el.Role.CANDIDATE, C.INTERNAL_ERROR),
    (3, el.Role.LEADER, C.INTERNAL_ERROR),
])
def test_take_leadership_task_check_answers(term, role, code):
    """TakeLeadershipTask#check: the code for each (term vs termToTakeLeadership, role); then the task is done."""
    m2, outs = elector.take_leadership_task_check(pending_task(4), term, role)
    assert outs == (Respond(rpc=9, msg=el.LeadershipTransferResponse(code=code, term=term)),)
    assert (m2.term_to_take_leadership, m2.take_leadership) == (-1, None)


def test_take_leadership_task_keeps_waiting_while_candidate_of_the_target_term():
    """term == target and CANDIDATE -> return without answering."""
    m = pending_task(4)
    assert elector.take_leadership_task_check(m, 4, el.Role.CANDIDATE) == (m, ())


def test_take_leadership_task_idle_without_a_pending_future():
    """termToTakeLeadership == -1 or no responseFuture -> no-op."""
    m = member(term_to_take_leadership=-1)
    assert elector.take_leadership_task_check(m, 4, el.Role.LEADER) == (m, ())
    m = pending_task(4).evolve(take_leadership=None)
    assert elector.take_leadership_task_check(m, 4, el.Role.LEADER) == (m, ())


def test_transferee_wins_and_answers_success_when_it_becomes_leader():
    """The role change to LEADER of the target term completes the transfer with SUCCESS."""
    m = pending_task(4).evolve(curr_vote_for="n1")
    m2, outs = elector.change_role_to_leader(CFG3, m, 4)
    responds = [o for o in outs if isinstance(o, Respond)]
    assert responds[0].msg.code is C.SUCCESS and m2.role is el.Role.LEADER


def test_preferred_transferee_solicits_after_30_to_99_ms():
    """isTakingLeadership: the preferred transferee's term bump schedules its vote 30..99 ms later."""
    m = follower("n2", term=3, leader="n0", ledger_end_index=10)
    m, _, _ = srv.server_handle_leadership_transfer(PREF, m, transfer_req(to="n2", transferee="n2"), 5, 1000)
    m2, _ = elector.maintain_as_candidate(PREF, m, 1000, core.DRAW_SPAN - 1)
    assert m2.curr_term == 4 and m2.next_time_to_request_vote == 1000 + 99


def test_non_preferred_transferee_uses_the_normal_interval():
    """An operator's transfer to a peer outside preferredLeaderIds is not 'taking leadership': 300..999 ms."""
    m = follower("n1", term=3, leader="n0", ledger_end_index=10)
    m, _, _ = srv.server_handle_leadership_transfer(PREF, m, transfer_req(to="n1"), 5, 1000)
    m2, _ = elector.maintain_as_candidate(PREF, m, 1000, 0)
    assert m2.curr_term == 4 and m2.next_time_to_request_vote == 1300


def test_three_servers_hand_leadership_to_the_preferred_node():
    """LeaderElectorTest#testThreeServerAndPreferredLeader (first part): n2 ends up leading."""
    cfg = election_world.make_config(3, {"preferred_leader_ids": "n2"}).evolve(profile=faults.profile("none"))
    result = runner.simulate(cfg, seed=4, steps=3000, until_ms=10_000)
    leaders = [m.self_id for m in result.world.nodes if m.role is el.Role.LEADER]
    assert leaders == ["n2"] and result.ok()
