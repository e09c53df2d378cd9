"""Comparing a twin's history with the reference's, event for event.

The reference runs the same configuration and seed with a `Recorder` attached; `history_diff` then compares
the two event lists, fault draws, statistics and the final worlds (`world_diff`) and names the first place
they part. Each twin's `crosscheck` module supplies the protocol's side (how to describe an event, which
reference world to build); the cross-check gates in property_tests/ call them."""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

from histories.fast.core.layout import (
    EV_CALM,
    EV_CRASH,
    EV_CUT,
    EV_DELIVER,
    EV_DROP,
    EV_DUPLICATE,
    EV_HEAL,
    EV_PARTITION,
    EV_RESTART,
    EV_RPC_FAIL,
    EV_TICK,
)
from reference_impl import core


def event_key(w: core.World, event: Any) -> tuple[int, int, int]:
    """A reference event as the twin's log encodes it: (kind, a, b)."""
    t = type(event)
    if t is core.Tick:
        return EV_TICK, event.node, event.thread
    if t is core.Deliver:
        return EV_DELIVER, event.env, 0
    if t is core.Drop:
        return EV_DROP, event.env, 0
    if t is core.Duplicate:
        return EV_DUPLICATE, event.env, 0
    if t is core.RpcFail:
        return EV_RPC_FAIL, event.rpc, 0
    if t is core.Crash:
        return EV_CRASH, event.node, 2 if event.disk else 1 if event.os else 0
    if t is core.Restart:
        return EV_RESTART, event.node, 0
    if t is core.Partition:
        return EV_PARTITION, core.isolations(len(w.nodes)).index(event.groups), 0
    if t is core.CutLink:
        return EV_CUT, event.src, event.dst
    if t is core.Heal:
        return EV_HEAL, 0, 0
    if t is core.Calm:
        return EV_CALM, 0, 0
    raise TypeError(f"the twin has no event {event!r}")


FAULT_OF = {EV_DROP: "drop", EV_DUPLICATE: "duplicate", EV_RESTART: "restart", EV_PARTITION: "partition",
             EV_CUT: "cut", EV_HEAL: "heal"}


CRASH_OF = {0: "crash", 1: "os_crash", 2: "disk_loss"}


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple] = []
        self.faults: collections.Counter = collections.Counter()

    def __call__(self, i: int, before: core.World, event: Any, after: core.World, obs: tuple) -> None:
        k, a, b = event_key(before, event)
        draw = event.draw if k == EV_TICK else 0
        late = event.late if k in (EV_TICK, EV_RPC_FAIL) else 0
        self.events.append((k, a, b, after.now, draw, late, len(obs)))
        if k == EV_CRASH:
            self.faults[CRASH_OF[b]] += 1
        elif k in FAULT_OF:
            self.faults[FAULT_OF[k]] += 1


def world_diff(ref: core.World, twin: core.World) -> list[str]:
    out = []
    for i, (a, b) in enumerate(zip(ref.nodes, twin.nodes)):
        if a != b:
            fields = [f for f in a.__attrs_attrs__ if getattr(a, f.name) != getattr(b, f.name)]
            out.append(f"node {i}: " + "; ".join(f"{f.name}: reference {getattr(a, f.name)!r} twin "
                                                  f"{getattr(b, f.name)!r}" for f in fields))
    for name in ("now", "alive", "net", "ghost", "history", "since", "fresh"):
        if getattr(ref, name) != getattr(twin, name):
            if name == "net":
                for part in ("flight", "rpcs", "cut", "next_id"):
                    if getattr(ref.net, part) != getattr(twin.net, part):
                        out.append(f"net.{part}: reference {getattr(ref.net, part)!r}\n   twin {getattr(twin.net, part)!r}")
            else:
                out.append(f"{name}: reference {getattr(ref, name)!r}\n   twin {getattr(twin, name)!r}")
    return out


def history_diff(ref: Any, rec: Recorder, ref_stats: dict, twin_result: Any, describe_event: Callable[[tuple | None], str],
                 world: bool = True) -> list[str]:
    """The differences between a reference run and its twin's, for either twin: the first event
    that differs (then nothing more, as what follows it differs anyway), else the end, the
    verdicts, the measures, the fault counts and, with `world`, the final worlds."""
    twin_events = [tuple(int(x) for x in row) for row in twin_result.log]
    problems = []
    for i, (a, b) in enumerate(zip(rec.events, twin_events)):
        if a != b:
            problems.append(f"first difference at step {i + 1}:\n  reference: {describe_event(a)}\n  twin:      "
                            f"{describe_event(b)}")
            if i > 0:
                problems.append(f"  (step {i}: {describe_event(rec.events[i - 1])})")
            return problems
    if len(rec.events) != len(twin_events):
        i = min(len(rec.events), len(twin_events))
        problems.append(f"first difference at step {i + 1}:\n  reference: "
                        f"{describe_event(rec.events[i] if i < len(rec.events) else None)}\n  twin:      "
                        f"{describe_event(twin_events[i] if i < len(twin_events) else None)}")
        return problems
    if (ref.steps, ref.world.now, ref.stopped) != (twin_result.steps, twin_result.t_ms, twin_result.stopped):
        problems.append(f"end: reference {(ref.steps, ref.world.now, ref.stopped)} twin "
                        f"{(twin_result.steps, twin_result.t_ms, twin_result.stopped)}")
    ref_verdicts = sorted((v.property, v.step, v.t_ms, v.expected) for v in ref.violations)
    twin_verdicts = sorted((v.property, v.step, v.t_ms, v.expected) for v in twin_result.violations)
    if ref_verdicts != twin_verdicts:
        problems.append(f"verdicts: reference {ref_verdicts}\n  twin {twin_verdicts}")
    if ref_stats != twin_result.stats:
        problems.append(f"stats: reference {ref_stats} twin {twin_result.stats}")
    if dict(rec.faults) != twin_result.faults:
        problems.append(f"faults: reference {dict(rec.faults)} twin {twin_result.faults}")
    if world:
        problems += world_diff(ref.world, twin_result.world())
    return problems
