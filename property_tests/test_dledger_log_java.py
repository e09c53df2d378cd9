"""DLedger 0.2.6's own replication tests (AppendAndGetTest, AppendAndPushTest), re-created with
the Java tests' numbers. Servers are launched as the tests' harness does
(`launchServer(group, peers, selfId, leaderId, FILE)`: elector off, term 0, role forced);
the tests' direct `handleAppend` calls are the scenario action `append`."""

from __future__ import annotations

from typing import Any

import pytest

from histories import runner, scenario_file
from property_tests.support.dledger import forced, results, run_script, store_of
from reference_impl import core
from reference_impl.dledger_log import entry_pusher as ep
from reference_impl.dledger_log import store as st
from reference_impl.election.records import Code

SEEDS = (1, 2, 3)


def ends(w: core.World, *ids: str) -> list[tuple[int, int]]:
    return [(store_of(w, i).begin_index, store_of(w, i).end_index) for i in ids]


@pytest.mark.parametrize("seed", SEEDS)
def test_append_and_get_single_server_in_file(seed: int) -> None:
    """AppendAndGetTest#testSingleServerInFile: 10 appends of 100 B get index i and pos i * (48 + 100)."""
    r, obs = run_script(1, [{"at_ms": 10, "do": "append", "node": "n0", "count": 10, "body_size": 100}], 50,
                        forced("n0"), seed)
    got = [(a.code, a.index, a.pos) for a in results(obs)]
    assert got == [(Code.SUCCESS, i, i * (st.BODY_OFFSET + 100)) for i in range(10)]
    assert [st.get(store_of(r.world, "n0"), i).body.length for i in range(10)] == [100] * 10


@pytest.mark.parametrize("seed", SEEDS)
def test_append_and_get_three_server_in_file_with_async_requests(seed: int) -> None:
    """AppendAndGetTest#testThreeServerInFileWithAsyncRequests: 10 futures on leader n1; after 1 s all
    ends are 9 and every future is SUCCESS with index i and the entry's pos."""
    r, obs = run_script(3, [{"at_ms": 10, "do": "append", "node": "n1", "count": 10}], 1010, forced("n1"), seed)
    assert ends(r.world, "n0", "n1", "n2") == [(0, 9)] * 3
    done = sorted((a.index, a.code, a.pos) for a in results(obs))
    leader = store_of(r.world, "n1")
    assert done == [(i, Code.SUCCESS, st.get(leader, i).pos) for i in range(10)]


@pytest.mark.parametrize("seed", SEEDS)
def test_append_and_get_three_server_in_file(seed: int) -> None:
    """AppendAndGetTest#testThreeServerInFile: appends one at a time (the client waits for each);
    each is SUCCESS with index i; 100 ms after the last, every ledgerEndIndex is 9."""
    steps = [{"at_ms": 10 + 20 * i, "do": "append", "node": "n1"} for i in range(10)]
    r, obs = run_script(3, steps, 10 + 20 * 9 + 100, forced("n1"), seed)
    assert [(a.code, a.index) for a in sorted(results(obs), key=lambda a: a.index)] == [
        (Code.SUCCESS, i) for i in range(10)]
    assert ends(r.world, "n0", "n1", "n2") == [(0, 9)] * 3


@pytest.mark.parametrize("seed", SEEDS)
def test_append_and_push_push_committed_index(seed: int) -> None:
    """AppendAndPushTest#testPushCommittedIndex: n0 alone appends 10 x 256 B: end 9, committed -1;
    once n1 is launched as follower, within 3 s both committed indexes are 9 (piggy-backed)."""
    steps = [{"at_ms": 10, "do": "append", "node": "n0", "count": 10, "body_size": 256},
             {"at_ms": 20, "expect": [{"field": "ledger_end_index", "node": "n0", "eq": 9},
                                      {"field": "committed_index", "node": "n0", "eq": -1}]},
             {"at_ms": 30, "do": "restart", "node": "n1"},
             {"at_ms": 30, "do": "force_role", "node": "n1", "leader": "n0"},
             {"at_ms": 30, "within_ms": 3000, "expect": [{"field": "committed_index", "node": "n1", "eq": 9},
                                                          {"field": "committed_index", "node": "n0", "eq": 9}]}]
    r, _ = run_script(2, steps, 3100, forced("n0"), seed, down=["n1"])
    assert r.expectations and not r.failed_expectations, r.failed_expectations


