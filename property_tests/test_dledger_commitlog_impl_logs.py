"""Implementation logs of RocketMQ's CommitLog on DLedger (`dledger_commitlog`,
docs/conformance.md): logs written from seeded reference histories, made realistic (each step's
lines in any order, a few ms of thread lateness, an implementation's clock), are explained, and
a tamper corpus (a message put twice at one offset, a put answered PUT_OK that no follower
acknowledged, a dispatch of the wrong bytes, a dispatch line deleted) is rejected at the
tampered line.

No log written by the real DLedgerCommitLog is in the corpus yet (docs/conformance.md says
so); the log points are the DLedger log's (reference_impl/dledger_log/log_points.py) applied to
the broker's DLedger node, plus the broker's put results, dispatches and role changes.
"""

from __future__ import annotations

import copy
import functools
import json

import pytest

from histories import impl_log, tolerant
from histories import reference_logs as il
from reference_impl import core, rocketmq
from reference_impl.core.state import FrozenMap
from reference_impl.dledger_commitlog import broker as bk
from reference_impl.dledger_commitlog import log_points as lp
from reference_impl.dledger_log import log_points as dledger_points
from reference_impl.election import records as el
from rmqspec import cli

SLACK_MS = 50


@functools.lru_cache(maxsize=None)
def _made(profile: str, seed: int, steps: int) -> tuple:
    lines = il.realistic(il.reference_log("dledger_commitlog", profile, seed, steps, late_ms=5), seed)
    return tuple(lines)


def made(profile: str, seed: int, steps: int) -> list[dict]:
    return copy.deepcopy(list(_made(profile, seed, steps)))


def check(lines: list[dict], **options) -> tolerant.Result:
    options.setdefault("slack_ms", SLACK_MS)
    return tolerant.check(il.parse(lines), tolerant.Options(**options))


def at_line(r: tolerant.Result, line: int, step: dict, after: int = 0) -> bool:
    """Rejected at `line` (for a deleted line, within the `after` lines that follow it), or at a
    line of the tampered line's own step (`step`: its node and time) just before it: the checker
    takes a step's lines together (a put's answer, its result, the commit and the dispatch are
    one reference step), and a log may write them in any order."""
    if r.accepted or r.failing is None:
        return False
    if line <= r.failing.line <= line + after:
        return True
    return (line - 8 <= r.failing.line < line and r.failing.raw.get("node") == step.get("node")
            and abs(r.failing.raw.get("t_ms", 0) - step.get("t_ms", 0)) <= 5)


def _first(lines: list[dict], pred, start: int = 1) -> int:
    return next(k for k in range(start, len(lines)) if pred(lines[k]))


def _cut(lines: list[dict], k: int, keep: int = 40) -> list[dict]:
    return lines[:k + keep]


# --- logs that happened are explained ---


@pytest.mark.parametrize("profile,seed,steps", [("lockstep", 1, 1000), ("crash", 5, 1200)])
def test_reference_dledger_commitlog_logs_made_realistic_are_explained(profile, seed, steps):
    lines = made(profile, seed, steps)
    seen = {d["at"] for d in lines[1:]}
    assert {lp.PUT_AT, lp.DISPATCH_AT, lp.TO_MASTER_AT, lp.TO_SLAVE_AT, lp.SEND, lp.SEND_HANDLER, lp.PULL,
            "DLedgerStore#appendAsLeader", "DLedgerStore#appendAsFollower"} <= seen
    assert any(d["at"] == lp.PUT_AT and d["status"] == "PUT_OK" for d in lines[1:])
    if profile == "crash":  # brokers crash and restart, and the master moves
        assert {"crash", "restart"} <= seen and sum(d["at"] == lp.TO_MASTER_AT for d in lines[1:]) >= 2
    r = check(lines)
    assert r.accepted, r.reason


# --- the tamper corpus: each rejected at the tampered line ---


def _put_ok(d: dict) -> bool:
    return d["at"] == lp.PUT_AT and d["status"] == "PUT_OK"


