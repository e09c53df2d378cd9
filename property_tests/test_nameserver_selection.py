"""Queue selection and client routes: the 4.9.4 client tests, and one test per branch."""

from reference_impl.core.state import FrozenMap
from reference_impl.nameserver import client_routes as cr
from reference_impl.nameserver import namesrv as ns
from reference_impl.nameserver import queue_selection as qs
from reference_impl.nameserver import remoting as rm
from reference_impl.nameserver import route_info as ri

A, B = "BrokerA", "BrokerB"
ON = qs.FaultStrategyConfig(send_latency_fault_enable=True)


# --- LatencyFaultToleranceImplTest ---


def test_update_fault_item():
    """LatencyFaultToleranceImplTest#testUpdateFaultItem: A unavailable, B (unknown) available."""
    lft = qs.update_fault_item(qs.LatencyFaultTolerance(), A, 3000, 3000, now=0)
    assert not qs.is_available(lft, A, 0) and qs.is_available(lft, B, 0)


def test_is_available():
    """LatencyFaultToleranceImplTest#testIsAvailable: unavailable for 50 ms, available 70 ms later."""
    lft = qs.update_fault_item(qs.LatencyFaultTolerance(), A, 3000, 50, now=0)
    assert not qs.is_available(lft, A, 0) and qs.is_available(lft, A, 70)


def test_remove():
    """LatencyFaultToleranceImplTest#testRemove"""
    lft = qs.update_fault_item(qs.LatencyFaultTolerance(), A, 3000, 3000, now=0)
    assert not qs.is_available(lft, A, 0)
    assert qs.is_available(qs.remove(lft, A), A, 0)


def test_pick_one_at_least():
    """LatencyFaultToleranceImplTest#testPickOneAtLeast: the lower latency wins (half = 1 -> first)."""
    lft = qs.update_fault_item(qs.LatencyFaultTolerance(), A, 1000, 3000, now=0)
    assert qs.pick_one_at_least(lft, 0, 0)[1] == A
    lft = qs.update_fault_item(lft, B, 1001, 3000, now=0)
    assert qs.pick_one_at_least(lft, 0, 0)[1] == A


def test_pick_one_at_least_orders_available_first_then_latency_then_start():
    lft = qs.LatencyFaultTolerance()
    assert qs.pick_one_at_least(lft, 0, 0) == (lft, None)
    lft = qs.update_fault_item(lft, "slow-but-up", 5000, 0, now=0)
    lft = qs.update_fault_item(lft, "fast-but-down", 1, 60_000, now=0)
    assert qs.pick_one_at_least(lft, 10, 0)[1] == "slow-but-up"
    # four items: half = 2, whichItemWorst picks one of the better two, round-robin
    for name, lat in (("c", 3), ("d", 4)):
        lft = qs.update_fault_item(lft, name, lat, 60_000, now=0)
    picks = set()
    for _ in range(2):
        lft, name = qs.pick_one_at_least(lft, 10, 7)
        picks.add(name)
    assert picks == {"slow-but-up", "fast-but-down"}


# --- MQFaultStrategyTest (commit 244340fc92, never merged; the values follow the 4.9.4 tables) ---


def test_compute_not_available_duration():
    """MQFaultStrategyTest#testComputeNotAvailableDuration: the latencyMax / notAvailableDuration tables."""
    table = {-1: 0, 20: 0, 80: 0, 120: 0, 600: 30000, 1200: 60000, 2300: 120000, 3500: 180000, 16000: 600000}
    assert {lat: qs.compute_not_available_duration(ON, lat) for lat in table} == table
    assert qs.compute_not_available_duration(ON, qs.ISOLATION_LATENCY_MS) == 600000


def _tpi(*brokers: str, queues: int = 1) -> cr.TopicPublishInfo:
    route = ri.TopicRouteData(
        queue_datas=tuple(ri.QueueData(broker_name=b, read_queue_nums=queues, write_queue_nums=queues, perm=6)
                          for b in brokers),
        broker_datas=tuple(ri.BrokerData(cluster="c", broker_name=b, broker_addrs=FrozenMap({0: b})) for b in brokers))
    return cr.topic_route_data_to_publish_info("t", route)


