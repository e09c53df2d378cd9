"""NameServer routing, broker liveness and producer failover properties (docs/properties.md: NS-*).

Each predicate reads a world of the `nameserver` protocol: node states and the ghost of
reference_impl.nameserver.ghost. Where RocketMQ 4.9.4 is known to break a property, its
`expected_when` names the concrete cause found in this history; a violation without one
is unexpected, whatever the fault profile.
"""

from __future__ import annotations

from typing import Any

from reference_impl import core, rocketmq
from reference_impl.nameserver import client_routes as cr
from reference_impl.nameserver import ghost as ng
from reference_impl.nameserver import producer as pr
from reference_impl.nameserver import route_info as ri
from spec import bounds, nameserver_decisions
from spec.properties import Property, register



def _roles(w: core.World) -> ng.Roles:
    return ng.roles(w.cfg.ids)


def _live_namesrvs(w: core.World):
    for i in _roles(w).namesrvs:
        if w.alive[i]:
            yield w.cfg.ids[i], w.nodes[i]


# --- NS-1: a broker that stops registering leaves within 120 s + one scan ---


def ns1_bound_ms(w: core.World) -> int:
    """brokerChannelExpiredTime (120 s) plus one scanNotActiveBroker period (10 s): RocketMQ's defaults
    (spec/bounds.py), or the user's overrides, never the reference's own constants."""
    return bounds.setting(w, "broker_channel_expired_time") + bounds.setting(w, "scan_not_active_broker_interval_ms")


def _stale_entries(w: core.World) -> list[str]:
    bound = ns1_bound_ms(w)
    return [f"{nid} still lists {addr}, last registered {w.now - live.last_update_timestamp} ms ago"
            for nid, n in _live_namesrvs(w) for addr, live in n.rim.broker_live_table.items()
            if w.now - live.last_update_timestamp > bound]


def ns1(w: core.World) -> bool:
    bound = ns1_bound_ms(w)
    for _, n in _live_namesrvs(w):
        for live in n.rim.broker_live_table.values():
            if w.now - live.last_update_timestamp > bound:
                return False
    return True


def ns1_explain(w: core.World) -> str:
    return "; ".join(_stale_entries(w)) + f" (bound {ns1_bound_ms(w)} ms)"


# --- NS-2: a NameServer lists only brokers that registered with it and were not removed since ---


def _unregistered_listings(w: core.World) -> list[tuple[str, str]]:
    regs = w.ghost.registered
    return [(nid, addr) for nid, n in _live_namesrvs(w) for addr in ng.listed(n.rim)
            if addr not in regs.get(nid, frozenset())]


def ns2(w: core.World) -> bool:
    return not _unregistered_listings(w)


def ns2_explain(w: core.World) -> str:
    return "; ".join(f"{nid} lists {addr}, which did not register with it or was removed since"
                     for nid, addr in _unregistered_listings(w))


def ns2_expected(w: core.World, event: Any = None) -> str | None:
    bad = _unregistered_listings(w)
    if bad and all(b in w.ghost.unregistered_by_id for b in bad):
        who = ", ".join(f"{addr} on {nid}" for nid, addr in bad)
        return (f"RouteInfoManager#unregisterBroker removes brokerAddrs by id, not by address: {who} lost its live "
                f"entry but keeps its route entry under its old id")
    return None


# --- NS-3: after the faults stop, every NameServer converges within a registration period and a scan ---


def ns3_bound_ms(w: core.World) -> int:
    """One registration period (registerNameServerPeriod, clamped to 10..60 s), one scan, and the quiet
    tail's message delays."""
    return (bounds.register_period_ms(w) + bounds.setting(w, "scan_not_active_broker_interval_ms")
            + 2 * core.CALM_DELAY_MS[1])


