"""Traces (docs/trace-format.md): what the writer produces, how the reader refuses bad input
(TraceError, exit 2) and how replay reports a trace that disagrees with the reference (mismatch, exit 1)."""

from __future__ import annotations

import functools
import io
import json
import pathlib

import pytest

from histories import runner
from histories import trace as trace_mod
from reference_impl import core
from reference_impl.core import codec, faults
from reference_impl.election import world as election_world
from rmqspec import cli


@functools.cache
def trace_text(profile="standard", seed=3, steps=200):
    cfg = election_world.make_config(3).evolve(profile=faults.profile(profile))
    out = io.StringIO()
    runner.simulate(cfg, seed, steps, trace_out=out)
    return out.getvalue()


def lines(**kw):
    return [json.loads(x) for x in trace_text(**kw).splitlines()]


def dump(objs):
    return "".join(json.dumps(o) + "\n" for o in objs)


def replay(text):
    return runner.replay(io.StringIO(text))


def header_with(**changes):
    objs = lines()
    objs[0] = objs[0] | changes
    return dump(objs)


def config_with(**changes):
    objs = lines()
    objs[0]["config"] = objs[0]["config"] | changes
    return dump(objs)


# --- the writer ---


def test_trace_has_header_initial_state_steps_and_result():
    """Header (schema, protocol, config, nodes, seed), the i=0 state, one line per step, a result line."""
    objs = lines()
    head, first, steps, last = objs[0], objs[1], objs[2:-1], objs[-1]
    assert head["schema"] == "rmqspec.trace/1" and head["protocol"] == "election"
    assert head["reference"] == trace_mod.reference_digest()
    assert head["nodes"] == ["n0", "n1", "n2"] and head["seed"] == 3 and head["config"]["ids"] == head["nodes"]
    assert first["i"] == 0 and first["event"] is None and set(first["state"]) == {"n0", "n1", "n2"}
    assert [s["i"] for s in steps] == list(range(1, 201))
    assert all({"t_ms", "event", "state", "obs"} <= set(s) for s in steps)
    assert [s["t_ms"] for s in steps] == sorted(s["t_ms"] for s in steps)
    assert last["result"]["steps"] == 200 and last["result"]["ok"] is True


def test_state_reports_every_observable_field():
    """Each node's state has the election fields of design section 5."""
    state = lines()[-2]["state"]["n0"]
    assert set(state) >= {"alive", "role", "term", "voted_for", "leader", "ledger_end_index", "ledger_end_term",
                          "committed_index", "log_terms"}


def test_untouched_trace_replays_to_the_same_result():
    """Replay of a written trace: no mismatch, every step taken, the recorded result line read back."""
    rep = replay(trace_text())
    assert rep.ok() and rep.mismatch is None and rep.run.steps == 200
    assert rep.recorded["steps"] == 200 and rep.header["seed"] == 3


def test_trace_without_ids_times_obs_and_result_still_checks():
    """An implementation may leave out envelope ids, t_ms, obs and the result line."""
    objs = lines()[:-1]
    for o in objs[1:]:
        o.pop("t_ms"), o.pop("obs")
        if o["event"] and "id" in o["event"]:
            del o["event"]["id"]
    rep = replay(dump(objs))
    assert rep.ok() and rep.run.steps == 200 and rep.recorded is None


# --- the reader: bad input is a TraceError naming the line ---


def test_overlong_line_is_refused():
    """A line longer than 4 MiB is refused without reading it whole."""
    text = trace_text().splitlines(keepends=True)
    text[2] = '{"pad": "' + "x" * trace_mod.MAX_LINE_BYTES + '"}\n'
    with pytest.raises(trace_mod.TraceError, match="line 3: longer than"):
        replay("".join(text))


@pytest.mark.parametrize("bad, message", [
    ("{not json", "line 3: not JSON"),
    ("[1, 2]", "line 3: not a JSON object"),
    ('"text"', "line 3: not a JSON object"),
])
def test_non_object_line_is_refused(bad, message):
    """A line that is not a JSON object stops the reader, naming it."""
    text = trace_text().splitlines(keepends=True)
    text[2] = bad + "\n"
    with pytest.raises(trace_mod.TraceError, match=message):
        replay("".join(text))


def test_blank_lines_are_skipped_but_counted():
    """Empty lines are ignored; line numbers in errors stay those of the file."""
    text = trace_text().splitlines(keepends=True)
    text[2:2] = ["\n", "   \n"]
    text[5] = "oops\n"
    with pytest.raises(trace_mod.TraceError, match="line 6: not JSON"):
        replay("".join(text))


@pytest.mark.parametrize("text, message", [
    ("", "empty trace"),
    ("\n\n", "empty trace"),
    (dump(lines()[1:]), "line 1: schema is None"),
    (header_with(schema="histories.trace/2"), "expected 'rmqspec.trace/1'"),
    (header_with(config=None), "line 1: config must be an object, got None"),
], ids=["empty", "blank", "missing-header", "wrong-schema", "no-config"])
def test_bad_header_is_refused(text, message):
    """No header, a different schema or no config: TraceError."""
    with pytest.raises(trace_mod.TraceError, match=message):
        replay(text)


