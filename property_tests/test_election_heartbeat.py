"""Heartbeats: DLedgerLeaderElector#handleHeartBeat, DLedgerServer#handleHeartBeat, sendHeartbeats
(the response callback, the latch and the parse after beatLatch.await), maintainAsLeader and
maintainAsFollower. One test per Java branch, named after it."""

from __future__ import annotations

import pytest

from property_tests.support.election import CFG3, CFG5, follower, hb_req, leader, member, roles, sends
from reference_impl.election import leader_elector as elector
from reference_impl.election import member_state as mstate
from reference_impl.election import records as el
from reference_impl.election import server as srv

C = el.Code


def hb(m, req, now=100, cfg=CFG3):
    return elector.handle_heart_beat(cfg, m, req, now)


# --- handleHeartBeat ---


def test_unknown_member_when_leader_is_not_a_peer():
    """!isPeerMember(leaderId) -> UNKNOWN_MEMBER with term = currTerm."""
    m = follower(term=3, leader="n1", last_leader_heart_beat_time=5)
    m2, resp, outs = hb(m, hb_req(leader_id="n7", term=3))
    assert (resp.code, resp.term) == (C.UNKNOWN_MEMBER, 3)
    assert m2 == m and outs == ()


def test_unexpected_member_when_heartbeat_claims_the_receiver_as_leader():
    """selfId.equals(leaderId) -> UNEXPECTED_MEMBER with term = currTerm."""
    m = leader(term=3)
    m2, resp, _ = hb(m, hb_req(leader_id="n0", term=3))
    assert (resp.code, resp.term) == (C.UNEXPECTED_MEMBER, 3)
    assert m2 == m


def test_expired_term_when_heartbeat_term_is_older():
    """request.term < currTerm -> EXPIRED_TERM with term = currTerm; the follower's timer is not refreshed."""
    m = follower(term=4, leader="n1", last_leader_heart_beat_time=5)
    m2, resp, outs = hb(m, hb_req(leader_id="n1", term=3))
    assert (resp.code, resp.term) == (C.EXPIRED_TERM, 4)
    assert m2 == m and outs == ()


def test_same_term_same_leader_refreshes_the_heartbeat_time():
    """Fast path: same term and leaderId -> lastLeaderHeartBeatTime = now, SUCCESS, no role change."""
    m = follower(term=2, leader="n1", last_leader_heart_beat_time=5)
    m2, resp, outs = hb(m, hb_req(leader_id="n1", term=2), now=1234)
    assert (resp.code, resp.term) == (C.SUCCESS, -1)
    assert m2 == m.evolve(last_leader_heart_beat_time=1234) and outs == ()


def test_same_term_without_leader_makes_the_candidate_a_follower():
    """Locked path, leaderId == null -> changeRoleToFollower(term, leaderId): FOLLOWER, WAIT_TO_REVOTE, timer = now."""
    m = member(curr_term=2, curr_vote_for="n0", last_parse_result=el.ParseResult.WAIT_TO_VOTE_NEXT,
               need_increase_term_immediately=False)
    m2, resp, outs = hb(m, hb_req(leader_id="n2", term=2), now=777)
    assert resp.code is C.SUCCESS
    assert (m2.role, m2.leader_id, m2.curr_term, m2.curr_vote_for) == (el.Role.FOLLOWER, "n2", 2, "n0")
    assert m2.last_parse_result is el.ParseResult.WAIT_TO_REVOTE and m2.last_leader_heart_beat_time == 777
    assert outs == (el.RoleChanged(term=2, role=el.Role.FOLLOWER, leader="n2"),)


def test_same_term_other_leader_is_inconsistent_leader_without_a_term():
    """Locked path, a different leader in the same term -> INCONSISTENT_LEADER; the response carries no term (-1)."""
    m = follower(term=2, leader="n1", last_leader_heart_beat_time=5)
    m2, resp, outs = hb(m, hb_req(leader_id="n2", term=2))
    assert (resp.code, resp.term) == (C.INCONSISTENT_LEADER, -1)
    assert m2 == m and outs == ()


