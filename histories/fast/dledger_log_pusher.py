"""The leader's DLedgerEntryPusher in the dledger_log fast world, its state and what the
dispatchers and the checker share (reference_impl/dledger_log/entry_pusher.py): the output
rows, water marks, pending appends and handle_append, each dispatcher's pending map and
row, new_pusher; over arrays. The threads that work on it are `dledger_log_quorum_ack`
(the QuorumAckChecker) and `dledger_log_dispatcher` (the EntryDispatchers).

Each function names the reference function it mirrors and keeps its branch order. Layouts:
histories/fast/dledger_log_layout.py.
"""

from __future__ import annotations

from numba import njit

import histories.fast.dledger_log_layout as L
import histories.fast.dledger_log_store as st
import histories.fast.election as E
from histories.fast.dledger_log_layout import (
    BIG,
    C_MAXPEND,
    C_V026,
    D_CI,
    D_LCL,
    D_LEADER,
    D_LPC,
    D_PMHI,
    D_PMLO,
    D_PMN,
    D_SEQ,
    D_SLEEP,
    D_TERM,
    D_TI,
    D_TYPE,
    D_WAITING,
    D_WI,
    LEADER_PENDING_FULL,
    LEADER_TRANSFERRING,
    NOT_LEADER,
    O_A,
    O_F0,
    O_M0,
    O_M5,
    OB_RESULT,
    OF,
    OVERFLOW_MARKS,
    OVERFLOW_PENDING,
    P_EPOCH,
    P_LCL,
    P_LQI,
    P_NPEND,
    P_NPT,
    P_NWM,
    PD_CREATED,
    PD_DONE,
    PD_INDEX,
    PD_POS,
    PD_REF,
    PD_RPC,
    PD_TERM,
    PDF,
    SUCCESS,
    T_COMPARE,
    W_STOP,
)

# --- outputs ---


@njit(cache=True, inline='always')
def out_row(ob, oc, typ):
    """A new output row (zeroed); past the capacity every write goes to the spare last row
    and oc[1] records the overflow (the kernel then stops)."""
    k = oc[0]
    if k >= ob.shape[0] - 1:
        oc[1] = 1
        k = ob.shape[0] - 1
    else:
        oc[0] = k + 1
    for f in range(OF):
        ob[k, f] = 0
    ob[k, 0] = typ
    return k


@njit(cache=True, inline='always')
def mcol(j):
    """The output column of message field j (dledger_log_layout.mcol)."""
    return O_M0 + j if j < 5 else O_M5 + j - 5


@njit(cache=True)
def push_result(ob, oc, code, index, term, pos, ref, rpc, future_pos):
    """Observation AppendResult."""
    k = out_row(ob, oc, E.OT_OBS)
    ob[k, O_A] = OB_RESULT
    ob[k, O_F0] = code
    ob[k, O_F0 + 1] = index
    ob[k, O_F0 + 2] = term
    ob[k, O_F0 + 3] = pos
    ob[k, O_F0 + 4] = ref
    ob[k, O_F0 + 5] = rpc
    ob[k, O_F0 + 6] = future_pos


# --- water marks (Pusher.water_marks) ---


@njit(cache=True, inline='always')
def wm_row(S, i, term):
    pu = L.pu_(S)
    wmt = L.wmt_(S)
    for r in range(pu[i, P_NWM]):
        if wmt[i, r, 0] == term:
            return r
    return -1


@njit(cache=True, inline='always')
def peer_water_mark(S, i, term, peer):
    """entry_pusher.peer_water_mark"""
    r = wm_row(S, i, term)
    return -1 if r < 0 else L.wmt_(S)[i, r, 1 + peer]


@njit(cache=True)
def _new_wm_row(C, S, i, term):
    pu = L.pu_(S)
    wmt = L.wmt_(S)
    r = pu[i, P_NWM]
    if r >= wmt.shape[1]:
        L.ws_(S)[W_STOP] = OVERFLOW_MARKS
        return -1
    wmt[i, r, 0] = term
    for p in range(C[E.C_N]):
        wmt[i, r, 1 + p] = -1
    pu[i, P_NWM] = r + 1
    return r


