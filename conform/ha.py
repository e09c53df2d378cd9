"""The `ha` subject of the conformance driver: RocketMQ 4.9.4's classic replication handlers on
the wire (docs/conformance.md, "Classic replication cases").

A case is one broker's state around one HA thread, the time, and one input:

| input (hello `inputs`) | Java entry point |
|---|---|
| `report_read` | the master's `HAConnection.ReadSocketService`, one loop iteration after its select: `processReadEvent` over the socket reads the case lists (the last complete 8 bytes of each read are the slave's offset: the first report is the request offset, later ones acks; an ack above the master's max offset closes the connection from 4.9.3), then `run`'s housekeeping check |
| `frame_read` | the slave's `HAService.HAClient#processReadEvent` over the reads: `dispatchReadRequest` decodes frames (a 12-byte header, then the body once all of it is there), refuses a frame whose offset is not the slave's max offset (unless that is 0), appends through `DefaultMessageStore#appendToCommitLog` and reports the new max offset; `run`'s `closeMaster` when it returned false |
| `client_tick` | one iteration of `HAClient#run` on an open connection with nothing to read: `isTimeToReportOffset` and `reportSlaveMaxOffset`, then the housekeeping check |
| `transfer_wait` | `HAService.GroupTransferService`'s thread runs from where it waits (its `waitForRunning(10)` returned, or its wait in `doWaitTransfer` ended): each request in order gets `PUT_OK` once `push2SlaveMaxOffset >= nextOffset`, `FLUSH_SLAVE_TIMEOUT` past its deadline, else the thread waits again |

The answer is the reply (always null: nothing here answers an RPC), the outputs (`notify_transfer_some`,
`close`, `append`, `report`, `wakeup_customer`) and the state after, in the case's sections. This
module is the only place that knows how `ha` cases look on the wire; `conform.ha_cases` makes
them. Bytes on a socket are hex strings: a read is what one `SocketChannel#read` returned.
"""

from __future__ import annotations

from typing import Any

from conform import wire
from conform.wire import WireError, plain
from conform.wire import get as _get
from conform.wire import obj as _obj
from conform.wire import show as _show
from reference_impl.core.state import record
from reference_impl.ha import commit_log as st
from reference_impl.ha import service as svc
from reference_impl.ha.records import (
    VERSIONS,
    AckRead,
    Broker,
    ConnClosed,
    FrameRead,
    GroupCommitRequest,
    HAClient,
    HaConfig,
    HAConnection,
    MessageStoreConfig,
    Reported,
)
from reference_impl.rocketmq import BrokerRole, PutMessageStatus

PROTOCOL = "ha"
INPUTS = ("report_read", "frame_read", "client_tick", "transfer_wait")
# The version profiles other than 4.9.4 a driver may say it runs (docs/ha.md, "Version profiles").
FEATURES = ("version_4_9_2", "version_fixed")
VERSION_FEATURE = {"4.9.2": "version_4_9_2", "fixed": "version_fixed"}
SECTIONS_OF = {
    "report_read": ("connection", "readSocketService", "haService", "notifyTransferObject", "commitLog"),
    "frame_read": ("haClient", "commitLog"),
    "client_tick": ("haClient", "commitLog"),
    "transfer_wait": ("groupTransferService", "notifyTransferObject", "haService"),
}
CONN_ID = 1  # the one connection of a case
MASTER, SLAVE = "n0", "n1"
SOCKET_BUFFER = 1 << 16  # the model's send queue capacity; `sendSpace` is what is left of it
MAX_STORE_BYTES = 1 << 20  # the reference holds a case's CommitLog bytes: maxOffset - minOffset at most this


# --- a case in the reference's terms ---


@record
class ReadReports:
    """ReadSocketService: these socket reads, then (eof) a read that returns -1."""

    reads: tuple[bytes, ...] = ()
    eof: bool = False


@record
class ReadFrames:
    """HAClient#processReadEvent: these socket reads, then (eof) a read that returns -1."""

    reads: tuple[bytes, ...] = ()
    eof: bool = False


@record
class ClientTick:
    """HAClient#run, one iteration with nothing to read."""


@record
class TransferWait:
    """GroupTransferService's thread runs from where it waits."""


@record
class Completed:
    """GroupCommitRequest#wakeupCustomer from GroupTransferService."""

    next_offset: int
    status: PutMessageStatus


