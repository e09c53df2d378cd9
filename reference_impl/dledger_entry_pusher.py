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
TRUNCATE block the thread on the reply (3 s); an error sends it to sleep 500 ms and
back to COMPARE. In APPEND the thread pushes every entry it has not pushed yet, pushes
a COMMIT (the committed index alone) when it has pushed nothing for a second, and
re-pushes the index after the follower's water mark when that push is older than
maxPushTimeOutMs.

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

All threads of a node run inside one world step (`Tick`): each is modelled as the
work its loop does when it is due, and a thread blocked on a future keeps that as
state (`Dispatcher.waiting`) until the reply (or the RPC's failure) arrives.
"""

from __future__ import annotations

import enum
from typing import Any

from reference_impl import dledger_store as st
from reference_impl.election import Code, Member, Role, elapsed
from reference_impl.network import Send
from reference_impl.state import EMPTY, FrozenMap, record


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
    """An append future completed: what the client of handleAppend sees (the response's
    code, index, term and pos; pos is set on SUCCESS only). `ref` is the body it appended."""

    code: Code
    index: int
    term: int
    pos: int
    ref: Any
    rpc: int = 0  # the client's APPEND RPC to answer (0: a local caller, e.g. DLedgerCommitLog)
    future_pos: int = -1  # AppendFuture#getPos: the entry's position, known since the append


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
    waiting: int = 0  # seq of the COMPARE/TRUNCATE push whose reply the thread waits for (0: none)
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
                               rpc=rpc, future_pos=entry.pos)
    futures = p.pending.get(entry.term, EMPTY)
    futures = futures.set(entry.index, PendingAppend(pos=entry.pos, created_ms=now, ref=ref, rpc=rpc))
    return p.evolve(pending=p.pending.set(entry.term, futures)), None


def handle_append(cfg: st.NodeConfig, m: Member, s: st.Store, p: Pusher, req: AppendEntryRequest, now: int,
                  hook: Any = None, rpc: int = 0, ref: Any = None) -> tuple[st.Store, Pusher, int, AppendResult | None]:
    """DLedgerServer#handleAppend: guards, the pending-full check, appendAsLeader, waitAck.

    Returns the AppendFuture as (pos, result): pos -1 with a result is a completed
    rejection (every DLedgerException, and LEADER_PENDING_FULL); a result with pos is an
    immediate SUCCESS (0.2.6 single node); no result means the future is parked. `ref`
    names the caller's request in the results (default: the body)."""
    dl = cfg.dledger
    ref = req.body if ref is None else ref

    def rejected(code: Code) -> tuple[st.Store, Pusher, int, AppendResult]:
        return s, p, -1, AppendResult(code=code, index=-1, term=m.curr_term, pos=-1, ref=ref, rpc=rpc)

    if req.remote_id != m.self_id:
        return rejected(Code.UNKNOWN_MEMBER)
    if req.group != dl.group:
        return rejected(Code.UNKNOWN_GROUP)
    if m.role is not Role.LEADER:
        return rejected(Code.NOT_LEADER)
    if m.transferee is not None:
        return rejected(Code.LEADER_TRANSFERRING)
    if is_pending_full(cfg, p, m.curr_term):
        return rejected(Code.LEADER_PENDING_FULL)
    try:
        s, entry = st.append_as_leader(cfg.log, s, m, req.body, now, hook)
    except st.DLedgerError as e:
        return rejected(e.code)
    p, done = wait_ack(cfg, p, m, entry, ref, now, rpc)
    return s, p, entry.pos, done


# --- QuorumAckChecker ---


def checker_wake_at(cfg: st.NodeConfig, m: Member, p: Pusher) -> int:
    """When the QuorumAckChecker loop has something to do (-1: never, i.e. not leader)."""
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


def quorum_ack_checker(cfg: st.NodeConfig, m: Member, s: st.Store, p: Pusher, now: int
                       ) -> tuple[st.Store, Pusher, Out]:
    """QuorumAckChecker#doWork (no state machine registered, RocketMQ's case)."""
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
                if not f.done:
                    outs.append(AppendResult(code=Code.TERM_CHANGED, index=index, term=t, pos=-1, ref=f.ref, rpc=f.rpc,
                                     future_pos=f.pos))
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
                                     future_pos=f.pos))
        ack_num += 1
        i -= 1
    if ack_num == 0:
        futures, timed_out = check_response_futures_timeout(cfg, futures, q + 1, term, now)
        outs += timed_out
    leak = p.last_check_leak_ms
    if elapsed(now, leak) > cfg.log.leak_check_interval_ms or need_check:
        p = update_peer_water_mark(cfg, p.evolve(pending=p.pending.set(term, futures)), term, m.self_id,
                                   s.end_index)
        futures, succeeded = check_response_futures_elapsed(futures, q, term)
        outs += succeeded
        leak = now
    p = p.evolve(pending=p.pending.set(term, futures), last_quorum_index=q, last_check_leak_ms=leak)
    return s, p, tuple(outs)


