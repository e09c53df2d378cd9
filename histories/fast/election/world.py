"""The election twin's world: `run`, the kernel that runs a whole history in place.

It runs the history `histories.runner.run(cfg, SeededChooser(seed).choose, steps, until_ms)`
runs, event for event: what may happen next in the reference's order (`enabled`:
schedule.protocol_events, then fault_kinds), the seeded chooser's draws (core.chooser),
the event applied (`apply_fault`, `apply_event`: reference_impl/core/transitions.py with
the election's crash, restart and node transitions through `server`), the ghost's view of
it (`ghost`) and every property of spec/election.py after it (`monitor`), with the
step's record and the log (core.transitions).

`mutant` is None in production (Numba compiles the seams out, histories.fast.election.mutants)
or a test mutant's number. The state table's slots are election.layout's.
"""

from __future__ import annotations

from numba import njit

from histories.fast.core import chooser, coverage, network, table, transitions
from histories.fast.core import schedule as core_schedule
from histories.fast.core.layout import (
    AK_CRASH,
    AK_DELIVER_MESSAGE,
    AK_DELIVER_REPLY,
    AK_DELIVER_REQUEST,
    AK_DROP,
    AK_DUPLICATE,
    AK_RESTART,
    AK_RPC_FAIL,
    AK_TICK,
    C_CALM_AT_MS,
    C_DELAY_MAX_MS,
    C_DELAY_MIN_MS,
    C_JAVA_TIMING,
    C_STAGGER_MS,
    CALM_DELAY_MAX_MS,
    CALM_DELAY_MIN_MS,
    E_DST,
    E_FIELDS,
    E_ID,
    E_KIND,
    E_REPLY,
    E_RPC,
    E_SRC,
    EV_CALM,
    EV_CRASH,
    EV_DELIVER,
    EV_DROP,
    EV_RESTART,
    EV_RPC_FAIL,
    EV_TICK,
    K_CRASH,
    K_DISK_LOSS,
    K_DUPLICATE,
    K_LOSS,
    K_OS_CRASH,
    K_RESTART,
    L_OBSERVATIONS,
    LB_VOTE_RESULTS,
    OB_CRASH,
    OB_RESTART,
    R_CONTEXT,
    R_CONTEXT_1,
    R_CONTEXT_2,
    R_CONTEXT_3,
    R_REQUESTER,
    R_RESPONDER,
    RPC_COLUMNS,
    STOP_IDLE,
    STOP_STEPS,
    STOP_UNTIL,
    W_CALM,
    W_CALM_AT,
    W_CRASHES,
    W_DISK_LOSSES,
    W_FLIGHT,
    W_FRESH,
    W_LAST_FAULT,
    W_LOST_WRITES,
    W_NEXT_ID,
    W_NOW,
    W_OS_CRASHES,
    W_RPCS,
    W_STEPS,
    W_STOP,
)
from histories.fast.core.schedule import NO_FIFO
from histories.fast.election import (
    ghost,
    layout,
    leader_elector_transfer,
    member_state,
    monitor,
    replies,
    server,
    world_observe,
)
from histories.fast.election import network as election_network
from histories.fast.election.layout import (
    C_CHECK_PREFERRED_LEADER_INTERVAL_MS,
    C_PEERS,
    CHAIN_HEAD,
    CHAIN_TAIL,
    CURR_TERM,
    CURR_VOTE_FOR,
    ENVELOPE_COLUMNS,
    HEART_BEAT_REQUEST,
    HEART_BEAT_RESPONSE,
    LAST_LEADER_HEART_BEAT_TIME,
    LEADER_ID,
    LEADERSHIP_TRANSFER_RESPONSE,
    LEDGER_END_INDEX,
    LEDGER_END_TERM,
    NN_TRANSFER_SINCE,
    NODE_NOTE_COLUMNS,
    SM_FIRST_NEW_LEADER_TERM,
    SM_HB1,
    SM_LAST_NEW_LEADER_TERM,
    SM_OS_CRASHED,
    SM_REPLIES,
    SUCCESS,
    TERM_TO_TAKE_LEADERSHIP,
    V_CAUSE,
    VOTE_REQUEST,
    VOTE_RESPONSE,
    W_FIRST_STRAGGLER,
    W_FIRST_TRANSFER,
    W_LEADERLESS_SINCE,
    W_SETTLED,
    W_SETTLED_LEADER,
    W_TOP_TERM,
)