def test_leader_receiving_a_same_term_heartbeat_answers_inconsistent_leader():
    """A leader's leaderId is itself, so a rival's same-term heartbeat is INCONSISTENT_LEADER and the leader stays."""
    m = leader(term=2)
    m2, resp, _ = hb(m, hb_req(leader_id="n1", term=2))
    assert resp.code is C.INCONSISTENT_LEADER and m2.role is el.Role.LEADER


@pytest.mark.parametrize("m", [follower(term=2, leader="n1"), leader(term=2), member(curr_term=2)],
                         ids=["follower", "leader", "candidate"])
def test_larger_term_turns_candidate_and_answers_term_not_ready(m):
    """request.term > currTerm -> changeRoleToCandidate(term), needIncreaseTermImmediately, TERM_NOT_READY (term -1)."""
    m2, resp, outs = hb(m, hb_req(leader_id="n2", term=5))
    assert (resp.code, resp.term) == (C.TERM_NOT_READY, -1)
    assert (m2.role, m2.leader_id, m2.curr_term) == (el.Role.CANDIDATE, None, 2)  # never a follower of term 5 here
    assert m2.known_max_term_in_group == 5 and m2.need_increase_term_immediately
    assert roles(outs) == [(5, el.Role.CANDIDATE)]


def test_after_term_not_ready_the_next_loop_adopts_the_term_and_the_next_heartbeat_is_followed():
    """The node adopts the term in its own loop (nextTerm) and then follows the next heartbeat of that term."""
    m, _, _ = hb(follower(term=2, leader="n1"), hb_req(leader_id="n2", term=5), now=100)
    m, outs = elector.maintain_as_candidate(CFG3, m, now=110, draw=0)
    assert m.curr_term == 5 and sends(outs) == []
    m, resp, _ = hb(m, hb_req(leader_id="n2", term=5), now=120)
    assert resp.code is C.SUCCESS and (m.role, m.leader_id) == (el.Role.FOLLOWER, "n2")


# --- DLedgerServer#handleHeartBeat guards ---


def test_server_heartbeat_for_another_member_is_unknown_member():
    """remoteId != selfId -> UNKNOWN_MEMBER, term copied from the request, nothing changes."""
    m = follower(term=1, leader="n1")
    m2, resp, _ = srv.server_handle_heart_beat(CFG3, m, hb_req(leader_id="n1", term=9, to="n2"), 50)
    assert (resp.code, resp.term) == (C.UNKNOWN_MEMBER, 9)
    assert m2 == m


def test_server_heartbeat_from_another_group_is_unknown_group():
    """group mismatch -> UNKNOWN_GROUP, term copied from the request."""
    m = follower(term=1, leader="n1")
    m2, resp, _ = srv.server_handle_heart_beat(CFG3, m, hb_req(leader_id="n1", term=9, group="g2"), 50)
    assert (resp.code, resp.term) == (C.UNKNOWN_GROUP, 9)
    assert m2 == m


def test_server_heartbeat_past_the_guards_reaches_the_elector():
    """A well-addressed heartbeat refreshes the follower's timer."""
    m2, resp, _ = srv.server_handle_heart_beat(CFG3, follower(term=1, leader="n1"), hb_req(leader_id="n1"), 50)
    assert resp.code is C.SUCCESS and m2.last_leader_heart_beat_time == 50


# --- sendHeartbeats: the response callback ---


def in_round(cfg=CFG3, now=1000, **fields):
    """A leader blocked in a heartbeat round started at `now`."""
    m, _ = elector.maintain_as_leader(cfg, leader(term=3, **fields), now)
    assert isinstance(m.round, mstate.HeartBeatRound)
    return m


def respond(m, peer, resp, now=1010, cfg=CFG3, seq=None):
    return elector.on_heart_beat_response(cfg, m, m.round.seq if seq is None else seq, peer, resp, now)


