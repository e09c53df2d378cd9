"""The leader's push bookkeeping: mirrors reference_impl/dledger_log/entry_pusher.py.

Peer water marks per term, the quorum index, pending append futures and the push results they complete."""

from __future__ import annotations

from numba import njit

from histories.fast.core import outputs as core_outputs
from histories.fast.core import table as core_table
from histories.fast.core.layout import (
    O_OBSERVED,
    O_TARGET,
    OUT_OBSERVATION,
    W_STOP,
)
from histories.fast.dledger_log import layout, store
from histories.fast.dledger_log.layout import (
    BIG,
    D_BLOCKED,
    D_HAS_RESPONSE,
    D_WAIT_UNTIL,
    P_CHECKER_WOKEN,
    REQUEST_TERM,
    C_MAX_PENDING_REQUESTS_NUM,
    C_V026,
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
    LEADER_PENDING_FULL,
    OBS_APPEND_RESULT,
    OVERFLOW_MARKS,
    OVERFLOW_PENDING,
    P_EPOCH,
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
    PENDING_COLUMNS,
    TYPE_COMPARE,
)
from histories.fast.election import layout as election_layout
from histories.fast.election.layout import (
    C_PEERS,
    CURR_TERM,
    LEADER,
    LEADER_TRANSFERRING,
    NOT_LEADER,
    ROLE,
    SUCCESS,
    TRANSFEREE,
)


@njit(cache=True)
def push_result(S, code, index, term, pos, ref, rpc, future_pos):
    """Observation AppendResult."""
    outputs = core_table.outputs(S)
    k = core_outputs.new_row(S, OUT_OBSERVATION)
    outputs[k, O_TARGET] = OBS_APPEND_RESULT
    outputs[k, O_OBSERVED] = code
    outputs[k, O_OBSERVED + 1] = index
    outputs[k, O_OBSERVED + 2] = term
    outputs[k, O_OBSERVED + 3] = pos
    outputs[k, O_OBSERVED + 4] = ref
    outputs[k, O_OBSERVED + 5] = rpc
    outputs[k, O_OBSERVED + 6] = future_pos


@njit(cache=True, inline='always')
def water_mark_row(S, i, term):
    pusher = layout.pusher(S)
    water_mark_terms = layout.water_mark_terms(S)
    for r in range(pusher[i, P_WATER_MARK_TERMS]):
        if water_mark_terms[i, r, 0] == term:
            return r
    return -1


@njit(cache=True, inline='always')
def peer_water_mark(S, i, term, peer):
    """entry_pusher.peer_water_mark"""
    r = water_mark_row(S, i, term)
    return -1 if r < 0 else layout.water_mark_terms(S)[i, r, 1 + peer]


@njit(cache=True)
def new_water_mark_row(S, i, term):
    config = core_table.config(S)
    pusher = layout.pusher(S)
    water_mark_terms = layout.water_mark_terms(S)
    r = pusher[i, P_WATER_MARK_TERMS]
    if r >= water_mark_terms.shape[1]:
        core_table.world(S)[W_STOP] = OVERFLOW_MARKS
        return -1
    water_mark_terms[i, r, 0] = term
    for p in range(config[C_PEERS]):
        water_mark_terms[i, r, 1 + p] = -1
    pusher[i, P_WATER_MARK_TERMS] = r + 1
    return r


@njit(cache=True)
def update_peer_water_mark(S, i, term, peer, index):
    """entry_pusher.update_peer_water_mark: raise [term][peer] to index (a new term starts at -1)."""
    r = water_mark_row(S, i, term)
    if r < 0:
        r = new_water_mark_row(S, i, term)
        if r < 0:
            return
    water_mark_terms = layout.water_mark_terms(S)
    water_mark_terms[i, r, 1 + peer] = max(water_mark_terms[i, r, 1 + peer], index)


@njit(cache=True)
def drop_water_mark_row(S, i, r):
    pusher = layout.pusher(S)
    water_mark_terms = layout.water_mark_terms(S)
    last = pusher[i, P_WATER_MARK_TERMS] - 1
    for q in range(r, last):
        for f in range(water_mark_terms.shape[2]):
            water_mark_terms[i, q, f] = water_mark_terms[i, q + 1, f]
    pusher[i, P_WATER_MARK_TERMS] = last


