"""The dledger_log world around its nodes, for the kernel (histories.fast.dledger_log): a
node's wake time and the slack of its tick (reference_impl/dledger_log/world.py's
wake_at, core.world.since_after, schedule._wakes), a request or a response to the node
that gets it (world.on_request, world.on_response), the routing of a step's outputs to
the network and its observations to the ghost (core.transitions.route), core.world.init
(`reset`), world._leaders and core.transitions._up.
"""

from __future__ import annotations

from numba import njit

import histories.fast.dledger_log_client as CL
import histories.fast.dledger_log_dispatcher as D
import histories.fast.dledger_log_ghost as LG
import histories.fast.dledger_log_handler as H
import histories.fast.dledger_log_layout as L
import histories.fast.dledger_log_monitor as M
import histories.fast.dledger_log_net as NET
import histories.fast.dledger_log_node as N
import histories.fast.dledger_log_pusher as P
import histories.fast.dledger_log_replies as R
import histories.fast.dledger_log_steps as STEPS
import histories.fast.dledger_log_store as st
import histories.fast.election as E
from histories.fast.dledger_log_layout import (
    BIG,
    C_NT,
    CK_PUSH,
    MD_BCHG,
    MD_DIRTY,
    MK_APPEND_REQ,
    MK_APPEND_RESP,
    MK_PUSH_REQ,
    MK_PUSH_RESP,
    NMF,
    NONE,
    O_A,
    O_F0,
    O_MK,
    OB_CLIENT,
    OB_COMMIT,
    OB_DROPPED,
    OB_RESULT,
    RP_EBODY,
    RP_EIDX,
    RP_EPOS,
    RP_ESIZE,
    RP_ETERM,
    RP_HAS,
    RP_LEADER,
    RP_SENT,
    RP_TYPE,
    RQ_EIDX,
    RQ_HAS,
    RQ_ON,
    RQ_TERM,
    RQ_TYPE,
    S_BEGIN,
    SUCCESS,
    T_COMMIT,
    W_APPENDS,
    W_CALM_AT,
    W_FIRST_ACK,
    W_FRESH,
    W_LAST_FAULT,
    W_MAXIDX,
    W_MAXTERM,
    W_NEXT_ID,
    W_RPL,
    W_SETTLED,
    W_SETTLED_T,
    W_STEPS,
    W_TOPTERM,
)

# =====================================================================================
# the node as the world drives it (dledger_log.world: servers then clients)
# =====================================================================================


@njit(cache=True, inline='always')
def _wake_of(C, S, j):
    """world.wake_at: the protocol's wake time of node j's state (up or down)."""
    n = C[E.C_N]
    return N.server_wake_at(C, S, j) if j < n else CL.client_wake_at(S, j - n)


@njit(cache=True)
def _refresh(C, S, sn, rwake, slk, j, t, java, stagger):
    """After node j's state changed at time t: core.world.since_after (since moves to t when
    the wake time changed), then the slack of its next tick (schedule._wakes)."""
    new = _wake_of(C, S, j)
    if new != rwake[j]:
        sn[j] = t
        rwake[j] = new
    _slack(C, S, sn, rwake, slk, j, java, stagger)


@njit(cache=True, inline='always')
def _slack(C, S, sn, rwake, slk, j, java, stagger):
    sl = 0
    if java and j < C[E.C_N] and rwake[j] >= 0:
        sl = N.server_wake_slack(C, S, j, sn[j], rwake[j])
    if stagger > sl and (L.ws_(S)[W_FRESH] >> j) & 1:
        sl = stagger
    slk[j] = sl


@njit(cache=True)
def _on_request(C, S, i, mk, m, rpc_id, now, pref, self_pref, ob, oc, msg):
    """server.on_request -> the reply's kind (0: none now) with its fields in msg."""
    nd = L.nd_(S)
    if mk == MK_PUSH_REQ:
        kind, code = H.handle_push(C, S, i, m, rpc_id, now)
        if kind == 0:
            return 0
        msg[0] = code
        msg[1] = m[RQ_TERM]
        if kind == 1:
            sto = L.sto_(S)
            msg[2] = NONE if m[RQ_TYPE] == T_COMMIT else (m[RQ_EIDX] if m[RQ_HAS] == 1 else -1)
            msg[3] = sto[i, S_BEGIN]
            msg[4] = st.end_index(sto, i)
        else:
            msg[2] = NONE
            msg[3] = -1
            msg[4] = -1
        return MK_PUSH_RESP
    if mk == MK_APPEND_REQ:
        has, code, index, pos, term, leader = N.server_on_append(C, S, i, m[0], rpc_id, now, ob, oc)
        if not has:
            return 0
        msg[0] = code
        msg[1] = index
        msg[2] = pos
        msg[3] = term
        msg[4] = leader
        return MK_APPEND_RESP
    if mk == E.MK_HB_REQ:
        code, rterm = E._handle_heart_beat(C, nd, i, m[0], m[1], now, ob, oc)
        msg[0] = code
        msg[1] = rterm
        return E.MK_HB_RESP
    if mk == E.MK_VOTE_REQ:
        rterm, result = E._handle_vote(C, nd, i, m[0], m[1], m[2], m[3], False, self_pref, ob, oc)
        msg[0] = rterm
        msg[1] = result
        msg[2] = SUCCESS
        return E.MK_VOTE_RESP
    has, code, rterm = E._server_handle_leadership_transfer(C, nd, L.wmk_(S), i, m[0], m[1], m[2], m[3], m[4], rpc_id,
                                                            now, ob, oc)
    if not has:
        return 0
    msg[0] = code
    msg[1] = rterm
    return E.MK_LT_RESP


