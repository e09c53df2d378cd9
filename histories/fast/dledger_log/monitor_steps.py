"""The dledger_log step checks: the per-step comparison of each member before and after an event.

Mirrors the per-step checks of spec/dledger_log.py: what a request's reply says, what a member
saved, and the properties checked on every step."""

from __future__ import annotations

from numba import njit

from histories.fast.core import table as core_table
from histories.fast.dledger_log import layout, monitor, replies
from histories.fast.dledger_log import store as dledger_log_store
from histories.fast.dledger_log.layout import (
    BIG,
    P_LOG2,
    P_LOG3,
    P_LOG4,
    P_LOG6,
    PUSH_ENTRY_REQUEST,
    S_COMMITTED_INDEX,
    SC_DIRTY,
    SC_OLD_END,
    W_ACKED,
    W_COMMITTED,
)
from histories.fast.election import layout as election_layout
from histories.fast.election import replies as election_replies
from histories.fast.election.layout import (
    C_PEERS,
    CURR_TERM,
    CURR_VOTE_FOR,
    HEART_BEAT_REQUEST,
    LAST_LEADER_HEART_BEAT_TIME,
    LEADER_ID,
    LEDGER_END_INDEX,
    LEDGER_END_TERM,
    TERM_TO_TAKE_LEADERSHIP,
    VOTE_REQUEST,
)

NEW_LEADER_TERMS = 32  # newl: [0] count, [1..] the step's new leaders, [NEW_LEADER_TERMS..] their terms


@njit(cache=True, inline='always')
def save_member(S, i):
    """Server i's election fields before the step that RPL-* read (spec.replies reads `before`)."""
    members = election_layout.members(S)
    member_before = layout.member_before(S)
    for f in (CURR_TERM, CURR_VOTE_FOR, LEADER_ID, LAST_LEADER_HEART_BEAT_TIME, LEDGER_END_INDEX, LEDGER_END_TERM, TERM_TO_TAKE_LEADERSHIP):
        member_before[f] = members[i, f]


@njit(cache=True)
def request_reply(S, i, message_kind, reply_kind):
    """RPL-1/2/3 on the reply server i gave at once to a delivered request (spec.replies)."""
    message = layout.message(S)
    reply_fields = layout.reply_fields(S)
    member_before = layout.member_before(S)
    if message_kind == HEART_BEAT_REQUEST:
        return election_replies.heart_beat_reply(S, i, message[0], message[1], reply_fields[0], member_before[CURR_TERM], member_before[CURR_VOTE_FOR], member_before[LEADER_ID], member_before[LAST_LEADER_HEART_BEAT_TIME])
    if message_kind == VOTE_REQUEST:
        return election_replies.vote_reply(S, i, message[0], message[1], message[2], message[3], reply_fields[1], member_before[CURR_TERM], member_before[CURR_VOTE_FOR], member_before[LEADER_ID], member_before[LEDGER_END_INDEX], member_before[LEDGER_END_TERM], member_before[TERM_TO_TAKE_LEADERSHIP])
    if message_kind == PUSH_ENTRY_REQUEST:
        return replies.immediate_push_reply(S, i, reply_fields[0])
    return 0


@njit(cache=True)
def leader_lacks(S, p, acked):
    """spec.dledger_log._leader_lacks for the step's new leaders: the first whose log does not
    hold a committed (LOG-2) or acknowledged (LOG-6) entry; its cause is asked for."""
    world = core_table.world(S)
    new_leaders = layout.new_leaders(S)
    if not monitor.may_record(S, p):
        return
    store = layout.store(S)
    entries = layout.entries(S)
    for q in range(new_leaders[0]):
        i = new_leaders[1 + q]
        if acked:
            order = layout.acked_order(S)
            cnt = world[W_ACKED]
        else:
            order = layout.committed_order(S)
            cnt = world[W_COMMITTED]
        for r in range(cnt):
            index = order[r]
            offset = dledger_log_store.offset_of(store, i, index)
            ok = False
            if acked:
                acked_entries = layout.acked(S)
                if offset >= 0:
                    for s in range(layout.acked_counts(S)[index]):
                        if dledger_log_store.holds(entries, i, offset, acked_entries[index, s, 0], acked_entries[index, s, 1], acked_entries[index, s, 2], acked_entries[index, s, 3]):
                            ok = True
            else:
                committed = layout.committed(S)
                ok = offset >= 0 and dledger_log_store.holds(entries, i, offset, committed[index, 1], committed[index, 2], committed[index, 3], committed[index, 4])
            if not ok:
                monitor.request(S, p, i, new_leaders[NEW_LEADER_TERMS + q], 0)
                return


@njit(cache=True)
def check_steps(S, observations):
    """The step properties, in the catalogue's order; a violation that may still be recorded
    asks for its cause (M.request), which the caller computes from the world of this step."""
    config = core_table.config(S)
    world = core_table.world(S)
    alive = core_table.alive(S)
    alive_before = layout.alive_before(S)
    commit_before = layout.commit_before(S)
    new_leaders = layout.new_leaders(S)
    n = config[C_PEERS]
    store_changes = layout.store_changes(S)
    store = layout.store(S)
    if observations > 0 and new_leaders[0] > 0:
        leader_lacks(S, P_LOG2, False)
    if world[W_COMMITTED] > 0 and monitor.may_record(S, P_LOG3):
        for i in range(n):
            if store_changes[i, SC_DIRTY] == BIG or store_changes[i, SC_OLD_END] < 0:
                continue
            cnt, _, _ = monitor.dropped_first(S, i, True)
            if cnt > 0:
                monitor.request(S, P_LOG3, i, 0, 0)
                break
    if monitor.may_record(S, P_LOG4):
        for i in range(n):
            old = commit_before[i]
            new = store[i, S_COMMITTED_INDEX]
            if alive_before[i] == 1 and alive[i] == 1 and new < old:
                monitor.request(S, P_LOG4, i, new, old)
                break
    if observations > 0 and new_leaders[0] > 0:
        leader_lacks(S, P_LOG6, True)
