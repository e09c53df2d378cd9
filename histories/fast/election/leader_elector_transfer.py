"""Leadership transfer: mirrors the transfer part of reference_impl/election/leader_elector.py.

Transfer requests, take-leadership waits and the preferred-leader check."""

from __future__ import annotations

from numba import njit

from histories.fast.core import outputs as core_outputs
from histories.fast.core import table as core_table
from histories.fast.election import layout, leader_elector, member_state
from histories.fast.election.layout import (
    C_LEADERSHIP_TRANSFER_WAIT_TIMEOUT,
    C_MAX_LEADERSHIP_TRANSFER_WAIT_INDEX,
    C_PEERS,
    C_PREFERRED_LEADERS,
    CTX_TRANSFER,
    CURR_TERM,
    FALL_BEHIND_TOO_MUCH,
    INCONSISTENT_LEADER,
    INCONSISTENT_TERM,
    LEADER,
    LEADER_ID,
    LEADER_TRANSFERRING,
    LEADERSHIP_TRANSFER_REQUEST,
    LEADERSHIP_TRANSFER_RESPONSE,
    LEDGER_END_INDEX,
    NEED_INCREASE_TERM_IMMEDIATELY,
    NETWORK_ERROR,
    NOT_LEADER,
    OBS_TRANSFER_DONE,
    OBS_TRANSFER_STARTED,
    ROLE,
    SUCCESS,
    TAKE_LEADERSHIP,
    TAKE_LEADERSHIP_FAILED,
    TAKE_LEADERSHIP_LEADER_ID,
    TAKE_LEADERSHIP_LEDGER_INDEX,
    TAKE_LEADERSHIP_RPC,
    TAKE_LEADERSHIP_STARTED,
    TAKE_LEADERSHIP_TERM,
    TAKE_LEADERSHIP_TRANSFER_ID,
    TAKE_LEADERSHIP_WAITING_FOR_INDEX,
    TERM_TO_TAKE_LEADERSHIP,
    TRANSFER_IN_FLIGHT,
    TRANSFEREE,
    UNEXPECTED_ARGUMENT,
    UNKNOWN_MEMBER,
)


@njit(cache=True)
def handle_leadership_transfer(S, i, term, transferee, admin_rpc):
    """leader_elector.handle_leadership_transfer -> (has reply, code, term)"""
    members = layout.members(S)
    if members[i, CURR_TERM] != term:
        return True, INCONSISTENT_TERM, members[i, CURR_TERM]
    if members[i, ROLE] != LEADER:
        return True, NOT_LEADER, members[i, CURR_TERM]
    if members[i, TRANSFEREE] >= 0:
        return True, LEADER_TRANSFERRING, members[i, CURR_TERM]
    members[i, TRANSFEREE] = transferee
    members[i, TRANSFER_IN_FLIGHT] = 1
    core_outputs.push_send(S, transferee, LEADERSHIP_TRANSFER_REQUEST, term, i, transferee, members[i, LEDGER_END_INDEX], members[i, LEADER_ID], CTX_TRANSFER, term, transferee, admin_rpc)
    core_outputs.push_observation(S, OBS_TRANSFER_STARTED, transferee, term, 0)
    return False, 0, 0


@njit(cache=True)
def on_leadership_transfer_response(S, i, term, transferee, admin_rpc, has_resp, code, reply_term):
    """leader_elector.on_leadership_transfer_response"""
    members = layout.members(S)
    if not has_resp:
        code = NETWORK_ERROR
    members[i, TRANSFER_IN_FLIGHT] = 0
    if (code != SUCCESS or (members[i, CURR_TERM] == term and members[i, TRANSFEREE] >= 0)) and members[i, ROLE] == LEADER:
        members[i, TRANSFEREE] = -1
    core_outputs.push_observation(S, OBS_TRANSFER_DONE, transferee, code, 0)
    if admin_rpc != 0:
        if has_resp:
            core_outputs.push_respond(S, admin_rpc, LEADERSHIP_TRANSFER_RESPONSE, code, reply_term)
        else:
            core_outputs.push_respond(S, admin_rpc, LEADERSHIP_TRANSFER_RESPONSE, NETWORK_ERROR, term)


