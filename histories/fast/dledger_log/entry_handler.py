"""The follower's entry handler: mirrors reference_impl/dledger_log/entry_handler.py.

Holds pushed entries that arrive ahead of the follower's log (write requests), appends, compares and
truncates in the reference's order, and answers pushes and waits."""

from __future__ import annotations

from numba import njit

from histories.fast.core import outputs as core_outputs
from histories.fast.core import table as core_table
from histories.fast.core.layout import (
    O_KIND,
    O_TARGET,
    OUT_RESPOND,
    W_STOP,
)
from histories.fast.dledger_log import layout
from histories.fast.dledger_log import store as dledger_log_store
from histories.fast.dledger_log.layout import (
    BIG,
    C_CHECK_FAST_FORWARD_INTERVAL_MS,
    C_THREAD_WAIT_MS,
    H_WOKEN,
    C_COMPARE_QUEUE_CAPACITY,
    C_ORDERED_PUSHES,
    C_PUSH_FUTURE_TIMEOUT_MS,
    C_V026,
    H_LAST_CHECK_FAST_FORWARD_MS,
    H_QUEUE,
    H_WRITE_HIGH,
    H_WRITE_LOW,
    H_WRITE_REQUESTS,
    INCONSISTENT_STATE,
    MESSAGE_FIELDS,
    NO_INDEX,
    NOT_FOLLOWER,
    OVERFLOW_QUEUE,
    PUSH_ENTRY_RESPONSE,
    PUSH_REQUEST_IS_FULL,
    PW_ANSWERED,
    PW_CREATED_MS,
    PW_PRESENT,
    PW_REQUEST,
    PW_RPC,
    REPEATED_PUSH,
    RP_ENTRY_BODY,
    RP_ENTRY_INDEX,
    RP_ENTRY_POS,
    RP_ENTRY_SIZE,
    RP_ENTRY_TERM,
    RP_HAS_ENTRY,
    RP_LEADER_ID,
    RP_TYPE,
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
    TYPE_APPEND,
    TYPE_COMMIT,
    TYPE_COMPARE,
    TYPE_TRUNCATE,
)
from histories.fast.election import layout as election_layout
from histories.fast.election import member_state as election_member_state
from histories.fast.election.layout import (
    CURR_TERM,
    FOLLOWER,
    ROLE,
    SUCCESS,
    UNEXPECTED_ARGUMENT,
)


@njit(cache=True)
def respond_push(S, i, rpc, code, term, typ, has, eidx):
    """Respond(rpc, entry_handler.build_response(s, req, code))"""
    outputs = core_table.outputs(S)
    store = layout.store(S)
    k = core_outputs.new_row(S, OUT_RESPOND)
    outputs[k, O_TARGET] = rpc
    outputs[k, O_KIND] = PUSH_ENTRY_RESPONSE
    outputs[k, core_outputs.message_column(0)] = code
    outputs[k, core_outputs.message_column(1)] = term
    outputs[k, core_outputs.message_column(2)] = NO_INDEX if typ == TYPE_COMMIT else (eidx if has == 1 else -1)
    outputs[k, core_outputs.message_column(3)] = store[i, S_BEGIN_INDEX]
    outputs[k, core_outputs.message_column(4)] = dledger_log_store.end_index(store, i)
    return k


@njit(cache=True)
def respond_wait(S, i, row, code):
    """Respond to the PushWait `row` (a wr or hq row) with build_response; the row keeps the
    request for RPL-1/3 (spec.replies matches a reply with the request its node held)."""
    outputs = core_table.outputs(S)
    k = respond_push(S, i, row[PW_RPC], code, row[PW_REQUEST + RQ_TERM], row[PW_REQUEST + RQ_TYPE], row[PW_REQUEST + RQ_HAS_ENTRY], row[PW_REQUEST + RQ_ENTRY_INDEX])
    outputs[k, RP_TYPE] = row[PW_REQUEST + RQ_TYPE]
    outputs[k, RP_LEADER_ID] = row[PW_REQUEST + RQ_LEADER_ID]
    outputs[k, RP_HAS_ENTRY] = row[PW_REQUEST + RQ_HAS_ENTRY]
    outputs[k, RP_ENTRY_INDEX] = row[PW_REQUEST + RQ_ENTRY_INDEX]
    outputs[k, RP_ENTRY_TERM] = row[PW_REQUEST + RQ_ENTRY_TERM]
    outputs[k, RP_ENTRY_POS] = row[PW_REQUEST + RQ_ENTRY_POS]
    outputs[k, RP_ENTRY_SIZE] = row[PW_REQUEST + RQ_ENTRY_SIZE]
    outputs[k, RP_ENTRY_BODY] = row[PW_REQUEST + RQ_ENTRY_BODY]