@njit(cache=True)
def reset(S, down):
    """world.init(cfg) in place over arrays a previous history used (or fresh ones); `down`:
    the mask of the nodes not started at time 0."""
    config = table.config(S)
    world = table.world(S)
    elected = layout.elected(S)
    grants = layout.grants(S)
    chains = layout.vote_chains(S)
    node_notes = layout.node_notes(S)
    initial = layout.initial_ledger(S)
    n = config[C_PEERS]
    top = min(world[W_TOP_TERM] + 1, elected.shape[0]) if world[W_STEPS] > 0 else elected.shape[0]
    for t in range(top):
        elected[t] = 0
        for v in range(n):
            grants[t, v] = 0
            chains[t, v, CHAIN_HEAD] = -1
            chains[t, v, CHAIN_TAIL] = -1
    for i in range(n):
        for f in range(NODE_NOTE_COLUMNS):
            node_notes[i, f] = -1
        member_state.boot(S, i, 0, 0, -1, initial[i, 0], initial[i, 1], config[C_CHECK_PREFERRED_LEADER_INTERVAL_MS])
        table.alive(S)[i] = 0 if (down >> i) & 1 else 1
        layout.cut_since(S)[i] = -1
        for j in range(n):
            table.cut(S)[i, j] = 0
    for k in range(world.shape[0]):
        world[k] = 0
    world[W_NEXT_ID] = 1
    world[W_CALM_AT] = -1
    world[W_LAST_FAULT] = -1
    world[W_SETTLED] = -1
    world[W_LEADERLESS_SINCE] = 0
    world[W_SETTLED_LEADER] = -1  # ghost.settled_leader None (agreed False since 0, no notes)
    world[W_FIRST_TRANSFER] = -1
    world[W_FIRST_STRAGGLER] = -1
    for i in range(n):
        table.since(S)[i] = 0  # World.since
        if table.alive(S)[i] == 1:
            world[W_FRESH] |= 1 << i
    verdicts = table.verdicts(S)
    for p in range(verdicts.shape[0]):
        for f in range(verdicts.shape[1]):
            verdicts[p, f] = -1
        verdicts[p, V_CAUSE] = 0
    coverage.clear(S)
    world_observe.see_state(S, True)


@njit(cache=True)
def wake_times(S):
    """schedule._wakes: each node's wake_at (-1: down or nothing to do) and the slack of its
    tick (server.wake_slack under Java timing, the start-up stagger while fresh); returns the
    earliest time a tick may fire (-1: none)."""
    config = table.config(S)
    alive = table.alive(S)
    since = table.since(S)
    wakes = table.wake_times(S)
    slack = table.slack(S)
    java = config[C_JAVA_TIMING] == 1
    stagger = config[C_STAGGER_MS] if java else 0
    fresh = table.world(S)[W_FRESH]
    horizon = -1
    for j in range(config[C_PEERS]):
        t = server.wake_at(S, j) if alive[j] == 1 else -1
        wakes[j] = t
        if t >= 0:
            node_slack = server.wake_slack(S, j, since[j], t) if java else 0
            if stagger > node_slack and (fresh >> j) & 1:
                node_slack = stagger
            slack[j] = node_slack
            t = max(t, since[j]) + node_slack
            if horizon < 0 or t < horizon:
                horizon = t
    return horizon


