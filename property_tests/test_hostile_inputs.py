"""Hostile inputs, class by class (issue 16): each exits 2 with exactly one stderr line naming
file, line and field, no traceback; an internal error exits 3; what simulate writes,
check-trace accepts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from reference_impl.core import scenario
from rmqspec import cli


def run(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def bad(capsys, *argv) -> str:
    code, out, err = run(capsys, *argv)
    assert code == 2, (code, out[-500:], err)
    assert len(err.splitlines()) == 1 and err.startswith("rmqspec: error: "), err
    assert "Traceback" not in out + err and "\x1b" not in err
    return err


@pytest.fixture
def trace(tmp_path, capsys):
    path = tmp_path / "t.jsonl"
    assert run(capsys, "simulate", "--steps", "60", "--faults", "standard", "--trace", path, "--quiet")[0] == 0
    return path


def lines_of(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


def write(path, objs):
    path.write_text("".join(json.dumps(o) + "\n" for o in objs))


def scenario_file(tmp_path, steps, **top):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"protocol": "election", "until_ms": 3000, "steps": steps} | top))
    return path


# --- traces ---


def test_script_of_the_wrong_type_names_file_line_and_field(capsys, trace):
    """The issue's own example: config.script is an integer."""
    objs = lines_of(trace)
    objs[0]["config"]["script"] = 5
    write(trace, objs)
    err = bad(capsys, "check-trace", trace)
    assert err.strip().endswith(f"{trace} line 1: config.script must be a list of actions, got 5")


@pytest.mark.parametrize("path, value, field", [
    (["proto", "dledger", "max_heart_beat_leak"], {"a": 1}, "config.proto.dledger.max_heart_beat_leak"),
    (["proto", "dledger", "group"], {"a": 1}, "config.proto.dledger.group"),
    (["protocol"], {"a": 1}, "config.protocol"),
    (["profile", "loss"], "0.1", "config.profile.loss"),
    (["ids", 0], ["n0"], "config.ids[0]"),
], ids=["dict-for-int", "dict-for-str", "unhashable-protocol", "str-for-float", "list-for-id"])
def test_config_values_of_the_wrong_type_are_refused_at_the_door(capsys, trace, path, value, field):
    """Malformed config values never reach the reference (no TypeError deep in a run)."""
    objs = lines_of(trace)
    d = objs[0]["config"]
    for k in path[:-1]:
        d = d[k]
    d[path[-1]] = value
    write(trace, objs)
    assert f"line 1: {field} " in bad(capsys, "check-trace", trace)


@pytest.mark.parametrize("protocol, key, value, message", [
    ("offsets", "queues", 2 ** 31, "queues must be an integer in 1..16"),
    ("dledger_commitlog", "queues", 2 ** 31, "queues must be an integer in 1..1024"),
    ("dledger_commitlog", "old_messages", 10_000, "old_messages must be an integer in 0..1000"),
    ("nameserver", "scan_not_active_broker_interval_ms", 0,
     "scan_not_active_broker_interval_ms must be an integer in 1"),
    ("ha", "body_max", 1 << 40, "body_max must be an integer in 1..4194304"),
    ("election", "max_heart_beat_leak", 2 ** 40, "max_heart_beat_leak must be an integer in 1..2147483647"),
])
def test_sizes_and_periods_are_bounded(capsys, protocol, key, value, message):
    """A config that would exhaust memory, start up in quadratic time or loop at one instant is refused."""
    assert message in bad(capsys, "simulate", "--protocol", protocol, "--steps", "10", "--config",
                          json.dumps({key: value}))


def test_huge_queue_count_in_a_trace_header_is_refused(capsys, tmp_path):
    """The issue's 46 KB trace whose header sets queues to 2**31 (24 GB before): exit 2 at once."""
    path = tmp_path / "o.jsonl"
    assert run(capsys, "simulate", "--protocol", "offsets", "--steps", "20", "--trace", path, "--quiet")[0] == 0
    objs = lines_of(path)
    objs[0]["config"]["proto"]["queues"] = 2 ** 31
    write(path, objs)
    assert "config.proto.queues must be an integer in 1..16" in bad(capsys, "check-trace", path)