@njit(cache=True)
def _on_response(C, S, i, ck, c1, c2, c3, peer, has, m, now, ob, oc):
    """world.on_response: a server's push or election RPC, or a client's append (has False:
    the RPC failed)."""
    n = C[E.C_N]
    if i >= n:
        CL.client_on_response(C, S, i - n, c1, peer, has, m[0], m[1], m[4], now, ob, oc)
        return
    if ck == CK_PUSH:
        D.on_push_response(C, S, i, c1, c2, c3, has, m[0], m[1], m[2], m[3], m[4], now, ob, oc)
    elif ck == E.CK_HB:
        E._on_heart_beat_response(C, L.nd_(S), L.live_(S), i, c1, peer, has, m[0], m[1], now)
    elif ck == E.CK_VOTE:
        E._on_vote_response(C, L.nd_(S), i, c1, has, m[1], m[0], now)
    else:
        E._on_leadership_transfer_response(L.nd_(S), i, c1, c2, c3, has, m[0], m[1], ob, oc)


@njit(cache=True)
def _route(C, S, G, ws, fl, rp, alive, newl, i, now, ob, oc, msg):
    """core.transitions.route: Sends and Responds to the network in order, then the
    observations to the ghost in order. Returns the number of observations."""
    for k in range(oc[0]):
        t = ob[k, 0]
        if t == E.OT_SEND:
            NET._net_send(C, ws, fl, rp, now, i, ob, k)
        elif t == E.OT_RESPOND:
            mk = ob[k, O_MK]
            for j in range(NMF):
                msg[j] = ob[k, P.mcol(j)]
            sent = NET._net_reply(ws, fl, rp, now, ob[k, O_A], mk, msg)
            if mk == MK_PUSH_RESP:
                ob[k, RP_SENT] = 1 if sent else 0
    nobs = 0
    for k in range(oc[0]):
        if ob[k, 0] == E.OT_OBS:
            nobs += 1
            kind = ob[k, O_A]
            if kind == E.OB_ROLE:
                # ghost.update: who follows whom, the transfer clock, then Terms.led and `elected`
                LG.follow_note(C, ws, G, S, alive, now)
                LG.transfer_note(ws, G, S, i, now)
                if ob[k, O_F0 + 1] == E.LEADER:
                    M.on_leader(ws, G, i, ob[k, O_F0], L.nd_(S)[i, E.LET], now)
                    newl[newl[0] + 1] = i
                    newl[STEPS.NEWL_TERMS + newl[0]] = ob[k, O_F0]
                    newl[0] += 1
            elif kind == E.OB_GRANT:
                LG._note_vote(ws, G, i, ob[k, O_F0], ob[k, O_F0 + 1], now)
            elif kind == E.OB_TRANSFER or kind == E.OB_TSTART:
                LG.transfer_note(ws, G, S, i, now)
            elif kind == OB_COMMIT:
                M.on_commit_advanced(C, ws, G, S, i, ob[k, O_F0], ob[k, O_F0 + 1], ob[k, O_F0 + 2], ob[k, O_F0 + 3],
                                     ob[k, O_F0 + 4], now)
            elif kind == OB_DROPPED:
                LG.on_entries_dropped(C, ws, G, S, i, ob[k, O_F0], ob[k, O_F0 + 1], now)
            elif kind == OB_RESULT:
                M.on_append_result(C, ws, G, S, i, ob[k, O_F0], ob[k, O_F0 + 1], ob[k, O_F0 + 2], now)
            elif kind == OB_CLIENT:
                ws[W_APPENDS] += 1
    # RPL-1/3 on the push replies the node's entry handler sent, with the ghost as the step leaves it
    for k in range(oc[0]):
        if ob[k, 0] == E.OT_RESPOND and ob[k, O_MK] == MK_PUSH_RESP and ob[k, RP_SENT] == 1:
            ws[W_RPL] |= R.push_reply(ws, G, S, i, L.mb_(S), ob[k, P.mcol(0)], ob[k, P.mcol(1)], ob[k, RP_TYPE],
                                      ob[k, RP_LEADER], ob[k, RP_HAS], ob[k, RP_EIDX], ob[k, RP_ETERM],
                                      ob[k, RP_EPOS], ob[k, RP_ESIZE], ob[k, RP_EBODY], now)
    return nobs


