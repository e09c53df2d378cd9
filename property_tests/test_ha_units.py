"""Branch-level unit tests of the HA reference (reference_impl.ha, reference_impl.ha.service).

Each test names the Java method and the branch it exercises."""

from reference_impl.core.network import Respond, Send
from reference_impl.ha import broker as ha
from reference_impl.ha import commit_log as st
from reference_impl.ha import service as svc
from reference_impl.ha import wire
from reference_impl.ha.records import (
    AckRead,
    ConnClosed,
    FrameRejected,
    GroupCommitRequest,
    SendMessage,
    SendResult,
    TransferStart,
)
from reference_impl.ha.world import make_config
from reference_impl.rocketmq import PutMessageStatus

OK = PutMessageStatus.PUT_OK


def config(**kw):
    return make_config(2, kw).proto


def master_with(c, bodies=(), now=0):
    b = ha.boot(c, "n0", now)
    s = b.store
    for body in bodies:
        s, _, _ = st.put_message(s, c.store.mapped_file_size_commit_log, body)
    return b.evolve(store=s)


def connected(c, b, conn_id=1, slave="n1", now=0):
    return svc.accept(c, b, conn_id, slave, now)


def report(c, b, offset, conn_id=1, now=0):
    return svc.read_event(c, b, conn_id, wire.encode_ack(offset), now)


# --- ReadSocketService#processReadEvent ---


def test_first_report_is_the_request_offset_and_starts_the_writer():
    c = config()
    b = connected(c, master_with(c, [b"x" * 50]))
    b, outs = report(c, b, 0, now=5001)
    conn = b.conns[0]
    assert conn.slave_request_offset == 0 and conn.slave_ack_offset == 0 and conn.write_wake_ms == 5001
    assert isinstance(outs[0], AckRead) and outs[0].first


def test_4_9_4_closes_a_connection_whose_ack_exceeds_the_max_offset():
    c = config()
    b = connected(c, master_with(c, [b"x" * 50]))
    b, _ = report(c, b, 0)
    b, outs = report(c, b, 10_000)
    assert b.conns == () and any(isinstance(o, ConnClosed) for o in outs)


def test_4_9_4_takes_a_first_report_above_the_max_offset():
    """The 4.9.3 check (#3016) is in the `else` of `if (slaveRequestOffset < 0)`."""
    c = config()
    b = connected(c, master_with(c, [b"x" * 50]))
    b, outs = report(c, b, 10_000)
    assert b.conns[0].slave_request_offset == 10_000 and b.push2slave_max == 10_000 and outs[0].accepted


def test_fixed_checks_the_first_report_too():
    c = config(version="fixed")
    b = connected(c, master_with(c, [b"x" * 50]))
    b, outs = report(c, b, 10_000)
    assert b.conns == () and not outs[0].accepted


def test_4_9_2_checks_no_report():
    c = config(version="4.9.2")
    b = connected(c, master_with(c, [b"x" * 50]))
    b, _ = report(c, b, 0)
    b, _ = report(c, b, 10_000)
    assert b.push2slave_max == 10_000 and b.conns


def test_only_the_last_complete_report_of_a_read_counts():
    c = config()
    b = connected(c, master_with(c, [b"x" * 500]))
    b, _ = svc.read_event(c, b, 1, wire.encode_ack(0) + wire.encode_ack(100)[:5], 0)
    assert b.conns[0].slave_request_offset == 0 and b.conns[0].read_pending == wire.encode_ack(100)[:5]
    b, _ = svc.read_event(c, b, 1, wire.encode_ack(100)[5:] + wire.encode_ack(200) + wire.encode_ack(300), 1)
    assert b.conns[0].slave_ack_offset == 300 and b.push2slave_max == 300


def test_push2slave_max_never_decreases():
    """HAService#notifyTransferSome is a CAS max: a lower ack leaves it alone."""
    c = config()
    b = connected(c, master_with(c, [b"x" * 500]))
    b, _ = report(c, b, 0)
    b, _ = report(c, b, 400)
    b, _ = report(c, b, 100)
    assert b.push2slave_max == 400 and b.conns[0].slave_ack_offset == 100