@record
class Case:
    config: HaConfig
    broker: Broker
    now: int
    input: Any


def input_kind(inp: Any) -> str:
    return {ReadReports: "report_read", ReadFrames: "frame_read", ClientTick: "client_tick",
            TransferWait: "transfer_wait"}[type(inp)]


def requires(case: Case) -> tuple[str, ...]:
    need = [input_kind(case.input)]
    if case.config.version in VERSION_FEATURE:
        need.append(VERSION_FEATURE[case.config.version])
    return tuple(need)


def sections(wire_case: dict) -> tuple[str, ...]:
    return SECTIONS_OF[_kind(wire_case.get("input"))]


# --- the reference's answer ---


def run(case: Case) -> tuple[Broker, tuple]:
    """Apply the case's input with the reference's HA functions (reference_impl.ha.service), in
    the order the Java thread runs them: (broker after, observations)."""
    c, b, now, inp = case.config, case.broker, case.now, case.input
    outs: tuple = ()
    if isinstance(inp, ReadReports):
        for chunk in inp.reads:  # processReadEvent returns false at the first refused ack
            b, o = svc.read_event(c, b, CONN_ID, chunk, now)
            outs += o
            if not b.conns:
                return b, outs
        if inp.eof:
            b, o = svc.close_connection(b, CONN_ID, "read socket < 0")
            return b, outs + o
        b, o = svc.read_housekeeping(c, b, now)
        return b, outs + o
    if isinstance(inp, ReadFrames):
        for chunk in inp.reads:
            b, o = svc.client_read(c, b, chunk, now)
            outs += o
            if b.client.conn == 0:
                return b, outs
        if inp.eof:
            b, o = svc.close_master(b, "read socket < 0", now)
            outs += o
        return b, outs
    if isinstance(inp, ClientTick):
        return svc.client_tick(c, b, now)
    b, done = svc.group_transfer_run(c, b, now)
    return b, tuple(Completed(next_offset=req.next_offset, status=status) for req, status in done)


def answer(wire_case: dict) -> dict:
    """The reference's answer to a wire case, as a wire answer (without the case id)."""
    case, secs = decode_case(wire_case)
    after, outs = run(case)
    return plain({"reply": None, "outputs": encode_outputs(outs), "state": encode_state(case.config, after, secs)})


def encode_outputs(outs: tuple) -> list[dict]:
    out: list[dict] = []
    for o in outs:
        if isinstance(o, AckRead) and o.accepted:
            out.append({"out": "notify_transfer_some", "offset": o.ack})
        elif isinstance(o, ConnClosed):
            out.append({"out": "close"})
        elif isinstance(o, FrameRead):
            out.append({"out": "append", "offset": o.offset, "size": o.size, "ok": o.appended})
        elif isinstance(o, Reported):
            out.append({"out": "report", "offset": o.offset, "written": o.written})
        elif isinstance(o, Completed):
            out.append({"out": "wakeup_customer", "nextOffset": o.next_offset, "status": o.status.value})
    return out


# --- config ---

CONFIG_FIELDS = {  # MessageStoreConfig's Java names -> ours
    "mappedFileSizeCommitLog": "mapped_file_size_commit_log",
    "haSendHeartbeatInterval": "ha_send_heartbeat_interval",
    "haHousekeepingInterval": "ha_housekeeping_interval",
    "syncFlushTimeout": "sync_flush_timeout",
}


def encode_config(c: HaConfig) -> dict:
    return {"version": c.version, **{java: getattr(c.store, ours) for java, ours in CONFIG_FIELDS.items()}}


def decode_config(d: Any) -> HaConfig:
    d = _obj(d, "config")
    version = _get(d, "version", "config")
    if version not in VERSIONS:
        raise WireError(f"config.version must be one of {list(VERSIONS)}, got {_show(version)}")
    fields = {ours: _get(d, java, "config", "int") for java, ours in CONFIG_FIELDS.items()}
    try:
        store = MessageStoreConfig(**fields)
    except (TypeError, ValueError) as e:
        raise WireError(f"config: {e}") from None
    return HaConfig(store=store, version=version, socket_buffer_bytes=SOCKET_BUFFER)


# --- state ---


def _hex(b: bytes) -> str:
    return b.hex()


