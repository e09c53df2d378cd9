"""The leader elector: mirrors reference_impl/election/leader_elector.py.

Role changes, votes, heart beats and the vote round, as the reference's DLedgerLeaderElector does them, over
one member's row of the state table."""

from __future__ import annotations

from numba import njit

from histories.fast.core import outputs as core_outputs
from histories.fast.core import table as core_table
from histories.fast.election import layout, member_state
from histories.fast.election.layout import (
    C_HEART_BEAT_TIME_INTERVAL_MS,
    C_MAINTAINER_SLEEP_MS,
    C_MAX_HEART_BEAT_LEAK,
    C_MAX_TAKE_LEADERSHIP_VOTE_INTERVAL_MS,
    C_MAX_VOTE_INTERVAL_MS,
    C_MIN_TAKE_LEADERSHIP_VOTE_INTERVAL_MS,
    C_MIN_VOTE_INTERVAL_MS,
    C_PEERS,
    C_PREFERRED_LEADERS,
    C_STEP_DOWN_ON_HIGHER_TERM,
    CANDIDATE,
    CTX_HEART_BEAT,
    CTX_VOTE,
    CURR_TERM,
    CURR_VOTE_FOR,
    EXPIRED_TERM,
    FOLLOWER,
    HEART_BEAT_REQUEST,
    INCONSISTENT_LEADER,
    INTERNAL_ERROR,
    KNOWN_MAX_TERM_IN_GROUP,
    LAST_LEADER_HEART_BEAT_TIME,
    LAST_PARSE_RESULT,
    LAST_SEND_HEART_BEAT_TIME,
    LAST_SUCC_HEART_BEAT_TIME,
    LEADER,
    LEADER_ID,
    LEADERSHIP_TRANSFER_RESPONSE,
    LEDGER_END_INDEX,
    LEDGER_END_TERM,
    MEMBER_ROUND_SEQ,
    NEED_INCREASE_TERM_IMMEDIATELY,
    NETWORK_ERROR,
    NEXT_LOOP_MS,
    NEXT_TIME_TO_REQUEST_VOTE,
    OBS_FOLLOWER_TIMEOUT,
    OBS_LEADER_STEP_DOWN,
    OBS_ROLE_CHANGED,
    OBS_VOTE_GRANTED,
    OBS_VOTE_PARSED,
    OUTPUT_COLUMNS,
    PASSED,
    REVOTE_IMMEDIATELY,
    ROLE,
    ROUND_ACCEPTED_NUM,
    ROUND_ALL_NUM,
    ROUND_ALREADY_HAS_LEADER,
    ROUND_BIGGER_LEDGER_NUM,
    ROUND_DEADLINE,
    ROUND_HEART_BEAT,
    ROUND_INCONSIST_LEADER,
    ROUND_KIND,
    ROUND_KNOWN_MAX_TERM_IN_GROUP,
    ROUND_MAX_TERM,
    ROUND_NOT_READY_NUM,
    ROUND_RELEASED_AT,
    ROUND_SEQ,
    ROUND_SUCC_NUM,
    ROUND_TERM,
    ROUND_VALID_NUM,
    ROUND_VOTE,
    SUCCESS,
    TAKE_LEADERSHIP,
    TAKE_LEADERSHIP_FAILED,
    TAKE_LEADERSHIP_RPC,
    TAKE_LEADERSHIP_WAITING_FOR_INDEX,
    TERM_NOT_READY,
    TERM_TO_TAKE_LEADERSHIP,
    TRANSFEREE,
    UNEXPECTED_MEMBER,
    UNKNOWN_MEMBER,
    V_ACCEPT,
    V_REJECT_ALREADY_HAS_LEADER,
    V_REJECT_ALREADY_VOTED,
    VOTE_START,
    VOTE_START_LEDGER_END_INDEX,
    VOTE_START_LEDGER_END_TERM,
    VOTE_START_TERM,
    V_REJECT_EXPIRED_LEDGER_TERM,
    V_REJECT_EXPIRED_VOTE_TERM,
    V_REJECT_SMALL_LEDGER_END_INDEX,
    V_REJECT_TAKING_LEADERSHIP,
    V_REJECT_TERM_NOT_READY,
    V_REJECT_TERM_SMALL_THAN_LEDGER,
    V_REJECT_UNEXPECTED_LEADER,
    V_REJECT_UNKNOWN_LEADER,
    V_UNKNOWN,
    VOTE_LATCH_BASE_MS,
    VOTE_REQUEST,
    WAIT_TO_REVOTE,
    WAIT_TO_VOTE_NEXT,
)


