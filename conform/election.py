"""The `election` subject of the conformance driver: DLedger 0.2.6's election handlers on the wire.

A case is one node's state, the time, and one input; the answer is the reply, the
outputs and the resulting state (docs/conformance.md, "The handler driver"). This
module is the only place that knows how election cases look on the wire:

- `Case` and the input records: a case in the reference's terms;
- `encode_case` / `decode_case`: a case as a wire object and back. State fields are
  named after the Java fields they stand for (`MemberState#currTerm`,
  `DLedgerLeaderElector#lastLeaderHeartBeatTime`), messages as in traces;
- `answer`: the reference's answer to a wire case (DLedgerServer's entry points,
  `server.on_request` / `on_response` / `on_tick`), as a wire object;
- `requires`: the input kind and features a case needs from a driver;
- `check_answer`: the shape an answer must have (a driver that answers otherwise
  does not speak the protocol).

Random draws: the reference takes one value `d` in [0, 2**16) per tick and computes
`Random#nextInt(bound)` as `d * bound >> 16` (records.rand_int). On the wire a draw is
what `nextInt(bound)` returned, with its bound, so an implementation can script its own
Random. `DrawProbe` learns which bounds the reference asks for; `DrawScript` replays
wire draws into the reference. Both are ints that only the `d * bound` of rand_int reads.
"""

from __future__ import annotations

from typing import Any

import attrs

from conform import wire
from conform.wire import WireError, plain
from conform.wire import get as _get
from conform.wire import obj as _obj
from conform.wire import show as _show
from reference_impl.core.network import Respond, Send
from reference_impl.core.state import EMPTY, encode, record
from reference_impl.election import leader_elector as elector
from reference_impl.election import server as srv
from reference_impl.election.member_state import HeartBeatRound, Member, TakeLeadershipWait, VoteRound
from reference_impl.election.records import (
    Code,
    DLedgerConfig,
    HeartBeatRequest,
    HeartBeatResponse,
    LeadershipTransferRequest,
    LeadershipTransferResponse,
    ParseResult,
    Role,
    RoleChanged,
    VoteRequest,
    VoteResponse,
    VoteResult,
)

PROTOCOL = "election"

# What a driver may say it handles (its hello's `inputs`), in the order the generator prefers.
INPUTS = ("VoteRequest", "HeartBeatRequest", "tick", "self_vote", "LeadershipTransferRequest",
          "VoteResponse", "HeartBeatResponse", "LeadershipTransferResponse", "rpc_failure")
# State a driver may say it can load and report (its hello's `features`).
FEATURES = ("rounds", "leadership_transfer")

DRAW_SPAN = 1 << 16  # the reference's draw is a value in [0, DRAW_SPAN)
NEVER = 1 << 62  # checkPreferredLeader's next run when the case has no `server` section


# --- a case in the reference's terms ---


@record
class Request:
    """An RPC request handed to DLedgerServer's handler (`rpc`: its id, for a later answer)."""

    rpc: int
    message: Any


@record
class SelfVote:
    """DLedgerLeaderElector#handleVote(request, self=true): the candidate's inline self-vote."""

    message: VoteRequest


@record
class Call:
    """An RPC this node sent and still waits for: a vote or heartbeat of round `round`,
    or a leadership transfer (`term`, and the operator's request `answer` to complete, or None)."""

    rpc: str  # "vote", "heartbeat", "leadership_transfer"
    peer: str
    round: int = 0
    term: int = 0
    answer: int | None = None


@record
class Response:
    """The RPC's callback with the peer's reply."""

    call: Call
    message: Any


@record
class RpcFailure:
    """The RPC's callback without a reply (timeout, refused, reset)."""

    call: Call


@record
class Tick:
    """The node's due threads run; `draws` are (bound, value) pairs of Random#nextInt, in order."""

    draws: tuple[tuple[int, int], ...] = ()


@record
class Case:
    config: DLedgerConfig
    member: Member
    now: int
    input: Any


# --- random draws ---


class DrawProbe(int):
    """A draw `d` that records the bound of each Random#nextInt the reference makes with it."""

    def __new__(cls, d: int) -> DrawProbe:
        probe = super().__new__(cls, d)
        probe.bounds = []
        return probe

    def __mul__(self, bound: int) -> int:  # records.rand_int: draw * bound >> 16
        self.bounds.append(bound)
        return int(self) * bound

    __rmul__ = __mul__


