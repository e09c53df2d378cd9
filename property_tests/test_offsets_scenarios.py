"""Offsets scenarios: RocketMQ's MQClientInstanceTest and RemoteBrokerOffsetStoreTest, seed 001's
master-down-then-back counterexamples (property_tests/scenarios/offsets/), the seeded fuzzer
finding OFF-2 by itself while OFF-1 holds, and the CLI over `offsets`."""

import io
import json
import pathlib

import pytest

from histories import runner, scenario_file
from reference_impl.core import chooser, faults
from reference_impl.core.network import Send
from reference_impl.core.state import FrozenMap
from reference_impl.offsets import broker as ob
from reference_impl.offsets import client as oc
from reference_impl.offsets.records import OffsetsConfig, PullState
from reference_impl.offsets.world import make_config
from rmqspec import cli

HERE = pathlib.Path(__file__).parent / "scenarios" / "offsets"
C = OffsetsConfig()


def run(name, drop=()):
    sc = scenario_file.load(str(HERE / name))
    cfg = sc.cfg
    if drop:
        cfg = cfg.evolve(script=tuple(a for a in cfg.script if a.index not in drop))
    return runner.simulate(cfg, sc.seed, 1_000_000, sc.until_ms)


def violated(result):
    return {v.property: v.expected for v in result.violations}


# --- the Java tests ---


def test_mq_client_instance_find_broker_address_in_subscribe():
    """MQClientInstanceTest.testFindBrokerAddressInSubscribe: id 1 is found as a slave; in the DLedger case
    {0, 2, 3} (n0 the leader), id 1 falls back to id 2 (`brokerId + 1`), still a slave."""
    broker_a = FrozenMap({0: "127.0.0.1:10911", 1: "127.0.0.1:10912", 2: "127.0.0.1:10913"})
    assert oc.find_broker_address_in_subscribe(broker_a, 1, False) == ("127.0.0.1:10912", True)
    broker_b = FrozenMap({0: "127.0.0.1:10911", 2: "127.0.0.1:10912", 3: "127.0.0.1:10913"})
    assert oc.find_broker_address_in_subscribe(broker_b, 1, False) == ("127.0.0.1:10912", True)


class OffsetStore:
    """RemoteBrokerOffsetStoreTest's fixture: a consumer whose route has only the master, which answers."""

    def __init__(self):
        self.n = oc.boot_consumer(C, "c0", 0).evolve(broker_addrs=FrozenMap({0: "n0"}),
                                                     assigned=FrozenMap({0: PullState(next_offset=0)}))
        self.b = ob.boot(C, "n0", 0, 0)

    def update_offset(self, offset, increase_only):
        self.n = oc.update_offset(self.n, 0, offset, increase_only)

    def persist(self):
        self.n, outs = oc.persist_all(C, self.n, 0)
        for o in outs:
            if isinstance(o, Send):
                self.b, _ = ob.on_message(self.b, o.msg)

    def read_from_store(self, answer=True):
        self.n = self.n.evolve(assigned=FrozenMap({0: PullState()}))
        n, outs = oc.fetch_consume_offset_from_broker(C, self.n, 0, 0)
        send = outs[0]
        resp = ob.on_request(C, self.b, send.msg, 1, 0)[1] if answer else None
        n, seen = oc.on_offset_answer(n, 0, send.dst, resp, 0)
        self.n = n.evolve(assigned=FrozenMap({0: PullState(next_offset=max(seen[0].offset, 0))}))
        return seen[0].answer

    def read_from_memory(self):
        return self.n.offset_table.get(0, -1)


def test_remote_broker_offset_store_update_offset():
    """RemoteBrokerOffsetStoreTest.testUpdateOffset: 1024, then 1023 (increaseOnly=false), then 1022
    with increaseOnly=true leaves 1023."""
    s = OffsetStore()
    s.update_offset(1024, False)
    assert s.read_from_memory() == 1024
    s.update_offset(1023, False)
    assert s.read_from_memory() == 1023
    s.update_offset(1022, True)
    assert s.read_from_memory() == 1023