@njit(cache=True, inline='always')
def has_write_request(S, i, index):
    write_requests = layout.write_requests(S)
    return 0 <= index < write_requests.shape[1] and write_requests[i, index, PW_PRESENT] == 1


@njit(cache=True)
def clear_write_requests(S, i):
    write_requests = layout.write_requests(S)
    handler = layout.handler(S)
    for idx in range(max(0, handler[i, H_WRITE_LOW]), min(handler[i, H_WRITE_HIGH] + 1, write_requests.shape[1])):
        write_requests[i, idx, PW_PRESENT] = 0
    handler[i, H_WRITE_REQUESTS] = 0
    handler[i, H_WRITE_LOW] = BIG
    handler[i, H_WRITE_HIGH] = -1


@njit(cache=True, inline='always')
def remove_write_request(S, i, index):
    layout.write_requests(S)[i, index, PW_PRESENT] = 0
    layout.handler(S)[i, H_WRITE_REQUESTS] -= 1


@njit(cache=True)
def new_handler(S, i, now):
    """EntryHandler(last_check_fast_forward_ms=now): no requests, no queue, no seqs."""
    clear_write_requests(S, i)
    handler = layout.handler(S)
    handler[i, H_LAST_CHECK_FAST_FORWARD_MS] = now
    handler[i, H_QUEUE] = 0
    handler[i, H_WOKEN] = 0
    last_seqs = layout.last_seqs(S)
    for p in range(last_seqs.shape[1]):
        last_seqs[i, p, 0] = 0


@njit(cache=True)
def handle_push(S, i, rpc, now):
    """entry_handler.handle_push -> (reply kind, code): 0 none (answered later or never),
    1 build_response(s, req, code), 2 PushEntryResponse(code, term) alone."""
    config = core_table.config(S)
    message = layout.message(S)
    if config[C_ORDERED_PUSHES] == 1:
        last_seqs = layout.last_seqs(S)
        leader = message[RQ_LEADER_ID]
        if last_seqs[i, leader, 0] == 1:
            e, c = last_seqs[i, leader, 1], last_seqs[i, leader, 2]
            if message[RQ_SEQ_EPOCH] < e or (message[RQ_SEQ_EPOCH] == e and message[RQ_SEQ_COUNT] < c):
                return 0, 0
        last_seqs[i, leader, 0] = 1
        last_seqs[i, leader, 1] = message[RQ_SEQ_EPOCH]
        last_seqs[i, leader, 2] = message[RQ_SEQ_COUNT]
    typ = message[RQ_TYPE]
    handler = layout.handler(S)
    if typ == TYPE_APPEND:
        if message[RQ_HAS_ENTRY] == 0:
            return 2, UNEXPECTED_ARGUMENT
        index = message[RQ_ENTRY_INDEX]
        if has_write_request(S, i, index):
            handler[i, H_WOKEN] = 1
            return 1, REPEATED_PUSH
        write_requests = layout.write_requests(S)
        write_requests[i, index, PW_PRESENT] = 1
        for j in range(MESSAGE_FIELDS):
            write_requests[i, index, PW_REQUEST + j] = message[j]
        write_requests[i, index, PW_RPC] = rpc
        write_requests[i, index, PW_CREATED_MS] = now
        write_requests[i, index, PW_ANSWERED] = 0
        handler[i, H_WRITE_REQUESTS] += 1
        handler[i, H_WRITE_LOW] = min(handler[i, H_WRITE_LOW], index)
        handler[i, H_WRITE_HIGH] = max(handler[i, H_WRITE_HIGH], index)
        handler[i, H_WOKEN] = 1
        return 0, 0
    if typ != TYPE_COMMIT:
        if message[RQ_HAS_ENTRY] == 0:
            return 2, UNEXPECTED_ARGUMENT
        clear_write_requests(S, i)  # the dropped futures are never completed
    if config[C_V026] == 0 and handler[i, H_QUEUE] >= config[C_COMPARE_QUEUE_CAPACITY]:
        handler[i, H_WOKEN] = 1
        return 1, PUSH_REQUEST_IS_FULL
    handler_queue = layout.handler_queue(S)
    q = handler[i, H_QUEUE]
    if q >= handler_queue.shape[1]:
        core_table.world(S)[W_STOP] = OVERFLOW_QUEUE
        return 0, 0
    handler_queue[i, q, PW_PRESENT] = 1
    for j in range(MESSAGE_FIELDS):
        handler_queue[i, q, PW_REQUEST + j] = message[j]
    handler_queue[i, q, PW_RPC] = rpc
    handler_queue[i, q, PW_CREATED_MS] = now
    handler_queue[i, q, PW_ANSWERED] = 0
    handler[i, H_QUEUE] = q + 1
    handler[i, H_WOKEN] = 1
    return 0, 0


