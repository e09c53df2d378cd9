"""Tolerant trace validation (histories/tolerant): implementation logs written at natural log
points are explained by the reference, and logs that break the protocol are rejected at the
line that breaks it (docs/conformance.md).

The real logs were written by the unmodified DLedger 0.2.6 election classes (three electors
in one JVM, in-process RPC with 1-5 ms delays; property_tests/impl_logs/README.md). The
reference-made logs come from seeded reference histories, given an implementation's clock,
late threads and lines out of the reference's order (histories/reference_logs).
"""

from __future__ import annotations

import json

import pytest

from histories import reference_logs as il
from histories import tolerant
from histories.tolerant import checker, scheduler
from property_tests.support import impl_logs as mutate
from reference_impl import core
from rmqspec import cli
from spark_harness.plan import make_plan

REAL = sorted(p.stem for p in il.REAL_LOGS.glob("*.jsonl"))


def check(lines: list[dict], **options) -> tolerant.Result:
    return tolerant.check(il.parse(lines), tolerant.Options(**options))


# --- logs that happened are explained ---


@pytest.mark.parametrize("name", REAL)
def test_real_dledger_0_2_6_election_logs_are_explained(name):
    r = check(il.read_real(name))
    assert r.accepted, r.reason
    assert r.stats.reference_events > 0 and r.explained == r.lines


def test_the_real_logs_hold_leader_crashes_restarts_partitions_and_a_term_0_race():
    seen = {at for name in REAL for d in il.read_real(name)[1:] for at in [d["at"]]}
    assert {"crash", "restart", "partition", "heal", "MemberState#changeToLeader"} <= seen
    race = il.read_real("cold_start_s11")  # a node took a peer's request before its own self-vote
    assert any(d["at"] == "MemberState#changeToLeader" and d["term"] == 0 for d in race[1:])
    crashed = il.read_real("leader_crash_s3")
    leader = next(d["node"] for d in crashed if d.get("at") == "MemberState#changeToLeader")
    assert any(d["at"] == "crash" and d["node"] == leader for d in crashed[1:])
    assert any(d["at"] == "restart" and d["node"] == leader for d in crashed[1:])


def test_a_real_log_needs_reorderings_and_hidden_events_to_be_explained():
    """Java's handler and callback threads interleave with the maintainer's round, and a round's
    parse writes nothing: the explanation must have taken lines out of the reference's order and
    inserted events the log does not show."""
    r = check(il.read_real("cold_start_s11"))
    assert r.accepted and r.stats.reordered_lines > 0 and r.stats.hidden_events > 0


@pytest.mark.parametrize("profile,seed", [("none", 1), ("crash", 2), ("crash", 3), ("partition", 4),
                                          ("partition", 5)])
def test_reference_logs_made_realistic_are_explained(profile, seed):
    lines = il.realistic(il.reference_log("election", profile, seed, 700, late_ms=30), seed)
    assert lines[1]["t_ms"] > 10**12  # the implementation's own clock
    r = check(lines)
    assert r.accepted, r.reason


def test_a_reference_log_without_its_draws_is_explained():
    lines = il.realistic(il.reference_log("election", "crash", 6, 400, late_ms=30), 6, draws=False)
    assert not any(d["at"] == "java.util.Random#nextInt" for d in lines[1:])
    r = check(lines)
    assert r.accepted, r.reason
    assert r.stats.draws_inferred > 0


def test_a_reference_log_without_times_or_snapshots_is_explained():
    lines = il.realistic(il.reference_log("election", "none", 7, 200), 7, jitter_ms=0, times=False, snapshots=False)
    assert not any("t_ms" in d for d in lines[1:])
    r = check(lines)
    assert r.accepted, r.reason


# --- logs that break the protocol are rejected where they break it ---

MUTATIONS = [mutate.second_vote, mutate.term_goes_down, mutate.wrong_code, mutate.field_off_by_one,
             mutate.leader_without_quorum]


def at_line(r: tolerant.Result, lines: list[dict], line: int) -> bool:
    """Rejected at the mutated line, or at a line of the same node's same step just before it:
    the checker takes a step's lines together, and a log may write them in any order."""
    if r.accepted or r.failing is None:
        return False
    if r.failing.line == line:
        return True
    bad = lines[line - 1] if line - 1 < len(lines) else {}
    return (line - 8 <= r.failing.line < line and r.failing.raw.get("node") == bad.get("node")
            and abs(r.failing.raw.get("t_ms", 0) - bad.get("t_ms", 0)) <= 5)


