"""`rmqspec conform --protocol ha` and `rmqspec vectors --protocol ha`: RocketMQ 4.9.4's classic
replication handlers (the master's report handling, the slave's frame decoding and loop,
GroupTransferService). The reference behind the driver protocol agrees with itself, deliberately
broken handlers are caught with a shrunk case, the edge cases reach every branch the Java code
takes, and vectors round-trip."""

from __future__ import annotations

import json
import sys

import pytest

from conform import ha, ha_cases
from conform.session import SUBJECTS
from reference_impl.ha import wire
from rmqspec import cli

PY = sys.executable
REFERENCE = f"{PY} -m property_tests.drivers.ha_reference"


def broken(bug: str) -> str:
    return f"{PY} -m property_tests.drivers.ha_broken --bug {bug}"


def conform_json(capsys, driver: str, *more: str) -> tuple[int, dict]:
    code = cli.main(["conform", "--protocol", "ha", "--driver", driver, "--json", *more])
    return code, json.loads(capsys.readouterr().out)


def answer(case: ha.Case) -> dict:
    return ha.prepare(case)[1]


def outs(case: ha.Case, kind: str) -> list[dict]:
    return [o for o in answer(case)["outputs"] if o["out"] == kind]


def test_the_reference_behind_the_protocol_agrees_with_itself(capsys):
    code, d = conform_json(capsys, REFERENCE, "--count", "300")
    assert code == 0 and d["ok"] and d["cases"] == 300 and d["protocol"] == "ha"
    assert set(d["kinds"]) == set(ha.INPUTS), d["kinds"]


def test_a_driver_gets_only_the_inputs_its_hello_declares(capsys):
    code, d = conform_json(capsys, REFERENCE + " --inputs frame_read", "--count", "40")
    assert code == 0 and set(d["kinds"]) == {"frame_read"}


def test_a_first_report_range_checked_in_4_9_4_is_caught_and_shrunk(capsys):
    """The minimal case: a fresh connection whose first report is above the master's max offset
    (4.9.4 takes it as the request offset; only later acks are checked)."""
    code, d = conform_json(capsys, broken("first-report-checked"), "--count", "1000")
    assert code == 1 and d["shrink_cases"] > 0
    case = d["mismatch"]["case"]
    assert case["input"]["kind"] == "report_read" and case["config"]["version"] == "4.9.4"
    assert case["state"]["connection"]["slaveRequestOffset"] < 0
    first = int(case["input"]["reads"][0][:16], 16)
    assert first > case["state"]["commitLog"]["maxOffset"]
    assert {"out": "close"} in d["mismatch"]["got"]["outputs"]


@pytest.mark.parametrize("bug,kind,path", [("first-complete-report", "report_read", "state.connection"),
                                           ("heartbeat-not-appended", "frame_read", "state.commitLog.minOffset"),
                                           ("transfer-strict", "transfer_wait", "outputs")])
def test_a_broken_handler_is_caught(capsys, bug, kind, path):
    code, d = conform_json(capsys, broken(bug), "--count", "3000")
    assert code == 1 and d["mismatch"]["case"]["input"]["kind"] == kind
    assert any(x["path"].startswith(path) for x in d["mismatch"]["differences"]), d["mismatch"]


# --- the edge cases hold the Java branches ---


def _reports(*values: int) -> bytes:
    return b"".join(wire.encode_ack(v) for v in values)


@pytest.mark.parametrize("version,closes", [("4.9.4", True), ("4.9.2", False), ("fixed", True)])
def test_an_ack_above_the_masters_max_offset_closes_the_connection_from_4_9_3(version, closes):
    """ReadSocketService#processReadEvent (4.9.3+): a report after the first that is above
    getMaxPhyOffset() returns false, and run() ends the connection without notifyTransferSome."""
    c = ha_cases.config(version=version)
    case = ha.Case(config=c, broker=ha_cases.master(c, 5600, 0, 0), now=ha_cases.NOW,
                   input=ha.ReadReports(reads=(_reports(5601),)))
    assert bool(outs(case, "close")) == closes
    assert outs(case, "notify_transfer_some") == ([] if closes else [{"out": "notify_transfer_some", "offset": 5601}])


