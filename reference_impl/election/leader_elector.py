"""The leader elector (DLedgerLeaderElector, 0.2.6): role changes, the vote and heartbeat
handlers, the state maintainer's rounds, and leadership transfer.

Terms move only forward, and only in the candidate's own loop (`next_term`): a node that
sees a higher term in a vote or heartbeat turns CANDIDATE, answers `*_TERM_NOT_READY`,
and sets `need_increase_term_immediately` so that its next loop adopts the term.
`maintain_state` is one iteration of the StateMaintainer loop; the rounds it starts are
parsed when their latch is counted down or their wait ends (`finish_vote_round`,
`finish_heart_beat_round`), which the node's tick runs (reference_impl.election.server).
"""

from __future__ import annotations

from typing import Any

from reference_impl.core.network import Respond, Send
from reference_impl.core.state import EMPTY
from reference_impl.election.member_state import HeartBeatRound, Member, VoteRound, VoteStart, next_term
from reference_impl.election.records import (
    Code,
    DLedgerConfig,
    FollowerTimeout,
    HeartBeatRequest,
    HeartBeatResponse,
    LeadershipTransferRequest,
    LeadershipTransferResponse,
    LeaderStepDown,
    Out,
    ParseResult,
    Role,
    RoleChanged,
    TransferDone,
    TransferStarted,
    VoteGranted,
    VoteParsed,
    VoteRequest,
    VoteResponse,
    VoteResult,
    elapsed,
    rand_int,
)

# DLedger 0.4.0 DLedgerLeaderElector#sendHeartbeats: voteResultWaitTime, the sleep after the
# heartbeat latch in which late answers still count (0.2.6 has none).
VOTE_RESULT_WAIT_MS = 10
# DLedgerLeaderElector#maintainAsCandidate: voteLatch.await(2000 + random.nextInt(maxVoteIntervalMs), ...)
VOTE_LATCH_BASE_MS = 2000

# --- role changes (DLedgerLeaderElector) ---


def change_role_to_leader(cfg: DLedgerConfig, m: Member, term: int) -> tuple[Member, Out]:
    """DLedgerLeaderElector#changeRoleToLeader; skipped unless currTerm == term."""
    if m.curr_term != term:
        return m, ()
    m = m.evolve(role=Role.LEADER, leader_id=m.self_id, peers_live_table=EMPTY, last_send_heart_beat_time=-1)
    return handle_role_change(cfg, m, term, Role.LEADER)


def change_role_to_candidate(cfg: DLedgerConfig, m: Member, term: int) -> tuple[Member, Out]:
    """DLedgerLeaderElector#changeRoleToCandidate; keeps currTerm and currVoteFor,
    and fires the role-change handlers even when the node already is a candidate."""
    if term < m.curr_term:
        return m, ()
    m = m.evolve(role=Role.CANDIDATE, leader_id=None, transferee=None,
                 known_max_term_in_group=max(m.known_max_term_in_group, term))
    return handle_role_change(cfg, m, term, Role.CANDIDATE)


def change_role_to_follower(cfg: DLedgerConfig, m: Member, term: int, leader_id: str, now: int
                            ) -> tuple[Member, Out]:
    """DLedgerLeaderElector#changeRoleToFollower (caller checked currTerm == term)."""
    assert m.curr_term == term, "ILLEGAL_MEMBER_STATE"
    m = m.evolve(last_parse_result=ParseResult.WAIT_TO_REVOTE, role=Role.FOLLOWER, leader_id=leader_id,
                 transferee=None, last_leader_heart_beat_time=now)
    return handle_role_change(cfg, m, term, Role.FOLLOWER)


def handle_role_change(cfg: DLedgerConfig, m: Member, term: int, role: Role) -> tuple[Member, Out]:
    """DLedgerLeaderElector#handleRoleChange: TakeLeadershipTask#check, then the handlers
    (the world sees RoleChanged; RocketMQ's DLedgerRoleChangeHandler lives elsewhere)."""
    m, outs = take_leadership_task_check(m, term, role)
    return m, outs + (RoleChanged(term=term, role=role, leader=m.leader_id),)