@pytest.mark.parametrize("mutate", MUTATIONS, ids=lambda m: m.__name__)
def test_a_protocol_violation_in_a_reference_log_is_rejected_at_its_line(mutate):
    # seed 1: a history whose leader crashes, so a term moves (every mutation finds its line)
    lines = il.realistic(il.reference_log("election", "crash", 1, 700), 1)
    assert check(lines).accepted  # the log as it was
    bad, line = mutate(lines)
    r = check(bad)
    assert at_line(r, bad, line), (r.failing and r.failing.line, line, r.reason)


@pytest.mark.parametrize("mutate", MUTATIONS, ids=lambda m: m.__name__)
def test_a_protocol_violation_in_a_real_log_is_rejected_at_its_line(mutate):
    bad, line = mutate(il.read_real("leader_crash_s3"))
    r = check(bad)
    assert at_line(r, bad, line), (r.failing and r.failing.line, line, r.reason)


def test_a_rejection_shows_the_closest_executions_and_what_they_would_have_needed():
    bad, line = mutate.wrong_code(il.read_real("leader_crash_s3"))
    r = check(bad)
    text = r.text(il.parse(bad))
    assert at_line(r, bad, line) and f"REJECTED at line {r.failing.line}" in text and "closest execution 1" in text
    near = [n for c in r.candidates for n in c["needed"]]
    assert any("code: log 403, reference 200" in n for n in near), near


def test_a_hit_search_bound_is_reported():
    r = check(il.read_real("leader_crash_s3"), max_states=1, beam=1)
    assert not r.accepted
    assert "bound" in r.reason and "a larger --max-states might explain it" in r.reason


class _Execution:
    """What the beam looks at besides the score order (the list's): what the down nodes kept,
    and the phases of the loops the log does not show."""

    def __init__(self, down: tuple, phases: tuple = ()) -> None:
        self.down = down
        self.phases = phases

    def down_state(self) -> tuple:
        return self.down

    def loop_phases(self, phase) -> tuple:
        return self.phases if phase is not None else ()


def test_the_beam_keeps_the_best_executions_of_each_state_a_down_node_may_be_in():
    """A down node writes nothing, so the log cannot rank executions that differ in what it
    kept (a slave's flush just before its OS crash, or not); each such state keeps the beam's
    best executions until the restart shows which it was (the real ha log async_slave_os_crash,
    test_ha_impl_logs.py, was rejected 180 lines after the crash when the flushed one was cut).
    With no node down, the beam is the plain one."""
    unflushed = [_Execution(("kept 5800 bytes",)) for _ in range(7)]
    flushed = [_Execution(("kept 6000 bytes",)) for _ in range(5)]
    ranked = unflushed[:5] + flushed + unflushed[5:]
    assert checker.kept(ranked, 4) == unflushed[:4] + flushed[:4]
    alive = [_Execution(()) for _ in range(9)]
    assert checker.kept(alive, 4) == alive[:4]
    many = [_Execution((k,)) for k in range(100)]
    assert len(checker.kept(many, 4)) == checker.MAX_BEAM


def test_the_beam_keeps_the_best_executions_of_each_phase_of_a_loop_the_log_does_not_show():
    """A new leader's DLedgerRoleChangeHandler checks every 100 ms and writes nothing until it
    makes the broker master: executions whose checks fall at ...77 and at ...78 differ only there
    until then, and the one with more drift (its election a ms before its line) is the one whose
    check comes before a commit of the same ms (the realistic crash log of seed 5,
    test_dledger_commitlog_impl_logs.py, was rejected 60 lines on when it was cut). Without a
    protocol's loop_phase, the beam is the plain one."""
    on_time = [_Execution((), (78,)) for _ in range(6)]
    early = [_Execution((), (77,)) for _ in range(2)]
    ranked = on_time + early
    assert checker.kept(ranked, 4, phase=lambda c, n, now: None) == on_time[:4] + early
    assert checker.kept(ranked, 4) == on_time[:4]


def test_a_log_cut_short_of_a_line_the_reference_owes_is_rejected_at_its_end():
    """A leader's heartbeat that the reference must send is missing at the end of the log."""
    lines = il.read_real("isolated_leader_s6")
    k = max(i for i, d in enumerate(lines) if d.get("at") == "DLedgerRpcService#heartBeat" and "request" in d)
    cut = lines[:k] + [d for d in lines[k + 1:] if d["t_ms"] < lines[k]["t_ms"] + 5]
    r = check(cut + [dict(lines[-1], t_ms=lines[k]["t_ms"] + 900)])
    assert not r.accepted


# --- dledger_log ---