def test_housekeeping_closes_a_silent_connection():
    c = config()
    b = connected(c, master_with(c), now=0)
    b, outs = svc.read_housekeeping(c, b, 20_000)
    assert b.conns
    b, outs = svc.read_housekeeping(c, b, 20_001)
    assert b.conns == () and outs[0].reason.startswith("housekeeping")


# --- WriteSocketService#run ---


def test_request_zero_starts_at_the_last_mapped_file():
    """HA-5: nextTransferFromWhere = maxOffset - maxOffset % mappedFileSizeCommitLog."""
    c = config(mapped_file_size_commit_log=256)
    b = connected(c, master_with(c, [b"x" * 110] * 5))  # one message per file: 0, 256, ..., 1024
    b, _ = report(c, b, 0, now=5001)
    b, outs = svc.write_loop(c, b, 0, 5001)
    start = next(o for o in outs if isinstance(o, TransferStart)).start
    assert start == st.max_offset(b.store) - st.max_offset(b.store) % 256 == 1024


def test_a_nonzero_request_is_served_from_that_offset():
    c = config()
    b = connected(c, master_with(c, [b"x" * 110] * 3))
    b, _ = report(c, b, 134, now=10)
    b, outs = svc.write_loop(c, b, 0, 10)
    assert b.conns[0].transfer_start == 134
    assert wire.decode_frames(b.conns[0].out)[0] == ((134, b.store.data[134:]),)


def test_heartbeat_first_when_nothing_was_written_for_the_interval():
    c = config()
    b = connected(c, master_with(c, [b"x" * 10]), now=0)
    b, _ = report(c, b, 0, now=5001)
    b, _ = svc.write_loop(c, b, 0, 5001)
    frames, _ = wire.decode_frames(b.conns[0].out)
    assert frames[0] == (0, b"") and frames[1][0] == 0 and len(frames[1][1]) == 34


def test_frames_carry_at_most_the_batch_size():
    c = config(ha_transfer_batch_size=100)
    b = connected(c, master_with(c, [b"x" * 200]), now=0)
    b, _ = report(c, b, 0, now=1)
    b, _ = svc.write_loop(c, b, 0, 1)
    b, _ = svc.write_loop(c, b, 0, 1)
    frames, _ = wire.decode_frames(b.conns[0].out)
    assert [(o, len(x)) for o, x in frames] == [(0, 100), (100, 100), ] and b.conns[0].next_transfer_from_where == 200


def test_a_full_socket_stops_the_writer_until_bytes_drain():
    """transferData returns false when the socket takes less than the frame; lastWriteOver stays false."""
    c = config(socket_buffer_bytes=40)
    b = connected(c, master_with(c, [b"x" * 100]), now=0)
    b, _ = report(c, b, 0, now=1)
    b, _ = svc.write_loop(c, b, 0, 1)
    conn = b.conns[0]
    assert len(conn.out) == 40 and not conn.last_write_over and conn.write_wake_ms == -1
    b = svc.socket_drained(b, 1, 40, 2)
    assert b.conns[0].write_wake_ms == 2
    b, _ = svc.write_loop(c, b, 0, 2)
    assert len(b.conns[0].out) == 40 and b.conns[0].unsent


def test_idle_writer_polls_every_100_ms_and_sync_puts_wake_it():
    c = config()
    b = connected(c, master_with(c), now=0)
    b, _ = report(c, b, 0, now=1)
    b, _ = svc.write_loop(c, b, 0, 1)  # nothing to send: allWaitForRunning(100) until the heartbeat is due
    conn = b.conns[0]
    assert conn.idle_since == 1 and conn.write_wake_ms == 5001  # the first poll at which 5000 ms passed since 0
    assert svc.data_arrived(c, b, 250, wakeup_all=False).conns[0].write_wake_ms == 301
    assert svc.data_arrived(c, b, 250, wakeup_all=True).conns[0].write_wake_ms == 250


# --- GroupTransferService#doWaitTransfer and HAService#isSlaveOK ---


def gt_request(b, put, nxt, deadline, wrote=0):
    return GroupCommitRequest(put=put, next_offset=nxt, wrote_offset=wrote, deadline=deadline)


