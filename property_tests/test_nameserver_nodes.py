"""Unit tests per transition branch: remoting channels, the NameServer, brokers, the producer's send path."""

import pytest

from reference_impl import core, rocketmq
from reference_impl.core.network import Send
from reference_impl.core.state import FrozenMap
from reference_impl.nameserver import broker as nb
from reference_impl.nameserver import ghost as gh
from reference_impl.nameserver import namesrv as ns
from reference_impl.nameserver import producer as pr
from reference_impl.nameserver import remoting as rm
from reference_impl.nameserver import route_info as ri
from reference_impl.nameserver import world as nw

NETTY = rm.NettyClientConfig()


def sends(outs):
    return [o for o in outs if isinstance(o, Send)]


def done(outs):
    return next((o for o in outs if isinstance(o, rm.Done)), None)


# --- remoting: invokeSync over a channel ---


def _client(*servers):
    return rm.init_client("p0", 0, servers).evolve(namesrv_index=0)


def test_invoke_connects_first_then_sends_on_the_channel():
    rc, outs = rm.invoke_sync(NETTY, _client("ns0", "ns1"), None, ns.GetRouteInfo(chan=None, topic="t"), 3000, "x", 0)
    (s,) = sends(outs)
    assert s.dst == "ns1" and isinstance(s.msg, rm.Connect) and s.timeout_ms == 3000  # ++namesrvIndex
    rc, outs = rm.on_invoke_response(NETTY, rc, s.ctx, rm.Connected(chan=s.msg.chan), 2)
    (req,) = sends(outs)
    assert req.msg.chan == s.msg.chan and req.timeout_ms == 2998 and rc.channels["ns1"] == s.msg.chan
    rc, outs = rm.on_invoke_response(NETTY, rc, req.ctx, ns.RouteResponse(code=17), 3)
    assert done(outs).response == ns.RouteResponse(code=17)
    rc2, outs = rm.invoke_sync(NETTY, rc, None, ns.GetRouteInfo(chan=None, topic="t"), 3000, "y", 10)
    assert [type(s.msg).__name__ for s in sends(outs)] == ["GetRouteInfo"]  # the chosen channel is reused


def test_refused_connect_tries_the_next_namesrv_then_gives_up():
    rc, outs = rm.invoke_sync(NETTY, _client("ns0", "ns1"), None, ns.GetRouteInfo(chan=None, topic="t"), 3000, "x", 0)
    rc, outs = rm.on_invoke_response(NETTY, rc, sends(outs)[0].ctx, None, 1)  # refused at once
    assert sends(outs)[0].dst == "ns0"
    rc, outs = rm.on_invoke_response(NETTY, rc, sends(outs)[0].ctx, None, 3001)  # connect timeout
    assert done(outs).error == rm.CONNECT_EXCEPTION and rc.channels == FrozenMap()


def test_connect_that_spends_the_budget_is_a_call_timeout_and_closes_the_new_channel():
    """apache/rocketmq#7056's mechanism: connect timeout (3000) + connect = more than mqClientApiTimeout."""
    rc, outs = rm.invoke_sync(NETTY, _client("ns0", "ns1").evolve(namesrv_index=1), None,
                              ns.GetRouteInfo(chan=None, topic="t"), 3000, "x", 0)
    assert sends(outs)[0].dst == "ns0"
    rc, outs = rm.on_invoke_response(NETTY, rc, sends(outs)[0].ctx, None, 3000)
    connect = sends(outs)[0]
    assert connect.dst == "ns1"
    rc, outs = rm.on_invoke_response(NETTY, rc, connect.ctx, rm.Connected(chan=connect.msg.chan), 3002)
    assert done(outs).error == rm.CALL_TIMEOUT_EXCEPTION and "ns1" not in rc.channels
    assert [type(s.msg).__name__ for s in sends(outs)] == ["Fin"]
    assert rc.namesrv_addr_choosed == "ns1"
    rc, outs = rm.invoke_sync(NETTY, rc, None, ns.GetRouteInfo(chan=None, topic="t"), 3000, "y", 4000)
    assert sends(outs)[0].dst == "ns0"  # round-robin starts at the unreachable one again


