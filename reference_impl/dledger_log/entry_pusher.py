"""The leader side of DLedger log replication (DLedgerEntryPusher, DLedgerServer#handleAppend, 0.2.6).

Theory of operation
-------------------
A leader appends a client's entry to its own store and parks a future for it in
`pendingAppendResponsesByTerm[term][index]`; the client learns the result when that
future completes. One `EntryDispatcher` thread per follower pushes entries, and the
`QuorumAckChecker` thread turns the followers' acknowledged indexes (the water marks)
into the committed index and completes the futures.

Each dispatcher is a small machine over PushEntryRequest types:

    COMPARE --(follower holds the leader's entry at its end)--> APPEND
    COMPARE --(follower has a dirty tail, or no overlap)--> TRUNCATE --(ok)--> APPEND
    APPEND --(INCONSISTENT_STATE reply, exception)--> COMPARE

Every new leadership (a new term) starts every dispatcher in COMPARE. COMPARE and
TRUNCATE block the thread on the reply (`responseFuture.get(3, SECONDS)`); an error, a
failed push or those 3 s passing send it to sleep 500 ms and back to COMPARE. In APPEND
the thread pushes every entry it has not pushed yet, pushes a COMMIT (the committed
index alone) when it has pushed nothing for a second, and re-pushes the index after the
follower's water mark when that push is older than maxPushTimeOutMs.

Water marks are kept per term, exactly as the Java code keys them: a SUCCESS reply
raises `peerWaterMarksByTerm[reply.term][peer]`, where the reply's term is the
request's; COMPARE and TRUNCATE set the follower's mark in the leader's term to the
compared or truncated index, even if that entry is from an older term. The checker
takes the median of the current term's marks (the leader's own included) as the
quorum index and commits it, with no check of the entry's term (Raft's Figure 8,
research section 2.8), unless the version profile is "fixed" (DLedger 0.4.0's rule).

A future that waited maxWaitAckTimeMs (2500 ms) completes WAIT_QUORUM_ACK_TIMEOUT,
and one of an older term TERM_CHANGED; in both cases the entry stays in the log and
may still be committed. The checker only runs while the node is leader, so futures
of a deposed leader wait until it leads again.

Each of these threads is an actor of its own (reference_impl.dledger_log.server): one
world step (`Tick(node, thread)`) is one pass of its loop, up to where the Java thread
blocks or waits. A thread blocked on a future keeps that as state (`Dispatcher.waiting`):
the reply (or the RPC's failure) completes the future, and the thread's next step goes
on from there. `ShutdownAbleThread#wakeup` is an enabling condition: the QuorumAckChecker
woken by an APPEND acknowledgement or `EntryDispatcher#changeState(APPEND)`
(`Pusher.checker_woken`) runs at once, where its 1 ms `waitForRunning` poll would
notice the same work up to 1 ms later. The dispatchers' loop and callbacks are in
reference_impl.dledger_log.entry_dispatcher.
"""

from __future__ import annotations

import enum
from typing import Any

from reference_impl.core.state import EMPTY, FrozenMap, record
from reference_impl.dledger_log import store as st
from reference_impl.election.member_state import Member
from reference_impl.election.records import Code, Role, elapsed


class PushType(enum.Enum):
    """PushEntryRequest.Type"""

    APPEND = "APPEND"
    COMMIT = "COMMIT"
    COMPARE = "COMPARE"
    TRUNCATE = "TRUNCATE"


# --- messages (protocol/*.java) ---


@record
class AppendEntryRequest:
    group: str
    remote_id: str
    body: Any


@record
class AppendEntryResponse:
    code: Code = Code.SUCCESS
    index: int = -1
    pos: int = -1
    term: int = -1
    leader_id: str | None = None


REQUEST_TERM = -1  # RequestOrResponse.term of an AppendEntryRequest: neither DLedgerClient nor DLedgerCommitLog sets it


@record
class PushEntryRequest:
    group: str
    remote_id: str
    leader_id: str
    term: int
    type: PushType
    entry: st.Entry | None = None
    commit_index: int = -1
    seq: tuple[int, int] = (0, 0)  # (leader's start time, per-follower count): the order a connection keeps


@record
class PushEntryResponse:
    code: Code = Code.SUCCESS
    term: int = -1
    index: int | None = None  # the request's first entry index (null for COMMIT)
    begin_index: int = -1
    end_index: int = -1


# --- observations ---


@record
class AppendResult:
    """An append future completed: what the client of handleAppend sees, the fields of the
    AppendEntryResponse it completed with (`code`, `index`, `term`, `pos`, `leader_id`, as
    the Java code that completes it sets them: `response_of`). `ref` is the body it appended."""

    code: Code
    index: int
    term: int
    pos: int
    ref: Any
    rpc: int = 0  # the client's APPEND RPC to answer (0: a local caller, e.g. DLedgerCommitLog)
    future_pos: int = -1  # AppendFuture#getPos: the entry's position, known since the append
    leader_id: str | None = None


