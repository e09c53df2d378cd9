"""Election cases: Hypothesis strategies for `rmqspec conform`, and the deterministic edge
cases that `rmqspec vectors` writes first.

Cases are built from relations, not from free numbers: a request's term is the node's
term plus -2..2, its ledger end is the node's plus or minus one, a timer sits one ms
either side of the threshold the Java code compares it with (`elapsed > 2 x interval`,
`maxHeartBeatLeak x interval`), a round is at its latch or its deadline. Every choice is a
`sampled_from` whose first value is the plainest, so Hypothesis shrinks a mismatch toward
a case with the plain values everywhere the mismatch does not need something else.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator

from hypothesis import assume
from hypothesis import strategies as st

from conform.election import (
    DRAW_SPAN,
    FEATURES,
    INPUTS,
    NEVER,
    Call,
    Case,
    Request,
    Response,
    RpcFailure,
    SelfVote,
    Tick,
    requires,
    run,
    tick_draws,
)
from reference_impl.core.state import FrozenMap
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
    VoteRequest,
    VoteResponse,
    VoteResult,
)

UNKNOWN = "n9"  # an id no config has as a peer
OTHER_GROUP = "other-group"
BASE_NOW = 100_000  # far enough from 0 that every threshold below `now` is a real time

TIMINGS = (
    {},
    {"heart_beat_time_interval_ms": 500, "min_vote_interval_ms": 100, "max_vote_interval_ms": 300},
    {"max_heart_beat_leak": 1},
    {"max_heart_beat_leak": 2, "heart_beat_time_interval_ms": 1000},
)
HEART_BEAT_CODES = (Code.SUCCESS, Code.EXPIRED_TERM, Code.TERM_NOT_READY, Code.INCONSISTENT_LEADER,
                    Code.NETWORK_ERROR, Code.UNKNOWN_MEMBER, Code.UNKNOWN_GROUP, Code.UNEXPECTED_MEMBER)
TRANSFER_CODES = (Code.SUCCESS, Code.TAKE_LEADERSHIP_FAILED, Code.EXPIRED_TERM, Code.INCONSISTENT_TERM,
                  Code.NETWORK_ERROR, Code.INTERNAL_ERROR)


def finish(cfg: DLedgerConfig, m: Member, now: int, inp: object, d: int = 0) -> Case:
    """A case whose tick carries the draws the reference makes with `d` (none for other inputs)."""
    if isinstance(inp, Tick):
        inp = Tick(draws=tick_draws(cfg, m, now, d))
    return Case(config=cfg, member=m, now=now, input=inp)


# --- Hypothesis strategies ---
#
# The helpers draw through a few cached strategies (an index into a list, a coin, a
# range): building a new strategy object per draw costs more than the reference's answer.


@functools.lru_cache(maxsize=None)
def _range(lo: int, hi: int) -> st.SearchStrategy:
    return st.integers(lo, hi)


_TENTH = _range(0, 9)
_BOOL = st.booleans()
_NEAR = _range(-3000, 20_000)


def pick(draw: st.DrawFn, options: list | tuple) -> object:
    """One of `options`; shrinks toward the first."""
    return options[draw(_range(0, len(options) - 1))]


def mostly(draw: st.DrawFn, common: object, rare: list | tuple) -> object:
    """`common` nine times in ten (and when shrunk), else one of `rare`."""
    return common if draw(_TENTH) < 9 else pick(draw, rare)


def rel(draw: st.DrawFn, base: int, deltas: list | tuple) -> int:
    return base + pick(draw, deltas)


def configs(draw: st.DrawFn) -> tuple[DLedgerConfig, str]:
    n = pick(draw, [3, 5, 1, 2, 4])
    peers = tuple(f"n{i}" for i in range(n))
    self_id = pick(draw, peers)
    other = next((p for p in peers if p != self_id), self_id)
    preferred = pick(draw, [None, self_id, other, f"{self_id};{other}", UNKNOWN])
    timing = pick(draw, TIMINGS)
    enabled = mostly(draw, True, [False])
    return DLedgerConfig(peers=peers, preferred_leader_ids=preferred, enable_leader_elector=enabled, **timing), self_id


def _time(draw: st.DrawFn, now: int, edges: list[int]) -> int:
    """A time the Java code compares with `now`: never (-1), at an edge below now, or anywhere near."""
    kind = draw(_range(0, 2))
    if kind == 0:
        return -1
    return now - (pick(draw, edges) if kind == 1 else draw(_NEAR))


def members(draw: st.DrawFn, cfg: DLedgerConfig, self_id: str, now: int, features: frozenset) -> Member:
    others = [p for p in cfg.peers if p != self_id]
    ids = others + [self_id, UNKNOWN]
    term = pick(draw, [2, 0, 1, 3]) if draw(_TENTH) < 9 else draw(_range(0, 1 << 40))
    role = pick(draw, [Role.CANDIDATE, Role.FOLLOWER, Role.LEADER])
    leader = {Role.LEADER: self_id, Role.CANDIDATE: None}.get(role, others[0] if others else self_id)
    leader = mostly(draw, leader, [None] + ids)  # states Java's threads can interleave into
    ledger_term = pick(draw, [-1, term, term - 1, term + 1])
    ledger_index = -1 if ledger_term < 0 else pick(draw, [5, 0, 6, 4])
    interval, leak = cfg.heart_beat_time_interval_ms, cfg.max_heart_beat_leak
    live = {p: v for p in others if (v := pick(draw, [None, True, False])) is not None}
    nxt = now + draw(_range(-2000, 8000)) if draw(_BOOL) else pick(draw, [-1, now, now + 1, now - 1])
    m = Member(
        self_id=self_id, curr_term=term, role=role, leader_id=leader,
        curr_vote_for=pick(draw, [None, self_id] + others + [UNKNOWN]),
        ledger_end_index=ledger_index, ledger_end_term=ledger_term,
        known_max_term_in_group=pick(draw, [-1, term, term + 1, term - 1, term + 3]),
        peers_live_table=FrozenMap(live),
        transferee=mostly(draw, None, ids),
        term_to_take_leadership=pick(draw, [-1, term, term + 1]),
        last_leader_heart_beat_time=_time(draw, now, [0, 1, 2 * interval, 2 * interval + 1,
                                                      leak * interval, leak * interval + 1]),
        last_send_heart_beat_time=_time(draw, now, [interval, interval + 1, 0]),
        last_succ_heart_beat_time=_time(draw, now, [leak * interval, leak * interval + 1]),
        next_time_to_request_vote=nxt,
        need_increase_term_immediately=draw(_BOOL),
        last_parse_result=pick(draw, list(ParseResult)),
        next_loop_ms=now, next_check_preferred_ms=NEVER,
    )
    if "rounds" in features:
        m = rounds(draw, cfg, m, now)
    if "leadership_transfer" in features and draw(_BOOL):
        m = server_threads(draw, cfg, m, now)
    return m


def _latch(draw: st.DrawFn, now: int) -> tuple[int, int]:
    """(deadline, released_at) of a round: at, before or after its deadline, or its latch released."""
    deadline = now + draw(_range(-3000, 3000)) if draw(_BOOL) else pick(draw, [now, now + 1, now - 1])
    return deadline, pick(draw, [-1, now, now - 1, now - 100])


def rounds(draw: st.DrawFn, cfg: DLedgerConfig, m: Member, now: int) -> Member:
    kind = pick(draw, ["none", "own", "vote", "heartbeat"])
    if kind == "own":
        kind = {Role.CANDIDATE: "vote", Role.LEADER: "heartbeat"}.get(m.role, "none")
    if kind == "none":
        return m.evolve(round_seq=pick(draw, [0, 1, 2]))
    n = cfg.peer_size()
    seq = pick(draw, [1, 2, 3])
    term = rel(draw, m.curr_term, [0, -1, 1])
    deadline, released = _latch(draw, now)
    count = _range(0, n)
    if kind == "vote":
        rnd = VoteRound(seq=seq, term=term, deadline=deadline, released_at=released,
                        known_max_term_in_group=rel(draw, term, [0, 1, 2]),
                        all_num=draw(count), valid_num=draw(count), accepted_num=draw(count),
                        not_ready_term_num=draw(count), bigger_ledger_num=draw(count),
                        already_has_leader=mostly(draw, False, [True]))
    else:
        rnd = HeartBeatRound(seq=seq, term=term, deadline=deadline, released_at=released,
                             all_num=draw(_range(1, n)), succ_num=draw(_range(1, n)),
                             not_ready_num=draw(count),
                             max_term=pick(draw, [-1, term + 1, term, term + 2]),
                             inconsist_leader=mostly(draw, False, [True]))
    return m.evolve(round=rnd, round_seq=seq)


def server_threads(draw: st.DrawFn, cfg: DLedgerConfig, m: Member, now: int) -> Member:
    others = [p for p in cfg.peers if p != m.self_id]
    gap = cfg.max_leadership_transfer_wait_index
    marks = {p: m.ledger_end_index - pick(draw, [0, gap, gap - 1, m.ledger_end_index + 1]) for p in others}
    wait = None
    if draw(_BOOL):
        timeout = cfg.leadership_transfer_wait_timeout
        transfer_id = pick(draw, [m.leader_id] + others + [UNKNOWN])
        request = LeadershipTransferRequest(
            group=cfg.group, remote_id=m.self_id, term=rel(draw, m.curr_term, [0, -1, 1]),
            transfer_id=transfer_id, transferee_id=m.self_id, leader_id=transfer_id,
            take_leadership_ledger_index=rel(draw, m.ledger_end_index, [0, 1, -1]))
        wait = TakeLeadershipWait(rpc=pick(draw, [1, 2]), request=request,
                                  started=now - pick(draw, [0, timeout, timeout + 1, 5]),
                                  waiting_for_index=draw(_BOOL))
    return m.evolve(peer_water_marks=FrozenMap(marks), take_leadership=wait,
                    next_check_preferred_ms=rel(draw, now, [0, 1, -1, 1000]),
                    transfer_in_flight=mostly(draw, False, [True]))


def inputs(draw: st.DrawFn, kind: str, cfg: DLedgerConfig, m: Member, now: int) -> tuple[object, int]:
    """An input of `kind` for member `m`, and the tick's draw (0 for other inputs)."""
    me = m.self_id
    others = [p for p in cfg.peers if p != me]
    group = mostly(draw, cfg.group, [OTHER_GROUP])
    remote = mostly(draw, me, others + [UNKNOWN])
    rpc = pick(draw, [1, 7])
    if kind in ("VoteRequest", "self_vote"):
        candidates = [me] + others + [UNKNOWN] if kind == "self_vote" else others + [me, UNKNOWN]
        msg = VoteRequest(group=group if kind == "VoteRequest" else cfg.group,
                          remote_id=remote if kind == "VoteRequest" else me,
                          leader_id=pick(draw, candidates), term=rel(draw, m.curr_term, [0, 1, -1, 2, -2]),
                          ledger_end_term=rel(draw, m.ledger_end_term, [0, -1, 1]),
                          ledger_end_index=rel(draw, m.ledger_end_index, [0, -1, 1, 7]))
        return (Request(rpc=rpc, message=msg) if kind == "VoteRequest" else SelfVote(message=msg)), 0
    if kind == "HeartBeatRequest":
        senders = ([m.leader_id] if m.leader_id in others else []) + others + [me, UNKNOWN]
        leader = pick(draw, senders)
        msg = HeartBeatRequest(group=group, remote_id=remote, leader_id=leader,
                               local_id=mostly(draw, leader, others + [me]),
                               term=rel(draw, m.curr_term, [0, 1, -1, 2]))
        return Request(rpc=rpc, message=msg), 0
    if kind == "LeadershipTransferRequest":
        path = pick(draw, ["transferee", "admin", "neither"])
        leader_like = pick(draw, ([m.leader_id] if m.leader_id else []) + others + [UNKNOWN])
        other = pick(draw, others + [UNKNOWN])
        transfer_id, transferee = {"transferee": (leader_like, me), "admin": (me, other),
                                   "neither": (leader_like, other)}[path]
        msg = LeadershipTransferRequest(group=group, remote_id=remote, term=rel(draw, m.curr_term, [0, 1, -1]),
                                        transfer_id=transfer_id, transferee_id=transferee, leader_id=transfer_id,
                                        take_leadership_ledger_index=rel(draw, m.ledger_end_index, [0, 1, -1, 5]))
        return Request(rpc=rpc, message=msg), 0
    if kind in ("VoteResponse", "HeartBeatResponse", "LeadershipTransferResponse", "rpc_failure"):
        call_kind = {"VoteResponse": "vote", "HeartBeatResponse": "heartbeat",
                     "LeadershipTransferResponse": "leadership_transfer"}.get(kind)
        if call_kind is None:
            call_kind = pick(draw, ["vote", "heartbeat", "leadership_transfer"])
        call = calls(draw, call_kind, others or [me], m)
        if kind == "rpc_failure":
            return RpcFailure(call=call), 0
        term = m.round.term if m.round is not None else m.curr_term
        if call_kind == "vote":
            msg = VoteResponse(term=rel(draw, term, [0, 1, -1, 2]), vote_result=pick(draw, list(VoteResult)),
                               code=mostly(draw, Code.SUCCESS, [Code.UNKNOWN_MEMBER, Code.UNKNOWN_GROUP]))
        elif call_kind == "heartbeat":
            msg = HeartBeatResponse(code=pick(draw, HEART_BEAT_CODES),
                                    term=rel(draw, term, [0, 1, -1, 2]) if draw(_BOOL) else -1)
        else:
            msg = LeadershipTransferResponse(code=pick(draw, TRANSFER_CODES), term=rel(draw, m.curr_term, [0, 1, -1]))
        return Response(call=call, message=msg), 0
    assert kind == "tick", kind
    return Tick(), draw(_range(0, DRAW_SPAN - 1))


