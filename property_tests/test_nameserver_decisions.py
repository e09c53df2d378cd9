"""NS-12..NS-15 (spec/nameserver_decisions.py): each decision property reports a broken reference as an
UNEXPECTED violation on the step that makes the wrong decision, and the same history is clean without
the break (no unexpected violation, none of that property)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from histories import runner, scenario_file
from histories.mutants import catalogue as mu
from reference_impl import core
from reference_impl.core import faults
from reference_impl.nameserver import producer as pr
from spec import nameserver_decisions as nd

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
    ("nameserver.retry_index_not_kept", "NS-15", "gentle", 1, 2800),
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


def two_choices_in_one_step() -> tuple:
    """The step of ns15_retries_at_once.json where m5's retry avoiding b1 takes a queue of b0, whose
    master address is gone (MQClientException, no request written), and the next retry, at once,
    avoids b0: (before, event, after, observations)."""
    sc = scenario_file.parse(json.loads((SCENARIOS / "ns15_retries_at_once.json").read_text(encoding="utf-8")),
                             "ns15_retries_at_once.json")
    steps = []

    def keep(i, before, event, after, obs):
        if sum(type(o) is pr.QueueSelected for _, o in obs) == 2:
            steps.append((before, event, after, obs))
    runner.simulate(sc.cfg, sc.seed, 1_000_000, sc.until_ms, hooks=(keep,))
    assert len(steps) == 1
    return steps[0]


def test_a_send_choosing_twice_in_one_step_is_judged_choice_by_choice() -> None:
    """TopicPublishInfo#selectOneMessageQueue(lastBrokerName), called twice by one sendDefaultImpl in one
    step: the second choice starts from the index the first left (CI's NS-15 at nameserver seed 49, where
    both were judged by the index after the second). A wrong queue in either choice, or a lastBrokerName
    that is not the attempt before's broker, is reported."""
    before, event, after, obs = two_choices_in_one_step()
    chosen = [(o.attempt, o.last_broker, o.broker, o.queue_id) for _, o in obs if type(o) is pr.QueueSelected]
    assert chosen == [(1, "b1", "b0", 0), (2, "b0", "b1", 0)]
    assert nd.ns15(before, event, after, obs)
    ns15 = next(p for p in nd.PROPERTIES if p.id == "NS-15")
    for attempt in (1, 2):
        def tamper(o, **change):
            return o.evolve(**change) if type(o) is pr.QueueSelected and o.attempt == attempt else o
        for change in ({"queue_id": 1}, {"broker": "b1" if attempt == 1 else "b0"}, {"last_broker": None}):
            wrong = tuple((i, tamper(o, **change)) for i, o in obs)
            assert not nd.ns15(before, event, after, wrong), (attempt, change)
            assert f"attempt {attempt}" in ns15.explain(after), (attempt, change, ns15.explain(after))


def test_a_retry_that_loses_its_probes_is_reported_where_a_send_chooses_twice() -> None:
    """selectOneMessageQueue(lastBrokerName) that does not keep the index its probes advanced: the
    second choice of the step starts from the wrong index."""
    with mu.installed(mu.BY_NAME["nameserver.retry_index_not_kept"]):
        broken = scenario_file_run("ns15_retries_at_once.json")
    assert_reported(broken, scenario_file_run("ns15_retries_at_once.json"), "NS-15")
    ns15 = next(v for v in broken.violations if v.property == "NS-15")
    assert "m5 (attempt 2)" in ns15.detail and ns15.t_ms == 32_500, ns15.detail
