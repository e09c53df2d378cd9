"""The follower side of DLedger log replication (DLedgerEntryPusher.EntryHandler, 0.2.6).

Theory of operation
-------------------
`handlePush` only files a request and returns a future; the EntryHandler thread does
the work, and the leader's RPC is answered when that future completes.

- APPEND requests go into `writeRequestMap`, keyed by index (a second push of an index
  already there is answered REPEATED_PUSH at once).
- COMPARE, TRUNCATE and COMMIT requests go into one FIFO queue (capacity 100 in 0.2.6,
  1024 with a non-blocking offer in 0.3.x). COMPARE and TRUNCATE first clear
  `writeRequestMap`: the futures of the appends dropped there are never completed,
  so the leader's RPCs for them time out.

Nothing is checked at receipt. The thread acts only while the node is a FOLLOWER; each
pass of its loop (`doWork`, one step of this thread's actor) does one unit of work: the
head of the queue (TRUNCATE: store truncate then commit; COMPARE: equal entry or
INCONSISTENT_STATE, with no term or leader check; COMMIT: commit), or else one append of
`writeRequestMap[ledgerEndIndex + 1]`, checking term and leader in the store and then
taking the piggy-backed commit index (clamped to the local end): a follower catching up
appends one entry and moves its commit index once per pass. After a unit the loop goes
on at once; `handlePush` wakes it (`wakeup`, `woken`); otherwise it polls every 1 ms
(waitForRunning(1)). When the next index is missing it looks at the waiting appends once
a second (`checkAbnormalFuture`): those it already holds are answered, and the oldest
timed-out one past a gap is answered INCONSISTENT_STATE so that the leader compares again.

The 0.2.6 queue's blocking `put` (a remoting thread waits while 100 requests are
queued) is modelled as an unbounded queue: the request waits either way.
"""

from __future__ import annotations

from reference_impl.core.network import Respond
from reference_impl.core.state import EMPTY, FrozenMap, record
from reference_impl.dledger_log import store as st
from reference_impl.dledger_log.entry_pusher import PushEntryRequest, PushEntryResponse, PushType

APPEND = PushType.APPEND
from reference_impl.election.member_state import Member
from reference_impl.election.records import Code, Role, elapsed


@record
class PushWait:
    """A push request and its TimeoutFuture(1000), answered through RPC `rpc`."""

    request: PushEntryRequest
    rpc: int
    created_ms: int
    answered: bool = False  # a future completes once: checkAppendFuture may answer one that stays queued


@record
class EntryHandler:
    write_requests: FrozenMap = EMPTY  # writeRequestMap: first index -> PushWait
    queue: tuple[PushWait, ...] = ()  # compareOrTruncateRequests
    last_check_fast_forward_ms: int = 0
    last_seq: FrozenMap = EMPTY  # leader id -> the latest push seq handled (push_processor "single_thread")
    # hasNotified (handlePush's wakeup), or the loop going on after a unit of work: the next pass
    # comes at once rather than within the thread's 1 ms waitForRunning poll.
    woken: bool = False


Out = tuple


def build_response(s: st.Store, req: PushEntryRequest, code: Code) -> PushEntryResponse:
    """EntryHandler#buildResponse: the request's term and index, the follower's begin and end now."""
    index = None if req.type is PushType.COMMIT else (req.entry.index if req.entry is not None else -1)
    return PushEntryResponse(code=code, term=req.term, index=index, begin_index=s.begin_index, end_index=s.end_index)


