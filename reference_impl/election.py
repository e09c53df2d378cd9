"""DLedger leader election and heartbeat (DLedger 0.2.6, as shipped with RocketMQ 4.9.4).

Theory of operation
-------------------
Models `MemberState`, `DLedgerLeaderElector` and the election entry points of
`DLedgerServer`, read from `io.openmessaging.storage.dledger` at tag dledger-0.2.6.
One `Member` record holds a node's MemberState fields, the elector's fields and the
state of the threads that block in Java, so that a node is one immutable value.

Roles are CANDIDATE (at start), FOLLOWER and LEADER. Terms move only forward, and only
in the candidate's own loop (`next_term`): a node that sees a higher term in a vote or
heartbeat turns CANDIDATE, answers `*_TERM_NOT_READY`, and sets
`need_increase_term_immediately` so that its next loop adopts the term.

Inputs: `on_tick` runs the node's threads that are due at `now` (the state-maintainer
loop, the preferred-leader check, a transferee's catch-up wait); the request handlers
answer RPCs; `on_response` feeds RPC replies, `None` standing for an RPC failure
(the Netty callback with no response). Time (`now`) and randomness (`draw`, a value
in [0, 2**16) standing for `Random.nextInt`) are explicit.

The state maintainer is the heart of it. `maintainState()` runs every 10 ms; a
candidate's vote round and a leader's heartbeat round block it until a latch is
counted down or the wait times out. The model keeps such a round as `VoteRound` /
`HeartBeatRound` (counters, latch, deadline) and parses it when the round ends, as
the Java thread does when `await` returns. Between two loops the thread sleeps
10 ms (`maintainer_sleep_ms`); the model fires a due condition at the exact ms it
becomes true or when that sleep ends, whichever is later (Java: at the next 10 ms
tick, so up to 10 ms later). Everything one loop iteration does is atomic here;
Java lets RPC handlers run between its synchronized blocks.

Persisted: `curr_term` and `curr_vote_for` (the `currterm` file, written by
`setCurrVoteFor` and `nextTerm`, with no fsync). Everything else is volatile;
`ledger_end_index/term` come back from the store. A restarted node is a CANDIDATE
that solicits votes at once at its persisted term.

`ledger_end_index/term` and the followers' water marks are inputs for now (the
DLedger log is a separate protocol that sets them).
"""

from __future__ import annotations

import enum
from typing import Any

from reference_impl.network import Respond, Send
from reference_impl.state import EMPTY, FrozenMap, check_fields, record

DRAW_SPAN = 1 << 16


class Role(enum.Enum):
    """MemberState.Role"""

    UNKNOWN = "UNKNOWN"
    CANDIDATE = "CANDIDATE"
    LEADER = "LEADER"
    FOLLOWER = "FOLLOWER"


class VoteResult(enum.Enum):
    """VoteResponse.RESULT, in declaration order."""

    UNKNOWN = "UNKNOWN"
    ACCEPT = "ACCEPT"
    REJECT_UNKNOWN_LEADER = "REJECT_UNKNOWN_LEADER"
    REJECT_UNEXPECTED_LEADER = "REJECT_UNEXPECTED_LEADER"
    REJECT_EXPIRED_VOTE_TERM = "REJECT_EXPIRED_VOTE_TERM"
    REJECT_ALREADY_VOTED = "REJECT_ALREADY_VOTED"
    REJECT_ALREADY_HAS_LEADER = "REJECT_ALREADY_HAS_LEADER"
    REJECT_TERM_NOT_READY = "REJECT_TERM_NOT_READY"
    REJECT_TERM_SMALL_THAN_LEDGER = "REJECT_TERM_SMALL_THAN_LEDGER"
    REJECT_EXPIRED_LEDGER_TERM = "REJECT_EXPIRED_LEDGER_TERM"
    REJECT_SMALL_LEDGER_END_INDEX = "REJECT_SMALL_LEDGER_END_INDEX"
    REJECT_TAKING_LEADERSHIP = "REJECT_TAKING_LEADERSHIP"


class ParseResult(enum.Enum):
    """VoteResponse.ParseResult"""

    WAIT_TO_REVOTE = "WAIT_TO_REVOTE"
    REVOTE_IMMEDIATELY = "REVOTE_IMMEDIATELY"
    PASSED = "PASSED"
    WAIT_TO_VOTE_NEXT = "WAIT_TO_VOTE_NEXT"


