"""What varies between fuzz histories (spark_harness/variants.py): version profiles cycled
like the fault profiles, configuration switches, swarm subsets of fault kinds and directed
fault shapes drawn from each history's seed; and the generic `fault_kinds` / `crashable`
keys that carry them to `rmqspec simulate --config`."""

import io
import json
from collections import Counter

import attrs
import pytest

from histories import runner
from reference_impl import core
from reference_impl.core import chooser, faults
from spark_harness import plan, shrink, variants
from spark_harness.history import HistorySpec, config_json, config_of, run_history


def specs(protocol, n, **kw):
    p = plan.make_plan(protocol, n, **kw)
    return p, [p.spec(protocol, k) for k in range(n)]


def test_every_job_runs_the_fixed_versions_beside_the_default():
    for protocol in ("dledger_log", "dledger_commitlog", "ha", "nameserver"):
        p, ss = specs(protocol, 2 * len(plan.default_profiles(protocol)) * 3)
        versions = [label for label, _ in p.parts[protocol].versions]
        assert versions[0] != "fixed" and "fixed" in versions
        first = {dict(s.label)["version"] for s in ss[:len(versions)]}
        assert first == set(versions), "any v consecutive histories run every version"
        pairs = {(s.profile, dict(s.label)["version"]) for s in ss}
        assert pairs == {(f, v) for f in p.parts[protocol].profile_names for v in versions}


def test_a_history_is_still_named_by_its_index_and_seed():
    p, ss = specs("ha", 40)
    again = plan.make_plan("ha", 40)
    assert ss == [again.spec("ha", k) for k in range(40)]
    assert [s.seed for s in ss] == list(range(1, 41))
    labels = Counter(a for s in ss for a, _ in s.label)
    assert labels["version"] == 40 and labels["broker_role"] == 40 and labels["flush"] == 40
    assert 0 < labels["swarm"] < 40 and 0 < labels.get("shape", 0) < 40
    roles = Counter(dict(s.label)["broker_role"] for s in ss)
    assert roles["SYNC_MASTER"] >= 10 and roles["ASYNC_MASTER"] >= 10


def test_the_config_a_history_ran_is_one_simulate_command_away():
    p, ss = specs("nameserver", 24)
    for s in ss:
        cfg = config_of(s)
        again = core.world_config("nameserver", s.nodes, s.profile, json.loads(config_json(s.overrides)))
        assert again == cfg
        kinds = dict(s.overrides).get("fault_kinds")
        if kinds:
            assert cfg.profile.name.startswith(s.profile + ":")
            for k in core.FAULT_KINDS:
                assert (getattr(cfg.profile, k) > 0) <= (k in kinds)


def test_swarm_keeps_a_strict_subset_with_the_recoveries_of_what_it_keeps():
    prof = core.world_config("dledger_log", 3, "hostile").profile
    seen = set()
    for seed in range(200):
        kinds = variants.swarm_kinds(prof, variants.rng_of("dledger_log", seed))
        if kinds is None:
            continue
        primary = [k for k in kinds if k not in variants.RECOVERY]
        assert primary and set(primary) < {k for k in variants.PRIMARY if getattr(prof, k)}
        assert ("restart" in kinds) == any(k in kinds for k in ("crash", "os_crash", "disk_loss"))
        assert ("heal" in kinds) == any(k in kinds for k in ("partition", "one_way"))
        seen.add(tuple(primary))
    assert len(seen) > 20
    single = core.world_config("dledger_log", 3, "crash").profile
    assert variants.swarm_kinds(single, variants.rng_of("dledger_log", 1)) is None  # nothing to mix


def test_keys_the_user_fixes_are_not_varied():
    p, ss = specs("ha", 30, config={"broker_role": "SYNC_MASTER", "version": "4.9.4"})
    assert all(dict(s.overrides)["broker_role"] == "SYNC_MASTER" for s in ss)
    assert all("broker_role" not in dict(s.label) for s in ss)
    assert {dict(s.label)["version"] for s in ss} == {"--config"}
    _, plain = specs("ha", 30, vary=False)
    assert all(s.overrides == () for s in plain) and {dict(s.label).get("version") for s in plain} == {"4.9.4"}


def test_a_directed_shape_restricts_random_crashes():
    cfg = core.world_config("ha", 3, "os-crash", {"crashable": ["n0"]})
    assert cfg.crashable == (0,)
    w = core.init(cfg)
    crashes = [e for e in core.fault_events(w, ("os_crash",))]
    assert crashes and {e.node for e in crashes} == {0}
    with pytest.raises(ValueError):
        core.world_config("ha", 2, "hostile", {"crashable": ["n7"]})
    with pytest.raises(ValueError):
        core.world_config("ha", 2, "hostile", {"fault_kinds": ["meteor"]})


def test_the_report_shows_each_version_and_switch(tmp_path):
    from spark_harness import fuzz
    r = fuzz.run(fuzz.FuzzOptions(protocol="election,ha", histories=6, master="none", out=str(tmp_path),
                                  counterexamples=False, progress=False, plots=False), log=open("/dev/null", "w"))
    ha = r.report["by_protocol"]["ha"]["variants"]
    assert set(ha["version"]) == {"4.9.4", "4.9.2", "fixed"}
    assert sum(x["histories"] for x in ha["broker_role"].values()) == 6
    assert set(r.report["versions"]) == {"ha"}  # election has one version: nothing to compare
    rows = [json.loads(line) for line in open(tmp_path / "histories.jsonl")]
    assert all("variant" in row and "config" in row for row in rows)
    md = open(tmp_path / "report.md").read()
    assert "### Versions and configurations" in md and "| version | fixed |" in md


