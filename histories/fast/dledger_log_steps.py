"""The dledger_log twin's step properties (spec/dledger_log.py LOG-2/3/4/6, spec/replies.py
RPL-*): what a step did against what it began with. A LOG violation that may still be
recorded asks for its cause (dledger_log_monitor.request); RPL verdicts have none."""

from __future__ import annotations

from numba import njit

import histories.fast.dledger_log_layout as L
import histories.fast.dledger_log_monitor as M
import histories.fast.dledger_log_replies as R
import histories.fast.dledger_log_store as st
import histories.fast.election as E
from histories.fast.dledger_log_layout import (
    BIG,
    MD_DIRTY,
    MD_OEND,
    MK_PUSH_REQ,
    P_LOG2,
    P_LOG3,
    P_LOG4,
    P_LOG6,
    S_COMMITTED,
    W_NACKED,
    W_NCOMMITTED,
)

NEWL_TERMS = 32  # newl: [0] count, [1..] the step's new leaders, [NEWL_TERMS..] their terms


@njit(cache=True, inline='always')
def _snapshot(S, i):
    """Server i's election fields before the step that RPL-* read (spec.replies reads `before`)."""
    nd = L.nd_(S)
    mb = L.mb_(S)
    for f in (E.TERM, E.VOTE, E.LEADER_ID, E.LLHB, E.LEI, E.LET, E.TTTL):
        mb[f] = nd[i, f]


@njit(cache=True)
def _request_reply(C, S, i, mk, m, rk, msg, self_pref):
    """RPL-1/2/3 on the reply server i gave at once to a delivered request (spec.replies)."""
    mb = L.mb_(S)
    if mk == E.MK_HB_REQ:
        return E._heart_beat_reply(L.nd_(S), i, m[0], m[1], msg[0], mb[E.TERM], mb[E.VOTE], mb[E.LEADER_ID],
                                   mb[E.LLHB])
    if mk == E.MK_VOTE_REQ:
        return E._vote_reply(C, L.nd_(S), i, m[0], m[1], m[2], m[3], self_pref, msg[1], mb[E.TERM], mb[E.VOTE],
                             mb[E.LEADER_ID], mb[E.LEI], mb[E.LET], mb[E.TTTL])
    if mk == MK_PUSH_REQ:
        return R.immediate_push_reply(S, i, msg[0], m)
    return 0


@njit(cache=True)
def _leader_lacks(ws, G, S, vi, p, newl, acked):
    """spec.dledger_log._leader_lacks for the step's new leaders: the first whose log does not
    hold a committed (LOG-2) or acknowledged (LOG-6) entry; its cause is asked for."""
    if not M.may_record(vi, p):
        return
    sto = L.sto_(S)
    ent = L.ent_(S)
    for q in range(newl[0]):
        i = newl[1 + q]
        if acked:
            order = L.g_gao(G)
            cnt = ws[W_NACKED]
        else:
            order = L.g_gco(G)
            cnt = ws[W_NCOMMITTED]
        for r in range(cnt):
            index = order[r]
            kk = st.offset_of(sto, i, index)
            ok = False
            if acked:
                ga = L.g_ga(G)
                if kk >= 0:
                    for s in range(L.g_gan(G)[index]):
                        if st.holds(ent, i, kk, ga[index, s, 0], ga[index, s, 1], ga[index, s, 2], ga[index, s, 3]):
                            ok = True
            else:
                gc = L.g_gc(G)
                ok = kk >= 0 and st.holds(ent, i, kk, gc[index, 1], gc[index, 2], gc[index, 3], gc[index, 4])
            if not ok:
                M.request(G, p, i, newl[NEWL_TERMS + q], 0)
                return


@njit(cache=True)
def _check_steps(C, ws, G, S, vi, alive, oalive, ocommit, newl, nobs):
    """The step properties, in the catalogue's order; a violation that may still be recorded
    asks for its cause (M.request), which the caller computes from the world of this step."""
    n = C[E.C_N]
    md = L.md_(S)
    sto = L.sto_(S)
    if nobs > 0 and newl[0] > 0:
        _leader_lacks(ws, G, S, vi, P_LOG2, newl, False)
    if ws[W_NCOMMITTED] > 0 and M.may_record(vi, P_LOG3):
        for i in range(n):
            if md[i, MD_DIRTY] == BIG or md[i, MD_OEND] < 0:
                continue
            cnt, _, _ = M.dropped_first(S, i, True, G)
            if cnt > 0:
                M.request(G, P_LOG3, i, 0, 0)
                break
    if M.may_record(vi, P_LOG4):
        for i in range(n):
            old = ocommit[i]
            new = sto[i, S_COMMITTED]
            if oalive[i] == 1 and alive[i] == 1 and new < old:
                M.request(G, P_LOG4, i, new, old)
                break
    if nobs > 0 and newl[0] > 0:
        _leader_lacks(ws, G, S, vi, P_LOG6, newl, True)


