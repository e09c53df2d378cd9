"""The HA protocol's implementation log points: what a RocketMQ 4.9.4 master, its slaves and a
producer, instrumented at their natural log points, write when the reference takes a step
(docs/conformance.md, "Classic master/slave replication").

The byte streams are logged as the frames and reports their readers decode, never as raw
bytes: the slave's `HAService.HAClient#dispatchReadRequest` writes one line per frame it
hands to `DefaultMessageStore#appendToCommitLog` (a heartbeat is a frame of size 0), the
master's `HAService#notifyTransferSome` one line per report its ReadSocketService took (the
last complete 8 bytes of a read). How TCP cut the streams into reads is never visible, so the
reference's segment deliveries that complete nothing are hidden events. The master's
WriteSocketService writes one line per data frame it builds
(`HAConnection.WriteSocketService#transferData`, offset and size); its heartbeat headers have
no line on the master's side (they come from no CommitLog read), only the slave's.

A producer writes `DefaultMQProducer#send` (the send, then its result or its failure); the
master writes `DefaultMessageStore#asyncPutMessage` (the put with its result when the future is
already complete, else the put and later a line with the result alone), and
`HAService.GroupTransferService#doWaitTransfer` when it wakes a SYNC_MASTER put's replica
future (PUT_OK or FLUSH_SLAVE_TIMEOUT). Connections: `HAService.HAClient#connectMaster` (a
slave's connection opened, with the offset it will report), `HAService#addConnection` (the
master accepted it), `HAService.HAClient#closeMaster` and `HAService#removeConnection` (each
end gave it up). A harness's `conn_drop` fact says a slave's connection broke under it.

Java polls where the model acts at once (HAClient's 1 s select before its periodic report,
ReadSocketService's 1 s select before its housekeeping check, the writer's 100 ms wait and its
10 ms sleep before the first report): `tick_slack` gives the tolerant checker those periods.
"""

from __future__ import annotations

from typing import Any

import attrs

from reference_impl import core
from reference_impl.core.state import record
from reference_impl.ha import commit_log as st
from reference_impl.ha import service as svc
from reference_impl.ha import wire
from reference_impl.ha import world as ha_world
from reference_impl.ha.records import (
    AckRead,
    Broker,
    ConnClosed,
    FrameRead,
    FrameSent,
    HaConfig,
    MessageStoreConfig,
    Reported,
)
from reference_impl.rocketmq import BrokerRole, PutMessageStatus

@attrs.frozen
class LogPoint:
    """One log point: the Java method that writes it, on which thread, and its fields (the same
    shape as the other protocols' tables; protocols import nothing of each other)."""

    at: str
    thread: str
    fields: str
    when: str


NEXT_INT = "java.util.Random#nextInt"  # no HA thread draws; the producers' body sizes are unlogged unknowns
SNAPSHOT = "DefaultMessageStore"
PUT_AT = "DefaultMessageStore#asyncPutMessage"
SEND = "DefaultMQProducer#send"
TRANSFER_AT = "HAConnection.WriteSocketService#transferData"
NOTIFY_AT = "HAService#notifyTransferSome"
ADD_AT = "HAService#addConnection"
REMOVE_AT = "HAService#removeConnection"
DONE_AT = "HAService.GroupTransferService#doWaitTransfer"
CONNECT_AT = "HAService.HAClient#connectMaster"
CLOSE_AT = "HAService.HAClient#closeMaster"
REPORT_AT = "HAService.HAClient#reportSlaveMaxOffset"
DISPATCH_AT = "HAService.HAClient#dispatchReadRequest"
CONN_DROP = "conn_drop"

POINTS = {p.at: p for p in (
    LogPoint(SEND, "client", "peer (the master), request (a SendMessage: msg_id); its completion: peer, "
             "response (a SendResult: status, offset, size; a RemotingException when the send failed)",
             "a producer sends one message and gets its result"),
    LogPoint(PUT_AT, "handler", "peer (the producer), request, response (absent while a future is pending); "
             "later peer, response", "the master's put path (CommitLog#asyncPutMessage)"),
    LogPoint(DONE_AT, "any", "offset (the request's nextOffset), status (PUT_OK, FLUSH_SLAVE_TIMEOUT)",
             "GroupTransferService wakes a SYNC_MASTER put's replica future"),
    LogPoint(ADD_AT, "handler", "peer (the slave)", "the master accepted a slave's HA connection"),
    LogPoint(REMOVE_AT, "any", "peer (the slave)", "the master's HAConnection stopped (read or write error, "
             "housekeeping, an ack above the master's max offset)"),
    LogPoint(NOTIFY_AT, "handler", "peer (the slave), offset (the report taken), push2slave_max (after)",
             "ReadSocketService took a slave's report (its first is the request offset)"),
    LogPoint(TRANSFER_AT, "any", "peer (the slave), offset, size", "WriteSocketService built a data frame"),
    LogPoint(CONNECT_AT, "maintainer", "peer (the master), offset (currentReportedOffset)",
             "a slave's connection opened"),
    LogPoint(CLOSE_AT, "maintainer", "peer (the master)", "a slave gave its connection up"),
    LogPoint(REPORT_AT, "maintainer", "peer (the master), offset", "a slave wrote an offset report"),
    LogPoint(DISPATCH_AT, "maintainer", "peer (the master), offset, size",
             "a slave decoded a whole frame and appended it (size 0: a heartbeat)"),
)}
FACTS = (CONN_DROP,)