@pytest.mark.parametrize("text, message", [
    ('{"a": 1, "a": 2}', "has the key 'a' twice"),
    ('{"a": NaN}', "has NaN"),
    ('{"a": Infinity}', "has Infinity"),
    ('{"a": 1e999}', "beyond what a double holds"),
    ('{"a": ' + "9" * 5000 + "}", "an integer of 5000 digits"),
    ('{"a": ' + "[" * 900 + "]" * 900 + "}", "nests deeper than 32 levels"),
    ('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "nests deeper than 32 levels"),
], ids=["duplicate-key", "nan", "infinity", "overflow", "5000-digits", "900-deep", "100000-deep"])
def test_json_the_formats_do_not_allow_is_refused_everywhere(capsys, tmp_path, trace, text, message):
    """Strict JSON in a trace line, a scenario file and --config alike."""
    objs = trace.read_text().splitlines()
    objs.insert(3, text)
    trace.write_text("\n".join(objs) + "\n")
    assert "line 4: JSON" in bad(capsys, "check-trace", trace) and message in bad(capsys, "replay", trace)
    path = tmp_path / "s.json"
    path.write_text(text)
    assert message in bad(capsys, "simulate", "--script", path)
    assert message in bad(capsys, "simulate", "--config", text)


def test_float_times_are_refused(capsys, trace, tmp_path):
    """t_ms 1.5 in a trace, at_ms 1.5 in a script: times are integers of milliseconds."""
    objs = lines_of(trace)
    objs[3]["t_ms"] = objs[3]["t_ms"] + 0.5
    write(trace, objs)
    assert "line 4: t_ms must be null or an integer, got " in bad(capsys, "check-trace", trace)
    path = scenario_file(tmp_path, [{"at_ms": 1.5, "do": "crash", "node": "n0"}])
    assert "steps[0].at_ms must be an integer" in bad(capsys, "simulate", "--script", path)


def test_a_line_after_the_result_is_refused(capsys, trace):
    """check-trace reads to the end of the file: a tampered suffix after the result line fails."""
    text = trace.read_text()
    assert run(capsys, "check-trace", trace)[0] == 0
    trace.write_text(text + '{"i": 61, "t_ms": 0, "event": {"kind": "heal"}}\n')
    assert "a line after the result line" in bad(capsys, "check-trace", trace)
    trace.write_text(text + text.splitlines()[-1] + "\n")  # a second result
    assert "a line after the result line" in bad(capsys, "check-trace", trace)


def test_the_line_limit_counts_bytes(capsys, trace):
    """4 MiB of bytes: 1.5 million three-byte characters (4.5 MB) is over it, though under 4 Mi characters."""
    objs = lines_of(trace)
    objs[3]["x_note"] = "\u20ac" * 1_500_000
    write(trace, objs)
    assert "line 4: longer than 4194304 bytes" in bad(capsys, "check-trace", trace)


def test_control_characters_from_input_are_escaped(capsys, trace, tmp_path):
    """Error messages and the replay timeline never print raw terminal escapes or newlines from input."""
    objs = lines_of(trace)
    objs[0]["config"]["ids"][0] = "\x1b[2J\nforged"
    named = tmp_path / "a\x1b[31m\nb.jsonl"
    write(named, objs)
    err = bad(capsys, "check-trace", named)
    assert "a\\x1b[31m\\x0ab.jsonl line 1: config.ids must list" in err
    path = scenario_file(tmp_path, [{"at_ms": 10, "do": "let", "let": {"T": "\x1b]0;owned\x07"}},
                                    {"at_ms": 20, "expect": {"field": "role", "node": "n0", "eq": "$T"}}])
    code, out, err = run(capsys, "simulate", "--script", path)
    assert code == 1 and "\x1b" not in out and "\\x1b]0;owned\\x07" in out


# --- scenario scripts ---


@pytest.mark.parametrize("step, message", [
    ({"at_ms": 10, "expect": {"field": "term", "node": "n0", "ge": "x"}}, "steps[0].expect.ge must be a number"),
    ({"at_ms": 10, "expect": {"field": "term", "node": "n0", "eq": 1, "nonsense": 2}}, "unknown key(s): nonsense"),
    ({"at_ms": 10, "expect": {"count": "LEADER", "eq": 1}}, "steps[0].expect.count must be an object"),
    ({"at_ms": 10, "expect": 5}, "steps[0].expect must be an object"),
    ({"at_ms": 2 ** 64, "do": "crash", "node": "n0"}, "steps[0].at_ms must be an integer in 0..2147483647"),
    ({"at_ms": 10, "do": "crash", "node": {"a": 1}}, "steps[0].node must be a node id"),
    ({"at_ms": 10, "do": {"a": 1}}, "steps[0].do is an unknown action"),
    ({"at_ms": 10, "do": "let", "let": [1]}, "steps[0].let must map names"),
    ({"at_ms": 10, "note": json.loads("[" * 40 + "]" * 40)}, "JSON nests deeper than 32 levels"),
], ids=["ge-string", "unknown-key", "count-string", "expect-int", "at-2**64", "node-dict", "do-dict", "let-list",
        "note-deep"])
def test_malformed_actions_are_refused_before_the_run(capsys, tmp_path, step, message):
    assert message in bad(capsys, "simulate", "--script", scenario_file(tmp_path, [step]))


def test_until_ms_and_counts_are_bounded(capsys, tmp_path):
    assert "until_ms must be an integer in 1..2147483647" in bad(
        capsys, "simulate", "--script", scenario_file(tmp_path, [], until_ms=2 ** 64))
    assert "nodes must be an integer" in bad(capsys, "simulate", "--script", scenario_file(tmp_path, [], nodes="3"))


@pytest.mark.parametrize("step, message", [
    ({"at_ms": 10, "expect": {"field": "nonsense", "node": "n0", "eq": 1}}, "has no observable field 'nonsense'"),
    ({"at_ms": 10, "do": "let", "let": {"T": "x"}}, None),
], ids=["unknown-field", "let-string"])
def test_expectations_that_cannot_be_evaluated_are_bad_input(capsys, tmp_path, step, message):
    steps = [step] if message else [step, {"at_ms": 20, "expect": {"field": "term", "node": "n0", "eq": "$T+1"}}]
    err = bad(capsys, "simulate", "--script", scenario_file(tmp_path, steps))
    assert (message or "$T is 'x', not a number") in err


def test_an_ordering_with_a_down_node_is_false_not_a_crash(capsys, tmp_path):
    """A down node's role is null: `ge` on it is a failed expectation (exit 1), not a TypeError."""
    path = scenario_file(tmp_path, [{"at_ms": 10, "do": "crash", "node": "n0"},
                                    {"at_ms": 20, "expect": {"field": "leader", "node": "n0", "ge": 1}}])
    code, out, err = run(capsys, "simulate", "--script", path)
    assert code == 1 and err == "" and "n0.leader is None, which is not comparable (ge) with 1" in out


@pytest.mark.parametrize("protocol, config, step, message", [
    ("ha", {}, {"at_ms": 10, "do": "send", "node": "p0", "size": 1 << 40}, "size must be an integer in 1..4194304"),
    ("ha", {}, {"at_ms": 10, "do": "send", "node": "p0", "size": "12"}, "size must be an integer"),
    ("dledger_log", {}, {"at_ms": 10, "do": "append", "node": "n0", "count": 10 ** 9}, "count must be an integer"),
    ("nameserver", {}, {"at_ms": 10, "do": "send", "node": "p0", "draw": 1.5}, "draw must be an integer"),
    ("election", {}, {"at_ms": 10, "do": "set_vote_for", "node": "n0", "leader_id": {"a": 1}},
     "leader_id must be null or a string"),
], ids=["ha-huge-size", "ha-size-string", "append-count", "nameserver-float-draw", "vote-for-dict"])
def test_action_arguments_are_checked(capsys, tmp_path, protocol, config, step, message):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"protocol": protocol, "nodes": 3 if protocol != "offsets" else 2, "until_ms": 2000,
                                "config": config, "steps": [step]}))
    assert message in bad(capsys, "simulate", "--script", path)