@njit(cache=True)
def update_peer_water_mark(C, S, i, term, peer, index):
    """entry_pusher.update_peer_water_mark: raise [term][peer] to index (a new term starts at -1)."""
    r = wm_row(S, i, term)
    if r < 0:
        r = _new_wm_row(C, S, i, term)
        if r < 0:
            return
    wmt = L.wmt_(S)
    wmt[i, r, 1 + peer] = max(wmt[i, r, 1 + peer], index)


@njit(cache=True)
def _drop_wm_row(S, i, r):
    pu = L.pu_(S)
    wmt = L.wmt_(S)
    last = pu[i, P_NWM] - 1
    for q in range(r, last):
        for f in range(wmt.shape[2]):
            wmt[i, q, f] = wmt[i, q + 1, f]
    pu[i, P_NWM] = last


@njit(cache=True)
def quorum_index(C, S, i, term):
    """entry_pusher.quorum_index: the (n // 2)-th largest mark of the term (-1: no marks)."""
    r = wm_row(S, i, term)
    if r < 0:
        return -1
    wmt = L.wmt_(S)
    n = C[E.C_N]
    k = n // 2
    for a in range(n):
        v = wmt[i, r, 1 + a]
        above = 0
        same = 0
        for b in range(n):
            x = wmt[i, r, 1 + b]
            if x > v:
                above += 1
            elif x == v:
                same += 1
        if above <= k < above + same:
            return v
    return -1


# --- pending appends (Pusher.pending: term -> index -> PendingAppend) ---


@njit(cache=True, inline='always')
def find_future(S, i, term, index):
    pu = L.pu_(S)
    pend = L.pend_(S)
    for r in range(pu[i, P_NPEND]):
        if pend[i, r, PD_INDEX] == index and pend[i, r, PD_TERM] == term:
            return r
    return -1


@njit(cache=True, inline='always')
def drop_future(S, i, r):
    pu = L.pu_(S)
    pend = L.pend_(S)
    last = pu[i, P_NPEND] - 1
    if r != last:
        for f in range(PDF):
            pend[i, r, f] = pend[i, last, f]
    pu[i, P_NPEND] = last


@njit(cache=True, inline='always')
def has_pending_term(S, i, term):
    pu = L.pu_(S)
    ptm = L.ptm_(S)
    for r in range(pu[i, P_NPT]):
        if ptm[i, r] == term:
            return True
    return False


@njit(cache=True)
def add_pending_term(S, i, term):
    pu = L.pu_(S)
    ptm = L.ptm_(S)
    r = pu[i, P_NPT]
    if r >= ptm.shape[1]:
        L.ws_(S)[W_STOP] = OVERFLOW_PENDING
        return
    ptm[i, r] = term
    pu[i, P_NPT] = r + 1


@njit(cache=True)
def _count_futures(S, i, term):
    pu = L.pu_(S)
    pend = L.pend_(S)
    c = 0
    for r in range(pu[i, P_NPEND]):
        if pend[i, r, PD_TERM] == term:
            c += 1
    return c


@njit(cache=True)
def _next_future(S, i, term, after, below):
    """The row of the term's future with the least index in (after, below), -1: none."""
    pu = L.pu_(S)
    pend = L.pend_(S)
    best = -1
    for r in range(pu[i, P_NPEND]):
        if pend[i, r, PD_TERM] == term:
            x = pend[i, r, PD_INDEX]
            if after < x < below and (best < 0 or x < pend[i, best, PD_INDEX]):
                best = r
    return best


@njit(cache=True)
def wait_ack(C, S, i, term, index, pos, ref, now, rpc):
    """entry_pusher.wait_ack -> True when the future completed at once (0.2.6, one peer)."""
    update_peer_water_mark(C, S, i, term, i, index)
    if C[C_V026] == 1 and C[E.C_N] == 1:
        return True
    if not has_pending_term(S, i, term):
        add_pending_term(S, i, term)
    pu = L.pu_(S)
    pend = L.pend_(S)
    r = find_future(S, i, term, index)
    if r < 0:
        r = pu[i, P_NPEND]
        if r >= pend.shape[1]:
            L.ws_(S)[W_STOP] = OVERFLOW_PENDING
            return False
        pu[i, P_NPEND] = r + 1
    pend[i, r, PD_TERM] = term
    pend[i, r, PD_INDEX] = index
    pend[i, r, PD_POS] = pos
    pend[i, r, PD_CREATED] = now
    pend[i, r, PD_REF] = ref
    pend[i, r, PD_RPC] = rpc
    pend[i, r, PD_DONE] = 0
    return False


