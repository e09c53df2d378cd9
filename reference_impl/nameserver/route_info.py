"""RouteInfoManager: the NameServer's routing tables (RocketMQ 4.9.4), as pure functions.

Theory of operation
-------------------
Models `org.apache.rocketmq.namesrv.routeinfo.RouteInfoManager` and the route records
it hands out (`QueueData`, `BrokerData`, `TopicRouteData`, `DataVersion`,
`TopicConfig`). One `RouteInfo` value holds the five tables; every Java method is a
function `(tables, args) -> (tables', result)`. Nothing is persisted: a NameServer that
restarts starts from `RouteInfo()`, and NameServers never talk to each other.

- `register_broker` (REGISTER_BROKER): adds the broker name to its cluster, puts the
  address under its id (removing the same address under another id: "switch slave to
  master"), refreshes the live entry, and only for a master (id 0) whose topic config
  version changed or that registers first, creates or updates the topics' queue data.
  Slave registrations never create queue data; topics are never removed by it.
- Removal: `unregister_broker` (a broker shutting down; removes the address **by id**),
  `scan_not_active_broker` (entries idle for 120 s) and `on_channel_destroy` (a broker's
  TCP channel closed or went idle). A broker name disappears with its last address, and
  then its queue data from every topic.
- `pickup_topic_route_data` (GET_ROUTEINFO_BY_TOPIC): the topic's queue data plus the
  broker data of those names, or None (TOPIC_NOT_EXIST).

Java iterates HashMaps; the model iterates in insertion order, but where the order decides
the outcome: `on_channel_destroy`'s scans (the live entry holding a channel, the first broker
data holding an address, the first cluster holding a broker name) stop at the first match and go
in Java's HashMap order (`java_hash_map_order`). Routes are returned sorted
by broker name, as every client sorts them before use. The read-write lock is implicit:
each call is one atomic step.
"""

from __future__ import annotations

from typing import ClassVar

from reference_impl.core.inputs import check_fields
from reference_impl.core.state import EMPTY, FrozenMap, record
from reference_impl.rocketmq import MASTER_ID

BROKER_CHANNEL_EXPIRED_TIME = 1000 * 60 * 2  # RouteInfoManager.BROKER_CHANNEL_EXPIRED_TIME


class PermName:
    """org.apache.rocketmq.common.constant.PermName"""

    PERM_PRIORITY = 8
    PERM_READ = 4
    PERM_WRITE = 2
    PERM_INHERIT = 1

    @staticmethod
    def is_readable(perm: int) -> bool:
        return (perm & PermName.PERM_READ) == PermName.PERM_READ

    @staticmethod
    def is_writeable(perm: int) -> bool:
        return (perm & PermName.PERM_WRITE) == PermName.PERM_WRITE


@record
class DataVersion:
    """org.apache.rocketmq.common.DataVersion: equal iff timestamp and counter are equal."""

    timestamp: int = 0
    counter: int = 0

    def next_version(self, now: int) -> DataVersion:
        """DataVersion#nextVersion"""
        return DataVersion(timestamp=now, counter=self.counter + 1)


@record
class TopicConfig:
    """org.apache.rocketmq.common.TopicConfig (the fields registration carries)."""

    topic_name: str
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = PermName.PERM_READ | PermName.PERM_WRITE
    topic_sys_flag: int = 0

    # TopicValidator: a topic name has at most 127 characters; the model's cap is 1024 queues.
    LIMITS: ClassVar[dict] = {"topic_name": (1, 127), "read_queue_nums": (1, 1024), "write_queue_nums": (1, 1024),
                              "perm": (0, 7)}

    def __attrs_post_init__(self) -> None:
        check_fields(self)


@record
class TopicConfigSerializeWrapper:
    """The REGISTER_BROKER body: the broker's topic configs and their version."""

    topic_config_table: FrozenMap = EMPTY  # topic -> TopicConfig
    data_version: DataVersion = DataVersion()


@record
class QueueData:
    """org.apache.rocketmq.common.protocol.route.QueueData (compareTo: by brokerName)."""

    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0