@njit(cache=True)
def enabled(S, until_ms):
    """schedule.horizon, protocol_events and fault_kinds: (horizon, protocol events, fault
    kinds, past until_ms). EVENT_KINDS / EVENT_ARGS hold the protocol events in the
    reference's order (Calm, ticks, deliveries or drops, RPC failures), KINDS the fault kinds."""
    config = table.config(S)
    world = table.world(S)
    now = world[W_NOW]
    calm = world[W_CALM] == 1
    java = config[C_JAVA_TIMING] == 1
    delay_max = CALM_DELAY_MAX_MS if calm else config[C_DELAY_MAX_MS]
    delay_min = CALM_DELAY_MIN_MS if calm else config[C_DELAY_MIN_MS]
    flight_count = world[W_FLIGHT]
    rpc_count = world[W_RPCS]
    calm_at = config[C_CALM_AT_MS]
    horizon = wake_times(S)
    horizon = core_schedule.net_horizon(S, horizon, flight_count, rpc_count, delay_max, java, calm_at, calm, now,
                                        NO_FIFO)
    if until_ms >= 0 and horizon > until_ms:
        return horizon, 0, 0, True
    event_kinds = table.event_kinds(S)
    event_args = table.event_args(S)
    wakes = table.wake_times(S)
    since = table.since(S)
    count = 0
    if horizon >= 0:
        if calm_at == horizon and not calm:
            event_kinds[count] = EV_CALM
            event_args[count] = 0
            count += 1
        for j in range(config[C_PEERS]):
            if wakes[j] >= 0 and max(wakes[j], since[j]) <= horizon:
                event_kinds[count] = EV_TICK
                event_args[count] = j
                count += 1
        count = core_schedule.net_events(S, horizon, flight_count, rpc_count, delay_min, delay_max, count, NO_FIFO)
    kind_count = core_schedule.fault_kinds(S, flight_count, config[C_PEERS]) if not calm else 0
    return horizon, count, kind_count, False


@njit(cache=True, inline='always')
def moved(S, i, now):
    """core.world.since_after: a node whose wake time changed in this step starts counting
    its next tick's window from now."""
    if server.wake_at(S, i) != table.wake_times(S)[i]:
        table.since(S)[i] = now


@njit(cache=True)
def crash(S, node, kind, mutant):
    """transitions._down with the election's crash: a process crash keeps the term file, an OS
    crash or a lost disk does not (and the ghost sees it go first)."""
    world = table.world(S)
    now = world[W_NOW]
    lose = kind != K_CRASH
    transitions.record(S, EV_CRASH, node, 0 if not lose else (2 if kind == K_DISK_LOSS else 1))
    coverage.action(S, AK_CRASH + kind - K_CRASH, world_observe.role(S, node))
    coverage.observation_kind(S, OB_CRASH)
    coverage.touch(S, node)
    if lose:  # election world.ghost_crash
        ghost.note_crash(S, node, layout.members(S)[node, CURR_TERM], now)
    server.crash(S, node, lose, mutant)
    moved(S, node, now)
    table.alive(S)[node] = 0
    network.node_down(S, node, now)
    world[W_CRASHES] += 1
    if lose:
        world[W_OS_CRASHES] += 1
        world[W_LOST_WRITES] |= 1 << node
        layout.step_marks(S)[SM_OS_CRASHED] = node
    if kind == K_DISK_LOSS:
        world[W_DISK_LOSSES] += 1
    ghost.follow_note(S, now)  # ghost_update(Crash)
    layout.node_notes(S)[node, NN_TRANSFER_SINCE] = -1
    ghost.transfers_changed(S)
    transitions.note_fault(S)
    transitions.count_fault(S, kind)
    transitions.observed(S, 1)


