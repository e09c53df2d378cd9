"""The leader's quorum-ack checker: mirrors `checker_wake_at` and
`quorum_ack_checker` in reference_impl/dledger_log/entry_pusher.py.

Advances the committed index when a quorum of water marks passes it and completes the futures waiting on it."""

from __future__ import annotations

from numba import njit

from histories.fast.core import table as core_table
from histories.fast.dledger_log import entry_pusher, layout
from histories.fast.dledger_log import store as dledger_log_store
from histories.fast.dledger_log.layout import (
    BIG,
    C_CURRENT_TERM_COMMIT,
    C_LEAK_CHECK_INTERVAL_MS,
    C_MAX_WAIT_ACK_TIME_MS,
    C_THREAD_WAIT_MS,
    C_V026,
    P_CHECKER_WOKEN,
    REQUEST_TERM,
    ET_TERM,
    P_LAST_CHECK_LEAK_MS,
    P_LAST_QUORUM_INDEX,
    P_PENDING,
    P_PENDING_TERMS,
    P_WATER_MARK_TERMS,
    PD_CREATED_MS,
    PD_DONE,
    PD_INDEX,
    PD_POS,
    PD_REF,
    PD_RPC,
    PD_TERM,
    TERM_CHANGED,
    WAIT_QUORUM_ACK_TIMEOUT,
)
from histories.fast.election import layout as election_layout
from histories.fast.election import member_state as election_member_state
from histories.fast.election.layout import (
    CURR_TERM,
    LEADER,
    ROLE,
    SUCCESS,
)


@njit(cache=True)
def checker_wake_at(S, i):
    """entry_pusher.checker_wake_at"""
    config = core_table.config(S)
    members = election_layout.members(S)
    if members[i, ROLE] != LEADER:
        return -1
    term = members[i, CURR_TERM]
    pusher = layout.pusher(S)
    pending_terms = layout.pending_terms(S)
    for r in range(pusher[i, P_PENDING_TERMS]):
        if pending_terms[i, r] != term:
            return 0
    water_mark_terms = layout.water_mark_terms(S)
    seen = False
    for r in range(pusher[i, P_WATER_MARK_TERMS]):
        if water_mark_terms[i, r, 0] != term:
            return 0
        seen = True
    if not seen:
        return 0
    q = entry_pusher.quorum_index(S, i, term)
    if q != pusher[i, P_LAST_QUORUM_INDEX]:
        return 0
    wake = pusher[i, P_LAST_CHECK_LEAK_MS] + config[C_LEAK_CHECK_INTERVAL_MS] + 1
    pending = layout.pending(S)
    index = q + 1
    r = entry_pusher.find_future(S, i, term, index)
    while r >= 0 and pending[i, r, PD_DONE] == 1:
        index += 1
        r = entry_pusher.find_future(S, i, term, index)
    if r >= 0:
        wake = min(wake, pending[i, r, PD_CREATED_MS] + config[C_MAX_WAIT_ACK_TIME_MS])
    return wake


@njit(cache=True)
def checker_slack(S, i, wake):
    """entry_pusher.checker_slack: at once when woken or its loop goes on without a wait, else
    within its waitForRunning(1)."""
    if wake == 0 and layout.pusher(S)[i, P_CHECKER_WOKEN] == 1:
        return 0
    return core_table.config(S)[C_THREAD_WAIT_MS]


