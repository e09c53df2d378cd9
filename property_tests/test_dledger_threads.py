"""A DLedger server's Java threads as the world's actors (docs/dledger.md, "How the model runs the
Java threads"): each thread's tick, its wake time and lateness, and the interleavings DLedger 0.2.6
has that one atomic tick per server could not (issue 22): the new leader's QuorumAckChecker
committing before its dispatcher's next push, a catching-up follower appending one entry per
pass, two dispatchers on either side of a client append, and the candidate whose self-vote comes
after a handler granted another candidate the same new term."""

from __future__ import annotations

from typing import Any

from property_tests.support.dledger import PEERS3, body, leader_store
from reference_impl import core
from reference_impl.core import codec
from reference_impl.core import network as net_mod
from reference_impl.dledger_log import entry_pusher as ep
from reference_impl.dledger_log import log_points as lp
from reference_impl.dledger_log import server as dn
from reference_impl.dledger_log import store as st
from reference_impl.election import log_points as election_points
from reference_impl.election import records as el
from reference_impl.election import world as election_world
from spec import properties

PINNED = core.FaultProfile(name="one-ms", delay_ms=(1, 1), timing="pinned")
HANDLER, CHECKER, FLUSH = 1, 4, 5  # a 3-server node: maintainer, handler, 2 dispatchers, checker, flush


def dispatcher_thread(peer: str) -> int:
    return 2 + [p for p in PEERS3 if p != "n0"].index(peer)


def log_world(stores: dict[str, st.Store] | None = None, clients: int = 0, **config: Any) -> core.World:
    """Three DLedger servers, n0 leading term 0 (the Java tests' harness), 1 ms messages, pinned
    timing; `stores` gives servers their logs at start-up (recovered, as after a restart)."""
    cfg = core.protocol("dledger_log").make_config(3, {"forced_leader": "n0", "clients": clients, **config})
    w = core.init(cfg.evolve(profile=PINNED))
    for node_id, s in (stores or {}).items():
        i = cfg.ids.index(node_id)
        w = core.set_node(w, i, dn.boot(cfg.proto.node, node_id, 0, store=s, forced_leader="n0"))
    return w


def ticks(w: core.World) -> list[core.Tick]:
    return [e for e in core.protocol_events(w) if isinstance(e, core.Tick)]


def tick(w: core.World, node: str, thread: int) -> tuple[core.World, tuple]:
    ev = core.Tick(node=w.cfg.ids.index(node), thread=thread)
    assert core.is_enabled(w, ev), (ev, core.protocol_events(w))
    return core.step(w, ev)


def deliver(w: core.World, match: Any) -> tuple[core.World, tuple]:
    """Deliver the first enabled message `match(envelope)` accepts."""
    for ev in core.protocol_events(w):
        if isinstance(ev, core.Deliver) and match(net_mod.find(w.net, ev.env)):
            return core.step(w, ev)
    raise AssertionError(f"no such delivery among {core.protocol_events(w)}")


def push_of(kind: ep.PushType, dst: int | None = None) -> Any:
    return lambda e: isinstance(e.msg, ep.PushEntryRequest) and e.msg.type is kind and dst in (None, e.dst)


def push_reply_to(dst: int) -> Any:
    return lambda e: isinstance(e.msg, ep.PushEntryResponse) and e.dst == dst


def sent_pushes(w: core.World, after: core.World) -> list[ep.PushEntryRequest]:
    return [e.msg for e in after.net.flight if e.id >= w.net.next_id and isinstance(e.msg, ep.PushEntryRequest)]


def node(w: core.World, node_id: str) -> dn.DLedgerNode:
    return w.nodes[w.cfg.ids.index(node_id)]


# --- the threads of a server ---


def test_a_server_lists_its_java_threads_in_a_fixed_order() -> None:
    """StateMaintainer, EntryHandler, one EntryDispatcher per peer (peers order), QuorumAckChecker, the
    flush service: their Java names, and one wake time each."""
    w = log_world()
    n0 = node(w, "n0")
    assert dn.thread_names(w.cfg.proto.node, n0) == (
        "StateMaintainer", "EntryHandler-n0", "EntryDispatcher-n0-n1", "EntryDispatcher-n0-n2",
        "QuorumAckChecker-n0", "DLedgerFlushDataService")
    assert len(dn.thread_wakes(w.cfg.proto.node, n0)) == 6 and w.since[0] == (0,) * 6


def test_the_chooser_lists_due_threads_node_by_node_in_thread_order() -> None:
    """protocol_events: a Tick per due (node, thread), nodes in order, a node's threads in index order;
    a server that has nothing to do lists none (n1, n2 here: followers with an empty queue)."""
    w = log_world({"n0": leader_store(st.LogConfig(), 1)})
    assert [(t.node, t.thread) for t in ticks(w)] == [(0, 2), (0, 3), (0, CHECKER)]  # recovered: nothing to flush


