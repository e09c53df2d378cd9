"""The candidate: maintainAsCandidate, voteForQuorumResponses, the vote callbacks and latch, the
parse after voteLatch.await, nextTerm, restart semantics, DLedgerUtils#elapsed and wake_at.
Leadership transfer lives in test_election_transfer.py."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from property_tests.support.election import CFG3, CFG5, DRAW_MAX, follower, leader, member, roles, sends
from reference_impl.core.state import FrozenMap
from reference_impl.election import leader_elector as elector
from reference_impl.election import member_state as mstate
from reference_impl.election import records as el
from reference_impl.election import server as srv

P = el.ParseResult
R = el.VoteResult


# --- maintainAsCandidate ---


def candidate_loop(cfg, m, now, draw):
    """One maintainAsCandidate iteration: its locked part, then (the lock released) the vote round."""
    m, outs = elector.maintain_as_candidate(cfg, m, now, draw)
    if m.vote_start is None:
        return m, outs
    m, more = elector.vote_for_quorum_responses(cfg, m, now, draw)
    return m, outs + more


def test_candidate_waits_until_next_time_to_request_vote():
    """now < nextTimeToRequestVote and !needIncreaseTermImmediately -> return without doing anything."""
    m = member(curr_term=2, next_time_to_request_vote=500)
    assert elector.maintain_as_candidate(CFG3, m, 499, 0) == (m, ())
    m2, outs = candidate_loop(CFG3, m, 500, 0)
    assert isinstance(m2.round, mstate.VoteRound) and len(sends(outs)) == 2


def test_locked_part_only_reads_the_term_and_ledger_ends():
    """maintainAsCandidate's synchronized block: nextTerm and the ledger ends read; no request and no
    self-vote yet (voteForQuorumResponses runs after the lock is released)."""
    m = member(curr_term=4, curr_vote_for="n2", last_parse_result=P.WAIT_TO_VOTE_NEXT, ledger_end_index=6,
               ledger_end_term=3)
    m2, outs = elector.maintain_as_candidate(CFG3, m, 100, 0)
    assert outs == () and m2.round is None and (m2.curr_term, m2.curr_vote_for) == (5, None)
    assert m2.vote_start == mstate.VoteStart(term=5, ledger_end_index=6, ledger_end_term=3)
    assert srv.wake_at(CFG3, m2) == 0 and srv.wake_slack(CFG3, m2, 100, 0) == 0


def test_vote_round_asks_with_what_the_locked_part_read():
    """voteForQuorumResponses(term, ledgerEndTerm, ledgerEndIndex) takes the locals read under the lock,
    not the member's values by then."""
    m = member(curr_term=5, vote_start=mstate.VoteStart(term=5, ledger_end_index=6, ledger_end_term=3),
               ledger_end_index=9, ledger_end_term=4)
    m2, outs = elector.vote_for_quorum_responses(CFG3, m, 100, 0)
    assert {(s.msg.term, s.msg.ledger_end_index, s.msg.ledger_end_term) for s in sends(outs)} == {(5, 6, 3)}
    assert m2.vote_start is None and m2.round.term == 5


@pytest.mark.parametrize("last", [P.WAIT_TO_REVOTE, P.REVOTE_IMMEDIATELY, P.PASSED])
def test_candidate_revotes_at_the_same_term_unless_told_to_vote_next(last):
    """Only WAIT_TO_VOTE_NEXT or needIncreaseTermImmediately call nextTerm; other results solicit at currTerm."""
    m = member(curr_term=4, curr_vote_for="n0", last_parse_result=last)
    m2, outs = candidate_loop(CFG3, m, 100, 0)
    assert m2.curr_term == 4 and {s.msg.term for s in sends(outs)} == {4}


def test_wait_to_vote_next_increments_the_term_and_votes():
    """WAIT_TO_VOTE_NEXT -> nextTerm (+1, vote cleared), WAIT_TO_REVOTE, then the round at the new term."""
    m = member(curr_term=4, curr_vote_for="n2", last_parse_result=P.WAIT_TO_VOTE_NEXT)
    m2, outs = candidate_loop(CFG3, m, 100, 0)
    assert (m2.curr_term, m2.curr_vote_for, m2.last_parse_result) == (5, "n0", P.WAIT_TO_REVOTE)
    assert {s.msg.term for s in sends(outs)} == {5} and m2.round.term == 5


