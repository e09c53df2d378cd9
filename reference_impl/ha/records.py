"""State, config, messages and observations of the HA world (reference_impl.ha).

Names mirror RocketMQ 4.9.4: `MessageStoreConfig` keys in snake_case with their Java
defaults, `BrokerRole`, `FlushDiskType`, `PutMessageStatus`, and one record per Java
object that holds replication state (`HAConnection`, `HAClient`, the
GroupTransferService's `GroupCommitRequest`s). Transitions live in reference_impl.ha
(broker, put path, flush) and reference_impl.ha.service (the HA threads).
"""

from __future__ import annotations

import enum

from reference_impl.core.state import record
from reference_impl.ha.commit_log import EMPTY_STORE, MAPPED_FILE_SIZE_COMMIT_LOG, Store
from reference_impl.rocketmq import BrokerRole, PutMessageStatus


class FlushDiskType(enum.Enum):
    """org.apache.rocketmq.store.config.FlushDiskType"""

    SYNC_FLUSH = "SYNC_FLUSH"
    ASYNC_FLUSH = "ASYNC_FLUSH"


NO_RESPONSE = "NO_RESPONSE"  # the producer's send failed: timeout, connection refused or reset


# Version profiles. They differ where a property notices (docs/ha.md):
#   4.9.2  RocketMQ 4.9.0-4.9.2: acks are never range-checked; the sync-replica wait is
#          syncFlushTimeout, counted from when GroupTransferService reaches the request.
#   4.9.4  RocketMQ 4.9.3-4.9.8 (the default): an ack above the master's max offset closes
#          the connection, except the first report; the wait is slaveTimeout from the put.
#   fixed  4.9.4 plus three repairs: the first report is range-checked too; a put counts
#          as replicated only on a live connection whose transfer started at or below the
#          message and whose ack covers it (instead of the never-reset push2SlaveMaxOffset);
#          a slave whose max offset is 0 starts its CommitLog afresh at the frame's offset
#          instead of writing into an empty mapped file that starts elsewhere.
VERSIONS = ("4.9.2", "4.9.4", "fixed")


@record
class MessageStoreConfig:
    """MessageStoreConfig defaults (4.9.4) plus constants hard-coded in the HA classes."""

    broker_role: BrokerRole = BrokerRole.ASYNC_MASTER  # the master's role; every other broker is SLAVE
    flush_disk_type: FlushDiskType = FlushDiskType.ASYNC_FLUSH
    mapped_file_size_commit_log: int = MAPPED_FILE_SIZE_COMMIT_LOG
    flush_interval_commit_log: int = 500  # FlushRealTimeService sleep (flushCommitLogTimed = true)
    flush_commit_log_least_pages: int = 4
    flush_commit_log_thorough_interval: int = 10_000
    group_commit_interval_ms: int = 10  # GroupCommitService: waitForRunning(10)
    sync_flush_timeout: int = 5000
    slave_timeout: int = 3000
    ha_send_heartbeat_interval: int = 5000
    ha_housekeeping_interval: int = 20_000
    ha_transfer_batch_size: int = 32 * 1024
    ha_slave_fallbehind_max: int = 256 * 1024 * 1024
    ha_client_reconnect_wait_ms: int = 5000  # HAClient#run: waitForRunning(1000 * 5)
    connect_timeout_ms: int = 5000  # RemotingUtil#connect(remote): timeout 1000 * 5
    transfer_wait_ms: int = 1000  # GroupTransferService: notifyTransferObject.waitForRunning(1000)
    write_idle_wait_ms: int = 100  # WriteSocketService: allWaitForRunning(100)


@record
class HaConfig:
    """The HA world's config: the brokers' MessageStoreConfig, the version profile, the
    producers (DefaultMQProducer defaults) and the sockets between the brokers."""

    store: MessageStoreConfig = MessageStoreConfig()
    version: str = "4.9.4"
    brokers: tuple[str, ...] = ("n0", "n1")  # the first is the master, the others its slaves
    send_msg_timeout: int = 3000  # DefaultMQProducer.sendMsgTimeout
    messages: int = 1000  # per producer; each is sent once (retries are not modelled)
    send_interval_ms: int = 100  # a producer's pause between a result and its next send
    body_min: int = 16
    body_max: int = 160
    socket_buffer_bytes: int = 128 * 1024  # kernel send + receive buffer of one direction


# --- client messages (RPC over the generic network) ---


@record
class SendMessage:
    """A producer's SEND_MESSAGE request (one message; the body is its text)."""

    msg_id: str
    body: str


@record
class SendResult:
    """The broker's answer: PutMessageResult's status and AppendMessageResult's offset/size."""

    status: PutMessageStatus
    offset: int = -1
    size: int = 0


# --- master side ---


