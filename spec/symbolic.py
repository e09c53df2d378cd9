"""Symbolic specs: each protocol's state and actions as Z3 transition relations.

Theory of operation
-------------------
A `SymbolicSpec` describes a protocol at the abstraction of its reference world, as
the Raft TLA+ spec does: per-node variables, the messages in flight as a set, and the
ghost (history) variables that properties are stated over. It supplies

- `declare(U, tag)`: one state's variables (Z3 arrays, so updates are `Store`s),
- `init`: the initial states, and `actions`: named transition relations, each a list of
  labelled clauses (guards, then updates) so a failed conformance check can name the
  first clause that does not hold,
- `invariants`: the state invariants of docs/properties.md as Z3 formulas, plus the
  auxiliary invariants that make them inductive,
- `abstract(world)`: the abstraction of a concrete reference world (plain Python
  values), and `concrete(U, a)`: that abstract state as Z3 literals.

Every relation is written once against a `Universe`, which says how a quantifier over
each kind of value (node, term, index, quorum, ...) is built: as a Z3 quantifier over an
uninterpreted sort or `Int` (the parametric proofs, for any cluster size), or by
expansion over a finite list of values (bounded model checking for a fixed cluster,
conformance of concrete steps, agreement of formulas with executable predicates). So
the relation that is proved is the very relation that reference steps are checked
against.

Messages are lossy sets: every action may drop any message (`s2.m ⊆ s.m ∪ sent`),
which covers loss, delivery, crashes that close sockets and duplication (a set does
not count copies). Variables an action does not name stay unchanged.

Quorums follow Ivy and mypyvy: an uninterpreted sort `quorum` with a membership
relation and the axiom that any two quorums intersect. For a finite cluster of N
nodes the quorum sort holds the subsets of N // 2 + 1 nodes (MemberState#isQuorum),
so "some quorum all of whose members did X" is "at least N // 2 + 1 members did X".
"""

from __future__ import annotations

import importlib
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import z3

from spec import arrays

Clause = tuple[str, z3.BoolRef]  # (label, formula)

_SERIAL = itertools.count()


class Universe:
    """The domains quantifiers range over. `sorts` maps each kind to its Z3 sort;
    `finite` maps some kinds to the list of their values, and quantifiers over those
    kinds expand into conjunctions / disjunctions."""

    def __init__(self, sorts: dict[str, z3.SortRef], finite: dict[str, Sequence[z3.ExprRef]] | None = None,
                 name: str = "") -> None:
        self.sorts = dict(sorts)
        self.finite = dict(finite or {})
        self.name = name or f"u{next(_SERIAL)}"
        self.node_of: dict[str, z3.ExprRef] = {}  # concrete node id -> its constant (finite node kind)
        self.extra: dict[str, Any] = {}  # spec-specific symbols (e.g. the quorum membership relation)

    def sort(self, kind: str) -> z3.SortRef:
        return self.sorts[kind]

    def fresh(self, kind: str, hint: str = "x") -> z3.ExprRef:
        return z3.Const(f"{hint}!{next(_SERIAL)}", self.sorts[kind])

    def _bind(self, kinds: Sequence[str], body: Callable[..., z3.BoolRef], combine: Callable
              ) -> tuple[z3.BoolRef, list[z3.ExprRef]]:
        symbolic = [self.fresh(k, k[0]) if k not in self.finite else None for k in kinds]
        pools = [self.finite[k] if k in self.finite else [v] for k, v in zip(kinds, symbolic)]
        parts = [body(*combo) for combo in itertools.product(*pools)]
        inner = combine(parts)
        bound = [v for v in symbolic if v is not None]
        return inner, bound

    def forall(self, kinds: Sequence[str], body: Callable[..., z3.BoolRef]) -> z3.BoolRef:
        inner, bound = self._bind(kinds, body, arrays.fast_and)
        return z3.ForAll(bound, inner) if bound else inner

    def exists(self, kinds: Sequence[str], body: Callable[..., z3.BoolRef]) -> z3.BoolRef:
        inner, bound = self._bind(kinds, body, lambda ps: z3.Or(ps) if len(ps) != 1 else ps[0])
        return z3.Exists(bound, inner) if bound else inner

    def values(self, kind: str) -> Sequence[z3.ExprRef] | None:
        return self.finite.get(kind)

    def enum(self, kind: str, name: str) -> z3.ExprRef:
        """The constant `name` of an enumerated kind (declared "enum:A,B,C")."""
        return self.extra[f"enum:{kind}"][name]


