"""State, config, messages and observations of the `offsets` world (reference_impl.offsets_*).

Names mirror RocketMQ 4.9.4: `BrokerConfig`, `MessageStoreConfig`, `SubscriptionGroupConfig`
and `ClientConfig` keys in snake_case with their Java defaults, `GetMessageStatus`, the
remoting `ResponseCode`s, and one record per Java object that holds offset state
(`ConsumerOffsetManager.offsetTable`, `RemoteBrokerOffsetStore.offsetTable`,
`PullAPIWrapper.pullFromWhichNodeTable`, `SlaveSynchronize.masterAddr`).
"""

from __future__ import annotations

import enum
from typing import ClassVar

from reference_impl.core.inputs import check_fields, positive
from reference_impl.core.state import EMPTY, FrozenMap, record
from reference_impl.rocketmq import MAX_MESSAGE_SIZE, ResponseCode

TOPIC_GROUP_SEPARATOR = "@"  # ConsumerOffsetManager.TOPIC_GROUP_SEPARATOR
TOPIC = "TopicTest"
GROUP = "please_rename_unique_group_name"  # the quickstart's consumer group
BROKER_NAME = "broker-a"


class GetMessageStatus(enum.Enum):
    """org.apache.rocketmq.store.GetMessageStatus (the values this world can produce)."""

    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"


class PullStatus(enum.Enum):
    """org.apache.rocketmq.client.consumer.PullStatus (MQClientAPIImpl#processPullResponse)."""

    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


# --- config ---


@record
class OffsetsConfig:
    """The world's config: broker, store, subscription-group and client defaults (4.9.4), the
    store's physical-memory input, and the workload."""

    # BrokerConfig
    slave_read_enable: bool = False
    flush_consumer_offset_interval: int = 5000  # ConsumerOffsetManager#persist period (initial delay 10 s)
    flush_consumer_offset_initial_ms: int = 10_000
    register_name_server_period: int = 30_000  # registerBrokerAll period (initial delay 10 s, and once at start)
    register_initial_ms: int = 10_000
    slave_sync_initial_ms: int = 3000  # handleSlaveSynchronize: syncAll at fixed rate, initial 3 s
    slave_sync_period_ms: int = 10_000  # ... every 10 s
    broker_rpc_timeout_ms: int = 3000  # BrokerOuterAPI getAllConsumerOffset timeout
    # MessageStoreConfig
    access_message_in_memory_max_ratio: int = 40
    total_physical_memory_size: int = 20_000  # StoreUtil.TOTAL_PHYSICAL_MEMORY_SIZE: machine input (bytes)
    max_transfer_bytes_on_message_in_memory: int = 262_144
    max_transfer_count_on_message_in_memory: int = 32
    max_transfer_bytes_on_message_in_disk: int = 65_536
    max_transfer_count_on_message_in_disk: int = 8
    offset_check_in_slave: bool = False
    # SubscriptionGroupConfig
    sub_broker_id: int = 0  # brokerId
    which_broker_when_consume_slowly: int = 1
    # ClientConfig / DefaultMQPushConsumer
    poll_name_server_interval: int = 30_000  # initial delay 10 ms
    persist_consumer_offset_interval: int = 5000  # initial delay 10 s
    persist_initial_ms: int = 10_000
    rebalance_interval_ms: int = 20_000  # RebalanceService waitInterval
    pull_batch_size: int = 32
    offset_rpc_timeout_ms: int = 5000  # RemoteBrokerOffsetStore: 1000 * 5
    pull_timeout_ms: int = 3000  # mqClientApiTimeout for the model's non-suspended pull
    pull_time_delay_mills_when_exception: int = 3000
    send_msg_timeout: int = 3000
    # the model's own (docs/offsets.md: simplifications)
    pull_idle_wait_ms: int = 200  # stands for long polling: re-pull after NO_NEW_MSG
    ha_transfer_interval_ms: int = 200  # the slave copies the master's CommitLog this often
    consume_ms: int = 10  # one message's processing time
    queues: int = 2  # readQueueNums = writeQueueNums of the topic
    messages: int = 1000  # per producer, each sent once
    send_interval_ms: int = 100
    body_size: int = 100
    brokers: tuple[str, ...] = ("n0", "n1")  # n0 master (brokerId 0), n1 slave (brokerId 1)
    namesrv: str = "ns0"
    producers: tuple[str, ...] = ("p0",)
    consumers: tuple[str, ...] = ("c0", "c1")

    # Periods, timeouts, batch sizes: at least 1. The model's caps: 16 queues, a million messages
    # per producer, bodies up to RocketMQ's maxMessageSize.
    LIMITS: ClassVar[dict] = positive(
        "flush_consumer_offset_interval", "register_name_server_period", "slave_sync_period_ms",
        "broker_rpc_timeout_ms", "total_physical_memory_size", "max_transfer_bytes_on_message_in_memory",
        "max_transfer_count_on_message_in_memory", "max_transfer_bytes_on_message_in_disk",
        "max_transfer_count_on_message_in_disk", "poll_name_server_interval", "persist_consumer_offset_interval",
        "rebalance_interval_ms", "pull_batch_size", "offset_rpc_timeout_ms", "pull_timeout_ms",
        "pull_time_delay_mills_when_exception", "send_msg_timeout", "pull_idle_wait_ms", "ha_transfer_interval_ms",
        "consume_ms", "send_interval_ms") | {
        "access_message_in_memory_max_ratio": (0, 100), "queues": (1, 16), "messages": (0, 1_000_000),
        "body_size": (1, MAX_MESSAGE_SIZE), "brokers": (1, 64), "producers": (1, 64), "consumers": (1, 64),
        "namesrv": (1, 64)}

    def __attrs_post_init__(self) -> None:
        check_fields(self)

    def memory(self) -> int:
        """DefaultMessageStore#getMessage: TOTAL_PHYSICAL_MEMORY_SIZE * (ratio / 100.0)."""
        return int(self.total_physical_memory_size * (self.access_message_in_memory_max_ratio / 100.0))


