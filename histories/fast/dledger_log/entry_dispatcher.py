"""The leader's per-peer dispatcher: mirrors reference_impl/dledger_log/entry_dispatcher.py.

For each peer the leader keeps a push state (COMPARE, TRUNCATE, APPEND, COMMIT) and a write index; these
functions are the reference's `do_work` steps for one peer, reading and writing that peer's row of the
state table."""

from __future__ import annotations

from numba import njit

from histories.fast.core import outputs as core_outputs
from histories.fast.core import table as core_table
from histories.fast.core.layout import (
    O_CONTEXT,
    O_CONTEXT_1,
    O_CONTEXT_2,
    O_CONTEXT_3,
    O_KIND,
    O_TARGET,
    OUT_SEND,
)
from histories.fast.dledger_log import entry_pusher, layout
from histories.fast.dledger_log import store as dledger_log_store
from histories.fast.dledger_log.layout import (
    C_COMMIT_PUSH_INTERVAL_MS,
    C_PUSH_WAIT_MS,
    C_THREAD_WAIT_MS,
    CTX_TERM_SHIFT,
    D_BLOCKED,
    D_HAS_RESPONSE,
    D_RESPONSE_BEGIN,
    D_RESPONSE_CODE,
    D_RESPONSE_END,
    D_RESPONSE_INDEX,
    D_RESPONSE_TERM,
    D_WAIT_UNTIL,
    NO_INDEX,
    C_DISPATCHER_ERROR_SLEEP_MS,
    C_DISPATCHER_MAX_PENDING_SIZE,
    C_FRESH_COMPARE,
    C_LEAK_CHECK_INTERVAL_MS,
    C_MAX_PUSH_TIME_OUT_MS,
    CTX_PUSH,
    D_COMPARE_INDEX,
    D_LAST_CHECK_LEAK_MS,
    D_LAST_PUSH_COMMIT_MS,
    D_LEADER_ID,
    D_PENDING,
    D_PENDING_HIGH,
    D_PENDING_LOW,
    D_SEQ,
    D_SLEEP_UNTIL,
    D_TERM,
    D_TRUNCATE_INDEX,
    D_TYPE,
    D_WAITING,
    D_WRITE_INDEX,
    DISPATCHER_COLUMNS,
    ET_BODY,
    ET_POS,
    ET_SIZE,
    ET_TERM,
    INCONSISTENT_STATE,
    INDEX_LESS_THAN_LOCAL_BEGIN,
    P_EPOCH,
    PUSH_ENTRY_REQUEST,
    RQ_COMMIT_INDEX,
    RQ_ENTRY_BODY,
    RQ_ENTRY_INDEX,
    RQ_ENTRY_POS,
    RQ_ENTRY_SIZE,
    RQ_ENTRY_TERM,
    RQ_HAS_ENTRY,
    RQ_LEADER_ID,
    RQ_SEQ_COUNT,
    RQ_SEQ_EPOCH,
    RQ_TERM,
    RQ_TYPE,
    S_BEGIN_INDEX,
    S_COMMITTED_INDEX,
    TYPE_APPEND,
    TYPE_COMMIT,
    TYPE_COMPARE,
    TYPE_TRUNCATE,
)
from histories.fast.election import layout as election_layout
from histories.fast.election import member_state as election_member_state
from histories.fast.election.layout import (
    CURR_TERM,
    LEADER,
    LEADER_ID,
    NETWORK_ERROR,
    ROLE,
    SUCCESS,
)


@njit(cache=True)
def change_state(S, i, peer, index, target):
    """entry_dispatcher.change_state"""
    d = layout.dispatchers(S)
    if target == TYPE_APPEND:
        entry_pusher.update_peer_water_mark(S, i, d[i, peer, D_TERM], peer, index)
        entry_pusher.wake_checker(S, i)
        d[i, peer, D_COMPARE_INDEX] = -1
        d[i, peer, D_WRITE_INDEX] = index + 1
    elif target == TYPE_COMPARE:
        if d[i, peer, D_TYPE] == TYPE_APPEND:
            d[i, peer, D_COMPARE_INDEX] = -1
            entry_pusher.pending_clear(S, i, peer)
    elif target == TYPE_TRUNCATE:
        d[i, peer, D_COMPARE_INDEX] = -1
    d[i, peer, D_TYPE] = target


