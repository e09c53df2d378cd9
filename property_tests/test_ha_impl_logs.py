"""Implementation logs of classic master/slave replication (`ha`, docs/conformance.md): logs the
real RocketMQ 4.9.4 store classes wrote validate as logged, reference-made logs are explained,
and a tamper corpus (a slave acknowledging bytes it never received, a message put twice at one
offset, an ack before the slave had the bytes, a transfer from the wrong offset, a line
deleted) is rejected at the tampered line.

The real logs were written by RocketMQ 4.9.4's own HAService, HAConnection, CommitLog and
DefaultMessageStore, one JVM per broker on loopback (property_tests/impl_logs/rocketmq-4.9.4/
ha/README.md). A cold JVM spreads one reference step's lines over up to 100 ms, so they are
checked with `--slack-ms 100`, as the DLedger corpus's cold starts are.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from histories import impl_log, tolerant
from histories import reference_logs as il
from reference_impl import core
from reference_impl.core import faults
from reference_impl.ha import log_points as lp
from reference_impl.ha import records as ha_records
from reference_impl.ha import service as svc
from reference_impl.ha import world as ha_world

REAL_HA = Path(__file__).resolve().parent / "impl_logs" / "rocketmq-4.9.4" / "ha"
REAL = sorted(p.stem for p in REAL_HA.glob("*.jsonl"))
SLACK_MS = 100


def read_real(name: str) -> list[dict]:
    with open(REAL_HA / f"{name}.jsonl", encoding="utf-8") as f:
        return [json.loads(x) for x in f]


def check(lines: list[dict], **options) -> tolerant.Result:
    options.setdefault("slack_ms", SLACK_MS)
    return tolerant.check(il.parse(lines), tolerant.Options(**options))


def at_line(r: tolerant.Result, line: int, after: int = 0) -> bool:
    """Rejected at `line` (or, for a deleted line, within the `after` lines that follow it)."""
    return not r.accepted and r.failing is not None and line <= r.failing.line <= line + after


# --- logs that happened are explained ---


def test_the_corpus_has_real_logs():
    assert REAL, "property_tests/impl_logs/rocketmq-4.9.4/ha/ holds the logs RocketMQ 4.9.4 wrote"


@pytest.mark.parametrize("name", REAL)
def test_real_rocketmq_4_9_4_ha_logs_validate_as_logged(name):
    lines = read_real(name)
    assert lines[0]["protocol"] == "ha"
    r = check(lines)
    assert r.accepted, r.text(il.parse(lines))


def test_the_real_corpus_has_each_fault_kind():
    """A slave's process crash, a master's, an OS crash (lost page cache) of each, a dropped HA
    connection and the slave's reconnect."""
    facts = {(name, d["node"], d["at"], d.get("os")) for name in REAL for d in read_real(name)[1:]
             if d["at"] in ("crash", lp.CONN_DROP)}
    kinds = {(node, at, os_crash) for _, node, at, os_crash in facts}
    assert {("n1", "crash", False), ("n0", "crash", False), ("n0", "crash", True), ("n1", "crash", True),
            ("n1", lp.CONN_DROP, None)} <= kinds
    assert any(d["at"] == lp.CONNECT_AT for d in read_real("sync_conn_drop")[1:]
               if d["t_ms"] > next(x["t_ms"] for x in read_real("sync_conn_drop")[1:] if x["at"] == lp.CONN_DROP))


def test_a_real_log_holds_transfers_reports_and_puts():
    lines = read_real("async_cold")
    seen = {d["at"] for d in lines[1:]}
    assert {lp.TRANSFER_AT, lp.DISPATCH_AT, lp.REPORT_AT, lp.NOTIFY_AT, lp.PUT_AT, lp.CONNECT_AT} <= seen
    assert any(d["at"] == lp.DISPATCH_AT and d["size"] == 0 for d in lines[1:])  # a heartbeat, slave side


