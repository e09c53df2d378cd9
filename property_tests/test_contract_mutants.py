"""Contracts that can fail: every CrossHair contract tells its function from at least one mutant.

CrossHair reports a contract confirmed, unknown or refuted (model_checks.crosshair_run); a
contract that no mutant of the function it pins down can break says nothing, and is a
defect. For each contract (model_checks.contracts, the HA wire codec's docstrings) this
test installs a one-rule mutant of the reference function the contract is about, and
searches, with Hypothesis over the contract's own `pre:` domain, for an input that breaks one
of its `post:` conditions, evaluated exactly as PEP 316 states them. The real functions pass
the same search.
"""

from __future__ import annotations

import inspect
import re

import pytest
from hypothesis import HealthCheck, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from model_checks import contracts as C
from model_checks import crosshair_run
from reference_impl.core import codec
from reference_impl.core import network as net_mod
from reference_impl.election import leader_elector as elector
from reference_impl.election import member_state as mstate
from reference_impl.election import records as el
from reference_impl.election import server as srv
from reference_impl.ha import wire

INTS = st.one_of(st.integers(-2, 12), st.integers(0, 70_000), st.integers(-(1 << 63), (1 << 63) - 1))
# Byte strings: noise, or a run of well-formed transfer frames with noise after (so that decoders
# meet whole frames, which random bytes almost never hold).
_FRAME = wire.encode_frame  # the real one, whatever a test patches
FRAMES = st.builds(lambda frames, tail: b"".join(_FRAME(o, b) for o, b in frames) + tail,
                   st.lists(st.tuples(st.integers(-3, 1 << 40), st.binary(max_size=9)), max_size=3),
                   st.binary(max_size=14))
BY_TYPE = {"int": INTS, "bool": st.booleans(), "bytes": st.one_of(st.binary(max_size=40), FRAMES)}


def _clauses(fn) -> tuple[list[str], list[str]]:
    doc = inspect.getdoc(fn) or ""
    pre = [m.group(1) for m in re.finditer(r"^pre:\s*(.+)$", doc, re.M)]
    post = [m.group(1) for m in re.finditer(r"^post:\s*(.+)$", doc, re.M)]
    return pre, post


def broken(fn, args: tuple, impl=None) -> str | None:
    """The first `post:` of `fn`'s contract that `impl` (default: `fn` itself) breaks on these
    arguments, their `pre:` holding; else None."""
    pre, post = _clauses(fn)
    names = list(inspect.signature(fn).parameters)
    env = dict(vars(inspect.getmodule(fn)))
    env.update(zip(names, args))
    try:
        if not all(eval(p, env) for p in pre):  # noqa: S307 - the contract's own text
            return None
    except Exception:
        return None
    try:
        env["__return__"] = (impl or fn)(*args)
    except Exception as e:  # noqa: BLE001 - an exception inside a contract is a failure too
        return f"raised {type(e).__name__}"
    for p in post:
        if not eval(p, env):  # noqa: S307
            return p
    return None


def counterexample(fn, impl=None) -> tuple | None:
    params = inspect.signature(fn).parameters.values()
    strategy = st.tuples(*(BY_TYPE[p.annotation if isinstance(p.annotation, str) else p.annotation.__name__]
                           for p in params))
    try:
        return find(strategy, lambda args: broken(fn, args, impl) is not None,
                    settings=settings(max_examples=4000, database=None, deadline=None,
                                      suppress_health_check=list(HealthCheck)))
    except NoSuchExample:
        return None


# --- one mutant per contract: (contract, module to patch, name, replacement) ---

ORIG = {"next_term": mstate.next_term, "handle_vote": elector.handle_vote, "handle_heart_beat": elector.handle_heart_beat,
        "crash": srv.crash, "is_quorum": el.DLedgerConfig.is_quorum, "rand_int": el.rand_int,
        "node_down": net_mod.node_down, "reply": net_mod.reply, "encode_event": codec.encode_event,
        "decode_event": codec.decode_event}


def _next_term_plus_one(m):
    return m.evolve(curr_term=m.curr_term + 1, curr_vote_for=None)


def _vote_forgetting_its_vote(cfg, m, req, self_vote):
    return ORIG["handle_vote"](cfg, m.evolve(curr_vote_for=None), req, self_vote)


def _vote_term_before_log(cfg, m, req, self_vote):
    if req.term > m.curr_term:
        m2, outs = elector.change_role_to_candidate(cfg, m, req.term)
        return m2, el.VoteResponse(term=m.curr_term, vote_result=el.VoteResult.REJECT_TERM_NOT_READY), outs
    return ORIG["handle_vote"](cfg, m, req, self_vote)


def _heartbeat_following_any_term(cfg, m, req, now):
    if req.leader_id in cfg.peers and req.leader_id != m.self_id and req.term != m.curr_term:
        return m.evolve(role=el.Role.FOLLOWER, leader_id=req.leader_id), el.HeartBeatResponse(), ()
    return ORIG["handle_heart_beat"](cfg, m, req, now)


def _crash_losing_vote(m, lose_term_file=False):
    return ORIG["crash"](m, lose_term_file).evolve(curr_vote_for=None)


def _half_is_quorum(self, num):
    return num >= len(self.peers) // 2


def _exact_quorum(self, num):
    return num == len(self.peers) // 2 + 1


