"""The `dledger_log` subject of the conformance driver: DLedger 0.2.6's log-replication handlers on
the wire (docs/conformance.md, "Log replication cases").

A case is one server's state (its MemberState, its store's entries and indexes, the follower's
EntryHandler or the leader's pending appends), the time, and one input (hello `inputs`):

- `PushEntryRequest`: `DLedgerServer#handlePush`, then `EntryHandler#handlePush`: an APPEND is
  filed by index, a COMPARE / TRUNCATE / COMMIT queued; answered at once only when refused;
- `entry_handler`: the `EntryHandler` thread runs until it waits: `doWork` again and again (the
  queue first: TRUNCATE, COMPARE, COMMIT against the store; then the appends in index order),
  `checkAbnormalFuture` when a second has passed;
- `AppendEntryRequest`: `DLedgerServer#handleAppend`: the guards, `appendAsLeader`,
  `DLedgerEntryPusher#waitAck` (the future parked, or answered at once).

The answer is the reply (null when the answer is deferred), the outputs (`respond`: a deferred
answer completing, with the RPC it answers) and the state after, in the case's sections. This
module is the only place that knows how these cases look on the wire; `conform.dledger_log_cases`
makes them.

Positions follow DLedgerMmapFileStore: an entry is 48 bytes of header plus its body and starts
where the previous one ended (one data file of 1 GiB: no roll-over in a case). A body is
`{key, length}`: the key names the client's request, the length is the body's size in bytes; a
driver writes `length` bytes that hold the key (the key's UTF-8, padded with zeros) and reads
the key back from them.
"""

from __future__ import annotations

import json
from typing import Any

from conform import wire
from conform.wire import WireError, plain
from conform.wire import get as _get
from conform.wire import obj as _obj
from conform.wire import show as _show
from reference_impl.core.network import Respond
from reference_impl.core.state import FrozenMap, encode, record
from reference_impl.dledger_log import entry_handler as eh
from reference_impl.dledger_log import entry_pusher as ep
from reference_impl.dledger_log import server as dn
from reference_impl.dledger_log import store as st
from reference_impl.election.member_state import Member
from reference_impl.election.records import Code, DLedgerConfig, Role

PROTOCOL = "dledger_log"
INPUTS = ("PushEntryRequest", "entry_handler", "AppendEntryRequest")
FEATURES: tuple[str, ...] = ()
SECTIONS_OF = {"PushEntryRequest": ("memberState", "store", "entryHandler"),
               "entry_handler": ("memberState", "store", "entryHandler"),
               "AppendEntryRequest": ("memberState", "store", "pusher")}
MAX_RUNS = 10_000  # doWork passes of one entry_handler input at most (each takes a queued request or an entry)


# --- a case in the reference's terms ---


@record
class Request:
    """An RPC request handed to DLedgerServer (`rpc`: its id, which a deferred answer names)."""

    rpc: int
    message: Any


@record
class EntryHandlerRun:
    """The EntryHandler thread runs until it waits."""


@record
class Case:
    config: st.NodeConfig
    node: dn.DLedgerNode
    now: int
    input: Any


def input_kind(inp: Any) -> str:
    return type(inp.message).__name__ if isinstance(inp, Request) else "entry_handler"


# --- the reference's answer ---


def run(case: Case) -> tuple[dn.DLedgerNode, Any, tuple]:
    """Apply the case's input: (node', reply or None, outputs)."""
    cfg, n, now, inp = case.config, case.node, case.now, case.input
    if isinstance(inp, Request):
        return dn.on_request(cfg, n, inp.message, inp.rpc, now)
    outs: tuple = ()
    s, h = n.store, n.handler
    for _ in range(MAX_RUNS):  # until a pass changes nothing: the thread waits
        s2, h2, o = eh.do_work(cfg, n.member, s, h, now)
        outs += o
        if s2 == s and h2 == h:
            break
        s, h = s2, h2
    return n.evolve(store=s, handler=h), None, outs


def answer(wire_case: dict) -> dict:
    """The reference's answer to a wire case, as a wire answer (without the case id)."""
    case, sections = decode_case(wire_case)
    after, reply, outs = run(case)
    return plain({"reply": None if reply is None else encode_message(reply),
                  "outputs": encode_outputs(outs),
                  "state": encode_state(case.config, after, sections)})


