"""Properties and the monitor that checks them along a history.

A property has a stable ID (docs/properties.md), a statement and a kind:

- safety: must hold in every state (or every step, for action properties);
- bounded: must hold once faults have stopped for long enough (a time bound);
- expected: RocketMQ violates it by design; checkers must find it and report it as expected;
- measured: a distribution reports print, never pass/fail.

A property checks either states (`holds(world)`) or steps (`holds_step(before, event,
after, observations)`, as TLA+'s [][A]_vars). `expected_when(world, event)` names the
known cause when a violation is one RocketMQ is known to allow (for example, two
leaders in a term because a voter lost its un-fsynced term file in an OS crash); a
violation without such a cause is unexpected, whatever the profile.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

KINDS = ("safety", "bounded", "expected", "measured")


@attrs.frozen(kw_only=True)
class Property:
    id: str
    protocol: str
    kind: str
    statement: str
    holds: Callable[[Any], bool] | None = None
    holds_step: Callable[[Any, Any, Any, tuple], bool] | None = None
    expected_when: Callable[[Any, Any], str | None] | None = None  # (world, event) -> known cause
    explain: Callable[[Any], str] | None = None  # what is wrong, for the report
    # The parts of the world a state predicate reads. The monitor skips a re-check when
    # they are the very same objects as at the last check: worlds are immutable, so the
    # answer cannot have changed.
    reads: Callable[[Any], tuple] | None = None
    # The parts of the world `expected_when` reads besides `reads` (declare it only for a
    # cause that does not depend on the event). While a violated property's `reads` and
    # these are the very same objects as when its cause was found, the cause stands and
    # the monitor does not ask again.
    cause_reads: Callable[[Any], tuple] | None = None

    def __attrs_post_init__(self) -> None:
        assert self.kind in KINDS, self.kind
        assert self.kind == "measured" or (self.holds is None) != (self.holds_step is None), self.id


@attrs.frozen(kw_only=True)
class Violation:
    property: str
    step: int
    t_ms: int
    expected: str | None  # the known cause, when RocketMQ is known to allow it
    detail: str


class Verdicts:
    """What a monitor has found: the first violation of each property, unless a later one has
    no known cause while the first had one (an unexpected violation is never hidden behind an
    expected one); and, for state properties with `reads` (by position in the monitor's
    state properties), what each read when it last held, and when it was last violated, what
    it read then and what its cause read (`cause_reads`; None: not declared). Apart from the
    Monitor so that its generated check, which calls in here, and the Monitor that holds the
    check form no reference cycle."""

    def __init__(self, state_props: list[Property]) -> None:
        self.state_props = state_props
        self.violations: dict[str, Violation] = {}
        self.held: list[tuple | None] = [None] * len(state_props)
        self.failed: list[tuple | None] = [None] * len(state_props)

    def record(self, p: Property, i: int, w: Any, event: Any = None) -> None:
        seen = self.violations.get(p.id)
        if seen is not None and (seen.expected is None or p.expected_when is None):
            return
        cause = p.expected_when(w, event) if p.expected_when else None
        if seen is not None and cause is not None:
            return  # still explained; a later violation without a known cause replaces the first
        detail = p.explain(w) if p.explain else p.statement
        self.violations[p.id] = Violation(property=p.id, step=i, t_ms=w.now, expected=cause, detail=detail)

    def read_violated(self, k: int, read: tuple, i: int, w: Any, event: Any) -> None:
        """State property k (with `reads`) does not hold at step i."""
        p = self.state_props[k]
        failed = self.failed[k]
        if failed is not None and _same(read, failed[0]) and self._stands(p, w, failed[1]):
            return  # the same violation as at its last check, with the same cause
        self.record(p, i, w, event)
        self.failed[k] = (read, p.cause_reads(w) if p.cause_reads is not None else None)

    def _stands(self, p: Property, w: Any, cause_read: tuple | None) -> bool:
        """Whether `record` would leave p's violation as it is, the world reading as at its
        last violating check: that violation has no known cause (an unexpected violation is
        never replaced), or its cause reads the very same objects as when it was found."""
        if self.violations[p.id].expected is None:
            return True
        return cause_read is not None and _same(p.cause_reads(w), cause_read)


class Monitor:
    """Checks every property at every step, keeping what it finds in `Verdicts`.

    `check` runs at every step of every history, so it is straight-line code generated for
    this list of properties (`_compile`): the same tests in the same order as a loop over
    them, without the loop's attribute and dict lookups. A property with `reads` is asked
    again only when one of the objects it reads is not the very same as when it last held;
    that comparison is written out for the number of objects it reads (fixed per property:
    `reads` returns a tuple of one shape)."""

    def __init__(self, properties: list[Property]) -> None:
        self.state_props = [p for p in properties if p.holds is not None]
        self.step_props = [p for p in properties if p.holds_step is not None]
        self._verdicts = Verdicts(self.state_props)
        self.violations = self._verdicts.violations

    def _record(self, p: Property, i: int, w: Any, event: Any = None) -> None:
        self._verdicts.record(p, i, w, event)

    def start(self, w: Any) -> None:
        for p in self.state_props:
            if not p.holds(w):
                self._record(p, 0, w)
        self.check = self._compile(w)  # type: ignore[method-assign]

    def check(self, i: int, before: Any, event: Any, after: Any, obs: tuple) -> None:
        self.check = self._compile(after)  # type: ignore[method-assign]
        self.check(i, before, event, after, obs)

    def _compile(self, w: Any) -> Callable[[int, Any, Any, Any, tuple], None]:
        """The check of this monitor's properties as one generated function; `w` is any world
        of the history, to learn how many objects each `reads` returns."""
        v = self._verdicts
        env: dict[str, Any] = {"H": v.held, "RECORD": v.record, "FAILED": v.read_violated}
        body = ["def check(i, before, event, after, obs):"]
        for k, p in enumerate(self.state_props):
            env[f"P{k}"], env[f"S{k}"] = p, p.holds
            if p.reads is None:
                body.append(f"    if not S{k}(after): RECORD(P{k}, i, after, event)")
                continue
            env[f"R{k}"] = p.reads
            changed = " or ".join(f"r[{j}] is not l[{j}]" for j in range(len(p.reads(w)))) or "False"
            body += [f"    r = R{k}(after)",
                     f"    l = H[{k}]",
                     f"    if l is None or {changed}:",
                     f"        if S{k}(after): H[{k}] = r",
                     f"        else: FAILED({k}, r, i, after, event)"]
        for k, p in enumerate(self.step_props):
            env[f"Q{k}"], env[f"T{k}"] = p, p.holds_step
            body.append(f"    if not T{k}(before, event, after, obs): RECORD(Q{k}, i, after, event)")
        body.append("    return None")
        exec("\n".join(body), env)  # noqa: S102 - generated from this monitor's own property list
        return env["check"]

    def unexpected(self) -> list[Violation]:
        return [v for v in self.violations.values() if v.expected is None]


def _same(a: tuple, b: tuple) -> bool:
    """Whether two reads are the very same objects, part by part."""
    for x, y in zip(a, b):
        if x is not y:
            return False
    return True


_CATALOGUE: dict[str, list[Property]] = {}


def register(props: list[Property]) -> None:
    for p in props:
        _CATALOGUE.setdefault(p.protocol, []).append(p)


def for_protocol(name: str) -> list[Property]:
    import importlib

    if name not in _CATALOGUE:
        importlib.import_module(f"spec.{name}")
    return list(_CATALOGUE.get(name, []))


def measure(name: str, w: Any) -> dict:
    """The protocol's measured quantities for a finished history."""
    import importlib

    return importlib.import_module(f"spec.{name}").measure(w)


def meter(name: str, cfg: Any) -> Any:
    """The protocol's step meter, if its spec module defines `meter(cfg)`: a step hook
    (i, before, event, after, observations) whose `result(world) -> dict` adds measured
    quantities that need the whole history (time spent leaderless, say), not only its
    last state. The fuzzer runs it beside the properties."""
    import importlib

    make = getattr(importlib.import_module(f"spec.{name}"), "meter", None)
    return make(cfg) if make is not None else None