def test_select_one_message_queue_with_latency_fault():
    """MQFaultStrategyTest#testSelectOneMessageQueue: index 0 over A, B, C; isolated brokers are skipped."""
    tpi = _tpi("A", "B", "C")
    lft = qs.LatencyFaultTolerance()
    pick = [qs.select_one_message_queue(ON, tpi.evolve(send_which_queue=-1), lft, None, 0, 0)[2].mq.broker_name]
    lft = qs.mq_update_fault_item(ON, lft, "A", 3000, True, 0)
    pick.append(qs.select_one_message_queue(ON, tpi.evolve(send_which_queue=-1), lft, None, 0, 0)[2].mq.broker_name)
    lft = qs.mq_update_fault_item(ON, lft, "B", 3000, True, 0)
    pick.append(qs.select_one_message_queue(ON, tpi.evolve(send_which_queue=-1), lft, None, 0, 0)[2].mq.broker_name)
    lft = qs.mq_update_fault_item(ON, lft, "C", 3000, True, 0)
    sel = qs.select_one_message_queue(ON, tpi.evolve(send_which_queue=-1), lft, None, 0, 0)[2]
    assert pick == ["A", "B", "C"] and sel.mq is not None


# --- branches of the selection ---


def test_round_robin_avoids_the_last_broker_while_another_has_a_queue():
    tpi = _tpi("A", "B", queues=4)
    off = qs.FaultStrategyConfig()
    for start in range(8):
        _, _, sel = qs.select_one_message_queue(off, tpi.evolve(send_which_queue=start), qs.LatencyFaultTolerance(),
                                                "A", 0, 0)
        assert sel.mq.broker_name == "B" and sel.path == "avoid_last"
    _, _, sel = qs.select_one_message_queue(off, _tpi("A"), qs.LatencyFaultTolerance(), "A", 0, 0)
    assert sel.path == "only_last" and sel.mq.broker_name == "A"


def test_fallback_rewrites_the_shared_queue_in_4_9_4_and_copies_it_in_4_9_8():
    tpi = _tpi("A", "B", queues=2).evolve(send_which_queue=0)
    lft = qs.mq_update_fault_item(ON, qs.LatencyFaultTolerance(), "A", 5, True, 0)
    lft = qs.mq_update_fault_item(ON, lft, "B", 9, True, 0)
    new_tpi, _, sel = qs.select_one_message_queue(ON, tpi, lft, "B", 0, 0)
    assert sel.path == "fault_pick_one_at_least" and sel.mq.broker_name == "A"
    pos, old, new = sel.rewrite
    assert new_tpi.message_queue_list[pos] == new == sel.mq and tpi.message_queue_list[pos] == old
    copy_cfg = ON.evolve(fault_fallback_mutates_queue=False)
    same_tpi, _, sel = qs.select_one_message_queue(copy_cfg, tpi, lft, "B", 0, 0)
    assert sel.rewrite is None and same_tpi.message_queue_list == tpi.message_queue_list


def test_fallback_to_round_robin_when_the_picked_broker_left_the_route():
    tpi = _tpi("A", queues=1).evolve(send_which_queue=0)
    lft = qs.update_fault_item(qs.LatencyFaultTolerance(), "gone", 1, 0, now=0)
    lft = qs.mq_update_fault_item(ON, lft, "A", 5, True, 0)
    _, lft2, sel = qs.select_one_message_queue(ON, tpi, lft, "A", 0, 0)
    assert sel.path == "fault_fallback" and sel.mq.broker_name == "A" and "gone" not in lft2.fault_item_table


def test_update_fault_item_does_nothing_when_disabled():
    lft = qs.LatencyFaultTolerance()
    assert qs.mq_update_fault_item(qs.FaultStrategyConfig(), lft, "A", 5000, True, 0) is lft


def test_thread_local_index_starts_from_its_seed():
    assert qs.increment_and_get(None, 41) == (42, 42)
    assert qs.increment_and_get(0x7FFFFFFF, 0)[1] == 0  # Math.abs(index & POSITIVE_MASK)


# --- MQClientInstanceTest and route conversion ---


def test_topic_route_data_to_topic_publish_info():
    """MQClientInstanceTest#testTopicRouteData2TopicPublishInfo: BrokerA (master only), read 3 / write 4 -> 4 queues."""
    route = ri.TopicRouteData(
        queue_datas=(ri.QueueData(broker_name="BrokerA", read_queue_nums=3, write_queue_nums=4, perm=6),),
        broker_datas=(ri.BrokerData(cluster="DefaultCluster", broker_name="BrokerA",
                                    broker_addrs=FrozenMap({0: "127.0.0.1:10911"})),))
    info = cr.topic_route_data_to_publish_info("TopicTest", route)
    assert len(info.message_queue_list) == 4 and not info.have_topic_router_info