def encode_outputs(outs: tuple) -> list[dict]:
    """The deferred answers completed (an AppendFuture's or a push's); the reference's other
    outputs are observations for its ghost variables."""
    return [{"out": "respond", "rpc": o.rpc, "message": encode_message(o.msg)} for o in outs if isinstance(o, Respond)]


def requires(case: Case) -> tuple[str, ...]:
    return (input_kind(case.input),)


# --- config ---

CONFIG_FIELDS = {"group": "group"}
LOG_FIELDS = {"maxPendingRequestsNum": "max_pending_requests_num"}


def encode_config(cfg: st.NodeConfig, self_id: str) -> dict:
    return {"selfId": self_id, "peers": list(cfg.dledger.peers), "group": cfg.dledger.group,
            "maxPendingRequestsNum": cfg.log.max_pending_requests_num}


def decode_config(d: Any) -> tuple[st.NodeConfig, str]:
    d = _obj(d, "config")
    peers = d.get("peers")
    if not isinstance(peers, list) or not peers or not all(isinstance(p, str) for p in peers):
        raise WireError("config.peers must be a non-empty list of node ids")
    self_id = _get(d, "selfId", "config", "id")
    if self_id not in peers:
        raise WireError(f"config.selfId {self_id!r} is not one of config.peers")
    try:
        dl = DLedgerConfig(peers=tuple(peers), group=_get(d, "group", "config", "id"))
        log = st.LogConfig(max_pending_requests_num=_get(d, "maxPendingRequestsNum", "config", "int"))
        return st.NodeConfig(dledger=dl, log=log), self_id
    except (TypeError, ValueError) as e:
        raise WireError(f"config: {e}") from None


# --- messages ---


def encode_message(msg: Any) -> dict:
    """A message as in traces, without the reference's own connection order (`seq`)."""
    d = encode(msg)
    d.pop("seq", None)
    return d


_PUSH_TYPES = {t.value: t for t in ep.PushType}


def decode_entry(d: Any, where: str) -> st.Entry:
    d = _obj(d, where)
    body = _obj(_get(d, "body", where), f"{where}.body")
    length = _get(body, "length", f"{where}.body", "int")
    if not 0 <= length <= st.LogConfig().mapped_file_size_for_entry_data:
        raise WireError(f"{where}.body.length must be a size in bytes, got {length}")
    return st.Entry(index=_get(d, "index", where, "int"), term=_get(d, "term", where, "int"),
                    pos=_get(d, "pos", where, "int"), size=_get(d, "size", where, "int"),
                    body=st.Body(key=_get(body, "key", f"{where}.body", "id"), length=length))


def decode_message(d: Any, where: str, expect: tuple[str, ...] | None = None) -> Any:
    d = _obj(d, where)
    kind = d.get("type")
    names = ("PushEntryRequest (APPEND, COMMIT, COMPARE, TRUNCATE)", "PushEntryResponse", "AppendEntryRequest",
             "AppendEntryResponse")
    if kind in _PUSH_TYPES and (expect is None or "PushEntryRequest" in expect):
        entry = d.get("entry")
        return ep.PushEntryRequest(group=_get(d, "group", where, "id"), remote_id=_get(d, "remote_id", where, "id"),
                                   leader_id=_get(d, "leader_id", where, "id"), term=_get(d, "term", where, "int"),
                                   type=_PUSH_TYPES[kind],
                                   entry=None if entry is None else decode_entry(entry, f"{where}.entry"),
                                   commit_index=_get(d, "commit_index", where, "int"))
    if kind == "PushEntryResponse" and (expect is None or kind in expect):
        index = d.get("index")
        return ep.PushEntryResponse(code=_get(d, "code", where, Code), term=_get(d, "term", where, "int"),
                                    index=None if index is None else wire.value(index, "int", f"{where}.index"),
                                    begin_index=_get(d, "begin_index", where, "int"),
                                    end_index=_get(d, "end_index", where, "int"))
    if kind == "AppendEntryRequest" and (expect is None or kind in expect):
        body = _obj(_get(d, "body", where), f"{where}.body")
        return ep.AppendEntryRequest(group=_get(d, "group", where, "id"), remote_id=_get(d, "remote_id", where, "id"),
                                     body=st.Body(key=_get(body, "key", f"{where}.body", "id"),
                                                  length=_get(body, "length", f"{where}.body", "int")))
    if kind == "AppendEntryResponse" and (expect is None or kind in expect):
        return ep.AppendEntryResponse(code=_get(d, "code", where, Code), index=_get(d, "index", where, "int"),
                                      pos=_get(d, "pos", where, "int"), term=_get(d, "term", where, "int"),
                                      leader_id=_get(d, "leader_id", where, "id?"))
    raise WireError(f"{where}.type must be one of {list(expect or names)}, got {_show(kind)}")