def _bytes(v: Any, where: str) -> bytes:
    if not isinstance(v, str):
        raise WireError(f"{where} must be a hex string, got {_show(v)}")
    try:
        return bytes.fromhex(v)
    except ValueError:
        raise WireError(f"{where} must be a hex string, got {_show(v)}") from None


def _requests(reqs: tuple[GroupCommitRequest, ...]) -> list[dict]:
    return [{"nextOffset": r.next_offset, "deadline": r.deadline} for r in reqs]


def encode_state(c: HaConfig, b: Broker, secs: tuple[str, ...]) -> dict:
    conn = b.conns[0] if b.conns else None
    out: dict[str, Any] = {}
    for name in secs:
        if name == "connection":
            out[name] = None if conn is None else {"slaveRequestOffset": conn.slave_request_offset,
                                                   "slaveAckOffset": conn.slave_ack_offset}
        elif name == "readSocketService":
            out[name] = None if conn is None else {"pending": _hex(conn.read_pending),
                                                   "lastReadTimestamp": conn.last_read_ms}
        elif name == "haService":
            out[name] = {"push2SlaveMaxOffset": b.push2slave_max}
        elif name == "notifyTransferObject":
            out[name] = {"hasNotified": b.gt_notified}
        elif name == "commitLog":
            out[name] = {"minOffset": st.min_offset(b.store), "maxOffset": st.max_offset(b.store)}
        elif name == "haClient":
            cl = b.client
            out[name] = {"connected": cl.conn != 0, "currentReportedOffset": cl.current_reported_offset,
                         "lastWriteTimestamp": cl.last_write_ms, "pending": _hex(cl.read_buf),
                         "sendSpace": c.socket_buffer_bytes - len(cl.out) if cl.conn != 0 else None}
        elif name == "groupTransferService":
            out[name] = {"requestsRead": _requests(b.gt_read), "requestsWrite": _requests(b.gt_write),
                         "waiting": b.gt_wait_until >= 0}
    return out


def _section(d: dict, name: str, fields: dict[str, Any]) -> dict | None:
    sec = d[name]
    if sec is None:
        return None
    sec = _obj(sec, f"state.{name}")
    unknown = set(sec) - set(fields)
    if unknown:
        raise WireError(f"state.{name} has unknown field(s) {sorted(unknown)}")
    return {k: (_bytes(_get(sec, k, f"state.{name}"), f"state.{name}.{k}") if kind == "hex"
                else _request_list(_get(sec, k, f"state.{name}"), f"state.{name}.{k}") if kind == "requests"
                else None if kind == "int?" and _get(sec, k, f"state.{name}") is None
                else _get(sec, k, f"state.{name}", kind.rstrip("?"))) for k, kind in fields.items()}


def _request_list(v: Any, where: str) -> list[tuple[int, int]]:
    if not isinstance(v, list):
        raise WireError(f"{where} must be a list")
    out = []
    for i, r in enumerate(v):
        r = _obj(r, f"{where}[{i}]")
        out.append((_get(r, "nextOffset", f"{where}[{i}]", "int"), _get(r, "deadline", f"{where}[{i}]", "int")))
    return out


SECTION_FIELDS = {
    "connection": {"slaveRequestOffset": "int", "slaveAckOffset": "int"},
    "readSocketService": {"pending": "hex", "lastReadTimestamp": "int"},
    "haService": {"push2SlaveMaxOffset": "int"},
    "notifyTransferObject": {"hasNotified": "bool"},
    "commitLog": {"minOffset": "int", "maxOffset": "int"},
    "haClient": {"connected": "bool", "currentReportedOffset": "int", "lastWriteTimestamp": "int", "pending": "hex",
                 "sendSpace": "int?"},  # null once closeMaster dropped the socket
    "groupTransferService": {"requestsRead": "requests", "requestsWrite": "requests", "waiting": "bool"},
}
NULLABLE = ("connection", "readSocketService")  # null after the master's connection closed


def _store(c: HaConfig, sec: dict) -> st.Store:
    lo, hi = sec["minOffset"], sec["maxOffset"]
    size = c.store.mapped_file_size_commit_log
    if lo == -1:
        if hi != 0:
            raise WireError("state.commitLog.maxOffset must be 0 when minOffset is -1 (no mapped file)")
        return st.EMPTY_STORE
    if lo < 0 or lo % size:
        raise WireError(f"state.commitLog.minOffset must be -1 or a multiple of mappedFileSizeCommitLog ({size}), "
                        f"got {lo}")
    if not lo <= hi <= lo + MAX_STORE_BYTES:
        raise WireError(f"state.commitLog.maxOffset must be in [minOffset, minOffset + {MAX_STORE_BYTES}], got {hi}")
    return st.Store(base=lo, data=bytes(hi - lo), flushed=hi, durable=hi)