def test_request_timeout_closes_the_channel_with_a_fin_and_a_reset_closes_it_silently():
    rc = _client("ns0").evolve(channels=FrozenMap({"ns0": rm.ChannelId(client="p0", inc=0, k=1)}),
                               namesrv_addr_choosed="ns0")
    rc1, outs = rm.invoke_sync(NETTY, rc, None, ns.GetRouteInfo(chan=None, topic="t"), 3000, "x", 0)
    req = sends(outs)[0]
    rc2, outs = rm.on_invoke_response(NETTY, rc1, req.ctx, None, 3000)
    assert done(outs).error == rm.TIMEOUT_EXCEPTION and "ns0" not in rc2.channels
    assert isinstance(sends(outs)[0].msg, rm.Fin)
    rc3, outs = rm.on_invoke_response(NETTY, rc1, req.ctx, rm.Reset(), 5)
    assert done(outs).error == rm.SEND_REQUEST_EXCEPTION and "ns0" not in rc3.channels and not sends(outs)
    rc4, outs = rm.on_invoke_response(NETTY, rc1, req.ctx, None, 5)  # the peer's process died: failFast
    assert done(outs).error == rm.SEND_REQUEST_EXCEPTION and not sends(outs)


def test_fin_closes_only_the_channel_it_names():
    chan = rm.ChannelId(client="p0", inc=0, k=1)
    rc = _client("ns0").evolve(channels=FrozenMap({"ns0": chan}))
    assert rm.on_fin(rc, "ns0", rm.ChannelId(client="p0", inc=0, k=2)) is rc
    assert rm.on_fin(rc, "ns0", chan).channels == FrozenMap()
    assert rm.fins_on_crash(rc) == (("ns0", rm.Fin(chan=chan)),)


def test_oneway_needs_no_reply():
    rc = _client("ns0").evolve(channels=FrozenMap({"ns0": rm.ChannelId(client="p0", inc=0, k=1)}))
    _, outs = rm.invoke_sync(NETTY, rc, "ns0", ns.GetRouteInfo(chan=None, topic="t"), 3000, "x", 0, oneway=True)
    (s,) = sends(outs)
    assert s.timeout_ms is None and done(outs).error is None


# --- the NameServer ---

NSC = ns.NamesrvConfig()
CHAN = rm.ChannelId(client="b0-m", inc=0, k=1)


def _registered(now=0):
    n = ns.boot(NSC, "ns0", 0)
    n, reply, _ = ns.on_request(NSC, n, rm.Connect(chan=CHAN), 1, now)
    assert reply == rm.Connected(chan=CHAN)
    req = ns.RegisterBroker(chan=CHAN, cluster_name="c", broker_addr="b0-m", broker_name="b0", broker_id=0,
                            ha_server_addr="b0-m", topic_config=ri.TopicConfigSerializeWrapper(
                                topic_config_table=FrozenMap({"t": ri.TopicConfig(topic_name="t")})))
    n, reply, obs = ns.on_request(NSC, n, req, 2, now)
    assert reply.code == 0 and obs == (ns.BrokerRegistered(broker_addr="b0-m", broker_name="b0", broker_id=0,
                                                            first=True, topics=("t",)),)
    return n


def test_request_on_an_unknown_channel_is_reset():
    n = ns.boot(NSC, "ns0", 0)
    n2, reply, obs = ns.on_request(NSC, n, ns.GetRouteInfo(chan=CHAN, topic="t"), 1, 0)
    assert reply == rm.Reset() and n2 is n and obs == (ns.ConnectionReset(peer="b0-m"),)


def test_route_request_answers_route_or_topic_not_exist():
    n = _registered()
    assert ns.on_request(NSC, n, ns.GetRouteInfo(chan=CHAN, topic="t"), 3, 1)[1].route is not None
    assert ns.on_request(NSC, n, ns.GetRouteInfo(chan=CHAN, topic="u"), 3, 1)[1] == ns.RouteResponse(code=17)


