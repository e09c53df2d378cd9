"""A node of the dledger_log fast world: the follower's EntryHandler
(reference_impl/dledger_log/entry_handler.py), the DLedger server that runs the member,
the log and the threads as one node (server.py), and the appending client (world.py's
LogClient), over arrays.

The election member is the election twin's, called as it is (histories.fast.election:
`_on_tick`, `_handle_vote`, `_handle_heart_beat`, ...). Each function names the
reference function it mirrors and keeps its branch order. Layouts:
histories/fast/dledger_log_layout.py.
"""

from __future__ import annotations

from numba import njit

import histories.fast.dledger_log_ghost as LG
import histories.fast.dledger_log_layout as L
import histories.fast.dledger_log_pusher as pu_
import histories.fast.dledger_log_store as st
import histories.fast.election as E
from histories.fast.dledger_log_layout import (
    BIG,
    C_BLEN,
    C_CFFI,
    C_CIV,
    C_FASTADV,
    C_FORCED,
    C_ORDERED,
    C_PFTO,
    C_QCAP,
    C_V026,
    CK_APPEND,
    CL_LEADER,
    CL_NEXT,
    CL_SEQ,
    CL_WAITING,
    ET_TERM,
    H_LCFF,
    H_NQ,
    H_NWR,
    H_WRHI,
    H_WRLO,
    INCONSISTENT_STATE,
    MK_APPEND_REQ,
    MK_APPEND_RESP,
    MK_PUSH_RESP,
    NONE,
    NOT_FOLLOWER,
    NOT_LEADER,
    O_A,
    O_C1,
    O_CK,
    O_F0,
    O_MK,
    OB_CLIENT,
    OB_COMMIT,
    OB_DROPPED,
    OB_RESULT,
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
    S_COMMITTED,
    S_END_TERM,
    SUCCESS,
    T_APPEND,
    T_COMMIT,
    T_COMPARE,
    T_TRUNCATE,
    UNEXPECTED_ARGUMENT,
    W_STOP,
)

out_row = pu_.out_row
mcol = pu_.mcol

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


# --- DLedgerServer ---


@njit(cache=True)
def sync(C, S, i, before_committed, ob, oc):
    """server.sync: the member follows the store (and the current term's water marks when a
    preferred leader is configured); CommitAdvanced when the commit index moved."""
    nd = L.nd_(S)
    sto = L.sto_(S)
    end = st.end_index(sto, i)
    if end != nd[i, E.LEI] or sto[i, S_END_TERM] != nd[i, E.LET]:
        nd[i, E.LEI] = end
        nd[i, E.LET] = sto[i, S_END_TERM]
    n = C[E.C_N]
    if C[E.C_PREF] == 1:
        wmk = L.wmk_(S)
        r = pu_.wm_row(S, i, nd[i, E.TERM])
        if r >= 0:
            wmt = L.wmt_(S)
            for p in range(n):
                wmk[i, p] = wmt[i, r, 1 + p]
            wmk[i, n] = 1
        else:
            for p in range(n):
                wmk[i, p] = -1
            wmk[i, n] = 0
    new = sto[i, S_COMMITTED]
    if new != before_committed and new >= 0:
        k = st.offset_of(sto, i, new)
        k2 = out_row(ob, oc, E.OT_OBS)
        ob[k2, O_A] = OB_COMMIT
        ob[k2, O_F0] = before_committed
        ob[k2, O_F0 + 1] = new
        ob[k2, O_F0 + 2] = nd[i, E.TERM]
        ob[k2, O_F0 + 3] = 1 if nd[i, E.ROLE] == E.LEADER else 0
        ob[k2, O_F0 + 4] = L.ent_(S)[i, k, ET_TERM] if k >= 0 else -1


@njit(cache=True)
def _entries_dropped(S, i, leader, term, ob, oc):
    """server.sync's EntriesDropped (before its CommitAdvanced): the log lost entries it held
    when the step began; the ghost reads which from the saved tail."""
    lo, hi, _ = LG.lost_range(S, i)
    if lo <= hi:
        k = out_row(ob, oc, E.OT_OBS)
        ob[k, O_A] = OB_DROPPED
        ob[k, O_F0] = leader
        ob[k, O_F0 + 1] = term


@njit(cache=True)
def _fast_advance_commit_index(C, S, i, now):
    """server.fast_advance_commit_index (DLedger 0.4.0's no-op of a new leader)"""
    sto = L.sto_(S)
    if sto[i, S_COMMITTED] >= st.end_index(sto, i):
        return
    code, index, term, _ = st.append_as_leader(C, S, i, 0, 0, now)
    if code != 0:
        return
    pu_.update_peer_water_mark(C, S, i, term, i, index)
    nd = L.nd_(S)
    nd[i, E.LEI] = st.end_index(sto, i)
    nd[i, E.LET] = sto[i, S_END_TERM]