def test_self_vote_refused_after_a_handler_granted_the_new_term_in_between():
    """maintainAsCandidate releases the MemberState lock after nextTerm; a vote handler that takes it
    first ACCEPTs another candidate of the same new term, and the candidate's own self-vote (handleVote,
    self=true) is then REJECT_ALREADY_VOTED: one vote per term, and not its own."""
    m = member(curr_term=4, last_parse_result=P.WAIT_TO_VOTE_NEXT)
    m, _ = elector.maintain_as_candidate(CFG3, m, 100, 0)
    other = el.VoteRequest(group="default", remote_id="n0", leader_id="n1", term=5)
    m, reply, granted = srv.server_handle_vote(CFG3, m, other)
    assert reply.vote_result is R.ACCEPT and granted == (el.VoteGranted(term=5, candidate="n1"),)
    m, outs = elector.vote_for_quorum_responses(CFG3, m, 100, 0)
    assert m.curr_vote_for == "n1" and not [o for o in outs if isinstance(o, el.VoteGranted)]
    assert (m.round.valid_num, m.round.accepted_num) == (1, 0)


def test_need_increase_bypasses_the_wait_and_only_bumps_the_term():
    """needIncreaseTermImmediately: nextTerm, next vote at now + 300..999, flag cleared, no vote this loop."""
    m = member(curr_term=2, curr_vote_for="n1", known_max_term_in_group=2, next_time_to_request_vote=10_000,
               need_increase_term_immediately=True)
    m2, outs = elector.maintain_as_candidate(CFG3, m, 100, 0)
    assert outs == () and m2.round is None
    assert (m2.curr_term, m2.curr_vote_for, m2.need_increase_term_immediately) == (3, None, False)
    assert m2.next_time_to_request_vote == 400 and m2.last_parse_result is P.WAIT_TO_REVOTE


@pytest.mark.parametrize("draw, delay", [(0, 300), (1 << 15, 650), (DRAW_MAX, 999)])
def test_need_increase_schedules_the_vote_300_to_999_ms_later(draw, delay):
    """getNextTimeToRequestVote = now + minVoteIntervalMs + nextInt(max - min)."""
    m = member(need_increase_term_immediately=True)
    assert elector.maintain_as_candidate(CFG3, m, 1000, draw)[0].next_time_to_request_vote == 1000 + delay


def test_next_term_jumps_to_known_max_term_without_adding_one():
    """MemberState#nextTerm: knownMaxTermInGroup > currTerm -> currTerm = knownMaxTermInGroup (no +1)."""
    assert mstate.next_term(member(curr_term=3, known_max_term_in_group=7)).curr_term == 7
    assert mstate.next_term(member(curr_term=3, known_max_term_in_group=3)).curr_term == 4
    assert mstate.next_term(member(curr_term=3, curr_vote_for="n1")).curr_vote_for is None


def test_next_term_requires_the_candidate_role():
    """nextTerm throws ILLEGAL_MEMBER_STATE unless role == CANDIDATE."""
    with pytest.raises(AssertionError, match="ILLEGAL_MEMBER_STATE"):
        mstate.next_term(follower(term=2))


def test_higher_term_vote_then_own_loop_adopts_that_term():
    """A REJECT_TERM_NOT_READY for term 7 makes the voter's next loop jump straight to term 7."""
    m, _, _ = elector.handle_vote(CFG3, member(curr_term=2, next_time_to_request_vote=9000),
                                  el.VoteRequest(group="default", remote_id="n0", leader_id="n1", term=7), False)
    m2, outs = candidate_loop(CFG3, m, 100, 0)
    assert m2.curr_term == 7 and outs == ()


# --- voteForQuorumResponses ---


