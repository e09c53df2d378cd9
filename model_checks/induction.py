"""The Z3 engine behind `rmqspec prove`: inductive invariants, counterexamples to
induction, and bounded model checking over a protocol's symbolic spec (spec/symbolic.py).

- `inductive`: Init => Inv and Inv /\\ Next => Inv', for the property together with
  the auxiliary invariants its proof assumes (Invariant.support), over the parametric
  universe (uninterpreted node and quorum sorts with the quorum-intersection axiom:
  any cluster size). A failed consecution query gives a counterexample to induction
  (CTI): a state satisfying the support, an action, and the successor that breaks one
  of the support's invariants.
- `step_property`: Next => P(s, s') for every action (e.g. terms never decrease).
- `vacuity`: the support invariants are satisfiable together with Init, and every action
  of Next can fire from a state satisfying them (a proof over an empty Next would be
  worthless).
- `bmc`: k steps from Init on a fixed cluster, each step one action of Next; the first
  k at which the property fails gives a trace.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import z3

from spec import symbolic as sy

QUERY_TIMEOUT_MS = 20_000


@attrs.define
class Outcome:
    status: str  # "proved", "violated", "unknown"
    seconds: float
    detail: str = ""
    cti: dict | None = None  # a counterexample to induction, rendered
    trace: list[dict] | None = None  # a BMC trace: [{"action": ..., "params": ..., "state": ...}]


def _solver(timeout_ms: int) -> z3.Solver:
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    return s


# --- rendering a Z3 model as plain values ---


class Decoder:
    """Turns values of a Z3 model into plain Python values, knowing each value's kind."""

    def __init__(self, model: z3.ModelRef, u: sy.Universe, spec: sy.SymbolicSpec) -> None:
        self.model, self.u, self.spec = model, u, spec
        nodes = list(u.values("node") or model.get_universe(u.sort("node")) or [])
        if not nodes:
            nodes = [z3.Const("n!0", u.sort("node"))]
        self.nodes = nodes
        by_const = {str(c): k for k, c in u.node_of.items()}
        self.node_names = {str(n): by_const.get(str(n), f"n{i}") for i, n in enumerate(nodes)}
        self.enum_names = {kind: {str(c): name for name, c in u.extra[f"enum:{kind}"].items()}
                           for kind, t in spec.kinds.items() if t and t.startswith("enum:")}

    def value(self, e: z3.ExprRef, kind: str | None = None) -> Any:
        v = self.model.eval(e, model_completion=True)
        if z3.is_true(v):
            return True
        if z3.is_false(v):
            return False
        if kind == "node":
            return self.node_names.get(str(v), str(v).split("!")[0])
        if kind in self.enum_names:
            return self.enum_names[kind].get(str(v), str(v).split("!")[0])
        if z3.is_int_value(v) or z3.is_bv_value(v):
            return sy.as_int(v)
        return str(v).split("!")[0]

    def params(self, params: dict[str, z3.ExprRef], action: sy.Action) -> dict[str, Any]:
        kinds = dict(action.params)
        return {name: self.value(p, kinds[name]) for name, p in params.items()}

    def pools(self, states: Sequence[sy.State], extra: Sequence[z3.ExprRef]) -> dict[str, list]:
        """The values of each kind worth showing: the finite ones, else for an integer kind
        those the per-node variables and the parameters take, and -1 up to the largest."""
        pools: dict[str, list] = {"node": self.nodes}
        for kind in self.enum_names:
            pools[kind] = list(self.u.extra[f"enum:{kind}"].values())
        for kind, theory in self.spec.kinds.items():
            if theory != "int":
                continue
            if self.u.values(kind) is not None:
                pools[kind] = list(self.u.values(kind))
                continue
            seen = {-1, 0}
            for st in states:
                for var in self.spec.variables:
                    if var.index == ("node",) and var.value == kind:
                        seen |= {self.value(sy.sel(st[var.name], n)) for n in self.nodes}
            seen |= {self.value(e) for e in extra if sy.is_num(self.u, kind) and e.sort() == self.u.sort(kind)}
            seen = {v for v in seen if isinstance(v, int)}
            pools[kind] = [sy.num(self.u, kind, v) for v in sorted(seen | set(range(-1, min(max(seen), 6) + 1)))]
        return pools

    def states(self, states: Sequence[sy.State], extra: Sequence[z3.ExprRef] = ()) -> list[dict]:
        """Each state as {var: value}: per-node variables as {node: value}, sets as sorted
        lists of tuples, other arrays as {point: value}."""
        pools = self.pools(states, extra)
        out = []
        for st in states:
            d: dict[str, Any] = {}
            for var in self.spec.variables:
                if "quorum" in var.index:
                    continue
                arr = st[var.name]
                combos = list(itertools.product(*[pools[k] for k in var.index]))
                if var.index == ("node",):
                    d[var.name] = {self.value(n, "node"): self.value(sy.sel(arr, n), var.value) for n in self.nodes}
                elif var.value == "bool":
                    d[var.name] = sorted((tuple(self.value(c, k) for c, k in zip(combo, var.index)) for combo in combos
                                          if z3.is_true(self.model.eval(sy.sel(arr, *combo), model_completion=True))),
                                         key=repr)
                else:
                    d[var.name] = {repr(tuple(self.value(c, k) for c, k in zip(combo, var.index))):
                                   self.value(sy.sel(arr, *combo), var.value) for combo in combos}
            out.append(d)
        return out