def decode_state(c: HaConfig, d: Any, kind: str, now: int) -> Broker:
    """A wire state as the reference's Broker: the master (report_read, transfer_wait) with one
    connection, or the slave (frame_read, client_tick) with an open HAClient connection."""
    d = _obj(d, "state")
    want = SECTIONS_OF[kind]
    if set(d) != set(want):
        raise WireError(f"state must have the sections {list(want)} for a {kind} case, got {sorted(d)}")
    secs = {}
    for name in want:
        if d[name] is None and name not in NULLABLE:
            raise WireError(f"state.{name} must be an object")
        secs[name] = _section(d, name, SECTION_FIELDS[name])
    if kind == "report_read":
        conn, rs = secs["connection"], secs["readSocketService"]
        if conn is None or rs is None:
            raise WireError("state.connection and state.readSocketService must be objects in a case")
        if len(rs["pending"]) >= 8:
            raise WireError("state.readSocketService.pending holds fewer than 8 bytes (an incomplete report)")
        x = HAConnection(id=CONN_ID, slave=SLAVE, slave_request_offset=conn["slaveRequestOffset"],
                         slave_ack_offset=conn["slaveAckOffset"], read_pending=rs["pending"],
                         last_read_ms=rs["lastReadTimestamp"], last_write_ms=now)
        return Broker(id=MASTER, role=BrokerRole.ASYNC_MASTER, store=_store(c, secs["commitLog"]),
                      push2slave_max=secs["haService"]["push2SlaveMaxOffset"], conns=(x,),
                      gt_notified=secs["notifyTransferObject"]["hasNotified"])
    if kind in ("frame_read", "client_tick"):
        cl = secs["haClient"]
        if not cl["connected"]:
            raise WireError("state.haClient.connected must be true in a case (the client has a connection)")
        if cl["sendSpace"] is None or not 0 <= cl["sendSpace"] <= SOCKET_BUFFER:
            raise WireError(f"state.haClient.sendSpace must be in [0, {SOCKET_BUFFER}], got {cl['sendSpace']}")
        client = HAClient(master=MASTER, conn=CONN_ID, current_reported_offset=cl["currentReportedOffset"],
                          last_write_ms=cl["lastWriteTimestamp"], read_buf=cl["pending"],
                          out=bytes(SOCKET_BUFFER - cl["sendSpace"]), out_since=now if cl["sendSpace"] < SOCKET_BUFFER
                          else -1)
        return Broker(id=SLAVE, role=BrokerRole.SLAVE, store=_store(c, secs["commitLog"]), client=client)
    gts = secs["groupTransferService"]
    if c.version == "fixed":
        raise WireError("a transfer_wait case runs version 4.9.4 or 4.9.2 (the fixed profile's test reads the "
                        "connections)")

    def reqs(pairs: list, first: int) -> tuple[GroupCommitRequest, ...]:
        return tuple(GroupCommitRequest(put=first + k, next_offset=n, wrote_offset=max(0, n - 1), deadline=dl)
                     for k, (n, dl) in enumerate(pairs))
    if c.version != "4.9.2" and any(dl < 0 for _, dl in gts["requestsRead"] + gts["requestsWrite"]):
        raise WireError("state.groupTransferService: a deadline of -1 (not reached yet) is 4.9.2's; from 4.9.3 "
                        "GroupCommitRequest sets it when the put queues it")
    read = reqs(gts["requestsRead"], 1)
    write = reqs(gts["requestsWrite"], 1 + len(read))
    if not read and not write:
        raise WireError("state.groupTransferService holds no request: the thread would wait")
    if gts["waiting"] and not read:
        raise WireError("state.groupTransferService.waiting needs requestsRead: the thread waits on its head")
    return Broker(id=MASTER, role=BrokerRole.SYNC_MASTER, push2slave_max=secs["haService"]["push2SlaveMaxOffset"],
                  gt_read=read, gt_write=write, gt_wait_until=now if gts["waiting"] else -1,
                  gt_wake_ms=now if write else -1, gt_notified=secs["notifyTransferObject"]["hasNotified"])


