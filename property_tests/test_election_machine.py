"""Stateful Hypothesis runs of the election world (3 and 5 nodes, every fault kind), checking every
election property after every step; a variant adds OS crashes, where ELE-1/2/3 may fail but only
as the expected, classified violation."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from property_tests.support.election import CFG3, hb_req, member, vote_req
from property_tests.support.machines import FiveNodes, HypothesisChooser, ThreeNodes, ThreeNodesWithOsCrashes
from reference_impl import core
from reference_impl.election import records as el
from reference_impl.election import server as srv
from spec import replies

TestThreeNodes = ThreeNodes.TestCase
TestFiveNodes = FiveNodes.TestCase
TestThreeNodesWithOsCrashes = ThreeNodesWithOsCrashes.TestCase


def drive(machine, *events):
    for ev in events:
        assert core.is_enabled(machine.world, ev), f"{ev} is not enabled"
        machine.apply(ev)
        machine.no_unexpected_violation()


def elect_n0(machine):
    """n1 and n2 hold back (next vote at 10 s); n0's vote round at t = 0 wins term 0."""
    w = machine.world
    for i in (1, 2):
        w = core.set_node(w, i, w.nodes[i].evolve(next_time_to_request_vote=10_000))
    machine.world = w
    drive(machine, core.Tick(node=0), core.Tick(node=0))  # maintainAsCandidate's locked part, then the round
    while any(isinstance(e, core.Deliver) for e in core.protocol_events(machine.world)):
        drive(machine, next(e for e in core.protocol_events(machine.world) if isinstance(e, core.Deliver)))
    drive(machine, core.Tick(node=0))
    assert machine.world.nodes[0].role is el.Role.LEADER and machine.world.nodes[1].curr_vote_for == "n0"


def test_os_crash_double_vote_is_reported_as_expected_not_failed():
    """An OS crash makes n1 vote twice in term 0: ELE-2 is classified as the term-file loss and passes."""
    m = ThreeNodesWithOsCrashes()
    elect_n0(m)
    drive(m, core.Crash(node=1, os=True), core.Restart(node=1), core.Tick(node=1), core.Tick(node=1))
    ele2 = m.monitor.violations["ELE-2"]
    assert ele2.expected and "currterm" in ele2.expected and "n1@0" in ele2.detail


def test_same_double_vote_without_an_os_crash_fails_the_machine():
    """The same double vote without an OS crash fails the invariant: property id, detail, events."""
    m = ThreeNodes()
    elect_n0(m)
    w = m.world
    forgetful = srv.restart(w.cfg.proto.dledger, srv.crash(w.nodes[1], lose_term_file=True), w.now)
    m.world = core.set_node(w, 1, forgetful)  # as if the file vanished without a crash we know of
    m.apply(core.Tick(node=1))
    m.apply(core.Tick(node=1))
    with pytest.raises(AssertionError) as err:
        m.no_unexpected_violation()
    text = str(err.value)
    assert text.startswith("ELE-2 violated at step") and "n1@0" in text
    assert '1: {"kind":"tick","node":"n0"' in text and "events so far" in text


@given(st.data())
def test_hypothesis_chooser_only_picks_enabled_events(data):
    """HypothesisChooser returns an enabled event (ticks with a draw in range), and no fault when told so."""
    m = ThreeNodes()
    no_faults = HypothesisChooser(data, fault_odds=0)
    any_event = HypothesisChooser(data)
    for k in range(40):
        w = m.world
        ev = (no_faults if k % 2 else any_event).choose(w)
        assert core.is_enabled(w, ev)
        if k % 2:
            assert ev not in core.fault_events(w) or ev in core.protocol_events(w)
        if isinstance(ev, core.Tick):
            assert 0 <= ev.draw < core.DRAW_SPAN
        m.apply(ev)


# --- the handlers on their own: every state a member can be in, every request ---
# A world reaches some of these rarely (a FOLLOWER of a newer term gets a deposed leader's heartbeat
# only when a partition ends between two 6 s timeouts), so a handler that answers it wrongly could
# pass every history; here each combination is one draw. A draw costs microseconds, so these take
# more examples than the profile's (a given wrong branch is about 1 draw in 40).
HANDLER_EXAMPLES = 500

TERMS = st.integers(min_value=0, max_value=3)
PEERS = st.sampled_from(CFG3.peers)


@st.composite
def members(draw):
    """A member n0 in a state DLedger can hold: a FOLLOWER knows a leader other than itself, a
    LEADER leads itself and voted for itself, a CANDIDATE knows no leader."""
    role = draw(st.sampled_from((el.Role.CANDIDATE, el.Role.FOLLOWER, el.Role.LEADER)))
    leader = {el.Role.FOLLOWER: draw(st.sampled_from(CFG3.peers[1:])), el.Role.LEADER: "n0",
              el.Role.CANDIDATE: None}[role]
    vote = "n0" if role is el.Role.LEADER else draw(st.none() | PEERS)
    lei = draw(st.integers(min_value=-1, max_value=3))
    return member("n0", curr_term=draw(TERMS), curr_vote_for=vote, role=role, leader_id=leader,
                  ledger_end_index=lei, ledger_end_term=-1 if lei < 0 else draw(st.integers(0, 3)))


@settings(max_examples=HANDLER_EXAMPLES)
@given(members(), st.sampled_from(CFG3.peers + ("n7",)), TERMS, st.sampled_from(("n0", "n1")),
       st.sampled_from(("default", "other")))
def test_every_heartbeat_is_answered_with_the_code_dledgers_guards_give(m, leader_id, term, to, group):
    """DLedgerServer#handleHeartBeat and DLedgerLeaderElector#handleHeartBeat, against the guards
    spec.replies restates from the Java (RPL-2's): EXPIRED_TERM to a lower term whatever the role."""
    req = hb_req(leader_id=leader_id, term=term, to=to, group=group)
    _, resp, _ = srv.server_handle_heart_beat(CFG3, m, req, 100)
    assert resp.code is replies.heart_beat_code(CFG3, m, req)


@settings(max_examples=HANDLER_EXAMPLES)
@given(members(), st.sampled_from(CFG3.peers + ("n7",)), TERMS, st.integers(min_value=-1, max_value=3),
       st.integers(min_value=-1, max_value=3), st.sampled_from(("n0", "n1")))
def test_every_vote_request_is_answered_with_the_result_dledgers_guards_give(m, candidate, term, lei, let, to):
    """DLedgerServer#handleVote and DLedgerLeaderElector#handleVote(request, false), against RPL-2's guards."""
    req = vote_req(candidate=candidate, term=term, to=to, lei=lei, let=let)
    _, resp, _ = srv.server_handle_vote(CFG3, m, req)
    assert (resp.code, resp.vote_result) == replies.vote_result(CFG3, m, req)
