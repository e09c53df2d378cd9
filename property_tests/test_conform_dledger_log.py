"""`rmqspec conform --protocol dledger_log` and `rmqspec vectors --protocol dledger_log`: DLedger's
log-replication handlers (handlePush, the EntryHandler thread against a store, handleAppend).
The reference behind the driver protocol agrees with itself, deliberately broken handlers are
caught with a shrunk case, and vectors round-trip."""

from __future__ import annotations

import json
import sys

import pytest

from conform import dledger_log, dledger_log_cases
from conform.session import SUBJECTS
from reference_impl.dledger_log import entry_pusher as ep
from reference_impl.election.records import Code, Role
from rmqspec import cli

PY = sys.executable
REFERENCE = f"{PY} -m property_tests.drivers.dledger_log_reference"


def broken(bug: str) -> str:
    return f"{PY} -m property_tests.drivers.dledger_log_broken --bug {bug}"


def conform_json(capsys, driver: str, *more: str) -> tuple[int, dict]:
    code = cli.main(["conform", "--protocol", "dledger_log", "--driver", driver, "--json", *more])
    return code, json.loads(capsys.readouterr().out)


def test_the_reference_behind_the_protocol_agrees_with_itself(capsys):
    code, d = conform_json(capsys, REFERENCE, "--count", "300")
    assert code == 0 and d["ok"] and d["cases"] == 300 and d["protocol"] == "dledger_log"
    assert set(d["kinds"]) == set(dledger_log.INPUTS), d["kinds"]


def test_a_driver_gets_only_the_inputs_its_hello_declares(capsys):
    code, d = conform_json(capsys, REFERENCE + " --inputs entry_handler", "--count", "40")
    assert code == 0 and set(d["kinds"]) == {"entry_handler"}


def test_a_compare_that_ignores_the_body_is_caught_and_shrunk(capsys):
    """The minimal case: a follower holding an entry of the same index and term, another body."""
    code, d = conform_json(capsys, broken("compare-ignores-body"), "--count", "1000")
    assert code == 1 and d["shrink_cases"] > 0
    case = d["mismatch"]["case"]
    queued = case["state"]["entryHandler"]["compareOrTruncateRequests"]
    assert case["input"]["kind"] == "entry_handler" and [q["request"]["type"] for q in queued] == ["COMPARE"]
    entry = queued[0]["request"]["entry"]
    local = case["state"]["store"]["entries"][entry["index"] - case["state"]["store"]["ledgerBeginIndex"]]
    assert local["term"] == entry["term"] and local["body"] != entry["body"]
    missing, extra = d["mismatch"]["differences"][0]["expected"], d["mismatch"]["differences"][0]["got"]
    assert missing[0]["message"]["code"] == Code.INCONSISTENT_STATE and extra[0]["message"]["code"] == Code.SUCCESS


@pytest.mark.parametrize("bug,path", [("commit-past-end", "state.store.committedIndex"),
                                      ("append-ignores-leader", "state.store.ledgerEndIndex")])
def test_a_broken_store_is_caught(capsys, bug, path):
    code, d = conform_json(capsys, broken(bug), "--count", "1500")
    assert code == 1 and path in {x["path"] for x in d["mismatch"]["differences"]}, d["mismatch"]


def test_every_push_type_meets_the_store_in_the_edge_cases():
    """The edge cases hold each push type at the follower's end, below and past it, answered at
    once or by the EntryHandler, and handleAppend at each of its guards."""
    seen, codes = set(), set()
    for case in dledger_log_cases.edge_cases():
        _, reply, outs = dledger_log.run(case)
        inp = case.input
        if isinstance(inp, dledger_log.Request) and isinstance(inp.message, ep.AppendEntryRequest):
            codes.add(reply.code if reply is not None else "parked")
            continue
        waiting = list(case.node.handler.queue) + list(case.node.handler.write_requests.values())
        for w in (waiting if not isinstance(inp, dledger_log.Request) else [inp]):
            msg = w.message if isinstance(w, dledger_log.Request) else w.request
            answers = [o.msg.code for o in outs if getattr(o, "rpc", None) == w.rpc]
            seen.add((msg.type.value, type(inp).__name__, answers[0] if answers else None))
    for kind in ("APPEND", "COMMIT", "COMPARE", "TRUNCATE"):
        assert (kind, "EntryHandlerRun", Code.SUCCESS) in seen, kind
    assert ("COMPARE", "EntryHandlerRun", Code.INCONSISTENT_STATE) in seen
    assert ("APPEND", "EntryHandlerRun", Code.INCONSISTENT_STATE) in seen
    assert ("APPEND", "Request", None) in seen  # filed, answered later
    assert {Code.NOT_LEADER, Code.UNKNOWN_GROUP, Code.UNKNOWN_MEMBER, Code.LEADER_TRANSFERRING,
            Code.LEADER_PENDING_FULL, Code.SUCCESS, "parked"} <= codes


def test_a_case_round_trips_through_the_wire():
    case = next(iter(dledger_log_cases.edge_cases()))
    wire = dledger_log.encode_case(case)
    back, sections = dledger_log.decode_case(json.loads(json.dumps(wire)))
    assert back.node.store == case.node.store and back.node.member.role is Role.FOLLOWER
    assert sections == ("memberState", "store", "entryHandler")
    assert dledger_log.encode_case(back) == wire


def test_vectors_are_the_references_and_a_changed_answer_is_found(tmp_path, capsys):
    path = tmp_path / "v.json"
    assert cli.main(["vectors", "--protocol", "dledger_log", "--out", str(path), "--count", "30"]) == 0
    capsys.readouterr()
    doc = json.loads(path.read_text())
    assert doc["protocol"] == "dledger_log" and doc["inputs"] == list(dledger_log.INPUTS)
    assert cli.main(["vectors", "--check", str(path)]) == 0
    assert cli.main(["conform", "--driver", REFERENCE, "--vectors", str(path)]) == 0
    capsys.readouterr()
    v = next(v for v in doc["vectors"] if v["expected"]["outputs"])
    v["expected"]["outputs"][0]["message"]["code"] = Code.DISK_ERROR
    path.write_text(json.dumps(doc))
    assert cli.main(["vectors", "--check", str(path)]) == 1
    assert v["id"] in capsys.readouterr().out


def test_a_bad_dledger_log_case_from_a_vectors_file_names_the_field(tmp_path, capsys):
    path = tmp_path / "v.json"
    assert cli.main(["vectors", "--protocol", "dledger_log", "--out", str(path), "--count", "0"]) == 0
    doc = json.loads(path.read_text())
    doc["vectors"][0]["state"]["store"]["entries"][0]["index"] = 7
    path.write_text(json.dumps(doc))
    capsys.readouterr()
    assert cli.main(["vectors", "--check", str(path)]) == 2
    err = capsys.readouterr().err
    assert "state.store.entries[0].index must be 0" in err and len(err.strip().splitlines()) == 1


def test_the_subject_is_registered():
    assert SUBJECTS["dledger_log"].inputs == dledger_log.INPUTS
