"""A DLedger server's election side: mirrors reference_impl/election/server.py.

When a server wakes, what its tick does (the maintainer loop, the vote round), how it handles requests and
responses, and what a crash loses. Test mutants hook in here only through `mutant`, which is None in
production (see mutants.py)."""

from __future__ import annotations

from numba import njit

from histories.fast.core import outputs as core_outputs
from histories.fast.core import table as core_table
from histories.fast.election import layout, leader_elector, leader_elector_transfer, member_state, mutants
from histories.fast.election.layout import (
    C_CHECK_PREFERRED_LEADER_INTERVAL_MS,
    C_ENABLE_LEADER_ELECTOR,
    C_HEART_BEAT_TIME_INTERVAL_MS,
    C_LEADERSHIP_TRANSFER_WAIT_TIMEOUT,
    C_MAINTAINER_SLEEP_MS,
    C_MAX_HEART_BEAT_LEAK,
    C_PREFERRED_LEADERS,
    C_STEP_DOWN_ON_HIGHER_TERM,
    CTX_HEART_BEAT,
    CTX_VOTE,
    CURR_TERM,
    CURR_VOTE_FOR,
    FOLLOWER,
    LAST_LEADER_HEART_BEAT_TIME,
    LAST_SEND_HEART_BEAT_TIME,
    LEADER,
    LEADERSHIP_TRANSFER_RESPONSE,
    LEDGER_END_INDEX,
    LEDGER_END_TERM,
    NEED_INCREASE_TERM_IMMEDIATELY,
    NEXT_CHECK_PREFERRED_MS,
    NEXT_LOOP_MS,
    NEXT_TIME_TO_REQUEST_VOTE,
    ROLE,
    ROUND_DEADLINE,
    ROUND_HEART_BEAT,
    ROUND_KIND,
    ROUND_RELEASED_AT,
    ROUND_VOTE,
    TAKE_LEADERSHIP,
    TAKE_LEADERSHIP_LEDGER_INDEX,
    TAKE_LEADERSHIP_RPC,
    TAKE_LEADERSHIP_STARTED,
    TAKE_LEADERSHIP_WAITING_FOR_INDEX,
    TRANSFER_IN_FLIGHT,
    VOTE_RESULT_WAIT_MS,
    VOTE_START,
    VOTE_START_LEDGER_END_INDEX,
    VOTE_START_LEDGER_END_TERM,
    VOTE_START_TERM,
)


@njit(cache=True, inline='always')
def due(since, interval):
    return since + interval + 1 if since >= 0 else 0


@njit(cache=True, inline='always')
def maintainer_due(S, i):
    """server.maintainer_due"""
    config = core_table.config(S)
    members = layout.members(S)
    role = members[i, ROLE]
    if role == LEADER:
        return due(members[i, LAST_SEND_HEART_BEAT_TIME], config[C_HEART_BEAT_TIME_INTERVAL_MS])
    if role == FOLLOWER:
        return due(members[i, LAST_LEADER_HEART_BEAT_TIME], max(2, config[C_MAX_HEART_BEAT_LEAK]) * config[C_HEART_BEAT_TIME_INTERVAL_MS])
    if members[i, NEED_INCREASE_TERM_IMMEDIATELY] == 1:
        return 0
    return members[i, NEXT_TIME_TO_REQUEST_VOTE]


@njit(cache=True, inline='always')
def wake_slack(S, i, since, wake):
    """server.wake_slack (`wake`: this node's wake_at)"""
    config = core_table.config(S)
    members = layout.members(S)
    if members[i, ROUND_KIND] != 0 or members[i, VOTE_START] == 1 or config[C_ENABLE_LEADER_ELECTOR] == 0:
        return 0
    maintainer = maintainer_due(S, i)
    due = max(maintainer, since)
    if due <= members[i, NEXT_LOOP_MS] or wake < max(maintainer, members[i, NEXT_LOOP_MS]):
        return 0
    return config[C_MAINTAINER_SLEEP_MS]


@njit(cache=True, inline='always')
def round_due(S, i):
    """server.round_due: a round's latch released, else its await timed out; DLedger 0.4.0
    sleeps VOTE_RESULT_WAIT_MS after a heartbeat latch (answers in those ms still count)."""
    config = core_table.config(S)
    members = layout.members(S)
    rel = members[i, ROUND_RELEASED_AT]
    if rel < 0:
        return members[i, ROUND_DEADLINE]
    if config[C_STEP_DOWN_ON_HIGHER_TERM] == 1 and members[i, ROUND_KIND] == ROUND_HEART_BEAT:
        return min(rel + VOTE_RESULT_WAIT_MS, members[i, ROUND_DEADLINE])
    return rel


@njit(cache=True)
def wake_at(S, i):
    """server.wake_at"""
    config = core_table.config(S)
    members = layout.members(S)
    wake = -1
    if members[i, ROUND_KIND] != 0:
        wake = round_due(S, i)
    elif members[i, VOTE_START] == 1:
        wake = 0  # the same loop iteration goes on at once, once the lock is released
    elif config[C_ENABLE_LEADER_ELECTOR] == 1:
        wake = max(maintainer_due(S, i), members[i, NEXT_LOOP_MS])
    if config[C_PREFERRED_LEADERS] == 1 and members[i, ROLE] == LEADER and members[i, TRANSFER_IN_FLIGHT] == 0:
        wake = members[i, NEXT_CHECK_PREFERRED_MS] if wake < 0 else min(wake, members[i, NEXT_CHECK_PREFERRED_MS])
    if members[i, TAKE_LEADERSHIP] == 1 and members[i, TAKE_LEADERSHIP_WAITING_FOR_INDEX] == 1:
        due = members[i, TAKE_LEADERSHIP_STARTED] + config[C_LEADERSHIP_TRANSFER_WAIT_TIMEOUT] + 1 if members[i, TAKE_LEADERSHIP_LEDGER_INDEX] > members[i, LEDGER_END_INDEX] else 0
        wake = due if wake < 0 else min(wake, due)
    return wake


