"""The nameserver world: NameServers, broker groups, producers and consumers on the generic world.

Theory of operation
-------------------
Nodes are heterogeneous and named by role: NameServers `ns0, ns1, ...`; broker group g
has a master `b<g>-m` (brokerName `b<g>`, brokerId 0) and slaves `b<g>-s` (id 1),
`b<g>-s2` (id 2), ...; producers `p0, ...`; consumers `c0, ...`. A node's id is its
address. Every transition dispatches on the node record's type to reference_impl.nameserver.namesrv,
.ns_broker, .producer or .consumer.

Faults: brokers and NameServers crash (producers and consumers do not, unless a script
says so). A process crash (`crash`) closes the process's TCP channels: its OS sends a
FIN on each (an `OsFin` world event, right after the crash, whose FINs then travel as
messages and can be lost or cut off), so a NameServer drops a crashed broker at once.
A machine crash (`os_crash`) sends nothing and resets nothing: NameServers find out only
by expiry (120 s), and RPCs to the dead machine time out instead of failing fast.
A graceful broker `shutdown` (scripted) unregisters from every NameServer and then exits
(a `ProcessExit` world event). NameServers keep nothing across a restart.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from reference_impl import core, rocketmq
from reference_impl.core import faults, inputs
from reference_impl.core import network as net_mod
from reference_impl.core.state import FrozenMap, freeze, record
from reference_impl.nameserver import admin
from reference_impl.nameserver import broker as nb
from reference_impl.nameserver import client_routes as cr
from reference_impl.nameserver import consumer as co
from reference_impl.nameserver import namesrv as ns
from reference_impl.nameserver import producer as pr
from reference_impl.nameserver import route_info as ri
from reference_impl.nameserver.ghost import ghost_init, ghost_update, roles

DEFAULT_TOPIC = ri.TopicConfig(topic_name="TopicTest", read_queue_nums=4, write_queue_nums=4)


@record
class NameServerWorldConfig:
    name_servers: tuple[str, ...] = ("ns0", "ns1")
    namesrv: ns.NamesrvConfig = ns.NamesrvConfig()
    broker: nb.BrokerConfig = nb.BrokerConfig()
    producer: pr.ProducerConfig = pr.ProducerConfig()
    consumer: cr.ClientConfig = cr.ClientConfig()
    topics: tuple[ri.TopicConfig, ...] = (DEFAULT_TOPIC,)  # every broker's topic configs
    latency_fault_producers: tuple[str, ...] = ("p1",)  # producers with sendLatencyFaultEnable = true
    consumer_topics: tuple[str, ...] = ("TopicTest",)
    # mqadmin deleteTopic asks masters and slaves (4.9.4) or masters only (4.9.5, ISSUE #4644): admin.py
    delete_topic_in_slaves: bool = True

    LIMITS: ClassVar[dict] = {"name_servers": (1, 64), "latency_fault_producers": (1, 64),
                              "consumer_topics": (1, 127)}

    def __attrs_post_init__(self) -> None:
        inputs.check_fields(self)
        if not self.name_servers or len(set(self.name_servers)) != len(self.name_servers):
            raise ValueError("name_servers must be distinct NameServer ids")
        if not self.topics or len({t.topic_name for t in self.topics}) != len(self.topics):
            raise ValueError("topics must be distinct topic configs")


# --- world events of this protocol ---


@record
class OsFin:
    """The OS of a crashed process sends a FIN on each of its open channels."""

    node: int


@record
class ProcessExit:
    """A broker's shutdown() finished; its process exits."""

    node: int


@record
class CreateTopic:
    """An operator's `mqadmin updateTopic` on master `node` (profile kind `create_topic`):
    AdminBrokerProcessor#updateAndCreateTopic, whose registerIncrementBrokerData sends
    the NameServers that one topic at once."""

    node: int
    topic: str


@record
class DeleteTopic:
    """An operator's `mqadmin deleteTopic` (profile kind `delete_topic`): DeleteTopicSubCommand
    deletes the topic in each broker the NameServer lists, then in every NameServer, and stops
    at the first that fails (reference_impl/nameserver/admin.py)."""

    topic: str


# The topics operators create and delete at random; producers and consumers use TopicTest only.
ACTION_TOPICS = ("TopicA", "TopicB")
ACTION_KINDS = ("create_topic", "delete_topic")


