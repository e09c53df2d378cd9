"""model_checks: the Z3 proofs of the election properties, conformance of reference steps to the
symbolic relation, the exhaustive explorer, and the `prove` / `explore` command lines."""

from __future__ import annotations

import json

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from histories import runner
from histories.mutants import election as mutants
from model_checks import conformance as conf
from model_checks import crosshair_run, explore, induction, prove
from reference_impl import core
from reference_impl.core import chooser, faults
from reference_impl.election import world as election_world
from rmqspec import cli
from spec import symbolic as sy

SPEC = sy.for_protocol("election")
DEFAULT, OS_CRASH = SPEC.profile("4.9.4"), SPEC.profile("4.9.4+os-crash")


def test_election_safety_is_inductive_for_any_cluster_size():
    for prop in ("ELE-1", "ELE-2", "ELE-4", "ELE-5"):
        row = prove.prove_property(SPEC, DEFAULT, prop, replay=False)
        assert (row.result, row.ok) == ("proved", True), (prop, row.detail)
        assert "any N" in row.method
    assert prove.prove_property(SPEC, DEFAULT, "ELE-3", replay=False).result == "proved"


def test_the_proofs_are_not_vacuous():
    row = prove.sanity(SPEC, DEFAULT)
    assert row.ok, row.detail


def test_dropping_an_auxiliary_invariant_gives_a_counterexample_to_induction():
    """ELE-2 alone is not inductive: the CTI is a voter whose grant is not its recorded vote."""
    weak = attrs.evolve(SPEC, invariants=tuple(
        attrs.evolve(i, support=("ELE-2",)) if i.id == "ELE-2" else i for i in SPEC.invariants))
    out = induction.inductive(weak, "ELE-2")
    assert out.status == "violated" and out.cti["breaks"] == "ELE-2", out.detail
    assert out.cti["action"] in ("grant_vote", "request_vote")


@pytest.mark.slow  # a slow model check, also run by rmqspec check (make test-all)
def test_os_crash_losing_the_term_file_breaks_induction_and_bmc_finds_a_trace():
    for prop in ("ELE-2", "ELE-3"):
        row = prove.prove_property(SPEC, OS_CRASH, prop, replay=False)
        assert row.result == "violated" and row.ok and row.expected, (prop, row.detail)
        assert row.cti is not None and row.trace
        assert any(st_["action"] == "lose_term_file" for st_ in row.trace)
    # ELE-4 does not depend on persisted votes: still inductive with OS crashes
    assert prove.prove_property(SPEC, OS_CRASH, "ELE-4", replay=False).result == "proved"


def _history(profile: str, seed: int, steps: int):
    cfg = election_world.make_config(3).evolve(profile=faults.profile(profile, "election"))
    checker = conf.StepChecker(SPEC)
    runner.run(cfg, chooser.SeededChooser(seed).choose, steps, hooks=(checker,))
    return checker


@pytest.mark.slow  # a slow model check, also run by rmqspec check (make test-all)
@settings(max_examples=4, deadline=None)
@given(seed=st.integers(1, 10_000), profile=st.sampled_from(["standard", "hostile"]))
def test_random_reference_steps_are_steps_of_the_spec(seed, profile):
    checker = _history(profile, seed, 250)
    assert not checker.mismatches, checker.mismatches


@pytest.mark.slow  # a slow model check, also run by rmqspec check (make test-all)
def test_conformance_sees_many_kinds_of_step():
    checker = _history("standard", 2, 600)
    assert not checker.mismatches
    kinds = {a for name in checker.by_action for a in name.split("+")}
    assert {"request_vote", "grant_vote", "become_leader", "become_follower", "next_term"} <= kinds, kinds


def test_recorded_trace_steps_conform(tmp_path):
    path = tmp_path / "t.jsonl"
    cfg = election_world.make_config(3).evolve(profile=faults.profile("standard", "election"))
    with open(path, "w", encoding="utf-8") as f:
        runner.simulate(cfg, 5, 300, trace_out=f)
    checker, result = conf.check_trace(SPEC, str(path))
    assert result.mismatch is None and not checker.mismatches
    assert checker.steps - checker.stutters > 20


def test_a_step_the_spec_does_not_allow_is_reported_with_its_first_failing_clause():
    w = core.init(election_world.make_config(3))
    before = SPEC.abstract(w)
    # n0 becomes leader of term 0 with no vote granted: become_leader's quorum guard fails
    after = before.evolve(role=("LEADER", *before.role[1:]), leader=("n0", *before.leader[1:]),
                          elected=frozenset({(0, "n0")}))
    verdict = conf.check_step(SPEC, before, after)
    assert not verdict.ok
    assert "closest is become_leader" in verdict.message, verdict.message
    assert "a quorum granted it a vote in currTerm" in verdict.message, verdict.message


def test_explorer_checks_every_state_and_symmetry_reduces():
    cfg = election_world.make_config(3)
    sym = explore.Explorer(cfg, depth=6, limit=1).run()
    plain = explore.Explorer(cfg, depth=6, limit=1, use_symmetry=False).run()
    assert sym.complete and plain.complete and not sym.found and not plain.found
    assert sym.distinct_states < plain.distinct_states


