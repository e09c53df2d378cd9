"""A DLedger server (DLedgerServer, 0.2.6): the election member plus the log.

Theory of operation
-------------------
A node is the election `Member` (reference_impl.election), its `Store`, the leader-side
`Pusher` (dispatchers, quorum ack checker, pending appends) and the follower-side
`EntryHandler`. Its Java threads are the world's actors (`Protocol.threads`), each with
its own wake time and its own `Tick(node, thread)`, in this order (`thread_names`):

| thread | name (Java's) | one step |
|---|---|---|
| 0 | StateMaintainer | one loop of the elector (also DLedgerServer's scheduled checkPreferredLeader and a transferee's wait) |
| 1 | EntryHandler-<self> | one doWork: one queued COMPARE/TRUNCATE/COMMIT, or one append (and its commit move) |
| 2.. | EntryDispatcher-<self>-<peer> | one doWork up to where it blocks (get) or waits, one per peer in `peers` order |
| P+1 | QuorumAckChecker-<self> | one doWork |
| P+2 | DLedgerFlushDataService | flush the dirty pages, write the checkpoint when due |

(P: the number of peers.) A step of one thread is atomic; the world interleaves it with
the other threads of the node, other nodes, deliveries and faults, as Java's scheduler
does. Where Java holds a lock across threads the step keeps it whole: the store's appends
and truncations, `checkAndFreshState` and every `MemberState` change are done under
`synchronized (memberState)`, `changeState` under the dispatcher's monitor, the water
marks under `peerWaterMarksByTerm`'s; none of them is split. Deliveries run the RPC
threads (handlers, callbacks) of the node they reach, also atomically.

A thread with work notices it within its loop's wait: the EntryPusher threads poll every
1 ms (`waitForRunning(1)`, `LogConfig.thread_wait_ms`) and so may act up to 1 ms after
their work is due (Java timing); `wakeup()` (the handler by `handlePush`, the checker by
an APPEND acknowledgement and `changeState(APPEND)`), a future completing under a blocked
`get`, a sleep ending and a loop that goes on without a wait make them act at once. The
StateMaintainer has the election's slack (server.wake_slack); the flush service acts on time.

The member's `ledger_end_index/term` follow the store after every change
(`MemberState#updateLedgerIndexAndTerm`), so votes carry the real log ends, and its
`peer_water_marks` follow the pusher's current-term marks when a preferred leader is
configured (checkPreferredLeader reads them).

Crash: the member keeps its term file unless the OS goes down; the store keeps what
`dledger_store.crash` says. Restart: `recover`, then fresh threads.

The DLedger tests' harness (`launchServer(..., leaderId, FILE)`: elector off, term 0,
role forced) is `boot(..., forced_leader=...)`.
"""

from __future__ import annotations

from typing import Any

from reference_impl.core.network import Respond
from reference_impl.core.state import FrozenMap, record
from reference_impl.dledger_log import entry_dispatcher as ed
from reference_impl.dledger_log import entry_handler as eh
from reference_impl.dledger_log import entry_pusher as ep
from reference_impl.dledger_log import store as st
from reference_impl.election import member_state as mstate
from reference_impl.election import records as el
from reference_impl.election import server as srv


@record
class DLedgerNode:
    member: mstate.Member
    store: st.Store
    pusher: ep.Pusher
    handler: eh.EntryHandler


@record
class CommitAdvanced:
    """Observation: the store's committedIndex moved (for ghost variables). `term` is the
    node's current term, `leader` whether it committed as leader (by counting marks)."""

    old: int
    new: int
    term: int
    leader: bool
    entry_term: int  # the term of the entry at the new committed index


@record
class EntriesDropped:
    """Observation: the store lost entries it held (for ghost variables), found by comparing
    the log before and after the entry handler's work. `truncate` is the TRUNCATE push the
    handler carried out in that work (None: none)."""

    entries: tuple  # ascending by index
    truncate: ep.PushEntryRequest | None


