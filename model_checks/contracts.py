"""Contracts on the pure reference functions, checked symbolically by CrossHair.

Each function below is a harness: it builds the reference's inputs from plain values
(which CrossHair makes symbolic), calls the real reference function, and states in
PEP 316 docstring contracts (`pre:` / `post:`) something crisp the Java code
guarantees. `rmqspec prove` runs CrossHair over them with a per-condition time limit
(model_checks.crosshair_run) and reports each condition as confirmed (every path
explored), counterexample, or unknown (no counterexample within the limit).

Node ids are drawn by index (0..2 -> "n0".."n2"); -1 stands for "none".
"""

from __future__ import annotations

from reference_impl import core
from reference_impl.core import codec
from reference_impl.core import network as net_mod
from reference_impl.election import leader_elector as elector
from reference_impl.election import member_state as mstate
from reference_impl.election import records as el
from reference_impl.election import server as srv

IDS = ("n0", "n1", "n2")
CFG = el.DLedgerConfig(peers=IDS)


def _id(i: int) -> str | None:
    return IDS[i] if 0 <= i < len(IDS) else None


def next_term_moves_up(curr_term: int, known_max: int) -> tuple[int, bool]:
    """MemberState#nextTerm: the term grows (to knownMaxTermInGroup or by one) and the vote is cleared.

    pre: curr_term >= 0
    post: __return__[0] > curr_term
    post: __return__[0] == max(known_max, curr_term + 1)
    post: __return__[1]
    """
    m = mstate.Member(self_id="n0", curr_term=curr_term, curr_vote_for="n1", known_max_term_in_group=known_max)
    m2 = mstate.next_term(m)
    return m2.curr_term, m2.curr_vote_for is None


def one_vote_per_term(term: int, voted: int, has_leader: bool, cand: int, req_term: int,
                      req_lei: int, req_let: int, lei: int, let: int) -> tuple[bool, int, str | None]:
    """DLedgerLeaderElector#handleVote: an ACCEPT goes only to the candidate already voted for
    in this term (or to the first), is recorded as currVoteFor, and handleVote never moves currTerm.

    pre: term >= 0 and -1 <= voted <= 2 and 0 <= cand <= 2
    post: __return__[1] == term
    post: implies(__return__[0], req_term == term and (voted == -1 or _id(voted) == _id(cand)))
    post: implies(__return__[0], __return__[2] == _id(cand))
    post: implies(not __return__[0], __return__[2] == _id(voted))
    """
    m = mstate.Member(self_id="n0", curr_term=term, curr_vote_for=_id(voted),
                      leader_id="n1" if has_leader else None, ledger_end_index=lei, ledger_end_term=let)
    req = el.VoteRequest(group=CFG.group, remote_id="n0", leader_id=_id(cand), term=req_term,
                         ledger_end_index=req_lei, ledger_end_term=req_let)
    m2, resp, _ = elector.handle_vote(CFG, m, req, self_vote=cand == 0)
    return resp.vote_result is el.VoteResult.ACCEPT, m2.curr_term, m2.curr_vote_for


def log_check_before_term(term: int, req_term: int, req_lei: int, req_let: int, lei: int, let: int) -> bool:
    """handleVote checks the candidate's log before its term: a candidate with an older log
    never makes the voter step down, whatever its term.

    pre: term >= 0
    post: implies(req_let < let or (req_let == let and req_lei < lei), not __return__)
    """
    m = mstate.Member(self_id="n0", curr_term=term, role=el.Role.FOLLOWER, leader_id="n2",
                      ledger_end_index=lei, ledger_end_term=let)
    req = el.VoteRequest(group=CFG.group, remote_id="n0", leader_id="n1", term=req_term,
                         ledger_end_index=req_lei, ledger_end_term=req_let)
    m2, _, _ = elector.handle_vote(CFG, m, req, self_vote=False)
    return m2.role is el.Role.CANDIDATE


def heartbeat_keeps_term(term: int, has_leader: bool, leader: int, req_term: int, now: int) -> tuple[int, bool]:
    """DLedgerLeaderElector#handleHeartBeat never moves currTerm, and a node becomes FOLLOWER
    only of a heartbeat of its own term while it knows no leader.

    pre: term >= 0 and 1 <= leader <= 2 and now >= 0
    post: __return__[0] == term
    post: implies(__return__[1], req_term == term and not has_leader)
    """
    m = mstate.Member(self_id="n0", curr_term=term, role=el.Role.FOLLOWER if has_leader else el.Role.CANDIDATE,
                      leader_id="n2" if has_leader else None)
    req = el.HeartBeatRequest(group=CFG.group, local_id=_id(leader), remote_id="n0", leader_id=_id(leader),
                              term=req_term)
    m2, _, _ = elector.handle_heart_beat(CFG, m, req, now)
    became = m2.role is el.Role.FOLLOWER and m2.leader_id != m.leader_id
    return m2.curr_term, became


