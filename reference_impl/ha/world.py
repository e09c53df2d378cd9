"""The HA world: a master, its slaves and producers on the generic world, with TCP byte streams.

Theory of operation
-------------------
Nodes are brokers `n0` (the master) and `n1`, `n2` (slaves; reference_impl.ha) and
producers `p0`, ... Producers talk to the master over the generic network (RPCs with a
timeout, so loss, delay and partitions apply). Brokers talk HA over TCP, which the
generic network does not model, so the streams are world state here (`World.ext`):

- `Connect(node)`: a slave's `connectMaster()` ends. It succeeds if the master is up
  and both directions of the link are; else it fails, at once if the master's process
  is down but its host is up (connection refused), after the 5 s connect timeout if
  the host or the link is down.
- `Segment(conn, to_master, size)`: the first `size` bytes of one direction's send queue
  reach the reader, which processes them as one `read()`. The chooser picks the size
  from a handful of cut points (the whole queue first, then one byte, a cut inside a
  header or report, and two cuts that move with the writer's position), so frames and reports
  arrive split at any byte over a history. A segment can be delivered from the moment
  its bytes are written; it must be by `written + delay_max` of the fault profile, and
  never across a cut link (TCP then waits; the bytes are not lost).
- `Reset(conn, node)`: `node` learns that its peer closed the connection or that it
  broke (FIN/RST). A peer whose process died signals at once; one whose host died
  (OS crash, disk loss) signals nothing until it is back.
- `ConnDrop(conn)` is a fault (profile kind `conn_drop`): the connection resets and both
  ends will see an error.

Ghost variables are in reference_impl.ha.ghost; the node transitions never read them.
"""

from __future__ import annotations

from typing import Any

from reference_impl import core, rocketmq
from reference_impl.core import faults, inputs
from reference_impl.core.network import Send
from reference_impl.core.state import freeze, record
from reference_impl.ha import broker as ha
from reference_impl.ha import commit_log as st
from reference_impl.ha import ghost as gh
from reference_impl.ha import service as svc
from reference_impl.ha import wire
from reference_impl.ha.records import VERSIONS, Broker, FlushDiskType, HaConfig, MessageStoreConfig, Producer
from reference_impl.rocketmq import BrokerRole, PutMessageStatus


@record
class Conn:
    id: int
    slave: int
    master: int
    broken: bool = False


@record
class HaNet:
    conns: tuple[Conn, ...] = ()
    next_id: int = 1


@record
class Connect:
    node: int


@record
class Segment:
    conn: int
    to_master: bool
    size: int


@record
class Reset:
    conn: int
    node: int


@record
class ConnDrop:
    conn: int


@record
class Connected:
    """World-level observation: a connection opened."""

    conn: int
    slave: str


@record
class SegmentDelivered:
    """World-level observation: `size` bytes of a stream reached their reader."""

    conn: int
    to_master: bool
    size: int


# --- what may happen on the streams ---