# --- state ---

MEMBER_STATE = {"currTerm": ("curr_term", "int"), "role": ("role", Role), "leaderId": ("leader_id", "id?"),
                "transferee": ("transferee", "id?")}


def encode_state(cfg: st.NodeConfig, n: dn.DLedgerNode, sections: tuple[str, ...]) -> dict:
    out: dict = {}
    m, s = n.member, n.store
    if "memberState" in sections:
        out["memberState"] = {key: encode(getattr(m, ours)) for key, (ours, _) in MEMBER_STATE.items()}
    if "store" in sections:
        out["store"] = {"ledgerBeginIndex": s.begin_index, "ledgerEndIndex": s.end_index,
                        "ledgerEndTerm": s.end_term if s.entries else -1, "committedIndex": s.committed_index,
                        "entries": [encode(e) for e in s.entries]}
    if "entryHandler" in sections:
        h = n.handler
        out["entryHandler"] = {
            "writeRequests": [_encode_wait(w, index) for index, w in sorted(h.write_requests.items())],
            "compareOrTruncateRequests": [_encode_wait(w) for w in h.queue],
            "lastCheckFastForwardTimeMs": h.last_check_fast_forward_ms}
    if "pusher" in sections:
        p = n.pusher
        out["pusher"] = {
            "peerWaterMarksByTerm": {str(t): dict(zip(cfg.dledger.peers, marks))
                                     for t, marks in sorted(p.water_marks.items())},
            "pendingAppendResponsesByTerm": {str(t): [{"index": i, "rpc": f.rpc, "createdMs": f.created_ms,
                                                       "pos": f.pos, "done": f.done}
                                                      for i, f in sorted(futures.items())]
                                             for t, futures in sorted(p.pending.items())}}
    return out


def _encode_wait(w: eh.PushWait, index: int | None = None) -> dict:
    out = {"rpc": w.rpc, "createdMs": w.created_ms, "request": encode_message(w.request)}
    if index is not None:
        out = {"index": index, **out, "answered": w.answered}
    return out


def decode_state(d: Any, cfg: st.NodeConfig, self_id: str, now: int) -> tuple[dn.DLedgerNode, tuple[str, ...]]:
    """A wire state as a server; absent sections take a fresh server's values."""
    d = _obj(d, "state")
    sections = tuple(s for s in ("memberState", "store", "entryHandler", "pusher") if s in d)
    unknown = set(d) - {"memberState", "store", "entryHandler", "pusher"}
    if unknown:
        raise WireError(f"state has unknown section(s) {sorted(unknown)}")
    for required in ("memberState", "store"):
        if required not in d:
            raise WireError(f"state lacks section {required!r}")
    ms = _obj(d["memberState"], "state.memberState")
    fields = {ours: wire.value(_get(ms, key, "state.memberState"), kind, f"state.memberState.{key}")
              for key, (ours, kind) in MEMBER_STATE.items()}
    s = _decode_store(d["store"], cfg)
    m = Member(self_id=self_id, ledger_end_index=s.end_index, ledger_end_term=s.end_term, **fields)
    n = dn.DLedgerNode(member=m, store=s, pusher=ep.new_pusher(cfg, self_id, now),
                       handler=eh.EntryHandler(last_check_fast_forward_ms=now))
    if "entryHandler" in d:
        n = n.evolve(handler=_decode_handler(d["entryHandler"]))
    if "pusher" in d:
        n = n.evolve(pusher=_decode_pusher(d["pusher"], cfg, n.pusher))
    return n, sections


