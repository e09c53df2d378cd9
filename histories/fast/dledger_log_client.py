"""The appending client of the dledger_log fast world (reference_impl/dledger_log/world.py's
LogClient: client_wake_at, client_on_tick, client_on_response, its boot, crash and
restart), over arrays. Layouts: histories/fast/dledger_log_layout.py.
"""

from __future__ import annotations

from numba import njit

import histories.fast.dledger_log_layout as L
import histories.fast.election as E
from histories.fast.dledger_log_layout import (
    C_CIV,
    C_FORCED,
    CK_APPEND,
    CL_LEADER,
    CL_NEXT,
    CL_SEQ,
    CL_WAITING,
    MK_APPEND_REQ,
    NOT_LEADER,
    O_A,
    O_C1,
    O_CK,
    O_F0,
    O_MK,
    OB_CLIENT,
    SUCCESS,
)
from histories.fast.dledger_log_pusher import mcol, out_row

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