@pytest.mark.parametrize("version,closes", [("4.9.4", False), ("4.9.2", False), ("fixed", True)])
def test_the_first_report_is_the_request_offset_and_unchecked_in_4_9_4(version, closes):
    """ReadSocketService#processReadEvent: `slaveRequestOffset < 0` takes the report as the request
    offset before the range check, so a first report above the max passes (finding F1)."""
    c = ha_cases.config(version=version)
    case = ha.Case(config=c, broker=ha_cases.master(c, 5600), now=ha_cases.NOW,
                   input=ha.ReadReports(reads=(_reports(9000),)))
    assert bool(outs(case, "close")) == closes
    if not closes:
        assert answer(case)["state"]["connection"] == {"slaveRequestOffset": 9000, "slaveAckOffset": 9000}


def test_only_the_last_complete_report_of_a_read_is_taken():
    """ReadSocketService#processReadEvent reads the long below `position - position % 8`: of three
    reports in one read, and a trailing half one, only the third is seen."""
    c = ha_cases.config()
    stream = _reports(200, 6000, 400) + wire.encode_ack(5000)[:3]
    case = ha.Case(config=c, broker=ha_cases.master(c, 5600, 0, 0), now=ha_cases.NOW,
                   input=ha.ReadReports(reads=(stream,)))
    a = answer(case)
    assert a["outputs"] == [{"out": "notify_transfer_some", "offset": 400}]
    assert a["state"]["readSocketService"]["pending"] == wire.encode_ack(5000)[:3].hex()


def test_a_read_of_nothing_past_the_housekeeping_interval_closes():
    """ReadSocketService#run: `now - lastReadTimestamp > haHousekeepingInterval` after a select
    that read nothing (strictly greater)."""
    c = ha_cases.config()
    hk = c.store.ha_housekeeping_interval
    for ago, closes in ((hk, False), (hk + 1, True)):
        case = ha.Case(config=c, broker=ha_cases.master(c, 5600, 0, 0, last_read=ha_cases.NOW - ago),
                       now=ha_cases.NOW, input=ha.ReadReports())
        assert bool(outs(case, "close")) == closes


def test_a_frame_at_another_offset_than_the_slaves_max_closes_before_its_body_arrives():
    """HAClient#dispatchReadRequest checks the header's offset as soon as 12 bytes are there, and
    skips the check while the slave's max offset is 0 (finding F3's door)."""
    c = ha_cases.config(4096)
    header_only = wire.encode_frame(5000, b"x" * 40)[:12]
    case = ha.Case(config=c, broker=ha_cases.slave(0, 200), now=ha_cases.NOW, input=ha.ReadFrames(reads=(header_only,)))
    assert outs(case, "close") and not outs(case, "append")
    empty = ha.Case(config=c, broker=ha_cases.slave(0, 0), now=ha_cases.NOW,
                    input=ha.ReadFrames(reads=(wire.encode_frame(5000, b"x" * 40),)))
    assert outs(empty, "append") == [{"out": "append", "offset": 5000, "size": 40, "ok": True}]
    assert answer(empty)["state"]["commitLog"] == {"minOffset": 0, "maxOffset": 40}  # written at position 0


def test_a_frame_that_does_not_fit_the_mapped_file_is_not_appended_and_not_reported():
    """MappedFile#appendMessage(byte[]) refuses bytes past the file's end; dispatchReadRequest
    ignores appendToCommitLog's answer, moves on, and reportSlaveMaxOffsetPlus finds nothing new."""
    c = ha_cases.config(4096)
    case = ha.Case(config=c, broker=ha_cases.slave(0, 4088), now=ha_cases.NOW,
                   input=ha.ReadFrames(reads=(wire.encode_frame(4088, b"y" * 9),)))
    assert outs(case, "append") == [{"out": "append", "offset": 4088, "size": 9, "ok": False}]
    assert not outs(case, "report") and not outs(case, "close")


def test_a_report_the_socket_does_not_take_closes_the_connection():
    """HAClient#reportSlaveMaxOffset writes at most three times; a partial report returns false and
    closeMaster runs (lastWriteTimestamp 0, the read buffer reset)."""
    c = ha_cases.config()
    hb = c.store.ha_send_heartbeat_interval
    for space, closes in ((8, False), (7, True)):
        case = ha.Case(config=c, broker=ha_cases.slave(0, 5600, last_write=ha_cases.NOW - hb - 1, space=space),
                       now=ha_cases.NOW, input=ha.ClientTick())
        assert outs(case, "report") == [{"out": "report", "offset": 5600, "written": min(space, 8)}]
        assert bool(outs(case, "close")) == closes
        if closes:
            assert answer(case)["state"]["haClient"]["lastWriteTimestamp"] == 0