def test_fin_of_the_registering_channel_drops_the_broker_at_once():
    n = _registered()
    n2, obs = ns.on_message(NSC, n, rm.Fin(chan=CHAN), "b0-m", 5)
    assert n2.rim.broker_live_table == FrozenMap() and obs == (ns.BrokerRemoved(broker_addr="b0-m",
                                                                                reason="channel_closed"),)
    assert ns.on_message(NSC, n, rm.Fin(chan=CHAN.evolve(k=9)), "b0-m", 5) == (n, ())


def test_idle_channel_is_closed_after_120_seconds():
    n = _registered(now=0)
    assert ns.wake_at(NSC, n) == NSC.scan_not_active_broker_initial_ms
    n = n.evolve(next_scan_ms=10 ** 9)
    assert ns.wake_at(NSC, n) == 120_000
    n2, outs = ns.on_tick(NSC, n, 120_000)
    assert ns.BrokerRemoved(broker_addr="b0-m", reason="channel_idle") in outs
    assert [s.dst for s in sends(outs)] == ["b0-m"] and n2.channels == FrozenMap()
    off = NSC.evolve(server_channel_max_idle_time_seconds=0)
    assert ns.wake_at(off, n) == 10 ** 9


def test_scan_expires_silent_brokers_and_closes_their_channels():
    n = _registered(now=0).evolve(next_scan_ms=125_000)
    n2, outs = ns.on_tick(NSC.evolve(server_channel_max_idle_time_seconds=0), n, 125_000)
    assert ns.BrokerRemoved(broker_addr="b0-m", reason="expired") in outs and n2.next_scan_ms == 135_000
    assert isinstance(sends(outs)[0].msg, rm.Fin)


def test_unregister_reports_what_the_id_removed():
    n = _registered()
    req = ns.UnregisterBroker(chan=CHAN, cluster_name="c", broker_addr="b0-m", broker_name="b0", broker_id=1)
    n2, reply, obs = ns.on_request(NSC, n, req, 3, 1)
    assert reply.code == 0 and obs[0].removed_addr is None
    assert "b0-m" not in n2.rim.broker_live_table and n2.rim.broker_addr_table["b0"].broker_addrs[0] == "b0-m"


def test_crash_loses_the_tables_and_only_a_process_crash_sends_fins():
    n = _registered()
    assert ns.crash(n, "process").fins == (("b0-m", rm.Fin(chan=CHAN)),)
    silent = ns.crash(n, "os")
    assert silent.fins is None and silent.machine_down
    restarted = ns.restart(NSC, silent, 50)
    assert restarted.rim == ri.RouteInfo() and restarted.inc == 1 and not restarted.machine_down


# --- brokers ---

BC = nb.BrokerConfig()
TOPICS = FrozenMap({"t": ri.TopicConfig(topic_name="t", read_queue_nums=4, write_queue_nums=4)})


def _broker(broker_id=0):
    b = nb.boot(BC, "b0-m" if broker_id == 0 else "b0-s", "b0", broker_id, ("ns0", "ns1"), TOPICS, 0)
    return b.evolve(remoting=b.remoting.evolve(channels=FrozenMap(
        {"ns0": rm.ChannelId(client=b.self_id, inc=0, k=1), "ns1": rm.ChannelId(client=b.self_id, inc=0, k=2)})))


def _reply(master=None):
    return nb.ns.RegisterBrokerResponse(code=0, ha_server_addr=master, master_addr=master)


def test_start_registers_with_every_namesrv_and_schedules_after_the_round():
    b = _broker(1)
    assert nb.wake_at(BC, b) == 0
    b, outs = nb.on_tick(BC, b, 0, 0)
    assert sorted(s.dst for s in sends(outs)) == ["ns0", "ns1"] and b.round.deadline == 6000
    by_dst = {s.dst: s for s in sends(outs)}
    b, outs = nb.on_response(BC, b, by_dst["ns1"].ctx, "ns1", _reply("b0-m"), 3)
    assert b.round is not None and not outs
    b, outs = nb.on_response(BC, b, by_dst["ns0"].ctx, "ns0", _reply(None), 4)
    assert outs == (nb.RegisterRoundDone(ok=("ns1", "ns0"), failed=(), master_addr="b0-m"),)
    assert b.master_addr == "b0-m" and b.ha_master_addr == "b0-m"  # results.get(0): the first answer
    assert b.next_register_ms == 10_004 and nb.wake_at(BC, b) == 10_004