@njit(cache=True)
def handle_append(C, S, i, body, blen, now, rpc):
    """entry_pusher.handle_append -> (result?, code, index, term, pos, future_pos): a result is
    a completed future (a rejection, or 0.2.6's single-node SUCCESS); none: it is parked."""
    nd = L.nd_(S)
    term = nd[i, E.TERM]
    if nd[i, E.ROLE] != E.LEADER:
        return True, NOT_LEADER, -1, term, -1, -1
    if nd[i, E.TRANSFEREE] >= 0:
        return True, LEADER_TRANSFERRING, -1, term, -1, -1
    if _count_futures(S, i, term) > C[C_MAXPEND]:
        return True, LEADER_PENDING_FULL, -1, term, -1, -1
    code, index, eterm, pos = st.append_as_leader(C, S, i, body, blen, now)
    if code != 0:
        return True, code, -1, term, -1, -1
    if wait_ack(C, S, i, eterm, index, pos, body, now, rpc):
        return True, SUCCESS, index, eterm, pos, pos
    return False, 0, 0, 0, 0, 0


# --- pending_map of a dispatcher (index -> ms pushed) ---


@njit(cache=True, inline='always')
def pm_get(S, i, peer, index):
    pm = L.pm_(S)
    if 0 <= index < pm.shape[2]:
        return pm[i, peer, index]
    return -1


@njit(cache=True, inline='always')
def pm_set(S, i, peer, index, t):
    pm = L.pm_(S)
    d = L.dp_(S)
    if pm[i, peer, index] < 0:
        d[i, peer, D_PMN] += 1
        d[i, peer, D_PMLO] = min(d[i, peer, D_PMLO], index)
        d[i, peer, D_PMHI] = max(d[i, peer, D_PMHI], index)
    pm[i, peer, index] = t


@njit(cache=True, inline='always')
def pm_without(S, i, peer, index):
    pm = L.pm_(S)
    if 0 <= index < pm.shape[2] and pm[i, peer, index] >= 0:
        pm[i, peer, index] = -1
        L.dp_(S)[i, peer, D_PMN] -= 1


@njit(cache=True)
def pm_clear(S, i, peer):
    pm = L.pm_(S)
    d = L.dp_(S)
    for idx in range(max(0, d[i, peer, D_PMLO]), min(d[i, peer, D_PMHI] + 1, pm.shape[2])):
        pm[i, peer, idx] = -1
    d[i, peer, D_PMN] = 0
    d[i, peer, D_PMLO] = BIG
    d[i, peer, D_PMHI] = -1


@njit(cache=True)
def new_dispatcher(S, i, peer, now):
    """Dispatcher(peer, last_check_leak_ms=now) of entry_pusher.new_pusher."""
    pm_clear(S, i, peer)
    d = L.dp_(S)
    d[i, peer, D_TYPE] = T_COMPARE
    d[i, peer, D_CI] = -1
    d[i, peer, D_WI] = -1
    d[i, peer, D_TERM] = -1
    d[i, peer, D_LEADER] = -1
    d[i, peer, D_LPC] = -1
    d[i, peer, D_LCL] = now
    d[i, peer, D_WAITING] = 0
    d[i, peer, D_TI] = -1
    d[i, peer, D_SLEEP] = -1
    d[i, peer, D_SEQ] = 0


@njit(cache=True)
def new_pusher(C, S, i, now):
    """entry_pusher.new_pusher"""
    pu = L.pu_(S)
    pu[i, P_LQI] = -1
    pu[i, P_LCL] = now
    pu[i, P_EPOCH] = now
    pu[i, P_NWM] = 0
    pu[i, P_NPT] = 0
    pu[i, P_NPEND] = 0
    for p in range(C[E.C_N]):
        if p != i:
            new_dispatcher(S, i, p, now)