@record
class Reply:
    """The answer to an operator action a scenario ran on a node."""

    request: Any
    reply: Any


# --- dispatch ---


def _broker_spec(node_id: str) -> tuple[str, int]:
    name, role = node_id.split("-", 1)
    return name, 0 if role == "m" else int(role[1:] or 1)


def boot(c: NameServerWorldConfig, node_id: str, i: int, now: int) -> Any:
    if node_id.startswith("ns"):
        return ns.boot(c.namesrv, node_id, now)
    if node_id.startswith("b"):
        name, broker_id = _broker_spec(node_id)
        topics = FrozenMap((tc.topic_name, tc) for tc in c.topics)
        return nb.boot(c.broker, node_id, name, broker_id, c.name_servers, topics, now)
    if node_id.startswith("p"):
        return pr.boot(c.producer, node_id, c.name_servers, now, latency_fault=node_id in c.latency_fault_producers)
    return co.boot(c.consumer, node_id, c.name_servers, c.consumer_topics, now)


def wake_at(c: NameServerWorldConfig, n: Any) -> int:
    t = type(n)
    if t is pr.Producer:
        return pr.wake_at(c.producer, n)
    if t is nb.Broker:
        return nb.wake_at(c.broker, n)
    if t is ns.NameServer:
        return ns.wake_at(c.namesrv, n)
    return co.wake_at(c.consumer, n)


def on_tick(c: NameServerWorldConfig, n: Any, now: int, draw: int):
    t = type(n)
    if t is pr.Producer:
        return pr.on_tick(c.producer, n, now, draw)
    if t is nb.Broker:
        return nb.on_tick(c.broker, n, now, draw)
    if t is ns.NameServer:
        return ns.on_tick(c.namesrv, n, now)
    return co.on_tick(c.consumer, n, now, draw)


def on_request(c: NameServerWorldConfig, n: Any, msg: Any, rpc: int, now: int):
    if type(n) is ns.NameServer:
        return ns.on_request(c.namesrv, n, msg, rpc, now)
    if type(n) is nb.Broker:
        return nb.on_request(c.broker, n, msg, rpc, now)
    raise TypeError(f"{type(n).__name__} serves no requests: {msg!r}")


def on_response(c: NameServerWorldConfig, n: Any, ctx: Any, peer: str, resp: Any, now: int):
    t = type(n)
    if t is pr.Producer:
        return pr.on_response(c.producer, n, ctx, peer, resp, now)
    if t is nb.Broker:
        return nb.on_response(c.broker, n, ctx, peer, resp, now)
    return co.on_response(c.consumer, n, ctx, peer, resp, now)


def on_message(c: NameServerWorldConfig, n: Any, msg: Any, peer: str, now: int):
    t = type(n)
    if t is ns.NameServer:
        return ns.on_message(c.namesrv, n, msg, peer, now)
    if t is nb.Broker:
        return nb.on_message(c.broker, n, msg, peer, now)
    if t is pr.Producer:
        return pr.on_message(c.producer, n, msg, peer, now)
    return co.on_message(c.consumer, n, msg, peer, now)


def crash(c: NameServerWorldConfig, n: Any, kind: str) -> Any:
    """`process`: the OS closes the process's sockets (FINs follow); `os`/`disk`: the machine is down."""
    t = type(n)
    if t is ns.NameServer:
        return ns.crash(n, kind)
    if t is nb.Broker:
        return nb.crash(n, kind)
    if t is pr.Producer:
        return pr.crash(n, kind)
    return co.crash(n, kind)


def restart(c: NameServerWorldConfig, n: Any, now: int) -> Any:
    t = type(n)
    if t is ns.NameServer:
        return ns.restart(c.namesrv, n, now)
    if t is nb.Broker:
        return nb.restart(c.broker, n, now)
    if t is pr.Producer:
        return pr.restart(c.producer, n, now)
    return co.restart(c.consumer, n, now)


def down_is_silent(c: NameServerWorldConfig, n: Any) -> bool:
    return n.machine_down


# --- the OS's FINs and process exits ---


@record
class TcpExt:
    """World.ext: how far the world has dealt with process crashes (their FINs) and shutdowns, so the
    hot path can tell at a glance that nothing is pending."""

    fin_crashes: int = 0  # process crashes whose FINs have been sent
    exiting: int = 0  # brokers shutting down that have not exited yet