# --- inductiveness ---


def induction_universe(spec: sy.SymbolicSpec, nodes: int | None) -> sy.Universe:
    """Parametric (any cluster size) when `nodes` is None, else `nodes` nodes with the
    spec's bounded integer kinds (bit-vectors: a finite-domain query)."""
    if nodes is None:
        return sy.parametric(spec.kinds)
    ranges = {k: range(lo, hi + 1) for k, (lo, hi) in spec.induction_bounds.items()}
    return sy.finite_nodes(spec.kinds, tuple(f"n{i}" for i in range(nodes)), ranges, bitvec=True)


def _new_solver(u: sy.Universe, timeout_ms: int) -> z3.Solver:
    sol = z3.SolverFor("QF_BV") if u.extra.get("bitvec") else z3.Solver()
    sol.set("timeout", timeout_ms)
    return sol


def inductive(spec: sy.SymbolicSpec, inv_id: str, switches: frozenset[str] = frozenset(),
              timeout_ms: int = QUERY_TIMEOUT_MS, nodes: int | None = None) -> Outcome:
    """Prove the invariant `inv_id` inductive together with its support: for any cluster
    size (nodes None), or for every state of a fixed cluster with bounded integers."""
    start = time.perf_counter()
    u = induction_universe(spec, nodes)
    s, s2 = sy.declare(u, spec.variables, "s"), sy.declare(u, spec.variables, "s2")
    support = [spec.invariant(i) for i in spec.invariant(inv_id).support or (inv_id,)]
    unknown = []
    sol = _new_solver(u, timeout_ms)
    sol.add(spec.axioms(u))
    sol.add(sy.domain_constraints(u, spec.variables, s) + sy.domain_constraints(u, spec.variables, s2))
    sol.push()
    sol.add([c for _, c in spec.init(u, s)])
    for inv in support:
        sol.push()
        sol.add(z3.Not(inv.formula(u, s)))
        r = sol.check()
        if r == z3.sat:
            states = Decoder(sol.model(), u, spec).states([s])
            return Outcome("violated", time.perf_counter() - start, f"Init does not imply {inv.id}",
                           cti={"action": "init", "breaks": inv.id, "state": states[0]})
        if r == z3.unknown:
            unknown.append(f"init/{inv.id}")
        sol.pop()
    sol.pop()
    sol.add([inv.formula(u, s) for inv in support])
    after = {inv.id: inv.formula(u, s2) for inv in support}
    read = {inv.id: reads(u, inv, s) for inv in support}
    lossy = {v.name for v in spec.variables if v.lossy}
    skipped = 0
    for action in spec.next_actions(switches):
        sol.push()
        params, clauses = spec.clauses(u, action, s, s2)
        sol.add([c for _, c in clauses] + [sy.in_domain(u, k, params[n]) for n, k in action.params])
        moved = set(action.changes) | lossy
        for inv in support:  # one query per invariant: much faster than one query for all of them
            if not read[inv.id] & moved:  # it reads only variables the action keeps: preserved as is
                skipped += 1
                continue
            sol.push()
            sol.add(z3.Not(after[inv.id]))
            r = sol.check()
            if r == z3.sat:
                dec = Decoder(sol.model(), u, spec)
                states = dec.states([s, s2], list(params.values()))
                shown = dec.params(params, action)
                return Outcome("violated", time.perf_counter() - start,
                               f"{action.name}{_args(shown)} breaks {inv.id}",
                               cti={"action": action.name, "params": shown, "breaks": inv.id,
                                    "before": states[0], "after": states[1]})
            if r == z3.unknown:
                unknown.append(f"{action.name}/{inv.id}")
            sol.pop()
        sol.pop()
    if unknown:
        return Outcome("unknown", time.perf_counter() - start, "solver gave up on " + ", ".join(unknown))
    aux = [i.id for i in support if i.id != inv_id]
    return Outcome("proved", time.perf_counter() - start,
                   "inductive" + (f" with {', '.join(aux)}" if aux else "")
                   + (f" ({skipped} action/invariant pairs trivially: the action keeps what the invariant reads)"
                      if skipped else ""))