def _expected_queues(w: core.World) -> ri.FrozenMap:
    table: dict = {}
    for b in _roles(w).brokers:
        n = w.nodes[b]
        if w.alive[b] and n.broker_id == rocketmq.MASTER_ID:
            for tc in n.topic_config.values():
                table.setdefault(tc.topic_name, {})[n.broker_name] = ri.QueueData(
                    broker_name=n.broker_name, read_queue_nums=tc.read_queue_nums,
                    write_queue_nums=tc.write_queue_nums, perm=tc.perm, topic_sys_flag=tc.topic_sys_flag)
    return table


def _unconverged(w: core.World) -> list[tuple[str, str]]:
    """(NameServer, what differs) once the bound after the quiet tail has passed."""
    h = w.history
    if not h.calm or w.now - h.calm_at_ms <= ns3_bound_ms(w):
        return []
    want = ng.route_expected(w)
    queues = _expected_queues(w)
    bad = []
    for nid, n in _live_namesrvs(w):
        got = {name: bd.broker_addrs for name, bd in n.rim.broker_addr_table.items()}
        if got != dict(want.items()):
            missing = sorted(a for addrs in want.values() for a in addrs.values() if a not in ng.listed(n.rim))
            bad.append((nid, f"brokers {missing or '(ids differ)'} missing or wrong"))
        elif {t: dict(q.items()) for t, q in n.rim.topic_queue_table.items()} != queues:
            bad.append((nid, "topic queue data differs"))
    return bad


def ns3(w: core.World) -> bool:
    return not _unconverged(w)


def ns3_explain(w: core.World) -> str:
    return "; ".join(f"{nid}: {what}" for nid, what in _unconverged(w)) + (
        f" {w.now - w.history.calm_at_ms} ms after faults stopped (bound {ns3_bound_ms(w)} ms)")


INCREMENTAL_FIRST = (
    "{ns}'s first REGISTER_BROKER from {addr} (at {t} ms, after {ns} restarted or dropped it) came from "
    "registerIncrementBrokerData (an operator's updateTopic), which carries one topic; every later registration "
    "carried the same DataVersion, so isBrokerTopicConfigChanged kept {topics} out (RouteInfoManager#registerBroker "
    "adds topics only when the version changed or the registration is the first)")


DELETE_STOPPED = (
    "mqadmin deleteTopic dropped {topic} on {addr} at {t} ms, then stopped at {stopped} ({reason}) before it asked "
    "{ns} (DeleteTopicSubCommand#deleteTopic throws at the first broker that fails; 4.9.4 asks slaves too, which "
    "refuse: ISSUE #4644, fixed in 4.9.5); registrations never remove a topic (RouteInfoManager#registerBroker "
    "only adds), so {ns} still lists the queue data it held then")
DELETE_MISSED = (
    "mqadmin deleteTopic dropped {name}'s queue data of {topic} at {ns} at {t} ms without asking its master {addr}, "
    "which the NameServer the command asked did not list; {addr} still holds {topic} under the DataVersion {ns} "
    "has ({version}), so isBrokerTopicConfigChanged keeps it out of every later registration")


def _queue_gap_cause(w: core.World, nid: str, n: Any, topic: str, name: str, masters: dict) -> str | None:
    """Why NameServer `nid` lists broker `name`'s queue data of `topic` other than its live master
    holds it, with the evidence that reproduces the very entry (or its absence): None without."""
    g, index = w.ghost, _roles(w).index
    addr = masters.get(name)
    listed = n.rim.topic_queue_table.get(topic, {}).get(name)
    if addr is None:
        return None
    held = topic in w.nodes[index[addr]].topic_config
    if listed is not None and not held:
        seen = g.stale_topics.get((nid, topic, name))
        if seen is None or seen[1] != addr or seen[2] != listed:
            return None
        return DELETE_STOPPED.format(topic=topic, addr=addr, t=seen[0], ns=nid, stopped=seen[3], reason=seen[4])
    if listed is None and held:
        live = n.rim.broker_live_table.get(addr)
        version = w.nodes[index[addr]].data_version
        if live is None or live.data_version != version:
            return None
        kept = g.kept_topics.get((nid, topic, name))
        if kept is not None and kept[1] == addr and kept[2] == version:
            return DELETE_MISSED.format(name=name, topic=topic, ns=nid, t=kept[0], addr=addr,
                                        version=f"{version.timestamp}/{version.counter}")
        seen = g.partial_first.get((nid, addr))
        if seen is not None and topic in seen[1]:
            return INCREMENTAL_FIRST.format(ns=nid, addr=addr, t=seen[0], topics=topic)
    return None