def test_remote_broker_offset_store_read_offset_with_exception():
    """RemoteBrokerOffsetStoreTest.testReadOffset_WithException: an MQBrokerException (QUERY_NOT_FOUND)
    reads -1, a RemotingException (no answer) -2."""
    s = OffsetStore()
    s.b = s.b.evolve(store=ob.Store(cqs=((ob.CqUnit(phy=0, size=100, msg_id="m"),),), max_phy=10**6))
    assert s.read_from_store() == -1
    assert s.read_from_store(answer=False) == -2


def test_remote_broker_offset_store_read_offset_success():
    """RemoteBrokerOffsetStoreTest.testReadOffset_Success: after persist, READ_FROM_STORE returns 1024,
    then 1023, then still 1023 (increaseOnly), then 1025 after persistAll."""
    s = OffsetStore()
    for offset, increase_only, expected in ((1024, False, 1024), (1023, False, 1023), (1022, True, 1023),
                                            (1025, False, 1025)):
        s.update_offset(offset, increase_only)
        s.persist()
        assert s.read_from_store() == expected


def test_remote_broker_offset_store_remove_offset():
    """RemoteBrokerOffsetStoreTest.testRemoveOffset: a removed queue reads -1 from memory (persistAll
    forgets queues no longer assigned, as removeOffset does)."""
    s = OffsetStore()
    s.update_offset(1024, False)
    assert s.read_from_memory() == 1024
    s.n = s.n.evolve(assigned=FrozenMap())
    s.persist()
    assert s.read_from_memory() == -1


# --- seed 001: the master goes down and comes back ---


def test_master_down_then_back_restarted_consumers_consume_again():
    """Seed 001 / #1094: commits went to the slave while the master was down; consumers that restart after
    the master returns read its stale offsets and consume again; the slave's sync then regresses too."""
    result = run("master_down_then_back.json")
    assert result.expectations and not result.failed_expectations, [e.message for e in result.failed_expectations]
    assert result.ok(), [(v.property, v.detail) for v in result.unexpected]
    assert "no broker copies a slave's offsets to the master" in violated(result)["OFF-2"]
    m = result.measures
    assert m["regressions_commits_on_slave_only"] >= 1 and m["duplicates_regression"] > 50 and m["skips"] == 0
    lowerings = result.world.ghost.lowerings
    assert any(b == "n1" and low.code == "slave-sync" for (b, _), lows in lowerings.items() for low in lows)


def test_master_down_then_back_live_consumers_recover():
    """The same history without the consumer restarts: the live consumers re-commit their offsets to the
    master once their route has it again, and nothing is consumed twice (research §4.8.2)."""
    result = run("master_down_then_back.json", drop=(3, 4, 6, 7))
    assert result.ok() and "OFF-2" not in violated(result)
    assert result.measures["duplicates"] == 0


def test_slave_sync_put_all_overwrites_offsets_committed_to_the_slave():
    result = run("slave_sync_overwrites.json")
    assert result.ok(), [(v.property, v.detail) for v in result.unexpected]
    assert "(putAll)" in violated(result)["OFF-2"]
    assert result.measures["regressions_slave_sync"] == 1 and result.measures["duplicates_regression"] > 50


def test_master_restart_loses_unpersisted_commits():
    """A master restart loads the consumerOffset.json of up to 5 s before: a queue handed over before any
    consumer re-commits is read back there."""
    result = run("master_restart_loses_commits.json")
    assert result.ok(), [(v.property, v.detail) for v in result.unexpected]
    assert "loaded consumerOffset.json" in violated(result)["OFF-2"]
    assert result.measures["regressions_master_restart"] == 1 and result.measures["duplicates_regression"] > 5


def test_previous_owners_commit_after_the_new_owners_read_is_the_rebalance_race():
    """No fault at all: a third consumer joins, c0 drops queue 1 and commits 3 one-way while c1 takes it and
    reads it from the master, which answers 2 and accepts c0's 3 just after. c1 resumes below an offset the
    master holds: expected (`commit-after-read`, evidence: the answer, then c0's commit), and message 2's
    second consumption counts as at-least-once, not as a regression duplicate."""
    result = run("rebalance_commit_after_read.json")
    assert result.ok(), [(v.property, v.detail) for v in result.unexpected]
    why = violated(result)["OFF-2"]
    assert "n0 answered c1's query for queue 1 with 2" in why
    assert "c0, which had taken the queue before, committed 3 to n0" in why
    m = result.measures
    assert m["regressions"] == m["regressions_commit_after_read"] == 1 and m["regressions_unexplained"] == 0
    assert m["duplicates"] == m["duplicates_at_least_once"] == 1 and m["skips"] == 0


