"""Implementation logs of consumer offsets (`offsets`, docs/conformance.md) written by RocketMQ 4.9.4's own
offset classes: each validates as logged, the corpus holds the faults the issue names, and a log with one
line tampered with is rejected at that line.

The logs were written by the real `ConsumerOffsetManager` (commitOffset, queryOffset, encode, persist and
load through `ConfigManager` on real consumerOffset.json files), `SlaveSynchronize#syncConsumerOffset` over
the real `BrokerOuterAPI#getAllConsumerOffset`, `ConsumerManageProcessor` (UPDATE_ and QUERY_CONSUMER_OFFSET),
and on the consumers the real `MQClientInstance` (route table, `findBrokerAddressInSubscribe`,
`updateTopicRouteInfoFromNameServer`), `MQClientAPIImpl`, `RemoteBrokerOffsetStore`, `RebalancePushImpl`
(`computePullFromWhereWithException`, `removeUnnecessaryMessageQueue`), `AllocateMessageQueueAveragely`,
`PullAPIWrapper`'s broker choice and `ProcessQueue`, in one JVM on a simulated clock, with a harness
transport, store, pull handler, route source, replication and producer
(property_tests/impl_logs/rocketmq-4.9.4/offsets/README.md says which is which).
`master_crash_restart` was rejected by the model before it was fixed: the real consumer refreshes its
route before each commit while the master is out of it (test_offsets_units.py,
`test_update_consume_offset_to_broker_refreshes_the_route_when_the_master_is_not_found`).
"""

from __future__ import annotations

import copy
import functools
import os
from pathlib import Path

import pytest

from histories import reference_logs as il
from property_tests.support import impl_logs

REAL_OFFSETS = Path(__file__).resolve().parent / "impl_logs" / "rocketmq-4.9.4" / "offsets"
REAL = sorted(p.stem for p in REAL_OFFSETS.glob("*.jsonl"))
# Checking these takes minutes each (thousands of lines at 20-60 lines a second): RMQSPEC_SLOW_LOGS=1.
LONG = {"master_crash_restart", "consumer_crash_rebalance", "slave_reads_lower_commit", "slave_sync_overwrites"}
SLOW = pytest.mark.skipif(not os.environ.get("RMQSPEC_SLOW_LOGS"), reason="minutes each; RMQSPEC_SLOW_LOGS=1")


read_real = functools.partial(impl_logs.read_log, REAL_OFFSETS)
check = impl_logs.check_log
events = functools.partial(impl_logs.log_events, REAL_OFFSETS)


def test_the_corpus_has_real_logs():
    assert len(REAL) >= 3, "property_tests/impl_logs/rocketmq-4.9.4/offsets/ holds the logs RocketMQ 4.9.4 wrote"


@pytest.mark.parametrize("name", [pytest.param(n, marks=SLOW) if n in LONG else n for n in REAL])
def test_real_rocketmq_4_9_4_offsets_logs_validate_as_logged(name):
    lines = read_real(name)
    assert lines[0]["protocol"] == "offsets"
    r = check(lines)
    assert r.accepted, r.text(il.parse(lines))


def test_the_master_crash_log_holds_the_faults_the_issue_names():
    """The master's process crash and restart (its consumerOffset.json as last persisted), the slave
    serving pulls and taking commits while the master is down, a route refresh before each such
    commit, and the slave's putAll of the master's table after the master returned."""
    name = "master_crash_restart"
    assert [(d["node"], d["at"]) for d in read_real(name)[1:] if d["at"] in ("crash", "restart")] == \
        [("n0", "crash"), ("n0", "restart")]
    crash, restart = (d["t_ms"] for d in read_real(name)[1:] if d["at"] in ("crash", "restart"))
    served = [d for d in events(name, "PullMessageProcessor#processRequest") if d["node"] == "n1"]
    assert served and all(crash < d["t_ms"] < restart + 30_000 for d in served)
    refreshed = [d for d in events(name, "MQClientAPIImpl#getTopicRouteInfoFromNameServer")
                 if "request" in d and d["t_ms"] % 30_000 != 10]  # not the 30 s poll (10 ms, then every 30 s)
    assert refreshed and {d["t_ms"] for d in refreshed} == {35_000, 40_000, 45_000}
    to_slave = [d for d in events(name, "ConsumerOffsetManager#commitOffset") if d["node"] == "n1" and d["via"] == "update"]
    assert to_slave
    syncs = [d for d in events(name, "SlaveSynchronize#syncConsumerOffset") if d["t_ms"] > restart]
    assert syncs and syncs[0]["master"] == "n0"
    # the restarted master loaded the table its last persist before the crash wrote
    persisted = [d["table"] for d in events(name, "ConsumerOffsetManager#persist") if d["node"] == "n0" and d["t_ms"] < crash]
    first_answer = next(d for d in events(name, "AdminBrokerProcessor#getAllConsumerOffset") if d["t_ms"] > restart)
    loaded = {k: dict(v) for k, v in persisted[-1]}
    answered = {k: dict(v) for k, v in first_answer["response"]["offset_table"].items()}
    assert all(answered[k][q] >= loaded[k][q] for k in loaded for q in loaded[k])