def completed(done):
    """(put, status) of GroupTransferService's completed requests, in order."""
    return [(req.put, status) for req, status in done]


def test_is_slave_ok_needs_a_connection_and_a_small_gap():
    c = config(ha_slave_fallbehind_max=1000)
    b = master_with(c)
    assert not svc.is_slave_ok(c, b, 10)
    b = connected(c, b)
    assert svc.is_slave_ok(c, b, 999) and not svc.is_slave_ok(c, b, 1000)


def test_transfer_waits_then_completes_when_push2slave_max_reaches_the_offset():
    c = config()
    b = svc.put_request(c, master_with(c), gt_request(None, 7, 100, 3000), 0)
    b, done = svc.group_transfer_run(c, b, 0)
    assert done == () and b.gt_wait_until == 1000
    b = svc.notify_transfer_some(b, 100, 400)
    assert b.gt_wait_until == 400  # notifyTransferObject.wakeup
    b, done = svc.group_transfer_run(c, b, 400)
    assert completed(done) == [(7, OK)] and b.gt_wait_until == -1


def test_transfer_times_out_at_the_first_wake_after_the_deadline():
    """waitForRunning(1000) may end after the deadline: FLUSH_SLAVE_TIMEOUT comes at that wake."""
    c = config()
    b = svc.put_request(c, master_with(c), gt_request(None, 7, 100, 2500), 0)
    b, _ = svc.group_transfer_run(c, b, 0)
    b, done = svc.group_transfer_run(c, b, 1000)
    b, done = svc.group_transfer_run(c, b, 2000)
    assert done == () and b.gt_wait_until == 3000
    b, done = svc.group_transfer_run(c, b, 3000)
    assert completed(done) == [(7, PutMessageStatus.FLUSH_SLAVE_TIMEOUT)]


def test_requests_wait_behind_the_head_one():
    c = config()
    b = svc.put_request(c, master_with(c), gt_request(None, 1, 300, 3000), 0)
    b, _ = svc.group_transfer_run(c, b, 0)
    b = svc.put_request(c, b, gt_request(None, 2, 100, 3000), 10)
    b = svc.notify_transfer_some(b, 200, 20)
    b, done = svc.group_transfer_run(c, b, 20)
    assert done == ()  # put 2 is satisfied but sits in requestsWrite behind put 1
    b = svc.notify_transfer_some(b, 300, 30)
    b, done = svc.group_transfer_run(c, b, 30)
    assert completed(done) == [(1, OK), (2, OK)]


def test_4_9_2_counts_the_wait_from_when_the_service_reaches_the_request():
    c = config(version="4.9.2")
    b = svc.put_request(c, master_with(c), gt_request(None, 1, 100, -1), 0)
    b, _ = svc.group_transfer_run(c, b, 700)
    assert b.gt_read[0].deadline == 700 + c.store.sync_flush_timeout


def test_fixed_counts_only_a_connection_that_started_below_the_message():
    c = config(version="fixed", mapped_file_size_commit_log=256)
    b = connected(c, master_with(c, [b"x" * 110] * 3))
    b, _ = report(c, b, 0, now=1)
    b, _ = svc.write_loop(c, b, 0, 1)  # messages at 0, 256, 512: starts at 512
    b, _ = report(c, b, 646, now=2)
    assert not svc.transfer_ok(c, b, gt_request(None, 1, 134, 0, wrote=0))
    assert svc.transfer_ok(c, b, gt_request(None, 1, 646, 0, wrote=512))
    c4 = config(mapped_file_size_commit_log=256)
    assert svc.transfer_ok(c4, b, gt_request(None, 1, 134, 0, wrote=0))  # 4.9.4: push2SlaveMaxOffset alone


# --- HAClient ---


def slave_connected(c, conn_id=1, now=0, bodies=()):
    b = ha.boot(c, "n1", now)
    s = b.store
    for body in bodies:
        s, _, _ = st.put_message(s, c.store.mapped_file_size_commit_log, body)
    return svc.client_connected(c, b.evolve(store=s), conn_id, now)