def calls(draw: st.DrawFn, rpc: str, peers: list[str], m: Member) -> Call:
    peer = pick(draw, peers)
    if rpc == "leadership_transfer":
        return Call(rpc=rpc, peer=m.transferee or peer, term=rel(draw, m.curr_term, [0, -1]),
                    answer=pick(draw, [None, 7]))
    want = VoteRound if rpc == "vote" else HeartBeatRound
    current = m.round.seq if isinstance(m.round, want) else None
    stale = (current or m.round_seq) + pick(draw, [-1, 1])
    seq = stale if current is None else mostly(draw, current, [stale])
    return Call(rpc=rpc, peer=peer, round=seq)


@st.composite
def cases(draw: st.DrawFn, kinds: tuple[str, ...], features: frozenset) -> Case:
    """A case a driver that handles `kinds` with `features` can answer."""
    cfg, self_id = configs(draw)
    now = BASE_NOW + draw(_range(0, 1_000_000))
    m = members(draw, cfg, self_id, now, features)
    usable = [k for k in INPUTS if k in kinds and _possible(k, features)]
    assume(usable)
    inp, d = inputs(draw, pick(draw, usable), cfg, m, now)
    case = finish(cfg, m, now, inp, d)
    after, _, outs, _ = run(case)
    need = requires(case, after, outs)
    assume(need[0] in kinds and set(need[1:]) <= features)
    return case