@njit(cache=True)
def quorum_index(S, i, term):
    """entry_pusher.quorum_index: the (n // 2)-th largest mark of the term (-1: no marks)."""
    config = core_table.config(S)
    r = water_mark_row(S, i, term)
    if r < 0:
        return -1
    water_mark_terms = layout.water_mark_terms(S)
    n = config[C_PEERS]
    k = n // 2
    for a in range(n):
        v = water_mark_terms[i, r, 1 + a]
        above = 0
        same = 0
        for b in range(n):
            x = water_mark_terms[i, r, 1 + b]
            if x > v:
                above += 1
            elif x == v:
                same += 1
        if above <= k < above + same:
            return v
    return -1


@njit(cache=True, inline='always')
def find_future(S, i, term, index):
    pusher = layout.pusher(S)
    pending = layout.pending(S)
    for r in range(pusher[i, P_PENDING]):
        if pending[i, r, PD_INDEX] == index and pending[i, r, PD_TERM] == term:
            return r
    return -1


@njit(cache=True, inline='always')
def drop_future(S, i, r):
    pusher = layout.pusher(S)
    pending = layout.pending(S)
    last = pusher[i, P_PENDING] - 1
    if r != last:
        for f in range(PENDING_COLUMNS):
            pending[i, r, f] = pending[i, last, f]
    pusher[i, P_PENDING] = last


@njit(cache=True, inline='always')
def has_pending_term(S, i, term):
    pusher = layout.pusher(S)
    pending_terms = layout.pending_terms(S)
    for r in range(pusher[i, P_PENDING_TERMS]):
        if pending_terms[i, r] == term:
            return True
    return False


@njit(cache=True)
def add_pending_term(S, i, term):
    pusher = layout.pusher(S)
    pending_terms = layout.pending_terms(S)
    r = pusher[i, P_PENDING_TERMS]
    if r >= pending_terms.shape[1]:
        core_table.world(S)[W_STOP] = OVERFLOW_PENDING
        return
    pending_terms[i, r] = term
    pusher[i, P_PENDING_TERMS] = r + 1


@njit(cache=True)
def count_futures(S, i, term):
    pusher = layout.pusher(S)
    pending = layout.pending(S)
    c = 0
    for r in range(pusher[i, P_PENDING]):
        if pending[i, r, PD_TERM] == term:
            c += 1
    return c


@njit(cache=True)
def next_future(S, i, term, after, below):
    """The row of the term's future with the least index in (after, below), -1: none."""
    pusher = layout.pusher(S)
    pending = layout.pending(S)
    best = -1
    for r in range(pusher[i, P_PENDING]):
        if pending[i, r, PD_TERM] == term:
            x = pending[i, r, PD_INDEX]
            if after < x < below and (best < 0 or x < pending[i, best, PD_INDEX]):
                best = r
    return best


@njit(cache=True)
def wait_ack(S, i, term, index, pos, ref, now, rpc):
    """entry_pusher.wait_ack -> True when the future completed at once (0.2.6, one peer)."""
    config = core_table.config(S)
    update_peer_water_mark(S, i, term, i, index)
    if config[C_V026] == 1 and config[C_PEERS] == 1:
        return True
    if not has_pending_term(S, i, term):
        add_pending_term(S, i, term)
    pusher = layout.pusher(S)
    pending = layout.pending(S)
    r = find_future(S, i, term, index)
    if r < 0:
        r = pusher[i, P_PENDING]
        if r >= pending.shape[1]:
            core_table.world(S)[W_STOP] = OVERFLOW_PENDING
            return False
        pusher[i, P_PENDING] = r + 1
    pending[i, r, PD_TERM] = term
    pending[i, r, PD_INDEX] = index
    pending[i, r, PD_POS] = pos
    pending[i, r, PD_CREATED_MS] = now
    pending[i, r, PD_REF] = ref
    pending[i, r, PD_RPC] = rpc
    pending[i, r, PD_DONE] = 0
    return False