# --- RPC handlers ---


def handle_vote(cfg: DLedgerConfig, m: Member, req: VoteRequest, self_vote: bool) -> tuple[Member, VoteResponse, Out]:
    """DLedgerLeaderElector#handleVote: the guards in Java order; the log check precedes the term check."""

    curr_term = m.curr_term  # every reply carries the term as it was on entry

    def reply(result: VoteResult, term: int | None = None) -> VoteResponse:
        return VoteResponse(term=curr_term if term is None else term, vote_result=result)

    if not cfg.is_peer_member(req.leader_id):
        return m, reply(VoteResult.REJECT_UNKNOWN_LEADER), ()
    if not self_vote and req.leader_id == m.self_id:
        return m, reply(VoteResult.REJECT_UNEXPECTED_LEADER), ()
    if req.ledger_end_term < m.ledger_end_term:
        return m, reply(VoteResult.REJECT_EXPIRED_LEDGER_TERM), ()
    if req.ledger_end_term == m.ledger_end_term and req.ledger_end_index < m.ledger_end_index:
        return m, reply(VoteResult.REJECT_SMALL_LEDGER_END_INDEX), ()
    if req.term < m.curr_term:
        return m, reply(VoteResult.REJECT_EXPIRED_VOTE_TERM), ()
    if req.term == m.curr_term:
        if m.curr_vote_for is not None and m.curr_vote_for != req.leader_id:
            if m.leader_id is not None:
                return m, reply(VoteResult.REJECT_ALREADY_HAS_LEADER), ()
            return m, reply(VoteResult.REJECT_ALREADY_VOTED), ()
    else:
        # "stepped down by larger term": the voter does not adopt the term in this RPC.
        m, outs = change_role_to_candidate(cfg, m, req.term)
        m = m.evolve(need_increase_term_immediately=True)
        return m, reply(VoteResult.REJECT_TERM_NOT_READY), outs
    if req.term < m.ledger_end_term:
        return m, reply(VoteResult.REJECT_TERM_SMALL_THAN_LEDGER, term=m.ledger_end_term), ()
    if (not self_vote and is_taking_leadership(cfg, m) and req.ledger_end_term == m.ledger_end_term
            and m.ledger_end_index >= req.ledger_end_index):
        return m, reply(VoteResult.REJECT_TAKING_LEADERSHIP), ()
    m = m.evolve(curr_vote_for=req.leader_id)  # MemberState#setCurrVoteFor persists
    return m, reply(VoteResult.ACCEPT), (VoteGranted(term=m.curr_term, candidate=req.leader_id),)


def handle_heart_beat(cfg: DLedgerConfig, m: Member, req: HeartBeatRequest, now: int
                      ) -> tuple[Member, HeartBeatResponse, Out]:
    """DLedgerLeaderElector#handleHeartBeat: fast path, then the locked path.

    Java repeats the term checks under the lock because another thread may have
    moved the term in between; a model step is atomic, so only the branches the
    lock can still reach are written out."""
    if not cfg.is_peer_member(req.leader_id):
        return m, HeartBeatResponse(code=Code.UNKNOWN_MEMBER, term=m.curr_term), ()
    if req.leader_id == m.self_id:
        return m, HeartBeatResponse(code=Code.UNEXPECTED_MEMBER, term=m.curr_term), ()
    if req.term < m.curr_term:
        return m, HeartBeatResponse(code=Code.EXPIRED_TERM, term=m.curr_term), ()
    if req.term == m.curr_term:
        if req.leader_id == m.leader_id:
            return m.evolve(last_leader_heart_beat_time=now), HeartBeatResponse(), ()
        if m.leader_id is None:
            # How a candidate of the same term becomes a follower.
            m, outs = change_role_to_follower(cfg, m, req.term, req.leader_id, now)
            return m, HeartBeatResponse(), outs
        return m, HeartBeatResponse(code=Code.INCONSISTENT_LEADER), ()  # "[BUG] ... should not happen"
    # Larger term: never follow it directly; become candidate and let the maintainer adopt it.
    m, outs = change_role_to_candidate(cfg, m, req.term)
    return m.evolve(need_increase_term_immediately=True), HeartBeatResponse(code=Code.TERM_NOT_READY), outs


