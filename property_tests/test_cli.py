"""The `rmqspec` command line: exit codes (0 ok, 1 violation or mismatch, 2 bad input with one stderr
line and no traceback) and --json output, for simulate, replay, check-trace and bench."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from histories.mutants.election import vote_ignoring_curr_vote_for
from reference_impl.election import leader_elector as elector
from rmqspec import cli


def run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_bad_input(capsys, *argv):
    code, out, err = run(capsys, *argv)
    assert code == 2, (code, out, err)
    assert len(err.splitlines()) == 1 and err.startswith("rmqspec: error: "), err
    assert "Traceback" not in err + out
    return err


@pytest.fixture
def trace_file(tmp_path, capsys):
    path = tmp_path / "t.jsonl"
    code, _, _ = run(capsys, "simulate", "--seed", "2", "--steps", "150", "--faults", "standard", "--trace",
                     str(path), "--quiet")
    assert code == 0
    return path


# --- simulate ---


def test_simulate_prints_a_timeline_and_exits_0(capsys):
    """A default election run: a timeline with a leader, a summary, exit 0."""
    code, out, err = run(capsys, "simulate", "--steps", "300")
    assert code == 0 and err == ""
    assert "LEADER, term" in out and "summary: 300 events" in out and "0 unexpected violation(s)" in out


def test_simulate_json_is_machine_readable(capsys):
    """--json prints only JSON: ok, steps, violations, stats and the run's parameters."""
    code, out, _ = run(capsys, "simulate", "--steps", "200", "--nodes", "5", "--seed", "7", "--json")
    d = json.loads(out)
    assert code == 0 and d["ok"] is True and d["steps"] == 200
    assert (d["protocol"], d["nodes"], d["seed"], d["faults"]) == ("election", ["n0", "n1", "n2", "n3", "n4"],
                                                                   7, "none")
    assert d["violations"] == [] and "max_term" in d["stats"]


def test_simulate_with_an_unexpected_violation_exits_1(capsys, monkeypatch):
    """A broken reference (voters forget their vote) makes simulate report the violation and exit 1."""
    monkeypatch.setattr(elector, "handle_vote", vote_ignoring_curr_vote_for)
    code, out, _ = run(capsys, "simulate", "--steps", "200", "--json")
    d = json.loads(out)
    assert code == 1 and d["ok"] is False
    assert "ELE-2" in {v["property"] for v in d["violations"] if v["expected"] is None}
    code, out, _ = run(capsys, "simulate", "--steps", "200", "--quiet")
    assert code == 1 and "ELE-2 violated" in out and "UNEXPECTED" in out


def test_simulate_expected_violation_exits_0(capsys):
    """OS-crash violations (profile hostile) are listed as expected and do not fail the run."""
    code, out, _ = run(capsys, "simulate", "--faults", "hostile", "--seed", "0", "--steps", "4000", "--json")
    d = json.loads(out)
    assert code == 0 and d["violations"] and all(v["expected"] for v in d["violations"])


@pytest.mark.parametrize("argv", [
    ["simulate", "--protocol", "paxos"],
    ["simulate", "--nodes", "0"],
    ["simulate", "--nodes", "65"],
    ["simulate", "--nodes", "three"],
    ["simulate", "--steps", "-5"],
    ["simulate", "--seed", "abc"],
    ["simulate", "--faults", "apocalypse"],
    ["simulate", "--config", "{not json"],
    ["simulate", "--config", "[1, 2]"],
    ["simulate", "--config", '{"no_such_key": 1}'],
    ["simulate", "--config", '{"peers": ["a"]}'],
    ["simulate", "--config", '{"ledger_end_index": [1, 2]}'],
    ["simulate", "--script", "/nonexistent/scenario.json"],
    ["simulate", "--trace", "/nonexistent/dir/t.jsonl", "--steps", "5"],
    ["simulate", "--bogus-flag"],
    ["explode"],
    ["bench", "--protocol", "paxos"],
    ["bench", "--seconds", "soon"],
    ["replay", "/nonexistent/t.jsonl"],
    ["check-trace", "/nonexistent/t.jsonl"],
    ["check-trace"],
], ids=lambda a: " ".join(a)[:40])
def test_bad_input_exits_2_with_one_line(capsys, argv):
    """Bad arguments: exit 2, one 'rmqspec: error:' line on stderr, no traceback."""
    assert_bad_input(capsys, *argv)


def test_script_with_protocol_is_bad_input(capsys, tmp_path):
    """--script sets protocol, nodes and config itself; giving them too is refused."""
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"protocol": "election", "until_ms": 1000, "steps": []}))
    err = assert_bad_input(capsys, "simulate", "--script", str(path), "--protocol", "election")
    assert "--script" in err


def test_malformed_script_is_bad_input(capsys, tmp_path):
    """A scenario file that is not JSON, or names an unknown action, exits 2 naming the problem."""
    path = tmp_path / "s.json"
    path.write_text("{")
    assert "not JSON" in assert_bad_input(capsys, "simulate", "--script", str(path))
    path.write_text(json.dumps({"protocol": "election", "until_ms": 1000,
                                "steps": [{"at_ms": 5, "do": "explode"}]}))
    assert "unknown action" in assert_bad_input(capsys, "simulate", "--script", str(path))