def test_explorer_finds_a_mutant_violation_and_writes_a_replayable_trace(tmp_path, monkeypatch):
    """A candidate that counts its own vote as a quorum (two nodes, so the quorum is both): the explorer reaches an unexpected ELE-4
    violation and writes the path to it as a trace that `rmqspec replay` re-runs. The shortest path is 7
    events: each candidate's locked part and its round (its self-vote), n0's request refused by n1 and
    the answer, and n0's parse."""
    monkeypatch.setattr(mutants.HOME["finish_vote_round"], "finish_vote_round", mutants.parse_own_vote_as_quorum)
    ex = explore.Explorer(election_world.make_config(2), depth=7, limit=1)
    res = ex.run()
    assert "ELE-4" in res.found and res.found["ELE-4"].expected is None, res.found
    assert [f.property for f in res.unexpected()]
    explore.write_traces(ex, str(tmp_path))
    with open(res.found["ELE-4"].trace, encoding="utf-8") as f:
        again = runner.replay(f)
    assert again.mismatch is None and any(v.property == "ELE-4" for v in again.run.violations)


@pytest.mark.slow  # a slow model check, also run by rmqspec check (make test-all)
def test_crosshair_confirms_or_leaves_unknown_never_a_counterexample():
    from model_checks import contracts

    conds, _ = crosshair_run.run(1.0, mods=(contracts,))
    assert conds and not [c for c in conds if c.status == "refuted"]
    assert any(c.status == "confirmed" for c in conds)


def _cli(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_prove_command_table_json_and_bad_input(capsys):
    code, out, _ = _cli(capsys, "prove", "--protocol", "election", "--profile", "4.9.4", "--contracts", "0")
    assert code == 0, out
    assert "election/ELE-1" in out and "proved" in out
    code, out, _ = _cli(capsys, "prove", "--protocol", "election", "--profile", "4.9.4", "--contracts", "0",
                        "--json")
    rows = json.loads(out)["rows"]
    assert code == 0 and {r["property"] for r in rows} >= {"ELE-1", "ELE-2", "ELE-4", "ELE-5"}
    for argv in (("prove", "--protocol", "nope"), ("prove", "--profile", "nope"), ("prove", "--contracts", "-1"),
                 ("explore", "--nodes", "9"), ("explore", "--protocol", "nope"), ("explore", "--draws", "x")):
        code, _, err = _cli(capsys, *argv)
        assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, (argv, err)


def test_explore_command_reports_states_per_second(capsys):
    code, out, _ = _cli(capsys, "explore", "--nodes", "3", "--depth", "5", "--max-term", "1", "--coverage", "20",
                        "--json")
    res = json.loads(out)
    assert code == 0 and res["complete"] and res["distinct_states"] > 10 and res["states_per_s"] > 0
    assert res["coverage"][0]["histories"] == 20


def test_prove_exits_1_when_a_row_is_not_as_its_profile_states(capsys, monkeypatch):
    """A profile that expects ELE-4 to be violated, while the model proves it: the row fails."""
    wrong = attrs.evolve(DEFAULT, expected={"ELE-4": "a made-up cause"})
    monkeypatch.setitem(sy._SPECS, "election", attrs.evolve(SPEC, profiles=(wrong,)))
    code, out, _ = _cli(capsys, "prove", "--protocol", "election", "--contracts", "0", "--jobs", "1")
    assert code == 1 and "PROVED !" in out, out


def test_every_state_random_histories_visit_is_in_the_exhaustive_set():
    """Symmetry reduction must not lose states: an orbit a random history reaches within the
    bound was stored by the BFS (this failed while fingerprints kept message ids)."""
    ex = explore.Explorer(election_world.make_config(3), depth=7, limit=2)
    ex.run()
    row = ex.random_coverage([60])[0]
    assert row["distinct_visited"] == row["in_exhaustive"] > 20, row


def test_ha_prefix_is_inductive_and_needs_the_offset_check():
    """HA-1 for any number of slaves; without HA-6's check (append only at the slave's max
    offset) it is no longer inductive; an OS crash that truncates the master breaks it."""
    from spec import ha_z3

    ha = sy.for_protocol("ha")
    assert prove.prove_property(ha, ha.profile("4.9.4"), "HA-1", replay=False).result == "proved"

    def no_offset_check(u, s, s2, n, o, b):
        return [c for c in ha_z3.receive(u, s, s2, n, o, b) if not c[0].startswith("offset is")]

    weak = attrs.evolve(ha, actions=tuple(attrs.evolve(a, body=no_offset_check) if a.name == "receive" else a
                                          for a in ha.actions))
    out = induction.inductive(weak, "HA-1", nodes=3)  # a finite CTI: Z3 finds quantified ones only sometimes
    assert out.status == "violated" and out.cti["action"] == "receive", out.detail
    row = prove.prove_property(ha, ha.profile("4.9.4+os-crash"), "HA-1", replay=False)
    assert row.result == "violated" and row.ok and any(st_["action"] == "truncate" for st_ in row.trace)
