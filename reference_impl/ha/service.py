"""The HA threads of RocketMQ 4.9.4 as pure transitions on a `Broker` record.

Theory of operation
-------------------
`HAService` runs on every broker. On the master it accepts one `HAConnection` per
slave; each connection has two threads:

- ReadSocketService reads the slave's 8-byte offset reports. The first report on a
  connection is the slave's *request offset*, later ones are *acks*; each accepted
  value feeds `notifyTransferSome`, which raises `push2SlaveMaxOffset` (a single max
  over all slaves, never reset while the master runs) and wakes GroupTransferService.
  From 4.9.3 an ack above the master's max offset closes the connection; the first
  report is never checked. 20 s without reads closes the connection too.
- WriteSocketService sends nothing until the first report. Then it picks
  `nextTransferFromWhere`: the request offset, or for a slave that asks for 0 the start
  of the master's last mapped file. Each loop iteration sends a heartbeat header if
  nothing was written for `haSendHeartbeatInterval`, then at most
  `haTransferBatchSize` bytes of one file; with nothing to send it waits 100 ms
  (`allWaitForRunning(100)`; a SYNC_MASTER put wakes it at once).

GroupTransferService makes SYNC_MASTER puts wait: it takes the queued requests in
order and blocks on the head one until `push2SlaveMaxOffset >= nextOffset` or its
deadline, waking on every raise of the max and at least every second.

On a slave, `HAClient` connects to the master, reports its max offset first after
`haSendHeartbeatInterval` and then after every append and every heartbeat interval,
and appends frames whose offset equals its own max offset (any offset while its max
offset is 0, even into a mapped file that starts elsewhere); a mismatch drops the
connection and it reconnects at once. A failed connect
waits 5 s.

How the model runs them: each thread's loop iteration is one atomic step at a tick,
at the ms its Java wait would end (the `*_ms` fields); reads happen when the world
delivers a segment of the byte stream (reference_impl.ha.world), as a thread blocked
in `select` would. Sockets have a bounded send queue (`out`): a full queue makes
WriteSocketService's `transferData` return false, and it resumes when the world
delivers bytes. Simplifications: a stopped ReadSocketService ends its connection at
once (Java: at its next 1 s select); a read error and a peer's FIN are the same.
"""

from __future__ import annotations

from reference_impl.ha import commit_log as st
from reference_impl.ha import wire
from reference_impl.ha.records import (
    AckRead,
    Broker,
    ConnClosed,
    FrameRead,
    FrameRejected,
    FrameSent,
    GroupCommitRequest,
    HaConfig,
    HAConnection,
    Reported,
    TransferStart,
)
from reference_impl.rocketmq import PutMessageStatus

Out = tuple


# --- sockets ---


def socket_write(out: bytes, out_since: int, cap: int, data: bytes, now: int) -> tuple[bytes, int, int]:
    """SocketChannel#write on a non-blocking socket: as many bytes as the send queue takes."""
    n = min(len(data), cap - len(out))
    if n <= 0:
        return out, out_since, 0
    return out + data[:n], out_since if out_since >= 0 else now, n


def _conn_index(b: Broker, conn_id: int) -> int:
    for k, x in enumerate(b.conns):
        if x.id == conn_id:
            return k
    return -1


def _set_conn(b: Broker, k: int, conn: HAConnection) -> Broker:
    return b.evolve(conns=b.conns[:k] + (conn,) + b.conns[k + 1:])


# --- HAService ---


def connection_count(b: Broker) -> int:
    """HAService.connectionCount: connections whose ReadSocketService still runs."""
    return len(b.conns)


def is_slave_ok(c: HaConfig, b: Broker, master_put_where: int) -> bool:
    """HAService#isSlaveOK: a connection, and the put within haSlaveFallbehindMax of
    push2SlaveMaxOffset (`fixed`: of the best ack of a live connection)."""
    if not b.conns:
        return False
    best = max(x.slave_ack_offset for x in b.conns) if c.version == "fixed" else b.push2slave_max
    return master_put_where - best < c.store.ha_slave_fallbehind_max