def ext_init(cfg: core.WorldConfig) -> TcpExt:
    return TcpExt()


def _process_crashes(w: core.World) -> int:
    return w.history.crashes - w.history.os_crashes


def ext_deadline(w: core.World) -> int:
    if _process_crashes(w) == w.ext.fin_crashes and not w.ext.exiting:
        return -1
    return w.now if ext_events(w, w.now) else -1


def ext_events(w: core.World, horizon: int) -> list:
    if _process_crashes(w) == w.ext.fin_crashes and not w.ext.exiting:
        return []
    events = []
    for i, (n, up) in enumerate(zip(w.nodes, w.alive)):
        if n.fins is not None:
            events.append(OsFin(node=i))
        elif up and type(n) is nb.Broker and n.exited:
            events.append(ProcessExit(node=i))
    return events


def _live_masters(w: core.World) -> list[int]:
    return [i for i, (n, up) in enumerate(zip(w.nodes, w.alive))
            if up and type(n) is nb.Broker and nb.is_master(n) and not n.exited]


def ext_faults(w: core.World, kind: str) -> list:
    """Operator actions drawn like faults (the profiles' `create_topic` / `delete_topic` weights)."""
    if kind == "create_topic":
        return [CreateTopic(node=i, topic=t) for i in _live_masters(w) for t in ACTION_TOPICS]
    if kind == "delete_topic":
        held = {t for i in _live_masters(w) for t in w.nodes[i].topic_config} | {
            t for n, up in zip(w.nodes, w.alive) if up and type(n) is ns.NameServer for t in n.rim.topic_queue_table}
        return [DeleteTopic(topic=t) for t in ACTION_TOPICS if t in held]
    return []


def _operator(w: core.World, ev: Any, now: int) -> tuple[core.World, tuple]:
    c = w.cfg.proto
    obs: list = [(-1, ev)]
    if isinstance(ev, CreateTopic):
        tc = ri.TopicConfig(topic_name=ev.topic, read_queue_nums=4, write_queue_nums=4)
        n, outs = nb.create_topic(c.broker, w.nodes[ev.node], tc, now)
        w, seen = core.apply_outs(core.set_node(w, ev.node, n), ev.node, outs)
        obs.extend(seen)
    else:
        w, done = admin.delete_topic_sub_command(w, ev.topic, now)
        w = w.evolve(ghost=ghost_update(w.ghost, w, -1, done))
        obs.append((-1, done))
    return w.evolve(history=w.history.evolve(last_fault_ms=now)), tuple(obs)


def ext_apply(w: core.World, ev: Any, now: int) -> tuple[core.World, tuple]:
    if isinstance(ev, (CreateTopic, DeleteTopic)):
        return _operator(w, ev, now)
    i = ev.node
    if isinstance(ev, OsFin):
        n = w.nodes[i]
        index = roles(w.cfg.ids).index
        net = w.net
        for peer, fin in n.fins:
            net = net_mod.send(net, now, i, index[peer], fin)
        w = core.set_node(w, i, n.evolve(fins=None)).evolve(net=net)
        if all(m.fins is None for m in w.nodes):
            w = w.evolve(ext=w.ext.evolve(fin_crashes=_process_crashes(w)))
        return w, ()
    w = core.crash_node(w, i, "process")
    w = w.evolve(ghost=ghost_update(w.ghost, w, -1, core.Crash(node=i)), ext=w.ext.evolve(exiting=w.ext.exiting - 1))
    return w, ((i, ev),)


# --- observable state (trace-format.md, protocol `nameserver`) ---


def _queues(rim: ri.RouteInfo) -> dict:
    return {topic: {name: [qd.read_queue_nums, qd.write_queue_nums, qd.perm] for name, qd in sorted(queues.items())}
            for topic, queues in sorted(rim.topic_queue_table.items())}