@njit(cache=True)
def send_push(S, i, peer, kind, index):
    """A PushEntryRequest of `kind` with the entry at `index` (-1 for COMMIT: none), as
    entry_dispatcher._request builds it, sent as an invokeAsync; seq is d.seq + 1."""
    outputs = core_table.outputs(S)
    d = layout.dispatchers(S)
    store = layout.store(S)
    entries = layout.entries(S)
    seq = d[i, peer, D_SEQ] + 1
    k = core_outputs.new_row(S, OUT_SEND)
    outputs[k, O_TARGET] = peer
    outputs[k, O_KIND] = PUSH_ENTRY_REQUEST
    outputs[k, core_outputs.message_column(RQ_LEADER_ID)] = d[i, peer, D_LEADER_ID]
    outputs[k, core_outputs.message_column(RQ_TERM)] = d[i, peer, D_TERM]
    outputs[k, core_outputs.message_column(RQ_TYPE)] = kind
    if kind != TYPE_COMMIT:
        r = index - store[i, S_BEGIN_INDEX]
        outputs[k, core_outputs.message_column(RQ_HAS_ENTRY)] = 1
        outputs[k, core_outputs.message_column(RQ_ENTRY_INDEX)] = index
        outputs[k, core_outputs.message_column(RQ_ENTRY_TERM)] = entries[i, r, ET_TERM]
        outputs[k, core_outputs.message_column(RQ_ENTRY_POS)] = entries[i, r, ET_POS]
        outputs[k, core_outputs.message_column(RQ_ENTRY_SIZE)] = entries[i, r, ET_SIZE]
        outputs[k, core_outputs.message_column(RQ_ENTRY_BODY)] = entries[i, r, ET_BODY]
    outputs[k, core_outputs.message_column(RQ_COMMIT_INDEX)] = store[i, S_COMMITTED_INDEX]
    outputs[k, core_outputs.message_column(RQ_SEQ_EPOCH)] = layout.pusher(S)[i, P_EPOCH]
    outputs[k, core_outputs.message_column(RQ_SEQ_COUNT)] = seq
    outputs[k, O_CONTEXT] = CTX_PUSH
    outputs[k, O_CONTEXT_1] = kind + (d[i, peer, D_TERM] << CTX_TERM_SHIFT)
    outputs[k, O_CONTEXT_2] = peer
    outputs[k, O_CONTEXT_3] = seq
    d[i, peer, D_SEQ] = seq
    return seq


@njit(cache=True)
def dispatcher_wake_at(S, i, peer):
    """entry_dispatcher.dispatcher_wake_at: a thread blocked in get goes on when the future
    completes or its 3 s are up, whatever the role."""
    config = core_table.config(S)
    members = election_layout.members(S)
    d = layout.dispatchers(S)
    if d[i, peer, D_WAITING] != 0:
        return 0 if d[i, peer, D_HAS_RESPONSE] == 1 else d[i, peer, D_WAIT_UNTIL]
    if members[i, ROLE] != LEADER:
        return -1
    sleep = d[i, peer, D_SLEEP_UNTIL]
    if d[i, peer, D_TERM] != members[i, CURR_TERM] or d[i, peer, D_LEADER_ID] != members[i, LEADER_ID]:
        return max(0, sleep)
    end = dledger_log_store.end_index(layout.store(S), i)
    if d[i, peer, D_TYPE] != TYPE_APPEND:
        return -1 if d[i, peer, D_COMPARE_INDEX] == -1 and end == -1 else max(0, sleep)
    if d[i, peer, D_WRITE_INDEX] <= end:
        return max(0, sleep)
    lpc = d[i, peer, D_LAST_PUSH_COMMIT_MS]
    wake = lpc + config[C_COMMIT_PUSH_INTERVAL_MS] + 1 if lpc >= 0 else 0
    sent = entry_pusher.pending_get(S, i, peer, entry_pusher.peer_water_mark(S, i, d[i, peer, D_TERM], peer) + 1)
    if sent >= 0:
        wake = min(wake, sent + config[C_MAX_PUSH_TIME_OUT_MS] + 1)
    return max(wake, sleep)


@njit(cache=True)
def dispatcher_slack(S, i, peer, since, wake):
    """entry_dispatcher.dispatcher_slack: at once when get returns or the 500 ms sleep ends with
    the work already there, else within the thread's waitForRunning(1)."""
    d = layout.dispatchers(S)
    sleep = d[i, peer, D_SLEEP_UNTIL]
    if d[i, peer, D_WAITING] != 0 or (wake == sleep and since <= sleep):
        return 0
    return core_table.config(S)[C_THREAD_WAIT_MS]


