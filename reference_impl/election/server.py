"""A DLedger server as the election sees it (DLedgerServer, 0.2.6): start-up and crash,
the RPC entry points, the preferred-leader check, and the node as the world drives it.

The entry points guard `remoteId` and `group`, then call the elector
(reference_impl.election.leader_elector). `on_tick` runs every thread of the node that
is due: the transferee's catch-up wait, the preferred-leader check (a fixed-rate
scheduled task), and the state maintainer (ending a round, or one loop; a candidate's
loop is two steps, nextTerm under the MemberState lock and then the vote requests with
the self-vote, since Java releases the lock in between).
"""

from __future__ import annotations

from typing import Any

from reference_impl.core.network import Respond
from reference_impl.election import leader_elector as elector
from reference_impl.election.member_state import HeartBeatRound, Member, TakeLeadershipWait, VoteRound
from reference_impl.election.records import (
    Code,
    DLedgerConfig,
    HeartBeatRequest,
    HeartBeatResponse,
    LeadershipTransferRequest,
    LeadershipTransferResponse,
    Out,
    Role,
    VoteRequest,
    VoteResponse,
)


def boot(cfg: DLedgerConfig, self_id: str, now: int, curr_term: int = 0, curr_vote_for: str | None = None,
         ledger_end_index: int = -1, ledger_end_term: int = -1) -> Member:
    """DLedgerServer#startup: MemberState#loadTerm, store recovery, then the threads start."""
    return Member(self_id=self_id, curr_term=curr_term, curr_vote_for=curr_vote_for,
                  ledger_end_index=ledger_end_index, ledger_end_term=ledger_end_term,
                  next_loop_ms=now, next_check_preferred_ms=now + cfg.check_preferred_leader_interval_ms)


def crash(m: Member, lose_term_file: bool = False) -> Member:
    """The process dies; the currterm file is all that survives, unless it is lost too.

    `lose_term_file`: IOUtils.string2File deletes the main file before renaming the
    new one into place and never fsyncs, so a crash in that window, or an OS crash
    before write-back, leaves no readable file and `loadTerm` starts from term 0."""
    if lose_term_file:
        return Member(self_id=m.self_id, ledger_end_index=m.ledger_end_index, ledger_end_term=m.ledger_end_term)
    return Member(self_id=m.self_id, curr_term=m.curr_term, curr_vote_for=m.curr_vote_for,
                  ledger_end_index=m.ledger_end_index, ledger_end_term=m.ledger_end_term)


def restart(cfg: DLedgerConfig, m: Member, now: int) -> Member:
    """Relaunch after `crash`: persisted term and vote, fresh volatile state."""
    return boot(cfg, m.self_id, now, m.curr_term, m.curr_vote_for, m.ledger_end_index, m.ledger_end_term)


def server_handle_vote(cfg: DLedgerConfig, m: Member, req: VoteRequest) -> tuple[Member, VoteResponse, Out]:
    """DLedgerServer#handleVote: remoteId and group guards, then the elector (self=false).
    A guard failure answers with the code and voteResult UNKNOWN (copyBaseInfo keeps the request's term)."""
    if req.remote_id != m.self_id:
        return m, VoteResponse(term=req.term, code=Code.UNKNOWN_MEMBER), ()
    if req.group != cfg.group:
        return m, VoteResponse(term=req.term, code=Code.UNKNOWN_GROUP), ()
    return elector.handle_vote(cfg, m, req, self_vote=False)


def server_handle_heart_beat(cfg: DLedgerConfig, m: Member, req: HeartBeatRequest, now: int
                             ) -> tuple[Member, HeartBeatResponse, Out]:
    """DLedgerServer#handleHeartBeat: remoteId and group guards, then the elector."""
    if req.remote_id != m.self_id:
        return m, HeartBeatResponse(code=Code.UNKNOWN_MEMBER, term=req.term), ()
    if req.group != cfg.group:
        return m, HeartBeatResponse(code=Code.UNKNOWN_GROUP, term=req.term), ()
    return elector.handle_heart_beat(cfg, m, req, now)


# --- preferred leader and leadership transfer ---


def check_preferred_leader(cfg: DLedgerConfig, m: Member) -> tuple[Member, Out]:
    """DLedgerServer#checkPreferredLeader: a leader hands over to the live preferred peer that is least behind."""
    if m.role is not Role.LEADER or cfg.preferred_leader_ids is None or m.transferee is not None:
        return m, ()
    preferred = cfg.preferred()
    if m.self_id in preferred:
        return m, ()
    candidates = [p for p in preferred if cfg.is_peer_member(p) and m.peers_live_table.get(p) is True]
    if not candidates:
        return m, ()
    # Peers too far behind are only logged in the filter loop; the minimum below decides.
    best, min_fall_behind = candidates[0], None
    for peer in candidates:
        fall_behind = m.ledger_end_index - m.peer_water_marks.get(peer, -1)
        if min_fall_behind is None or fall_behind < min_fall_behind:
            best, min_fall_behind = peer, fall_behind
    if min_fall_behind >= cfg.max_leadership_transfer_wait_index:
        return m, ()
    m, _, outs = elector.handle_leadership_transfer(cfg, m, m.curr_term, best)
    return m, outs