@njit(cache=True)
def wake_at(S, i):
    """entry_handler.wake_at"""
    config = core_table.config(S)
    handler = layout.handler(S)
    if election_layout.members(S)[i, ROLE] != FOLLOWER:
        return 0 if handler[i, H_QUEUE] > 0 and config[C_V026] == 0 else -1
    if handler[i, H_QUEUE] > 0 or has_write_request(S, i, dledger_log_store.end_index(layout.store(S), i) + 1):
        return 0
    if handler[i, H_WRITE_REQUESTS] > 0:
        return handler[i, H_LAST_CHECK_FAST_FORWARD_MS] + config[C_CHECK_FAST_FORWARD_INTERVAL_MS]
    return -1


@njit(cache=True)
def handle_do_append(S, i, row, now):
    """entry_handler.handle_do_append -> code"""
    members = election_layout.members(S)
    r = PW_REQUEST
    code = dledger_log_store.append_as_follower(S, i, row[r + RQ_ENTRY_INDEX], row[r + RQ_ENTRY_TERM], row[r + RQ_ENTRY_POS], row[r + RQ_ENTRY_SIZE], row[r + RQ_ENTRY_BODY], row[r + RQ_TERM], row[r + RQ_LEADER_ID], now)
    if code != 0:
        return INCONSISTENT_STATE
    dledger_log_store.update_committed_index(S, i, row[r + RQ_TERM], members[i, CURR_TERM], row[r + RQ_COMMIT_INDEX], now)
    return SUCCESS


@njit(cache=True)
def entry_equal(S, i, row):
    """store.entry_at(s, req.entry.index) == req.entry"""
    r = PW_REQUEST
    k = dledger_log_store.offset_of(layout.store(S), i, row[r + RQ_ENTRY_INDEX])
    return k >= 0 and dledger_log_store.holds(layout.entries(S), i, k, row[r + RQ_ENTRY_TERM], row[r + RQ_ENTRY_POS], row[r + RQ_ENTRY_SIZE],
                               row[r + RQ_ENTRY_BODY])


@njit(cache=True)
def check_append_future(S, i, now):
    """entry_handler.check_append_future"""
    config = core_table.config(S)
    write_requests = layout.write_requests(S)
    handler = layout.handler(S)
    end = dledger_log_store.end_index(layout.store(S), i)
    first_late = -1
    for index in range(max(0, handler[i, H_WRITE_LOW]), min(handler[i, H_WRITE_HIGH] + 1, write_requests.shape[1])):
        if write_requests[i, index, PW_PRESENT] == 0:
            continue
        row = write_requests[i, index]
        if index <= end:
            code = SUCCESS if entry_equal(S, i, row) else INCONSISTENT_STATE
            if row[PW_ANSWERED] == 0:
                respond_wait(S, i, row, code)
            remove_write_request(S, i, index)
            continue
        if index == end + 1:
            return
        if now - row[PW_CREATED_MS] < config[C_PUSH_FUTURE_TIMEOUT_MS]:
            continue
        if first_late < 0:
            first_late = index
    if first_late >= 0:
        row = write_requests[i, first_late]
        if row[PW_ANSWERED] == 0:
            respond_wait(S, i, row, INCONSISTENT_STATE)
            row[PW_ANSWERED] = 1