class DrawScript(int):
    """Wire draws fed to the reference: the k-th nextInt returns the k-th scripted value
    whatever its bound (0 once the script is used up), as a scripted Random would."""

    def __new__(cls, values: tuple[int, ...]) -> DrawScript:
        script = super().__new__(cls, 0)
        script.values, script.bounds = values, []
        return script

    def __mul__(self, bound: int) -> int:
        k = len(self.bounds)
        self.bounds.append(bound)
        value = self.values[k] if k < len(self.values) else 0
        return value << 16

    __rmul__ = __mul__


def tick_draws(cfg: DLedgerConfig, m: Member, now: int, d: int) -> tuple[tuple[int, int], ...]:
    """The (bound, value) of each Random#nextInt the reference's tick makes with draw `d`."""
    probe = DrawProbe(d)
    srv.on_tick(cfg, m, now, probe)
    return tuple((b, d * b >> 16) for b in probe.bounds)


# --- the reference's answer ---


def run(case: Case) -> tuple[Member, Any, tuple, list[int]]:
    """Apply the case's input to its member: (member', reply or None, outputs, bounds drawn)."""
    cfg, m, now, inp = case.config, case.member, case.now, case.input
    bounds: list[int] = []
    if isinstance(inp, Request):
        m2, reply, outs = srv.on_request(cfg, m, inp.message, inp.rpc, now)
    elif isinstance(inp, SelfVote):
        m2, reply, outs = elector.handle_vote(cfg, m, inp.message, self_vote=True)
    elif isinstance(inp, (Response, RpcFailure)):
        msg = inp.message if isinstance(inp, Response) else None
        m2, outs = srv.on_response(cfg, m, _ctx(inp.call), inp.call.peer, msg, now)
        reply = None
    elif isinstance(inp, Tick):
        script = DrawScript(tuple(v for _, v in inp.draws))
        m2, outs = srv.on_tick(cfg, m, now, script)
        reply, bounds = None, script.bounds
    else:
        raise TypeError(f"not an election input: {inp!r}")
    return m2, reply, outs, bounds


def _ctx(call: Call) -> tuple:
    """The `ctx` the reference gave the Send of this call (leader_elector, server)."""
    if call.rpc == "vote":
        return ("vote", call.round)
    if call.rpc == "heartbeat":
        return ("hb", call.round)
    return ("transfer", call.term, call.peer, call.answer or 0)


def requires(case: Case, after: Member, outs: tuple) -> tuple[str, ...]:
    """The input kind and the features a driver needs for this case (hello's inputs and features)."""
    need = [input_kind(case.input)]
    m = case.member
    if (m.round is not None or after.round is not None or m.round_seq != after.round_seq or m.round_seq != 0
            or isinstance(case.input, (Response, RpcFailure)) and case.input.call.rpc != "leadership_transfer"):
        need.append("rounds")
    if (_server_fields(m) != _server_fields(after) or _server_fields(m) != _SERVER_ABSENT
            or need[0].startswith("LeadershipTransfer") or any(isinstance(o, Respond) for o in outs)
            or isinstance(case.input, (Response, RpcFailure)) and case.input.call.rpc == "leadership_transfer"
            or any(isinstance(o, Send) and isinstance(o.msg, LeadershipTransferRequest) for o in outs)):
        need.append("leadership_transfer")
    return tuple(need)


def input_kind(inp: Any) -> str:
    if isinstance(inp, Request):
        return type(inp.message).__name__
    if isinstance(inp, SelfVote):
        return "self_vote"
    if isinstance(inp, Response):
        return type(inp.message).__name__
    if isinstance(inp, RpcFailure):
        return "rpc_failure"
    return "tick"


def _server_fields(m: Member) -> tuple:
    return (m.peer_water_marks, m.next_check_preferred_ms, m.transfer_in_flight, m.take_leadership)


_SERVER_ABSENT = (EMPTY, NEVER, False, None)


def answer(wire_case: dict) -> dict:
    """The reference's answer to a wire case, as a wire answer (without the case id)."""
    case, sections = decode_case(wire_case)
    after, reply, outs, bounds = run(case)
    return plain({"reply": None if reply is None else encode(reply),
                  "outputs": encode_outputs(outs, bounds),
                  "state": encode_state(after, sections)})



