"""A member's state: mirrors reference_impl/election/member_state.py and the
helpers of records.py.

Quorum arithmetic, elapsed time, the random draws a member makes, and booting a member from its term file."""

from __future__ import annotations

from numba import njit

from histories.fast.core import table as core_table
from histories.fast.election import layout
from histories.fast.election.layout import (
    C_PEERS,
    CANDIDATE,
    CURR_TERM,
    CURR_VOTE_FOR,
    KNOWN_MAX_TERM_IN_GROUP,
    LAST_LEADER_HEART_BEAT_TIME,
    LAST_PARSE_RESULT,
    LAST_SEND_HEART_BEAT_TIME,
    LAST_SUCC_HEART_BEAT_TIME,
    LEADER_ID,
    LEDGER_END_INDEX,
    LEDGER_END_TERM,
    LONG_AGO_MS,
    MEMBER_COLUMNS,
    MEMBER_ROUND_SEQ,
    NEED_INCREASE_TERM_IMMEDIATELY,
    NEXT_CHECK_PREFERRED_MS,
    NEXT_LOOP_MS,
    NEXT_TIME_TO_REQUEST_VOTE,
    ROLE,
    ROUND_KIND,
    TAKE_LEADERSHIP,
    TAKE_LEADERSHIP_LEADER_ID,
    TAKE_LEADERSHIP_LEDGER_INDEX,
    TAKE_LEADERSHIP_RPC,
    TAKE_LEADERSHIP_STARTED,
    TAKE_LEADERSHIP_TERM,
    TAKE_LEADERSHIP_TRANSFER_ID,
    TAKE_LEADERSHIP_WAITING_FOR_INDEX,
    TERM_TO_TAKE_LEADERSHIP,
    TRANSFER_IN_FLIGHT,
    TRANSFEREE,
    VOTE_START,
    VOTE_START_LEDGER_END_INDEX,
    VOTE_START_LEDGER_END_TERM,
    VOTE_START_TERM,
    WAIT_TO_REVOTE,
)


@njit(cache=True, inline='always')
def is_quorum(S, num):
    config = core_table.config(S)
    return num >= config[C_PEERS] // 2 + 1


@njit(cache=True, inline='always')
def elapsed(now, since):
    return now - since if since >= 0 else LONG_AGO_MS


@njit(cache=True, inline='always')
def rand_int(draw, bound):
    return (draw * bound) >> 16


@njit(cache=True, inline='always')
def clear_take_leadership(S, i):
    members = layout.members(S)
    members[i, TAKE_LEADERSHIP] = 0
    members[i, TAKE_LEADERSHIP_RPC] = 0
    members[i, TAKE_LEADERSHIP_TERM] = 0
    members[i, TAKE_LEADERSHIP_LEDGER_INDEX] = 0
    members[i, TAKE_LEADERSHIP_STARTED] = 0
    members[i, TAKE_LEADERSHIP_WAITING_FOR_INDEX] = 0
    members[i, TAKE_LEADERSHIP_TRANSFER_ID] = -1
    members[i, TAKE_LEADERSHIP_LEADER_ID] = -1


@njit(cache=True, inline='always')
def clear_vote_start(S, i):
    """Member.vote_start = None (its columns zeroed, so that equal members are equal rows)."""
    members = layout.members(S)
    members[i, VOTE_START] = 0
    members[i, VOTE_START_TERM] = 0
    members[i, VOTE_START_LEDGER_END_INDEX] = 0
    members[i, VOTE_START_LEDGER_END_TERM] = 0


@njit(cache=True)
def boot(S, i, now, term, vote, ledger_end_index, ledger_end_term, next_check_preferred_ms):
    """server.boot (and Member defaults): `ncp` is next_check_preferred_ms."""
    config = core_table.config(S)
    members = layout.members(S)
    peers_live = layout.peers_live(S)
    n = config[C_PEERS]
    for f in range(MEMBER_COLUMNS):
        members[i, f] = 0
    members[i, CURR_TERM] = term
    members[i, CURR_VOTE_FOR] = vote
    members[i, ROLE] = CANDIDATE
    members[i, LEADER_ID] = -1
    members[i, LEDGER_END_INDEX] = ledger_end_index
    members[i, LEDGER_END_TERM] = ledger_end_term
    members[i, KNOWN_MAX_TERM_IN_GROUP] = -1
    members[i, TRANSFEREE] = -1
    members[i, TERM_TO_TAKE_LEADERSHIP] = -1
    members[i, LAST_LEADER_HEART_BEAT_TIME] = -1
    members[i, LAST_SEND_HEART_BEAT_TIME] = -1
    members[i, LAST_SUCC_HEART_BEAT_TIME] = -1
    members[i, NEXT_TIME_TO_REQUEST_VOTE] = -1
    members[i, NEED_INCREASE_TERM_IMMEDIATELY] = 0
    members[i, LAST_PARSE_RESULT] = WAIT_TO_REVOTE
    members[i, NEXT_LOOP_MS] = now
    members[i, ROUND_KIND] = 0
    members[i, MEMBER_ROUND_SEQ] = 0
    members[i, NEXT_CHECK_PREFERRED_MS] = next_check_preferred_ms
    members[i, TRANSFER_IN_FLIGHT] = 0
    clear_take_leadership(S, i)
    for j in range(n):
        peers_live[i, j] = -1
