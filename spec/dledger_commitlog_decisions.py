"""RocketMQ-on-DLedger's handler decisions, restated from RocketMQ 4.9.4's Java (docs/properties.md:
DCL-7..DCL-9), and its quiet tail (DCL-Q).

DCL-1..DCL-6 judge outcomes (a PUT_OK message readable, consume queue units right). A handler
that decides wrongly is often absorbed before an outcome shows it: a broker that turns master
too early or stays master as a candidate is corrected by the next role change, a put answered
with the wrong status is only a retried send. Each property here judges one decision on the
step that makes it, over (before, event, after, observations), written from the Java method
and branch it names and not from the reference's functions (which it must agree with):

- DCL-7 `DLedgerRoleChangeHandler#handle` and `BrokerController#changeToMaster` /
  `#changeToSlave`: the role tasks run in the order the member's role changes were submitted
  (one single-thread executor). CANDIDATE: `changeToSlave(id)` unless the broker is already
  SLAVE; FOLLOWER: `changeToSlave(id)`; LEADER: a loop that gives up (succ = false) as soon as
  `memberState.isLeader()` is false, leaves with succ = true when ledgerEndIndex == -1, or
  ledgerEndIndex == committedIndex and `dispatchBehindBytes() == 0`, and otherwise sleeps
  100 ms; on succ, `recoverTopicQueueTable` then `changeToMaster(SYNC_MASTER)`. So a broker
  turns master (SYNC_MASTER, brokerId 0) only at a step where its member is LEADER with that
  log, with topicQueueTable rebuilt from its consume queues; it turns SLAVE with brokerId =
  DLedgerCommitLog.id (selfId digits + 1; `changeToSlave` makes 0 into 1); its role and id
  change in no other way; and a tick that finds a LEADER task due leaves it only waiting
  100 ms on a member that still leads. (The Java task checks isLeader, not the term it was
  queued for: a task of an old term that finds its member leading again succeeds.)
- DCL-8 `DLedgerCommitLog#asyncPutMessage` (and SendMessageProcessor's role check): a SLAVE
  answers SERVICE_NOT_AVAILABLE and appends nothing; a master takes the queue offset from
  topicQueueTable under the put lock and, when handleAppend appended (pos != -1), raises it
  by one before the quorum; a put handleAppend did not append is OS_PAGECACHE_BUSY at once,
  whatever the future's code; else its status is the future's code mapped (SUCCESS -> PUT_OK;
  INCONSISTENT_LEADER, NOT_LEADER, LEADER_NOT_READY, DISK_FULL -> SERVICE_NOT_AVAILABLE;
  WAIT_QUORUM_ACK_TIMEOUT, LEADER_PENDING_FULL -> OS_PAGECACHE_BUSY; anything else
  UNKNOWN_ERROR), and a PUT_OK is answered only for the entry the leader has committed at that
  index, at its position + BODY_OFFSET.
- DCL-9 `ReputMessageService#doReput` with `DLedgerCommitLog#getMaxOffset` (committedPos):
  dispatch appends to a consume queue only units of messages below the committed position, in
  physical order, each at the message's own offset and size and in its own queue; it keeps
  every unit it built; reputFromOffset only moves forward and never past getMaxOffset; and a
  tick of the broker leaves no committed DLedger entry undispatched at reputFromOffset.
- DCL-Q (quiet tail): after faults stop, an entry a broker appends for a put while everything
  before it in its log is committed is committed within 3 x heartBeatTimeIntervalMs, unless
  its broker's member stopped leading the term it appended in (a leadership change: the
  entry may be truncated by the next leader).
"""

from __future__ import annotations

from typing import Any

from reference_impl import core, rocketmq
from reference_impl.core import network as net_mod
from reference_impl.core.events import Deliver, RpcFail, Tick
from reference_impl.dledger_commitlog import broker as bk
from reference_impl.dledger_commitlog import commitlog as cl
from reference_impl.dledger_log import entry_pusher as ep
from reference_impl.dledger_log import store as st
from reference_impl.election import records as el
from spec import bounds
from spec.properties import Property

