"""The generic world on the election protocol: the horizon, what is enabled when, RPC failures,
crashes, partitions, the quiet tail, determinism and trace replay."""

from __future__ import annotations

import gc
import io
import random

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from histories import runner
from property_tests.support.election import follower, leader, member
from reference_impl import core
from reference_impl.core import chooser, faults, state
from reference_impl.core.network import Send
from reference_impl.dledger_log import entry_pusher as ep
from reference_impl.election import leader_elector as elector
from reference_impl.election import records as el
from reference_impl.election import world as election_world

HB_CTX = ("hb", 1)


def profile(**weights):
    """A test profile with pinned timing: these tests are about the horizon and windows
    themselves; test_java_timing_* below adds the loop period."""
    return core.FaultProfile(name="test", delay_ms=(10, 50), timing="pinned", **weights)


def quiet_world(prof=None, **overrides):
    """A settled 3-node cluster at t = 0: n0 leads term 1 (next heartbeat due 2001), n1 and n2 follow (timeout 6001)."""
    cfg = election_world.make_config(3, overrides).evolve(profile=prof or profile())
    w = core.init(cfg)
    nodes = (leader("n0", term=1, last_send_heart_beat_time=0, last_succ_heart_beat_time=0),
             follower("n1", term=1, leader="n0", last_leader_heart_beat_time=0),
             follower("n2", term=1, leader="n0", last_leader_heart_beat_time=0))
    return w.evolve(nodes=nodes)


def inject(w, src, dst, msg, ctx=HB_CTX, timeout_ms=3000):
    """Node `src` sends `msg` to `dst` now, as a transition's Send output would."""
    w, _ = core.apply_outs(w, w.cfg.ids.index(src), (Send(dst=dst, msg=msg, ctx=ctx, timeout_ms=timeout_ms),))
    return w


def heartbeat(w, src="n0", dst="n1", term=1):
    return inject(w, src, dst, el.HeartBeatRequest(group="default", local_id=src, remote_id=dst, leader_id=src,
                                                   term=term))


def only(w, cls):
    return [e for e in core.enabled(w) if isinstance(e, cls)]


def step(w, ev):
    assert core.is_enabled(w, ev), f"{ev} not enabled in {core.enabled(w)}"
    return core.step(w, ev)[0]


# --- the horizon ---


def test_fresh_cluster_ticks_every_node_at_time_zero():
    """All members boot as candidates whose first loop is due at 0."""
    w = core.init(election_world.make_config(3).evolve(profile=faults.profile("none").evolve(timing="pinned")))
    assert core.horizon(w) == 0 and core.enabled(w) == [core.Tick(node=0), core.Tick(node=1), core.Tick(node=2)]


def test_java_timing_staggers_the_first_loops():
    """Under Java timing processes started together begin their loops up to stagger_ms apart:
    every first tick may fire in [0, stagger_ms], and one of them must by then."""
    w = core.init(election_world.make_config(3).evolve(profile=faults.profile("none")))
    stagger = w.cfg.profile.stagger_ms
    assert stagger >= 1 and core.horizon(w) == stagger
    assert [core.tick_window(w, i) for i in range(3)] == [(0, stagger)] * 3
    late = core.Tick(node=1, late=stagger)
    assert core.is_enabled(w, late) and core.event_time(w, late) == stagger
    assert not core.is_enabled(w, core.Tick(node=1, late=stagger + 1))
    w2 = core.step(w, late)[0]
    assert w2.fresh == {0, 2} and core.tick_window(w2, 0) == (stagger, stagger)  # node 0 must go now


def test_java_timing_notices_a_due_condition_within_one_loop_period():
    """A follower's timeout falls due while its StateMaintainer sleeps between idle loops:
    Java notices it at the next loop, up to maintainerSleepMs (10) later. A leader's next
    heartbeat is the same. A latch released by a reply wakes its thread at once."""
    w = quiet_world(profile().evolve(timing="java"))
    assert core.horizon(w) == 2001 + 10 and core.tick_window(w, 0) == (0, 10)
    tick = core.Tick(node=0, late=7)
    w2 = step(w, tick)
    assert w2.now == 2008 and w2.nodes[0].round is not None  # the heartbeat round started 7 ms late
    hb = only(w2, core.Deliver)[0]
    w3 = step(w2, hb)
    reply = only(w3, core.Deliver)[0]
    w4 = step(w3, reply)  # n0's round sees a reply; the latch waits for the second
    w5 = step(w4, only(w4, core.Deliver)[0])
    w6 = step(w5, only(w5, core.Deliver)[0])
    assert w6.nodes[0].round.released_at == w6.now and core.tick_window(w6, 0) == (0, 0)