@njit(cache=True)
def slack(S, i, wake):
    """entry_handler.slack: at once when woken or going on after a unit of work, else within its
    waitForRunning(1)."""
    if wake == 0 and layout.handler(S)[i, H_WOKEN] == 1:
        return 0
    return core_table.config(S)[C_THREAD_WAIT_MS]


@njit(cache=True)
def do_work(S, i, now):
    """entry_handler.do_work: one pass, one unit of work. The head of the queue, else the append of
    index ledgerEndIndex + 1 (its answer, then updateCommittedIndex), after which the loop goes on
    at once; else checkAbnormalFuture and waitForRunning(1)."""
    config = core_table.config(S)
    members = election_layout.members(S)
    handler = layout.handler(S)
    handler_queue = layout.handler_queue(S)
    if members[i, ROLE] != FOLLOWER:
        if config[C_V026] == 1 or handler[i, H_QUEUE] == 0:
            return
        for q in range(handler[i, H_QUEUE]):
            respond_wait(S, i, handler_queue[i, q], NOT_FOLLOWER)
        handler[i, H_QUEUE] = 0
        handler[i, H_WOKEN] = 0
        return
    if handler[i, H_QUEUE] > 0:
        row = handler_queue[i, 0]
        typ = row[PW_REQUEST + RQ_TYPE]
        r = PW_REQUEST
        if typ == TYPE_TRUNCATE:
            # entry_handler.handle_do_truncate
            code = dledger_log_store.truncate(S, i, row[r + RQ_ENTRY_INDEX], row[r + RQ_ENTRY_TERM], row[r + RQ_ENTRY_POS], row[r + RQ_ENTRY_SIZE], row[r + RQ_ENTRY_BODY], row[r + RQ_TERM], row[r + RQ_LEADER_ID], now)
            if code != 0:
                code = INCONSISTENT_STATE
            else:
                dledger_log_store.update_committed_index(S, i, row[r + RQ_TERM], members[i, CURR_TERM], row[r + RQ_COMMIT_INDEX], now)
                code = SUCCESS
        elif typ == TYPE_COMPARE:
            code = SUCCESS if entry_equal(S, i, row) else INCONSISTENT_STATE
        else:
            code = SUCCESS
            dledger_log_store.update_committed_index(S, i, row[r + RQ_TERM], members[i, CURR_TERM], row[r + RQ_COMMIT_INDEX], now)
        respond_wait(S, i, row, code)
        q_count = handler[i, H_QUEUE]
        for q in range(q_count - 1):
            for f in range(handler_queue.shape[2]):
                handler_queue[i, q, f] = handler_queue[i, q + 1, f]
        handler[i, H_QUEUE] = q_count - 1
        handler[i, H_WOKEN] = 1
        return
    index = dledger_log_store.end_index(layout.store(S), i) + 1
    if has_write_request(S, i, index):
        remove_write_request(S, i, index)
        handler[i, H_WOKEN] = 1
        row = layout.write_requests(S)[i, index]
        code = handle_do_append(S, i, row, now)
        if row[PW_ANSWERED] == 0:
            respond_wait(S, i, row, code)
        return
    if handler[i, H_WRITE_REQUESTS] > 0 and election_member_state.elapsed(now, handler[i, H_LAST_CHECK_FAST_FORWARD_MS]) >= config[C_CHECK_FAST_FORWARD_INTERVAL_MS]:
        handler[i, H_LAST_CHECK_FAST_FORWARD_MS] = now
        check_append_future(S, i, now)
    handler[i, H_WOKEN] = 0