PutMessageStatus = rocketmq.PutMessageStatus
BrokerRole = rocketmq.BrokerRole

# DLedgerCommitLog#asyncPutMessage's thenApply, by DLedgerResponseCode name
STATUS_OF_CODE = {
    "SUCCESS": PutMessageStatus.PUT_OK,
    "INCONSISTENT_LEADER": PutMessageStatus.SERVICE_NOT_AVAILABLE,
    "NOT_LEADER": PutMessageStatus.SERVICE_NOT_AVAILABLE,
    "LEADER_NOT_READY": PutMessageStatus.SERVICE_NOT_AVAILABLE,
    "DISK_FULL": PutMessageStatus.SERVICE_NOT_AVAILABLE,
    "WAIT_QUORUM_ACK_TIMEOUT": PutMessageStatus.OS_PAGECACHE_BUSY,
    "LEADER_PENDING_FULL": PutMessageStatus.OS_PAGECACHE_BUSY,
}
ROLE_POLL_MS = 100  # DLedgerRoleChangeHandler: Thread.sleep(100) between the LEADER task's checks
BODY_OFFSET = 48  # DLedgerEntry.BODY_OFFSET: the entry header before the message

_WHY: list = [None, ""]


def _wrong(after: core.World, why: str) -> bool:
    _WHY[0], _WHY[1] = after, why
    return False


def _why(w: core.World) -> str:
    return _WHY[1] if _WHY[0] is w else "see the trace"


def _ticked(world: core.World, event: Any, i: int, thread: str) -> bool:
    """Whether this step is a tick of broker i's thread `thread` (one of its BROKER_THREADS): the
    other threads of the process run their own loops and leave this one's work where it was."""
    return type(event) is Tick and bk.thread_names(world.cfg.proto.node, world.nodes[i])[event.thread] == thread


def _broker_stepped(before: core.World, event: Any) -> int:
    """The index of the broker whose threads or handlers ran in this step as the same process
    (a tick, a request or response delivered to it, a failed RPC of its), else -1."""
    kind = type(event)
    if kind is Tick:
        i = event.node
    elif kind is Deliver:
        env = net_mod.find(before.net, event.env)
        if env is None:
            return -1
        i = env.dst
    elif kind is RpcFail:
        rpc = net_mod.find_rpc(before.net, event.rpc)
        if rpc is None:
            return -1
        i = rpc.requester
    else:
        return -1
    brokers = len(before.cfg.proto.node.dledger.peers)
    return i if i < brokers and before.alive[i] else -1


def _max_offset(s: st.Store) -> int:
    """DLedgerCommitLog#getMaxOffset: committedPos when positive, else the data list's start, else 0."""
    if s.committed_pos > 0:
        return s.committed_pos
    return s.min_pos if s.min_pos > 0 else 0


def _dledger_id(self_id: str) -> int:
    """DLedgerCommitLog.id: Integer.parseInt(selfId.substring(1)) + 1."""
    return int(self_id[1:]) + 1


# --- DCL-7: DLedgerRoleChangeHandler's tasks and the role changes they make ---


def _caught_up(b: bk.Broker) -> bool:
    """The LEADER task's exit test: ledgerEndIndex == -1, or ledgerEndIndex == committedIndex and
    dispatchBehindBytes() (getMaxOffset() - reputFromOffset) == 0."""
    s = b.node.store
    return s.end_index == -1 or (s.end_index == s.committed_index and _max_offset(s) == b.store.reput_from)


