"""A DLedger server in the dledger_log world: mirrors reference_impl/dledger_log/server.py.

The election parts come from the election twin (histories/fast/election/server.py); this module adds the log:
ticks that run the pusher and handler, client appends, boot and crash with their store."""

from __future__ import annotations

from numba import njit

from histories.fast.core import outputs as core_outputs
from histories.fast.core import table as core_table
from histories.fast.core.layout import (
    O_KIND,
    O_OBSERVED,
    O_TARGET,
    OUT_OBSERVATION,
    OUT_RESPOND,
)
from histories.fast.dledger_log import (
    entry_dispatcher,
    entry_handler,
    entry_pusher,
    entry_pusher_quorum_ack,
    ghost,
    layout,
)
from histories.fast.dledger_log import store as dledger_log_store
from histories.fast.dledger_log.layout import (
    APPEND_ENTRY_RESPONSE,
    C_BODY_LENGTH,
    C_FAST_ADVANCE_COMMIT_INDEX,
    C_FORCED_LEADER,
    ET_TERM,
    FIRST_DISPATCHER,
    H_QUEUE,
    H_WOKEN,
    HANDLER_THREAD,
    MAINTAINER,
    P_CHECKER_WOKEN,
    OBS_APPEND_RESULT,
    OBS_COMMIT_ADVANCED,
    OBS_ENTRIES_DROPPED,
    PW_REQUEST,
    RQ_LEADER_ID,
    RQ_TERM,
    RQ_TYPE,
    S_COMMITTED_INDEX,
    S_END_TERM,
    TYPE_TRUNCATE,
)
from histories.fast.election import layout as election_layout
from histories.fast.election import member_state as election_member_state
from histories.fast.election import server as election_server
from histories.fast.election.layout import (
    C_CHECK_PREFERRED_LEADER_INTERVAL_MS,
    C_PEERS,
    C_PREFERRED_LEADERS,
    CURR_TERM,
    FOLLOWER,
    LAST_LEADER_HEART_BEAT_TIME,
    LEADER,
    LEADER_ID,
    LEDGER_END_INDEX,
    LEDGER_END_TERM,
    OBS_ROLE_CHANGED,
    ROLE,
)


@njit(cache=True)
def sync(S, i, before_committed):
    """server.sync: the member follows the store (and the current term's water marks when a
    preferred leader is configured); CommitAdvanced when the commit index moved."""
    config = core_table.config(S)
    outputs = core_table.outputs(S)
    members = election_layout.members(S)
    store = layout.store(S)
    end = dledger_log_store.end_index(store, i)
    if end != members[i, LEDGER_END_INDEX] or store[i, S_END_TERM] != members[i, LEDGER_END_TERM]:
        members[i, LEDGER_END_INDEX] = end
        members[i, LEDGER_END_TERM] = store[i, S_END_TERM]
    n = config[C_PEERS]
    if config[C_PREFERRED_LEADERS] == 1:
        water_marks = election_layout.water_marks(S)
        r = entry_pusher.water_mark_row(S, i, members[i, CURR_TERM])
        if r >= 0:
            water_mark_terms = layout.water_mark_terms(S)
            for p in range(n):
                water_marks[i, p] = water_mark_terms[i, r, 1 + p]
            water_marks[i, n] = 1
        else:
            for p in range(n):
                water_marks[i, p] = -1
            water_marks[i, n] = 0
    new = store[i, S_COMMITTED_INDEX]
    if new != before_committed and new >= 0:
        k = dledger_log_store.offset_of(store, i, new)
        k2 = core_outputs.new_row(S, OUT_OBSERVATION)
        outputs[k2, O_TARGET] = OBS_COMMIT_ADVANCED
        outputs[k2, O_OBSERVED] = before_committed
        outputs[k2, O_OBSERVED + 1] = new
        outputs[k2, O_OBSERVED + 2] = members[i, CURR_TERM]
        outputs[k2, O_OBSERVED + 3] = 1 if members[i, ROLE] == LEADER else 0
        outputs[k2, O_OBSERVED + 4] = layout.entries(S)[i, k, ET_TERM] if k >= 0 else -1


@njit(cache=True)
def entries_dropped(S, i, leader, term):
    """server.sync's EntriesDropped (before its CommitAdvanced): the log lost entries it held
    when the step began; the ghost reads which from the saved tail."""
    outputs = core_table.outputs(S)
    lo, hi, _ = ghost.lost_range(S, i)
    if lo <= hi:
        k = core_outputs.new_row(S, OUT_OBSERVATION)
        outputs[k, O_TARGET] = OBS_ENTRIES_DROPPED
        outputs[k, O_OBSERVED] = leader
        outputs[k, O_OBSERVED + 1] = term