def encode_outputs(outs: tuple, bounds: list[int]) -> list[dict]:
    """Sends, deferred answers and role changes; the reference's other observations
    (VoteGranted, VoteParsed, ...) feed its ghost variables and show in the state."""
    out: list[dict] = []
    for o in outs:
        if isinstance(o, Send):
            out.append({"out": "send", "to": o.dst, "message": encode(o.msg)})
        elif isinstance(o, Respond):
            out.append({"out": "respond", "rpc": o.rpc, "message": encode(o.msg)})
        elif isinstance(o, RoleChanged):
            out.append({"out": "role_change", "term": o.term, "role": o.role.value})
    out.extend({"out": "draw", "bound": b} for b in bounds)
    return out


# --- config ---

# DLedgerConfig's Java field names -> the reference's field names (only those a case varies).
CONFIG_FIELDS = {
    "group": "group",
    "heartBeatTimeIntervalMs": "heart_beat_time_interval_ms",
    "maxHeartBeatLeak": "max_heart_beat_leak",
    "minVoteIntervalMs": "min_vote_interval_ms",
    "maxVoteIntervalMs": "max_vote_interval_ms",
    "enableLeaderElector": "enable_leader_elector",
    "preferredLeaderIds": "preferred_leader_ids",
    "minTakeLeadershipVoteIntervalMs": "min_take_leadership_vote_interval_ms",
    "maxTakeLeadershipVoteIntervalMs": "max_take_leadership_vote_interval_ms",
    "maxLeadershipTransferWaitIndex": "max_leadership_transfer_wait_index",
    "leadershipTransferWaitTimeout": "leadership_transfer_wait_timeout",
}


def encode_config(cfg: DLedgerConfig, self_id: str) -> dict:
    out: dict[str, Any] = {"selfId": self_id, "peers": list(cfg.peers)}
    out.update({java: getattr(cfg, ours) for java, ours in CONFIG_FIELDS.items()})
    return out


def decode_config(d: Any) -> tuple[DLedgerConfig, str]:
    d = _obj(d, "config")
    peers = d.get("peers")
    if not isinstance(peers, list) or not peers or not all(isinstance(p, str) for p in peers):
        raise WireError("config.peers must be a non-empty list of node ids")
    self_id = _get(d, "selfId", "config", "id")
    if self_id not in peers:
        raise WireError(f"config.selfId {self_id!r} is not one of config.peers")
    kwargs = {}
    for java, ours in CONFIG_FIELDS.items():
        if java in d:
            kwargs[ours] = d[java]
    try:
        return DLedgerConfig(peers=tuple(peers), **kwargs), self_id
    except (TypeError, ValueError) as e:
        raise WireError(f"config: {e}") from None


# --- state ---

# Section -> wire field -> (Member field, kind). Kinds are checked by `_value`.
MEMBER_STATE = {
    "currTerm": ("curr_term", "int"),
    "currVoteFor": ("curr_vote_for", "id?"),
    "role": ("role", Role),
    "leaderId": ("leader_id", "id?"),
    "ledgerEndIndex": ("ledger_end_index", "int"),
    "ledgerEndTerm": ("ledger_end_term", "int"),
    "knownMaxTermInGroup": ("known_max_term_in_group", "int"),
    "peersLiveTable": ("peers_live_table", "map:bool"),
    "transferee": ("transferee", "id?"),
    "termToTakeLeadership": ("term_to_take_leadership", "int"),
}
ELECTOR = {
    "lastLeaderHeartBeatTime": ("last_leader_heart_beat_time", "int"),
    "lastSendHeartBeatTime": ("last_send_heart_beat_time", "int"),
    "lastSuccHeartBeatTime": ("last_succ_heart_beat_time", "int"),
    "nextTimeToRequestVote": ("next_time_to_request_vote", "int"),
    "needIncreaseTermImmediately": ("need_increase_term_immediately", "bool"),
    "lastParseResult": ("last_parse_result", ParseResult),
}
STATE_MAINTAINER = {
    "round": ("round", "round?"),
    "roundSeq": ("round_seq", "int"),
}
SERVER = {
    "peerWaterMarks": ("peer_water_marks", "map:int"),
    "checkPreferredLeaderDueMs": ("next_check_preferred_ms", "int"),
    "leadershipTransferInFlight": ("transfer_in_flight", "bool"),
    "takeLeadership": ("take_leadership", "take?"),
}
SECTIONS = {"memberState": MEMBER_STATE, "elector": ELECTOR, "stateMaintainer": STATE_MAINTAINER, "server": SERVER}
FEATURE_SECTION = {"rounds": "stateMaintainer", "leadership_transfer": "server"}