def test_publish_info_skips_unwritable_and_masterless_brokers_subscribe_info_keeps_them():
    route = ri.TopicRouteData(
        queue_datas=(ri.QueueData(broker_name="a", read_queue_nums=2, write_queue_nums=2, perm=4),
                     ri.QueueData(broker_name="b", read_queue_nums=2, write_queue_nums=2, perm=6),
                     ri.QueueData(broker_name="c", read_queue_nums=1, write_queue_nums=1, perm=6)),
        broker_datas=(ri.BrokerData(cluster="x", broker_name="a", broker_addrs=FrozenMap({0: "a0"})),
                      ri.BrokerData(cluster="x", broker_name="b", broker_addrs=FrozenMap({1: "b1"})),
                      ri.BrokerData(cluster="x", broker_name="c", broker_addrs=FrozenMap({0: "c0"}))))
    assert [str(q) for q in cr.topic_route_data_to_publish_info("t", route).message_queue_list] == ["c:0"]
    assert {str(q) for q in cr.topic_route_data_to_subscribe_info("t", route)} == {"a:0", "a:1", "b:0", "b:1", "c:0"}


def _ci() -> cr.ClientInstance:
    return cr.boot(cr.ClientConfig(), "p0", ("ns0",), 0)


ROUTE = ri.TopicRouteData(queue_datas=(ri.QueueData(broker_name="b", read_queue_nums=1, write_queue_nums=1,
                                                     perm=6),),
                          broker_datas=(ri.BrokerData(cluster="x", broker_name="b",
                                                      broker_addrs=FrozenMap({0: "b-m"})),))


def test_route_done_keeps_the_old_route_on_topic_not_exist_and_errors():
    ci, _, route = cr.route_done(_ci(), "t", rm.Done(purpose=("poll", "t"), target="ns0",
                                                     response=ns.RouteResponse(code=0, route=ROUTE)), False)
    assert route == ROUTE and ci.topic_route_table["t"] == ROUTE and ci.broker_addr_table["b"][0] == "b-m"
    gone = rm.Done(purpose=("poll", "t"), target="ns0", response=ns.RouteResponse(code=17))
    ci2, seen, route = cr.route_done(ci, "t", gone, True)
    assert ci2 is ci and route is None and seen.outcome == "TOPIC_NOT_EXIST"
    ci3, seen, _ = cr.route_done(ci, "t", rm.Done(purpose=("poll", "t"), target="ns0", error=rm.TIMEOUT_EXCEPTION),
                                 True)
    assert ci3 is ci and seen.outcome == rm.TIMEOUT_EXCEPTION


def test_route_done_updates_only_when_changed_or_needed():
    done = rm.Done(purpose=("poll", "t"), target="ns0", response=ns.RouteResponse(code=0, route=ROUTE))
    ci, _, _ = cr.route_done(_ci(), "t", done, False)
    assert cr.route_done(ci, "t", done, False)[1].outcome == "unchanged"
    assert cr.route_done(ci, "t", done, True)[1].outcome == "changed"  # isNeedUpdateTopicRouteInfo


def test_clean_offline_broker_drops_addresses_no_route_mentions():
    ci = _ci().evolve(broker_addr_table=FrozenMap({"b": FrozenMap({0: "b-m", 1: "b-s"}), "z": FrozenMap({0: "z"})}),
                      topic_route_table=FrozenMap({"t": ROUTE}))
    ci = cr.clean_offline_broker(cr.ClientConfig(), ci)
    assert dict(ci.broker_addr_table) == {"b": FrozenMap({0: "b-m"})}
    assert cr.find_broker_address_in_publish(ci, "b") == "b-m" and cr.find_broker_address_in_publish(ci, "z") is None


def test_poll_run_stops_at_the_first_remoting_exception():
    cc = cr.ClientConfig()
    ci = _ci().evolve(poll_topics=("u",), polling=True)
    ci2, outs = cr.poll_done(cc, ci, rm.Done(purpose=("poll", "t"), target="ns0", error=rm.TIMEOUT_EXCEPTION), 5)
    assert ci2.poll_topics == () and not ci2.polling and outs == ()
    ci3, outs = cr.poll_done(cc, ci, rm.Done(purpose=("poll", "t"), target="ns0",
                                             response=ns.RouteResponse(code=17)), 5)
    assert ci3.polling and [type(o).__name__ for o in outs] == ["Send"]  # the next topic
