"""The dledger_log world around its nodes (reference_impl/dledger_log/world.py): a node's wake
time and the slack of its tick (world.wake_at, core.world.since_after, schedule._wakes), a
request or a response to the node that gets it (world.on_request, world.on_response: a
server's member through the election twin's server, its log threads through this twin's),
the routing of a step's outputs to the network and its observations to the ghost
(core.transitions.route), the first live leader (world._leaders) and a node coming up
(core.transitions._up). Servers are nodes 0..n-1, clients n..
"""

from __future__ import annotations

from numba import njit

from histories.fast.core import coverage
from histories.fast.core import outputs as core_outputs
from histories.fast.core import table as core_table
from histories.fast.core.layout import (
    C_JAVA_TIMING,
    C_STAGGER_MS,
    LB_PARSE_RESULTS,
    LB_ROLES,
    O_KIND,
    O_OBSERVED,
    O_TARGET,
    OUT_OBSERVATION,
    OUT_RESPOND,
    OUT_SEND,
    W_FRESH,
)
from histories.fast.dledger_log import (
    entry_dispatcher,
    entry_handler,
    ghost,
    layout,
    monitor,
    network,
    replies,
    server,
    world_client,
)
from histories.fast.dledger_log import store as dledger_log_store
from histories.fast.dledger_log.layout import (
    APPEND_ENTRY_REQUEST,
    APPEND_ENTRY_RESPONSE,
    CTX_PUSH,
    MESSAGE_FIELDS,
    NO_INDEX,
    OBS_APPEND_RESULT,
    OBS_CLIENT_RESULT,
    OBS_COMMIT_ADVANCED,
    OBS_ENTRIES_DROPPED,
    PUSH_ENTRY_REQUEST,
    PUSH_ENTRY_RESPONSE,
    RP_ENTRY_BODY,
    RP_ENTRY_INDEX,
    RP_ENTRY_POS,
    RP_ENTRY_SIZE,
    RP_ENTRY_TERM,
    RP_HAS_ENTRY,
    RP_LEADER_ID,
    RP_SENT,
    RP_TYPE,
    RQ_ENTRY_INDEX,
    RQ_HAS_ENTRY,
    RQ_TERM,
    RQ_TYPE,
    S_BEGIN_INDEX,
    TYPE_COMMIT,
    W_APPENDS,
    W_REPLIES,
)
from histories.fast.dledger_log.monitor_steps import NEW_LEADER_TERMS
from histories.fast.election import layout as election_layout
from histories.fast.election import leader_elector_transfer as election_leader_elector_transfer
from histories.fast.election import server as election_server
from histories.fast.election.layout import (
    C_PEERS,
    CURR_TERM,
    CURR_VOTE_FOR,
    HEART_BEAT_REQUEST,
    HEART_BEAT_RESPONSE,
    LEADER,
    LEADERSHIP_TRANSFER_RESPONSE,
    LEDGER_END_INDEX,
    LEDGER_END_TERM,
    OBS_ROLE_CHANGED,
    OBS_TRANSFER_DONE,
    OBS_TRANSFER_STARTED,
    OBS_VOTE_GRANTED,
    OBS_VOTE_PARSED,
    ROLE,
    SUCCESS,
    VOTE_REQUEST,
    VOTE_RESPONSE,
)


THREAD_STRIDE = 256  # a tick event's argument: node * THREAD_STRIDE + thread


@njit(cache=True, inline='always')
def thread_count(S, j):
    """How many threads node j runs (server.thread_count)."""
    return server.thread_count(S, j)


@njit(cache=True, inline='always')
def thread_wake(S, j, k):
    """world.thread_wakes(c, n)[k]: the wake time of node j's thread k (up or down)."""
    n = core_table.config(S)[C_PEERS]
    return server.thread_wake_at(S, j, k) if j < n else world_client.client_wake_at(S, j - n)


@njit(cache=True)
def wake_of(S, j):
    """world.wake_at: the earliest of node j's threads' wake times (-1: never)."""
    wake = -1
    for k in range(thread_count(S, j)):
        t = thread_wake(S, j, k)
        if t >= 0 and (wake < 0 or t < wake):
            wake = t
    return wake


@njit(cache=True)
def set_slack(S, j):
    """The slack of each of node j's threads' next tick (schedule._wakes): the thread's own
    (server.thread_slack) under Java timing, at least the start-up stagger while the node is fresh."""
    config = core_table.config(S)
    since = layout.thread_since(S)
    wakes = layout.thread_wakes(S)
    slack = layout.thread_slack(S)
    java = config[C_JAVA_TIMING] == 1
    starting = 0
    if java and (core_table.world(S)[W_FRESH] >> j) & 1:
        starting = config[C_STAGGER_MS]
    server_node = j < config[C_PEERS]
    for k in range(thread_count(S, j)):
        w = wakes[j, k]
        if w < 0:
            slack[j, k] = 0
            continue
        thread_slack = server.thread_slack(S, j, k, since[j, k], w) if java and server_node else 0
        slack[j, k] = max(thread_slack, starting)


