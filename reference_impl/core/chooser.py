"""Choosers: who decides what happens next.

Every driver of a world implements `choose(world) -> event | None` (None: nothing
can happen any more). The seeded chooser here serves `simulate` and the fuzzer;
Hypothesis (property_tests), the exhaustive explorer (model_checks) and trace
replay (histories.runner) implement the same interface.

The seeded chooser owns a `random.Random(seed)`: its own generator, never the
global one, so a (config, seed) pair always yields the same history.
"""

from __future__ import annotations

import random
from typing import Any

import reference_impl.core.schedule as schedule
from reference_impl.core.events import RpcFail, Tick
from reference_impl.core.world import World

MAX_FAULT_SHARE = 0.5  # at most half the steps are faults, however large the weights


def below(getrandbits: Any, n: int) -> int:
    """`random.Random.randrange(n)` for n > 0, drawing exactly what it draws (CPython's
    `_randbelow_with_getrandbits`: k = n.bit_length() bits until one is below n), without
    its argument checks: the chooser draws at every step."""
    k = n.bit_length()
    r = getrandbits(k)
    while r >= n:
        r = getrandbits(k)
    return r


class SeededChooser:
    """Protocol events uniformly; a fault with probability equal to the summed weights
    of the fault kinds enabled now (capped at MAX_FAULT_SHARE), kind by weight, then
    uniformly within the kind. A tick (of a node, or of one thread of a threaded node:
    `Protocol.threads`) then draws its random value (`getrandbits(16)`)
    and, when its window allows more than one, its lateness, uniform over the window
    (`randrange`): Java's loop notices a due condition at a uniformly random phase of
    its period. An RPC failure whose window allows more than one time draws its
    lateness the same way (the phase of Netty's response-table scan). The order of these
    draws is part of the contract: (config, seed) names one history, here and in any
    twin of this chooser."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def choose(self, w: World) -> Any | None:
        rng = self.rng
        events = schedule.due_events(w)
        kinds = schedule.fault_kinds(w)
        if kinds:
            prof = w.cfg.profile
            weights = [getattr(prof, k) for k in kinds]
            total = sum(weights)
            if not events or rng.random() < min(MAX_FAULT_SHARE, total):
                pick = rng.random() * total
                for kind, weight in zip(kinds, weights):
                    pick -= weight
                    if pick < 0:
                        break
                return rng.choice(schedule.fault_events(w, (kind,)))
        if not events:
            return None
        bits = rng.getrandbits
        ev = events[below(bits, len(events))] if len(events) > 1 else events[0]
        kind = type(ev)
        if kind is Tick:
            draw = bits(16)
            lo, hi = schedule.tick_window(w, ev.node, ev.thread)
            late = lo + below(bits, hi - lo + 1) if hi > lo else lo
            return Tick(node=ev.node, draw=draw, late=late, thread=ev.thread)
        if kind is RpcFail:
            lo, hi = schedule.rpc_window(w, ev.rpc)
            late = lo + below(bits, hi - lo + 1) if hi > lo else lo
            return RpcFail(rpc=ev.rpc, late=late) if late else ev
        return ev