# --- the state maintainer ---


def is_taking_leadership(cfg: DLedgerConfig, m: Member) -> bool:
    """DLedgerLeaderElector#isTakingLeadership (0.2.6)."""
    return (cfg.preferred_leader_ids is not None and m.term_to_take_leadership == m.curr_term
            and m.self_id in cfg.preferred())


def get_next_time_to_request_vote(cfg: DLedgerConfig, m: Member, now: int, draw: int) -> int:
    """DLedgerLeaderElector#getNextTimeToRequestVote: now + 300..999 ms (30..99 when taking leadership)."""
    if is_taking_leadership(cfg, m):
        lo, hi = cfg.min_take_leadership_vote_interval_ms, cfg.max_take_leadership_vote_interval_ms
    else:
        lo, hi = cfg.min_vote_interval_ms, cfg.max_vote_interval_ms
    return now + lo + rand_int(draw, hi - lo)


def maintain_state(cfg: DLedgerConfig, m: Member, now: int, draw: int) -> tuple[Member, Out]:
    """DLedgerLeaderElector#maintainState, then the loop's 10 ms sleep."""
    m = m.evolve(next_loop_ms=now + cfg.maintainer_sleep_ms)
    if m.role is Role.LEADER:
        return maintain_as_leader(cfg, m, now)
    if m.role is Role.FOLLOWER:
        return maintain_as_follower(cfg, m, now)
    return maintain_as_candidate(cfg, m, now, draw)


def maintain_as_leader(cfg: DLedgerConfig, m: Member, now: int) -> tuple[Member, Out]:
    """DLedgerLeaderElector#maintainAsLeader: a heartbeat round when the interval has passed."""
    if elapsed(now, m.last_send_heart_beat_time) <= cfg.heart_beat_time_interval_ms:
        return m, ()
    return send_heartbeats(cfg, m, now, last_send_heart_beat_time=now)


def send_heartbeats(cfg: DLedgerConfig, m: Member, now: int, **also: Any) -> tuple[Member, Out]:
    """DLedgerLeaderElector#sendHeartbeats, up to beatLatch.await: send, then block.
    `also`: fields the caller changes in the same breath (one copy of the member instead of two)."""
    seq = m.round_seq + 1
    sends = tuple(
        Send(dst=peer, ctx=("hb", seq),
             msg=HeartBeatRequest(group=cfg.group, local_id=m.self_id, remote_id=peer, leader_id=m.leader_id,
                                  term=m.curr_term),
             timeout_ms=cfg.rpc_timeout_ms, scanned=True)
        for peer in cfg.peers if peer != m.self_id)
    hb = HeartBeatRound(seq=seq, term=m.curr_term, deadline=now + cfg.heart_beat_time_interval_ms)
    return m.evolve(round=hb, round_seq=seq, **also), sends


