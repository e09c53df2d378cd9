"""`rmqspec bench --coverage` (rmqspec/branch_coverage.py): branch coverage of reference_impl/
under the default fuzz plan, and the directed shapes and switches added so that the plan
takes the branches it missed (docs/fuzzing.md, "Branch coverage of the reference")."""

from __future__ import annotations

import json

import attrs

from histories import runner
from reference_impl import core
from reference_impl.core import chooser
from reference_impl.core.state import freeze
from reference_impl.ha.records import BrokerRole, Producer
from rmqspec import branch_coverage, cli
from spark_harness import plan, variants
from spark_harness.history import HistorySpec, run_history


def _result(protocol: str, files: dict) -> dict:
    return {"schema": branch_coverage.SCHEMA, "protocol": protocol, "histories": 1, "seed": 1, "cpu_s": 0.0,
            "coverage_py": "x", "files": files}


def test_summary_counts_a_protocol_own_package_and_the_union_of_core():
    """A branch of core that one protocol missed and another took is taken; a protocol's row
    counts its own package only."""
    ha = _result("ha", {"reference_impl/ha/service.py": {"executed": [[1, 2]], "missing": [[1, 3]]},
                        "reference_impl/core/world.py": {"executed": [[5, 6]], "missing": [[5, 7]]}})
    election = _result("election", {"reference_impl/election/server.py": {"executed": [[1, 2], [1, 3]], "missing": []},
                                    "reference_impl/core/world.py": {"executed": [[5, 7]], "missing": [[5, 6]]},
                                    "reference_impl/ha/service.py": {"executed": [], "missing": [[1, 2], [1, 3]]}})
    s = branch_coverage.summarize([ha, election])
    assert {k: s["protocols"]["ha"][k] for k in ("histories", "taken", "total", "percent")} == {
        "histories": 1, "taken": 1, "total": 2, "percent": 50.0}
    assert (s["protocols"]["election"]["taken"], s["protocols"]["election"]["total"]) == (2, 2)
    assert (s["core"]["taken"], s["core"]["total"]) == (2, 2)
    assert (s["total"]["taken"], s["total"]["total"]) == (5, 6)
    assert s["missing"] == {"reference_impl/ha/service.py": [(1, 3)]}
    assert branch_coverage.missing_text(s) == "reference_impl/ha/service.py <module>: 1->3\n"


def test_files_no_fuzz_history_runs_are_counted_apart():
    """log_points.py (the implementation-log writer), the trace codec and input validation are
    not run by a fuzz history: their branches are in `not_fuzzed`, with the reason."""
    ha = _result("ha", {"reference_impl/ha/service.py": {"executed": [[1, 2]], "missing": [[1, 3]]},
                        "reference_impl/ha/log_points.py": {"executed": [], "missing": [[4, 5], [4, 6]]},
                        "reference_impl/core/codec.py": {"executed": [[7, 8]], "missing": [[7, 9]]}})
    s = branch_coverage.summarize([ha])
    row = s["protocols"]["ha"]
    assert (row["fuzzed"]["taken"], row["fuzzed"]["total"]) == (1, 2)
    assert (row["not_fuzzed"]["taken"], row["not_fuzzed"]["total"]) == (0, 2)
    assert (s["total"]["fuzzed"]["total"], s["total"]["not_fuzzed"]["total"]) == (2, 4)
    assert set(s["not_fuzzed"]) == {"reference_impl/ha/log_points.py", "reference_impl/core/codec.py"}
    assert branch_coverage.not_fuzzed("reference_impl/ha/service.py") is None


def test_a_file_measured_on_another_version_is_left_out_of_the_union():
    """Line numbers of two versions of a file do not compare: a measurement of a file on
    another version than the one its own protocol ran is left out and named."""
    first = _result("dledger_log", {"reference_impl/dledger_log/store.py": {"executed": [[1, 2]], "missing": [[1, 3]],
                                                                          "source": "a"}})
    later = _result("dledger_commitlog", {"reference_impl/dledger_log/store.py": {"executed": [[1, 3]],
                                                                                "missing": [], "source": "b"}})
    s = branch_coverage.summarize([first, later])
    assert s["stale"] == ["reference_impl/dledger_log/store.py (dledger_commitlog)"]
    assert s["missing"] == {"reference_impl/dledger_log/store.py": [(1, 3)]}
    assert branch_coverage.summarize([later, first])["stale"] == s["stale"]  # the file's own protocol decides


def test_a_protocol_not_measured_leaves_its_package_out_of_the_union():
    election = _result("election", {"reference_impl/election/server.py": {"executed": [[1, 2]], "missing": []},
                                    "reference_impl/ha/service.py": {"executed": [], "missing": [[1, 2]]}})
    s = branch_coverage.summarize([election])
    assert (s["total"]["taken"], s["total"]["total"]) == (1, 1)
    assert s["missing"] == {}