# --- store ---


@record
class CqUnit:
    """One ConsumeQueue unit: the message's CommitLog offset and size (and, for the model, its id)."""

    phy: int
    size: int
    msg_id: str


@record
class Store:
    """A broker's CommitLog as the offsets world needs it: the consume queues and the max
    physical offset. A process crash keeps it (page cache)."""

    cqs: tuple[tuple[CqUnit, ...], ...] = ()
    max_phy: int = 0  # CommitLog#getMaxOffset
    log: tuple[tuple[int, CqUnit], ...] = ()  # (queue id, unit) in CommitLog order, for replication


# --- nodes ---


@record
class Broker:
    id: str
    broker_id: int  # 0 master, 1 slave
    store: Store
    offset_table: FrozenMap = EMPTY  # ConsumerOffsetManager.offsetTable: "topic@group" -> FrozenMap(queue -> offset)
    persisted: FrozenMap = EMPTY  # config/consumerOffset.json
    master_addr: str | None = None  # SlaveSynchronize.masterAddr (from registration results)
    next_persist_ms: int = -1
    next_register_ms: int = -1
    next_sync_ms: int = -1
    next_ha_ms: int = -1
    ha_in_flight: bool = False
    incarnation: int = 0


@record
class RouteSource:
    """A name server's RouteInfoManager reduced to one broker name: live brokers (addr -> (id, last update))."""

    id: str
    live: FrozenMap = EMPTY
    next_scan_ms: int = -1


@record
class Producer:
    id: str
    sent: int = 0
    in_flight: bool = False
    next_send_ms: int = 0
    acked: int = 0
    failed: int = 0


@record
class PullState:
    """One assigned queue: the PullRequest's nextOffset and its ProcessQueue (pulled, not yet consumed)."""

    next_offset: int = -1  # -1: the offset is being read from the broker
    process: tuple[tuple[int, str], ...] = ()  # (queue offset, msg id) in offset order
    in_flight: bool = False
    next_pull_ms: int = -1


@record
class Consumer:
    id: str
    broker_addrs: FrozenMap = EMPTY  # MQClientInstance.brokerAddrTable[broker-a]: brokerId -> addr
    assigned: FrozenMap = EMPTY  # queue id -> PullState (RebalanceImpl.processQueueTable)
    offset_table: FrozenMap = EMPTY  # RemoteBrokerOffsetStore.offsetTable: queue id -> offset
    pull_from_which_node: FrozenMap = EMPTY  # PullAPIWrapper.pullFromWhichNodeTable: queue id -> brokerId
    next_route_ms: int = -1
    route_in_flight: bool = False
    next_persist_ms: int = -1
    next_consume_ms: int = -1
    consumed: int = 0  # messages consumed by this incarnation
    incarnation: int = 0


# --- messages (RPC over the generic network unless one-way) ---


@record
class SendMessage:
    msg_id: str
    queue_id: int
    size: int


@record
class SendResult:
    code: ResponseCode
    queue_offset: int = -1


