"""The dledger_log twin's network (reference_impl/core/network.py): sends with their RPCs
and timeouts, replies, removal, a node going down, over the kernel's flight (fl) and
open-RPC (rp) arrays."""

from __future__ import annotations

from numba import njit

import histories.fast.dledger_log_pusher as P
import histories.fast.election as E
from histories.fast.dledger_log_layout import (
    CK_APPEND,
    CLIENT_RPC_TIMEOUT_MS,
    E_DST,
    E_ID,
    E_M0,
    E_MK,
    E_REPLY,
    E_RPC,
    E_SENT,
    E_SRC,
    MK_APPEND_REQ,
    MK_PUSH_REQ,
    NMF,
    O_A,
    O_C1,
    O_CK,
    O_MK,
    OVERFLOW_FLIGHT,
    OVERFLOW_RPCS,
    R_C1,
    R_C2,
    R_C3,
    R_CK,
    R_DEADLINE,
    R_ID,
    R_REQ,
    R_RESP,
    R_WINDOW,
    W_NEXT_ID,
    W_NF,
    W_NR,
    W_STOP,
)

SCAN_GRACE_MS = 1000  # core.network.SCAN_GRACE_MS
SCAN_PERIOD_MS = 1000  # core.network.SCAN_PERIOD_MS


@njit(cache=True, inline='always')
def _nfields(mk):
    """How many message fields a kind carries (the others are 0 in an envelope)."""
    if mk == MK_PUSH_REQ:
        return NMF
    if mk == E.MK_VOTE_REQ:
        return 4
    if mk == E.MK_VOTE_RESP:
        return 3
    if mk == MK_APPEND_REQ:
        return 1
    if mk == E.MK_HB_REQ or mk == E.MK_HB_RESP or mk == E.MK_LT_RESP:
        return 2
    return 5  # LT_REQ, APPEND_RESP, PUSH_RESP


# =====================================================================================
# the network (core.network)
# =====================================================================================


@njit(cache=True)
def _net_send(C, ws, fl, rp, now, src, ob, k):
    """network.send of output row k: every dledger_log Send is an RPC; DLedger's are
    invokeAsync (scanned), the client's append is not."""
    nf = ws[W_NF]
    nr = ws[W_NR]
    if nf >= fl.shape[0]:
        ws[W_STOP] = OVERFLOW_FLIGHT
        return
    if nr >= rp.shape[0]:
        ws[W_STOP] = OVERFLOW_RPCS
        return
    nid = ws[W_NEXT_ID]
    dst = ob[k, O_A]
    mk = ob[k, O_MK]
    fl[nf, E_ID] = nid
    fl[nf, E_SRC] = src
    fl[nf, E_DST] = dst
    fl[nf, E_SENT] = now
    fl[nf, E_RPC] = nid
    fl[nf, E_REPLY] = 0
    fl[nf, E_MK] = mk
    nm = _nfields(mk)
    for j in range(NMF):
        fl[nf, E_M0 + j] = ob[k, P.mcol(j)] if j < nm else 0
    ck = ob[k, O_CK]
    rp[nr, R_ID] = nid
    rp[nr, R_REQ] = src
    rp[nr, R_RESP] = dst
    if ck == CK_APPEND:
        rp[nr, R_DEADLINE] = now + CLIENT_RPC_TIMEOUT_MS
        rp[nr, R_WINDOW] = 0
    else:
        rp[nr, R_DEADLINE] = now + C[E.C_RPCTO] + SCAN_GRACE_MS
        rp[nr, R_WINDOW] = SCAN_PERIOD_MS
    rp[nr, R_CK] = ck
    rp[nr, R_C1] = ob[k, O_C1]
    rp[nr, R_C2] = ob[k, O_C1 + 1]
    rp[nr, R_C3] = ob[k, O_C1 + 2]
    ws[W_NF] = nf + 1
    ws[W_NR] = nr + 1
    ws[W_NEXT_ID] = nid + 1


@njit(cache=True, inline='always')
def _find_rpc(ws, rp, rpc_id):
    for r in range(ws[W_NR]):
        if rp[r, R_ID] == rpc_id:
            return r
    return -1


@njit(cache=True)
def _net_reply(ws, fl, rp, now, rpc_id, mk, msg):
    """network.reply: a no-op (no id taken, False) when the RPC has closed. msg: the fields m0.."""
    r = _find_rpc(ws, rp, rpc_id)
    if r < 0:
        return False
    nf = ws[W_NF]
    if nf >= fl.shape[0]:
        ws[W_STOP] = OVERFLOW_FLIGHT
        return False
    nid = ws[W_NEXT_ID]
    fl[nf, E_ID] = nid
    fl[nf, E_SRC] = rp[r, R_RESP]
    fl[nf, E_DST] = rp[r, R_REQ]
    fl[nf, E_SENT] = now
    fl[nf, E_RPC] = rpc_id
    fl[nf, E_REPLY] = 1
    fl[nf, E_MK] = mk
    nm = _nfields(mk)
    for j in range(NMF):
        fl[nf, E_M0 + j] = msg[j] if j < nm else 0
    ws[W_NF] = nf + 1
    ws[W_NEXT_ID] = nid + 1
    return True