def handle_push(cfg: st.NodeConfig, m: Member, s: st.Store, h: EntryHandler, req: PushEntryRequest, rpc: int,
                now: int) -> tuple[EntryHandler, PushEntryResponse | None]:
    """DLedgerServer#handlePush then EntryHandler#handlePush. Reply None: answered later."""
    if req.remote_id != m.self_id:
        return h, PushEntryResponse(code=Code.UNKNOWN_MEMBER, term=req.term)
    if req.group != cfg.dledger.group:
        return h, PushEntryResponse(code=Code.UNKNOWN_GROUP, term=req.term)
    if cfg.log.ordered_pushes:
        last = h.last_seq.get(req.leader_id)
        if last is not None and req.seq < last:
            # Overtaken. The world delivers a leader's pushes to this node in send order (one Netty
            # channel per peer, world.fifo), so only a duplicate's copy, sent again behind later
            # pushes, arrives after a later seq: one thread would have handled the original first.
            return h, None
        h = h.evolve(last_seq=h.last_seq.set(req.leader_id, req.seq))
    wait = PushWait(request=req, rpc=rpc, created_ms=now)
    if req.type is APPEND:
        if req.entry is None:
            return h, PushEntryResponse(code=Code.UNEXPECTED_ARGUMENT, term=req.term)
        if req.entry.index in h.write_requests:
            return wake(h), build_response(s, req, Code.REPEATED_PUSH)
        return wake(h.evolve(write_requests=h.write_requests.set(req.entry.index, wait))), None
    if req.type is not PushType.COMMIT:
        if req.entry is None:
            return h, PushEntryResponse(code=Code.UNEXPECTED_ARGUMENT, term=req.term)
        h = h.evolve(write_requests=EMPTY)  # the dropped futures are never completed
    if not cfg.log.v026 and len(h.queue) >= cfg.log.compare_queue_capacity:
        return wake(h), build_response(s, req, Code.PUSH_REQUEST_IS_FULL)
    return wake(h.evolve(queue=h.queue + (wait,))), None


def wake(h: EntryHandler) -> EntryHandler:
    """EntryHandler#wakeup at the end of handlePush: the next waitForRunning returns at once. (A
    role change of its node takes the notice away: server.idle_on_role_change.)"""
    return h if h.woken else h.evolve(woken=True)


def wake_at(cfg: st.NodeConfig, m: Member, s: st.Store, h: EntryHandler) -> int:
    """When the EntryHandler thread has something to do (-1: nothing until a push arrives; 0: now)."""
    if m.role is not Role.FOLLOWER:
        return 0 if h.queue and not cfg.log.v026 else -1
    if h.queue or (s.end_index + 1) in h.write_requests:
        return 0
    if h.write_requests:
        return h.last_check_fast_forward_ms + cfg.log.check_fast_forward_interval_ms
    return -1


def slack(cfg: st.NodeConfig, h: EntryHandler, wake: int) -> int:
    """How late the thread may notice work due at `wake` (Java timing): at once when woken or
    going on after a unit of work, else within its waitForRunning(1) (a role change, the
    once-a-second checkAbnormalFuture)."""
    return 0 if wake == 0 and h.woken else cfg.log.thread_wait_ms


def do_work(cfg: st.NodeConfig, m: Member, s: st.Store, h: EntryHandler, now: int
            ) -> tuple[st.Store, EntryHandler, Out]:
    """EntryHandler#doWork: one pass, one unit of work. The head of the queue, else the append of
    index ledgerEndIndex + 1 (appendAsFollower, the answer, then updateCommittedIndex), after which
    the loop goes on at once; else checkAbnormalFuture and waitForRunning(1)."""
    if m.role is not Role.FOLLOWER:
        if cfg.log.v026 or not h.queue:
            return s, h, ()
        # 0.3.x clearCompareOrTruncateRequestsIfNeed: answer queued requests NOT_FOLLOWER, then wait
        outs = tuple(Respond(rpc=w.rpc, msg=build_response(s, w.request, Code.NOT_FOLLOWER)) for w in h.queue)
        return s, h.evolve(queue=(), woken=False), outs
    if h.queue:
        w = h.queue[0]
        req = w.request
        if req.type is PushType.TRUNCATE:
            s, code = handle_do_truncate(cfg, m, s, req, now)
        elif req.type is PushType.COMPARE:
            code = handle_do_compare(s, req)
        else:
            code = Code.SUCCESS
            s = st.update_committed_index(cfg.log, s, req.term, m.curr_term, req.commit_index, now)
        # the response is built before the commit for TRUNCATE; begin/end do not change with it
        return s, h.evolve(queue=h.queue[1:], woken=True), (Respond(rpc=w.rpc, msg=build_response(s, req, code)),)
    w = h.write_requests.get(s.end_index + 1)
    if w is not None:
        h = h.evolve(write_requests=h.write_requests.without(s.end_index + 1), woken=True)
        s, code = handle_do_append(cfg, m, s, w.request, now)
        return s, h, () if w.answered else (Respond(rpc=w.rpc, msg=build_response(s, w.request, code)),)
    outs: tuple = ()
    if h.write_requests and elapsed(now, h.last_check_fast_forward_ms) >= cfg.log.check_fast_forward_interval_ms:
        h, outs = check_append_future(cfg, s, h.evolve(last_check_fast_forward_ms=now), now)
    return s, h.evolve(woken=False), outs