def test_group_transfer_answers_in_order_and_waits_on_the_first_not_covered():
    """GroupTransferService#doWaitTransfer: PUT_OK at push2SlaveMaxOffset >= nextOffset, a past
    deadline FLUSH_SLAVE_TIMEOUT, and the thread blocks on the first request neither covers."""
    c = ha_cases.config()
    now = ha_cases.NOW
    reqs = [(5400, now + 100), (5600, now + 100), (5800, now - 1), (6000, now + 100), (5000, now + 100)]
    case = ha.Case(config=c, broker=ha_cases.transfer(c, 5600, reqs, [], False), now=now, input=ha.TransferWait())
    a = answer(case)
    assert [(o["nextOffset"], o["status"]) for o in a["outputs"]] == [
        (5400, "PUT_OK"), (5600, "PUT_OK"), (5800, "FLUSH_SLAVE_TIMEOUT")]
    gts = a["state"]["groupTransferService"]
    assert gts["waiting"] and [r["nextOffset"] for r in gts["requestsRead"]] == [6000, 5000]


def test_every_input_kind_is_in_the_edge_cases_and_each_reaches_its_branches():
    seen: dict[str, set] = {k: set() for k in ha.INPUTS}
    for case in ha_cases.edge_cases():
        kind = ha.input_kind(case.input)
        for o in answer(case)["outputs"]:
            seen[kind].add((o["out"], o.get("ok", o.get("status"))))
    assert {("notify_transfer_some", None), ("close", None)} <= seen["report_read"]
    assert {("append", True), ("append", False), ("report", None), ("close", None)} <= seen["frame_read"]
    assert {("report", None), ("close", None)} <= seen["client_tick"]
    assert {("wakeup_customer", "PUT_OK"), ("wakeup_customer", "FLUSH_SLAVE_TIMEOUT")} <= seen["transfer_wait"]


@pytest.mark.parametrize("case", list(ha_cases.edge_cases())[::37])
def test_a_case_round_trips_through_the_wire(case):
    wire_case = ha.encode_case(case)
    back, secs = ha.decode_case(json.loads(json.dumps(wire_case)))
    assert ha.encode_case(back) == wire_case and secs == ha.SECTIONS_OF[ha.input_kind(case.input)]
    assert ha.answer(wire_case) == answer(back)


def test_vectors_are_the_references_and_a_changed_answer_is_found(tmp_path, capsys):
    path = tmp_path / "v.json"
    assert cli.main(["vectors", "--protocol", "ha", "--out", str(path), "--count", "30"]) == 0
    capsys.readouterr()
    doc = json.loads(path.read_text())
    assert doc["protocol"] == "ha" and doc["inputs"] == list(ha.INPUTS)
    assert cli.main(["vectors", "--check", str(path)]) == 0
    assert cli.main(["conform", "--driver", REFERENCE, "--vectors", str(path)]) == 0
    capsys.readouterr()
    v = next(v for v in doc["vectors"] if any(o["out"] == "append" for o in v["expected"]["outputs"]))
    next(o for o in v["expected"]["outputs"] if o["out"] == "append")["ok"] ^= True
    path.write_text(json.dumps(doc))
    assert cli.main(["vectors", "--check", str(path)]) == 1
    assert v["id"] in capsys.readouterr().out


@pytest.mark.parametrize("field,value,says", [
    (("state", "commitLog", "minOffset"), 100, "multiple of mappedFileSizeCommitLog"),
    (("input", "reads"), ["zz"], "input.reads[0] must be a hex string"),
    (("config", "version"), "4.9.9", "config.version must be one of"),
])
def test_a_bad_ha_case_from_a_vectors_file_names_the_field(tmp_path, capsys, field, value, says):
    path = tmp_path / "v.json"
    assert cli.main(["vectors", "--protocol", "ha", "--out", str(path), "--count", "0"]) == 0
    doc = json.loads(path.read_text())
    v = next(v for v in doc["vectors"] if v["input"]["kind"] == "frame_read")
    target = v
    for k in field[:-1]:
        target = target[k]
    target[field[-1]] = value
    path.write_text(json.dumps(doc))
    capsys.readouterr()
    assert cli.main(["vectors", "--check", str(path)]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1


def test_the_subject_is_registered():
    assert SUBJECTS["ha"].inputs == ha.INPUTS and SUBJECTS["ha"].features == ha.FEATURES