def test_round_closes_at_the_timeout_and_periodic_rounds_follow_the_fixed_rate():
    b, outs = nb.on_tick(BC, _broker(), 0, 0)
    b, outs = nb.on_tick(BC, b, 6000, 0)
    assert outs == (nb.RegisterRoundDone(ok=(), failed=("ns0", "ns1"), master_addr=None),)
    assert b.next_register_ms == 16_000
    b, outs = nb.on_tick(BC, b, 16_000, 0)
    assert len(sends(outs)) == 2 and b.next_register_ms == 46_000


def test_a_timed_out_registration_closes_its_channel_with_a_fin():
    b, outs = nb.on_tick(BC, _broker(), 0, 0)
    ctx = next(s.ctx for s in sends(outs) if s.dst == "ns0")
    b, outs = nb.on_response(BC, b, ctx, "ns0", None, 6000)
    assert [s.dst for s in sends(outs)] == ["ns0"] and isinstance(sends(outs)[0].msg, rm.Fin)
    assert "ns0" not in b.remoting.channels


@pytest.mark.parametrize("broker_id,topic,queue,code", [
    (0, "t", 1, rocketmq.ResponseCode.SUCCESS), (1, "t", 1, rocketmq.ResponseCode.SERVICE_NOT_AVAILABLE),
    (0, "u", 1, rocketmq.ResponseCode.TOPIC_NOT_EXIST), (0, "t", 4, rocketmq.ResponseCode.SYSTEM_ERROR)])
def test_send_message_response_codes(broker_id, topic, queue, code):
    b = _broker(broker_id)
    req = nb.SendMessage(producer="p0", topic=topic, queue_id=queue, msg_id="m", attempt=0)
    b2, reply, obs = nb.on_request(BC, b, req, 1, 0)
    assert reply.code == code
    assert bool(obs) == (code == rocketmq.ResponseCode.SUCCESS)
    if obs:
        assert b2.queue_offsets[("t", 1)] == 1 and reply.queue_offset == 0


def test_shutdown_unregisters_from_each_namesrv_in_turn_then_exits():
    b, outs = nb.shutdown(BC, _broker(), 0)
    (first,) = sends(outs)
    assert first.dst == "ns0" and isinstance(first.msg, nb.ns.UnregisterBroker) and first.timeout_ms == 3000
    assert nb.send_message(BC, b, nb.SendMessage(producer="p", topic="t", queue_id=0, msg_id="m",
                                                 attempt=0))[1] == rm.Reset()
    b, outs = nb.on_response(BC, b, first.ctx, "ns0", None, 3000)  # a failure does not stop the loop
    assert [s.dst for s in sends(outs) if isinstance(s.msg, nb.ns.UnregisterBroker)] == ["ns1"]
    second = next(s for s in sends(outs) if isinstance(s.msg, nb.ns.UnregisterBroker))
    b, _ = nb.on_response(BC, b, second.ctx, "ns1", nb.ns.Response(code=0), 3002)
    assert b.exited and nb.wake_at(BC, b) == -1


def test_role_changes_register_oneway_with_the_new_id():
    b, outs = nb.change_to_slave(BC, _broker(0), 0, 5)
    assert b.broker_id == 1 and outs[0] == nb.RoleChanged(broker_id=1)
    assert all(s.timeout_ms is None and s.msg.broker_id == 1 for s in sends(outs))
    b, outs = nb.change_to_master(BC, b, 6)
    assert b.broker_id == 0 and all(s.msg.broker_id == 0 for s in sends(outs))