def _theory(u: Universe, kind: str, theory: str | None, serial: int) -> z3.SortRef:
    if theory is not None and theory.startswith("enum:"):
        names = theory[5:].split(",")
        sort, consts = z3.EnumSort(f"{kind.capitalize()}{serial}", [f"{n}!{serial}" for n in names])
        u.extra[f"enum:{kind}"] = dict(zip(names, consts))
        return sort
    return {"int": z3.IntSort(), "bool": z3.BoolSort()}[theory] if theory else z3.DeclareSort(
        f"{kind.capitalize()}{serial}")


def num(u: Universe, kind: str, value: int) -> z3.ExprRef:
    """The integer `value` in the representation of an integer kind (one object per value,
    registered as a known constant)."""
    cache = u.extra.setdefault("nums", {})
    v = cache.get((kind, value))
    if v is None:
        sort = u.sort(kind)
        v = cache[(kind, value)] = z3.BitVecVal(value, sort) if isinstance(sort, z3.BitVecSortRef) else z3.IntVal(value)
        arrays.register_values([v])
    return v


def is_num(u: Universe, kind: str) -> bool:
    return u.sort(kind) == z3.IntSort() or isinstance(u.sort(kind), z3.BitVecSortRef)


def as_int(v: z3.ExprRef) -> int:
    return v.as_signed_long() if z3.is_bv_value(v) else v.as_long()


def parametric(kinds: dict[str, str | None]) -> Universe:
    """A universe for any number of nodes: kinds mapped to None get an uninterpreted
    sort of their own, the others the named theory sort ("int", "bool")."""
    serial = next(_SERIAL)
    u = Universe({}, name=f"p{serial}")
    for kind, theory in kinds.items():
        u.sorts[kind] = _theory(u, kind, theory, serial)
    return u


def finite_nodes(kinds: dict[str, str | None], node_ids: Sequence[str],
                 finite: dict[str, Sequence[int]] | None = None, bitvec: bool = False) -> Universe:
    """A universe for the concrete cluster `node_ids`: the node kind is an enumeration
    of them and the quorum kind (if any) the majority subsets; integer kinds listed
    in `finite` range over those values, the others stay symbolic. `bitvec`: nodes,
    enumerations and the finite integer kinds are bit-vectors (integers wide enough for
    twice their largest value), so a query is purely finite-domain and Z3 bit-blasts it
    to SAT, which is what makes deep bounded model checking fast."""
    serial = next(_SERIAL)
    u = Universe({}, name=f"f{serial}")
    u.extra["bitvec"] = bitvec
    if bitvec:
        node_sort = z3.BitVecSort(max(1, (len(node_ids) - 1).bit_length()))
        consts = [z3.BitVecVal(i, node_sort) for i in range(len(node_ids))]
    else:
        node_sort, consts = z3.EnumSort(f"Node{serial}", [f"{n}!{serial}" for n in node_ids])
    u.sorts["node"], u.finite["node"] = node_sort, list(consts)
    for kind, theory in kinds.items():
        if kind in ("node", "quorum"):
            continue
        if bitvec and theory is not None and theory.startswith("enum:"):
            names = theory[5:].split(",")
            u.sorts[kind] = z3.BitVecSort(max(1, (len(names) - 1).bit_length()))
            u.extra[f"enum:{kind}"] = {n: z3.BitVecVal(i, u.sorts[kind]) for i, n in enumerate(names)}
            continue
        u.sorts[kind] = _theory(u, kind, theory, serial)
        if finite and kind in finite:
            vals = sorted(set(finite[kind]))
            if bitvec and theory == "int":
                u.sorts[kind] = z3.BitVecSort(max(abs(v) for v in vals).bit_length() + 3)
            u.finite[kind] = [num(u, kind, v) for v in vals]
    u.node_of = dict(zip(node_ids, consts))
    for vals in u.finite.values():
        arrays.register_values(vals)
    for kind in kinds:
        if f"enum:{kind}" in u.extra:
            arrays.register_values(list(u.extra[f"enum:{kind}"].values()))
    if "quorum" in kinds:
        size = len(node_ids) // 2 + 1
        subsets = list(itertools.combinations(range(len(node_ids)), size))
        q_sort = z3.BitVecSort(max(1, (len(subsets) - 1).bit_length()))
        q_consts = [z3.BitVecVal(i, q_sort) for i in range(len(subsets))]
        u.sorts["quorum"], u.finite["quorum"] = q_sort, q_consts
        u.extra["quorum_members"] = {i: [consts[j] for j in sub] for i, sub in enumerate(subsets)}
    return u


