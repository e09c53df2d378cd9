"""A DLedger member's state (MemberState and the elector's fields, 0.2.6) as one record.

`Member` holds MemberState's fields (persisted: `curr_term` and `curr_vote_for`, the
`currterm` file; the rest volatile), the elector's fields, and the state of the threads
that block in Java: a candidate's vote round and a leader's heartbeat round are kept as
`VoteRound` / `HeartBeatRound` until their latch is counted down or their wait ends, and a
candidate's loop that has moved its term under the lock but not yet asked for votes (the
self-vote included) as `VoteStart`.
"""

from __future__ import annotations

from reference_impl.core.state import EMPTY, FrozenMap, record
from reference_impl.election.records import LeadershipTransferRequest, ParseResult, Role


@record
class VoteRound:
    """A maintainAsCandidate round blocked in voteLatch.await."""

    seq: int
    term: int
    deadline: int  # start + 2000 + rand(maxVoteIntervalMs)
    known_max_term_in_group: int
    all_num: int = 0
    valid_num: int = 0
    accepted_num: int = 0
    not_ready_term_num: int = 0
    bigger_ledger_num: int = 0
    already_has_leader: bool = False
    released_at: int = -1  # when the latch was counted down; -1 while it is not


@record
class HeartBeatRound:
    """A sendHeartbeats round blocked in beatLatch.await."""

    seq: int
    term: int
    deadline: int  # start + heartBeatTimeIntervalMs
    all_num: int = 1
    succ_num: int = 1
    not_ready_num: int = 0
    max_term: int = -1
    inconsist_leader: bool = False
    released_at: int = -1


@record
class VoteStart:
    """A maintainAsCandidate iteration between its locked part and voteForQuorumResponses:
    the term and the ledger ends it read under the MemberState lock. Java releases the lock
    there, so a handler thread may take it first (grant another candidate's request for the
    same term, follow a leader's heartbeat), and the self-vote takes it again afterwards."""

    term: int
    ledger_end_index: int
    ledger_end_term: int


@record
class TakeLeadershipWait:
    """A transferee's RPC thread: catching up to the leader's index, or a pending
    TakeLeadershipTask future; `rpc` is the LEADERSHIP_TRANSFER request to answer."""

    rpc: int
    request: LeadershipTransferRequest
    started: int
    waiting_for_index: bool


@record
class Member:
    self_id: str
    # MemberState, persisted (currterm file)
    curr_term: int = 0
    curr_vote_for: str | None = None
    # MemberState, volatile
    role: Role = Role.CANDIDATE
    leader_id: str | None = None
    ledger_end_index: int = -1
    ledger_end_term: int = -1
    known_max_term_in_group: int = -1
    peers_live_table: FrozenMap = EMPTY
    transferee: str | None = None
    term_to_take_leadership: int = -1
    # DLedgerLeaderElector, volatile
    last_leader_heart_beat_time: int = -1
    last_send_heart_beat_time: int = -1
    last_succ_heart_beat_time: int = -1
    next_time_to_request_vote: int = -1
    need_increase_term_immediately: bool = False
    last_parse_result: ParseResult = ParseResult.WAIT_TO_REVOTE
    # the StateMaintainer thread: when it may run next, and the round it is blocked in
    next_loop_ms: int = 0
    round: VoteRound | HeartBeatRound | None = None
    round_seq: int = 0
    vote_start: VoteStart | None = None  # maintainAsCandidate between nextTerm and voteForQuorumResponses
    # DLedgerEntryPusher#getPeerWaterMark(currTerm, peer) for the preferred-leader check (input)
    peer_water_marks: FrozenMap = EMPTY
    # DLedgerServer's scheduled checkPreferredLeader, and the transfer it blocks on
    next_check_preferred_ms: int = 0
    transfer_in_flight: bool = False
    take_leadership: TakeLeadershipWait | None = None


# --- MemberState ---


def next_term(m: Member) -> Member:
    """MemberState#nextTerm: jump to knownMaxTermInGroup if larger (no +1), else +1; clear the vote."""
    assert m.role is Role.CANDIDATE, "ILLEGAL_MEMBER_STATE"
    term = m.known_max_term_in_group if m.known_max_term_in_group > m.curr_term else m.curr_term + 1
    return m.evolve(curr_term=term, curr_vote_for=None)


def update_ledger_index_and_term(m: Member, index: int, term: int) -> Member:
    """MemberState#updateLedgerIndexAndTerm (called by the store after append/truncate/recover)."""
    return m.evolve(ledger_end_index=index, ledger_end_term=term)
