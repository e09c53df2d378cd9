"""HA-9..HA-13 (spec/ha_decisions.py): each decision property reports a broken reference as an
UNEXPECTED violation on the step that makes the wrong decision, and the same history is clean without
the break (no unexpected violation, none of that property)."""

from __future__ import annotations

import pytest

from histories import runner
from property_tests.support import mutation as mu
from reference_impl import core
from reference_impl.core import faults

PROTOCOL = "ha"
SYNC = {"broker_role": "SYNC_MASTER", "flush_disk_type": "SYNC_FLUSH"}


def simulate(profile: str, seed: int, steps: int, overrides: dict) -> runner.RunResult:
    cfg = core.protocol(PROTOCOL).make_config(2, overrides)
    return runner.simulate(cfg.evolve(profile=faults.profile(profile, PROTOCOL)), seed, steps)


# (mutant, the decision property that must report it, a history that shows it)
CAUGHT = [
    ("ha.housekeeping_after_4s", "HA-10", "gentle", 1, 1300, {}),
    ("ha.slave_ok_without_connection", "HA-11", "gentle", 1, 800, SYNC),
    ("ha.sync_flush_answers_at_once", "HA-12", "none", 1, 20, SYNC),
]


@pytest.mark.parametrize(("mutant", "prop", "profile", "seed", "steps", "overrides"), CAUGHT,
                         ids=[c[0] for c in CAUGHT])
def test_a_wrong_decision_is_an_unexpected_violation_of_its_property(mutant, prop, profile, seed, steps,
                                                                     overrides) -> None:
    assert prop in mu.BY_NAME[mutant].catches
    with mu.installed(mu.BY_NAME[mutant]):
        broken = simulate(profile, seed, steps, overrides)
    found = [v for v in broken.violations if v.property == prop]
    assert found and found[0].expected is None, broken.violations
    clean = simulate(profile, seed, steps, overrides)
    assert not [v for v in clean.violations if v.expected is None], clean.violations
    assert not [v for v in clean.violations if v.property == prop]


def test_a_send_the_network_delivered_twice_is_judged_as_its_own_put() -> None:
    """lossy, seed 1: step 1100 delivers a SEND_MESSAGE a second time (the same rpc); its new put
    waits for GroupCommitService like any other, while the first delivery's put already has its
    flush status. HA-11/HA-12 judge the put this delivery made, not the first one of that rpc."""
    r = simulate("lossy", 1, 1200, SYNC)
    assert not [v for v in r.violations if v.property in ("HA-11", "HA-12")], r.violations