@pytest.mark.parametrize("code, field, value", [
    (C.SUCCESS, "succ_num", 2),
    (C.TERM_NOT_READY, "not_ready_num", 1),
    (C.INCONSISTENT_LEADER, "inconsist_leader", True),
    (C.UNKNOWN_MEMBER, None, None),
    (C.UNEXPECTED_MEMBER, None, None),
    (C.UNKNOWN_GROUP, None, None),
])
def test_response_code_feeds_its_counter(code, field, value):
    """switch(code): SUCCESS succNum++, TERM_NOT_READY notReadyNum++, INCONSISTENT_LEADER flag; others allNum only."""
    m = in_round(CFG5)
    before = m.round
    after = respond(m, "n1", el.HeartBeatResponse(code=code), cfg=CFG5).round
    assert after.all_num == before.all_num + 1
    changed = {f: getattr(after, f) for f in ("succ_num", "not_ready_num", "inconsist_leader", "max_term")
               if getattr(after, f) != getattr(before, f)}
    assert changed == ({} if field is None else {field: value})


def test_expired_term_is_last_writer_wins_not_the_max():
    """EXPIRED_TERM -> maxTerm.set(x.getTerm()): a later, smaller term overwrites a larger one."""
    m = in_round(CFG5)
    m = respond(m, "n1", el.HeartBeatResponse(code=C.EXPIRED_TERM, term=9), cfg=CFG5)
    m = respond(m, "n2", el.HeartBeatResponse(code=C.EXPIRED_TERM, term=6), cfg=CFG5)
    assert m.round.max_term == 6


def test_network_error_marks_the_peer_dead_and_any_reply_marks_it_live():
    """peersLiveTable.put(id, code != NETWORK_ERROR); a failed RPC (no response) is a NETWORK_ERROR."""
    m = in_round(CFG5)
    m = respond(m, "n1", None, cfg=CFG5)
    m = respond(m, "n2", el.HeartBeatResponse(code=C.NETWORK_ERROR), cfg=CFG5)
    m = respond(m, "n3", el.HeartBeatResponse(code=C.EXPIRED_TERM, term=1), cfg=CFG5)
    assert dict(m.peers_live_table) == {"n1": False, "n2": False, "n3": True}
    assert (m.round.succ_num, m.round.all_num) == (1, 4)


def test_late_reply_only_updates_the_live_table():
    """A reply after its round ended (or for an older round) writes peersLiveTable and nothing else."""
    m = in_round()
    old_seq = m.round.seq
    m = respond(m, "n1", el.HeartBeatResponse(code=C.SUCCESS))
    m, _ = elector.finish_heart_beat_round(CFG3, m, m.round, 1020)
    m2 = respond(m, "n2", el.HeartBeatResponse(code=C.SUCCESS), seq=old_seq)
    assert m2 == m.evolve(peers_live_table=m.peers_live_table.set("n2", True))
    m3, _ = elector.maintain_as_leader(CFG3, m2, 4000)  # the next round
    assert m3.round.seq != old_seq
    m4 = respond(m3, "n2", None, seq=old_seq, now=4001)
    assert m4.round == m3.round and m4.peers_live_table["n2"] is False


def test_latch_released_by_a_quorum_of_successes():
    """isQuorum(succNum) counts the latch down: leader + one success of three."""
    m = respond(in_round(), "n1", el.HeartBeatResponse(code=C.SUCCESS), now=1003)
    assert m.round.released_at == 1003
    assert srv.wake_at(CFG3, m) == 1003


def test_latch_released_by_success_plus_not_ready_quorum():
    """isQuorum(succNum + notReadyNum) counts the latch down (five nodes: self, one success, one not ready)."""
    m = respond(in_round(CFG5), "n1", el.HeartBeatResponse(code=C.SUCCESS), now=1003, cfg=CFG5)
    assert m.round.released_at == -1
    m = respond(m, "n2", el.HeartBeatResponse(code=C.TERM_NOT_READY), now=1004, cfg=CFG5)
    assert m.round.released_at == 1004


