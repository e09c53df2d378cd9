"""Running histories: simulate from (config, seed), replay and check traces.

A history is a world config plus either a seed (the seeded chooser decides) or an
event list (a trace decides). Either way every step is checked against every property
of the protocol, and scenario expectations are checked as their times come.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator
from typing import IO, Any

import attrs

from histories import trace as trace_mod
from reference_impl import core
from reference_impl.core import chooser as chooser_mod
from reference_impl.core import codec, scenario
from spec import properties as props

StepHook = Callable[[int, core.World, Any, core.World, tuple], None]


@attrs.define
class RunResult:
    world: core.World
    steps: int
    stopped: str  # "steps", "until", "idle" (nothing can happen), "expectation"
    violations: list[props.Violation]
    expectations: list[scenario.Expectation]
    measures: dict

    @property
    def unexpected(self) -> list[props.Violation]:
        return [v for v in self.violations if v.expected is None]

    @property
    def failed_expectations(self) -> list[scenario.Expectation]:
        return [e for e in self.expectations if not e.ok]

    def ok(self) -> bool:
        return not self.unexpected and not self.failed_expectations

    def summary(self) -> dict:
        return {
            "ok": self.ok(), "steps": self.steps, "t_ms": self.world.now, "stopped": self.stopped,
            "violations": [attrs.asdict(v) for v in self.violations],
            "expectations": [codec.encode_fields(e) for e in self.expectations],
            "stats": self.measures,
        }


class Expectations:
    """Scenario expectations: immediate ones arrive as observations; `within_ms` ones
    are watched after every step until they hold or their window closes."""

    def __init__(self) -> None:
        self.done: list[scenario.Expectation] = []
        self.pending: list[tuple[scenario.Action, int]] = []

    def see(self, w: core.World, obs: tuple) -> None:
        for _, o in obs:
            if isinstance(o, scenario.Expectation):
                self.done.append(o)
            elif isinstance(o, scenario.ExpectPending):
                self.pending.append((w.cfg.script[o.index], o.deadline_ms))
        if not self.pending:
            return
        still = []
        for action, deadline in self.pending:
            ok, message = scenario.evaluate(w, action)
            if ok and w.now <= deadline:
                self.done.append(scenario.Expectation(index=action.index, ok=True, message=message))
            elif w.now > deadline:
                self.done.append(scenario.Expectation(
                    index=action.index, ok=False,
                    message=f"not true within {action.within_ms} ms ({scenario.describe(action)}); "
                            f"at t={w.now} ms: {message}"))
            else:
                still.append((action, deadline))
        self.pending = still

    def finish(self, w: core.World) -> None:
        for action, deadline in self.pending:
            ok, message = scenario.evaluate(w, action)
            self.done.append(scenario.Expectation(
                index=action.index, ok=ok,
                message=message if ok else f"history ended before it held ({scenario.describe(action)}): {message}"))
        self.pending = []


# A step allocates a few dozen small objects, and reference counting frees nearly all of them
# as soon as the next world replaces the last (worlds are immutable values without cycles).
# CPython's default young-generation threshold (700 allocations) makes the cyclic collector
# scan them every few dozen steps and find nothing; for the length of a history it runs
# less often (checked election histories: about 6 % more events per CPU-second,
# docs/benchmarks.md). Cycles are still collected, and the threshold is restored after.
YOUNG_COLLECTION_THRESHOLD = 20_000


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    old = gc.get_threshold()
    gc.set_threshold(max(old[0], YOUNG_COLLECTION_THRESHOLD), *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)


def run(cfg: core.WorldConfig, choose: Callable[[core.World], Any], steps: int, until_ms: int | None = None,
        hooks: tuple[StepHook, ...] = (), properties: list[props.Property] | None = None) -> RunResult:
    """Run a history of at most `steps` events (and up to `until_ms` of simulated time)."""
    with _fewer_collections():
        return _run(cfg, choose, steps, until_ms, hooks, properties)


def _run(cfg: core.WorldConfig, choose: Callable[[core.World], Any], steps: int, until_ms: int | None,
         hooks: tuple[StepHook, ...], properties: list[props.Property] | None) -> RunResult:
    w = core.init(cfg)
    monitor = props.Monitor(properties if properties is not None else props.for_protocol(cfg.protocol))
    monitor.start(w)
    expectations = Expectations()
    scripted = bool(cfg.script)  # expectations only come from a script
    stopped = "steps"
    i = 0
    step, check = core.step, monitor.check
    while i < steps:
        if until_ms is not None and core.horizon(w) > until_ms:
            stopped = "until"
            break
        event = choose(w)
        if event is None:
            stopped = "idle"
            break
        i += 1
        after, obs = step(w, event)
        check(i, w, event, after, obs)
        if scripted:
            expectations.see(after, obs)
        for hook in hooks:
            hook(i, w, event, after, obs)
        w = after
    expectations.finish(w)
    return RunResult(world=w, steps=i, stopped=stopped, violations=list(monitor.violations.values()),
                     expectations=expectations.done, measures=props.measure(cfg.protocol, w))


def simulate(cfg: core.WorldConfig, seed: int, steps: int, until_ms: int | None = None,
             trace_out: IO[str] | None = None, hooks: tuple[StepHook, ...] = ()) -> RunResult:
    """One history driven by the seeded chooser; optionally written as a trace."""
    chooser = chooser_mod.SeededChooser(seed)
    writer = None
    if trace_out is not None:
        writer = trace_mod.TraceWriter(trace_out, core.init(cfg), seed, {"until_ms": until_ms})
        hooks = hooks + (writer.step,)
    result = run(cfg, chooser.choose, steps, until_ms, hooks)
    if writer is not None:
        writer.close(result.summary())
    return result


# --- replay and check-trace ---


@attrs.define
class Mismatch:
    step: int
    line: int
    message: str


class TraceChooser:
    """Feeds the events of a trace, checking that each is enabled and, after the step,
    that the reference's observable state equals the trace's (fields present in it)."""

    def __init__(self, lines: Iterator[tuple[int, dict]], where: str = "trace") -> None:
        self.lines = lines
        self.where = where
        self.expected_state: dict | None = None
        self.line = 0
        self.step = 0
        self.result: dict | None = None
        self.mismatch: Mismatch | None = None

    def choose(self, w: core.World) -> Any | None:
        if self.mismatch is not None:
            return None
        for n, d in self.lines:
            if "result" in d:
                self.result = d["result"]
                return None
            line = trace_mod.check_step(d, self.where, n)
            if line.event is None:
                raise trace_mod.TraceError(self.where, n, "event",
                                           "is required on a step line (an object with a 'kind')")
            self.line, self.step = n, line.i if line.i is not None else self.step + 1
            try:
                event = codec.decode_event(w, line.event, line.t_ms)
            except codec.DecodeError as e:
                self.mismatch = Mismatch(self.step, n, f"event cannot happen here: {e}")
                return None
            if not core.is_enabled(w, event):
                self.mismatch = Mismatch(self.step, n, f"event {_brief(line.event)} is not enabled at t={w.now} ms")
                return None
            if line.t_ms is not None and line.t_ms != core.event_time(w, event):
                self.mismatch = Mismatch(self.step, n, f"event happens at t={core.event_time(w, event)} ms in the "
                                                       f"reference, the trace says t={line.t_ms} ms")
                return None
            self.expected_state = line.state
            return event
        return None

    def compare(self, i: int, before: core.World, event: Any, after: core.World, obs: tuple) -> None:
        want = self.expected_state
        if want is None or self.mismatch is not None:
            return
        if not isinstance(want, dict):
            self.mismatch = Mismatch(self.step, self.line, "'state' must map node ids to objects")
            return
        got = trace_mod.state_of(after)
        for node_id, fields in want.items():
            if node_id not in got or not isinstance(fields, dict):
                self.mismatch = Mismatch(self.step, self.line, f"unknown node {_brief(node_id)} in state")
                return
            for field, value in fields.items():
                if field not in got[node_id]:
                    self.mismatch = Mismatch(self.step, self.line, f"{node_id}: unknown field {_brief(field)}")
                    return
                if got[node_id][field] != value:
                    self.mismatch = Mismatch(
                        self.step, self.line,
                        f"{node_id}.{field} is {_brief(value)} in the trace but {_brief(got[node_id][field])} "
                        "in the reference")
                    return


@attrs.define
class ReplayResult:
    run: RunResult
    header: dict
    mismatch: Mismatch | None
    recorded: dict | None  # the trace's own result line

    def ok(self) -> bool:
        return self.mismatch is None and self.run.ok()


def replay(f: IO[bytes] | IO[str], hooks: tuple[StepHook, ...] = (), where: str = "trace") -> ReplayResult:
    """Re-run a trace through the reference; stop at the first divergence. Unless it diverged,
    the file is read to its end: a line after the result line is bad input."""
    lines = trace_mod.read_lines(f, where)
    header, cfg = trace_mod.read_header(lines, where)
    # The initial state line (i = 0) must match a fresh world.
    first = next(lines, None)
    feeder = TraceChooser(lines, where)
    if first is not None and "result" not in first[1] and first[1].get("event") is None:
        line = trace_mod.check_step(first[1], where, first[0])
        if line.i not in (None, 0):
            raise trace_mod.TraceError(where, first[0], "i", "of the initial state line (no event) must be 0")
        feeder.expected_state = line.state
        feeder.line = first[0]
        feeder.compare(0, None, None, core.init(cfg), ())
    elif first is not None:
        feeder.lines = _chain(first, lines)
    result = run(cfg, feeder.choose, steps=1 << 62, hooks=(feeder.compare,) + hooks)
    if feeder.mismatch is None:
        for _ in feeder.lines:  # to the end of the file
            pass
    return ReplayResult(run=result, header=header, mismatch=feeder.mismatch, recorded=feeder.result)


def _brief(value: Any, limit: int = 300) -> str:
    """A value from a trace as a message quotes it: its repr, cut at `limit` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _chain(first: tuple[int, dict], rest: Iterator[tuple[int, dict]]) -> Iterator[tuple[int, dict]]:
    yield first
    yield from rest