@njit(cache=True)
def on_tick(S, i, now, draw, mutant):
    """server.on_tick: the transferee's wait, the preferred-leader check, the end of a round,
    the vote requests after maintainAsCandidate's locked part, or the StateMaintainer's loop (`mutant`: None, or a test mutant's number: mutants)."""
    config = core_table.config(S)
    members = layout.members(S)
    if members[i, TAKE_LEADERSHIP] == 1 and members[i, TAKE_LEADERSHIP_WAITING_FOR_INDEX] == 1:
        rpc = members[i, TAKE_LEADERSHIP_RPC]
        has, code, t = leader_elector_transfer.take_leadership_wait_step(S, i, now)
        if has:
            core_outputs.push_respond(S, rpc, LEADERSHIP_TRANSFER_RESPONSE, code, t)
    if (config[C_PREFERRED_LEADERS] == 1 and members[i, TRANSFER_IN_FLIGHT] == 0
            and now >= members[i, NEXT_CHECK_PREFERRED_MS]):
        period = config[C_CHECK_PREFERRED_LEADER_INTERVAL_MS]
        members[i, NEXT_CHECK_PREFERRED_MS] = now + period - (now - members[i, NEXT_CHECK_PREFERRED_MS]) % period
        leader_elector_transfer.check_preferred_leader(S, i)
    if members[i, ROUND_KIND] != 0:
        if now >= round_due(S, i):
            if members[i, ROUND_KIND] == ROUND_VOTE:
                if mutant is not None:
                    mutants.before_finish_vote_round(S, i, mutant)
                leader_elector.finish_vote_round(S, i, now, draw)
            else:
                if mutant is not None:
                    mutants.before_finish_heart_beat_round(S, i, mutant, now)
                leader_elector.finish_heart_beat_round(S, i, now)
            members[i, NEXT_LOOP_MS] = now + config[C_MAINTAINER_SLEEP_MS]
    elif members[i, VOTE_START] == 1:
        if mutant is not None:  # the self-vote is a handleVote too, and may follow another's grant now
            mutants.before_handle_vote(S, i, mutant, i, members[i, VOTE_START_TERM],
                                       members[i, VOTE_START_LEDGER_END_INDEX], members[i, VOTE_START_LEDGER_END_TERM],
                                       True, leader_elector.is_taking_leadership(S, i))
        leader_elector.vote_for_quorum_responses(S, i, now, draw)
    elif config[C_ENABLE_LEADER_ELECTOR] == 1 and now >= members[i, NEXT_LOOP_MS]:
        if mutant is not None:
            mutants.before_maintain_state(S, i, mutant, now, leader_elector.is_taking_leadership(S, i))
        leader_elector.maintain_state(S, i, now, draw)


@njit(cache=True, inline='always')
def on_vote_request(S, i, candidate, term, ledger_end_index, ledger_end_term, mutant):
    """server.on_request of a VoteRequest: handleVote -> (reply term, vote_result)."""
    if mutant is not None:
        mutants.before_handle_vote(S, i, mutant, candidate, term, ledger_end_index, ledger_end_term, False,
                                   leader_elector.is_taking_leadership(S, i))
    return leader_elector.handle_vote(S, i, candidate, term, ledger_end_index, ledger_end_term, False)


@njit(cache=True, inline='always')
def on_heart_beat_request(S, i, leader, term, now, mutant):
    """server.on_request of a HeartBeatRequest: handleHeartBeat -> (code, reply term)."""
    if mutant is not None:
        answered, code, reply_term = mutants.handle_heart_beat(S, i, mutant, leader, term, now)
        if answered:
            return code, reply_term
        kept = mutants.keeps_heart_beat_time(S, i, mutant)
        code, reply_term = leader_elector.handle_heart_beat(S, i, leader, term, now)
        mutants.after_heart_beat(S, i, kept)
        return code, reply_term
    return leader_elector.handle_heart_beat(S, i, leader, term, now)


@njit(cache=True, inline='always')
def on_response(S, i, context, context_1, context_2, context_3, peer, has_response, fields_0, fields_1, now):
    """server.on_response: the answer to one of the member's RPCs (`has_response` False: it failed)."""
    if context == CTX_HEART_BEAT:
        leader_elector.on_heart_beat_response(S, i, context_1, peer, has_response, fields_0, fields_1, now)
    elif context == CTX_VOTE:
        leader_elector.on_vote_response(S, i, context_1, has_response, fields_1, fields_0, now)
    else:
        leader_elector_transfer.on_leadership_transfer_response(S, i, context_1, context_2, context_3, has_response,
                                                                fields_0, fields_1)


@njit(cache=True, inline='always')
def crash(S, i, lose_term_file, mutant):
    """server.crash: the member restarts from its term file (gone with an OS crash or a lost
    disk: term 0, no vote); nothing else survives. Its loop runs at once when it is up."""
    members = layout.members(S)
    if mutant is not None:
        lose_term_file = mutants.crash_loses_term_file(mutant, lose_term_file)
    term = 0 if lose_term_file else members[i, CURR_TERM]
    vote = -1 if lose_term_file else members[i, CURR_VOTE_FOR]
    member_state.boot(S, i, 0, term, vote, members[i, LEDGER_END_INDEX], members[i, LEDGER_END_TERM], 0)
    members[i, NEXT_LOOP_MS] = 0
    if mutant is not None:
        mutants.after_crash(S, i, mutant)
