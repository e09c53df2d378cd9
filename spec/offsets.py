"""Consumer-offset properties in master/slave mode (docs/properties.md: OFF-*).

Predicates read a world of the `offsets` protocol: broker and consumer states
(reference_impl.offsets_*), the observations of a step, and the ghost variables of
reference_impl.offsets.ghost. The broker-choice rules of OFF-4 are restated here from
the Java source, independently of the reference's functions, so a mistake in one shows
up against the other. Causes of the expected OFF-2 violations are read from the
history being checked (docs/offsets.md lists them).
"""

from __future__ import annotations

from typing import Any

from reference_impl import core
from reference_impl.offsets import ghost
from reference_impl.offsets.broker import key_of
from reference_impl.offsets.records import (
    CommitSent,
    GetMessageStatus,
    OffsetCommitted,
    OffsetsSynced,
    PullSent,
    PullServed,
)
from reference_impl.rocketmq import ResponseCode
from spec import offsets_decisions
from spec.properties import Property, register

REGRESSION_CODES = ("slave-sync", "master-restart", "slave-restart", "lower-commit", "commits-on-slave-only",
                    "slave-lag", "commit-after-read")


def _brokers(w: core.World) -> tuple:
    return w.nodes[:2]


# --- OFF-1: no skip ---


def off1(w: core.World) -> bool:
    g = w.ghost
    if g.skips:
        return False
    done = g.done
    for b in _brokers(w):
        inner = b.offset_table.get(key_of())
        if inner is not None:
            for q, v in inner.items():
                if v > done[q]:
                    return False
    return True


def _off1_offenders(w: core.World) -> list[tuple[str, int, int]]:
    """(broker, queue, offset) of every held offset above the group's first unconsumed one."""
    done = w.ghost.done
    return [(b.id, q, v) for b in _brokers(w) for q, v in (b.offset_table.get(key_of()) or {}).items()
            if v > done[q]]


def off1_expected(w: core.World, event: Any = None) -> str | None:
    """Expected only when every skip, and every offset a broker holds above the group's first
    unconsumed one, passes over nothing but messages an OFFSET_ILLEGAL correction from a slave
    jumped (ghost `corrections`): a skip anywhere else is unexpected."""
    g = w.ghost
    if any(c is None for c in g.skip_causes):
        return None
    causes = list(g.skip_causes)
    for _, q, v in _off1_offenders(w):
        cause = ghost.skipped_by_corrections(g, q, v)
        if cause is None:
            return None
        causes.append(cause)
    return causes[-1] if causes else None


def off1_explain(w: core.World) -> str:
    g = w.ghost
    if g.skips:
        return g.skips[-1]
    for broker, q, v in _off1_offenders(w):
        return f"{broker} holds offset {v} for queue {q}, but the group has not consumed offset {g.done[q]}"
    return "no skip"


# --- OFF-2: no regression (expected to fail) ---


def off2_expected(w: core.World, event: Any = None) -> str | None:
    regs = w.ghost.regressions
    if not regs or any(r.code is None for r in regs):
        return None
    return regs[-1].cause


def off2_explain(w: core.World) -> str:
    regs = w.ghost.regressions
    r = regs[-1]
    return (f"{len(regs)} regression(s); latest: {r.consumer} resumed queue {r.queue_id} at {r.resumed} (from "
            f"{r.broker}) below {r.held}, an offset a broker had held: {r.cause or 'no known cause'}")


# --- OFF-3: slave sync is putAll ---