def response_of(r: AppendResult) -> AppendEntryResponse:
    """The AppendEntryResponse an append future completed with (group left out)."""
    return AppendEntryResponse(code=r.code, index=r.index, pos=r.pos, term=r.term, leader_id=r.leader_id)


def failed_push_response(ctx: tuple) -> PushEntryResponse:
    """DLedgerRpcNettyService#push when the RPC fails (no response, timeout or a send error): a
    PushEntryResponse with copyBaseInfo(request) (its term) and code NETWORK_ERROR; index null,
    beginIndex and endIndex never set (0). `ctx` is the push's ("push", type, peer, seq, term)."""
    return PushEntryResponse(code=Code.NETWORK_ERROR, term=ctx[4], index=None, begin_index=0, end_index=0)


# --- state ---


@record
class PendingAppend:
    """An AppendFuture parked in pendingAppendResponsesByTerm."""

    pos: int
    created_ms: int
    ref: Any
    rpc: int = 0
    done: bool = False  # completed by checkResponseFuturesTimeout, which leaves it in the map


@record
class Dispatcher:
    """EntryDispatcher's fields, and what its thread is blocked on."""

    peer: str
    type: PushType = PushType.COMPARE
    compare_index: int = -1
    write_index: int = -1
    term: int = -1
    leader_id: str | None = None
    pending_map: FrozenMap = EMPTY  # index -> ms the APPEND was pushed
    last_push_commit_ms: int = -1
    last_check_leak_ms: int = 0
    # The thread blocked in responseFuture.get(3, SECONDS) of doCompare (`blocked` COMPARE) or
    # doTruncate (TRUNCATE): the push's seq (0: not blocked), until when get waits, and the
    # response the future completed with (None: not yet); the thread goes on at whichever comes first.
    waiting: int = 0
    blocked: PushType | None = None
    wait_until: int = -1
    response: PushEntryResponse | None = None
    truncate_index: int = -1
    sleep_until: int = -1  # after an exception: DLedgerUtils.sleep(500)
    seq: int = 0


@record
class Pusher:
    water_marks: FrozenMap = EMPTY  # term -> tuple of indexes, one per peer in DLedgerConfig.peers order
    pending: FrozenMap = EMPTY  # term -> FrozenMap(index -> PendingAppend)
    dispatchers: tuple[Dispatcher, ...] = ()
    last_quorum_index: int = -1  # QuorumAckChecker.lastQuorumIndex (kept across terms, as in Java)
    last_check_leak_ms: int = 0  # QuorumAckChecker.lastCheckLeakTimeMs
    # QuorumAckChecker's hasNotified, or its loop going on without a wait (it acknowledged
    # futures): its next pass comes at once rather than after its 1 ms waitForRunning poll.
    checker_woken: bool = False
    epoch: int = 0  # when the node started: its connections are new then


def new_pusher(cfg: st.NodeConfig, self_id: str, now: int) -> Pusher:
    """DLedgerEntryPusher's constructor: one dispatcher per peer; thread fields start at `now`."""
    return Pusher(dispatchers=tuple(Dispatcher(peer=p, last_check_leak_ms=now)
                                    for p in cfg.dledger.peers if p != self_id),
                  last_check_leak_ms=now, epoch=now)


Out = tuple


# --- water marks and pending futures ---


def peer_water_mark(cfg: st.NodeConfig, p: Pusher, term: int, peer: str) -> int:
    """DLedgerEntryPusher#getPeerWaterMark (an absent term reads as all -1)."""
    marks = p.water_marks.get(term)
    return -1 if marks is None else marks[cfg.dledger.peers.index(peer)]


def update_peer_water_mark(cfg: st.NodeConfig, p: Pusher, term: int, peer: str, index: int) -> Pusher:
    """DLedgerEntryPusher#updatePeerWaterMark: raise [term][peer] to index (a new term starts at -1)."""
    peers = cfg.dledger.peers
    marks = p.water_marks.get(term)
    if marks is None:
        marks = (-1,) * len(peers)
    k = peers.index(peer)
    if marks[k] >= index:
        return p if term in p.water_marks else p.evolve(water_marks=p.water_marks.set(term, marks))
    return p.evolve(water_marks=p.water_marks.set(term, marks[:k] + (index,) + marks[k + 1:]))


