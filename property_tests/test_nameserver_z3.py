"""spec/nameserver_z3.py: NS-2 is a counterexample to induction under 4.9.4 (unregister by id) with a
BMC trace, proved with unregister by address; the reference's RouteInfoManager steps conform to the
relation and the Z3 formula agrees with the executable predicate on the states they reach."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from model_checks import prove
from reference_impl.nameserver import ghost as ng
from reference_impl.nameserver import route_info as ri
from spec import nameserver_z3 as nz
from spec import symbolic as sy

SPEC = sy.for_protocol("nameserver")
ADDRS = ("10.0.0.1:10911", "10.0.0.2:10911", "10.0.0.3:10911")
IDS = (0, 1)
U = sy.finite_nodes(nz.KINDS, ADDRS, {"bid": IDS})


def test_ns2_rows_as_the_profiles_state():
    rows = {(r.profile, r.property): r for r in prove.run(["nameserver"], replay=False)}
    assert all(r.ok for r in rows.values()), [(k, r.result, r.detail) for k, r in rows.items()]
    bad = rows[("4.9.4", "NS-2")]
    assert bad.result == "violated" and bad.cti["action"] == "unregister_by_id"
    steps = [st_["action"] for st_ in bad.trace[1:]]
    assert steps == ["register", "unregister_by_id"], steps
    reg, unreg = bad.trace[1]["params"], bad.trace[2]["params"]
    assert reg["a"] == unreg["a"] and reg["i"] != unreg["i"]  # unregistered under another id
    assert rows[("by-address", "NS-2")].result == "proved"


def _abstract(rim: ri.RouteInfo, reg: frozenset, prev_at: dict) -> tuple[sy.State, dict]:
    bd = rim.broker_addr_table.get("broker-a")
    addrs = dict(bd.broker_addrs.items()) if bd is not None else {}
    at = {i: addrs.get(i, prev_at[i]) for i in IDS}  # an absent id keeps its last address (unobservable)
    n = U.node_of
    state = sy.State({
        "has": sy.literal(U, nz.V["has"], False, {(sy.num(U, "bid", i),): True for i in addrs}),
        "at": sy.literal(U, nz.V["at"], n[ADDRS[0]], {(sy.num(U, "bid", i),): n[at[i]] for i in IDS}),
        "live": sy.literal(U, nz.V["live"], False, {(n[a],): True for a in rim.broker_live_table}),
        "reg": sy.literal(U, nz.V["reg"], False, {(n[a],): True for a in reg}),
    })
    return state, at


OPS = st.lists(st.tuples(st.sampled_from(["register", "unregister", "destroy"]), st.sampled_from(ADDRS),
                         st.sampled_from(IDS)), max_size=8)


@settings(max_examples=60, deadline=None)
@given(ops=OPS)
def test_route_info_steps_conform_and_ns2_agrees(ops):
    """Random register / unregister / channel-destroy sequences on reference_impl.nameserver.route_info: each
    step is a step of the relation (4.9.4's actions), and NS-2's formula is `listed <= registered`."""
    _run(ops)


def test_the_bmc_trace_on_the_reference_violates_ns2_on_both_sides():
    """The BMC trace (register as id 0, unregister as id 1) on reference_impl.nameserver.route_info."""
    assert _run([("register", ADDRS[0], 0), ("unregister", ADDRS[0], 1)]) == [True, False]


def _run(ops) -> list[bool]:
    out = []
    rim, reg = ri.RouteInfo(), frozenset()
    s, at = _abstract(rim, reg, {i: ADDRS[0] for i in IDS})
    for op, a, i in ops:
        before_live = set(rim.broker_live_table)
        if op == "register":
            rim = ri.register_broker(rim, "c", a, "broker-a", i, "", None, None, a, 0)[0]
            reg |= {a}
            action = "register"
        elif op == "unregister":
            rim = ri.unregister_broker(rim, "c", a, "broker-a", i)[0]
            action = "unregister_by_id"
        else:
            rim = ri.on_channel_destroy(rim, a, None)
            action = "destroy"
        reg -= before_live - set(rim.broker_live_table)  # BrokerRemoved, as the ghost does
        s2, at = _abstract(rim, reg, at)
        act = next(x for x in SPEC.actions if x.name == action)
        params = {"a": U.node_of[a], "i": sy.num(U, "bid", i)}
        _, clauses = SPEC.clauses(U, act, s, s2, {k: v for k, v in params.items() if k in dict(act.params)})
        failing = [label for label, c in clauses if not sy.evaluate(c)]
        assert not failing, (op, a, i, failing)
        holds = sy.evaluate(nz.ns2(U, s2))
        assert holds == (ng.listed(rim) <= reg)
        out.append(holds)
        s = s2
    return out