class Code(enum.IntEnum):
    """DLedgerResponseCode (0.2.6, plus PUSH_REQUEST_IS_FULL of 0.3.x); the log protocols use the rest."""

    UNKNOWN = -1
    SUCCESS = 200
    TIMEOUT = 300
    METADATA_ERROR = 301
    NETWORK_ERROR = 302
    UNSUPPORTED = 303
    UNKNOWN_GROUP = 400
    UNKNOWN_MEMBER = 401
    UNEXPECTED_MEMBER = 402
    EXPIRED_TERM = 403
    NOT_LEADER = 404
    NOT_FOLLOWER = 405
    INCONSISTENT_STATE = 406
    INCONSISTENT_TERM = 407
    INCONSISTENT_INDEX = 408
    INCONSISTENT_LEADER = 409
    INDEX_OUT_OF_RANGE = 410
    UNEXPECTED_ARGUMENT = 411
    REPEATED_REQUEST = 412
    REPEATED_PUSH = 413
    DISK_ERROR = 414
    DISK_FULL = 415
    TERM_NOT_READY = 416
    FALL_BEHIND_TOO_MUCH = 417
    TAKE_LEADERSHIP_FAILED = 418
    INDEX_LESS_THAN_LOCAL_BEGIN = 419
    REQUEST_WITH_EMPTY_BODYS = 420
    PUSH_REQUEST_IS_FULL = 421  # 0.3.x only
    INTERNAL_ERROR = 500
    TERM_CHANGED = 501
    WAIT_QUORUM_ACK_TIMEOUT = 502
    LEADER_PENDING_FULL = 503
    ILLEGAL_MEMBER_STATE = 504
    LEADER_NOT_READY = 505
    LEADER_TRANSFERRING = 506


@record
class DLedgerConfig:
    """DLedgerConfig defaults (0.2.6) plus the constants hard-coded in the Java classes."""

    group: str = "default"
    peers: tuple[str, ...] = ("n0",)  # DLedgerConfig.peers, ids only (addresses do not matter here)
    heart_beat_time_interval_ms: int = 2000
    max_heart_beat_leak: int = 3
    min_vote_interval_ms: int = 300
    max_vote_interval_ms: int = 1000
    enable_leader_elector: bool = True
    preferred_leader_ids: str | None = None  # ";"-separated; RocketMQ: MessageStoreConfig.preferredLeaderId, null
    min_take_leadership_vote_interval_ms: int = 30
    max_take_leadership_vote_interval_ms: int = 100
    max_leadership_transfer_wait_index: int = 1000
    leadership_transfer_wait_timeout: int = 1000
    rpc_timeout_ms: int = 3000  # DLedgerRpcNettyService: invokeAsync(..., 3000, ...)
    maintainer_sleep_ms: int = 10  # StateMaintainer.doWork: sleep(10)
    check_preferred_leader_interval_ms: int = 1000  # DLedgerServer.startup: scheduleAtFixedRate(1000, 1000)

    def __attrs_post_init__(self) -> None:
        check_fields(self)
        positive = ("heart_beat_time_interval_ms", "max_heart_beat_leak", "min_vote_interval_ms",
                    "max_vote_interval_ms", "min_take_leadership_vote_interval_ms",
                    "max_take_leadership_vote_interval_ms", "rpc_timeout_ms", "maintainer_sleep_ms",
                    "check_preferred_leader_interval_ms")
        for name in positive:
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        # Random#nextInt(max - min) throws unless the bound is positive.
        if self.min_vote_interval_ms >= self.max_vote_interval_ms:
            raise ValueError("min_vote_interval_ms must be below max_vote_interval_ms")
        if self.min_take_leadership_vote_interval_ms >= self.max_take_leadership_vote_interval_ms:
            raise ValueError("min_take_leadership_vote_interval_ms must be below max_take_leadership_vote_interval_ms")
        if not self.peers or len(set(self.peers)) != len(self.peers):
            raise ValueError("peers must be distinct ids")

    def peer_size(self) -> int:
        """MemberState#peerSize"""
        return len(self.peers)

    def is_quorum(self, num: int) -> bool:
        """MemberState#isQuorum: num >= peerSize / 2 + 1"""
        return num >= len(self.peers) // 2 + 1

    def is_peer_member(self, node_id: str | None) -> bool:
        """MemberState#isPeerMember"""
        return node_id is not None and node_id in self.peers

    def preferred(self) -> tuple[str, ...]:
        return tuple(self.preferred_leader_ids.split(";")) if self.preferred_leader_ids is not None else ()


# --- messages (protocol/*.java); `remote_id` is the addressee, as in RequestOrResponse ---


@record
class VoteRequest:
    group: str
    remote_id: str
    leader_id: str  # the candidate
    term: int
    ledger_end_index: int = -1
    ledger_end_term: int = -1