def test_a_thread_tick_runs_that_thread_only() -> None:
    """Tick(n0, EntryDispatcher-n0-n1) pushes n1's COMPARE and leaves n2's dispatcher and the checker due."""
    w = log_world({"n0": leader_store(st.LogConfig(), 1)})
    w2, _ = tick(w, "n0", dispatcher_thread("n1"))
    (req,) = sent_pushes(w, w2)
    assert (req.remote_id, req.type) == ("n1", ep.PushType.COMPARE)
    assert [(t.node, t.thread) for t in ticks(w2)] == [(0, 3), (0, CHECKER)]
    assert w2.since[0][dispatcher_thread("n1")] == 0 and node(w2, "n0").pusher.dispatchers[0].wait_until == 3000


def test_a_replication_thread_notices_polled_work_within_1_ms_under_java_timing() -> None:
    """waitForRunning(1): a dispatcher's new entry (handleAppend wakes no dispatcher in 0.2.6) may be
    pushed at once or 1 ms later; the window is [0, 1] of lateness, and the world's horizon waits for it."""
    w = log_world({"n0": leader_store(st.LogConfig(), 1)})
    w = w.evolve(cfg=w.cfg.evolve(profile=PINNED.evolve(timing="java", stagger_ms=0)))
    assert core.tick_window(w, 0, dispatcher_thread("n1")) == (0, 1)


# --- the interleavings ---


def settled_new_leadership() -> core.World:
    """n0 leads with two entries (term 0) that n1 and n2 hold too, none committed: its dispatchers
    COMPARE at index 1 (time 0), the followers answer SUCCESS (time 1), the answers are back (time 2)."""
    s = leader_store(st.LogConfig(), 2)
    w = log_world({"n0": s, "n1": s, "n2": s})
    for k in (dispatcher_thread("n1"), dispatcher_thread("n2"), CHECKER):
        w, _ = tick(w, "n0", k)
    for dst in (1, 2):
        w, _ = deliver(w, push_of(ep.PushType.COMPARE, dst))
        w, _ = tick(w, f"n{dst}", HANDLER)
    return w


def test_new_leaders_quorum_ack_checker_commits_before_the_dispatchers_next_push() -> None:
    """EntryDispatcher#changeState(APPEND) wakes the QuorumAckChecker, which commits (by counting, index 1)
    before the dispatcher's next doWork: that push, a bare COMMIT, carries the new commit index. The
    other order, the push first with the old index, is enabled too: both happen in Java."""
    w = settled_new_leadership()
    for dst in (1, 2):
        w, _ = deliver(w, push_reply_to(0))
        w, _ = tick(w, "n0", dispatcher_thread(f"n{dst}"))  # get returns: APPEND, the checker woken
    n0 = node(w, "n0")
    assert n0.pusher.checker_woken and n0.store.committed_index == -1
    due = {(t.node, t.thread) for t in ticks(w)}
    assert {(0, CHECKER), (0, dispatcher_thread("n1")), (0, dispatcher_thread("n2"))} <= due
    first, _ = tick(w, "n0", CHECKER)
    assert node(first, "n0").store.committed_index == 1
    after, _ = tick(first, "n0", dispatcher_thread("n1"))
    (commit,) = sent_pushes(first, after)
    assert (commit.type, commit.commit_index) == (ep.PushType.COMMIT, 1)
    other, _ = tick(w, "n0", dispatcher_thread("n1"))
    (early,) = sent_pushes(w, other)
    assert (early.type, early.commit_index) == (ep.PushType.COMMIT, -1)


def test_catching_up_follower_appends_one_entry_per_pass_with_a_commit_move_after_each() -> None:
    """EntryHandler#doWork: three APPENDs waiting (commit index 2) are three passes, each an
    appendAsFollower and its updateCommittedIndex: the lines one per entry, the commit 0, 1, 2."""
    leader_log = leader_store(st.LogConfig(), 3).evolve(committed_index=2)
    w = log_world({"n0": leader_log})
    cfg = w.cfg.proto.node
    n1 = node(w, "n1")
    h = n1.handler
    for e in leader_log.entries:
        req = ep.PushEntryRequest(group="default", remote_id="n1", leader_id="n0", term=0, type=ep.PushType.APPEND,
                                  entry=e, commit_index=2, seq=(0, e.index + 1))
        h, _ = dn.eh.handle_push(cfg, n1.member, n1.store, h, req, 100 + e.index, 0)
    w = core.set_node(w, 1, n1.evolve(handler=h))
    seen = []
    for _ in range(3):
        before = node(w, "n1")
        w, obs = tick(w, "n1", HANDLER)
        lines = lp.node_lines(w.cfg.proto, True, before, node(w, "n1"), [o for _, o in obs], 0)
        seen.append(lines)
    assert seen == [[("DLedgerStore#appendAsFollower", {"index": i, "term": 0}),
                     ("DLedgerStore#updateCommittedIndex", {"index": i})] for i in range(3)]