PROFILES = {
    "crash": faults.FaultProfile(name="crash", delay_ms=(1, 10), crash=0.002, restart=0.01, calm_at_ms=60_000),
    "conn": faults.FaultProfile(name="conn", delay_ms=(1, 10), ext=(("conn_drop", 0.003),), calm_at_ms=60_000),
}
ONE_SIZE = {"body_min": 99, "body_max": 99, "mapped_file_size_commit_log": 4096}


def reference(profile: str, seed: int, steps: int, role: str) -> list[dict]:
    return il.reference_log("ha", PROFILES[profile], seed, steps, nodes=3,
                            overrides=dict(ONE_SIZE, broker_role=role))


@pytest.mark.parametrize("profile,seed,steps,role", [("crash", 1, 600, "ASYNC_MASTER"),
                                                     ("conn", 2, 900, "SYNC_MASTER")])
def test_reference_ha_logs_made_realistic_are_explained(profile, seed, steps, role):
    lines = reference(profile, seed, steps, role)
    assert any(d["at"] in ("crash", lp.CONN_DROP) for d in lines[1:])
    lines = il.realistic(lines, seed)
    r = check(lines, slack_ms=50)
    assert r.accepted, r.reason


# --- the tamper corpus: each rejected at the tampered line ---


def _first(lines: list[dict], pred, start: int = 1) -> int:
    return next(k for k in range(start, len(lines)) if pred(lines[k]))


def _cut(lines: list[dict], k: int, keep: int = 40) -> list[dict]:
    """The log up to `keep` lines after line index k (the check need not read the rest)."""
    return lines[:k + keep]


def _data_report(d: dict) -> bool:
    return d["at"] == lp.NOTIFY_AT and d["offset"] > 0


def slave_acks_bytes_it_never_received(lines: list[dict]) -> tuple[list[dict], int]:
    """The master takes a report 1 byte past what the slave has."""
    bad = copy.deepcopy(lines)
    k = _first(bad, _data_report)
    bad[k]["offset"] += 1
    bad[k]["push2slave_max"] += 1
    return _cut(bad, k), k + 1


def message_put_twice_at_one_offset(lines: list[dict]) -> tuple[list[dict], int]:
    """The second put's result names the first put's offset."""
    bad = copy.deepcopy(lines)
    puts = [k for k, d in enumerate(bad) if d.get("at") == lp.PUT_AT and "response" in d and d["response"]["offset"] > 0]
    k = puts[0]
    bad[k]["response"]["offset"] -= bad[k]["response"]["size"]
    return _cut(bad, k), k + 1


def ack_before_the_master_sent_the_bytes(lines: list[dict]) -> tuple[list[dict], int]:
    """The master takes the slave's report of a frame's end 150 ms (beyond the slack) before it
    built that frame."""
    bad = copy.deepcopy(lines)
    k = _first(bad, lambda d: d["at"] == lp.TRANSFER_AT and d["offset"] > 0)
    end = bad[k]["offset"] + bad[k]["size"]
    j = _first(bad, lambda d: d["at"] == lp.NOTIFY_AT and d["offset"] == end, k)
    ack = bad.pop(j)
    early = bad[k]["t_ms"] - SLACK_MS - 50
    at = max(i for i in range(1, k) if bad[i]["t_ms"] <= early) + 1
    ack["t_ms"] = bad[at - 1]["t_ms"]
    bad.insert(at, ack)
    return _cut(bad, k), at + 1


def transfer_from_the_wrong_offset(lines: list[dict]) -> tuple[list[dict], int]:
    bad = copy.deepcopy(lines)
    k = _first(bad, lambda d: d["at"] == lp.TRANSFER_AT)
    bad[k]["offset"] += 1
    return _cut(bad, k), k + 1