@pytest.mark.parametrize("profile,seed", [("lockstep", 1), ("crash", 2)])
def test_dledger_log_reference_logs_made_realistic_are_explained(profile, seed):
    lines = il.realistic(il.reference_log("dledger_log", profile, seed, 500, late_ms=5), seed)
    assert any(d["at"] == "DLedgerStore#appendAsFollower" for d in lines[1:])
    r = check(lines)
    assert r.accepted, r.reason


def test_dledger_log_entry_written_at_the_wrong_index_is_rejected_at_its_line():
    lines = il.realistic(il.reference_log("dledger_log", "lockstep", 1, 500), 1)
    bad, line = mutate.entry_off_by_one(lines)
    r = check(bad)
    assert at_line(r, bad, line), (r.failing and r.failing.line, line, r.reason)


def test_a_log_with_one_way_cut_links_is_explained():
    """`cut` facts (one link, one direction) beside `partition`: the messages behind the cut are
    lost, the other links carry on."""
    lines = il.realistic(il.reference_log("election", "cut", 2, 500, late_ms=30), 2)
    assert any(d["at"] == "cut" for d in lines[1:])
    r = check(lines)
    assert r.accepted, r.reason


def test_a_cut_both_ways_is_two_cut_links():
    lines = il.read_real("leader_crash_s3")
    fact = {"t_ms": lines[1]["t_ms"], "node": None, "at": "cut", "src": "n0", "dst": "n2", "both": True}
    log = il.parse(lines[:1] + [fact] + lines[1:])
    checker = tolerant.Checker(log)
    w = checker.goal(tolerant.State(core.init(checker.cfg), (), (0, 0, 0)), log.lines[0]).w
    assert w.net.cut == {(0, 2), (2, 0)}


def test_a_log_whose_clients_are_outside_the_world_is_explained():
    """Header "clients": "outside": the clients write nothing, the servers' handleAppend requests
    are facts, and everything after them is the reference's."""
    lines = il.realistic(il.reference_log("dledger_log", "lockstep", 1, 300, late_ms=5), 1)
    events = [d for d in lines[1:] if d["at"] != "DLedgerClient#append"]
    r = check([dict(lines[0], clients="outside")] + events)
    assert r.accepted, r.reason


# --- the command line ---


def _write(tmp_path, lines: list[dict]) -> str:
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in lines))
    return str(path)


def test_check_trace_accepts_a_real_log_with_exit_0(capsys):
    assert cli.main(["check-trace", str(il.REAL_LOGS / "leader_crash_s3.jsonl"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] and out["inferred"]["reference_events"] > 0 and out["bounds"]["slack_ms"] == 50


def test_check_trace_rejects_a_violation_with_exit_1_and_names_the_line(tmp_path, capsys):
    bad, line = mutate.second_vote(il.read_real("leader_crash_s3"))
    assert cli.main(["check-trace", _write(tmp_path, bad)]) == 1
    assert f"REJECTED at line {line}" in capsys.readouterr().out


@pytest.mark.parametrize("edit,message", [
    (lambda ls: ls[:1] + [dict(ls[2], at="DLedgerLeaderElector#handleVotes")], "unknown log point"),
    (lambda ls: ls[:1] + [ls[3], dict(ls[2], t_ms=ls[3]["t_ms"] - 1)], "goes back"),
    (lambda ls: [dict(ls[0], nodes=["n0", "n0"])] + ls[1:], "distinct node ids"),
    (lambda ls: [dict(ls[0], config={"dledger": {"heart_beat_interval": 3}})] + ls[1:], "bad config"),
    (lambda ls: ls[:1] + [dict(ls[5], node="n9")], "line 2: node must be one of"),
])
def test_check_trace_refuses_a_malformed_log_with_exit_2(tmp_path, capsys, edit, message):
    lines = edit(il.read_real("leader_crash_s3"))
    assert cli.main(["check-trace", _write(tmp_path, lines)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_check_trace_tolerant_refuses_a_reference_trace(tmp_path, capsys):
    path = tmp_path / "t.jsonl"
    assert cli.main(["simulate", "--steps", "20", "--quiet", "--trace", str(path)]) == 0
    assert cli.main(["check-trace", "--tolerant", str(path)]) == 2
    assert "reference trace" in capsys.readouterr().err
    assert cli.main(["check-trace", str(path)]) == 0  # strict mode as before


def test_the_protocol_under_an_implementations_scheduler_is_not_one_of_the_listed_protocols():
    """It is registered for the check that made it; `fuzz --protocol all` run later in the same
    process (a test worker) must not fuzz it (its properties are the base protocol's, under
    another name)."""
    derived = scheduler.tolerant_protocol("election", 5)
    assert core.protocol(derived).name == derived
    assert derived not in core.protocol_names()
    assert derived not in make_plan("all", 1).protocols