# --- quorums (Ivy / mypyvy style) ---


def member(u: Universe) -> z3.FuncDeclRef:
    """The membership relation member(node, quorum), one per universe."""
    m = u.extra.get("member")
    if m is None:
        m = u.extra["member"] = z3.Function(f"member_{u.name}", u.sort("node"), u.sort("quorum"), z3.BoolSort())
    return m


def quorum_axioms(u: Universe) -> list[z3.BoolRef]:
    """Parametric: any two quorums share a node. Finite: nothing to assume, `some_quorum`
    expands over the majority subsets themselves."""
    if u.extra.get("quorum_members") is not None:
        return []
    m = member(u)
    return [u.forall(["quorum", "quorum"], lambda q1, q2: u.exists(["node"], lambda n: z3.And(m(n, q1), m(n, q2))))]


def in_quorum(u: Universe, n: z3.ExprRef, q: z3.ExprRef) -> z3.BoolRef:
    """Node `n` is a member of quorum `q` (a quorum-valued parameter)."""
    members = u.extra.get("quorum_members")
    if members is not None:
        return z3.Or([z3.And(q == u.finite["quorum"][i], z3.Or([n == m for m in ns])) for i, ns in members.items()])
    return member(u)(n, q)


def some_quorum(u: Universe, pred: Callable[[z3.ExprRef], z3.BoolRef]) -> z3.BoolRef:
    """Some quorum all of whose members satisfy `pred`."""
    members = u.extra.get("quorum_members")
    if members is not None:  # finite: expand over the majority subsets
        return z3.Or([z3.And([pred(n) for n in ns]) for ns in members.values()])
    m = member(u)
    return u.exists(["quorum"], lambda q: u.forall(["node"], lambda n: z3.Implies(m(n, q), pred(n))))


# --- relations ---


@attrs.frozen
class Var:
    """A state variable: an array from `index` kinds to `value` (a kind or "bool").
    `lossy`: a set of messages in flight (any action may drop members)."""

    name: str
    index: tuple[str, ...]
    value: str = "bool"
    lossy: bool = False


@attrs.frozen
class Action:
    """A named transition. `params` are (name, kind) pairs, existentially bound;
    `changes` the variables its clauses update (all others are framed unchanged; lossy
    ones may only lose members); `body(u, s, s2, **params)` returns labelled clauses,
    guards first. `optional`: a switch that must be on for the action to be part of Next
    (e.g. a fault RocketMQ suffers but the default model excludes)."""

    name: str
    params: tuple[tuple[str, str], ...]
    changes: tuple[str, ...]
    body: Callable[..., list[Clause]]
    doc: str = ""
    optional: str | None = None


@attrs.frozen
class Invariant:
    """A state invariant as a Z3 formula. `property` names the docs/properties.md ID it
    renders (None for an auxiliary invariant); `support` the invariants its inductive
    proof assumes (itself included)."""

    id: str
    formula: Callable[[Universe, Any], z3.BoolRef]
    statement: str
    property: str | None = None
    support: tuple[str, ...] = ()


@attrs.frozen
class StepProperty:
    """An action property (TLA+'s [][A]_vars) as a two-state formula."""

    id: str
    formula: Callable[[Universe, Any, Any], z3.BoolRef]
    statement: str


