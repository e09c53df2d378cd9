"""`rmqspec conform` and `rmqspec vectors`: the reference behind the driver protocol agrees
with itself, deliberately broken drivers are caught with a shrunk case, a driver that does
not speak the protocol is one line and exit 2, `--json` reproduces a mismatch, and vectors
round-trip (the reference satisfies its own; a changed answer is found)."""

from __future__ import annotations

import json
import sys

import pytest
from hypothesis import HealthCheck, given, settings

from conform import election, election_cases, session
from conform.session import SUBJECTS
from reference_impl.election.records import ParseResult, VoteResult
from rmqspec import cli

PY = sys.executable
REFERENCE = f"{PY} -m property_tests.drivers.election_reference"


def broken(bug: str) -> str:
    return f"{PY} -m property_tests.drivers.election_broken --bug {bug}"


def run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def conform_json(capsys, driver: str, *more: str) -> tuple[int, dict]:
    code, out, _ = run(capsys, "conform", "--driver", driver, "--json", *more)
    return code, json.loads(out)


# --- the reference behind the protocol ---


def test_the_reference_behind_the_protocol_agrees_with_itself(capsys):
    """Every generated case, of every input kind, comes back from the reference driver as the reference answers it."""
    code, d = conform_json(capsys, REFERENCE, "--count", "400")
    assert code == 0 and d["ok"] and d["mismatch"] is None
    assert d["cases"] == 400 and sum(d["kinds"].values()) == 400
    assert set(d["kinds"]) == set(election.INPUTS), d["kinds"]
    assert d["implementation"].startswith("rmqspec reference")


def test_generated_cases_come_from_hypothesis_runs_of_a_bounded_size(capsys, monkeypatch):
    """A Hypothesis run holds about 10 KB per example until it ends: `--count` past the batch is
    reached by several runs, with the seeds that follow `--seed` (memory stays flat)."""
    seeds = []
    seed = session.hypothesis.seed
    monkeypatch.setattr(session, "GENERATE_BATCH", 40)
    monkeypatch.setattr(session.hypothesis, "seed", lambda s: (seeds.append(s), seed(s))[1])
    code, d = conform_json(capsys, REFERENCE, "--count", "100", "--seed", "7")
    assert code == 0 and d["cases"] == 100 and seeds == [7, 8, 9]


def test_a_driver_gets_only_the_inputs_its_hello_declares(capsys):
    """A driver that declares VoteRequest and tick is sent nothing else, and no state it cannot load."""
    code, d = conform_json(capsys, REFERENCE + " --inputs VoteRequest,tick", "--count", "60")
    assert code == 0 and set(d["kinds"]) == {"VoteRequest", "tick"} and d["inputs"] == ["VoteRequest", "tick"]


# --- broken drivers are caught and shrunk ---


def _single_difference_paths(d: dict) -> set[str]:
    return {x["path"] for x in d["mismatch"]["differences"]}


def test_a_vote_handler_that_ignores_curr_vote_for_is_caught_and_shrunk(capsys):
    """The minimal case: a plain 3-node candidate that voted in its term gets a same-term request from a peer."""
    code, d = conform_json(capsys, broken("ignore-vote-for"), "--count", "500")
    assert code == 1 and not d["ok"] and d["shrink_cases"] > 0
    mm = d["mismatch"]
    case, ms = mm["case"], mm["case"]["state"]["memberState"]
    msg = case["input"]["message"]
    assert msg["type"] == "VoteRequest" and msg["term"] == ms["currTerm"]
    assert ms["currVoteFor"] not in (None, msg["leader_id"])
    assert _single_difference_paths(d) == {"reply.vote_result", "state.memberState.currVoteFor"}
    assert mm["expected"]["reply"]["vote_result"] != "ACCEPT" and mm["got"]["reply"]["vote_result"] == "ACCEPT"
    # shrunk: the plain values wherever the bug does not need another
    assert case["config"]["peers"] == ["n0", "n1", "n2"] and case["now_ms"] == election_cases.BASE_NOW
    assert case["state"]["elector"]["lastLeaderHeartBeatTime"] == -1
    assert set(case["state"]) == {"memberState", "elector"}