def check_response_futures_timeout(cfg: st.NodeConfig, futures: FrozenMap, begin: int, term: int, now: int
                                   ) -> tuple[FrozenMap, list]:
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
                                     future_pos=f.pos))
            futures = futures.set(i, f.evolve(done=True))
        i += 1
    return futures, outs


def check_response_futures_elapsed(futures: FrozenMap, end: int, term: int) -> tuple[FrozenMap, list]:
    """DLedgerEntryPusher#checkResponseFuturesElapsed: futures below the quorum index complete SUCCESS."""
    outs = []
    for index in sorted(i for i in futures if i < end):
        f = futures[index]
        if not f.done:
            outs.append(AppendResult(code=Code.SUCCESS, index=index, term=term, pos=f.pos, ref=f.ref, rpc=f.rpc,
                                     future_pos=f.pos))
        futures = futures.without(index)
    return futures, outs


# --- EntryDispatcher ---


def change_state(cfg: st.NodeConfig, p: Pusher, d: Dispatcher, index: int, target: PushType
                 ) -> tuple[Pusher, Dispatcher]:
    """EntryDispatcher#changeState"""
    if target is PushType.APPEND:
        p = update_peer_water_mark(cfg, p, d.term, d.peer, index)
        d = d.evolve(compare_index=-1, write_index=index + 1)
    elif target is PushType.COMPARE:
        if d.type is PushType.APPEND:  # type.compareAndSet(APPEND, COMPARE)
            d = d.evolve(compare_index=-1, pending_map=EMPTY)
    elif target is PushType.TRUNCATE:
        d = d.evolve(compare_index=-1)
    return p, d.evolve(type=target)


def _request(cfg: st.NodeConfig, s: st.Store, p: Pusher, d: Dispatcher, entry: st.Entry | None, kind: PushType
             ) -> PushEntryRequest:
    """EntryDispatcher#buildPushRequest (`seq`: the request's place on the connection, d.seq + 1)."""
    return PushEntryRequest(group=cfg.dledger.group, remote_id=d.peer, leader_id=d.leader_id, term=d.term,
                            type=kind, entry=entry, commit_index=s.committed_index, seq=(p.epoch, d.seq + 1))


def dispatcher_wake_at(cfg: st.NodeConfig, m: Member, s: st.Store, p: Pusher, d: Dispatcher) -> int:
    """When the dispatcher's thread has something to do (-1: nothing until the state changes)."""
    if m.role is not Role.LEADER or d.waiting:
        return -1
    if d.term != m.curr_term or d.leader_id != m.leader_id:
        return max(0, d.sleep_until)
    if d.type is not PushType.APPEND:
        return -1 if d.compare_index == -1 and s.end_index == -1 else max(0, d.sleep_until)
    if d.write_index <= s.end_index:
        return max(0, d.sleep_until)
    wake = d.last_push_commit_ms + cfg.log.commit_push_interval_ms + 1 if d.last_push_commit_ms >= 0 else 0
    sent = d.pending_map.get(peer_water_mark(cfg, p, d.term, d.peer) + 1)
    if sent is not None:
        wake = min(wake, sent + cfg.log.max_push_time_out_ms + 1)
    return max(wake, d.sleep_until)