@njit(cache=True)
def take_leadership_task_check(S, i, term, role):
    """leader_elector.take_leadership_task_check"""
    members = layout.members(S)
    if members[i, TERM_TO_TAKE_LEADERSHIP] == -1 or members[i, TAKE_LEADERSHIP] == 0 or members[i, TAKE_LEADERSHIP_WAITING_FOR_INDEX] == 1:
        return
    target = members[i, TERM_TO_TAKE_LEADERSHIP]
    if term > target:
        code = EXPIRED_TERM
    elif term == target:
        if role == LEADER:
            code = SUCCESS
        elif role == FOLLOWER:
            code = TAKE_LEADERSHIP_FAILED
        else:
            return
    else:
        code = TAKE_LEADERSHIP_FAILED if role == FOLLOWER else INTERNAL_ERROR
    rpc = members[i, TAKE_LEADERSHIP_RPC]
    members[i, TERM_TO_TAKE_LEADERSHIP] = -1
    member_state.clear_take_leadership(S, i)
    core_outputs.push_respond(S, rpc, LEADERSHIP_TRANSFER_RESPONSE, code, term)


@njit(cache=True)
def handle_role_change(S, i, term, role):
    """leader_elector.handle_role_change"""
    members = layout.members(S)
    take_leadership_task_check(S, i, term, role)
    core_outputs.push_observation(S, OBS_ROLE_CHANGED, term, role, members[i, LEADER_ID])


@njit(cache=True)
def change_role_to_leader(S, i, term):
    config = core_table.config(S)
    members = layout.members(S)
    peers_live = layout.peers_live(S)
    if members[i, CURR_TERM] != term:
        return
    members[i, ROLE] = LEADER
    members[i, LEADER_ID] = i
    for j in range(config[C_PEERS]):
        peers_live[i, j] = -1
    members[i, LAST_SEND_HEART_BEAT_TIME] = -1
    handle_role_change(S, i, term, LEADER)


@njit(cache=True)
def change_role_to_candidate(S, i, term):
    members = layout.members(S)
    if term < members[i, CURR_TERM]:
        return
    members[i, ROLE] = CANDIDATE
    members[i, LEADER_ID] = -1
    members[i, TRANSFEREE] = -1
    if term > members[i, KNOWN_MAX_TERM_IN_GROUP]:
        members[i, KNOWN_MAX_TERM_IN_GROUP] = term
    handle_role_change(S, i, term, CANDIDATE)


@njit(cache=True)
def change_role_to_follower(S, i, term, leader, now):
    members = layout.members(S)
    members[i, LAST_PARSE_RESULT] = WAIT_TO_REVOTE
    members[i, ROLE] = FOLLOWER
    members[i, LEADER_ID] = leader
    members[i, TRANSFEREE] = -1
    members[i, LAST_LEADER_HEART_BEAT_TIME] = now
    handle_role_change(S, i, term, FOLLOWER)


@njit(cache=True)
def is_taking_leadership(S, i):
    config = core_table.config(S)
    members = layout.members(S)
    self_preferred = layout.self_preferred(S)
    return config[C_PREFERRED_LEADERS] == 1 and members[i, TERM_TO_TAKE_LEADERSHIP] == members[i, CURR_TERM] and self_preferred[i] == 1


