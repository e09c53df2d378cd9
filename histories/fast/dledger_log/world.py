"""The dledger_log twin's world: `run`, the kernel that runs a whole history in place.

It runs the history `histories.runner.run(cfg, SeededChooser(seed).choose, steps, until_ms)`
runs for a dledger_log config, event for event: what may happen next in the reference's
order (`enabled`: the nodes' wake times kept as they change, the network's events, the
generic fault kinds then the protocol's own, `leader_partition`), the seeded chooser's
draws (core.chooser), the event applied (`apply_fault`, `apply_event`: core.transitions
and the servers, clients and network of `world_nodes`), the ghost's view of it, and every
property of spec/dledger_log.py after it (`monitor`, `monitor_steps`). A step after which a
violation may still be recorded as expected leaves a request for its cause and the kernel
returns (W_PAUSE); the Python side answers with spec's own functions (causes) and calls
again.

`mutant` is None in production (Numba compiles the election mutants' seams out) or a test
mutant's number (histories.fast.election.mutants). The state table's slots are
dledger_log.layout's, after the election member's.
"""

from __future__ import annotations

from numba import njit

from histories.fast.core import chooser, coverage, network, table, transitions
from histories.fast.core import schedule as core_schedule
from histories.fast.core.layout import (
    ACTION_TWIN,
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
    C_NODES,
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
    LB_PUSH_TYPES,
    LB_VOTE_RESULTS,
    OB_CRASH,
    OB_RESTART,
    OB_TWIN_EVENT,
    R_CONTEXT,
    R_CONTEXT_1,
    R_CONTEXT_2,
    R_CONTEXT_3,
    R_REQUESTER,
    R_RESPONDER,
    ROLE_WORLD,
    RPC_COLUMNS,
    STOP_IDLE,
    STOP_STEPS,
    STOP_UNTIL,
    W_CALM,
    W_CALM_AT,
    W_CRASHES,
    W_CUT_LINKS,
    W_DISK_LOSSES,
    W_FLIGHT,
    W_FRESH,
    W_LAST_FAULT,
    W_LOST_WRITES,
    W_NEXT_ID,
    W_NOW,
    W_OS_CRASHES,
    W_PAUSE,
    W_RPCS,
    W_STEPS,
    W_STOP,
)
from histories.fast.core.schedule import NO_FIFO
from histories.fast.dledger_log import (
    ghost,
    layout,
    monitor,
    monitor_steps,
    replies,
    server,
    world_client,
    world_nodes,
    world_observe,
)
from histories.fast.dledger_log import network as log_network
from histories.fast.dledger_log.layout import (
    APPEND_ENTRY_RESPONSE,
    BIG,
    C_ORDERED_PUSHES,
    ENVELOPE_COLUMNS,
    EV_LEADER_PARTITION,
    K_LEADER_PARTITION,
    LV_TRANSFER_SINCE,
    MESSAGE_FIELDS,
    P_RPL1,
    P_RPL2,
    P_RPL3,
    PUSH_ENTRY_REQUEST,
    PUSH_ENTRY_RESPONSE,
    RQ_ON,
    RQ_TYPE,
    S_COMMITTED_INDEX,
    SC_BEGIN_MOVED,
    SC_DIRTY,
    V_STEP,
    W_EVIDENCE,
    W_LEADER_PARTITIONS,
    W_REPLIES,
)
from histories.fast.election import layout as election_layout
from histories.fast.election.layout import (
    C_PEERS,
    HEART_BEAT_RESPONSE,
    LEADER,
    LEADERSHIP_TRANSFER_RESPONSE,
    ROLE,
    VOTE_RESPONSE,
)
from histories.fast.election.replies import RPL_1, RPL_2


