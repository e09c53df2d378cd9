"""The election twin's leadership transfers: DLedgerLeaderElector#handleLeadershipTransfer and
its response, the transferee's take-leadership wait, DLedgerServer#handleLeadershipTransfer
and the preferred-leader check (reference_impl/election/leader_elector.py), over `nd` rows.
"""

from __future__ import annotations

from numba import njit

from histories.fast.election_layout import *  # noqa: F403 - the columns and enums, by the reference's names
from histories.fast.election_node import (
    _change_role_to_candidate,
    _clear_take_leadership,
    _push_obs,
    _push_respond,
    _push_send,
)


@njit(cache=True)
def _handle_leadership_transfer(C, nd, i, term, transferee, admin_rpc, ob, oc):
    """leader_elector.handle_leadership_transfer -> (has reply, code, term)"""
    if nd[i, TERM] != term:
        return True, INCONSISTENT_TERM, nd[i, TERM]
    if nd[i, ROLE] != LEADER:
        return True, NOT_LEADER, nd[i, TERM]
    if nd[i, TRANSFEREE] >= 0:
        return True, LEADER_TRANSFERRING, nd[i, TERM]
    nd[i, TRANSFEREE] = transferee
    nd[i, TIF] = 1
    _push_send(ob, oc, transferee, MK_LT_REQ, term, i, transferee, nd[i, LEI], nd[i, LEADER_ID],
               CK_TRANSFER, term, transferee, admin_rpc)
    _push_obs(ob, oc, OB_TSTART, transferee, term, 0)
    return False, 0, 0


@njit(cache=True)
def _on_leadership_transfer_response(nd, i, term, transferee, admin_rpc, has_resp, code, rterm, ob, oc):
    """leader_elector.on_leadership_transfer_response"""
    if not has_resp:
        code = NETWORK_ERROR
    nd[i, TIF] = 0
    if (code != SUCCESS or (nd[i, TERM] == term and nd[i, TRANSFEREE] >= 0)) and nd[i, ROLE] == LEADER:
        nd[i, TRANSFEREE] = -1
    _push_obs(ob, oc, OB_TRANSFER, transferee, code, 0)
    if admin_rpc != 0:
        if has_resp:
            _push_respond(ob, oc, admin_rpc, MK_LT_RESP, code, rterm)
        else:
            _push_respond(ob, oc, admin_rpc, MK_LT_RESP, NETWORK_ERROR, term)


@njit(cache=True)
def _handle_take_leadership(C, nd, i, now, ob, oc):
    """leader_elector.handle_take_leadership -> (has reply, code, term)"""
    if nd[i, TERM] != nd[i, TL_TERM]:
        _clear_take_leadership(nd, i)
        return True, INCONSISTENT_TERM, nd[i, TERM]
    target = nd[i, TL_TERM] + 1
    nd[i, TTTL] = target
    nd[i, TL_WAITING] = 0
    _change_role_to_candidate(nd, i, target, ob, oc)
    nd[i, NEEDINC] = 1
    return False, 0, 0


@njit(cache=True)
def _take_leadership_wait_step(C, nd, i, now, ob, oc):
    """leader_elector.take_leadership_wait_step -> (has reply, code, term)"""
    if nd[i, TL_IDX] - nd[i, LEI] > 0:
        if now - nd[i, TL_STARTED] > C[C_LTWT]:
            t = nd[i, TL_TERM]
            _clear_take_leadership(nd, i)
            return True, TAKE_LEADERSHIP_FAILED, t
        return False, 0, 0
    return _handle_take_leadership(C, nd, i, now, ob, oc)


@njit(cache=True)
def _server_handle_leadership_transfer(C, nd, wmk, i, term, transfer_id, transferee, take_idx, leader, rpc, now,
                                       ob, oc):
    """leader_elector.server_handle_leadership_transfer -> (has reply, code, term). The world only
    addresses requests to their remote_id in the configured group, so those guards pass."""
    n = C[C_N]
    if transfer_id == i:
        if transferee < 0 or transferee >= n:
            return True, UNKNOWN_MEMBER, term
        if nd[i, TERM] != term:
            return True, INCONSISTENT_TERM, term
        if nd[i, ROLE] != LEADER:
            return True, NOT_LEADER, term
        if nd[i, LEI] - wmk[i, transferee] >= C[C_MAXTWI]:
            return True, FALL_BEHIND_TOO_MUCH, term
        return _handle_leadership_transfer(C, nd, i, term, transferee, rpc, ob, oc)
    if transferee == i:
        if transfer_id != nd[i, LEADER_ID]:
            return True, INCONSISTENT_LEADER, term
        nd[i, TLW] = 1
        nd[i, TL_RPC] = rpc
        nd[i, TL_TERM] = term
        nd[i, TL_IDX] = take_idx
        nd[i, TL_STARTED] = now
        nd[i, TL_WAITING] = 1
        nd[i, TL_FROM] = transfer_id
        nd[i, TL_LEADER] = leader
        return _take_leadership_wait_step(C, nd, i, now, ob, oc)
    return True, UNEXPECTED_ARGUMENT, nd[i, TERM]


@njit(cache=True)
def _check_preferred_leader(C, nd, live, wmk, i, pref, self_pref, ob, oc):
    """leader_elector.check_preferred_leader; `pref`: the preferred ids that are peers, in order."""
    if nd[i, ROLE] != LEADER or C[C_PREF] == 0 or nd[i, TRANSFEREE] >= 0:
        return
    if self_pref[i] == 1:
        return
    best = -1
    min_fb = 0
    for k in range(pref.shape[0]):
        p = pref[k]
        if live[i, p] != 1:
            continue
        fb = nd[i, LEI] - wmk[i, p]
        if best < 0 or fb < min_fb:
            best = p
            min_fb = fb
    if best < 0:
        return
    if min_fb >= C[C_MAXTWI]:
        return
    _handle_leadership_transfer(C, nd, i, nd[i, TERM], best, 0, ob, oc)
