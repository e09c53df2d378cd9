"""The nameserver world end to end: seed 003's partition example, the counterexamples for RocketMQ's
known violations (property_tests/scenarios/nameserver/), crash kinds, traces and the CLI."""

import io
import json
import pathlib

import pytest

from histories import runner, scenario_file
from reference_impl import core
from reference_impl.core import chooser, faults, state
from reference_impl.nameserver import admin
from reference_impl.nameserver import world as nw
from spec import nameserver as ns_spec
from rmqspec import cli

SCENARIOS = pathlib.Path(__file__).parent / "scenarios" / "nameserver"

# scenario -> the properties it must violate, each with a known cause (and nothing else)
EXPECTED = {
    "failover_machine_crash.json": set(),
    # p1's fault strategy falls back while cut off from b0; its send p1-177 times out at its whole budget
    # and makes two 0 ms attempts, both to b1-m, which stores both (at-least-once)
    "seed003_partition.json": {"NS-4", "NS-7", "NS-9"},
    "ns2_unregister_by_id.json": {"NS-2", "NS-6"},
    "ns3_reset_after_namesrv_restart.json": {"NS-3"},
    "ns3_incremental_first_registration.json": {"NS-3"},
    "ns3_delete_topic_stops_at_a_slave.json": {"NS-3"},  # ISSUE #4644: no NameServer asked
    "ns3_delete_topic_asks_a_restarted_namesrv.json": {"NS-3"},  # a master the command never asked
    "ns4_fault_fallback_repeat.json": {"NS-4"},
    "ns4_fallback_repeat_mid_send.json": {"NS-4", "NS-7"},
    "ns6_role_change_oneway.json": {"NS-6"},
    "ns7_fault_fallback_rewrite.json": {"NS-7"},
    "ns9_retry_duplicate.json": {"NS-9"},
    "ns11_issue7056.json": {"NS-11"},
    "ns15_retries_at_once.json": set(),  # two right choices in one step (CI's false NS-15, nameserver seed 49)
}


def run_scenario(path: pathlib.Path, **proto_overrides) -> runner.RunResult:
    sc = scenario_file.load(str(path))
    cfg = sc.cfg
    if proto_overrides:
        cfg = cfg.evolve(proto=cfg.proto.evolve(**proto_overrides))
    return runner.simulate(cfg, sc.seed, 1_000_000, sc.until_ms)


