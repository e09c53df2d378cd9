"""DLedgerLeaderElector#handleVote and DLedgerServer#handleVote, one test per Java branch, in Java order.

Each test names the branch it covers; the state is built by hand so the branch is the
only one that can answer. The last tests check the order of the guards against each other.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from property_tests.support.election import CFG3, follower, leader, member, roles, vote_req
from reference_impl.election import leader_elector as elector
from reference_impl.election import records as el
from reference_impl.election import server as srv

R = el.VoteResult
ALL_NODES = ("n0", "n1", "n2")


def vote(m, req, self_vote=False, cfg=CFG3):
    return elector.handle_vote(cfg, m, req, self_vote)


# --- 1. isPeerMember(leaderId) ---


def test_reject_unknown_leader_when_candidate_is_not_a_peer():
    """!isPeerMember(leaderId) -> REJECT_UNKNOWN_LEADER with term = currTerm, nothing changes."""
    m = member(curr_term=4)
    m2, resp, outs = vote(m, vote_req(candidate="n9", term=9))
    assert (resp.vote_result, resp.term) == (R.REJECT_UNKNOWN_LEADER, 4)
    assert m2 == m and outs == ()


def test_reject_unknown_leader_for_a_null_candidate():
    """isPeerMember(null) is false: a request without a candidate id is REJECT_UNKNOWN_LEADER."""
    _, resp, _ = vote(member(), vote_req(candidate=None, term=0))
    assert resp.vote_result is R.REJECT_UNKNOWN_LEADER


# --- 2. !self && selfId.equals(leaderId) ---


def test_reject_unexpected_leader_when_a_peer_request_names_the_voter():
    """A non-self request whose candidate is the voter itself -> REJECT_UNEXPECTED_LEADER."""
    m = member(curr_term=2)
    m2, resp, outs = vote(m, vote_req(candidate="n0", term=2))
    assert (resp.vote_result, resp.term) == (R.REJECT_UNEXPECTED_LEADER, 2)
    assert m2 == m and outs == ()


def test_self_vote_passes_the_unexpected_leader_guard():
    """handleVote(request, self=true) for the voter's own candidacy is ACCEPTed."""
    m2, resp, _ = vote(member(curr_term=2), vote_req(candidate="n0", term=2), self_vote=True)
    assert resp.vote_result is R.ACCEPT and m2.curr_vote_for == "n0"


# --- 3. log check (before the term check) ---


def test_reject_expired_ledger_term_when_candidate_log_ends_in_an_older_term():
    """request.ledgerEndTerm < ledgerEndTerm -> REJECT_EXPIRED_LEDGER_TERM, term = currTerm."""
    m = member(curr_term=3, ledger_end_index=5, ledger_end_term=3)
    m2, resp, outs = vote(m, vote_req(term=3, lei=50, let=2))
    assert (resp.vote_result, resp.term) == (R.REJECT_EXPIRED_LEDGER_TERM, 3)
    assert m2 == m and outs == ()


def test_reject_small_ledger_end_index_when_same_ledger_term_but_shorter_log():
    """Equal ledgerEndTerm and request.ledgerEndIndex < ledgerEndIndex -> REJECT_SMALL_LEDGER_END_INDEX."""
    m = member(curr_term=3, ledger_end_index=5, ledger_end_term=3)
    m2, resp, _ = vote(m, vote_req(term=3, lei=4, let=3))
    assert (resp.vote_result, resp.term) == (R.REJECT_SMALL_LEDGER_END_INDEX, 3)
    assert m2 == m


def test_log_with_newer_ledger_term_passes_even_when_shorter():
    """A later ledgerEndTerm wins the log check whatever the index (only equal terms compare indexes)."""
    m = member(curr_term=3, ledger_end_index=9, ledger_end_term=2)
    _, resp, _ = vote(m, vote_req(term=3, lei=0, let=3))
    assert resp.vote_result is R.ACCEPT


def test_log_check_precedes_term_check_so_voter_keeps_its_term_and_role():
    """A stale-log candidate with a larger term is rejected on its log; the voter keeps role and term."""
    m = follower(term=3, leader="n2", ledger_end_index=5, ledger_end_term=3)
    for req, result in ((vote_req(term=8, lei=5, let=2), R.REJECT_EXPIRED_LEDGER_TERM),
                        (vote_req(term=8, lei=4, let=3), R.REJECT_SMALL_LEDGER_END_INDEX)):
        m2, resp, outs = vote(m, req)
        assert (resp.vote_result, resp.term) == (result, 3)
        assert m2.role is el.Role.FOLLOWER and m2.curr_term == 3 and not m2.need_increase_term_immediately
        assert outs == ()


# --- 4. term check ---