class State:
    """One state's variables (Z3 arrays, FiniteArrays or literals), by name."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__.update(values)
        self._names = tuple(values)

    def __getitem__(self, name: str) -> Any:
        return self.__dict__[name]

    def names(self) -> tuple[str, ...]:
        return self._names


def _domains(u: Universe, index: Sequence[str]) -> list | None:
    """The finite domains of the index kinds, or None if one of them is symbolic (one
    list per universe and index, so FiniteArrays can share their table of points)."""
    cache = u.extra.setdefault("domains", {})
    key = tuple(index)
    if key not in cache:
        doms = [u.values(k) for k in index]
        cache[key] = None if any(d is None for d in doms) else doms
    return cache[key]


def _value_sort(u: Universe, var: Var) -> z3.SortRef:
    return z3.BoolSort() if var.value == "bool" else u.sort(var.value)


def declare(u: Universe, variables: Sequence[Var], tag: str) -> State:
    return State({v.name: arrays.fresh(_domains(u, v.index), [u.sort(k) for k in v.index], _value_sort(u, v),
                                       f"{v.name}@{tag}!{u.name}") for v in variables})


def literal(u: Universe, var: Var, default: Any, points: dict[tuple, Any]) -> Any:
    """The variable's value with the given value at each point and `default` elsewhere."""
    return arrays.literal(_domains(u, var.index), [u.sort(k) for k in var.index], default, points)


def tabulate(u: Universe, var: Var, fn: Callable[..., z3.ExprRef]) -> Any:
    """The variable's value that is fn(point) at each point."""
    return arrays.tabulate(_domains(u, var.index), [u.sort(k) for k in var.index], fn)


def in_domain(u: Universe, kind: str, e: z3.ExprRef) -> z3.BoolRef:
    """`e` is one of the finite values of an integer kind (True if the kind is symbolic)."""
    vals = u.values(kind)
    if vals is None or not is_num(u, kind):
        return z3.BoolVal(True)
    nums = sorted(as_int(v) for v in vals)
    if nums == list(range(nums[0], nums[-1] + 1)):
        return z3.And(e >= num(u, kind, nums[0]), e <= num(u, kind, nums[-1]))
    return z3.Or([e == v for v in vals])


def domain_constraints(u: Universe, variables: Sequence[Var], s: State) -> list[z3.BoolRef]:
    """Integer-valued cells of a finite state stay within their kind's values."""
    out = []
    for var in variables:
        if var.value in u.finite and is_num(u, var.value):
            out += [in_domain(u, var.value, c) for c in arrays.cells(s[var.name])]
    return out


sel, store, add, subset, ite = arrays.sel, arrays.store, arrays.add, arrays.subset, arrays.ite


def sends(u: Universe, after: Any, before_with_sent: Any) -> z3.BoolRef:
    """A lossy message set after an action: what was in flight plus what it sent, less any
    losses. Universes marked `lossless` (bounded model checking) keep every message: in
    these models losing a message never enables an action, so no violation is missed."""
    if u.extra.get("lossless"):
        return after == before_with_sent
    return subset(after, before_with_sent)


def frame(u: Universe, var: Var, s: State, s2: State) -> z3.BoolRef:
    return sends(u, s2[var.name], s[var.name]) if var.lossy else s2[var.name] == s[var.name]


# --- the spec record and its registry ---


@attrs.frozen
class Profile:
    """A version profile of a symbolic spec: which optional actions are part of Next,
    and which properties RocketMQ is known to violate under it, with the cause.
    `expected` is stated up front, so a checker that stops finding a known violation
    (or finds an unknown one) fails."""

    name: str
    switches: frozenset[str]
    description: str
    expected: dict[str, str] = attrs.field(factory=dict)  # property id -> known cause