def test_slave_reports_first_after_the_heartbeat_interval():
    c = config()
    b = slave_connected(c)
    assert svc.client_wake(c, b) == 5001
    b, outs = svc.client_tick(c, b, 5001)
    assert b.client.out == wire.encode_ack(0) and outs[0].written == 8


def test_slave_appends_a_frame_at_its_max_offset_and_reports():
    c = config()
    b = slave_connected(c)
    body = st.encode_message(b"hello", 0)
    b, outs = svc.client_read(c, b, wire.encode_frame(0, body), 10)
    assert b.store.data == body and b.client.out == wire.encode_ack(len(body))


def test_empty_slave_accepts_any_offset():
    """dispatchReadRequest skips the offset check while getMaxPhyOffset() == 0."""
    c = config(mapped_file_size_commit_log=256)
    b = slave_connected(c)
    body = st.encode_message(b"x", 512)
    b, _ = svc.client_read(c, b, wire.encode_frame(512, body), 10)
    assert b.store.base == 512 and st.max_offset(b.store) == 512 + len(body)


def test_mismatched_offset_drops_the_connection_and_reconnects_at_once():
    """HA-6: slavePhyOffset != masterPhyOffset -> return false -> closeMaster; nothing appended."""
    c = config()
    b = slave_connected(c, bodies=[b"abc"])
    before = b.store
    b, outs = svc.client_read(c, b, wire.encode_frame(999, b"zzz"), 50)
    assert b.store == before and b.client.conn == 0 and b.client.next_connect_ms == 50
    assert isinstance(outs[0], FrameRejected)


def test_mismatch_is_checked_on_the_header_alone():
    c = config()
    b = slave_connected(c, bodies=[b"abc"])
    b, outs = svc.client_read(c, b, wire.encode_header(999, 100), 50)
    assert b.client.conn == 0


def test_connect_failures_wait_before_the_next_attempt():
    c = config()
    b = ha.boot(c, "n1", 0)
    assert svc.client_connect_failed(c, b, True, 100).client.next_connect_ms == 5100
    assert svc.client_connect_failed(c, b, False, 100).client.next_connect_ms == 10100


def test_a_full_socket_makes_the_report_fail_and_closes():
    c = config(socket_buffer_bytes=12)
    b = slave_connected(c)
    b, _ = svc.client_tick(c, b, 5001)
    b, outs = svc.client_tick(c, b, 10002)
    assert b.client.conn == 0 and outs[0].written == 4


# --- the put path: CommitLog#asyncPutMessage ---


def put(c, b, msg_id="p0-0", body="p0-0|....", rpc=1, now=0):
    return ha.handle_put(c, b, SendMessage(msg_id=msg_id, body=body), rpc, now)


def test_async_master_answers_put_ok_at_once():
    c = config()
    b, reply, outs = put(c, master_with(c))
    assert reply == SendResult(status=OK, offset=0, size=st.message_size(9))


def test_sync_master_without_a_slave_answers_slave_not_available():
    c = config(broker_role="SYNC_MASTER")
    b, reply, _ = put(c, master_with(c))
    assert reply.status is PutMessageStatus.SLAVE_NOT_AVAILABLE and st.max_offset(b.store) > 0  # stored anyway


def test_sync_master_with_a_slave_waits_for_the_transfer():
    c = config(broker_role="SYNC_MASTER")
    b, reply, _ = put(c, connected(c, master_with(c)))
    assert reply is None and b.puts and b.gt_write[0].deadline == c.store.slave_timeout
    b = svc.notify_transfer_some(b, 100, 5)
    b, outs = ha.on_tick(c, b, 5, 0)
    assert Respond(rpc=1, msg=SendResult(status=OK, offset=0, size=33)) in outs


def test_replica_status_wins_over_flush_status():
    assert ha.combine(PutMessageStatus.FLUSH_DISK_TIMEOUT, PutMessageStatus.FLUSH_SLAVE_TIMEOUT) is \
        PutMessageStatus.FLUSH_SLAVE_TIMEOUT
    assert ha.combine(PutMessageStatus.FLUSH_DISK_TIMEOUT, OK) is PutMessageStatus.FLUSH_DISK_TIMEOUT


