"""The HA handlers' decisions, restated from RocketMQ 4.9.4's Java (docs/properties.md: HA-9..HA-13).

HA-1..HA-8 judge outcomes (a slave's bytes, a producer's answer). A handler that decides
wrongly is often absorbed before an outcome shows it: a connection closed for no reason
reconnects, a put answered FLUSH_SLAVE_TIMEOUT too early is only a failed send. Each
property here judges one decision on the step that makes it, over (before, event, after,
observations), written from the Java method and branch it names and not from the
reference's functions (which it must agree with):

- HA-9 `HAConnection.ReadSocketService#processReadEvent`: a slave's report is taken
  (slaveAckOffset, the first one also slaveRequestOffset, and notifyTransferSome raises
  push2SlaveMaxOffset to it) unless the version range-checks it and it lies above the
  master's max offset; then the connection closes and push2SlaveMaxOffset stays.
- HA-10 `ReadSocketService#run`: the master closes a connection only when a report is refused
  (HA-9), when no read came for more than haHousekeepingInterval, or when the socket broke
  (the peer closed it or reset); and it does close one idle for that long within a select.
- HA-11 `CommitLog#submitReplicaRequest`, `HAService#isSlaveOK`,
  `GroupTransferService#doWaitTransfer`: a put's replica status. ASYNC_MASTER: PUT_OK at once.
  SYNC_MASTER: SLAVE_NOT_AVAILABLE at once exactly when no connection exists or the put
  ends haSlaveFallbehindMax or more past push2SlaveMaxOffset; else it waits, and is
  PUT_OK only when push2SlaveMaxOffset covers the message's end, FLUSH_SLAVE_TIMEOUT only
  when it does not and the wait ran out (slaveTimeout from the put; 4.9.0-4.9.2 wait
  syncFlushTimeout from when GroupTransferService reaches the request, so at least that from
  the put). `fixed` (the model's repair): covered by a live connection that started at or
  below the message and acked past its end. Only a put the master appended is judged:
  asyncPutMessage calls submitReplicaRequest after a successful append only, and the put's end
  is its Appended record. A SEND delivered again after its RPC closed is put again, but the
  network discards its answer: that put's at-once status is unseen, and whether it waits is
  what is judged. A SEND delivered twice makes two puts of one rpc: each is matched to its
  own answer by its offset.
- HA-12 `CommitLog#submitFlushRequest`, `GroupCommitService#doCommit`: a put's flush status.
  ASYNC_FLUSH: PUT_OK at once; SYNC_FLUSH: PUT_OK only when flushedWhere covers the
  message's end, FLUSH_DISK_TIMEOUT only when it does not.
- HA-13 `HAService.HAClient#run` / `#dispatchReadRequest`: a slave closes its connection only
  for a frame whose offset is not its max offset (a non-zero one), a report it could not
  write whole, no write for more than haHousekeepingInterval, or a broken socket.

Bounds (slaveTimeout, syncFlushTimeout, haHousekeepingInterval, haSlaveFallbehindMax) are
RocketMQ's defaults from spec/bounds.py, or the user's overrides.
"""

from __future__ import annotations

from typing import Any

from reference_impl import core
from reference_impl.core import network as net_mod
from reference_impl.ha import commit_log as st
from reference_impl.ha.ghost import master_index
from reference_impl.ha.records import AckRead, Appended, FrameRejected, Reported, SendMessage, SendResult
from reference_impl.rocketmq import BrokerRole, PutMessageStatus
from spec import bounds
from spec.properties import Property

PUT_OK = PutMessageStatus.PUT_OK
FLUSH_SLAVE_TIMEOUT = PutMessageStatus.FLUSH_SLAVE_TIMEOUT
FLUSH_DISK_TIMEOUT = PutMessageStatus.FLUSH_DISK_TIMEOUT
SLAVE_NOT_AVAILABLE = PutMessageStatus.SLAVE_NOT_AVAILABLE

_WHY: list = [None, ""]  # (world after, why) of the last decision found wrong: explain reads it


def _wrong(after: core.World, why: str) -> bool:
    _WHY[0], _WHY[1] = after, why
    return False


def _why(w: core.World) -> str:
    return _WHY[1] if _WHY[0] is w else "see the trace"