def on_heart_beat_response(cfg: DLedgerConfig, m: Member, seq: int, peer: str, resp: HeartBeatResponse | None,
                           now: int) -> Member:
    """The whenComplete callback of one heartbeat future; a failed RPC is a NETWORK_ERROR response."""
    code = Code.NETWORK_ERROR if resp is None else resp.code
    # peersLiveTable is written even by a reply that comes after its round ended.
    live = code is not Code.NETWORK_ERROR
    table = m.peers_live_table
    if table.get(peer) is not live:
        table = table.set(peer, live)
    hb = m.round
    if not isinstance(hb, HeartBeatRound) or hb.seq != seq:
        return m if table is m.peers_live_table else m.evolve(peers_live_table=table)
    succ, not_ready, max_term, inconsistent = hb.succ_num, hb.not_ready_num, hb.max_term, hb.inconsist_leader
    if code is Code.SUCCESS:
        succ += 1
    elif code is Code.EXPIRED_TERM:
        max_term = resp.term  # last writer wins, not the max
    elif code is Code.INCONSISTENT_LEADER:
        inconsistent = True
    elif code is Code.TERM_NOT_READY:
        not_ready += 1
    all_num = hb.all_num + 1
    released = hb.released_at
    if released < 0 and (cfg.is_quorum(succ) or cfg.is_quorum(succ + not_ready) or all_num == cfg.peer_size()):
        released = now
    return m.evolve(peers_live_table=table, round=hb.evolve(
        all_num=all_num, succ_num=succ, not_ready_num=not_ready, max_term=max_term, inconsist_leader=inconsistent,
        released_at=released))


def finish_heart_beat_round(cfg: DLedgerConfig, m: Member, hb: HeartBeatRound, now: int) -> tuple[Member, Out]:
    """The rest of sendHeartbeats once beatLatch.await returns. (DLedger 0.4.0, `step_down_on_higher_term`:
    a higher term in an answer comes first, quorum or not, after a VOTE_RESULT_WAIT_MS sleep, server.round_due.)"""
    if cfg.step_down_on_higher_term and hb.max_term > hb.term:
        m = m.evolve(round=None)
        was_leader = m.role is Role.LEADER
        m, outs = change_role_to_candidate(cfg, m, hb.max_term)
        if was_leader and m.role is Role.CANDIDATE:
            outs = (LeaderStepDown(term=hb.term, reason="max_term"),) + outs
        return m, outs
    if cfg.is_quorum(hb.succ_num):
        return m.evolve(round=None, last_succ_heart_beat_time=now), ()
    if cfg.is_quorum(hb.succ_num + hb.not_ready_num):
        return m.evolve(round=None, last_send_heart_beat_time=-1), ()  # resend at once
    m = m.evolve(round=None)
    if hb.max_term > hb.term:
        reason, term = "max_term", hb.max_term
    elif hb.inconsist_leader:
        reason, term = "inconsistent_leader", hb.term
    elif elapsed(now, m.last_succ_heart_beat_time) > cfg.max_heart_beat_leak * cfg.heart_beat_time_interval_ms:
        reason, term = "lease", hb.term
    else:
        return m, ()
    was_leader = m.role is Role.LEADER
    m, outs = change_role_to_candidate(cfg, m, term)
    if was_leader and m.role is Role.CANDIDATE:
        outs = (LeaderStepDown(term=hb.term, reason=reason),) + outs
    return m, outs


def maintain_as_follower(cfg: DLedgerConfig, m: Member, now: int) -> tuple[Member, Out]:
    """DLedgerLeaderElector#maintainAsFollower: candidate after maxHeartBeatLeak x interval without heartbeat."""
    since = elapsed(now, m.last_leader_heart_beat_time)
    if since <= 2 * cfg.heart_beat_time_interval_ms:
        return m, ()
    if since <= cfg.max_heart_beat_leak * cfg.heart_beat_time_interval_ms:
        return m, ()
    timeout = FollowerTimeout(term=m.curr_term, leader=m.leader_id)
    m, outs = change_role_to_candidate(cfg, m, m.curr_term)
    return m, (timeout,) + outs


