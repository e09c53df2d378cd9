"""The replies a dledger_log follower gives, computed as the reference's handlers compute them.

Which code a push gets (success, inconsistent state, ...), what the follower held before and after, and
which entries a reply drops."""

from __future__ import annotations

from numba import njit

from histories.fast.core import table as core_table
from histories.fast.dledger_log import ghost, layout
from histories.fast.dledger_log import store as dledger_log_store
from histories.fast.dledger_log.layout import (
    BIG,
    DR_AT,
    DR_SERVER,
    INCONSISTENT_STATE,
    PW_PRESENT,
    REPEATED_PUSH,
    RQ_ENTRY_INDEX,
    RQ_HAS_ENTRY,
    RQ_TYPE,
    SC_DIRTY,
    SC_OLD_END,
    SC_SAVED_FROM,
    TYPE_APPEND,
    TYPE_COMPARE,
    TYPE_TRUNCATE,
    W_DROPS,
)
from histories.fast.election import layout as election_layout
from histories.fast.election.layout import (
    CURR_TERM,
    FOLLOWER,
    LEADER_ID,
    ROLE,
    SUCCESS,
)
from histories.fast.election.replies import (
    RPL_1,
)

RPL_3 = 3  # a push's reply the EntryHandler's guards do not give (bits: 1 << E.RPL_1, E.RPL_2, RPL_3)


@njit(cache=True)
def holds_now(S, i, index, term, pos, size, body):
    store = layout.store(S)
    k = dledger_log_store.offset_of(store, i, index)
    return k >= 0 and dledger_log_store.holds(layout.entries(S), i, k, term, pos, size, body)


@njit(cache=True)
def held_before(S, i, index, term, pos, size, body):
    """st.entry_at(the log server i began the step with, index) == entry: below the step's first
    change the log is as it was; from there, the saved tail (sv) has what it held."""
    store_changes = layout.store_changes(S)
    d = store_changes[i, SC_DIRTY]
    if d == BIG or index < d:
        return holds_now(S, i, index, term, pos, size, body)
    svb = store_changes[i, SC_SAVED_FROM]
    if index < svb or index > store_changes[i, SC_OLD_END]:
        return False
    saved_entries = layout.saved_entries(S)
    r = index - svb
    return saved_entries[i, r, 0] == term and saved_entries[i, r, 1] == pos and saved_entries[i, r, 2] == size and saved_entries[i, r, 3] == body


@njit(cache=True)
def dropped_now(S, i, now, index, term, pos, size, body, match):
    """A drop of server i at this time (that took this entry at `index`, if `match`)."""
    world = core_table.world(S)
    drops = layout.drops(S)
    for r in range(world[W_DROPS] - 1, -1, -1):
        if drops[r, DR_AT] != now:
            break
        if drops[r, DR_SERVER] == i and (not match or ghost.drop_holds(S, r, index, term, pos, size, body)):
            return True
    return False


@njit(cache=True)
def push_reply(S, i, member_before, code, reply_term, typ, leader, has, index, term, pos, size, body, now):
    """rpl1 (an APPEND answered SUCCESS below the node's term, its entry not held before) and rpl3
    (spec.replies._push_reply_problem) on server i's reply `code` to a push it held."""
    members = election_layout.members(S)
    bad = 0
    if typ == TYPE_APPEND and code == SUCCESS:
        t = max(member_before[CURR_TERM], members[i, CURR_TERM])  # the handler answers with the term the maintainer left it
        if reply_term < t and not (has == 1 and held_before(S, i, index, term, pos, size, body)):
            bad |= 1 << RPL_1
    if code == REPEATED_PUSH:
        # the EntryHandler answers it only at once (handle_push), never from its queue
        return bad | 1 << RPL_3
    if code == INCONSISTENT_STATE and typ == TYPE_COMPARE and has == 1:
        if (held_before(S, i, index, term, pos, size, body) and holds_now(S, i, index, term, pos, size, body)
                and not dropped_now(S, i, now, 0, 0, 0, 0, 0, False)):
            bad |= 1 << RPL_3
        return bad
    if code != SUCCESS:
        return bad
    if typ == TYPE_COMPARE:
        if has == 0 or (not held_before(S, i, index, term, pos, size, body)
                        and not holds_now(S, i, index, term, pos, size, body)):
            bad |= 1 << RPL_3
        return bad
    if typ == TYPE_APPEND or typ == TYPE_TRUNCATE:
        if has == 0 or (not holds_now(S, i, index, term, pos, size, body)
                        and not dropped_now(S, i, now, index, term, pos, size, body, True)):
            return bad | 1 << RPL_3
        if typ == TYPE_APPEND and held_before(S, i, index, term, pos, size, body):
            return bad  # checkAppendFuture: answered from the log
        if not (members[i, ROLE] == FOLLOWER and reply_term == members[i, CURR_TERM] and leader == members[i, LEADER_ID]):
            bad |= 1 << RPL_3
    return bad


@njit(cache=True)
def immediate_push_reply(S, i, code):
    """rpl3 on the reply handle_push gave at once: REPEATED_PUSH only for an APPEND whose index
    was waiting (handle_push leaves write_requests as they were when it answers so)."""
    message = layout.message(S)
    if code != REPEATED_PUSH:
        return 0
    index = message[RQ_ENTRY_INDEX]
    write_requests = layout.write_requests(S)
    if message[RQ_TYPE] == TYPE_APPEND and message[RQ_HAS_ENTRY] == 1 and 0 <= index < write_requests.shape[1] and write_requests[i, index, PW_PRESENT] == 1:
        return 0
    return 1 << RPL_3