def quorum_index(p: Pusher, term: int) -> int:
    """sortedWaterMarks (descending).get(size / 2): for 3 peers the 2nd largest."""
    marks = p.water_marks.get(term)
    if marks is None:
        return -1
    return sorted(marks, reverse=True)[len(marks) // 2]


def is_pending_full(cfg: st.NodeConfig, p: Pusher, term: int) -> bool:
    """DLedgerEntryPusher#isPendingFull: size() > maxPendingRequestsNum (so one more than the limit fits)."""
    return len(p.pending.get(term, EMPTY)) > cfg.log.max_pending_requests_num


def wait_ack(cfg: st.NodeConfig, p: Pusher, m: Member, entry: st.Entry, ref: Any, now: int, rpc: int = 0
             ) -> tuple[Pusher, AppendResult | None]:
    """DLedgerEntryPusher#waitAck: the leader's own mark, then a parked future (in 0.2.6 a
    single-node group answers SUCCESS at once, before anything is committed or flushed)."""
    p = update_peer_water_mark(cfg, p, entry.term, m.self_id, entry.index)
    if cfg.log.v026 and len(cfg.dledger.peers) == 1:
        return p, AppendResult(code=Code.SUCCESS, index=entry.index, term=entry.term, pos=entry.pos, ref=ref,
                               rpc=rpc, future_pos=entry.pos, leader_id=m.self_id)
    futures = p.pending.get(entry.term, EMPTY)
    futures = futures.set(entry.index, PendingAppend(pos=entry.pos, created_ms=now, ref=ref, rpc=rpc))
    return p.evolve(pending=p.pending.set(entry.term, futures)), None


def handle_append(cfg: st.NodeConfig, m: Member, s: st.Store, p: Pusher, req: AppendEntryRequest, now: int,
                  hook: Any = None, rpc: int = 0, ref: Any = None) -> tuple[st.Store, Pusher, int, AppendResult | None]:
    """DLedgerServer#handleAppend: guards, the pending-full check, appendAsLeader, waitAck.

    Returns the AppendFuture as (pos, result): pos -1 with a result is a completed
    rejection (every DLedgerException, and LEADER_PENDING_FULL); a result with pos is an
    immediate SUCCESS (0.2.6 single node); no result means the future is parked. `ref`
    names the caller's request in the results (default: the body). A DLedgerException's
    response is copyBaseInfo(request) (the request's term, -1: `REQUEST_TERM`) with the
    member's leaderId; LEADER_PENDING_FULL carries currTerm and the node's own id."""
    dl = cfg.dledger
    ref = req.body if ref is None else ref

    def rejected(code: Code) -> tuple[st.Store, Pusher, int, AppendResult]:
        return s, p, -1, AppendResult(code=code, index=-1, term=REQUEST_TERM, pos=-1, ref=ref, rpc=rpc,
                                      leader_id=m.leader_id)

    if req.remote_id != m.self_id:
        return rejected(Code.UNKNOWN_MEMBER)
    if req.group != dl.group:
        return rejected(Code.UNKNOWN_GROUP)
    if m.role is not Role.LEADER:
        return rejected(Code.NOT_LEADER)
    if m.transferee is not None:
        return rejected(Code.LEADER_TRANSFERRING)
    if is_pending_full(cfg, p, m.curr_term):
        return s, p, -1, AppendResult(code=Code.LEADER_PENDING_FULL, index=-1, term=m.curr_term, pos=-1, ref=ref,
                                      rpc=rpc, leader_id=m.self_id)
    try:
        s, entry = st.append_as_leader(cfg.log, s, m, req.body, now, hook)
    except st.DLedgerError as e:
        return rejected(e.code)
    p, done = wait_ack(cfg, p, m, entry, ref, now, rpc)
    return s, p, entry.pos, done


# --- QuorumAckChecker ---


def checker_wake_at(cfg: st.NodeConfig, m: Member, p: Pusher) -> int:
    """When the QuorumAckChecker loop has something to do (-1: never, i.e. not leader; 0: now)."""
    if m.role is not Role.LEADER:
        return -1
    term = m.curr_term
    if any(t != term for t in p.pending) or any(t != term for t in p.water_marks) or term not in p.water_marks:
        return 0
    q = quorum_index(p, term)
    if q != p.last_quorum_index:
        return 0
    wake = p.last_check_leak_ms + cfg.log.leak_check_interval_ms + 1
    futures = p.pending.get(term)
    if futures:
        i = q + 1
        f = futures.get(i)
        while f is not None and f.done:
            i += 1
            f = futures.get(i)
        if f is not None:
            wake = min(wake, f.created_ms + cfg.log.max_wait_ack_time_ms)
    return wake


def checker_slack(cfg: st.NodeConfig, p: Pusher, wake: int) -> int:
    """How late the QuorumAckChecker may notice work due at `wake` (Java timing): at once when it
    was woken (`wakeup`) or its loop goes on without a wait, else within its waitForRunning(1)."""
    return 0 if wake == 0 and p.checker_woken else cfg.log.thread_wait_ms


def wake_checker(p: Pusher) -> Pusher:
    """QuorumAckChecker#wakeup (ShutdownAbleThread): the next waitForRunning returns at once. (A
    role change of its node takes the notice away: server.idle_on_role_change.)"""
    return p if p.checker_woken else p.evolve(checker_woken=True)


def quorum_ack_checker(cfg: st.NodeConfig, m: Member, s: st.Store, p: Pusher, now: int
                       ) -> tuple[st.Store, Pusher, Out]:
    """QuorumAckChecker#doWork (no state machine registered, RocketMQ's case): one pass. The loop
    goes on at once when it acknowledged futures, and waits (waitForRunning(1)) when it did not."""
    if m.role is not Role.LEADER:
        return s, p, ()
    term = m.curr_term
    outs: list = []
    pending, marks = p.pending, p.water_marks
    if term not in pending:
        pending = pending.set(term, EMPTY)
    if term not in marks:
        marks = marks.set(term, (-1,) * len(cfg.dledger.peers))
    if len(pending) > 1:
        for t in [t for t in pending if t != term]:
            for index, f in sorted(pending[t].items()):
                if not f.done:  # the response's term is never set; its leaderId is the member's (this leader)
                    outs.append(AppendResult(code=Code.TERM_CHANGED, index=index, term=REQUEST_TERM, pos=-1, ref=f.ref,
                                             rpc=f.rpc, future_pos=f.pos, leader_id=m.leader_id))
            pending = pending.without(t)
    if len(marks) > 1:
        for t in [t for t in marks if t != term]:
            marks = marks.without(t)
    p = p.evolve(pending=pending, water_marks=marks)
    q = quorum_index(p, term)
    commit = q
    if cfg.log.current_term_commit:
        e = st.entry_at(s, q)
        if e is None or e.term != term:
            commit = -1  # DLedger 0.4.0: only an entry of the current term is committed by counting
    s = st.update_committed_index(cfg.log, s, term, term, commit, now)
    futures = pending[term]
    need_check, ack_num = False, 0
    i = q
    while i > p.last_quorum_index:
        f = futures.get(i)
        if f is None:
            need_check = True
            break
        futures = futures.without(i)
        if not f.done:
            outs.append(AppendResult(code=Code.SUCCESS, index=i, term=term, pos=f.pos, ref=f.ref, rpc=f.rpc,
                                     future_pos=f.pos, leader_id=m.self_id))
        ack_num += 1
        i -= 1
    if ack_num == 0:
        futures, timed_out = check_response_futures_timeout(cfg, futures, q + 1, term, now, m.self_id)
        outs += timed_out
    leak = p.last_check_leak_ms
    if elapsed(now, leak) > cfg.log.leak_check_interval_ms or need_check:
        p = update_peer_water_mark(cfg, p.evolve(pending=p.pending.set(term, futures)), term, m.self_id,
                                   s.end_index)
        futures, succeeded = check_response_futures_elapsed(futures, q if cfg.log.v026 else q + 1, term, m.self_id)
        outs += succeeded
        leak = now
    p = p.evolve(pending=p.pending.set(term, futures), last_quorum_index=q, last_check_leak_ms=leak,
                 checker_woken=ack_num > 0)
    return s, p, tuple(outs)


def check_response_futures_timeout(cfg: st.NodeConfig, futures: FrozenMap, begin: int, term: int, now: int,
                                   self_id: str | None = None) -> tuple[FrozenMap, list]:
    """DLedgerEntryPusher#checkResponseFuturesTimeout: from `begin` up, complete consecutive
    timed-out futures with WAIT_QUORUM_ACK_TIMEOUT (they stay in the map)."""
    outs = []
    i = begin
    while True:
        f = futures.get(i)
        if f is None or now - f.created_ms < cfg.log.max_wait_ack_time_ms:
            break
        if not f.done:
            outs.append(AppendResult(code=Code.WAIT_QUORUM_ACK_TIMEOUT, index=i, term=term, pos=-1, ref=f.ref, rpc=f.rpc,
                                     future_pos=f.pos, leader_id=self_id))
            futures = futures.set(i, f.evolve(done=True))
        i += 1
    return futures, outs


def check_response_futures_elapsed(futures: FrozenMap, end: int, term: int, self_id: str | None = None
                                   ) -> tuple[FrozenMap, list]:
    """DLedgerEntryPusher#checkResponseFuturesElapsed: futures below `end` complete SUCCESS (0.2.6 passes
    the quorum index; 0.3.x compares `<= endIndex`, which its caller passes as the quorum index + 1)."""
    outs = []
    for index in sorted(i for i in futures if i < end):
        f = futures[index]
        if not f.done:
            outs.append(AppendResult(code=Code.SUCCESS, index=index, term=term, pos=f.pos, ref=f.ref, rpc=f.rpc,
                                     future_pos=f.pos, leader_id=self_id))
        futures = futures.without(index)
    return futures, outs