def _possible(kind: str, features: frozenset) -> bool:
    if kind in ("VoteResponse", "HeartBeatResponse") and "rounds" not in features:
        return False
    if kind.startswith("LeadershipTransfer") and "leadership_transfer" not in features:
        return False
    if kind == "rpc_failure" and not set(features) & {"rounds", "leadership_transfer"}:
        return False
    return True


# --- deterministic edge cases (rmqspec vectors) ---

NOW = BASE_NOW
PEERS3 = ("n0", "n1", "n2")
PEERS5 = ("n0", "n1", "n2", "n3", "n4")


def _cfg(peers: tuple[str, ...] = PEERS3, **kw: object) -> DLedgerConfig:
    return DLedgerConfig(peers=peers, **kw)


def _member(role: Role = Role.CANDIDATE, term: int = 2, **kw: object) -> Member:
    leader = {Role.LEADER: "n0", Role.FOLLOWER: "n1"}.get(role)
    base = dict(self_id="n0", curr_term=term, role=role, leader_id=leader, ledger_end_index=5, ledger_end_term=2,
                next_loop_ms=NOW, next_check_preferred_ms=NEVER, known_max_term_in_group=term)
    base.update(kw)
    return Member(**base)


LEDGER_RELATIONS = {"older_term": (1, 9), "same_term_shorter": (2, 4), "same": (2, 5),
                    "same_term_longer": (2, 6), "newer_term": (3, 0)}


