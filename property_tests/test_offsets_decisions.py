"""OFF-7..OFF-13 (spec/offsets_decisions.py): each decision property reports a broken reference as an
UNEXPECTED violation on the step that makes the wrong decision, and the same history is clean without
the break (no unexpected violation, none of that property)."""

from __future__ import annotations

import pytest

from histories import runner
from histories.mutants import catalogue as mu
from reference_impl import core
from reference_impl.core import faults
from reference_impl.offsets import client as off_client
from reference_impl.rocketmq import MASTER_ID

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


# gentle, seed 19 (the README's fuzz): c1 crashes at 58.6 s and c0 takes queue 1; n0 crashes at 59.6 s and
# the route c0 refreshes holds only the slave n1; c1 restarts at 62.6 s and c0 drops queue 1 again, while
# the master is out of its route: persist(mq) refreshes the route before it commits.
MASTER_GONE = ("gentle", 19, 6541)


def test_a_queue_dropped_while_the_master_is_out_of_the_route_waits_for_a_refresh() -> None:
    r = simulate(*MASTER_GONE)
    assert not r.unexpected, r.unexpected


def test_a_drop_that_commits_nothing_while_the_master_is_out_of_the_route_is_unexpected(monkeypatch) -> None:
    monkeypatch.setattr(off_client, "route_then", lambda c, n, action: ())
    found = [v for v in simulate(*MASTER_GONE).violations if v.property == "OFF-9"]
    assert found and found[0].expected is None and "a route refresh" in found[0].detail, found


def test_a_commit_after_the_refresh_that_skips_the_route_it_brought_is_unexpected(monkeypatch) -> None:
    real = off_client.commit_broker
    monkeypatch.setattr(off_client, "commit_broker", lambda n: real(n) if MASTER_ID in n.broker_addrs else None)
    found = [v for v in simulate(*MASTER_GONE).violations if v.property == "OFF-9"]
    assert found and found[0].expected is None and "refreshed its route" in found[0].detail, found
