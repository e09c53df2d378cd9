"""Hypothesis machines for the DLedger log and commitlog worlds.

A local copy of the generic driver (a chooser that draws every choice from Hypothesis, and
a machine that checks every property after every step): main is growing the shared one in
property_tests/machines.py, and the two are unified at merge.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from reference_impl import codec
from reference_impl import world as wm
from spec import properties as props

DRAWS = st.integers(0, wm.DRAW_SPAN - 1)


class HypothesisChooser:
    """Chooses the next event with Hypothesis draws: a fault with odds 1 in fault_odds + 1 when one
    is enabled (shrinking prefers protocol events), then any enabled event, then the tick's draw."""

    def __init__(self, data: Any, fault_odds: int = 3) -> None:
        self.data = data
        self.fault_odds = fault_odds

    def choose(self, w: wm.World) -> Any | None:
        events = wm.protocol_events(w)
        faults = wm.fault_events(w) if self.fault_odds else []
        if faults and (not events or self.data.draw(st.integers(0, self.fault_odds), label="fault?")
                       == self.fault_odds):
            return self.data.draw(st.sampled_from(faults), label="fault")
        if not events:
            return None
        ev = self.data.draw(st.sampled_from(events), label="event")
        if isinstance(ev, wm.Tick):
            ev = ev.evolve(draw=self.data.draw(DRAWS, label="tick draw"))
        return ev


class WorldMachine(RuleBasedStateMachine):
    """A world driven by Hypothesis and checked by a Monitor after every step."""

    BURST = 40
    PROTOCOL = ""
    NODES = 3
    CONFIG: dict = {}
    PROFILE = wm.FaultProfile()
    SKIP: tuple[str, ...] = ()  # bounded properties an adversary choosing every draw can defeat

    def __init__(self) -> None:
        super().__init__()
        cfg = wm.protocol(self.PROTOCOL).make_config(self.NODES, dict(self.CONFIG)).evolve(profile=self.PROFILE)
        self.world = wm.init(cfg)
        self.monitor = props.Monitor([p for p in props.for_protocol(self.PROTOCOL) if p.id not in self.SKIP])
        self.monitor.start(self.world)
        self.events: list[dict] = []

    def apply(self, ev: Any) -> None:
        before = self.world
        self.events.append(codec.encode_event(before, ev))
        after, obs = wm.step(before, ev)
        assert after.now >= before.now
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
            lines = [f"{v.property} violated at step {v.step} (t={v.t_ms} ms): {v.detail}" for v in bad]
            lines += [f"  {i}: {json.dumps(e, separators=(',', ':'))}" for i, e in enumerate(self.events, 1)]
            raise AssertionError("\n".join(lines))


# Every fault kind is enabled; the weights only matter to the seeded chooser, not to Hypothesis.
ALL_FAULTS = wm.FaultProfile(name="machine", delay_ms=(1, 50), loss=0.01, duplicate=0.01, crash=0.01, restart=0.01,
                             partition=0.01, one_way=0.01, heal=0.01, calm_at_ms=60_000)
WITH_OS_CRASHES = ALL_FAULTS.evolve(name="machine-os", os_crash=0.01)