def test_every_scenario_file_is_listed():
    assert {p.name for p in SCENARIOS.glob("*.json")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_scenario_violates_exactly_its_expected_properties(name):
    result = run_scenario(SCENARIOS / name)
    assert not result.failed_expectations, [e.message for e in result.failed_expectations]
    assert not result.unexpected, [(v.property, v.detail) for v in result.unexpected]
    assert {v.property for v in result.violations} == EXPECTED[name]
    assert all(v.expected for v in result.violations)


def test_seed003_partition_each_side_routes_to_its_own_broker():
    """Seed 003's example: each NameServer keeps its side's broker, clients follow, the heal reunites them."""
    result = run_scenario(SCENARIOS / "seed003_partition.json")
    assert [e.ok for e in result.expectations] == [True] * 4
    assert not [v for v in result.violations if v.property in ("NS-1", "NS-2", "NS-3")]


def test_issue7056_needs_exactly_two_namesrvs():
    """With three NameServers the same history recovers: the round-robin reaches the third one."""
    sc = scenario_file.load(str(SCENARIOS / "ns11_issue7056.json"))
    cfg = nw.make_config(1, {"name_servers": 3, "slaves": 0, "producers": 0, "consumers": 1})
    result = runner.simulate(cfg.evolve(script=sc.cfg.script[:3]), sc.seed, 1_000_000, sc.until_ms)
    assert not result.violations


def test_4_9_8_fault_strategy_does_not_rewrite_the_route():
    """The 4.9.8 fix (a new MessageQueue) removes NS-7's counterexample."""
    sc = scenario_file.load(str(SCENARIOS / "ns7_fault_fallback_rewrite.json"))
    c = sc.cfg.proto
    proto = c.evolve(producer=c.producer.evolve(fault=c.producer.fault.evolve(fault_fallback_mutates_queue=False)))
    result = runner.simulate(sc.cfg.evolve(proto=proto), sc.seed, 1_000_000, sc.until_ms)
    assert "NS-7" not in {v.property for v in result.violations}


def _selections(obs: tuple) -> list:
    from reference_impl.nameserver import producer as pr

    return [o for _, o in obs if type(o) is pr.QueueSelected]


def test_ns4_every_repeat_in_a_step_is_explained_not_just_the_last_selection():
    """The Hypothesis machine's NS-4 counterexample: a send's three attempts fail at once in one step;
    the fallback's repeat is the second, and the third (only b0 listed by then) repeats nothing."""
    from reference_impl.nameserver import ghost as ng
    from spec import nameserver as sn

    seen = []

    def hook(i, before, event, after, obs):
        sel = _selections(obs)
        if any(o.msg_id == "m3" for o in sel):
            seen.append((sel, sn.ns4(before, event, after, obs), sn.ns4_expected(after, event)))

    sc = scenario_file.load(str(SCENARIOS / "ns4_fallback_repeat_mid_send.json"))
    result = runner.simulate(sc.cfg, sc.seed, 1_000_000, sc.until_ms, hooks=(hook,))
    assert not result.unexpected, [(v.property, v.detail) for v in result.unexpected]
    [(sel, holds, cause)] = seen
    assert [ng.repeats_failed_broker(o) for o in sel] == [False, True, False]
    assert sel[1].path in ng.FALLBACK_PATHS and sel[2].brokers == ("b0",)
    assert not holds and cause is not None and "retry 1 of m3" in cause


def test_ns4_a_repeat_outside_the_fallback_stays_unexpected_in_a_step_with_explained_ones():
    """expected_when must not let an explained repeat, before or after it, cover an unexplained one."""
    from reference_impl.nameserver import ghost as ng
    from reference_impl.nameserver import producer as pr
    from spec import nameserver as sn

    w = core.init(nw.make_config(2))
    p0 = w.cfg.ids.index("p0")
    fallback = pr.QueueSelected(msg_id="m", attempt=1, broker="b0", queue_id=0, last_broker="b0",
                                path="fault_pick_one_at_least", brokers=("b0", "b1"))
    plain = fallback.evolve(attempt=2, path="fault_available")
    fresh = fallback.evolve(attempt=0, last_broker=None)
    for order in ([fallback, plain], [plain, fallback]):
        g = w.ghost
        for o in order:
            g = ng.ghost_update(g, w, p0, o)
        after = w.evolve(ghost=g)
        assert not sn.ns4(w, None, after, tuple((p0, o) for o in order))
        assert sn.ns4_expected(after) is None and "retry 2 of m went back to b0" in sn.ns4_explain(after)
    g = w.ghost
    for o in (fresh, fallback, fresh):
        g = ng.ghost_update(g, w, p0, o)
    assert "retry 1 of m went back to b0" in sn.ns4_expected(w.evolve(ghost=g))


# --- crash kinds ---


def _run_until(cfg: core.WorldConfig, script: list, until: int, seed: int = 1) -> runner.RunResult:
    from reference_impl.core import scenario

    cfg = cfg.evolve(script=scenario.parse_actions(script, cfg.ids, core.protocol("nameserver")))
    return runner.simulate(cfg, seed, 1_000_000, until)


def _drop_times(result: runner.RunResult) -> list[int]:
    return [ms for _, ms in result.world.ghost.ns_detect]


def test_process_crash_is_noticed_at_once_a_machine_crash_only_by_expiry():
    cfg = nw.make_config(1, {"slaves": 0, "producers": 0, "consumers": 0})
    fast = _run_until(cfg, [{"at_ms": 20_000, "do": "crash", "node": "b0-m"}], 30_000)
    assert len(_drop_times(fast)) == 2 and max(_drop_times(fast)) < 100
    slow = _run_until(cfg, [{"at_ms": 20_000, "do": "os_crash", "node": "b0-m"}], 200_000)
    assert len(_drop_times(slow)) == 2
    assert all(90_000 <= ms <= 130_000 for ms in _drop_times(slow)), _drop_times(slow)


def test_sends_to_a_machine_down_broker_time_out_instead_of_failing_fast():
    cfg = nw.make_config(1, {"slaves": 0, "producers": 1, "consumers": 0})
    result = _run_until(cfg, [{"at_ms": 20_000, "do": "os_crash", "node": "b0-m"}], 40_000)
    assert result.measures["send_failed"] >= 1
    process = _run_until(cfg, [{"at_ms": 20_000, "do": "crash", "node": "b0-m"}], 40_000)
    assert result.measures["sends"] < process.measures["sends"]  # each failed send took 3 s


def test_graceful_shutdown_unregisters_and_exits():
    cfg = nw.make_config(1, {"slaves": 1, "producers": 0, "consumers": 0})
    result = _run_until(cfg, [{"at_ms": 20_000, "do": "shutdown", "node": "b0-s"}], 21_000)
    w = result.world
    assert not w.alive[w.cfg.ids.index("b0-s")]
    for i in (0, 1):
        assert set(w.nodes[i].rim.broker_live_table) == {"b0-m"}


# --- traces and the CLI ---


@pytest.mark.parametrize("profile", ["standard", "silent-crash"])
def test_trace_replays_and_checks(profile):
    cfg = nw.make_config(2).evolve(profile=faults.profile(profile, "nameserver"))
    out = io.StringIO()
    result = runner.simulate(cfg, seed=7, steps=1500, trace_out=out)
    assert result.ok()
    replayed = runner.replay(io.StringIO(out.getvalue()))
    assert replayed.mismatch is None and replayed.run.world == result.world


def test_check_trace_catches_a_wrong_route():
    cfg = nw.make_config(1).evolve(profile=faults.profile("none"))
    out = io.StringIO()
    runner.simulate(cfg, seed=1, steps=200, trace_out=out)
    lines = out.getvalue().splitlines()
    doctored = []
    for line in lines:
        d = json.loads(line)
        if d.get("i") == 150:
            d["state"]["ns0"]["live_brokers"] = ["b9-m"]
        doctored.append(json.dumps(d))
    replayed = runner.replay(io.StringIO("\n".join(doctored)))
    assert replayed.mismatch is not None and "live_brokers" in replayed.mismatch.message


def test_cli_simulate_and_bad_config(capsys):
    assert cli.main(["simulate", "--protocol", "nameserver", "--nodes", "2", "--steps", "300", "--quiet",
                     "--faults", "crash"]) == 0
    assert "send_success_rate" in capsys.readouterr().out
    assert cli.main(["simulate", "--protocol", "nameserver", "--config", '{"no_such_key": 1}']) == 2
    assert "no_such_key" in capsys.readouterr().err
    assert cli.main(["simulate", "--protocol", "nameserver", "--config", '{"producers": -1}']) == 2


def test_config_overrides_reach_every_nested_config():
    cfg = nw.make_config(2, {"poll_name_server_interval": 5000, "send_latency_fault_enable": True,
                             "connect_timeout_millis": 1000, "name_servers": 3, "latency_fault_producers": []})
    c = cfg.proto
    assert c.producer.client.poll_name_server_interval == 5000 == c.consumer.poll_name_server_interval
    assert c.producer.fault.send_latency_fault_enable and c.broker.netty.connect_timeout_millis == 1000
    assert cfg.ids[:3] == ("ns0", "ns1", "ns2") and c.latency_fault_producers == ()
    assert nw.load_config(json.loads(json.dumps(state.encode_fields(c)))) == c


def test_every_profile_but_none_ends_in_a_quiet_tail():
    names = faults.names("nameserver")
    assert {"standard", "silent-crash", "long-partition", "failover", "scripted"} <= set(names)
    for name in names:
        prof = faults.profile(name, "nameserver")
        assert name == "none" or prof.calm_at_ms is not None
        assert prof.duplicate == 0 or name not in ("standard", "hostile")  # TCP does not duplicate


# --- mqadmin deleteTopic (reference_impl/nameserver/admin.py) ---


def _drive_until(w: core.World, choose, until_ms: int) -> core.World:
    while w.now < until_ms:
        ev = choose(w)
        if ev is None:
            break
        w, _ = core.step(w, ev)
    return w


def _registered_world(**over) -> core.World:
    """Two broker groups with a slave each, registered with both NameServers, and TopicA
    created by an operator on both masters and registered (by 20 s)."""
    cfg = core.world_config("nameserver", 2, "scripted", {"producers": 0, "consumers": 0, **over})
    choose = chooser.SeededChooser(1).choose
    w = _drive_until(core.init(cfg), choose, 12_000)
    for m in ("b0-m", "b1-m"):
        w, _ = nw.ext_apply(w, nw.CreateTopic(node=cfg.ids.index(m), topic="TopicA"), w.now)
    return _drive_until(w, choose, 20_000)


def _topic_a(w: core.World) -> tuple[set, dict]:
    held = {nid for nid, n in zip(w.cfg.ids, w.nodes) if nid.startswith("b") and "TopicA" in n.topic_config}
    listed = {nid: set(n.rim.topic_queue_table.get("TopicA", {})) for nid, n in zip(w.cfg.ids, w.nodes)
              if nid.startswith("ns")}
    return held, listed


def test_delete_topic_in_4_9_4_stops_at_the_first_slave_and_never_reaches_the_namesrvs():
    """DeleteTopicSubCommand 4.9.4 (fetchMasterAndSlaveAddrByClusterName): in address order b0-m
    drops TopicA, b0-s answers SYSTEM_ERROR (validateSlave), the command throws; both NameServers
    keep listing TopicA for b0, whose master no longer has it (ISSUE #4644, fixed in 4.9.5)."""
    w = _registered_world()
    assert _topic_a(w) == ({"b0-m", "b1-m"}, {"ns0": {"b0", "b1"}, "ns1": {"b0", "b1"}})
    w, done = admin.delete_topic_sub_command(w, "TopicA", w.now)
    assert (done.brokers, done.name_servers, done.stopped_at) == (("b0-m",), (), "b0-s")
    assert _topic_a(w) == ({"b1-m"}, {"ns0": {"b0", "b1"}, "ns1": {"b0", "b1"}})


def test_delete_topic_in_4_9_5_asks_masters_only_then_every_namesrv():
    w = _registered_world(delete_topic_in_slaves=False)
    w, done = admin.delete_topic_sub_command(w, "TopicA", w.now)
    assert (done.brokers, done.name_servers, done.stopped_at) == (("b0-m", "b1-m"), ("ns0", "ns1"), None)
    assert _topic_a(w) == (set(), {"ns0": set(), "ns1": set()})


def test_delete_topic_stops_at_a_master_that_is_down():
    w = _registered_world(delete_topic_in_slaves=False)
    w = core.crash_node(w, w.cfg.ids.index("b0-m"), "os")
    w, done = admin.delete_topic_sub_command(w, "TopicA", w.now)
    assert (done.brokers, done.stopped_at) == ((), "b0-m") and _topic_a(w)[1] == {"ns0": {"b0", "b1"},
                                                                                    "ns1": {"b0", "b1"}}


# --- NS-3's deleteTopic causes hold only on the very entry they explain ---


def _ns3_world(name: str) -> core.World:
    result = run_scenario(SCENARIOS / name)
    assert [v.expected is not None for v in result.violations if v.property == "NS-3"] == [True]
    return result.world


def _set_node(w: core.World, nid: str, n) -> core.World:
    return core.set_node(w, w.cfg.ids.index(nid), n)


def test_delete_stopped_explains_only_the_queue_data_the_namesrv_held_when_the_command_stopped():
    w = _ns3_world("ns3_delete_topic_stops_at_a_slave.json")
    assert "stopped at b0-s" in ns_spec.ns3_expected(w)
    ns0 = w.nodes[w.cfg.ids.index("ns0")]
    queues = ns0.rim.topic_queue_table["TopicA"]
    rewritten = queues.set("b0", queues["b0"].evolve(read_queue_nums=8))  # not what the delete left behind
    bad = _set_node(w, "ns0", ns0.evolve(rim=ns0.rim.evolve(
        topic_queue_table=ns0.rim.topic_queue_table.set("TopicA", rewritten))))
    assert not ns_spec.ns3(bad) and ns_spec.ns3_expected(bad) is None
    forgotten = w.evolve(ghost=w.ghost.evolve(stale_topics=w.ghost.stale_topics.without(("ns0", "TopicA", "b0"))))
    assert ns_spec.ns3_expected(forgotten) is None


def test_delete_missed_explains_only_a_master_whose_version_the_namesrv_still_has():
    w = _ns3_world("ns3_delete_topic_asks_a_restarted_namesrv.json")
    assert "without asking its master b0-m" in ns_spec.ns3_expected(w)
    b0 = w.nodes[w.cfg.ids.index("b0-m")]
    moved = _set_node(w, "b0-m", b0.evolve(data_version=b0.data_version.next_version(w.now)))
    assert ns_spec.ns3_expected(moved) is None  # a new version would have relisted it: something else lost it
    key = ("ns1", "TopicA", "b0")
    at, addr, version = w.ghost.kept_topics[key]
    other = w.evolve(ghost=w.ghost.evolve(kept_topics=w.ghost.kept_topics.set(key, (at, "b1-m", version))))
    assert ns_spec.ns3_expected(other) is None
