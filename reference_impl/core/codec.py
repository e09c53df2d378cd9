"""Events and world configs as JSON-able data (traces, reports, scripts), and back.

Values are encoded by `state.encode` (records become objects tagged with their class
name); here node indices become node ids, and events that name a message (deliver,
drop, duplicate) carry the message itself, so a trace from another implementation can
name a message by content instead of by our envelope id.
"""

from __future__ import annotations

import re
from typing import Any

import reference_impl.core.events as events
import reference_impl.core.network as net_mod
import reference_impl.core.schedule as schedule
from reference_impl.core.faults import FaultProfile
from reference_impl.core.inputs import InputError, show, structure
from reference_impl.core.plugin import protocol
from reference_impl.core.scenario import ScenarioError, parse_actions
from reference_impl.core.state import encode, encode_fields, freeze, thaw
from reference_impl.core.world import World, WorldConfig

MAX_LATE_MS = 60_000  # a tick's lateness in a trace; any real loop notices its due work well within this


class DecodeError(ValueError):
    """A JSON value does not describe an event or config of this world."""


# --- events ---


def encode_event(w: World, ev: Any) -> dict:
    """The event as the trace records it, in the world `w` it is applied to."""
    ids = w.cfg.ids
    if isinstance(ev, events.Tick):
        out = {"kind": "tick", "node": ids[ev.node], "draw": ev.draw}
        threads = protocol(w.cfg.protocol).threads
        if threads is not None:
            out["thread"] = threads(w.cfg.proto, w.nodes[ev.node])[ev.thread]
        if ev.late:
            out["late"] = ev.late
        return out
    if isinstance(ev, (events.Deliver, events.Drop, events.Duplicate)):
        env = net_mod.find(w.net, ev.env)
        kind = {events.Deliver: "deliver", events.Drop: "drop", events.Duplicate: "duplicate"}[type(ev)]
        return {"kind": kind, "id": env.id, "src": ids[env.src], "dst": ids[env.dst], "msg": encode(env.msg)}
    if isinstance(ev, events.RpcFail):
        rpc = net_mod.find_rpc(w.net, ev.rpc)
        out = {"kind": "rpc_fail", "rpc": rpc.id, "requester": ids[rpc.requester], "responder": ids[rpc.responder]}
        if ev.late:
            out["late"] = ev.late
        return out
    if isinstance(ev, events.Crash):
        return {"kind": "crash", "node": ids[ev.node], "os": ev.os, "disk": ev.disk}
    if isinstance(ev, events.Restart):
        return {"kind": "restart", "node": ids[ev.node]}
    if isinstance(ev, events.Partition):
        return {"kind": "partition", "groups": [[ids[i] for i in g] for g in ev.groups]}
    if isinstance(ev, events.CutLink):
        return {"kind": "cut", "src": ids[ev.src], "dst": ids[ev.dst]}
    if isinstance(ev, events.Heal):
        return {"kind": "heal"}
    if isinstance(ev, events.Calm):
        return {"kind": "calm"}
    if isinstance(ev, events.Scripted):
        return {"kind": "script", "index": ev.index, "do": w.cfg.script[ev.index].do}
    p = protocol(w.cfg.protocol)
    if p.ext_events is not None or p.ext_faults is not None:
        return {"kind": "ext", "event": encode(ev)}
    raise TypeError(f"not an event: {ev!r}")


def _node(w: World, d: dict, key: str) -> int:
    try:
        return w.cfg.ids.index(d[key])
    except (KeyError, ValueError):
        raise DecodeError(f"event field {key!r} must name a node of {list(w.cfg.ids)}") from None


def _thread(w: World, d: dict, node: int) -> int:
    """The index of the thread a tick names (`thread`, by name); 0 for a node that is one actor."""
    threads = protocol(w.cfg.protocol).threads
    if threads is None:
        if d.get("thread") is not None:
            raise DecodeError(f"{w.cfg.protocol} nodes are one actor each: a tick names no thread")
        return 0
    names = threads(w.cfg.proto, w.nodes[node])
    name = d.get("thread")
    if name is None and len(names) == 1:
        return 0
    if name not in names:
        raise DecodeError(f"event field 'thread' must name a thread of {w.cfg.ids[node]}: {list(names)}")
    return names.index(name)