def message_put_twice_at_one_offset(lines: list[dict]) -> tuple[list[dict], int]:
    """The second PUT_OK result names the first one's offset."""
    bad = copy.deepcopy(lines)
    first = _first(bad, _put_ok)
    k = _first(bad, _put_ok, first + 1)
    bad[k]["offset"] = bad[first]["offset"]
    return _cut(bad, k), k + 1


def put_ok_without_a_quorum(lines: list[dict]) -> tuple[list[dict], int]:
    """The followers never acknowledge the first put's entry (their appends and their answers
    to its push are gone), yet the leader answers the put PUT_OK."""
    bad = copy.deepcopy(lines)
    k = _first(bad, _put_ok)
    index = bad[k]["index"]

    def ack(d: dict) -> bool:
        if d["at"] == "DLedgerStore#appendAsFollower":
            return d["index"] == index
        r = d.get("response")
        return d["at"] in ("DLedgerEntryPusher.EntryHandler#handlePush", "DLedgerRpcService#push") and \
            isinstance(r, dict) and r.get("code") == 200 and r.get("index") == index

    start = _first(bad, lambda d: d["at"] == lp.SEND_HANDLER and "request" in d and d["request"]["key"] == bad[k]["key"])
    bad = [d for j, d in enumerate(bad) if not (start < j < k and ack(d))]
    first = _first(bad, lambda d: d["node"] == bad[start]["node"] and (
        d["at"] in (lp.PUT_AT, "DLedgerStore#updateCommittedIndex") or
        (d["at"] == lp.SEND_HANDLER and "response" in d)), start + 1)
    return _cut(bad, first), first + 1


def dispatch_of_the_wrong_bytes(lines: list[dict]) -> tuple[list[dict], int]:
    """The reput service dispatches a message at a physical offset one byte off."""
    bad = copy.deepcopy(lines)
    k = _first(bad, lambda d: d["at"] == lp.DISPATCH_AT)
    bad[k]["offset"] += 1
    return _cut(bad, k), k + 1


def dispatch_line_deleted(lines: list[dict]) -> tuple[list[dict], int]:
    """A dispatch the reference makes is missing: the reference's line never comes."""
    bad = copy.deepcopy(lines)
    k = _first(bad, lambda d: d["at"] == lp.DISPATCH_AT)
    DELETED[dispatch_line_deleted] = bad.pop(k)
    return _cut(bad, k), k + 1


DELETED: dict = {}  # a deletion tamper's line: its step is where the rejection belongs


TAMPERS = [message_put_twice_at_one_offset, put_ok_without_a_quorum, dispatch_of_the_wrong_bytes,
           dispatch_line_deleted]


@pytest.mark.parametrize("tamper", TAMPERS, ids=lambda t: t.__name__)
def test_a_tampered_dledger_commitlog_log_is_rejected_at_the_tampered_line(tamper):
    lines = made("lockstep", 1, 1000)
    bad, line = tamper(lines)
    r = check(bad)
    after = 12 if tamper is dispatch_line_deleted else 0
    step = DELETED.get(tamper) or bad[line - 1]
    assert at_line(r, line, step, after), (r.failing and r.failing.line, line, r.reason)


def test_the_untampered_prefix_the_corpus_cuts_is_accepted():
    lines = made("lockstep", 1, 1000)
    k = _first(lines, lambda d: d["at"] == lp.DISPATCH_AT)
    assert check(_cut(lines, k)).accepted


# --- the log-point table's own rules ---


def _world() -> core.World:
    cfg = core.protocol("dledger_commitlog").make_config(3, {})
    return core.init(cfg)