def test_create_topic_bumps_the_version_and_registers_that_topic_at_once():
    b, outs = nb.create_topic(BC, _broker(), ri.TopicConfig(topic_name="new"), 7)
    assert b.data_version == ri.DataVersion(timestamp=7, counter=1)
    assert all(set(s.msg.topic_config.topic_config_table) == {"new"} for s in sends(outs)) and len(sends(outs)) == 2


def test_an_increment_waits_for_the_round_in_flight_and_carries_the_version_of_when_it_is_sent():
    """BrokerController#registerIncrementBrokerData and #registerBrokerAll are synchronized: an
    updateTopic during a round waits for the round to return, then sends its topic with the
    DataVersion object as it is then (a second updateTopic meanwhile has moved it on)."""
    b, outs = nb.on_tick(BC, _broker(), 0, 0)
    ctx = {s.dst: s.ctx for s in sends(outs)}
    b, outs = nb.create_topic(BC, b, ri.TopicConfig(topic_name="A"), 7)
    assert outs == () and [tc.topic_name for tc in b.waiting_increments] == ["A"]
    b, _ = nb.create_topic(BC, b, ri.TopicConfig(topic_name="B"), 8)
    b, outs = nb.on_response(BC, b, ctx["ns0"], "ns0", _reply(), 9)
    assert outs == ()
    b, outs = nb.on_response(BC, b, ctx["ns1"], "ns1", _reply(), 10)
    assert isinstance(outs[0], nb.RegisterRoundDone)
    increments = [s.msg.topic_config for s in sends(outs)]
    assert [set(w.topic_config_table) for w in increments] == [{"A"}, {"A"}]
    assert all(w.data_version == ri.DataVersion(timestamp=8, counter=2) for w in increments)
    assert [tc.topic_name for tc in b.waiting_increments] == ["B"] and b.round is not None
    b, outs = nb.on_tick(BC, b, b.round.deadline, 0)  # the next waiting thread takes the monitor
    assert [set(s.msg.topic_config.topic_config_table) for s in sends(outs)] == [{"B"}, {"B"}]
    assert b.waiting_increments == ()


def test_broker_crash_keeps_the_store_and_a_process_crash_leaves_fins():
    b = _broker().evolve(queue_offsets=FrozenMap({("t", 0): 3}))
    crashed = nb.crash(b, "process")
    assert crashed.queue_offsets == b.queue_offsets and len(crashed.fins) == 2
    assert nb.crash(b, "os").fins is None
    restarted = nb.restart(BC, crashed, 9)
    assert restarted.remoting.inc == 1 and restarted.remoting.channels == FrozenMap() and not restarted.started
    assert restarted.data_version == b.data_version
    wiped = nb.restart(BC, nb.crash(b, "disk"), 9)
    assert wiped.queue_offsets == FrozenMap() and wiped.data_version == ri.DataVersion(timestamp=9)


# --- the producer's send path ---

PC = pr.ProducerConfig()
ROUTE = ri.TopicRouteData(
    queue_datas=tuple(ri.QueueData(broker_name=n, read_queue_nums=1, write_queue_nums=1, perm=6) for n in ("a", "b")),
    broker_datas=tuple(ri.BrokerData(cluster="c", broker_name=n, broker_addrs=FrozenMap({0: f"{n}-m"}))
                       for n in ("a", "b")))


def _producer(route=ROUTE):
    p = pr.boot(PC, "p0", ("ns0",), 0)
    p = p.evolve(client=p.client.evolve(remoting=p.client.remoting.evolve(
        channels=FrozenMap({"ns0": rm.ChannelId(client="p0", inc=0, k=1)}), namesrv_addr_choosed="ns0",
        namesrv_index=0)))
    if route is not None:
        info = pr.cr.topic_route_data_to_publish_info("TopicTest", route, 1).evolve(have_topic_router_info=True)
        p = p.evolve(publish=p.publish.set("TopicTest", info),
                     client=p.client.evolve(topic_route_table=FrozenMap({"TopicTest": route}),
                                            broker_addr_table=FrozenMap({n: FrozenMap({0: f"{n}-m"})
                                                                         for n in ("a", "b")})))
    return p