@njit(cache=True)
def handle_vote(S, i, candidate, term, ledger_end_index, ledger_end_term, self_vote):
    """leader_elector.handle_vote -> (reply term, vote_result)"""
    config = core_table.config(S)
    members = layout.members(S)
    curr = members[i, CURR_TERM]
    if candidate < 0 or candidate >= config[C_PEERS]:
        return curr, V_REJECT_UNKNOWN_LEADER
    if not self_vote and candidate == i:
        return curr, V_REJECT_UNEXPECTED_LEADER
    if ledger_end_term < members[i, LEDGER_END_TERM]:
        return curr, V_REJECT_EXPIRED_LEDGER_TERM
    if ledger_end_term == members[i, LEDGER_END_TERM] and ledger_end_index < members[i, LEDGER_END_INDEX]:
        return curr, V_REJECT_SMALL_LEDGER_END_INDEX
    if term < curr:
        return curr, V_REJECT_EXPIRED_VOTE_TERM
    if term == curr:
        if members[i, CURR_VOTE_FOR] >= 0 and members[i, CURR_VOTE_FOR] != candidate:
            if members[i, LEADER_ID] >= 0:
                return curr, V_REJECT_ALREADY_HAS_LEADER
            return curr, V_REJECT_ALREADY_VOTED
    else:
        change_role_to_candidate(S, i, term)
        members[i, NEED_INCREASE_TERM_IMMEDIATELY] = 1
        return curr, V_REJECT_TERM_NOT_READY
    if term < members[i, LEDGER_END_TERM]:
        return members[i, LEDGER_END_TERM], V_REJECT_TERM_SMALL_THAN_LEDGER
    if (not self_vote and is_taking_leadership(S, i) and ledger_end_term == members[i, LEDGER_END_TERM]
            and members[i, LEDGER_END_INDEX] >= ledger_end_index):
        return curr, V_REJECT_TAKING_LEADERSHIP
    members[i, CURR_VOTE_FOR] = candidate
    core_outputs.push_observation(S, OBS_VOTE_GRANTED, members[i, CURR_TERM], candidate, 0)
    return curr, V_ACCEPT


@njit(cache=True)
def handle_heart_beat(S, i, leader, term, now):
    """leader_elector.handle_heart_beat -> (code, reply term)"""
    config = core_table.config(S)
    members = layout.members(S)
    if leader < 0 or leader >= config[C_PEERS]:
        return UNKNOWN_MEMBER, members[i, CURR_TERM]
    if leader == i:
        return UNEXPECTED_MEMBER, members[i, CURR_TERM]
    if term < members[i, CURR_TERM]:
        return EXPIRED_TERM, members[i, CURR_TERM]
    if term == members[i, CURR_TERM]:
        if leader == members[i, LEADER_ID]:
            members[i, LAST_LEADER_HEART_BEAT_TIME] = now
            return SUCCESS, -1
        if members[i, LEADER_ID] < 0:
            change_role_to_follower(S, i, term, leader, now)
            return SUCCESS, -1
        return INCONSISTENT_LEADER, -1
    change_role_to_candidate(S, i, term)
    members[i, NEED_INCREASE_TERM_IMMEDIATELY] = 1
    return TERM_NOT_READY, -1


@njit(cache=True)
def get_next_time_to_request_vote(S, i, now, draw):
    config = core_table.config(S)
    if is_taking_leadership(S, i):
        lo = config[C_MIN_TAKE_LEADERSHIP_VOTE_INTERVAL_MS]
        hi = config[C_MAX_TAKE_LEADERSHIP_VOTE_INTERVAL_MS]
    else:
        lo = config[C_MIN_VOTE_INTERVAL_MS]
        hi = config[C_MAX_VOTE_INTERVAL_MS]
    return now + lo + member_state.rand_int(draw, hi - lo)