def test_sync_flush_answers_after_the_group_commit_flushed():
    c = config(flush_disk_type="SYNC_FLUSH")
    b, reply, _ = put(c, master_with(c), now=3)
    assert reply is None and b.flush_next_ms == 3
    b, outs = ha.on_tick(c, b, 3, 0)
    assert b.store.flushed == st.max_offset(b.store) and outs[-1].msg.status is OK


def test_two_puts_of_one_send_delivered_twice_complete_their_own_futures():
    """SendMessageProcessor serves a SEND the network delivered twice as two requests: two puts of one
    rpc, each with its own GroupCommitRequests and futures. SYNC_MASTER, SYNC_FLUSH: the first put
    finds no slave (SLAVE_NOT_AVAILABLE at once, its flush pending), the second waits for a slave
    that connected meanwhile. Completing the second's replica future leaves the first's alone."""
    c = config(broker_role="SYNC_MASTER", flush_disk_type="SYNC_FLUSH")
    b, reply, _ = put(c, master_with(c), rpc=7, now=1)
    assert reply is None and b.puts[0].replica is PutMessageStatus.SLAVE_NOT_AVAILABLE
    b, reply, _ = put(c, connected(c, b, now=2), rpc=7, now=2)
    first, second = b.puts
    assert reply is None and second.replica is None and b.gt_write[0].wrote_offset == second.offset
    b, outs = ha.complete_put(b, 7, second.offset, replica=OK)
    assert outs == () and b.puts == (first, second.evolve(replica=OK))
    b, outs = ha.complete_put(b, 7, first.offset, flush=OK)
    assert outs == (Respond(rpc=7, msg=SendResult(status=PutMessageStatus.SLAVE_NOT_AVAILABLE, offset=first.offset,
                                                  size=first.size)),)
    b, outs = ha.complete_put(b, 7, second.offset, flush=OK)
    assert outs == (Respond(rpc=7, msg=SendResult(status=OK, offset=second.offset, size=second.size)),) and not b.puts


def test_slave_refuses_puts():
    c = config()
    _, reply, _ = put(c, ha.boot(c, "n1", 0))
    assert reply.status is PutMessageStatus.SERVICE_NOT_AVAILABLE


# --- flush services and crashes ---


def test_async_flush_runs_on_its_grid_and_thoroughly_every_ten_seconds():
    """FlushRealTimeService: flush every 500 ms with leastPages 4, leastPages 0 every 10 s."""
    c = config()
    b, _, _ = put(c, master_with(c), now=700)
    assert b.flush_next_ms == 10_500  # < 4 pages dirty: wait for the next thorough flush (0 + 500 + 10 000)
    b2, _, _ = ha.handle_put(c, b, SendMessage(msg_id="big", body="x" * 20_000), 2, 800)
    assert b2.flush_next_ms == 1000  # 4 pages dirty: the next 500 ms point
    b3, _ = ha.on_tick(c, b2, 1000, 0)
    assert b3.store.flushed == st.max_offset(b3.store)


def test_crash_keeps_the_page_cache_but_an_os_crash_keeps_only_the_disk():
    c = config()
    b, _, _ = put(c, master_with(c))
    assert st.max_offset(ha.crash(c, b, "process").store) == st.max_offset(b.store)
    assert st.max_offset(ha.crash(c, b, "os").store) == 0
    assert ha.crash(c, b, "disk").store == st.EMPTY_STORE


def test_restart_resets_replication_state_and_reconnects_at_once():
    c = config()
    b = slave_connected(c)
    b = ha.restart(c, ha.crash(c, b, "process"), 700)
    assert b.client.conn == 0 and b.client.next_connect_ms == 700 and b.incarnation == 1


def test_producer_sends_one_message_at_a_time():
    c = config()
    p = ha.boot(c, "p0", 0)
    p, outs = ha.producer_tick(c, p, 0, 0)
    assert isinstance(outs[0], Send) and p.in_flight == "p0-0"
    assert ha.producer_tick(c, p, 1, 0) == (p, ())
    p, outs = ha.on_response(c, p, ("put", "p0-0"), "n0", None, 3000)
    assert outs[0].status == "NO_RESPONSE" and p.next_send_ms == 3100