def test_vote_round_self_vote_is_counted_synchronously():
    """The self request goes through handleVote(self=true) at once: ACCEPT, persisted and counted."""
    m, outs = elector.vote_for_quorum_responses(CFG3, member(curr_term=1), now=50, draw=0)
    assert m.curr_vote_for == "n0"
    assert (m.round.all_num, m.round.valid_num, m.round.accepted_num) == (1, 1, 1)
    assert el.VoteGranted(term=1, candidate="n0") in outs


def test_vote_round_sends_one_request_per_peer():
    """Every peer but self gets a VoteRequest (term, log end) as an RPC with a 3000 ms timeout."""
    m, outs = elector.vote_for_quorum_responses(CFG5, member(curr_term=2, ledger_end_index=8, ledger_end_term=1),
                                                now=50, draw=0)
    reqs = sends(outs)
    assert [s.dst for s in reqs] == ["n1", "n2", "n3", "n4"]
    for s in reqs:
        assert s.msg == el.VoteRequest(group="default", remote_id=s.dst, leader_id="n0", term=2,
                                       ledger_end_index=8, ledger_end_term=1)
        assert s.ctx == ("vote", m.round.seq) and s.timeout_ms == 3000


@pytest.mark.parametrize("draw, wait", [(0, 2000), (1 << 15, 2500), (DRAW_MAX, 2999)])
def test_vote_round_waits_2000_plus_random_max_vote_interval(draw, wait):
    """voteLatch.await(2000 + nextInt(maxVoteIntervalMs))."""
    m, _ = elector.vote_for_quorum_responses(CFG3, member(), now=50, draw=draw)
    assert m.round.deadline == 50 + wait


def test_self_vote_rejected_when_already_voted_for_another_in_the_term():
    """A candidate that voted for the old leader in this term gets REJECT_ALREADY_VOTED from itself."""
    m, outs = elector.vote_for_quorum_responses(CFG3, member(curr_term=3, curr_vote_for="n1"), now=0, draw=0)
    assert (m.round.valid_num, m.round.accepted_num, m.curr_vote_for) == (1, 0, "n1")
    assert not [o for o in outs if isinstance(o, el.VoteGranted)]


def test_single_node_elects_itself_on_its_own_vote():
    """One peer: the self ACCEPT is a quorum, the latch is down at once and the parse makes it leader."""
    cfg = el.DLedgerConfig(peers=("n0",))
    m, outs = srv.on_tick(cfg, srv.boot(cfg, "n0", 0), 0, 0)
    assert m.vote_start is not None and outs == ()
    m, outs = srv.on_tick(cfg, m, 0, 0)
    assert m.round.released_at == 0 and sends(outs) == []
    m, outs = srv.on_tick(cfg, m, 0, 0)
    assert m.role is el.Role.LEADER and roles(outs) == [(0, el.Role.LEADER)]


# --- the vote callback ---


def open_round(cfg=CFG3, **fields):
    m, _ = elector.vote_for_quorum_responses(cfg, member(curr_term=5, **fields), now=0, draw=0)
    return m


def answer(m, result, term=5, cfg=CFG3, now=10, seq=None):
    resp = None if result is None else el.VoteResponse(term=term, vote_result=result)
    return elector.on_vote_response(cfg, m, m.round.seq if seq is None else seq, resp, now)


COUNTERS = ("valid_num", "accepted_num", "not_ready_term_num", "bigger_ledger_num", "already_has_leader",
            "known_max_term_in_group")