def _mix(*xs: int) -> int:
    h = 0x9E3779B97F4A7C15
    for x in xs:
        h = ((h ^ (x & 0xFFFFFFFFFFFFFFFF)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        h ^= h >> 31
    return h


_SEGMENTS: dict = {}  # (conn, to_master, length, position) -> the Segment events: immutable, so shared


def segments(conn: int, to_master: bool, length: int, position: int) -> tuple:
    key = (conn, to_master, length, position)
    hit = _SEGMENTS.get(key)
    if hit is None:
        if len(_SEGMENTS) > 4096:
            _SEGMENTS.clear()
        hit = _SEGMENTS[key] = tuple(Segment(conn=conn, to_master=to_master, size=k)
                                     for k in segment_sizes(conn, to_master, length, position))
    return hit


def segment_sizes(conn: int, to_master: bool, length: int, position: int) -> list[int]:
    """Where the chooser may cut a send queue of `length` bytes (the whole of it first).
    `position` (how far the writer has got in its stream) moves the two free cuts along."""
    sizes = [length]
    if length > 1:
        unit = wire.ACK_SIZE if to_master else wire.HEADER_SIZE
        for cut in (1, unit - 1 if length > unit else 0, 1 + _mix(conn, length, position) % (length - 1),
                    1 + _mix(position, conn, length, 7) % (length - 1)):
            if cut and cut not in sizes:
                sizes.append(cut)
    return sizes


def _master_conn(w: core.World, conn: Conn) -> Any:
    if not w.alive[conn.master]:
        return None
    for x in w.nodes[conn.master].conns:
        if x.id == conn.id:
            return x
    return None


def _slave_holds(w: core.World, conn: Conn) -> bool:
    return w.alive[conn.slave] and w.nodes[conn.slave].client.conn == conn.id


def _signals(w: core.World, gone: int, holder: int) -> bool:
    """Whether the end that dropped the connection makes the other end notice (FIN/RST)."""
    return (gone, holder) not in w.net.cut and (w.alive[gone] or w.nodes[gone].down == "process")


_PENDING: list = [None, None]  # (world, (events, deadline)) of the last scan: asked twice per step


def _scan(w: core.World) -> tuple[list, int]:
    if _PENDING[0] is w:
        return _PENDING[1]
    events: list = []
    due = -1
    nodes, alive = w.nodes, w.alive
    for i in range(len(w.cfg.proto.brokers)):
        if alive[i] and nodes[i].client.connecting:
            events.append(Connect(node=i))
            due = w.now
    if not w.ext.conns:
        result = (events, due)
        _PENDING[0], _PENDING[1] = w, result
        return result
    dmax = core.delay_window(w)[1]
    cut = w.net.cut
    for conn in w.ext.conns:
        mc = _master_conn(w, conn)
        s_holds = _slave_holds(w, conn)
        if conn.broken or mc is None or not s_holds:
            if s_holds and (conn.broken or _signals(w, conn.master, conn.slave)):
                events.append(Reset(conn=conn.id, node=conn.slave))
                due = w.now
            if mc is not None and (conn.broken or _signals(w, conn.slave, conn.master)):
                events.append(Reset(conn=conn.id, node=conn.master))
                due = w.now
            continue
        if mc.out and not (cut and (conn.master, conn.slave) in cut):
            events.extend(segments(conn.id, False, len(mc.out), mc.next_transfer_from_where))
            t = mc.out_since + dmax
            if due < 0 or t < due:
                due = t
        cl = nodes[conn.slave].client
        if cl.out and not (cut and (conn.slave, conn.master) in cut):
            events.extend(segments(conn.id, True, len(cl.out), cl.current_reported_offset))
            t = cl.out_since + dmax
            if due < 0 or t < due:
                due = t
    result = (events, max(due, w.now) if due >= 0 else -1)
    _PENDING[0], _PENDING[1] = w, result
    return result


def ext_init(cfg: core.WorldConfig) -> HaNet:
    return HaNet()


def ext_events(w: core.World, horizon: int) -> list:
    return _scan(w)[0]


def ext_deadline(w: core.World) -> int:
    return _scan(w)[1]


def ext_faults(w: core.World, kind: str) -> list:
    if kind != "conn_drop":
        return []
    return [ConnDrop(conn=c.id) for c in w.ext.conns
            if not c.broken and _slave_holds(w, c) and _master_conn(w, c) is not None]


# --- what happens on the streams ---


def _live(w: core.World, net: HaNet) -> HaNet:
    """Forget connections neither end holds any more."""
    keep = tuple(c for c in net.conns if _slave_holds(w, c) or _master_conn(w, c) is not None)
    return net if len(keep) == len(net.conns) else net.evolve(conns=keep)


def _find(w: core.World, conn_id: int) -> Conn:
    for c in w.ext.conns:
        if c.id == conn_id:
            return c
    raise KeyError(conn_id)


def _route(w: core.World, i: int, n: Any, outs: tuple, obs: list) -> core.World:
    w, seen = core.apply_outs(core.set_node(w, i, n), i, outs)
    obs.extend(seen)
    return w


def _see(w: core.World, o: Any, obs: list) -> core.World:
    """A world-level observation: to the ghost, and into the step's observations."""
    obs.append((-1, o))
    return w.evolve(ghost=gh.update(w.ghost, w, -1, o))


def ext_apply(w: core.World, ev: Any, now: int) -> tuple[core.World, tuple]:
    c: HaConfig = w.cfg.proto
    obs: list = []
    if isinstance(ev, Connect):
        m = w.cfg.ids.index(c.brokers[0])
        i = ev.node
        links = (i, m) not in w.net.cut and (m, i) not in w.net.cut
        if w.alive[m] and links:
            net = _live(w, w.ext)
            conn = Conn(id=net.next_id, slave=i, master=m)
            w = w.evolve(ext=net.evolve(conns=net.conns + (conn,), next_id=net.next_id + 1))
            w = core.set_node(w, m, svc.accept(c, w.nodes[m], conn.id, w.cfg.ids[i], now))
            w = core.set_node(w, i, svc.client_connected(c, w.nodes[i], conn.id, now))
            w = _see(w, Connected(conn=conn.id, slave=w.cfg.ids[i]), obs)
        else:
            refused = links and w.nodes[m].down == "process"
            w = core.set_node(w, i, svc.client_connect_failed(c, w.nodes[i], refused, now))
    elif isinstance(ev, Segment):
        conn = _find(w, ev.conn)
        if ev.to_master:
            src, dst = conn.slave, conn.master
            sender = w.nodes[src]
            chunk = sender.client.out[:ev.size]
            w = core.set_node(w, src, svc.client_drained(sender, ev.size))
        else:
            src, dst = conn.master, conn.slave
            sender = w.nodes[src]
            chunk = _master_conn(w, conn).out[:ev.size]
            w = core.set_node(w, src, svc.socket_drained(sender, conn.id, ev.size, now))
        w = _see(w, SegmentDelivered(conn=conn.id, to_master=ev.to_master, size=ev.size), obs)
        n, outs = ha.on_bytes(c, w.nodes[dst], conn.id, ev.to_master, chunk, now)
        w = _route(w, dst, n, outs, obs)
    elif isinstance(ev, Reset):
        conn = _find(w, ev.conn)
        b = w.nodes[ev.node]
        why = "connection reset" if conn.broken else "peer closed the connection"
        if ev.node == conn.master:
            b, outs = svc.close_connection(b, conn.id, why)
        else:
            b, outs = svc.close_master(b, why, now)
        w = _route(w, ev.node, b, outs, obs)
        w = w.evolve(ext=_live(w, w.ext))
    elif isinstance(ev, ConnDrop):
        net = w.ext
        net = net.evolve(conns=tuple(x.evolve(broken=True) if x.id == ev.conn else x for x in net.conns))
        w = w.evolve(ext=net, history=w.history.evolve(last_fault_ms=now))
        w = _see(w, ev, obs)
    else:
        raise TypeError(f"not an HA event: {ev!r}")
    return w, tuple(obs)


# --- observable state ---


def observe(c: HaConfig, n: Any, alive: bool) -> dict:
    """The observable state of one node (docs/trace-format.md, protocol `ha`)."""
    if isinstance(n, Producer):
        return {"alive": alive, "role": "PRODUCER", "sent": n.sent, "acked": n.acked, "failed": n.failed,
                "last_status": n.last_status}
    master = n.role is not BrokerRole.SLAVE
    acks: dict = {}
    for x in n.conns:
        acks[x.slave] = x.slave_ack_offset  # the newest connection of each slave
    return {
        "alive": alive,
        "role": n.role.value if alive else None,
        "max_offset": st.max_offset(n.store),
        "min_offset": st.min_offset(n.store),
        "flushed_offset": n.store.flushed,
        "push2slave_max": n.push2slave_max if master and alive else None,
        "connection_count": svc.connection_count(n) if master and alive else None,
        "slave_ack_offset": acks if master and alive else None,
        "connected": (n.client.conn != 0) if not master and alive else None,
    }


# --- scenario hooks ---


def script_action(w: core.World, do: str, i: int, args: dict) -> tuple[core.World, tuple]:
    """HA scenario actions: `send` (a producer sends a message now), `drop_connection`
    (a slave's HA connection resets, as the `conn_drop` fault)."""
    c: HaConfig = w.cfg.proto
    n = w.nodes[i]
    if do == "send":
        if not isinstance(n, Producer):
            raise ValueError(f"{n.id} is not a producer")
        if n.in_flight is not None:
            raise ValueError(f"{n.id} is still waiting for {n.in_flight}")
        length = inputs.arg(args, "size", int, (1, rocketmq.MAX_MESSAGE_SIZE), c.body_min)
        if st.message_size(length) + st.END_FILE_MIN_BLANK_LENGTH > c.store.mapped_file_size_commit_log:
            raise inputs.InputError("size", f"{length} does not fit a {c.store.mapped_file_size_commit_log}-byte "
                                            "mapped file (mapped_file_size_commit_log)")
        msg_id = f"{n.id}-{n.sent}"
        send = Send(dst=n.master, msg=ha.SendMessage(msg_id=msg_id, body=ha.make_body(msg_id, length)),
                    ctx=("put", msg_id), timeout_ms=c.send_msg_timeout)
        return core.apply_outs(core.set_node(w, i, n.evolve(sent=n.sent + 1, in_flight=msg_id)), i, (send,))
    if do == "drop_connection":
        if not isinstance(n, Broker) or n.client.conn == 0:
            raise ValueError(f"{w.cfg.ids[i]} has no HA connection to drop")
        return ext_apply(w, ConnDrop(conn=n.client.conn), w.now)
    raise ValueError(f"unknown ha action {do!r}")


SCRIPT_ACTIONS = ("send", "drop_connection")


# --- config ---


_STORE_KEYS = {a.name for a in MessageStoreConfig.__attrs_attrs__}
_WORLD_KEYS = {a.name for a in HaConfig.__attrs_attrs__} - {"store", "brokers"}


def _store_config(d: dict) -> MessageStoreConfig:
    return MessageStoreConfig(**inputs.structure_fields(MessageStoreConfig, d))


def _check(c: HaConfig) -> HaConfig:
    s = c.store
    if c.version not in VERSIONS:
        raise ValueError(f"version must be one of {', '.join(VERSIONS)}")
    if s.broker_role is BrokerRole.SLAVE:
        raise ValueError("broker_role is the master's role: ASYNC_MASTER or SYNC_MASTER")
    if not 1 <= c.body_min <= c.body_max:
        raise ValueError("need 1 <= body_min <= body_max")
    biggest = st.message_size(max(c.body_max, 32)) + st.END_FILE_MIN_BLANK_LENGTH
    if s.mapped_file_size_commit_log < biggest:
        raise ValueError(f"mapped_file_size_commit_log must be at least {biggest} (the largest message + 8)")
    if min(s.ha_transfer_batch_size, c.socket_buffer_bytes, s.flush_interval_commit_log) < 1:
        raise ValueError("ha_transfer_batch_size, socket_buffer_bytes and flush_interval_commit_log must be positive")
    return c


def make_config(nodes: int = 2, overrides: dict | None = None) -> core.WorldConfig:
    """A world of brokers n0 (master) .. n{nodes-1} (slaves) and producers p0.. with RocketMQ
    defaults. `overrides` takes MessageStoreConfig keys (`broker_role`, `flush_disk_type`,
    `mapped_file_size_commit_log`, ...), HaConfig keys (`version`, `messages`, ...) and
    `producers` (how many, default 1)."""
    opts = dict(overrides or {})
    producers = opts.pop("producers", 1)
    if not isinstance(producers, int) or not 0 <= producers <= 8:
        raise ValueError("producers must be an integer in 0..8")
    if not 1 <= nodes <= 8:
        raise ValueError("ha needs 1..8 brokers (one master, the rest slaves)")
    unknown = set(opts) - _STORE_KEYS - _WORLD_KEYS
    if unknown:
        raise ValueError(f"unknown ha config key(s): {', '.join(sorted(unknown))}")
    brokers = tuple(f"n{i}" for i in range(nodes))
    store = _store_config({k: v for k, v in opts.items() if k in _STORE_KEYS})
    world = inputs.structure_fields(HaConfig, {k: v for k, v in opts.items() if k in _WORLD_KEYS})
    c = _check(HaConfig(store=store, brokers=brokers, **world))
    ids = brokers + tuple(f"p{k}" for k in range(producers))
    return core.WorldConfig(protocol="ha", ids=ids, proto=c, crashable=tuple(range(nodes)),
                            overrides=freeze(dict(overrides or {})))


def load_config(d: dict) -> HaConfig:
    """The config from a trace header (`dump_config`'s `proto`)."""
    return _check(inputs.structure(d, HaConfig))


def check_ids(c: HaConfig, ids: tuple[str, ...]) -> None:
    producers = len(ids) - len(c.brokers)
    want = c.brokers + tuple(f"p{k}" for k in range(max(0, producers)))
    if want != ids or producers > 8:
        raise ValueError(f"the world's nodes must be the config's brokers {list(c.brokers)} and producers p0.. "
                         f"(at most 8), got {list(ids)}")



def boot(c: HaConfig, node_id: str, i: int, now: int) -> Any:
    return ha.boot(c, node_id, now)


# --- fault profiles, calibrated for this world (docs/ha.md) ---
# Weights are per step. A 2-3 broker world with one producer takes 700-3000 events per
# simulated minute (fewer while partitions stall the producer), so these give a few
# crashes, partitions and connection resets in the 60 s fault window.


CALM_AT_MS = faults.CALM_AT_MS

PROFILES = (
    core.FaultProfile(name="gentle", delay_ms=(1, 20), loss=0.005, crash=0.001, restart=0.01,
                      ext=(("conn_drop", 0.001),), calm_at_ms=CALM_AT_MS,
                      description="Rare put loss, the odd broker process crash and HA connection reset."),
    core.FaultProfile(name="crash", delay_ms=(1, 10), crash=0.002, restart=0.01, calm_at_ms=CALM_AT_MS,
                      description="Broker process crashes and restarts only (page cache survives)."),
    core.FaultProfile(name="partition", delay_ms=(1, 10), partition=0.004, one_way=0.003, heal=0.01,
                      calm_at_ms=CALM_AT_MS,
                      description="Partitions and one-way cuts between brokers and producers, then heals."),
    core.FaultProfile(name="conn-drop", delay_ms=(1, 30), ext=(("conn_drop", 0.003),), calm_at_ms=CALM_AT_MS,
                      description="HA connections reset (both ends see an error); nothing else."),
    core.FaultProfile(name="standard", delay_ms=(1, 50), loss=0.01, crash=0.003, restart=0.01, partition=0.003,
                      one_way=0.002, heal=0.01, ext=(("conn_drop", 0.003),), calm_at_ms=CALM_AT_MS,
                      description="Put loss, process crashes, partitions, HA connection resets; no data loss."),
    core.FaultProfile(name="os-crash", delay_ms=(1, 20), os_crash=0.0015, restart=0.01, calm_at_ms=CALM_AT_MS,
                      description="OS crashes: a broker loses its unflushed page cache (ASYNC_FLUSH tail)."),
    core.FaultProfile(name="disk-loss", delay_ms=(1, 20), disk_loss=0.0015, restart=0.01, calm_at_ms=CALM_AT_MS,
                      description="A broker loses its disk and comes back empty (HA-4 under ASYNC_MASTER)."),
    core.FaultProfile(name="hostile", delay_ms=(1, 100), loss=0.02, crash=0.004, os_crash=0.003, disk_loss=0.0015,
                      restart=0.015, partition=0.004, one_way=0.003, heal=0.01, ext=(("conn_drop", 0.003),),
                      calm_at_ms=2 * CALM_AT_MS,
                      description="Everything: loss, process and OS crashes, disk loss, partitions, connection resets."),
)


# Result codes where the Java code switches: a fuzz run's branch coverage counts each one.
BRANCHES = (*BrokerRole, *FlushDiskType, PutMessageStatus.PUT_OK, PutMessageStatus.FLUSH_DISK_TIMEOUT,
            PutMessageStatus.FLUSH_SLAVE_TIMEOUT, PutMessageStatus.SLAVE_NOT_AVAILABLE,
            PutMessageStatus.SERVICE_NOT_AVAILABLE)


PROTOCOL = core.Protocol(
    name="ha", boot=boot, wake_at=ha.wake_at, on_tick=ha.on_tick, on_request=ha.on_request,
    on_response=ha.on_response, on_message=None, crash=ha.crash, restart=ha.restart, ghost_init=gh.init,
    ghost_update=gh.update, ghost_crash=gh.crash_note, observe=observe, make_config=make_config,
    load_config=load_config, check_ids=check_ids,
    script_action=script_action, script_actions=SCRIPT_ACTIONS, bench_nodes=(2, 3),
    ext_init=ext_init, ext_deadline=ext_deadline, ext_events=ext_events, ext_apply=ext_apply, ext_faults=ext_faults,
    profiles=PROFILES, branches=BRANCHES)