def crash_keeps_term_and_vote(term: int, voted: int, lose_term_file: bool) -> tuple[int, str | None]:
    """A process crash and restart keep currTerm and currVoteFor (the currterm file);
    only losing the file (an OS crash) resets them.

    pre: term >= 0 and -1 <= voted <= 2
    post: implies(not lose_term_file, __return__ == (term, _id(voted)))
    post: implies(lose_term_file, __return__ == (0, None))
    """
    m = mstate.Member(self_id="n0", curr_term=term, curr_vote_for=_id(voted), role=el.Role.LEADER, leader_id="n0")
    m2 = srv.restart(CFG, srv.crash(m, lose_term_file=lose_term_file), now=0)
    return m2.curr_term, m2.curr_vote_for


def group(size: int) -> el.DLedgerConfig:
    """A group of `size` peers (isQuorum reads only how many there are)."""
    return el.DLedgerConfig(peers=tuple(f"n{i}" for i in range(size)))


def quorums_intersect(peers: int, a: int, b: int) -> bool:
    """MemberState#isQuorum (num >= peerSize / 2 + 1): any two quorums of one group share a member.

    pre: 1 <= peers <= 9 and 0 <= a <= peers and 0 <= b <= peers
    post: implies(__return__, a + b > peers)
    """
    cfg = group(peers)
    return cfg.is_quorum(a) and cfg.is_quorum(b)


def quorum_is_monotone(peers: int, a: int, b: int) -> bool:
    """isQuorum is monotone and the whole group is a quorum.

    pre: 1 <= peers <= 9 and 0 <= a <= b <= peers
    post: implies(__return__, group(peers).is_quorum(b))
    post: group(peers).is_quorum(peers)
    """
    return group(peers).is_quorum(a)


def next_int_in_range(draw: int, bound: int) -> int:
    """Random#nextInt(bound) fed from a 16-bit draw: 0 <= result < bound.

    pre: 0 <= draw < 65536 and 0 < bound < 1 << 20
    post: 0 <= __return__ < bound
    """
    return el.rand_int(draw, bound)


def vote_wait_in_window(now: int, draw: int) -> int:
    """getNextTimeToRequestVote: now + minVoteIntervalMs .. now + maxVoteIntervalMs - 1 (300..999 ms).

    pre: now >= 0 and 0 <= draw < 65536
    post: now + 300 <= __return__ < now + 1000
    """
    return elector.get_next_time_to_request_vote(CFG, mstate.Member(self_id="n0"), now, draw)


def node_down_clears_its_sockets(src: int, dst: int, down: int) -> bool:
    """network.node_down: no message to or from a crashed node stays in flight; RPCs it serves fail now.

    pre: 0 <= src <= 2 and 0 <= dst <= 2 and 0 <= down <= 2
    post: __return__
    """
    net = net_mod.send(net_mod.Network(), 0, src, dst, "ping", ("ctx",), 3000)
    net = net_mod.send(net, 0, dst, src, "oneway")
    after = net_mod.node_down(net, down, 7)
    gone = all(e.src != down and e.dst != down for e in after.flight)
    failed = all(r.deadline_ms == 7 for r in after.rpcs if r.responder == down)
    return gone and failed


def reply_only_to_open_rpc(closed: bool) -> int:
    """network.reply: a reply to an RPC that is no longer open is discarded (Netty forgets the opaque).

    post: __return__ == (1 if closed else 2)
    """
    net = net_mod.send(net_mod.Network(), 0, 0, 1, "req", None, 3000)
    rpc = net.rpcs[0].id
    if closed:
        net = net_mod.close_rpc(net, rpc)
    return len(net_mod.reply(net, 1, rpc, "resp").flight)


_WORLD = core.init(core.protocol("election").make_config(3, {}))


def tick_round_trip(node: int, draw: int) -> bool:
    """codec: a tick event survives encoding into a trace line and decoding back.

    pre: 0 <= node <= 2 and 0 <= draw < 65536
    post: __return__
    """
    ev = core.Tick(node=node, draw=draw)
    return codec.decode_event(_WORLD, codec.encode_event(_WORLD, ev)) == ev


def crash_round_trip(node: int, os_crash: bool, disk: bool) -> bool:
    """codec: a crash event (process, OS or disk) survives encoding and decoding.

    pre: 0 <= node <= 2
    post: __return__
    """
    ev = core.Crash(node=node, os=os_crash or disk, disk=disk)
    return codec.decode_event(_WORLD, codec.encode_event(_WORLD, ev)) == ev


def implies(a: bool, b: bool) -> bool:
    return (not a) or b


CONTRACTS = (next_term_moves_up, one_vote_per_term, log_check_before_term, heartbeat_keeps_term,
             crash_keeps_term_and_vote, quorums_intersect, quorum_is_monotone, next_int_in_range,
             vote_wait_in_window, node_down_clears_its_sockets, reply_only_to_open_rpc, tick_round_trip,
             crash_round_trip)