@njit(cache=True)
def send_heartbeats(S, i, now):
    """leader_elector.send_heartbeats (after maintain_as_leader set last_send_heart_beat_time)"""
    config = core_table.config(S)
    members = layout.members(S)
    seq = members[i, MEMBER_ROUND_SEQ] + 1
    for p in range(config[C_PEERS]):
        if p != i:
            core_outputs.push_send(S, p, HEART_BEAT_REQUEST, members[i, LEADER_ID], members[i, CURR_TERM], 0, 0, 0, CTX_HEART_BEAT, seq, 0, 0)
    members[i, ROUND_KIND] = ROUND_HEART_BEAT
    members[i, ROUND_SEQ] = seq
    members[i, ROUND_TERM] = members[i, CURR_TERM]
    members[i, ROUND_DEADLINE] = now + config[C_HEART_BEAT_TIME_INTERVAL_MS]
    members[i, ROUND_ALL_NUM] = 1
    members[i, ROUND_SUCC_NUM] = 1
    members[i, ROUND_NOT_READY_NUM] = 0
    members[i, ROUND_MAX_TERM] = -1
    members[i, ROUND_INCONSIST_LEADER] = 0
    members[i, ROUND_RELEASED_AT] = -1
    members[i, ROUND_KNOWN_MAX_TERM_IN_GROUP] = 0
    members[i, ROUND_VALID_NUM] = 0
    members[i, ROUND_ACCEPTED_NUM] = 0
    members[i, ROUND_BIGGER_LEDGER_NUM] = 0
    members[i, ROUND_ALREADY_HAS_LEADER] = 0
    members[i, MEMBER_ROUND_SEQ] = seq


@njit(cache=True)
def on_heart_beat_response(S, i, seq, peer, has_resp, code, reply_term, now):
    """leader_elector.on_heart_beat_response"""
    config = core_table.config(S)
    members = layout.members(S)
    peers_live = layout.peers_live(S)
    if not has_resp:
        code = NETWORK_ERROR
    peers_live[i, peer] = 1 if code != NETWORK_ERROR else 0
    if members[i, ROUND_KIND] != ROUND_HEART_BEAT or members[i, ROUND_SEQ] != seq:
        return
    if code == SUCCESS:
        members[i, ROUND_SUCC_NUM] += 1
    elif code == EXPIRED_TERM:
        members[i, ROUND_MAX_TERM] = reply_term
    elif code == INCONSISTENT_LEADER:
        members[i, ROUND_INCONSIST_LEADER] = 1
    elif code == TERM_NOT_READY:
        members[i, ROUND_NOT_READY_NUM] += 1
    members[i, ROUND_ALL_NUM] += 1
    if members[i, ROUND_RELEASED_AT] < 0 and (member_state.is_quorum(S, members[i, ROUND_SUCC_NUM]) or member_state.is_quorum(S, members[i, ROUND_SUCC_NUM] + members[i, ROUND_NOT_READY_NUM])
                            or members[i, ROUND_ALL_NUM] == config[C_PEERS]):
        members[i, ROUND_RELEASED_AT] = now


@njit(cache=True)
def finish_heart_beat_round(S, i, now):
    """leader_elector.finish_heart_beat_round"""
    config = core_table.config(S)
    members = layout.members(S)
    succ = members[i, ROUND_SUCC_NUM]
    not_ready = members[i, ROUND_NOT_READY_NUM]
    round_term = members[i, ROUND_TERM]
    max_term = members[i, ROUND_MAX_TERM]
    inconsistent_leader = members[i, ROUND_INCONSIST_LEADER]
    members[i, ROUND_KIND] = 0
    if config[C_STEP_DOWN_ON_HIGHER_TERM] == 1 and max_term > round_term:
        # DLedger 0.4.0 looks at the highest term before it counts the quorum
        step_down(S, i, max_term, round_term, 0)
        return
    if member_state.is_quorum(S, succ):
        members[i, LAST_SUCC_HEART_BEAT_TIME] = now
        return
    if member_state.is_quorum(S, succ + not_ready):
        members[i, LAST_SEND_HEART_BEAT_TIME] = -1
        return
    if max_term > round_term:
        reason = 0
        term = max_term
    elif inconsistent_leader == 1:
        reason = 1
        term = round_term
    elif member_state.elapsed(now, members[i, LAST_SUCC_HEART_BEAT_TIME]) > config[C_MAX_HEART_BEAT_LEAK] * config[C_HEART_BEAT_TIME_INTERVAL_MS]:
        reason = 2
        term = round_term
    else:
        return
    step_down(S, i, term, round_term, reason)