def off3(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    for i, o in obs:
        if type(o) is OffsetsSynced:
            got = after.nodes[i].offset_table
            if set(got) != set(o.before) | set(o.table):
                return False
            for k, inner in got.items():
                if inner != (o.table[k] if k in o.table else o.before[k]):
                    return False
    return True


# --- OFF-4: broker choice follows the Java rules ---


def find_in_subscribe(addrs: Any, broker_id: int, only_this: bool) -> tuple[str, bool] | None:
    """MQClientInstance#findBrokerAddressInSubscribe, restated."""
    if not addrs:
        return None
    if broker_id in addrs:
        return addrs[broker_id], broker_id != 0
    if broker_id != 0 and broker_id + 1 in addrs:
        return addrs[broker_id + 1], True
    if only_this:
        return None
    first = sorted(addrs)[0]
    return addrs[first], first != 0


def expected_suggestion(c: Any, slave: bool, o: PullServed) -> tuple[int, ResponseCode]:
    """PullMessageProcessor#processRequest (4.9.4): the suggestion and the response code."""
    suggest = (c.which_broker_when_consume_slowly if o.suggest_from_slave else c.sub_broker_id) \
        if c.slave_read_enable else 0
    s = o.status
    if s is GetMessageStatus.FOUND:
        code = ResponseCode.SUCCESS
    elif s is GetMessageStatus.OFFSET_OVERFLOW_ONE:
        code = ResponseCode.PULL_NOT_FOUND
    elif s in (GetMessageStatus.NO_MESSAGE_IN_QUEUE, GetMessageStatus.NO_MATCHED_LOGIC_QUEUE):
        code = ResponseCode.PULL_OFFSET_MOVED if o.offset != 0 else ResponseCode.PULL_NOT_FOUND
    elif s is GetMessageStatus.NO_MATCHED_MESSAGE:
        code = ResponseCode.PULL_RETRY_IMMEDIATELY
    else:
        code = ResponseCode.PULL_OFFSET_MOVED
    if code is ResponseCode.PULL_OFFSET_MOVED and slave and not c.offset_check_in_slave:
        code, suggest = ResponseCode.PULL_RETRY_IMMEDIATELY, c.sub_broker_id
    return suggest, code


def off4(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    c = after.cfg.proto
    for i, o in obs:
        t = type(o)
        if t is PullSent:
            n = after.nodes[i]
            want_id = n.pull_from_which_node.get(o.queue_id, 0)
            found = find_in_subscribe(n.broker_addrs, want_id, False)
            if o.broker_id != want_id or o.addr != (found[0] if found else None):
                return False
            if o.commit != (found is not None and not found[1] and n.offset_table.get(o.queue_id, -1) > 0):
                return False
        elif t is CommitSent:
            addrs = after.nodes[i].broker_addrs
            found = find_in_subscribe(addrs, 0, True) or find_in_subscribe(addrs, 0, False)
            if o.addr != (found[0] if found else None):
                return False
        elif t is PullServed:
            b = after.nodes[i]
            suggest, code = expected_suggestion(c, b.broker_id != 0, o)
            if (o.suggest, o.code) != (suggest, code):
                return False
            if o.suggest_from_slave and o.status is not GetMessageStatus.FOUND:
                return False
    return True


# --- OFF-5: a slave never stores a pull's piggy-backed offset ---


def off5(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    slave = after.cfg.proto.brokers[1]
    for i, o in obs:
        t = type(o)
        if t is PullServed and after.cfg.ids[i] == slave and o.stored_commit != -1:
            return False
        if t is PullSent and o.addr == slave and o.commit:
            return False
    return True


# --- OFF-6: no reverse path: the master's offsets change only by commits to the master ---


def off6(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    m = 0
    b, a = before.nodes[m], after.nodes[m]
    if b.offset_table is a.offset_table or b.incarnation != a.incarnation or not after.alive[m]:
        return True  # unchanged, or the master crashed (the table is lost) or restarted (it loads its file)
    committed = {(o.queue_id, o.offset) for i, o in obs if i == m and type(o) is OffsetCommitted}
    old = before.nodes[m].offset_table.get(key_of()) or {}
    new = after.nodes[m].offset_table.get(key_of()) or {}
    if set(after.nodes[m].offset_table) - {key_of()} != set(before.nodes[m].offset_table) - {key_of()}:
        return False
    return all((q, v) in committed for q, v in new.items() if old.get(q) != v)


# --- measured ---


def measure(w: core.World) -> dict:
    """Measured quantities of one history, all scalars: messages consumed twice (by regression
    of the resume offset, or at-least-once: consumed but not committed when the queue changed
    hands), offset regressions by cause (docs/offsets.md), and the traffic behind them."""
    g, h = w.ghost, w.history
    out: dict = {
        "stored": sum(g.stored),
        "consumed_distinct": len(g.consumed),
        "unconsumed": sum(s - d for s, d in zip(g.stored, g.done)),
        "duplicates": g.duplicates,
        "duplicates_regression": g.duplicates_regression,
        "duplicates_at_least_once": g.duplicates - g.duplicates_regression,
        "regressions": len(g.regressions),
    }
    for code in REGRESSION_CODES:
        out[f"regressions_{code.replace('-', '_')}"] = sum(r.code == code for r in g.regressions)
    out["regressions_unexplained"] = sum(r.code is None for r in g.regressions)
    out["skips"] = len(g.skips)
    out["commits_to_slave"] = g.commits_to_slave
    out["slave_syncs"] = g.syncs
    out["crashes"] = h.crashes
    return out


def _broker_reads(w: core.World) -> tuple:
    return (w.nodes[0], w.nodes[1], w.ghost.done, w.ghost.skips)


PROPERTIES = [
    Property(id="OFF-1", protocol="offsets", kind="safety", holds=off1, explain=off1_explain, reads=_broker_reads,
             expected_when=off1_expected,
             statement="No skip: a consumer resumes a queue at or below the group's first unconsumed offset of it, "
                       "and no broker holds an offset above that."),
    Property(id="OFF-2", protocol="offsets", kind="expected", holds=lambda w: not w.ghost.regressions,
             expected_when=off2_expected, explain=off2_explain, reads=lambda w: (w.ghost.regressions,),
             statement="No regression: a consumer resumes a queue at or above the highest offset any broker has held "
                       "for it. Fails by design (slave sync putAll after the master returns, a master restart "
                       "losing unpersisted commits, commits only the slave took, a stale lower commit); the "
                       "duplicates it causes are measured. Also the rebalance race of at-least-once delivery: the "
                       "previous owner's commit reaches the broker after it answered the new owner's query."),
    Property(id="OFF-3", protocol="offsets", kind="safety", holds_step=off3,
             statement="Slave sync is putAll: after syncConsumerOffset, every topic@group the master has maps to the "
                       "master's queue table, every other key keeps the slave's, and no key appears from elsewhere."),
    Property(id="OFF-4", protocol="offsets", kind="safety", holds_step=off4,
             statement="Broker choice follows 4.9.4: a pull goes to findBrokerAddressInSubscribe(name, suggested id "
                       "or 0, false) and carries the offset only to a master; a commit goes to the master, else the "
                       "first address; a broker's suggestWhichBrokerId and response code are as PullMessageProcessor "
                       "writes them (always the master with slaveReadEnable=false; a slave still serves)."),
    Property(id="OFF-5", protocol="offsets", kind="safety", holds_step=off5,
             statement="A slave never stores the offset a pull carries, and a consumer never sends one to a slave."),
    Property(id="OFF-6", protocol="offsets", kind="safety", holds_step=off6,
             statement="No reverse path: the master's offset table changes only by commits it accepts (or its own "
                       "restart); nothing copies a slave's offsets to the master."),
] + offsets_decisions.PROPERTIES

register(PROPERTIES)