@njit(cache=True)
def reset(S, down):
    """core.world.init(cfg) in place over arrays a previous history used (or fresh ones)."""
    reset_ghost_tables(S)
    world = table.world(S)
    config = table.config(S)
    n = config[C_PEERS]
    nodes = config[C_NODES]
    for k in range(world.shape[0]):
        world[k] = 0
    world[layout.W_SETTLED_LEADER] = -1
    world[layout.W_SETTLED_LEADER_TERM] = -1
    world[W_NEXT_ID] = 1
    world[W_CALM_AT] = -1
    world[W_LAST_FAULT] = -1
    world[layout.W_FIRST_ACK] = -1
    world[layout.W_TOP_LEADER_TERM] = -1
    world[layout.W_TOP_TERM] = -1
    alive = table.alive(S)
    for i in range(nodes):
        alive[i] = 0 if (down >> i) & 1 else 1
        table.since(S)[i] = 0
        if alive[i] == 1:
            world[W_FRESH] |= 1 << i
        for j in range(nodes):
            table.cut(S)[i, j] = 0
    changes = layout.store_changes(S)
    pairs = layout.log_pairs(S)
    for i in range(n):
        changes[i, SC_DIRTY] = BIG
        changes[i, SC_BEGIN_MOVED] = 0
        server.boot(S, i, 0, 0, -1, -1, -1, False)
        for j in range(n):
            pairs[i, j] = -1
    for c in range(nodes - n):
        world_client.boot_client(S, c, 0, False)
    thread_wakes = layout.thread_wakes(S)
    for i in range(nodes):
        for k in range(thread_wakes.shape[1]):
            thread_wakes[i, k] = -1
        world_nodes.restarted(S, i, 0)
    cache = layout.cause_cache(S)
    for k in range(cache.shape[0]):
        cache[k] = 0
    cache[0] = -1
    cache[6] = -1
    verdicts = table.verdicts(S)
    for p in range(verdicts.shape[0]):
        for f in range(verdicts.shape[1]):
            verdicts[p, f] = 0
        verdicts[p, V_STEP] = -1
    sums = layout.log_sums(S)
    for i in range(n):
        sums[i, 0] = 0
    coverage.clear(S)
    world_observe.see_state(S, True)


@njit(cache=True)
def reset_ghost_tables(S):
    """The index- and term-keyed ghost tables, up to what the last history used, and the rest
    of the ghost (ghost.reset_ghost)."""
    world = table.world(S)
    committed = layout.committed(S)
    elected = layout.elected(S)
    top = min(world[layout.W_TOP_INDEX] + 1, committed.shape[0]) if world[W_STEPS] > 0 else committed.shape[0]
    for index in range(top):
        committed[index, 0] = 0
        layout.conflict_counts(S)[index] = 0
        layout.acked_counts(S)[index] = 0
        layout.counted_counts(S)[index] = 0
    top = min(world[layout.W_TOP_TERM] + 1, elected.shape[0]) if world[W_STEPS] > 0 else elected.shape[0]
    for t in range(top):
        elected[t] = 0
        layout.regressed(S)[t] = -1
    results = layout.results(S)
    for c in range(results.shape[0]):
        results[c] = 0
    ghost.reset_ghost(S)
    requests = layout.cause_requests(S)
    for p in range(requests.shape[0]):
        requests[p, RQ_ON] = 0