def forced_member(cfg: st.NodeConfig, self_id: str, leader: str, now: int) -> mstate.Member:
    """ServerTestHarness#launchServer(..., leaderId, storeType): setCurrTermForTest(0) and the role forced."""
    m = srv.boot(cfg.dledger, self_id, now)
    if leader == self_id:
        return m.evolve(role=el.Role.LEADER, leader_id=self_id)
    return m.evolve(role=el.Role.FOLLOWER, leader_id=leader, last_leader_heart_beat_time=now)


def boot(cfg: st.NodeConfig, self_id: str, now: int, store: st.Store | None = None, forced_leader: str | None = None,
         curr_term: int = 0, curr_vote_for: str | None = None) -> DLedgerNode:
    """DLedgerServer#startup: load the term file, recover the store, start the threads."""
    s = store if store is not None else st.empty(now=now)
    if forced_leader is not None:
        m = forced_member(cfg, self_id, forced_leader, now)
    else:
        m = srv.boot(cfg.dledger, self_id, now, curr_term, curr_vote_for)
    s = st.recover(cfg.log, s, m.curr_term, now)
    m = mstate.update_ledger_index_and_term(m, s.end_index, s.end_term)
    return DLedgerNode(member=m, store=s, pusher=ep.new_pusher(cfg, self_id, now), handler=eh.EntryHandler(
        last_check_fast_forward_ms=now))


def crash(cfg: st.NodeConfig, n: DLedgerNode, kind: str) -> DLedgerNode:
    """The process (or the machine, or its disk) goes down; what survives is on disk."""
    m = srv.crash(n.member, lose_term_file=kind != "process")
    return n.evolve(member=m, store=st.crash(n.store, kind))


def restart(cfg: st.NodeConfig, n: DLedgerNode, now: int, forced_leader: str | None = None) -> DLedgerNode:
    m = n.member
    return boot(cfg, m.self_id, now, n.store, forced_leader, m.curr_term, m.curr_vote_for)


def shutdown(cfg: st.NodeConfig, n: DLedgerNode, now: int) -> DLedgerNode:
    """DLedgerServer#shutdown: a clean stop flushes and checkpoints the store."""
    return crash(cfg, n.evolve(store=st.shutdown(n.store, now)), "process")


# --- keeping the member in step with the store and the pusher ---


def sync(cfg: st.NodeConfig, before: DLedgerNode, n: DLedgerNode, truncate: ep.PushEntryRequest | None = None
         ) -> tuple[DLedgerNode, tuple]:
    """MemberState#updateLedgerIndexAndTerm after store changes; CommitAdvanced when the commit moved
    (and EntriesDropped, before it, when the log lost entries; `truncate`: the TRUNCATE carried out)."""
    s, m = n.store, n.member
    dropped = st.lost_entries(before.store, s)
    drop_obs = (EntriesDropped(entries=dropped, truncate=truncate),) if dropped else ()
    if s.end_index != m.ledger_end_index or s.end_term != m.ledger_end_term:
        m = mstate.update_ledger_index_and_term(m, s.end_index, s.end_term)
    if cfg.dledger.preferred_leader_ids is not None:
        marks = n.pusher.water_marks.get(m.curr_term)
        pwm = FrozenMap(zip(cfg.dledger.peers, marks)) if marks is not None else FrozenMap()
        if pwm != m.peer_water_marks:
            m = m.evolve(peer_water_marks=pwm)
    if m is not n.member:
        n = n.evolve(member=m)
    old = before.store.committed_index
    if s.committed_index != old and s.committed_index >= 0:
        e = st.entry_at(s, s.committed_index)
        return n, drop_obs + (CommitAdvanced(old=old, new=s.committed_index, term=m.curr_term,
                                             leader=m.role is el.Role.LEADER, entry_term=e.term if e else -1),)
    return n, drop_obs


def fast_advance_commit_index(cfg: st.NodeConfig, n: DLedgerNode, now: int) -> DLedgerNode:
    """DLedgerServer.FastAdvanceCommitIndexService (0.4.0): a new leader with uncommitted entries
    appends a no-op of its term (a raft-log read), which commits them by the current-term rule."""
    s, m = n.store, n.member
    if s.committed_index >= s.end_index:
        return n
    try:
        s, entry = st.append_as_leader(cfg.log, s, m, st.NOOP, now)
    except st.DLedgerError:
        return n
    p = ep.update_peer_water_mark(cfg, n.pusher, entry.term, m.self_id, entry.index)
    return n.evolve(store=s, pusher=p, member=mstate.update_ledger_index_and_term(m, s.end_index, s.end_term))