@record
class RemotingException:
    """What a producer's send completes with when it failed (a timeout, a refused or reset
    connection: the RemotingException DefaultMQProducer#send throws)."""


SEND_AT = {"SendMessage": SEND}
HANDLE_AT = {"SendMessage": PUT_AT}
COMPLETE_AT = {"SendResult": SEND, "RemotingException": SEND}
REPLY_AT = {"SendResult": PUT_AT}
# the model's body is its own text (the id and filler): an implementation logs the id
INTERNAL_FIELDS = {"SendMessage": ("body",)}


def failed_reply(ctx: Any) -> Any:
    return RemotingException()


def _slave_of(b: Broker, conn_id: int) -> str | None:
    for x in b.conns:
        if x.id == conn_id:
            return x.slave
    return None


def _replica_status(c: HaConfig, b: Broker, req: Any) -> str:
    """GroupTransferService#doWaitTransfer's verdict on a request it completes."""
    return (PutMessageStatus.PUT_OK if svc.transfer_ok(c, b, req) else PutMessageStatus.FLUSH_SLAVE_TIMEOUT).value


def node_lines(c: HaConfig, on_tick: bool, before: Any, after: Any, obs: list, draw: int) -> list[tuple[str, dict]]:
    """A broker's own lines for one step, in the order its threads write them."""
    if not isinstance(before, Broker) or not isinstance(after, Broker):
        return []
    out: list[tuple[str, dict]] = []
    master = before.client.master
    if before.client.conn == 0 and after.client.conn != 0:
        out.append((CONNECT_AT, {"peer": master, "offset": after.client.current_reported_offset}))
    known = {x.id for x in before.conns}
    for x in after.conns:
        if x.id not in known:
            out.append((ADD_AT, {"peer": x.slave}))
    waiting = {r.put for r in after.gt_read + after.gt_write}
    for req in before.gt_read + before.gt_write:
        if req.put not in waiting:
            out.append((DONE_AT, {"offset": req.next_offset, "status": _replica_status(c, before, req)}))
    for o in obs:
        if isinstance(o, FrameSent) and o.size > 0:
            out.append((TRANSFER_AT, {"peer": _slave_of(before, o.conn) or _slave_of(after, o.conn),
                                      "offset": o.offset, "size": o.size}))
        elif isinstance(o, AckRead) and o.accepted:
            out.append((NOTIFY_AT, {"peer": o.slave, "offset": o.ack, "push2slave_max": after.push2slave_max}))
        elif isinstance(o, ConnClosed):
            if o.side == "master":
                out.append((REMOVE_AT, {"peer": _slave_of(before, o.conn)}))
            else:
                out.append((CLOSE_AT, {"peer": master}))
        elif isinstance(o, FrameRead):
            out.append((DISPATCH_AT, {"peer": master, "offset": o.offset, "size": o.size}))
        elif isinstance(o, Reported):
            out.append((REPORT_AT, {"peer": master, "offset": o.offset}))
    return out


def ext_lines(before: core.World, event: Any, after: core.World, obs: tuple) -> list[tuple[int, str, dict]]:
    """The lines of a stream event (a connection opened, a segment read, a reset): each node
    whose state it changed writes its own lines."""
    c = after.cfg.proto
    by_node: dict[int, list] = {}
    for i, o in obs:
        by_node.setdefault(i, []).append(o)
    out = []
    for i, (b0, b1) in enumerate(zip(before.nodes, after.nodes)):
        if (b0 is not b1 or i in by_node) and before.alive[i]:
            out += [(i, at, f) for at, f in node_lines(c, False, b0, b1, by_node.get(i, []), 0)]
    return out


def fact(w: core.World, node: int, at: str) -> Any:
    """The world event a protocol fact stands for: `conn_drop` of a slave is the reset of its
    open HA connection (both ends see an error); None when it has none open."""
    if at != CONN_DROP or not w.alive[node] or not isinstance(w.nodes[node], Broker):
        return None
    conn_id = w.nodes[node].client.conn
    for x in w.ext.conns:
        if x.id == conn_id and not x.broken:
            return ha_world.ConnDrop(conn=conn_id)
    return None