@njit(cache=True, inline='always')
def block(S, i, peer, kind, seq, now):
    """entry_dispatcher._block: the thread blocks in responseFuture.get(3, SECONDS) on push `seq`."""
    d = layout.dispatchers(S)
    d[i, peer, D_WAITING] = seq
    d[i, peer, D_BLOCKED] = kind
    d[i, peer, D_WAIT_UNTIL] = now + core_table.config(S)[C_PUSH_WAIT_MS]
    d[i, peer, D_HAS_RESPONSE] = 0


@njit(cache=True)
def check_and_fresh_state(S, i, peer):
    """entry_dispatcher.check_and_fresh_state"""
    config = core_table.config(S)
    members = election_layout.members(S)
    d = layout.dispatchers(S)
    if members[i, ROLE] != LEADER:
        return False
    if (d[i, peer, D_TERM] != members[i, CURR_TERM] or d[i, peer, D_LEADER_ID] < 0
            or d[i, peer, D_LEADER_ID] != members[i, LEADER_ID]):
        d[i, peer, D_TERM] = members[i, CURR_TERM]
        d[i, peer, D_LEADER_ID] = i
        if config[C_FRESH_COMPARE] == 1:
            d[i, peer, D_COMPARE_INDEX] = -1
        change_state(S, i, peer, -1, TYPE_COMPARE)
    return True


@njit(cache=True)
def do_append_inner(S, i, peer, index, now):
    """entry_dispatcher.do_append_inner -> 0, or the code of the DLedgerException it raises."""
    code = dledger_log_store.get_code(layout.store(S), i, index)
    if code == INDEX_LESS_THAN_LOCAL_BEGIN:
        change_state(S, i, peer, -1, TYPE_COMPARE)
        return 0
    if code != 0:
        return code
    send_push(S, i, peer, TYPE_APPEND, index)
    entry_pusher.pending_set(S, i, peer, index, now)
    layout.dispatchers(S)[i, peer, D_LAST_PUSH_COMMIT_MS] = now
    return 0


@njit(cache=True)
def do_commit(S, i, peer, now):
    """entry_dispatcher.do_commit"""
    config = core_table.config(S)
    d = layout.dispatchers(S)
    if election_member_state.elapsed(now, d[i, peer, D_LAST_PUSH_COMMIT_MS]) <= config[C_COMMIT_PUSH_INTERVAL_MS]:
        return
    send_push(S, i, peer, TYPE_COMMIT, -1)
    d[i, peer, D_LAST_PUSH_COMMIT_MS] = now


@njit(cache=True)
def do_check_append_response(S, i, peer, now):
    """entry_dispatcher.do_check_append_response -> 0 or an exception's code."""
    config = core_table.config(S)
    index = entry_pusher.peer_water_mark(S, i, layout.dispatchers(S)[i, peer, D_TERM], peer) + 1
    sent = entry_pusher.pending_get(S, i, peer, index)
    if sent >= 0 and now - sent > config[C_MAX_PUSH_TIME_OUT_MS]:
        return do_append_inner(S, i, peer, index, now)
    return 0


@njit(cache=True)
def do_append(S, i, peer, now):
    """entry_dispatcher.do_append -> 0 or an exception's code."""
    config = core_table.config(S)
    d = layout.dispatchers(S)
    store = layout.store(S)
    max_pending = config[C_DISPATCHER_MAX_PENDING_SIZE]
    while d[i, peer, D_TYPE] == TYPE_APPEND:
        if d[i, peer, D_WRITE_INDEX] > dledger_log_store.end_index(store, i):
            do_commit(S, i, peer, now)
            return do_check_append_response(S, i, peer, now)
        if d[i, peer, D_PENDING] >= max_pending or election_member_state.elapsed(now, d[i, peer, D_LAST_CHECK_LEAK_MS]) > config[C_LEAK_CHECK_INTERVAL_MS]:
            mark = entry_pusher.peer_water_mark(S, i, d[i, peer, D_TERM], peer)
            if d[i, peer, D_PENDING] > 0:
                pending_maps = layout.pending_maps(S)
                for idx in range(max(0, d[i, peer, D_PENDING_LOW]), min(mark, d[i, peer, D_PENDING_HIGH] + 1)):
                    if pending_maps[i, peer, idx] >= 0:
                        pending_maps[i, peer, idx] = -1
                        d[i, peer, D_PENDING] -= 1
            d[i, peer, D_LAST_CHECK_LEAK_MS] = now
        if d[i, peer, D_PENDING] >= max_pending:
            return do_check_append_response(S, i, peer, now)
        code = do_append_inner(S, i, peer, d[i, peer, D_WRITE_INDEX], now)
        if code != 0:
            return code
        d[i, peer, D_WRITE_INDEX] += 1
    return 0