class _Recorder:
    """A state that records which variables a formula reads."""

    def __init__(self, state: sy.State) -> None:
        self.__dict__["_state"], self.__dict__["seen"] = state, set()

    def __getattr__(self, name: str) -> Any:
        self.seen.add(name)
        return getattr(self._state, name)

    def __getitem__(self, name: str) -> Any:
        self.seen.add(name)
        return self._state[name]


def reads(u: sy.Universe, inv: sy.Invariant, s: sy.State) -> set[str]:
    """The state variables the invariant's formula reads."""
    rec = _Recorder(s)
    inv.formula(u, rec)
    return rec.seen


SMALL_NODES = ("n0", "n1", "n2")  # the finite universe a step's counterexample is looked for in
# Z3 can give up on the finite query too, depending on the order its terms were created in (so
# on what ran before in the process): it is asked again with these random seeds before the
# action counts as given up on. A counterexample found with any seed is one.
FINITE_RETRY_SEEDS = (1, 2, 3)


def step_property(spec: sy.SymbolicSpec, prop_id: str, switches: frozenset[str] = frozenset(),
                  timeout_ms: int = QUERY_TIMEOUT_MS) -> Outcome:
    """Every action of Next satisfies the two-state property, for any cluster size.

    When Z3 gives up on the parametric query (quantified counterexamples are hard for its
    model finder, and whether it finds one can depend on the order terms were created in),
    the action is asked again over three nodes: a counterexample there is one for the
    parametric claim too, while no counterexample there proves nothing and stays unknown."""
    start = time.perf_counter()
    prop = next(p for p in spec.step_properties if p.id == prop_id)
    universes = [sy.parametric(spec.kinds), sy.finite_nodes(spec.kinds, SMALL_NODES)]
    gave_up = []
    for action in spec.next_actions(switches):
        for u in universes:
            r, found = _step_query(spec, u, action, prop, timeout_ms)
            for seed in FINITE_RETRY_SEEDS if r == z3.unknown and u is not universes[0] else ():
                r, found = _step_query(spec, u, action, prop, timeout_ms, seed)  # gave up: another search order
                if r != z3.unknown:
                    break
            if r == z3.sat:
                shown, before, after = found
                where = "" if u is universes[0] else f" (N={len(SMALL_NODES)})"
                return Outcome("violated", time.perf_counter() - start,
                               f"{action.name}{_args(shown)} breaks {prop_id}{where}",
                               cti={"action": action.name, "params": shown, "breaks": prop_id,
                                    "before": before, "after": after})
            if r == z3.unsat and u is universes[0]:
                break
        else:
            gave_up.append(action.name)  # keep looking: another action may still break it
    if gave_up:
        return Outcome("unknown", time.perf_counter() - start, f"solver gave up on {', '.join(gave_up)}")
    return Outcome("proved", time.perf_counter() - start, "every action")