def server_handle_leadership_transfer(cfg: DLedgerConfig, m: Member, req: LeadershipTransferRequest, rpc: int,
                                      now: int) -> tuple[Member, LeadershipTransferResponse | None, Out]:
    """DLedgerServer#handleLeadershipTransfer. Returns reply None when the answer is deferred."""

    def fail(code: Code) -> LeadershipTransferResponse:
        return LeadershipTransferResponse(code=code, term=req.term)

    if req.remote_id != m.self_id:
        return m, fail(Code.UNKNOWN_MEMBER), ()
    if req.group != cfg.group:
        return m, fail(Code.UNKNOWN_GROUP), ()
    if req.transfer_id == m.self_id:
        # An operator asked this leader to hand over (the admin path); checks, then the elector.
        if not cfg.is_peer_member(req.transferee_id):
            return m, fail(Code.UNKNOWN_MEMBER), ()
        if m.curr_term != req.term:
            return m, fail(Code.INCONSISTENT_TERM), ()
        if m.role is not Role.LEADER:
            return m, fail(Code.NOT_LEADER), ()
        if m.ledger_end_index - m.peer_water_marks.get(req.transferee_id, -1) >= cfg.max_leadership_transfer_wait_index:
            return m, fail(Code.FALL_BEHIND_TOO_MUCH), ()
        return elector.handle_leadership_transfer(cfg, m, req.term, req.transferee_id, admin_rpc=rpc)
    if req.transferee_id == m.self_id:
        if req.transfer_id != m.leader_id:
            return m, fail(Code.INCONSISTENT_LEADER), ()
        wait = TakeLeadershipWait(rpc=rpc, request=req, started=now, waiting_for_index=True)
        return take_leadership_wait_step(cfg, m.evolve(take_leadership=wait), now)
    return m, LeadershipTransferResponse(code=Code.UNEXPECTED_ARGUMENT, term=m.curr_term), ()


def take_leadership_wait_step(cfg: DLedgerConfig, m: Member, now: int
                              ) -> tuple[Member, LeadershipTransferResponse | None, Out]:
    """The transferee's catch-up loop in DLedgerServer#handleLeadershipTransfer: wait (10 ms polls in Java)
    until ledgerEndIndex reaches takeLeadershipLedgerIndex, failing after leadershipTransferWaitTimeout."""
    wait = m.take_leadership
    assert wait is not None and wait.waiting_for_index
    if wait.request.take_leadership_ledger_index - m.ledger_end_index > 0:
        if now - wait.started > cfg.leadership_transfer_wait_timeout:
            return m.evolve(take_leadership=None), LeadershipTransferResponse(
                code=Code.TAKE_LEADERSHIP_FAILED, term=wait.request.term), ()
        return m, None, ()
    return elector.handle_take_leadership(cfg, m, now)


# --- the node as the world sees it ---


def round_due(cfg: DLedgerConfig, rnd: VoteRound | HeartBeatRound) -> int:
    """When a round's thread goes on: its latch released, else its await timed out. DLedger 0.4.0
    (`step_down_on_higher_term`) sleeps voteResultWaitTime after a heartbeat latch (whose await it
    shortens by as much), so answers arriving in those ms still count; its deadline is unchanged."""
    if rnd.released_at < 0:
        return rnd.deadline
    if cfg.step_down_on_higher_term and isinstance(rnd, HeartBeatRound):
        return min(rnd.released_at + elector.VOTE_RESULT_WAIT_MS, rnd.deadline)
    return rnd.released_at


def wake_at(cfg: DLedgerConfig, m: Member) -> int:
    """The earliest time at which one of the node's threads has something to do (-1: never)."""
    wake = -1
    rnd = m.round
    if rnd is not None:
        wake = round_due(cfg, rnd)
    elif m.vote_start is not None:
        wake = 0  # the same loop iteration goes on at once, once the lock is released
    elif cfg.enable_leader_elector:
        wake = max(maintainer_due(cfg, m), m.next_loop_ms)
    if cfg.preferred_leader_ids is not None and m.role is Role.LEADER and not m.transfer_in_flight:
        wake = m.next_check_preferred_ms if wake < 0 else min(wake, m.next_check_preferred_ms)
    if m.take_leadership is not None and m.take_leadership.waiting_for_index:
        due = (m.take_leadership.started + cfg.leadership_transfer_wait_timeout + 1
               if m.take_leadership.request.take_leadership_ledger_index > m.ledger_end_index else 0)
        wake = due if wake < 0 else min(wake, due)
    return wake