@njit(cache=True)
def step_down(S, i, term, round_term, reason):
    """The end of finish_heart_beat_round: change_role_to_candidate(term), a LeaderStepDown
    first among the outputs if a leader stepped down."""
    members = layout.members(S)
    outputs = core_table.outputs(S)
    output_count = core_table.output_count(S)
    was_leader = members[i, ROLE] == LEADER
    k = output_count[0]
    change_role_to_candidate(S, i, term)
    if was_leader and members[i, ROLE] == CANDIDATE:
        # LeaderStepDown comes first among the outputs; observations take no ids, so
        # only their count matters to the world (the meter), and the log records counts.
        core_outputs.push_observation(S, OBS_LEADER_STEP_DOWN, round_term, reason, 0)
        if output_count[0] > k + 1:
            last = output_count[0] - 1
            for f in range(OUTPUT_COLUMNS):
                tmp = outputs[last, f]
                for r in range(last, k, -1):
                    outputs[r, f] = outputs[r - 1, f]
                outputs[k, f] = tmp


@njit(cache=True, inline='always')
def maintain_as_follower(S, i, now):
    config = core_table.config(S)
    members = layout.members(S)
    since = member_state.elapsed(now, members[i, LAST_LEADER_HEART_BEAT_TIME])
    if since <= 2 * config[C_HEART_BEAT_TIME_INTERVAL_MS]:
        return
    if since <= config[C_MAX_HEART_BEAT_LEAK] * config[C_HEART_BEAT_TIME_INTERVAL_MS]:
        return
    core_outputs.push_observation(S, OBS_FOLLOWER_TIMEOUT, members[i, CURR_TERM], members[i, LEADER_ID], 0)
    change_role_to_candidate(S, i, members[i, CURR_TERM])


@njit(cache=True)
def on_vote_response(S, i, seq, has_resp, result, reply_term, now):
    """leader_elector.on_vote_response"""
    config = core_table.config(S)
    members = layout.members(S)
    if members[i, ROUND_KIND] != ROUND_VOTE or members[i, ROUND_SEQ] != seq:
        return
    if not has_resp:
        result = V_UNKNOWN
    if result != V_UNKNOWN:
        members[i, ROUND_VALID_NUM] += 1
    if result == V_ACCEPT:
        members[i, ROUND_ACCEPTED_NUM] += 1
    elif result == V_REJECT_ALREADY_HAS_LEADER:
        members[i, ROUND_ALREADY_HAS_LEADER] = 1
    elif result == V_REJECT_TERM_SMALL_THAN_LEDGER or result == V_REJECT_EXPIRED_VOTE_TERM:
        if reply_term > members[i, ROUND_KNOWN_MAX_TERM_IN_GROUP]:
            members[i, ROUND_KNOWN_MAX_TERM_IN_GROUP] = reply_term
    elif result == V_REJECT_EXPIRED_LEDGER_TERM or result == V_REJECT_SMALL_LEDGER_END_INDEX:
        members[i, ROUND_BIGGER_LEDGER_NUM] += 1
    elif result == V_REJECT_TERM_NOT_READY:
        members[i, ROUND_NOT_READY_NUM] += 1
    members[i, ROUND_ALL_NUM] += 1
    if members[i, ROUND_RELEASED_AT] < 0 and (members[i, ROUND_ALREADY_HAS_LEADER] == 1 or member_state.is_quorum(S, members[i, ROUND_ACCEPTED_NUM])
                            or member_state.is_quorum(S, members[i, ROUND_ACCEPTED_NUM] + members[i, ROUND_NOT_READY_NUM]) or members[i, ROUND_ALL_NUM] == config[C_PEERS]):
        members[i, ROUND_RELEASED_AT] = now