@record
class BrokerData:
    """org.apache.rocketmq.common.protocol.route.BrokerData; `broker_addrs`: id -> address."""

    cluster: str
    broker_name: str
    broker_addrs: FrozenMap = EMPTY


@record
class TopicRouteData:
    """org.apache.rocketmq.common.protocol.route.TopicRouteData, lists sorted by broker name."""

    queue_datas: tuple = ()
    broker_datas: tuple = ()
    order_topic_conf: str | None = None
    filter_server_table: FrozenMap = EMPTY


@record
class BrokerLiveInfo:
    """RouteInfoManager.BrokerLiveInfo; `channel` is the TCP channel the registration came on."""

    last_update_timestamp: int
    data_version: DataVersion
    channel: object
    ha_server_addr: str


@record
class RegisterBrokerResult:
    """org.apache.rocketmq.common.namesrv.RegisterBrokerResult"""

    ha_server_addr: str | None = None
    master_addr: str | None = None


@record
class RouteInfo:
    """The RouteInfoManager tables."""

    topic_queue_table: FrozenMap = EMPTY  # topic -> (brokerName -> QueueData)
    broker_addr_table: FrozenMap = EMPTY  # brokerName -> BrokerData
    cluster_addr_table: FrozenMap = EMPTY  # cluster -> frozenset of brokerName
    broker_live_table: FrozenMap = EMPTY  # brokerAddr -> BrokerLiveInfo
    filter_server_table: FrozenMap = EMPTY  # brokerAddr -> tuple of filter server addresses


# --- registration ---


def register_broker(rim: RouteInfo, cluster_name: str, broker_addr: str, broker_name: str, broker_id: int,
                    ha_server_addr: str, topic_config_wrapper: TopicConfigSerializeWrapper | None,
                    filter_server_list: tuple | None, channel: object, now: int
                    ) -> tuple[RouteInfo, RegisterBrokerResult, bool]:
    """RouteInfoManager#registerBroker. Returns the tables, the result, and whether this
    was the broker's first registration (`registerFirst`)."""
    names = rim.cluster_addr_table.get(cluster_name, frozenset())
    clusters = rim.cluster_addr_table if broker_name in names else rim.cluster_addr_table.set(
        cluster_name, names | {broker_name})
    broker_data = rim.broker_addr_table.get(broker_name)
    register_first = broker_data is None
    if broker_data is None:
        broker_data = BrokerData(cluster=cluster_name, broker_name=broker_name)
    # "Switch slave to master: first remove <1, IP:PORT> in namesrv, then add <0, IP:PORT>".
    addrs = {bid: a for bid, a in broker_data.broker_addrs.items() if not (a == broker_addr and bid != broker_id)}
    old_addr = addrs.get(broker_id)
    addrs[broker_id] = broker_addr
    # Java's HashMap<Long, String> of small ids iterates by id; so does the map here (its JSON form).
    broker_data = broker_data.evolve(broker_addrs=FrozenMap(sorted(addrs.items())))
    register_first = register_first or old_addr is None
    rim = rim.evolve(cluster_addr_table=clusters,
                     broker_addr_table=rim.broker_addr_table.set(broker_name, broker_data))
    if topic_config_wrapper is not None and broker_id == MASTER_ID:
        if is_broker_topic_config_changed(rim, broker_addr, topic_config_wrapper.data_version) or register_first:
            for tc in topic_config_wrapper.topic_config_table.values():
                rim = create_and_update_queue_data(rim, broker_name, tc)
    version = topic_config_wrapper.data_version if topic_config_wrapper is not None else DataVersion()
    live = BrokerLiveInfo(last_update_timestamp=now, data_version=version, channel=channel,
                          ha_server_addr=ha_server_addr)
    rim = rim.evolve(broker_live_table=rim.broker_live_table.set(broker_addr, live))
    if filter_server_list is not None:
        rim = rim.evolve(filter_server_table=rim.filter_server_table.set(broker_addr, tuple(filter_server_list))
                         if filter_server_list else rim.filter_server_table.without(broker_addr))
    result = RegisterBrokerResult()
    if broker_id != MASTER_ID:
        master_addr = broker_data.broker_addrs.get(MASTER_ID)
        if master_addr is not None:
            master_live = rim.broker_live_table.get(master_addr)
            if master_live is not None:
                result = RegisterBrokerResult(ha_server_addr=master_live.ha_server_addr, master_addr=master_addr)
    return rim, result, register_first