def fact_line(w: core.World, event: Any) -> tuple[int, str, dict] | None:
    """The fact line of a protocol fault the reference applied (for logs written from histories)."""
    if isinstance(event, ha_world.ConnDrop):
        for x in w.ext.conns:
            if x.id == event.conn:
                return x.slave, CONN_DROP, {}
    return None


CONNECT_LATE_MS = 100  # HAClient's thread starting (a restart) or its 5 s wait ending, before connectMaster runs


def tick_slack(c: HaConfig, n: Any, since: int, wake: int) -> int:
    """How much later than the model a Java HA thread may act at `wake`: the model acts the ms a
    condition becomes true, Java when its loop next looks. HAClient checks isTimeToReportOffset
    after `selector.select(1000)` returns (a report up to 1 s late), ReadSocketService its
    housekeeping after its own `select(1000)`, WriteSocketService polls every 100 ms
    (`allWaitForRunning(100)`) and sleeps 10 ms while it waits for the first report."""
    if not isinstance(n, Broker):
        return 0
    slack = 0
    cl = n.client
    if cl.conn != 0 and wake == svc.client_wake(c, n):
        slack = max(slack, 1000)
    elif cl.master is not None and cl.conn == 0 and wake == cl.next_connect_ms:
        slack = max(slack, CONNECT_LATE_MS)
    hk = c.store.ha_housekeeping_interval + 1
    for x in n.conns:
        if x.last_read_ms + hk == wake:
            slack = max(slack, 1000)
        if x.write_wake_ms == wake:
            slack = max(slack, c.store.write_idle_wait_ms if x.idle_since >= 0 else 10)
    return slack


def _first_unit(data: bytes, to_master: bool) -> int:
    """Where the first whole report (8 bytes) or frame (12-byte header and its body) in a send
    queue ends; 0 if there is none or it is the whole queue."""
    if to_master:
        end = wire.ACK_SIZE
    else:
        head = wire.next_frame(data)
        if head is None or head[2] is None:
            return 0
        end = wire.HEADER_SIZE + head[1]
    return end if end < len(data) else 0


ACCEPT_LATE_MS = 100  # how much later than the slave's connect (as the reference times it) the master may set the connection up


@record
class AcceptLate:
    """A slave's connect, with the master's AcceptSocketService constructing the HAConnection
    ACCEPT_LATE_MS later: its WriteSocketService's lastWriteTimestamp (and ReadSocketService's
    lastReadTimestamp) are read that much later, so a first report that comes 5 s after the
    slave's connect may find the master's heartbeat interval not yet passed."""

    node: int


@record
class ConnectLate:
    """A slave's connect that completes at `at`, later than the reference's connect would (up to
    CONNECT_LATE_MS after its HAClient was due to connect): the HAClient thread starting after a
    (re)start, or its 5 s wait ending, runs `connectMaster` when the JVM schedules it. The model
    splits that one Java call into a tick that starts the attempt (it writes nothing, so the search
    takes it on time) and the world's Connect, which writes the connect and accept lines; this
    event lets the Connect, and so those lines, come as late as the tick's own allowance."""

    node: int
    at: int


CONNECT_STEP_MS = 20  # the grid of ConnectLate times (within the slack of any log line)


