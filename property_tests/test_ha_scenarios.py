"""HA scenarios (property_tests/scenarios/ha/): RocketMQ's HATest, operational scenarios, and
the shortest counterexamples of the 4.9.4 findings (docs/ha.md), plus the CLI over `ha`."""

import io
import json
import pathlib

import pytest

from histories import runner, scenario_file
from reference_impl.core import chooser, faults
from reference_impl.ha.world import make_config
from rmqspec import cli
from spec import ha

HERE = pathlib.Path(__file__).parent / "scenarios" / "ha"


def run(name, version=None):
    sc = scenario_file.load(str(HERE / name))
    cfg = sc.cfg if version is None else sc.cfg.evolve(proto=sc.cfg.proto.evolve(version=version))
    return runner.simulate(cfg, sc.seed, 1_000_000, sc.until_ms)


def violated(result):
    return {v.property: v.expected for v in result.violations}


def assert_clean(result):
    assert result.expectations and not result.failed_expectations, [e.message for e in result.failed_expectations]
    assert not result.violations, [(v.property, v.detail) for v in result.violations]


def test_hatest_handle_ha():
    """HATest.testHandleHA: 10 puts on a SYNC_MASTER, all PUT_OK; the slave holds every one of them."""
    assert_clean(run("hatest_handle_ha.json"))


def test_hatest_semi_sync_replica():
    """HATest.testSemiSyncReplica: PUT_OK while the slave is up, SLAVE_NOT_AVAILABLE once it is gone."""
    assert_clean(run("hatest_semi_sync_replica.json"))


def test_new_empty_slave_starts_at_the_last_mapped_file():
    """An empty slave asking for 0 is fed from the start of the master's last file, and only that (HA-5)."""
    assert_clean(run("new_empty_slave.json"))


def test_slave_restart_catches_up():
    assert_clean(run("slave_restart.json"))


@pytest.mark.parametrize("role", ["sync", "async"])
def test_master_process_crash_loses_nothing(role):
    """The page cache survives a process crash: no acknowledged message is lost, the slave converges."""
    result = run(f"master_crash_{role}.json")
    assert_clean(result)
    assert result.measures["puts_put_ok"] > 90 and result.measures["acked_lost"] == 0


def test_slave_far_behind_is_not_available_then_catches_up():
    result = run("slave_far_behind.json")
    assert_clean(result)
    assert result.measures["puts_slave_not_available"] > 0


# --- findings: expected violations with their cause, and the fixed profile ---


def test_ha4_async_master_loses_an_acknowledged_message_with_the_disk():
    result = run("ha4_async_master_disk_loss.json")
    assert result.ok() and "ASYNC_MASTER acknowledges before" in violated(result)["HA-4"]


def test_ha8_ha3_first_report_is_not_range_checked_in_4_9_4():
    result = run("ha3_first_report.json")
    found = violated(result)
    assert result.ok() and "first report" in found["HA-8"] and "first report" in found["HA-3"]
    assert "master lost its data" in found["HA-1"]  # by design: nothing truncates a slave ahead of its master


def test_ha8_ha3_hold_when_the_first_report_is_checked():
    found = violated(run("ha3_first_report.json", version="fixed"))
    assert "HA-8" not in found and "HA-3" not in found and "HA-1" in found


def test_ha1_master_disk_loss_under_a_slave_that_starts_at_the_last_mapped_file():
    """fuzz (ha, seed 33, default seeds): a slave restarted empty was fed from the master's last
    mapped file, then the master lost its disk. The slave's CommitLog starts at 7168, so that is
    where it first differs from the master (HA-1 said 0, where it holds nothing, and the cause's
    byte walk found no bytes there: an unexpected HA-1). Its bytes are the master's from before the loss."""
    result = run("master_disk_loss_slave_from_last_file.json")
    found = {v.property: v for v in result.violations}
    assert result.ok(), result.unexpected
    assert "n1 differs from the master from offset 7168 (slave max 7664, master max 0)" in found["HA-1"].detail
    assert "master lost its data above 0" in found["HA-1"].expected and "n1 differs at 7168" in found["HA-1"].expected


