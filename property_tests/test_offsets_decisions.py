"""OFF-7..OFF-13 (spec/offsets_decisions.py): each decision property reports a broken reference as an
UNEXPECTED violation on the step that makes the wrong decision, and the same history is clean without
the break (no unexpected violation, none of that property)."""

from __future__ import annotations

import pytest

from histories import runner
from histories.mutants import catalogue as mu
from reference_impl import core
from reference_impl.core import faults

PROTOCOL = "offsets"


def simulate(profile: str, seed: int, steps: int) -> runner.RunResult:
    cfg = core.protocol(PROTOCOL).make_config(2, {})
    return runner.simulate(cfg.evolve(profile=faults.profile(profile, PROTOCOL)), seed, steps)


# (mutant, the decision property that must report it, a history that shows it)
CAUGHT = [
    ("offsets.start_loads_nothing", "OFF-7", "hostile", 1, 850),
    ("offsets.persist_never_writes", "OFF-8", "none", 1, 320),
    ("offsets.drop_forgets_before_commit", "OFF-9", "crash", 2, 1400),
    ("offsets.commit_one_past", "OFF-10", "none", 1, 1100),
    ("offsets.query_answers_one_less", "OFF-11", "crash", 2, 1350),
    ("offsets.sync_takes_nothing", "OFF-12", "none", 1, 320),
    ("offsets.resume_one_past_answer", "OFF-13", "none", 1, 40),
]


@pytest.mark.parametrize(("mutant", "prop", "profile", "seed", "steps"), CAUGHT, ids=[c[0] for c in CAUGHT])
def test_a_wrong_decision_is_an_unexpected_violation_of_its_property(mutant, prop, profile, seed, steps) -> None:
    assert prop in mu.BY_NAME[mutant].catches
    with mu.installed(mu.BY_NAME[mutant]):
        broken = simulate(profile, seed, steps)
    found = [v for v in broken.violations if v.property == prop]
    assert found and found[0].expected is None, broken.violations
    clean = simulate(profile, seed, steps)
    assert not [v for v in clean.violations if v.expected is None], clean.violations
    assert not [v for v in clean.violations if v.property == prop]