def test_a_lower_term_heartbeat_answered_with_the_wrong_code_is_caught(capsys):
    code, d = conform_json(capsys, broken("heartbeat-lower-term-code"), "--count", "1000")
    assert code == 1
    mm = d["mismatch"]
    msg, ms = mm["case"]["input"]["message"], mm["case"]["state"]["memberState"]
    assert msg["type"] == "HeartBeatRequest" and msg["term"] < ms["currTerm"]
    assert mm["differences"] == [{"path": "reply.code", "expected": 403, "got": 416}]


def test_a_draw_with_the_wrong_bound_is_caught_on_a_tick(capsys):
    """getNextTimeToRequestVote without minVoteIntervalMs: the tick's draw has another bound, the due time moves."""
    code, d = conform_json(capsys, broken("vote-interval-ignores-min"), "--count", "500")
    assert code == 1
    mm = d["mismatch"]
    assert mm["case"]["input"]["kind"] == "tick"
    paths = _single_difference_paths(d)
    assert "outputs" in paths and "state.elector.nextTimeToRequestVote" in paths
    out = next(x for x in mm["differences"] if x["path"] == "outputs")
    assert out["expected"] == [{"bound": 700, "out": "draw"}] and out["got"] == [{"bound": 1000, "out": "draw"}]


def test_the_readable_report_names_state_input_and_the_differing_field(capsys):
    code, out, _ = run(capsys, "conform", "--driver", broken("ignore-vote-for"), "--count", "500")
    assert code == 1
    assert "MISMATCH after" in out and "shrunk with" in out
    assert "state:  n0 of ['n0', 'n1', 'n2']" in out and "input:  request" in out
    assert 'reply.vote_result: expected "REJECT_ALREADY_VOTED", got "ACCEPT"' in out


def test_the_json_mismatch_reproduces(capsys):
    """The reported case, given to the reference, answers `expected`; the got answer is the driver's."""
    code, d = conform_json(capsys, broken("ignore-vote-for"), "--count", "500")
    mm = d["mismatch"]
    wire = {k: v for k, v in mm["case"].items() if k != "case"}
    assert code == 1 and election.answer(wire) == mm["expected"]
    assert mm["got"]["case"] == mm["case"]["case"]


# --- drivers that do not speak the protocol ---


@pytest.mark.parametrize("mode, says", [
    ("not-json", "is not JSON: handled it!"),
    ("wrong-shape", "does not have the protocol's shape: state.memberState lacks 'currTerm'"),
    ("crash", "exited (code 3) without answering case 1; its stderr ends: Exception in thread main"),
    ("hang", "no answer to case 1 within 1 s"),
    ("old-version", "speaks rmqspec.conform version 0; rmqspec speaks 1"),
    ("wrong-case", "the answer to case 1 names case 2"),
])
def test_a_driver_that_does_not_speak_the_protocol_is_one_line_and_exit_2(capsys, mode, says):
    driver = f"{PY} -m property_tests.drivers.misbehaving --mode {mode}"
    code, out, err = run(capsys, "conform", "--driver", driver, "--count", "5", "--timeout", "1")
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("rmqspec: error: driver: ") and says in err, err


def test_a_driver_that_cannot_start_is_exit_2(capsys):
    code, out, err = run(capsys, "conform", "--driver", "/nonexistent/driver --flag")
    assert code == 2 and "cannot start the driver" in err and len(err.splitlines()) == 1


def test_a_handler_that_throws_is_a_mismatch_not_a_protocol_error(capsys):
    """An answer {"error": ...} is the implementation failing a case: exit 1, shrunk like any mismatch."""
    code, d = conform_json(capsys, f"{PY} -m property_tests.drivers.misbehaving --mode error", "--count", "20")
    assert code == 1 and d["mismatch"]["differences"][0]["path"] == "error"


# --- vectors ---


@pytest.fixture(scope="module")
def vectors_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("vectors") / "election.json"
    assert cli.main(["vectors", "--out", str(path), "--count", "40", "--seed", "3", "--json"]) == 0
    return path