@pytest.mark.parametrize("result, changed", [
    (R.ACCEPT, {"valid_num": 2, "accepted_num": 2}),
    (R.REJECT_ALREADY_VOTED, {"valid_num": 2}),
    (R.REJECT_TAKING_LEADERSHIP, {"valid_num": 2}),
    (R.REJECT_ALREADY_HAS_LEADER, {"valid_num": 2, "already_has_leader": True}),
    (R.REJECT_TERM_SMALL_THAN_LEDGER, {"valid_num": 2, "known_max_term_in_group": 9}),
    (R.REJECT_EXPIRED_VOTE_TERM, {"valid_num": 2, "known_max_term_in_group": 9}),
    (R.REJECT_EXPIRED_LEDGER_TERM, {"valid_num": 2, "bigger_ledger_num": 1}),
    (R.REJECT_SMALL_LEDGER_END_INDEX, {"valid_num": 2, "bigger_ledger_num": 1}),
    (R.REJECT_TERM_NOT_READY, {"valid_num": 2, "not_ready_term_num": 1}),
    (R.REJECT_UNKNOWN_LEADER, {"valid_num": 2}),
    (R.REJECT_UNEXPECTED_LEADER, {"valid_num": 2}),
    (R.UNKNOWN, {}),
    (None, {}),  # a failed RPC: new VoteResponse(), i.e. UNKNOWN
], ids=lambda v: v.name if isinstance(v, R) else ("failed-rpc" if v is None else ""))
def test_vote_result_feeds_its_counter(result, changed):
    """The switch in maintainAsCandidate's callback; every answer counts in allNum, all but UNKNOWN in validNum."""
    m = open_round(CFG5)  # the self ACCEPT is in: valid 1, accepted 1, knownMax 5
    before = m.round
    after = answer(m, result, term=9, cfg=CFG5).round
    assert after.all_num == before.all_num + 1
    assert {f: getattr(after, f) for f in COUNTERS if getattr(after, f) != getattr(before, f)} == changed


def test_known_max_term_keeps_the_largest_rejection_term():
    """REJECT_EXPIRED_VOTE_TERM raises knownMaxTermInGroup only when larger (a max, unlike the heartbeat's maxTerm)."""
    m = answer(open_round(CFG5), R.REJECT_EXPIRED_VOTE_TERM, term=9, cfg=CFG5)
    m = answer(m, R.REJECT_EXPIRED_VOTE_TERM, term=6, cfg=CFG5)
    assert m.round.known_max_term_in_group == 9


def test_latch_down_on_quorum_of_accepts():
    """isQuorum(acceptedNum): self + one ACCEPT of three."""
    assert answer(open_round(), R.ACCEPT, now=7).round.released_at == 7


def test_latch_down_on_quorum_of_accepts_plus_not_ready():
    """isQuorum(acceptedNum + notReadyTermNum): self + one REJECT_TERM_NOT_READY of three."""
    assert answer(open_round(), R.REJECT_TERM_NOT_READY, now=7).round.released_at == 7


def test_latch_down_at_once_on_already_has_leader():
    """alreadyHasLeader counts the latch down even in a five-node round with one answer."""
    assert answer(open_round(CFG5), R.REJECT_ALREADY_HAS_LEADER, cfg=CFG5, now=7).round.released_at == 7


def test_latch_down_when_all_peers_answered():
    """allNum == peerSize counts the latch down whatever the answers."""
    m = answer(open_round(), R.REJECT_ALREADY_VOTED, now=7)
    assert m.round.released_at == -1
    assert answer(m, None, now=8).round.released_at == 8


def test_latch_stays_up_without_a_quorum():
    """Five nodes: self ACCEPT plus one ACCEPT and one rejection is not a quorum of three."""
    m = answer(open_round(CFG5), R.ACCEPT, cfg=CFG5)
    m = answer(m, R.REJECT_ALREADY_VOTED, cfg=CFG5)
    assert m.round.released_at == -1 and srv.wake_at(CFG5, m) == m.round.deadline


def test_answer_for_an_ended_round_is_ignored():
    """A vote response whose round was already parsed changes nothing."""
    m = open_round()
    stale = m.round.seq
    m, _ = elector.finish_vote_round(CFG3, m, m.round, 3000, 0)
    assert answer(m, R.ACCEPT, seq=stale) == m


# --- the parse after voteLatch.await, first matching branch wins ---


def parse(counters, cfg=CFG3, now=10_000, draw=0, **fields):
    m = member(curr_term=5, curr_vote_for="n0", **fields)
    vr = mstate.VoteRound(seq=1, term=5, deadline=now, known_max_term_in_group=counters.pop("known_max", 5), **counters)
    return elector.finish_vote_round(cfg, m.evolve(round=vr, round_seq=1), vr, now, draw)


def result_of(outs):
    return [o for o in outs if isinstance(o, el.VoteParsed)][0].result


