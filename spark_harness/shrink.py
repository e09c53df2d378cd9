"""Shrinking a failing history to a minimal list of choices (delta debugging).

A history is (world config, event list). Shrinking treats the list as *timed
choices*: each event carries the time it happened at, and between two choices the
world runs on its own, fault-free: the default next step is the protocol event whose
deadline comes first (a timer's is the end of the slack Java timing gives it after its
wake time, a message's the end of its delay window, an RPC's the end of its timeout's
window; ties in the world's own order, a tick drawing 0, a tick or RPC failure firing
as early as it may), taken only while that deadline is before the next choice's time. Removing a
choice therefore means "this did not happen, the cluster just went on": drop a fault
and the network works; drop a delivery and the message arrives on time anyway; drop
a tick and the timer fires with the default draw.

Replay of a candidate (the same step semantics as `rmqspec replay`: `world.step`,
every property checked after every step): before each choice, default steps run
while they happen before the choice's time; then the choice is applied if it decodes
(events are kept in the trace encoding, reference_impl.core.codec, which names a message
by its endpoints and content, so it survives earlier removals) and is enabled.
A choice that cannot happen any more (its message was never sent, its node is down)
is *skipped*, not fatal, so one removal can take its consequences with it. A
candidate is kept when it violates the same property with the same verdict
(unexpected, or expected with a known cause) as the original; it ends at that step. A
violation a monitor first finds expected and later without a known cause (a state
property whose evidence stops explaining it) is unexpected at that later step, so a
candidate for an unexpected target runs on past an expected violation of it.

After the last choice, default steps run on up to the time of the original violation,
so a violation the cluster reaches on its own needs no choice at all.

The search first tries the fault choices alone (most choices are deliveries and
timers that the defaults reproduce), then runs ddmin (Zeller and Hildebrandt 2002)
over complements: remove one of n chunks of choices, keep the result if it still
fails, otherwise double n, until single choices; the result is 1-minimal: removing
any one choice (fault or not) loses the violation. Chunks are tried from the end, and
a candidate restarts from the saved world after the last choice it shares with the
current best (worlds are immutable values, so saving them is free). The budget counts
replayed steps, not seconds, so shrinking is deterministic; a result cut short by it
is still a valid counterexample, only perhaps not 1-minimal. The written
counterexample is the full trace: choices and the default steps between them,
replayable exactly with `rmqspec replay`.
"""

from __future__ import annotations

from typing import Any

import attrs

from reference_impl import core
from reference_impl.core import codec
from spec import properties as props

DEFAULT_BUDGET = 400_000  # replayed steps (about half a minute on one core)
# An expected violation is RocketMQ's documented behaviour with its cause named: its
# counterexample illustrates, it need not be the smallest, so a fuzz run shrinks it less.
EXPECTED_BUDGET = 20_000
FAULT_KINDS = frozenset({"drop", "duplicate", "crash", "restart", "partition", "cut", "heal"})


@attrs.frozen(kw_only=True)
class Target:
    property: str
    expected: bool  # the violation had a known cause (an expected violation)


Choice = tuple[int, dict]  # (time in ms it happened at, the event in trace encoding)


@attrs.define
class Run:
    choices: list[Choice]  # the choices applied, encoded in the world they were applied to
    worlds: list[core.World]  # worlds[i]: the world after the first i choices (and the defaults before them)
    violated: bool


@attrs.define
class ShrinkResult:
    choices: list[Choice]
    original: int  # choices in the history shrunk
    attempts: int
    exhausted: bool  # the step budget ran out before the result was 1-minimal
    until_ms: int  # default steps continue after the last choice up to this time
    steps: int  # steps replayed while shrinking
    budget: int = DEFAULT_BUDGET  # the step budget it had


def property_of(protocol: str, prop_id: str) -> props.Property:
    for p in props.for_protocol(protocol):
        if p.id == prop_id:
            return p
    raise KeyError(f"{protocol} has no property {prop_id!r}")


def default_step(w: core.World) -> tuple[Any, int] | None:
    """The fault-free next step and the time it is due by: the protocol event whose
    deadline (core.deadline: the end of its window) comes first, taken as early as the
    world allows (a tick or an RPC failure no later than it must). The world must run
    every such event before time passes its deadline, so a complete recorded history has
    chosen each of them before any later choice, and replays exactly."""
    best, best_t = None, -1
    for ev in core.protocol_events(w):
        due = core.deadline(w, ev)
        if best is None or due < best_t:
            best, best_t = ev, due
    if best is None:
        return None
    if type(best) is core.Tick:
        best = core.Tick(node=best.node, draw=0, late=core.tick_window(w, best.node)[0])
    elif type(best) is core.RpcFail:
        best = core.RpcFail(rpc=best.rpc, late=core.rpc_window(w, best.rpc)[0])
    return best, best_t