@njit(cache=True)
def do_compare(S, i, peer, now):
    """entry_dispatcher.do_compare up to the blocking get -> 0 or an exception's code."""
    d = layout.dispatchers(S)
    store = layout.store(S)
    typ = d[i, peer, D_TYPE]
    if typ != TYPE_COMPARE and typ != TYPE_TRUNCATE:
        return 0
    end = dledger_log_store.end_index(store, i)
    if d[i, peer, D_COMPARE_INDEX] == -1 and end == -1:
        return 0
    compare_index = d[i, peer, D_COMPARE_INDEX]
    if compare_index == -1 or compare_index > end or compare_index < store[i, S_BEGIN_INDEX]:
        compare_index = end
    code = dledger_log_store.get_code(store, i, compare_index)
    if code != 0:
        return code
    seq = send_push(S, i, peer, TYPE_COMPARE, compare_index)
    d[i, peer, D_COMPARE_INDEX] = compare_index
    block(S, i, peer, TYPE_COMPARE, seq, now)
    return 0


@njit(cache=True, inline='always')
def save(S, i, peer):
    d = layout.dispatchers(S)
    rollback = layout.rollback(S)
    for f in range(DISPATCHER_COLUMNS):
        rollback[f] = d[i, peer, f]


@njit(cache=True, inline='always')
def restore(S, i, peer):
    d = layout.dispatchers(S)
    rollback = layout.rollback(S)
    for f in range(DISPATCHER_COLUMNS):
        d[i, peer, f] = rollback[f]


@njit(cache=True)
def dispatcher_do_work(S, i, peer, now):
    """entry_dispatcher.dispatcher_do_work: one pass of the dispatcher's loop, up to where it
    blocks or waits (a thread blocked in get goes on from there: `resume`)."""
    output_count = core_table.output_count(S)
    d = layout.dispatchers(S)
    if d[i, peer, D_WAITING] != 0:
        if d[i, peer, D_HAS_RESPONSE] == 0 and now < d[i, peer, D_WAIT_UNTIL]:
            return
        resume(S, i, peer, now)
        return
    if now < d[i, peer, D_SLEEP_UNTIL]:
        return
    if not check_and_fresh_state(S, i, peer):
        return
    save(S, i, peer)
    k0 = output_count[0]
    if d[i, peer, D_TYPE] == TYPE_APPEND:
        code = do_append(S, i, peer, now)
    else:
        code = do_compare(S, i, peer, now)
    if code != 0:
        failed(S, i, peer, k0, now)


@njit(cache=True)
def failed(S, i, peer, k0, now):
    """entry_dispatcher._failed, doWork's catch: the dispatcher as it was before the try (its
    pending_map too: an APPEND dispatcher's map is emptied by the change to COMPARE anyway), no
    outputs, then changeState(-1, COMPARE) and sleep(500)."""
    if layout.rollback(S)[D_TYPE] == TYPE_APPEND:
        entry_pusher.pending_clear(S, i, peer)  # every key the failed work added, while the row still bounds them
    restore(S, i, peer)
    core_table.output_count(S)[0] = k0
    change_state(S, i, peer, -1, TYPE_COMPARE)
    layout.dispatchers(S)[i, peer, D_SLEEP_UNTIL] = now + core_table.config(S)[C_DISPATCHER_ERROR_SLEEP_MS]


@njit(cache=True)
def resume(S, i, peer, now):
    """entry_dispatcher.resume: get returned (the future completed, or its 3 s passed) and the
    thread goes on with the rest of doCompare or doTruncate, up to where it blocks or waits."""
    output_count = core_table.output_count(S)
    d = layout.dispatchers(S)
    has = d[i, peer, D_HAS_RESPONSE] == 1
    kind = d[i, peer, D_BLOCKED]
    code = d[i, peer, D_RESPONSE_CODE]
    rbegin = d[i, peer, D_RESPONSE_BEGIN]
    rend = d[i, peer, D_RESPONSE_END]
    d[i, peer, D_WAITING] = 0
    d[i, peer, D_BLOCKED] = -1
    d[i, peer, D_WAIT_UNTIL] = -1
    d[i, peer, D_HAS_RESPONSE] = 0
    save(S, i, peer)
    k0 = output_count[0]
    if not has:
        failed(S, i, peer, k0, now)  # TimeoutException
        return
    if kind == TYPE_TRUNCATE:
        # on_truncate_response: SUCCESS moves to APPEND right after the truncated index
        if code != SUCCESS:
            failed(S, i, peer, k0, now)
            return
        d[i, peer, D_LAST_PUSH_COMMIT_MS] = now
        change_state(S, i, peer, d[i, peer, D_TRUNCATE_INDEX], TYPE_APPEND)
        return
    err = on_compare_response(S, i, peer, code, rbegin, rend, now)
    if err != 0:
        failed(S, i, peer, k0, now)
        return
    if d[i, peer, D_WAITING] != 0 or d[i, peer, D_TYPE] == TYPE_APPEND:
        return
    if not check_and_fresh_state(S, i, peer):
        return
    save(S, i, peer)  # an exception in doCompare leaves the dispatcher as checkAndFreshState made it
    err = do_compare(S, i, peer, now)
    if err != 0:
        failed(S, i, peer, k0, now)