def _step_query(spec: sy.SymbolicSpec, u: sy.Universe, action: Any, prop: Any, timeout_ms: int,
                seed: int = 0) -> tuple:
    """Can `action` break the two-state property in universe `u`? (result, (params, before, after))."""
    s, s2 = sy.declare(u, spec.variables, "s"), sy.declare(u, spec.variables, "s2")
    sol = _solver(timeout_ms)
    if seed:
        sol.set("random_seed", seed)
    sol.add(spec.axioms(u))
    params, clauses = spec.clauses(u, action, s, s2)
    sol.add([c for _, c in clauses])
    sol.add(z3.Not(prop.formula(u, s, s2)))
    r = sol.check()
    if r != z3.sat:
        return r, None
    dec = Decoder(sol.model(), u, spec)
    states = dec.states([s, s2], list(params.values()))
    return r, (dec.params(params, action), states[0], states[1])


def vacuity(spec: sy.SymbolicSpec, inv_ids: Sequence[str], switches: frozenset[str] = frozenset(),
            node_ids: Sequence[str] = ("n0", "n1", "n2"), timeout_ms: int = QUERY_TIMEOUT_MS) -> list[str]:
    """What would make a proof over these invariants vacuous: an unsatisfiable Init with
    them, or actions of Next that cannot fire (changing what they claim to change) from
    any state satisfying them. Asked on a finite cluster: a witness there is a witness."""
    bounds = spec.bmc_bounds or {}
    ranges = {k: range(lo, hi + 1) for k, (lo, hi) in bounds.items()}
    for kind, theory in spec.kinds.items():
        if theory == "int" and kind not in ranges:
            ranges[kind] = range(-1, 4)
    u = sy.finite_nodes(spec.kinds, node_ids, ranges, bitvec=True)
    s, s2 = sy.declare(u, spec.variables, "s"), sy.declare(u, spec.variables, "s2")
    problems = []
    sol = z3.SolverFor("QF_BV")
    sol.set("timeout", timeout_ms)
    sol.add(spec.axioms(u))
    sol.add(sy.domain_constraints(u, spec.variables, s) + sy.domain_constraints(u, spec.variables, s2))
    sol.add([spec.invariant(i).formula(u, s) for i in inv_ids])
    sol.push()
    sol.add([c for _, c in spec.init(u, s)])
    if sol.check() != z3.sat:
        problems.append("Init is unsatisfiable with the invariants")
    sol.pop()
    for action in spec.next_actions(switches):
        sol.push()
        params, clauses = spec.clauses(u, action, s, s2)
        sol.add([c for _, c in clauses] + [sy.in_domain(u, k, params[n]) for n, k in action.params])
        if action.changes:  # an action that changes something must be able to change it
            sol.add(z3.Or([s[v] != s2[v] for v in action.changes]))
        if sol.check() != z3.sat:
            problems.append(f"action {action.name} never fires")
        sol.pop()
    return problems


def _args(params: dict) -> str:
    return "(" + ", ".join(f"{k}={v}" for k, v in params.items()) + ")"


# --- bounded model checking ---


