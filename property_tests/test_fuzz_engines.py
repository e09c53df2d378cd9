"""`rmqspec fuzz --engine fast|reference`: the fast world finds and measures, the reference judges.

The same seeds must give the same numbers from both engines (violations, their causes
and shortest histories, stats, fault counts, coverage and distinct states, which the fast
world computes over every history); the report says which world computed what; a fast
world that disagrees with the reference is a finding (exit 1).
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout

import pytest

pytest.importorskip("numba")

from reference_impl.core import network as net_mod  # noqa: E402
from rmqspec import cli  # noqa: E402
from spark_harness import fuzz, plan  # noqa: E402
from spark_harness import history as hist  # noqa: E402
from spark_harness.history import HistorySpec, run_history, run_history_fast  # noqa: E402

HISTORIES = 36  # six fault profiles x two cluster sizes x three seeds


def _run(tmp_path, engine, sample=0, protocol="election", histories=HISTORIES, judge="all"):
    opts = fuzz.FuzzOptions(protocol=protocol, histories=histories, master="none",
                            out=str(tmp_path / f"{engine}{sample}{judge}"), progress=False, counterexamples=False,
                            plots=False, engine=engine, coverage_sample=sample, judge=judge)
    return fuzz.run(opts, log=io.StringIO())


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("engines")
    return {"reference": _run(tmp, "reference"), "fast": _run(tmp, "fast"), "fast-all": _run(tmp, "fast", None)}


def test_both_engines_give_the_same_numbers_for_the_same_seeds(reports):
    ref, fast = reports["reference"].report, reports["fast"].report
    r, f = ref["by_protocol"]["election"], fast["by_protocol"]["election"]
    assert f["violations"] and f["violations"] == r["violations"]  # counts, causes, shortest history, details
    assert f["profiles"] == r["profiles"]  # histories, events, violating, unexpected, faults per history
    assert f["stopped"] == r["stopped"] and f["simulated_s"] == r["simulated_s"]
    assert f["stats"] == r["stats"]  # distinct states included: the twin counts them itself
    assert {k: v for k, v in f["coverage"].items() if k != "source"} == \
        {k: v for k, v in r["coverage"].items() if k != "source"}
    assert fast["steps"] == ref["steps"] and fast["violations"] == ref["violations"]


def test_coverage_is_the_same_when_the_reference_covers_every_history(reports):
    """With the reference also running every history whole, both engines report the same
    coverage; only its source differs (the twin counted it, the reference cross-checked)."""
    ref, every = reports["reference"].report, reports["fast-all"].report
    fast_coverage, ref_coverage = every["by_protocol"]["election"]["coverage"], ref["by_protocol"]["election"]["coverage"]
    assert {k: v for k, v in fast_coverage.items() if k != "source"} == \
        {k: v for k, v in ref_coverage.items() if k != "source"}
    assert (fast_coverage["source"]["engine"], ref_coverage["source"]["engine"]) == ("fast", "reference")
    assert every["by_protocol"]["election"]["stats"] == ref["by_protocol"]["election"]["stats"]


def test_the_report_says_which_world_computed_what(reports):
    ref, fast, every = (reports[k].report for k in ("reference", "fast", "fast-all"))
    assert (ref["engine"], ref["engines"]) == ("reference", {"election": "reference"})
    assert (fast["engine"], fast["engines"]) == ("fast", {"election": "fast"})
    e = fast["by_protocol"]["election"]["engine"]
    violating = sum(p["violating_histories"] for p in fast["by_protocol"]["election"]["profiles"].values())
    assert e["judged_by_reference"] == violating > 0 and e["mismatches"] == 0
    assert e["histories_by_engine"] == {"both": violating, "fast": HISTORIES - violating}
    src = fast["by_protocol"]["election"]["coverage"]["source"]
    assert src == {"engine": "fast", "histories": HISTORIES, "sample": "every history",
                   "cross_checked": "none (--coverage-sample 0)"}
    src = every["by_protocol"]["election"]["coverage"]["source"]
    assert (src["engine"], src["histories"]) == ("fast", HISTORIES) and "seeds 1..36" in src["cross_checked"]
    assert every["by_protocol"]["election"]["engine"]["histories_by_engine"] == {"both": HISTORIES}


def test_a_coverage_sample_is_the_first_histories(tmp_path):
    """The reference also runs the sample whole (its rows must agree); the twin covers all."""
    rep = _run(tmp_path, "fast", 5, histories=12).report["by_protocol"]["election"]
    assert rep["coverage"]["source"]["histories"] == 12 and "seeds 1..5" in rep["coverage"]["source"]["cross_checked"]
    assert rep["stats"]["distinct_states"]["count"] == 12 and rep["stats"]["steps"]["count"] == 12
    assert rep["engine"]["histories_by_engine"]["both"] >= 5 and rep["engine"]["mismatches"] == 0


def test_a_violating_fast_history_carries_the_references_verdicts():
    spec = HistorySpec(protocol="election", profile="hostile", nodes=3, seed=6)
    row, ref = run_history_fast(spec), run_history(spec)
    assert row["engine"] == "both" and row["violations"] == ref["violations"]
    assert all(v["detail"] for v in row["violations"])  # the reference's explanations
    # coverage and distinct states: the twin's own, equal to the reference's
    assert (row["states"], row["actions"], row["branches"], row["kinds"], row["state_sketch"]) == \
        (ref["states"], ref["actions"], ref["branches"], ref["kinds"], ref["state_sketch"])


def test_protocols_without_a_fast_world_run_on_the_reference(tmp_path):
    rep = _run(tmp_path, "fast", protocol="offsets", histories=1).report
    assert rep["engines"] == {"offsets": "reference"}
    assert rep["by_protocol"]["offsets"]["engine"]["histories_by_engine"] == {"reference": 1}


def test_a_fast_world_that_disagrees_with_the_reference_is_a_finding(tmp_path, monkeypatch):
    """Netty's scan grace changed in the reference alone: the judged histories disagree."""
    monkeypatch.setattr(net_mod, "SCAN_GRACE_MS", 900)
    result = _run(tmp_path, "fast", None, histories=6)
    e = result.report["by_protocol"]["election"]["engine"]
    assert e["mismatches"] > 0 and e["mismatch_seeds"] and result.report["fast_mismatches"] == e["mismatches"]
    assert result.exit_code == 1