def is_broker_topic_config_changed(rim: RouteInfo, broker_addr: str, data_version: DataVersion) -> bool:
    """RouteInfoManager#isBrokerTopicConfigChanged"""
    prev = query_broker_topic_config(rim, broker_addr)
    return prev is None or prev != data_version


def query_broker_topic_config(rim: RouteInfo, broker_addr: str) -> DataVersion | None:
    """RouteInfoManager#queryBrokerTopicConfig"""
    live = rim.broker_live_table.get(broker_addr)
    return live.data_version if live is not None else None


def update_broker_info_update_timestamp(rim: RouteInfo, broker_addr: str, timestamp: int) -> RouteInfo:
    """RouteInfoManager#updateBrokerInfoUpdateTimestamp"""
    live = rim.broker_live_table.get(broker_addr)
    if live is None:
        return rim
    return rim.evolve(broker_live_table=rim.broker_live_table.set(
        broker_addr, live.evolve(last_update_timestamp=timestamp)))


def create_and_update_queue_data(rim: RouteInfo, broker_name: str, tc: TopicConfig) -> RouteInfo:
    """RouteInfoManager#createAndUpdateQueueData"""
    qd = QueueData(broker_name=broker_name, read_queue_nums=tc.read_queue_nums,
                   write_queue_nums=tc.write_queue_nums, perm=tc.perm, topic_sys_flag=tc.topic_sys_flag)
    queues = rim.topic_queue_table.get(tc.topic_name, EMPTY)
    if queues.get(broker_name) == qd:
        return rim
    return rim.evolve(topic_queue_table=rim.topic_queue_table.set(tc.topic_name, queues.set(broker_name, qd)))


# --- admin ---


def wipe_write_perm_of_broker_by_lock(rim: RouteInfo, broker_name: str) -> tuple[RouteInfo, int]:
    """RouteInfoManager#wipeWritePermOfBrokerByLock: perm &= ~PERM_WRITE; returns the topics touched."""
    return _operate_write_perm(rim, broker_name, lambda perm: perm & ~PermName.PERM_WRITE)


def add_write_perm_of_broker_by_lock(rim: RouteInfo, broker_name: str) -> tuple[RouteInfo, int]:
    """RouteInfoManager#addWritePermOfBrokerByLock: perm = PERM_READ | PERM_WRITE."""
    return _operate_write_perm(rim, broker_name, lambda perm: PermName.PERM_READ | PermName.PERM_WRITE)


def _operate_write_perm(rim: RouteInfo, broker_name: str, change) -> tuple[RouteInfo, int]:
    """RouteInfoManager#operateWritePermOfBroker"""
    table = dict(rim.topic_queue_table.items())
    count = 0
    for topic, queues in rim.topic_queue_table.items():
        qd = queues.get(broker_name)
        if qd is not None:
            table[topic] = queues.set(broker_name, qd.evolve(perm=change(qd.perm)))
            count += 1
    return rim.evolve(topic_queue_table=FrozenMap(table)), count


def delete_topic(rim: RouteInfo, topic: str, cluster_name: str | None = None) -> RouteInfo:
    """RouteInfoManager#deleteTopic(topic), or with a cluster (DELETE_TOPIC_IN_NAMESRV with a
    clusterName, as mqadmin deleteTopic sends in 4.9.4) #deleteTopic(topic, clusterName): only
    the queue data of that cluster's broker names, and the topic when none is left."""
    if cluster_name is None:
        return rim.evolve(topic_queue_table=rim.topic_queue_table.without(topic))
    queues = rim.topic_queue_table.get(topic)
    names = rim.cluster_addr_table.get(cluster_name)
    if queues is None or not names:
        return rim
    left = FrozenMap((name, qd) for name, qd in queues.items() if name not in names)
    table = rim.topic_queue_table.set(topic, left) if left else rim.topic_queue_table.without(topic)
    return rim.evolve(topic_queue_table=table)