def observe(c: NameServerWorldConfig, n: Any, alive: bool) -> dict:
    t = type(n)
    if t is ns.NameServer:
        rim = n.rim
        return {"alive": alive, "role": "NAMESRV", "live_brokers": sorted(rim.broker_live_table),
                "broker_addrs": {name: {str(k): a for k, a in sorted(bd.broker_addrs.items())}
                                 for name, bd in sorted(rim.broker_addr_table.items())},
                "topic_queues": _queues(rim)}
    if t is nb.Broker:
        return {"alive": alive, "role": "MASTER" if nb.is_master(n) else "SLAVE", "broker_name": n.broker_name,
                "broker_id": n.broker_id, "master_addr": n.master_addr,
                "stored": sum(n.queue_offsets.values())}
    if t is pr.Producer:
        return {"alive": alive, "role": "PRODUCER", "namesrv": n.client.remoting.namesrv_addr_choosed,
                "publish_queues": {topic: [str(q) for q in info.message_queue_list]
                                   for topic, info in sorted(n.publish.items()) if info.message_queue_list},
                "not_available_until": {name: f.start_timestamp for name, f in sorted(n.lft.fault_item_table.items())},
                "sending": n.op.msg_id if n.op is not None else None, "sent": n.sent}
    return {"alive": alive, "role": "CONSUMER", "namesrv": n.client.remoting.namesrv_addr_choosed,
            "subscribe": {topic: sorted(str(q) for q in mqs) for topic, mqs in sorted(n.subscribe.items())}}


# --- operator actions and direct calls (scenario scripts) ---


SCRIPT_ACTIONS = ("send", "shutdown", "change_to_master", "change_to_slave", "create_topic", "wipe_write_perm",
                  "add_write_perm", "delete_topic", "mqadmin_delete_topic", "scan", "set_last_update")


def script_action(w: core.World, do: str, i: int, args: dict) -> tuple[core.World, tuple]:
    c = w.cfg.proto
    n = w.nodes[i]
    now = w.now
    kind = {pr.Producer: "producer", nb.Broker: "broker", ns.NameServer: "namesrv"}.get(type(n), "consumer")
    need = {"send": "producer", "shutdown": "broker", "change_to_master": "broker", "change_to_slave": "broker",
            "create_topic": "broker"}.get(do, "namesrv")
    if kind != need:
        raise ValueError(f"{do} is an action of a {need}, and {w.cfg.ids[i]} is a {kind}")
    outs: tuple = ()
    if do == "send":
        if n.op is not None:
            raise ValueError(f"{w.cfg.ids[i]} is still sending {n.op.msg_id}")
        n, outs = pr.start_send(c.producer, n, now, inputs.arg(args, "draw", int, (0, core.DRAW_SPAN - 1), 0),
                                inputs.arg(args, "msg_id", str | None, (1, 64), None))
    elif do == "shutdown":
        n, outs = nb.shutdown(c.broker, n, now)
        w = w.evolve(ext=w.ext.evolve(exiting=w.ext.exiting + 1))
    elif do == "change_to_master":
        n, outs = nb.change_to_master(c.broker, n, now)
    elif do == "change_to_slave":
        n, outs = nb.change_to_slave(c.broker, n, inputs.arg(args, "broker_id", int, (1, 64), 1), now)
    elif do == "create_topic":
        tc = ri.TopicConfig(topic_name=inputs.arg(args, "topic", str), read_queue_nums=args.get("read_queue_nums", 4),
                            write_queue_nums=args.get("write_queue_nums", 4),
                            perm=args.get("perm", ri.PermName.PERM_READ | ri.PermName.PERM_WRITE))  # checks itself
        n, outs = nb.create_topic(c.broker, n, tc, now)
    elif do in ("wipe_write_perm", "add_write_perm"):
        op = ri.wipe_write_perm_of_broker_by_lock if do == "wipe_write_perm" else ri.add_write_perm_of_broker_by_lock
        rim, count = op(n.rim, inputs.arg(args, "broker_name", str))
        n, outs = n.evolve(rim=rim), (Reply(request=do, reply=count),)
    elif do == "delete_topic":
        n = n.evolve(rim=ri.delete_topic(n.rim, inputs.arg(args, "topic", str)))
    elif do == "mqadmin_delete_topic":
        w, done = admin.delete_topic_sub_command(w, inputs.arg(args, "topic", str), now, asked=i)
        return w.evolve(ghost=ghost_update(w.ghost, w, -1, done)), ((-1, done),)
    elif do == "scan":
        n, outs = ns.scan_not_active_broker(c.namesrv, n, now)
    elif do == "set_last_update":
        n = n.evolve(rim=ri.update_broker_info_update_timestamp(
            n.rim, inputs.arg(args, "broker_addr", str), inputs.arg(args, "timestamp", int, (0, 1 << 62))))
    else:
        raise ValueError(f"unknown nameserver action {do!r}")
    return core.apply_outs(core.set_node(w, i, n), i, outs)