def _decode_store(d: Any, cfg: st.NodeConfig) -> st.Store:
    where = "state.store"
    d = _obj(d, where)
    raw = _get(d, "entries", where)
    if not isinstance(raw, list):
        raise WireError(f"{where}.entries must be a list")
    entries = tuple(decode_entry(e, f"{where}.entries[{i}]") for i, e in enumerate(raw))
    begin = _get(d, "ledgerBeginIndex", where, "int")
    for i, e in enumerate(entries):
        if e.index != begin + i:
            raise WireError(f"{where}.entries[{i}].index must be {begin + i} (entries are contiguous from "
                            f"ledgerBeginIndex)")
    if not entries and begin != -1:
        raise WireError(f"{where}.ledgerBeginIndex of an empty store is -1")
    s = st.Store(entries=entries, begin_index=begin if entries else -1, end_term=entries[-1].term if entries else -1,
                 min_pos=entries[0].pos if entries else 0)
    if _get(d, "ledgerEndIndex", where, "int") != s.end_index:
        raise WireError(f"{where}.ledgerEndIndex must be the last entry's index ({s.end_index})")
    problem = st.check_positions(cfg.log, s) if entries else None
    if problem:
        raise WireError(f"{where}.entries: {problem}")
    committed = _get(d, "committedIndex", where, "int")
    if committed >= 0:
        e = st.entry_at(s, committed)
        if e is None:
            raise WireError(f"{where}.committedIndex {committed} is not an index of the store")
        s = s.evolve(committed_index=committed, committed_pos=e.pos + e.size)
    return s


def _decode_wait(d: Any, where: str) -> eh.PushWait:
    d = _obj(d, where)
    req = decode_message(_get(d, "request", where), f"{where}.request", ("PushEntryRequest",))
    return eh.PushWait(request=req, rpc=_get(d, "rpc", where, "int"), created_ms=_get(d, "createdMs", where, "int"),
                       answered=bool(d.get("answered", False)))


def _decode_handler(d: Any) -> eh.EntryHandler:
    where = "state.entryHandler"
    d = _obj(d, where)
    writes, queue = _get(d, "writeRequests", where), _get(d, "compareOrTruncateRequests", where)
    if not isinstance(writes, list) or not isinstance(queue, list):
        raise WireError(f"{where}.writeRequests and .compareOrTruncateRequests must be lists")
    table = {}
    for i, x in enumerate(writes):
        w = _decode_wait(x, f"{where}.writeRequests[{i}]")
        index = _get(x, "index", f"{where}.writeRequests[{i}]", "int")
        if w.request.entry is None or w.request.entry.index != index:
            raise WireError(f"{where}.writeRequests[{i}] is filed under its entry's index")
        table[index] = w
    return eh.EntryHandler(write_requests=FrozenMap(table),
                           queue=tuple(_decode_wait(x, f"{where}.compareOrTruncateRequests[{i}]")
                                       for i, x in enumerate(queue)),
                           last_check_fast_forward_ms=_get(d, "lastCheckFastForwardTimeMs", where, "int"))


def _decode_pusher(d: Any, cfg: st.NodeConfig, fresh: ep.Pusher) -> ep.Pusher:
    where = "state.pusher"
    d = _obj(d, where)
    peers = cfg.dledger.peers
    marks = {}
    for t, by_peer in _obj(_get(d, "peerWaterMarksByTerm", where), f"{where}.peerWaterMarksByTerm").items():
        by_peer = _obj(by_peer, f"{where}.peerWaterMarksByTerm.{t}")
        marks[_term(t, where)] = tuple(wire.value(by_peer.get(p, -1), "int", f"{where}.peerWaterMarksByTerm.{t}.{p}")
                                       for p in peers)
    pending = {}
    for t, futures in _obj(_get(d, "pendingAppendResponsesByTerm", where), f"{where}.pending").items():
        if not isinstance(futures, list):
            raise WireError(f"{where}.pendingAppendResponsesByTerm.{t} must be a list")
        table = {}
        for i, f in enumerate(futures):
            f = _obj(f, f"{where}.pendingAppendResponsesByTerm.{t}[{i}]")
            at = f"{where}.pendingAppendResponsesByTerm.{t}[{i}]"
            table[_get(f, "index", at, "int")] = ep.PendingAppend(
                pos=_get(f, "pos", at, "int"), created_ms=_get(f, "createdMs", at, "int"), ref=None,
                rpc=_get(f, "rpc", at, "int"), done=_get(f, "done", at, "bool"))
        pending[_term(t, where)] = FrozenMap(table)
    return fresh.evolve(water_marks=FrozenMap(marks), pending=FrozenMap(pending))


def _term(key: str, where: str) -> int:
    try:
        return int(key)
    except ValueError:
        raise WireError(f"{where}: a term key must be an integer, got {_show(key)}") from None


def check_state(d: Any, sections: tuple[str, ...], cfg: st.NodeConfig, self_id: str) -> None:
    _, got = decode_state(d, cfg, self_id, 0)
    if got != sections:
        raise WireError(f"state has sections {list(got)}, the case had {list(sections)}")


# --- cases ---