@attrs.frozen
class SymbolicSpec:
    """A protocol's symbolic model (see the module docstring)."""

    protocol: str
    kinds: dict[str, str | None]  # kind -> None (uninterpreted) or "int"
    variables: tuple[Var, ...]
    init: Callable[[Universe, State], list[Clause]]
    actions: tuple[Action, ...]
    invariants: tuple[Invariant, ...]
    step_properties: tuple[StepProperty, ...] = ()
    axioms: Callable[[Universe], list[z3.BoolRef]] = lambda u: []
    abstract: Callable[[Any], Any] | None = None  # concrete world -> abstract state
    concrete: Callable[[Universe, Any], State] | None = None  # abstract state -> Z3 literals
    universe_for: Callable[[Sequence[Any]], Universe] | None = None  # finite universe covering abstract states
    profiles: tuple[Profile, ...] = (Profile("default", frozenset(), "the model as shipped"),)
    reference: str | None = None  # the reference_impl protocol the abstraction reads, if it exists
    bmc_bounds: dict[str, tuple[int, int]] = attrs.field(factory=dict)  # integer kind -> (lo, hi) for BMC
    bmc_depth: int = 12
    bmc_actions: tuple[str, ...] = ()  # the actions BMC searches with (default: all of Next)
    induction_nodes: tuple[int, ...] = ()  # () : proofs for any cluster size; else these fixed sizes
    induction_bounds: dict[str, tuple[int, int]] = attrs.field(factory=dict)  # integer kinds, fixed-size proofs
    fault_actions: dict[str, str] = attrs.field(factory=dict)  # action -> the reference's fault kind
    # property -> a scenario script (path from the repository root) staging a BMC trace in the reference
    witness_scenarios: dict[str, str] = attrs.field(factory=dict)
    doc: str = ""

    def profile(self, name: str) -> Profile:
        for p in self.profiles:
            if p.name == name:
                return p
        raise KeyError(name)

    def var(self, name: str) -> Var:
        for v in self.variables:
            if v.name == name:
                return v
        raise KeyError(name)

    def invariant(self, inv_id: str) -> Invariant:
        for inv in self.invariants:
            if inv.id == inv_id:
                return inv
        raise KeyError(inv_id)

    def next_actions(self, switches: frozenset[str] = frozenset()) -> list[Action]:
        return [a for a in self.actions if a.optional is None or a.optional in switches]

    def clauses(self, u: Universe, action: Action, s: State, s2: State,
                params: dict[str, z3.ExprRef] | None = None) -> tuple[dict[str, z3.ExprRef], list[Clause]]:
        """The action's clauses with fresh (or given) parameters, frame clauses last."""
        if params is None:
            params = {name: u.fresh(kind, name) for name, kind in action.params}
        body = action.body(u, s, s2, **params)
        framed = [(f"unchanged {v.name}" if not v.lossy else f"{v.name} only loses messages", frame(u, v, s, s2))
                  for v in self.variables if v.name not in action.changes]
        return params, body + framed


_SPECS: dict[str, SymbolicSpec] = {}

# The symbolic specs, by protocol: module spec.<name>_z3 registers the spec; models
# of protocols whose executable reference has not landed yet are listed too.
SPEC_MODULES = {
    "election": "spec.election_z3",
    "dledger_log": "spec.dledger_log_z3",
    "ha": "spec.ha_z3",
    "offsets": "spec.offsets_z3",
    "nameserver": "spec.nameserver_z3",
}


def register(spec: SymbolicSpec) -> None:
    _SPECS[spec.protocol] = spec


def for_protocol(name: str) -> SymbolicSpec:
    if name not in _SPECS:
        if name not in SPEC_MODULES:
            raise KeyError(name)
        importlib.import_module(SPEC_MODULES[name])
    return _SPECS[name]


def names() -> list[str]:
    return list(SPEC_MODULES)


def evaluate(formula: z3.BoolRef) -> bool:
    """The truth value of a ground formula (concrete literals, finite quantifiers)."""
    v = z3.simplify(formula)
    if z3.is_true(v):
        return True
    if z3.is_false(v):
        return False
    s = z3.Solver()
    s.add(z3.Not(formula))
    r = s.check()
    if r == z3.unknown:
        raise RuntimeError(f"cannot evaluate {formula}")
    return r == z3.unsat