def check_and_fresh_state(cfg: st.NodeConfig, m: Member, p: Pusher, d: Dispatcher
                          ) -> tuple[Pusher, Dispatcher, bool]:
    """EntryDispatcher#checkAndFreshState: a new term (or leader) restarts the dispatcher in COMPARE.

    changeState(-1, COMPARE) resets compareIndex only when the type was APPEND, so a
    dispatcher left in COMPARE by an earlier leadership keeps its compareIndex and the
    new leadership compares there first (the "fixed" profile starts from the end)."""
    if m.role is not Role.LEADER:
        return p, d, False
    if d.term != m.curr_term or d.leader_id is None or d.leader_id != m.leader_id:
        d = d.evolve(term=m.curr_term, leader_id=m.self_id)
        if cfg.log.fresh_compare:
            d = d.evolve(compare_index=-1)
        p, d = change_state(cfg, p, d, -1, PushType.COMPARE)
    return p, d, True


def dispatcher_do_work(cfg: st.NodeConfig, m: Member, s: st.Store, p: Pusher, k: int, now: int
                       ) -> tuple[Pusher, Out]:
    """EntryDispatcher#doWork for dispatcher k: one pass of its loop."""
    d = p.dispatchers[k]
    if d.waiting or now < d.sleep_until:
        return p, ()
    p, d, ok = check_and_fresh_state(cfg, m, p, d)
    if not ok:
        return _put(p, k, d), ()
    try:
        if d.type is PushType.APPEND:
            p, d, outs = do_append(cfg, m, s, p, d, now)
        else:
            p, d, outs = do_compare(cfg, m, s, p, d, now)
    except st.DLedgerError:
        p, d = change_state(cfg, p, d, -1, PushType.COMPARE)
        return _put(p, k, d.evolve(sleep_until=now + cfg.log.dispatcher_error_sleep_ms)), ()
    return _put(p, k, d), outs


def _put(p: Pusher, k: int, d: Dispatcher) -> Pusher:
    ds = p.dispatchers
    return p.evolve(dispatchers=ds[:k] + (d,) + ds[k + 1:])


def do_append(cfg: st.NodeConfig, m: Member, s: st.Store, p: Pusher, d: Dispatcher, now: int
              ) -> tuple[Pusher, Dispatcher, Out]:
    """EntryDispatcher#doAppend: push every entry not pushed yet; when caught up, COMMIT and retry checks."""
    outs: list = []
    max_pending = cfg.log.dispatcher_max_pending_size
    while d.type is PushType.APPEND:
        if d.write_index > s.end_index:
            d, o = do_commit(cfg, s, p, d, now)
            outs += o
            d, o = do_check_append_response(cfg, s, p, d, now)
            outs += o
            break
        if len(d.pending_map) >= max_pending or elapsed(now, d.last_check_leak_ms) > cfg.log.leak_check_interval_ms:
            mark = peer_water_mark(cfg, p, d.term, d.peer)
            d = d.evolve(pending_map=FrozenMap((i, t) for i, t in d.pending_map.items() if i >= mark),
                         last_check_leak_ms=now)
        if len(d.pending_map) >= max_pending:
            d, o = do_check_append_response(cfg, s, p, d, now)
            outs += o
            break
        p, d, o = do_append_inner(cfg, s, p, d, d.write_index, now)
        outs += o
        d = d.evolve(write_index=d.write_index + 1)
    return p, d, tuple(outs)