@njit(cache=True)
def server_wake_at(C, S, i):
    """server.wake_at: the earliest of the member, the entry handler, the flush service and,
    on a leader, the dispatchers and the quorum ack checker."""
    nd = L.nd_(S)
    wake = E.wake_at(C, nd, i)
    t = handler_wake_at(C, S, i)
    if t >= 0 and (wake < 0 or t < wake):
        wake = t
    t = st.flush_wake_at(L.sto_(S), i)
    if t >= 0 and (wake < 0 or t < wake):
        wake = t
    if nd[i, E.ROLE] == E.LEADER:
        for p in range(C[E.C_N]):
            if p != i:
                t = pu_.dispatcher_wake_at(C, S, i, p)
                if t >= 0 and (wake < 0 or t < wake):
                    wake = t
        t = pu_.checker_wake_at(C, S, i)
        if t >= 0 and (wake < 0 or t < wake):
            wake = t
    return wake


@njit(cache=True)
def server_wake_slack(C, S, i, since, wake):
    """server.wake_slack (`wake`: the node's wake_at): the state maintainer's slack when it is
    the thread that falls due."""
    m_wake = E.wake_at(C, L.nd_(S), i)
    if 0 <= m_wake == wake:
        return E._wake_slack(C, L.nd_(S), i, since, m_wake)
    return 0


@njit(cache=True)
def server_on_tick(C, S, i, now, draw, pref, self_pref, ob, oc):
    """server.on_tick: every thread that is due, in the reference's order, then answer_clients."""
    nd = L.nd_(S)
    sto = L.sto_(S)
    k0 = oc[0]
    before = sto[i, S_COMMITTED]
    if 0 <= E.wake_at(C, nd, i) <= now:
        k1 = oc[0]
        E._on_tick(C, nd, L.live_(S), L.wmk_(S), i, now, draw, pref, self_pref, ob, oc)
        if C[C_FASTADV] == 1 and nd[i, E.ROLE] == E.LEADER:
            became = False
            for k in range(k1, oc[0]):
                if (ob[k, 0] == E.OT_OBS and ob[k, O_A] == E.OB_ROLE and ob[k, O_F0 + 1] == E.LEADER):
                    became = True
            if became:
                _fast_advance_commit_index(C, S, i, now)
    if 0 <= handler_wake_at(C, S, i) <= now:
        # server.on_tick: the last TRUNCATE the handler carries out names the drop it causes
        hq = L.hq_(S)
        t_leader = -1
        t_term = -1
        for q in range(L.eh_(S)[i, H_NQ]):
            if hq[i, q, PW_RQ + RQ_TYPE] == T_TRUNCATE:
                t_leader = hq[i, q, PW_RQ + RQ_LEADER]
                t_term = hq[i, q, PW_RQ + RQ_TERM]
        handler_do_work(C, S, i, now, ob, oc)
        _entries_dropped(S, i, t_leader, t_term, ob, oc)
        sync(C, S, i, before, ob, oc)
        before = sto[i, S_COMMITTED]
    if nd[i, E.ROLE] == E.LEADER:
        for p in range(C[E.C_N]):
            if p != i and 0 <= pu_.dispatcher_wake_at(C, S, i, p) <= now:
                pu_.dispatcher_do_work(C, S, i, p, now, ob, oc)
        if 0 <= pu_.checker_wake_at(C, S, i) <= now:
            pu_.quorum_ack_checker(C, S, i, now, ob, oc)
    if 0 <= st.flush_wake_at(sto, i) <= now:
        st.on_flush_tick(sto, i, now)
    sync(C, S, i, before, ob, oc)
    answer_clients(ob, oc, k0)


@njit(cache=True)
def answer_clients(ob, oc, k0):
    """server.answer_clients: a completed AppendFuture answers its client's APPEND RPC."""
    k1 = oc[0]
    for k in range(k0, k1):
        if ob[k, 0] == E.OT_OBS and ob[k, O_A] == OB_RESULT and ob[k, O_F0 + 5] != 0:
            r = out_row(ob, oc, E.OT_RESPOND)
            ob[r, O_A] = ob[k, O_F0 + 5]
            ob[r, O_MK] = MK_APPEND_RESP
            ob[r, mcol(0)] = ob[k, O_F0]
            ob[r, mcol(1)] = ob[k, O_F0 + 1]
            ob[r, mcol(2)] = ob[k, O_F0 + 3]
            ob[r, mcol(3)] = ob[k, O_F0 + 2]
            ob[r, mcol(4)] = -1


@njit(cache=True)
def server_on_append(C, S, i, body, rpc, now, ob, oc):
    """server.on_request for an AppendEntryRequest -> (reply?, code, index, pos, term, leader)."""
    before = L.sto_(S)[i, S_COMMITTED]
    done, code, index, term, pos, fpos = pu_.handle_append(C, S, i, body, C[C_BLEN], now, rpc)
    if done:
        pu_.push_result(ob, oc, code, index, term, pos, body, rpc, fpos)
    sync(C, S, i, before, ob, oc)
    if done:
        return True, code, index, pos, term, L.nd_(S)[i, E.LEADER_ID]
    return False, 0, 0, 0, 0, 0