def _obs(outs, cls):
    return [o for o in outs if isinstance(o, cls)]


def test_send_ok_first_try():
    p, outs = pr.start_send(PC, _producer(), 100, 0)
    (s,) = sends(outs)
    p, outs = pr.on_response(PC, p, s.ctx, s.dst, nb.SendResponse(code=0, msg_id="p0-1"), 102)
    assert _obs(outs, pr.SendDone)[0].status == "SEND_OK" and p.op is None and p.next_send_ms == 202


def test_a_retryable_broker_code_retries_on_another_broker_a_non_retryable_one_throws():
    p, outs = pr.start_send(PC, _producer(), 100, 0)
    first = sends(outs)[0]
    p2, outs = pr.on_response(PC, p, first.ctx, first.dst, nb.SendResponse(code=14), 101)
    assert sends(outs)[0].dst != first.dst and _obs(outs, pr.QueueSelected)[0].path == "avoid_last"
    p3, outs = pr.on_response(PC, p, first.ctx, first.dst, nb.SendResponse(code=13), 101)  # MESSAGE_ILLEGAL
    assert _obs(outs, pr.SendDone)[0].status == "MQBrokerException:13" and not sends(outs)


def test_a_reset_retries_and_a_timeout_spends_the_budget():
    p, outs = pr.start_send(PC, _producer(), 100, 0)
    first = sends(outs)[0]
    _, outs = pr.on_response(PC, p, first.ctx, first.dst, rm.Reset(), 101)
    assert _obs(outs, pr.AttemptFailed)[0].error == rm.SEND_REQUEST_EXCEPTION and len(sends(outs)) == 1
    p, outs = pr.on_response(PC, p, first.ctx, first.dst, None, 3100)  # timed out: costTime == sendMsgTimeout
    second = sends(outs)[0]
    assert second.timeout_ms == 0 and _obs(outs, pr.AttemptSent)[0].elapsed_ms == 3000
    p, outs = pr.on_response(PC, p, second.ctx, second.dst, None, 3100)
    third = sends(outs)[0]  # the 0 ms attempt took no millisecond: the next one sees 3000 too
    assert third.timeout_ms == 0 and third.dst == first.dst and not _obs(outs, pr.SendDone)
    p, outs = pr.on_response(PC, p, third.ctx, third.dst, None, 3100)
    assert _obs(outs, pr.SendDone)[0].status == "MQClientException:" + rm.TIMEOUT_EXCEPTION


def test_a_timeout_read_a_millisecond_late_ends_the_send_with_call_timeout():
    """Java's clock after the timeout shows 3000 or 3001 ms; the send's draw decides (bit 15)."""
    p, outs = pr.start_send(PC, _producer(), 100, 1 << 15)
    first = sends(outs)[0]
    _, outs = pr.on_response(PC, p, first.ctx, first.dst, None, 3100)
    assert not sends(outs)
    assert _obs(outs, pr.SendDone)[0].status == "RemotingTooMuchRequestException:sendDefaultImpl call timeout"


def test_the_scheduled_route_update_fetches_topics_in_java_hash_set_order_and_stops_at_a_failure():
    """MQClientInstance#updateTopicRouteInfoFromNameServer(): a HashSet of the publish topics, so
    TopicTest (bucket 9) before TBW102 (bucket 11); a RemotingException ends the run."""
    assert ri.java_hash_map_order(["TBW102", "TopicTest"], 16) == ["TopicTest", "TBW102"]
    p = _producer()
    assert list(p.publish) == ["TBW102", "TopicTest"]
    p, outs = pr.on_tick(PC, p.evolve(next_send_ms=-1), p.client.next_poll_ms, 0)
    (fetch,) = sends(outs)
    assert fetch.msg.topic == "TopicTest"
    p, outs = pr.on_response(PC, p, fetch.ctx, "ns0", rm.Reset(), 20)
    assert not sends(outs) and not p.client.polling  # TBW102 is not fetched in this run