@njit(cache=True)
def quorum_ack_checker(S, i, now):
    """entry_pusher.quorum_ack_checker (with check_response_futures_timeout / _elapsed)."""
    config = core_table.config(S)
    members = election_layout.members(S)
    if members[i, ROLE] != LEADER:
        return
    term = members[i, CURR_TERM]
    pusher = layout.pusher(S)
    pending_terms = layout.pending_terms(S)
    pending = layout.pending(S)
    store = layout.store(S)
    if not entry_pusher.has_pending_term(S, i, term):
        entry_pusher.add_pending_term(S, i, term)
    if entry_pusher.water_mark_row(S, i, term) < 0:
        entry_pusher.new_water_mark_row(S, i, term)
    if pusher[i, P_PENDING_TERMS] > 1:
        r = 0
        while r < pusher[i, P_PENDING_TERMS]:
            t = pending_terms[i, r]
            if t == term:
                r += 1
                continue
            last = -BIG
            f = entry_pusher.next_future(S, i, t, last, BIG)
            while f >= 0:
                last = pending[i, f, PD_INDEX]
                if pending[i, f, PD_DONE] == 0:
                    entry_pusher.push_result(S, TERM_CHANGED, last, REQUEST_TERM, -1, pending[i, f, PD_REF], pending[i, f, PD_RPC], pending[i, f, PD_POS])
                f = entry_pusher.next_future(S, i, t, last, BIG)
            f = 0
            while f < pusher[i, P_PENDING]:
                if pending[i, f, PD_TERM] == t:
                    entry_pusher.drop_future(S, i, f)
                else:
                    f += 1
            for q in range(r, pusher[i, P_PENDING_TERMS] - 1):
                pending_terms[i, q] = pending_terms[i, q + 1]
            pusher[i, P_PENDING_TERMS] -= 1
    if pusher[i, P_WATER_MARK_TERMS] > 1:
        water_mark_terms = layout.water_mark_terms(S)
        r = 0
        while r < pusher[i, P_WATER_MARK_TERMS]:
            if water_mark_terms[i, r, 0] != term:
                entry_pusher.drop_water_mark_row(S, i, r)
            else:
                r += 1
    q = entry_pusher.quorum_index(S, i, term)
    commit = q
    if config[C_CURRENT_TERM_COMMIT] == 1:
        k = dledger_log_store.offset_of(store, i, q)
        if k < 0 or layout.entries(S)[i, k, ET_TERM] != term:
            commit = -1
    dledger_log_store.update_committed_index(S, i, term, term, commit, now)
    need_check = False
    ack_num = 0
    index = q
    while index > pusher[i, P_LAST_QUORUM_INDEX]:
        f = entry_pusher.find_future(S, i, term, index)
        if f < 0:
            need_check = True
            break
        done = pending[i, f, PD_DONE]
        pos = pending[i, f, PD_POS]
        ref = pending[i, f, PD_REF]
        rpc = pending[i, f, PD_RPC]
        entry_pusher.drop_future(S, i, f)
        if done == 0:
            entry_pusher.push_result(S, SUCCESS, index, term, pos, ref, rpc, pos)
        ack_num += 1
        index -= 1
    if ack_num == 0:
        index = q + 1
        while True:
            f = entry_pusher.find_future(S, i, term, index)
            if f < 0 or now - pending[i, f, PD_CREATED_MS] < config[C_MAX_WAIT_ACK_TIME_MS]:
                break
            if pending[i, f, PD_DONE] == 0:
                entry_pusher.push_result(S, WAIT_QUORUM_ACK_TIMEOUT, index, term, -1, pending[i, f, PD_REF], pending[i, f, PD_RPC], pending[i, f, PD_POS])
                pending[i, f, PD_DONE] = 1
            index += 1
    leak = pusher[i, P_LAST_CHECK_LEAK_MS]
    if election_member_state.elapsed(now, leak) > config[C_LEAK_CHECK_INTERVAL_MS] or need_check:
        entry_pusher.update_peer_water_mark(S, i, term, i, dledger_log_store.end_index(store, i))
        end = q if config[C_V026] == 1 else q + 1  # 0.3.x compares <= endIndex
        f = entry_pusher.next_future(S, i, term, -BIG, end)
        while f >= 0:
            index = pending[i, f, PD_INDEX]
            if pending[i, f, PD_DONE] == 0:
                entry_pusher.push_result(S, SUCCESS, index, term, pending[i, f, PD_POS], pending[i, f, PD_REF], pending[i, f, PD_RPC], pending[i, f, PD_POS])
            entry_pusher.drop_future(S, i, f)
            f = entry_pusher.next_future(S, i, term, index, end)
        leak = now
    pusher[i, P_LAST_QUORUM_INDEX] = q
    pusher[i, P_LAST_CHECK_LEAK_MS] = leak
    pusher[i, P_CHECKER_WOKEN] = 1 if ack_num > 0 else 0