def frame_decoded_twice(lines: list[dict]) -> tuple[list[dict], int]:
    """The slave decodes the same frame again."""
    bad = copy.deepcopy(lines)
    k = _first(bad, lambda d: d["at"] == lp.DISPATCH_AT and d["size"] > 0)
    bad.insert(k + 1, copy.deepcopy(bad[k]))
    return _cut(bad, k + 1), k + 2


def data_frame_line_deleted(lines: list[dict]) -> tuple[list[dict], int]:
    """The slave's decode of a data frame is gone: its report of the new offset is unexplained."""
    bad = copy.deepcopy(lines)
    k = _first(bad, lambda d: d["at"] == lp.DISPATCH_AT and d["size"] > 0)
    del bad[k]
    return _cut(bad, k), k + 1


def put_acknowledged_that_the_slave_never_had(lines: list[dict]) -> tuple[list[dict], int]:
    """sync_master_crash: the restarted SYNC_MASTER answers PUT_OK (its GroupTransferService
    wakes the put with PUT_OK) for a put whose bytes the slave reported only 2 s later: Java
    answered FLUSH_SLAVE_TIMEOUT."""
    bad = copy.deepcopy(lines)
    k = _first(bad, lambda d: d["at"] == lp.PUT_AT and d.get("response", {}).get("status") == "FLUSH_SLAVE_TIMEOUT")
    bad[k]["response"]["status"] = "PUT_OK"
    j = _first(bad, lambda d: d["at"] == lp.DONE_AT and d["status"] == "FLUSH_SLAVE_TIMEOUT", k)
    bad[j]["status"] = "PUT_OK"
    return _cut(bad, j), k + 1


TAMPERS = [slave_acks_bytes_it_never_received, message_put_twice_at_one_offset, ack_before_the_master_sent_the_bytes,
           transfer_from_the_wrong_offset, frame_decoded_twice, data_frame_line_deleted,
           put_acknowledged_that_the_slave_never_had]
TAMPERED_LOG = {put_acknowledged_that_the_slave_never_had: "sync_master_crash"}


@pytest.mark.parametrize("tamper", TAMPERS, ids=lambda t: t.__name__)
def test_a_tampered_real_log_is_rejected_at_the_tampered_line(tamper):
    lines = read_real(TAMPERED_LOG.get(tamper, "async_cold"))
    bad, line = tamper(lines)
    r = check(bad)
    after = 8 if tamper is data_frame_line_deleted else 0
    assert at_line(r, line, after), (r.failing and r.failing.line, line, r.reason)


def test_the_untampered_prefix_the_corpus_cuts_is_accepted():
    """The tampers cut the log after the tampered line; the cut log itself is explained (so the
    rejections come from the tampering, not from the cut)."""
    lines = read_real("async_cold")
    k = _first(lines, _data_report)
    assert check(_cut(lines, k)).accepted


def test_a_sync_master_wake_up_with_the_wrong_verdict_is_rejected_at_its_line():
    """A reference log's GroupTransferService wakes a put FLUSH_SLAVE_TIMEOUT although the
    slave's report already covered it (push2SlaveMaxOffset >= nextOffset)."""
    lines = il.realistic(reference("conn", 2, 900, "SYNC_MASTER"), 2)
    k = _first(lines, lambda d: d["at"] == lp.DONE_AT and d["status"] == "PUT_OK")
    bad = copy.deepcopy(lines[:k + 40])
    bad[k]["status"] = "FLUSH_SLAVE_TIMEOUT"
    r = check(bad, slack_ms=50)
    assert at_line(r, k + 1), (r.failing and r.failing.line, k + 1, r.reason)


# --- the log-point table's own rules ---