@njit(cache=True)
def vote_for_quorum_responses(S, i, now, draw):
    """leader_elector.vote_for_quorum_responses: the requests (the self-vote first handled
    here) carry the term and ledger ends VOTE_START read under the lock, the member's own
    when there is none."""
    config = core_table.config(S)
    members = layout.members(S)
    if members[i, VOTE_START] == 1:
        term = members[i, VOTE_START_TERM]
        ledger_end_index = members[i, VOTE_START_LEDGER_END_INDEX]
        ledger_end_term = members[i, VOTE_START_LEDGER_END_TERM]
    else:
        term = members[i, CURR_TERM]
        ledger_end_index = members[i, LEDGER_END_INDEX]
        ledger_end_term = members[i, LEDGER_END_TERM]
    member_state.clear_vote_start(S, i)
    seq = members[i, MEMBER_ROUND_SEQ] + 1
    members[i, MEMBER_ROUND_SEQ] = seq
    members[i, ROUND_KIND] = ROUND_VOTE
    members[i, ROUND_SEQ] = seq
    members[i, ROUND_TERM] = term
    members[i, ROUND_KNOWN_MAX_TERM_IN_GROUP] = term
    members[i, ROUND_DEADLINE] = now + VOTE_LATCH_BASE_MS + member_state.rand_int(draw, config[C_MAX_VOTE_INTERVAL_MS])
    members[i, ROUND_ALL_NUM] = 0
    members[i, ROUND_VALID_NUM] = 0
    members[i, ROUND_ACCEPTED_NUM] = 0
    members[i, ROUND_NOT_READY_NUM] = 0
    members[i, ROUND_BIGGER_LEDGER_NUM] = 0
    members[i, ROUND_ALREADY_HAS_LEADER] = 0
    members[i, ROUND_RELEASED_AT] = -1
    members[i, ROUND_SUCC_NUM] = 0
    members[i, ROUND_MAX_TERM] = 0
    members[i, ROUND_INCONSIST_LEADER] = 0
    for p in range(config[C_PEERS]):
        if p == i:
            reply_term, result = handle_vote(S, i, i, term, ledger_end_index, ledger_end_term, True)
            on_vote_response(S, i, seq, True, result, reply_term, now)
        else:
            core_outputs.push_send(S, p, VOTE_REQUEST, i, term, ledger_end_index, ledger_end_term, 0, CTX_VOTE, seq, 0, 0)


@njit(cache=True)
def maintain_as_candidate(S, i, now, draw):
    """leader_elector.maintain_as_candidate: the part under the MemberState lock; the vote
    requests are the thread's next step (VOTE_START, server.on_tick)."""
    members = layout.members(S)
    if now < members[i, NEXT_TIME_TO_REQUEST_VOTE] and members[i, NEED_INCREASE_TERM_IMMEDIATELY] == 0:
        return
    if members[i, ROLE] != CANDIDATE:
        return
    if members[i, LAST_PARSE_RESULT] == WAIT_TO_VOTE_NEXT or members[i, NEED_INCREASE_TERM_IMMEDIATELY] == 1:
        # MemberState#nextTerm
        if members[i, KNOWN_MAX_TERM_IN_GROUP] > members[i, CURR_TERM]:
            members[i, CURR_TERM] = members[i, KNOWN_MAX_TERM_IN_GROUP]
        else:
            members[i, CURR_TERM] += 1
        members[i, CURR_VOTE_FOR] = -1
        members[i, LAST_PARSE_RESULT] = WAIT_TO_REVOTE
    if members[i, NEED_INCREASE_TERM_IMMEDIATELY] == 1:
        members[i, NEXT_TIME_TO_REQUEST_VOTE] = get_next_time_to_request_vote(S, i, now, draw)
        members[i, NEED_INCREASE_TERM_IMMEDIATELY] = 0
        return
    members[i, VOTE_START] = 1
    members[i, VOTE_START_TERM] = members[i, CURR_TERM]
    members[i, VOTE_START_LEDGER_END_INDEX] = members[i, LEDGER_END_INDEX]
    members[i, VOTE_START_LEDGER_END_TERM] = members[i, LEDGER_END_TERM]