@njit(cache=True)
def enabled(S, until_ms):
    """schedule.horizon, protocol_events and fault_kinds: (horizon, protocol events, fault
    kinds, past until_ms), in EVENT_KINDS / EVENT_ARGS and KINDS. Pushes are delivered in send
    order on a link when the config orders them (world.fifo)."""
    config = table.config(S)
    world = table.world(S)
    alive = table.alive(S)
    wakes = layout.thread_wakes(S)
    since = layout.thread_since(S)
    slack = layout.thread_slack(S)
    nodes = config[C_NODES]
    now = world[W_NOW]
    calm = world[W_CALM] == 1
    java = config[C_JAVA_TIMING] == 1
    fifo = PUSH_ENTRY_REQUEST if config[C_ORDERED_PUSHES] == 1 else NO_FIFO
    horizon = -1
    for j in range(nodes):
        if alive[j] == 1:
            for k in range(world_nodes.thread_count(S, j)):
                if wakes[j, k] >= 0:
                    t = max(wakes[j, k], since[j, k]) + slack[j, k]
                    if horizon < 0 or t < horizon:
                        horizon = t
    delay_max = CALM_DELAY_MAX_MS if calm else config[C_DELAY_MAX_MS]
    delay_min = CALM_DELAY_MIN_MS if calm else config[C_DELAY_MIN_MS]
    flight_count = world[W_FLIGHT]
    rpc_count = world[W_RPCS]
    calm_at = config[C_CALM_AT_MS]
    horizon = core_schedule.net_horizon(S, horizon, flight_count, rpc_count, delay_max, java, calm_at, calm, now,
                                        fifo)
    if until_ms >= 0 and horizon > until_ms:
        return horizon, 0, 0, True
    event_kinds = table.event_kinds(S)
    event_args = table.event_args(S)
    count = 0
    if horizon >= 0:
        if calm_at == horizon and not calm:
            event_kinds[count] = EV_CALM
            event_args[count] = 0
            count += 1
        for j in range(nodes):
            if alive[j] == 1:
                for k in range(world_nodes.thread_count(S, j)):
                    if wakes[j, k] >= 0 and max(wakes[j, k], since[j, k]) <= horizon:
                        event_kinds[count] = EV_TICK
                        event_args[count] = j * world_nodes.THREAD_STRIDE + k
                        count += 1
        count = core_schedule.net_events(S, horizon, flight_count, rpc_count, delay_min, delay_max, count, fifo)
    kind_count = 0
    if not calm:
        kind_count = core_schedule.fault_kinds(S, flight_count, nodes)
        # the profile's own kinds (FaultProfile.ext) come last: world.ext_faults' leader_partition
        if table.weights(S)[K_LEADER_PARTITION] > 0 and world_nodes.leader_up(S, config[C_PEERS]) >= 0:
            table.kinds(S)[kind_count] = K_LEADER_PARTITION
            kind_count += 1
    return horizon, count, kind_count, False


@njit(cache=True)
def crash(S, node, kind, mutant):
    """core.transitions._down with dledger_log's crash: a server's (the ghost notes what it
    lost first) or a client's."""
    world = table.world(S)
    now = world[W_NOW]
    n = table.config(S)[C_PEERS]
    how = 0 if kind == K_CRASH else (1 if kind == K_OS_CRASH else 2)
    transitions.record(S, EV_CRASH, node, how)
    coverage.action(S, AK_CRASH + how, world_observe.role(S, node))
    coverage.observation_kind(S, OB_CRASH)
    coverage.touch(S, node)
    if node < n:
        ghost.crash_note(S, node, how, now)
        server.crash(S, node, how, mutant)
    else:
        world_client.crash_client(S, node - n)
    world_nodes.refresh(S, node, now)  # core.set_node: since_after
    table.alive(S)[node] = 0
    network.node_down(S, node, now)
    world[W_CRASHES] += 1
    if how != 0:
        world[W_OS_CRASHES] += 1
        if (world[W_LOST_WRITES] >> node) & 1 == 0:
            world[W_LOST_WRITES] |= 1 << node
            world[W_EVIDENCE] += 1
    if how == 2:
        world[W_DISK_LOSSES] += 1
    transitions.note_fault(S)
    transitions.count_fault(S, kind)
    transitions.observed(S, 1)
    if node < n:  # ghost.update of Crash: who follows whom; a crashed node transfers nothing
        ghost.follow_note(S, now)
        layout.liveness(S)[node, LV_TRANSFER_SINCE] = -1