def _envelope(w: World, d: dict) -> int:
    """Find the envelope an event names: by id when it is in flight with the same
    endpoints, else the oldest in-flight message with the same endpoints and content."""
    src, dst = _node(w, d, "src"), _node(w, d, "dst")
    env_id = d.get("id")
    for env in w.net.flight:
        if env.id == env_id and env.src == src and env.dst == dst:
            if "msg" not in d or encode(env.msg) == d["msg"]:
                return env.id
    if "msg" in d:
        for env in w.net.flight:
            if env.src == src and env.dst == dst and encode(env.msg) == d["msg"]:
                return env.id
    raise DecodeError(f"no message {src}->{dst} like {d.get('msg')!r} is in flight")


def _late(w: World, d: dict, t_ms: Any, due: int, earliest: int) -> int:
    """A tick's or RPC failure's lateness after `due`: as recorded, else what the line's
    time implies, else the earliest possible."""
    late = d.get("late")
    if late is None:
        timed = isinstance(t_ms, int) and not isinstance(t_ms, bool) and due >= 0 and t_ms > w.now
        return t_ms - due if timed else earliest
    if not isinstance(late, int) or isinstance(late, bool) or not 0 <= late <= MAX_LATE_MS:
        raise DecodeError(f"late must be an integer in [0, {MAX_LATE_MS}]")
    return late


def decode_event(w: World, d: Any, t_ms: Any = None) -> Any:
    """The event a trace line describes, resolved against the world it applies to.
    `t_ms`, the line's time, tells a tick without a recorded `late` how late it fired."""
    if not isinstance(d, dict) or "kind" not in d:
        raise DecodeError("an event must be an object with a 'kind'")
    kind = d["kind"]
    try:
        if kind == "tick":
            draw = d.get("draw", 0)
            if not isinstance(draw, int) or not 0 <= draw < events.DRAW_SPAN:
                raise DecodeError(f"draw must be an integer in [0, {events.DRAW_SPAN})")
            node = _node(w, d, "node")
            thread = _thread(w, d, node)
            wake = schedule.thread_wake_times(w, node)[thread]
            return events.Tick(node=node, draw=draw, thread=thread,
                               late=_late(w, d, t_ms, wake, schedule.tick_window(w, node, thread)[0]))
        if kind in ("deliver", "drop", "duplicate"):
            cls = {"deliver": events.Deliver, "drop": events.Drop, "duplicate": events.Duplicate}[kind]
            return cls(env=_envelope(w, d))
        if kind == "rpc_fail":
            requester, responder = _node(w, d, "requester"), _node(w, d, "responder")
            for rpc in w.net.rpcs:
                if rpc.requester == requester and rpc.responder == responder and (
                        d.get("rpc") in (None, rpc.id)):
                    return events.RpcFail(rpc=rpc.id, late=_late(w, d, t_ms, rpc.deadline_ms,
                                                                 schedule.rpc_window(w, rpc.id)[0]))
            raise DecodeError(f"no open RPC {d['requester']}->{d['responder']}")
        if kind == "crash":
            disk = bool(d.get("disk", False))
            return events.Crash(node=_node(w, d, "node"), os=bool(d.get("os", False)) or disk, disk=disk)
        if kind == "restart":
            return events.Restart(node=_node(w, d, "node"))
        if kind == "partition":
            groups = d.get("groups")
            if not isinstance(groups, list) or not all(isinstance(g, list) for g in groups):
                raise DecodeError("partition needs 'groups': a list of lists of node ids")
            return events.Partition(groups=tuple(tuple(_node(w, {"n": x}, "n") for x in g) for g in groups))
        if kind == "cut":
            return events.CutLink(src=_node(w, d, "src"), dst=_node(w, d, "dst"))
        if kind == "heal":
            return events.Heal()
        if kind == "calm":
            return events.Calm()
        if kind == "ext":
            p = protocol(w.cfg.protocol)
            want = d.get("event")
            candidates = list(p.ext_events(w, schedule.horizon(w))) if p.ext_events is not None else []
            if p.ext_faults is not None:  # the protocol's own fault kinds
                candidates += [ev for ev in schedule.fault_events(w) if not isinstance(ev, events.FAULT_EVENTS)]
            for ev in candidates:
                if encode(ev) == want:
                    return ev
            raise DecodeError(f"no protocol event {want!r} is enabled here")
        if kind == "script":
            index = d.get("index")
            if not isinstance(index, int) or not 0 <= index < len(w.cfg.script):
                raise DecodeError("script event needs the index of an action of the trace's script")
            return events.Scripted(index=index)
    except KeyError as e:
        raise DecodeError(f"{kind} event lacks field {e}") from None
    raise DecodeError(f"unknown event kind {kind!r}")