@njit(cache=True)
def refresh(S, j, t):
    """After node j's state changed at time t: core.world.since_after (each thread's since moves
    to t when its wake time changed), then the slack of its threads' next ticks (schedule._wakes)."""
    since = layout.thread_since(S)
    wakes = layout.thread_wakes(S)
    for k in range(thread_count(S, j)):
        new = thread_wake(S, j, k)
        if new != wakes[j, k]:
            since[j, k] = t
            wakes[j, k] = new
    set_slack(S, j)


@njit(cache=True)
def restarted(S, j, t):
    """core.world.restarted_since: every thread of node j starts at t; then its wake times and slack."""
    since = layout.thread_since(S)
    wakes = layout.thread_wakes(S)
    for k in range(thread_count(S, j)):
        since[j, k] = t
        wakes[j, k] = thread_wake(S, j, k)
    set_slack(S, j)


@njit(cache=True)
def on_request(S, i, message_kind, rpc_id, now, mutant):
    """server.on_request -> the reply's kind (0: none now), its fields in REPLY_FIELDS."""
    message = layout.message(S)
    reply_fields = layout.reply_fields(S)
    if message_kind == PUSH_ENTRY_REQUEST:
        kind, code = entry_handler.handle_push(S, i, rpc_id, now)
        if kind == 0:
            return 0
        reply_fields[0] = code
        reply_fields[1] = message[RQ_TERM]
        if kind == 1:
            store = layout.store(S)
            reply_fields[2] = NO_INDEX if message[RQ_TYPE] == TYPE_COMMIT else (message[RQ_ENTRY_INDEX] if message[RQ_HAS_ENTRY] == 1 else -1)
            reply_fields[3] = store[i, S_BEGIN_INDEX]
            reply_fields[4] = dledger_log_store.end_index(store, i)
        else:
            reply_fields[2] = NO_INDEX
            reply_fields[3] = -1
            reply_fields[4] = -1
        return PUSH_ENTRY_RESPONSE
    if message_kind == APPEND_ENTRY_REQUEST:
        has, code, index, pos, term, leader = server.handle_append(S, i, message[0], rpc_id, now)
        if not has:
            return 0
        reply_fields[0] = code
        reply_fields[1] = index
        reply_fields[2] = pos
        reply_fields[3] = term
        reply_fields[4] = leader
        return APPEND_ENTRY_RESPONSE
    role_before = election_layout.members(S)[i, ROLE]
    if message_kind == HEART_BEAT_REQUEST:
        code, reply_term = election_server.on_heart_beat_request(S, i, message[0], message[1], now, mutant)
        server.idle_on_role_change(S, i, role_before)
        reply_fields[0] = code
        reply_fields[1] = reply_term
        return HEART_BEAT_RESPONSE
    if message_kind == VOTE_REQUEST:
        reply_term, result = election_server.on_vote_request(S, i, message[0], message[1], message[2], message[3], mutant)
        server.idle_on_role_change(S, i, role_before)
        reply_fields[0] = reply_term
        reply_fields[1] = result
        reply_fields[2] = SUCCESS
        return VOTE_RESPONSE
    has, code, reply_term = election_leader_elector_transfer.server_handle_leadership_transfer(S, i, message[0], message[1], message[2], message[3], message[4], rpc_id, now)
    server.idle_on_role_change(S, i, role_before)
    if not has:
        return 0
    reply_fields[0] = code
    reply_fields[1] = reply_term
    return LEADERSHIP_TRANSFER_RESPONSE


@njit(cache=True)
def on_response(S, i, context, context_1, context_2, context_3, peer, has, now):
    """world.on_response: a server's push or election RPC, or a client's append (has False:
    the RPC failed)."""
    config = core_table.config(S)
    message = layout.message(S)
    n = config[C_PEERS]
    if i >= n:
        world_client.client_on_response(S, i - n, context_1, peer, has, message[0], message[1], message[4], now)
        return
    if context == CTX_PUSH:
        entry_dispatcher.on_push_response(S, i, context_1, context_2, context_3, has, message[0], message[1], message[2], message[3], message[4], now)
    else:
        role_before = election_layout.members(S)[i, ROLE]
        election_server.on_response(S, i, context, context_1, context_2, context_3, peer, has, message[0], message[1],
                                    now)
        server.idle_on_role_change(S, i, role_before)


@njit(cache=True)
def observed(S, k):
    """Coverage of output row k, an observation: its kind and the result codes among its values
    (the member's, an AppendResult's code, a ClientResult's code unless None)."""
    outputs = core_table.outputs(S)
    kind = outputs[k, O_TARGET]
    coverage.observation_kind(S, kind)
    if kind == OBS_ROLE_CHANGED:
        coverage.branch(S, LB_ROLES, outputs[k, O_OBSERVED + 1])
    elif kind == OBS_VOTE_PARSED:
        coverage.branch(S, LB_PARSE_RESULTS, outputs[k, O_OBSERVED + 1])
    elif kind == OBS_TRANSFER_DONE:
        coverage.code(S, outputs[k, O_OBSERVED + 1])
    elif kind == OBS_APPEND_RESULT:
        coverage.code(S, outputs[k, O_OBSERVED])
    elif kind == OBS_CLIENT_RESULT and outputs[k, O_OBSERVED + 2] != 0:
        coverage.code(S, outputs[k, O_OBSERVED + 2])


