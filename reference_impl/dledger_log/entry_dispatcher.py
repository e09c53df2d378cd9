"""The leader's EntryDispatcher threads (DLedgerEntryPusher.EntryDispatcher, 0.2.6): one per follower.

Theory of operation: see reference_impl.dledger_log.entry_pusher, which holds their state
(`Pusher.dispatchers`) and the water marks they raise. Each dispatcher is a small machine
over PushEntryRequest types (COMPARE, TRUNCATE, APPEND, COMMIT); this module is its loop
(`doWork`), its pushes, and the callbacks of their replies.

A dispatcher is a thread of its own (one actor of its node, reference_impl.dledger_log.server),
and one step of it is one `doWork` up to where it blocks or waits:

- APPEND: push every entry not pushed yet, then doCommit and doCheckAppendResponse, then
  waitForRunning(1) (nothing ever wakes a dispatcher in 0.2.6: it notices new entries and
  its timers within its 1 ms poll);
- COMPARE / TRUNCATE: push, then block in `responseFuture.get(3, SECONDS)`. The reply (or
  the RPC's failure, which DLedgerRpcNettyService completes with a NETWORK_ERROR response)
  completes the future (`on_push_response`); the thread then goes on at once with the rest
  of that doCompare / doTruncate iteration (`resume`): to APPEND, to a TRUNCATE push (blocked
  again), or round the doCompare loop to the next COMPARE push. When the 3 s pass first, get
  throws: COMPARE, and sleep 500 ms (the reply that comes later finds no one waiting).

The APPEND pushes' callbacks (SUCCESS raises the water mark and wakes the QuorumAckChecker;
INCONSISTENT_STATE turns the dispatcher to COMPARE) run on the RPC's callback thread, as
part of the reply's delivery.
"""

from __future__ import annotations

from reference_impl.core.network import Send
from reference_impl.core.state import EMPTY, FrozenMap
from reference_impl.dledger_log import store as st
from reference_impl.dledger_log.entry_pusher import (
    Dispatcher,
    Out,
    PushEntryRequest,
    PushEntryResponse,
    Pusher,
    PushType,
    failed_push_response,
    peer_water_mark,
    update_peer_water_mark,
    wake_checker,
)
from reference_impl.election.member_state import Member
from reference_impl.election.records import Code, Role, elapsed


def change_state(cfg: st.NodeConfig, p: Pusher, d: Dispatcher, index: int, target: PushType
                 ) -> tuple[Pusher, Dispatcher]:
    """EntryDispatcher#changeState (synchronized on the dispatcher; APPEND wakes the QuorumAckChecker)."""
    if target is PushType.APPEND:
        p = wake_checker(update_peer_water_mark(cfg, p, d.term, d.peer, index))
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


def _push(cfg: st.NodeConfig, s: st.Store, p: Pusher, d: Dispatcher, entry: st.Entry | None, kind: PushType
          ) -> tuple[int, Send]:
    """DLedgerRpcService#push of a request built now: its seq and the Send (ctx carries the term, for
    the response a failed push completes with)."""
    seq = d.seq + 1
    return seq, Send(dst=d.peer, msg=_request(cfg, s, p, d, entry, kind), ctx=("push", kind.value, d.peer, seq, d.term),
                     timeout_ms=cfg.dledger.rpc_timeout_ms, scanned=True)


def dispatcher_wake_at(cfg: st.NodeConfig, m: Member, s: st.Store, p: Pusher, d: Dispatcher) -> int:
    """When the dispatcher's thread has something to do (-1: nothing until the state changes; 0: now).
    A thread blocked in get goes on when the future completes or its 3 s are up, whatever the role."""
    if d.waiting:
        return 0 if d.response is not None else d.wait_until
    if m.role is not Role.LEADER:
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


def dispatcher_slack(cfg: st.NodeConfig, d: Dispatcher, since: int, wake: int) -> int:
    """How late the thread may act on work due at `wake` (Java timing), `since` being when that
    became its wake time: at once when get returns (the future completed, or its 3 s are up) or
    when its 500 ms sleep ends with the work already there; else within its waitForRunning(1)."""
    if d.waiting or (wake == d.sleep_until and since <= d.sleep_until):
        return 0
    return cfg.log.thread_wait_ms


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
    """EntryDispatcher#doWork for dispatcher k: one pass of its loop, up to where it blocks or waits
    (a thread blocked in get goes on from there: `resume`)."""
    d = p.dispatchers[k]
    if d.waiting:
        if d.response is None and now < d.wait_until:
            return p, ()
        return resume(cfg, m, s, p, k, now)
    if now < d.sleep_until:
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
        return _failed(cfg, p, k, d, now), ()
    return _put(p, k, d), outs


def _failed(cfg: st.NodeConfig, p: Pusher, k: int, d: Dispatcher, now: int) -> Pusher:
    """doWork's catch: changeState(-1, COMPARE), then DLedgerUtils.sleep(500)."""
    p, d = change_state(cfg, p, d, -1, PushType.COMPARE)
    return _put(p, k, d.evolve(sleep_until=now + cfg.log.dispatcher_error_sleep_ms))


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
    seq, send = _push(cfg, s, p, d, entry, PushType.APPEND)
    d = d.evolve(pending_map=d.pending_map.set(index, now), last_push_commit_ms=now, seq=seq)
    return p, d, (send,)