# --- config ---


_SHAPE = ("name_servers", "slaves", "producers", "consumers")


def _set_leaf(rec: Any, key: str, value: Any) -> tuple[Any, bool]:
    """Set `key` wherever it is a field in the nested config records (every occurrence);
    the records are built anew, so each checks its fields."""
    found = False
    changes = {}
    for f in attrs.fields(type(rec)):
        v = getattr(rec, f.name)
        if f.name == key and not attrs.has(type(v)):
            changes[f.name] = inputs.structure(value, inputs.field_type(type(rec), key), key)
            found = True
        elif attrs.has(type(v)) and type(v) is not ri.TopicConfig:
            v, hit = _set_leaf(v, key, value)
            if hit:
                changes[f.name] = v
                found = True
    return (attrs.evolve(rec, **changes) if changes else rec), found


def make_config(nodes: int = 2, overrides: dict | None = None) -> core.WorldConfig:
    """`nodes` broker groups (a master and its slaves each), with RocketMQ 4.9.4 defaults.
    `overrides`: name_servers (2), slaves per group (1), producers (2), consumers (1),
    latency_fault_producers (["p1"]), read_queue_nums / write_queue_nums of the topic, and
    any field of the NameServer, broker, producer, fault-strategy or client configs by name."""
    opts = dict(overrides or {})
    shape = {k: opts.pop(k) for k in _SHAPE if k in opts}
    for k, v in shape.items():
        low = 1 if k == "name_servers" else 0
        if not isinstance(v, int) or isinstance(v, bool) or not low <= v <= 16:
            raise ValueError(f"{k} must be an integer in {low}..16")
    n_ns, slaves = shape.get("name_servers", 2), shape.get("slaves", 1)
    n_p, n_c = shape.get("producers", 2), shape.get("consumers", 1)
    if nodes > 16:
        raise ValueError("at most 16 broker groups")
    namesrvs = tuple(f"ns{k}" for k in range(n_ns))
    ids = node_ids(namesrvs, nodes, slaves, n_p, n_c)
    c = NameServerWorldConfig(name_servers=namesrvs)
    topic = attrs.evolve(DEFAULT_TOPIC, **inputs.structure_fields(
        ri.TopicConfig, {k: opts.pop(k) for k in ("read_queue_nums", "write_queue_nums") if k in opts}))
    c = c.evolve(topics=(topic,))
    if "latency_fault_producers" in opts:
        c = attrs.evolve(c, **inputs.structure_fields(NameServerWorldConfig, {
            "latency_fault_producers": opts.pop("latency_fault_producers")}))
    for key, value in opts.items():
        c, found = _set_leaf(c, key, value)
        if not found:
            raise ValueError(f"unknown nameserver config key {key!r}")
    crashable = tuple(i for i, x in enumerate(ids) if x.startswith(("ns", "b")))
    return core.WorldConfig(protocol="nameserver", ids=ids, proto=c, crashable=crashable,
                            overrides=freeze(dict(overrides or {})))


def load_config(d: dict) -> NameServerWorldConfig:
    """The config from a trace header (`dump_config`'s `proto`)."""
    return inputs.structure(d, NameServerWorldConfig)


def check_ids(c: NameServerWorldConfig, ids: tuple[str, ...]) -> None:
    """The ids make_config gives: NameServers, broker groups (b<g>-m, b<g>-s, b<g>-s2, ...), p<k>, c<k>."""
    groups = sorted({x.split("-", 1)[0] for x in ids if x.startswith("b")})
    slaves = sum(1 for x in ids if x.startswith("b0-s"))
    producers = sum(1 for x in ids if x.startswith("p"))
    consumers = sum(1 for x in ids if x.startswith("c"))
    want = node_ids(c.name_servers, len(groups), slaves, producers, consumers)
    if want != ids or len(groups) > 16 or slaves > 16:
        raise ValueError(f"the world's nodes must be the config's NameServers {list(c.name_servers)}, broker groups "
                         f"b0.. (b<g>-m, b<g>-s, ...), producers p0.. and consumers c0..; got {list(ids)}")