@pytest.mark.parametrize("config", ['{"max_heart_beat_leak": "3"}', '{"max_heart_beat_leak": null}',
                                    '{"preferred_leader_ids": 7}'])
def test_config_value_of_the_wrong_type_is_bad_input(capsys, config):
    """--config with a value of the wrong type exits 2 with one line, never a traceback."""
    try:
        assert_bad_input(capsys, "simulate", "--steps", "200", "--quiet", "--config", config)
    except TypeError as e:  # what escapes main today
        raise AssertionError(f"traceback: {e!r}") from None


@pytest.mark.parametrize("config", ['{"min_vote_interval_ms": 1000, "max_vote_interval_ms": 300}',
                                    '{"heart_beat_time_interval_ms": -1}'])
def test_impossible_timing_config_is_bad_input(capsys, config):
    """--config with min above max vote interval, or a negative interval, is refused."""
    assert_bad_input(capsys, "simulate", "--steps", "50", "--quiet", "--config", config)


# --- replay and check-trace ---


def test_replay_of_an_untouched_trace_exits_0(capsys, trace_file):
    """replay prints a timeline and 'steps match the reference'."""
    code, out, err = run(capsys, "replay", str(trace_file), "--max-lines", "5")
    assert code == 0 and err == "" and "150 steps match the reference" in out
    code, out, _ = run(capsys, "replay", str(trace_file), "--json")
    d = json.loads(out)
    assert code == 0 and d["ok"] and d["steps"] == 150 and d["unexpected_violations"] == []


def test_check_trace_accepts_an_untouched_trace(capsys, trace_file):
    """check-trace: one-line verdict, exit 0; --json says ok with no mismatch."""
    code, out, _ = run(capsys, "check-trace", str(trace_file))
    assert code == 0 and out.startswith("check-trace: 150 steps match the reference")
    code, out, _ = run(capsys, "check-trace", str(trace_file), "--json")
    d = json.loads(out)
    assert code == 0 and d["ok"] and d["mismatch"] is None and d["steps"] == 150


def test_check_trace_rejects_one_changed_field_naming_step_and_field(capsys, trace_file):
    """One observable field changed (n1.term at step 40): exit 1, MISMATCH at step 40 naming n1.term."""
    objs = [json.loads(x) for x in trace_file.read_text().splitlines()]
    step = next(o for o in objs if o.get("i") == 40)
    step["state"]["n1"]["term"] += 5
    trace_file.write_text("".join(json.dumps(o) + "\n" for o in objs))
    code, out, _ = run(capsys, "check-trace", str(trace_file))
    assert code == 1
    assert out.startswith("check-trace: MISMATCH at step 40 (line 42): n1.term is ")
    code, out, _ = run(capsys, "check-trace", str(trace_file), "--json")
    d = json.loads(out)
    assert code == 1 and d["ok"] is False and d["mismatch"]["step"] == 40 and "n1.term" in d["mismatch"]["message"]
    code, out, _ = run(capsys, "replay", str(trace_file), "--quiet")
    assert code == 1 and "replay: MISMATCH at step 40" in out


@pytest.mark.parametrize("content, message", [
    ("", "empty trace"),
    ('{"schema": "other/1"}\n', "schema"),
    ("not json at all\n", "line 1: not JSON"),
])
def test_malformed_trace_is_bad_input(capsys, tmp_path, content, message):
    """A file that is not a trace of ours: exit 2 with one line naming the problem."""
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    for verb in ("check-trace", "replay"):
        assert message in assert_bad_input(capsys, verb, str(path))


def test_trace_that_is_not_utf8_is_bad_input(capsys, tmp_path):
    """Bytes that are not UTF-8 text: exit 2."""
    path = tmp_path / "bin.jsonl"
    path.write_bytes(b"\xff\xfe\x00garbage\n")
    assert "UTF-8" in assert_bad_input(capsys, "check-trace", str(path))


def test_trace_with_too_many_nodes_is_bad_input(capsys, trace_file):
    """A header listing 65 nodes: exit 2."""
    objs = [json.loads(x) for x in trace_file.read_text().splitlines()]
    objs[0]["config"]["ids"] = [f"n{i}" for i in range(65)]
    trace_file.write_text("".join(json.dumps(o) + "\n" for o in objs))
    assert "64" in assert_bad_input(capsys, "check-trace", str(trace_file))


# --- bench ---


def test_bench_json_reports_throughput(capsys):
    """bench --seconds 0.2 --json: a row per (nodes, checked) with positive throughput, exit 0."""
    code, out, _ = run(capsys, "bench", "--seconds", "0.2", "--json")
    rows = json.loads(out)
    assert code == 0
    assert {(r["protocol"], r["nodes"], r["checked"]) for r in rows} >= {("election", 3, True), ("election", 3, False)}
    assert all(r["events"] > 0 and r["events_per_s"] > 0 and r["histories"] >= 1 for r in rows)


# --- the installed command ---


def test_console_script_exit_codes():
    """The installed `rmqspec` command as a process: 0 for a run, 2 with one stderr line for bad input."""
    script = Path(sys.executable).with_name("rmqspec")
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "rmqspec.cli"]
    ok = subprocess.run(cmd + ["simulate", "--steps", "50", "--quiet"], capture_output=True, text=True, timeout=120)
    bad = subprocess.run(cmd + ["simulate", "--protocol", "paxos"], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and "summary: 50 events" in ok.stdout
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr
