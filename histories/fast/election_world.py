"""The election twin's world around the nodes: the network (reference_impl/core/network.py:
envelopes and open RPCs in id order, replies, refused and reset connections), the ghost
variables (reference_impl/election/world.py) and the properties' helpers
(spec/election.py: ELE-1..5, HB-1, HB-2, ELE-L and their expected causes, with the
Monitor's rules of spec/properties.py; the evidence and liveness ghost fields are in
`election_ghost`, RPL-1/2's guards in `election_replies`).
"""

from __future__ import annotations

from numba import njit

from histories.fast.election_ghost import (
    _ele1_expected,
    _ele2_expected,
    _follow_note,
    _note_led,
    _note_vote,
    _transfer_note,
)
from histories.fast.election_layout import *  # noqa: F403 - the columns and enums, by the reference's names
from histories.fast.election_node import _is_quorum

# =====================================================================================
# the network (reference_impl.core.network)
# =====================================================================================


@njit(cache=True, inline='always')
def _net_send(ws, fl, rp, now, src, ob, k, timeout):
    """network.send of output row k (every election Send is a scanned RPC: DLedger's
    invokeAsync vote, heartbeat and leadership-transfer requests)."""
    nf = ws[W_NF]
    nr = ws[W_NR]
    if nf >= fl.shape[0]:
        ws[W_STOP] = OVERFLOW_FLIGHT
        return
    if nr >= rp.shape[0]:
        ws[W_STOP] = OVERFLOW_RPCS
        return
    nid = ws[W_NEXT_ID]
    fl[nf, E_ID] = nid
    fl[nf, E_SRC] = src
    fl[nf, E_DST] = ob[k, 1]
    fl[nf, E_SENT] = now
    fl[nf, E_RPC] = nid
    fl[nf, E_REPLY] = 0
    fl[nf, E_MK] = ob[k, 2]
    for f in range(5):
        fl[nf, E_M0 + f] = ob[k, 3 + f]
    rp[nr, R_ID] = nid
    rp[nr, R_REQ] = src
    rp[nr, R_RESP] = ob[k, 1]
    rp[nr, R_DEADLINE] = now + timeout + SCAN_GRACE_MS
    rp[nr, R_WINDOW] = SCAN_PERIOD_MS
    rp[nr, R_CK] = ob[k, 8]
    rp[nr, R_C1] = ob[k, 9]
    rp[nr, R_C2] = ob[k, 10]
    rp[nr, R_C3] = ob[k, 11]
    ws[W_NF] = nf + 1
    ws[W_NR] = nr + 1
    ws[W_NEXT_ID] = nid + 1


@njit(cache=True, inline='always')
def _find_rpc(ws, rp, rpc_id):
    nr = ws[W_NR]
    for r in range(nr):
        if rp[r, R_ID] == rpc_id:
            return r
    return -1


@njit(cache=True, inline='always')
def _net_reply(ws, fl, rp, now, rpc_id, mk, m0, m1, m2):
    """network.reply: a no-op (no id taken) when the RPC has closed. Whether a reply went out."""
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
    fl[nf, E_M0] = m0
    fl[nf, E_M0 + 1] = m1
    fl[nf, E_M0 + 2] = m2
    fl[nf, E_M0 + 3] = 0
    fl[nf, E_M0 + 4] = 0
    ws[W_NF] = nf + 1
    ws[W_NEXT_ID] = nid + 1
    return True


# The network's row operations serve the dledger_log twin too: they read only the columns
# both layouts share, and copy whole rows of the width the caller names (its EF or RF, a
# constant once inlined: a loop over the array's own shape ran the election kernel a third
# slower).


@njit(cache=True, inline='always')
def _remove_env(ws, fl, k, ef):
    nf = ws[W_NF]
    for r in range(k, nf - 1):
        for f in range(ef):
            fl[r, f] = fl[r + 1, f]
    ws[W_NF] = nf - 1


@njit(cache=True, inline='always')
def _close_rpc(ws, rp, r, rf):
    nr = ws[W_NR]
    for q in range(r, nr - 1):
        for f in range(rf):
            rp[q, f] = rp[q + 1, f]
    ws[W_NR] = nr - 1