@record
class VoteResponse:
    term: int = -1
    vote_result: VoteResult = VoteResult.UNKNOWN
    code: Code = Code.SUCCESS


@record
class HeartBeatRequest:
    group: str
    local_id: str
    remote_id: str
    leader_id: str
    term: int


@record
class HeartBeatResponse:
    code: Code = Code.SUCCESS
    term: int = -1


@record
class LeadershipTransferRequest:
    group: str
    remote_id: str
    term: int
    transfer_id: str | None
    transferee_id: str
    take_leadership_ledger_index: int = -1
    leader_id: str | None = None


@record
class LeadershipTransferResponse:
    code: Code = Code.SUCCESS
    term: int = -1


# --- observations: what a transition reports to the world (for ghost variables and timelines) ---


@record
class RoleChanged:
    """DLedgerLeaderElector#handleRoleChange fired (also when a candidate re-enters candidate)."""

    term: int
    role: Role
    leader: str | None


@record
class VoteGranted:
    """handleVote answered ACCEPT and persisted currVoteFor."""

    term: int
    candidate: str


@record
class VoteParsed:
    """The candidate's vote round ended and was parsed."""

    term: int
    result: ParseResult
    accepted: int
    valid: int
    not_ready: int
    bigger_ledger: int
    already_has_leader: bool


@record
class FollowerTimeout:
    """maintainAsFollower: no heartbeat from `leader` for maxHeartBeatLeak x interval."""

    term: int
    leader: str | None


@record
class LeaderStepDown:
    """sendHeartbeats: the round missed a quorum and the leader turned candidate."""

    term: int
    reason: str  # "max_term", "inconsistent_leader", "lease"


@record
class TransferDone:
    """A leadership transfer RPC came back to the old leader."""

    transferee: str
    code: Code


# --- node state ---


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
    # DLedgerEntryPusher#getPeerWaterMark(currTerm, peer) for the preferred-leader check (input)
    peer_water_marks: FrozenMap = EMPTY
    # DLedgerServer's scheduled checkPreferredLeader, and the transfer it blocks on
    next_check_preferred_ms: int = 0
    transfer_in_flight: bool = False
    take_leadership: TakeLeadershipWait | None = None


Out = tuple  # outputs: Send / Respond / observations


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


def elapsed(now: int, since: int) -> int:
    """DLedgerUtils#elapsed. Java's clock is epoch milliseconds, so the -1 that marks
    "never" lies decades back; the model's clock starts at 0, so -1 is mapped explicitly."""
    return now - since if since >= 0 else LONG_AGO_MS


LONG_AGO_MS = 1 << 40


def rand_int(draw: int, bound: int) -> int:
    """Random#nextInt(bound), fed from a drawn value in [0, DRAW_SPAN)."""
    return draw * bound >> 16


# --- MemberState ---


def next_term(m: Member) -> Member:
    """MemberState#nextTerm: jump to knownMaxTermInGroup if larger (no +1), else +1; clear the vote."""
    assert m.role is Role.CANDIDATE, "ILLEGAL_MEMBER_STATE"
    term = m.known_max_term_in_group if m.known_max_term_in_group > m.curr_term else m.curr_term + 1
    return m.evolve(curr_term=term, curr_vote_for=None)


def update_ledger_index_and_term(m: Member, index: int, term: int) -> Member:
    """MemberState#updateLedgerIndexAndTerm (called by the store after append/truncate/recover)."""
    return m.evolve(ledger_end_index=index, ledger_end_term=term)


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


def server_handle_vote(cfg: DLedgerConfig, m: Member, req: VoteRequest) -> tuple[Member, VoteResponse, Out]:
    """DLedgerServer#handleVote: remoteId and group guards, then the elector (self=false).
    A guard failure answers with the code and voteResult UNKNOWN (copyBaseInfo keeps the request's term)."""
    if req.remote_id != m.self_id:
        return m, VoteResponse(term=req.term, code=Code.UNKNOWN_MEMBER), ()
    if req.group != cfg.group:
        return m, VoteResponse(term=req.term, code=Code.UNKNOWN_GROUP), ()
    return handle_vote(cfg, m, req, self_vote=False)


def server_handle_heart_beat(cfg: DLedgerConfig, m: Member, req: HeartBeatRequest, now: int
                             ) -> tuple[Member, HeartBeatResponse, Out]:
    """DLedgerServer#handleHeartBeat: remoteId and group guards, then the elector."""
    if req.remote_id != m.self_id:
        return m, HeartBeatResponse(code=Code.UNKNOWN_MEMBER, term=req.term), ()
    if req.group != cfg.group:
        return m, HeartBeatResponse(code=Code.UNKNOWN_GROUP, term=req.term), ()
    return handle_heart_beat(cfg, m, req, now)


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
             timeout_ms=cfg.rpc_timeout_ms)
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
    """The rest of sendHeartbeats once beatLatch.await returns."""
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
    """DLedgerLeaderElector#maintainAsCandidate, up to voteLatch.await."""
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
    return vote_for_quorum_responses(cfg, m, now, draw)


