"""DLedger's vocabulary (0.2.6): roles, result codes, the config, messages and observations.

`Code` is DLedgerResponseCode, which the log protocols (dledger_log, dledger_commitlog)
answer with too. Messages mirror `io.openmessaging.storage.dledger.protocol`, with
`remote_id` the addressee as in RequestOrResponse; observations are what a transition
reports to the world (for ghost variables and timelines). The DLedgerUtils helpers the
elector and the log share are at the end.
"""

from __future__ import annotations

import enum

from reference_impl.core.state import check_fields, record

Out = tuple  # a transition's outputs: Send / Respond / observations


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


# --- DLedgerUtils ---


def elapsed(now: int, since: int) -> int:
    """DLedgerUtils#elapsed. Java's clock is epoch milliseconds, so the -1 that marks
    "never" lies decades back; the model's clock starts at 0, so -1 is mapped explicitly."""
    return now - since if since >= 0 else LONG_AGO_MS


LONG_AGO_MS = 1 << 40


def rand_int(draw: int, bound: int) -> int:
    """Random#nextInt(bound), fed from a drawn value in [0, DRAW_SPAN)."""
    return draw * bound >> 16
