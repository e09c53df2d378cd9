"""Hypothesis drivers for worlds: a chooser any protocol's world can use, and the election machine.

`HypothesisChooser` implements the chooser interface of reference_impl.core.chooser
(`choose(world) -> event | None`) with `data.draw`, so every choice is shrinkable: which
event happens next (protocol events are listed first, so shrinking prefers them over
faults) and each tick's random draw (shrinking prefers 0). It only uses the generic
world API, so other protocols' machines reuse it as it is.

`ElectionMachine` runs one election world: a rule for a single chosen event (possibly a
fault), a rule for a burst of protocol events, and an invariant that fails on any
unexpected property violation with the property id, what is wrong, and the events so far.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from reference_impl import core
from reference_impl.core import codec
from reference_impl.election import world as election_world
from spec import properties as props

DRAWS = st.integers(0, core.DRAW_SPAN - 1)


class HypothesisChooser:
    """Chooses the next event of any world with Hypothesis draws.

    `fault_odds` k: when a fault is enabled, one happens if a draw in [0, k] comes out k
    (1 in k+1; shrinking moves the draw to 0, towards protocol events); 0: never a fault.
    """

    def __init__(self, data: Any, fault_odds: int = 3) -> None:
        self.data = data
        self.fault_odds = fault_odds

    def choose(self, w: core.World) -> Any | None:
        events = core.protocol_events(w)
        faults = core.fault_events(w) if self.fault_odds else []
        if faults and (not events or self.data.draw(st.integers(0, self.fault_odds), label="fault?")
                       == self.fault_odds):
            return self.data.draw(st.sampled_from(faults), label="fault")
        if not events:
            return None
        ev = self.data.draw(st.sampled_from(events), label="event")
        if isinstance(ev, core.Tick):
            lo, hi = core.tick_window(w, ev.node, ev.thread)
            late = self.data.draw(st.integers(lo, hi), label="tick late") if hi > lo else lo
            ev = ev.evolve(draw=self.data.draw(DRAWS, label="tick draw"), late=late)
        elif isinstance(ev, core.RpcFail):
            lo, hi = core.rpc_window(w, ev.rpc)
            ev = ev.evolve(late=self.data.draw(st.integers(lo, hi), label="rpc late") if hi > lo else lo)
        return ev


class WorldMachine(RuleBasedStateMachine):
    """A world driven by Hypothesis and checked by a Monitor after every step. Subclasses set
    `make_config()` and `properties()`."""

    BURST = 30  # most protocol events in one burst rule

    def make_config(self) -> core.WorldConfig:
        raise NotImplementedError

    def properties(self) -> list[props.Property]:
        raise NotImplementedError

    def __init__(self) -> None:
        super().__init__()
        self.world = core.init(self.make_config())
        self.monitor = props.Monitor(self.properties())
        self.monitor.start(self.world)
        self.events: list[dict] = []

    def apply(self, ev: Any) -> None:
        before = self.world
        self.events.append(codec.encode_event(before, ev))
        after, obs = core.step(before, ev)
        assert after.now >= before.now, f"time went back from {before.now} to {after.now} ms on {ev}"
        self.monitor.check(len(self.events), before, ev, after, obs)
        self.world = after

    @rule(data=st.data())
    def one_event(self, data: Any) -> None:
        ev = HypothesisChooser(data).choose(self.world)
        if ev is not None:
            self.apply(ev)

    @rule(data=st.data(), n=st.integers(1, BURST))
    def protocol_burst(self, data: Any, n: int) -> None:
        chooser = HypothesisChooser(data, fault_odds=0)
        for _ in range(n):
            ev = chooser.choose(self.world)
            if ev is None:
                return
            self.apply(ev)

    @invariant()
    def no_unexpected_violation(self) -> None:
        bad = self.monitor.unexpected()
        if bad:
            raise AssertionError(self.report(bad))

    def report(self, violations: list[props.Violation]) -> str:
        lines = [f"{v.property} violated at step {v.step} (t={v.t_ms} ms): {v.detail}" for v in violations]
        lines.append(f"events so far ({len(self.events)}), one JSON object per line:")
        lines += [f"  {i}: {json.dumps(e, separators=(',', ':'))}" for i, e in enumerate(self.events, 1)]
        return "\n".join(lines)


# --- the election machines ---

# Every fault kind is enabled; the weights only matter to the seeded chooser, not to Hypothesis.
ELECTION_FAULTS = core.FaultProfile(name="machine", delay_ms=(1, 50), loss=0.01, duplicate=0.01, crash=0.01,
                                    restart=0.01, partition=0.01, one_way=0.01, heal=0.01, calm_at_ms=60_000,
                                    description="property_tests: every fault but OS crashes")
ELECTION_OS_FAULTS = ELECTION_FAULTS.evolve(name="machine-os", os_crash=0.01,
                                            description="property_tests: every fault, OS crashes included")


def election_properties() -> list[props.Property]:
    # ELE-L is left out: Hypothesis picks the vote timers' random draws, and an adversary that
    # picks them can keep candidates colliding forever (no randomized election is live against
    # that). ELE-L is a measured property of the seeded fuzzer, whose draws are random.
    return [p for p in props.for_protocol("election") if p.id != "ELE-L"]


class ElectionMachine(WorldMachine):
    NODES = 3
    PROFILE = ELECTION_FAULTS

    def make_config(self) -> core.WorldConfig:
        return election_world.make_config(self.NODES).evolve(profile=self.PROFILE)

    def properties(self) -> list[props.Property]:
        return election_properties()


class ThreeNodes(ElectionMachine):
    NODES = 3


class FiveNodes(ElectionMachine):
    NODES = 5


class ThreeNodesWithOsCrashes(ElectionMachine):
    """OS crashes lose the currterm file: ELE-1/2/3 may fail, but only as the classified, expected violation."""

    NODES = 3
    PROFILE = ELECTION_OS_FAULTS
