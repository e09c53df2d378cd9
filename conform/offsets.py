"""The `offsets` subject of the conformance driver: RocketMQ 4.9.4's offset handlers on a broker
(docs/conformance.md, "Consumer-offsets cases").

A case is one broker's offset state (its `ConsumerOffsetManager.offsetTable`, its role, the
`SlaveSynchronize.masterAddr` it learnt, its consume queues as the query reads them), the time, and
one call:

| input (hello `inputs`) | Java entry point |
|---|---|
| `update_consumer_offset` | `ConsumerManageProcessor#updateConsumerOffset` (UPDATE_CONSUMER_OFFSET) -> `ConsumerOffsetManager#commitOffset` |
| `query_consumer_offset` | `ConsumerManageProcessor#queryConsumerOffset` (QUERY_CONSUMER_OFFSET) -> `ConsumerOffsetManager#queryOffset`, then the store's `getMinOffsetInQueue` / `checkInDiskByConsumeOffset(.., 0)` |
| `get_all_consumer_offset` | the master's GET_ALL_CONSUMER_OFFSET answer: `AdminBrokerProcessor#getAllConsumerOffset`, the body `ConsumerOffsetManager#encode()` as `BrokerOuterAPI#getAllConsumerOffset` decodes it |
| `sync_consumer_offset` | `SlaveSynchronize#syncConsumerOffset`: GET_ALL_CONSUMER_OFFSET to `masterAddr` unless it is null or this broker, `putAll` of the answer's table, `persist` |

The reply is the response's code and header (`offset`; null when QUERY_NOT_FOUND), the answer's
table for `get_all_consumer_offset`, null for `sync_consumer_offset`. The outputs are the requests the
call makes (`{"kind": "get_all_consumer_offset", "addr": ...}`) and the files it writes (`{"kind":
"persist", "offsetTable": ...}`: consumerOffset.json read back); `sync_consumer_offset`'s input
carries the master's answer (null: the request failed). The state is the broker after the call.

Tables are lists of `["topic@group", [[queueId, offset], ...]]` sorted by key and queue id. The consume
queues are the CommitLog offsets of their units (`minOffset` is 0: no file is deleted in this model),
`maxPhy` the CommitLog's max offset; the query's "in disk" is `maxPhy - phy > memory` with `memory =
totalPhysicalMemorySize * accessMessageInMemoryMaxRatio / 100` (DefaultMessageStore).

This module is the only place that knows how `offsets` cases look on the wire;
`conform.offsets_cases` makes them.
"""

from __future__ import annotations

from typing import Any

from conform.wire import WireError, plain
from conform.wire import get as _get
from conform.wire import obj as _obj
from conform.wire import show as _show
from reference_impl.core.network import Send
from reference_impl.core.state import FrozenMap, record
from reference_impl.offsets import broker as ob
from reference_impl.offsets import records as rec
from reference_impl.rocketmq import ResponseCode

PROTOCOL = "offsets"
INPUTS = ("update_consumer_offset", "query_consumer_offset", "get_all_consumer_offset", "sync_consumer_offset")
FEATURES: tuple[str, ...] = ()
SECTIONS = ("broker",)


# --- a case in the reference's terms ---


@record
class UpdateConsumerOffset:
    topic: str
    group: str
    queue_id: int
    commit_offset: int


@record
class QueryConsumerOffset:
    topic: str
    group: str
    queue_id: int


@record
class GetAllConsumerOffset:
    pass


@record
class SyncConsumerOffset:
    response: FrozenMap | None  # the master's offsetTable, or None: getAllConsumerOffset threw


@record
class Case:
    config: rec.OffsetsConfig
    broker: rec.Broker
    now: int
    input: Any


KINDS = {UpdateConsumerOffset: "update_consumer_offset", QueryConsumerOffset: "query_consumer_offset",
         GetAllConsumerOffset: "get_all_consumer_offset", SyncConsumerOffset: "sync_consumer_offset"}


def requires(case: Case) -> tuple[str, ...]:
    return (KINDS[type(case.input)],)


def sections(wire_case: dict) -> tuple[str, ...]:
    return SECTIONS


# --- the reference's answer ---


