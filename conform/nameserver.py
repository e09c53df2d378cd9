"""The `nameserver` subject of the conformance driver: RocketMQ 4.9.4's `RouteInfoManager` on the
wire (docs/conformance.md, "NameServer cases").

A case is one NameServer's routing tables, the time, and one call:

| input (hello `inputs`) | Java entry point |
|---|---|
| `register_broker` | `RouteInfoManager#registerBroker(clusterName, brokerAddr, brokerName, brokerId, haServerAddr, topicConfigWrapper, filterServerList, channel)`, as `DefaultRequestProcessor` calls it for REGISTER_BROKER: the wrapper is never null (the processor makes an empty one when the body has none) |
| `unregister_broker` | `RouteInfoManager#unregisterBroker(clusterName, brokerAddr, brokerName, brokerId)` (UNREGISTER_BROKER) |
| `get_route` | `RouteInfoManager#pickupTopicRouteData(topic)` (GET_ROUTEINFO_BY_TOPIC; null answers TOPIC_NOT_EXIST) |
| `channel_destroy` | `RouteInfoManager#onChannelDestroy(remoteAddr, channel)` (BrokerHousekeepingService on a channel's close, exception or idle event) |

The answer's reply is `registerBroker`'s `RegisterBrokerResult` (`haServerAddr`, `masterAddr`),
`pickupTopicRouteData`'s `TopicRouteData` (`queueDatas` and `brokerDatas` sorted by broker name, as
every client sorts them; `filterServerTable`) or null; there are no outputs; the state is the five
tables after the call. A channel is named by a string: the driver maps each name to one channel object
of its own (Java compares channels by identity). Tables are lists of `[key, value]` sorted by key,
and a set a sorted list, so a driver that adds an entry differs as surely as one that drops one.

`lastUpdateTimestamp` is on the case's clock: `registerBroker` reads `System.currentTimeMillis()`,
which a driver reports as `now_ms` (the state's other timestamps are the case's).

This module is the only place that knows how `nameserver` cases look on the wire;
`conform.nameserver_cases` makes them.
"""

from __future__ import annotations

from typing import Any

from conform.wire import WireError, plain
from conform.wire import get as _get
from conform.wire import obj as _obj
from conform.wire import show as _show
from reference_impl.core.state import FrozenMap, record
from reference_impl.nameserver import route_info as ri

PROTOCOL = "nameserver"
INPUTS = ("register_broker", "unregister_broker", "get_route", "channel_destroy")
FEATURES: tuple[str, ...] = ()
SECTIONS = ("routeInfo",)
TABLES = ("topicQueueTable", "brokerAddrTable", "clusterAddrTable", "brokerLiveTable", "filterServerTable")


# --- a case in the reference's terms ---


@record
class RegisterBroker:
    cluster_name: str
    broker_addr: str
    broker_name: str
    broker_id: int
    ha_server_addr: str
    topic_config: ri.TopicConfigSerializeWrapper
    filter_server_list: tuple | None
    channel: str


@record
class UnregisterBroker:
    cluster_name: str
    broker_addr: str
    broker_name: str
    broker_id: int


@record
class GetRoute:
    topic: str


@record
class ChannelDestroy:
    remote_addr: str
    channel: str | None


@record
class Case:
    rim: ri.RouteInfo
    now: int
    input: Any


KINDS = {RegisterBroker: "register_broker", UnregisterBroker: "unregister_broker", GetRoute: "get_route",
         ChannelDestroy: "channel_destroy"}


def requires(case: Case) -> tuple[str, ...]:
    return (KINDS[type(case.input)],)


def sections(wire_case: dict) -> tuple[str, ...]:
    return SECTIONS


# --- the reference's answer ---


def run(case: Case) -> tuple[ri.RouteInfo, Any]:
    """Apply the case's call with the reference's RouteInfoManager (reference_impl.nameserver.route_info):
    (tables after, the call's result)."""
    rim, inp, now = case.rim, case.input, case.now
    if isinstance(inp, RegisterBroker):
        rim, result, _ = ri.register_broker(rim, inp.cluster_name, inp.broker_addr, inp.broker_name, inp.broker_id,
                                            inp.ha_server_addr, inp.topic_config, inp.filter_server_list,
                                            inp.channel, now)
        return rim, result
    if isinstance(inp, UnregisterBroker):
        rim, _ = ri.unregister_broker(rim, inp.cluster_name, inp.broker_addr, inp.broker_name, inp.broker_id)
        return rim, None
    if isinstance(inp, GetRoute):
        return rim, ri.pickup_topic_route_data(rim, inp.topic)
    return ri.on_channel_destroy(rim, inp.remote_addr, inp.channel), None


