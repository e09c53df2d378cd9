"""Every command's `--json`, end to end: the command runs as a user runs it (a child
process, `python -m rmqspec.cli`, progress left on), its stdout parses as one JSON
document with the fields a CI tool reads, and whatever it says while it works goes to
stderr. prove --json and check --json used to end in a traceback after all their work.

Each run is kept small (a protocol, a few histories, short budgets); what the numbers
mean is tested elsewhere, here it is the contract of the output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = ("--import", "property_tests.protocol_mutants")


def rmqspec_json(*argv: str, code: int = 0) -> tuple[dict | list, str]:
    """Run `rmqspec ARGV --json`; return its stdout parsed and its stderr."""
    proc = subprocess.run([sys.executable, "-m", "rmqspec.cli", *argv, "--json"], capture_output=True, text=True,
                          cwd=ROOT, timeout=900)  # the timeout only guards against a hang
    assert proc.returncode == code, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return json.loads(proc.stdout), proc.stderr


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("json")


@pytest.fixture(scope="module")
def trace(work) -> tuple[Path, dict]:
    path = work / "t.jsonl"
    d, _ = rmqspec_json("simulate", "--protocol", "election", "--seed", "3", "--steps", "300", "--faults", "standard",
                        "--trace", str(path))
    return path, d


@pytest.fixture(scope="module")
def failing_trace(work) -> Path:
    path = work / "mutant.jsonl"
    d, _ = rmqspec_json("simulate", *MUTANTS, "--protocol", "election_mutant", "--seed", "2", "--steps", "200",
                        "--trace", str(path), code=1)
    assert d["ok"] is False and any(v["expected"] is None for v in d["violations"])
    return path


def test_simulate_json(trace):
    path, d = trace
    assert d["ok"] is True and d["steps"] == 300 and d["protocol"] == "election" and d["seed"] == 3
    assert d["faults"] == "standard" and d["trace"] == str(path) and d["nodes"] == ["n0", "n1", "n2"]
    assert isinstance(d["violations"], list) and "max_term" in d["stats"]


def test_replay_json(trace):
    d, _ = rmqspec_json("replay", str(trace[0]))
    assert d["ok"] is True and d["steps"] == 300 and d["mismatch"] is None and d["unexpected_violations"] == []


def test_check_trace_json(trace, work):
    d, _ = rmqspec_json("check-trace", str(trace[0]))
    assert d["ok"] is True and d["steps"] == 300 and d["t_ms"] == trace[1]["t_ms"]
    lines = trace[0].read_text().splitlines()
    step = json.loads(lines[50])
    step["state"]["n0"]["term"] = 99
    lines[50] = json.dumps(step)
    bad = work / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    d, _ = rmqspec_json("check-trace", str(bad), code=1)
    assert d["ok"] is False and d["mismatch"]["line"] == 51 and "term" in d["mismatch"]["message"]


def test_fuzz_json_is_report_json_and_progress_goes_to_stderr(work):
    out = work / "fz"
    d, err = rmqspec_json("fuzz", "--protocol", "election", "--histories", "4", "--master", "none", "--out", str(out),
                          "--no-plots")
    assert d == json.loads((out / "report.json").read_text())
    assert d["schema"] == "rmqspec.fuzz-report/1" and d["histories"] == 4 and d["unexpected_histories"] == 0
    assert d["wall_s"] > 0 and "histories_s" in d["timing"] and d["outputs"]["view"] == "index.html"
    assert "shrinking" in d and "by_protocol" in d
    assert "4/4 histories" in err and "rmqspec fuzz: election" in err  # the log and progress, on stderr


def test_fuzz_list_profiles_json():
    d, _ = rmqspec_json("fuzz", "--list-profiles")
    assert set(d) >= {"election", "dledger_log", "dledger_commitlog", "ha", "nameserver", "offsets"}
    hostile = d["election"]["hostile"]
    assert hostile["random_faults"] and hostile["fuzzed_by_default"] and isinstance(hostile["calm_at_ms"], int)
    assert not d["election"]["none"]["fuzzed_by_default"] and hostile["description"]


def test_shrink_json(failing_trace, work):
    d, _ = rmqspec_json("shrink", *MUTANTS, str(failing_trace), "--out", str(work / "small.jsonl"))
    assert d["verified"] is True and d["expected"] is False and d["property"] in ("ELE-1", "ELE-2")
    assert d["choices"] < d["original_events"] and d["trace"].endswith("small.jsonl") and "one_minimal" in d


def test_prove_json_with_contracts(work):
    d, err = rmqspec_json("prove", "--protocol", "offsets", "--contracts", "0.3", "--no-witness")
    assert d["ok"] is True and d["wall_s"] >= d["proofs_wall_s"] >= 0
    assert [r["property"] for r in d["rows"]] == ["(Next)", "OFF-3"]
    assert all(r["ok"] and r["protocol"] == "offsets" for r in d["rows"])
    assert d["contracts"] and {"contract", "condition", "status", "module"} <= set(d["contracts"][0])
    assert not any(c["status"] == "counterexample" for c in d["contracts"])
    assert "2/2 rows" in err  # row by row, on stderr


def test_explore_json():
    d, _ = rmqspec_json("explore", "--protocol", "election", "--nodes", "3", "--depth", "4")
    assert d["distinct_states"] > 1 and isinstance(d["unexpected"], list) and not d["unexpected"]


def test_check_json():
    d, err = rmqspec_json("check", "--parts", "suites,explore")
    assert d["ok"] is True and [p["name"] for p in d["parts"]] == ["suites", "explore"]
    assert all(p["ok"] and p["seconds"] > 0 and p["detail"] for p in d["parts"])
    assert "2/2 parts" in err


def test_bench_json():
    d, err = rmqspec_json("bench", "--protocol", "election", "--seconds", "0.1")
    assert [(r["nodes"], r["checked"], r["engine"]) for r in d] == [
        (3, True, "reference"), (3, False, "reference"), (3, True, "fast"),
        (5, True, "reference"), (5, False, "reference"), (5, True, "fast")]
    assert all(r["protocol"] == "election" and r["events_per_s"] > 0 and r["events_per_cpu_s"] > 0 and r["events"] > 0
               for r in d)
    assert "6/6 rows" in err


def test_bench_explore_json():
    d, err = rmqspec_json("bench", "--explore", "--depth", "5")
    assert [r["engine"] for r in d] == ["reference", "fast"]
    assert d[0]["distinct_states"] == d[1]["distinct_states"] > 1 and d[1]["ratio"] > 0
    assert all(r["states_per_s"] > 0 and r["states_per_cpu_s"] > 0 for r in d)
    assert "bench --explore: fast, depth 5" in err


def test_view_json(trace, work):
    d, _ = rmqspec_json("view", str(trace[0]), "--out", str(work / "t.html"))
    assert d["ok"] is True and d["kind"] == "trace" and d["steps"] == 301 and d["replay"] == "match"
    assert (work / "t.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_vectors_and_conform_json(work):
    vec = work / "vectors.json"
    d, _ = rmqspec_json("vectors", "--out", str(vec), "--count", "10")
    assert d["ok"] is True and d["out"] == str(vec) and d["generated"] == 10
    assert d["vectors"] == d["edge"] + d["generated"] == len(json.loads(vec.read_text())["vectors"])
    driver = f"{sys.executable} -m property_tests.drivers.election_reference"
    d, _ = rmqspec_json("conform", "--driver", driver, "--count", "50")
    assert d["ok"] is True and d["protocol"] == "election" and d["cases"] == 50 and sum(d["kinds"].values()) == 50


def test_check_trace_json_on_an_implementation_log():
    """Tolerant validation of a real DLedger 0.2.6 log: what was inferred and the bounds."""
    log = ROOT / "property_tests" / "impl_logs" / "dledger-0.2.6" / "cold_start_s11.jsonl"
    d, _ = rmqspec_json("check-trace", str(log))
    assert d["ok"] is True and d["explained"] == d["lines"] > 0
    assert d["bounds"]["slack_ms"] == 50 and d["search"]["states_expanded"] > 0


def test_mutants_json():
    d, _ = rmqspec_json("mutants", "--mutant", "election.vote_ignores_curr_vote_for", "--layers", "fuzz",
                        "--histories", "3")
    assert d["scores"]["fuzz"]["killed"] == 1 and d["verdicts"][0]["verdict"] == "killed"