def do_append_inner(cfg: st.NodeConfig, s: st.Store, p: Pusher, d: Dispatcher, index: int, now: int
                    ) -> tuple[Pusher, Dispatcher, Out]:
    """EntryDispatcher#doAppendInner: push one APPEND (getDLedgerEntryForAppend turns
    INDEX_LESS_THAN_LOCAL_BEGIN into COMPARE). The quota throttle only acts past 300 MiB
    of backlog and is not modelled."""
    try:
        entry = st.get(s, index)
    except st.DLedgerError as e:
        if e.code is Code.INDEX_LESS_THAN_LOCAL_BEGIN:
            p, d = change_state(cfg, p, d, -1, PushType.COMPARE)
            return p, d, ()
        raise
    seq = d.seq + 1
    send = Send(dst=d.peer, msg=_request(cfg, s, p, d, entry, PushType.APPEND), ctx=("push", "APPEND", d.peer, seq),
                timeout_ms=cfg.dledger.rpc_timeout_ms)
    d = d.evolve(pending_map=d.pending_map.set(index, now), last_push_commit_ms=now, seq=seq)
    return p, d, (send,)


def do_commit(cfg: st.NodeConfig, s: st.Store, p: Pusher, d: Dispatcher, now: int) -> tuple[Dispatcher, Out]:
    """EntryDispatcher#doCommit: a bare COMMIT once a second when nothing else was pushed; its reply is ignored."""
    if elapsed(now, d.last_push_commit_ms) <= cfg.log.commit_push_interval_ms:
        return d, ()
    seq = d.seq + 1
    send = Send(dst=d.peer, msg=_request(cfg, s, p, d, None, PushType.COMMIT), ctx=("push", "COMMIT", d.peer, seq),
                timeout_ms=cfg.dledger.rpc_timeout_ms)
    return d.evolve(last_push_commit_ms=now, seq=seq), (send,)


def do_check_append_response(cfg: st.NodeConfig, s: st.Store, p: Pusher, d: Dispatcher, now: int
                             ) -> tuple[Dispatcher, Out]:
    """EntryDispatcher#doCheckAppendResponse: re-push the index after the water mark once its push is stale."""
    index = peer_water_mark(cfg, p, d.term, d.peer) + 1
    sent = d.pending_map.get(index)
    if sent is not None and now - sent > cfg.log.max_push_time_out_ms:
        _, d, outs = do_append_inner(cfg, s, p, d, index, now)
        return d, outs
    return d, ()


def do_compare(cfg: st.NodeConfig, m: Member, s: st.Store, p: Pusher, d: Dispatcher, now: int
               ) -> tuple[Pusher, Dispatcher, Out]:
    """EntryDispatcher#doCompare up to the blocking get: revise compareIndex, push COMPARE, wait."""
    if d.type not in (PushType.COMPARE, PushType.TRUNCATE):
        return p, d, ()
    if d.compare_index == -1 and s.end_index == -1:
        return p, d, ()  # an empty leader has nothing to compare
    ci = d.compare_index
    if ci == -1 or ci > s.end_index or ci < s.begin_index:
        ci = s.end_index
    entry = st.get(s, ci)
    seq = d.seq + 1
    send = Send(dst=d.peer, msg=_request(cfg, s, p, d, entry, PushType.COMPARE), ctx=("push", "COMPARE", d.peer, seq),
                timeout_ms=cfg.dledger.rpc_timeout_ms)
    return p, d.evolve(compare_index=ci, waiting=seq, seq=seq), (send,)