class Replayer:
    """Applies choices with default steps between them, checking one property."""

    def __init__(self, cfg: core.WorldConfig, target: Target, until_ms: int, on_step: Any = None) -> None:
        self.cfg = cfg
        self.target = target
        self.until_ms = until_ms
        self.prop = property_of(cfg.protocol, target.property)
        self.on_step = on_step  # (before, event, after, obs, chosen) for every step applied
        self.steps = 0

    def run(self, choices: list[Choice], start: Run | None = None, keep: int = 0) -> Run:
        """Apply `choices` after the first `keep` choices of `start` (from scratch if None);
        then default steps up to `until_ms`; stop when the target's violation has its verdict (an
        unexpected target runs on past an expected violation: the monitor may find a later one
        without a known cause)."""
        if start is None:
            w = core.init(self.cfg)
            applied: list[Choice] = []
            worlds = [w]
            if self.prop.holds is not None and not self.prop.holds(w):
                return Run(applied, worlds, True)
        else:
            applied, worlds = start.choices[:keep], start.worlds[:keep + 1]
            w = worlds[-1]
        self.monitor = props.Monitor([self.prop])
        for t, d in choices + [(self.until_ms + 1, None)]:
            while True:
                nxt = default_step(w)
                if nxt is None or nxt[1] >= t:
                    break
                w, verdict = self._apply(w, nxt[0], False)
                if verdict is not None:
                    return Run(applied, worlds, verdict)
            if d is None:
                break
            try:
                ev = codec.decode_event(w, d)
            except codec.DecodeError:
                continue
            if not core.is_enabled(w, ev):
                continue
            encoded = codec.encode_event(w, ev)
            w, verdict = self._apply(w, ev, True)
            # Keep the time the defaults ran up to, not the event's own (a delivery may happen
            # earlier in its window): a replay from scratch must run the very same defaults.
            applied.append((t, encoded))
            worlds.append(w)
            if verdict is not None:
                return Run(applied, worlds, verdict)
        return Run(applied, worlds, False)

    def _apply(self, w: core.World, ev: Any, chosen: bool) -> tuple[core.World, bool | None]:
        """Step; the verdict is None while the target holds, else whether it failed as wanted."""
        after, obs = core.step(w, ev)
        self.steps += 1
        if self.on_step is not None:
            self.on_step(w, ev, after, obs, chosen)
        self.monitor.check(self.steps, w, ev, after, obs)
        v = self.monitor.violations.get(self.prop.id)
        if v is None or (v.expected is not None and not self.target.expected):
            return after, None  # an expected violation may be followed by one with no known cause
        return after, (v.expected is not None) == self.target.expected


def first_violation(cfg: core.WorldConfig, events: list[dict], prop_id: str | None = None) -> Target | None:
    """The violation a recorded history shows, replayed as is: of `prop_id` if given,
    else its first unexpected one, else its first expected one."""
    w = core.init(cfg)
    monitor = props.Monitor(props.for_protocol(cfg.protocol))
    monitor.start(w)
    for i, d in enumerate(events, 1):
        try:
            ev = codec.decode_event(w, d)
        except codec.DecodeError:
            break
        if not core.is_enabled(w, ev):
            break
        after, obs = core.step(w, ev)
        monitor.check(i, w, ev, after, obs)
        w = after
    found = sorted(monitor.violations.values(), key=lambda v: (v.expected is not None, v.step))
    if prop_id is not None:
        found = [v for v in found if v.property == prop_id]
    return Target(property=found[0].property, expected=found[0].expected is not None) if found else None


def shrink(cfg: core.WorldConfig, choices: list[Choice], target: Target, budget: int = DEFAULT_BUDGET,
           on_attempt: Any = None) -> ShrinkResult:
    """A 1-minimal sub-list of `choices` that still shows `target` (module docstring).
    `on_attempt(steps replayed, choices in the best so far)` after each candidate (progress)."""
    until_ms = choices[-1][0] if choices else 0
    replayer = Replayer(cfg, target, until_ms)
    best = replayer.run(choices)
    if not best.violated:
        raise ValueError(f"the history does not violate {target.property} "
                         f"({'expected' if target.expected else 'unexpected'}) when replayed")
    attempts = 1
    # Most choices are the network and the timers doing their job; try the faults alone first.
    faults_only = [c for c in best.choices if c[1].get("kind") in FAULT_KINDS]
    if len(faults_only) < len(best.choices):
        attempts += 1
        cand = replayer.run(faults_only)
        if cand.violated:
            best = cand
    n = 2
    while best.choices:
        size = -(-len(best.choices) // n)
        improved = False
        for a in reversed(range(0, len(best.choices), size)):
            if replayer.steps >= budget:
                return ShrinkResult(best.choices, len(choices), attempts, exhausted=True, until_ms=until_ms,
                                    steps=replayer.steps, budget=budget)
            attempts += 1
            cand = replayer.run(best.choices[a + size:], start=best, keep=a)
            if cand.violated and len(cand.choices) < len(best.choices):
                best = cand
                n = max(n - 1, 2)
                improved = True
            if on_attempt is not None:
                on_attempt(replayer.steps, len(best.choices))
            if improved:
                break
        if not improved:
            if n >= len(best.choices):
                break
            n = min(2 * n, len(best.choices))
    return ShrinkResult(best.choices, len(choices), attempts, exhausted=False, until_ms=until_ms,
                        steps=replayer.steps, budget=budget)


def record(cfg: core.WorldConfig, choose: Any, steps: int) -> list[Choice]:
    """The timed events of the history a chooser makes, up to `steps` events."""
    w = core.init(cfg)
    out = []
    for _ in range(steps):
        ev = choose(w)
        if ev is None:
            break
        encoded = codec.encode_event(w, ev)
        w, _ = core.step(w, ev)
        out.append((w.now, encoded))
    return out


def steps_of(cfg: core.WorldConfig, choices: list[Choice], target: Target, until_ms: int
             ) -> tuple[list[dict], list[int]]:
    """Every step a replay of `choices` takes up to the violation (trace encoding), and
    the positions (1-based step numbers) of the choices among them."""
    steps: list[dict] = []
    chosen: list[int] = []

    def hook(before: core.World, ev: Any, after: core.World, obs: tuple, is_choice: bool) -> None:
        steps.append(codec.encode_event(before, ev))
        if is_choice:
            chosen.append(len(steps))

    Replayer(cfg, target, until_ms, on_step=hook).run(choices)
    return steps, chosen
