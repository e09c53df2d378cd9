"""Classic master/slave CommitLog replication (RocketMQ 4.9.4, non-DLedger): brokers and producers.

Theory of operation
-------------------
A broker group is one master and one or more slaves (`BrokerRole`); there is no
failover: the master stays the master across crashes. Producers send every message to
the master (`SendMessageProcessor` -> `DefaultMessageStore#asyncPutMessage`).

The put path (`handle_put`) appends the message to the master's CommitLog
(reference_impl.ha.commit_log) and completes two futures, as `CommitLog#asyncPutMessage`
does with `thenCombine`:

- flush: ASYNC_FLUSH completes at once (FlushRealTimeService flushes later, on its own
  500 ms grid, when 4 pages are dirty or every 10 s); SYNC_FLUSH waits for
  GroupCommitService, which flushes everything when it next runs.
- replica: ASYNC_MASTER completes at once; SYNC_MASTER asks `isSlaveOK` (a connection,
  and the put within 256 MiB of push2SlaveMaxOffset) and then either answers
  SLAVE_NOT_AVAILABLE at once or queues a request for GroupTransferService, which
  answers PUT_OK or FLUSH_SLAVE_TIMEOUT (reference_impl.ha.service).

The answer carries the replica status if it is not PUT_OK, else the flush status. In
every case the message is already in the master's CommitLog: a producer that sees
FLUSH_SLAVE_TIMEOUT has a stored, consumable message.

The HA threads (HAConnection, HAClient, GroupTransferService) are in
reference_impl.ha.service; the TCP byte streams between brokers are world state
(reference_impl.ha.world). A node's threads that are due run in `on_tick`.

Crashes: a process crash keeps the CommitLog's page cache (the OS keeps the mapped
pages); an OS crash keeps only what was flushed to disk; a disk loss keeps nothing.
Everything else (connections, push2SlaveMaxOffset, pending puts) is volatile. A
restart recovers the CommitLog (truncating to whole valid messages) and starts the
threads again; a slave connects to its master at once.

Producers (`DefaultMQProducer#send`, synchronous) send one message at a time and wait
up to sendMsgTimeout (3 s) for the answer; each message is sent once (the client's
retries, which would add duplicates, are not modelled).
"""

from __future__ import annotations

from typing import Any

from reference_impl.core.network import Respond, Send
from reference_impl.ha import commit_log as st
from reference_impl.ha import service as svc
from reference_impl.ha.records import (
    NO_RESPONSE,
    Appended,
    Broker,
    FlushDiskType,
    GroupCommitRequest,
    HAClient,
    HaConfig,
    PendingPut,
    Producer,
    PutResult,
    SendMessage,
    SendResult,
)
from reference_impl.rocketmq import BrokerRole, PutMessageStatus

Out = tuple


def make_body(msg_id: str, length: int) -> str:
    """A message body: its id, then filler up to `length` (at least the id and a separator)."""
    prefix = msg_id + "|"
    return prefix + "." * max(0, length - len(prefix))


def message_blob(msg_id: str, offset: int, size: int) -> bytes:
    """The bytes a message with this id occupies at `offset` (what a copy of it must hold)."""
    return st.encode_message(make_body(msg_id, size - st.MESSAGE_HEADER).encode(), offset)


# --- lifecycle ---


def boot(c: HaConfig, node_id: str, now: int) -> Broker | Producer:
    """BrokerStartup / DefaultMQProducer#start."""
    if node_id not in c.brokers:
        return Producer(id=node_id, master=c.brokers[0], next_send_ms=now)
    if node_id == c.brokers[0]:
        return start_broker(c, Broker(id=node_id, role=c.store.broker_role), now)
    return start_broker(c, Broker(id=node_id, role=BrokerRole.SLAVE, client=HAClient(master=c.brokers[0])), now)