def on_compare_response(cfg: st.NodeConfig, m: Member, s: st.Store, p: Pusher, d: Dispatcher,
                        resp: PushEntryResponse | None, now: int) -> tuple[Pusher, Dispatcher, Out]:
    """The rest of one doCompare iteration once the COMPARE reply (or its failure) is in."""
    d = d.evolve(waiting=0)
    code = Code.NETWORK_ERROR if resp is None else resp.code
    st.check(code in (Code.INCONSISTENT_STATE, Code.SUCCESS), code)
    ci, begin, end = d.compare_index, s.begin_index, s.end_index
    truncate_index = -1
    if code is Code.SUCCESS:
        if ci == resp.end_index:
            p, d = change_state(cfg, p, d, ci, PushType.APPEND)
            return p, d, ()
        truncate_index = ci  # the follower has a dirty tail past the compared entry
    elif resp.end_index < begin or resp.begin_index > end:
        truncate_index = begin  # no overlap at all
    elif ci < resp.begin_index:
        truncate_index = begin
    elif ci > resp.end_index:
        ci = resp.end_index  # the usual case: jump down to the follower's end
    else:
        ci -= 1  # mismatch inside the follower's range: walk back one
    d = d.evolve(compare_index=ci)
    if ci < begin:
        truncate_index = begin
    if truncate_index != -1:
        p, d = change_state(cfg, p, d, truncate_index, PushType.TRUNCATE)
        return do_truncate(cfg, s, p, d, truncate_index)
    return p, d, ()


def do_truncate(cfg: st.NodeConfig, s: st.Store, p: Pusher, d: Dispatcher, index: int
                ) -> tuple[Pusher, Dispatcher, Out]:
    """EntryDispatcher#doTruncate up to the blocking get: push TRUNCATE with the leader's entry."""
    entry = st.get(s, index)
    seq = d.seq + 1
    send = Send(dst=d.peer, msg=_request(cfg, s, p, d, entry, PushType.TRUNCATE), ctx=("push", "TRUNCATE", d.peer, seq),
                timeout_ms=cfg.dledger.rpc_timeout_ms)
    return p, d.evolve(waiting=seq, truncate_index=index, seq=seq), (send,)


def on_truncate_response(cfg: st.NodeConfig, p: Pusher, d: Dispatcher, resp: PushEntryResponse | None, now: int
                         ) -> tuple[Pusher, Dispatcher]:
    """The end of doTruncate: SUCCESS moves to APPEND right after the truncated index."""
    d = d.evolve(waiting=0)
    code = Code.NETWORK_ERROR if resp is None else resp.code
    st.check(code is Code.SUCCESS, code)
    return change_state(cfg, p, d.evolve(last_push_commit_ms=now), d.truncate_index, PushType.APPEND)


def on_push_response(cfg: st.NodeConfig, m: Member, s: st.Store, p: Pusher, ctx: tuple,
                     resp: PushEntryResponse | None, now: int) -> tuple[Pusher, Out]:
    """Route a push reply: COMPARE/TRUNCATE resume the blocked thread; APPEND runs the
    whenComplete callback; COMMIT replies are ignored."""
    _, kind, peer, seq = ctx
    k = next(i for i, x in enumerate(p.dispatchers) if x.peer == peer)
    d = p.dispatchers[k]
    if kind == "APPEND":
        if resp is None or resp.code is Code.NETWORK_ERROR:
            return p, ()
        if resp.code is Code.SUCCESS:
            d = d.evolve(pending_map=d.pending_map.without(resp.index))
            p = update_peer_water_mark(cfg, _put(p, k, d), resp.term, peer, resp.index)
            return p, ()
        if resp.code is Code.INCONSISTENT_STATE:
            p, d = change_state(cfg, p, d, -1, PushType.COMPARE)
            return _put(p, k, d), ()
        return p, ()
    if kind == "COMMIT" or d.waiting != seq:
        return p, ()
    try:
        if kind == "COMPARE":
            p, d, outs = on_compare_response(cfg, m, s, p, d, resp, now)
        else:
            p, d = on_truncate_response(cfg, p, d, resp, now)
            outs = ()
    except st.DLedgerError:
        p, d = change_state(cfg, p, d.evolve(waiting=0), -1, PushType.COMPARE)
        return _put(p, k, d.evolve(sleep_until=now + cfg.log.dispatcher_error_sleep_ms)), ()
    return _put(p, k, d), outs