@njit(cache=True)
def _node_down(ws, fl, rp, node, now):
    """network.node_down with reset (an election or dledger_log node that dies resets its connections)."""
    nf = ws[W_NF]
    w = 0
    for r in range(nf):
        if fl[r, E_SRC] != node and fl[r, E_DST] != node:
            if w != r:
                for f in range(fl.shape[1]):
                    fl[w, f] = fl[r, f]
            w += 1
    ws[W_NF] = w
    nr = ws[W_NR]
    w = 0
    for r in range(nr):
        if rp[r, R_REQ] != node:
            if w != r:
                for f in range(rp.shape[1]):
                    rp[w, f] = rp[r, f]
            if rp[w, R_RESP] == node and rp[w, R_DEADLINE] > now:
                rp[w, R_DEADLINE] = now
                rp[w, R_WINDOW] = 0
            w += 1
    ws[W_NR] = w


# =====================================================================================
# ghost variables (reference_impl.election.world) and the monitor (spec/election.py, spec/properties.py)
# =====================================================================================


@njit(cache=True, inline='always')
def _popcount(x):
    c = 0
    while x:
        x &= x - 1
        c += 1
    return c


@njit(cache=True, inline='always')
def _settled(C, nd, alive):
    """election world.settled"""
    n = C[C_N]
    for i in range(n):
        if alive[i] == 1 and nd[i, ROLE] == LEADER:
            followers = 0
            for f in range(n):
                if (alive[f] == 1 and nd[f, ROLE] == FOLLOWER and nd[f, LEADER_ID] == i
                        and nd[f, TERM] == nd[i, TERM]):
                    followers += 1
            if _is_quorum(C, followers + 1):
                return True
    return False


@njit(cache=True)
def _update_cut_since(C, alive, cut, cs, now):
    """election world.cut_since (the ghost seeing a fault or Calm)."""
    n = C[C_N]
    for i in range(n):
        reach = False
        if alive[i] == 1:
            peers = 0
            for j in range(n):
                if j != i and alive[j] == 1 and cut[i, j] == 0 and cut[j, i] == 0:
                    peers += 1
            reach = _is_quorum(C, peers + 1)
        if alive[i] == 1 and not reach:
            if cs[i] < 0:
                cs[i] = now
        else:
            cs[i] = -1


@njit(cache=True)
def _ele4_term(C, elected, grants, t):
    """spec.election.ele4 restricted to term t."""
    n = C[C_N]
    leaders = elected[t]
    for ld in range(n):
        if leaders >> ld & 1:
            voters = 0
            for v in range(n):
                if grants[t, v] >> ld & 1:
                    voters += 1
            if not _is_quorum(C, voters):
                return False
    return True


@njit(cache=True, inline='always')
def _record(vi, p, step, now, cause):
    vi[p, V_STEP] = step
    vi[p, V_T] = now
    vi[p, V_CAUSE] = cause


@njit(cache=True)
def _record_expected(C, ws, vi, nt, vl, lv, elected, grants, p, step, now, event_cause):
    """Monitor._record for a property with expected_when: keep the first violation unless a
    later one has no known cause while the recorded one had one. ELE-1/2's evidence changes
    only with a note (W_SEQ), so it is computed once per ghost version."""
    if vi[p, V_STEP] >= 0 and vi[p, V_CAUSE] == 0:
        return
    if p == P_ELE3:
        cause = event_cause
    else:
        if vi[p, V_CVER] == ws[W_SEQ]:
            cause = vi[p, V_CMASK]
        else:
            if p == P_ELE1:
                cause = 1 if _ele1_expected(C, ws, nt, vl, lv, elected) else 0
            else:
                cause = 1 if _ele2_expected(C, ws, nt, vl, lv, grants) else 0
            vi[p, V_CVER] = ws[W_SEQ]
            vi[p, V_CMASK] = cause
    if vi[p, V_STEP] >= 0 and cause != 0:
        return
    _record(vi, p, step, now, cause)
    vi[p, V_SEQ] = ws[W_SEQ]


