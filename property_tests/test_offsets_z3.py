"""spec/offsets_z3.py: OFF-3 (slave sync is putAll) is proved by `rmqspec prove`, fails for the
merges one might expect instead, and its Z3 formula agrees with the executable predicate."""

from __future__ import annotations

import types

import attrs
import z3
from hypothesis import example, given, settings
from hypothesis import strategies as st

from model_checks import prove
from reference_impl.core.state import FrozenMap
from reference_impl.offsets.broker import put_all
from reference_impl.offsets.records import OffsetsSynced
from spec import offsets as off
from spec import offsets_z3 as oz
from spec import symbolic as sy
from spec.symbolic import sel

SPEC = sy.for_protocol("offsets")
P494 = SPEC.profile("4.9.4")
KEYS = ("t@g0", "t@g1", "u@g0")
QUEUES = (0, 1)


def test_off3_is_proved_for_every_action_and_the_model_is_not_vacuous():
    rows = prove.run(["offsets"], replay=False)
    assert [(r.property, r.result, r.ok) for r in rows] == [("(Next)", "ok", True), ("OFF-3", "proved", True)]
    assert rows[1].method == "step, any N"


def _sync_variant(rule):
    def body(u, s, s2):
        keep = [c for c in oz.sync(u, s, s2) if not c[0].startswith("putAll: an answer key")]
        return keep + [("variant", u.forall(["node", "queue"], lambda k, q: rule(s, s2, k, q)))]
    return attrs.evolve(SPEC, actions=tuple(attrs.evolve(a, body=body) if a.name == "sync" else a
                                            for a in SPEC.actions))


def test_a_merge_of_inner_maps_or_a_max_merge_breaks_off3():
    """What one might expect instead of putAll: merging the inner maps, or keeping the larger offset."""
    def merge(s, s2, k, q):
        theirs = z3.And(sel(s.nk, k), sel(s.nq, k, q))
        return z3.And(sel(s2.sq, k, q) == z3.Or(sel(s.sq, k, q), theirs),
                      sel(s2.so, k, q) == z3.If(theirs, sel(s.no, k, q), sel(s.so, k, q)))

    def max_merge(s, s2, k, q):
        theirs = z3.And(sel(s.nk, k), sel(s.nq, k, q))
        mine = sel(s.sq, k, q)
        hi = z3.If(z3.And(mine, sel(s.so, k, q) > sel(s.no, k, q)), sel(s.so, k, q), sel(s.no, k, q))
        return z3.And(sel(s2.sq, k, q) == z3.If(sel(s.nk, k), sel(s.nq, k, q), mine),
                      sel(s2.so, k, q) == z3.If(theirs, hi, sel(s.so, k, q)))

    for rule in (merge, max_merge):
        row = prove.prove_property(_sync_variant(rule), P494, "OFF-3", replay=False)
        assert row.result == "violated" and row.cti["action"] == "sync", (rule.__name__, row.detail)
        assert row.trace and row.trace[-1]["action"] == "sync"


TABLES = st.dictionaries(st.sampled_from(KEYS), st.dictionaries(st.sampled_from(QUEUES), st.integers(0, 3),
                                                                min_size=1), max_size=3)


def _fm(table: dict) -> FrozenMap:
    return FrozenMap({k: FrozenMap(v) for k, v in table.items()})


def _state(u, tables: dict[str, FrozenMap], synced: bool) -> sy.State:
    out = {"pending": sy.literal(u, oz.V["pending"], False, {}), "synced": sy.literal(u, oz.V["synced"], synced, {})}
    for p in "msn":
        t = tables.get(p, FrozenMap({}))
        keys = {(u.node_of[k],): True for k in t}
        qs = {(u.node_of[k], sy.num(u, "queue", q)): True for k, inner in t.items() for q in inner}
        offs = {(u.node_of[k], sy.num(u, "queue", q)): x for k, inner in t.items() for q, x in inner.items()}
        out[f"{p}k"] = sy.literal(u, oz.V[f"{p}k"], False, keys)
        out[f"{p}q"] = sy.literal(u, oz.V[f"{p}q"], False, qs)
        out[f"{p}o"] = sy.literal(u, oz.V[f"{p}o"], 0, offs)
    return sy.State(out)