def vote_for_quorum_responses(cfg: DLedgerConfig, m: Member, now: int, draw: int) -> tuple[Member, Out]:
    """DLedgerLeaderElector#voteForQuorumResponses plus the round set-up of maintainAsCandidate:
    the self-vote is handled synchronously, the others are sent; then wait 2000 + rand(maxVoteIntervalMs)."""
    term, seq = m.curr_term, m.round_seq + 1
    m = m.evolve(round_seq=seq, round=VoteRound(
        seq=seq, term=term, known_max_term_in_group=term,
        deadline=now + 2000 + rand_int(draw, cfg.max_vote_interval_ms)))
    outs: Out = ()
    for peer in cfg.peers:
        req = VoteRequest(group=cfg.group, remote_id=peer, leader_id=m.self_id, term=term,
                          ledger_end_index=m.ledger_end_index, ledger_end_term=m.ledger_end_term)
        if peer == m.self_id:
            m, resp, vote_outs = handle_vote(cfg, m, req, self_vote=True)
            m = on_vote_response(cfg, m, seq, resp, now)
            outs += vote_outs
        else:
            outs += (Send(dst=peer, msg=req, ctx=("vote", seq), timeout_ms=cfg.rpc_timeout_ms),)
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
    m, _, outs = handle_leadership_transfer(cfg, m, m.curr_term, best)
    return m, outs


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
                          timeout_ms=cfg.rpc_timeout_ms),)


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
        return handle_leadership_transfer(cfg, m, req.term, req.transferee_id, admin_rpc=rpc)
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
    return handle_take_leadership(cfg, m, now)


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


# --- the node as the world sees it ---


def wake_at(cfg: DLedgerConfig, m: Member) -> int:
    """The earliest time at which one of the node's threads has something to do (-1: never)."""
    wake = -1
    rnd = m.round
    if rnd is not None:
        wake = rnd.released_at if rnd.released_at >= 0 else rnd.deadline
    elif cfg.enable_leader_elector:
        if m.role is Role.LEADER:
            due = _due(m.last_send_heart_beat_time, cfg.heart_beat_time_interval_ms)
        elif m.role is Role.FOLLOWER:
            due = _due(m.last_leader_heart_beat_time,
                       max(2, cfg.max_heart_beat_leak) * cfg.heart_beat_time_interval_ms)
        elif m.need_increase_term_immediately:
            due = 0
        else:
            due = m.next_time_to_request_vote
        wake = max(due, m.next_loop_ms)
    if cfg.preferred_leader_ids is not None and m.role is Role.LEADER and not m.transfer_in_flight:
        wake = m.next_check_preferred_ms if wake < 0 else min(wake, m.next_check_preferred_ms)
    if m.take_leadership is not None and m.take_leadership.waiting_for_index:
        due = (m.take_leadership.started + cfg.leadership_transfer_wait_timeout + 1
               if m.take_leadership.request.take_leadership_ledger_index > m.ledger_end_index else 0)
        wake = due if wake < 0 else min(wake, due)
    return wake


def _due(since: int, interval: int) -> int:
    """First ms at which elapsed(now, since) > interval."""
    return since + interval + 1 if since >= 0 else 0


def on_tick(cfg: DLedgerConfig, m: Member, now: int, draw: int) -> tuple[Member, Out]:
    """Run every thread of the node that is due at `now`: the transferee's wait, the
    preferred-leader check, the state maintainer (ending a round, or one loop)."""
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
        if now >= (rnd.released_at if rnd.released_at >= 0 else rnd.deadline):
            if isinstance(rnd, VoteRound):
                m, round_outs = finish_vote_round(cfg, m, rnd, now, draw)
            else:
                m, round_outs = finish_heart_beat_round(cfg, m, rnd, now)
            m = m.evolve(next_loop_ms=now + cfg.maintainer_sleep_ms)
            outs += round_outs
    elif cfg.enable_leader_elector and now >= m.next_loop_ms:
        m, loop_outs = maintain_state(cfg, m, now, draw)
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
        return on_heart_beat_response(cfg, m, ctx[1], peer, resp, now), ()
    if kind == "vote":
        return on_vote_response(cfg, m, ctx[1], resp, now), ()
    return on_leadership_transfer_response(cfg, m, ctx[1], ctx[2], ctx[3], resp)
