"""The follower's EntryHandler in the dledger_log fast world
(reference_impl/dledger_log/entry_handler.py), over arrays: write requests by index, the
queue of TRUNCATE / COMPARE / COMMIT requests, the leaders' push seqs, and the replies
they get.

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
    C_CFFI,
    C_ORDERED,
    C_PFTO,
    C_QCAP,
    C_V026,
    H_LCFF,
    H_NQ,
    H_NWR,
    H_WRHI,
    H_WRLO,
    INCONSISTENT_STATE,
    MK_PUSH_RESP,
    NONE,
    NOT_FOLLOWER,
    O_A,
    O_MK,
    OVERFLOW_QUEUE,
    PUSH_REQUEST_IS_FULL,
    PW_ANSWERED,
    PW_CREATED,
    PW_ON,
    PW_RPC,
    PW_RQ,
    REPEATED_PUSH,
    RP_EBODY,
    RP_EIDX,
    RP_EPOS,
    RP_ESIZE,
    RP_ETERM,
    RP_HAS,
    RP_LEADER,
    RP_TYPE,
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
    SUCCESS,
    T_APPEND,
    T_COMMIT,
    T_COMPARE,
    T_TRUNCATE,
    UNEXPECTED_ARGUMENT,
    W_STOP,
)
from histories.fast.dledger_log_pusher import mcol, out_row

# PushEntryRequest fields as handle_push gets them: a message row m[0..11] (RQ_* order)

# --- EntryHandler ---


@njit(cache=True)
def _respond_push(S, i, ob, oc, rpc, code, term, typ, has, eidx):
    """Respond(rpc, entry_handler.build_response(s, req, code))"""
    sto = L.sto_(S)
    k = out_row(ob, oc, E.OT_RESPOND)
    ob[k, O_A] = rpc
    ob[k, O_MK] = MK_PUSH_RESP
    ob[k, mcol(0)] = code
    ob[k, mcol(1)] = term
    ob[k, mcol(2)] = NONE if typ == T_COMMIT else (eidx if has == 1 else -1)
    ob[k, mcol(3)] = sto[i, S_BEGIN]
    ob[k, mcol(4)] = st.end_index(sto, i)
    return k


@njit(cache=True)
def _respond_wait(S, i, ob, oc, row, code):
    """Respond to the PushWait `row` (a wr or hq row) with build_response; the row keeps the
    request for RPL-1/3 (spec.replies matches a reply with the request its node held)."""
    k = _respond_push(S, i, ob, oc, row[PW_RPC], code, row[PW_RQ + RQ_TERM], row[PW_RQ + RQ_TYPE],
                      row[PW_RQ + RQ_HAS], row[PW_RQ + RQ_EIDX])
    ob[k, RP_TYPE] = row[PW_RQ + RQ_TYPE]
    ob[k, RP_LEADER] = row[PW_RQ + RQ_LEADER]
    ob[k, RP_HAS] = row[PW_RQ + RQ_HAS]
    ob[k, RP_EIDX] = row[PW_RQ + RQ_EIDX]
    ob[k, RP_ETERM] = row[PW_RQ + RQ_ETERM]
    ob[k, RP_EPOS] = row[PW_RQ + RQ_EPOS]
    ob[k, RP_ESIZE] = row[PW_RQ + RQ_ESIZE]
    ob[k, RP_EBODY] = row[PW_RQ + RQ_EBODY]


@njit(cache=True, inline='always')
def wr_has(S, i, index):
    wr = L.wr_(S)
    return 0 <= index < wr.shape[1] and wr[i, index, PW_ON] == 1


@njit(cache=True)
def _wr_clear(S, i):
    wr = L.wr_(S)
    eh = L.eh_(S)
    for idx in range(max(0, eh[i, H_WRLO]), min(eh[i, H_WRHI] + 1, wr.shape[1])):
        wr[i, idx, PW_ON] = 0
    eh[i, H_NWR] = 0
    eh[i, H_WRLO] = BIG
    eh[i, H_WRHI] = -1


@njit(cache=True, inline='always')
def _wr_remove(S, i, index):
    L.wr_(S)[i, index, PW_ON] = 0
    L.eh_(S)[i, H_NWR] -= 1


@njit(cache=True)
def new_handler(S, i, now):
    """EntryHandler(last_check_fast_forward_ms=now): no requests, no queue, no seqs."""
    _wr_clear(S, i)
    eh = L.eh_(S)
    eh[i, H_LCFF] = now
    eh[i, H_NQ] = 0
    lseq = L.lseq_(S)
    for p in range(lseq.shape[1]):
        lseq[i, p, 0] = 0


@njit(cache=True)
def handle_push(C, S, i, m, rpc, now):
    """entry_handler.handle_push -> (reply kind, code): 0 none (answered later or never),
    1 build_response(s, req, code), 2 PushEntryResponse(code, term) alone."""
    if C[C_ORDERED] == 1:
        lseq = L.lseq_(S)
        ld = m[RQ_LEADER]
        if lseq[i, ld, 0] == 1:
            e, c = lseq[i, ld, 1], lseq[i, ld, 2]
            if m[RQ_SEQE] < e or (m[RQ_SEQE] == e and m[RQ_SEQC] < c):
                return 0, 0
        lseq[i, ld, 0] = 1
        lseq[i, ld, 1] = m[RQ_SEQE]
        lseq[i, ld, 2] = m[RQ_SEQC]
    typ = m[RQ_TYPE]
    eh = L.eh_(S)
    if typ == T_APPEND:
        if m[RQ_HAS] == 0:
            return 2, UNEXPECTED_ARGUMENT
        index = m[RQ_EIDX]
        if wr_has(S, i, index):
            return 1, REPEATED_PUSH
        wr = L.wr_(S)
        wr[i, index, PW_ON] = 1
        for j in range(12):
            wr[i, index, PW_RQ + j] = m[j]
        wr[i, index, PW_RPC] = rpc
        wr[i, index, PW_CREATED] = now
        wr[i, index, PW_ANSWERED] = 0
        eh[i, H_NWR] += 1
        eh[i, H_WRLO] = min(eh[i, H_WRLO], index)
        eh[i, H_WRHI] = max(eh[i, H_WRHI], index)
        return 0, 0
    if typ != T_COMMIT:
        if m[RQ_HAS] == 0:
            return 2, UNEXPECTED_ARGUMENT
        _wr_clear(S, i)  # the dropped futures are never completed
    if C[C_V026] == 0 and eh[i, H_NQ] >= C[C_QCAP]:
        return 1, PUSH_REQUEST_IS_FULL
    hq = L.hq_(S)
    q = eh[i, H_NQ]
    if q >= hq.shape[1]:
        L.ws_(S)[W_STOP] = OVERFLOW_QUEUE
        return 0, 0
    hq[i, q, PW_ON] = 1
    for j in range(12):
        hq[i, q, PW_RQ + j] = m[j]
    hq[i, q, PW_RPC] = rpc
    hq[i, q, PW_CREATED] = now
    hq[i, q, PW_ANSWERED] = 0
    eh[i, H_NQ] = q + 1
    return 0, 0


@njit(cache=True)
def handler_wake_at(C, S, i):
    """entry_handler.wake_at"""
    eh = L.eh_(S)
    if L.nd_(S)[i, E.ROLE] != E.FOLLOWER:
        return 0 if eh[i, H_NQ] > 0 and C[C_V026] == 0 else -1
    if eh[i, H_NQ] > 0 or wr_has(S, i, st.end_index(L.sto_(S), i) + 1):
        return 0
    if eh[i, H_NWR] > 0:
        return eh[i, H_LCFF] + C[C_CFFI]
    return -1


@njit(cache=True)
def _handle_do_append(C, S, i, row, now):
    """entry_handler.handle_do_append -> code"""
    nd = L.nd_(S)
    r = PW_RQ
    code = st.append_as_follower(C, S, i, row[r + RQ_EIDX], row[r + RQ_ETERM], row[r + RQ_EPOS], row[r + RQ_ESIZE],
                                 row[r + RQ_EBODY], row[r + RQ_TERM], row[r + RQ_LEADER], now)
    if code != 0:
        return INCONSISTENT_STATE
    st.update_committed_index(C, S, i, row[r + RQ_TERM], nd[i, E.TERM], row[r + RQ_COMMIT], now)
    return SUCCESS


@njit(cache=True)
def _entry_equal(S, i, row):
    """store.entry_at(s, req.entry.index) == req.entry"""
    r = PW_RQ
    k = st.offset_of(L.sto_(S), i, row[r + RQ_EIDX])
    return k >= 0 and st.holds(L.ent_(S), i, k, row[r + RQ_ETERM], row[r + RQ_EPOS], row[r + RQ_ESIZE],
                               row[r + RQ_EBODY])


@njit(cache=True)
def _check_append_future(C, S, i, now, ob, oc):
    """entry_handler.check_append_future"""
    wr = L.wr_(S)
    eh = L.eh_(S)
    end = st.end_index(L.sto_(S), i)
    ff = -1
    for index in range(max(0, eh[i, H_WRLO]), min(eh[i, H_WRHI] + 1, wr.shape[1])):
        if wr[i, index, PW_ON] == 0:
            continue
        row = wr[i, index]
        if index <= end:
            code = SUCCESS if _entry_equal(S, i, row) else INCONSISTENT_STATE
            if row[PW_ANSWERED] == 0:
                _respond_wait(S, i, ob, oc, row, code)
            _wr_remove(S, i, index)
            continue
        if index == end + 1:
            return
        if now - row[PW_CREATED] < C[C_PFTO]:
            continue
        if ff < 0:
            ff = index
    if ff >= 0:
        row = wr[i, ff]
        if row[PW_ANSWERED] == 0:
            _respond_wait(S, i, ob, oc, row, INCONSISTENT_STATE)
            row[PW_ANSWERED] = 1


@njit(cache=True)
def handler_do_work(C, S, i, now, ob, oc):
    """entry_handler.do_work"""
    nd = L.nd_(S)
    eh = L.eh_(S)
    hq = L.hq_(S)
    if nd[i, E.ROLE] != E.FOLLOWER:
        if C[C_V026] == 1 or eh[i, H_NQ] == 0:
            return
        for q in range(eh[i, H_NQ]):
            _respond_wait(S, i, ob, oc, hq[i, q], NOT_FOLLOWER)
        eh[i, H_NQ] = 0
        return
    for q in range(eh[i, H_NQ]):
        row = hq[i, q]
        typ = row[PW_RQ + RQ_TYPE]
        if typ == T_TRUNCATE:
            # entry_handler.handle_do_truncate
            r = PW_RQ
            code = st.truncate(C, S, i, row[r + RQ_EIDX], row[r + RQ_ETERM], row[r + RQ_EPOS], row[r + RQ_ESIZE],
                               row[r + RQ_EBODY], row[r + RQ_TERM], row[r + RQ_LEADER], now)
            if code != 0:
                code = INCONSISTENT_STATE
            else:
                st.update_committed_index(C, S, i, row[r + RQ_TERM], nd[i, E.TERM], row[r + RQ_COMMIT], now)
                code = SUCCESS
        elif typ == T_COMPARE:
            code = SUCCESS if _entry_equal(S, i, row) else INCONSISTENT_STATE
        else:
            code = SUCCESS
            st.update_committed_index(C, S, i, row[PW_RQ + RQ_TERM], nd[i, E.TERM], row[PW_RQ + RQ_COMMIT], now)
        _respond_wait(S, i, ob, oc, row, code)
    eh[i, H_NQ] = 0
    wr = L.wr_(S)
    while True:
        index = st.end_index(L.sto_(S), i) + 1
        if not wr_has(S, i, index):
            break
        _wr_remove(S, i, index)
        row = wr[i, index]
        code = _handle_do_append(C, S, i, row, now)
        if row[PW_ANSWERED] == 0:
            _respond_wait(S, i, ob, oc, row, code)
    if eh[i, H_NWR] > 0 and E._elapsed(now, eh[i, H_LCFF]) >= C[C_CFFI]:
        eh[i, H_LCFF] = now
        _check_append_future(C, S, i, now, ob, oc)