def test_latch_released_when_every_peer_answered():
    """allNum == peerSize counts the latch down even when every answer is a failure."""
    m = respond(in_round(), "n1", None, now=1003)
    assert m.round.released_at == -1 and srv.wake_at(CFG3, m) == 3000  # still waiting for the deadline
    m = respond(m, "n2", el.HeartBeatResponse(code=C.EXPIRED_TERM, term=1), now=1004)
    assert m.round.released_at == 1004


def test_latch_release_time_is_kept_once_set():
    """The latch counts down once: a later success does not move the release time."""
    m = respond(in_round(), "n1", el.HeartBeatResponse(code=C.SUCCESS), now=1003)
    m = respond(m, "n2", el.HeartBeatResponse(code=C.SUCCESS), now=1005)
    assert m.round.released_at == 1003 and m.round.succ_num == 3


# --- sendHeartbeats: the parse after beatLatch.await ---


def finish(round_fields, now=3000, cfg=CFG3, **member_fields):
    m = leader(term=3, **member_fields)
    hbr = mstate.HeartBeatRound(seq=1, term=3, deadline=now, **round_fields)
    return elector.finish_heart_beat_round(cfg, m.evolve(round=hbr, round_seq=1), hbr, now)


def test_quorum_success_records_last_succ_time():
    """isQuorum(succNum) -> lastSuccHeartBeatTime = now; the leader stays."""
    m, outs = finish({"succ_num": 2}, last_succ_heart_beat_time=-1)
    assert (m.role, m.last_succ_heart_beat_time, m.round, outs) == (el.Role.LEADER, 3000, None, ())


def test_quorum_success_ignores_a_minoritys_expired_term():
    """A leader with a quorum of successes does not step down on a higher EXPIRED_TERM from a minority."""
    m, outs = finish({"succ_num": 3, "max_term": 9, "inconsist_leader": True}, cfg=CFG5)
    assert m.role is el.Role.LEADER and m.last_succ_heart_beat_time == 3000 and outs == ()


def test_success_plus_not_ready_quorum_resends_at_once():
    """isQuorum(succ + notReady) -> lastSendHeartBeatTime = -1: the next loop sends a new round immediately."""
    m, outs = finish({"succ_num": 1, "not_ready_num": 1, "max_term": 9}, last_send_heart_beat_time=1000,
                     last_succ_heart_beat_time=-1)
    assert m.role is el.Role.LEADER and m.last_send_heart_beat_time == -1 and outs == ()
    m, outs = elector.maintain_as_leader(CFG3, m, now=3010)
    assert len(sends(outs)) == 2


def test_higher_max_term_steps_down_to_candidate_of_that_term():
    """maxTerm > term -> changeRoleToCandidate(maxTerm): knownMaxTermInGroup = maxTerm, currTerm unchanged."""
    m, outs = finish({"max_term": 8}, last_succ_heart_beat_time=2500)
    assert (m.role, m.curr_term, m.known_max_term_in_group) == (el.Role.CANDIDATE, 3, 8)
    assert outs[0] == el.LeaderStepDown(term=3, reason="max_term")
    assert roles(outs) == [(8, el.Role.CANDIDATE)]


def test_expired_term_not_above_the_round_term_does_not_step_down():
    """maxTerm <= term falls through to the lease check (here fresh), so the leader stays."""
    m, outs = finish({"max_term": 3}, last_succ_heart_beat_time=2500)
    assert m.role is el.Role.LEADER and outs == ()


def test_inconsistent_leader_steps_down_at_the_same_term():
    """inconsistLeader -> changeRoleToCandidate(term) even with a fresh lease."""
    m, outs = finish({"inconsist_leader": True}, last_succ_heart_beat_time=2900)
    assert (m.role, m.curr_term, m.curr_vote_for) == (el.Role.CANDIDATE, 3, "n0")
    assert outs[0] == el.LeaderStepDown(term=3, reason="inconsistent_leader")