def test_two_dispatchers_push_on_either_side_of_a_client_append() -> None:
    """Each EntryDispatcher is its own thread: with both due to push a COMMIT, one pushes before a
    client's append is taken and the other after it, so one pushes the bare COMMIT and the other the
    new entry at once (and the first pushes it in its next pass)."""
    w = settled_new_leadership()
    for dst in (1, 2):
        w, _ = deliver(w, push_reply_to(0))
        w, _ = tick(w, "n0", dispatcher_thread(f"n{dst}"))
    w, _ = tick(w, "n0", CHECKER)
    client = ep.AppendEntryRequest(group="default", remote_id="n0", body=body("k"))
    w = w.evolve(net=net_mod.send(w.net, w.now - 1, 1, 0, client, ("append", "k"), 3000))  # "from" n1: in flight
    assert core.horizon(w) == w.now
    before, _ = tick(w, "n0", dispatcher_thread("n1"))
    (commit,) = sent_pushes(w, before)
    mid, _ = deliver(before, lambda e: isinstance(e.msg, ep.AppendEntryRequest))
    assert node(mid, "n0").store.end_index == 2
    after, _ = tick(mid, "n0", dispatcher_thread("n2"))
    (append,) = sent_pushes(mid, after)
    assert (commit.type, commit.remote_id) == (ep.PushType.COMMIT, "n1")
    assert (append.type, append.remote_id, append.entry.index) == (ep.PushType.APPEND, "n2", 2)
    later, _ = tick(after, "n0", dispatcher_thread("n1"))
    assert [(r.type, r.entry.index) for r in sent_pushes(after, later)] == [(ep.PushType.APPEND, 2)]


def test_self_vote_refused_after_a_handler_granted_another_candidate_in_between() -> None:
    """DLedgerLeaderElector#maintainAsCandidate releases the MemberState lock between nextTerm and
    voteForQuorumResponses: n1's VoteRequest for the same new term is handled in between and ACCEPTed,
    and n0's own self-vote is then REJECT_ALREADY_VOTED. One vote per term still holds (ELE-2), and a
    MemberState snapshot between the two steps sees the new term with no vote."""
    cfg = election_world.make_config(3).evolve(profile=PINNED)
    w = core.init(cfg)
    m0 = w.nodes[0].evolve(curr_term=1, last_parse_result=el.ParseResult.WAIT_TO_VOTE_NEXT,
                           next_time_to_request_vote=100, next_loop_ms=100)
    w = core.set_node(w, 0, m0)
    w = core.set_node(w, 1, w.nodes[1].evolve(curr_term=2, curr_vote_for="n1", next_loop_ms=10_000,
                                              next_time_to_request_vote=10_000))
    w = core.set_node(w, 2, w.nodes[2].evolve(next_loop_ms=10_000, next_time_to_request_vote=10_000))
    w = w.evolve(now=99)
    request = el.VoteRequest(group="default", remote_id="n0", leader_id="n1", term=2)
    w = w.evolve(net=net_mod.send(w.net, 99, 1, 0, request, ("vote", 1), 3000))
    monitor = properties.Monitor(properties.for_protocol("election"))
    steps = 0

    def go(w: core.World, ev: Any) -> tuple[core.World, tuple]:
        nonlocal steps
        assert core.is_enabled(w, ev), (ev, core.protocol_events(w))
        after, obs = core.step(w, ev)
        steps += 1
        monitor.check(steps, w, ev, after, obs)
        return after, obs

    w, _ = go(w, core.Tick(node=0))  # nextTerm under the lock
    assert w.nodes[0].vote_start.term == 2
    assert election_points.snapshot(cfg.proto, w.nodes[0], True) == {
        "role": "CANDIDATE", "term": 2, "voted_for": None, "leader": None}
    assert core.Tick(node=0) in core.protocol_events(w)  # the self-vote could come first, too
    w, obs = go(w, next(e for e in core.protocol_events(w) if isinstance(e, core.Deliver)))
    assert w.nodes[0].curr_vote_for == "n1" and (0, el.VoteGranted(term=2, candidate="n1")) in obs
    reply = next(e.msg for e in w.net.flight if isinstance(e.msg, el.VoteResponse))
    assert reply.vote_result is el.VoteResult.ACCEPT
    w, obs = go(w, core.Tick(node=0))  # voteForQuorumResponses: the self-vote
    m = w.nodes[0]
    assert m.curr_vote_for == "n1" and (m.round.valid_num, m.round.accepted_num) == (1, 0)
    assert not [o for _, o in obs if isinstance(o, el.VoteGranted)]
    assert not monitor.violations


