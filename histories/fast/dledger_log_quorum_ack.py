"""The leader's QuorumAckChecker in the dledger_log fast world
(reference_impl/dledger_log/entry_pusher.py's checker_wake_at, quorum_ack_checker and
check_response_futures_timeout / _elapsed), over the pusher's arrays
(histories.fast.dledger_log_pusher: water marks and pending appends).

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
    C_CTC,
    C_LEAKI,
    C_MAXWAIT,
    ET_TERM,
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
    SUCCESS,
    TERM_CHANGED,
    WAIT_QUORUM_ACK_TIMEOUT,
)
from histories.fast.dledger_log_pusher import (
    _drop_wm_row,
    _new_wm_row,
    _next_future,
    add_pending_term,
    drop_future,
    find_future,
    has_pending_term,
    push_result,
    quorum_index,
    update_peer_water_mark,
    wm_row,
)

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