def answer(wire_case: dict) -> dict:
    """The reference's answer to a wire case, as a wire answer (without the case id)."""
    case = decode_case(wire_case)
    after, result = run(case)
    return plain({"reply": encode_reply(result), "outputs": [], "state": {"routeInfo": encode_route_info(after)}})


def prepare(case: Case) -> tuple[dict, dict, tuple[str, ...]]:
    wire_case = encode_case(case)
    return wire_case, answer(wire_case), requires(case)


# --- encoding ---


def _version(v: ri.DataVersion) -> dict:
    return {"timestamp": v.timestamp, "counter": v.counter}


def _queue_data(q: ri.QueueData) -> dict:
    return {"brokerName": q.broker_name, "readQueueNums": q.read_queue_nums, "writeQueueNums": q.write_queue_nums,
            "perm": q.perm, "topicSysFlag": q.topic_sys_flag}


def _broker_data(b: ri.BrokerData) -> dict:
    return {"cluster": b.cluster, "brokerName": b.broker_name,
            "brokerAddrs": [[bid, addr] for bid, addr in sorted(b.broker_addrs.items())]}


def _topic_config(t: ri.TopicConfig) -> dict:
    return {"topicName": t.topic_name, "readQueueNums": t.read_queue_nums, "writeQueueNums": t.write_queue_nums,
            "perm": t.perm, "topicSysFlag": t.topic_sys_flag}


def encode_route_info(rim: ri.RouteInfo) -> dict:
    return {
        "topicQueueTable": [[t, [_queue_data(q) for _, q in sorted(qs.items())]]
                            for t, qs in sorted(rim.topic_queue_table.items())],
        "brokerAddrTable": [[n, _broker_data(b)] for n, b in sorted(rim.broker_addr_table.items())],
        "clusterAddrTable": [[c, sorted(names)] for c, names in sorted(rim.cluster_addr_table.items())],
        "brokerLiveTable": [[a, {"lastUpdateTimestamp": x.last_update_timestamp,
                                 "dataVersion": _version(x.data_version), "channel": x.channel,
                                 "haServerAddr": x.ha_server_addr}]
                            for a, x in sorted(rim.broker_live_table.items())],
        "filterServerTable": [[a, list(fs)] for a, fs in sorted(rim.filter_server_table.items())],
    }


def encode_reply(result: Any) -> Any:
    if isinstance(result, ri.RegisterBrokerResult):
        return {"haServerAddr": result.ha_server_addr, "masterAddr": result.master_addr}
    if isinstance(result, ri.TopicRouteData):
        return {"queueDatas": [_queue_data(q) for q in sorted(result.queue_datas, key=lambda q: q.broker_name)],
                "brokerDatas": [_broker_data(b) for b in sorted(result.broker_datas, key=lambda b: b.broker_name)],
                "filterServerTable": [[a, list(fs)] for a, fs in sorted(result.filter_server_table.items())]}
    return None


def encode_input(inp: Any) -> dict:
    kind = KINDS[type(inp)]
    if isinstance(inp, RegisterBroker):
        table = sorted(inp.topic_config.topic_config_table.items())
        wrapper = {"topicConfigTable": [[t, _topic_config(tc)] for t, tc in table],
                   "dataVersion": _version(inp.topic_config.data_version)}
        return {"kind": kind, "clusterName": inp.cluster_name, "brokerAddr": inp.broker_addr,
                "brokerName": inp.broker_name, "brokerId": inp.broker_id, "haServerAddr": inp.ha_server_addr,
                "topicConfigWrapper": wrapper,
                "filterServerList": None if inp.filter_server_list is None else list(inp.filter_server_list),
                "channel": inp.channel}
    if isinstance(inp, UnregisterBroker):
        return {"kind": kind, "clusterName": inp.cluster_name, "brokerAddr": inp.broker_addr,
                "brokerName": inp.broker_name, "brokerId": inp.broker_id}
    if isinstance(inp, GetRoute):
        return {"kind": kind, "topic": inp.topic}
    return {"kind": kind, "remoteAddr": inp.remote_addr, "channel": inp.channel}