# --- removal ---


def unregister_broker(rim: RouteInfo, cluster_name: str, broker_addr: str, broker_name: str, broker_id: int
                      ) -> tuple[RouteInfo, str | None]:
    """RouteInfoManager#unregisterBroker. The address is removed from brokerAddrTable by
    *id*, without checking it is `broker_addr`. Returns the address removed from it."""
    rim = rim.evolve(broker_live_table=rim.broker_live_table.without(broker_addr),
                     filter_server_table=rim.filter_server_table.without(broker_addr))
    removed_addr = None
    remove_broker_name = False
    broker_data = rim.broker_addr_table.get(broker_name)
    if broker_data is not None:
        removed_addr = broker_data.broker_addrs.get(broker_id)
        addrs = broker_data.broker_addrs.without(broker_id)
        if not addrs:
            rim = rim.evolve(broker_addr_table=rim.broker_addr_table.without(broker_name))
            remove_broker_name = True
        else:
            rim = rim.evolve(broker_addr_table=rim.broker_addr_table.set(
                broker_name, broker_data.evolve(broker_addrs=addrs)))
    if remove_broker_name:
        names = rim.cluster_addr_table.get(cluster_name)
        if names is not None:
            names = names - {broker_name}
            rim = rim.evolve(cluster_addr_table=rim.cluster_addr_table.set(cluster_name, names) if names
                             else rim.cluster_addr_table.without(cluster_name))
        rim = remove_topic_by_broker_name(rim, broker_name)
    return rim, removed_addr


def remove_topic_by_broker_name(rim: RouteInfo, broker_name: str | None) -> RouteInfo:
    """RouteInfoManager#removeTopicByBrokerName: drop the name's queue data; drop topics left empty."""
    table = {}
    for topic, queues in rim.topic_queue_table.items():
        queues = queues.without(broker_name)
        if queues:
            table[topic] = queues
    return rim.evolve(topic_queue_table=FrozenMap(table))


def scan_not_active_broker(rim: RouteInfo, now: int, expired_ms: int = BROKER_CHANNEL_EXPIRED_TIME
                           ) -> tuple[RouteInfo, tuple]:
    """RouteInfoManager#scanNotActiveBroker: remove every live entry not refreshed for
    `expired_ms`, close its channel, and destroy it. Returns the (address, channel) removed."""
    removed = []
    for addr, live in tuple(rim.broker_live_table.items()):
        if live.last_update_timestamp + expired_ms < now:
            rim = rim.evolve(broker_live_table=rim.broker_live_table.without(addr))
            rim = on_channel_destroy(rim, addr, live.channel)
            removed.append((addr, live.channel))
    return rim, tuple(removed)


# RouteInfoManager's HashMaps' initial capacities (its constructor)
BROKER_ADDR_TABLE_CAPACITY = 128
CLUSTER_ADDR_TABLE_CAPACITY = 32
BROKER_LIVE_TABLE_CAPACITY = 256