def test_bench_coverage_refuses_bad_input_in_one_line(tmp_path, capsys):
    """An --out that is a file, or a protocol rmqspec does not ship: exit 2, one line, before any
    history runs."""
    plain = tmp_path / "plain"
    plain.write_text("x")
    assert cli.main(["bench", "--coverage", "--protocol", "election", "--out", str(plain), "--no-progress"]) == 2
    assert cli.main(["bench", "--coverage", "--protocol", "paxos", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "plain" in err[0] and "paxos" in err[1]


def test_bench_coverage_measures_election_histories(tmp_path, capsys):
    """Three election histories in a traced worker: the election package's branches are
    counted, some taken, and import-time branches of reference_impl/__init__.py are taken
    (the tracer starts before the project is imported)."""
    out = tmp_path / "cov"
    code = cli.main(["bench", "--coverage", "--protocol", "election", "--histories", "3", "--out", str(out),
                     "--no-progress", "--json"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    row = summary["protocols"]["election"]
    assert row["histories"] == 3 and 0 < row["taken"] < row["total"]
    measured = json.loads((out / "election.json").read_text())
    assert measured["files"]["reference_impl/__init__.py"]["executed"]
    assert (out / "missing.txt").read_text().startswith("reference_impl/")


# --- ha: GroupTransferService's timeout reaches a producer (the `send_timeout` switch) ---


def _sync_master_partition(send_timeout: int | None) -> dict:
    """SYNC_MASTER, no random faults, the slave cut off from the master and the producer
    from 10 s to 20 s: the master's puts wait for an ack that does not come."""
    script = ({"at_ms": 10_000, "do": "partition", "groups": [["n0", "p0"], ["n1"]]}, {"at_ms": 20_000, "do": "heal"})
    over = {"broker_role": "SYNC_MASTER", "script": tuple(freeze(a) for a in script)}
    if send_timeout is not None:
        over["send_msg_timeout"] = send_timeout
    return run_history(HistorySpec(protocol="ha", profile="none", nodes=2, seed=1, steps=50_000, tail_ms=30_000,
                                   overrides=tuple(sorted(over.items())), label=()))


def test_a_ten_second_send_timeout_receives_flush_slave_timeout():
    """GroupTransferService#doWaitTransfer's timeout (slaveTimeout, 3 s, checked once a second)
    answers FLUSH_SLAVE_TIMEOUT after the default sendMsgTimeout (3 s) has given up: the
    producer sees the status only with a longer client timeout, which the `send_timeout`
    switch draws."""
    default = _sync_master_partition(None)
    longer = _sync_master_partition(10_000)
    assert "PutMessageStatus.FLUSH_SLAVE_TIMEOUT" not in default["branches"]
    assert "PutMessageStatus.FLUSH_SLAVE_TIMEOUT" in longer["branches"]
    assert not [v for v in longer["violations"] if v["expected"] is None]


def test_the_send_timeout_switch_is_drawn_apart_from_every_other_axis(monkeypatch):
    """A switch with its own generator: about half the ha histories run 10 s, and removing the
    switch leaves every other axis of every history as it was (seeds named in reports keep
    their variants)."""
    p = plan.make_plan("ha", 60)
    with_switch = [p.spec("ha", k) for k in range(60)]
    labels = [dict(s.label) for s in with_switch]
    assert 10 < sum(lab["send_timeout"] == "10s" for lab in labels) < 50
    assert all((lab["send_timeout"] == "10s") == (dict(s.overrides).get("send_msg_timeout") == 10_000)
               for lab, s in zip(labels, with_switch))
    space = variants.SPACES["ha"]
    monkeypatch.setitem(variants.SPACES, "ha", attrs.evolve(
        space, switches=tuple(sw for sw in space.switches if sw.name != "send_timeout")))
    without = [p.spec("ha", k) for k in range(60)]
    for a, b in zip(with_switch, without):
        assert {k: v for k, v in a.label if k != "send_timeout"} == dict(b.label)
        assert {k: v for k, v in a.overrides if k != "send_msg_timeout"} == dict(b.overrides)


# --- branches named unreachable by the fuzz, each with the test that takes it ---


def test_the_ha_world_never_puts_to_a_slave():
    """handle_put's SLAVE branch (checkStoreStatus: SERVICE_NOT_AVAILABLE) is not reached by the
    ha world: every producer sends to brokers[0], which boots and restarts with the master role
    (4.9.4 master/slave never moves it). A hostile history with 3 brokers and 2 producers holds
    that at every step; test_ha_units.py::test_slave_refuses_puts takes the branch."""
    cfg = core.world_config("ha", 3, "hostile", {"producers": 2, "broker_role": "SYNC_MASTER"})
    master = cfg.proto.brokers[0]
    seen = []

    def hook(i, w, event, after, obs):
        for n in after.nodes:
            if isinstance(n, Producer):
                assert n.master == master
            elif n.id == master:
                assert n.role is not BrokerRole.SLAVE
        seen.append(i)

    runner.run(cfg, chooser.SeededChooser(5).choose, 4000, hooks=(hook,), properties=[])
    assert len(seen) == 4000
