"""NS-12..NS-15 (spec/nameserver_decisions.py): each decision property reports a broken reference as an
UNEXPECTED violation on the step that makes the wrong decision, and the same history is clean without
the break (no unexpected violation, none of that property)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from histories import runner, scenario_file
from property_tests.support import mutation as mu
from reference_impl import core
from reference_impl.core import faults

PROTOCOL = "nameserver"
SCENARIOS = Path(__file__).parent / "scenarios" / PROTOCOL


def simulate(profile: str, seed: int, steps: int) -> runner.RunResult:
    cfg = core.protocol(PROTOCOL).make_config(3, {})
    return runner.simulate(cfg.evolve(profile=faults.profile(profile, PROTOCOL)), seed, steps)


def scenario(d: dict, name: str, seed: int = 1) -> runner.RunResult:
    sc = scenario_file.parse(d, name)
    return runner.simulate(sc.cfg, seed, 1_000_000, sc.until_ms)


def scenario_file_run(name: str, seed: int = 1) -> runner.RunResult:
    return scenario(json.loads((SCENARIOS / name).read_text(encoding="utf-8")), name, seed)


def assert_reported(broken: runner.RunResult, clean: runner.RunResult, prop: str) -> None:
    found = [v for v in broken.violations if v.property == prop]
    assert found and found[0].expected is None, broken.violations
    assert not [v for v in clean.violations if v.expected is None], clean.violations
    assert not [v for v in clean.violations if v.property == prop]


# (mutant, the decision property that must report it, a history that shows it)
CAUGHT = [
    ("nameserver.slave_registration_takes_topics", "NS-12", "none", 1, 60),
    ("nameserver.registration_keeps_timestamp", "NS-12", "none", 1, 600),
    ("nameserver.topic_config_never_changes", "NS-12", "gentle", 1, 2150),
    ("nameserver.channel_destroy_by_address_only", "NS-13", "gentle", 1, 300),
    ("nameserver.route_drops_last_broker", "NS-14", "none", 1, 80),
    ("nameserver.round_robin_steps_twice", "NS-15", "none", 1, 100),
    ("nameserver.retry_ignores_last_broker", "NS-15", "gentle", 1, 2800),
]


@pytest.mark.parametrize(("mutant", "prop", "profile", "seed", "steps"), CAUGHT, ids=[c[0] for c in CAUGHT])
def test_a_wrong_decision_is_an_unexpected_violation_of_its_property(mutant, prop, profile, seed, steps) -> None:
    assert prop in mu.BY_NAME[mutant].catches
    with mu.installed(mu.BY_NAME[mutant]):
        broken = simulate(profile, seed, steps)
    assert_reported(broken, simulate(profile, seed, steps), prop)


@pytest.mark.parametrize(("mutant", "prop", "name"), [
    ("nameserver.register_keeps_other_id", "NS-12", "ns6_role_change_oneway.json"),
    ("nameserver.unregister_by_address", "NS-13", "ns2_unregister_by_id.json"),
])
def test_a_wrong_decision_in_a_scenario_is_reported(mutant, prop, name) -> None:
    """The branches these scenarios reach: a broker's address registering under a new id ("switch
    slave to master"), and an UNREGISTER_BROKER whose id holds another address (removal by id)."""
    with mu.installed(mu.BY_NAME[mutant]):
        broken = scenario_file_run(name)
    assert_reported(broken, scenario_file_run(name), prop)


CRASH_A_MASTER = {
    "schema": "rmqspec.scenario/1", "name": "a master's machine dies; the scan must expire its entry",
    "protocol": "nameserver", "nodes": 2, "until_ms": 160_000,
    "config": {"server_channel_max_idle_time_seconds": 0},
    "steps": [{"at_ms": 20_000, "do": "os_crash", "node": "b0-m"}],
}


def test_a_scan_that_keeps_an_expired_entry_is_reported_by_ns13() -> None:
    """scanNotActiveBroker at 1,200 s: the scan due after 120 s of silence keeps the entry, and NS-13
    reports it on that very tick (NS-1 only once its 130 s bound has passed)."""
    with mu.installed(mu.BY_NAME["nameserver.expiry_1200s"]):
        broken = scenario(CRASH_A_MASTER, "crash_a_master", 2)
    clean = scenario(CRASH_A_MASTER, "crash_a_master", 2)
    assert_reported(broken, clean, "NS-13")
    ns13 = next(v for v in broken.violations if v.property == "NS-13")
    assert "b0-m" in ns13.detail and 130_000 < ns13.t_ms <= 140_000  # the first scan past 120 s of silence
    ns1 = [v for v in broken.violations if v.property == "NS-1"]
    assert not ns1 or ns1[0].step > ns13.step


def brokers_die(nodes: int) -> dict:
    """Broker b0's master and slave machines die at 20 s; the NameServers expire b0 after 120 s."""
    return {"schema": "rmqspec.scenario/1", "name": "brokers_die", "protocol": "nameserver", "nodes": nodes,
            "until_ms": 200_000, "steps": [{"at_ms": 20_000, "do": "os_crash", "node": "b0-m"},
                                           {"at_ms": 20_000, "do": "os_crash", "node": "b0-s"}]}


@pytest.mark.parametrize(("mutant", "nodes"), [
    ("nameserver.route_not_exist_drops_route", 1),  # the topic's only broker is gone: TOPIC_NOT_EXIST
    ("nameserver.clean_offline_keeps_addresses", 2),  # the route changes to b1 alone: b0's addresses are offline
    ("nameserver.route_change_keeps_addresses", 2),
])
def test_a_wrong_client_route_decision_is_reported_by_ns16(mutant, nodes) -> None:
    with mu.installed(mu.BY_NAME[mutant]):
        broken = scenario(brokers_die(nodes), "brokers_die")
    assert_reported(broken, scenario(brokers_die(nodes), "brokers_die"), "NS-16")