@record
class HaTransfer:
    """The slave's copy request (abstraction of HAClient's report): send what follows `from_phy`."""

    from_phy: int


@record
class HaBatch:
    units: tuple[tuple[int, CqUnit], ...]


@record
class RegisterBroker:
    broker_id: int


@record
class RegisterBrokerResult:
    master_addr: str | None


@record
class GetRouteInfo:
    topic: str = TOPIC


@record
class RouteData:
    broker_addrs: FrozenMap  # brokerId -> addr; empty: TOPIC_NOT_EXIST


@record
class PullMessage:
    """PullMessageRequestHeader; `has_commit_offset` is sysFlag's commit-offset bit."""

    group: str
    topic: str
    queue_id: int
    queue_offset: int
    max_msg_nums: int
    commit_offset: int
    has_commit_offset: bool


@record
class PullResponse:
    code: ResponseCode
    msgs: tuple[tuple[int, str], ...]
    next_begin_offset: int
    min_offset: int
    max_offset: int
    suggest_which_broker_id: int


@record
class UpdateConsumerOffset:
    group: str
    topic: str
    queue_id: int
    commit_offset: int


@record
class QueryConsumerOffset:
    group: str
    topic: str
    queue_id: int


@record
class QueryConsumerOffsetResponse:
    code: ResponseCode
    offset: int = -1


@record
class GetAllConsumerOffset:
    pass


@record
class ConsumerOffsetSerializeWrapper:
    offset_table: FrozenMap


# --- observations (the ghost's and the trace's) ---


@record
class Appended:
    """The master stored a message at this queue offset."""

    msg_id: str
    queue_id: int
    queue_offset: int


@record
class Sent:
    msg_id: str
    ok: bool


@record
class PullSent:
    """A consumer sent a pull (or found no broker): which brokerId it asked for and the address found."""

    queue_id: int
    offset: int
    broker_id: int
    addr: str | None
    commit: bool


@record
class PullServed:
    """A broker answered a pull (PullMessageProcessor): the store status, the suggestion and its inputs."""

    group: str
    queue_id: int
    offset: int
    status: GetMessageStatus
    code: ResponseCode
    suggest: int
    suggest_from_slave: bool
    next_begin_offset: int
    msgs: int
    stored_commit: int  # the piggy-backed offset stored, -1 if none


@record
class Consumed:
    queue_id: int
    queue_offset: int
    msg_id: str


@record
class CommitSent:
    """RemoteBrokerOffsetStore#updateConsumeOffsetToBroker: the address found (None: "broker not exist")."""

    queue_id: int
    offset: int
    addr: str | None


@record
class OffsetCommitted:
    """ConsumerOffsetManager#commitOffset on this broker (`old` is what it held, -1: nothing)."""

    group: str
    queue_id: int
    offset: int
    old: int
    via: str  # "update" (UPDATE_CONSUMER_OFFSET) or "pull" (piggy-backed)
    client: str = ""  # who sent it, as commitOffset's clientHost (the channel's remote address): a one-way commit's
    rpc: int = -1  # sender; or the RPC (a pull) whose requester sent it (-1: none)


@record
class OffsetQueried:
    """ConsumerManageProcessor#queryConsumerOffset on this broker: what it answered (`offset`; -1:
    QUERY_NOT_FOUND) to the RPC `rpc` (its requester is the consumer that asked)."""

    group: str
    queue_id: int
    offset: int
    rpc: int = -1


@record
class OffsetsSynced:
    """SlaveSynchronize#syncConsumerOffset ran: the master's table, put into the slave's with putAll."""

    master: str
    table: FrozenMap
    before: FrozenMap  # the slave's table before


@record
class OffsetsPersisted:
    """ConfigManager#persist wrote consumerOffset.json: the table it wrote."""

    table: FrozenMap


@record
class OffsetsLoaded:
    """A broker (re)started and loaded consumerOffset.json."""

    table: FrozenMap


@record
class OffsetRead:
    """A consumer took queue `queue_id` (rebalance) and resumes from `offset`, read from `addr`
    (`answer` the broker's offset, -1 QUERY_NOT_FOUND, -2 failure)."""

    queue_id: int
    offset: int
    addr: str | None
    answer: int


@record
class QueueDropped:
    queue_id: int
    why: str


@record
class OffsetCorrected:
    """OFFSET_ILLEGAL: the consumer takes the broker's nextBeginOffset in place of the offset it asked for."""

    queue_id: int
    asked: int
    corrected: int


@record
class MasterAddrLearnt:
    master_addr: str | None


@record
class RouteUpdated:
    broker_addrs: FrozenMap