VOTE_ROUND = {
    "seq": "seq", "term": "term", "deadline": "deadline", "latchReleasedAt": "released_at",
    "knownMaxTermInGroup": "known_max_term_in_group", "allNum": "all_num", "validNum": "valid_num",
    "acceptedNum": "accepted_num", "notReadyTermNum": "not_ready_term_num", "biggerLedgerNum": "bigger_ledger_num",
    "alreadyHasLeader": "already_has_leader",
}
HEART_BEAT_ROUND = {
    "seq": "seq", "term": "term", "deadline": "deadline", "latchReleasedAt": "released_at",
    "allNum": "all_num", "succNum": "succ_num", "notReadyNum": "not_ready_num", "maxTerm": "max_term",
    "inconsistLeader": "inconsist_leader",
}
TAKE_LEADERSHIP = {"rpc": "rpc", "request": "request", "started": "started", "waitingForIndex": "waiting_for_index"}


def sections_for(need: tuple[str, ...]) -> tuple[str, ...]:
    return ("memberState", "elector") + tuple(FEATURE_SECTION[f] for f in FEATURES if f in need)


def encode_state(m: Member, sections: tuple[str, ...]) -> dict:
    out = {}
    for name in sections:
        out[name] = {key: _encode_value(getattr(m, ours)) for key, (ours, _) in SECTIONS[name].items()}
    return out


def _encode_value(v: Any) -> Any:
    if isinstance(v, VoteRound):
        return {"kind": "vote", **{w: getattr(v, o) for w, o in VOTE_ROUND.items()}}
    if isinstance(v, HeartBeatRound):
        return {"kind": "heartbeat", **{w: getattr(v, o) for w, o in HEART_BEAT_ROUND.items()}}
    if isinstance(v, TakeLeadershipWait):
        return {w: encode(getattr(v, o)) for w, o in TAKE_LEADERSHIP.items()}
    return encode(v)


def decode_state(d: Any, self_id: str, now: int) -> tuple[Member, tuple[str, ...]]:
    """A wire state as a Member, and the sections it has. Absent sections take the values
    a driver without that feature has: no round, no transfer, checkPreferredLeader never due.
    The state maintainer is awake (`next_loop_ms` = now): a tick runs its loop."""
    d = _obj(d, "state")
    sections = tuple(s for s in SECTIONS if s in d)
    for required in ("memberState", "elector"):
        if required not in d:
            raise WireError(f"state lacks section {required!r}")
    unknown = set(d) - set(SECTIONS)
    if unknown:
        raise WireError(f"state has unknown section(s) {sorted(unknown)}")
    fields: dict[str, Any] = {"self_id": self_id, "next_loop_ms": now, "next_check_preferred_ms": NEVER}
    for name in sections:
        sec = _obj(d[name], f"state.{name}")
        for key, (ours, kind) in SECTIONS[name].items():
            fields[ours] = _value(_get(sec, key, f"state.{name}"), kind, f"state.{name}.{key}")
    return Member(**fields), sections


def check_state(d: Any, sections: tuple[str, ...]) -> None:
    """Raise WireError unless `d` is a state with exactly these sections, every field of the right kind."""
    _, got = decode_state(d, "?", 0)
    if got != sections:
        raise WireError(f"state has sections {list(got)}, the case had {list(sections)}")


# --- values ---


def _value(v: Any, kind: Any, where: str) -> Any:
    """conform.wire.value, and the two election kinds: an open round, a transferee's wait."""
    if kind == "round?":
        return None if v is None else _round(_obj(v, where), where)
    if kind == "take?":
        if v is None:
            return None
        v = _obj(v, where)
        return TakeLeadershipWait(rpc=_get(v, "rpc", where, "int"), started=_get(v, "started", where, "int"),
                                  waiting_for_index=_get(v, "waitingForIndex", where, "bool"),
                                  request=decode_message(_get(v, "request", where), f"{where}.request",
                                                         LeadershipTransferRequest))
    return wire.value(v, kind, where)