def test_parse_known_max_term_first_wait_to_vote_next():
    """knownMaxTermInGroup > term wins: WAIT_TO_VOTE_NEXT, now + 300..999, changeRoleToCandidate(max)."""
    m, outs = parse({"known_max": 8, "accepted_num": 3, "valid_num": 3, "already_has_leader": True})
    assert result_of(outs) is P.WAIT_TO_VOTE_NEXT and m.last_parse_result is P.WAIT_TO_VOTE_NEXT
    assert m.next_time_to_request_vote == 10_300 and m.known_max_term_in_group == 8 and m.curr_term == 5
    assert roles(outs) == [(8, el.Role.CANDIDATE)]
    m2, _ = elector.maintain_as_candidate(CFG3, m, 10_300, 0)
    assert m2.curr_term == 8  # the next round jumps to the known term


def test_parse_already_has_leader_backs_off_an_extra_six_seconds():
    """alreadyHasLeader -> WAIT_TO_REVOTE, now + 300..999 + heartBeatTimeIntervalMs * maxHeartBeatLeak."""
    m, outs = parse({"already_has_leader": True, "accepted_num": 3, "valid_num": 3}, draw=DRAW_MAX)
    assert result_of(outs) is P.WAIT_TO_REVOTE and m.next_time_to_request_vote == 10_000 + 999 + 6000
    assert m.role is el.Role.CANDIDATE


def test_parse_without_valid_quorum_waits_to_revote_at_the_same_term():
    """!isQuorum(validNum) -> WAIT_TO_REVOTE, now + 300..999: an isolated node never inflates its term."""
    m, outs = parse({"valid_num": 1, "accepted_num": 1})
    assert result_of(outs) is P.WAIT_TO_REVOTE and m.next_time_to_request_vote == 10_300
    m2, _ = elector.maintain_as_candidate(CFG3, m, 10_300, 0)
    assert m2.curr_term == 5


def test_parse_bigger_ledger_majority_waits_an_extra_max_vote_interval():
    """!isQuorum(validNum - biggerLedgerNum) -> WAIT_TO_REVOTE, now + 300..999 + maxVoteIntervalMs."""
    m, outs = parse({"valid_num": 3, "accepted_num": 1, "bigger_ledger_num": 2})
    assert result_of(outs) is P.WAIT_TO_REVOTE and m.next_time_to_request_vote == 10_000 + 300 + 1000


def test_parse_quorum_of_accepts_passes_and_becomes_leader():
    """isQuorum(acceptedNum) -> PASSED, changeRoleToLeader(term): leader of term 5, heartbeat due at once."""
    m, outs = parse({"valid_num": 2, "accepted_num": 2}, next_time_to_request_vote=42,
                    peers_live_table=FrozenMap({"n1": True}))
    assert result_of(outs) is P.PASSED
    assert (m.role, m.leader_id, m.curr_term) == (el.Role.LEADER, "n0", 5)
    assert m.last_send_heart_beat_time == -1 and len(m.peers_live_table) == 0
    assert m.next_time_to_request_vote == 42 and roles(outs) == [(5, el.Role.LEADER)]


def test_parse_accepts_plus_not_ready_revotes_immediately_at_the_same_term():
    """isQuorum(accepted + notReady) -> REVOTE_IMMEDIATELY: next time unchanged, next loop votes at term 5."""
    m, outs = parse({"valid_num": 2, "accepted_num": 1, "not_ready_term_num": 1}, next_time_to_request_vote=42)
    assert result_of(outs) is P.REVOTE_IMMEDIATELY and m.next_time_to_request_vote == 42
    m2, outs2 = candidate_loop(CFG3, m.evolve(curr_vote_for="n0"), 10_010, 0)
    assert m2.curr_term == 5 and len(sends(outs2)) == 2


def test_parse_otherwise_waits_to_vote_next():
    """A valid quorum that did not grant -> WAIT_TO_VOTE_NEXT, now + 300..999; the term moves in the next round."""
    m, outs = parse({"valid_num": 3, "accepted_num": 1}, draw=DRAW_MAX)
    assert result_of(outs) is P.WAIT_TO_VOTE_NEXT and m.next_time_to_request_vote == 10_999
    assert m.curr_term == 5 and roles(outs) == []