@pytest.mark.parametrize("changes, message", [
    ({"protocol": "paxos"}, "config.protocol names no protocol of ours: 'paxos'"),
    ({"ids": [f"n{i}" for i in range(65)]}, r"config.ids must list 1..64 distinct node ids"),
    ({"ids": []}, r"config.ids must list 1..64 distinct node ids"),
    ({"ids": [1, 2, 3]}, r"config.ids\[0\] must be a string, got 1"),
    ({"profile": {"name": "x", "bogus": 1}}, "config.profile has unknown key.s.: bogus"),
    ({"proto": {"dledger": {"peers": ["n0"], "nonsense": 3}}}, "config.proto.dledger has unknown key.s.: nonsense"),
    ({"down": ["n7"]}, "config.down must list distinct node ids"),
    ({"script": [{"at_ms": 5, "do": "explode"}]}, r"config.script\[0\].do is an unknown action 'explode'"),
], ids=["unknown-protocol", "65-nodes", "no-nodes", "non-string-ids", "profile-field", "dledger-field",
        "unknown-down-node", "bad-script"])
def test_config_the_reference_rejects_is_refused(changes, message):
    """A config that does not describe a world of ours is bad input."""
    with pytest.raises(trace_mod.TraceError, match=message):
        replay(config_with(**changes))


def test_step_without_an_event_object_is_refused():
    """A step line whose 'event' is missing or not an object is malformed."""
    objs = lines()
    objs[5]["event"] = "tick"
    with pytest.raises(trace_mod.TraceError, match="line 6: event must be an object with a 'kind', got 'tick'"):
        replay(dump(objs))


# --- replay: a trace that disagrees with the reference is a mismatch naming step and line ---


def with_step(k, change):
    """The trace with step line i == k changed by `change(obj)`."""
    objs = lines()
    change(objs[k + 1])
    return dump(objs)


def test_event_naming_an_unknown_node_is_a_mismatch():
    """An event that names a node outside the header's nodes cannot happen: mismatch at that step."""
    rep = replay(with_step(1, lambda o: o.__setitem__("event", {"kind": "tick", "node": "n9", "draw": 0})))
    assert (rep.mismatch.step, rep.mismatch.line) == (1, 3)
    assert "cannot happen" in rep.mismatch.message and "'node'" in rep.mismatch.message and not rep.ok()


def test_event_that_is_not_enabled_is_a_mismatch():
    """A delivery of a message nobody sent, or a crash the profile does not allow here, is not enabled."""
    ghost_msg = {"kind": "deliver", "src": "n0", "dst": "n1",
                 "msg": {"type": "VoteRequest", "group": "default", "remote_id": "n1", "leader_id": "n0",
                         "term": 42, "ledger_end_index": -1, "ledger_end_term": -1}}
    rep = replay(with_step(1, lambda o: o.__setitem__("event", ghost_msg)))
    assert rep.mismatch.step == 1 and "cannot happen" in rep.mismatch.message
    clean = election_world.make_config(3).evolve(profile=faults.profile("none"))
    out = io.StringIO()
    runner.simulate(clean, 1, 20, trace_out=out)
    objs = [json.loads(x) for x in out.getvalue().splitlines()]
    objs[3]["event"] = {"kind": "crash", "node": "n0", "os": False}
    rep = replay(dump(objs))
    assert rep.mismatch.step == 2 and "is not enabled" in rep.mismatch.message


def test_tick_of_a_node_that_is_not_due_is_a_mismatch():
    """A tick for a node with nothing due at the horizon is not enabled."""
    objs = lines()
    w = core.init(trace_mod.read_header(iter([(1, objs[0])]))[1])
    for o in objs[2:-1]:
        if core.Tick(node=0) not in core.enabled(w):
            break
        w, _ = core.step(w, codec.decode_event(w, o["event"]))
    o["event"] = {"kind": "tick", "node": "n0", "draw": 0}
    rep = replay(dump(objs))
    assert rep.mismatch.step == o["i"] and "is not enabled" in rep.mismatch.message


def test_draw_outside_its_range_is_bad_input():
    """A tick's draw must be in [0, 65536): outside it, the step line does not fit the format."""
    objs = lines()
    k, tick = next((k, o) for k, o in enumerate(objs[2:-1], 3) if o["event"]["kind"] == "tick")
    tick["event"]["draw"] = 1 << 16
    with pytest.raises(trace_mod.TraceError, match=f"line {k}: event.draw must be an integer in 0..65535, got 65536"):
        replay(dump(objs))


def test_wrong_time_is_a_mismatch():
    """A step whose t_ms differs from the time the reference gives the event."""
    rep = replay(with_step(7, lambda o: o.__setitem__("t_ms", o["t_ms"] + 1)))
    assert rep.mismatch.step == 7 and "the trace says t=" in rep.mismatch.message