@njit(cache=True)
def leader_partition(S, leader):
    """world.ext_apply(LeaderPartition): the cut made anew, the leader and the clients on one
    side, the other servers on the other; the ghost does not see it."""
    n = table.config(S)[C_PEERS]
    nodes = table.config(S)[C_NODES]
    cut = table.cut(S)
    transitions.record(S, EV_LEADER_PARTITION, leader, 0)
    coverage.action(S, ACTION_TWIN, ROLE_WORLD)
    coverage.observation_kind(S, OB_TWIN_EVENT)
    coverage.cut_changed(S)
    count = 0
    for x in range(nodes):
        side_x = x == leader or x >= n
        for y in range(nodes):
            side_y = y == leader or y >= n
            cut[x, y] = 1 if side_x != side_y else 0
            count += cut[x, y]
    table.world(S)[W_CUT_LINKS] = count
    transitions.note_fault(S)
    table.world(S)[W_LEADER_PARTITIONS] += 1
    transitions.observed(S, 1)


@njit(cache=True)
def apply_fault(S, kind, mutant):
    """schedule.fault_events(w, (kind,)), the chooser's pick among them, and the fault."""
    config = table.config(S)
    world = table.world(S)
    targets = table.fault_targets(S)
    if kind == K_LEADER_PARTITION:
        count = 0
        for j in range(config[C_PEERS]):  # world._leaders
            if table.alive(S)[j] == 1 and election_layout.members(S)[j, ROLE] == LEADER:
                targets[count] = j
                count += 1
    else:
        count = core_schedule.fault_events(S, world[W_FLIGHT], config[C_NODES], table.isolations(S).shape[0], kind)
    pick = chooser.fault_event(S, count)
    target = targets[pick]
    if kind == K_CRASH or kind == K_OS_CRASH or kind == K_DISK_LOSS:
        crash(S, target, kind, mutant)
    elif kind == K_RESTART:
        transitions.record(S, EV_RESTART, target, 0)
        coverage.action(S, AK_RESTART, world_observe.role(S, target))
        coverage.observation_kind(S, OB_RESTART)
        world_nodes.up(S, target, world[W_NOW])
        transitions.note_fault(S)
        transitions.count_fault(S, K_RESTART)
        transitions.observed(S, 1)
        ghost.follow_note(S, world[W_NOW])
        monitor.on_restart_or_calm(S)
    elif kind == K_LEADER_PARTITION:
        leader_partition(S, target)
    else:
        if kind == K_LOSS or kind == K_DUPLICATE:
            coverage.action(S, AK_DROP if kind == K_LOSS else AK_DUPLICATE,
                            world_observe.role(S, table.flight(S)[target, E_DST]))
        transitions.network_fault(S, kind, target, table.fault_peers(S)[pick], ENVELOPE_COLUMNS, config[C_NODES])


@njit(cache=True)
def delivered(S, dst, kind, is_reply, rpc_id):
    """Coverage of a delivery: deliver_reply / _request / _message at the addressee's role,
    the message's kind and the result codes among its fields (MESSAGE)."""
    message = layout.message(S)
    action = AK_DELIVER_REPLY if is_reply else (AK_DELIVER_REQUEST if rpc_id != 0 else AK_DELIVER_MESSAGE)
    coverage.action(S, action, world_observe.role(S, dst))
    coverage.message_kind(S, kind)
    coverage.touch(S, dst)
    if kind == VOTE_RESPONSE:
        coverage.branch(S, LB_VOTE_RESULTS, message[1])
        coverage.code(S, message[2])
    elif (kind == HEART_BEAT_RESPONSE or kind == LEADERSHIP_TRANSFER_RESPONSE or kind == APPEND_ENTRY_RESPONSE
          or kind == PUSH_ENTRY_RESPONSE):
        coverage.code(S, message[0])
    elif kind == PUSH_ENTRY_REQUEST:
        coverage.branch(S, LB_PUSH_TYPES, message[RQ_TYPE])


