"""The property monitor's shortcuts (spec/properties.py): a property with `reads` is not
re-checked while it reads the very same objects, and a violated one's known cause is not
asked for again while `cause_reads` reads the very same objects too."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from histories import presentation
from reference_impl import core
from reference_impl.core import chooser, faults
from spec import properties
from spec.properties import Monitor, Property


class Part:
    """A world part; properties compare parts by identity."""

    def __init__(self, ok: bool) -> None:
        self.ok = ok


def world(a: Part, b: Part, now: int = 0) -> SimpleNamespace:
    return SimpleNamespace(a=a, b=b, now=now)


def test_a_known_cause_stands_while_what_it_reads_is_the_same():
    asked: list[int] = []
    causes = {"b1": "known", "b2": None}

    def expected_when(w, event):
        asked.append(w.now)
        return causes[w.b.name]

    prop = Property(id="T-1", protocol="test", kind="safety", statement="a is ok", holds=lambda w: w.a.ok,
                    reads=lambda w: (w.a,), expected_when=expected_when, cause_reads=lambda w: (w.b,))
    m = Monitor([prop])
    good, bad, b1, b2, b3 = Part(True), Part(False), Part(True), Part(True), Part(True)
    b1.name, b2.name, b3.name = "b1", "b2", "b2"
    w0 = world(good, b1)
    m.start(w0)
    steps = [world(bad, b1, 10), world(bad, b1, 20), world(bad, b1, 30), world(bad, b2, 40), world(bad, b3, 50)]
    before = w0
    for i, w in enumerate(steps, 1):
        m.check(i, before, None, w, ())
        before = w
    # asked at the violation (10); not again while a and b are the same objects (20, 30); asked
    # when b changed (40), which found no cause: the violation is unexpected from then on, for good
    assert asked == [10, 40]
    v = m.violations["T-1"]
    assert v.expected is None and v.step == 4


def test_without_cause_reads_a_known_cause_is_asked_for_at_every_violating_step():
    asked: list[int] = []

    def expected_when(w, event):
        asked.append(w.now)
        return "known"

    prop = Property(id="T-2", protocol="test", kind="safety", statement="a is ok", holds=lambda w: w.a.ok,
                    reads=lambda w: (w.a,), expected_when=expected_when)
    m = Monitor([prop])
    bad, b = Part(False), Part(True)
    before = world(Part(True), b)
    for i, t in enumerate((10, 20, 30), 1):
        w = world(bad, b, t)
        m.check(i, before, None, w, ())
        before = w
    assert asked == [10, 20, 30] and m.violations["T-2"].expected == "known"


class EveryStep(Monitor):
    """The monitor without its shortcuts: every property at every step, every violation
    recorded by the same rule (Monitor._record). The oracle for the generated check."""

    def start(self, w):
        for p in self.state_props:
            if not p.holds(w):
                self._record(p, 0, w)

    def check(self, i, before, event, after, obs):
        for p in self.state_props:
            if not p.holds(after):
                self._record(p, i, after, event)
        for p in self.step_props:
            if not p.holds_step(before, event, after, obs):
                self._record(p, i, after, event)


@pytest.mark.parametrize("protocol,profile,seed", [
    ("election", "standard", 1), ("election", "hostile", 2), ("election", "hostile", 5),
    ("dledger_log", "hostile", 3), ("dledger_commitlog", "hostile", 6), ("ha", "hostile", 4),
    ("nameserver", "hostile", 7), ("offsets", "hostile", 8),
])
def test_the_generated_check_finds_what_checking_every_property_at_every_step_finds(protocol, profile, seed):
    """The generated check skips a property while it reads the very same objects, and a known
    cause while what it reads is the same: the violations (step, cause, detail) must be those of
    asking every property at every step."""
    cfg = core.protocol(protocol).make_config(presentation.of(protocol).bench_nodes[0], {}).evolve(
        profile=faults.profile(profile, protocol))
    props = properties.for_protocol(protocol)
    fast, slow = Monitor(props), EveryStep(props)
    w = core.init(cfg)
    fast.start(w)
    slow.start(w)
    pick = chooser.SeededChooser(seed).choose
    for i in range(1, 1501):
        event = pick(w)
        if event is None:
            break
        after, obs = core.step(w, event)
        fast.check(i, w, event, after, obs)
        slow.check(i, w, event, after, obs)
        w = after
    assert fast.violations == slow.violations