def notify_transfer_some(b: Broker, offset: int, now: int) -> Broker:
    """HAService#notifyTransferSome: raise push2SlaveMaxOffset and, if it rose, wake GroupTransferService."""
    if offset <= b.push2slave_max:
        return b
    return _gt_wakeup(b.evolve(push2slave_max=offset), now)


def _gt_wakeup(b: Broker, now: int) -> Broker:
    """GroupTransferService#notifyTransferSome (notifyTransferObject.wakeup())."""
    if b.gt_wait_until >= 0:
        return b.evolve(gt_wait_until=now)
    return b.evolve(gt_notified=True)


def accept(c: HaConfig, b: Broker, conn_id: int, slave: str, now: int) -> Broker:
    """AcceptSocketService: a new HAConnection (connectionCount + 1); its writer waits for the first report."""
    conn = HAConnection(id=conn_id, slave=slave, last_read_ms=now, last_write_ms=now)
    return b.evolve(conns=b.conns + (conn,))


def close_connection(b: Broker, conn_id: int, reason: str) -> tuple[Broker, Out]:
    """The connection's threads stop: removeConnection, connectionCount - 1, socket closed."""
    k = _conn_index(b, conn_id)
    if k < 0:
        return b, ()
    return b.evolve(conns=b.conns[:k] + b.conns[k + 1:]), (ConnClosed(conn=conn_id, side="master", reason=reason),)


def read_event(c: HaConfig, b: Broker, conn_id: int, chunk: bytes, now: int) -> tuple[Broker, Out]:
    """ReadSocketService#processReadEvent for one read of `chunk`: the last complete
    8-byte value is the slave's offset; the first is its request offset."""
    k = _conn_index(b, conn_id)
    conn = b.conns[k]
    ack, pending = wire.read_acks(conn.read_pending, chunk)
    conn = conn.evolve(read_pending=pending, last_read_ms=now)
    if ack is None:
        return _set_conn(b, k, conn), ()
    master_max = st.max_offset(b.store)
    first = conn.slave_request_offset < 0
    conn = conn.evolve(slave_ack_offset=ack)
    if first:
        conn = conn.evolve(slave_request_offset=ack, write_wake_ms=now)  # the writer's 10 ms sleep ends
    check = c.version == "fixed" or (c.version == "4.9.4" and not first)
    obs = AckRead(conn=conn_id, slave=conn.slave, ack=ack, first=first, start=conn.transfer_start,
                  master_max=master_max, accepted=not (check and ack > master_max))
    if not obs.accepted:
        b, outs = close_connection(_set_conn(b, k, conn), conn_id, "ack above the master's max offset")
        return b, (obs,) + outs
    b = notify_transfer_some(_set_conn(b, k, conn), ack, now)
    if c.version == "fixed":
        b = _gt_wakeup(b, now)  # the test is per connection: any accepted ack may satisfy it
    return b, (obs,)


def read_housekeeping(c: HaConfig, b: Broker, now: int) -> tuple[Broker, Out]:
    """ReadSocketService#run: close connections with no read for haHousekeepingInterval."""
    outs: Out = ()
    for conn in b.conns:
        if now - conn.last_read_ms > c.store.ha_housekeeping_interval:
            b, closed = close_connection(b, conn.id, "housekeeping: no read for haHousekeepingInterval")
            outs += closed
    return b, outs


def _transfer_data(c: HaConfig, conn: HAConnection, now: int) -> HAConnection:
    """WriteSocketService#transferData: write the pending frame as far as the socket takes it."""
    out, since, n = socket_write(conn.out, conn.out_since, c.socket_buffer_bytes, conn.unsent, now)
    if n:
        conn = conn.evolve(out=out, out_since=since, unsent=conn.unsent[n:], last_write_ms=now)
    over = not conn.unsent
    return conn.evolve(last_write_over=over, write_wake_ms=now if over else -1)