def test_a_recorded_history_replays_exactly_under_java_timing():
    """The shrinker's default steps wait for the end of a tick's window (a due tick may fire late)."""
    cfg = core.world_config("election", 3, "hostile", {"preferred_leader_ids": "n2"})
    direct = runner.run(cfg, chooser.SeededChooser(2).choose, 400)
    v = next(v for v in direct.violations if v.property == "ELE-2")
    choices = shrink.record(cfg, chooser.SeededChooser(2).choose, v.step)
    assert any(d.get("late") for _, d in choices)  # ticks that fired late, which the replay must keep
    replay = shrink.Replayer(cfg, shrink.Target(property="ELE-2", expected=v.expected is not None), choices[-1][0])
    run = replay.run(choices)
    assert run.violated and len(run.choices) == len(choices)


def test_nameserver_operators_create_and_delete_topics_at_random():
    spec = HistorySpec(protocol="nameserver", profile="failover", nodes=2, seed=1,
                       overrides=(("fault_kinds", ("create_topic", "delete_topic")),))
    row = run_history(spec)
    assert row["faults"].get("create_topic", 0) >= 2 and "ext:CreateTopic@-" in row["actions"]
    cfg = core.world_config("nameserver", 2, "standard", {"fault_kinds": ["delete_topic"]})
    w = core.init(cfg)
    assert core.fault_events(w, ("delete_topic",)) == []  # nobody holds TopicA or TopicB yet


def test_the_leader_partition_shape_finds_figure_8_in_0_2_6_and_not_in_fixed():
    """Split the leader and the clients from the other servers again and again: a deposed
    leader's tail and its successor's meet, 0.2.6 commits the older term's entry by
    counting and a later leader replaces it (docs/dledger-findings.md, finding 1)."""
    spec = HistorySpec(protocol="dledger_log", profile="leader-partition", nodes=3, seed=3)
    row = run_history(spec)
    found = {v["property"]: v["expected"] for v in row["violations"]}
    assert not row["unexpected"] and {"LOG-2", "LOG-5"} <= set(found)
    assert "counting replicas of an entry of an older term" in found["LOG-5"]
    assert row["faults"]["leader_partition"] >= 3
    fixed = run_history(HistorySpec(protocol="dledger_log", profile="leader-partition", nodes=3, seed=3,
                                     overrides=(("dledger_version", "fixed"),)))
    assert not fixed["violations"]


def test_a_trace_with_the_leader_partition_replays():
    cfg = core.world_config("dledger_log", 3, "leader-partition")
    buf = io.StringIO()
    runner.simulate(cfg, 0, 1500, trace_out=buf)
    assert '"LeaderPartition"' in buf.getvalue()
    buf.seek(0)
    result = runner.replay(buf)
    assert result.mismatch is None, result.mismatch


def test_a_slave_crash_in_its_initial_sync_reaches_a_frame_at_another_offset():
    """The HA shape `slave-crash-in-initial-sync`: the slave's first file survives empty,
    4.9.4 appends the master's last file at its position 0 (F3) and then meets a frame
    whose offset differs from its max offset (HA-6's precondition; docs/ha.md)."""
    config = {"crashable": ["n0"], "flush_disk_type": "ASYNC_FLUSH", "mapped_file_size_commit_log": 16384,
              "producers": 2, "script": [{"at_ms": 9388, "do": "os_crash", "node": "n1"}]}
    spec = HistorySpec(protocol="ha", profile="standard", nodes=2, seed=347,
                       overrides=tuple(sorted((k, variants._freeze(v)) for k, v in config.items())))
    row = run_history(spec)
    assert "obs:FrameRejected" in row["kinds"] and row["stats"]["misplaced_frames"] >= 1
    assert {v["property"] for v in row["violations"]} >= {"HA-6"} and not row["unexpected"]
    fixed = run_history(attrs.evolve(spec, overrides=spec.overrides + (("version", "fixed"),)))
    assert "obs:FrameRejected" not in fixed["kinds"]


@pytest.mark.parametrize("protocol", ["election", "dledger_log", "dledger_commitlog", "ha", "nameserver", "offsets"])
def test_a_profile_narrowed_to_every_kind_is_written_and_read_back(protocol):
    """A swarm keeping every kind names its profile `hostile:loss+crash+...+conn_drop` (69 characters
    for nameserver): the trace the fuzzer writes with it must pass the header's own validation."""
    every = list(core.FAULT_KINDS) + [k for k, _ in faults.profile("hostile", protocol).ext]
    cfg = core.world_config(protocol, 3 if protocol != "offsets" else 2, "hostile", {"fault_kinds": every})
    out = io.StringIO()
    runner.simulate(cfg, 1, 30, trace_out=out)
    assert len(cfg.profile.name) > 64
    again = runner.replay(io.StringIO(out.getvalue()))
    assert again.mismatch is None