def test_java_timing_notices_a_term_bump_at_the_next_loop():
    """A higher-term vote request sets needIncreaseTermImmediately at the moment it arrives;
    the maintainer adopts the term at its next loop, up to one period later (the reference
    under pinned timing does it at once), so a reply can go out first."""
    w = quiet_world(profile().evolve(timing="java"))
    w = inject(w, "n2", "n1", el.VoteRequest(group="default", remote_id="n1", leader_id="n2", term=5),
               ctx=("vote", 1))
    w = step(w, only(w, core.Deliver)[0])
    assert w.nodes[1].need_increase_term_immediately and w.since[1] == w.now
    assert core.tick_window(w, 1) == (0, 10)


def test_nothing_due_means_nothing_enabled():
    """With the elector off and no message in flight nothing can happen: horizon -1, no events."""
    w = core.init(election_world.make_config(3, {"enable_leader_elector": False}).evolve(profile=profile()))
    assert core.horizon(w) == -1 and core.enabled(w) == []


def test_horizon_is_the_earliest_wake_time():
    """In a settled cluster the leader's next heartbeat (2001) is the only thing due."""
    w = quiet_world()
    assert core.horizon(w) == 2001 and core.enabled(w) == [core.Tick(node=0)]


def test_delivery_window_opens_at_min_delay_and_bounds_the_horizon():
    """A message is deliverable from sent + dmin and must be handled by sent + dmax (the horizon)."""
    w = heartbeat(quiet_world())
    (dv,) = only(w, core.Deliver)
    assert core.horizon(w) == 50 and only(w, core.Tick) == []
    assert core.event_time(w, dv) == 10
    assert step(w, dv).now == 10


def test_delivery_not_enabled_before_its_window_opens():
    """At t = 45 a message sent at 45 is not deliverable while an older one bounds the horizon at 50."""
    w = heartbeat(quiet_world())
    w = heartbeat(w.evolve(now=45), dst="n2")
    assert [net_dst(w, e) for e in only(w, core.Deliver)] == [1]
    w = step(w, only(w, core.Deliver)[0])  # at 45; n1's reply (sent 45) bounds the horizon at 95 too
    assert core.horizon(w) == 95 and sorted(net_dst(w, e) for e in only(w, core.Deliver)) == [0, 2]


def net_dst(w, ev):
    return next(e.dst for e in w.net.flight if e.id == ev.env)


def test_tick_happens_at_the_horizon_and_carries_its_draw():
    """A tick runs the node's due threads at the horizon; its draw is free (is_enabled ignores it)."""
    w = quiet_world()
    assert core.is_enabled(w, core.Tick(node=0, draw=1234))
    w2, _ = core.step(w, core.Tick(node=0, draw=1234))
    assert w2.now == 2001 and len(w2.net.flight) == 2  # heartbeats to n1 and n2


# --- RPCs ---


def test_answered_rpc_completes_once_at_the_requester():
    """Request delivered, reply delivered: the RPC closes and the requester's callback ran (peer marked live)."""
    w = heartbeat(quiet_world())
    w = step(w, only(w, core.Deliver)[0])
    assert len(w.net.flight) == 1 and w.net.flight[0].reply
    w = step(w, only(w, core.Deliver)[0])
    assert w.net.rpcs == () and w.nodes[0].peers_live_table["n1"] is True


def test_lost_request_fails_at_the_rpc_deadline():
    """A dropped request leaves the RPC open until sent + 3000, then RpcFail runs the callback with no response."""
    w = heartbeat(quiet_world(profile(loss=0.1), enable_leader_elector=False))
    assert only(w, core.RpcFail) == []
    w = step(w, only(w, core.Drop)[0])
    assert core.horizon(w) == 3000 and core.enabled(w) == [core.RpcFail(rpc=w.net.rpcs[0].id)]
    w = step(w, core.enabled(w)[0])
    assert w.now == 3000 and w.net.rpcs == () and w.nodes[0].peers_live_table["n1"] is False


