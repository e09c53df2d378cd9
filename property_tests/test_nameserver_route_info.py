"""RouteInfoManager (reference_impl.nameserver.route_info): the RocketMQ 4.9.4 namesrv tests, and one test per
branch."""

from reference_impl import rocketmq
from reference_impl.core.state import FrozenMap
from reference_impl.nameserver import route_info as ri

CLUSTER = "cluster"


def addr(name: str, broker_id: int) -> str:
    """RouteInfoManagerTestBase#getBrokerAddr: cluster-brokerName:brokerId."""
    return f"{CLUSTER}-{name}:{broker_id}"


def topics(prefix: str = "topic", n: int = 10) -> ri.TopicConfigSerializeWrapper:
    """RouteInfoManagerTestBase#genTopicConfig: n topics, 8 read / 8 write queues, perm 6."""
    table = FrozenMap((f"{prefix}-{i}", ri.TopicConfig(topic_name=f"{prefix}-{i}", read_queue_nums=8,
                                                        write_queue_nums=8)) for i in range(n))
    return ri.TopicConfigSerializeWrapper(topic_config_table=table)


def register(rim, name, broker_id, a=None, wrapper=None, now=1000, channel=None):
    a = a or addr(name, broker_id)
    rim, result, first = ri.register_broker(rim, CLUSTER, a, name, broker_id, a, wrapper or topics(), (),
                                            channel or ("chan", a), now)
    return rim, result, first


def register_cluster(names: int = 3, per_name: int = 3) -> ri.RouteInfo:
    """RouteInfoManagerTestBase#registerCluster(rim, "cluster", "broker", 3, 3, "topic", 10)."""
    rim = ri.RouteInfo()
    for j in range(names):
        for i in range(per_name):
            rim, _, _ = register(rim, f"broker-{j}", i)
    return rim


# --- RouteInfoManagerBrokerRegisterTest ---


def test_scan_not_active_broker():
    """RouteInfoManagerBrokerRegisterTest#testScanNotActiveBroker: each broker set inactive is scanned out alone."""
    rim = register_cluster()
    for j in range(3):
        for i in range(3):
            rim = ri.update_broker_info_update_timestamp(rim, addr(f"broker-{j}", i), 0)
            rim, removed = ri.scan_not_active_broker(rim, now=1000 + ri.BROKER_CHANNEL_EXPIRED_TIME)
            assert len(removed) == 1


def test_master_change_from_slave():
    """RouteInfoManagerBrokerRegisterTest#testMasterChangeFromSlave: a slave's address registered as id 0 is master."""
    rim = register_cluster()
    route = ri.pickup_topic_route_data(rim, "topic-0")
    bd = next(b for b in route.broker_datas if b.broker_name == "broker-0")
    assert bd.broker_addrs[rocketmq.MASTER_ID] == addr("broker-0", 0)
    rim, _, _ = register(rim, "broker-0", rocketmq.MASTER_ID, a=addr("broker-0", 1))
    route = ri.pickup_topic_route_data(rim, "topic-0")
    bd = next(b for b in route.broker_datas if b.broker_name == "broker-0")
    assert bd.broker_addrs[rocketmq.MASTER_ID] == addr("broker-0", 1)
    assert 1 not in bd.broker_addrs  # "first remove <1, IP:PORT>, then add <0, IP:PORT>"


def test_unregister_broker():
    """RouteInfoManagerBrokerRegisterTest#testUnregisterBroker: id 2 of broker-0 leaves the route."""
    rim = register_cluster()
    rim, removed = ri.unregister_broker(rim, CLUSTER, addr("broker-0", 2), "broker-0", 2)
    assert removed == addr("broker-0", 2)
    bd = next(b for b in ri.pickup_topic_route_data(rim, "topic-0").broker_datas if b.broker_name == "broker-0")
    assert 2 not in bd.broker_addrs


# --- RouteInfoManagerBrokerPermTest ---


def _with_perm(perm: int) -> ri.RouteInfo:
    wrapper = ri.TopicConfigSerializeWrapper(topic_config_table=FrozenMap(
        {"t": ri.TopicConfig(topic_name="t", perm=perm)}))
    return register(ri.RouteInfo(), "broker-0", 0, wrapper=wrapper)[0]


def test_add_write_perm_of_broker_by_lock():
    """RouteInfoManagerBrokerPermTest#addWritePermOfBrokerByLock: READ becomes READ|WRITE, one topic touched."""
    rim, count = ri.add_write_perm_of_broker_by_lock(_with_perm(ri.PermName.PERM_READ), "broker-0")
    assert count == 1
    assert rim.topic_queue_table["t"]["broker-0"].perm == ri.PermName.PERM_READ | ri.PermName.PERM_WRITE