@njit(cache=True, inline='always')
def up(S, node, now):
    """transitions._up: the node boots from what survived (its term file), its threads start now."""
    config = table.config(S)
    members = layout.members(S)
    member_state.boot(S, node, now, members[node, CURR_TERM], members[node, CURR_VOTE_FOR],
                      members[node, LEDGER_END_INDEX], members[node, LEDGER_END_TERM],
                      now + config[C_CHECK_PREFERRED_LEADER_INTERVAL_MS])
    table.alive(S)[node] = 1
    table.since(S)[node] = now
    table.world(S)[W_FRESH] |= 1 << node
    coverage.touch(S, node)


@njit(cache=True)
def apply_fault(S, kind, mutant):
    """schedule.fault_events(w, (kind,)), the chooser's pick among them, and the fault."""
    config = table.config(S)
    world = table.world(S)
    count = core_schedule.fault_events(S, world[W_FLIGHT], config[C_PEERS],
                                       table.isolations(S).shape[0], kind)
    pick = chooser.fault_event(S, count)
    target = table.fault_targets(S)[pick]
    if kind == K_CRASH or kind == K_OS_CRASH or kind == K_DISK_LOSS:
        crash(S, target, kind, mutant)
    elif kind == K_RESTART:
        transitions.record(S, EV_RESTART, target, 0)
        coverage.action(S, AK_RESTART, world_observe.role(S, target))
        coverage.observation_kind(S, OB_RESTART)
        up(S, target, world[W_NOW])
        ghost.follow_note(S, world[W_NOW])  # ghost_update(Restart)
        transitions.note_fault(S)
        transitions.count_fault(S, K_RESTART)
        transitions.observed(S, 1)
    else:
        if kind == K_LOSS or kind == K_DUPLICATE:
            coverage.action(S, AK_DROP if kind == K_LOSS else AK_DUPLICATE,
                            world_observe.role(S, table.flight(S)[target, E_DST]))
        transitions.network_fault(S, kind, target, table.fault_peers(S)[pick], ENVELOPE_COLUMNS, config[C_PEERS])
    ghost.update_cut_since(S, world[W_NOW])


@njit(cache=True)
def on_request(S, dst, message_kind, rpc_id, m0, m1, m2, m3, m4, now, mutant):
    """server.on_request; RPL-1/2 hold its reply to the guards on the member's state before."""
    members = layout.members(S)
    marks = layout.step_marks(S)
    term_before = members[dst, CURR_TERM]
    vote_before = members[dst, CURR_VOTE_FOR]
    leader_before = members[dst, LEADER_ID]
    if message_kind == HEART_BEAT_REQUEST:
        heart_beat_before = members[dst, LAST_LEADER_HEART_BEAT_TIME]
        code, reply_term = server.on_heart_beat_request(S, dst, m0, m1, now, mutant)
        if election_network.reply(S, now, rpc_id, HEART_BEAT_RESPONSE, code, reply_term, 0):
            marks[SM_REPLIES] = replies.heart_beat_reply(S, dst, m0, m1, code, term_before, vote_before,
                                                         leader_before, heart_beat_before)
    elif message_kind == VOTE_REQUEST:
        index_before = members[dst, LEDGER_END_INDEX]
        ledger_term_before = members[dst, LEDGER_END_TERM]
        take_before = members[dst, TERM_TO_TAKE_LEADERSHIP]
        reply_term, result = server.on_vote_request(S, dst, m0, m1, m2, m3, mutant)
        if election_network.reply(S, now, rpc_id, VOTE_RESPONSE, reply_term, result, SUCCESS):
            marks[SM_REPLIES] = replies.vote_reply(S, dst, m0, m1, m2, m3, result, term_before, vote_before,
                                                   leader_before, index_before, ledger_term_before, take_before)
    else:
        has, code, reply_term = leader_elector_transfer.server_handle_leadership_transfer(
            S, dst, m0, m1, m2, m3, m4, rpc_id, now)
        if has:
            election_network.reply(S, now, rpc_id, LEADERSHIP_TRANSFER_RESPONSE, code, reply_term, 0)