def edge_cases() -> Iterator[Case]:
    """Every input kind at the edges its Java handler branches on, from a plain 3-node state."""
    yield from _vote_edges()
    yield from _heart_beat_edges()
    yield from _tick_edges()
    yield from _response_edges()
    yield from _transfer_edges()


def _vote_edges() -> Iterator[Case]:
    cfg = _cfg()
    roles = (Role.CANDIDATE, Role.FOLLOWER, Role.LEADER)
    for role, dt, sender, vote_for, rel in itertools.product(roles, (-1, 0, 1), ("n1", "n0", UNKNOWN),
                                                            (None, "n1", "n2"), LEDGER_RELATIONS):
        let, lei = LEDGER_RELATIONS[rel]
        msg = VoteRequest(group="default", remote_id="n0", leader_id=sender, term=2 + dt,
                          ledger_end_index=lei, ledger_end_term=let)
        yield finish(cfg, _member(role, curr_vote_for=vote_for), NOW, Request(rpc=1, message=msg))
    plain = VoteRequest(group="default", remote_id="n0", leader_id="n1", term=2, ledger_end_index=5, ledger_end_term=2)
    for msg in (plain.evolve(remote_id="n1"), plain.evolve(remote_id=UNKNOWN), plain.evolve(group=OTHER_GROUP)):
        yield finish(cfg, _member(), NOW, Request(rpc=1, message=msg))
    # the request's term is behind the voter's ledger (REJECT_TERM_SMALL_THAN_LEDGER)
    yield finish(cfg, _member(term=1, ledger_end_term=3), NOW,
                 Request(rpc=1, message=plain.evolve(term=1, ledger_end_term=3)))
    # a preferred leader taking leadership refuses peers whose ledger is not longer (isTakingLeadership)
    taking = _cfg(preferred_leader_ids="n0")
    for lei, self_vote in itertools.product((4, 5, 6), (False, True)):
        msg = plain.evolve(ledger_end_index=lei, leader_id="n0" if self_vote else "n1")
        inp = SelfVote(message=msg) if self_vote else Request(rpc=1, message=msg)
        yield finish(taking, _member(term_to_take_leadership=2), NOW, inp)
    for vote_for, leader, dt in itertools.product((None, "n0", "n1"), (None, "n1"), (0, 1)):
        msg = plain.evolve(leader_id="n0", term=2 + dt)
        yield finish(cfg, _member(curr_vote_for=vote_for, leader_id=leader), NOW, SelfVote(message=msg))