@njit(cache=True)
def deliver(S, row, delay_min, mutant):
    """transitions._deliver: a reply to its requester's open RPC, a request to its node (a
    node that is down refuses the connection); RPL-* read a server's reply to a request."""
    flight = table.flight(S)
    rpcs = table.rpcs(S)
    alive = table.alive(S)
    message = layout.message(S)
    now = transitions.deliver_time(S, row, delay_min)
    transitions.record(S, EV_DELIVER, flight[row, E_ID], 0)
    src = flight[row, E_SRC]
    dst = flight[row, E_DST]
    rpc_id = flight[row, E_RPC]
    kind = flight[row, E_KIND]
    for j in range(MESSAGE_FIELDS):
        message[j] = flight[row, E_FIELDS + j]
    is_reply = flight[row, E_REPLY] == 1
    delivered(S, dst, kind, is_reply, rpc_id)
    network.remove_envelope(S, row, ENVELOPE_COLUMNS)
    if is_reply:
        r = network.find_rpc(S, rpc_id)
        if r >= 0 and alive[dst] == 1:
            context = rpcs[r, R_CONTEXT]
            context_1 = rpcs[r, R_CONTEXT_1]
            context_2 = rpcs[r, R_CONTEXT_2]
            context_3 = rpcs[r, R_CONTEXT_3]
            network.close_rpc(S, r, RPC_COLUMNS)
            world_nodes.on_response(S, dst, context, context_1, context_2, context_3, src, True, now)
            world_nodes.refresh(S, dst, now)
            transitions.observed(S, world_nodes.route(S, dst, now))
    elif alive[dst] == 0:
        if rpc_id != 0:
            network.refuse(S, rpc_id, now)
    else:
        if dst < table.config(S)[C_PEERS]:
            monitor_steps.save_member(S, dst)
        reply_kind = world_nodes.on_request(S, dst, kind, rpc_id, now, mutant)
        if reply_kind != 0 and log_network.reply(S, now, rpc_id, reply_kind):
            table.world(S)[W_REPLIES] |= monitor_steps.request_reply(S, dst, kind, reply_kind)
        world_nodes.refresh(S, dst, now)
        transitions.observed(S, world_nodes.route(S, dst, now))


@njit(cache=True)
def fail_rpc(S, row, horizon):
    """An open RPC fails at its deadline (a scanned one within its window): its requester's
    callback runs with no response."""
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
        world_nodes.on_response(S, requester, context, context_1, context_2, context_3, peer, False, now)
        world_nodes.refresh(S, requester, now)
        transitions.observed(S, world_nodes.route(S, requester, now))


@njit(cache=True, inline='always')
def calm(S, horizon):
    """transitions._calm: every link up, every node that is down restarted, the ghost sees it."""
    config = table.config(S)
    alive = table.alive(S)
    transitions.calm(S, horizon, config[C_NODES])
    for j in range(config[C_NODES]):
        if alive[j] == 0:
            world_nodes.up(S, j, horizon)
            transitions.observed(S, 1)
            coverage.observation_kind(S, OB_RESTART)
    ghost.follow_note(S, horizon)
    monitor.on_restart_or_calm(S)