def test_wipe_write_perm_of_broker_by_lock():
    """RouteInfoManagerBrokerPermTest#wipeWritePermOfBrokerByLock: READ stays READ, one topic touched."""
    rim, count = ri.wipe_write_perm_of_broker_by_lock(_with_perm(ri.PermName.PERM_READ), "broker-0")
    assert count == 1
    assert rim.topic_queue_table["t"]["broker-0"].perm == ri.PermName.PERM_READ
    rim, _ = ri.wipe_write_perm_of_broker_by_lock(_with_perm(6), "broker-0")
    assert rim.topic_queue_table["t"]["broker-0"].perm == ri.PermName.PERM_READ


# --- RouteInfoManagerStaticRegisterTest ---


def test_get_all_cluster_info():
    """RouteInfoManagerStaticRegisterTest#testGetAllClusterInfo: one cluster with the three broker names."""
    broker_addrs, clusters = ri.get_all_cluster_info(register_cluster())
    assert clusters == FrozenMap({CLUSTER: frozenset({"broker-0", "broker-1", "broker-2"})})
    assert set(broker_addrs) == {"broker-0", "broker-1", "broker-2"}


def test_get_all_topic_list_and_topics_by_cluster():
    """RouteInfoManagerStaticRegisterTest#testGetAllTopicList / #testGetTopicsByCluster: the ten topics."""
    rim = register_cluster()
    want = {f"topic-{i}" for i in range(10)}
    assert ri.get_all_topic_list(rim) == want
    assert ri.get_topics_by_cluster(rim, CLUSTER) == want


def test_pickup_topic_route_data():
    """RouteInfoManagerStaticRegisterTest#testPickupTopicRouteData: all brokers, QueueData 8/8/perm 6/sysFlag 0."""
    route = ri.pickup_topic_route_data(register_cluster(), "topic-0")
    assert [bd.broker_name for bd in route.broker_datas] == ["broker-0", "broker-1", "broker-2"]
    assert all(dict(bd.broker_addrs) == {i: addr(bd.broker_name, i) for i in range(3)} for bd in route.broker_datas)
    assert all((qd.read_queue_nums, qd.write_queue_nums, qd.perm, qd.topic_sys_flag) == (8, 8, 6, 0)
               for qd in route.queue_datas)
    assert [qd.broker_name for qd in route.queue_datas] == ["broker-0", "broker-1", "broker-2"]


def test_delete_topic():
    """RouteInfoManagerStaticRegisterTest#testDeleteTopic: no route afterwards."""
    assert ri.pickup_topic_route_data(ri.delete_topic(register_cluster(), "topic-0"), "topic-0") is None


def test_delete_topic_of_a_cluster_drops_only_that_clusters_queue_data():
    """RouteInfoManager#deleteTopic(topic, clusterName): the cluster's broker names lose the topic;
    another cluster's stay, and the topic goes when nobody is left."""
    rim = register_cluster(names=2, per_name=1)
    rim, _, _ = ri.register_broker(rim, "other", "x:1", "broker-x", 0, "x:1", ri.TopicConfigSerializeWrapper(
        topic_config_table=FrozenMap({"topic-0": ri.TopicConfig(topic_name="topic-0")})), None, None, 0)
    left = ri.delete_topic(rim, "topic-0", "cluster")
    assert set(left.topic_queue_table["topic-0"]) == {"broker-x"}
    assert "topic-0" not in ri.delete_topic(left, "topic-0", "other").topic_queue_table
    assert ri.delete_topic(rim, "topic-0", "nobody") == rim


# --- 4.9.0 RouteInfoManagerTest ---


def test_slave_registration_creates_no_queue_data():
    """RouteInfoManagerTest (4.9.0) #testRegisterBroker/#testWipeWritePermOfBrokerByLock: a broker registered
    with id 1234 creates no queue data, so wiping write perm touches no topic; no route for unknown topics."""
    wrapper = ri.TopicConfigSerializeWrapper(topic_config_table=FrozenMap(
        {"unit-test": ri.TopicConfig(topic_name="unit-test")}))
    rim, _, _ = ri.register_broker(ri.RouteInfo(), "default-cluster", "127.0.0.1:10911", "default-broker", 1234,
                                   "127.0.0.1:1001", wrapper, (), None, 0)
    assert ri.wipe_write_perm_of_broker_by_lock(rim, "default-broker")[1] == 0
    assert ri.pickup_topic_route_data(rim, "unit_test") is None
    assert ri.pickup_topic_route_data(rim, "unit-test") is None  # the slave alone gives no route in 4.9.x


# --- branches of registerBroker ---


def test_first_registration_creates_queue_data_and_later_ones_need_a_new_version():
    """registerFirst creates queue data; the same DataVersion ignores changed topic configs; a new one applies them."""
    v1 = ri.DataVersion(timestamp=5, counter=0)
    w1 = ri.TopicConfigSerializeWrapper(topic_config_table=FrozenMap({"t": ri.TopicConfig(topic_name="t")}),
                                        data_version=v1)
    rim, _, first = register(ri.RouteInfo(), "b", 0, wrapper=w1)
    assert first and rim.topic_queue_table["t"]["b"].write_queue_nums == 16
    w2 = w1.evolve(topic_config_table=FrozenMap({"t": ri.TopicConfig(topic_name="t", write_queue_nums=2)}))
    rim, _, first = register(rim, "b", 0, wrapper=w2)
    assert not first and rim.topic_queue_table["t"]["b"].write_queue_nums == 16
    rim, _, _ = register(rim, "b", 0, wrapper=w2.evolve(data_version=v1.next_version(9)))
    assert rim.topic_queue_table["t"]["b"].write_queue_nums == 2