def node_ids(name_servers: tuple[str, ...], groups: int, slaves: int, producers: int, consumers: int
             ) -> tuple[str, ...]:
    brokers = tuple(x for g in range(groups) for x in
                    (f"b{g}-m",) + tuple(f"b{g}-s" if k == 1 else f"b{g}-s{k}" for k in range(1, slaves + 1)))
    return name_servers + brokers + tuple(f"p{k}" for k in range(producers)) + tuple(f"c{k}" for k in range(consumers))



# --- timeline ---


def describe(node_id: str, now: dict, before: dict | None) -> str | None:
    """A line for the timeline when a node's headline changed."""
    if before is not None and now == before:
        return None
    if not now.get("alive"):
        return None if before is not None and not before.get("alive") else "down"
    role = now["role"]
    if role == "NAMESRV":
        keys = ("live_brokers", "broker_addrs")
        if before is not None and before.get("alive") and all(now[k] == before[k] for k in keys):
            return None
        return "lists " + (" ".join(now["live_brokers"]) or "no broker")
    if role in ("MASTER", "SLAVE"):
        if before is not None and before.get("alive") and before["role"] == role:
            return None
        return f"{role} of {now['broker_name']} (id {now['broker_id']})"
    if role == "PRODUCER":
        routes = now["publish_queues"]
        if before is not None and before.get("alive") and routes == before["publish_queues"]:
            return None
        brokers = sorted({q.split(":")[0] for qs_ in routes.values() for q in qs_})
        return "route: " + (" ".join(brokers) or "none")
    if before is not None and before.get("alive") and now["subscribe"] == before["subscribe"]:
        return None
    return "subscribes " + (" ".join(sorted({q.split(":")[0] for mqs in now["subscribe"].values() for q in mqs}))
                            or "nothing")


def describe_obs(w: core.World, node_id: str, o: Any) -> str | None:
    t = type(o)
    if t is pr.SendDone:
        path = " -> ".join(o.brokers) or "no broker"
        return f"send {o.msg_id}: {o.status} via {path} ({o.elapsed_ms} ms)" if o.status != "SEND_OK" else None
    if t is pr.QueueRewritten:
        return f"MQFaultStrategy rewrote queue {o.pos} of its route: {o.old} -> {o.new}"
    if t is ns.BrokerRemoved:
        return f"drops {o.broker_addr} ({o.reason})"
    if t is nb.MessageStored:
        m = w.ghost.msgs.get(o.msg_id)
        return f"stores {o.msg_id} again (copy {m.copies}, retry {o.attempt})" if m is not None and m.copies > 1 \
            else None
    if t is CreateTopic:
        return f"operator: updateTopic {o.topic} on {w.cfg.ids[o.node]}"
    if t is DeleteTopic:
        return f"operator: deleteTopic {o.topic} (masters, then NameServers)"
    if t is OsFin:
        return None
    if t is ProcessExit:
        return "exits after shutdown"
    return None


def final_line(observed: dict) -> str:
    parts = []
    for node_id, o in observed.items():
        if not o.get("alive"):
            parts.append(f"{node_id}:down")
        elif o["role"] == "NAMESRV":
            parts.append(f"{node_id}:[{' '.join(o['live_brokers'])}]")
        elif o["role"] in ("MASTER", "SLAVE"):
            parts.append(f"{node_id}:{o['role']}")
        elif o["role"] == "PRODUCER":
            parts.append(f"{node_id}:{o['sent']} sent")
    return "  ".join(parts)