U = sy.finite_nodes(oz.KINDS, KEYS, {"queue": QUEUES})


@settings(max_examples=150, deadline=None)
@given(before=TABLES, answer=TABLES, other=TABLES, how=st.sampled_from(["putAll", "merge", "other"]))
@example(before={"t@g0": {0: 1, 1: 2}}, answer={"t@g0": {0: 3}}, other={}, how="merge")  # queue 1 must go
@example(before={"u@g0": {0: 1}}, answer={"t@g0": {0: 3}}, other={"t@g0": {0: 3}}, how="other")  # u@g0 lost
def test_z3_off3_agrees_with_the_executable_predicate(before, answer, other, how):
    """On concrete tables: the slave's before, the master's answer, and an after table that is
    the reference's putAll, a merge of inner maps, or anything."""
    b, a = _fm(before), _fm(answer)
    if how == "putAll":
        after = put_all(b, a)
    elif how == "merge":
        after = _fm({k: {**before.get(k, {}), **answer.get(k, {})} for k in set(before) | set(answer)})
    else:
        after = _fm(other)
    world = types.SimpleNamespace(nodes=(types.SimpleNamespace(offset_table=after),))
    executable = off.off3(None, None, world, ((0, OffsetsSynced(master="m", table=a, before=b)),))
    s = _state(U, {"s": b, "n": a}, False)
    s2 = _state(U, {"s": after, "n": a}, True)
    assert sy.evaluate(oz.off3(U, s, s2)) == executable
    if how == "putAll":
        assert executable
    if before == {"t@g0": {0: 1, 1: 2}} and how == "merge":
        assert not executable  # the examples above are violations: both sides must say so


def test_a_step_counterexample_is_looked_for_on_three_keys_when_the_parametric_query_gives_up(monkeypatch):
    """Z3 may answer unknown on the quantified query (it depends on term order); the
    finite-universe retry must still find the max-merge counterexample at `sync`."""
    from model_checks import induction

    def max_merge(s, s2, k, q):
        theirs = z3.And(sel(s.nk, k), sel(s.nq, k, q))
        mine = sel(s.sq, k, q)
        hi = z3.If(z3.And(mine, sel(s.so, k, q) > sel(s.no, k, q)), sel(s.so, k, q), sel(s.no, k, q))
        return z3.And(sel(s2.sq, k, q) == z3.If(sel(s.nk, k), sel(s.nq, k, q), mine),
                      sel(s2.so, k, q) == z3.If(theirs, hi, sel(s.so, k, q)))

    real = induction._step_query

    def parametric_gives_up(spec, u, action, prop, timeout_ms, seed=0):
        return (z3.unknown, None) if not u.finite else real(spec, u, action, prop, timeout_ms, seed)

    monkeypatch.setattr(induction, "_step_query", parametric_gives_up)
    out = induction.step_property(_sync_variant(max_merge), "OFF-3", P494.switches)
    assert out.status == "violated" and out.cti["action"] == "sync" and "(N=3)" in out.detail

    def finite_gives_up_once(spec, u, action, prop, timeout_ms, seed=0):  # then another random seed answers
        return (z3.unknown, None) if not u.finite or not seed else real(spec, u, action, prop, timeout_ms, seed)

    monkeypatch.setattr(induction, "_step_query", finite_gives_up_once)
    out = induction.step_property(_sync_variant(max_merge), "OFF-3", P494.switches)
    assert out.status == "violated" and out.cti["action"] == "sync" and "(N=3)" in out.detail
    monkeypatch.setattr(induction, "_step_query", parametric_gives_up)
    # with the real rule the finite retry finds nothing, which proves nothing: unknown, not proved
    assert induction.step_property(SPEC, "OFF-3", P494.switches).status == "unknown"