def _answers_one_less(real):
    def query(c, b, req):  # a broker that loses the queue's last commit when it answers
        resp = real(c, b, req)
        return resp.evolve(offset=resp.offset - 1) if resp.code is ob.ResponseCode.SUCCESS and resp.offset > 0 \
            else resp
    return query


def _resumes_one_below(real):
    def answer(n, queue_id, addr, resp, now):  # a consumer that resumes below what the broker answered
        n, outs = real(n, queue_id, addr, resp, now)
        ps = n.assigned.get(queue_id)
        if ps is None or ps.next_offset <= 0 or not outs:
            return n, outs
        n = n.evolve(assigned=n.assigned.set(queue_id, ps.evolve(next_offset=ps.next_offset - 1)),
                     offset_table=n.offset_table.set(queue_id, ps.next_offset - 1))
        return n, (outs[0].evolve(offset=outs[0].offset - 1),) + outs[1:]
    return answer


@pytest.mark.parametrize("mutant", ["broker", "consumer"])
def test_commit_after_read_is_not_a_blanket_excuse(monkeypatch, mutant):
    """The same scenario with a broken reference: a broker that answers one below what it holds, or a consumer
    that resumes one below the broker's answer. The regressions they cause lack the race's evidence (the broker
    answered what it held, the consumer resumed from that answer, other owners' commits came after it):
    OFF-2 is reported unexpected."""
    if mutant == "broker":
        monkeypatch.setattr(ob, "query_consumer_offset", _answers_one_less(ob.query_consumer_offset))
    else:
        monkeypatch.setattr(oc, "on_offset_answer", _resumes_one_below(oc.on_offset_answer))
    result = run("rebalance_commit_after_read.json")
    assert "OFF-2" in violated(result) and violated(result)["OFF-2"] is None
    assert "no known cause" in next(v.detail for v in result.unexpected if v.property == "OFF-2")
    assert result.measures["regressions_unexplained"] >= 1


# --- the seeded fuzzer ---


def test_seeded_fuzzer_finds_off2_by_itself():
    """With the `crash` profile and nothing scripted, the seeded chooser finds OFF-2 and names its cause."""
    cfg = make_config(2, {}).evolve(profile=faults.profile("crash", "offsets"))
    for seed in range(30):
        result = runner.run(cfg, chooser.SeededChooser(seed).choose, 20_000)
        assert result.ok(), [(v.property, v.detail) for v in result.unexpected]
        if "OFF-2" in violated(result):
            assert violated(result)["OFF-2"] and result.measures["duplicates"] > 0
            break
    else:
        pytest.fail("no OFF-2 counterexample in 30 seeds")


@pytest.mark.parametrize("seed", range(4))
def test_no_skip_with_every_fault(seed):
    """OFF-1 (and every other property but the expected OFF-2) holds under the `standard` profile."""
    cfg = make_config(2, {"slave_read_enable": seed % 2 == 1}).evolve(profile=faults.profile("standard", "offsets"))
    result = runner.run(cfg, chooser.SeededChooser(100 + seed).choose, 15_000)
    assert result.ok(), [(v.property, v.detail) for v in result.unexpected]
    assert result.measures["skips"] == 0 and result.measures["regressions_unexplained"] == 0


# --- OFF-1's one known cause: offsetCheckInSlave on a lagging slave ---

SLAVE_CHECKS = {"offset_check_in_slave": True, "slave_read_enable": True}


def test_a_lagging_slaves_offset_correction_skips_messages_as_an_expected_violation():
    """Found by a default fuzz (seed 269, `partition`): the master serves c0 offsets 91..98 and suggests
    the slave; the slave, behind at 97, answers the pull at 99 with PULL_OFFSET_MOVED (offsetCheckInSlave)
    and nextBeginOffset 97; the consumer commits 97 and drops its process queue, 91..96 unconsumed. OFF-1
    is expected with that answer as evidence, and stays so as later commits build on the gap."""
    cfg = make_config(2, SLAVE_CHECKS).evolve(profile=faults.profile("partition", "offsets"))
    result = runner.run(cfg, chooser.SeededChooser(269).choose, 8_000)
    assert result.ok(), [(v.property, v.detail) for v in result.unexpected]
    cause = violated(result)["OFF-1"]
    assert "slave n1 answered c0's pull of queue 0 at 99 with PULL_OFFSET_MOVED, nextBeginOffset 97" in cause
    assert "consumed only below 91" in cause