def _rand_int_wide(draw, bound):
    return draw * bound >> 15


def _vote_wait_from_zero(cfg, m, now, draw):
    return now + el.rand_int(draw, cfg.max_vote_interval_ms)


def _node_down_keeping_its_sends(net, node, now, reset=True):
    out = ORIG["node_down"](net, node, now, reset)
    return out.evolve(flight=out.flight + tuple(e for e in net.flight if e.src == node))


def _reply_to_any_rpc(net, now, rpc_id, msg):
    rpc = net_mod.find_rpc(net, rpc_id)
    env = net_mod.Envelope(id=net.next_id, src=rpc.responder if rpc else 1, dst=rpc.requester if rpc else 0, msg=msg,
                           sent_ms=now, rpc=rpc_id, reply=True)
    return net.evolve(flight=net.flight + (env,), next_id=net.next_id + 1)


def _encode_dropping_draw(w, ev):
    out = ORIG["encode_event"](w, ev)
    out.pop("draw", None)
    return out


def _decode_ignoring_disk(w, d, t_ms=None):
    ev = ORIG["decode_event"](w, d, t_ms)
    return ev.evolve(disk=False) if hasattr(ev, "disk") else ev


ORIG_WIRE = {name: getattr(wire, name) for name in ("encode_header", "decode_header", "encode_frame", "encode_ack",
                                                   "next_frame", "decode_frames", "read_acks")}


def _header_size_little_endian(offset, size):
    return offset.to_bytes(8, "big", signed=True) + size.to_bytes(4, "little", signed=True)


def _decode_header_little(buf, pos):
    return (int.from_bytes(buf[pos:pos + 8], "little", signed=True),
            int.from_bytes(buf[pos + 8:pos + 12], "big", signed=True))


def _frame_size_plus_one(offset, body):
    return ORIG_WIRE["encode_header"](offset, len(body) + 1) + body


def _ack_little(offset):
    return offset.to_bytes(8, "little", signed=True)


def _next_frame_offset_off(buf):
    head = ORIG_WIRE["next_frame"](buf)
    return None if head is None else (head[0] + 1, head[1], head[2])


def _decode_frames_first_only(buf):
    head = ORIG_WIRE["next_frame"](buf)
    if head is None or head[2] is None:
        return (), buf
    return ((head[0], head[2]),), b""  # drops everything after the first frame


def _read_acks_first_value(pending, chunk):
    buf = pending + chunk
    whole = len(buf) - len(buf) % 8
    if whole == 0:
        return None, buf
    return int.from_bytes(buf[:8], "big", signed=True), buf[whole:]  # the first report, not the last


MUTANTS = [
    (C.next_term_moves_up, mstate, "next_term", _next_term_plus_one),
    (C.one_vote_per_term, elector, "handle_vote", _vote_forgetting_its_vote),
    (C.log_check_before_term, elector, "handle_vote", _vote_term_before_log),
    (C.heartbeat_keeps_term, elector, "handle_heart_beat", _heartbeat_following_any_term),
    (C.crash_keeps_term_and_vote, srv, "crash", _crash_losing_vote),
    (C.quorums_intersect, el.DLedgerConfig, "is_quorum", _half_is_quorum),
    (C.quorum_is_monotone, el.DLedgerConfig, "is_quorum", _exact_quorum),
    (C.next_int_in_range, el, "rand_int", _rand_int_wide),
    (C.vote_wait_in_window, elector, "get_next_time_to_request_vote", _vote_wait_from_zero),
    (C.node_down_clears_its_sockets, net_mod, "node_down", _node_down_keeping_its_sends),
    (C.reply_only_to_open_rpc, net_mod, "reply", _reply_to_any_rpc),
    (C.tick_round_trip, codec, "encode_event", _encode_dropping_draw),
    (C.crash_round_trip, codec, "decode_event", _decode_ignoring_disk),
    (wire.encode_header, wire, "encode_header", _header_size_little_endian),
    (wire.decode_header, wire, "decode_header", _decode_header_little),
    (wire.encode_frame, wire, "encode_frame", _frame_size_plus_one),
    (wire.encode_ack, wire, "encode_ack", _ack_little),
    (wire.next_frame, wire, "next_frame", _next_frame_offset_off),
    (wire.decode_frames, wire, "decode_frames", _decode_frames_first_only),
    (wire.read_acks, wire, "read_acks", _read_acks_first_value),
]


def _contracts() -> list:
    return [fn for module in crosshair_run.modules() for fn in crosshair_run.contract_functions(module)]


def test_every_contract_has_a_mutant_here():
    assert {fn.__qualname__ for fn in _contracts()} == {fn.__qualname__ for fn, *_ in MUTANTS}


@pytest.mark.parametrize("contract, module, name, mutant", MUTANTS, ids=[m[0].__name__ for m in MUTANTS])
def test_the_contract_refutes_a_mutant_of_its_function(monkeypatch, contract, module, name, mutant):
    assert counterexample(contract) is None, "the real function breaks its own contract"
    monkeypatch.setattr(module, name, mutant)
    # a harness of model_checks.contracts calls the (now mutated) reference function; a wire
    # function carries its own contract, which the mutant in its place must meet
    found = counterexample(contract, mutant if module is wire else None)
    assert found is not None, f"{contract.__name__} cannot tell {mutant.__name__} from the real {name}"