def _round(v: dict, where: str) -> VoteRound | HeartBeatRound:
    kind = v.get("kind")
    if kind == "vote":
        cls, names = VoteRound, VOTE_ROUND
    elif kind == "heartbeat":
        cls, names = HeartBeatRound, HEART_BEAT_ROUND
    else:
        raise WireError(f"{where}.kind must be 'vote' or 'heartbeat', got {_show(kind)}")
    fields = {}
    for w, o in names.items():
        fields[o] = _get(v, w, where, "bool" if w in ("alreadyHasLeader", "inconsistLeader") else "int")
    return cls(**fields)


# --- messages ---

MESSAGES = {c.__name__: c for c in (VoteRequest, VoteResponse, HeartBeatRequest, HeartBeatResponse,
                                    LeadershipTransferRequest, LeadershipTransferResponse)}
_KINDS = {"str": "id", "str | None": "id?", "int": "int", "VoteResult": VoteResult, "Code": Code}


def decode_message(d: Any, where: str, expect: type | None = None) -> Any:
    d = _obj(d, where)
    cls = MESSAGES.get(d.get("type"))
    if cls is None or (expect is not None and cls is not expect):
        names = [expect.__name__] if expect is not None else sorted(MESSAGES)
        raise WireError(f"{where}.type must be one of {names}, got {_show(d.get('type'))}")
    return cls(**{f.name: _get(d, f.name, where, _KINDS[f.type]) for f in attrs.fields(cls)})


# --- cases ---

CALLS = ("vote", "heartbeat", "leadership_transfer")


def encode_input(inp: Any) -> dict:
    if isinstance(inp, Request):
        return {"kind": "request", "rpc": inp.rpc, "message": encode(inp.message)}
    if isinstance(inp, SelfVote):
        return {"kind": "self_vote", "message": encode(inp.message)}
    if isinstance(inp, Response):
        return {"kind": "response", "call": _encode_call(inp.call), "message": encode(inp.message)}
    if isinstance(inp, RpcFailure):
        return {"kind": "rpc_failure", "call": _encode_call(inp.call)}
    return {"kind": "tick", "draws": [{"bound": b, "value": v} for b, v in inp.draws]}


def _encode_call(c: Call) -> dict:
    if c.rpc == "leadership_transfer":
        return {"rpc": c.rpc, "peer": c.peer, "term": c.term, "answer": c.answer}
    return {"rpc": c.rpc, "peer": c.peer, "round": c.round}


def decode_input(d: Any) -> Any:
    d = _obj(d, "input")
    kind = d.get("kind")
    if kind == "request":
        msg = decode_message(_get(d, "message", "input"), "input.message")
        if type(msg).__name__.endswith("Response"):
            raise WireError("input.message of a request must be a request")
        return Request(rpc=_get(d, "rpc", "input", "int"), message=msg)
    if kind == "self_vote":
        return SelfVote(message=decode_message(_get(d, "message", "input"), "input.message", VoteRequest))
    if kind in ("response", "rpc_failure"):
        call = _decode_call(_get(d, "call", "input"))
        if kind == "rpc_failure":
            return RpcFailure(call=call)
        expect = {"vote": VoteResponse, "heartbeat": HeartBeatResponse,
                  "leadership_transfer": LeadershipTransferResponse}[call.rpc]
        return Response(call=call, message=decode_message(_get(d, "message", "input"), "input.message", expect))
    if kind == "tick":
        draws = _get(d, "draws", "input")
        if not isinstance(draws, list):
            raise WireError("input.draws must be a list")
        out = []
        for i, x in enumerate(draws):
            x = _obj(x, f"input.draws[{i}]")
            bound, value = _get(x, "bound", "input.draws", "int"), _get(x, "value", "input.draws", "int")
            if not 0 <= value < bound:
                raise WireError(f"input.draws[{i}].value must be in [0, bound), got {value} for bound {bound}")
            out.append((bound, value))
        return Tick(draws=tuple(out))
    raise WireError(f"input.kind must be one of request, self_vote, response, rpc_failure, tick; got {_show(kind)}")