@njit(cache=True)
def route(S, i, now):
    """core.transitions.route: Sends and Responds to the network in order, then the
    observations to the ghost in order. Returns the number of observations."""
    world = core_table.world(S)
    new_leaders = layout.new_leaders(S)
    outputs = core_table.outputs(S)
    output_count = core_table.output_count(S)
    reply_fields = layout.reply_fields(S)
    for k in range(output_count[0]):
        t = outputs[k, 0]
        if t == OUT_SEND:
            network.send(S, now, i, k)
        elif t == OUT_RESPOND:
            message_kind = outputs[k, O_KIND]
            for j in range(MESSAGE_FIELDS):
                reply_fields[j] = outputs[k, core_outputs.message_column(j)]
            sent = network.reply(S, now, outputs[k, O_TARGET], message_kind)
            if message_kind == PUSH_ENTRY_RESPONSE:
                outputs[k, RP_SENT] = 1 if sent else 0
    observations = 0
    for k in range(output_count[0]):
        if outputs[k, 0] == OUT_OBSERVATION:
            observations += 1
            kind = outputs[k, O_TARGET]
            observed(S, k)
            if kind == OBS_ROLE_CHANGED:
                # ghost.update: who follows whom, the transfer clock, then Terms.led and `elected`
                ghost.follow_note(S, now)
                ghost.transfer_note(S, i, now)
                if outputs[k, O_OBSERVED + 1] == LEADER:
                    monitor.on_leader(S, i, outputs[k, O_OBSERVED], election_layout.members(S)[i, LEDGER_END_TERM], now)
                    new_leaders[new_leaders[0] + 1] = i
                    new_leaders[NEW_LEADER_TERMS + new_leaders[0]] = outputs[k, O_OBSERVED]
                    new_leaders[0] += 1
            elif kind == OBS_VOTE_GRANTED:
                ghost.note_vote(S, i, outputs[k, O_OBSERVED], outputs[k, O_OBSERVED + 1], now)
            elif kind == OBS_TRANSFER_DONE or kind == OBS_TRANSFER_STARTED:
                ghost.transfer_note(S, i, now)
            elif kind == OBS_COMMIT_ADVANCED:
                monitor.on_commit_advanced(S, i, outputs[k, O_OBSERVED], outputs[k, O_OBSERVED + 1], outputs[k, O_OBSERVED + 2], outputs[k, O_OBSERVED + 3], outputs[k, O_OBSERVED + 4], now)
            elif kind == OBS_ENTRIES_DROPPED:
                ghost.on_entries_dropped(S, i, outputs[k, O_OBSERVED], outputs[k, O_OBSERVED + 1], now)
            elif kind == OBS_APPEND_RESULT:
                monitor.on_append_result(S, i, outputs[k, O_OBSERVED], outputs[k, O_OBSERVED + 1], outputs[k, O_OBSERVED + 2], now)
            elif kind == OBS_CLIENT_RESULT:
                world[W_APPENDS] += 1
    # RPL-1/3 on the push replies the node's entry handler sent, with the ghost as the step leaves it
    for k in range(output_count[0]):
        if outputs[k, 0] == OUT_RESPOND and outputs[k, O_KIND] == PUSH_ENTRY_RESPONSE and outputs[k, RP_SENT] == 1:
            world[W_REPLIES] |= replies.push_reply(S, i, layout.member_before(S), outputs[k, core_outputs.message_column(0)], outputs[k, core_outputs.message_column(1)], outputs[k, RP_TYPE], outputs[k, RP_LEADER_ID], outputs[k, RP_HAS_ENTRY], outputs[k, RP_ENTRY_INDEX], outputs[k, RP_ENTRY_TERM], outputs[k, RP_ENTRY_POS], outputs[k, RP_ENTRY_SIZE], outputs[k, RP_ENTRY_BODY], now)
    return observations


@njit(cache=True, inline='always')
def leader_up(S, n):
    """The first live server that leads (world._leaders), -1: none."""
    alive = core_table.alive(S)
    members = election_layout.members(S)
    for j in range(n):
        if alive[j] == 1 and members[j, ROLE] == LEADER:
            return j
    return -1


@njit(cache=True)
def up(S, j, now):
    """core.transitions._up: node j starts again from what survived its crash, its threads now."""
    config = core_table.config(S)
    alive = core_table.alive(S)
    n = config[C_PEERS]
    members = election_layout.members(S)
    if j < n:
        server.boot(S, j, now, members[j, CURR_TERM], members[j, CURR_VOTE_FOR], members[j, LEDGER_END_INDEX], members[j, LEDGER_END_TERM], True)
    else:
        world_client.boot_client(S, j - n, now, True)
    alive[j] = 1
    core_table.world(S)[W_FRESH] |= 1 << j
    coverage.touch(S, j)
    restarted(S, j, now)