def test_reject_expired_vote_term_when_request_term_is_older():
    """request.term < currTerm -> REJECT_EXPIRED_VOTE_TERM with term = currTerm (the candidate learns it)."""
    m = member(curr_term=5)
    m2, resp, _ = vote(m, vote_req(term=4))
    assert (resp.vote_result, resp.term) == (R.REJECT_EXPIRED_VOTE_TERM, 5)
    assert m2 == m


def test_same_term_and_no_vote_yet_lets_it_go():
    """request.term == currTerm and currVoteFor == null -> continue to the grant."""
    m2, resp, _ = vote(member(curr_term=2), vote_req(term=2))
    assert resp.vote_result is R.ACCEPT and m2.curr_vote_for == "n1"


def test_repeat_vote_for_the_same_candidate_is_accepted_again():
    """currVoteFor.equals(leaderId) -> "repeat just let it go": ACCEPT again, even for a follower."""
    m = follower(term=2, leader="n1", curr_vote_for="n1")
    m2, resp, outs = vote(m, vote_req(candidate="n1", term=2))
    assert resp.vote_result is R.ACCEPT
    assert m2 == m  # the vote was already persisted
    assert outs == (el.VoteGranted(term=2, candidate="n1"),)


def test_reject_already_has_leader_when_voted_for_another_and_leader_known():
    """currVoteFor is another node and leaderId != null -> REJECT_ALREADY_HAS_LEADER."""
    m = follower(term=2, leader="n2", curr_vote_for="n2")
    m2, resp, _ = vote(m, vote_req(candidate="n1", term=2))
    assert (resp.vote_result, resp.term) == (R.REJECT_ALREADY_HAS_LEADER, 2)
    assert m2 == m


def test_reject_already_voted_when_voted_for_another_and_no_leader():
    """currVoteFor is another node and leaderId == null -> REJECT_ALREADY_VOTED."""
    m = member(curr_term=2, curr_vote_for="n2")
    m2, resp, _ = vote(m, vote_req(candidate="n1", term=2))
    assert (resp.vote_result, resp.term) == (R.REJECT_ALREADY_VOTED, 2)
    assert m2 == m


def test_leader_that_voted_for_itself_rejects_same_term_candidate_as_already_has_leader():
    """A leader (currVoteFor = self, leaderId = self) answers a same-term rival REJECT_ALREADY_HAS_LEADER."""
    _, resp, _ = vote(leader(term=3), vote_req(candidate="n1", term=3))
    assert resp.vote_result is R.REJECT_ALREADY_HAS_LEADER


def test_follower_that_never_voted_in_its_term_grants_a_vote():
    """A follower that joined the term by heartbeat (currVoteFor null) ACCEPTs and stays follower."""
    m = follower(term=2, leader="n2")
    m2, resp, _ = vote(m, vote_req(candidate="n1", term=2))
    assert resp.vote_result is R.ACCEPT
    assert (m2.role, m2.leader_id, m2.curr_vote_for) == (el.Role.FOLLOWER, "n2", "n1")


def test_larger_term_answers_term_not_ready_and_turns_candidate_without_adopting_the_term():
    """request.term > currTerm -> changeRoleToCandidate, needIncrease..., REJECT_TERM_NOT_READY (old term)."""
    m = leader(term=3, transferee="n2")
    m2, resp, outs = vote(m, vote_req(candidate="n1", term=7))
    assert (resp.vote_result, resp.term) == (R.REJECT_TERM_NOT_READY, 3)
    assert m2.role is el.Role.CANDIDATE and m2.leader_id is None and m2.transferee is None
    assert m2.curr_term == 3 and m2.curr_vote_for == "n0"  # term and vote move only in nextTerm
    assert m2.known_max_term_in_group == 7 and m2.need_increase_term_immediately
    assert roles(outs) == [(7, el.Role.CANDIDATE)]
    assert not [o for o in outs if isinstance(o, el.VoteGranted)]


def test_larger_term_request_fires_role_change_even_for_a_candidate():
    """changeRoleToCandidate fires the handlers even when the voter already is a candidate."""
    m2, _, outs = vote(member(curr_term=1), vote_req(term=2))
    assert roles(outs) == [(2, el.Role.CANDIDATE)] and m2.need_increase_term_immediately


# --- 5. request.term < ledgerEndTerm ---


def test_reject_term_small_than_ledger_answers_with_ledger_end_term():
    """request.term < ledgerEndTerm -> REJECT_TERM_SMALL_THAN_LEDGER, response term = ledgerEndTerm, no vote."""
    # currTerm below ledgerEndTerm happens after the currterm file was lost.
    m = member(curr_term=2, ledger_end_index=7, ledger_end_term=4)
    m2, resp, outs = vote(m, vote_req(term=2, lei=7, let=4))
    assert (resp.vote_result, resp.term) == (R.REJECT_TERM_SMALL_THAN_LEDGER, 4)
    assert m2.curr_vote_for is None and outs == ()


