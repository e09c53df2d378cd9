"""Many seeded election histories under every fault profile: no unexpected violation,
and the one RocketMQ hazard the hostile profile can reach (a lost currterm file) is found
and attributed to its cause."""

import collections

import pytest

from histories import runner
from reference_impl.core import chooser, faults
from reference_impl.election import world as election_world

SEEDS = 40


def histories(profile: str, nodes: int, seeds: range):
    cfg = election_world.make_config(nodes).evolve(profile=faults.profile(profile, "election"))
    until = cfg.profile.calm_at_ms + 40_000 if cfg.profile.calm_at_ms else None
    for seed in seeds:
        yield seed, runner.run(cfg, chooser.SeededChooser(seed).choose, 6000, until_ms=until)


@pytest.mark.parametrize("profile", ["gentle", "crash", "partition", "lossy", "standard"])
@pytest.mark.parametrize("nodes", [3, 5])
def test_no_unexpected_violation_under_faults(profile, nodes):
    """Crashes, partitions (symmetric and one-way), loss, duplication, reordering: every
    property holds at every step, and a leader settles after faults stop (ELE-L)."""
    for seed, result in histories(profile, nodes, range(SEEDS // nodes * 3)):
        assert not result.unexpected, (seed, result.unexpected)
        assert result.world.history.calm and result.measures["settle_ms"] is not None, seed


def test_hostile_finds_two_leaders_in_a_term_and_blames_the_lost_term_file():
    """DLedger writes currterm without fsync: after an OS crash a voter forgets its vote
    and may vote again in the same term. The fuzzer finds ELE-1/2/3 violations, each
    expected with that cause, and nothing unexpected."""
    found = collections.Counter()
    for seed, result in histories("hostile", 3, range(60)):
        assert not result.unexpected, (seed, result.unexpected)
        for v in result.violations:
            assert "lost its currterm file" in v.expected
            found[v.property] += 1
    assert found["ELE-1"] > 0 and found["ELE-2"] > 0 and found["ELE-3"] > 0, found


def test_lost_currterm_scenario_shows_two_leaders_in_term_one_under_every_seed():
    """scenarios/election/lost_currterm_two_leaders.json, the finding's shortest script: the
    leader is cut off, both followers lose their machines and elect a second leader of the
    same term. ELE-1/2/3 are violated, each expected with the lost-file cause."""
    from pathlib import Path

    from histories import scenario_file

    path = Path(__file__).parent / "scenarios" / "election" / "lost_currterm_two_leaders.json"
    sc = scenario_file.load(str(path))
    for seed in range(1, 11):
        result = runner.simulate(sc.cfg, seed, 1_000_000, sc.until_ms)
        assert not result.failed_expectations and not result.unexpected, seed
        assert {v.property for v in result.violations} >= {"ELE-1", "ELE-2", "ELE-3"}, seed
        assert all("lost its currterm file" in v.expected for v in result.violations), seed