def test_a_judged_sample_re_runs_every_unexpected_history_and_one_in_ten_of_the_rest(tmp_path, monkeypatch):
    """--judge sample: the reference re-runs history k when the fast world finds an unexpected
    violation in it, or k is in the hashed sample; the verdicts stay the same numbers."""
    judged = []
    orig = hist.judge

    def spy(spec, twin):
        judged.append((spec.seed - 1, twin["unexpected"]))
        return orig(spec, twin)

    monkeypatch.setattr(hist, "judge", spy)
    every = _run(tmp_path, "fast", histories=60).report
    want = {(k, un) for k, un in judged if plan.in_judge_sample(k) or un}
    assert want and len(want) < len(judged)
    judged.clear()
    sampled = _run(tmp_path, "fast", histories=60, judge="sample").report
    assert set(judged) == want
    e = sampled["by_protocol"]["election"]["engine"]
    assert e["judged_by_reference"] == len(judged) and "1 in 10" in e["judge"]
    assert every["by_protocol"]["election"]["engine"]["judge"] == "every history with a violation"
    for key in ("profiles", "stopped", "simulated_s"):
        assert sampled["by_protocol"]["election"][key] == every["by_protocol"]["election"][key]
    assert {p: (v["histories"], v["unexpected"], v["expected"]) for p, v in sampled["violations"].items()} == \
        {p: (v["histories"], v["unexpected"], v["expected"]) for p, v in every["violations"].items()}


def test_engine_and_coverage_sample_on_the_command_line(tmp_path):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main(["fuzz", "--protocol", "election", "--histories", "3", "--master", "none", "--engine",
                         "reference", "--out", str(tmp_path / "o"), "--no-progress", "--no-plots", "--json"])
    assert code == 0 and json.loads(out.getvalue())["engine"] == "reference"
    with redirect_stdout(io.StringIO()), redirect_stderr(err := io.StringIO()):
        assert cli.main(["fuzz", "--master", "none", "--coverage-sample", "some"]) == 2
    assert len(err.getvalue().strip().splitlines()) == 1
    with pytest.raises(plan.PlanError):
        plan.make_plan("election", 2, engine="warp")
    with redirect_stdout(io.StringIO()), redirect_stderr(err := io.StringIO()):
        assert cli.main(["fuzz", "--master", "none", "--judge", "some"]) == 2
    assert len(err.getvalue().strip().splitlines()) == 1
