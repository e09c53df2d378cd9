"""The fuzz harness without Spark: per-history summaries, aggregation, sketches,
coverage, shrinking and the `fuzz` / `shrink` commands on `--master none`."""

import io
import json
import os
import pickle
import random
from contextlib import redirect_stderr, redirect_stdout

import pytest

from histories import runner, shell
from property_tests.support import protocol_mutants as mutants
from reference_impl import core
from reference_impl.core import chooser
from rmqspec import cli
from spark_harness import aggregate, coverage, fuzz, plan, report, shrink, sketch
from spark_harness.history import HistorySpec, config_of, run_history


def cli_run(*argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def rows():
    p = plan.make_plan("election", 24)
    return [r for c in p.chunks(3) for r in plan.run_chunk(p, c)]


def test_a_history_summary_is_a_pure_function_of_its_spec():
    spec = HistorySpec(protocol="election", profile="hostile", nodes=3, seed=6)
    a, b = run_history(spec), run_history(spec)
    assert a == b
    assert a["stopped"] in ("until", "steps") and a["steps"] > 0
    assert {v["property"] for v in a["violations"]} >= {"ELE-3"}  # seed 6 loses a term file
    assert all(v["expected"] for v in a["violations"])
    assert a["faults"]["os_crash"] >= 1 and "leaderless_ms" in a["stats"]
    assert a["states"] > 1 and len(a["state_sketch"]) % 3 == 0


def test_histories_end_a_tail_after_faults_stop_or_at_their_step_budget():
    calm = run_history(HistorySpec(protocol="election", profile="standard", nodes=3, seed=2))
    assert calm["stopped"] == "until" and 110_000 < calm["t_ms"] <= 120_000  # calm at 60 s + 60 s tail
    budget = run_history(HistorySpec(protocol="election", profile="none", nodes=3, seed=2, steps=300))
    assert budget["stopped"] == "steps" and budget["steps"] == 300
    quiet = run_history(HistorySpec(protocol="election", profile="none", nodes=3, seed=2))
    assert quiet["stopped"] == "until" and quiet["t_ms"] <= 120_000  # no tail: as long as the others


def test_the_plan_names_every_history_by_arithmetic():
    p = plan.make_plan("election", 13, seed=100)
    specs = [p.spec("election", k) for k in range(13)]
    assert [s.seed for s in specs] == list(range(100, 113))
    assert {s.profile for s in specs} == set(plan.default_profiles("election"))
    assert {s.nodes for s in specs} == {3, 5}
    chunks = p.chunks(2)
    assert [k for c in chunks for k in range(c.start, c.stop)] == list(range(13))


def test_a_plan_takes_a_list_of_protocols_and_all():
    assert plan.make_plan("ha,election,ha", 2).protocols == ("ha", "election")
    everything = plan.make_plan("all", 2).protocols
    assert {"election", "nameserver", "ha"} <= set(everything)
    assert plan.make_plan("election,all", 2).protocols[0] == "election" and \
        set(plan.make_plan("election,all", 2).protocols) == set(everything)


def test_all_is_the_shipped_protocols_even_after_another_is_registered():
    # This module imports the test-only election_mutant, as an earlier test in the same
    # process may: `all` must not fuzz it (CI's demo-count test once did, and exited 1).
    assert mutants.ELECTION_MUTANT in core.protocol_names()
    assert set(plan.make_plan("all", 2).protocols) == {
        "election", "dledger_log", "dledger_commitlog", "ha", "offsets", "nameserver"}
    assert plan.make_plan("election_mutant,all", 2).protocols[0] == mutants.ELECTION_MUTANT


def test_config_overrides_reach_every_history_and_bad_ones_are_refused():
    p = plan.make_plan("ha", 2, config={"broker_role": "SYNC_MASTER"})
    assert config_of(p.spec("ha", 1)).proto.store.broker_role.value == "SYNC_MASTER"
    for bad in ({"broker_role": "X"}, {"no_such_key": 1}, {"broker_role": ["SYNC_MASTER"]}):
        with pytest.raises(plan.PlanError):
            plan.make_plan("ha", 2, config=bad)


def test_default_profiles_are_those_with_random_faults():
    assert "scripted" not in plan.default_profiles("nameserver") and "none" not in plan.default_profiles("nameserver")
    assert {"silent-crash", "failover"} <= set(plan.default_profiles("nameserver"))
    assert "conn-drop" in plan.default_profiles("ha")


def test_other_protocols_report_result_codes_and_their_own_fault_kinds():
    ns = coverage.branch_universe("nameserver")
    assert "ResponseCode.SUCCESS" in ns  # a Java-style code class (rocketmq.ResponseCode)
    assert "PutMessageStatus.PUT_OK" in coverage.branch_universe("ha")  # an enum imported by name
    row = run_history(HistorySpec(protocol="nameserver", profile="gentle", nodes=2, seed=1, steps=400))
    assert "ResponseCode.SUCCESS" in row["branches"]
    row = run_history(HistorySpec(protocol="ha", profile="conn-drop", nodes=2, seed=1, steps=4000))
    assert row["faults"].get("conn_drop", 0) >= 1  # HA's own fault kind, counted as a fault


@pytest.mark.parametrize("bad", [dict(protocol="nope"), dict(protocol="election,nope"), dict(protocol=","),
                                 dict(profiles=["nope"]), dict(nodes=[0])])
def test_a_plan_with_unknown_names_is_refused(bad):
    args = dict(protocol="election", histories=3) | bad
    with pytest.raises(plan.PlanError):
        plan.make_plan(args.pop("protocol"), args.pop("histories"), **args)


def test_aggregation_does_not_depend_on_how_histories_are_split_or_ordered(rows):
    p = plan.make_plan("election", 24)
    whole = aggregate.Aggregate.of(rows)
    shuffled = rows[:]
    random.Random(3).shuffle(shuffled)
    parts = [aggregate.Aggregate.of(shuffled[i::4]) for i in range(4)]
    merged = parts[3].merge(parts[1]).merge(parts[0].merge(parts[2]))
    view = lambda agg: report.deterministic_view(report.build(p, agg, "x", {}, {}, {}))
    assert view(whole) == view(merged)
    assert whole.histories == 24 and whole.steps == sum(r["steps"] for r in rows)


def test_the_aggregate_stays_the_same_size_as_histories_pile_up(rows):
    agg = aggregate.Aggregate()
    sizes = []
    for rep in range(40):
        for r in rows:
            agg.add(r | {"seed": r["seed"] + 1000 * rep})
        sizes.append(len(pickle.dumps(agg)))
    assert agg.histories == 40 * len(rows)
    assert sizes[-1] <= sizes[4] * 1.05, sizes  # 120 -> 960 histories: no growth beyond histogram buckets


def test_hyperloglog_estimates_distinct_counts_within_its_error():
    rng = random.Random(7)
    for n in (50, 3000, 60_000):
        fps = {rng.getrandbits(64) for _ in range(n)}
        regs = sketch.empty()
        half = list(fps)
        sketch.merge_sparse(regs, sketch.sparse(set(half[: n // 2])))
        sketch.merge_sparse(regs, sketch.sparse(set(half[n // 3:])))
        assert abs(sketch.estimate(regs) - n) <= 4 * sketch.RELATIVE_ERROR * n + 2, n


def test_state_fingerprints_do_not_depend_on_the_process():
    code = ("from spark_harness.history import HistorySpec, run_history\n"
            "print(run_history(HistorySpec(protocol='election', profile='standard', nodes=3, seed=4))"
            "['state_sketch'].hex())")
    import subprocess
    import sys

    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env=os.environ | {"PYTHONHASHSEED": str(seed)}).stdout for seed in (1, 2)}
    assert len(outs) == 1


def test_histograms_give_exact_small_integers_and_bounded_error():
    h = aggregate.Histogram()
    for v in [1, 1, 2, 3, 3, 3, 7]:
        h.add(v)
    assert (h.quantile(0.5), h.quantile(1.0), h.lo, h.hi) == (3, 7, 1, 7)
    g = aggregate.Histogram()
    for v in range(1, 10_001):
        g.add(v * 1.5)
    assert abs(g.quantile(0.5) - 7500) <= 7500 / 8
    assert g.summary()["mean"] == pytest.approx(7500.75)


def test_every_action_seen_is_in_the_universe_and_roles_come_from_the_nodes(rows):
    p = plan.make_plan("election", 24)
    cfgs = [config_of(p.spec("election", k)) for k in range(12)]
    universe = set(coverage.action_universe(cfgs))
    seen = set().union(*(r["actions"] for r in rows))
    assert seen <= universe
    assert {"tick@LEADER", "crash@FOLLOWER", "restart@down", "calm@-"} <= seen
    assert set().union(*(r["branches"] for r in rows)) <= set(coverage.branch_universe("election"))
    assert "VoteResult.REJECT_ALREADY_VOTED" in coverage.branch_universe("election")


def mutant_history(seed=1):
    spec = HistorySpec(protocol=mutants.ELECTION_MUTANT, profile="standard", nodes=3, seed=seed)
    summary = run_history(spec)
    v = next(v for v in summary["violations"] if v["property"] == "ELE-2")
    cfg = config_of(spec)
    return cfg, shrink.record(cfg, chooser.SeededChooser(seed).choose, v["step"] + 30)


def test_the_mutant_is_caught_unexpectedly_and_the_real_reference_is_not():
    bad = run_history(HistorySpec(protocol=mutants.ELECTION_MUTANT, profile="gentle", nodes=3, seed=1))
    good = run_history(HistorySpec(protocol="election", profile="gentle", nodes=3, seed=1))
    assert bad["unexpected"] and any(v["property"] == "ELE-2" and v["expected"] is None for v in bad["violations"])
    assert not good["violations"]


def test_shrinking_keeps_the_violation_and_is_one_minimal():
    cfg, choices = mutant_history(seed=5)
    target = shrink.Target(property="ELE-2", expected=False)
    result = shrink.shrink(cfg, choices, target)
    assert not result.exhausted and len(result.choices) < len(choices)
    replayer = shrink.Replayer(cfg, target, result.until_ms)
    assert replayer.run(result.choices).violated  # from scratch, not from a saved prefix
    for i in range(len(result.choices)):
        assert not replayer.run(result.choices[:i] + result.choices[i + 1:]).violated, i


def test_shrinking_an_expected_violation_finds_the_lost_term_file():
    spec = HistorySpec(protocol="election", profile="hostile", nodes=3, seed=6)
    step = next(v["step"] for v in run_history(spec)["violations"] if v["property"] == "ELE-3")
    cfg = config_of(spec)
    result = shrink.shrink(cfg, shrink.record(cfg, chooser.SeededChooser(6).choose, step),
                           shrink.Target(property="ELE-3", expected=True))
    assert [d["kind"] for _, d in result.choices] == ["crash"] and result.choices[0][1]["os"]


def test_a_violation_found_expected_and_later_without_a_cause_is_shrunk_as_unexpected(monkeypatch):
    """A state property's cause can stop explaining it (LOG-5's evidence is asked again as it
    grows): the monitor then reports it unexpected at that later step. Replayed for shrinking, a
    candidate for that target runs on past the earlier expected violation (a replay that stopped
    there found the history not failing again: the first 100,000-history run's LOG-1 row)."""
    import attrs

    from spec import properties as props
    catalogue = props.for_protocol("dledger_log")
    k = next(k for k, p in enumerate(catalogue) if p.id == "LOG-5")
    real = catalogue[k].expected_when
    catalogue[k] = attrs.evolve(catalogue[k], cause_reads=None,
                                expected_when=lambda w, e=None: real(w) if w.now < 58_000 else None)
    monkeypatch.setitem(props._CATALOGUE, "dledger_log", catalogue)
    spec = HistorySpec(protocol="dledger_log", profile="leader-partition", nodes=3, seed=61512,
                       overrides=(("preferred_leader_ids", "n0"),))
    row = run_history(spec)
    v = next(v for v in row["violations"] if v["property"] == "LOG-5")
    assert v["expected"] is None and v["t_ms"] >= 58_000
    cfg = config_of(spec)
    result = shrink.shrink(cfg, shrink.record(cfg, chooser.SeededChooser(spec.seed).choose, v["step"]),
                           shrink.Target(property="LOG-5", expected=False), budget=30_000)
    assert shrink.Replayer(cfg, shrink.Target(property="LOG-5", expected=False), result.until_ms).run(
        result.choices).violated


@pytest.mark.parametrize("spec, prop, late_kinds", [
    (HistorySpec(protocol="election", profile="hostile", nodes=5, seed=12), "ELE-2", {"tick", "rpc_fail"}),
    (HistorySpec(protocol="dledger_log", profile="os_crash", nodes=3, seed=7), "LOG-3", {"tick"}),
    (HistorySpec(protocol="dledger_commitlog", profile="lossy", nodes=3, seed=0), "DCL-5", {"tick", "rpc_fail"}),
])
def test_a_recorded_history_with_late_events_replays_event_for_event(spec, prop, late_kinds):
    """Java timing lets a tick fire up to its slack after its wake time, and an RPC
    timeout up to a scan period after its deadline. The shrinker's default steps must
    wait for the end of such a window (core.deadline), not its start, or they fire a
    tick the history fired late, the recorded late event no longer applies, and the
    history does not fail again (fuzz counterexamples were "not reproduced on replay")."""
    cfg = config_of(spec)
    step = next(v["step"] for v in run_history(spec)["violations"] if v["property"] == prop)
    choices = shrink.record(cfg, chooser.SeededChooser(spec.seed).choose, step)
    for kind in late_kinds:  # the history has late events of these kinds
        assert any(d["kind"] == kind and d.get("late") for _, d in choices), kind
    chosen = []
    replayer = shrink.Replayer(cfg, shrink.Target(property=prop, expected=True), choices[-1][0],
                               on_step=lambda before, ev, after, obs, is_choice: chosen.append(is_choice))
    assert replayer.run(choices).violated
    assert chosen == [True] * len(choices)  # every recorded event applied, no default step between them


def test_fuzz_none_on_the_mutant_writes_a_shrunk_counterexample_with_picture_and_replay_command(tmp_path):
    out = tmp_path / "fz"
    code, stdout, _ = cli_run("fuzz", "--import", "property_tests.protocol_mutants", "--protocol", "election_mutant",
                              "--histories", "6", "--faults", "gentle,crash", "--master", "none", "--out", str(out),
                              "--no-progress")
    assert code == 1, stdout
    rep = json.loads((out / "report.json").read_text())
    ele2 = rep["violations"]["ELE-2"]
    assert ele2["unexpected"] == 6
    cex = ele2["counterexample"]
    assert cex["verified"] and cex["one_minimal"] and cex["choices"] <= 3 and cex["faults"] == 0
    assert os.path.exists(cex["picture"]) and os.path.getsize(cex["picture"]) > 1000
    # the command works from a fresh shell: rmqspec, or its path where .venv/bin is not on PATH
    assert cex["replay"] == shell.command("replay", "--import", "property_tests.protocol_mutants", cex["trace"])
    assert cex["replay"] in stdout and cex["replay"] in (out / "report.md").read_text()
    code, stdout, _ = cli_run(*cex["replay"].split()[1:], "--quiet")
    assert code == 1 and "ELE-2" in stdout and "UNEXPECTED" in stdout
    assert len((out / "histories.jsonl").read_text().splitlines()) == 6


def test_expected_violations_get_the_small_budget_and_the_report_says_how_far(tmp_path):
    """The mutant's unexpected ELE-2 is shrunk with the full budget, the real election's
    expected ELE-3 (an OS crash lost the term file) with --shrink-budget-expected;
    report.json's `shrinking` lists each with its budget and whether it is 1-minimal,
    report.md says so, and the run's wall time is the sum of its parts."""
    out = tmp_path / "fz"
    code, stdout, _ = cli_run("fuzz", "--import", "property_tests.protocol_mutants", "--protocol",
                              "election_mutant,election", "--histories", "6", "--faults", "hostile", "--master", "none",
                              "--out", str(out), "--no-plots", "--no-progress", "--shrink-budget-expected", "3000")
    assert code == 1, stdout
    rep = json.loads((out / "report.json").read_text())
    sh = rep["shrinking"]
    assert sh["budget_unexpected"] == shrink.DEFAULT_BUDGET and sh["budget_expected"] == 3000
    rows = {(r["protocol"], r["property"]): r for r in sh["by_property"]}
    unexpected = rows[("election_mutant", "ELE-2")]
    assert not unexpected["expected"] and unexpected["budget"] == shrink.DEFAULT_BUDGET and unexpected["one_minimal"]
    expected = rows[("election", "ELE-3")]
    assert expected["expected"] and expected["budget"] == 3000
    assert expected["one_minimal"] or expected["steps"] >= 3000  # cut short only by its budget
    assert sh["counterexamples"] == len(rows)
    assert sh["one_minimal"] + sh["cut_short"] + sh["not_reproduced"] == len(rows)
    cex = next(v["counterexample"] for k, v in rep["violations"].items() if k.endswith("ELE-3"))
    assert cex["shrink_budget"] == 3000 and cex["verified"]
    assert "Shrinking: " in (out / "report.md").read_text()
    # Timing: the parts and the rest add up to the headline (rounding aside).
    assert {"histories_s", "shrink_s", "write_s", "other_s"} <= set(rep["timing"]) <= \
        set(report.TIMING_PARTS) | {"other_s"}
    assert abs(sum(rep["timing"].values()) - rep["wall_s"]) < 0.05
    assert rep["shrink_workers"].endswith("process(es)")
    # The last lines say where the report and the HTML view are.
    assert stdout.rstrip().splitlines()[-2:] == [
        f"report: {out / 'report.md'} (and report.json)",
        f"view:   {out / 'index.html'} (open it in a browser to step through the counterexamples)"]


def test_shrinking_in_processes_gives_what_one_process_gives():
    p = plan.make_plan("election_mutant,election", 4, profiles=["hostile"],
                       imports=("property_tests.protocol_mutants",))
    agg = aggregate.Aggregate()
    for c in p.chunks(1):
        for row in plan.run_chunk(p, c):
            agg.add(row)
    tasks = fuzz.shrink_tasks(p, agg, fuzz.FuzzOptions())
    assert len(tasks) >= 2
    one = fuzz.shrink_in_processes(tasks, p.imports, (20_000, 2_000), workers=1)
    two = fuzz.shrink_in_processes(tasks, p.imports, (20_000, 2_000), workers=2)
    assert one == two and [r[0][:2] for r in one] == [t[:2] for t in tasks]


def test_the_same_seed_range_gives_the_same_report(tmp_path):
    def once(name, seed=1):
        opts = fuzz.FuzzOptions(protocol="election", histories=8, master="none", out=str(tmp_path / name),
                                progress=False, counterexamples=False, seed=seed, plots=False)
        return report.deterministic_view(fuzz.run(opts, log=io.StringIO()).report)

    assert once("a") == once("b")
    assert once("c", seed=2) != once("a")


def test_shrink_command_minimises_a_simulated_trace(tmp_path):
    trace = tmp_path / "t.jsonl"
    code, _, _ = cli_run("simulate", "--import", "property_tests.protocol_mutants", "--protocol", "election_mutant",
                         "--seed", "2", "--steps", "200", "--trace", str(trace), "--quiet")
    assert code == 1
    code, stdout, _ = cli_run("shrink", "--import", "property_tests.protocol_mutants", str(trace), "--json")
    entry = json.loads(stdout)
    assert code == 0 and entry["verified"] and entry["property"] in ("ELE-1", "ELE-2") and not entry["expected"]
    assert entry["choices"] < entry["original_events"]
    assert os.path.exists(tmp_path / "t.shrunk.jsonl")
    with open(tmp_path / "t.shrunk.jsonl") as f:
        assert any(v.property == entry["property"] for v in runner.replay(f).run.unexpected)


@pytest.mark.parametrize("argv", [
    ["fuzz", "--protocol", "nope", "--master", "none"],
    ["fuzz", "--faults", "nope", "--master", "none"],
    ["fuzz", "--nodes", "x"],
    ["fuzz", "--import", "no_such_module_here"],
    ["shrink", "/no/such/trace.jsonl"],
])
def test_bad_input_exits_2_with_one_line(argv):
    code, out, err = cli_run(*argv)
    assert code == 2 and err.count("\n") == 1 and err.startswith("rmqspec: error:")


def test_shrinking_a_trace_that_violates_nothing_is_refused(tmp_path):
    trace = tmp_path / "ok.jsonl"
    assert cli_run("simulate", "--seed", "1", "--steps", "100", "--trace", str(trace), "--quiet")[0] == 0
    code, _, err = cli_run("shrink", str(trace))
    assert code == 2 and "violates no property" in err
