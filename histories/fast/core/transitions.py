"""What happens in every twin's world (reference_impl/core/transitions.py), and the step's
bookkeeping: the generic faults (a message lost or duplicated, a partition, a one-way cut,
a heal), the network's part of Calm, when a tick or an RPC failure fires within its window,
and the record of the step's event (EVENT: the event log's row, L_* columns), its counts
and the log.

A twin's world applies what is its own (a node's crash, restart and transitions, its ghost's
view of each event) and calls these for the rest, so the generic world is written once.
"""

from __future__ import annotations

from numba import njit

from histories.fast.core import chooser, coverage, network, table
from histories.fast.core.layout import (
    AK_CALM,
    AK_CUT,
    AK_HEAL,
    AK_PARTITION,
    C_JAVA_TIMING,
    C_WRITE_LOG,
    E_ID,
    E_SENT,
    EV_CALM,
    EV_CUT,
    EV_DROP,
    EV_DUPLICATE,
    EV_HEAL,
    EV_PARTITION,
    EV_RPC_FAIL,
    EV_TICK,
    K_DUPLICATE,
    K_HEAL,
    K_LOSS,
    K_ONE_WAY,
    K_PARTITION,
    L_ARG,
    L_ARG2,
    L_DRAW,
    L_KIND,
    L_LATE,
    L_OBSERVATIONS,
    L_TIME,
    LOG_COLUMNS,
    OB_CALM,
    OB_CUT_LINK,
    OB_HEAL,
    OB_PARTITION,
    OVERFLOW_FLIGHT,
    OVERFLOW_LOG,
    OVERFLOW_OUTPUTS,
    R_DEADLINE,
    R_WINDOW,
    ROLE_WORLD,
    W_CALM,
    W_CALM_AT,
    W_CUT_LINKS,
    W_EVENT_COUNTS,
    W_FAULT_COUNTS,
    W_FLIGHT,
    W_LAST_FAULT,
    W_LOGGED,
    W_NEXT_ID,
    W_NOW,
    W_STOP,
)

# --- the step's record ---


@njit(cache=True, inline='always')
def begin_step(S):
    """A new step: no outputs yet, its event not yet known."""
    count = table.output_count(S)
    count[0] = 0
    count[1] = 0
    event = table.event(S)
    for f in range(LOG_COLUMNS):
        event[f] = 0


@njit(cache=True, inline='always')
def record(S, kind, arg, arg2):
    """This step's event: its kind (EV_*) and what it was about."""
    event = table.event(S)
    event[L_KIND] = kind
    event[L_ARG] = arg
    event[L_ARG2] = arg2


@njit(cache=True, inline='always')
def observed(S, count):
    """The step made `count` more observations (the reference's `obs`)."""
    table.event(S)[L_OBSERVATIONS] += count


@njit(cache=True, inline='always')
def stopped(S):
    """Whether the step overflowed a capacity (the kernel then stops: nothing is truncated)."""
    world = table.world(S)
    if table.output_count(S)[1] != 0:
        world[W_STOP] = OVERFLOW_OUTPUTS
    return world[W_STOP] < 0


@njit(cache=True, inline='always')
def count_event(S):
    """The step's event, counted by kind (W_EVENT_COUNTS: diagnostics), at the step's time."""
    world = table.world(S)
    event = table.event(S)
    event[L_TIME] = world[W_NOW]
    world[W_EVENT_COUNTS + event[L_KIND]] += 1


@njit(cache=True)
def log_event(S):
    """The step's row in the event log, when the config asks for one; False when the log is full."""
    if table.config(S)[C_WRITE_LOG] == 1:
        world = table.world(S)
        log = table.event_log(S)
        event = table.event(S)
        row = world[W_LOGGED]
        if row >= log.shape[0]:
            world[W_STOP] = OVERFLOW_LOG
            return False
        for f in range(LOG_COLUMNS):
            log[row, f] = event[f]
        world[W_LOGGED] = row + 1
    return True


@njit(cache=True, inline='always')
def end_step(S):
    """Count the step's event and log it; False when the log is full."""
    count_event(S)
    return log_event(S)


# --- when an event fires (core.schedule: event_time, tick_window, rpc_window) ---


@njit(cache=True)
def tick(S, node, horizon):
    """A tick of `node`, a node that is one actor: `tick_at` with its wake time, since and slack."""
    return tick_at(S, node, 0, table.wake_times(S)[node], table.since(S)[node], table.slack(S)[node], horizon)


@njit(cache=True)
def tick_at(S, node, thread, wake, since, slack, horizon):
    """A tick of `node`'s thread `thread` (0 for a node that is one actor) whose wake time,
    `since` and slack are given: the chooser's draw, then its lateness within its window (from
    max(wake, since) to its slack later, never past the horizon). Sets the time; returns the
    draw."""
    world = table.world(S)
    draw = chooser.tick_draw(S)
    now = world[W_NOW]
    due = max(wake, since)
    low = max(0, now - due)
    high = max(low, min(slack, horizon - due))
    late = chooser.lateness(S, low, high)
    world[W_NOW] = max(now, due + late)
    event = table.event(S)
    event[L_DRAW] = draw
    event[L_LATE] = late
    record(S, EV_TICK, node, thread)
    return draw


@njit(cache=True)
def rpc_fail(S, row, horizon):
    """An open RPC fails (schedule.rpc_window: under Java timing within its window after its
    deadline, never past the horizon): sets the time and records the event."""
    world = table.world(S)
    rpcs = table.rpcs(S)
    now = world[W_NOW]
    deadline = rpcs[row, R_DEADLINE]
    low = max(0, now - deadline)
    window = rpcs[row, R_WINDOW] if table.config(S)[C_JAVA_TIMING] == 1 else 0
    high = max(low, min(window, horizon - deadline))
    late = chooser.lateness(S, low, high)
    world[W_NOW] = max(now, deadline + late)
    table.event(S)[L_LATE] = late
    record(S, EV_RPC_FAIL, table.rpcs(S)[row, 0], 0)