@pytest.mark.parametrize("seed", SEEDS)
def test_append_and_push_push_network_offline(seed: int) -> None:
    """AppendAndPushTest#testPushNetworkOffline: n1 never started; 10 appends (128 B) end at 9 and
    after maxWaitAckTimeMs + 100 all ten are WAIT_QUORUM_ACK_TIMEOUT; then appending up to
    maxPendingRequestsNum more meets an at-once LEADER_PENDING_FULL (timed-out futures stay pending,
    so the 9992nd does: 10 + 9991 > 10000)."""
    steps = [{"at_ms": 10, "do": "append", "node": "n0", "count": 10, "body_size": 128},
             {"at_ms": 10 + 2500 + 100, "do": "append", "node": "n0", "count": 10000, "body_size": 128}]
    r, obs = run_script(2, steps, 2700, forced("n0"), seed, down=["n1"])
    first = [a for a in results(obs) if a.ref.key.startswith("s1-")]
    assert sorted((a.index, a.code) for a in first) == [(i, Code.WAIT_QUORUM_ACK_TIMEOUT) for i in range(10)]
    full = [a for a in results(obs) if a.code is Code.LEADER_PENDING_FULL]
    assert full and full[0].ref.key == "s2-9991" and full[0].pos == -1


@pytest.mark.parametrize("seed", SEEDS)
def test_append_and_push_push_network_not_stable(seed: int) -> None:
    """AppendAndPushTest#testPushNetworkNotStable: an append waits while n1 is down, completes within
    1.5 s of n1's launch; again after n1 is shut down and relaunched; both logs end at 1."""
    steps = [{"at_ms": 10, "do": "append", "node": "n0", "body_size": 128},
             {"at_ms": 510, "do": "restart", "node": "n1"},
             {"at_ms": 510, "do": "force_role", "node": "n1", "leader": "n0"},
             {"at_ms": 2010, "do": "shutdown", "node": "n1"},
             {"at_ms": 2010, "do": "append", "node": "n0", "body_size": 128},
             {"at_ms": 2510, "do": "restart", "node": "n1"},
             {"at_ms": 2510, "do": "force_role", "node": "n1", "leader": "n0"}]
    r, obs = run_script(2, steps, 4010, forced("n0"), seed, down=["n1"])
    done = {a.index: a for a in results(obs)}
    assert set(done) == {0, 1} and all(a.code is Code.SUCCESS for a in done.values())
    times = _completion_times(steps, 4010, seed)
    assert 510 < times[0] <= 2010 and 2510 < times[1] <= 4010
    assert ends(r.world, "n0", "n1") == [(0, 1), (0, 1)]


def _completion_times(steps: list, until: int, seed: int) -> dict:
    sc = scenario_file.parse({"protocol": "dledger_log", "nodes": 2, "config": forced("n0"), "until_ms": until,
                              "steps": steps, "down": ["n1"]})
    at: dict = {}

    def hook(i: int, before: Any, ev: Any, after: core.World, obs: tuple) -> None:
        for _, o in obs:
            if isinstance(o, ep.AppendResult):
                at.setdefault(o.index, after.now)

    runner.simulate(sc.cfg, seed, 1_000_000, until, hooks=(hook,))
    return at