def test_term_small_than_ledger_applies_to_the_self_vote_too():
    """The check has no self exception: a node whose term lags its log cannot vote for itself."""
    m = member(curr_term=2, ledger_end_index=7, ledger_end_term=4)
    _, resp, _ = vote(m, vote_req(candidate="n0", term=2, lei=7, let=4), self_vote=True)
    assert resp.vote_result is R.REJECT_TERM_SMALL_THAN_LEDGER


# --- 6. REJECT_TAKING_LEADERSHIP ---

TAKER = el.DLedgerConfig(peers=ALL_NODES, preferred_leader_ids="n0")


def taker(**fields):
    """n0 is preferred and taking leadership in its current term 5, with log (5, 10)."""
    return member(**({"curr_term": 5, "term_to_take_leadership": 5, "ledger_end_index": 10, "ledger_end_term": 5}
                     | fields))


def test_reject_taking_leadership_for_a_rival_with_no_longer_log():
    """!self && isTakingLeadership && same ledgerEndTerm && ledgerEndIndex >= request's -> REJECT_TAKING_LEADERSHIP."""
    # A shorter log never gets here (REJECT_SMALL_LEDGER_END_INDEX first), so in effect this is an equal log.
    m2, resp, _ = vote(taker(), vote_req(term=5, lei=10, let=5), cfg=TAKER)
    assert (resp.vote_result, resp.term) == (R.REJECT_TAKING_LEADERSHIP, 5)
    assert m2.curr_vote_for is None


def test_taking_leadership_yields_to_a_rival_with_a_longer_log():
    """A rival whose log is longer (same ledger term) is still ACCEPTed by a node taking leadership."""
    _, resp, _ = vote(taker(), vote_req(term=5, lei=11, let=5), cfg=TAKER)
    assert resp.vote_result is R.ACCEPT


def test_taking_leadership_never_rejects_its_own_vote():
    """The REJECT_TAKING_LEADERSHIP guard has !self: the transferee's self vote is ACCEPTed."""
    _, resp, _ = vote(taker(), vote_req(candidate="n0", term=5, lei=10, let=5), self_vote=True, cfg=TAKER)
    assert resp.vote_result is R.ACCEPT


@pytest.mark.parametrize("cfg, fields", [
    (CFG3, {}),  # preferredLeaderIds == null
    (el.DLedgerConfig(peers=ALL_NODES, preferred_leader_ids="n1;n2"), {}),  # self not preferred
    (TAKER, {"term_to_take_leadership": 4}),  # termToTakeLeadership != currTerm
], ids=["no-preferred-list", "self-not-preferred", "other-term"])
def test_not_taking_leadership_accepts_the_same_rival(cfg, fields):
    """isTakingLeadership (0.2.6) needs preferredLeaderIds containing self and termToTakeLeadership == currTerm."""
    _, resp, _ = vote(taker(**fields), vote_req(term=5, lei=10, let=5), cfg=cfg)
    assert resp.vote_result is R.ACCEPT


# --- 7. ACCEPT ---


def test_accept_persists_vote_and_reports_vote_granted():
    """setCurrVoteFor(leaderId) -> ACCEPT with term = currTerm; the vote survives a crash."""
    m = member(curr_term=3, role=el.Role.CANDIDATE)
    m2, resp, outs = vote(m, vote_req(candidate="n2", term=3))
    assert (resp.vote_result, resp.term) == (R.ACCEPT, 3)
    assert outs == (el.VoteGranted(term=3, candidate="n2"),)
    assert m2 == m.evolve(curr_vote_for="n2")  # nothing but the vote changes
    assert srv.crash(m2).curr_vote_for == "n2"


def test_after_accepting_one_candidate_a_second_is_rejected_in_that_term():
    """One vote per term: the next candidate of the term gets REJECT_ALREADY_VOTED."""
    m, _, _ = vote(member(curr_term=3), vote_req(candidate="n1", term=3))
    _, resp, _ = vote(m, vote_req(candidate="n2", term=3))
    assert resp.vote_result is R.REJECT_ALREADY_VOTED


# --- DLedgerServer#handleVote guards ---


def test_server_rejects_request_for_another_member_with_unknown_result():
    """remoteId != selfId -> code UNKNOWN_MEMBER, voteResult UNKNOWN, term copied from the request."""
    m = member(curr_term=1)
    m2, resp, outs = srv.server_handle_vote(CFG3, m, vote_req(term=9, to="n1"))
    assert (resp.code, resp.vote_result, resp.term) == (el.Code.UNKNOWN_MEMBER, R.UNKNOWN, 9)
    assert m2 == m and outs == ()  # a larger term behind a failed guard moves nothing


