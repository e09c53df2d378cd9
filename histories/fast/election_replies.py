"""RPL-1 and RPL-2 in the election twin (spec/replies.py): the reply a delivered heartbeat or
vote request got, against the guards restated from the Java source, on the node's state
before the step (the fields they read, `b_*`) and after it (its row in `nd`).

As in spec/replies.py, the guards are written here again, apart from the twin's handlers
(election_node), so a mistake in one shows against the other. The world addresses every
request to its remote_id in the configured group, from a configured peer, so the
UNKNOWN_MEMBER / UNKNOWN_GROUP guards always pass.
"""

from __future__ import annotations

from numba import njit

from histories.fast.election_layout import *  # noqa: F403 - the columns and enums, by the reference's names

RPL_OK = 0
RPL_1 = 1  # a lower term's heartbeat or vote answered SUCCESS / ACCEPT
RPL_2 = 2  # a reply or the state after it that the guards do not give


@njit(cache=True, inline='always')
def _heart_beat_code(i, leader, term, b_term, b_leader):
    """spec.replies.heart_beat_code (DLedgerServer#handleHeartBeat, DLedgerLeaderElector#handleHeartBeat)."""
    if leader == i:
        return UNEXPECTED_MEMBER
    if term < b_term:
        return EXPIRED_TERM
    if term > b_term:
        return TERM_NOT_READY
    if b_leader < 0 or b_leader == leader:
        return SUCCESS
    return INCONSISTENT_LEADER


@njit(cache=True, inline='always')
def _vote_result(C, i, cand, term, lei, let, self_pref, b_term, b_vote, b_leader, b_lei, b_let, b_tttl):
    """spec.replies.vote_result's VoteResult (its code is SUCCESS for a request to its member)."""
    if cand == i:
        return V_REJECT_UNEXPECTED_LEADER
    if let < b_let:
        return V_REJECT_EXPIRED_LEDGER_TERM
    if let == b_let and lei < b_lei:
        return V_REJECT_SMALL_LEDGER_END_INDEX
    if term < b_term:
        return V_REJECT_EXPIRED_VOTE_TERM
    if term > b_term:
        return V_REJECT_TERM_NOT_READY
    if b_vote >= 0 and b_vote != cand:
        return V_REJECT_ALREADY_HAS_LEADER if b_leader >= 0 else V_REJECT_ALREADY_VOTED
    if term < b_let:
        return V_REJECT_TERM_SMALL_THAN_LEDGER
    taking = C[C_PREF] == 1 and self_pref[i] == 1 and b_tttl == b_term
    if taking and let == b_let and b_lei >= lei:
        return V_REJECT_TAKING_LEADERSHIP
    return V_ACCEPT


@njit(cache=True, inline='always')
def _heart_beat_reply(nd, i, leader, term, code, b_term, b_vote, b_leader, b_llhb):
    """rpl1 / rpl2 on a heartbeat's reply `code` (spec.replies._lower_term_success and
    _election_reply_problem), as bits RPL_1, RPL_2 (b_*: the node's fields before the step)."""
    bad = 0
    if code == SUCCESS and term < b_term:
        bad |= 1 << RPL_1
    want = _heart_beat_code(i, leader, term, b_term, b_leader)
    if code != want:
        bad |= 1 << RPL_2
    elif want == SUCCESS:
        if not (nd[i, ROLE] == FOLLOWER and nd[i, LEADER_ID] == leader and nd[i, TERM] == term):
            bad |= 1 << RPL_2
    elif nd[i, TERM] != b_term or nd[i, VOTE] != b_vote or nd[i, LLHB] != b_llhb:
        bad |= 1 << RPL_2
    return bad


@njit(cache=True, inline='always')
def _vote_reply(C, nd, i, cand, term, lei, let, self_pref, result, b_term, b_vote, b_leader, b_lei, b_let, b_tttl):
    """rpl1 / rpl2 on a vote request's reply (code SUCCESS, `result`), as bits."""
    bad = 0
    if result == V_ACCEPT and term < b_term:
        bad |= 1 << RPL_1
    want = _vote_result(C, i, cand, term, lei, let, self_pref, b_term, b_vote, b_leader, b_lei, b_let, b_tttl)
    if result != want:
        bad |= 1 << RPL_2
    elif want == V_ACCEPT:
        if nd[i, VOTE] != cand or nd[i, TERM] != term:
            bad |= 1 << RPL_2
    elif nd[i, TERM] != b_term or nd[i, VOTE] != b_vote:
        bad |= 1 << RPL_2
    return bad