def maintainer_due(cfg: DLedgerConfig, m: Member) -> int:
    """When the state maintainer's condition for its role falls due (its loop may notice later)."""
    if m.role is Role.LEADER:
        return _due(m.last_send_heart_beat_time, cfg.heart_beat_time_interval_ms)
    if m.role is Role.FOLLOWER:
        return _due(m.last_leader_heart_beat_time, max(2, cfg.max_heart_beat_leak) * cfg.heart_beat_time_interval_ms)
    if m.need_increase_term_immediately:
        return 0
    return m.next_time_to_request_vote


def wake_slack(cfg: DLedgerConfig, m: Member, since: int, wake: int) -> int:
    """How much later than its wake time Java may act, in ms; `since` is when the member's
    wake time was last set and `wake` its `wake_at`. The StateMaintainer loops every
    `maintainer_sleep_ms` (10) whether or not anything is due, so a condition that falls due
    (or is set by a handler, at `since`) while it sleeps between idle loops is noticed at the
    next loop, up to one period later, at a phase the model does not know. Nothing else waits: a latch or an
    await's timeout wakes its thread at once, a scheduled task fires on time, and the
    loop's own next iteration (`next_loop_ms`) is on time, and so is the rest of an iteration
    that released the MemberState lock (`vote_start`)."""
    if m.round is not None or m.vote_start is not None or not cfg.enable_leader_elector:
        return 0
    maintainer = maintainer_due(cfg, m)
    if max(maintainer, since) <= m.next_loop_ms or wake < max(maintainer, m.next_loop_ms):
        return 0
    return cfg.maintainer_sleep_ms


def _due(since: int, interval: int) -> int:
    """First ms at which elapsed(now, since) > interval."""
    return since + interval + 1 if since >= 0 else 0


def on_tick(cfg: DLedgerConfig, m: Member, now: int, draw: int) -> tuple[Member, Out]:
    """Run every thread of the node that is due at `now`: the transferee's wait, the
    preferred-leader check, the state maintainer (ending a round, asking for votes after
    the locked part of maintainAsCandidate, or one loop)."""
    outs: Out = ()
    wait = m.take_leadership
    if wait is not None and wait.waiting_for_index:
        m, reply, wait_outs = take_leadership_wait_step(cfg, m, now)
        outs += wait_outs
        if reply is not None:
            outs += (Respond(rpc=wait.rpc, msg=reply),)
    if (cfg.preferred_leader_ids is not None and not m.transfer_in_flight
            and now >= m.next_check_preferred_ms):
        # Stay on the fixed-rate grid of the scheduled executor. A node that was not
        # leader at the grid points in between is checked when it next wakes, at most
        # one interval earlier than Java's next grid point.
        period = cfg.check_preferred_leader_interval_ms
        nxt = now + period - (now - m.next_check_preferred_ms) % period
        m, check_outs = check_preferred_leader(cfg, m.evolve(next_check_preferred_ms=nxt))
        outs += check_outs
    rnd = m.round
    if rnd is not None:
        if now >= round_due(cfg, rnd):
            if isinstance(rnd, VoteRound):
                m, round_outs = elector.finish_vote_round(cfg, m, rnd, now, draw)
            else:
                m, round_outs = elector.finish_heart_beat_round(cfg, m, rnd, now)
            m = m.evolve(next_loop_ms=now + cfg.maintainer_sleep_ms)
            outs += round_outs
    elif m.vote_start is not None:
        m, vote_outs = elector.vote_for_quorum_responses(cfg, m, now, draw)
        outs += vote_outs
    elif cfg.enable_leader_elector and now >= m.next_loop_ms:
        m, loop_outs = elector.maintain_state(cfg, m, now, draw)
        outs += loop_outs
    return m, outs


def on_request(cfg: DLedgerConfig, m: Member, msg: Any, rpc: int, now: int) -> tuple[Member, Any, Out]:
    """Dispatch an incoming RPC to its DLedgerServer handler; reply None means 'answered later'."""
    if isinstance(msg, HeartBeatRequest):
        return server_handle_heart_beat(cfg, m, msg, now)
    if isinstance(msg, VoteRequest):
        return server_handle_vote(cfg, m, msg)
    if isinstance(msg, LeadershipTransferRequest):
        return server_handle_leadership_transfer(cfg, m, msg, rpc, now)
    raise TypeError(f"not an election request: {msg!r}")


def on_response(cfg: DLedgerConfig, m: Member, ctx: Any, peer: str, resp: Any, now: int) -> tuple[Member, Out]:
    """Complete the future of an RPC this node sent; `resp` None: the RPC failed or timed out."""
    kind = ctx[0]
    if kind == "hb":
        return elector.on_heart_beat_response(cfg, m, ctx[1], peer, resp, now), ()
    if kind == "vote":
        return elector.on_vote_response(cfg, m, ctx[1], resp, now), ()
    return elector.on_leadership_transfer_response(cfg, m, ctx[1], ctx[2], ctx[3], resp)