@njit(cache=True)
def fast_advance_commit_index(S, i, now):
    """server.fast_advance_commit_index (DLedger 0.4.0's no-op of a new leader)"""
    store = layout.store(S)
    if store[i, S_COMMITTED_INDEX] >= dledger_log_store.end_index(store, i):
        return
    code, index, term, _ = dledger_log_store.append_as_leader(S, i, 0, 0, now)
    if code != 0:
        return
    entry_pusher.update_peer_water_mark(S, i, term, i, index)
    members = election_layout.members(S)
    members[i, LEDGER_END_INDEX] = dledger_log_store.end_index(store, i)
    members[i, LEDGER_END_TERM] = store[i, S_END_TERM]


@njit(cache=True, inline='always')
def thread_count(S, j):
    """How many threads node j runs: a server n + 3 (the maintainer, the handler, a dispatcher
    per peer, the checker, the flush service), a client one."""
    n = core_table.config(S)[C_PEERS]
    return n + 3 if j < n else 1


@njit(cache=True, inline='always')
def dispatcher_peer(i, k):
    """The peer of server i's dispatcher thread k (peers in order, i left out)."""
    p = k - FIRST_DISPATCHER
    return p if p < i else p + 1


@njit(cache=True)
def thread_wake_at(S, i, k):
    """server.thread_wakes[k]: when server i's thread k next has something to do (-1: nothing
    until the state changes; 0: now)."""
    n = core_table.config(S)[C_PEERS]
    if k == MAINTAINER:
        return election_server.wake_at(S, i)
    if k == HANDLER_THREAD:
        return entry_handler.wake_at(S, i)
    if k < n + 1:
        return entry_dispatcher.dispatcher_wake_at(S, i, dispatcher_peer(i, k))
    if k == n + 1:
        return entry_pusher_quorum_ack.checker_wake_at(S, i)
    return dledger_log_store.flush_wake_at(layout.store(S), i)


@njit(cache=True)
def thread_slack(S, i, k, since, wake):
    """server.thread_slack: how much later than `wake` (thread k's wake time, which became so at
    `since`) Java may act."""
    n = core_table.config(S)[C_PEERS]
    if k == MAINTAINER:
        return election_server.wake_slack(S, i, since, wake)
    if k == HANDLER_THREAD:
        return entry_handler.slack(S, i, wake)
    if k < n + 1:
        return entry_dispatcher.dispatcher_slack(S, i, dispatcher_peer(i, k), since, wake)
    if k == n + 1:
        return entry_pusher_quorum_ack.checker_slack(S, i, wake)
    return 0


@njit(cache=True)
def wake_at(S, i):
    """server.wake_at: the earliest of the threads' wake times (-1: never)."""
    wake = -1
    for k in range(thread_count(S, i)):
        t = thread_wake_at(S, i, k)
        if t >= 0 and (wake < 0 or t < wake):
            wake = t
    return wake


@njit(cache=True, inline='always')
def idle_on_role_change(S, i, role_before):
    """server.idle_on_role_change: after a role change neither the handler nor the checker is woken."""
    if election_layout.members(S)[i, ROLE] != role_before:
        layout.handler(S)[i, H_WOKEN] = 0
        layout.pusher(S)[i, P_CHECKER_WOKEN] = 0


@njit(cache=True)
def on_thread_tick(S, i, k, now, draw, mutant):
    """server.on_thread_tick: one step of thread k, if it is due at `now`."""
    config = core_table.config(S)
    outputs = core_table.outputs(S)
    output_count = core_table.output_count(S)
    members = election_layout.members(S)
    store = layout.store(S)
    n = config[C_PEERS]
    k0 = output_count[0]
    before = store[i, S_COMMITTED_INDEX]
    if k == MAINTAINER:
        if not 0 <= election_server.wake_at(S, i) <= now:
            return
        role_before = members[i, ROLE]
        election_server.on_tick(S, i, now, draw, mutant)
        if config[C_FAST_ADVANCE_COMMIT_INDEX] == 1 and members[i, ROLE] == LEADER:
            became = False
            for r in range(k0, output_count[0]):
                if (outputs[r, 0] == OUT_OBSERVATION and outputs[r, O_TARGET] == OBS_ROLE_CHANGED and outputs[r, O_OBSERVED + 1] == LEADER):
                    became = True
            if became:
                fast_advance_commit_index(S, i, now)
        idle_on_role_change(S, i, role_before)
        sync(S, i, before)
        return
    if k == HANDLER_THREAD:
        if not 0 <= entry_handler.wake_at(S, i) <= now:
            return
        # the TRUNCATE the handler carries out (the queue's head, on a follower) names the drop it causes
        t_leader = -1
        t_term = -1
        if layout.handler(S)[i, H_QUEUE] > 0 and members[i, ROLE] == FOLLOWER:
            head = layout.handler_queue(S)[i, 0]
            if head[PW_REQUEST + RQ_TYPE] == TYPE_TRUNCATE:
                t_leader = head[PW_REQUEST + RQ_LEADER_ID]
                t_term = head[PW_REQUEST + RQ_TERM]
        entry_handler.do_work(S, i, now)
        entries_dropped(S, i, t_leader, t_term)
        sync(S, i, before)
        return
    if k < n + 1:
        peer = dispatcher_peer(i, k)
        if not 0 <= entry_dispatcher.dispatcher_wake_at(S, i, peer) <= now:
            return
        entry_dispatcher.dispatcher_do_work(S, i, peer, now)
        sync(S, i, before)
        return
    if k == n + 1:
        if not 0 <= entry_pusher_quorum_ack.checker_wake_at(S, i) <= now:
            return
        entry_pusher_quorum_ack.quorum_ack_checker(S, i, now)
        sync(S, i, before)
        answer_clients(S, i, k0)
        return
    if 0 <= dledger_log_store.flush_wake_at(store, i) <= now:
        dledger_log_store.on_flush_tick(store, i, now)