def _same_master(before: core.World, after: core.World) -> int:
    """The master's index if it runs before and after the step as one process, else -1."""
    m = master_index(after)
    if not (before.alive[m] and after.alive[m]) or before.nodes[m].incarnation != after.nodes[m].incarnation:
        return -1
    return m


def _conn(b: Any, conn_id: int) -> Any:
    for x in b.conns:
        if x.id == conn_id:
            return x
    return None


def _checks_report(version: str, first: bool) -> bool:
    """Whether ReadSocketService range-checks this report: from 4.9.3 on every report but the
    connection's first (#3015, PR #3016); 4.9.0-4.9.2 none; `fixed` every one."""
    return version == "fixed" or (version == "4.9.4" and not first)


# --- HA-9: a report is taken, or refused as the version says ---


def ha9(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    if not obs:
        return True
    m = _same_master(before, after)
    if m < 0:
        return True
    b, a = before.nodes[m], after.nodes[m]
    version = after.cfg.proto.version
    for i, o in obs:
        if i != m or type(o) is not AckRead:
            continue
        was = _conn(b, o.conn)
        if was is None:
            return _wrong(after, f"the master read report {o.ack} on connection {o.conn}, which it did not hold")
        first = was.slave_request_offset < 0
        top = st.max_offset(b.store)
        refuse = _checks_report(version, first) and o.ack > top
        if (o.first, o.master_max, o.accepted, o.start) != (first, top, not refuse, was.transfer_start):
            return _wrong(after, f"report {o.ack} on connection {o.conn} observed as first={o.first}, master max "
                                 f"{o.master_max}, accepted={o.accepted}; it was first={first}, the master's max "
                                 f"offset {top}, so {'refused' if refuse else 'taken'} ({version})")
        now = _conn(a, o.conn)
        if refuse:
            if now is not None or a.push2slave_max != b.push2slave_max:
                return _wrong(after, f"report {o.ack} above the master's max offset {top} on connection {o.conn} "
                                     f"({version} checks it) did not close the connection or moved "
                                     f"push2SlaveMaxOffset ({b.push2slave_max} -> {a.push2slave_max})")
            continue
        want = max(b.push2slave_max, o.ack)
        if now is None or now.slave_ack_offset != o.ack or a.push2slave_max != want or (
                first and now.slave_request_offset != o.ack):
            return _wrong(after, f"report {o.ack} on connection {o.conn} (first={first}, master max {top}) was not "
                                 f"taken as slaveAckOffset{' and slaveRequestOffset' if first else ''} with "
                                 f"push2SlaveMaxOffset {want} (got {a.push2slave_max})")
    return True


# --- HA-10: when the master closes a connection ---


def ha10(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    m = _same_master(before, after)
    if m < 0:
        return True
    b, a = before.nodes[m], after.nodes[m]
    housekeeping = bounds.setting(after, "ha_housekeeping_interval")
    if b.conns is not a.conns:
        refused = {o.conn for i, o in obs if i == m and type(o) is AckRead and not o.accepted}
        kept = {x.id for x in a.conns}
        for x in b.conns:
            if x.id in kept or x.id in refused:
                continue
            if type(event).__name__ == "Reset" and event.node == m and event.conn == x.id:
                continue  # the socket broke: processReadEvent's read fails
            if type(event) is core.Tick and event.node == m and after.now - x.last_read_ms > housekeeping:
                continue  # ReadSocketService#run: interval > haHousekeepingInterval
            return _wrong(after, f"the master closed connection {x.id} of {x.slave}: no refused report, no broken "
                                 f"socket, and its last read was {after.now - x.last_read_ms} ms ago "
                                 f"(haHousekeepingInterval {housekeeping})")
    for x in a.conns:
        if after.now - x.last_read_ms > housekeeping + bounds.SELECT_MS:
            return _wrong(after, f"connection {x.id} of {x.slave} had no read for {after.now - x.last_read_ms} ms and "
                                 f"is still open (haHousekeepingInterval {housekeeping} + one select)")
    return True


# --- HA-11, HA-12: the put's replica and flush statuses ---


def slave_ok(c: Any, b: Any, end: int, fallbehind: int) -> bool:
    """HAService#isSlaveOK(masterPutWhere): connectionCount > 0 and the put within
    haSlaveFallbehindMax of push2SlaveMaxOffset (`fixed`: of the best ack of a connection)."""
    if not b.conns:
        return False
    best = max(x.slave_ack_offset for x in b.conns) if c.version == "fixed" else b.push2slave_max
    return end - best < fallbehind


def transferred(c: Any, b: Any, offset: int, end: int) -> bool:
    """GroupTransferService#doWaitTransfer's test: push2SlaveMaxOffset >= nextOffset (`fixed`:
    a live connection whose transfer started at or below the message acked past its end)."""
    if c.version == "fixed":
        return any(0 <= x.transfer_start <= offset and x.slave_ack_offset >= end for x in b.conns)
    return b.push2slave_max >= end


def _put_replies(before: core.World, after: core.World, m: int) -> dict[tuple[int, int], SendResult]:
    """(rpc id, offset) -> the SendResult the master put in flight at this step. A SEND the network
    delivered twice made two puts of one rpc, each with its own request and future: the answer's
    offset (the put's wroteOffset) tells them apart."""
    first = before.net.next_id
    out = {}
    for env in reversed(after.net.flight):
        if env.id < first:
            break
        if env.reply and env.src == m and type(env.msg) is SendResult:
            out[env.rpc, env.msg.offset] = env.msg
    return out


def _replica_wait_ms(after: core.World) -> int:
    """The least time from the put to a FLUSH_SLAVE_TIMEOUT: slaveTimeout (the request's deadline,
    from 4.9.3 on), or syncFlushTimeout counted from when GroupTransferService reaches it (4.9.0-4.9.2)."""
    key = "sync_flush_timeout" if after.cfg.proto.version == "4.9.2" else "slave_timeout"
    return bounds.setting(after, key)


def _new_put(before: core.World, event: Any, m: int) -> Any:
    """The SEND_MESSAGE request this step delivers to the master, if any (its envelope)."""
    if type(event) is not core.Deliver:
        return None
    env = net_mod.find(before.net, event.env)
    if env is None or env.dst != m or env.reply or type(env.msg) is not SendMessage:
        return None
    return env


def _this_put(b: Any, a: Any, rpc: int) -> Any:
    """The put this step's SEND_MESSAGE added to the master's pending puts: a SEND the network
    delivered twice carries the same rpc as the put its first delivery made."""
    return next((p for p in reversed(a.puts) if p.rpc == rpc and p not in b.puts), None)


def ha11(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    m = _same_master(before, after)
    if m < 0:
        return True
    b, a = before.nodes[m], after.nodes[m]
    env = _new_put(before, event, m)
    if b.puts is a.puts and env is None:
        return True
    c = after.cfg.proto
    sync_master = c.store.broker_role is BrokerRole.SYNC_MASTER
    replies = _put_replies(before, after, m) if after.net.next_id != before.net.next_id else {}
    if env is not None and b.role is not BrokerRole.SLAVE:
        put = _this_put(b, a, env.rpc)
        appended = next((o for i, o in obs if i == m and type(o) is Appended), None)
        answer = replies.get((env.rpc, appended.offset if appended is not None else -1))
        if appended is None:
            # asyncPutMessage returned before submitReplicaRequest (a store check or the append failed):
            # the put has no replica decision, so it neither waits for GroupTransferService nor carries
            # a replica status
            if put is not None or (answer is not None and answer.status in (SLAVE_NOT_AVAILABLE, FLUSH_SLAVE_TIMEOUT)):
                return _wrong(after, "a put the master did not append got a replica decision")
            return _settled(before, after, b, a, replies)
        end = appended.offset + appended.size  # submitReplicaRequest's wroteOffset + wroteBytes
        if sync_master:
            ok = slave_ok(c, b, end, bounds.setting(after, "ha_slave_fallbehind_max"))
            if ok and (put is None or put.replica is not None):
                return _wrong(after, f"a SYNC_MASTER put ending at {end} was not queued for GroupTransferService "
                                     f"although isSlaveOK held ({len(b.conns)} connection(s), push2SlaveMaxOffset "
                                     f"{b.push2slave_max})")
            # a SEND delivered again after its RPC closed: the network discards the master's answer
            # (NettyRemotingAbstract#processResponseCommand finds no ResponseFuture), so a put that did
            # not wait is all that shows the decision
            unanswerable = put is None and answer is None and net_mod.find_rpc(before.net, env.rpc) is None
            if not ok and not ((put is not None and put.replica is SLAVE_NOT_AVAILABLE)
                               or (answer is not None and answer.status is SLAVE_NOT_AVAILABLE) or unanswerable):
                return _wrong(after, f"a SYNC_MASTER put ending at {end} was not answered SLAVE_NOT_AVAILABLE "
                                     f"although isSlaveOK failed ({len(b.conns)} connection(s), "
                                     f"push2SlaveMaxOffset {b.push2slave_max})")
        elif (put is not None and put.replica is not PUT_OK) or (answer is not None and answer.status in (
                SLAVE_NOT_AVAILABLE, FLUSH_SLAVE_TIMEOUT)):
            return _wrong(after, f"an ASYNC_MASTER put ending at {end} got a replica status other than PUT_OK")
    return _settled(before, after, b, a, replies)


def _settled(before: core.World, after: core.World, b: Any, a: Any, replies: dict) -> bool:
    """HA-11's second half: the waiting puts GroupTransferService answered at this step."""
    c = after.cfg.proto
    now_puts = {(p.rpc, p.offset): p for p in a.puts}  # a SEND delivered twice: two puts of one rpc
    for p in b.puts:
        if p.replica is not None:
            continue
        q = now_puts.get((p.rpc, p.offset))
        answer = replies.get((p.rpc, p.offset))
        if q is not None:
            r = q.replica
        elif answer is not None:
            r = PUT_OK if answer.status in (PUT_OK, FLUSH_DISK_TIMEOUT) else answer.status
        elif net_mod.find_rpc(before.net, p.rpc) is None:
            continue  # the producer gave up: the answer went nowhere, and with it the status
        else:
            return _wrong(after, f"the put of {p.msg_id} was dropped without an answer")
        if r is None:
            continue
        end = p.offset + p.size
        ok = transferred(c, b, p.offset, end)  # GroupTransferService runs before the tick's housekeeping
        if r is PUT_OK and not ok:
            return _wrong(after, f"GroupTransferService answered {p.msg_id} (end {end}) PUT_OK with "
                                 f"push2SlaveMaxOffset {b.push2slave_max}" + (
                                     ", and no live connection that started at or below it acked its end"
                                     if c.version == "fixed" else ", below its end"))
        if r is FLUSH_SLAVE_TIMEOUT:
            put_at = after.ghost.appended_at.get(p.offset, -1)
            wait = _replica_wait_ms(after)
            if ok or put_at < 0 or after.now < put_at + wait:
                return _wrong(after, f"GroupTransferService answered {p.msg_id} (end {end}) FLUSH_SLAVE_TIMEOUT at "
                                     f"{after.now} ms, put at {put_at} ms (wait {wait} ms), transfer "
                                     f"{'done' if ok else 'not done'}")
        elif r is not PUT_OK:
            return _wrong(after, f"a waiting SYNC_MASTER put of {p.msg_id} got {r.name}")
    return True


def ha12(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    m = _same_master(before, after)
    if m < 0:
        return True
    b, a = before.nodes[m], after.nodes[m]
    env = _new_put(before, event, m)
    if b.puts is a.puts and env is None:
        return True
    from_sync_flush = after.cfg.proto.store.flush_disk_type.name == "SYNC_FLUSH"
    replies = _put_replies(before, after, m) if after.net.next_id != before.net.next_id else {}
    if env is not None and b.role is not BrokerRole.SLAVE:
        put = _this_put(b, a, env.rpc)
        appended = next((o for i, o in obs if i == m and type(o) is Appended), None)
        answer = replies.get((env.rpc, appended.offset if appended is not None else -1))
        if appended is None:  # asyncPutMessage returned before submitFlushRequest: no flush decision
            if put is not None:
                return _wrong(after, "a put the master did not append waits for GroupCommitService")
        elif from_sync_flush and (answer is not None or (put is not None and put.flush is not None)):
            return _wrong(after, "a SYNC_FLUSH put's flush status was decided before GroupCommitService ran")
        if not from_sync_flush and put is not None and put.flush is not PUT_OK:
            return _wrong(after, "an ASYNC_FLUSH put's flush status was not PUT_OK at once")
    flushed = a.store.flushed
    now_puts = {(p.rpc, p.offset): p for p in a.puts}  # a SEND delivered twice: two puts of one rpc
    for p in b.puts:
        if p.flush is not None:
            continue
        q = now_puts.get((p.rpc, p.offset))
        answer = replies.get((p.rpc, p.offset))
        if q is not None:
            f = q.flush
        elif answer is not None and (p.replica is PUT_OK or answer.status in (PUT_OK, FLUSH_DISK_TIMEOUT)):
            f = answer.status  # the replica status is PUT_OK, so the answer is the flush status
        else:
            continue  # answered with a replica status that hides the flush status
        end = p.offset + p.size
        if f is PUT_OK and flushed < end:
            return _wrong(after, f"GroupCommitService answered {p.msg_id} (end {end}) PUT_OK with flushedWhere "
                                 f"{flushed}")
        if f is FLUSH_DISK_TIMEOUT and flushed >= end:
            return _wrong(after, f"GroupCommitService answered {p.msg_id} (end {end}) FLUSH_DISK_TIMEOUT with "
                                 f"flushedWhere {flushed}")
    return True


# --- HA-13: when a slave closes its connection ---


def ha13(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    housekeeping = bounds.setting(after, "ha_housekeeping_interval")
    m = master_index(after)
    for j in range(len(after.cfg.proto.brokers)):
        if j == m or not (before.alive[j] and after.alive[j]):
            continue
        cb, ca = before.nodes[j].client, after.nodes[j].client
        if cb is ca or cb.conn == 0 or ca.conn == cb.conn:
            continue
        if type(event).__name__ == "Reset" and event.node == j and event.conn == cb.conn:
            continue
        if any(i == j and ((type(o) is FrameRejected and o.conn == cb.conn)
                           or (type(o) is Reported and o.conn == cb.conn and o.written < 8)) for i, o in obs):
            continue  # dispatchReadRequest's offset check (HA-6), or reportSlaveMaxOffset's failed write
        if type(event) is core.Tick and event.node == j and after.now - cb.last_write_ms > housekeeping:
            continue
        return _wrong(after, f"{after.cfg.ids[j]} closed connection {cb.conn}: no rejected frame, failed report or "
                             f"broken socket, and its last write was {after.now - cb.last_write_ms} ms ago")
    return True


PROPERTIES = [
    Property(id="HA-9", protocol="ha", kind="safety", holds_step=ha9, explain=_why,
             statement="ReadSocketService#processReadEvent: a slave's report is taken as slaveAckOffset (the first "
                       "also as slaveRequestOffset) and raises push2SlaveMaxOffset to it, unless the version "
                       "range-checks it (4.9.3+: every report but the first) and it lies above the master's max "
                       "offset: then the connection closes and push2SlaveMaxOffset stays."),
    Property(id="HA-10", protocol="ha", kind="safety", holds_step=ha10, explain=_why,
             statement="ReadSocketService#run: the master closes an HA connection only for a refused report, no "
                       "read for more than haHousekeepingInterval, or a broken socket; and closes one idle for "
                       "longer within one select (1 s)."),
    Property(id="HA-11", protocol="ha", kind="safety", holds_step=ha11, explain=_why,
             statement="submitReplicaRequest / isSlaveOK / GroupTransferService#doWaitTransfer: ASYNC_MASTER puts "
                       "are PUT_OK at once; a SYNC_MASTER put is SLAVE_NOT_AVAILABLE at once exactly when no "
                       "connection exists or it ends haSlaveFallbehindMax past push2SlaveMaxOffset, else it waits: "
                       "PUT_OK only once push2SlaveMaxOffset covers its end, FLUSH_SLAVE_TIMEOUT only when it does "
                       "not and slaveTimeout (4.9.0-4.9.2: syncFlushTimeout) has passed since the put."),
    Property(id="HA-12", protocol="ha", kind="safety", holds_step=ha12, explain=_why,
             statement="submitFlushRequest / GroupCommitService#doCommit: an ASYNC_FLUSH put's flush status is "
                       "PUT_OK at once; a SYNC_FLUSH put waits, and is PUT_OK only when flushedWhere covers its end, "
                       "FLUSH_DISK_TIMEOUT only when it does not."),
    Property(id="HA-13", protocol="ha", kind="safety", holds_step=ha13, explain=_why,
             statement="HAClient#run / #dispatchReadRequest: a slave closes its HA connection only for a frame whose "
                       "offset is not its (non-zero) max offset, a report it could not write whole, no write for "
                       "more than haHousekeepingInterval, or a broken socket."),
]