def encode_case(case: Case) -> dict:
    return plain({"config": {}, "state": {"routeInfo": encode_route_info(case.rim)}, "now_ms": case.now,
                  "input": encode_input(case.input)})


# --- decoding (a wire case from a vectors file, or the reference's own) ---


def _list(v: Any, where: str) -> list:
    if not isinstance(v, list):
        raise WireError(f"{where} must be a list, got {_show(v)}")
    return v


def _entries(v: Any, where: str) -> list[tuple[str, Any]]:
    """A table: a list of [key, value], keys distinct strings."""
    out, seen = [], set()
    for i, e in enumerate(_list(v, where)):
        if not isinstance(e, list) or len(e) != 2 or not isinstance(e[0], str) or e[0] in seen:
            raise WireError(f"{where}[{i}] must be [key, value] with a key not seen before, got {_show(e)}")
        seen.add(e[0])
        out.append((e[0], e[1]))
    return out


def _str(d: dict, key: str, where: str, nullable: bool = False) -> Any:
    v = _get(d, key, where)
    if isinstance(v, str) or (nullable and v is None):
        return v
    raise WireError(f"{where}.{key} must be a string{' or null' if nullable else ''}, got {_show(v)}")


def _int(d: dict, key: str, where: str) -> int:
    return _get(d, key, where, "int")


def _decode_version(d: Any, where: str) -> ri.DataVersion:
    d = _obj(d, where)
    return ri.DataVersion(timestamp=_int(d, "timestamp", where), counter=_int(d, "counter", where))


def _decode_queue_data(d: Any, where: str) -> ri.QueueData:
    d = _obj(d, where)
    return ri.QueueData(broker_name=_str(d, "brokerName", where), read_queue_nums=_int(d, "readQueueNums", where),
                        write_queue_nums=_int(d, "writeQueueNums", where), perm=_int(d, "perm", where),
                        topic_sys_flag=_int(d, "topicSysFlag", where))


def _decode_broker_data(d: Any, where: str) -> ri.BrokerData:
    d = _obj(d, where)
    addrs = {}
    for i, e in enumerate(_list(_get(d, "brokerAddrs", where), f"{where}.brokerAddrs")):
        if not (isinstance(e, list) and len(e) == 2 and isinstance(e[0], int) and not isinstance(e[0], bool)
                and isinstance(e[1], str)) or e[0] in addrs:
            raise WireError(f"{where}.brokerAddrs[{i}] must be [id, address] with a new id, got {_show(e)}")
        addrs[e[0]] = e[1]
    return ri.BrokerData(cluster=_str(d, "cluster", where), broker_name=_str(d, "brokerName", where),
                         broker_addrs=FrozenMap(sorted(addrs.items())))


def _strings(v: Any, where: str) -> tuple[str, ...]:
    v = _list(v, where)
    if not all(isinstance(x, str) for x in v):
        raise WireError(f"{where} must be a list of strings, got {_show(v)}")
    return tuple(v)


def decode_route_info(d: Any, where: str = "state.routeInfo") -> ri.RouteInfo:
    d = _obj(d, where)
    topics = []
    for t, qs in _entries(_get(d, "topicQueueTable", where), f"{where}.topicQueueTable"):
        at = f"{where}.topicQueueTable.{t}"
        queues = [_decode_queue_data(q, at) for q in _list(qs, at)]
        topics.append((t, FrozenMap((q.broker_name, q) for q in queues)))
    brokers = [(n, _decode_broker_data(b, f"{where}.brokerAddrTable.{n}"))
               for n, b in _entries(_get(d, "brokerAddrTable", where), f"{where}.brokerAddrTable")]
    clusters = [(c, frozenset(_strings(names, f"{where}.clusterAddrTable.{c}")))
                for c, names in _entries(_get(d, "clusterAddrTable", where), f"{where}.clusterAddrTable")]
    live = []
    for a, x in _entries(_get(d, "brokerLiveTable", where), f"{where}.brokerLiveTable"):
        w = f"{where}.brokerLiveTable.{a}"
        x = _obj(x, w)
        live.append((a, ri.BrokerLiveInfo(
            last_update_timestamp=_int(x, "lastUpdateTimestamp", w),
            data_version=_decode_version(_get(x, "dataVersion", w), f"{w}.dataVersion"),
            channel=_str(x, "channel", w), ha_server_addr=_str(x, "haServerAddr", w))))
    filters = [(a, _strings(fs, f"{where}.filterServerTable.{a}"))
               for a, fs in _entries(_get(d, "filterServerTable", where), f"{where}.filterServerTable")]
    return ri.RouteInfo(topic_queue_table=FrozenMap(topics), broker_addr_table=FrozenMap(brokers),
                        cluster_addr_table=FrozenMap(clusters), broker_live_table=FrozenMap(live),
                        filter_server_table=FrozenMap(filters))