def run(case: Case) -> tuple[rec.Broker, Any, tuple]:
    """Apply the case's call with the reference's broker (reference_impl.offsets.broker): (broker after,
    the reply, the outputs as wire objects)."""
    c, b, inp = case.config, case.broker, case.input
    if isinstance(inp, UpdateConsumerOffset):
        b, _ = ob.update_consumer_offset(b, rec.UpdateConsumerOffset(topic=inp.topic, group=inp.group,
                                                                     queue_id=inp.queue_id,
                                                                     commit_offset=inp.commit_offset))
        return b, {"code": int(ResponseCode.SUCCESS)}, ()
    if isinstance(inp, QueryConsumerOffset):
        resp = ob.query_consumer_offset(c, b, rec.QueryConsumerOffset(topic=inp.topic, group=inp.group,
                                                                      queue_id=inp.queue_id))
        found = resp.code is ResponseCode.SUCCESS
        return b, {"code": int(resp.code), "offset": resp.offset if found else None}, ()
    if isinstance(inp, GetAllConsumerOffset):
        _, wrapper, _ = ob.on_request(c, b, rec.GetAllConsumerOffset(), -1, case.now)
        return b, {"code": int(ResponseCode.SUCCESS), "offsetTable": encode_table(wrapper.offset_table)}, ()
    b, sends = ob.sync_all(c, b.evolve(next_sync_ms=case.now), case.now)
    outs: tuple = tuple({"kind": "get_all_consumer_offset", "addr": s.dst} for s in sends if isinstance(s, Send))
    if not outs:
        return b, None, ()
    answer = None if inp.response is None else rec.ConsumerOffsetSerializeWrapper(offset_table=inp.response)
    b, observed = ob.on_all_consumer_offset(b, outs[0]["addr"], answer)
    persisted = tuple({"kind": "persist", "offsetTable": encode_table(o.table)} for o in observed
                      if isinstance(o, rec.OffsetsPersisted))
    return b, None, outs + persisted


def answer(wire_case: dict) -> dict:
    """The reference's answer to a wire case, as a wire answer (without the case id)."""
    case = decode_case(wire_case)
    after, reply, outs = run(case)
    return plain({"reply": reply, "outputs": list(outs), "state": {"broker": encode_broker(after)}})


def prepare(case: Case) -> tuple[dict, dict, tuple[str, ...]]:
    wire_case = encode_case(case)
    return wire_case, answer(wire_case), requires(case)


# --- encoding ---


def encode_table(table: FrozenMap) -> list:
    return [[key, [[q, o] for q, o in sorted(inner.items())]] for key, inner in sorted(table.items())]


def encode_broker(b: rec.Broker) -> dict:
    return {"brokerAddr": b.id, "brokerId": b.broker_id, "masterAddr": b.master_addr,
            "offsetTable": encode_table(b.offset_table),
            "store": {"maxPhy": b.store.max_phy, "consumeQueues": [[u.phy for u in cq] for cq in b.store.cqs]}}


def encode_config(c: rec.OffsetsConfig) -> dict:
    return {"totalPhysicalMemorySize": c.total_physical_memory_size,
            "accessMessageInMemoryMaxRatio": c.access_message_in_memory_max_ratio}


def encode_input(inp: Any) -> dict:
    kind = KINDS[type(inp)]
    if isinstance(inp, UpdateConsumerOffset):
        return {"kind": kind, "topic": inp.topic, "consumerGroup": inp.group, "queueId": inp.queue_id,
                "commitOffset": inp.commit_offset}
    if isinstance(inp, QueryConsumerOffset):
        return {"kind": kind, "topic": inp.topic, "consumerGroup": inp.group, "queueId": inp.queue_id}
    if isinstance(inp, GetAllConsumerOffset):
        return {"kind": kind}
    return {"kind": kind, "response": None if inp.response is None else {"offsetTable": encode_table(inp.response)}}


def encode_case(case: Case) -> dict:
    return plain({"config": encode_config(case.config), "state": {"broker": encode_broker(case.broker)},
                  "now_ms": case.now, "input": encode_input(case.input)})


# --- decoding (a wire case from a vectors file, or the reference's own) ---


def _list(v: Any, where: str) -> list:
    if not isinstance(v, list):
        raise WireError(f"{where} must be a list, got {_show(v)}")
    return v


def _str(d: dict, key: str, where: str, nullable: bool = False) -> Any:
    v = _get(d, key, where)
    if isinstance(v, str) or (nullable and v is None):
        return v
    raise WireError(f"{where}.{key} must be a string{' or null' if nullable else ''}, got {_show(v)}")


def _int(d: dict, key: str, where: str) -> int:
    return _get(d, key, where, "int")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def decode_table(v: Any, where: str) -> FrozenMap:
    """A table: [key, [[queueId, offset], ...]] with distinct keys and, per key, distinct queue ids."""
    out = {}
    for i, e in enumerate(_list(v, where)):
        if not (isinstance(e, list) and len(e) == 2 and isinstance(e[0], str)) or e[0] in out:
            raise WireError(f"{where}[{i}] must be [key, entries] with a key not seen before, got {_show(e)}")
        inner: dict = {}
        for j, p in enumerate(_list(e[1], f"{where}[{i}][1]")):
            if not (isinstance(p, list) and len(p) == 2 and _is_int(p[0]) and _is_int(p[1])) or p[0] in inner:
                raise WireError(f"{where}[{i}][1][{j}] must be [queueId, offset] with a new queue id, got {_show(p)}")
            inner[p[0]] = p[1]
        out[e[0]] = FrozenMap(sorted(inner.items()))
    return FrozenMap(sorted(out.items()))