# --- the node as the world sees it: one actor per thread ---

MAINTAINER, HANDLER, FIRST_DISPATCHER = 0, 1, 2


def checker_thread(cfg: st.NodeConfig) -> int:
    """The QuorumAckChecker's index: after the maintainer, the handler and one dispatcher per peer."""
    return len(cfg.dledger.peers) + 1


def flush_thread(cfg: st.NodeConfig) -> int:
    return len(cfg.dledger.peers) + 2


def thread_names(cfg: st.NodeConfig, n: DLedgerNode) -> tuple[str, ...]:
    """The node's threads by their Java names, in the order of their indexes (module docstring)."""
    me = n.member.self_id
    return ("StateMaintainer", f"EntryHandler-{me}", *(f"EntryDispatcher-{me}-{d.peer}" for d in n.pusher.dispatchers),
            f"QuorumAckChecker-{me}", "DLedgerFlushDataService")


def thread_wakes(cfg: st.NodeConfig, n: DLedgerNode) -> tuple[int, ...]:
    """When each thread next has something to do (-1: nothing until the state changes; 0: now)."""
    m, s, p = n.member, n.store, n.pusher
    return (srv.wake_at(cfg.dledger, m), eh.wake_at(cfg, m, s, n.handler),
            *(ed.dispatcher_wake_at(cfg, m, s, p, d) for d in p.dispatchers),
            ep.checker_wake_at(cfg, m, p), st.flush_wake_at(s))


def wake_at(cfg: st.NodeConfig, n: DLedgerNode) -> int:
    """The earliest time one of the node's threads has something to do (-1: never)."""
    return min((t for t in thread_wakes(cfg, n) if t >= 0), default=-1)


def thread_slack(cfg: st.NodeConfig, n: DLedgerNode, k: int, since: int, wake: int) -> int:
    """How much later than `wake` (thread k's wake time, which became so at `since`) Java may act:
    the state maintainer's slack (srv.wake_slack); a replication thread's 1 ms poll unless it
    was woken, its blocking get returned or its sleep ended (module docstring); the flush
    service acts on time."""
    if k == MAINTAINER:
        return srv.wake_slack(cfg.dledger, n.member, since, wake)
    if k == HANDLER:
        return eh.slack(cfg, n.handler, wake)
    if k < checker_thread(cfg):
        return ed.dispatcher_slack(cfg, n.pusher.dispatchers[k - FIRST_DISPATCHER], since, wake)
    if k == checker_thread(cfg):
        return ep.checker_slack(cfg, n.pusher, wake)
    return 0


def answer_clients(outs: tuple) -> tuple:
    """An AppendFuture completing answers the client's APPEND RPC it came from (the
    AppendResult stays in the outputs as an observation)."""
    extra = tuple(Respond(rpc=o.rpc, msg=ep.response_of(o)) for o in outs if isinstance(o, ep.AppendResult) and o.rpc)
    return outs + extra if extra else outs


def idle_on_role_change(before: mstate.Member, n: DLedgerNode) -> DLedgerNode:
    """A replication thread whose node is not in the role it works in loops on waitForRunning(1),
    which takes any wakeup() notice at once: after a role change neither the handler nor the
    checker is woken."""
    if n.member.role is before.role or not (n.handler.woken or n.pusher.checker_woken):
        return n
    return n.evolve(handler=n.handler.evolve(woken=False), pusher=n.pusher.evolve(checker_woken=False))


