"""What the seeded chooser may pick next: network events, their horizon, and the fault kinds and events.

Mirrors the scheduling half of reference_impl/core/world.py: which messages are deliverable or held behind a
FIFO link, when the network's next event is due, and which faults the profile allows now. The functions
count and write candidate rows into the state table's scratch; the chooser (chooser.py) draws among them."""

from __future__ import annotations

from numba import njit

from histories.fast.core import table
from histories.fast.core.layout import (
    C_CRASHABLE,
    E_DST,
    E_KIND,
    E_SENT,
    E_SRC,
    EV_DELIVER,
    EV_DROP,
    EV_RPC_FAIL,
    K_CRASH,
    K_DISK_LOSS,
    K_DUPLICATE,
    K_HEAL,
    K_LOSS,
    K_ONE_WAY,
    K_OS_CRASH,
    K_PARTITION,
    K_RESTART,
    R_DEADLINE,
    R_WINDOW,
    W_CUT_LINKS,
)

NO_FIFO = -1  # no message kind is delivered in send order: every envelope may overtake another


@njit(cache=True)
def is_held(S, r, fifo_kind):
    """schedule._held for flight row r, the rows before it having been asked in order this pass
    (`links` cleared first): an envelope of the FIFO kind behind an older one on its uncut link."""
    flight = table.flight(S)
    cut = table.cut(S)
    links = table.links(S)
    if fifo_kind == NO_FIFO or flight[r, E_KIND] != fifo_kind:
        return False
    src = flight[r, E_SRC]
    dst = flight[r, E_DST]
    if (links[src] >> dst) & 1:
        return cut[src, dst] == 0
    links[src] |= 1 << dst
    return False


@njit(cache=True, inline='always')
def clear_links(S, fifo_kind):
    links = table.links(S)
    if fifo_kind != NO_FIFO:
        for j in range(links.shape[0]):
            links[j] = 0


@njit(cache=True)
def net_horizon(S, h, flight_count, rpc_count, delay_max, java, calm_at, calm, now, fifo_kind):
    """The rest of schedule._horizon once the nodes' wake times are in `h`: each envelope's
    latest delivery (not a held one's), each RPC's failure (its window later under Java
    timing), the quiet tail; never before now. Both twins' flight, RPC and world columns
    agree (their layouts)."""
    flight = table.flight(S)
    rpcs = table.rpcs(S)
    clear_links(S, fifo_kind)
    for r in range(flight_count):
        if is_held(S, r, fifo_kind):
            continue
        t = flight[r, E_SENT] + delay_max
        if h < 0 or t < h:
            h = t
    for r in range(rpc_count):
        t = rpcs[r, R_DEADLINE] + rpcs[r, R_WINDOW] if java else rpcs[r, R_DEADLINE]
        if h < 0 or t < h:
            h = t
    if calm_at >= 0 and not calm and (h < 0 or calm_at < h):
        h = calm_at
    if h >= 0 and h < now:
        h = now
    return h


@njit(cache=True)
def net_events(S, h, flight_count, rpc_count, delay_min, delay_max, event_count, fifo_kind):
    """schedule.protocol_events after the ticks: deliveries (none of a held envelope) or drops
    behind a cut link, and RPC failures, due by the horizon, appended to evk/eva[nev:];
    returns the new count."""
    flight = table.flight(S)
    rpcs = table.rpcs(S)
    cut = table.cut(S)
    event_kinds = table.event_kinds(S)
    event_args = table.event_args(S)
    clear_links(S, fifo_kind)
    for r in range(flight_count):
        held = is_held(S, r, fifo_kind)
        if cut[flight[r, E_SRC], flight[r, E_DST]] == 1:
            if flight[r, E_SENT] + delay_max <= h:
                event_kinds[event_count] = EV_DROP
                event_args[event_count] = r
                event_count += 1
        elif flight[r, E_SENT] + delay_min <= h and not held:
            event_kinds[event_count] = EV_DELIVER
            event_args[event_count] = r
            event_count += 1
    for r in range(rpc_count):
        if rpcs[r, R_DEADLINE] <= h:
            event_kinds[event_count] = EV_RPC_FAIL
            event_args[event_count] = r
            event_count += 1
    return event_count