def handle_do_append(cfg: st.NodeConfig, m: Member, s: st.Store, req: PushEntryRequest, now: int
                     ) -> tuple[st.Store, Code]:
    """EntryHandler#handleDoAppend: appendAsFollower, then the piggy-backed commit index."""
    try:
        s = st.append_as_follower(cfg.log, s, m, req.entry, req.term, req.leader_id, now)
    except st.DLedgerError:
        return s, Code.INCONSISTENT_STATE
    return st.update_committed_index(cfg.log, s, req.term, m.curr_term, req.commit_index, now), Code.SUCCESS


def handle_do_compare(s: st.Store, req: PushEntryRequest) -> Code:
    """EntryHandler#handleDoCompare: is the leader's entry the one here? No term or leader check."""
    local = st.entry_at(s, req.entry.index)
    return Code.SUCCESS if local is not None and local == req.entry else Code.INCONSISTENT_STATE


def handle_do_truncate(cfg: st.NodeConfig, m: Member, s: st.Store, req: PushEntryRequest, now: int
                       ) -> tuple[st.Store, Code]:
    """EntryHandler#handleDoTruncate: truncate (term and leader are checked there), then commit."""
    try:
        s = st.truncate(cfg.log, s, m, req.entry, req.term, req.leader_id, now)
    except st.DLedgerError:
        return s, Code.INCONSISTENT_STATE
    return st.update_committed_index(cfg.log, s, req.term, m.curr_term, req.commit_index, now), Code.SUCCESS


def check_append_future(cfg: st.NodeConfig, s: st.Store, h: EntryHandler, now: int) -> tuple[EntryHandler, Out]:
    """EntryHandler#checkAppendFuture(ledgerEndIndex): answer appends this log already holds;
    answer the oldest timed-out one past a gap INCONSISTENT_STATE (it stays in the map)."""
    outs: list = []
    end = s.end_index
    fast_forward = None
    for index in sorted(h.write_requests):
        w = h.write_requests[index]
        if index <= end:
            local = st.entry_at(s, index)
            code = Code.SUCCESS if local is not None and local == w.request.entry else Code.INCONSISTENT_STATE
            if not w.answered:
                outs.append(Respond(rpc=w.rpc, msg=build_response(s, w.request, code)))
            h = h.evolve(write_requests=h.write_requests.without(index))
            continue
        if index == end + 1:
            return h, tuple(outs)
        if now - w.created_ms < cfg.log.push_future_timeout_ms:
            continue
        if fast_forward is None:
            fast_forward = index
    if fast_forward is not None:
        w = h.write_requests[fast_forward]
        if not w.answered:
            outs.append(Respond(rpc=w.rpc, msg=build_response(s, w.request, Code.INCONSISTENT_STATE)))
            h = h.evolve(write_requests=h.write_requests.set(fast_forward, w.evolve(answered=True)))
    return h, tuple(outs)