def _queue_gap_causes(w: core.World, nid: str, n: Any) -> list[str] | None:
    """Why NameServer `nid`'s topic queue data differs from the live masters' topics, one cause
    with its evidence for every differing (topic, broker); None when some difference has none."""
    want = _expected_queues(w)
    have = {t: dict(q.items()) for t, q in n.rim.topic_queue_table.items()}
    masters = {w.nodes[b].broker_name: w.cfg.ids[b] for b in _roles(w).brokers
               if w.alive[b] and w.nodes[b].broker_id == rocketmq.MASTER_ID}
    causes = []
    for topic in sorted(set(want) | set(have)):
        for name in sorted(set(want.get(topic, {})) | set(have.get(topic, {}))):
            if want.get(topic, {}).get(name) != have.get(topic, {}).get(name):
                cause = _queue_gap_cause(w, nid, n, topic, name, masters)
                if cause is None:
                    return None
                if cause not in causes:
                    causes.append(cause)
    return causes


def ns3_expected(w: core.World, event: Any = None) -> str | None:
    calm_at = w.history.calm_at_ms
    causes, reset = [], []
    for nid, n in _live_namesrvs(w):
        missing = False
        for addrs in ng.route_expected(w).values():
            for addr in addrs.values():
                if addr not in ng.listed(n.rim):
                    t = w.ghost.resets.get((nid, addr), -1)
                    if t < calm_at:
                        return None
                    reset.append(f"{addr}'s registration to {nid} at {t} ms")
                    missing = True
        if not missing and {t: dict(q.items()) for t, q in n.rim.topic_queue_table.items()} != _expected_queues(w):
            gap = _queue_gap_causes(w, nid, n)
            if gap is None:
                return None
            causes += gap
    if reset:
        causes.insert(0, "a NameServer restarted without the brokers hearing a FIN (machine crash, or the FIN was "
                         "lost), so the broker's next REGISTER_BROKER went down a dead channel and was reset (RST); "
                         "the one after comes a registration period later: " + ", ".join(reset))
    return "; ".join(causes) or None


# --- NS-4: a retry never picks the broker that just failed when another broker has a queue ---