@njit(cache=True)
def handle_append(S, i, body, body_length, now, rpc):
    """entry_pusher.handle_append -> (result?, code, index, term, pos, future_pos): a result is
    a completed future (a rejection, or 0.2.6's single-node SUCCESS); none: it is parked."""
    config = core_table.config(S)
    members = election_layout.members(S)
    term = members[i, CURR_TERM]
    if members[i, ROLE] != LEADER:
        return True, NOT_LEADER, -1, REQUEST_TERM, -1, -1
    if members[i, TRANSFEREE] >= 0:
        return True, LEADER_TRANSFERRING, -1, REQUEST_TERM, -1, -1
    if count_futures(S, i, term) > config[C_MAX_PENDING_REQUESTS_NUM]:
        return True, LEADER_PENDING_FULL, -1, term, -1, -1
    code, index, eterm, pos = store.append_as_leader(S, i, body, body_length, now)
    if code != 0:
        return True, code, -1, REQUEST_TERM, -1, -1
    if wait_ack(S, i, eterm, index, pos, body, now, rpc):
        return True, SUCCESS, index, eterm, pos, pos
    return False, 0, 0, 0, 0, 0


@njit(cache=True, inline='always')
def pending_get(S, i, peer, index):
    pending_maps = layout.pending_maps(S)
    if 0 <= index < pending_maps.shape[2]:
        return pending_maps[i, peer, index]
    return -1


@njit(cache=True, inline='always')
def pending_set(S, i, peer, index, t):
    pending_maps = layout.pending_maps(S)
    d = layout.dispatchers(S)
    if pending_maps[i, peer, index] < 0:
        d[i, peer, D_PENDING] += 1
        d[i, peer, D_PENDING_LOW] = min(d[i, peer, D_PENDING_LOW], index)
        d[i, peer, D_PENDING_HIGH] = max(d[i, peer, D_PENDING_HIGH], index)
    pending_maps[i, peer, index] = t


@njit(cache=True, inline='always')
def pending_without(S, i, peer, index):
    pending_maps = layout.pending_maps(S)
    if 0 <= index < pending_maps.shape[2] and pending_maps[i, peer, index] >= 0:
        pending_maps[i, peer, index] = -1
        layout.dispatchers(S)[i, peer, D_PENDING] -= 1


@njit(cache=True)
def pending_clear(S, i, peer):
    pending_maps = layout.pending_maps(S)
    d = layout.dispatchers(S)
    for idx in range(max(0, d[i, peer, D_PENDING_LOW]), min(d[i, peer, D_PENDING_HIGH] + 1, pending_maps.shape[2])):
        pending_maps[i, peer, idx] = -1
    d[i, peer, D_PENDING] = 0
    d[i, peer, D_PENDING_LOW] = BIG
    d[i, peer, D_PENDING_HIGH] = -1


@njit(cache=True)
def new_dispatcher(S, i, peer, now):
    """Dispatcher(peer, last_check_leak_ms=now) of entry_pusher.new_pusher."""
    pending_clear(S, i, peer)
    d = layout.dispatchers(S)
    d[i, peer, D_TYPE] = TYPE_COMPARE
    d[i, peer, D_COMPARE_INDEX] = -1
    d[i, peer, D_WRITE_INDEX] = -1
    d[i, peer, D_TERM] = -1
    d[i, peer, D_LEADER_ID] = -1
    d[i, peer, D_LAST_PUSH_COMMIT_MS] = -1
    d[i, peer, D_LAST_CHECK_LEAK_MS] = now
    d[i, peer, D_WAITING] = 0
    d[i, peer, D_TRUNCATE_INDEX] = -1
    d[i, peer, D_SLEEP_UNTIL] = -1
    d[i, peer, D_SEQ] = 0
    d[i, peer, D_BLOCKED] = -1
    d[i, peer, D_WAIT_UNTIL] = -1
    d[i, peer, D_HAS_RESPONSE] = 0


@njit(cache=True, inline='always')
def wake_checker(S, i):
    """entry_pusher.wake_checker: QuorumAckChecker#wakeup, its next waitForRunning returns at once."""
    layout.pusher(S)[i, P_CHECKER_WOKEN] = 1


@njit(cache=True)
def new_pusher(S, i, now):
    """entry_pusher.new_pusher"""
    config = core_table.config(S)
    pusher = layout.pusher(S)
    pusher[i, P_LAST_QUORUM_INDEX] = -1
    pusher[i, P_LAST_CHECK_LEAK_MS] = now
    pusher[i, P_EPOCH] = now
    pusher[i, P_WATER_MARK_TERMS] = 0
    pusher[i, P_PENDING_TERMS] = 0
    pusher[i, P_PENDING] = 0
    pusher[i, P_CHECKER_WOKEN] = 0
    for p in range(config[C_PEERS]):
        if p != i:
            new_dispatcher(S, i, p, now)
