"""RPL-1 and RPL-2 in the election twin (spec/replies.py): the reply a delivered heartbeat or
vote request got, against the guards restated from the Java source, on the node's state
before the step (`mb`, a snapshot of its row) and after it (its row in `nd`).

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
def _heart_beat_code(mb, i, leader, term):
    """spec.replies.heart_beat_code (DLedgerServer#handleHeartBeat, DLedgerLeaderElector#handleHeartBeat)."""
    if leader == i:
        return UNEXPECTED_MEMBER
    if term < mb[TERM]:
        return EXPIRED_TERM
    if term > mb[TERM]:
        return TERM_NOT_READY
    if mb[LEADER_ID] < 0 or mb[LEADER_ID] == leader:
        return SUCCESS
    return INCONSISTENT_LEADER


@njit(cache=True, inline='always')
def _vote_result(C, mb, i, cand, term, lei, let, self_pref):
    """spec.replies.vote_result's VoteResult (its code is SUCCESS for a request to its member)."""
    if cand == i:
        return V_REJECT_UNEXPECTED_LEADER
    if let < mb[LET]:
        return V_REJECT_EXPIRED_LEDGER_TERM
    if let == mb[LET] and lei < mb[LEI]:
        return V_REJECT_SMALL_LEDGER_END_INDEX
    if term < mb[TERM]:
        return V_REJECT_EXPIRED_VOTE_TERM
    if term > mb[TERM]:
        return V_REJECT_TERM_NOT_READY
    if mb[VOTE] >= 0 and mb[VOTE] != cand:
        return V_REJECT_ALREADY_HAS_LEADER if mb[LEADER_ID] >= 0 else V_REJECT_ALREADY_VOTED
    if term < mb[LET]:
        return V_REJECT_TERM_SMALL_THAN_LEDGER
    taking = C[C_PREF] == 1 and self_pref[i] == 1 and mb[TTTL] == mb[TERM]
    if taking and let == mb[LET] and mb[LEI] >= lei:
        return V_REJECT_TAKING_LEADERSHIP
    return V_ACCEPT


@njit(cache=True)
def _heart_beat_reply(mb, nd, i, leader, term, code):
    """rpl1 / rpl2 on a heartbeat's reply `code` (spec.replies._lower_term_success and
    _election_reply_problem): RPL_1, RPL_2 (both may hold: the caller records each), as bits."""
    bad = 0
    if code == SUCCESS and term < mb[TERM]:
        bad |= 1 << RPL_1
    want = _heart_beat_code(mb, i, leader, term)
    if code != want:
        bad |= 1 << RPL_2
    elif want == SUCCESS:
        if not (nd[i, ROLE] == FOLLOWER and nd[i, LEADER_ID] == leader and nd[i, TERM] == term):
            bad |= 1 << RPL_2
    elif nd[i, TERM] != mb[TERM] or nd[i, VOTE] != mb[VOTE] or nd[i, LLHB] != mb[LLHB]:
        bad |= 1 << RPL_2
    return bad


@njit(cache=True)
def _vote_reply(C, mb, nd, i, cand, term, lei, let, self_pref, result):
    """rpl1 / rpl2 on a vote request's reply (code SUCCESS, `result`), as bits."""
    bad = 0
    if result == V_ACCEPT and term < mb[TERM]:
        bad |= 1 << RPL_1
    want = _vote_result(C, mb, i, cand, term, lei, let, self_pref)
    if result != want:
        bad |= 1 << RPL_2
    elif want == V_ACCEPT:
        if nd[i, VOTE] != cand or nd[i, TERM] != term:
            bad |= 1 << RPL_2
    elif nd[i, TERM] != mb[TERM] or nd[i, VOTE] != mb[VOTE]:
        bad |= 1 << RPL_2
    return bad