def _commits_before_consuming(on_pull_response):
    def mutant(c, n, queue_id, offset, resp, now):
        n, outs = on_pull_response(c, n, queue_id, offset, resp, now)
        if resp is not None and resp.code == 0 and resp.msgs and queue_id in n.assigned:
            n = oc.update_offset(n, queue_id, resp.next_begin_offset, True)
        return n, outs
    return mutant


@pytest.mark.parametrize("profile", ["standard", "partition", "crash"])
def test_a_skip_no_correction_explains_is_unexpected(monkeypatch, profile):
    """Next to the cause: a consumer that records a pulled batch as done before consuming it skips
    messages too, with offsetCheckInSlave on, but no PULL_OFFSET_MOVED jumped them: OFF-1 unexpected."""
    monkeypatch.setattr(oc, "on_pull_response", _commits_before_consuming(oc.on_pull_response))
    cfg = make_config(2, SLAVE_CHECKS).evolve(profile=faults.profile(profile, "offsets"))
    result = runner.run(cfg, chooser.SeededChooser(1).choose, 5_000)
    assert any(v.property == "OFF-1" for v in result.unexpected)


# --- the CLI over `offsets` ---


def test_simulate_master_crash_replay_and_check_trace(tmp_path, capsys):
    trace = tmp_path / "t.jsonl"
    code = cli.main(["simulate", "--protocol", "offsets", "--nodes", "2", "--faults", "master-crash", "--steps",
                     "6000", "--seed", "3", "--trace", str(trace), "--quiet"])
    assert code == 0
    assert '"kind":"crash"' in trace.read_text().replace(" ", "")
    assert cli.main(["replay", str(trace), "--quiet"]) == 0
    assert cli.main(["check-trace", str(trace)]) == 0
    assert "match the reference" in capsys.readouterr().out


def test_simulate_defaults_to_two_brokers(capsys):
    assert cli.main(["simulate", "--protocol", "offsets", "--faults", "master-crash", "--steps", "300", "--quiet"]) == 0
    assert "0 unexpected violation(s)" in capsys.readouterr().out


def test_check_trace_rejects_a_wrong_offset_table(tmp_path, capsys):
    out = io.StringIO()
    cfg = make_config(2, {}).evolve(profile=faults.profile("none"))
    runner.simulate(cfg, 1, 3000, trace_out=out)
    lines = out.getvalue().splitlines()
    step = json.loads(lines[2500])
    table = step["state"]["n0"]["offset_table"]
    key = next(iter(table))
    table[key]["0"] += 1
    lines[2500] = json.dumps(step)
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert cli.main(["check-trace", str(path)]) == 1
    assert "offset_table" in capsys.readouterr().out


@pytest.mark.parametrize("args", [["--nodes", "3"], ["--config", '{"nope": 1}'], ["--config", '{"queues": 0}'],
                                  ["--config", '{"consumers": -1}']])
def test_bad_offsets_config_exits_2_in_one_line(capsys, args):
    assert cli.main(["simulate", "--protocol", "offsets", *args, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rmqspec: error:") and err.count("\n") == 1


def test_offsets_registers_named_fault_profiles():
    for name in ("gentle", "crash", "partition", "standard", "master-crash"):
        p = faults.profile(name, "offsets")
        assert p.calm_at_ms is not None and p.any_faults()


def test_scenario_actions_persist_offsets_and_rebalance():
    from reference_impl import core
    from reference_impl.offsets import world as ow

    w = core.init(make_config(2, {}))
    pick = chooser.SeededChooser(0)
    while w.now < 2000:
        w, _ = core.step(w, pick.choose(w))
    c0 = w.cfg.ids.index("c0")
    w2, obs = ow.script_action(w, "persist_offsets", c0, {})
    assert [type(o).__name__ for _, o in obs] == ["CommitSent"]
    w3, _ = ow.script_action(w2, "rebalance", c0, {})
    assert w3.ext.due[c0][0] == w.now + C.rebalance_interval_ms
    with pytest.raises(ValueError):
        ow.script_action(w, "rebalance", w.cfg.ids.index("p0"), {})
