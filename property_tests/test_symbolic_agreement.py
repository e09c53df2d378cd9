"""The Z3 rendering of each state invariant agrees with its executable predicate.

States come from two sources: random worlds whose node fields and ghost variables are
drawn freely (so both renderings are asked about violating states too), and states
reached by seeded histories (where both must say true)."""

from hypothesis import given
from hypothesis import strategies as st

from histories import runner
from reference_impl import core
from reference_impl.core import chooser, faults
from reference_impl.core.state import FrozenMap
from reference_impl.election import member_state as mstate
from reference_impl.election import records as el
from reference_impl.election import world as election_world
from spec import properties
from spec import symbolic as sy

SPEC = sy.for_protocol("election")
EXECUTABLE = {p.id: p for p in properties.for_protocol("election")}
RENDERED = [inv for inv in SPEC.invariants if inv.property is not None]
IDS = ("n0", "n1", "n2")
BASE = core.init(election_world.make_config(3))

node_id = st.sampled_from(IDS)
maybe_id = st.none() | node_id
term = st.integers(0, 3)


@st.composite
def members(draw):
    out = []
    for nid in IDS:
        role = draw(st.sampled_from([el.Role.CANDIDATE, el.Role.FOLLOWER, el.Role.LEADER]))
        out.append(mstate.Member(self_id=nid, curr_term=draw(term), curr_vote_for=draw(maybe_id), role=role,
                                 leader_id=draw(maybe_id)))
    return tuple(out)


@st.composite
def worlds(draw):
    elected = draw(st.dictionaries(term, st.frozensets(node_id, min_size=1, max_size=3), max_size=3))
    grants = draw(st.dictionaries(st.tuples(node_id, term), st.frozensets(node_id, min_size=1, max_size=2),
                                  max_size=6))
    ghost = BASE.ghost.evolve(elected=FrozenMap(elected), grants=FrozenMap(grants))
    alive = tuple(draw(st.booleans()) for _ in IDS)
    return BASE.evolve(nodes=draw(members()), alive=alive, ghost=ghost)


def renderings(w):
    a = SPEC.abstract(w)
    u = SPEC.universe_for([a])
    s = SPEC.concrete(u, a)
    return {inv.property: sy.evaluate(inv.formula(u, s)) for inv in RENDERED}


@given(worlds())
def test_z3_formulas_agree_with_predicates_on_random_states(w):
    z3_says = renderings(w)
    for prop_id, verdict in z3_says.items():
        assert verdict == EXECUTABLE[prop_id].holds(w), prop_id


def test_random_states_include_violations_of_every_property():
    """The generator is not vacuous: each property is false on some drawn state."""
    seen: dict[str, set[bool]] = {inv.property: set() for inv in RENDERED}

    @given(worlds())
    def collect(w):
        for prop_id, verdict in renderings(w).items():
            seen[prop_id].add(verdict)

    collect()
    assert all(v == {True, False} for v in seen.values()), seen


def test_z3_formulas_hold_on_reached_states():
    cfg = election_world.make_config(3).evolve(profile=faults.profile("standard", "election"))
    checked = 0

    def hook(i, before, event, after, obs):
        nonlocal checked
        if i % 25 == 0:
            verdicts = renderings(after)
            assert all(verdicts.values()), (i, verdicts)
            assert all(EXECUTABLE[p].holds(after) for p in verdicts)
            checked += 1

    runner.run(cfg, chooser.SeededChooser(3).choose, 1500, hooks=(hook,))
    assert checked > 10