def _poll_after(origin: int, at: int, period: int) -> int:
    """The first point of the grid origin + k * period (k >= 1) at or after `at`."""
    k = max(1, -(-(at - origin) // period))
    return origin + k * period


def write_loop(c: HaConfig, b: Broker, k: int, now: int) -> tuple[Broker, Out]:
    """One iteration of WriteSocketService#run for connection k."""
    conn = b.conns[k]
    cfg = c.store
    outs: Out = ()
    if conn.next_transfer_from_where == -1:
        if conn.slave_request_offset == 0:
            master_offset = st.max_offset(b.store)
            start = max(0, master_offset - master_offset % cfg.mapped_file_size_commit_log)
        else:
            start = conn.slave_request_offset
        conn = conn.evolve(next_transfer_from_where=start, transfer_start=start)
        outs += (TransferStart(conn=conn.id, slave=conn.slave, request=conn.slave_request_offset, start=start),)
    if conn.last_write_over:
        if now - conn.last_write_ms > cfg.ha_send_heartbeat_interval:
            outs += (FrameSent(conn=conn.id, offset=conn.next_transfer_from_where, size=0, crc=0),)
            conn = _transfer_data(c, conn.evolve(unsent=wire.encode_header(conn.next_transfer_from_where, 0)), now)
            if not conn.last_write_over:
                return _set_conn(b, k, conn.evolve(idle_since=-1)), outs
    else:
        conn = _transfer_data(c, conn, now)
        if not conn.last_write_over:
            return _set_conn(b, k, conn), outs
    data = st.get_data(b.store, cfg.mapped_file_size_commit_log, conn.next_transfer_from_where)
    if data is not None:
        body = data[:cfg.ha_transfer_batch_size]
        this_offset = conn.next_transfer_from_where
        outs += (FrameSent(conn=conn.id, offset=this_offset, size=len(body), crc=st.crc32(body)),)
        conn = conn.evolve(next_transfer_from_where=this_offset + len(body), idle_since=-1,
                           unsent=wire.encode_frame(this_offset, body))
        return _set_conn(b, k, _transfer_data(c, conn, now)), outs
    # allWaitForRunning(100) until a heartbeat is due or (at the next poll / on wakeupAll) data arrives
    idle_since = conn.idle_since if conn.idle_since >= 0 else now
    wake = _poll_after(idle_since, max(now + 1, conn.last_write_ms + cfg.ha_send_heartbeat_interval + 1),
                       cfg.write_idle_wait_ms)
    return _set_conn(b, k, conn.evolve(idle_since=idle_since, write_wake_ms=wake)), outs


def data_arrived(c: HaConfig, b: Broker, now: int, wakeup_all: bool) -> Broker:
    """New CommitLog data: idle writers see it at their next 100 ms poll, or at once
    when the put called `waitNotifyObject.wakeupAll()` (SYNC_MASTER)."""
    conns = b.conns
    changed = False
    out = []
    for conn in conns:
        if conn.idle_since >= 0 and conn.write_wake_ms > now:
            wake = now if wakeup_all else _poll_after(conn.idle_since, now, c.store.write_idle_wait_ms)
            if wake < conn.write_wake_ms:
                conn = conn.evolve(write_wake_ms=wake)
                changed = True
        out.append(conn)
    return b.evolve(conns=tuple(out)) if changed else b


def socket_drained(b: Broker, conn_id: int, n: int, now: int) -> Broker:
    """The world delivered `n` bytes of a connection's send queue; a blocked writer may go on."""
    k = _conn_index(b, conn_id)
    conn = b.conns[k]
    rest = conn.out[n:]
    conn = conn.evolve(out=rest, out_since=conn.out_since if rest else -1)
    if not conn.last_write_over and conn.write_wake_ms < 0:
        conn = conn.evolve(write_wake_ms=now)
    return _set_conn(b, k, conn)


# --- GroupTransferService ---


def transfer_ok(c: HaConfig, b: Broker, req: GroupCommitRequest) -> bool:
    """doWaitTransfer's test: push2SlaveMaxOffset >= nextOffset (`fixed`: a live connection
    that started at or below the message has acked past it)."""
    if c.version == "fixed":
        return any(0 <= x.transfer_start <= req.wrote_offset and x.slave_ack_offset >= req.next_offset
                   for x in b.conns)
    return b.push2slave_max >= req.next_offset


def group_transfer_run(c: HaConfig, b: Broker, now: int) -> tuple[Broker, tuple[tuple[int, PutMessageStatus], ...]]:
    """GroupTransferService#run/doWaitTransfer from where it waits now. Returns the
    completed requests as (put, PUT_OK or FLUSH_SLAVE_TIMEOUT)."""
    if b.gt_wait_until >= 0 and now < b.gt_wait_until:
        return b, ()
    read, write = b.gt_read, b.gt_write
    if b.gt_wait_until < 0 and not read:
        if not write or now < b.gt_wake_ms:
            return b, ()
        read, write = write, ()  # waitForRunning(10) returns at once after putRequest's wakeup: swap
    done = []
    while True:
        while read:
            req = read[0]
            if req.deadline < 0:  # 4.9.0-4.9.2: waitUntilWhen = now + syncFlushTimeout, set here
                req = req.evolve(deadline=now + c.store.sync_flush_timeout)
                read = (req,) + read[1:]
            if transfer_ok(c, b, req):
                done.append((req, PutMessageStatus.PUT_OK))
            elif now < req.deadline:
                return b.evolve(gt_read=read, gt_write=write, gt_wait_until=now + c.store.transfer_wait_ms,
                                gt_notified=False, gt_wake_ms=-1), tuple(done)
            else:
                done.append((req, PutMessageStatus.FLUSH_SLAVE_TIMEOUT))
            read = read[1:]
        if not write:
            break
        read, write = write, ()
    return b.evolve(gt_read=(), gt_write=(), gt_wait_until=-1, gt_wake_ms=-1), tuple(done)


def put_request(c: HaConfig, b: Broker, req: GroupCommitRequest, now: int) -> Broker:
    """HAService#putRequest: queue the request and wake the service."""
    b = b.evolve(gt_write=b.gt_write + (req,))
    if b.gt_wait_until < 0 and not b.gt_read:
        b = b.evolve(gt_wake_ms=now)
    return b


# --- HAClient (slave side) ---


def client_tick(c: HaConfig, b: Broker, now: int) -> tuple[Broker, Out]:
    """One iteration of HAClient#run that is not a read: start connectMaster, or send the
    periodic report (isTimeToReportOffset) and run the housekeeping check."""
    cl = b.client
    if cl.master is None:
        return b, ()
    if cl.conn == 0:
        if not cl.connecting and now >= cl.next_connect_ms:
            b = b.evolve(client=cl.evolve(connecting=True))
        return b, ()
    outs: Out = ()
    if now - cl.last_write_ms > c.store.ha_send_heartbeat_interval:
        b, outs, ok = report_slave_max_offset(c, b, cl.current_reported_offset, now)
        if not ok:
            b, closed = close_master(b, "reportSlaveMaxOffset failed", now)
            return b, outs + closed
    if now - b.client.last_write_ms > c.store.ha_housekeeping_interval:
        b, closed = close_master(b, "housekeeping: no write for haHousekeepingInterval", now)
        outs += closed
    return b, outs


def client_wake(c: HaConfig, b: Broker) -> int:
    cl = b.client
    if cl.master is None:
        return -1
    if cl.conn == 0:
        return -1 if cl.connecting else cl.next_connect_ms
    return cl.last_write_ms + c.store.ha_send_heartbeat_interval + 1


def client_connected(c: HaConfig, b: Broker, conn_id: int, now: int) -> Broker:
    """HAClient#connectMaster succeeded: currentReportedOffset = max offset, lastWriteTimestamp = now."""
    cl = b.client.evolve(conn=conn_id, connecting=False, current_reported_offset=st.max_offset(b.store),
                         last_write_ms=now, read_buf=b"", out=b"", out_since=-1)
    return b.evolve(client=cl)


def client_connect_failed(c: HaConfig, b: Broker, refused: bool, now: int) -> Broker:
    """connectMaster failed (refused at once, or a 5 s connect timeout); then waitForRunning(5000)."""
    wait = c.store.ha_client_reconnect_wait_ms + (0 if refused else c.store.connect_timeout_ms)
    return b.evolve(client=b.client.evolve(connecting=False, next_connect_ms=now + wait,
                                           current_reported_offset=st.max_offset(b.store), last_write_ms=now))


def close_master(b: Broker, reason: str, now: int) -> tuple[Broker, Out]:
    """HAClient#closeMaster; the run loop `continue`s into connectMaster at once."""
    cl = b.client
    if cl.conn == 0:
        return b, ()
    closed = ConnClosed(conn=cl.conn, side="slave", reason=reason)
    cl = cl.evolve(conn=0, connecting=False, next_connect_ms=now, last_write_ms=0, read_buf=b"", out=b"",
                   out_since=-1)
    return b.evolve(client=cl), (closed,)


def report_slave_max_offset(c: HaConfig, b: Broker, offset: int, now: int) -> tuple[Broker, Out, bool]:
    """HAClient#reportSlaveMaxOffset: write 8 bytes (three tries); lastWriteTimestamp = now."""
    cl = b.client
    out, since, n = socket_write(cl.out, cl.out_since, c.socket_buffer_bytes, wire.encode_ack(offset), now)
    b = b.evolve(client=cl.evolve(out=out, out_since=since, last_write_ms=now))
    return b, (Reported(conn=cl.conn, offset=offset, written=n),), n == wire.ACK_SIZE


def report_slave_max_offset_plus(c: HaConfig, b: Broker, now: int) -> tuple[Broker, Out, bool]:
    """HAClient#reportSlaveMaxOffsetPlus: report the max offset if it grew (closeMaster on failure)."""
    current = st.max_offset(b.store)
    if current <= b.client.current_reported_offset:
        return b, (), True
    b = b.evolve(client=b.client.evolve(current_reported_offset=current))
    b, outs, ok = report_slave_max_offset(c, b, current, now)
    if not ok:
        b, closed = close_master(b, "reportSlaveMaxOffset failed", now)
        outs += closed
    return b, outs, ok


def client_read(c: HaConfig, b: Broker, chunk: bytes, now: int) -> tuple[Broker, Out]:
    """HAClient#processReadEvent for one read of `chunk`, and dispatchReadRequest."""
    size = c.store.mapped_file_size_commit_log
    cl = b.client
    conn = cl.conn
    buf = cl.read_buf + chunk
    outs: Out = ()
    while True:
        head = wire.next_frame(buf)
        if head is None:
            break
        offset, body_size, body = head
        slave_max = st.max_offset(b.store)
        if slave_max != 0 and slave_max != offset:
            b, closed = close_master(b, "master pushed offset not equal the max phy offset in slave", now)
            return b, outs + (FrameRejected(conn=conn, offset=offset, slave_max=slave_max),) + closed
        if body_size < 0:  # Java throws from appendToCommitLog; the model drops the connection
            b, closed = close_master(b, "negative body size", now)
            return b, outs + closed
        if body is None:
            break
        store = b.store
        if slave_max == 0 and c.version == "fixed":
            # 4.9.4 writes at the wrote position of an empty first file that recovery kept (an
            # OS crash lost its data), whatever `offset` is; the fix starts the CommitLog afresh
            store = st.EMPTY_STORE
        store, ok = st.append_data(store, size, offset, body)
        b = b.evolve(store=store)
        outs += (FrameRead(conn=conn, offset=offset, size=body_size, crc=st.crc32(body), appended=ok),)
        buf = buf[wire.HEADER_SIZE + body_size:]
        b = b.evolve(client=b.client.evolve(read_buf=buf))
        b, reported, ok = report_slave_max_offset_plus(c, b, now)
        outs += reported
        if not ok:
            return b, outs
    return b.evolve(client=b.client.evolve(read_buf=buf)), outs


def client_drained(b: Broker, n: int) -> Broker:
    """The world delivered `n` bytes of the HAClient's send queue."""
    cl = b.client
    rest = cl.out[n:]
    return b.evolve(client=cl.evolve(out=rest, out_since=cl.out_since if rest else -1))