def test_the_slave_serves_a_resumed_queue_and_the_returned_master_takes_a_lower_commit():
    """c0 takes c1's queue while the master is down and resumes it from the slave's copy of the last sync
    (29), the slave serves it what the master had written; after the master's restart from its 20 s
    consumerOffset.json (46), c0's next persistAll refreshes its route and commits 34: commitOffset
    replaces 46 with 34 (RocketMQ only logs it; OFF-2's `lower-commit`)."""
    name = "slave_reads_lower_commit"
    resumed = [d for d in events(name, "RebalancePushImpl#computePullFromWhere") if d["peer"] == "n1"]
    assert [(d["node"], d["queue_id"], d["offset"], d["answer"]) for d in resumed] == [("c0", 1, 29, 29)]
    served = [m for d in events(name, "PullMessageProcessor#processRequest") if d["node"] == "n1" for m in d["response"]["msgs"]]
    assert len(served) == 31
    lower = [d for d in events(name, "ConsumerOffsetManager#commitOffset") if 0 <= d["offset"] < d["old"]]
    assert [(d["node"], d["queue_id"], d["offset"], d["old"], d["via"]) for d in lower] == [("n0", 1, 34, 46, "update")]
    persisted = [d["table"] for d in events(name, "ConsumerOffsetManager#persist") if d["node"] == "n0" and d["t_ms"] == 20_000]
    assert dict(persisted[0][0][1])[1] == 46


def test_the_slave_sync_puts_the_returned_master_stale_table_over_the_slave_commits():
    """SlaveSynchronize#syncConsumerOffset is putAll: the consumers committed 50 and 50 to the slave while
    the master was down and then died; the master came back with its 10 s consumerOffset.json, and the
    slave's first sync after it learnt the master again put that table (44, 43) over its own, which its
    next persist wrote; a consumer started then resumed from the master's 44 and 43 (OFF-2)."""
    name = "slave_sync_overwrites"
    to_slave = {(d["queue_id"], d["offset"]) for d in events(name, "ConsumerOffsetManager#commitOffset")
                if d["node"] == "n1" and d["via"] == "update"}
    assert to_slave == {(0, 50), (1, 50)}
    sync = next(d for d in events(name, "SlaveSynchronize#syncConsumerOffset") if d["t_ms"] > 40_000)
    assert sync["t_ms"] == 63_000 and dict(sync["table"][0][1]) == {0: 44, 1: 43}
    after = next(d for d in events(name, "ConsumerOffsetManager#persist") if d["node"] == "n1" and d["t_ms"] > sync["t_ms"])
    assert dict(after["table"][0][1]) == {0: 44, 1: 43}
    resumed = [(d["queue_id"], d["offset"]) for d in events(name, "RebalancePushImpl#computePullFromWhere")
               if d["node"] == "c0" and d["t_ms"] > sync["t_ms"]]
    assert resumed == [(0, 44), (1, 43)]


# --- tampered logs are rejected where they were tampered with ---


def _tamper(name: str, pred, change) -> tuple[list[dict], int]:
    out = copy.deepcopy(read_real(name))
    k = next(i for i in range(1, len(out)) if pred(out[i]))
    change(out[k])
    return out[: k + 120], k + 1  # a prefix of the log: the lines after it play no part in the rejection


def offset_committed_backwards(name: str) -> tuple[list[dict], int]:
    """A consumer's one-way commit carries one less than the offset it holds (a message it consumed)."""
    def pred(d):
        return d["at"] == "RemoteBrokerOffsetStore#updateConsumeOffsetToBroker" and d.get("request", {}).get("commit_offset", 0) > 0

    def change(d):
        d["request"]["commit_offset"] -= 1
    return _tamper(name, pred, change)


def broker_stores_another_offset(name: str) -> tuple[list[dict], int]:
    """A master's commitOffset stores a value its pull did not carry."""
    def pred(d):
        return d["at"] == "ConsumerOffsetManager#commitOffset" and d["offset"] > 0

    def change(d):
        d["offset"] += 1
    return _tamper(name, pred, change)


def slave_sync_not_the_master_table(name: str) -> tuple[list[dict], int]:
    """The slave puts a table that is not the one the master answered."""
    def pred(d):
        return d["at"] == "SlaveSynchronize#syncConsumerOffset" and d["table"]

    def change(d):
        d["table"][0][1][0][1] += 1
    return _tamper(name, pred, change)


def resumed_past_the_broker_answer(name: str) -> tuple[list[dict], int]:
    """A consumer resumes a queue one above the offset the broker answered (it would skip a message)."""
    def pred(d):
        return d["at"] == "RebalancePushImpl#computePullFromWhere"

    def change(d):
        d["offset"] += 1
    return _tamper(name, pred, change)


TAMPERS = [resumed_past_the_broker_answer, broker_stores_another_offset, offset_committed_backwards,
           slave_sync_not_the_master_table]


@pytest.mark.parametrize("tamper", [TAMPERS[0]] + [pytest.param(t, marks=SLOW) for t in TAMPERS[1:]],
                         ids=lambda t: t.__name__)
def test_a_tampered_real_log_is_rejected_at_the_tampered_line(tamper):
    """At the tampered line, or a few lines before it: a line of the step that must also write the
    tampered one (a pull handler's commit is written before its handler line, in one step)."""
    bad, line = tamper("quiet")
    r = check(bad)
    assert not r.accepted and r.failing is not None
    assert line - 4 <= r.failing.line <= line, (r.failing.line, line, r.reason)