@njit(cache=True)
def apply_event(S, horizon, event_count, mutant):
    """The chooser's pick among the protocol events, and the event."""
    world = table.world(S)
    n = table.config(S)[C_PEERS]
    pick = chooser.protocol_event(S, event_count)
    kind = table.event_kinds(S)[pick]
    target = table.event_args(S)[pick]
    if kind == EV_TICK:
        thread = target % world_nodes.THREAD_STRIDE
        target = target // world_nodes.THREAD_STRIDE
        coverage.action(S, AK_TICK, world_observe.role(S, target))
        coverage.touch(S, target)
        draw = transitions.tick_at(S, target, thread, layout.thread_wakes(S)[target, thread],
                                   layout.thread_since(S)[target, thread], layout.thread_slack(S)[target, thread],
                                   horizon)
        now = world[W_NOW]
        if target < n:
            monitor_steps.save_member(S, target)
            server.on_thread_tick(S, target, thread, now, draw, mutant)
        else:
            world_client.client_on_tick(S, target - n, now, draw)
        world[W_FRESH] &= ~(1 << target)
        world_nodes.refresh(S, target, now)
        transitions.observed(S, world_nodes.route(S, target, now))
    elif kind == EV_DELIVER:
        deliver(S, target, CALM_DELAY_MIN_MS if world[W_CALM] == 1 else table.config(S)[C_DELAY_MIN_MS], mutant)
    elif kind == EV_DROP:
        coverage.action(S, AK_DROP, world_observe.role(S, table.flight(S)[target, E_DST]))
        transitions.drop_behind_cut(S, target, ENVELOPE_COLUMNS)
    elif kind == EV_RPC_FAIL:
        fail_rpc(S, target, horizon)
    else:
        calm(S, horizon)


@njit(cache=True, inline='always')
def begin_step(S):
    """The step's scratch: no outputs, no new leaders, no reply findings; what the step
    properties compare with (each server's commit index, who was up)."""
    transitions.begin_step(S)
    layout.new_leaders(S)[0] = 0
    table.world(S)[W_REPLIES] = 0
    store = layout.store(S)
    alive = table.alive(S)
    commit_before = layout.commit_before(S)
    alive_before = layout.alive_before(S)
    for j in range(table.config(S)[C_PEERS]):
        commit_before[j] = store[j, S_COMMITTED_INDEX]
        alive_before[j] = alive[j]


@njit(cache=True)
def check(S, step, now):
    """The monitor after a step: the state properties, the step properties, the replies'
    findings (RPL-*), then the store's change marks are cleared for the next step."""
    monitor.check_states(S, step, now)
    monitor_steps.check_steps(S, table.event(S)[L_OBSERVATIONS])
    bits = table.world(S)[W_REPLIES]
    if bits != 0:
        verdicts = table.verdicts(S)
        for bit, prop in ((RPL_1, P_RPL1), (RPL_2, P_RPL2), (replies.RPL_3, P_RPL3)):
            if (bits >> bit) & 1 and verdicts[prop, V_STEP] < 0:
                monitor.record(S, prop, step, now, 0)
    changes = layout.store_changes(S)
    for j in range(table.config(S)[C_PEERS]):
        changes[j, SC_DIRTY] = BIG
        changes[j, SC_BEGIN_MOVED] = 0


@njit(cache=True, inline='always')
def asked_for_causes(S):
    """Whether the step left a request for an expected cause (the kernel then pauses)."""
    requests = layout.cause_requests(S)
    for p in range(requests.shape[0]):
        if requests[p, RQ_ON] == 1:
            return True
    return False


@njit(cache=True)
def run(S, steps, until_ms, mutant):
    """Run the history in place up to `steps` events, or until `until_ms`, or until nothing
    can happen, or until a step asks for an expected cause (W_PAUSE: the caller answers and
    calls again); WORLD[W_STOP] says why it stopped (negative: a capacity ran out)."""
    world = table.world(S)
    step = world[W_STEPS]
    stop = STOP_STEPS
    world[W_PAUSE] = 0
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
        if transitions.stopped(S) or not world_observe.see_state(S, False):
            world[W_STEPS] = step
            return
        check(S, step, world[W_NOW])
        transitions.count_event(S)
        if world[W_STOP] < 0 or not transitions.log_event(S):
            world[W_STEPS] = step
            return
        if asked_for_causes(S):
            world[W_PAUSE] = 1  # the caller answers the requests (the causes) and calls again
            world[W_STEPS] = step
            return
    world[W_STEPS] = step
    world[W_STOP] = stop