def start_broker(c: HaConfig, b: Broker, now: int) -> Broker:
    """DefaultMessageStore#start: the flush service and HAService threads begin now."""
    return schedule_flush(c, b.evolve(flush_epoch=now, client=b.client.evolve(next_connect_ms=now)), now)


def crash(c: HaConfig, n: Any, kind: str) -> Any:
    """The node goes down; a broker keeps its CommitLog as far as `kind` allows."""
    if isinstance(n, Producer):
        return n.evolve(in_flight=None)
    store = n.store if kind == "process" else st.lose_page_cache(n.store) if kind == "os" else st.EMPTY_STORE
    return Broker(id=n.id, role=n.role, store=store, incarnation=n.incarnation, down=kind,
                  client=HAClient(master=n.client.master))


def restart(c: HaConfig, n: Any, now: int) -> Any:
    """Relaunch: CommitLog recovery, then the threads start again."""
    if isinstance(n, Producer):
        return n.evolve(next_send_ms=now)
    store = st.recover(n.store, c.store.mapped_file_size_commit_log)
    return start_broker(c, n.evolve(store=store, incarnation=n.incarnation + 1, down=None), now)


# --- flush services ---


def schedule_flush(c: HaConfig, b: Broker, now: int) -> Broker:
    """When the broker's flush thread next does something: FlushRealTimeService flushes at
    epoch + interval * (j + 1), every ceil(thorough / interval)-th time with leastPages 0;
    GroupCommitService runs at once for a request, else within 10 ms of dirty data."""
    cfg = c.store
    size = cfg.mapped_file_size_commit_log
    s = b.store
    if cfg.flush_disk_type is FlushDiskType.SYNC_FLUSH:
        if b.gc_requests:
            nxt = now
        elif st.needs_flush(s, size, 0):
            nxt = b.flush_next_ms if b.flush_next_ms >= now else now + cfg.group_commit_interval_ms
        else:
            nxt = -1
    elif not st.needs_flush(s, size, 0):
        nxt = -1
    else:
        iv = cfg.flush_interval_commit_log
        period = -(-cfg.flush_commit_log_thorough_interval // iv)
        lo = max(now, b.flush_done_ms + 1)
        j = max(0, -(-(lo - b.flush_epoch) // iv) - 1)
        if not st.needs_flush(s, size, cfg.flush_commit_log_least_pages):
            j = -(-j // period) * period
        nxt = b.flush_epoch + iv * (j + 1)
    return b if nxt == b.flush_next_ms else b.evolve(flush_next_ms=nxt)


def flush_tick(c: HaConfig, b: Broker, now: int) -> tuple[Broker, Out]:
    """FlushRealTimeService#run (one flush) or GroupCommitService#doCommit."""
    cfg = c.store
    size = cfg.mapped_file_size_commit_log
    outs: Out = ()
    if cfg.flush_disk_type is FlushDiskType.ASYNC_FLUSH:
        iv = cfg.flush_interval_commit_log
        j = (b.flush_next_ms - b.flush_epoch) // iv - 1  # flush_next_ms is the grid point now due
        period = -(-cfg.flush_commit_log_thorough_interval // iv)
        least = 0 if j % period == 0 else cfg.flush_commit_log_least_pages
        b = b.evolve(store=st.flush(b.store, size, least), flush_done_ms=now)
    elif b.gc_requests:
        s = b.store
        done = []
        for req in b.gc_requests:  # "There may be a message in the next file, so a maximum of two times the flush"
            for _ in range(2):
                if s.flushed >= req.next_offset:
                    break
                s = st.flush(s, size, 0)
            status = PutMessageStatus.PUT_OK if s.flushed >= req.next_offset else PutMessageStatus.FLUSH_DISK_TIMEOUT
            done.append((req, status))
        b = b.evolve(store=s, gc_requests=())
        for req, status in done:
            b, completed = complete_put(b, req.put, req.wrote_offset, flush=status)
            outs += completed
    else:
        b = b.evolve(store=st.flush(b.store, size, 0))
    return schedule_flush(c, b.evolve(flush_next_ms=-1), now), outs


# --- the put path ---


def combine(flush: PutMessageStatus, replica: PutMessageStatus) -> PutMessageStatus:
    """CommitLog#asyncPutMessage's thenCombine: the replica status wins, then the flush status."""
    if replica is not PutMessageStatus.PUT_OK:
        return replica
    return flush


def complete_put(b: Broker, rpc: int, offset: int, flush: PutMessageStatus | None = None,
                 replica: PutMessageStatus | None = None) -> tuple[Broker, Out]:
    """One of a pending put's futures completed (CommitLog.GroupCommitRequest#wakeupCustomer
    completes that request's own future); answer the producer once both have (asyncPutMessage's
    thenCombine). The put is found by its rpc and its wroteOffset: a SEND the network delivered
    twice made two puts of one rpc, each with its own requests and futures."""
    for k, p in enumerate(b.puts):
        if p.rpc == rpc and p.offset == offset:
            p = p.evolve(flush=flush or p.flush, replica=replica or p.replica)
            if p.flush is None or p.replica is None:
                return b.evolve(puts=b.puts[:k] + (p,) + b.puts[k + 1:]), ()
            result = SendResult(status=combine(p.flush, p.replica), offset=p.offset, size=p.size)
            return b.evolve(puts=b.puts[:k] + b.puts[k + 1:]), (Respond(rpc=rpc, msg=result),)
    return b, ()


def handle_put(c: HaConfig, b: Broker, msg: SendMessage, rpc: int, now: int
               ) -> tuple[Broker, SendResult | None, Out]:
    """DefaultMessageStore#asyncPutMessage -> CommitLog#asyncPutMessage, submitFlushRequest,
    submitReplicaRequest. The answer is None when a future is still pending."""
    cfg = c.store
    if b.role is BrokerRole.SLAVE:  # checkStoreStatus
        return b, SendResult(status=PutMessageStatus.SERVICE_NOT_AVAILABLE), ()
    store, wrote, size = st.put_message(b.store, cfg.mapped_file_size_commit_log, msg.body.encode())
    next_offset = wrote + size
    b = b.evolve(store=store)
    outs: Out = (Appended(msg_id=msg.msg_id, offset=wrote, size=size),)
    flush = PutMessageStatus.PUT_OK
    if cfg.flush_disk_type is FlushDiskType.SYNC_FLUSH:
        flush = None
        b = b.evolve(gc_requests=b.gc_requests + (GroupCommitRequest(put=rpc, next_offset=next_offset,
                                                                        wrote_offset=wrote),))
    replica = PutMessageStatus.PUT_OK
    waiting = False
    if b.role is BrokerRole.SYNC_MASTER:
        if svc.is_slave_ok(c, b, next_offset):
            replica = None
            waiting = True
            deadline = now + cfg.slave_timeout if c.version != "4.9.2" else -1
            b = svc.put_request(c, b, GroupCommitRequest(put=rpc, next_offset=next_offset, wrote_offset=wrote,
                                                         deadline=deadline), now)
        else:
            replica = PutMessageStatus.SLAVE_NOT_AVAILABLE
    b = schedule_flush(c, svc.data_arrived(c, b, now, wakeup_all=waiting), now)
    if flush is not None and replica is not None:
        return b, SendResult(status=combine(flush, replica), offset=wrote, size=size), outs
    b = b.evolve(puts=b.puts + (PendingPut(rpc=rpc, msg_id=msg.msg_id, offset=wrote, size=size, flush=flush,
                                           replica=replica),))
    return b, None, outs


# --- the node as the world sees it ---


def wake_at(c: HaConfig, n: Any) -> int:
    """The earliest time one of the node's threads has something to do (-1: never)."""
    if isinstance(n, Producer):
        return n.next_send_ms if n.in_flight is None and n.sent < c.messages else -1
    times = [n.flush_next_ms, svc.client_wake(c, n)]
    if n.gt_wait_until >= 0:
        times.append(n.gt_wait_until)
    elif n.gt_write or n.gt_read:
        times.append(n.gt_wake_ms)
    hk = c.store.ha_housekeeping_interval + 1
    for conn in n.conns:
        times.append(conn.write_wake_ms)
        times.append(conn.last_read_ms + hk)
    due = [t for t in times if t >= 0]
    return min(due) if due else -1


def on_tick(c: HaConfig, n: Any, now: int, draw: int) -> tuple[Any, Out]:
    """Run every thread of the node that is due at `now`."""
    if isinstance(n, Producer):
        return producer_tick(c, n, now, draw)
    b = n
    outs: Out = ()
    if 0 <= b.flush_next_ms <= now:
        b, done = flush_tick(c, b, now)
        outs += done
    gt_due = b.gt_wait_until if b.gt_wait_until >= 0 else (b.gt_wake_ms if b.gt_write or b.gt_read else -1)
    if 0 <= gt_due <= now:
        b, completions = svc.group_transfer_run(c, b, now)
        for req, status in completions:
            b, done = complete_put(b, req.put, req.wrote_offset, replica=status)
            outs += done
    b, closed = svc.read_housekeeping(c, b, now)
    outs += closed
    for conn_id in [x.id for x in b.conns if 0 <= x.write_wake_ms <= now]:
        k = next(k for k, x in enumerate(b.conns) if x.id == conn_id)
        b, sent = svc.write_loop(c, b, k, now)
        outs += sent
    if 0 <= svc.client_wake(c, b) <= now:
        b, client_outs = svc.client_tick(c, b, now)
        outs += client_outs
    return b, outs


def on_request(c: HaConfig, n: Any, msg: Any, rpc: int, now: int) -> tuple[Any, Any, Out]:
    """SendMessageProcessor: a producer's SEND_MESSAGE."""
    if not isinstance(n, Broker) or not isinstance(msg, SendMessage):
        raise TypeError(f"{n.id} does not serve {msg!r}")
    return handle_put(c, n, msg, rpc, now)


def on_bytes(c: HaConfig, b: Broker, conn_id: int, to_master: bool, chunk: bytes, now: int) -> tuple[Broker, Out]:
    """The world delivered a segment of a connection's byte stream to this broker."""
    if to_master:
        return svc.read_event(c, b, conn_id, chunk, now)
    b, outs = svc.client_read(c, b, chunk, now)
    return schedule_flush(c, b, now), outs


# --- producers ---


def producer_tick(c: HaConfig, p: Producer, now: int, draw: int) -> tuple[Producer, Out]:
    """DefaultMQProducer#send of the next message (body length drawn)."""
    if p.in_flight is not None or p.sent >= c.messages or now < p.next_send_ms:
        return p, ()
    msg_id = f"{p.id}-{p.sent}"
    length = c.body_min + draw % (c.body_max - c.body_min + 1)
    body = make_body(msg_id, length)
    send = Send(dst=p.master, msg=SendMessage(msg_id=msg_id, body=body), ctx=("put", msg_id),
                timeout_ms=c.send_msg_timeout)
    return p.evolve(sent=p.sent + 1, in_flight=msg_id), (send,)


def on_response(c: HaConfig, n: Any, ctx: Any, peer: str, resp: Any, now: int) -> tuple[Any, Out]:
    """The producer's send returned (resp None: timeout, refused or reset connection)."""
    p = n
    msg_id = ctx[1]
    if resp is None:
        result = PutResult(msg_id=msg_id, status=NO_RESPONSE)
    else:
        result = PutResult(msg_id=msg_id, status=resp.status.value, offset=resp.offset, size=resp.size)
    ok = result.status == PutMessageStatus.PUT_OK.value
    p = p.evolve(in_flight=None, next_send_ms=now + c.send_interval_ms, acked=p.acked + ok,
                 failed=p.failed + (not ok), last_status=result.status)
    return p, (result,)
