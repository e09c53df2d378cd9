"""The leader side of log replication in the dledger_log fast world: water marks, pending
appends and the QuorumAckChecker (reference_impl/dledger_log/entry_pusher.py), and the
EntryDispatcher threads (entry_dispatcher.py), over arrays.

Each function names the reference function it mirrors and keeps its branch order. A
DLedgerException inside a dispatcher's work is a returned code; the caller restores the
dispatcher row it saved (the reference's `except` continues from the values before the
`try`) and drops the outputs the failed work had produced. Layouts:
histories/fast/dledger_log_layout.py.
"""

from __future__ import annotations

from numba import njit

import histories.fast.dledger_log_layout as L
import histories.fast.dledger_log_store as st
import histories.fast.election as E
from histories.fast.dledger_log_layout import (
    BIG,
    C_COMMITPI,
    C_CTC,
    C_DMAXPEND,
    C_ERRSLEEP,
    C_FRESHCMP,
    C_LEAKI,
    C_MAXPEND,
    C_MAXPUSHTO,
    C_MAXWAIT,
    C_V026,
    CK_PUSH,
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
    DF,
    ET_BODY,
    ET_POS,
    ET_SIZE,
    ET_TERM,
    INCONSISTENT_STATE,
    INDEX_LESS_THAN_LOCAL_BEGIN,
    LEADER_PENDING_FULL,
    LEADER_TRANSFERRING,
    MK_PUSH_REQ,
    NETWORK_ERROR,
    NOT_LEADER,
    O_A,
    O_C1,
    O_C2,
    O_C3,
    O_CK,
    O_F0,
    O_M0,
    O_M5,
    O_MK,
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
    RQ_COMMIT,
    RQ_EBODY,
    RQ_EIDX,
    RQ_EPOS,
    RQ_ESIZE,
    RQ_ETERM,
    RQ_HAS,
    RQ_LEADER,
    RQ_SEQC,
    RQ_SEQE,
    RQ_TERM,
    RQ_TYPE,
    S_BEGIN,
    S_COMMITTED,
    SUCCESS,
    T_APPEND,
    T_COMMIT,
    T_COMPARE,
    T_TRUNCATE,
    TERM_CHANGED,
    W_STOP,
    WAIT_QUORUM_ACK_TIMEOUT,
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


# --- QuorumAckChecker ---


@njit(cache=True)
def checker_wake_at(C, S, i):
    """entry_pusher.checker_wake_at"""
    nd = L.nd_(S)
    if nd[i, E.ROLE] != E.LEADER:
        return -1
    term = nd[i, E.TERM]
    pu = L.pu_(S)
    ptm = L.ptm_(S)
    for r in range(pu[i, P_NPT]):
        if ptm[i, r] != term:
            return 0
    wmt = L.wmt_(S)
    seen = False
    for r in range(pu[i, P_NWM]):
        if wmt[i, r, 0] != term:
            return 0
        seen = True
    if not seen:
        return 0
    q = quorum_index(C, S, i, term)
    if q != pu[i, P_LQI]:
        return 0
    wake = pu[i, P_LCL] + C[C_LEAKI] + 1
    pend = L.pend_(S)
    index = q + 1
    r = find_future(S, i, term, index)
    while r >= 0 and pend[i, r, PD_DONE] == 1:
        index += 1
        r = find_future(S, i, term, index)
    if r >= 0:
        wake = min(wake, pend[i, r, PD_CREATED] + C[C_MAXWAIT])
    return wake


@njit(cache=True)
def quorum_ack_checker(C, S, i, now, ob, oc):
    """entry_pusher.quorum_ack_checker (with check_response_futures_timeout / _elapsed)."""
    nd = L.nd_(S)
    if nd[i, E.ROLE] != E.LEADER:
        return
    term = nd[i, E.TERM]
    pu = L.pu_(S)
    ptm = L.ptm_(S)
    pend = L.pend_(S)
    sto = L.sto_(S)
    if not has_pending_term(S, i, term):
        add_pending_term(S, i, term)
    if wm_row(S, i, term) < 0:
        _new_wm_row(C, S, i, term)
    if pu[i, P_NPT] > 1:
        r = 0
        while r < pu[i, P_NPT]:
            t = ptm[i, r]
            if t == term:
                r += 1
                continue
            last = -BIG
            f = _next_future(S, i, t, last, BIG)
            while f >= 0:
                last = pend[i, f, PD_INDEX]
                if pend[i, f, PD_DONE] == 0:
                    push_result(ob, oc, TERM_CHANGED, last, t, -1, pend[i, f, PD_REF], pend[i, f, PD_RPC],
                                pend[i, f, PD_POS])
                f = _next_future(S, i, t, last, BIG)
            f = 0
            while f < pu[i, P_NPEND]:
                if pend[i, f, PD_TERM] == t:
                    drop_future(S, i, f)
                else:
                    f += 1
            for q in range(r, pu[i, P_NPT] - 1):
                ptm[i, q] = ptm[i, q + 1]
            pu[i, P_NPT] -= 1
    if pu[i, P_NWM] > 1:
        wmt = L.wmt_(S)
        r = 0
        while r < pu[i, P_NWM]:
            if wmt[i, r, 0] != term:
                _drop_wm_row(S, i, r)
            else:
                r += 1
    q = quorum_index(C, S, i, term)
    commit = q
    if C[C_CTC] == 1:
        k = st.offset_of(sto, i, q)
        if k < 0 or L.ent_(S)[i, k, ET_TERM] != term:
            commit = -1
    st.update_committed_index(C, S, i, term, term, commit, now)
    need_check = False
    ack_num = 0
    index = q
    while index > pu[i, P_LQI]:
        f = find_future(S, i, term, index)
        if f < 0:
            need_check = True
            break
        done = pend[i, f, PD_DONE]
        pos = pend[i, f, PD_POS]
        ref = pend[i, f, PD_REF]
        rpc = pend[i, f, PD_RPC]
        drop_future(S, i, f)
        if done == 0:
            push_result(ob, oc, SUCCESS, index, term, pos, ref, rpc, pos)
        ack_num += 1
        index -= 1
    if ack_num == 0:
        index = q + 1
        while True:
            f = find_future(S, i, term, index)
            if f < 0 or now - pend[i, f, PD_CREATED] < C[C_MAXWAIT]:
                break
            if pend[i, f, PD_DONE] == 0:
                push_result(ob, oc, WAIT_QUORUM_ACK_TIMEOUT, index, term, -1, pend[i, f, PD_REF],
                            pend[i, f, PD_RPC], pend[i, f, PD_POS])
                pend[i, f, PD_DONE] = 1
            index += 1
    leak = pu[i, P_LCL]
    if E._elapsed(now, leak) > C[C_LEAKI] or need_check:
        update_peer_water_mark(C, S, i, term, i, st.end_index(sto, i))
        f = _next_future(S, i, term, -BIG, q)
        while f >= 0:
            index = pend[i, f, PD_INDEX]
            if pend[i, f, PD_DONE] == 0:
                push_result(ob, oc, SUCCESS, index, term, pend[i, f, PD_POS], pend[i, f, PD_REF],
                            pend[i, f, PD_RPC], pend[i, f, PD_POS])
            drop_future(S, i, f)
            f = _next_future(S, i, term, index, q)
        leak = now
    pu[i, P_LQI] = q
    pu[i, P_LCL] = leak


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


# --- EntryDispatcher ---


@njit(cache=True)
def change_state(C, S, i, peer, index, target):
    """entry_dispatcher.change_state"""
    d = L.dp_(S)
    if target == T_APPEND:
        update_peer_water_mark(C, S, i, d[i, peer, D_TERM], peer, index)
        d[i, peer, D_CI] = -1
        d[i, peer, D_WI] = index + 1
    elif target == T_COMPARE:
        if d[i, peer, D_TYPE] == T_APPEND:
            d[i, peer, D_CI] = -1
            pm_clear(S, i, peer)
    elif target == T_TRUNCATE:
        d[i, peer, D_CI] = -1
    d[i, peer, D_TYPE] = target


@njit(cache=True)
def _send_push(C, S, i, peer, kind, index, ob, oc):
    """A PushEntryRequest of `kind` with the entry at `index` (-1 for COMMIT: none), as
    entry_dispatcher._request builds it, sent as an invokeAsync; seq is d.seq + 1."""
    d = L.dp_(S)
    sto = L.sto_(S)
    ent = L.ent_(S)
    seq = d[i, peer, D_SEQ] + 1
    k = out_row(ob, oc, E.OT_SEND)
    ob[k, O_A] = peer
    ob[k, O_MK] = MK_PUSH_REQ
    ob[k, mcol(RQ_LEADER)] = d[i, peer, D_LEADER]
    ob[k, mcol(RQ_TERM)] = d[i, peer, D_TERM]
    ob[k, mcol(RQ_TYPE)] = kind
    if kind != T_COMMIT:
        r = index - sto[i, S_BEGIN]
        ob[k, mcol(RQ_HAS)] = 1
        ob[k, mcol(RQ_EIDX)] = index
        ob[k, mcol(RQ_ETERM)] = ent[i, r, ET_TERM]
        ob[k, mcol(RQ_EPOS)] = ent[i, r, ET_POS]
        ob[k, mcol(RQ_ESIZE)] = ent[i, r, ET_SIZE]
        ob[k, mcol(RQ_EBODY)] = ent[i, r, ET_BODY]
    ob[k, mcol(RQ_COMMIT)] = sto[i, S_COMMITTED]
    ob[k, mcol(RQ_SEQE)] = L.pu_(S)[i, P_EPOCH]
    ob[k, mcol(RQ_SEQC)] = seq
    ob[k, O_CK] = CK_PUSH
    ob[k, O_C1] = kind
    ob[k, O_C2] = peer
    ob[k, O_C3] = seq
    d[i, peer, D_SEQ] = seq
    return seq


@njit(cache=True)
def dispatcher_wake_at(C, S, i, peer):
    """entry_dispatcher.dispatcher_wake_at"""
    nd = L.nd_(S)
    d = L.dp_(S)
    if nd[i, E.ROLE] != E.LEADER or d[i, peer, D_WAITING] != 0:
        return -1
    sleep = d[i, peer, D_SLEEP]
    if d[i, peer, D_TERM] != nd[i, E.TERM] or d[i, peer, D_LEADER] != nd[i, E.LEADER_ID]:
        return max(0, sleep)
    end = st.end_index(L.sto_(S), i)
    if d[i, peer, D_TYPE] != T_APPEND:
        return -1 if d[i, peer, D_CI] == -1 and end == -1 else max(0, sleep)
    if d[i, peer, D_WI] <= end:
        return max(0, sleep)
    lpc = d[i, peer, D_LPC]
    wake = lpc + C[C_COMMITPI] + 1 if lpc >= 0 else 0
    sent = pm_get(S, i, peer, peer_water_mark(S, i, d[i, peer, D_TERM], peer) + 1)
    if sent >= 0:
        wake = min(wake, sent + C[C_MAXPUSHTO] + 1)
    return max(wake, sleep)


@njit(cache=True)
def _check_and_fresh_state(C, S, i, peer):
    """entry_dispatcher.check_and_fresh_state"""
    nd = L.nd_(S)
    d = L.dp_(S)
    if nd[i, E.ROLE] != E.LEADER:
        return False
    if (d[i, peer, D_TERM] != nd[i, E.TERM] or d[i, peer, D_LEADER] < 0
            or d[i, peer, D_LEADER] != nd[i, E.LEADER_ID]):
        d[i, peer, D_TERM] = nd[i, E.TERM]
        d[i, peer, D_LEADER] = i
        if C[C_FRESHCMP] == 1:
            d[i, peer, D_CI] = -1
        change_state(C, S, i, peer, -1, T_COMPARE)
    return True


@njit(cache=True)
def _do_append_inner(C, S, i, peer, index, now, ob, oc):
    """entry_dispatcher.do_append_inner -> 0, or the code of the DLedgerException it raises."""
    code = st.get_code(L.sto_(S), i, index)
    if code == INDEX_LESS_THAN_LOCAL_BEGIN:
        change_state(C, S, i, peer, -1, T_COMPARE)
        return 0
    if code != 0:
        return code
    _send_push(C, S, i, peer, T_APPEND, index, ob, oc)
    pm_set(S, i, peer, index, now)
    L.dp_(S)[i, peer, D_LPC] = now
    return 0


@njit(cache=True)
def _do_commit(C, S, i, peer, now, ob, oc):
    """entry_dispatcher.do_commit"""
    d = L.dp_(S)
    if E._elapsed(now, d[i, peer, D_LPC]) <= C[C_COMMITPI]:
        return
    _send_push(C, S, i, peer, T_COMMIT, -1, ob, oc)
    d[i, peer, D_LPC] = now


@njit(cache=True)
def _do_check_append_response(C, S, i, peer, now, ob, oc):
    """entry_dispatcher.do_check_append_response -> 0 or an exception's code."""
    index = peer_water_mark(S, i, L.dp_(S)[i, peer, D_TERM], peer) + 1
    sent = pm_get(S, i, peer, index)
    if sent >= 0 and now - sent > C[C_MAXPUSHTO]:
        return _do_append_inner(C, S, i, peer, index, now, ob, oc)
    return 0


@njit(cache=True)
def _do_append(C, S, i, peer, now, ob, oc):
    """entry_dispatcher.do_append -> 0 or an exception's code."""
    d = L.dp_(S)
    sto = L.sto_(S)
    max_pending = C[C_DMAXPEND]
    while d[i, peer, D_TYPE] == T_APPEND:
        if d[i, peer, D_WI] > st.end_index(sto, i):
            _do_commit(C, S, i, peer, now, ob, oc)
            return _do_check_append_response(C, S, i, peer, now, ob, oc)
        if d[i, peer, D_PMN] >= max_pending or E._elapsed(now, d[i, peer, D_LCL]) > C[C_LEAKI]:
            mark = peer_water_mark(S, i, d[i, peer, D_TERM], peer)
            if d[i, peer, D_PMN] > 0:
                pm = L.pm_(S)
                for idx in range(max(0, d[i, peer, D_PMLO]), min(mark, d[i, peer, D_PMHI] + 1)):
                    if pm[i, peer, idx] >= 0:
                        pm[i, peer, idx] = -1
                        d[i, peer, D_PMN] -= 1
            d[i, peer, D_LCL] = now
        if d[i, peer, D_PMN] >= max_pending:
            return _do_check_append_response(C, S, i, peer, now, ob, oc)
        code = _do_append_inner(C, S, i, peer, d[i, peer, D_WI], now, ob, oc)
        if code != 0:
            return code
        d[i, peer, D_WI] += 1
    return 0


@njit(cache=True)
def _do_compare(C, S, i, peer, now, ob, oc):
    """entry_dispatcher.do_compare up to the blocking get -> 0 or an exception's code."""
    d = L.dp_(S)
    sto = L.sto_(S)
    typ = d[i, peer, D_TYPE]
    if typ != T_COMPARE and typ != T_TRUNCATE:
        return 0
    end = st.end_index(sto, i)
    if d[i, peer, D_CI] == -1 and end == -1:
        return 0
    ci = d[i, peer, D_CI]
    if ci == -1 or ci > end or ci < sto[i, S_BEGIN]:
        ci = end
    code = st.get_code(sto, i, ci)
    if code != 0:
        return code
    seq = _send_push(C, S, i, peer, T_COMPARE, ci, ob, oc)
    d[i, peer, D_CI] = ci
    d[i, peer, D_WAITING] = seq
    return 0


@njit(cache=True, inline='always')
def _save(S, i, peer):
    d = L.dp_(S)
    res = L.res_(S)
    for f in range(DF):
        res[f] = d[i, peer, f]


@njit(cache=True, inline='always')
def _restore(S, i, peer):
    d = L.dp_(S)
    res = L.res_(S)
    for f in range(DF):
        d[i, peer, f] = res[f]


@njit(cache=True)
def dispatcher_do_work(C, S, i, peer, now, ob, oc):
    """entry_dispatcher.dispatcher_do_work: one pass of the dispatcher's loop."""
    d = L.dp_(S)
    if d[i, peer, D_WAITING] != 0 or now < d[i, peer, D_SLEEP]:
        return
    if not _check_and_fresh_state(C, S, i, peer):
        return
    _save(S, i, peer)
    k0 = oc[0]
    if d[i, peer, D_TYPE] == T_APPEND:
        code = _do_append(C, S, i, peer, now, ob, oc)
    else:
        code = _do_compare(C, S, i, peer, now, ob, oc)
    if code != 0:
        # the except clause: the dispatcher as it was before the try (its pending_map too:
        # an APPEND dispatcher's map is emptied by the change to COMPARE anyway), no outputs
        if L.res_(S)[D_TYPE] == T_APPEND:
            pm_clear(S, i, peer)  # every key the failed work added, while the row still bounds them
        _restore(S, i, peer)
        oc[0] = k0
        change_state(C, S, i, peer, -1, T_COMPARE)
        d[i, peer, D_SLEEP] = now + C[C_ERRSLEEP]


@njit(cache=True)
def _do_truncate(C, S, i, peer, index, ob, oc):
    """entry_dispatcher.do_truncate up to the blocking get -> 0 or an exception's code."""
    code = st.get_code(L.sto_(S), i, index)
    if code != 0:
        return code
    seq = _send_push(C, S, i, peer, T_TRUNCATE, index, ob, oc)
    d = L.dp_(S)
    d[i, peer, D_WAITING] = seq
    d[i, peer, D_TI] = index
    return 0


@njit(cache=True)
def _on_compare_response(C, S, i, peer, has, code, rbegin, rend, ob, oc):
    """entry_dispatcher.on_compare_response -> 0 or an exception's code."""
    d = L.dp_(S)
    sto = L.sto_(S)
    d[i, peer, D_WAITING] = 0
    if not has:
        code = NETWORK_ERROR
    if code != INCONSISTENT_STATE and code != SUCCESS:
        return code
    ci = d[i, peer, D_CI]
    begin = sto[i, S_BEGIN]
    end = st.end_index(sto, i)
    truncate_index = -1
    if code == SUCCESS:
        if ci == rend:
            change_state(C, S, i, peer, ci, T_APPEND)
            return 0
        truncate_index = ci
    elif rend < begin or rbegin > end or ci < rbegin:
        truncate_index = begin
    elif ci > rend:
        ci = rend
    else:
        ci -= 1
    d[i, peer, D_CI] = ci
    if ci < begin:
        truncate_index = begin
    if truncate_index != -1:
        change_state(C, S, i, peer, truncate_index, T_TRUNCATE)
        return _do_truncate(C, S, i, peer, truncate_index, ob, oc)
    return 0


@njit(cache=True)
def on_push_response(C, S, i, kind, peer, seq, has, code, rterm, rindex, rbegin, rend, now, ob, oc):
    """entry_dispatcher.on_push_response (`has` False: the RPC failed)."""
    d = L.dp_(S)
    if kind == T_APPEND:
        if not has or code == NETWORK_ERROR:
            return
        if code == SUCCESS:
            pm_without(S, i, peer, rindex)
            update_peer_water_mark(C, S, i, rterm, peer, rindex)
        elif code == INCONSISTENT_STATE:
            change_state(C, S, i, peer, -1, T_COMPARE)
        return
    if kind == T_COMMIT or d[i, peer, D_WAITING] != seq:
        return
    _save(S, i, peer)
    k0 = oc[0]
    if kind == T_COMPARE:
        err = _on_compare_response(C, S, i, peer, has, code, rbegin, rend, ob, oc)
    else:
        # on_truncate_response
        d[i, peer, D_WAITING] = 0
        if not has:
            code = NETWORK_ERROR
        err = 0 if code == SUCCESS else code
        if err == 0:
            d[i, peer, D_LPC] = now
            change_state(C, S, i, peer, d[i, peer, D_TI], T_APPEND)
    if err != 0:
        _restore(S, i, peer)
        oc[0] = k0
        d[i, peer, D_WAITING] = 0
        change_state(C, S, i, peer, -1, T_COMPARE)
        d[i, peer, D_SLEEP] = now + C[C_ERRSLEEP]