def test_ha1_a_slave_byte_the_master_never_had_is_unexpected_after_the_loss():
    """The same history with one byte of the slave's copy changed: no loss of the master explains
    it, so HA-1 is unexpected, at the changed offset."""
    w = run("master_disk_loss_slave_from_last_file.json").world
    s = w.nodes[1].store
    k = 7300 - s.base
    changed = s.evolve(data=s.data[:k] + bytes([s.data[k] ^ 0xFF]) + s.data[k + 1:])
    w = w.evolve(nodes=(w.nodes[0], w.nodes[1].evolve(store=changed)) + w.nodes[2:])
    assert not ha.ha1(w) and ha.divergence(w, 1) == 7168
    assert ha.ha1_expected(w) is None


def test_ha1_master_disk_loss_under_a_slave_whose_last_file_is_empty():
    """test_ha_machine (--hypothesis-seed=2): the slave's OS crash took the bytes it was fed from the
    master's last mapped file, recovery kept the empty file (max offset 7168), then the master lost its
    disk. The slave holds no byte, but its CommitLog ends beyond the master's: the end it had reached,
    at an offset the master had reached, before the master's loss."""
    result = run("master_disk_loss_slave_empty_file.json")
    found = {v.property: v for v in result.violations}
    assert result.ok(), result.unexpected
    assert "n1 differs from the master from offset 7168 (slave max 7168, master max 0)" in found["HA-1"].detail
    assert "when n1's CommitLog already ended at 7168" in found["HA-1"].expected


def test_ha1_an_empty_slave_file_beyond_what_the_master_had_is_unexpected():
    """The same history with the slave's empty file at 8192, past the master's max offset before its
    loss (7664): no loss of the master explains that end."""
    w = run("master_disk_loss_slave_empty_file.json").world
    s = w.nodes[1].store
    assert (s.base, s.data) == (7168, b"")
    w = w.evolve(nodes=(w.nodes[0], w.nodes[1].evolve(store=s.evolve(base=8192, flushed=8192, durable=8192)))
                 + w.nodes[2:])
    assert not ha.ha1(w) and ha.divergence(w, 1) == 8192
    assert ha.ha1_expected(w) is None


def test_ha3_empty_slave_ack_covers_files_it_never_got_in_4_9_4():
    result = run("ha3_transfer_start.json")
    assert result.ok() and "last mapped file" in violated(result)["HA-3"]
    assert "HA-1" not in violated(result)  # nothing was lost: the slave simply never got file 0


def test_ha3_holds_under_the_fixed_accounting():
    result = run("ha3_transfer_start.json", version="fixed")
    assert not result.violations and result.measures["puts_put_ok"] == 0


def test_seeded_fuzzer_finds_ha4_under_async_master():
    """The seeded chooser, with the `disk-loss` profile and nothing scripted, finds HA-4 and reports it as expected."""
    cfg = make_config(2, {}).evolve(profile=faults.profile("disk-loss", "ha"))
    for seed in range(20):
        result = runner.run(cfg, chooser.SeededChooser(seed).choose, 5000)
        assert result.ok(), [(v.property, v.detail) for v in result.unexpected]
        if "HA-4" in violated(result):
            assert "ASYNC_MASTER acknowledges before" in violated(result)["HA-4"]
            break
    else:
        pytest.fail("no HA-4 counterexample in 20 seeds")


@pytest.mark.parametrize("version,profile", [("4.9.4", "hostile"), ("fixed", "hostile"), ("4.9.4", "standard")])
def test_sync_master_acknowledgements_over_many_seeds(version, profile):
    """Under SYNC_MASTER, every PUT_OK missing from the slaves at ack time has a known cause; with the
    `standard` profile (no data loss) there is none at all, in 4.9.4 as with the fix."""
    cfg = make_config(3, {"broker_role": "SYNC_MASTER", "version": version}).evolve(
        profile=faults.profile(profile, "ha"))
    for seed in range(4):
        result = runner.run(cfg, chooser.SeededChooser(seed).choose, 3000)
        assert result.ok(), [(v.property, v.detail) for v in result.unexpected]
        m = result.measures
        if profile == "standard":
            assert m["missing_at_ack"] == 0
        if version == "fixed":
            assert m["missing_at_ack"] == m["missing_slave_page_cache"]