def _heart_beat_edges() -> Iterator[Case]:
    cfg = _cfg()
    for role, dt, sender in itertools.product((Role.CANDIDATE, Role.FOLLOWER, Role.LEADER), (-1, 0, 1),
                                              ("n1", "n2", "n0", UNKNOWN)):
        msg = HeartBeatRequest(group="default", local_id=sender, remote_id="n0", leader_id=sender, term=2 + dt)
        yield finish(cfg, _member(role, last_leader_heart_beat_time=NOW - 1500), NOW, Request(rpc=1, message=msg))
    plain = HeartBeatRequest(group="default", local_id="n1", remote_id="n0", leader_id="n1", term=2)
    for msg in (plain.evolve(remote_id="n2"), plain.evolve(group=OTHER_GROUP)):
        yield finish(cfg, _member(Role.FOLLOWER), NOW, Request(rpc=1, message=msg))


def _tick_edges() -> Iterator[Case]:
    tick = Tick()
    for timing in ({}, {"max_heart_beat_leak": 1}):
        cfg = _cfg(**timing)
        interval, leak = cfg.heart_beat_time_interval_ms, cfg.max_heart_beat_leak
        for ago in (2 * interval, 2 * interval + 1, leak * interval, leak * interval + 1, None):
            last = -1 if ago is None else NOW - ago
            yield finish(cfg, _member(Role.FOLLOWER, last_leader_heart_beat_time=last), NOW, tick)
    cfg = _cfg()
    for nxt, need, parsed, known, d in itertools.product(
            (NOW + 1, NOW, NOW - 1, -1), (False, True), (ParseResult.WAIT_TO_REVOTE, ParseResult.WAIT_TO_VOTE_NEXT),
            (2, 5), (0, DRAW_SPAN - 1)):
        m = _member(next_time_to_request_vote=nxt, need_increase_term_immediately=need, last_parse_result=parsed,
                    known_max_term_in_group=known)
        yield finish(cfg, m, NOW, tick, d)
    # a preferred leader that is taking leadership draws from the shorter interval
    yield finish(_cfg(preferred_leader_ids="n0"),
                 _member(term_to_take_leadership=3, need_increase_term_immediately=True),
                 NOW, tick, DRAW_SPAN - 1)
    yield finish(_cfg(enable_leader_elector=False), _member(next_time_to_request_vote=-1), NOW, tick)
    for last in (NOW - 2000, NOW - 2001, -1):
        yield finish(cfg, _member(Role.LEADER, last_send_heart_beat_time=last), NOW, tick)
    yield from _round_edges()
    yield from _server_thread_edges()