# --- flags and files ---


@pytest.mark.parametrize("argv", [
    ["bench", "--seconds", "nan"], ["bench", "--seconds", "inf"], ["bench", "--seconds", "1e308"],
    ["bench", "--explore", "--depth", "1000"], ["explore", "--engine", "fast", "--coverage", "10"],
    ["prove", "--contracts", "nan"], ["prove", "--contracts", "inf"], ["prove", "--jobs", "10000"],
    ["explore", "--coverage", "1000000000"], ["explore", "--depth", "1000"],
    ["simulate", "--steps", "18446744073709551616"], ["simulate", "--nodes", "9" * 5000],
    ["fuzz", "--histories", str(10 ** 12)], ["fuzz", "--master", "bogus://x"], ["fuzz", "--nodes", "3,1000"],
    ["simulate", "--config", '{"max_heart_beat_leak": NaN}'],
], ids=lambda a: " ".join(a)[:40])
def test_numbers_on_flags_are_bounded(capsys, argv):
    bad(capsys, *argv)


def test_caps_are_stated_in_help(capsys):
    for command, flag in (("simulate", "1..10,000,000"), ("fuzz", "1..1,000,000"), ("bench", "0.01..600"),
                          ("prove", "0..600 s"), ("explore", "1..1,000,000")):
        with pytest.raises(SystemExit):
            cli.main([command, "--help"])
        assert flag in capsys.readouterr().out, command