@njit(cache=True, inline='always')
def delivered(S, dst, message_kind, is_reply, rpc_id, m0, m1, m2):
    """Coverage of a delivery: deliver_reply / _request / _message at the addressee's role,
    the message's kind and the result codes among its fields."""
    kind = AK_DELIVER_REPLY if is_reply else (AK_DELIVER_REQUEST if rpc_id != 0 else AK_DELIVER_MESSAGE)
    coverage.action(S, kind, world_observe.role(S, dst))
    coverage.message_kind(S, message_kind)
    coverage.touch(S, dst)
    if message_kind == VOTE_RESPONSE:
        coverage.branch(S, LB_VOTE_RESULTS, m1)
        coverage.code(S, m2)
    elif message_kind == HEART_BEAT_RESPONSE or message_kind == LEADERSHIP_TRANSFER_RESPONSE:
        coverage.code(S, m0)


@njit(cache=True)
def deliver(S, row, delay_min, mutant):
    """transitions._deliver: a reply to its requester's open RPC, a request to its node (a
    node that is down refuses the connection)."""
    flight = table.flight(S)
    rpcs = table.rpcs(S)
    alive = table.alive(S)
    now = transitions.deliver_time(S, row, delay_min)
    transitions.record(S, EV_DELIVER, flight[row, E_ID], 0)
    src = flight[row, E_SRC]
    dst = flight[row, E_DST]
    rpc_id = flight[row, E_RPC]
    message_kind = flight[row, E_KIND]
    m0 = flight[row, E_FIELDS]
    m1 = flight[row, E_FIELDS + 1]
    m2 = flight[row, E_FIELDS + 2]
    m3 = flight[row, E_FIELDS + 3]
    m4 = flight[row, E_FIELDS + 4]
    is_reply = flight[row, E_REPLY] == 1
    delivered(S, dst, message_kind, is_reply, rpc_id, m0, m1, m2)
    network.remove_envelope(S, row, ENVELOPE_COLUMNS)
    if is_reply:
        r = network.find_rpc(S, rpc_id)
        if r >= 0 and alive[dst] == 1:
            context = rpcs[r, R_CONTEXT]
            context_1 = rpcs[r, R_CONTEXT_1]
            context_2 = rpcs[r, R_CONTEXT_2]
            context_3 = rpcs[r, R_CONTEXT_3]
            network.close_rpc(S, r, RPC_COLUMNS)
            server.on_response(S, dst, context, context_1, context_2, context_3, src, True, m0, m1, now)
            moved(S, dst, now)
            transitions.observed(S, election_network.route(S, dst, now))
    elif alive[dst] == 0:
        if rpc_id != 0:
            network.refuse(S, rpc_id, now)
    else:
        on_request(S, dst, message_kind, rpc_id, m0, m1, m2, m3, m4, now, mutant)
        moved(S, dst, now)
        transitions.observed(S, election_network.route(S, dst, now))


@njit(cache=True)
def fail_rpc(S, row, horizon):
    """An open RPC fails at its deadline (within its scan window): its requester's callback
    runs with no response."""
    rpcs = table.rpcs(S)
    transitions.rpc_fail(S, row, horizon)
    now = table.world(S)[W_NOW]
    requester = rpcs[row, R_REQUESTER]
    peer = rpcs[row, R_RESPONDER]
    context = rpcs[row, R_CONTEXT]
    context_1 = rpcs[row, R_CONTEXT_1]
    context_2 = rpcs[row, R_CONTEXT_2]
    context_3 = rpcs[row, R_CONTEXT_3]
    coverage.action(S, AK_RPC_FAIL, world_observe.role(S, requester))
    coverage.touch(S, requester)
    network.close_rpc(S, row, RPC_COLUMNS)
    if table.alive(S)[requester] == 1:
        server.on_response(S, requester, context, context_1, context_2, context_3, peer, False, 0, 0, now)
        moved(S, requester, now)
        transitions.observed(S, election_network.route(S, requester, now))