# =====================================================================================
# world.init, and a node coming up
# =====================================================================================


@njit(cache=True)
def reset(C, down, S, alive, fl, rp, cut, sn, rwake, slk, vi, lmp, lcache):
    """core.world.init(cfg) in place over arrays a previous history used (or fresh ones)."""
    G = S
    ws = L.ws_(S)
    n = C[E.C_N]
    nt = C[C_NT]
    java = C[E.C_JAVA] == 1
    stagger = C[E.C_STAGGER] if java else 0
    # the index- and term-keyed ghost tables, up to what the last history used
    top = min(ws[W_MAXIDX] + 1, L.g_gc(G).shape[0]) if ws[W_STEPS] > 0 else L.g_gc(G).shape[0]
    for index in range(top):
        L.g_gc(G)[index, 0] = 0
        L.g_gxn(G)[index] = 0
        L.g_gan(G)[index] = 0
        L.g_gcnt(G)[index] = 0
    ttop = min(ws[W_TOPTERM] + 1, L.g_elected(G).shape[0]) if ws[W_STEPS] > 0 else L.g_elected(G).shape[0]
    for t in range(ttop):
        L.g_elected(G)[t] = 0
        L.g_regressed(G)[t] = -1
    for c in range(L.g_gres(G).shape[0]):
        L.g_gres(G)[c] = 0
    LG.reset(ws, G)
    rq = L.rq_(S)
    for p in range(rq.shape[0]):
        rq[p, RQ_ON] = 0
    for k in range(ws.shape[0]):
        ws[k] = 0
    ws[W_SETTLED] = -1
    ws[W_SETTLED_T] = -1
    ws[W_NEXT_ID] = 1
    ws[W_CALM_AT] = -1
    ws[W_LAST_FAULT] = -1
    ws[W_FIRST_ACK] = -1
    ws[W_MAXTERM] = -1
    ws[W_TOPTERM] = -1
    md = L.md_(S)
    for i in range(nt):
        alive[i] = 0 if (down >> i) & 1 else 1
        sn[i] = 0
        if alive[i] == 1:
            ws[W_FRESH] |= 1 << i
        for j in range(nt):
            cut[i, j] = 0
    for i in range(n):
        md[i, MD_DIRTY] = BIG
        md[i, MD_BCHG] = 0
        N.boot_server(C, S, i, 0, 0, -1, -1, -1, False)
        for j in range(n):
            lmp[i, j] = -1
    for c in range(nt - n):
        CL.boot_client(C, S, c, 0, False)
    for i in range(nt):
        rwake[i] = _wake_of(C, S, i)
        _slack(C, S, sn, rwake, slk, i, java, stagger)
    for k in range(lcache.shape[0]):
        lcache[k] = 0
    lcache[0] = -1
    lcache[6] = -1
    for p in range(vi.shape[0]):
        for f in range(vi.shape[1]):
            vi[p, f] = 0
        vi[p, 0] = -1


@njit(cache=True, inline='always')
def _leader_up(S, alive, n):
    """The first live server that leads (world._leaders), -1: none."""
    nd = L.nd_(S)
    for j in range(n):
        if alive[j] == 1 and nd[j, E.ROLE] == E.LEADER:
            return j
    return -1


@njit(cache=True)
def _up(C, S, alive, sn, rwake, slk, j, now, java, stagger):
    """core.transitions._up: node j starts again from what survived its crash, its threads now."""
    n = C[E.C_N]
    nd = L.nd_(S)
    if j < n:
        N.boot_server(C, S, j, now, nd[j, E.TERM], nd[j, E.VOTE], nd[j, E.LEI], nd[j, E.LET], True)
    else:
        CL.boot_client(C, S, j - n, now, True)
    alive[j] = 1
    sn[j] = now
    L.ws_(S)[W_FRESH] |= 1 << j
    rwake[j] = _wake_of(C, S, j)
    _slack(C, S, sn, rwake, slk, j, java, stagger)