# --- the CLI over `ha` ---


@pytest.mark.parametrize("role", ["SYNC_MASTER", "ASYNC_MASTER"])
def test_simulate_replay_and_check_trace(tmp_path, capsys, role):
    trace = tmp_path / "t.jsonl"
    code = cli.main(["simulate", "--protocol", "ha", "--faults", "hostile", "--steps", "1500", "--seed", "5",
                     "--config", json.dumps({"broker_role": role}), "--trace", str(trace), "--quiet"])
    assert code == 0
    assert cli.main(["replay", str(trace), "--quiet"]) == 0
    assert cli.main(["check-trace", str(trace)]) == 0
    assert "match the reference" in capsys.readouterr().out


def test_check_trace_rejects_a_wrong_offset(tmp_path, capsys):
    out = io.StringIO()
    cfg = make_config(2, {}).evolve(profile=faults.profile("none"))
    runner.simulate(cfg, 1, 400, trace_out=out)
    lines = out.getvalue().splitlines()
    step = json.loads(lines[300])
    step["state"]["n1"]["max_offset"] += 1
    lines[300] = json.dumps(step)
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert cli.main(["check-trace", str(path)]) == 1
    assert "max_offset" in capsys.readouterr().out


@pytest.mark.parametrize("config", ['{"broker_role": "SLAVE"}', '{"version": "5.0"}', '{"nope": 1}',
                                    '{"mapped_file_size_commit_log": 10}', '{"producers": -1}'])
def test_bad_ha_config_exits_2_in_one_line(capsys, config):
    assert cli.main(["simulate", "--protocol", "ha", "--config", config, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rmqspec: error:") and err.count("\n") == 1


def test_ha_registers_named_fault_profiles():
    names = faults.names("ha")
    for name in ("standard", "hostile", "os-crash", "disk-loss", "conn-drop", "partition", "crash"):
        assert name in names
        p = faults.profile(name, "ha")
        assert p.calm_at_ms is not None
    assert faults.profile("conn-drop", "ha").conn_drop > 0


def test_ha6_empty_kept_file_misplaces_the_last_file_in_4_9_4():
    found = violated(run("ha6_empty_file.json"))
    assert "wrote position, 0" in found["HA-6"] and "wrote position, 0" in found["HA-1"]


def test_ha6_holds_when_an_empty_slave_starts_afresh():
    result = run("ha6_empty_file.json", version="fixed")
    assert not result.violations and result.world.nodes[1].store.base == 256


def test_flush_slave_timeout_arrives_after_the_producer_gave_up(monkeypatch):
    """slaveTimeout (3 s from the put, answered at GroupTransferService's next wake) is never shorter
    than sendMsgTimeout (3 s from the send): the producer times out before FLUSH_SLAVE_TIMEOUT arrives."""
    from reference_impl.core.network import Respond
    from reference_impl.ha import broker as ha

    answered = []
    complete_put = ha.complete_put

    def spy(b, rpc, offset, flush=None, replica=None):
        b, outs = complete_put(b, rpc, offset, flush=flush, replica=replica)
        answered.extend(o.msg.status.value for o in outs if isinstance(o, Respond))
        return b, outs

    monkeypatch.setattr(ha, "complete_put", spy)
    cfg = make_config(2, {"broker_role": "SYNC_MASTER", "messages": 6}).evolve(profile=faults.profile("none"))
    cfg = cfg.evolve(script=scenario_file.parse({"protocol": "ha", "nodes": 2, "until_ms": 1, "steps": [
        {"at_ms": 5500, "do": "cut", "src": "n0", "dst": "n1"}]}).cfg.script)
    result = runner.run(cfg, chooser.SeededChooser(0).choose, 3000, until_ms=40_000)
    assert "FLUSH_SLAVE_TIMEOUT" in answered
    assert result.measures["puts_flush_slave_timeout"] == 0 and result.measures["puts_no_response"] > 0