def on_thread_tick(cfg: st.NodeConfig, n: DLedgerNode, k: int, now: int, draw: int) -> tuple[DLedgerNode, tuple]:
    """One step of thread k (module docstring), if it is due at `now`."""
    before = n
    m = n.member
    if k == MAINTAINER:
        if not 0 <= srv.wake_at(cfg.dledger, m) <= now:
            return n, ()
        m, outs = srv.on_tick(cfg.dledger, m, now, draw)
        n = n.evolve(member=m)
        if cfg.log.enable_fast_advance_commit_index and m.role is el.Role.LEADER and any(
                isinstance(x, el.RoleChanged) and x.role is el.Role.LEADER for x in outs):
            n = fast_advance_commit_index(cfg, n, now)
        n, o = sync(cfg, before, idle_on_role_change(before.member, n))
        return n, outs + o
    if k == HANDLER:
        if not 0 <= eh.wake_at(cfg, m, n.store, n.handler) <= now:
            return n, ()
        head = n.handler.queue[0].request if n.handler.queue else None
        s, h, outs = eh.do_work(cfg, m, n.store, n.handler, now)
        truncate = head if head is not None and head.type is ep.PushType.TRUNCATE and m.role is el.Role.FOLLOWER \
            else None
        n, o = sync(cfg, before, n.evolve(store=s, handler=h), truncate)
        return n, outs + o
    p = n.pusher
    if k < checker_thread(cfg):
        d = p.dispatchers[k - FIRST_DISPATCHER]
        if not 0 <= ed.dispatcher_wake_at(cfg, m, n.store, p, d) <= now:
            return n, ()
        p, outs = ed.dispatcher_do_work(cfg, m, n.store, p, k - FIRST_DISPATCHER, now)
        n, o = sync(cfg, before, n.evolve(pusher=p))
        return n, outs + o
    if k == checker_thread(cfg):
        if not 0 <= ep.checker_wake_at(cfg, m, p) <= now:
            return n, ()
        s, p, outs = ep.quorum_ack_checker(cfg, m, n.store, p, now)
        n, o = sync(cfg, before, n.evolve(store=s, pusher=p))
        return n, answer_clients(outs + o)
    if not 0 <= st.flush_wake_at(n.store) <= now:
        return n, ()
    return n.evolve(store=st.on_flush_tick(n.store, now)), ()


def on_request(cfg: st.NodeConfig, n: DLedgerNode, msg: Any, rpc: int, now: int
               ) -> tuple[DLedgerNode, Any, tuple]:
    """Dispatch an incoming RPC: pushes to the entry handler, the rest to the elector."""
    if isinstance(msg, ep.PushEntryRequest):
        h, reply = eh.handle_push(cfg, n.member, n.store, n.handler, msg, rpc, now)
        return n.evolve(handler=h), reply, ()
    if isinstance(msg, ep.AppendEntryRequest):
        before = n
        s, p, pos, done = ep.handle_append(cfg, n.member, n.store, n.pusher, msg, now, rpc=rpc)
        n, outs = sync(cfg, before, n.evolve(store=s, pusher=p))
        if done is None:
            return n, None, outs
        return n, ep.response_of(done), (done,) + outs
    m, reply, outs = srv.on_request(cfg.dledger, n.member, msg, rpc, now)
    return idle_on_role_change(n.member, n.evolve(member=m)), reply, outs


def on_response(cfg: st.NodeConfig, n: DLedgerNode, ctx: Any, peer: str, resp: Any, now: int
                ) -> tuple[DLedgerNode, tuple]:
    """Complete the future of an RPC this node sent (None: it failed or timed out)."""
    if ctx[0] == "push":
        p, outs = ed.on_push_response(cfg, n.member, n.store, n.pusher, ctx, resp, now)
        return n.evolve(pusher=p), outs
    m, outs = srv.on_response(cfg.dledger, n.member, ctx, peer, resp, now)
    return idle_on_role_change(n.member, n.evolve(member=m)), outs


def handle_append(cfg: st.NodeConfig, n: DLedgerNode, body: Any, now: int, hook: Any = None, ref: Any = None
                  ) -> tuple[DLedgerNode, int, tuple]:
    """DLedgerServer#handleAppend from a local caller (DLedger's client RPC, or RocketMQ's
    DLedgerCommitLog): the future's pos (-1: rejected) and the outputs (an AppendResult when
    it completed at once)."""
    before = n
    req = ep.AppendEntryRequest(group=cfg.dledger.group, remote_id=n.member.self_id, body=body)
    s, p, pos, done = ep.handle_append(cfg, n.member, n.store, n.pusher, req, now, hook, ref=ref)
    n, outs = sync(cfg, before, n.evolve(store=s, pusher=p))
    return n, pos, ((done,) if done is not None else ()) + outs