def test_request_to_a_dead_node_fails_at_once():
    """Delivering a request to a crashed node refuses the connection: RpcFail is due at the delivery time."""
    w = quiet_world(profile(crash=0.1))
    w = step(w, core.Crash(node=1))
    w = heartbeat(w)
    w = step(w, only(w, core.Deliver)[0])
    assert w.now == 10 and core.horizon(w) == 10
    w = step(w, only(w, core.RpcFail)[0])
    assert w.now == 10 and w.nodes[0].peers_live_table["n1"] is False


def test_crash_drops_messages_and_fails_the_rpcs_the_node_served():
    """Crash n1: envelopes to and from it vanish, the RPC it served fails now, the RPC it issued is forgotten."""
    w = heartbeat(quiet_world(profile(crash=0.1)))  # n0 -> n1
    w = inject(w, "n1", "n2", el.VoteRequest(group="default", remote_id="n2", leader_id="n1", term=2),
               ctx=("vote", 1))
    w = inject(w, "n2", "n0", el.VoteRequest(group="default", remote_id="n0", leader_id="n2", term=2),
               ctx=("vote", 1))
    w = step(w.evolve(now=7), core.Crash(node=1))
    assert [(e.src, e.dst) for e in w.net.flight] == [(2, 0)]
    assert sorted((r.requester, r.responder, r.deadline_ms) for r in w.net.rpcs) == [(0, 1, 7), (2, 0, 3000)]
    assert w.alive == (True, False, True) and w.history.crashes == 1


def test_duplicated_reply_is_ignored_once_the_rpc_closed():
    """Two copies of one ACCEPT count once: the second finds its RPC closed and is discarded."""
    w = quiet_world(profile(duplicate=0.1), enable_leader_elector=False)
    n0, outs = elector.vote_for_quorum_responses(w.cfg.proto.dledger, member("n0", curr_term=2), 0, 0)
    w, _ = core.apply_outs(core.set_node(w, 0, n0), 0, tuple(o for o in outs if isinstance(o, Send) and o.dst == "n1"))
    w = core.set_node(w, 1, member("n1", curr_term=2))
    w = step(w, only(w, core.Deliver)[0])  # n1 grants
    w = step(w, only(w, core.Duplicate)[0])
    first, second = only(w, core.Deliver)
    w = step(w, first)
    assert w.nodes[0].round.accepted_num == 2
    w2 = step(w, second)
    assert w2.nodes == w.nodes and w2.net.flight == ()


def test_duplicated_request_is_answered_twice_and_completes_once():
    """A duplicated vote request reaches the voter twice; only the first reply completes the RPC."""
    w = quiet_world(profile(duplicate=0.1), enable_leader_elector=False)
    n0, outs = elector.vote_for_quorum_responses(w.cfg.proto.dledger, member("n0", curr_term=2), 0, 0)
    w, _ = core.apply_outs(core.set_node(w, 0, n0), 0, tuple(o for o in outs if isinstance(o, Send) and o.dst == "n1"))
    w = core.set_node(w, 1, member("n1", curr_term=2))
    w = step(w, only(w, core.Duplicate)[0])
    for _ in range(2):
        w = step(w, only(w, core.Deliver)[0])  # both copies of the request
    assert sum(e.reply for e in w.net.flight) == 2  # the RPC was still open for both answers
    while only(w, core.Deliver):
        w = step(w, only(w, core.Deliver)[0])
    assert w.nodes[0].round.accepted_num == 2 and w.net.rpcs == ()


# --- partitions ---


def test_partition_makes_messages_undeliverable_and_drops_them_when_their_window_closes():
    """Across a cut link no Deliver is enabled; at sent + dmax the message is dropped even without a loss fault."""
    w = heartbeat(quiet_world(profile(partition=0.1)))
    w = step(w, core.Partition(groups=((0,), (1, 2))))
    assert w.net.cut == frozenset({(0, 1), (1, 0), (0, 2), (2, 0)})
    assert only(w, core.Deliver) == []
    (drop,) = [e for e in core.protocol_events(w) if isinstance(e, core.Drop)]
    assert core.horizon(w) == 50
    w = step(w, drop)
    assert w.net.flight == () and len(w.net.rpcs) == 1  # the RPC now waits for its deadline


def test_cut_message_is_not_droppable_as_loss_before_its_window_closes():
    """A message behind a cut is not a loss candidate: only the forced drop at the window's end removes it."""
    w = heartbeat(quiet_world(profile(one_way=0.1, loss=0.1)))
    w = step(w, core.CutLink(src=0, dst=1))
    assert [e for e in core.fault_events(w) if isinstance(e, core.Drop)] == []