def test_output_errors_exit_2(capsys, tmp_path, trace):
    """A full disk, a directory, a path under a file: one line, exit 2."""
    assert "No space left on device" in bad(capsys, "simulate", "--steps", "300", "--trace", "/dev/full", "--quiet")
    assert "Is a directory" in bad(capsys, "simulate", "--steps", "5", "--trace", tmp_path, "--quiet")
    assert "is a directory" in bad(capsys, "shrink", tmp_path)
    assert "is a directory" in bad(capsys, "check-trace", tmp_path)
    hostile = tmp_path / "h.jsonl"
    assert run(capsys, "simulate", "--faults", "hostile", "--seed", "0", "--steps", "4000", "--trace", hostile,
               "--quiet")[0] == 0
    assert "cannot write /dev/null/x" in bad(capsys, "shrink", hostile, "--out", "/dev/null/x", "--budget", "500")


def test_an_import_that_raises_exits_2(capsys, tmp_path, monkeypatch):
    (tmp_path / "boom.py").write_text("raise RuntimeError('module failed\\nwith two lines')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    err = bad(capsys, "simulate", "--steps", "5", "--import", "boom")
    assert "cannot import boom: RuntimeError: module failed" in err


# --- exit 3: a bug of ours ---


def test_an_internal_error_exits_3_with_one_line(capsys, monkeypatch):
    """A bug (here: a scenario evaluator that raises) is exit 3, one line naming it; never 1."""
    def broken(*args, **kwargs):
        raise ZeroDivisionError("division by zero")
    monkeypatch.setattr(scenario, "observed", broken)
    code, out, err = run(capsys, "simulate", "--steps", "5")
    assert code == 3 and len(err.splitlines()) == 1
    assert err.startswith("rmqspec: internal error: ZeroDivisionError: division by zero at ")
    assert "RMQSPEC_DEBUG=1" in err and "Traceback" not in err
    monkeypatch.setenv("RMQSPEC_DEBUG", "1")
    code, out, err = run(capsys, "simulate", "--steps", "5")
    assert code == 3 and "Traceback" in err and err.splitlines()[-1].startswith("rmqspec: internal error:")


@pytest.mark.skipif(not Path(sys.executable).with_name("rmqspec").exists(), reason="rmqspec is not installed here")
def test_the_installed_command_exits_3_on_a_bug(tmp_path):
    (tmp_path / "bug.py").write_text("from rmqspec import cli\ncli.COMMANDS['simulate'] = lambda args: 1 // 0\n")
    script = Path(sys.executable).with_name("rmqspec")  # the console script: `python -m` would load cli twice
    p = subprocess.run([str(script), "simulate", "--import", "bug"], capture_output=True,
                       text=True, timeout=120, cwd=tmp_path, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin"})
    assert p.returncode == 3 and p.stderr.count("\n") == 1 and "ZeroDivisionError" in p.stderr


# --- what simulate writes, check-trace accepts ---


def test_a_script_of_20000_actions_round_trips(capsys, tmp_path):
    steps = [{"at_ms": 10 + k, "do": "let", "let": {"K": k}, "note": "n"} for k in range(20_000)]
    path = scenario_file(tmp_path, steps, until_ms=30_000)
    out = tmp_path / "t.jsonl"
    assert run(capsys, "simulate", "--script", path, "--trace", out, "--quiet")[0] == 0
    code, stdout, err = run(capsys, "check-trace", out)
    assert code == 0 and err == "" and "steps match the reference" in stdout


def test_non_finite_numbers_are_refused_on_both_sides(capsys, tmp_path, trace):
    """NaN can neither enter a run (config, script) nor a trace check: the two sides agree."""
    bad(capsys, "simulate", "--config", '{"max_heart_beat_leak": NaN}')
    path = tmp_path / "s.json"
    path.write_text('{"protocol": "election", "until_ms": 100, "steps": [{"at_ms": 5, "note": NaN}]}')
    bad(capsys, "simulate", "--script", path)
    objs = trace.read_text().splitlines()
    objs[0] = objs[0].replace('"loss":0.05', '"loss":NaN')
    trace.write_text("\n".join(objs) + "\n")
    assert "has NaN" in bad(capsys, "check-trace", trace)


def test_an_event_kind_that_is_an_object_is_bad_input(capsys, trace):
    """Found by the parser fuzzer: an unhashable `kind` once escaped as a TypeError (exit 3)."""
    objs = lines_of(trace)
    objs[3]["event"]["kind"] = {"a": 1}
    write(trace, objs)
    for verb in ("check-trace", "shrink"):
        assert "line 4: event.kind must be one of tick, deliver" in bad(capsys, verb, trace)


@pytest.mark.parametrize("ref", [{"field": "term", "node": {"a": 1}}, {"field": {"a": 1}, "node": "n0"},
                                 {"max": {"a": 1}}], ids=["node-object", "field-object", "max-object"])
def test_a_reference_naming_an_object_is_bad_input(capsys, tmp_path, ref):
    """Found by the parser fuzzer: a reference whose node or field is an object once escaped as a TypeError."""
    path = scenario_file(tmp_path, [{"at_ms": 10, "do": "let", "let": {"T": ref}}])
    bad(capsys, "simulate", "--script", path)


# --- vectors files (issue 28): read as a stream, strict, and said what is wrong ---


@pytest.fixture(scope="module")
def vectors_text(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("vectors") / "v.json"
    assert cli.main(["vectors", "--out", str(path), "--count", "0", "--json"]) == 0
    doc = json.loads(path.read_text())
    doc["vectors"] = doc["vectors"][:3]
    return json.dumps(doc, indent=1) + "\n"


def _vector_edit(edit):
    def apply(doc):
        edit(doc)
        return doc
    return apply


@pytest.mark.parametrize("change, message", [
    (lambda t: t.replace('"seed": 1,', '"seed": 1, "seed": 2,'), "line 5: JSON has the key 'seed' twice"),
    (lambda t: t.replace('"currTerm": 2,', '"currTerm": 2, "currTerm": 3,', 1), "line 22: vector 1: JSON has the key"),
    (lambda t: t.replace('"now_ms": 100000', '"now_ms": ' + "9" * 5000, 1),
     "vector 1: JSON has an integer of 5000 digits (at most 20)"),
    (lambda t: t.replace('"now_ms": 100000', '"now_ms": ' + "9" * 100_001, 1),
     "vector 1: JSON has an integer of 100001 digits (at most 20)"),
    (lambda t: t.replace('"now_ms": 100000', '"now_ms": ' + "[" * 100_000 + "]" * 100_000, 1),
     "vector 1: JSON nests deeper than 32 levels"),
    (lambda t: t.replace('"now_ms": 100000', '"now_ms": -5', 1),
     "vector 1 (edge-0001): now_ms must be an integer in 0..9223372036854775807"),
    (lambda t: t.replace('"now_ms": 100000', f'"now_ms": {2 ** 63}', 1),
     "vector 1 (edge-0001): now_ms must be an integer in 0..9223372036854775807"),
    (lambda t: t.replace('"currTerm": 2,', f'"currTerm": {2 ** 63},', 1),
     "vector 1 (edge-0001): state.memberState.currTerm must be an integer that a Java long holds"),
    (lambda t: t.replace('"id": "edge-0002"', '"id": "edge-0001"'),
     "vector 2 (edge-0001): the id 'edge-0001' is an earlier vector's too"),
    (lambda t: json.dumps(_vector_edit(lambda d: d["vectors"][0].pop("input"))(json.loads(t))),
     "vector 1 (edge-0001) lacks 'input'"),
    (lambda t: json.dumps(_vector_edit(lambda d: d.update(protocol=5))(json.loads(t))),
     "protocol must be a protocol's name (before 'vectors'), got 5"),
    (lambda t: t + "x", "has text after the JSON object"),
], ids=["duplicate-key", "duplicate-key-in-a-vector", "5000-digits", "100001-digits", "100000-deep", "now-negative",
        "now-2**63", "term-2**63", "duplicate-id", "lacks-input", "protocol-int", "trailing-text"])
def test_a_vectors_file_is_strict_and_says_what_is_wrong(capsys, tmp_path, vectors_text, change, message):
    """Accepted before: duplicate keys and ids, now_ms -5 or 2**63, a term beyond a Java long;
    internal errors: 5,000 digits, deep nesting; messages: `'input'`, an unknown protocol 5."""
    path = tmp_path / "v.json"
    path.write_text(change(vectors_text))
    err = bad(capsys, "vectors", "--check", path)
    assert err.startswith(f"rmqspec: error: {path}") and message in err, err


def test_a_vectors_file_that_is_not_utf8_is_named(capsys, tmp_path, vectors_text):
    path = tmp_path / "latin.json"
    path.write_bytes(vectors_text.replace('"seed": 1', '"seed": "\xe9"').encode("latin-1"))
    assert f"{path}: is not UTF-8 text (byte " in bad(capsys, "vectors", "--check", path)


def _capped(code: str, *args: str, cap_bytes: int = 2 << 30) -> subprocess.CompletedProcess:
    """Python `code` in a child process whose address space is capped (a reader that grows
    without bound fails there with a MemoryError, not on this machine)."""
    limit = f"import resource; resource.setrlimit(resource.RLIMIT_AS, ({cap_bytes}, {cap_bytes}))\n"
    return subprocess.run([sys.executable, "-c", limit + code, *args], capture_output=True, text=True, timeout=600)


def test_vectors_check_of_dev_zero_ends_with_exit_2():
    """/dev/zero was read until memory ran out (5.25 GiB at the cap)."""
    p = _capped("import sys; from rmqspec import cli; sys.exit(cli.main(['vectors', '--check', '/dev/zero']))")
    assert p.returncode == 2 and p.stderr.startswith("rmqspec: error: /dev/zero line 1: is not JSON"), p.stderr


def test_a_large_vectors_file_is_read_in_bounded_memory(tmp_path, vectors_text):
    """300 MB of vectors cost 1.28 GiB read whole (4x the file); streamed, 100 MB of them peak
    below 60 MB, the interpreter included (23 MiB for 300 MB, docs/benchmarks.md)."""
    doc = json.loads(vectors_text)
    one = json.dumps(doc["vectors"][0], indent=1)
    head = json.dumps({k: v for k, v in doc.items() if k != "vectors"}, indent=1)[:-2] + ',\n "vectors": [\n'
    path = tmp_path / "big.json"
    n = 0
    with open(path, "w") as f:
        f.write(head)
        while f.tell() < 100_000_000:
            n += 1
            f.write(("" if n == 1 else ",\n") + one.replace('"edge-0001"', f'"v{n}"'))
        f.write("\n ]\n}\n")
    # The peak of this process's own memory (VmHWM): ru_maxrss would count the test process it was forked from.
    code = ("import sys\nfrom conform.vectors_file import VectorsReader\n"
            "with open(sys.argv[1], 'rb') as f:\n    n = sum(1 for _ in VectorsReader(f, sys.argv[1]))\n"
            "hwm = next(x for x in open('/proc/self/status') if x.startswith('VmHWM:'))\n"
            "print(n, int(hwm.split()[1]) * 1024)\n")
    p = _capped(code, str(path))
    assert p.returncode == 0, p.stderr[-2000:]
    count, peak = map(int, p.stdout.split())
    assert count == n and peak < 60_000_000, (count, n, peak)


# --- scenario scripts, traces and printed paths (issue 28) ---


@pytest.mark.parametrize("step, message", [
    ({"at_ms": 10, "do": "partition", "groups": [["n0", "n1"], ["n1", "n2"]]},
     "steps[0].groups[1][0] names n1 again: it is in group 0 already"),
    ({"at_ms": 10, "do": "partition", "groups": [["n0", "n0"], ["n2"]]},
     "steps[0].groups[0][1] names n0 again"),
    ({"at_ms": 10, "do": "partition", "groups": [[{"a": 1}], ["n2"]]}, "steps[0].groups[0][0] must be one of"),
    ({"at_ms": 10, "expect": {"field": "term", "node": "n0", "eq": 2 ** 63}},
     "steps[0].expect.eq must be an integer that a Java long holds, got 9223372036854775808"),
    ({"at_ms": 10, "do": "let", "let": {"T": -(2 ** 63) - 1}}, "steps[0].let.T must be an integer that a Java long"),
], ids=["node-in-two-groups", "node-twice-in-a-group", "group-of-objects", "term-2**63", "let-below-long"])
def test_a_script_that_names_a_node_twice_or_a_term_beyond_a_long_is_refused(capsys, tmp_path, step, message):
    """Accepted before: a partition that put n1 in two groups ran; a term of 2**63 was a failed expectation."""
    path = scenario_file(tmp_path, [step])
    err = bad(capsys, "simulate", "--script", path)
    assert err.startswith(f"rmqspec: error: {path}: ") and message in err, err


def test_a_trace_partition_with_a_node_in_two_groups_is_refused(capsys, trace):
    objs = lines_of(trace)
    objs.insert(3, {"i": 3, "t_ms": objs[3]["t_ms"], "event": {"kind": "partition", "groups": [["n0", "n1"], ["n1"]]}})
    write(trace, objs)
    assert "line 4: event.groups[1][0] names n1 again" in bad(capsys, "check-trace", trace)


def test_fuzz_out_that_is_a_file_says_so(capsys, tmp_path):
    """`--out /dev/full` said `File exists`."""
    for out in ("/dev/full", tmp_path / "a-file"):
        Path(out).touch()
        err = bad(capsys, "fuzz", "--protocol", "election", "--histories", "2", "--master", "none", "--out", out)
        assert f"cannot write {out}: not a folder" in err, err


def test_paths_are_printed_escaped(capsys, tmp_path):
    """A path with a newline and a terminal escape was printed as it is in simulate's and vectors' summaries."""
    named = tmp_path / "a\x1b[31m\nb"
    code, out, err = run(capsys, "simulate", "--steps", "20", "--trace", f"{named}.jsonl")
    assert code == 0 and "\x1b" not in out and "a\\x1b[31m\\x0ab.jsonl" in out
    code, out, err = run(capsys, "vectors", "--count", "0", "--out", f"{named}.json")
    assert code == 0 and "\x1b" not in out and len(out.splitlines()) == 1 and "a\\x1b[31m\\x0ab.json" in out


def test_an_implementation_log_error_names_the_whole_path(capsys, tmp_path):
    """Errors named an implementation log by its base name, a trace by its whole path."""
    folder = tmp_path / "logs"
    folder.mkdir()
    path = folder / "impl.jsonl"
    path.write_text('{"schema": "rmqspec.log/1", "protocol": "election", "nodes": 5}\n')
    assert bad(capsys, "check-trace", path).startswith(f"rmqspec: error: {path}")