def _round_edges() -> Iterator[Case]:
    """Rounds at their latch, at their deadline and one ms before it, for each parse branch."""
    tick = Tick()
    cfg = _cfg()
    branches = {  # counters of a 3-node vote round, one per branch of maintainAsCandidate's parse
        "higher_term": dict(known_max_term_in_group=4, all_num=2, valid_num=2, accepted_num=1),
        "has_leader": dict(already_has_leader=True, all_num=2, valid_num=2, accepted_num=2),
        "few_valid": dict(all_num=3, valid_num=1, accepted_num=1),
        "bigger_ledger": dict(all_num=3, valid_num=3, accepted_num=1, bigger_ledger_num=2),
        "passed": dict(all_num=2, valid_num=2, accepted_num=2),
        "not_ready": dict(all_num=3, valid_num=3, accepted_num=1, not_ready_term_num=1),
        "next_term": dict(all_num=3, valid_num=3, accepted_num=1),
    }
    for name, (deadline, released), d in itertools.product(
            branches, ((NOW, -1), (NOW + 1, -1), (NOW + 500, NOW - 5)), (0, DRAW_SPAN - 1)):
        counters = dict(known_max_term_in_group=2) | branches[name]
        rnd = VoteRound(seq=1, term=2, deadline=deadline, released_at=released, **counters)
        yield finish(cfg, _member(round=rnd, round_seq=1), NOW, tick, d)
    # a vote round that passes for a term the node has left: no leadership
    rnd = VoteRound(seq=1, term=2, deadline=NOW, known_max_term_in_group=2, **branches["passed"])
    yield finish(cfg, _member(term=3, round=rnd, round_seq=1), NOW, tick)
    hb = {
        "quorum": dict(all_num=2, succ_num=2),
        "not_ready": dict(all_num=2, succ_num=1, not_ready_num=1),
        "max_term": dict(all_num=3, succ_num=1, max_term=5),
        "inconsistent": dict(all_num=3, succ_num=1, inconsist_leader=True),
        "lost": dict(all_num=3, succ_num=1),
    }
    for name, succ_ago, (deadline, released) in itertools.product(
            hb, (6000, 6001), ((NOW, -1), (NOW + 1, -1), (NOW + 500, NOW - 5))):
        rnd = HeartBeatRound(seq=1, term=2, deadline=deadline, released_at=released, **hb[name])
        m = _member(Role.LEADER, round=rnd, round_seq=1, last_succ_heart_beat_time=NOW - succ_ago)
        yield finish(cfg, m, NOW, tick)


def _server_thread_edges() -> Iterator[Case]:
    """A transferee's catch-up wait and the preferred-leader check, at their edges."""
    tick = Tick()
    cfg = _cfg(preferred_leader_ids="n0")
    timeout = cfg.leadership_transfer_wait_timeout
    for behind, waited, req_term in itertools.product((1, 0), (timeout, timeout + 1), (2, 1)):
        request = LeadershipTransferRequest(group="default", remote_id="n0", term=req_term, transfer_id="n1",
                                            transferee_id="n0", take_leadership_ledger_index=5 + behind,
                                            leader_id="n1")
        wait = TakeLeadershipWait(rpc=1, request=request, started=NOW - waited, waiting_for_index=True)
        yield finish(cfg, _member(Role.FOLLOWER, take_leadership=wait), NOW, tick, DRAW_SPAN - 1)
    checking = _cfg(preferred_leader_ids="n1")
    gap = checking.max_leadership_transfer_wait_index
    for live, mark, due in itertools.product((True, False), (5 - gap, 5 - gap + 1), (NOW, NOW + 1)):
        m = _member(Role.LEADER, peers_live_table=FrozenMap({"n1": live}), peer_water_marks=FrozenMap({"n1": mark}),
                    next_check_preferred_ms=due, last_send_heart_beat_time=NOW)
        yield finish(checking, m, NOW, tick)


