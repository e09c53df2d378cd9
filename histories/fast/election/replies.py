"""The replies an election member gives, computed as the reference's handlers compute them.

Which vote result or heart-beat code a request gets, given the member before and after handling it."""

from __future__ import annotations

from numba import njit

from histories.fast.core import table as core_table
from histories.fast.election import layout
from histories.fast.election.layout import (
    C_PREFERRED_LEADERS,
    CURR_TERM,
    CURR_VOTE_FOR,
    EXPIRED_TERM,
    FOLLOWER,
    INCONSISTENT_LEADER,
    LAST_LEADER_HEART_BEAT_TIME,
    LEADER_ID,
    ROLE,
    SUCCESS,
    TERM_NOT_READY,
    UNEXPECTED_MEMBER,
    V_ACCEPT,
    V_REJECT_ALREADY_HAS_LEADER,
    V_REJECT_ALREADY_VOTED,
    V_REJECT_EXPIRED_LEDGER_TERM,
    V_REJECT_EXPIRED_VOTE_TERM,
    V_REJECT_SMALL_LEDGER_END_INDEX,
    V_REJECT_TAKING_LEADERSHIP,
    V_REJECT_TERM_NOT_READY,
    V_REJECT_TERM_SMALL_THAN_LEDGER,
    V_REJECT_UNEXPECTED_LEADER,
)

RPL_OK = 0


RPL_1 = 1  # a lower term's heartbeat or vote answered SUCCESS / ACCEPT


RPL_2 = 2  # a reply or the state after it that the guards do not give


@njit(cache=True, inline='always')
def heart_beat_code(i, leader, term, term_before, leader_before):
    """spec.replies.heart_beat_code (DLedgerServer#handleHeartBeat, DLedgerLeaderElector#handleHeartBeat)."""
    if leader == i:
        return UNEXPECTED_MEMBER
    if term < term_before:
        return EXPIRED_TERM
    if term > term_before:
        return TERM_NOT_READY
    if leader_before < 0 or leader_before == leader:
        return SUCCESS
    return INCONSISTENT_LEADER


@njit(cache=True)
def vote_result_of(S, i, candidate, term, ledger_end_index, ledger_end_term, term_before, vote_before, leader_before, ledger_end_index_before, ledger_end_term_before, term_to_take_before):
    """spec.replies.vote_result's VoteResult (its code is SUCCESS for a request to its member)."""
    config = core_table.config(S)
    self_preferred = layout.self_preferred(S)
    if candidate == i:
        return V_REJECT_UNEXPECTED_LEADER
    if ledger_end_term < ledger_end_term_before:
        return V_REJECT_EXPIRED_LEDGER_TERM
    if ledger_end_term == ledger_end_term_before and ledger_end_index < ledger_end_index_before:
        return V_REJECT_SMALL_LEDGER_END_INDEX
    if term < term_before:
        return V_REJECT_EXPIRED_VOTE_TERM
    if term > term_before:
        return V_REJECT_TERM_NOT_READY
    if vote_before >= 0 and vote_before != candidate:
        return V_REJECT_ALREADY_HAS_LEADER if leader_before >= 0 else V_REJECT_ALREADY_VOTED
    if term < ledger_end_term_before:
        return V_REJECT_TERM_SMALL_THAN_LEDGER
    taking = config[C_PREFERRED_LEADERS] == 1 and self_preferred[i] == 1 and term_to_take_before == term_before
    if taking and ledger_end_term == ledger_end_term_before and ledger_end_index_before >= ledger_end_index:
        return V_REJECT_TAKING_LEADERSHIP
    return V_ACCEPT


@njit(cache=True)
def heart_beat_reply(S, i, leader, term, code, term_before, vote_before, leader_before, heart_beat_before):
    """rpl1 / rpl2 on a heartbeat's reply `code` (spec.replies._lower_term_success and
    _election_reply_problem), as bits RPL_1, RPL_2 (b_*: the node's fields before the step)."""
    members = layout.members(S)
    bad = 0
    if code == SUCCESS and term < term_before:
        bad |= 1 << RPL_1
    want = heart_beat_code(i, leader, term, term_before, leader_before)
    if code != want:
        bad |= 1 << RPL_2
    elif want == SUCCESS:
        if not (members[i, ROLE] == FOLLOWER and members[i, LEADER_ID] == leader and members[i, CURR_TERM] == term):
            bad |= 1 << RPL_2
    elif members[i, CURR_TERM] != term_before or members[i, CURR_VOTE_FOR] != vote_before or members[i, LAST_LEADER_HEART_BEAT_TIME] != heart_beat_before:
        bad |= 1 << RPL_2
    return bad


@njit(cache=True)
def vote_reply(S, i, candidate, term, ledger_end_index, ledger_end_term, result, term_before, vote_before, leader_before, ledger_end_index_before, ledger_end_term_before, term_to_take_before):
    """rpl1 / rpl2 on a vote request's reply (code SUCCESS, `result`), as bits."""
    members = layout.members(S)
    bad = 0
    if result == V_ACCEPT and term < term_before:
        bad |= 1 << RPL_1
    want = vote_result_of(S, i, candidate, term, ledger_end_index, ledger_end_term, term_before, vote_before, leader_before, ledger_end_index_before, ledger_end_term_before, term_to_take_before)
    if result != want:
        bad |= 1 << RPL_2
    elif want == V_ACCEPT:
        if members[i, CURR_VOTE_FOR] != candidate or members[i, CURR_TERM] != term:
            bad |= 1 << RPL_2
    elif members[i, CURR_TERM] != term_before or members[i, CURR_VOTE_FOR] != vote_before:
        bad |= 1 << RPL_2
    return bad