def decode_broker(d: Any, where: str = "state.broker") -> rec.Broker:
    d = _obj(d, where)
    store = _obj(_get(d, "store", where), f"{where}.store")
    cqs = []
    for i, cq in enumerate(_list(_get(store, "consumeQueues", f"{where}.store"), f"{where}.store.consumeQueues")):
        phys = _list(cq, f"{where}.store.consumeQueues[{i}]")
        if not all(_is_int(p) and p >= 0 for p in phys):
            raise WireError(f"{where}.store.consumeQueues[{i}] must be a list of CommitLog offsets, got {_show(cq)}")
        cqs.append(tuple(rec.CqUnit(phy=p, size=0, msg_id="") for p in phys))
    return rec.Broker(id=_str(d, "brokerAddr", where), broker_id=_int(d, "brokerId", where),
                      master_addr=_str(d, "masterAddr", where, True),
                      offset_table=decode_table(_get(d, "offsetTable", where), f"{where}.offsetTable"),
                      store=rec.Store(cqs=tuple(cqs), max_phy=_int(store, "maxPhy", f"{where}.store")))


def decode_config(d: Any) -> rec.OffsetsConfig:
    d = _obj(d, "case.config")
    total, ratio = _int(d, "totalPhysicalMemorySize", "case.config"), _int(d, "accessMessageInMemoryMaxRatio",
                                                                          "case.config")
    if total < 1 or not 0 <= ratio <= 100:
        raise WireError(f"case.config: totalPhysicalMemorySize must be >= 1 and accessMessageInMemoryMaxRatio "
                        f"in 0..100, got {total} and {ratio}")
    return rec.OffsetsConfig(total_physical_memory_size=total, access_message_in_memory_max_ratio=ratio)


def decode_input(d: Any) -> Any:
    d = _obj(d, "input")
    kind = d.get("kind")
    if kind in ("update_consumer_offset", "query_consumer_offset"):
        topic, group = _str(d, "topic", "input"), _str(d, "consumerGroup", "input")
        queue_id = _get(d, "queueId", "input", "int")
        if kind == "query_consumer_offset":
            return QueryConsumerOffset(topic=topic, group=group, queue_id=queue_id)
        return UpdateConsumerOffset(topic=topic, group=group, queue_id=queue_id,
                                    commit_offset=_get(d, "commitOffset", "input", "int"))
    if kind == "get_all_consumer_offset":
        return GetAllConsumerOffset()
    if kind == "sync_consumer_offset":
        resp = _get(d, "response", "input")
        if resp is None:
            return SyncConsumerOffset(response=None)
        resp = _obj(resp, "input.response")
        return SyncConsumerOffset(response=decode_table(_get(resp, "offsetTable", "input.response"),
                                                        "input.response.offsetTable"))
    raise WireError(f"input.kind must be one of {list(INPUTS)}, got {_show(kind)}")


def decode_case(d: Any) -> Case:
    d = _obj(d, "case")
    config = decode_config(_get(d, "config", "case"))
    now = _get(d, "now_ms", "case", "int")
    state = _obj(_get(d, "state", "case"), "case.state")
    return Case(config=config, broker=decode_broker(_get(state, "broker", "case.state")), now=now,
                input=decode_input(_get(d, "input", "case")))


# --- answers ---


def check_answer(ans: dict, secs: tuple[str, ...]) -> None:
    """Raise WireError unless `ans` has the shape of an answer."""
    for key in ("reply", "outputs", "state"):
        if key not in ans:
            raise WireError(f"answer lacks {key!r}")
    if ans["reply"] is not None:
        _obj(ans["reply"], "reply")
    for i, o in enumerate(_list(ans["outputs"], "outputs")):
        _obj(o, f"outputs[{i}]")
    state = _obj(ans["state"], "state")
    decode_broker(_get(state, "broker", "state"))


def value_name(path: str, v: Any) -> str | None:
    """The Java name of a response code in the reply."""
    if path == "reply.code" and isinstance(v, int) and not isinstance(v, bool):
        try:
            return ResponseCode(v).name
        except ValueError:
            return None
    return None


def describe(wire_case: dict) -> list[str]:
    b = wire_case["state"]["broker"]
    inp = dict(wire_case["input"])
    kind = inp.pop("kind")
    return [f"state:  now_ms={wire_case['now_ms']} config={wire_case['config']}",
            f"        broker {b['brokerAddr']} brokerId={b['brokerId']} masterAddr={b['masterAddr']}",
            f"        offsetTable: {b['offsetTable']}",
            f"        store: {b['store']}",
            f"input:  {kind} {inp}"]
