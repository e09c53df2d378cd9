"""RocketMQ-on-DLedger properties (docs/properties.md: DCL-*), and the LOG properties again, over the
brokers' DLedger nodes.

Predicates read a world of the `dledger_commitlog` protocol: brokers, and the ghost of
reference_impl.dledger_commitlog.world (which extends the log world's, so the LOG
predicates and their causes apply unchanged). A DCL violation is expected when the
DLedger index behind it has a known cause in this history (spec.dledger_log: commit by
counting, an OS crash, a term led twice, a stale-compare truncation), or, for DCL-5, when
the producer retried the message after an answer RocketMQ gives for a write that may
still commit.
"""

from __future__ import annotations

from typing import Any

import attrs

from reference_impl import core, rocketmq
from reference_impl.dledger_commitlog import broker as bk
from reference_impl.dledger_commitlog import commitlog as cl
from reference_impl.dledger_log import store as st
from spec import dledger_commitlog_decisions
from spec import dledger_log as logspec
from spec import dledger_log_causes as logcauses
from spec.properties import Property, register

RETRIED = ("the producer retried {key} after {answer} (retryResponseCodes), and the attempt that got it "
           "was committed as well: at-least-once by design (DLedgerCommitLog maps WAIT_QUORUM_ACK_TIMEOUT "
           "to OS_PAGECACHE_BUSY, i.e. SYSTEM_ERROR, though the entry stays in the log)")


DUPLICATED = ("the network delivered the SEND of {key} twice (the world's duplicate fault), and the broker "
              "stores what it is sent: RocketMQ does not deduplicate by message key")


def _brokers(w: core.World) -> list[tuple[int, bk.Broker]]:
    k = len(w.cfg.proto.node.dledger.peers)
    return list(enumerate(w.nodes[:k]))


def _index_cause(w: core.World, index: int) -> str | None:
    return logcauses.cause(w, index) if index >= 0 else None


# A step property leaves its violation's description and cause for explain / expected_when.
_violated, _recall = logspec._violated, logspec._recall


# --- DCL-1: every PUT_OK message is readable at its offset on the new master ---


def unreadable(w: core.World, i: int) -> list[int]:
    """Offsets answered PUT_OK whose message broker i cannot read there, below its max offset."""
    b = w.nodes[i]
    s, ms = b.node.store, b.store
    top, low = cl.get_max_offset(s), cl.get_min_offset(ms, s)
    bad = []
    for offset, key in w.ghost.acked_offsets.items():
        if offset < low:
            continue  # an old file deleted by expiry (deleteExpiredFile)
        m = cl.get_message(ms, s, offset)
        if m is None or m.key != key or offset >= top:
            bad.append(offset)
    return sorted(bad)