@njit(cache=True)
def boot_server(C, S, i, now, term, vote, lei, let, restart):
    """server.boot (and restart): the term file, a recovered store, fresh threads. `restart`:
    the store is what survived the crash; otherwise it starts empty."""
    nd = L.nd_(S)
    forced = C[C_FORCED]
    if forced >= 0:
        # forced_member: srv.boot at term 0, then the role ServerTestHarness forces
        E._boot(C, nd, L.live_(S), i, now, 0, -1, -1, -1, now + C[E.C_CPLI])
        if forced == i:
            nd[i, E.ROLE] = E.LEADER
            nd[i, E.LEADER_ID] = i
        else:
            nd[i, E.ROLE] = E.FOLLOWER
            nd[i, E.LEADER_ID] = forced
            nd[i, E.LLHB] = now
    else:
        E._boot(C, nd, L.live_(S), i, now, term, vote, -1, -1, now + C[E.C_CPLI])
    if not restart:
        st.empty(L.sto_(S), i, now)
    st.recover(C, S, i, nd[i, E.TERM], now)
    nd[i, E.LEI] = st.end_index(L.sto_(S), i)
    nd[i, E.LET] = L.sto_(S)[i, S_END_TERM]
    wmk = L.wmk_(S)
    for p in range(wmk.shape[1]):
        wmk[i, p] = -1
    wmk[i, C[E.C_N]] = 0
    pu_.new_pusher(C, S, i, now)
    new_handler(S, i, now)


@njit(cache=True)
def crash_server(C, S, i, kind):
    """server.crash: kind 0 process (the term file survives), 1 OS, 2 disk (it does not)."""
    nd = L.nd_(S)
    lose = kind != 0 or C[E.C_MUTANT] == E.MUT_CRASH_LOSES_TERM  # test-only mutants of srv.crash
    term = 0 if lose else nd[i, E.TERM]
    vote = -1 if lose or C[E.C_MUTANT] == E.MUT_CRASH_LOSES_VOTE else nd[i, E.VOTE]
    E._boot(C, nd, L.live_(S), i, 0, term, vote, nd[i, E.LEI], nd[i, E.LET], 0)
    nd[i, E.NEXTLOOP] = 0
    wmk = L.wmk_(S)
    for p in range(wmk.shape[1]):
        wmk[i, p] = -1
    wmk[i, C[E.C_N]] = 0
    st.crash(S, i, kind)


# --- the client (dledger_log.world.LogClient) ---


@njit(cache=True, inline='always')
def client_wake_at(S, c):
    cl = L.cl_(S)
    return -1 if cl[c, CL_WAITING] == 1 else cl[c, CL_NEXT]


@njit(cache=True)
def client_on_tick(C, S, c, now, draw, ob, oc):
    """world.client_on_tick: send the next body to the believed leader (a drawn peer if none)."""
    cl = L.cl_(S)
    if cl[c, CL_WAITING] == 1 or now < cl[c, CL_NEXT]:
        return
    target = cl[c, CL_LEADER] if cl[c, CL_LEADER] >= 0 else draw % C[E.C_N]
    seq = cl[c, CL_SEQ] + 1
    body = ((c + 1) << 32) | seq
    cl[c, CL_SEQ] = seq
    cl[c, CL_WAITING] = 1
    k = out_row(ob, oc, E.OT_SEND)
    ob[k, O_A] = target
    ob[k, O_MK] = MK_APPEND_REQ
    ob[k, mcol(0)] = body
    ob[k, O_CK] = CK_APPEND
    ob[k, O_C1] = body


@njit(cache=True)
def client_on_response(C, S, c, body, peer, has, code, index, leader, now, ob, oc):
    """world.client_on_response: NOT_LEADER names the leader to try next; a failure forgets it."""
    cl = L.cl_(S)
    ld = cl[c, CL_LEADER]
    if not has:
        ld = -1
    elif code == NOT_LEADER:
        ld = leader
    elif code == SUCCESS:
        ld = peer
    k = out_row(ob, oc, E.OT_OBS)
    ob[k, O_A] = OB_CLIENT
    ob[k, O_F0] = body
    ob[k, O_F0 + 1] = peer
    ob[k, O_F0 + 2] = code if has else 0
    ob[k, O_F0 + 3] = index if has else -1
    cl[c, CL_WAITING] = 0
    cl[c, CL_LEADER] = ld
    cl[c, CL_NEXT] = now + C[C_CIV]


@njit(cache=True)
def boot_client(C, S, c, now, restart):
    """world.boot of a client (and restart: waiting cleared, next append an interval on)."""
    cl = L.cl_(S)
    if not restart:
        cl[c, CL_LEADER] = C[C_FORCED]
        cl[c, CL_SEQ] = 0
    cl[c, CL_WAITING] = 0
    cl[c, CL_NEXT] = now + C[C_CIV]



@njit(cache=True)
def crash_client(S, c):
    """world.crash of a client: it forgets the append it waited for."""
    L.cl_(S)[c, CL_WAITING] = 0
