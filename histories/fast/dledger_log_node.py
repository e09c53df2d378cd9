"""A server of the dledger_log fast world: the DLedger server that runs the member, the log
and the threads as one node (reference_impl/dledger_log/server.py), over arrays. Its
threads are the entry handler (histories.fast.dledger_log_handler), the dispatchers
(dledger_log_dispatcher), the quorum ack checker (dledger_log_quorum_ack) and the store's
flush service (dledger_log_store); the appending client is dledger_log_client.

The election member is the election twin's, called as it is (histories.fast.election:
`_on_tick`, `_handle_vote`, `_handle_heart_beat`, ...). Each function names the
reference function it mirrors and keeps its branch order. Layouts:
histories/fast/dledger_log_layout.py.
"""

from __future__ import annotations

from numba import njit

import histories.fast.dledger_log_dispatcher as dis
import histories.fast.dledger_log_ghost as LG
import histories.fast.dledger_log_layout as L
import histories.fast.dledger_log_pusher as pu_
import histories.fast.dledger_log_quorum_ack as qa
import histories.fast.dledger_log_store as st
import histories.fast.election as E
from histories.fast.dledger_log_handler import handler_do_work, handler_wake_at, new_handler
from histories.fast.dledger_log_layout import (
    C_BLEN,
    C_FASTADV,
    C_FORCED,
    ET_TERM,
    H_NQ,
    MK_APPEND_RESP,
    O_A,
    O_F0,
    O_MK,
    OB_COMMIT,
    OB_DROPPED,
    OB_RESULT,
    PW_RQ,
    RQ_LEADER,
    RQ_TERM,
    RQ_TYPE,
    S_COMMITTED,
    S_END_TERM,
    T_TRUNCATE,
)
from histories.fast.dledger_log_pusher import mcol, out_row

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
                t = dis.dispatcher_wake_at(C, S, i, p)
                if t >= 0 and (wake < 0 or t < wake):
                    wake = t
        t = qa.checker_wake_at(C, S, i)
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
            if p != i and 0 <= dis.dispatcher_wake_at(C, S, i, p) <= now:
                dis.dispatcher_do_work(C, S, i, p, now, ob, oc)
        if 0 <= qa.checker_wake_at(C, S, i) <= now:
            qa.quorum_ack_checker(C, S, i, now, ob, oc)
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