def test_one_way_cut_blocks_one_direction_only():
    """CutLink(0, 1): 0 -> 1 undeliverable, 1 -> 0 delivered."""
    w = heartbeat(quiet_world(profile(one_way=0.1)))
    w = inject(w, "n1", "n0", el.VoteRequest(group="default", remote_id="n0", leader_id="n1", term=1),
               ctx=("vote", 1))
    w = step(w, core.CutLink(src=0, dst=1))
    assert [net_dst(w, e) for e in only(w, core.Deliver)] == [0]


def test_heal_restores_every_link():
    """Heal clears the cut set, and an in-window message is deliverable again."""
    w = heartbeat(quiet_world(profile(partition=0.1, heal=0.1)))
    w = step(w, core.Partition(groups=((0,), (1, 2))))
    w = step(w, core.Heal())
    assert w.net.cut == frozenset() and len(only(w, core.Deliver)) == 1


def test_calm_heals_restarts_and_ends_faults():
    """At calm_at_ms: links heal, down nodes restart, no fault is enabled any more and delays shrink to 1..5 ms."""
    prof = profile(crash=0.1, restart=0.1, partition=0.1, loss=0.1).evolve(calm_at_ms=1000)
    w = step(quiet_world(prof), core.Crash(node=2))
    w = step(w, core.Partition(groups=((0,), (1, 2))))
    assert core.horizon(w) == 1000 and core.Calm() in core.enabled(w)
    w = step(w, core.Calm())
    assert w.now == 1000 and w.net.cut == frozenset() and w.alive == (True, True, True)
    assert w.nodes[2].role is el.Role.CANDIDATE and w.nodes[2].curr_term == 1  # restarted from its term file
    assert w.history.calm and w.history.calm_at_ms == 1000 and core.fault_events(w) == []
    assert core.delay_window(w) == core.CALM_DELAY_MS


def test_fault_events_follow_the_profile():
    """Only the fault kinds with a weight are enabled; a restart only for a down node, heal only with a cut."""
    w = heartbeat(quiet_world(profile(crash=0.1)))
    assert {type(e) for e in core.fault_events(w)} == {core.Crash}
    w = heartbeat(quiet_world(profile(restart=0.1, heal=0.1)))
    assert core.fault_events(w) == []
    assert core.fault_events(heartbeat(quiet_world())) == []


def test_isolations_include_minorities_for_five_nodes():
    """The partition menu isolates each node, and (4+ nodes) each consecutive minority."""
    groups = core.isolations(5)
    assert ((0,), (1, 2, 3, 4)) in groups and ((0, 4), (1, 2, 3)) in groups and len(groups) == 10


# --- messages delivered in send order (Protocol.fifo) ---


def log_world(processor, **weights):
    """Three DLedger servers, no clients, n0 leading (the Java tests' harness), pinned timing and
    10..50 ms delays, after n0's first loop: nothing in flight, n0 next due at 1001."""
    cfg = core.protocol("dledger_log").make_config(3, {"forced_leader": "n0", "clients": 0,
                                                       "push_processor": processor})
    w = core.init(cfg.evolve(profile=profile(**weights)))
    while (ticks := only(w, core.Tick)) and core.horizon(w) == 0:  # n0's dispatchers and checker take the term
        w = step(w, ticks[0])
    assert w.net.flight == () and core.horizon(w) == 1001
    return w


def push(w, dst, seq):
    """n0 pushes a COMMIT to `dst` now, the `seq`-th push it sends."""
    msg = ep.PushEntryRequest(group=w.cfg.proto.node.dledger.group, remote_id=dst, leader_id="n0", term=0,
                              type=ep.PushType.COMMIT, seq=(0, seq))
    return inject(w, "n0", dst, msg, ctx=("push",))


def pushes_deliverable(w):
    """(destination, seq) of each push whose Deliver is enabled."""
    flight = {e.id: e for e in w.net.flight}
    return [(flight[e.env].dst, flight[e.env].msg.seq[1]) for e in only(w, core.Deliver)
            if isinstance(flight[e.env].msg, ep.PushEntryRequest)]


def deliver_push(w, seq):
    return step(w, core.Deliver(env=next(e.id for e in w.net.flight
                                         if isinstance(e.msg, ep.PushEntryRequest) and e.msg.seq[1] == seq)))