# --- configs ---


def encode_observation(w: World, obs: Any) -> dict:
    """An observation as a trace records it; world events (faults) name nodes by id."""
    if isinstance(obs, (events.Crash, events.Restart, events.Partition, events.CutLink, events.Heal, events.Calm)):
        return encode_event(w, obs)
    return encode(obs)


def dump_config(cfg: WorldConfig) -> dict:
    return {
        "protocol": cfg.protocol,
        "ids": list(cfg.ids),
        "proto": encode_fields(cfg.proto),
        "profile": encode_fields(cfg.profile),
        "script": [thaw(a.source) for a in cfg.script],
        "down": [cfg.ids[i] for i in cfg.down],
        "crashable": [cfg.ids[i] for i in cfg.crashable],
        "overrides": thaw(cfg.overrides),
    }


def load_config(d: Any) -> WorldConfig:
    """Rebuild a world config from `dump_config` output (a trace header's `config`).
    Raises InputError naming the field (`proto.dledger.max_heart_beat_leak`, `script[3].at_ms`)."""
    if not isinstance(d, dict):
        raise InputError("", f"must be an object, got {show(d)}")
    unknown = set(d) - CONFIG_KEYS
    if unknown:
        raise InputError("", f"has unknown key(s): {', '.join(sorted(map(str, unknown)))}")
    for key in ("protocol", "ids", "proto"):
        if key not in d:
            raise InputError(key, "is required")
    try:
        p = protocol(d["protocol"])
    except KeyError:
        raise InputError("protocol", f"names no protocol of ours: {show(d['protocol'])}") from None
    ids = structure(d["ids"], tuple[str, ...], "ids")
    if not 1 <= len(ids) <= MAX_NODES or len(set(ids)) != len(ids) or not all(NODE_ID.match(x) for x in ids):
        raise InputError("ids", f"must list 1..{MAX_NODES} distinct node ids (letters, digits, '-', '_', '.', ':')")
    profile = structure(d.get("profile", {}), FaultProfile, "profile")
    script = d.get("script", [])
    if not isinstance(script, list):
        raise InputError("script", f"must be a list of actions, got {show(script)}")
    try:
        script = parse_actions(script, ids, p)
    except InputError as e:
        raise e.at("script") from None
    except ScenarioError as e:
        raise InputError("script", str(e)) from None
    down = _node_indexes(d, "down", ids)
    crashable = _node_indexes(d, "crashable", ids)
    try:
        proto = p.load_config(d["proto"])
    except InputError as e:
        raise e.at("proto") from None
    except (KeyError, TypeError, ValueError) as e:
        raise InputError("proto", str(e.args[0] if e.args else e)) from None
    if p.check_ids is not None:
        try:
            p.check_ids(proto, ids)
        except ValueError as e:
            raise InputError("ids", str(e)) from None
    # The config values the user set, kept apart so that properties can tell a user's override
    # from RocketMQ's default (spec/bounds.py).
    overrides = d.get("overrides", {})
    if not isinstance(overrides, dict):
        raise InputError("overrides", f"must be an object (the config values the user set), got {show(overrides)}")
    try:
        overrides = freeze(overrides)
    except (TypeError, ValueError, RecursionError) as e:
        raise InputError("overrides", str(e)) from None
    return WorldConfig(protocol=p.name, ids=ids, proto=proto, profile=profile, script=script, down=down,
                       crashable=crashable, overrides=overrides)


CONFIG_KEYS = {"protocol", "ids", "proto", "profile", "script", "down", "crashable", "overrides"}
MAX_NODES = 64
NODE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")


def _node_indexes(d: dict, key: str, ids: tuple[str, ...]) -> tuple[int, ...]:
    names = structure(d.get(key, []), tuple[str, ...], key)
    if any(x not in ids for x in names) or len(set(names)) != len(names):
        raise InputError(key, f"must list distinct node ids of {list(ids)}")
    return tuple(ids.index(x) for x in names)