def test_parse_reports_the_round_counters():
    """VoteParsed carries the round's counters for timelines and reports."""
    _, outs = parse({"valid_num": 3, "accepted_num": 1, "not_ready_term_num": 0, "bigger_ledger_num": 1})
    assert outs[0] == el.VoteParsed(term=5, result=P.WAIT_TO_VOTE_NEXT, accepted=1, valid=3, not_ready=0,
                                    bigger_ledger=1, already_has_leader=False)


def test_taking_leadership_uses_the_30_to_99_ms_interval():
    """isTakingLeadership -> getNextTimeToRequestVote = now + 30 + nextInt(70)."""
    cfg = CFG3.evolve(preferred_leader_ids="n0")
    for draw, delay in ((0, 30), (DRAW_MAX, 99)):
        m, _ = parse({"valid_num": 1}, cfg=cfg, draw=draw, term_to_take_leadership=5)
        assert m.next_time_to_request_vote == 10_000 + delay


def test_change_role_to_leader_is_skipped_when_the_term_moved():
    """changeRoleToLeader(term) does nothing unless currTerm == term."""
    m = member(curr_term=6)
    assert elector.change_role_to_leader(CFG3, m, 5) == (m, ())


def test_change_role_to_candidate_is_skipped_for_an_older_term():
    """changeRoleToCandidate(term) does nothing when term < currTerm."""
    m = leader(term=6)
    assert elector.change_role_to_candidate(CFG3, m, 5) == (m, ())


@given(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3), st.integers(0, 3), st.booleans(),
       st.integers(0, 7), st.integers(0, DRAW_MAX))
def test_parse_is_the_first_matching_branch(valid, accepted, not_ready, bigger, has_leader, known_max, draw):
    """The parse equals a direct transcription of the Java if/else chain for any counters."""
    q = CFG3.is_quorum
    now, base = 10_000, 10_000 + 300 + el.rand_int(draw, 700)
    if known_max > 5:
        want = (P.WAIT_TO_VOTE_NEXT, base)
    elif has_leader:
        want = (P.WAIT_TO_REVOTE, base + 6000)
    elif not q(valid):
        want = (P.WAIT_TO_REVOTE, base)
    elif not q(valid - bigger):
        want = (P.WAIT_TO_REVOTE, base + 1000)
    elif q(accepted):
        want = (P.PASSED, -7)
    elif q(accepted + not_ready):
        want = (P.REVOTE_IMMEDIATELY, -7)
    else:
        want = (P.WAIT_TO_VOTE_NEXT, base)
    m, _ = parse({"valid_num": valid, "accepted_num": accepted, "not_ready_term_num": not_ready,
                  "bigger_ledger_num": bigger, "already_has_leader": has_leader, "known_max": max(known_max, 5)},
                 now=now, draw=draw, next_time_to_request_vote=-7)
    assert (m.last_parse_result, m.next_time_to_request_vote) == want
    assert (m.role is el.Role.LEADER) == (want[0] is P.PASSED)


# --- crash and restart ---


def test_crash_keeps_term_and_vote_and_forgets_everything_else():
    """Only the currterm file (currTerm, currVoteFor) and the store's ledger end survive a crash."""
    m = leader(term=4, ledger_end_index=3, ledger_end_term=2, known_max_term_in_group=4,
               last_succ_heart_beat_time=900, peers_live_table=FrozenMap({"n1": True}))
    c = srv.crash(m)
    assert c == mstate.Member(self_id="n0", curr_term=4, curr_vote_for="n0", ledger_end_index=3, ledger_end_term=2)
    assert (c.role, c.leader_id, c.known_max_term_in_group, c.last_succ_heart_beat_time) == (
        el.Role.CANDIDATE, None, -1, -1)


def test_crash_losing_the_term_file_forgets_term_and_vote():
    """crash(lose_term_file=True): loadTerm finds no file and starts from term 0 with no vote; the log stays."""
    c = srv.crash(leader(term=4, ledger_end_index=3, ledger_end_term=2), lose_term_file=True)
    assert (c.curr_term, c.curr_vote_for, c.ledger_end_index, c.ledger_end_term) == (0, None, 3, 2)