@njit(cache=True)
def do_truncate(S, i, peer, index, now):
    """entry_dispatcher.do_truncate up to the blocking get -> 0 or an exception's code."""
    code = dledger_log_store.get_code(layout.store(S), i, index)
    if code != 0:
        return code
    seq = send_push(S, i, peer, TYPE_TRUNCATE, index)
    layout.dispatchers(S)[i, peer, D_TRUNCATE_INDEX] = index
    block(S, i, peer, TYPE_TRUNCATE, seq, now)
    return 0


@njit(cache=True)
def on_compare_response(S, i, peer, code, rbegin, rend, now):
    """entry_dispatcher.on_compare_response (get returned the COMPARE reply) -> 0 or an exception's code."""
    d = layout.dispatchers(S)
    store = layout.store(S)
    if code != INCONSISTENT_STATE and code != SUCCESS:
        return code
    compare_index = d[i, peer, D_COMPARE_INDEX]
    begin = store[i, S_BEGIN_INDEX]
    end = dledger_log_store.end_index(store, i)
    truncate_index = -1
    if code == SUCCESS:
        if compare_index == rend:
            change_state(S, i, peer, compare_index, TYPE_APPEND)
            return 0
        truncate_index = compare_index
    elif rend < begin or rbegin > end or compare_index < rbegin:
        truncate_index = begin
    elif compare_index > rend:
        compare_index = rend
    else:
        compare_index -= 1
    d[i, peer, D_COMPARE_INDEX] = compare_index
    if compare_index < begin:
        truncate_index = begin
    if truncate_index != -1:
        change_state(S, i, peer, truncate_index, TYPE_TRUNCATE)
        return do_truncate(S, i, peer, truncate_index, now)
    return 0


@njit(cache=True)
def on_push_response(S, i, context_1, peer, seq, has, code, reply_term, rindex, rbegin, rend, now):
    """entry_dispatcher.on_push_response: a push's future completes (`has` False: the RPC failed,
    and DLedgerRpcNettyService completes it with failed_push_response: NETWORK_ERROR, the push's
    term, index None, begin and end 0). COMPARE/TRUNCATE: the blocked thread's get returns (its
    next step goes on); APPEND: the whenComplete callback; COMMIT replies are ignored."""
    d = layout.dispatchers(S)
    kind = context_1 & ((1 << CTX_TERM_SHIFT) - 1)
    if kind == TYPE_APPEND:
        if not has or code == NETWORK_ERROR:
            return
        if code == SUCCESS:
            entry_pusher.pending_without(S, i, peer, rindex)
            entry_pusher.update_peer_water_mark(S, i, reply_term, peer, rindex)
            entry_pusher.wake_checker(S, i)
        elif code == INCONSISTENT_STATE:
            change_state(S, i, peer, -1, TYPE_COMPARE)
        return
    if kind == TYPE_COMMIT or d[i, peer, D_WAITING] != seq or d[i, peer, D_HAS_RESPONSE] == 1:
        return
    d[i, peer, D_HAS_RESPONSE] = 1
    if has:
        d[i, peer, D_RESPONSE_CODE] = code
        d[i, peer, D_RESPONSE_TERM] = reply_term
        d[i, peer, D_RESPONSE_INDEX] = rindex
        d[i, peer, D_RESPONSE_BEGIN] = rbegin
        d[i, peer, D_RESPONSE_END] = rend
    else:
        d[i, peer, D_RESPONSE_CODE] = NETWORK_ERROR
        d[i, peer, D_RESPONSE_TERM] = context_1 >> CTX_TERM_SHIFT
        d[i, peer, D_RESPONSE_INDEX] = NO_INDEX
        d[i, peer, D_RESPONSE_BEGIN] = 0
        d[i, peer, D_RESPONSE_END] = 0
