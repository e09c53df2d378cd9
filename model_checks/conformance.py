"""Conformance of the reference to its symbolic spec: every step the executable
reference takes must be a step the Z3 transition relation allows.

Theory of operation
-------------------
A reference step (world, event) -> world' is abstracted on both sides
(`spec.abstract`), and the two abstract states become Z3 literals over a finite
universe that covers their values (`spec.universe_for`). The step conforms when

- the abstract state did not change (a stutter: TLA+'s [Next]_vars allows it), or
- some action of the spec, with some parameters, relates the two states, or
- two actions in a row do: one iteration of a Java thread may do two things the
  spec keeps apart (maintainAsCandidate calls nextTerm and then starts the vote round
  in the same loop), and the model's tick is atomic.

Otherwise the step is a mismatch, reported with the action that comes closest: the
one with the longest satisfiable prefix of its clauses, and its first clause that fails.

Scripted steps are skipped: scenario hooks (setCurrVoteFor, changeToCandidate, ...)
are the Java tests' own back doors, outside the protocol.

Along the way the invariants whose proofs apply to the history (those of the profile
matching the faults it exercised) are evaluated on every new abstract state: the
auxiliary invariants of the proofs must hold of the reference too, not just of the model.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import attrs
import z3

from histories import runner
from reference_impl import core
from spec import symbolic as sy


@attrs.define
class Verdict:
    ok: bool
    actions: tuple[str, ...] = ()  # the action(s) that allow the step; () for a stutter
    message: str = ""


@attrs.define
class Mismatch:
    step: int
    event: str
    message: str


def _params_in_domain(u: sy.Universe, action: sy.Action, params: dict) -> list[z3.BoolRef]:
    return [sy.in_domain(u, kind, params[name]) for name, kind in action.params]


def check_step(spec: sy.SymbolicSpec, before: Any, after: Any) -> Verdict:
    """Whether the spec allows the abstract step before -> after (Verdict.message says why not)."""
    if before == after:
        return Verdict(True)
    u = spec.universe_for([before, after])
    s, s2 = spec.concrete(u, before), spec.concrete(u, after)
    changed = {v.name for v in spec.variables if not v.lossy and not sy.evaluate(s[v.name] == s2[v.name])}
    # Only actions that may change what changed can relate the states; fewest changes first.
    candidates = sorted((a for a in spec.actions if changed <= set(a.changes)), key=lambda a: len(a.changes))
    sol = z3.Solver()
    for action in candidates:
        for params in _node_bindings(u, action):
            body = action.body(u, s, s2, **params)
            if any(z3.is_false(z3.simplify(c)) for _, c in body):
                continue  # a guard or update is plainly false for these nodes
            _, clauses = spec.clauses(u, action, s, s2, params)
            sol.push()
            sol.add([c for _, c in clauses] + _params_in_domain(u, action, params))
            r = sol.check()
            sol.pop()
            if r == z3.sat:
                return Verdict(True, (action.name,))
    pair = _two_steps(spec, u, s, s2)
    if pair is not None:
        return Verdict(True, pair)
    return Verdict(False, (), _closest(spec, u, s, s2))


def _node_bindings(u: sy.Universe, action: sy.Action) -> list[dict]:
    """The action's parameters with each node parameter bound to a concrete node (the
    node kind is small and finite here) and the others fresh: reads at concrete nodes
    are lookups, which keeps the queries small."""
    nodes = [name for name, kind in action.params if kind == "node"]
    out = []
    for combo in itertools.product(u.values("node"), repeat=len(nodes)):
        params = dict(zip(nodes, combo))
        params.update({name: u.fresh(kind, name) for name, kind in action.params if kind != "node"})
        out.append(params)
    return out


def _two_steps(spec: sy.SymbolicSpec, u: sy.Universe, s: sy.State, s2: sy.State) -> tuple[str, str] | None:
    mid = sy.declare(u, spec.variables, "mid")
    sol = z3.Solver()
    sol.add(sy.domain_constraints(u, spec.variables, mid))
    flags = []
    for tag, (a_state, b_state) in (("first", (s, mid)), ("second", (mid, s2))):
        step = []
        for action in spec.actions:
            flag = z3.Bool(f"{tag}_{action.name}!{u.name}")
            params, clauses = spec.clauses(u, action, a_state, b_state)
            sol.add(z3.Implies(flag, z3.And([c for _, c in clauses] + _params_in_domain(u, action, params))))
            step.append((flag, action.name))
        sol.add(z3.Or([f for f, _ in step]))
        flags.append(step)
    if sol.check() != z3.sat:
        return None
    model = sol.model()
    names = [next(name for f, name in step if z3.is_true(model.eval(f, model_completion=True))) for step in flags]
    return names[0], names[1]


def _closest(spec: sy.SymbolicSpec, u: sy.Universe, s: sy.State, s2: sy.State) -> str:
    """The action that comes closest: among those that may change every variable the step
    changed (if any may), the one with the longest satisfiable prefix of clauses."""
    changed = {v.name for v in spec.variables if not v.lossy and not sy.evaluate(s[v.name] == s2[v.name])}
    covering = [a for a in spec.actions if changed <= set(a.changes)]
    best: tuple[int, str, str] | None = None
    for action in covering or spec.actions:
        params, clauses = spec.clauses(u, action, s, s2)
        sol = z3.Solver()
        sol.add(_params_in_domain(u, action, params))
        failed = None
        for i, (label, clause) in enumerate(clauses):
            sol.add(clause)
            if sol.check() != z3.sat:
                failed = (i, label)
                break
        if failed is None:  # cannot happen: the whole action was unsatisfiable
            continue
        if best is None or failed[0] > best[0]:
            best = (failed[0], action.name, failed[1])
    if best is None:
        return "no action of the spec allows this step"
    return f"no action of the spec allows this step; closest is {best[1]}, whose clause '{best[2]}' fails"


def describe(spec: sy.SymbolicSpec, before: Any, after: Any) -> str:
    """The fields of the abstract state that the step changed."""
    parts = []
    for f in attrs.fields(type(before)):
        a, b = getattr(before, f.name), getattr(after, f.name)
        if a != b:
            if isinstance(a, frozenset):
                gone, new = sorted(a - b, key=repr), sorted(b - a, key=repr)
                parts.append(f"{f.name}: -{gone} +{new}")
            else:
                parts.append(f"{f.name}: {a} -> {b}")
    return "; ".join(parts)


def holding_invariants(spec: sy.SymbolicSpec, switches: frozenset[str]) -> list[sy.Invariant]:
    """The invariants whose proofs apply under `switches`: the supports of the properties
    the matching profile does not expect to be violated."""
    profile = next((p for p in spec.profiles if p.switches == switches), None)
    expected = profile.expected if profile is not None else {}
    ids: list[str] = []
    for inv in spec.invariants:
        if inv.property is not None and inv.property not in expected:
            ids += [i for i in inv.support or (inv.id,) if i not in ids]
    return [spec.invariant(i) for i in ids]


def violated_invariants(spec: sy.SymbolicSpec, a: Any, invariants: list[sy.Invariant]) -> list[str]:
    u = spec.universe_for([a])
    s = spec.concrete(u, a)
    return [inv.id for inv in invariants if not sy.evaluate(inv.formula(u, s))]


class StepChecker:
    """A runner hook: checks each reference step against the spec and the applicable
    invariants on each new abstract state; keeps the first `keep` mismatches."""

    def __init__(self, spec: sy.SymbolicSpec, switches_of: Callable[[core.World], frozenset[str]] | None = None,
                 keep: int = 5, check_invariants: bool = True) -> None:
        self.spec = spec
        self.switches_of = switches_of or SWITCHES_OF.get(spec.protocol, lambda w: frozenset())
        self.keep = keep
        self.check_invariants = check_invariants
        self.steps = self.stutters = self.skipped = 0
        self.by_action: dict[str, int] = {}
        self.mismatches: list[Mismatch] = []
        self._inv_cache: dict[frozenset[str], list[sy.Invariant]] = {}

    def __call__(self, i: int, before: core.World, event: Any, after: core.World, obs: tuple) -> None:
        if isinstance(event, core.Scripted):
            self.skipped += 1
            return
        self.steps += 1
        a, b = self.spec.abstract(before), self.spec.abstract(after)
        if a == b:
            self.stutters += 1
            return
        # The quiet tail restarts every down node in one world event: check it as the
        # restarts it is made of, one node at a time.
        pairs = [(a, b)]
        if isinstance(event, core.Calm):
            w, pairs, prev = before, [], a
            for n, up in enumerate(before.alive):
                if not up:
                    w = core.restart_node(w, n)
                    pairs.append((prev, self.spec.abstract(w)))
                    prev = pairs[-1][1]
            pairs.append((prev, b))
        for x, y in pairs:
            verdict = check_step(self.spec, x, y)
            if verdict.ok:
                name = "+".join(verdict.actions) or "stutter"
                self.by_action[name] = self.by_action.get(name, 0) + 1
            elif len(self.mismatches) < self.keep:
                self.mismatches.append(Mismatch(i, repr(event),
                                                f"{verdict.message} (step changed {describe(self.spec, x, y)})"))
        if self.check_invariants:
            switches = self.switches_of(after)
            invs = self._inv_cache.get(switches)
            if invs is None:
                invs = self._inv_cache[switches] = holding_invariants(self.spec, switches)
            bad = violated_invariants(self.spec, b, invs)
            if bad and len(self.mismatches) < self.keep:
                self.mismatches.append(Mismatch(i, repr(event), f"invariant(s) {', '.join(bad)} false after the step"))

    def summary(self) -> dict:
        return {"steps": self.steps, "stutters": self.stutters, "skipped_scripted": self.skipped,
                "by_action": dict(sorted(self.by_action.items())),
                "mismatches": [attrs.asdict(m) for m in self.mismatches]}


# Which optional actions of the spec a reference history has exercised.
SWITCHES_OF: dict[str, Callable[[core.World], frozenset[str]]] = {
    "election": lambda w: frozenset({"os_crash"}) if w.history.lost_writes else frozenset(),
}


def check_trace(spec: sy.SymbolicSpec, path: str) -> tuple[StepChecker, Any]:
    """Replay a trace (e.g. written by `rmqspec simulate --trace`) through the reference,
    checking every step against the spec. Returns the checker and the replay result."""

    checker = StepChecker(spec)
    with open(path, encoding="utf-8") as f:
        result = runner.replay(f, hooks=(checker,))
    return checker, result