def dcl1(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    for i, o in obs:
        if isinstance(o, bk.BecameMaster):
            bad = unreadable(after, i)
            if bad:
                causes = [_offset_cause(after, i, off) for off in bad]
                return _violated(after, f"{after.cfg.ids[i]} became master without PUT_OK messages at {bad[:8]}",
                                 causes[0] if all(causes) else None)
    return True


def _offset_cause(w: core.World, i: int, offset: int) -> str | None:
    index = w.ghost.put_ok_index.get(offset, -1)
    return _index_cause(w, index)


# --- DCL-2: acknowledged offsets are unique and increase in append order ---


def dcl2(w: core.World) -> bool:
    return not w.ghost.offset_conflicts and not w.ghost.order_violations


def dcl2_expected(w: core.World, event: Any = None) -> str | None:
    g = w.ghost
    offsets = list(g.offset_conflicts) + [o for _, o, _ in g.order_violations]
    causes = [_index_cause(w, g.put_ok_index.get(o, -1)) for o in offsets]
    return causes[0] if causes and all(causes) else None


def dcl2_explain(w: core.World) -> str:
    g = w.ghost
    parts = [f"offset {o} acked for {g.acked_offsets[o]} and then {list(ks)}" for o, ks in g.offset_conflicts.items()]
    parts += [f"{k} acked at {o}, appended after {f} was acked" for k, o, f in g.order_violations]
    return "; ".join(parts[:6])


# --- DCL-3: the old commitlog below dividedCommitlogOffset, DLedger above it, no hole ---


def dcl3_problem(w: core.World) -> str | None:
    for i, b in _brokers(w):
        ms, s = b.store, b.node.store
        old, divided = ms.old, ms.divided_offset
        if old is None or not old.sealed:
            continue
        node_id = w.cfg.ids[i]
        if old.wrote_pos != divided or divided % old.file_size:
            return f"{node_id}: old commitlog ends at {old.wrote_pos}, dividedCommitlogOffset is {divided}"
        sealed = w.ghost.sealed_old.get(node_id)
        if sealed is not None and not set(old.messages) <= set(sealed.messages):
            return f"{node_id}: the old commitlog changed after the upgrade"
        if old.messages:
            last = old.messages[-1]
            if last.phys_offset + last.length > divided or divided - old.file_size > last.phys_offset:
                return f"{node_id}: the old last file does not end at dividedCommitlogOffset {divided}"
        if s.entries and s.entries[0].pos < divided or s.min_pos < divided:
            return f"{node_id}: DLedger data below dividedCommitlogOffset {divided}"
        for m in old.messages:
            if cl.get_message(ms, s, m.phys_offset) != m:
                return f"{node_id}: offset {m.phys_offset} below dividedCommitlogOffset does not read the old message"
    return None


def dcl3(w: core.World) -> bool:
    return dcl3_problem(w) is None


# --- DCL-4: consume queue units point at their committed messages ---

_CHECKED: dict[tuple[int, int], tuple] = {}  # (slot, queue) -> (units, entries) last verified


def _unit_ok(w: core.World, b: bk.Broker, q: int, k: int, unit: tuple) -> bool:
    offset, size = unit
    m = cl.get_message(b.store, b.node.store, offset)
    if m is None or m.queue_id != q or m.queue_offset != k or m.length != size:
        return False
    if offset < b.store.divided_offset:
        return True  # the old commitlog's, dispatched before the upgrade
    e = cl._entry_at_pos(b.node.store, offset - st.BODY_OFFSET)
    return w.ghost.committed.get(e.index) == e


def _extends(old: tuple, new: tuple) -> bool:
    """`new` is `old` plus more at the end. Logs and consume queues are only ever rebuilt as a
    prefix of the old tuple plus new items, so the same object at both ends of `old` tells."""
    return old is new or (len(new) >= len(old) and (not old or (new[0] is old[0] and new[len(old) - 1] is old[-1])))


def cq_problem(w: core.World) -> tuple[int, int, int] | None:
    """(broker, queue, unit index) of a unit that does not point at its committed message."""
    for i, b in _brokers(w):
        if not w.alive[i]:
            continue
        entries = b.node.store.entries
        for q, units in b.store.consume_queues.items():
            last = _CHECKED.get((i, q))
            start = 0
            if last is not None and _extends(last[1], entries) and _extends(last[0], units):
                start = len(last[0])
            for k in range(start, len(units)):
                if not _unit_ok(w, b, q, k, units[k]):
                    return i, q, k
            _CHECKED[(i, q)] = (units, entries)
    return None


def dcl4(w: core.World) -> bool:
    return cq_problem(w) is None


def dcl4_expected(w: core.World, event: Any = None) -> str | None:
    p = cq_problem(w)
    if p is None:
        return None
    i, q, k = p
    offset = w.nodes[i].store.consume_queues[q][k][0]
    e = next((e for e in w.ghost.committed.values() if e.pos + st.BODY_OFFSET == offset), None)
    if e is None:
        return None
    return _index_cause(w, e.index) or logcauses.leader_held(w, i, [e]) or _stale_queue_table(w, q, k, e)


STALE_QUEUE_TABLE = (
    "{key} (index {index}) was put at {node} at {t} ms, before its DLedgerRoleChangeHandler's LEADER task ran "
    "recoverTopicQueueTable: a DLedger broker keeps its configured brokerRole ({role}) from start-up until "
    "changeToMaster, so it takes puts as soon as DLedger leads, with the topicQueueTable its start-up "
    "recovery built from consume queues dispatched only up to the committed position of that moment; "
    "{other} (index {other_index}) holds queue {q} offset {qo} as well, and ConsumeQueue appends a unit "
    "for queue offset 0 wherever the queue ends")


def _stale_queue_table(w: core.World, q: int, k: int, e: st.Entry) -> str | None:
    """The message at unit k carries the queue offset of an earlier committed message of its queue,
    and the broker that reserved it did so before its role handler recovered the table (DCL-4's
    RocketMQ 4.9.4 cause, docs/dledger-findings.md section 5). Configuring brokerRole SLAVE closes the window."""
    m = e.body
    if not isinstance(m, cl.Message) or m.queue_id != q or m.queue_offset == k:
        return None
    put = w.ghost.unrecovered_puts.get((e.pos + st.BODY_OFFSET, m.key))
    if put is None:
        return None
    other = next((o for o in sorted(w.ghost.committed.values(), key=lambda o: o.index)
                  if o.index < e.index and isinstance(o.body, cl.Message) and o.body.queue_id == q
                  and o.body.queue_offset == m.queue_offset), None)
    if other is None:
        return None
    return STALE_QUEUE_TABLE.format(key=m.key, index=e.index, node=put[0], t=f"{put[1]:,}",
                                    role=w.cfg.proto.broker.broker_role, other=other.body.key,
                                    other_index=other.index, q=q, qo=m.queue_offset)


def dcl4_explain(w: core.World) -> str:
    p = cq_problem(w)
    if p is None:
        return "see the trace"
    i, q, k = p
    offset = w.nodes[i].store.consume_queues[q][k][0]
    return f"{w.cfg.ids[i]}: queue {q} unit {k} points at offset {offset}, where its committed message is not"


# --- DCL-5 (expected): a message sent once is stored once ---


def duplicates(w: core.World) -> dict[str, frozenset]:
    return {k: v for k, v in w.ghost.committed_keys.items() if len(v) > 1}


def dcl5(w: core.World) -> bool:
    return not any(len(v) > 1 for v in w.ghost.committed_keys.values())


# DefaultMQProducer.retryResponseCodes (4.9.4): TOPIC_NOT_EXIST, SERVICE_NOT_AVAILABLE, SYSTEM_ERROR,
# NO_PERMISSION, NO_BUYER_ID, NOT_IN_CURRENT_UNIT; a failed RPC (no answer) is retried too
RETRY_RESPONSE_CODES = frozenset({17, 14, 1, 16, 204, 205})


def dcl5_expected(w: core.World, event: Any = None) -> str | None:
    """Expected only when each copy past the first has an attempt of its own to come from: a retry
    after an answer DefaultMQProducer retries on (or none), or a SEND the network duplicated."""
    causes = []
    for key, offsets in duplicates(w).items():
        retried = w.ghost.retries.get(key, ())
        if any(c is not None and c not in RETRY_RESPONSE_CODES for _, c in retried):
            return None  # a retry after an answer sendDefaultImpl does not retry on
        if key in w.ghost.duplicated_sends:
            causes.append(DUPLICATED.format(key=key))
            continue
        if not retried or len(offsets) > 1 + len(retried):
            return None  # more copies than attempts
        answers = ", ".join(f"attempt {a}: {rocketmq.ResponseCode(c).name if c is not None else 'no answer'}"
                            for a, c in retried)
        causes.append(RETRIED.format(key=key, answer=answers))
    return causes[0] if causes else None


def dcl5_explain(w: core.World) -> str:
    return "; ".join(f"{k} committed at offsets {sorted(v)}" for k, v in list(duplicates(w).items())[:4])


# --- DCL-6: broker ids follow DLedger ids ---


def dcl6(w: core.World) -> bool:
    for i, b in _brokers(w):
        if b.broker_role is rocketmq.BrokerRole.SLAVE and b.broker_id != bk.dledger_id(w.cfg.ids[i]):
            return False
        if b.broker_role is rocketmq.BrokerRole.SYNC_MASTER and b.broker_id != rocketmq.MASTER_ID:
            return False
    return True


# --- DCL-L: after faults stop, sends succeed again ---

DCL_L_BOUND_MS = 75_000  # an election (ELE-L 30 s) plus a route poll (30 s) plus the catch-up


def dcl_l(w: core.World) -> bool:
    h = w.history
    if not h.calm or w.ghost.first_send_after_calm_ms >= 0 or w.now - h.calm_at_ms <= DCL_L_BOUND_MS:
        return True
    return w.cfg.proto.producers == 0


STUCK_TAIL = ("{node} leads term {t} but its log ends in term {e}: the current-term commit rule of dledger_version "
              "fixed never commits that tail without an entry of term {t}, and DLedgerRoleChangeHandler waits for "
              "ledgerEndIndex == committedIndex before its broker takes any (enable_fast_advance_commit_index "
              "appends one)")


def dcl_l_expected(w: core.World, event: Any = None) -> str | None:
    log = w.cfg.proto.node.log
    if log.dledger_version != "fixed" or log.enable_fast_advance_commit_index:
        return None
    for i, b in _brokers(w):
        m, s = b.node.member, b.node.store
        if (w.alive[i] and m.role.value == "LEADER" and b.broker_role is rocketmq.BrokerRole.SLAVE
                and s.committed_index < s.end_index and s.end_term < m.curr_term):
            return STUCK_TAIL.format(node=w.cfg.ids[i], t=m.curr_term, e=s.end_term)
    return None


def dcl_l_explain(w: core.World) -> str:
    roles = ", ".join(f"{w.cfg.ids[i]}:{b.node.member.role.value}/{b.broker_role.value}" for i, b in _brokers(w))
    return f"no send acknowledged {w.now - w.history.calm_at_ms} ms after faults stopped ({roles})"


def measure(w: core.World) -> dict:
    g, h = w.ghost, w.history
    dups = duplicates(w)
    return {
        "sends_ok": g.sends_ok,
        "sends_failed": g.sends_failed,
        "retried_sends": len(g.retries),
        "duplicates": len(dups),
        "consumed": g.consumed,
        "put_results": dict(sorted(g.results.items())),
        "send_after_calm_ms": g.first_send_after_calm_ms - h.calm_at_ms
        if h.calm and g.first_send_after_calm_ms >= 0 else None,
        "max_term": max(b.node.member.curr_term for _, b in _brokers(w)),
        "crashes": h.crashes,
    }


def _broker_reads(w: core.World) -> tuple:
    """What DCL-3/4/6 read: the brokers, whether they are up, and the ghost."""
    return w.nodes[:len(w.cfg.proto.node.dledger.peers)] + (w.alive, w.ghost)


PROTOCOL = "dledger_commitlog"
LOG_PROPERTIES = [attrs.evolve(p, protocol=PROTOCOL) for p in logspec.PROPERTIES if p.id != "LOG-L"]

PROPERTIES = LOG_PROPERTIES + [
    Property(id="DCL-1", protocol=PROTOCOL, kind="safety", holds_step=dcl1,
             explain=lambda w: _recall(w)[0], expected_when=lambda w, e=None: _recall(w)[1],
             statement="Every PUT_OK message is readable at its returned physical offset (pos + BODY_OFFSET), "
                       "before and after the upgrade and across leader changes: a broker becoming master reads "
                       "each one there, below its max offset."),
    Property(id="DCL-2", protocol=PROTOCOL, kind="safety", holds=dcl2, expected_when=dcl2_expected,
             explain=dcl2_explain, reads=lambda w: (w.ghost.offset_conflicts, w.ghost.order_violations),
             statement="Acknowledged physical offsets are unique and increase in append order: a message "
                       "appended after another was acknowledged lands past it."),
    Property(id="DCL-3", protocol=PROTOCOL, kind="safety", holds=dcl3, explain=dcl3_problem, reads=_broker_reads,
             statement="Offsets below dividedCommitlogOffset read from the old commitlog, others from DLedger, "
                       "with no hole between them; after the upgrade nothing is written to the old commitlog."),
    Property(id="DCL-4", protocol=PROTOCOL, kind="safety", holds=dcl4, expected_when=dcl4_expected, reads=_broker_reads,
             explain=dcl4_explain,
             statement="Every consume queue unit of a live broker points at the message of that queue and queue "
                       "offset, an entry that was committed (dispatch covers the committed prefix only)."),
    Property(id="DCL-5", protocol=PROTOCOL, kind="expected", holds=dcl5, expected_when=dcl5_expected,
             explain=dcl5_explain, reads=lambda w: (w.ghost.committed_keys,),
             statement="A message the producer sent once (one send call) is committed at most once."),
    Property(id="DCL-6", protocol=PROTOCOL, kind="safety", holds=dcl6, reads=_broker_reads,
             statement="Broker ids follow DLedger ids: a SLAVE has brokerId = selfId digits + 1 (n0 -> 1), a "
                       "SYNC_MASTER has 0."),
    Property(id="DCL-L", protocol=PROTOCOL, kind="bounded", holds=dcl_l, explain=dcl_l_explain,
             expected_when=dcl_l_expected,
             statement=f"After faults stop, a producer's send is acknowledged SEND_OK within {DCL_L_BOUND_MS} ms."),
] + dledger_commitlog_decisions.PROPERTIES

register(PROPERTIES)