# --- each thread's lateness (Java timing) ---


def test_thread_slack_by_thread() -> None:
    """server.thread_slack: the maintainer's is the election's; the handler and the checker act at once when
    woken, else within their 1 ms poll; a dispatcher blocked in get, or whose sleep ends with its work
    there, at once; the flush service on time."""
    w = log_world({"n0": leader_store(st.LogConfig(), 1)})
    c, n0 = w.cfg.proto.node, node(w, "n0")
    assert dn.thread_slack(c, n0, 0, 0, 0) == 0  # no elector: nothing to notice late
    assert dn.thread_slack(c, n0, HANDLER, 0, 0) == 1
    assert dn.thread_slack(c, n0.evolve(handler=n0.handler.evolve(woken=True)), HANDLER, 0, 0) == 0
    assert dn.thread_slack(c, n0, CHECKER, 0, 0) == 1
    assert dn.thread_slack(c, n0.evolve(pusher=n0.pusher.evolve(checker_woken=True)), CHECKER, 0, 0) == 0
    assert dn.thread_slack(c, n0, FLUSH, 0, 10) == 0
    k = dispatcher_thread("n1")
    d = n0.pusher.dispatchers[0]
    assert dn.thread_slack(c, n0, k, 0, 0) == 1
    blocked = n0.evolve(pusher=n0.pusher.evolve(dispatchers=(d.evolve(waiting=1, wait_until=3000),) + n0.pusher.dispatchers[1:]))
    assert dn.thread_slack(c, blocked, k, 0, 3000) == 0
    asleep = n0.evolve(pusher=n0.pusher.evolve(dispatchers=(d.evolve(sleep_until=600),) + n0.pusher.dispatchers[1:]))
    assert dn.thread_slack(c, asleep, k, 100, 600) == 0  # the work was there before the sleep ended
    assert dn.thread_slack(c, asleep, k, 700, 600) == 1  # work that came after it is polled


def test_a_role_change_takes_the_wakeup_notices_away() -> None:
    """A thread not in the role it works in loops on waitForRunning(1), which takes a wakeup() at once."""
    w = log_world()
    n1 = node(w, "n1")
    woken = n1.evolve(handler=n1.handler.evolve(woken=True), pusher=n1.pusher.evolve(checker_woken=True))
    assert dn.idle_on_role_change(n1.member, woken) is woken
    moved = dn.idle_on_role_change(n1.member, woken.evolve(member=n1.member.evolve(role=el.Role.CANDIDATE)))
    assert not moved.handler.woken and not moved.pusher.checker_woken


def test_a_thread_that_is_not_due_does_nothing() -> None:
    """on_thread_tick of a thread with no work (a replay's or a script's stray tick) changes nothing."""
    w = log_world()
    n1 = node(w, "n1")
    for k in range(6):
        assert dn.on_thread_tick(w.cfg.proto.node, n1, k, 0, 0) == (n1, ())


def test_a_trace_names_the_thread_of_a_tick_and_refuses_an_unknown_one() -> None:
    """codec: a thread tick's JSON names its thread as Java does; decoding takes it back; a thread the node
    does not run is a DecodeError (exit 2 at the CLI), as is a thread named on a one-actor protocol."""
    w = log_world({"n0": leader_store(st.LogConfig(), 1)})
    ev = core.Tick(node=0, thread=dispatcher_thread("n2"))
    d = codec.encode_event(w, ev)
    assert d == {"kind": "tick", "node": "n0", "thread": "EntryDispatcher-n0-n2", "draw": 0}
    assert codec.decode_event(w, d) == ev
    for bad in ({**d, "thread": "EntryDispatcher-n0-n9"}, {"kind": "tick", "node": "n0"}):
        try:
            codec.decode_event(w, bad)
        except codec.DecodeError as e:
            assert "thread" in str(e)
        else:
            raise AssertionError(f"decoded {bad}")
    ew = core.init(election_world.make_config(3))
    try:
        codec.decode_event(ew, {"kind": "tick", "node": "n0", "thread": "StateMaintainer"})
    except codec.DecodeError as e:
        assert "one actor" in str(e)
    else:
        raise AssertionError("decoded a thread on an election node")