@njit(cache=True)
def fault_kinds(S, flight_count, n):
    """schedule.fault_kinds before the calm, for the generic kinds (a twin appends its own):
    kinds[:nk]; returns nk."""
    config = table.config(S)
    weights = table.weights(S)
    alive = table.alive(S)
    flight = table.flight(S)
    cut = table.cut(S)
    world = table.world(S)
    kinds = table.kinds(S)
    kind_count = 0
    if weights[K_LOSS] > 0:
        for r in range(flight_count):
            if cut[flight[r, E_SRC], flight[r, E_DST]] == 0:
                kinds[kind_count] = K_LOSS
                kind_count += 1
                break
    if weights[K_DUPLICATE] > 0 and flight_count > 0:
        kinds[kind_count] = K_DUPLICATE
        kind_count += 1
    up = False
    if weights[K_CRASH] > 0 or weights[K_OS_CRASH] > 0 or weights[K_DISK_LOSS] > 0:
        for j in range(n):
            if alive[j] == 1 and (config[C_CRASHABLE] >> j) & 1:
                up = True
                break
    if weights[K_CRASH] > 0 and up:
        kinds[kind_count] = K_CRASH
        kind_count += 1
    if weights[K_OS_CRASH] > 0 and up:
        kinds[kind_count] = K_OS_CRASH
        kind_count += 1
    if weights[K_DISK_LOSS] > 0 and up:
        kinds[kind_count] = K_DISK_LOSS
        kind_count += 1
    if weights[K_RESTART] > 0:
        for j in range(n):
            if alive[j] == 0:
                kinds[kind_count] = K_RESTART
                kind_count += 1
                break
    if weights[K_PARTITION] > 0 and n > 1:
        kinds[kind_count] = K_PARTITION
        kind_count += 1
    if weights[K_ONE_WAY] > 0 and world[W_CUT_LINKS] < n * (n - 1):
        kinds[kind_count] = K_ONE_WAY
        kind_count += 1
    if weights[K_HEAL] > 0 and world[W_CUT_LINKS] > 0:
        kinds[kind_count] = K_HEAL
        kind_count += 1
    return kind_count


@njit(cache=True)
def fault_events(S, flight_count, n, isolation_count, kind):
    """schedule.fault_events(w, (kind,)) for the generic kinds: their count m, in
    fev_a/fev_b[:m] (a flight row, a node, a partition's index in core.isolations, or a
    one-way cut's (a, b)). n is the nodes a fault may hit: election's servers, dledger_log's
    servers and clients; a twin lists its own kinds before calling this."""
    config = table.config(S)
    alive = table.alive(S)
    flight = table.flight(S)
    cut = table.cut(S)
    fault_targets = table.fault_targets(S)
    fault_peers = table.fault_peers(S)
    m = 0
    if kind == K_LOSS:
        for r in range(flight_count):
            if cut[flight[r, E_SRC], flight[r, E_DST]] == 0:
                fault_targets[m] = r
                m += 1
    elif kind == K_DUPLICATE:
        for r in range(flight_count):
            fault_targets[m] = r
            m += 1
    elif kind == K_CRASH or kind == K_OS_CRASH or kind == K_DISK_LOSS:
        for j in range(n):
            if alive[j] == 1 and (config[C_CRASHABLE] >> j) & 1:
                fault_targets[m] = j
                m += 1
    elif kind == K_RESTART:
        for j in range(n):
            if alive[j] == 0:
                fault_targets[m] = j
                m += 1
    elif kind == K_PARTITION:
        for g in range(isolation_count):
            fault_targets[m] = g
            m += 1
    elif kind == K_ONE_WAY:
        for a in range(n):
            for b in range(n):
                if a != b and cut[a, b] == 0:
                    fault_targets[m] = a
                    fault_peers[m] = b
                    m += 1
    else:
        fault_targets[m] = 0
        m += 1
    return m
