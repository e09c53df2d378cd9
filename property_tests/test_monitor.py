"""The property monitor's shortcuts (spec/properties.py): a property with `reads` is not
re-checked while it reads the very same objects, and a violated one's known cause is not
asked for again while `cause_reads` reads the very same objects too."""

from __future__ import annotations

from types import SimpleNamespace

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