@njit(cache=True)
def handle_take_leadership(S, i, now):
    """leader_elector.handle_take_leadership -> (has reply, code, term)"""
    members = layout.members(S)
    if members[i, CURR_TERM] != members[i, TAKE_LEADERSHIP_TERM]:
        member_state.clear_take_leadership(S, i)
        return True, INCONSISTENT_TERM, members[i, CURR_TERM]
    target = members[i, TAKE_LEADERSHIP_TERM] + 1
    members[i, TERM_TO_TAKE_LEADERSHIP] = target
    members[i, TAKE_LEADERSHIP_WAITING_FOR_INDEX] = 0
    leader_elector.change_role_to_candidate(S, i, target)
    members[i, NEED_INCREASE_TERM_IMMEDIATELY] = 1
    return False, 0, 0


@njit(cache=True)
def take_leadership_wait_step(S, i, now):
    """leader_elector.take_leadership_wait_step -> (has reply, code, term)"""
    config = core_table.config(S)
    members = layout.members(S)
    if members[i, TAKE_LEADERSHIP_LEDGER_INDEX] - members[i, LEDGER_END_INDEX] > 0:
        if now - members[i, TAKE_LEADERSHIP_STARTED] > config[C_LEADERSHIP_TRANSFER_WAIT_TIMEOUT]:
            t = members[i, TAKE_LEADERSHIP_TERM]
            member_state.clear_take_leadership(S, i)
            return True, TAKE_LEADERSHIP_FAILED, t
        return False, 0, 0
    return handle_take_leadership(S, i, now)


@njit(cache=True)
def server_handle_leadership_transfer(S, i, term, transfer_id, transferee, take_idx, leader, rpc, now):
    """leader_elector.server_handle_leadership_transfer -> (has reply, code, term). The world only
    addresses requests to their remote_id in the configured group, so those guards pass."""
    config = core_table.config(S)
    members = layout.members(S)
    water_marks = layout.water_marks(S)
    n = config[C_PEERS]
    if transfer_id == i:
        if transferee < 0 or transferee >= n:
            return True, UNKNOWN_MEMBER, term
        if members[i, CURR_TERM] != term:
            return True, INCONSISTENT_TERM, term
        if members[i, ROLE] != LEADER:
            return True, NOT_LEADER, term
        if members[i, LEDGER_END_INDEX] - water_marks[i, transferee] >= config[C_MAX_LEADERSHIP_TRANSFER_WAIT_INDEX]:
            return True, FALL_BEHIND_TOO_MUCH, term
        return handle_leadership_transfer(S, i, term, transferee, rpc)
    if transferee == i:
        if transfer_id != members[i, LEADER_ID]:
            return True, INCONSISTENT_LEADER, term
        members[i, TAKE_LEADERSHIP] = 1
        members[i, TAKE_LEADERSHIP_RPC] = rpc
        members[i, TAKE_LEADERSHIP_TERM] = term
        members[i, TAKE_LEADERSHIP_LEDGER_INDEX] = take_idx
        members[i, TAKE_LEADERSHIP_STARTED] = now
        members[i, TAKE_LEADERSHIP_WAITING_FOR_INDEX] = 1
        members[i, TAKE_LEADERSHIP_TRANSFER_ID] = transfer_id
        members[i, TAKE_LEADERSHIP_LEADER_ID] = leader
        return take_leadership_wait_step(S, i, now)
    return True, UNEXPECTED_ARGUMENT, members[i, CURR_TERM]


@njit(cache=True)
def check_preferred_leader(S, i):
    """leader_elector.check_preferred_leader; `pref`: the preferred ids that are peers, in order."""
    config = core_table.config(S)
    members = layout.members(S)
    peers_live = layout.peers_live(S)
    water_marks = layout.water_marks(S)
    preferred = layout.preferred(S)
    self_preferred = layout.self_preferred(S)
    if members[i, ROLE] != LEADER or config[C_PREFERRED_LEADERS] == 0 or members[i, TRANSFEREE] >= 0:
        return
    if self_preferred[i] == 1:
        return
    best = -1
    min_behind = 0
    for k in range(preferred.shape[0]):
        p = preferred[k]
        if peers_live[i, p] != 1:
            continue
        behind = members[i, LEDGER_END_INDEX] - water_marks[i, p]
        if best < 0 or behind < min_behind:
            best = p
            min_behind = behind
    if best < 0:
        return
    if min_behind >= config[C_MAX_LEADERSHIP_TRANSFER_WAIT_INDEX]:
        return
    handle_leadership_transfer(S, i, members[i, CURR_TERM], best, 0)