def _decode_call(d: Any) -> Call:
    d = _obj(d, "input.call")
    rpc = d.get("rpc")
    if rpc not in CALLS:
        raise WireError(f"input.call.rpc must be one of {list(CALLS)}, got {_show(rpc)}")
    peer = _get(d, "peer", "input.call", "id")
    if rpc == "leadership_transfer":
        answer_rpc = d.get("answer")
        if answer_rpc is not None:
            answer_rpc = _value(answer_rpc, "int", "input.call.answer")
        return Call(rpc=rpc, peer=peer, term=_get(d, "term", "input.call", "int"), answer=answer_rpc)
    return Call(rpc=rpc, peer=peer, round=_get(d, "round", "input.call", "int"))


def encode_case(case: Case, sections: tuple[str, ...]) -> dict:
    """The wire form of a case (without its id)."""
    return plain({"config": encode_config(case.config, case.member.self_id),
                  "state": encode_state(case.member, sections),
                  "now_ms": case.now,
                  "input": encode_input(case.input)})


def decode_case(d: Any) -> tuple[Case, tuple[str, ...]]:
    d = _obj(d, "case")
    cfg, self_id = decode_config(_get(d, "config", "case"))
    now = _get(d, "now_ms", "case", "int")
    member, sections = decode_state(_get(d, "state", "case"), self_id, now)
    return Case(config=cfg, member=member, now=now, input=decode_input(_get(d, "input", "case"))), sections


# --- answers ---


def check_answer(ans: dict, sections: tuple[str, ...]) -> None:
    """Raise WireError unless `ans` has the shape of an answer to a case with these state sections."""
    for key in ("reply", "outputs", "state"):
        if key not in ans:
            raise WireError(f"answer lacks {key!r}")
    if ans["reply"] is not None:
        decode_message(ans["reply"], "reply")
    if not isinstance(ans["outputs"], list):
        raise WireError("outputs must be a list")
    for i, o in enumerate(ans["outputs"]):
        _check_output(o, f"outputs[{i}]")
    check_state(ans["state"], sections)


def _check_output(o: Any, where: str) -> None:
    o = _obj(o, where)
    kind = o.get("out")
    if kind == "send":
        _get(o, "to", where, "id")
        decode_message(_get(o, "message", where), f"{where}.message")
    elif kind == "respond":
        _get(o, "rpc", where, "int")
        decode_message(_get(o, "message", where), f"{where}.message")
    elif kind == "role_change":
        _get(o, "term", where, "int")
        _get(o, "role", where, Role)
    elif kind == "draw":
        _get(o, "bound", where, "int")
    else:
        raise WireError(f"{where}.out must be one of send, respond, role_change, draw; got {_show(kind)}")


# --- readable ---


def value_name(path: str, v: Any) -> str | None:
    """The Java name of a result code (`reply.code` 403 is EXPIRED_TERM)."""
    if path.endswith(".code") and isinstance(v, int) and not isinstance(v, bool):
        try:
            return Code(v).name
        except ValueError:
            return None
    return None


def describe_state(state: dict, config: dict, now: int) -> list[str]:
    """The state as a few readable lines, fields at their boot values left out."""
    ms, el = state.get("memberState", {}), state.get("elector", {})
    lines = [f"{config.get('selfId')} of {config.get('peers')}, now_ms={now}: {ms.get('role')}"
             f" currTerm={ms.get('currTerm')}"
             f" currVoteFor={ms.get('currVoteFor')} leaderId={ms.get('leaderId')}"
             f" ledgerEnd={ms.get('ledgerEndIndex')}/{ms.get('ledgerEndTerm')}"]
    boot = {**{w: _encode_value(getattr(Member(self_id="?"), o)) for w, (o, _) in MEMBER_STATE.items()},
            **{w: _encode_value(getattr(Member(self_id="?"), o)) for w, (o, _) in ELECTOR.items()}}
    shown = {"role", "currTerm", "currVoteFor", "leaderId", "ledgerEndIndex", "ledgerEndTerm"}
    rest = [f"{k}={v}" for sec in (ms, el) for k, v in sec.items() if k not in shown and boot.get(k) != v]
    if rest:
        lines.append("  " + " ".join(rest))
    for name in ("stateMaintainer", "server"):
        if name in state:
            lines.append(f"  {name}: " + " ".join(f"{k}={v}" for k, v in state[name].items()))
    defaults = {k: getattr(DLedgerConfig(), v) for k, v in CONFIG_FIELDS.items()}
    changed = [f"{k}={v}" for k, v in config.items() if k in defaults and defaults[k] != v]
    if changed:
        lines.append("  config: " + " ".join(changed))
    return lines