@njit(cache=True, inline='always')
def _ghost_obs(C, ws, nd, alive, cut, elected, grants, vi, nt, vl, lv, i, ob, k, touched):
    """election world.ghost_update for one observation of node i (and HB-1, which reads them)."""
    kind = ob[k, 1]
    now = ws[W_NOW]
    if kind == OB_ROLE:
        term = ob[k, 2]
        role = ob[k, 3]
        if role == LEADER:
            if term >= C[C_TCAP] or term < 0:
                ws[W_STOP] = OVERFLOW_TERMS
                return
            _note_led(ws, nt, i, term, now)
        _follow_note(C, ws, nd, alive, lv, now)
        _transfer_note(C, ws, nd, lv, i, now)
        if role == LEADER:
            bit = 1 << i
            if elected[term] & bit == 0:
                elected[term] |= bit
                if term > ws[W_MAXTERM_SEEN]:
                    ws[W_MAXTERM_SEEN] = term
                if _popcount(elected[term]) == 2:
                    ws[W_ELE1_BAD] += 1
                touched[0] = min(touched[0], term) if touched[0] >= 0 else term
                touched[1] = max(touched[1], term)
        if ws[W_CALM] == 1 and ws[W_SETTLED] < 0 and role != CANDIDATE and _settled(C, nd, alive):
            ws[W_SETTLED] = now
    elif kind == OB_GRANT:
        term = ob[k, 2]
        if term >= C[C_TCAP] or term < 0:
            ws[W_STOP] = OVERFLOW_TERMS
            return
        if term > ws[W_MAXTERM_SEEN]:
            ws[W_MAXTERM_SEEN] = term
        _note_vote(ws, nt, vl, i, term, ob[k, 3], now)
        bit = 1 << ob[k, 3]
        if grants[term, i] & bit == 0:
            grants[term, i] |= bit
            if _popcount(grants[term, i]) == 2:
                ws[W_ELE2_BAD] += 1
    elif kind == OB_TRANSFER or kind == OB_TSTART:
        _transfer_note(C, ws, nd, lv, i, now)
    elif kind == OB_FTO:
        # HB-1 (spec.election.hb1): node i timed out on leader j; j's state, the links and
        # the fault history are the same before and after this step (only i changed).
        j = ob[k, 3]
        if j >= 0 and vi[P_HB1, V_STEP] < 0 and now - ws[W_LAST_FAULT] > C[C_HB1Q]:
            if alive[j] == 1 and nd[j, ROLE] == LEADER and nd[j, TERM] == ob[k, 2] and cut[j, i] == 0:
                touched[2] = 1


@njit(cache=True, inline='always')
def _route(C, ws, nd, alive, cut, fl, rp, elected, grants, vi, nt, vl, lv, i, now, ob, oc, touched):
    """transitions.route: Sends and Responds to the network in order, then the observations to
    the ghost (they read the node states after the whole transition). Returns how many
    observations the step produced."""
    nobs = 0
    for k in range(oc[0]):
        t = ob[k, 0]
        if t == OT_SEND:
            _net_send(ws, fl, rp, now, i, ob, k, C[C_RPCTO])
        elif t == OT_RESPOND:
            _net_reply(ws, fl, rp, now, ob[k, 1], ob[k, 2], ob[k, 3], ob[k, 4], 0)
    for k in range(oc[0]):
        if ob[k, 0] == OT_OBS:
            nobs += 1
            _ghost_obs(C, ws, nd, alive, cut, elected, grants, vi, nt, vl, lv, i, ob, k, touched)
    return nobs


@njit(cache=True, inline='always')
def _check_liveness(C, ws, lv, vi, step, now):
    """ELE-L, LIVE-1, LIVE-2, LIVE-3 (spec/election.py: ele_l, live1, live2, live3), bounded state
    properties with no expected cause: the first violation of each is kept. LIVE-2 and LIVE-3
    hold unless the earliest open transfer / straggler is past its bound, so they read the
    one number the ghost keeps (a loop over the nodes at every step cost 15% of the kernel)."""
    first = ws[W_TRANS_MIN]
    if first >= 0 and now - first > C[C_LIVE2B] and vi[P_LIVE2, V_STEP] < 0:
        _record(vi, P_LIVE2, step, now, 0)
    if ws[W_CALM] == 0:
        return
    calm_at = ws[W_CALM_AT]
    if C[C_ELECTOR] == 1:
        if vi[P_ELEL, V_STEP] < 0 and ws[W_SETTLED] < 0 and now - calm_at > C[C_ELELB]:
            _record(vi, P_ELEL, step, now, 0)
        if (vi[P_LIVE1, V_STEP] < 0 and ws[W_AGREED] == 0
                and now - max(ws[W_AGREED_SINCE], calm_at) > C[C_LIVE1B]):
            _record(vi, P_LIVE1, step, now, 0)
    first = ws[W_STRAG_MIN]
    if first >= 0 and now - max(first, calm_at) > C[C_LIVE3B] and vi[P_LIVE3, V_STEP] < 0:
        _record(vi, P_LIVE3, step, now, 0)


@njit(cache=True, inline='always')
def _fault(ws):
    ws[W_LAST_FAULT] = ws[W_NOW]