def _response_edges() -> Iterator[Case]:
    cfg = _cfg()
    for result, seq in itertools.product(VoteResult, (1, 0)):
        rnd = VoteRound(seq=1, term=2, deadline=NOW + 500, known_max_term_in_group=2, all_num=1, valid_num=1,
                        accepted_num=1)
        msg = VoteResponse(term=3, vote_result=result)
        yield finish(cfg, _member(round=rnd, round_seq=1), NOW,
                     Response(call=Call(rpc="vote", peer="n1", round=seq), message=msg))
    for code, seq in itertools.product(HEART_BEAT_CODES, (1, 0)):
        rnd = HeartBeatRound(seq=1, term=2, deadline=NOW + 500)
        msg = HeartBeatResponse(code=code, term=3 if code is Code.EXPIRED_TERM else -1)
        yield finish(cfg, _member(Role.LEADER, round=rnd, round_seq=1), NOW,
                     Response(call=Call(rpc="heartbeat", peer="n1", round=seq), message=msg))
    five = _cfg(PEERS5)
    vote = VoteRound(seq=1, term=2, deadline=NOW + 500, known_max_term_in_group=2, all_num=4, valid_num=3,
                     accepted_num=2)
    beat = HeartBeatRound(seq=1, term=2, deadline=NOW + 500, all_num=4, succ_num=2, not_ready_num=0)
    for rpc, rnd, role in (("vote", vote, Role.CANDIDATE), ("heartbeat", beat, Role.LEADER)):
        yield finish(five, _member(role, round=rnd, round_seq=1), NOW,
                     RpcFailure(call=Call(rpc=rpc, peer="n3", round=1)))
    yield finish(five, _member(Role.LEADER, round=beat, round_seq=1), NOW,
                 Response(call=Call(rpc="heartbeat", peer="n3", round=1), message=HeartBeatResponse()))


def _transfer_edges() -> Iterator[Case]:
    cfg = _cfg(preferred_leader_ids="n1")
    gap = cfg.max_leadership_transfer_wait_index
    admin = LeadershipTransferRequest(group="default", remote_id="n0", term=2, transfer_id="n0", transferee_id="n1",
                                      leader_id="n0")
    leader = _member(Role.LEADER, peer_water_marks=FrozenMap({"n1": 5, "n2": 5}))
    for msg, m in ((admin, leader), (admin.evolve(transferee_id=UNKNOWN), leader), (admin.evolve(term=1), leader),
                   (admin, _member(Role.FOLLOWER)), (admin, leader.evolve(transferee="n2")),
                   (admin, leader.evolve(peer_water_marks=FrozenMap({"n1": 5 - gap}))),
                   (admin, leader.evolve(peer_water_marks=FrozenMap({"n1": 5 - gap + 1}))),
                   (admin.evolve(remote_id="n2"), leader), (admin.evolve(group=OTHER_GROUP), leader)):
        yield finish(cfg, m, NOW, Request(rpc=7, message=msg))
    take = LeadershipTransferRequest(group="default", remote_id="n0", term=2, transfer_id="n1", transferee_id="n0",
                                     leader_id="n1", take_leadership_ledger_index=5)
    follower = _member(Role.FOLLOWER)
    for msg in (take, take.evolve(take_leadership_ledger_index=6), take.evolve(transfer_id="n2"),
                take.evolve(term=1), take.evolve(transferee_id="n2", transfer_id="n2")):
        yield finish(_cfg(preferred_leader_ids="n0"), follower, NOW, Request(rpc=7, message=msg))
    for code, answer, role in itertools.product(TRANSFER_CODES, (None, 7), (Role.LEADER, Role.FOLLOWER)):
        m = _member(role, transferee="n1" if role is Role.LEADER else None, transfer_in_flight=True)
        call = Call(rpc="leadership_transfer", peer="n1", term=2, answer=answer)
        yield finish(cfg, m, NOW, Response(call=call, message=LeadershipTransferResponse(code=code, term=3)))
    yield finish(cfg, _member(Role.LEADER, transferee="n1", transfer_in_flight=True), NOW,
                 RpcFailure(call=Call(rpc="leadership_transfer", peer="n1", term=2, answer=7)))


ALL_FEATURES = frozenset(FEATURES)
