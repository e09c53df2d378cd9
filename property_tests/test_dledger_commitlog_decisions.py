"""DCL-7..DCL-9 and DCL-Q (spec/dledger_commitlog_decisions.py): each decision property reports a broken
reference as an UNEXPECTED violation on the step that makes the wrong decision, the same history is
clean without the break, and DCL-Q's cause is judged on the very entry it explains."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from histories import runner, scenario_file
from histories.mutants import catalogue as mu
from reference_impl import core
from reference_impl.core import faults
from reference_impl.election import records as el
from spec import dledger_commitlog_decisions as dd

PROTOCOL = "dledger_commitlog"
SCENARIOS = Path(__file__).parent / "scenarios" / PROTOCOL


def simulate(profile: str, seed: int, steps: int) -> runner.RunResult:
    cfg = core.protocol(PROTOCOL).make_config(3, {})
    return runner.simulate(cfg.evolve(profile=faults.profile(profile, PROTOCOL)), seed, steps)


# (mutant, the decision property that must report it, a history that shows it; on the thread-level
# model a step is one thread's pass, so the histories are found anew: seeds 1..5, first that shows it)
CAUGHT = [
    ("dledger_commitlog.offset_without_header", "DCL-8", "none", 1, 120),
    ("dledger_commitlog.dispatch_uncommitted", "DCL-9", "none", 1, 120),
    ("dledger_commitlog.master_before_caught_up", "DCL-7", "leader-partition", 3, 1000),
    ("dledger_commitlog.candidate_keeps_role", "DCL-7", "crash", 1, 500),
    ("dledger_commitlog.quorum_timeout_is_put_ok", "DCL-8", "leader-partition", 3, 1000),
    ("dledger_commitlog.queue_offset_not_raised", "DCL-8", "none", 1, 120),
    ("dledger_commitlog.slave_takes_puts", "DCL-8", "gentle", 2, 200),
    ("dledger_commitlog.dispatch_one_behind", "DCL-9", "none", 1, 200),
]


@pytest.mark.parametrize(("mutant", "prop", "profile", "seed", "steps"), CAUGHT, ids=[c[0] for c in CAUGHT])
def test_a_wrong_decision_is_an_unexpected_violation_of_its_property(mutant, prop, profile, seed, steps) -> None:
    with mu.installed(mu.BY_NAME[mutant]):
        broken = simulate(profile, seed, steps)
    found = [v for v in broken.violations if v.property == prop]
    assert found and found[0].expected is None, broken.violations
    assert prop in mu.BY_NAME[mutant].catches
    clean = simulate(profile, seed, steps)
    assert not [v for v in clean.violations if v.expected is None], clean.violations
    assert not [v for v in clean.violations if v.property == prop]


def run_scenario(name: str, seed: int = 1) -> runner.RunResult:
    d = json.loads((SCENARIOS / name).read_text(encoding="utf-8"))
    sc = scenario_file.parse(d, name)
    return runner.simulate(sc.cfg, seed, 1_000_000, sc.until_ms)


def test_leader_task_gives_up_when_its_member_stops_leading() -> None:
    """DLedgerRoleChangeHandler, case LEADER: `if (!isLeader()) { succ = false; break; }`, then the
    CANDIDATE task changes the broker to SLAVE."""
    for seed in (1, 2):
        r = run_scenario("leader_task_gives_up.json", seed)
        assert r.stopped == "until" and not r.failed_expectations and r.violations == [], (seed, r)


def test_a_leader_task_that_never_gives_up_is_reported_by_dcl7() -> None:
    with mu.installed(mu.BY_NAME["dledger_commitlog.leader_task_never_gives_up"]):
        r = run_scenario("leader_task_gives_up.json")
    dcl7 = [v for v in r.violations if v.property == "DCL-7"]
    assert dcl7 and dcl7[0].expected is None and "neither gave up" in dcl7[0].detail
    assert r.failed_expectations  # and the broker never turned SLAVE


# --- DCL-Q: the cause must be true of the very entry that is late ---


def quiet_world() -> core.World:
    r = simulate("none", 1, 400)
    w = r.world
    return w


def _leader(w: core.World) -> tuple[int, str, int]:
    for i, b in enumerate(w.nodes[:3]):
        if w.alive[i] and b.node.member.role is el.Role.LEADER:
            return i, w.cfg.ids[i], b.node.member.curr_term
    raise AssertionError("no leader")


def test_dcl_q_holds_on_a_quiet_history() -> None:
    w = quiet_world()
    assert dd.dcl_q(w), dd.dcl_q_explain(w)


def test_dcl_q_late_entry_of_a_broker_still_leading_its_term_is_unexpected() -> None:
    """The right shape (an entry appended in the quiet tail, not committed within 6 s) around a wrong
    value: its broker still leads the very term it appended in, so no leadership change explains it."""
    w = quiet_world()
    _, node, term = _leader(w)
    late = w.ghost.evolve(tail_appends=w.ghost.tail_appends.set(("k-late", 10 ** 6), (w.now - 7000, node, term)))
    w = w.evolve(ghost=late)
    assert not dd.dcl_q(w) and "k-late" in dd.dcl_q_explain(w)
    assert dd.dcl_q_expected(w) is None


def test_dcl_q_late_entry_of_an_earlier_term_is_explained() -> None:
    w = quiet_world()
    _, node, term = _leader(w)
    late = w.ghost.evolve(tail_appends=w.ghost.tail_appends.set(("k-late", 10 ** 6), (w.now - 7000, node, term - 1)))
    w = w.evolve(ghost=late)
    assert not dd.dcl_q(w)
    cause = dd.dcl_q_expected(w)
    assert cause is not None and f"stopped leading term {term - 1}" in cause


def test_dcl_q_bound_follows_the_heartbeat_interval() -> None:
    w = quiet_world()
    assert dd.dcl_q_bound_ms(w) == 6000