@njit(cache=True)
def finish_vote_round(S, i, now, draw):
    """leader_elector.finish_vote_round"""
    config = core_table.config(S)
    members = layout.members(S)
    round_term = members[i, ROUND_TERM]
    known_max_term = members[i, ROUND_KNOWN_MAX_TERM_IN_GROUP]
    has_leader = members[i, ROUND_ALREADY_HAS_LEADER]
    valid = members[i, ROUND_VALID_NUM]
    bigger_ledger = members[i, ROUND_BIGGER_LEDGER_NUM]
    accepted = members[i, ROUND_ACCEPTED_NUM]
    not_ready = members[i, ROUND_NOT_READY_NUM]
    members[i, ROUND_KIND] = 0
    nxt = members[i, NEXT_TIME_TO_REQUEST_VOTE]
    if known_max_term > round_term:
        result = WAIT_TO_VOTE_NEXT
        nxt = get_next_time_to_request_vote(S, i, now, draw)
        members[i, NEXT_TIME_TO_REQUEST_VOTE] = nxt
        change_role_to_candidate(S, i, known_max_term)
    elif has_leader == 1:
        result = WAIT_TO_REVOTE
        nxt = get_next_time_to_request_vote(S, i, now, draw) + config[C_HEART_BEAT_TIME_INTERVAL_MS] * config[C_MAX_HEART_BEAT_LEAK]
    elif not member_state.is_quorum(S, valid):
        result = WAIT_TO_REVOTE
        nxt = get_next_time_to_request_vote(S, i, now, draw)
    elif not member_state.is_quorum(S, valid - bigger_ledger):
        result = WAIT_TO_REVOTE
        nxt = get_next_time_to_request_vote(S, i, now, draw) + config[C_MAX_VOTE_INTERVAL_MS]
    elif member_state.is_quorum(S, accepted):
        result = PASSED
    elif member_state.is_quorum(S, accepted + not_ready):
        result = REVOTE_IMMEDIATELY
    else:
        result = WAIT_TO_VOTE_NEXT
        nxt = get_next_time_to_request_vote(S, i, now, draw)
    members[i, NEXT_TIME_TO_REQUEST_VOTE] = nxt
    members[i, LAST_PARSE_RESULT] = result
    core_outputs.push_observation(S, OBS_VOTE_PARSED, round_term, result, accepted)
    if result == PASSED:
        change_role_to_leader(S, i, round_term)


@njit(cache=True)
def maintain_state(S, i, now, draw):
    config = core_table.config(S)
    members = layout.members(S)
    members[i, NEXT_LOOP_MS] = now + config[C_MAINTAINER_SLEEP_MS]
    role = members[i, ROLE]
    if role == LEADER:
        if member_state.elapsed(now, members[i, LAST_SEND_HEART_BEAT_TIME]) <= config[C_HEART_BEAT_TIME_INTERVAL_MS]:
            return
        members[i, LAST_SEND_HEART_BEAT_TIME] = now
        send_heartbeats(S, i, now)
    elif role == FOLLOWER:
        maintain_as_follower(S, i, now)
    else:
        maintain_as_candidate(S, i, now, draw)