def test_no_route_fetches_it_then_the_default_topic_then_gives_up():
    p, outs = pr.start_send(PC, _producer(route=None), 100, 0)
    fetch = sends(outs)[0]
    assert fetch.msg.topic == "TopicTest"
    p, outs = pr.on_response(PC, p, fetch.ctx, "ns0", ns.RouteResponse(code=17), 101)
    default = sends(outs)[0]
    assert default.msg.topic == "TBW102"
    p, outs = pr.on_response(PC, p, default.ctx, "ns0", ns.RouteResponse(code=17), 102)
    assert _obs(outs, pr.SendDone)[0].status == "MQClientException:NO_ROUTE_INFO"


def test_a_failed_route_fetch_makes_the_send_throw():
    p, outs = pr.start_send(PC, _producer(route=None), 100, 0)
    p, outs = pr.on_response(PC, p, sends(outs)[0].ctx, "ns0", None, 3100)
    assert _obs(outs, pr.SendDone)[0].status == "IllegalStateException:" + rm.TIMEOUT_EXCEPTION


def test_a_broker_without_a_master_address_is_an_mqclientexception_and_retried():
    p = _producer()
    p = p.evolve(client=p.client.evolve(broker_addr_table=FrozenMap({"b": FrozenMap({0: "b-m"})})))
    p, outs = pr.start_send(PC, p.evolve(publish=p.publish.set("TopicTest", p.publish["TopicTest"].evolve(
        send_which_queue=-1))), 100, 0)
    assert _obs(outs, pr.AttemptFailed)[0].error == "MQClientException:BROKER_NOT_EXIST"
    assert sends(outs)[0].dst == "b-m"


def test_not_store_ok_status_returns_unless_retry_another_broker():
    p, outs = pr.start_send(PC, _producer(), 100, 0)
    s = sends(outs)[0]
    _, outs = pr.on_response(PC, p, s.ctx, s.dst, nb.SendResponse(code=11), 101)
    assert _obs(outs, pr.SendDone)[0].status == "SLAVE_NOT_AVAILABLE"
    retry = PC.evolve(retry_another_broker_when_not_store_ok=True)
    _, outs = pr.on_response(retry, p, s.ctx, s.dst, nb.SendResponse(code=11), 101)
    assert len(sends(outs)) == 1 and not _obs(outs, pr.SendDone)


def test_a_reply_for_an_earlier_attempt_is_ignored():
    p, outs = pr.start_send(PC, _producer(), 100, 0)
    first = sends(outs)[0]
    p, outs = pr.on_response(PC, p, first.ctx, first.dst, rm.Reset(), 101)
    assert pr.on_response(PC, p, first.ctx, first.dst, nb.SendResponse(code=0), 102) == (p, ())


# --- the ghost's duplicate accounting (NS-9 / NS-10) ---


def _copies(stored: list[int], failed: set[int]):
    w = core.init(nw.make_config(1, {"slaves": 0, "consumers": 0, "producers": 1}))
    g = w.ghost.evolve(msgs=w.ghost.msgs.set("p0-1", gh.MsgGhost(producer="p0", started_ms=0, stale=False,
                                                                   failed_attempts=frozenset(failed))))
    for a in stored:
        g = gh.ghost_update(g, w, 0, nb.MessageStored(msg_id="p0-1", attempt=a, producer="p0", topic="TopicTest",
                                                       queue_id=0, queue_offset=0))
    return g.stats


def test_copies_of_two_zero_budget_attempts_are_explained_in_either_order():
    """Both 0 ms attempts of a send are in flight together: the later one's copy may arrive first."""
    for order in ([1, 2], [2, 1]):
        s = _copies(order, {0, 1, 2})
        assert (s.retry_dups, s.unexplained_dups) == (1, 0), order


def test_a_copy_not_explained_by_a_failure_the_producer_saw_is_unexpected():
    assert _copies([0, 1], {1}).unexplained_dups == 1  # attempt 1 although attempt 0 was never seen failing
    assert _copies([1, 1], {0, 1}).unexplained_dups == 1  # one attempt stored twice