# --- inputs ---


def _kind(d: Any) -> str:
    d = _obj(d, "input")
    kind = d.get("kind")
    if kind not in INPUTS:
        raise WireError(f"input.kind must be one of {list(INPUTS)}, got {_show(kind)}")
    return kind


def encode_input(inp: Any) -> dict:
    out: dict[str, Any] = {"kind": input_kind(inp)}
    if isinstance(inp, (ReadReports, ReadFrames)):
        out.update(reads=[_hex(x) for x in inp.reads], eof=inp.eof)
    return out


def decode_input(d: Any) -> Any:
    kind = _kind(d)
    if kind in ("report_read", "frame_read"):
        reads = _get(d, "reads", "input")
        if not isinstance(reads, list):
            raise WireError("input.reads must be a list of hex strings")
        chunks = tuple(_bytes(x, f"input.reads[{i}]") for i, x in enumerate(reads))
        if any(not x for x in chunks):
            raise WireError("input.reads holds reads of at least one byte (a read of 0 bytes is no read)")
        cls = ReadReports if kind == "report_read" else ReadFrames
        return cls(reads=chunks, eof=_get(d, "eof", "input", "bool"))
    return ClientTick() if kind == "client_tick" else TransferWait()


# --- cases ---


def encode_case(case: Case) -> dict:
    kind = input_kind(case.input)
    return plain({"config": encode_config(case.config), "state": encode_state(case.config, case.broker,
                                                                               SECTIONS_OF[kind]),
                  "now_ms": case.now, "input": encode_input(case.input)})


def decode_case(d: Any) -> tuple[Case, tuple[str, ...]]:
    d = _obj(d, "case")
    c = decode_config(_get(d, "config", "case"))
    now = _get(d, "now_ms", "case", "int")
    inp = decode_input(_get(d, "input", "case"))
    kind = input_kind(inp)
    b = decode_state(c, _get(d, "state", "case"), kind, now)
    return Case(config=c, broker=b, now=now, input=inp), SECTIONS_OF[kind]


def prepare(case: Case) -> tuple[dict, dict, tuple[str, ...]]:
    wire_case = encode_case(case)
    return wire_case, answer(wire_case), requires(case)


# --- answers ---

OUTPUTS = {"notify_transfer_some": {"offset": "int"}, "close": {},
           "append": {"offset": "int", "size": "int", "ok": "bool"}, "report": {"offset": "int", "written": "int"},
           "wakeup_customer": {"nextOffset": "int", "status": PutMessageStatus}}


def check_answer(ans: dict, secs: tuple[str, ...]) -> None:
    """Raise WireError unless `ans` has the shape of an answer to a case with these sections."""
    for key in ("reply", "outputs", "state"):
        if key not in ans:
            raise WireError(f"answer lacks {key!r}")
    if ans["reply"] is not None:
        raise WireError("reply must be null: no ha handler here answers an RPC")
    if not isinstance(ans["outputs"], list):
        raise WireError("outputs must be a list")
    for i, o in enumerate(ans["outputs"]):
        o = _obj(o, f"outputs[{i}]")
        kind = o.get("out")
        if kind not in OUTPUTS:
            raise WireError(f"outputs[{i}].out must be one of {list(OUTPUTS)}, got {_show(kind)}")
        for k, t in OUTPUTS[kind].items():
            _get(o, k, f"outputs[{i}]", t)
    state = _obj(ans["state"], "state")
    if set(state) != set(secs):
        raise WireError(f"state has sections {sorted(state)}, the case had {list(secs)}")
    for name in secs:
        if state[name] is None and name in NULLABLE:
            continue
        if state[name] is None:
            raise WireError(f"state.{name} must be an object")
        _section(state, name, SECTION_FIELDS[name])


# --- readable ---


def value_name(path: str, v: Any) -> str | None:
    return None


def describe(wire_case: dict) -> list[str]:
    cfg, state, inp = wire_case["config"], wire_case["state"], dict(wire_case["input"])
    kind = inp.pop("kind")
    head = f"state:  version {cfg.get('version')}, mappedFileSizeCommitLog={cfg.get('mappedFileSizeCommitLog')}, " \
           f"now_ms={wire_case['now_ms']}"
    lines = [head] + [f"        {name}: {state[name]}" for name in state]
    return lines + [f"input:  {kind} {inp}"]