def bmc(spec: sy.SymbolicSpec, bad: Callable[[sy.Universe, sy.State], z3.BoolRef], node_ids: Sequence[str],
        depth: int, switches: frozenset[str] = frozenset(), init_state: Any = None,
        bounds: dict[str, tuple[int, int]] | None = None, two_state: bool = False, every: int = 4,
        timeout_ms: int = 60_000, shortest: bool = True, schedule: Sequence[str] | None = None) -> Outcome:
    """Search traces of up to `depth` actions from Init (or from the abstract state
    `init_state`) on the cluster `node_ids`, with integer kinds within `bounds`
    (default -1..depth), for a state where `bad` holds. Returns "violated" with a
    trace, "proved" (no violation within the bounds) or "unknown".

    The encoding is finite-domain (bit-vectors, bit-blasted to SAT); messages are never
    lost (`lossless`: loss enables no action in these models); a step may stutter, so
    asking for `bad` after k steps covers every shorter trace, and the query is made at
    every `every`-th depth only (a satisfiable query is cheap, an unsatisfiable one at a
    large depth is not). Stutter steps are removed from the trace. `two_state`: `bad`
    is called as bad(u, state, previous_state), for step properties. `shortest`: after a
    hit, ask the depths below it for a shorter trace (off when an unsatisfiable query at
    those depths is too costly). `schedule`: a fixed sequence of action names, one per
    step (no stutter); `bad` is asked after the last step only (used to expand a trace
    found over macro actions into a trace of Next)."""
    start = time.perf_counter()
    ranges = {k: range(lo, hi + 1) for k, (lo, hi) in (bounds or {}).items()}
    for kind, theory in spec.kinds.items():
        if theory == "int" and kind not in ranges:
            ranges[kind] = range(-1, depth + 1)
    u = sy.finite_nodes(spec.kinds, node_ids, ranges, bitvec=True)
    u.extra["lossless"] = True
    states = [sy.declare(u, spec.variables, "b0")]
    sol = z3.SolverFor("QF_BV")
    sol.set("timeout", timeout_ms)
    sol.add(spec.axioms(u))
    sol.add(sy.domain_constraints(u, spec.variables, states[0]))
    sol.add([c for _, c in spec.init(u, states[0])])
    if init_state is not None:
        lit = spec.concrete(u, init_state)
        sol.add([states[0][v.name] == lit[v.name] for v in spec.variables])
    actions = [a for a in spec.next_actions(switches) if not spec.bmc_actions or a.name in spec.bmc_actions]
    picks: list[list[tuple[z3.BoolRef, sy.Action | None, dict]]] = []
    last_unsat = -1
    if schedule is not None:
        depth, every = len(schedule), len(schedule) + 1
        by_name = {a.name: a for a in spec.next_actions(switches)}

    def bad_at(j: int) -> z3.BoolRef:
        if two_state:
            return bad(u, states[j], states[j - 1]) if j > 0 else z3.BoolVal(False)
        return bad(u, states[j])

    for k in range(depth + 1):
        if k % every == 0 or k == depth:
            sol.push()
            sol.add(bad_at(k))
            r = sol.check()
            if r == z3.sat:
                model, found = sol.model(), k
                sol.pop()
                for j in range(k - 1, last_unsat if shortest else k - 1, -1):  # the shortest trace: shorter depths are cheap to ask
                    sol.push()
                    sol.add(bad_at(j))
                    if sol.check() != z3.sat:
                        sol.pop()
                        break
                    model, found = sol.model(), j
                    sol.pop()
                return Outcome("violated", time.perf_counter() - start, "",
                               trace=_bmc_trace(model, u, spec, states[:found + 1], picks[:found]))
            sol.pop()
            last_unsat = k
            if r == z3.unknown:
                return Outcome("unknown", time.perf_counter() - start,
                               f"solver gave up at depth {k}: {sol.reason_unknown()}")
        if k == depth:
            break
        nxt = sy.declare(u, spec.variables, f"b{k + 1}")
        step: list = []
        if schedule is None:
            stutter = z3.Bool(f"stutter{k}!{u.name}")
            sol.add(z3.Implies(stutter, z3.And([states[k][v.name] == nxt[v.name] for v in spec.variables])))
            step.append((stutter, None, {}))
        for action in actions if schedule is None else [by_name[schedule[k]]]:
            flag = z3.Bool(f"act{k}_{action.name}!{u.name}")
            params, clauses = spec.clauses(u, action, states[k], nxt)
            in_range = [sy.in_domain(u, kind, params[name]) for name, kind in action.params]
            sol.add(z3.Implies(flag, z3.And([c for _, c in clauses] + in_range)))
            step.append((flag, action, params))
        sol.add(z3.Or([f for f, _, _ in step]))
        sol.add(sy.domain_constraints(u, spec.variables, nxt))
        picks.append(step)
        states.append(nxt)
    bound = ", ".join(f"{k} {r.start}..{r.stop - 1}" for k, r in ranges.items())
    return Outcome("proved", time.perf_counter() - start,
                   f"no violation within {depth} steps on {len(node_ids)} nodes ({bound})")


def _bmc_trace(model: z3.ModelRef, u: sy.Universe, spec: sy.SymbolicSpec, states: list[sy.State],
               picks: list) -> list[dict]:
    dec = Decoder(model, u, spec)
    rendered = dec.states(states, [p for step in picks for _, _, ps in step for p in ps.values()])
    trace = [{"action": "init", "params": {}, "state": rendered[0]}]
    for i, step in enumerate(picks):
        for flag, action, ps in step:
            if z3.is_true(model.eval(flag, model_completion=True)):
                if action is not None and rendered[i + 1] != rendered[i]:
                    trace.append({"action": action.name, "params": dec.params(ps, action), "state": rendered[i + 1]})
                break
    return trace