def test_vectors_hold_the_edge_cases_then_generated_ones(vectors_file):
    doc = json.loads(vectors_file.read_text())
    assert doc["schema"] == "rmqspec.vectors/1" and doc["protocol"] == "election" and doc["seed"] == 3
    ids = [v["id"] for v in doc["vectors"]]
    assert ids[0].startswith("edge-") and sum(i.startswith("random-") for i in ids) == 40
    assert {v["requires"][0] for v in doc["vectors"]} == set(election.INPUTS)


def test_the_reference_satisfies_its_own_vectors(capsys, vectors_file):
    code, out, _ = run(capsys, "vectors", "--check", str(vectors_file))
    assert code == 0 and "answers are the reference's" in out
    code, d = conform_json(capsys, REFERENCE, "--vectors", str(vectors_file))
    doc = json.loads(vectors_file.read_text())
    assert code == 0 and d["cases"] == len(doc["vectors"]) and d["skipped"] == 0


def test_a_changed_answer_in_a_vectors_file_is_found(capsys, vectors_file, tmp_path):
    doc = json.loads(vectors_file.read_text())
    victim = next(v for v in doc["vectors"] if v["expected"]["reply"] and
                  v["expected"]["reply"].get("vote_result") == "REJECT_ALREADY_VOTED")
    victim["expected"]["reply"]["vote_result"] = "ACCEPT"
    bad = tmp_path / "mutated.json"
    bad.write_text(json.dumps(doc))
    code, out, _ = run(capsys, "vectors", "--check", str(bad))
    assert code == 1 and f"{victim['id']}: reply.vote_result" in out
    code, d = conform_json(capsys, REFERENCE, "--vectors", str(bad))
    assert code == 1 and d["mismatches"] == 1 and d["mismatch"]["vector"] == victim["id"]


def test_vectors_skip_what_the_driver_does_not_declare(capsys, vectors_file):
    code, d = conform_json(capsys, REFERENCE + " --inputs VoteRequest", "--vectors", str(vectors_file))
    assert code == 0 and set(d["kinds"]) == {"VoteRequest"} and d["skipped"] > 0


def test_a_vectors_file_that_is_not_one_is_exit_2(capsys, tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text('{"schema": "rmqspec.vectors/1", "protocol": "election", "vectors": [{"id": "a"}]}')
    code, _, err = run(capsys, "vectors", "--check", str(bad))
    assert code == 2 and "vector 1 (a)" in err
    bad.write_text("not json")
    code, _, err = run(capsys, "conform", "--driver", REFERENCE, "--vectors", str(bad))
    assert code == 2 and "is not JSON" in err and len(err.splitlines()) == 1


def test_vectors_are_the_same_for_the_same_seed(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for p in (a, b):
        assert cli.main(["vectors", "--out", str(p), "--count", "15", "--seed", "5"]) == 0
    assert a.read_text() == b.read_text()


# --- the encoding ---


def test_edge_cases_reach_every_vote_result_and_parse_result():
    """The deterministic edge cases make the reference answer every VoteResponse.RESULT a
    handler can give and end vote rounds in every ParseResult."""
    results, parsed = set(), set()
    for case in election_cases.edge_cases():
        wire, expected, _ = SUBJECTS["election"].prepare(case)
        if expected["reply"] and "vote_result" in expected["reply"]:
            results.add(expected["reply"]["vote_result"])
        if wire["input"]["kind"] == "tick" and wire["state"].get("stateMaintainer", {}).get("round"):
            parsed.add(expected["state"]["elector"]["lastParseResult"])
    assert results == {r.value for r in VoteResult}
    assert parsed == {p.value for p in ParseResult}


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(election_cases.cases(election.INPUTS, election_cases.ALL_FEATURES))
def test_the_wire_case_carries_everything_the_answer_depends_on(case):
    """Decoding a wire case gives back the member (up to the loop's sleep), and the sections
    `requires` chose hold every field the input changes."""
    after, _, outs, _ = election.run(case)
    need = election.requires(case, after, outs)
    sections = election.sections_for(need)
    wire = election.encode_case(case, sections)
    back, got_sections = election.decode_case(wire)
    assert got_sections == sections and back.input == case.input
    assert back.member == case.member.evolve(next_loop_ms=case.now)
    assert election.answer(wire)["state"] == election.plain(election.encode_state(after, sections))
