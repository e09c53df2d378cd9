"""The properties can fail: broken variants of the reference (monkeypatched, test-only) are caught.

Each mutant breaks one rule DLedger relies on; the seeded fuzzer (histories.runner.simulate
over a range of seeds) must report the property that rule protects as an unexpected
violation, and the same seed must be clean without the mutant, so the mutant is the cause.
The Hypothesis machine must find a mutant too, with a readable report.

Every election property is broken by some mutant here: ELE-1 to ELE-5, HB-1, HB-2, ELE-L.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from histories import runner
from histories.mutants.election import HOME, MUTANTS, cfg_for, vote_ignoring_curr_vote_for
from property_tests.support.machines import ThreeNodes


def first_seed_violating(cfg, prop, seeds, steps):
    """The first seed in range(seeds) whose history has an unexpected violation of `prop`, or None."""
    for seed in range(seeds):
        result = runner.simulate(cfg, seed, steps)
        if any(v.property == prop for v in result.unexpected):
            return seed, result
    return None


@pytest.mark.parametrize("prop, name, mutant, cfg, seeds, steps", MUTANTS,
                         ids=[f"{m[0]}-{m[2].__name__}" for m in MUTANTS])
def test_fuzzer_finds_the_mutant(monkeypatch, prop, name, mutant, cfg, seeds, steps):
    """The seeded fuzzer reports the property the mutant breaks; the same seed is clean on the real reference."""
    monkeypatch.setattr(HOME[name], name, mutant)
    found = first_seed_violating(cfg, prop, seeds, steps)
    assert found is not None, f"no seed in range({seeds}) exposed {mutant.__name__} as {prop}"
    seed, result = found
    violation = next(v for v in result.unexpected if v.property == prop)
    assert violation.expected is None and violation.step >= 1
    monkeypatch.undo()
    clean = runner.simulate(cfg, seed, result.steps)
    assert clean.unexpected == [], f"seed {seed} fails without the mutant: {clean.unexpected}"


def test_hypothesis_machine_finds_a_double_vote_and_reports_it(monkeypatch):
    """The stateful machine, under the forgetful-voter mutant, fails with ELE-1 or ELE-2 and the event list."""
    monkeypatch.setattr(HOME["handle_vote"], "handle_vote", vote_ignoring_curr_vote_for)
    quick = settings(max_examples=30, stateful_step_count=30, derandomize=True, database=None, deadline=None,
                     phases=[Phase.generate, Phase.shrink], suppress_health_check=list(HealthCheck),
                     print_blob=False, report_multiple_bugs=False)
    with pytest.raises(AssertionError) as err:
        run_state_machine_as_test(ThreeNodes, settings=quick)
    text = str(err.value)
    assert text.split(" ")[0] in ("ELE-1", "ELE-2") and "events so far" in text
    assert '"kind":"tick"' in text


def test_expected_violation_is_not_a_failure_but_is_still_reported():
    """Under OS crashes (profile hostile) a lost term file may break ELE-1/2/3: reported, classified, run still ok."""
    cfg = cfg_for("hostile")
    result = next((r for r in (runner.simulate(cfg, seed, 4000) for seed in range(10)) if r.violations), None)
    assert result is not None, "no OS-crash violation in seeds 0..9 of profile hostile"
    assert {v.property for v in result.violations} <= {"ELE-1", "ELE-2", "ELE-3"}
    assert all(v.expected for v in result.violations) and result.ok()
    assert result.world.history.os_crashes >= 1