def ns4(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    if not obs:
        return True
    for _, o in obs:
        if type(o) is pr.QueueSelected and ng.repeats_failed_broker(o):
            return False
    return True


def ns4_expected(w: core.World, event: Any = None) -> str | None:
    """Expected only while every repeat so far went through the fault strategy's fallback: a
    step may select several times (one send's attempts fail at once one after another), and
    each repeat must be explained, not just the step's last selection."""
    g = w.ghost
    return g.fallback_repeat if g.unexplained_repeat is None else None


def ns4_explain(w: core.World) -> str:
    g = w.ghost
    return g.unexplained_repeat or g.fallback_repeat or ""


# --- NS-6: a route's master entry names a broker acting as master ---


def _false_masters(w: core.World) -> list[tuple[str, str]]:
    index = _roles(w).index
    bad = []
    for nid, n in _live_namesrvs(w):
        for bd in n.rim.broker_addr_table.values():
            addr = bd.broker_addrs.get(rocketmq.MASTER_ID)
            if addr is not None and (addr not in index or w.nodes[index[addr]].broker_id != rocketmq.MASTER_ID):
                bad.append((nid, addr))
    return bad


def ns6(w: core.World) -> bool:
    return not _false_masters(w)


def ns6_explain(w: core.World) -> str:
    return "; ".join(f"{nid} names {addr} master of its broker name, but it is not (broker id "
                     f"{w.nodes[_roles(w).index[addr]].broker_id})" for nid, addr in _false_masters(w))


def ns6_expected(w: core.World, event: Any = None) -> str | None:
    """Expected only while the latest registration of that broker to reach that NameServer came
    before its last role change, or was one it sent as master (id 0) that arrived late: a
    registration with the new id replaces the id-0 entry."""
    bad = _false_masters(w)
    g = w.ghost
    if not bad:
        return None
    for nid, addr in bad:
        changed = g.role_changes.get(addr)
        at, broker_id = g.last_registered.get((nid, addr), (-1, rocketmq.MASTER_ID))
        if changed is None or (at > changed and broker_id != rocketmq.MASTER_ID):
            return None
    who = ", ".join(sorted({addr for _, addr in bad}))
    return (f"{who} changed role (BrokerController#changeToSlave registers oneway) and no registration of it with "
            "its new id has reached the NameServer since, so it keeps the old id-0 entry until one does")


# --- NS-7: a producer's publish queues are exactly what its route yields ---


_DERIVED: dict[int, tuple] = {}  # id(route) -> (route, topic, queues): routes are immutable


def _derived_queues(topic: str, route: ri.TopicRouteData) -> tuple:
    hit = _DERIVED.get(id(route))
    if hit is not None and hit[0] is route and hit[1] == topic:
        return hit[2]
    if len(_DERIVED) > 1024:
        _DERIVED.clear()
    queues = cr.topic_route_data_to_publish_info(topic, route).message_queue_list
    _DERIVED[id(route)] = (route, topic, queues)
    return queues


_MATCHED: dict[int, tuple] = {}  # id(queue list) -> (queue list, route) it was found to match


def _rewritten_lists(w: core.World) -> list[tuple[str, str, int]]:
    bad = []
    for i in _roles(w).producers:
        p = w.nodes[i]
        for topic, info in p.publish.items():
            route = info.topic_route_data
            if route is None:
                continue
            queues = info.message_queue_list
            hit = _MATCHED.get(id(queues))
            if hit is not None and hit[0] is queues and hit[1] is route:
                continue
            if _derived_queues(topic, route) != queues:
                bad.append((w.cfg.ids[i], topic, info.epoch))
            else:
                if len(_MATCHED) > 1024:
                    _MATCHED.clear()
                _MATCHED[id(queues)] = (queues, route)
    return bad


def ns7(w: core.World) -> bool:
    return not _rewritten_lists(w)


def ns7_explain(w: core.World) -> str:
    out = []
    for pid, topic, _ in _rewritten_lists(w):
        info = w.nodes[_roles(w).index[pid]].publish[topic]
        out.append(f"{pid}'s queues for {topic} are {[str(q) for q in info.message_queue_list]}")
    return "; ".join(out)


def ns7_expected(w: core.World, event: Any = None) -> str | None:
    bad = _rewritten_lists(w)
    if bad and all(b in w.ghost.rewritten for b in bad):
        return ("MQFaultStrategy#selectOneMessageQueue (4.9.4-4.9.7) found no available broker and rewrote the "
                "MessageQueue it took from the route list (setBrokerName/setQueueId): the list shares that object, "
                f"so {', '.join(sorted({p for p, _, _ in bad}))} keep(s) the rewritten queue until the route changes")
    return None


# --- NS-8: the send budget ---


def ns8(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    if not obs:
        return True
    timeout = bounds.setting(after, "send_msg_timeout")
    retries = bounds.setting(after, "retry_times_when_send_failed")
    for _, o in obs:
        t = type(o)
        if t is pr.AttemptSent and (o.elapsed_ms > timeout or o.attempt > retries):
            return False
        if t is pr.SendDone and o.attempts > 1 + retries:
            return False
    return True


# --- NS-9 / NS-10: duplicates ---


def ns9(w: core.World) -> bool:
    return w.ghost.stats.duplicated_msgs == 0


def ns9_expected(w: core.World, event: Any = None) -> str | None:
    s = w.ghost.stats
    if s.unexplained_dups == 0 and s.retry_dups > 0:
        return ("sendDefaultImpl retried after an attempt failed (timeout, reset or a retryable broker code) although "
                "the broker had stored it: at-least-once delivery")
    return None


def ns10(w: core.World) -> bool:
    return w.ghost.stats.unexplained_dups == 0


# --- NS-11: a client that can reach a NameServer gets answers ---


def ns11_window_ms(w: core.World) -> int:
    return 3 * bounds.setting(w, "poll_name_server_interval")


def _starved(w: core.World) -> list[str]:
    g = w.ghost
    window = ns11_window_ms(w)
    bad = []
    for i in _roles(w).clients:
        cid = w.cfg.ids[i]
        last = g.last_answer.get(cid, 0)
        if not w.alive[i] or last < 0 or w.now - last <= window:
            continue
        since = [t for (c, _), t in g.reach_since.items() if c == cid]
        if since and w.now - min(since) > window:
            bad.append(cid)
    return bad


def ns11(w: core.World) -> bool:
    return not _starved(w)


def ns11_explain(w: core.World) -> str:
    g = w.ghost
    return "; ".join(f"{c}: no NameServer answer for {w.now - g.last_answer[c]} ms although "
                     f"{sorted(n for (cc, n) in g.reach_since if cc == c)} reachable" for c in _starved(w))


def ns11_expected(w: core.World, event: Any = None) -> str | None:
    g = w.ghost
    bad = _starved(w)
    if bad and all(g.call_timeouts.get(c, -1) > g.last_answer.get(c, 0) for c in bad):
        return (f"apache/rocketmq#7056: for {', '.join(bad)} the connect to an unreachable NameServer timed out after "
                "connectTimeoutMillis (3000 ms), which spent the call's whole mqClientApiTimeout (3000 ms); "
                "invokeSync then threw 'call timeout' and closed the new channel to the reachable one, and "
                "round-robin starts the next call at the unreachable one again")
    faults = _transport_faults(w, bad)
    if faults:
        return ("transport-faults: every route call of " + "; ".join(faults) + " since its last answer failed in "
                "transport, each because of a fault (a poll every pollNameServerInterval, 30 s: two or three lost "
                "polls outlast the window)")
    return None


def _transport_faults(w: core.World, bad: list[str]) -> list[str]:
    """For each starved client, its failed route calls since its last answer, if there were
    some and a fault explains every one of them (the ghost's `failed_calls`); else []."""
    out = []
    for c in bad:
        calls = w.ghost.failed_calls.get(c, ())
        if not calls or any(why is None for _, _, _, why in calls):
            return []
        out.append(f"{c} (" + ", ".join(f"{ns} at {t} ms: {exc}, {why}" for t, ns, exc, why in calls) + ")")
    return out


# --- measured ---


def _rate(ok: int, total: int) -> float | None:
    return round(ok / total, 4) if total else None


def measure(w: core.World) -> dict:
    """NS-5 and companions: send success, retry duplicates, dead-but-routed time, NameServer detection."""
    g = w.ghost
    s = g.stats
    routed = list(g.dead_routed_ms) + [(d.last_routed_ms - d.died_ms if d.last_routed_ms >= 0 else 0)
                                       for d in g.dead.values()]
    fin = [ms for silent, ms in g.ns_detect if not silent]
    silent = [ms for silent, ms in g.ns_detect if silent]
    return {
        "sends": s.started, "send_ok": s.ok, "send_failed": s.failed,
        "send_success_rate": _rate(s.ok, s.ok + s.failed),
        "stale_sends": s.stale_started, "stale_send_success_rate": _rate(s.stale_ok, s.stale_ok + s.stale_failed),
        "retry_duplicates": s.retry_dups, "stale_retry_duplicates": s.stale_retry_dups,
        "failed_but_stored": s.failed_but_stored,
        "broker_deaths": len(routed),
        "dead_routed_ms_max": max(routed) if routed else None,
        "dead_routed_ms_mean": round(sum(routed) / len(routed)) if routed else None,
        "ns_drop_after_fin_ms_max": max(fin) if fin else None,
        "ns_drop_silent_ms_max": max(silent) if silent else None,
        "crashes": w.history.crashes,
    }


def _route_tables_and_ids(w: core.World) -> tuple:
    r = _roles(w)
    return tuple(w.nodes[i].rim.broker_addr_table for i in r.namesrvs) + tuple(
        w.nodes[b].broker_id for b in r.brokers) + (w.alive,)


def _namesrvs_and_ghost(w: core.World) -> tuple:
    return tuple(w.nodes[i] for i in _roles(w).namesrvs) + (w.alive, w.ghost.registered)


PROPERTIES = [
    Property(id="NS-1", protocol="nameserver", kind="bounded", holds=ns1, explain=ns1_explain,
             statement="A broker that stops registering leaves every NameServer's live table within "
                       "brokerChannelExpiredTime (120 s) plus one scanNotActiveBroker period (10 s)."),
    Property(id="NS-2", protocol="nameserver", kind="safety", holds=ns2, explain=ns2_explain,
             expected_when=ns2_expected, reads=_namesrvs_and_ghost,
             statement="A NameServer lists (live table or route) only broker addresses that registered with it and "
                       "were not removed since."),
    Property(id="NS-3", protocol="nameserver", kind="bounded", holds=ns3, explain=ns3_explain,
             expected_when=ns3_expected,
             statement="After the faults stop, within one registration period plus one scan every live NameServer "
                       "lists exactly the live brokers under their ids, with their masters' queue data."),
    Property(id="NS-4", protocol="nameserver", kind="safety", holds_step=ns4, expected_when=ns4_expected,
             explain=ns4_explain,
             statement="A retry never picks the broker that just failed when another broker has a queue in the "
                       "producer's route."),
    Property(id="NS-5", protocol="nameserver", kind="measured",
             statement="Send success and duplicate copies created by retries while a dead broker is still routed, "
                       "and the time from a broker's death to the last send routed to it."),
    Property(id="NS-6", protocol="nameserver", kind="safety", holds=ns6, explain=ns6_explain,
             expected_when=ns6_expected, reads=_route_tables_and_ids,
             statement="A NameServer's route names as master (id 0) only a broker acting as master."),
    Property(id="NS-7", protocol="nameserver", kind="safety", holds=ns7, explain=ns7_explain,
             expected_when=ns7_expected, reads=lambda w: tuple(w.nodes[i].publish for i in _roles(w).producers),
             statement="A producer's publish queue list is exactly what topicRouteData2TopicPublishInfo builds "
                       "from its cached route."),
    Property(id="NS-8", protocol="nameserver", kind="safety", holds_step=ns8,
             statement="A send makes at most 1 + retryTimesWhenSendFailed attempts, and no attempt's request "
                       "leaves after sendMsgTimeout has passed since the send began."),
    Property(id="NS-9", protocol="nameserver", kind="expected", holds=ns9, expected_when=ns9_expected,
             reads=lambda w: (w.ghost.stats,),
             statement="Each message is stored at most once."),
    Property(id="NS-10", protocol="nameserver", kind="safety", holds=ns10, reads=lambda w: (w.ghost.stats,),
             statement="Every extra stored copy of a message comes from a retry after an attempt the producer saw "
                       "fail."),
    Property(id="NS-11", protocol="nameserver", kind="bounded", holds=ns11, explain=ns11_explain,
             expected_when=ns11_expected,
             statement="A client that has been able to reach a live NameServer (both ways) for 3 x "
                       "pollNameServerInterval gets a route answer from some NameServer within that window."),
] + nameserver_decisions.PROPERTIES

register(PROPERTIES)