def java_string_hash(s: str) -> int:
    """java.lang.String#hashCode over the string's UTF-16 code units, as a signed 32-bit int."""
    h = 0
    units = s.encode("utf-16-be")
    for k in range(0, len(units), 2):
        h = (31 * h + (units[k] << 8 | units[k + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def java_hash_map_order(keys: list[str], capacity: int) -> list[str]:
    """The order in which a java.util.HashMap<String, ?> created with `capacity` iterates `keys`
    (given in insertion order): by bucket, `(h ^ (h >>> 16)) & (table size - 1)`, then in
    insertion order within a bucket. The table doubles whenever it holds more than 3/4 of its
    size; a table that grew and then shrank keeps its size in Java, which this does not know (the
    order can differ only past 3/4 of the initial capacity: 96 broker names, 24 clusters)."""
    size = capacity
    while len(keys) > size * 3 // 4:
        size *= 2

    def bucket(k: str) -> int:
        h = java_string_hash(k) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (size - 1)
    return sorted(keys, key=bucket)  # stable: insertion order within a bucket


def on_channel_destroy(rim: RouteInfo, remote_addr: str, channel: object) -> RouteInfo:
    """RouteInfoManager#onChannelDestroy: find the broker whose live entry holds `channel`
    (else take `remote_addr`, the peer's socket address, which names no broker when the
    channel is a client's or an old one), and remove that address everywhere. Its scans stop
    at the first match, so they go through the tables in Java's HashMap order (an address listed
    under two broker names, a broker name in two clusters: conform --protocol nameserver found
    the cluster scan's order matters)."""
    found = None
    if channel is not None:
        for addr in java_hash_map_order(list(rim.broker_live_table), BROKER_LIVE_TABLE_CAPACITY):
            if rim.broker_live_table[addr].channel == channel:
                found = addr
                break
    if found is None:
        found = remote_addr
    if not found:
        return rim
    rim = rim.evolve(broker_live_table=rim.broker_live_table.without(found),
                     filter_server_table=rim.filter_server_table.without(found))
    name_found = None
    remove_broker_name = False
    table = dict(rim.broker_addr_table.items())
    for name in java_hash_map_order(list(rim.broker_addr_table), BROKER_ADDR_TABLE_CAPACITY):
        bd = rim.broker_addr_table[name]
        if name_found is not None:
            break
        for bid, addr in bd.broker_addrs.items():
            if addr == found:
                name_found = bd.broker_name
                bd = bd.evolve(broker_addrs=bd.broker_addrs.without(bid))
                table[name] = bd
                break
        # Java applies the emptiness check to every broker data the scan visits.
        if not bd.broker_addrs:
            remove_broker_name = True
            del table[name]
    rim = rim.evolve(broker_addr_table=FrozenMap(table))
    if name_found is not None and remove_broker_name:
        for cluster in java_hash_map_order(list(rim.cluster_addr_table), CLUSTER_ADDR_TABLE_CAPACITY):
            names = rim.cluster_addr_table[cluster]
            if name_found in names:
                names = names - {name_found}
                rim = rim.evolve(cluster_addr_table=rim.cluster_addr_table.set(cluster, names) if names
                                 else rim.cluster_addr_table.without(cluster))
                break
    if remove_broker_name:
        rim = remove_topic_by_broker_name(rim, name_found)
    return rim


# --- queries ---


def pickup_topic_route_data(rim: RouteInfo, topic: str) -> TopicRouteData | None:
    """RouteInfoManager#pickupTopicRouteData: None when the topic has no queue data or
    none of its broker names has broker data (GET_ROUTEINFO_BY_TOPIC answers TOPIC_NOT_EXIST)."""
    queues = rim.topic_queue_table.get(topic)
    if queues is None:
        return None
    broker_datas = []
    filters = {}
    for name in sorted(queues):
        bd = rim.broker_addr_table.get(name)
        if bd is not None:
            broker_datas.append(bd)
            if rim.filter_server_table:
                for addr in bd.broker_addrs.values():
                    if addr in rim.filter_server_table:
                        filters[addr] = rim.filter_server_table[addr]
    if not broker_datas:
        return None
    return TopicRouteData(queue_datas=tuple(queues[name] for name in sorted(queues)),
                          broker_datas=tuple(broker_datas), filter_server_table=FrozenMap(filters))


def get_all_cluster_info(rim: RouteInfo) -> tuple[FrozenMap, FrozenMap]:
    """RouteInfoManager#getAllClusterInfo: (brokerAddrTable, clusterAddrTable)."""
    return rim.broker_addr_table, rim.cluster_addr_table


def get_all_topic_list(rim: RouteInfo) -> frozenset:
    """RouteInfoManager#getAllTopicList"""
    return frozenset(rim.topic_queue_table)


def get_topics_by_cluster(rim: RouteInfo, cluster: str) -> frozenset:
    """RouteInfoManager#getTopicsByCluster"""
    names = rim.cluster_addr_table.get(cluster, frozenset())
    return frozenset(t for t, queues in rim.topic_queue_table.items() if any(n in queues for n in names))