@record
class HAConnection:
    """One slave connection on the master: HAConnection with its ReadSocketService and
    WriteSocketService. `out` is the socket's send queue (written, not yet delivered)."""

    id: int
    slave: str
    slave_request_offset: int = -1
    slave_ack_offset: int = -1
    # ReadSocketService
    read_pending: bytes = b""  # bytes past processPosition (an incomplete ack)
    last_read_ms: int = 0
    # WriteSocketService
    next_transfer_from_where: int = -1
    transfer_start: int = -1  # the first nextTransferFromWhere (HA-5; the `fixed` accounting)
    last_write_over: bool = True
    last_write_ms: int = 0
    unsent: bytes = b""  # the rest of the frame transferData has not written yet
    write_wake_ms: int = -1  # next loop iteration; -1: waiting for the first report or for socket space
    idle_since: int = -1  # start of the allWaitForRunning(100) polls; -1 while not idle
    out: bytes = b""
    out_since: int = -1


@record
class GroupCommitRequest:
    """CommitLog.GroupCommitRequest as GroupTransferService and GroupCommitService see it."""

    put: int  # the pending put (its RPC id)
    next_offset: int  # wroteOffset + wroteBytes
    wrote_offset: int
    deadline: int = -1  # absolute ms; -1 until GroupTransferService reaches it (4.9.2)


@record
class PendingPut:
    """A put whose flush and replica futures have not both completed (thenCombine)."""

    rpc: int
    msg_id: str
    offset: int
    size: int
    flush: PutMessageStatus | None = None
    replica: PutMessageStatus | None = None


# --- slave side (every broker runs an HAClient; a master's has no master address) ---


@record
class HAClient:
    master: str | None = None
    conn: int = 0  # 0: no socketChannel
    connecting: bool = False  # connectMaster() is running (the world decides how it ends)
    next_connect_ms: int = 0
    last_write_ms: int = 0
    current_reported_offset: int = 0
    read_buf: bytes = b""  # byteBufferRead from dispatchPosition to position
    out: bytes = b""
    out_since: int = -1


@record
class Broker:
    id: str
    role: BrokerRole
    store: Store = EMPTY_STORE
    incarnation: int = 0
    down: str | None = None  # how it went down ("process", "os", "disk"); None while up
    # FlushRealTimeService (ASYNC_FLUSH): a flush every interval on a grid from flush_epoch
    flush_epoch: int = 0
    flush_done_ms: int = -1
    flush_next_ms: int = -1
    # GroupCommitService (SYNC_FLUSH)
    gc_requests: tuple[GroupCommitRequest, ...] = ()
    # HAService (master side)
    push2slave_max: int = 0
    conns: tuple[HAConnection, ...] = ()
    # GroupTransferService
    gt_write: tuple[GroupCommitRequest, ...] = ()
    gt_read: tuple[GroupCommitRequest, ...] = ()
    gt_wait_until: int = -1  # blocked in notifyTransferObject.waitForRunning until then; -1: not blocked
    gt_notified: bool = False  # notifyTransferObject.hasNotified
    gt_wake_ms: int = -1
    puts: tuple[PendingPut, ...] = ()
    client: HAClient = HAClient()


@record
class Producer:
    id: str
    master: str
    sent: int = 0
    in_flight: str | None = None
    next_send_ms: int = 0
    acked: int = 0  # PUT_OK results
    failed: int = 0  # every other result
    last_status: str | None = None


# --- observations (for ghost variables, timelines and traces) ---


@record
class Appended:
    """The master appended a message to its CommitLog (the put path)."""

    msg_id: str
    offset: int
    size: int


@record
class PutResult:
    """What the producer saw for one send (trace `obs`: put results)."""

    msg_id: str
    status: str
    offset: int = -1
    size: int = 0


@record
class TransferStart:
    """WriteSocketService chose where to start (nextTransferFromWhere was -1)."""

    conn: int
    slave: str
    request: int
    start: int


@record
class FrameSent:
    """WriteSocketService built a frame (a heartbeat when size is 0)."""

    conn: int
    offset: int
    size: int
    crc: int


@record
class AckRead:
    """ReadSocketService took an offset report; `accepted` false: it closed the connection."""

    conn: int
    slave: str
    ack: int
    first: bool
    start: int  # the connection's transfer start (-1 before the first report)
    master_max: int
    accepted: bool


@record
class ConnClosed:
    conn: int
    side: str  # "master" or "slave"
    reason: str


@record
class FrameRead:
    """HAClient#dispatchReadRequest handled a whole frame; `appended` false: appendData refused it."""

    conn: int
    offset: int
    size: int
    crc: int
    appended: bool


@record
class FrameRejected:
    """HAClient#dispatchReadRequest: the master's offset is not the slave's max offset."""

    conn: int
    offset: int
    slave_max: int


@record
class Reported:
    """HAClient#reportSlaveMaxOffset wrote a report (`written` < 8: the socket was full)."""

    conn: int
    offset: int
    written: int