def test_server_rejects_request_from_another_group_with_unknown_result():
    """group != self group -> code UNKNOWN_GROUP, voteResult UNKNOWN."""
    m = member(curr_term=1)
    m2, resp, _ = srv.server_handle_vote(CFG3, m, vote_req(term=9, group="other"))
    assert (resp.code, resp.vote_result, resp.term) == (el.Code.UNKNOWN_GROUP, R.UNKNOWN, 9)
    assert m2 == m


def test_server_checks_member_before_group():
    """Both guards fail -> UNKNOWN_MEMBER (the first PreConditions.check)."""
    _, resp, _ = srv.server_handle_vote(CFG3, member(), vote_req(to="n2", group="other"))
    assert resp.code is el.Code.UNKNOWN_MEMBER


def test_server_passes_request_to_elector_as_not_self():
    """Past the guards the elector runs with self=false: a request naming the voter is REJECT_UNEXPECTED_LEADER."""
    _, resp, _ = srv.server_handle_vote(CFG3, member(), vote_req(candidate="n0", term=0))
    assert (resp.code, resp.vote_result) == (el.Code.SUCCESS, R.REJECT_UNEXPECTED_LEADER)


def test_guard_rejection_is_not_a_valid_vote_for_the_candidate():
    """The candidate counts UNKNOWN results in allNum only, never in validNum."""
    m, _ = elector.vote_for_quorum_responses(CFG3, member(), now=0, draw=0)
    _, bad, _ = srv.server_handle_vote(CFG3, member("n1"), vote_req(candidate="n0", term=0, to="n2"))
    m2 = elector.on_vote_response(CFG3, m, m.round.seq, bad, now=1)
    assert (m2.round.all_num, m2.round.valid_num) == (2, 1)


# --- properties over arbitrary voter states ---

terms = st.integers(0, 6)
ids = st.sampled_from(ALL_NODES + (None,))


@st.composite
def voters(draw):
    let = draw(st.integers(-1, 4))
    return member(curr_term=draw(terms), curr_vote_for=draw(ids),
                  role=draw(st.sampled_from([el.Role.CANDIDATE, el.Role.FOLLOWER, el.Role.LEADER])),
                  leader_id=draw(ids), ledger_end_term=let,
                  ledger_end_index=draw(st.integers(-1, 4)) if let >= 0 else -1)


@st.composite
def requests(draw):
    return vote_req(candidate=draw(st.sampled_from(("n1", "n2"))), term=draw(terms),
                    lei=draw(st.integers(-1, 4)), let=draw(st.integers(-1, 4)))


@given(voters(), requests())
def test_handle_vote_never_moves_the_term_and_grants_only_in_the_voters_term(m, req):
    """Any request: currTerm unchanged; ACCEPT only in currTerm, once per term, for an up-to-date log."""
    m2, resp, outs = vote(m, req)
    assert m2.curr_term == m.curr_term
    if resp.vote_result is R.ACCEPT:
        assert req.term == m.curr_term and m2.curr_vote_for == req.leader_id
        assert (req.ledger_end_term, req.ledger_end_index) >= (m.ledger_end_term, m.ledger_end_index)
        assert m.curr_vote_for in (None, req.leader_id)
    else:
        assert m2.curr_vote_for == m.curr_vote_for
    assert (resp.vote_result is R.REJECT_TERM_NOT_READY) == (m2.need_increase_term_immediately
                                                             and not m.need_increase_term_immediately)


def test_every_vote_result_but_unknown_is_reachable_from_handle_vote():
    """handleVote reaches every VoteResponse.RESULT but UNKNOWN (only server guards and failed RPCs give it)."""
    produced = {
        vote(member(), vote_req(candidate="n9"))[1].vote_result,
        vote(member(), vote_req(candidate="n0"))[1].vote_result,
        vote(member(ledger_end_term=1, ledger_end_index=0), vote_req(term=0))[1].vote_result,
        vote(member(ledger_end_term=1, ledger_end_index=3), vote_req(term=1, let=1, lei=2))[1].vote_result,
        vote(member(curr_term=2), vote_req(term=1))[1].vote_result,
        vote(member(curr_term=0), vote_req(term=0))[1].vote_result,
        vote(member(curr_vote_for="n2"), vote_req(term=0))[1].vote_result,
        vote(follower(term=0, leader="n2", curr_vote_for="n2"), vote_req(term=0))[1].vote_result,
        vote(member(), vote_req(term=1))[1].vote_result,
        vote(member(curr_term=1, ledger_end_term=2), vote_req(term=1, let=2))[1].vote_result,
        vote(taker(), vote_req(term=5, lei=10, let=5), cfg=TAKER)[1].vote_result,
    }
    assert produced == set(R) - {R.UNKNOWN}