def test_lease_expiry_steps_down_only_after_max_heart_beat_leak_intervals():
    """elapsed(lastSuccHeartBeatTime) > 3 x 2000 ms -> candidate; exactly 6000 ms keeps leading."""
    m, outs = finish({}, now=9000, last_succ_heart_beat_time=3000)
    assert m.role is el.Role.LEADER and outs == ()
    m, outs = finish({}, now=9001, last_succ_heart_beat_time=3000)
    assert m.role is el.Role.CANDIDATE and m.curr_term == 3
    assert outs[0] == el.LeaderStepDown(term=3, reason="lease")


def test_new_leader_without_an_earlier_success_steps_down_after_one_failed_round():
    """lastSuccHeartBeatTime starts at -1 ("long ago"): a fresh leader whose first round fails steps down at once."""
    m, outs = finish({}, now=2010, last_succ_heart_beat_time=-1)
    assert m.role is el.Role.CANDIDATE and outs[0].reason == "lease"


def test_failed_round_within_the_lease_keeps_leading():
    """No quorum, no higher term, no inconsistency and a fresh lease: nothing happens."""
    m, outs = finish({"succ_num": 1, "not_ready_num": 0}, now=3000, last_succ_heart_beat_time=1000)
    assert m.role is el.Role.LEADER and m.last_succ_heart_beat_time == 1000 and outs == ()


def test_round_that_ends_after_the_leader_already_stepped_down_reports_no_step_down():
    """A round parsed when the node is no longer leader re-enters candidate without a LeaderStepDown."""
    m = leader(term=3).evolve(role=el.Role.CANDIDATE, leader_id=None)
    hbr = mstate.HeartBeatRound(seq=1, term=3, deadline=2000)
    m2, outs = elector.finish_heart_beat_round(CFG3, m.evolve(round=hbr), hbr, 2000)
    assert not [o for o in outs if isinstance(o, el.LeaderStepDown)]
    assert roles(outs) == [(3, el.Role.CANDIDATE)]


# --- maintainAsLeader ---


def test_leader_sends_nothing_within_the_heartbeat_interval():
    """elapsed(lastSendHeartBeatTime) <= heartBeatTimeIntervalMs -> no round."""
    m = leader(term=3, last_send_heart_beat_time=1000)
    assert elector.maintain_as_leader(CFG3, m, 3000) == (m, ())


def test_leader_sends_one_heartbeat_per_peer_after_the_interval():
    """elapsed > interval -> lastSendHeartBeatTime = now and a HeartBeatRequest to every peer but itself."""
    m = leader(term=3, last_send_heart_beat_time=1000)
    m2, outs = elector.maintain_as_leader(CFG3, m, 3001)
    assert m2.last_send_heart_beat_time == 3001
    reqs = sends(outs)
    assert [s.dst for s in reqs] == ["n1", "n2"]
    assert all(s.msg == el.HeartBeatRequest(group="default", local_id="n0", remote_id=s.dst, leader_id="n0", term=3)
               for s in reqs)
    assert all(s.ctx == ("hb", m2.round.seq) and s.timeout_ms == 3000 for s in reqs)
    assert (m2.round.term, m2.round.deadline, m2.round.succ_num, m2.round.all_num) == (3, 5001, 1, 1)


def test_new_leader_sends_its_first_heartbeat_at_once():
    """changeRoleToLeader sets lastSendHeartBeatTime = -1 ("long ago"), so the first loop sends."""
    m, _ = elector.change_role_to_leader(CFG3, member(curr_term=2, curr_vote_for="n0"), 2)
    _, outs = elector.maintain_as_leader(CFG3, m, 0)
    assert len(sends(outs)) == 2