# Fault profiles calibrated for this world: it takes about 3,500 events per simulated minute
# (two producers sending back to back dominate), so a weight of 0.001 is about three faults a
# minute. TCP neither duplicates nor reorders within a connection: no duplication here.
# Expiry needs a broker to stay down (or cut off) for 120 s, so the `silent-*` and
# `long-partition` profiles run their faults for 4 minutes with rare restarts and heals.
LONG_CALM_MS = 240_000
# Operators create and delete topics now and then (about two creations and one deletion per
# simulated minute); swarm testing (spark_harness/variants.py) leaves them out of half the histories.
OPERATOR = (("create_topic", 0.0005), ("delete_topic", 0.0002))
PROFILES = (
    core.FaultProfile(name="scripted", calm_at_ms=faults.CALM_AT_MS,
                      description="No random faults (a scenario script brings its own); the quiet tail begins at 60 s, "
                                "so the bounded properties NS-3 and NS-11 apply."),
    core.FaultProfile(name="gentle", delay_ms=(1, 20), loss=0.0005, crash=0.0003, restart=0.002,
                      ext=OPERATOR, calm_at_ms=faults.CALM_AT_MS, description="The odd lost message and process crash."),
    core.FaultProfile(name="crash", delay_ms=(1, 10), crash=0.001, restart=0.003, ext=OPERATOR,
                      calm_at_ms=faults.CALM_AT_MS,
                      description="Broker and NameServer process crashes (FINs reach the NameServers) and restarts."),
    core.FaultProfile(name="partition", delay_ms=(1, 10), partition=0.0008, one_way=0.0008, heal=0.002,
                      ext=OPERATOR, calm_at_ms=faults.CALM_AT_MS,
                      description="Partitions and one-way link cuts between any parties, healed within seconds."),
    core.FaultProfile(name="lossy", delay_ms=(1, 200), loss=0.004, ext=OPERATOR, calm_at_ms=faults.CALM_AT_MS,
                      description="Lost messages and delays up to 200 ms (RPC timeouts, retries)."),
    core.FaultProfile(name="standard", delay_ms=(1, 50), loss=0.002, crash=0.0005, os_crash=0.0003, restart=0.002,
                      partition=0.0005, one_way=0.0005, heal=0.002, ext=OPERATOR, calm_at_ms=faults.CALM_AT_MS,
                      description="Loss, process and machine crashes, partitions and one-way cuts."),
    core.FaultProfile(name="hostile", delay_ms=(1, 500), loss=0.006, crash=0.001, os_crash=0.001, restart=0.002,
                      partition=0.001, one_way=0.001, heal=0.001, ext=OPERATOR, calm_at_ms=2 * faults.CALM_AT_MS,
                      description="standard, harsher: delays up to 500 ms, more of every fault."),
    core.FaultProfile(name="silent-crash", delay_ms=(1, 10), loss=0.0003, os_crash=0.0006, restart=0.0002,
                      ext=OPERATOR, calm_at_ms=LONG_CALM_MS,
                      description="Machine crashes only (no FIN, no RST): NameServers notice by 120 s expiry; "
                                "RPCs to the dead time out; machines stay down a minute or more."),
    core.FaultProfile(name="long-partition", delay_ms=(1, 10), partition=0.0004, one_way=0.0004, heal=0.0002,
                      ext=OPERATOR, calm_at_ms=LONG_CALM_MS,
                      description="Partitions and one-way cuts that last minutes (past the 120 s expiry)."),
    core.FaultProfile(name="failover", delay_ms=(1, 20), loss=0.001, crash=0.0006, os_crash=0.0006, restart=0.0004,
                      ext=OPERATOR, calm_at_ms=LONG_CALM_MS,
                      description="Broker deaths with and without FIN, long enough to measure sends to dead brokers."),
)


# Result codes where the Java code switches: a fuzz run's branch coverage counts each one.
_RC = rocketmq.ResponseCode
BRANCHES = (_RC.SUCCESS, _RC.SYSTEM_ERROR, _RC.SYSTEM_BUSY, _RC.FLUSH_DISK_TIMEOUT, _RC.SLAVE_NOT_AVAILABLE,
            _RC.FLUSH_SLAVE_TIMEOUT, _RC.SERVICE_NOT_AVAILABLE, _RC.NO_PERMISSION, _RC.TOPIC_NOT_EXIST,
            _RC.NO_BUYER_ID, _RC.NOT_IN_CURRENT_UNIT)


PROTOCOL = core.Protocol(
    name="nameserver", boot=boot, wake_at=wake_at, on_tick=on_tick, on_request=on_request, on_response=on_response,
    on_message=on_message, crash=crash, restart=restart, ghost_init=ghost_init, ghost_update=ghost_update,
    observe=observe, make_config=make_config, load_config=load_config, check_ids=check_ids, script_action=script_action,
    script_actions=SCRIPT_ACTIONS, bench_nodes=(2, 3), ext_init=ext_init, ext_deadline=ext_deadline,
    ext_events=ext_events, ext_apply=ext_apply, ext_faults=ext_faults, down_is_silent=down_is_silent, describe=describe,
    describe_obs=describe_obs, final_line=final_line, profiles=PROFILES, branches=BRANCHES)