def maintain_as_candidate(cfg: DLedgerConfig, m: Member, now: int, draw: int) -> tuple[Member, Out]:
    """DLedgerLeaderElector#maintainAsCandidate up to the end of its `synchronized (memberState)`
    block: nextTerm when due, and the term and ledger ends the round will ask with (`VoteStart`).

    Java releases the lock before voteForQuorumResponses, so this is one step and the requests
    and the self-vote are the next (`vote_for_quorum_responses`, the same thread at once): a
    handler may grant another candidate's request for the new term in between, and the
    self-vote is then refused (REJECT_ALREADY_VOTED)."""
    if now < m.next_time_to_request_vote and not m.need_increase_term_immediately:
        return m, ()
    if m.role is not Role.CANDIDATE:
        return m, ()
    if m.last_parse_result is ParseResult.WAIT_TO_VOTE_NEXT or m.need_increase_term_immediately:
        m = next_term(m).evolve(last_parse_result=ParseResult.WAIT_TO_REVOTE)
    if m.need_increase_term_immediately:
        # Only adopt the term in this iteration; solicit votes after the random wait.
        return m.evolve(next_time_to_request_vote=get_next_time_to_request_vote(cfg, m, now, draw),
                        need_increase_term_immediately=False), ()
    return m.evolve(vote_start=VoteStart(term=m.curr_term, ledger_end_index=m.ledger_end_index,
                                         ledger_end_term=m.ledger_end_term)), ()


def vote_for_quorum_responses(cfg: DLedgerConfig, m: Member, now: int, draw: int) -> tuple[Member, Out]:
    """DLedgerLeaderElector#voteForQuorumResponses plus the round set-up of maintainAsCandidate,
    after the lock was released: the requests carry the term and ledger ends read under it
    (`m.vote_start`; the member's own when there is none), the self-vote is handled
    synchronously (handleVote takes the lock again, whatever the role is by now), the others
    are sent; then wait VOTE_LATCH_BASE_MS (2000) +
    rand(maxVoteIntervalMs)."""
    start = m.vote_start
    if start is None:
        start = VoteStart(term=m.curr_term, ledger_end_index=m.ledger_end_index, ledger_end_term=m.ledger_end_term)
    term, seq = start.term, m.round_seq + 1
    m = m.evolve(round_seq=seq, vote_start=None, round=VoteRound(
        seq=seq, term=term, known_max_term_in_group=term,
        deadline=now + VOTE_LATCH_BASE_MS + rand_int(draw, cfg.max_vote_interval_ms)))
    outs: Out = ()
    for peer in cfg.peers:
        req = VoteRequest(group=cfg.group, remote_id=peer, leader_id=m.self_id, term=term,
                          ledger_end_index=start.ledger_end_index, ledger_end_term=start.ledger_end_term)
        if peer == m.self_id:
            m, resp, vote_outs = handle_vote(cfg, m, req, self_vote=True)
            m = on_vote_response(cfg, m, seq, resp, now)
            outs += vote_outs
        else:
            outs += (Send(dst=peer, msg=req, ctx=("vote", seq), timeout_ms=cfg.rpc_timeout_ms, scanned=True),)
    return m, outs


# VoteResponse.RESULT -> which counter of the round it feeds (the switch in maintainAsCandidate).
_VOTE_COUNTER = {
    VoteResult.ACCEPT: "accepted",
    VoteResult.REJECT_ALREADY_HAS_LEADER: "has_leader",
    VoteResult.REJECT_TERM_SMALL_THAN_LEDGER: "max_term",
    VoteResult.REJECT_EXPIRED_VOTE_TERM: "max_term",
    VoteResult.REJECT_EXPIRED_LEDGER_TERM: "bigger_ledger",
    VoteResult.REJECT_SMALL_LEDGER_END_INDEX: "bigger_ledger",
    VoteResult.REJECT_TERM_NOT_READY: "not_ready",
}