@pytest.mark.parametrize(("processor", "deliverable"), [("single_thread", [(1, 1), (2, 3)]),
                                                        ("pool", [(1, 1), (1, 2), (2, 3)])])
def test_pushes_on_one_link_are_delivered_in_send_order_under_single_thread(processor, deliverable):
    """single_thread: one Netty channel per peer, read by one thread, so of two pushes in flight
    from n0 to n1 only the older may be delivered (n0's push to n2 is on another link); under
    pool the remoting pool may handle either first, and the world delivers them in any order."""
    w = push(push(push(log_world(processor), "n1", 1), "n1", 2), "n2", 3)
    assert pushes_deliverable(w) == deliverable
    w = deliver_push(w, 1)
    assert (1, 2) in pushes_deliverable(w)


def test_a_duplicated_push_waits_behind_later_ones_and_is_then_overtaken():
    """A duplicate's copy is a later envelope on the link: it waits for the push sent after its
    original, its window (closing at 50) does not bound the horizon meanwhile, it is due at once
    when its turn comes past that window, and the follower's handler drops it as overtaken."""
    w = push(log_world("single_thread", duplicate=0.1), "n1", 1)
    w = push(w.evolve(now=45), "n1", 2)
    w = step(w, core.Duplicate(env=w.net.flight[0].id))
    assert pushes_deliverable(w) == [(1, 1)] and core.horizon(w) == 50
    w = deliver_push(w, 1)  # at 45
    w = step(w, core.Tick(node=1, thread=1))  # n1's EntryHandler answers it
    assert pushes_deliverable(w) == [(1, 2)] and core.horizon(w) == 95  # n0's push 2 and n1's answer
    w = deliver_push(w, 2)  # at 55
    copy = core.Deliver(env=next(e.id for e in w.net.flight if isinstance(e.msg, ep.PushEntryRequest)))
    assert pushes_deliverable(w) == [(1, 1)] and core.event_time(w, copy) == 55 == core.horizon(w)
    handler = w.nodes[1].handler
    w = step(w, copy)
    assert w.nodes[1].handler == handler  # overtaken by push 2: never handled


@pytest.mark.parametrize("name", ["dledger_log", "dledger_commitlog"])
@pytest.mark.parametrize(("overrides", "ordered"), [({}, False), ({"push_processor": "single_thread"}, True),
                                                    ({"dledger_version": "fixed"}, True)])
def test_only_pushes_travel_in_send_order_and_only_to_one_handling_thread(name, overrides, ordered):
    p = core.protocol(name)
    c = p.make_config(3, overrides).proto
    request = ep.PushEntryRequest(group="default", remote_id="n1", leader_id="n0", term=1, type=ep.PushType.COMMIT)
    assert p.fifo(c, request) is ordered
    assert not p.fifo(c, ep.PushEntryResponse()) and not p.fifo(c, el.HeartBeatResponse())


# --- whole histories ---


def record(cfg, seed, steps=400):
    seen = []
    result = runner.simulate(cfg, seed, steps, hooks=(lambda i, b, e, a, o: seen.append((e, a)),))
    return result, seen


def test_same_seed_gives_the_same_history():
    """(config, seed) determines the history: identical events and identical worlds."""
    cfg = election_world.make_config(3).evolve(profile=faults.profile("standard"))
    r1, h1 = record(cfg, 11)
    r2, h2 = record(cfg, 11)
    assert h1 == h2 and r1.world == r2.world
    assert record(cfg, 12)[1] != h1


def test_replaying_a_trace_reproduces_every_state():
    """A simulated history written as a trace replays through the reference to the same world at every step."""
    cfg = election_world.make_config(3).evolve(profile=faults.profile("hostile"))
    out = io.StringIO()
    original = []
    result = runner.simulate(cfg, 5, 600, trace_out=out, hooks=(lambda i, b, e, a, o: original.append(a),))
    replayed = []
    rep = runner.replay(io.StringIO(out.getvalue()), hooks=(lambda i, b, e, a, o: replayed.append(a),))
    assert rep.mismatch is None and rep.run.steps == result.steps == 600
    assert replayed == original


@settings(max_examples=12)
@given(seed=st.integers(0, 10_000), nodes=st.sampled_from([3, 5]),
       prof=st.sampled_from(["standard", "lossy", "hostile"]))