def test_changed_initial_state_is_a_mismatch_at_step_zero():
    """The i = 0 state must be a freshly booted world."""
    objs = lines()
    objs[1]["state"]["n2"]["term"] = 3
    rep = replay(dump(objs))
    assert (rep.mismatch.step, rep.mismatch.line) == (0, 2) and "n2.term" in rep.mismatch.message


@pytest.mark.parametrize("change, message", [
    (lambda st: st.__setitem__("n7", {"role": "LEADER"}), "unknown node 'n7'"),
    (lambda st: st["n1"].__setitem__("mood", "happy"), "n1: unknown field 'mood'"),
    (lambda st: st["n1"].__setitem__("voted_for", "n2" if st["n1"]["voted_for"] != "n2" else "n0"),
     "n1.voted_for is"),
])
def test_state_that_differs_from_the_reference_is_a_mismatch(change, message):
    """Unknown nodes, unknown fields and different values in 'state' stop the check at that step."""
    rep = replay(with_step(9, lambda o: change(o["state"])))
    assert rep.mismatch.step == 9 and message in rep.mismatch.message and not rep.ok()


def test_state_may_leave_out_fields_and_nodes():
    """check-trace compares only what a line gives."""
    objs = lines()
    for o in objs[1:-1]:
        o["state"] = {"n1": {"role": o["state"]["n1"]["role"]}}
    assert replay(dump(objs)).ok()


def test_trace_cut_short_replays_the_steps_it_has():
    """A trace that ends early (no result line) replays its prefix."""
    rep = replay(dump(lines()[:52]))
    assert rep.ok() and rep.run.steps == 50


# --- known hardening gaps: a malformed trace must exit 2 with one line, never a traceback ---


def set_in(path, value):
    def change(objs):
        d = objs[0]["config"]
        for key in path[:-1]:
            d = d[key]
        d[path[-1]] = value
    return change


@pytest.mark.parametrize("change", [
    set_in(["proto", "dledger", "heart_beat_time_interval_ms"], "2000"),
    set_in(["proto", "dledger", "max_heart_beat_leak"], None),
    set_in(["profile", "delay_ms"], [5]),
    set_in(["profile", "delay_ms"], "ab"),
    set_in(["proto", "dledger", "peers"], ["a", "b", "c"]),
    set_in(["ids"], ["n0", "n0", "n2"]),
    lambda objs: objs[4].__setitem__("i", "four"),
], ids=["interval-str", "leak-null", "delay-short", "delay-str", "peers-not-ids", "duplicate-ids", "step-i-str"])
def test_malformed_trace_values_are_bad_input(capsys, tmp_path, change):
    """check-trace on a trace whose config or step numbers have the wrong type: exit 2, one stderr line."""

    objs = lines()
    change(objs)
    path = tmp_path / "t.jsonl"
    path.write_text(dump(objs))
    try:
        code = cli.main(["check-trace", str(path)])
    except Exception as e:  # what escapes main today
        raise AssertionError(f"traceback: {e!r}") from None
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1


# --- traces that earlier releases wrote (property_tests/snapshots/old-traces/README.md) ---

OLD = pathlib.Path(__file__).parent / "snapshots" / "old-traces"


@pytest.mark.parametrize("name", ["model1-election-standard-s5.jsonl", "model1-dledger_log-standard-s5.jsonl"])
def test_a_trace_of_todays_model_still_replays(name):
    """Traces written for the model this reference runs replay step for step: a change that
    alters their histories must add its line to trace.MODEL_CHANGES (and new traces here)."""
    with open(OLD / name, "rb") as f:
        result = runner.replay(f)
    assert result.mismatch is None and result.run.steps == 150
    assert result.header["model"] == trace_mod.model_of(result.header["protocol"]) == 1


@pytest.mark.parametrize("name", ["681aab3-election-none-s5.jsonl", "0f76d01-election-standard-s5.jsonl"])
def test_a_trace_of_an_earlier_model_is_read_and_its_divergence_names_the_change(name):
    """Both schema names earlier releases wrote (rmqspec.trace/1, histories.trace/1) are read;
    their election histories predate issue 22's two-step candidate loop, and say so."""
    with open(OLD / name, "rb") as f:
        result = runner.replay(f)
    assert result.mismatch is not None and result.mismatch.step == 1
    note = trace_mod.written_elsewhere(result.header)
    assert "for model 0 of election" in note and trace_mod.MODEL_CHANGES["election"][0] in note


def test_an_earlier_trace_that_diverges_says_the_model_changed(capsys):
    code = cli.main(["replay", str(OLD / "681aab3-election-standard-s3.jsonl"), "--quiet"])
    out = capsys.readouterr().out
    assert code == 1 and "MISMATCH at step 1" in out
    assert "written by an earlier release (rmqspec.trace/1)" in out and trace_mod.reference_digest() in out
    assert "runs model 1, which changed since: issue 22" in out
    code = cli.main(["replay", str(OLD / "681aab3-election-standard-s3.jsonl"), "--quiet", "--json"])
    note = json.loads(capsys.readouterr().out)["mismatch"]["note"]
    assert code == 1 and "earlier release" in note