def under_implementation(p: core.Protocol) -> core.Protocol:
    """The world as an implementation's log tells it: a log shows the frames and reports a
    reader decoded, never how TCP cut the bytes, so a read is either the whole send queue or
    its first whole frame (report). The reference's other cuts (one byte, inside a header,
    anywhere) write the same lines later or not at all; the tolerant search need not try them.
    A slave's connect may complete up to CONNECT_LATE_MS after it was due (ConnectLate), and the
    master may set the connection up ACCEPT_LATE_MS after that (AcceptLate)."""
    def connecting(w: core.World) -> list[int]:
        n = len(w.cfg.proto.brokers)
        return [i for i in range(n) if w.alive[i] and w.nodes[i].client.connecting]

    def ext_deadline(w: core.World) -> int:
        waiting = connecting(w)
        if not waiting:
            return p.ext_deadline(w)
        # the other stream events keep their deadlines; a connect is due CONNECT_LATE_MS after its time
        quiet = w.evolve(nodes=tuple(b.evolve(client=b.client.evolve(connecting=False)) if i in waiting else b
                                     for i, b in enumerate(w.nodes)))
        others = p.ext_deadline(quiet)
        due = max(w.now, min(w.nodes[i].client.next_connect_ms + CONNECT_LATE_MS for i in waiting))
        return due if others < 0 else min(others, due)

    def ext_events(w: core.World, horizon: int) -> list:
        out: list = []
        seen: set = set()
        for ev in p.ext_events(w, horizon):
            if isinstance(ev, ha_world.Connect):
                due = w.nodes[ev.node].client.next_connect_ms + CONNECT_LATE_MS
                out += [ev, AcceptLate(node=ev.node)]
                out += [ConnectLate(node=ev.node, at=t)
                        for t in range(w.now + CONNECT_STEP_MS, min(horizon, due) + 1, CONNECT_STEP_MS)]
                continue
            if not isinstance(ev, ha_world.Segment):
                out.append(ev)
                continue
            key = (ev.conn, ev.to_master)
            if key in seen:
                continue
            seen.add(key)
            conn = next(x for x in w.ext.conns if x.id == ev.conn)
            if ev.to_master:
                data = w.nodes[conn.slave].client.out
            else:
                data = next(x for x in w.nodes[conn.master].conns if x.id == ev.conn).out
            out.append(ha_world.Segment(conn=ev.conn, to_master=ev.to_master, size=len(data)))
            cut = _first_unit(data, ev.to_master)
            if cut:
                out.append(ha_world.Segment(conn=ev.conn, to_master=ev.to_master, size=cut))
        return out

    def ext_apply(w: core.World, ev: Any, now: int) -> tuple[core.World, tuple]:
        if isinstance(ev, ConnectLate):  # nothing is due before `at` (it is within the horizon)
            return p.ext_apply(w.evolve(now=ev.at), ha_world.Connect(node=ev.node), ev.at)
        if not isinstance(ev, AcceptLate):
            return p.ext_apply(w, ev, now)
        w, obs = p.ext_apply(w, ha_world.Connect(node=ev.node), now)
        m = w.cfg.ids.index(w.cfg.proto.brokers[0])
        b = w.nodes[m]
        known = {x.id for x in w.ext.conns if x.slave == ev.node}
        conns = tuple(x.evolve(last_write_ms=now + ACCEPT_LATE_MS, last_read_ms=now + ACCEPT_LATE_MS)
                      if x.id in known and x.id == max(known) else x for x in b.conns)
        return core.set_node(w, m, b.evolve(conns=conns)), obs
    return p.evolve(ext_events=ext_events, ext_apply=ext_apply, ext_deadline=ext_deadline)


def snapshot(c: HaConfig, n: Any, alive: bool) -> dict | None:
    """A broker's `DefaultMessageStore` line: its role, CommitLog max and flushed offsets, and
    on the master push2SlaveMaxOffset and connectionCount, on a slave whether HAClient has a
    connection. Producers have none."""
    if not isinstance(n, Broker):
        return None
    out: dict = {"role": n.role.value, "max_offset": st.max_offset(n.store), "flushed_offset": n.store.flushed}
    if n.role is BrokerRole.SLAVE:
        out["connected"] = n.client.conn != 0
    else:
        out.update(push2slave_max=n.push2slave_max, connection_count=svc.connection_count(n))
    return out


def make_config(nodes: tuple[str, ...], config: dict) -> core.WorldConfig:
    """Brokers n0 (the master) .. then producers p0..; `config` holds MessageStoreConfig keys in
    snake_case (`broker_role`, `flush_disk_type`, `mapped_file_size_commit_log`, ...) and the
    world's (`version`, `messages`, `send_interval_ms`, `body_min`, `body_max`, ...)."""
    brokers = [x for x in nodes if not x.startswith("p")]
    producers = [x for x in nodes if x.startswith("p")]
    if list(nodes) != brokers + producers or brokers != [f"n{i}" for i in range(len(brokers))] or \
            producers != [f"p{i}" for i in range(len(producers))]:
        raise ValueError("ha nodes are brokers n0 (the master), n1.. then producers p0..")
    if "producers" in config or "brokers" in config:
        raise ValueError("ha config: the brokers and producers are the header's nodes")
    return ha_world.make_config(len(brokers), dict(config, producers=len(producers)))


def header_config(cfg: core.WorldConfig) -> dict:
    """The header's `config` for a world of ours (the inverse of `make_config`)."""
    c: HaConfig = cfg.proto
    out: dict = {}
    default_store = MessageStoreConfig()
    for f in attrs.fields(MessageStoreConfig):
        v = getattr(c.store, f.name)
        if v != getattr(default_store, f.name):
            out[f.name] = v.value if hasattr(v, "value") else v
    default = HaConfig()
    for f in attrs.fields(HaConfig):
        if f.name not in ("store", "brokers") and getattr(c, f.name) != getattr(default, f.name):
            out[f.name] = getattr(c, f.name)
    return out


def logs_draws(n: Any) -> bool:
    """No HA thread draws; a producer's body size is the reference's choice, inferred from its send."""
    return False