def test_a_broker_writes_the_dledger_logs_lines_then_its_own():
    """The broker's DLedger node's lines are the DLedger log's table's, unchanged: the
    dledger_commitlog table adds only the broker's put results, dispatches and role changes."""
    w = _world()
    b = w.nodes[0]
    c = w.cfg.proto
    assert isinstance(b, bk.Broker)
    put = bk.PutResult(key="p0-1", status=rocketmq.PutMessageStatus.PUT_OK, offset=48, size=168, msg_id="x",
                       queue_id=1, queue_offset=0, index=0)
    obs = [put, bk.BecameSlave(broker_id=2)]
    lines = lp.node_lines(c, False, b, b, obs, 0)
    assert lines[:len(dledger_points.node_lines(c, False, b.node, b.node, obs, 0))] == \
        dledger_points.node_lines(c, False, b.node, b.node, obs, 0)
    assert (lp.PUT_AT, {"key": "p0-1", "status": "PUT_OK", "offset": 48, "size": 168, "queue_id": 1,
                        "queue_offset": 0, "index": 0}) in lines
    assert (lp.TO_SLAVE_AT, {"broker_id": 2}) in lines


def test_the_phase_of_the_role_handlers_leader_checks_is_the_loop_the_log_does_not_show():
    """DLedgerRoleChangeHandler's LEADER task checks every role_poll_ms (Thread.sleep(100)) and
    writes nothing until it makes the broker master: its phase is its next check's time modulo
    the period, now for a task just queued; a broker without a LEADER task first, and a client,
    have none (histories.tolerant.checker.kept keeps executions of each phase apart)."""
    w = _world()
    c = w.cfg.proto
    b = w.nodes[1]
    leader = (1, el.Role.LEADER)
    assert lp.loop_phase(c, b, 30_677) is None
    assert lp.loop_phase(c, b.evolve(role_tasks=(leader,)), 30_677) == 77
    assert lp.loop_phase(c, b.evolve(role_tasks=(leader,), role_wait_until=31_778), 31_700) == 78
    assert lp.loop_phase(c, b.evolve(role_tasks=((1, el.Role.FOLLOWER), leader)), 30_677) is None
    assert lp.loop_phase(c, w.nodes[w.cfg.ids.index("p0")], 30_677) is None


def test_a_dispatch_line_per_consume_queue_unit_added():
    before = FrozenMap({0: ((48, 168),), 1: ()})
    after = FrozenMap({0: ((48, 168), (264, 168)), 1: ((480, 168),)})
    assert lp.dispatched(before, after) == [
        (lp.DISPATCH_AT, {"queue_id": 0, "queue_offset": 1, "offset": 264, "size": 168}),
        (lp.DISPATCH_AT, {"queue_id": 1, "queue_offset": 0, "offset": 480, "size": 168})]
    refilled = FrozenMap({0: ((48, 168), (300, 168))})
    assert lp.dispatched(after, refilled)[0][1]["offset"] == 300


def test_the_header_config_makes_the_same_world_again():
    cfg = core.protocol("dledger_commitlog").make_config(3, {"queues": 4, "send_interval_ms": 200,
                                                             "role_poll_ms": 50, "max_vote_interval_ms": 1500})
    again = lp.make_config(cfg.ids, lp.header_config(cfg))
    assert again.proto == cfg.proto and again.ids == cfg.ids


def test_a_client_rpc_that_failed_completes_at_its_own_log_point():
    for ctx, at in ((("send", "p0-1", 1), lp.SEND), (("pull", 0, 0), lp.PULL), (("route",), lp.ROUTE),
                    (("register",), lp.REGISTER)):
        assert lp.COMPLETE_AT[type(lp.failed_reply(ctx)).__name__] == at


def test_bad_node_names_are_refused():
    with pytest.raises(impl_log.LogError):
        il.parse([{"schema": impl_log.SCHEMA, "protocol": "dledger_commitlog", "nodes": ["n0", "p0", "ns0"],
                   "config": {}}])


def test_check_trace_takes_a_dledger_commitlog_log(tmp_path, capsys):
    lines = made("lockstep", 1, 1000)
    lines = _cut(lines, _first(lines, lambda d: d["at"] == lp.DISPATCH_AT))
    path = tmp_path / "dledger_commitlog.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in lines))
    assert cli.main(["check-trace", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] and out["lines"] == len(lines) - 1