def do_commit(cfg: st.NodeConfig, s: st.Store, p: Pusher, d: Dispatcher, now: int) -> tuple[Dispatcher, Out]:
    """EntryDispatcher#doCommit: a bare COMMIT once a second when nothing else was pushed; its reply is ignored."""
    if elapsed(now, d.last_push_commit_ms) <= cfg.log.commit_push_interval_ms:
        return d, ()
    seq, send = _push(cfg, s, p, d, None, PushType.COMMIT)
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
    """EntryDispatcher#doCompare, one iteration up to the blocking get: revise compareIndex, push
    COMPARE, block for up to `push_wait_ms` (3 s)."""
    if d.type not in (PushType.COMPARE, PushType.TRUNCATE):
        return p, d, ()
    if d.compare_index == -1 and s.end_index == -1:
        return p, d, ()  # an empty leader has nothing to compare
    ci = d.compare_index
    if ci == -1 or ci > s.end_index or ci < s.begin_index:
        ci = s.end_index
    entry = st.get(s, ci)
    seq, send = _push(cfg, s, p, d, entry, PushType.COMPARE)
    return p, _block(cfg, d.evolve(compare_index=ci), PushType.COMPARE, seq, now), (send,)


def _block(cfg: st.NodeConfig, d: Dispatcher, kind: PushType, seq: int, now: int) -> Dispatcher:
    """The thread blocks in responseFuture.get(3, SECONDS) on push `seq`."""
    return d.evolve(waiting=seq, blocked=kind, wait_until=now + cfg.log.push_wait_ms, response=None, seq=seq)


def resume(cfg: st.NodeConfig, m: Member, s: st.Store, p: Pusher, k: int, now: int) -> tuple[Pusher, Out]:
    """The dispatcher's get returns (the future completed, or its 3 s passed: TimeoutException) and
    the thread goes on with the rest of doCompare or doTruncate, up to where it blocks or waits:
    round the doCompare loop (checkAndFreshState, then the next COMPARE) when no truncation or
    APPEND was decided."""
    d = p.dispatchers[k]
    resp, kind = d.response, d.blocked
    d = d.evolve(waiting=0, blocked=None, wait_until=-1, response=None)
    try:
        st.check(resp is not None, Code.TIMEOUT, "responseFuture.get(3, SECONDS)")
        if kind is PushType.TRUNCATE:
            p, d = on_truncate_response(cfg, p, d, resp, now)
            return _put(p, k, d), ()
        p, d, outs = on_compare_response(cfg, m, s, p, d, resp, now)
        if d.waiting or d.type is PushType.APPEND:
            return _put(p, k, d), outs
        p, d, ok = check_and_fresh_state(cfg, m, p, d)
        if not ok:
            return _put(p, k, d), outs
        p, d, more = do_compare(cfg, m, s, p, d, now)
        return _put(p, k, d), outs + more
    except st.DLedgerError:
        return _failed(cfg, p, k, d, now), ()


def on_compare_response(cfg: st.NodeConfig, m: Member, s: st.Store, p: Pusher, d: Dispatcher,
                        resp: PushEntryResponse, now: int) -> tuple[Pusher, Dispatcher, Out]:
    """The rest of one doCompare iteration once get returned the COMPARE reply: APPEND, a TRUNCATE
    push (blocked again), or a revised compareIndex for the loop's next iteration."""
    code = resp.code
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
        return do_truncate(cfg, s, p, d, truncate_index, now)
    return p, d, ()


def do_truncate(cfg: st.NodeConfig, s: st.Store, p: Pusher, d: Dispatcher, index: int, now: int
                ) -> tuple[Pusher, Dispatcher, Out]:
    """EntryDispatcher#doTruncate up to the blocking get: push TRUNCATE with the leader's entry."""
    entry = st.get(s, index)
    seq, send = _push(cfg, s, p, d, entry, PushType.TRUNCATE)
    return p, _block(cfg, d.evolve(truncate_index=index), PushType.TRUNCATE, seq, now), (send,)


def on_truncate_response(cfg: st.NodeConfig, p: Pusher, d: Dispatcher, resp: PushEntryResponse, now: int
                         ) -> tuple[Pusher, Dispatcher]:
    """The end of doTruncate once get returned: SUCCESS moves to APPEND right after the truncated index."""
    st.check(resp.code is Code.SUCCESS, resp.code)
    return change_state(cfg, p, d.evolve(last_push_commit_ms=now), d.truncate_index, PushType.APPEND)


def on_push_response(cfg: st.NodeConfig, m: Member, s: st.Store, p: Pusher, ctx: tuple,
                     resp: PushEntryResponse | None, now: int) -> tuple[Pusher, Out]:
    """A push's future completes (`resp` None: the RPC failed, and DLedgerRpcNettyService completes
    it with a NETWORK_ERROR response). COMPARE/TRUNCATE: the blocked thread's get returns (its next
    step goes on); APPEND: the whenComplete callback; COMMIT replies are ignored."""
    _, kind, peer, seq, _ = ctx
    k = next(i for i, x in enumerate(p.dispatchers) if x.peer == peer)
    d = p.dispatchers[k]
    if resp is None:
        resp = failed_push_response(ctx)
    if kind == "APPEND":
        if resp.code is Code.SUCCESS:
            d = d.evolve(pending_map=d.pending_map.without(resp.index))
            p = update_peer_water_mark(cfg, _put(p, k, d), resp.term, peer, resp.index)
            return wake_checker(p), ()
        if resp.code is Code.INCONSISTENT_STATE:
            p, d = change_state(cfg, p, d, -1, PushType.COMPARE)
            return _put(p, k, d), ()
        return p, ()
    if kind == "COMMIT" or d.waiting != seq or d.response is not None:
        return p, ()
    return _put(p, k, d.evolve(response=resp)), ()
