"""The leader's EntryDispatcher threads in the dledger_log fast world, one per peer
(reference_impl/dledger_log/entry_dispatcher.py): COMPARE / TRUNCATE / APPEND / COMMIT
and their replies, over the pusher's arrays (histories.fast.dledger_log_pusher: the
dispatcher rows, their pending maps, the water marks).

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
    C_COMMITPI,
    C_DMAXPEND,
    C_ERRSLEEP,
    C_FRESHCMP,
    C_LEAKI,
    C_MAXPUSHTO,
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
    MK_PUSH_REQ,
    NETWORK_ERROR,
    O_A,
    O_C1,
    O_C2,
    O_C3,
    O_CK,
    O_MK,
    P_EPOCH,
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
)
from histories.fast.dledger_log_pusher import (
    mcol,
    out_row,
    peer_water_mark,
    pm_clear,
    pm_get,
    pm_set,
    pm_without,
    update_peer_water_mark,
)

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