def test_restarted_node_votes_at_once_at_its_persisted_term():
    """A relaunched member is a CANDIDATE whose first loop (at the restart time) solicits at the persisted term."""
    m = srv.restart(CFG3, srv.crash(follower(term=4, leader="n1", curr_vote_for="n1")), now=5000)
    assert m.role is el.Role.CANDIDATE and srv.wake_at(CFG3, m) == 5000
    m2, outs = srv.on_tick(CFG3, m, 5000, 0)
    assert outs == () and m2.vote_start.term == 4
    m2, outs = srv.on_tick(CFG3, m2, 5000, 0)
    assert {s.msg.term for s in sends(outs)} == {4} and m2.curr_term == 4
    assert m2.round.accepted_num == 0  # it voted for n1 in term 4: its own vote is REJECT_ALREADY_VOTED


def test_single_server_restart_is_leader_again_at_the_same_term():
    """LeaderElectorTest#testSingleServer: after a restart the lone node leads again with currTerm unchanged."""
    cfg = el.DLedgerConfig(peers=("n0",))
    m = srv.boot(cfg, "n0", 0)
    for t in (0, 0, 0):
        m, _ = srv.on_tick(cfg, m, t, 0)
    term = m.curr_term
    assert m.role is el.Role.LEADER
    m = srv.restart(cfg, srv.crash(m), 9000)
    for t in (9000, 9000, 9000):
        m, _ = srv.on_tick(cfg, m, t, 0)
    assert (m.role, m.curr_term) == (el.Role.LEADER, term)


# --- DLedgerUtils#elapsed ---


def test_elapsed_treats_minus_one_as_long_ago():
    """elapsed(-1) is larger than any timeout even at model time 0; otherwise now - since."""
    assert el.elapsed(0, -1) > 10 ** 9 and el.elapsed(7000, 1000) == 6000
    # The consequences at t = 0: a follower that never heard a heartbeat times out, a leader sends at once.
    assert elector.maintain_as_follower(CFG3, follower(term=1, last_leader_heart_beat_time=-1), 0)[0].role \
        is el.Role.CANDIDATE
    assert sends(elector.maintain_as_leader(CFG3, leader(term=1), 0)[1])


# --- wake_at per role ---


@pytest.mark.parametrize("m, due", [
    (leader(term=1, last_send_heart_beat_time=1000, next_loop_ms=1010), 3001),
    (leader(term=1, last_send_heart_beat_time=-1, next_loop_ms=1010), 1010),
    (follower(term=1, last_leader_heart_beat_time=1000, next_loop_ms=1010), 7001),
    (member(next_time_to_request_vote=5000, next_loop_ms=1010), 5000),
    (member(next_time_to_request_vote=5000, need_increase_term_immediately=True, next_loop_ms=1010), 1010),
    (member(next_time_to_request_vote=-1, next_loop_ms=1010), 1010),
    (member(round=mstate.VoteRound(seq=1, term=0, deadline=4000, known_max_term_in_group=0), next_loop_ms=0), 4000),
    (member(round=mstate.VoteRound(seq=1, term=0, deadline=4000, known_max_term_in_group=0, released_at=1200)), 1200),
], ids=["leader", "leader-new", "follower", "candidate", "candidate-need-increase", "candidate-fresh",
        "vote-round", "vote-round-released"])
def test_wake_at_is_when_the_maintainer_has_work(m, due):
    """wake_at: the first ms at which maintainState would act (never before the loop's 10 ms sleep ends)."""
    assert srv.wake_at(CFG3, m) == due
    early, outs = srv.on_tick(CFG3, m, due - 1, 0)
    assert outs == () and early.evolve(next_loop_ms=m.next_loop_ms) == m
    woken, outs = srv.on_tick(CFG3, m, due, 0)
    assert outs or woken.evolve(next_loop_ms=m.next_loop_ms) != m


def test_wake_at_never_with_the_elector_disabled():
    """enableLeaderElector = false: the maintainer does nothing, so the node never wakes."""
    cfg = CFG3.evolve(enable_leader_elector=False)
    assert srv.wake_at(cfg, member()) == -1 and srv.wake_at(cfg, leader(term=1)) == -1