def test_group_transfer_wake_up_line_carries_the_java_verdict():
    """HAService.GroupTransferService#doWaitTransfer: PUT_OK iff push2SlaveMaxOffset >= nextOffset."""
    c = ha_records.HaConfig()
    req = ha_records.GroupCommitRequest(put=1, next_offset=500, wrote_offset=400, deadline=10)
    before = ha_records.Broker(id="n0", role=ha_records.BrokerRole.SYNC_MASTER, push2slave_max=499, gt_read=(req,))
    after = before.evolve(gt_read=())
    assert lp.node_lines(c, True, before, after, [], 0) == [(lp.DONE_AT, {"offset": 500, "status": "FLUSH_SLAVE_TIMEOUT"})]
    before = before.evolve(push2slave_max=500)
    assert lp.node_lines(c, True, before, after.evolve(push2slave_max=500), [], 0) == [
        (lp.DONE_AT, {"offset": 500, "status": "PUT_OK"})]
    assert svc.transfer_ok(c, before, req)


def test_java_polling_slack_is_the_haclient_select_for_a_periodic_report():
    """HAClient#run: isTimeToReportOffset is checked after selector.select(1000) returns."""
    c = ha_records.HaConfig()
    b = ha_records.Broker(id="n1", role=ha_records.BrokerRole.SLAVE,
                          client=ha_records.HAClient(master="n0", conn=3, last_write_ms=1000))
    assert lp.tick_slack(c, b, 0, svc.client_wake(c, b)) == 1000
    assert lp.tick_slack(c, b, 0, svc.client_wake(c, b) + 1) == 0


def test_a_heartbeat_is_not_a_master_line_but_a_slave_frame():
    c = ha_records.HaConfig()
    b = ha_records.Broker(id="n0", role=ha_records.BrokerRole.ASYNC_MASTER)
    assert lp.node_lines(c, True, b, b, [ha_records.FrameSent(conn=1, offset=0, size=0, crc=0)], 0) == []
    s = ha_records.Broker(id="n1", role=ha_records.BrokerRole.SLAVE, client=ha_records.HAClient(master="n0", conn=1))
    assert lp.node_lines(c, False, s, s, [ha_records.FrameRead(conn=1, offset=0, size=0, crc=0, appended=True)], 0) == [
        (lp.DISPATCH_AT, {"peer": "n0", "offset": 0, "size": 0})]


def _connecting_slave() -> tuple[core.Protocol, core.World]:
    """A master and a slave whose HAClient has just started its connect attempt at 0."""
    w = core.init(core.protocol("ha").make_config(2, {}))
    w, _ = core.step(w, core.Tick(node=1))
    assert w.nodes[1].client.connecting and w.nodes[1].client.next_connect_ms == 0
    return lp.under_implementation(core.protocol("ha")), w


def test_a_started_haclient_may_reach_connect_master_up_to_connect_late_ms_late():
    """HAClient's thread starting (or its 5 s wait ending) runs connectMaster when the JVM
    schedules it: the checker's world offers the connect on a 20 ms grid up to CONNECT_LATE_MS
    after it was due, and no later; the late connect opens the connection then."""
    p, w = _connecting_slave()
    late = [e for e in p.ext_events(w, 10_000) if isinstance(e, lp.ConnectLate)]
    assert [e.at for e in late] == list(range(lp.CONNECT_STEP_MS, lp.CONNECT_LATE_MS + 1, lp.CONNECT_STEP_MS))
    assert p.ext_deadline(w) == lp.CONNECT_LATE_MS  # the world must connect by then
    after, obs = p.ext_apply(w, late[-1], w.now)
    assert after.now == lp.CONNECT_LATE_MS and after.nodes[1].client.conn != 0
    assert any(isinstance(o, ha_world.Connected) for _, o in obs)


def test_check_trace_takes_an_ha_log(tmp_path, capsys):
    from rmqspec import cli
    path = tmp_path / "ha.jsonl"
    path.write_text("\n".join(json.dumps(d) for d in read_real("async_cold")) + "\n")
    assert cli.main(["check-trace", str(path), "--slack-ms", str(SLACK_MS)]) == 0
    assert "ACCEPTED" in capsys.readouterr().out