def test_registration_never_removes_topics():
    """Topics the broker no longer has stay in the NameServer (only added or updated)."""
    rim, _, _ = register(ri.RouteInfo(), "b", 0, wrapper=topics(n=2))
    empty = ri.TopicConfigSerializeWrapper(data_version=ri.DataVersion(timestamp=1, counter=1))
    rim, _, _ = register(rim, "b", 0, wrapper=empty)
    assert set(rim.topic_queue_table) == {"topic-0", "topic-1"}


def test_slave_learns_master_only_while_the_master_is_live():
    """A slave's result carries the master's address and HA address iff id 0 has a live entry."""
    rim, result, _ = register(ri.RouteInfo(), "b", 1)
    assert result == ri.RegisterBrokerResult()
    rim, _, _ = register(rim, "b", 0)
    rim, result, _ = register(rim, "b", 1)
    assert result == ri.RegisterBrokerResult(ha_server_addr=addr("b", 0), master_addr=addr("b", 0))
    rim = rim.evolve(broker_live_table=rim.broker_live_table.without(addr("b", 0)))
    assert register(rim, "b", 1)[1] == ri.RegisterBrokerResult()


def test_filter_server_list_put_and_removed():
    rim, _, _ = ri.register_broker(ri.RouteInfo(), "c", "a", "b", 0, "a", topics(), ("fs1",), None, 0)
    assert rim.filter_server_table["a"] == ("fs1",)
    rim, _, _ = ri.register_broker(rim, "c", "a", "b", 0, "a", topics(), (), None, 0)
    assert "a" not in rim.filter_server_table


# --- removal paths ---


def test_scan_expiry_is_strictly_after_120_seconds():
    rim, _, _ = register(ri.RouteInfo(), "b", 0, now=0)
    assert ri.scan_not_active_broker(rim, 120_000)[1] == ()
    rim, removed = ri.scan_not_active_broker(rim, 120_001)
    assert [a for a, _ in removed] == [addr("b", 0)]
    assert rim == ri.RouteInfo(cluster_addr_table=FrozenMap(), topic_queue_table=FrozenMap())


def test_channel_destroy_removes_the_broker_holding_the_channel():
    """onChannelDestroy finds the address by channel; the last address takes the name, cluster and topics along."""
    rim, _, _ = register(ri.RouteInfo(), "b", 0, channel="c0")
    rim, _, _ = register(rim, "b", 1, channel="c1")
    rim = ri.on_channel_destroy(rim, "10.0.0.1:55555", "c0")
    assert set(rim.broker_live_table) == {addr("b", 1)}
    assert dict(rim.broker_addr_table["b"].broker_addrs) == {1: addr("b", 1)}
    assert "b" in rim.topic_queue_table["topic-0"]  # master loss keeps the queue data while a slave lives
    rim = ri.on_channel_destroy(rim, "10.0.0.1:55556", "c1")
    assert rim.broker_addr_table == FrozenMap() and rim.cluster_addr_table == FrozenMap()
    assert rim.topic_queue_table == FrozenMap()


def test_channel_destroy_of_an_unknown_channel_changes_nothing():
    """A client's channel (or an old one) is not in the live table: the remote address names no broker."""
    rim, _, _ = register(ri.RouteInfo(), "b", 0, channel="c0")
    assert ri.on_channel_destroy(rim, "10.0.0.1:55555", "other") == rim


def test_unregister_removes_by_id_not_by_address():
    """unregisterBroker(addr, id) removes brokerAddrs[id] whatever address it holds."""
    rim, _, _ = register(ri.RouteInfo(), "b", 0)
    rim, _, _ = register(rim, "b", 1)
    rim, removed = ri.unregister_broker(rim, CLUSTER, addr("b", 0), "b", 1)
    assert removed == addr("b", 1)
    assert dict(rim.broker_addr_table["b"].broker_addrs) == {0: addr("b", 0)}
    assert set(rim.broker_live_table) == {addr("b", 1)}


def test_unregister_last_address_removes_name_and_topics():
    rim, _, _ = register(ri.RouteInfo(), "b", 0)
    rim, _ = ri.unregister_broker(rim, CLUSTER, addr("b", 0), "b", 0)
    assert rim.topic_queue_table == FrozenMap() and rim.cluster_addr_table == FrozenMap()


def test_pickup_needs_broker_data_for_some_queue_data():
    rim, _, _ = register(ri.RouteInfo(), "b", 0)
    rim = rim.evolve(broker_addr_table=FrozenMap())
    assert ri.pickup_topic_route_data(rim, "topic-0") is None