def decode_input(d: Any) -> Any:
    d = _obj(d, "input")
    kind = d.get("kind")
    if kind == "register_broker":
        w = _obj(_get(d, "topicConfigWrapper", "input"), "input.topicConfigWrapper")
        table = []
        for t, tc in _entries(_get(w, "topicConfigTable", "input.topicConfigWrapper"),
                              "input.topicConfigWrapper.topicConfigTable"):
            x = _obj(tc, f"input.topicConfigWrapper.topicConfigTable.{t}")
            where = f"input.topicConfigWrapper.topicConfigTable.{t}"
            try:
                config = ri.TopicConfig(topic_name=_str(x, "topicName", where),
                                        read_queue_nums=_int(x, "readQueueNums", where),
                                        write_queue_nums=_int(x, "writeQueueNums", where), perm=_int(x, "perm", where),
                                        topic_sys_flag=_int(x, "topicSysFlag", where))
            except ValueError as e:
                if isinstance(e, WireError):
                    raise
                raise WireError(f"{where}: {e}") from None
            table.append((t, config))
        wrapper = ri.TopicConfigSerializeWrapper(
            topic_config_table=FrozenMap(table),
            data_version=_decode_version(_get(w, "dataVersion", "input.topicConfigWrapper"),
                                         "input.topicConfigWrapper.dataVersion"))
        filters = _get(d, "filterServerList", "input")
        return RegisterBroker(cluster_name=_str(d, "clusterName", "input"), broker_addr=_str(d, "brokerAddr", "input"),
                              broker_name=_str(d, "brokerName", "input"), broker_id=_int(d, "brokerId", "input"),
                              ha_server_addr=_str(d, "haServerAddr", "input"), topic_config=wrapper,
                              filter_server_list=None if filters is None
                              else _strings(filters, "input.filterServerList"),
                              channel=_str(d, "channel", "input"))
    if kind == "unregister_broker":
        return UnregisterBroker(cluster_name=_str(d, "clusterName", "input"),
                                broker_addr=_str(d, "brokerAddr", "input"),
                                broker_name=_str(d, "brokerName", "input"), broker_id=_int(d, "brokerId", "input"))
    if kind == "get_route":
        return GetRoute(topic=_str(d, "topic", "input"))
    if kind == "channel_destroy":
        return ChannelDestroy(remote_addr=_str(d, "remoteAddr", "input"), channel=_str(d, "channel", "input", True))
    raise WireError(f"input.kind must be one of {list(INPUTS)}, got {_show(kind)}")


def decode_case(d: Any) -> Case:
    d = _obj(d, "case")
    _obj(_get(d, "config", "case"), "case.config")
    now = _get(d, "now_ms", "case", "int")
    state = _obj(_get(d, "state", "case"), "case.state")
    return Case(rim=decode_route_info(_get(state, "routeInfo", "case.state")), now=now,
                input=decode_input(_get(d, "input", "case")))


# --- answers ---


def check_answer(ans: dict, secs: tuple[str, ...]) -> None:
    """Raise WireError unless `ans` has the shape of an answer."""
    for key in ("reply", "outputs", "state"):
        if key not in ans:
            raise WireError(f"answer lacks {key!r}")
    if ans["outputs"] != []:
        raise WireError("outputs must be an empty list: a RouteInfoManager call sends nothing")
    if ans["reply"] is not None:
        _obj(ans["reply"], "reply")
    state = _obj(ans["state"], "state")
    decode_route_info(_get(state, "routeInfo", "state"))


def value_name(path: str, v: Any) -> str | None:
    return None


def describe(wire_case: dict) -> list[str]:
    state = wire_case["state"]["routeInfo"]
    inp = dict(wire_case["input"])
    kind = inp.pop("kind")
    lines = [f"state:  now_ms={wire_case['now_ms']}"] + [f"        {name}: {state[name]}" for name in TABLES]
    return lines + [f"input:  {kind} {inp}"]