def test_heartbeat_round_ends_on_tick_at_the_latch_or_the_deadline():
    """on_tick parses the round when the latch is down or beatLatch.await(2000) times out, then sleeps 10 ms."""
    m = in_round(now=1000)
    assert srv.on_tick(CFG3, m, 2999, 0)[0].round is not None
    m2, _ = srv.on_tick(CFG3, m, 3000, 0)
    assert m2.round is None and m2.next_loop_ms == 3010 and m2.role is el.Role.CANDIDATE  # no success, no lease


# --- maintainAsFollower ---


@pytest.mark.parametrize("since", [0, 4000, 4001, 6000])
def test_follower_keeps_following_up_to_max_heart_beat_leak_intervals(since):
    """elapsed <= 2 x interval skips the check; elapsed <= 3 x interval (6000 ms) keeps the follower."""
    m = follower(term=2, leader="n1", last_leader_heart_beat_time=1000)
    assert elector.maintain_as_follower(CFG3, m, 1000 + since) == (m, ())


def test_follower_timeout_after_max_heart_beat_leak_intervals():
    """elapsed > 6000 ms -> changeRoleToCandidate(currTerm) with FollowerTimeout; term and vote are kept."""
    m = follower(term=2, leader="n1", last_leader_heart_beat_time=1000, curr_vote_for="n1")
    m2, outs = elector.maintain_as_follower(CFG3, m, 7001)
    assert outs[0] == el.FollowerTimeout(term=2, leader="n1")
    assert (m2.role, m2.leader_id, m2.curr_term, m2.curr_vote_for) == (el.Role.CANDIDATE, None, 2, "n1")
    assert roles(outs) == [(2, el.Role.CANDIDATE)]


def test_heartbeat_in_time_postpones_the_follower_timeout():
    """A heartbeat at 5000 ms resets the timer: still following at 7001, timeout after 11000."""
    m = follower(term=2, leader="n1", last_leader_heart_beat_time=1000)
    m, _, _ = hb(m, hb_req(leader_id="n1", term=2), now=5000)
    assert elector.maintain_as_follower(CFG3, m, 7001)[0].role is el.Role.FOLLOWER
    assert elector.maintain_as_follower(CFG3, m, 11001)[0].role is el.Role.CANDIDATE


def test_timed_out_follower_first_solicits_at_the_same_term():
    """changeRoleToFollower left WAIT_TO_REVOTE, so the new candidate's first round keeps the term."""
    m, _, _ = hb(member(curr_term=2), hb_req(leader_id="n1", term=2), now=0)
    m, _ = elector.maintain_as_follower(CFG3, m, 6001)
    m, outs = elector.maintain_as_candidate(CFG3, m, 6011, 0)
    assert m.curr_term == 2 and m.vote_start.term == 2 and outs == ()
    m, outs = elector.vote_for_quorum_responses(CFG3, m, 6011, 0)
    assert {s.msg.term for s in sends(outs)} == {2}


def test_follower_timeout_with_one_heartbeat_leak_is_still_gated_by_the_4000_ms_precheck():
    """maxHeartBeatLeak = 1: the 2 x interval pre-check decides, so the timeout comes after 4000 ms, not 2000."""
    cfg = CFG3.evolve(max_heart_beat_leak=1)
    m = follower(term=2, leader="n1", last_leader_heart_beat_time=0)
    assert elector.maintain_as_follower(cfg, m, 4000)[0].role is el.Role.FOLLOWER
    assert elector.maintain_as_follower(cfg, m, 4001)[0].role is el.Role.CANDIDATE
    assert srv.wake_at(cfg, m.evolve(next_loop_ms=0)) == 4001


def test_follower_wakes_exactly_when_the_timeout_is_due():
    """wake_at for a follower is lastLeaderHeartBeatTime + maxHeartBeatLeak x interval + 1."""
    m = follower(term=2, leader="n1", last_leader_heart_beat_time=1000, next_loop_ms=1010)
    assert srv.wake_at(CFG3, m) == 7001
    m2, outs = srv.on_tick(CFG3, m, 7001, 0)
    assert outs[0] == el.FollowerTimeout(term=2, leader="n1")