@njit(cache=True)
def calm(S, horizon):
    """transitions._calm: every link up, every node that is down restarted, the ghost sees it."""
    config = table.config(S)
    alive = table.alive(S)
    transitions.calm(S, horizon, config[C_PEERS])
    for j in range(config[C_PEERS]):
        if alive[j] == 0:
            up(S, j, horizon)
            transitions.observed(S, 1)
            coverage.observation_kind(S, OB_RESTART)
    ghost.follow_note(S, horizon)  # ghost_update(Calm)
    ghost.update_cut_since(S, horizon)
    if ghost.settled(S):
        table.world(S)[W_SETTLED] = horizon


@njit(cache=True)
def apply_event(S, horizon, event_count, mutant):
    """The chooser's pick among the protocol events, and the event."""
    world = table.world(S)
    pick = chooser.protocol_event(S, event_count)
    kind = table.event_kinds(S)[pick]
    target = table.event_args(S)[pick]
    if kind == EV_TICK:
        coverage.action(S, AK_TICK, world_observe.role(S, target))
        coverage.touch(S, target)
        draw = transitions.tick(S, target, horizon)
        now = world[W_NOW]
        server.on_tick(S, target, now, draw, mutant)
        world[W_FRESH] &= ~(1 << target)
        moved(S, target, now)
        transitions.observed(S, election_network.route(S, target, now))
    elif kind == EV_DELIVER:
        deliver(S, target, CALM_DELAY_MIN_MS if world[W_CALM] == 1 else table.config(S)[C_DELAY_MIN_MS], mutant)
    elif kind == EV_DROP:
        coverage.action(S, AK_DROP, world_observe.role(S, table.flight(S)[target, E_DST]))
        transitions.drop_behind_cut(S, target, ENVELOPE_COLUMNS)
        ghost.update_cut_since(S, world[W_NOW])
    elif kind == EV_RPC_FAIL:
        fail_rpc(S, target, horizon)
    else:
        calm(S, horizon)


@njit(cache=True, inline='always')
def begin_step(S):
    transitions.begin_step(S)
    marks = layout.step_marks(S)
    marks[SM_FIRST_NEW_LEADER_TERM] = -1
    marks[SM_LAST_NEW_LEADER_TERM] = -1
    marks[SM_HB1] = 0
    marks[SM_REPLIES] = 0
    marks[SM_OS_CRASHED] = -1


@njit(cache=True)
def run(S, steps, until_ms, mutant):
    """Run the history in place up to `steps` events, or until `until_ms`, or until nothing
    can happen; WORLD[W_STOP] says why it stopped (negative: a capacity ran out)."""
    world = table.world(S)
    previous = layout.previous_terms(S)
    members = layout.members(S)
    for j in range(table.config(S)[C_PEERS]):
        previous[j] = members[j, CURR_TERM]
    step = world[W_STEPS]
    stop = STOP_STEPS
    while step < steps:
        horizon, event_count, kind_count, past = enabled(S, until_ms)
        if past:
            stop = STOP_UNTIL
            break
        kind = chooser.fault_kind(S, event_count, kind_count)
        if kind < 0 and event_count == 0:
            stop = STOP_IDLE
            break
        step += 1
        begin_step(S)
        if kind >= 0:
            apply_fault(S, kind, mutant)
        else:
            apply_event(S, horizon, event_count, mutant)
        if transitions.stopped(S):
            world[W_STEPS] = step
            return
        now = world[W_NOW]
        if not monitor.check(S, step, now):
            world[W_STEPS] = step
            return
        if table.event(S)[L_OBSERVATIONS] > 0:
            monitor.meter(S, now)
        if not world_observe.see_state(S, False) or not transitions.end_step(S):
            world[W_STEPS] = step
            return
    world[W_STEPS] = step
    world[W_STOP] = stop