def on_vote_response(cfg: DLedgerConfig, m: Member, seq: int, resp: VoteResponse | None, now: int) -> Member:
    """The whenComplete callback of one vote future; a failed RPC is `new VoteResponse()` (UNKNOWN)."""
    vr = m.round
    if not isinstance(vr, VoteRound) or vr.seq != seq:
        return m  # the round this answers has ended; Java updates counters nobody reads
    result = VoteResult.UNKNOWN if resp is None else resp.vote_result
    kind = _VOTE_COUNTER.get(result)
    valid = vr.valid_num + (result is not VoteResult.UNKNOWN)
    accepted, not_ready, bigger, has_leader, known_max = (
        vr.accepted_num, vr.not_ready_term_num, vr.bigger_ledger_num, vr.already_has_leader,
        vr.known_max_term_in_group)
    if kind == "accepted":
        accepted += 1
    elif kind == "has_leader":
        has_leader = True
    elif kind == "max_term":
        known_max = max(known_max, resp.term)
    elif kind == "bigger_ledger":
        bigger += 1
    elif kind == "not_ready":
        not_ready += 1
    all_num = vr.all_num + 1
    released = vr.released_at
    if released < 0 and (has_leader or cfg.is_quorum(accepted) or cfg.is_quorum(accepted + not_ready)
                         or all_num == cfg.peer_size()):
        released = now
    return m.evolve(round=vr.evolve(all_num=all_num, valid_num=valid, accepted_num=accepted,
                                    not_ready_term_num=not_ready, bigger_ledger_num=bigger,
                                    already_has_leader=has_leader, known_max_term_in_group=known_max,
                                    released_at=released))


def finish_vote_round(cfg: DLedgerConfig, m: Member, vr: VoteRound, now: int, draw: int) -> tuple[Member, Out]:
    """The parse of maintainAsCandidate once voteLatch.await returns (first matching branch wins)."""
    m = m.evolve(round=None)
    outs: Out = ()
    nxt = m.next_time_to_request_vote
    if vr.known_max_term_in_group > vr.term:
        result = ParseResult.WAIT_TO_VOTE_NEXT
        nxt = get_next_time_to_request_vote(cfg, m, now, draw)
        m, outs = change_role_to_candidate(cfg, m.evolve(next_time_to_request_vote=nxt), vr.known_max_term_in_group)
    elif vr.already_has_leader:
        result = ParseResult.WAIT_TO_REVOTE
        nxt = (get_next_time_to_request_vote(cfg, m, now, draw)
               + cfg.heart_beat_time_interval_ms * cfg.max_heart_beat_leak)
    elif not cfg.is_quorum(vr.valid_num):
        result = ParseResult.WAIT_TO_REVOTE
        nxt = get_next_time_to_request_vote(cfg, m, now, draw)
    elif not cfg.is_quorum(vr.valid_num - vr.bigger_ledger_num):
        result = ParseResult.WAIT_TO_REVOTE
        nxt = get_next_time_to_request_vote(cfg, m, now, draw) + cfg.max_vote_interval_ms
    elif cfg.is_quorum(vr.accepted_num):
        result = ParseResult.PASSED
    elif cfg.is_quorum(vr.accepted_num + vr.not_ready_term_num):
        result = ParseResult.REVOTE_IMMEDIATELY
    else:
        result = ParseResult.WAIT_TO_VOTE_NEXT
        nxt = get_next_time_to_request_vote(cfg, m, now, draw)
    m = m.evolve(next_time_to_request_vote=nxt, last_parse_result=result)
    parsed = VoteParsed(term=vr.term, result=result, accepted=vr.accepted_num, valid=vr.valid_num,
                        not_ready=vr.not_ready_term_num, bigger_ledger=vr.bigger_ledger_num,
                        already_has_leader=vr.already_has_leader)
    if result is ParseResult.PASSED:
        m, lead_outs = change_role_to_leader(cfg, m, vr.term)
        outs += lead_outs
    return m, (parsed,) + outs


def test_revote(cfg: DLedgerConfig, m: Member, term: int) -> tuple[Member, Out]:
    """DLedgerLeaderElector#testRevote (a test hook the DLedger tests call)."""
    m, outs = change_role_to_candidate(cfg, m, term)
    return m.evolve(last_parse_result=ParseResult.WAIT_TO_VOTE_NEXT, next_time_to_request_vote=-1), outs