@njit(cache=True)
def answer_clients(S, i, k0):
    """server.answer_clients: a completed AppendFuture answers its client's APPEND RPC (the
    checker's futures carry this leader's id: response_of)."""
    outputs = core_table.outputs(S)
    output_count = core_table.output_count(S)
    k1 = output_count[0]
    for k in range(k0, k1):
        if outputs[k, 0] == OUT_OBSERVATION and outputs[k, O_TARGET] == OBS_APPEND_RESULT and outputs[k, O_OBSERVED + 5] != 0:
            r = core_outputs.new_row(S, OUT_RESPOND)
            outputs[r, O_TARGET] = outputs[k, O_OBSERVED + 5]
            outputs[r, O_KIND] = APPEND_ENTRY_RESPONSE
            outputs[r, core_outputs.message_column(0)] = outputs[k, O_OBSERVED]
            outputs[r, core_outputs.message_column(1)] = outputs[k, O_OBSERVED + 1]
            outputs[r, core_outputs.message_column(2)] = outputs[k, O_OBSERVED + 3]
            outputs[r, core_outputs.message_column(3)] = outputs[k, O_OBSERVED + 2]
            outputs[r, core_outputs.message_column(4)] = i


@njit(cache=True)
def handle_append(S, i, body, rpc, now):
    """server.on_request for an AppendEntryRequest -> (reply?, code, index, pos, term, leader)."""
    config = core_table.config(S)
    before = layout.store(S)[i, S_COMMITTED_INDEX]
    done, code, index, term, pos, fpos = entry_pusher.handle_append(S, i, body, config[C_BODY_LENGTH], now, rpc)
    if done:
        entry_pusher.push_result(S, code, index, term, pos, body, rpc, fpos)
    sync(S, i, before)
    if done:
        return True, code, index, pos, term, election_layout.members(S)[i, LEADER_ID]
    return False, 0, 0, 0, 0, 0


@njit(cache=True)
def boot(S, i, now, term, vote, ledger_end_index, ledger_end_term, restart):
    """server.boot (and restart): the term file, a recovered store, fresh threads. `restart`:
    the store is what survived the crash; otherwise it starts empty."""
    config = core_table.config(S)
    members = election_layout.members(S)
    forced = config[C_FORCED_LEADER]
    if forced >= 0:
        # forced_member: srv.boot at term 0, then the role ServerTestHarness forces
        election_member_state.boot(S, i, now, 0, -1, -1, -1, now + config[C_CHECK_PREFERRED_LEADER_INTERVAL_MS])
        if forced == i:
            members[i, ROLE] = LEADER
            members[i, LEADER_ID] = i
        else:
            members[i, ROLE] = FOLLOWER
            members[i, LEADER_ID] = forced
            members[i, LAST_LEADER_HEART_BEAT_TIME] = now
    else:
        election_member_state.boot(S, i, now, term, vote, -1, -1, now + config[C_CHECK_PREFERRED_LEADER_INTERVAL_MS])
    if not restart:
        dledger_log_store.empty(layout.store(S), i, now)
    dledger_log_store.recover(S, i, members[i, CURR_TERM], now)
    members[i, LEDGER_END_INDEX] = dledger_log_store.end_index(layout.store(S), i)
    members[i, LEDGER_END_TERM] = layout.store(S)[i, S_END_TERM]
    water_marks = election_layout.water_marks(S)
    for p in range(water_marks.shape[1]):
        water_marks[i, p] = -1
    water_marks[i, config[C_PEERS]] = 0
    entry_pusher.new_pusher(S, i, now)
    entry_handler.new_handler(S, i, now)


@njit(cache=True)
def crash(S, i, kind, mutant):
    """server.crash: kind 0 process (the term file survives), 1 OS, 2 disk (it does not); the
    member as the election's server crashes it, then the store's crash."""
    config = core_table.config(S)
    election_server.crash(S, i, kind != 0, mutant)
    water_marks = election_layout.water_marks(S)
    for p in range(water_marks.shape[1]):
        water_marks[i, p] = -1
    water_marks[i, config[C_PEERS]] = 0
    dledger_log_store.crash(S, i, kind)