def dcl7(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    i = _broker_stepped(before, event)
    if i < 0:
        return True
    b, a = before.nodes[i], after.nodes[i]
    mine = [o for j, o in obs if j == i]
    if b.role_tasks is a.role_tasks and (a.broker_role, a.broker_id) == (b.broker_role, b.broker_id) and not any(
            type(o) in (el.RoleChanged, bk.BecameMaster, bk.BecameSlave) for o in mine) and not _ticked(after, event, i, "DLedgerRoleChangeHandler"):
        return True
    name = after.cfg.ids[i]
    tasks = b.role_tasks + tuple((o.term, o.role) for o in mine if type(o) is el.RoleChanged)
    left = a.role_tasks
    if len(left) > len(tasks) or tasks[len(tasks) - len(left):] != left:
        return _wrong(after, f"{name}'s role tasks {left} are not what is left of {tasks} run in order")
    ran = tasks[:len(tasks) - len(left)]
    m = a.node.member
    leading, ready = m.role is el.Role.LEADER, _caught_up(a)
    role, broker_id, want = b.broker_role, b.broker_id, []
    for term, task in ran:
        if task is el.Role.LEADER:
            if not leading:
                continue  # succ = false: the member no longer leads
            if not ready:
                s = a.node.store
                return _wrong(after, f"{name}'s LEADER task (term {term}) finished while its log was not caught up "
                                     f"(ledgerEndIndex {s.end_index}, committedIndex {s.committed_index}, reput at "
                                     f"{a.store.reput_from} of {_max_offset(s)})")
            role, broker_id = BrokerRole.SYNC_MASTER, rocketmq.MASTER_ID
            want.append(("master", m.curr_term))
        elif task is el.Role.FOLLOWER or role is not BrokerRole.SLAVE:
            role, broker_id = BrokerRole.SLAVE, _dledger_id(m.self_id) or 1
            want.append(("slave", broker_id))
    got = [("master", o.term) if type(o) is bk.BecameMaster else ("slave", o.broker_id) for o in mine
           if type(o) in (bk.BecameMaster, bk.BecameSlave)]
    if got != want:
        return _wrong(after, f"{name} ran role tasks {ran} as {m.role.value} of term {m.curr_term} (caught up: "
                             f"{ready}) and changed role {got}; DLedgerRoleChangeHandler makes {want}")
    if (a.broker_role, a.broker_id) != (role, broker_id):
        return _wrong(after, f"{name} is {a.broker_role.name} with brokerId {a.broker_id} after role tasks {ran}; "
                             f"they leave it {role.name} with brokerId {broker_id}")
    if any(kind == "master" for kind, _ in want):
        rebuilt = {q: len(units) for q, units in a.store.consume_queues.items()}
        if dict(a.store.topic_queue_table.items()) != rebuilt:
            return _wrong(after, f"{name} turned master with topicQueueTable {dict(a.store.topic_queue_table.items())}"
                                 f", not recovered from its consume queues ({rebuilt})")
    if left and _ticked(after, event, i, "DLedgerRoleChangeHandler"):
        term, task = left[0]
        due = bool(ran) or not b.role_tasks or b.role_wait_until <= after.now
        if task is not el.Role.LEADER:
            return _wrong(after, f"a tick of {name} left its {task.value} task (term {term}) unrun")
        if due and not (leading and not ready and a.role_wait_until == after.now + ROLE_POLL_MS):
            return _wrong(after, f"{name}'s LEADER task (term {term}) was due and neither gave up nor finished nor "
                                 f"slept {ROLE_POLL_MS} ms (member {m.role.value}, caught up: {ready}, next check at "
                                 f"{a.role_wait_until})")
    return True


# --- DCL-8: a put's status is its future's code, mapped; PUT_OK only for a committed entry ---


def _entry_at_pos(s: st.Store, pos: int) -> st.Entry | None:
    entries = s.entries
    lo, hi = 0, len(entries) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        p = entries[mid].pos
        if p == pos:
            return entries[mid]
        if p < pos:
            lo = mid + 1
        else:
            hi = mid - 1
    return None


def _new_send(before: core.World, event: Any, i: int) -> bk.SendMessageRequest | None:
    if type(event) is not Deliver:
        return None
    env = net_mod.find(before.net, event.env)
    if env is None or env.dst != i or env.reply or type(env.msg) is not bk.SendMessageRequest:
        return None
    return env.msg


def dcl8(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    i = _broker_stepped(before, event)
    if i < 0:
        return True
    send = _new_send(before, event, i)
    if send is None and not obs:
        return True
    name = after.cfg.ids[i]
    b, a = before.nodes[i], after.nodes[i]
    mine = [o for j, o in obs if j == i]
    if send is not None:
        appended = [o for o in mine if type(o) is bk.Appended and o.key == send.key]
        answered = [o for o in mine if type(o) is bk.PutResult and o.key == send.key]
        reserved = b.store.topic_queue_table.get(send.queue_id, 0)
        table = a.store.topic_queue_table.get(send.queue_id, 0)
        if b.broker_role is BrokerRole.SLAVE:
            if appended or a.node.store.end_index != b.node.store.end_index or len(answered) != 1 or \
                    answered[0].status is not PutMessageStatus.SERVICE_NOT_AVAILABLE:
                return _wrong(after, f"{name} (SLAVE) took {send.key}: appended {bool(appended)}, answered "
                                     f"{[o.status.name for o in answered]}; a SLAVE answers SERVICE_NOT_AVAILABLE")
        elif appended:
            e = _entry_at_pos(a.node.store, appended[0].offset - BODY_OFFSET)
            if e is None or not isinstance(e.body, cl.Message) or e.body.key != send.key or \
                    e.body.queue_offset != reserved or e.body.queue_id != send.queue_id or table != reserved + 1:
                return _wrong(after, f"{name} appended {send.key} at {appended[0].offset} with queue offset "
                                     f"{e.body.queue_offset if e is not None and isinstance(e.body, cl.Message) else '?'}"
                                     f" and topicQueueTable {table}; the put lock takes {reserved} and leaves "
                                     f"{reserved + 1}")
        elif len(answered) != 1 or answered[0].status is not PutMessageStatus.OS_PAGECACHE_BUSY or \
                answered[0].offset >= 0 or table != reserved:
            return _wrong(after, f"{name} did not append {send.key} and answered "
                                 f"{[o.status.name for o in answered]} with topicQueueTable {reserved} -> {table}; "
                                 f"asyncPutMessage answers OS_PAGECACHE_BUSY at once (pos -1) and reserves nothing")
    codes = {(o.ref[2].key, o.index): o for o in mine if type(o) is ep.AppendResult and isinstance(o.ref, tuple)
             and o.ref[0] == "put"}
    for o in mine:
        if type(o) is not bk.PutResult:
            continue
        r = codes.get((o.key, o.index))
        if r is None or o.offset < 0:
            if send is None or o.key != send.key:
                return _wrong(after, f"{name} answered {o.key} {o.status.name} with no append future completing")
            continue  # the immediate answers (a SLAVE's, pos -1: whatever the future's code), judged above
        want = STATUS_OF_CODE.get(el.Code(r.code).name, PutMessageStatus.UNKNOWN_ERROR)
        if o.status is not want:
            return _wrong(after, f"{o.key}'s append future completed {el.Code(r.code).name}, answered "
                                 f"{o.status.name} (asyncPutMessage maps it to {want.name})")
        if want is PutMessageStatus.PUT_OK:
            s = a.node.store
            e = s.entries[o.index - s.begin_index] if s.begin_index <= o.index <= s.end_index else None
            if e is None or o.index > s.committed_index or e.pos + BODY_OFFSET != o.offset or \
                    not isinstance(e.body, cl.Message) or e.body.key != o.key:
                return _wrong(after, f"{o.key} answered PUT_OK at offset {o.offset} (index {o.index}), which "
                                     f"{name} has not committed there (committedIndex {s.committed_index})")
    return True


# --- DCL-9: dispatch covers committed messages only, in order, and keeps up ---


def _read(b: bk.Broker, phys: int) -> cl.Message | None:
    """DLedgerCommitLog#getMessage: the old commitlog below dividedCommitlogOffset, else the entry at phys - 48."""
    ms = b.store
    if phys < ms.divided_offset:
        return next((m for m in (ms.old.messages if ms.old is not None else ()) if m.phys_offset == phys), None)
    e = _entry_at_pos(b.node.store, phys - BODY_OFFSET)
    return e.body if e is not None and isinstance(e.body, cl.Message) else None


def _first_entry_from(s: st.Store, at: int) -> st.Entry | None:
    """The first entry at or after position `at` (a blank record at a file's end rolls to the next file)."""
    entries = s.entries
    if not entries or entries[-1].pos < at:
        return None
    lo, hi = 0, len(entries) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if entries[mid].pos < at:
            lo = mid + 1
        else:
            hi = mid
    return entries[lo]


def dcl9(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    i = _broker_stepped(before, event)
    if i < 0:
        return True
    b, a = before.nodes[i], after.nodes[i]
    ms0, ms1 = b.store, a.store
    if ms0 is ms1 and not _ticked(after, event, i, "ReputMessageService"):
        return True
    name = after.cfg.ids[i]
    s = a.node.store
    top = _max_offset(s)
    if ms1.reput_from != ms0.reput_from and (ms1.reput_from < ms0.reput_from or ms1.reput_from > top):
        return _wrong(after, f"{name}'s reputFromOffset moved {ms0.reput_from} -> {ms1.reput_from} (getMaxOffset {top})")
    if ms1.consume_queues is not ms0.consume_queues:
        for q, old in ms0.consume_queues.items():
            if ms1.consume_queues.get(q, ())[:len(old)] != old:
                return _wrong(after, f"{name}'s consume queue {q} lost units it had built")
        for q, units in ms1.consume_queues.items():
            old = ms0.consume_queues.get(q, ())
            last = old[-1][0] if old else -1
            for phys, size in units[len(old):]:
                msg = _read(a, phys)
                if msg is None or msg.queue_id != q or msg.length != size or phys <= last or phys + size > top:
                    return _wrong(after, f"{name} dispatched unit ({phys}, {size}) into consume queue {q} (last unit at "
                                         f"{last}, getMaxOffset {top}): "
                                         f"{'no message there' if msg is None else f'queue {msg.queue_id}, size {msg.length}'}")
                last = phys
    if _ticked(after, event, i, "ReputMessageService") and ms1.reput_from >= ms1.divided_offset:
        e = _first_entry_from(s, max(ms1.reput_from, s.min_pos))
        if e is not None and e.pos + e.size <= top:
            return _wrong(after, f"a tick of {name} left the committed entry {e.index} (pos {e.pos}, ends "
                                 f"{e.pos + e.size} <= getMaxOffset {top}) undispatched at reputFromOffset "
                                 f"{ms1.reput_from}")
    return True


# --- DCL-Q: in the quiet tail, an append of a caught-up leader commits within a few heartbeats ---


def dcl_q_bound_ms(w: core.World) -> int:
    """3 x heartBeatTimeIntervalMs (DLedger's default 2000 ms, spec/bounds.py, or the user's)."""
    return 3 * bounds.setting(w, "heart_beat_time_interval_ms")


def _late_appends(w: core.World) -> list[tuple]:
    g = w.ghost
    if not (g.tail_appends or g.tail_slowest):
        return []
    bound = dcl_q_bound_ms(w)
    late = [(key, offset, at, node, term, w.now - at) for (key, offset), (at, node, term) in g.tail_appends.items()
            if w.now - at > bound]
    if g.tail_slowest and g.tail_slowest[0] > bound:
        ms, key, offset, at, node, term = g.tail_slowest
        late.append((key, offset, at, node, term, ms))
    return late


def dcl_q(w: core.World) -> bool:
    return not _late_appends(w)


def dcl_q_explain(w: core.World) -> str:
    return "; ".join(f"{key} appended by {node} (term {term}) at {at} ms, offset {offset}: not committed within "
                     f"{dcl_q_bound_ms(w)} ms ({ms} ms)" for key, offset, at, node, term, ms in _late_appends(w)[:3])


def dcl_q_expected(w: core.World, event: Any = None) -> str | None:
    """Expected only when every late entry's broker stopped leading the term it appended in."""
    causes = []
    index = {node_id: k for k, node_id in enumerate(w.cfg.ids)}
    for key, offset, at, node, term, _ in _late_appends(w):
        m = w.nodes[index[node]].node.member
        if w.alive[index[node]] and m.role is el.Role.LEADER and m.curr_term == term:
            return None
        causes.append(f"{node} stopped leading term {term} after it appended {key} (a leadership change in the quiet "
                      f"tail; the next leader may truncate the entry)")
    return "; ".join(dict.fromkeys(causes)) or None


PROPERTIES = [
    Property(id="DCL-7", protocol="dledger_commitlog", kind="safety", holds_step=dcl7, explain=_why,
             statement="DLedgerRoleChangeHandler#handle, BrokerController#changeToMaster/#changeToSlave: role tasks "
                       "run in submission order; CANDIDATE changes to SLAVE unless already SLAVE, FOLLOWER changes to "
                       "SLAVE (brokerId = selfId digits + 1); LEADER gives up when the member no longer leads, turns "
                       "master (SYNC_MASTER, brokerId 0, topicQueueTable recovered from the consume queues) only "
                       "while its member is LEADER with ledgerEndIndex -1 or ledgerEndIndex == committedIndex and "
                       "nothing left to dispatch, and otherwise checks again 100 ms later; role and id change in no "
                       "other way."),
    Property(id="DCL-8", protocol="dledger_commitlog", kind="safety", holds_step=dcl8, explain=_why,
             statement="DLedgerCommitLog#asyncPutMessage: a SLAVE answers SERVICE_NOT_AVAILABLE and appends nothing; "
                       "a master takes the queue offset from topicQueueTable and raises it by one once appended; a "
                       "put not appended (pos -1) is OS_PAGECACHE_BUSY at once; else its status is its append "
                       "future's code mapped (SUCCESS PUT_OK; INCONSISTENT_LEADER, NOT_LEADER, LEADER_NOT_READY, "
                       "DISK_FULL SERVICE_NOT_AVAILABLE; WAIT_QUORUM_ACK_TIMEOUT, LEADER_PENDING_FULL "
                       "OS_PAGECACHE_BUSY; else UNKNOWN_ERROR), and PUT_OK only for the entry the leader committed "
                       "at that index, at its position + BODY_OFFSET."),
    Property(id="DCL-9", protocol="dledger_commitlog", kind="safety", holds_step=dcl9, explain=_why,
             statement="ReputMessageService#doReput over DLedgerCommitLog#getMaxOffset (committedPos): consume "
                       "queues gain only units of messages that end at or below the committed position, in physical "
                       "order, at the message's own offset, size and queue; no unit is lost; reputFromOffset only "
                       "moves forward and never past getMaxOffset; a tick of the broker leaves no committed entry "
                       "undispatched at reputFromOffset."),
    Property(id="DCL-Q", protocol="dledger_commitlog", kind="bounded", holds=dcl_q, explain=dcl_q_explain,
             expected_when=dcl_q_expected,
             statement="After faults stop, an entry a broker appends for a put while everything before it in its log "
                       "is committed is committed within 3 x heartBeatTimeIntervalMs (6 s), unless its broker's "
                       "member stopped leading the term it appended in."),
]