def handle_leadership_transfer(cfg: DLedgerConfig, m: Member, term: int, transferee_id: str, admin_rpc: int = 0
                               ) -> tuple[Member, LeadershipTransferResponse | None, Out]:
    """DLedgerLeaderElector#handleLeadershipTransfer (old leader): mark the transferee, tell it to take over.

    The caller blocks on the reply (`transfer_in_flight`); reply None means it is
    still pending. `admin_rpc` is the operator's request to answer when it comes."""
    if m.curr_term != term:
        return m, LeadershipTransferResponse(code=Code.INCONSISTENT_TERM, term=m.curr_term), ()
    if m.role is not Role.LEADER:
        return m, LeadershipTransferResponse(code=Code.NOT_LEADER, term=m.curr_term), ()
    if m.transferee is not None:
        return m, LeadershipTransferResponse(code=Code.LEADER_TRANSFERRING, term=m.curr_term), ()
    m = m.evolve(transferee=transferee_id, transfer_in_flight=True)
    req = LeadershipTransferRequest(group=cfg.group, remote_id=transferee_id, term=term, transfer_id=m.self_id,
                                    transferee_id=transferee_id, take_leadership_ledger_index=m.ledger_end_index,
                                    leader_id=m.leader_id)
    return m, None, (Send(dst=transferee_id, msg=req, ctx=("transfer", term, transferee_id, admin_rpc),
                          timeout_ms=cfg.rpc_timeout_ms, scanned=True), TransferStarted(transferee=transferee_id, term=term))


def on_leadership_transfer_response(cfg: DLedgerConfig, m: Member, term: int, transferee_id: str, admin_rpc: int,
                                    resp: LeadershipTransferResponse | None) -> tuple[Member, Out]:
    """The thenApply of handleLeadershipTransfer: clear the transferee unless the transfer is done.
    setTransferee(null) throws when the node is no longer leader, so then nothing is cleared."""
    code = Code.NETWORK_ERROR if resp is None else resp.code
    m = m.evolve(transfer_in_flight=False)
    if (code is not Code.SUCCESS or (m.curr_term == term and m.transferee is not None)) and m.role is Role.LEADER:
        m = m.evolve(transferee=None)
    outs: Out = (TransferDone(transferee=transferee_id, code=code),)
    if admin_rpc:
        outs += (Respond(rpc=admin_rpc, msg=resp if resp is not None else LeadershipTransferResponse(
            code=Code.NETWORK_ERROR, term=term)),)
    return m, outs


def handle_take_leadership(cfg: DLedgerConfig, m: Member, now: int
                           ) -> tuple[Member, LeadershipTransferResponse | None, Out]:
    """DLedgerLeaderElector#handleTakeLeadership: stand for term+1 at once; answer when TakeLeadershipTask decides."""
    wait = m.take_leadership
    if m.curr_term != wait.request.term:
        return m.evolve(take_leadership=None), LeadershipTransferResponse(
            code=Code.INCONSISTENT_TERM, term=m.curr_term), ()
    target = wait.request.term + 1
    m = m.evolve(term_to_take_leadership=target, take_leadership=wait.evolve(waiting_for_index=False))
    m, outs = change_role_to_candidate(cfg, m, target)
    return m.evolve(need_increase_term_immediately=True), None, outs


def take_leadership_task_check(m: Member, term: int, role: Role) -> tuple[Member, Out]:
    """DLedgerLeaderElector.TakeLeadershipTask#check, on every role change."""
    task = m.take_leadership
    if m.term_to_take_leadership == -1 or task is None or task.waiting_for_index:
        return m, ()
    target = m.term_to_take_leadership
    if term > target:
        code = Code.EXPIRED_TERM
    elif term == target:
        if role is Role.LEADER:
            code = Code.SUCCESS
        elif role is Role.FOLLOWER:
            code = Code.TAKE_LEADERSHIP_FAILED
        else:
            return m, ()
    else:
        code = Code.TAKE_LEADERSHIP_FAILED if role is Role.FOLLOWER else Code.INTERNAL_ERROR
    m = m.evolve(term_to_take_leadership=-1, take_leadership=None)
    return m, (Respond(rpc=task.rpc, msg=LeadershipTransferResponse(code=code, term=term)),)