class DropEveryThirdPush:
    """The test's Mockito spy on n1: every third handlePush call returns a future that never
    completes. Here: every third push delivered to n1 is lost instead (its RPC then times out)."""

    def __init__(self, inner: Any, target: int) -> None:
        self.inner, self.target, self.calls = inner, target, 0

    def choose(self, w: core.World) -> Any:
        ev = self.inner.choose(w)
        if isinstance(ev, core.Deliver):
            env = next(e for e in w.net.flight if e.id == ev.env)
            if env.dst == self.target and isinstance(env.msg, ep.PushEntryRequest):
                self.calls += 1
                if self.calls % 3 == 0:
                    return core.Drop(env=ev.env)
        return ev


@pytest.mark.parametrize("seed", SEEDS)
def test_append_and_push_push_missed(seed: int) -> None:
    """AppendAndPushTest#testPushMissed: with every third push to n1 missed, 10 appends (each awaited up
    to 3 s) all complete SUCCESS with index i; both logs are 0..9 (retries after maxPushTimeOutMs)."""
    from reference_impl.core import chooser

    steps = [{"at_ms": 10 + 3000 * i, "do": "append", "node": "n0", "body_size": 128} for i in range(10)]
    sc = scenario_file.parse({"protocol": "dledger_log", "nodes": 2, "config": forced("n0"), "until_ms": 30010,
                              "steps": steps})
    seen: list = []
    drop = DropEveryThirdPush(chooser.SeededChooser(seed), target=1)
    res = runner.run(sc.cfg, drop.choose, 2_000_000, 30010,
                     hooks=(lambda i, b, e, a, o: seen.extend((a.now, x) for _, x in o),))
    done = {x.index: (t, x.code) for t, x in seen if isinstance(x, ep.AppendResult)}
    assert sorted((i, c) for i, (_, c) in done.items()) == [(i, Code.SUCCESS) for i in range(10)]
    assert all(t - (10 + 3000 * i) <= 3000 for i, (t, _) in done.items())
    assert drop.calls >= 3
    assert ends(res.world, "n0", "n1") == [(0, 9), (0, 9)]


@pytest.mark.parametrize("seed", SEEDS)
def test_append_and_push_push_truncate(seed: int) -> None:
    """AppendAndPushTest#testPushTruncate: n0 (leader, term 0) writes 0..9; n1 (follower of n0) copies
    0..4; relaunched with n1 as leader, after 1 s both logs are 0..4 (n0's 5..9 truncated), and the
    next 10 appends to n1 get indexes 5..14."""
    steps = [{"at_ms": 10, "do": "append_as_leader", "node": "n0", "count": 10, "body_size": 128},
             {"at_ms": 20, "do": "shutdown", "node": "n0"},
             {"at_ms": 30, "do": "restart", "node": "n1"},
             {"at_ms": 30, "do": "force_role", "node": "n1", "leader": "n0"},
             {"at_ms": 40, "do": "copy_entries", "node": "n1", "from": "n0", "last": 4, "leader": "n0"},
             {"at_ms": 50, "do": "shutdown", "node": "n1"},
             {"at_ms": 60, "do": "restart", "node": "n1"},
             {"at_ms": 60, "do": "force_role", "node": "n1", "leader": "n1"},
             {"at_ms": 60, "do": "restart", "node": "n0"},
             {"at_ms": 60, "do": "force_role", "node": "n0", "leader": "n1"},
             {"at_ms": 1060, "expect": [{"field": "ledger_end_index", "node": "n0", "eq": 4},
                                        {"field": "ledger_end_index", "node": "n1", "eq": 4},
                                        {"field": "ledger_begin_index", "node": "n0", "eq": 0}]},
             {"at_ms": 1070, "do": "append", "node": "n1", "count": 10, "body_size": 128}]
    r, obs = run_script(2, steps, 2070, forced("n0"), seed, down=["n1"])
    assert r.expectations and not r.failed_expectations, r.failed_expectations
    assert sorted(a.index for a in results(obs) if a.code is Code.SUCCESS) == list(range(5, 15))