def test_every_step_respects_time_windows_and_deadlines(seed, nodes, prof):
    """Time never goes back, deliveries land in their window, RPCs fail at their deadline, ticks when due."""
    cfg = election_world.make_config(nodes).evolve(profile=faults.profile(prof))

    def check(i, before, ev, after, obs):
        assert after.now >= before.now
        if isinstance(ev, core.Deliver):
            env = next(e for e in before.net.flight if e.id == ev.env)
            # dmax of the profile: a message sent before the quiet tail keeps the window it was sent with.
            assert env.sent_ms + core.delay_window(before)[0] <= after.now <= env.sent_ms + cfg.profile.delay_ms[1]
        elif isinstance(ev, core.RpcFail):  # at its deadline, or within the scan window of an invokeAsync timeout
            rpc = next(r for r in before.net.rpcs if r.id == ev.rpc)
            lo, hi = core.rpc_window(before, ev.rpc)
            assert lo <= ev.late <= hi <= rpc.window and after.now == rpc.deadline_ms + ev.late >= before.now
        elif isinstance(ev, core.Tick):  # within its window: wake time (not before the state changed) + late
            lo, hi = core.tick_window(before, ev.node)
            assert lo <= ev.late <= hi and after.now == max(core.wake_times(before)[ev.node] + ev.late, before.now)

    runner.simulate(cfg, seed, 300, hooks=(check,))


def test_records_are_frozen_here_and_both_evolves_agree():
    """The suite runs with frozen records (property_tests/__init__.py): assigning to a field
    raises. Outside tests records are plain slotted classes whose `evolve` copies with direct
    slot stores; both flavours of `evolve` give equal, equally hashed records."""
    w = quiet_world()
    try:
        w.now = 5
    except attrs.exceptions.FrozenInstanceError:
        pass
    else:
        raise AssertionError("records are not frozen in the test suite")

    class Plain:
        a: int
        b: tuple = ()

    frozen_cls = attrs.frozen(kw_only=True)(type("Frozen", (), {"__annotations__": Plain.__annotations__, "b": ()}))
    plain_cls = attrs.define(kw_only=True, unsafe_hash=True, on_setattr=attrs.setters.NO_OP)(Plain)
    f, p = frozen_cls(a=1, b=(2,)), plain_cls(a=1, b=(2,))
    f2, p2 = state._make_evolve(frozen_cls, True)(f, b=(3,)), state._make_evolve(plain_cls, False)(p, b=(3,))
    assert (f2.a, f2.b) == (p2.a, p2.b) == (1, (3,)) and (f.a, f.b) == (p.a, p.b) == (1, (2,))
    assert p2 == plain_cls(a=1, b=(3,)) and hash(p2) == hash(plain_cls(a=1, b=(3,)))


def test_an_evolve_refuses_a_field_the_record_does_not_have():
    class Plain:
        a: int

    plain_cls = attrs.define(kw_only=True, unsafe_hash=True, on_setattr=attrs.setters.NO_OP)(Plain)
    frozen_cls = attrs.frozen(kw_only=True)(type("Frozen", (), {"__annotations__": {"a": "int"}}))
    for cls, frozen in ((plain_cls, False), (frozen_cls, True)):
        evolve = state._make_evolve(cls, frozen)
        assert evolve(cls(a=1)) == cls(a=1) and evolve(cls(a=1), a=2) == cls(a=2)
        try:
            evolve(cls(a=1), b=2)
        except TypeError:
            continue
        raise AssertionError("evolve took a field the record does not have")


def test_the_chooser_draws_below_n_exactly_as_randrange_does():
    """SeededChooser's contract names `randrange`; `chooser.below` is its draw without the
    argument checks, and must take the very same bits from the generator."""
    for seed in range(20):
        a, b = random.Random(seed), random.Random(seed)
        for n in (1, 2, 3, 5, 8, 9, 11, 100, 1000, 1001, 2**16, 2**20 + 3):
            assert a.randrange(n) == chooser.below(b.getrandbits, n)
        assert a.getstate() == b.getstate()


def test_a_history_runs_with_fewer_young_collections_and_restores_the_threshold():
    before = gc.get_threshold()
    seen = []
    runner.run(quiet_world().cfg, chooser.SeededChooser(1).choose, 20,
               hooks=(lambda *step: seen.append(gc.get_threshold()[0]),))
    assert seen and all(t >= runner.YOUNG_COLLECTION_THRESHOLD for t in seen)
    assert gc.get_threshold() == before
