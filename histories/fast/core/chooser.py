"""The seeded chooser (reference_impl/core/chooser.py's SeededChooser) over MT: the same draws
from the same MT19937 sequence, in the same order, so (config, seed) names the same history
in both worlds.

`SeededChooser.choose` first decides between a fault and a protocol event: with enabled
fault kinds it draws `random()` against the fault share (skipped when no protocol event is
enabled), then `random() * total` to pick a kind by weight, then `randrange` for the fault
event of that kind; otherwise `randrange` for the protocol event (no draw when there is only
one). A tick then draws its 16-bit value (`getrandbits(16)`) and its lateness within its
window (`randrange`, only when the window is wider than one value), an RPC failure its
lateness. The explorer (FORCE) names the choice itself and draws nothing.
"""

from __future__ import annotations

from numba import njit

from histories.fast.core import table
from histories.fast.core.layout import MAX_FAULT_SHARE, SEEDED
from histories.fast.core.mt import getrandbits, randbelow, random53


@njit(cache=True, inline='always')
def forced(S):
    """Whether the explorer names this step's choice (FORCE)."""
    return table.force(S)[0] != SEEDED


@njit(cache=True)
def fault_kind(S, event_count, kind_count):
    """The kind of this step's fault, or -1 for a protocol event (KINDS[:kind_count] are the
    kinds enabled now, EVENT_KINDS[:event_count] the protocol events)."""
    force = table.force(S)
    if force[0] != SEEDED:
        return force[0]
    if kind_count == 0:
        return -1
    mt = table.mt(S)
    weights = table.weights(S)
    kinds = table.kinds(S)
    total = 0.0
    for q in range(kind_count):
        total += weights[kinds[q]]
    if event_count == 0 or random53(mt) < min(MAX_FAULT_SHARE, total):
        pick = random53(mt) * total
        kind = kinds[kind_count - 1]
        for q in range(kind_count):
            pick -= weights[kinds[q]]
            if pick < 0:
                kind = kinds[q]
                break
        return kind
    return -1


@njit(cache=True, inline='always')
def fault_event(S, count):
    """rng.choice among the `count` fault events of the chosen kind: their index."""
    force = table.force(S)
    return force[1] if force[0] != SEEDED else randbelow(table.mt(S), count)


@njit(cache=True, inline='always')
def protocol_event(S, event_count):
    """rng.choice among the protocol events (no draw when there is one): its index."""
    force = table.force(S)
    if force[0] != SEEDED:
        return force[1]
    return randbelow(table.mt(S), event_count) if event_count > 1 else 0


@njit(cache=True, inline='always')
def tick_draw(S):
    """A tick's draw: getrandbits(16) (Random#nextInt(bound) is draw * bound >> 16)."""
    force = table.force(S)
    return force[2] if force[0] != SEEDED else getrandbits(table.mt(S), 16)


@njit(cache=True, inline='always')
def lateness(S, low, high):
    """How late within [low, high] an event fires (schedule.tick_window, rpc_window): drawn only
    when the window holds more than one value; the explorer takes the earliest."""
    if high > low and table.force(S)[0] == SEEDED:
        return low + randbelow(table.mt(S), high - low + 1)
    return low