def encode_input(inp: Any) -> dict:
    if isinstance(inp, Request):
        return {"kind": "request", "rpc": inp.rpc, "message": encode_message(inp.message)}
    return {"kind": "entry_handler"}


def decode_input(d: Any) -> Any:
    d = _obj(d, "input")
    kind = d.get("kind")
    if kind == "request":
        msg = decode_message(_get(d, "message", "input"), "input.message", ("PushEntryRequest", "AppendEntryRequest"))
        return Request(rpc=_get(d, "rpc", "input", "int"), message=msg)
    if kind == "entry_handler":
        return EntryHandlerRun()
    raise WireError(f"input.kind must be one of request, entry_handler; got {_show(kind)}")


def encode_case(case: Case) -> dict:
    sections = SECTIONS_OF[input_kind(case.input)]
    return plain({"config": encode_config(case.config, case.node.member.self_id),
                  "state": encode_state(case.config, case.node, sections),
                  "now_ms": case.now, "input": encode_input(case.input)})


def decode_case(d: Any) -> tuple[Case, tuple[str, ...]]:
    d = _obj(d, "case")
    cfg, self_id = decode_config(_get(d, "config", "case"))
    now = _get(d, "now_ms", "case", "int")
    node, sections = decode_state(_get(d, "state", "case"), cfg, self_id, now)
    inp = decode_input(_get(d, "input", "case"))
    return Case(config=cfg, node=node, now=now, input=inp), sections


def sections(wire_case: dict) -> tuple[str, ...]:
    return tuple(s for s in ("memberState", "store", "entryHandler", "pusher") if s in wire_case["state"])


def prepare(case: Case) -> tuple[dict, dict, tuple[str, ...]]:
    wire_case = encode_case(case)
    return wire_case, answer(wire_case), requires(case)


# --- answers ---


def check_answer(ans: dict, sections: tuple[str, ...]) -> None:
    """Raise WireError unless `ans` has the shape of an answer to a case with these sections."""
    for key in ("reply", "outputs", "state"):
        if key not in ans:
            raise WireError(f"answer lacks {key!r}")
    if ans["reply"] is not None:
        decode_message(ans["reply"], "reply", ("PushEntryResponse", "AppendEntryResponse"))
    if not isinstance(ans["outputs"], list):
        raise WireError("outputs must be a list")
    for i, o in enumerate(ans["outputs"]):
        o = _obj(o, f"outputs[{i}]")
        if o.get("out") != "respond":
            raise WireError(f"outputs[{i}].out must be respond, got {_show(o.get('out'))}")
        _get(o, "rpc", f"outputs[{i}]", "int")
        decode_message(_get(o, "message", f"outputs[{i}]"), f"outputs[{i}].message",
                       ("PushEntryResponse", "AppendEntryResponse"))
    state = _obj(ans["state"], "state")
    if tuple(s for s in ("memberState", "store", "entryHandler", "pusher") if s in state) != sections:
        raise WireError(f"state has sections {sorted(state)}, the case had {list(sections)}")
    for name in sections:
        _obj(state[name], f"state.{name}")


# --- readable ---


def value_name(path: str, v: Any) -> str | None:
    if path.endswith(".code") and isinstance(v, int) and not isinstance(v, bool):
        try:
            return Code(v).name
        except ValueError:
            return None
    return None


def describe(wire_case: dict) -> list[str]:
    cfg, state, inp = wire_case["config"], wire_case["state"], dict(wire_case["input"])
    ms, s = state.get("memberState", {}), state.get("store", {})
    terms = [e.get("term") for e in s.get("entries", [])]
    lines = [f"state:  {cfg.get('selfId')} of {cfg.get('peers')}, now_ms={wire_case['now_ms']}: {ms.get('role')} "
             f"currTerm={ms.get('currTerm')} leaderId={ms.get('leaderId')}; store {s.get('ledgerBeginIndex')}.."
             f"{s.get('ledgerEndIndex')} terms {terms} committed {s.get('committedIndex')}"]
    h = state.get("entryHandler")
    if h:
        lines.append(f"        entryHandler: writeRequests at {[w.get('index') for w in h.get('writeRequests', [])]}, "
                     f"queue {[w.get('request', {}).get('type') for w in h.get('compareOrTruncateRequests', [])]}")
    p = state.get("pusher")
    if p:
        lines.append(f"        pusher: {p}")
    kind = inp.pop("kind")
    lines.append(f"input:  {kind} {json.dumps(inp)}")
    return lines