@njit(cache=True, inline='always')
def deliver_time(S, row, delay_min):
    """transitions._deliver: a message is delivered at the earliest of its window (or now)."""
    world = table.world(S)
    world[W_NOW] = max(world[W_NOW], table.flight(S)[row, E_SENT] + delay_min)
    return world[W_NOW]


# --- the generic faults ---


@njit(cache=True, inline='always')
def note_fault(S):
    """History.last_fault_ms: a fault happened now."""
    world = table.world(S)
    world[W_LAST_FAULT] = world[W_NOW]


@njit(cache=True, inline='always')
def count_fault(S, kind):
    """One more fault of `kind` as the fuzzer counts them (FAULT_NAMES, in K_* order)."""
    table.world(S)[W_FAULT_COUNTS + kind] += 1


@njit(cache=True, inline='always')
def lose(S, row, width):
    """transitions._drop: a message in flight is lost (a loss fault: its link is up)."""
    record(S, EV_DROP, table.flight(S)[row, E_ID], 0)
    network.remove_envelope(S, row, width)
    note_fault(S)
    count_fault(S, K_LOSS)


@njit(cache=True, inline='always')
def drop_behind_cut(S, row, width):
    """A message whose window closed behind a cut link is lost: not a new fault, but counted
    as a drop."""
    record(S, EV_DROP, table.flight(S)[row, E_ID], 0)
    network.remove_envelope(S, row, width)
    count_fault(S, K_LOSS)


@njit(cache=True)
def duplicate(S, row, width):
    """transitions._duplicate: a copy of a message in flight, with the next id."""
    world = table.world(S)
    flight = table.flight(S)
    record(S, EV_DUPLICATE, flight[row, E_ID], 0)
    count = world[W_FLIGHT]
    if count >= flight.shape[0]:
        world[W_STOP] = OVERFLOW_FLIGHT
    else:
        for f in range(width):
            flight[count, f] = flight[row, f]
        flight[count, E_ID] = world[W_NEXT_ID]
        world[W_NEXT_ID] += 1
        world[W_FLIGHT] = count + 1
    note_fault(S)
    count_fault(S, K_DUPLICATE)


@njit(cache=True, inline='always')
def world_event(S, action, observation):
    """Coverage of an event of the whole world (role "-"), its observation, the cut it changes."""
    coverage.action(S, action, ROLE_WORLD)
    coverage.observation_kind(S, observation)
    coverage.cut_changed(S)


@njit(cache=True)
def partition(S, index, nodes):
    """transitions._partition: the links between the isolation's minority and the rest are cut."""
    world = table.world(S)
    cut = table.cut(S)
    minority = table.isolations(S)[index]
    record(S, EV_PARTITION, index, 0)
    world_event(S, AK_PARTITION, OB_PARTITION)
    for x in range(nodes):
        for y in range(nodes):
            if x != y and ((minority >> x) & 1) != ((minority >> y) & 1) and cut[x, y] == 0:
                cut[x, y] = 1
                world[W_CUT_LINKS] += 1
    note_fault(S)
    count_fault(S, K_PARTITION)
    observed(S, 1)


@njit(cache=True, inline='always')
def cut_link(S, src, dst):
    """transitions._cut_link: one direction of one link."""
    record(S, EV_CUT, src, dst)
    world_event(S, AK_CUT, OB_CUT_LINK)
    table.cut(S)[src, dst] = 1
    table.world(S)[W_CUT_LINKS] += 1
    note_fault(S)
    count_fault(S, K_ONE_WAY)
    observed(S, 1)


@njit(cache=True, inline='always')
def clear_cuts(S, nodes):
    cut = table.cut(S)
    for x in range(nodes):
        for y in range(nodes):
            cut[x, y] = 0
    table.world(S)[W_CUT_LINKS] = 0


@njit(cache=True, inline='always')
def heal(S, nodes):
    """transitions._heal: every link is up again."""
    record(S, EV_HEAL, 0, 0)
    world_event(S, AK_HEAL, OB_HEAL)
    clear_cuts(S, nodes)
    note_fault(S)
    count_fault(S, K_HEAL)
    observed(S, 1)


@njit(cache=True)
def network_fault(S, kind, target, peer, width, nodes):
    """The generic fault of `kind` on its chosen target (a flight row, an isolation, a link);
    False if `kind` is a node's (a crash or a restart: the twin's own)."""
    if kind == K_LOSS:
        lose(S, target, width)
    elif kind == K_DUPLICATE:
        duplicate(S, target, width)
    elif kind == K_PARTITION:
        partition(S, target, nodes)
    elif kind == K_ONE_WAY:
        cut_link(S, target, peer)
    elif kind == K_HEAL:
        heal(S, nodes)
    else:
        return False
    return True


@njit(cache=True, inline='always')
def calm(S, horizon, nodes):
    """transitions._calm, the network's part: the quiet tail begins at the horizon, every link
    up (the twin restarts its nodes that are down)."""
    world = table.world(S)
    world[W_NOW] = horizon
    record(S, EV_CALM, 0, 0)
    world_event(S, AK_CALM, OB_CALM)
    clear_cuts(S, nodes)
    world[W_CALM] = 1
    world[W_CALM_AT] = horizon
    world[W_LAST_FAULT] = horizon
    observed(S, 1)
