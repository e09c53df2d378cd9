"""The dledger_log fast world (histories/fast/dledger_log) against the reference: the cross-check gate.

Every history here runs in both worlds and must match event for event (kind, node /
envelope / RPC ids, time, tick draw, lateness, observations), in verdicts with their
cause texts, spec.dledger_log.measure, fault counts and the whole final world (servers'
members, stores, pushers and entry handlers, clients, network, ghost, fault history,
`since`, `fresh`). A change to the reference that the twin does not follow fails here,
naming the first differing event. Seeds per case scale with the Hypothesis profile
(`ci`: 2, `dev`: 10, `nightly`: 200). The first run of a version of histories/fast on a
machine compiles the kernel (minutes of CPU); later runs load it from Numba's cache. The long check is
`python -m histories.fast.dledger_log.crosscheck` (docs/fast-worlds.md).
"""

from __future__ import annotations

import pytest
from hypothesis import settings

numba = pytest.importorskip("numba")

from histories import fast  # noqa: E402
from histories.fast import CapacityError, Unsupported  # noqa: E402
from histories.fast.dledger_log import crosscheck as xc  # noqa: E402
from histories.fast.dledger_log import runner as fl  # noqa: E402
from histories.mutants import election as em  # noqa: E402
from reference_impl.dledger_log import world as log_world  # noqa: E402
from spark_harness import history as hist  # noqa: E402

SEEDS = max(2, settings.default.max_examples // 15)  # ci 2, dev 10, nightly 200
STEPS = 1500
TIMINGS = ("java", "pinned")


@pytest.mark.parametrize("timing", TIMINGS)
@pytest.mark.parametrize("profile", xc.PROFILES)
@pytest.mark.parametrize("nodes", [3, 5])
def test_twin_matches_reference_under_every_fault_profile(profile, nodes, timing):
    cfg = xc.config(profile, nodes, timing=timing)
    for seed in range(SEEDS):
        assert xc.compare(cfg, seed, STEPS, None) == [], (profile, nodes, timing, seed)


@pytest.mark.parametrize("name", [name for name in xc.CONFIGS if name != "default"])
def test_twin_matches_reference_under_config_overrides(name):
    """The version profiles (0.2.6, 0.3.1.2, fixed), the push processor, DLedger 0.4.0's no-op,
    a preferred leader, a forced leader, rolling data files, tight limits, more or no clients."""
    for profile, nodes, timing in (("standard", 3, "java"), ("hostile", 5, "java"), ("os_crash", 3, "pinned")):
        cfg = xc.config(profile, nodes, xc.CONFIGS[name], timing=timing)
        for seed in range(3, 3 + SEEDS // 2):
            assert xc.compare(cfg, seed, STEPS, None) == [], (name, profile, nodes, timing, seed)


@pytest.mark.slow  # fuzz-length histories (make test-all)
def test_twin_matches_reference_on_fuzz_length_histories():
    """Histories as the fuzzer runs them: up to the quiet tail plus 60 s (ack_after_calm_ms measured)."""
    for profile, seed in (("standard", 1), ("hostile", 2), ("os_crash", 3)):
        cfg = xc.config(profile, 3)
        got: dict = {}
        assert xc.compare(cfg, seed, 50_000, xc.until_of(cfg, "fuzz"), out=got) == [], profile
        assert got["steps"] > 3000


def test_leader_partitions_happen_in_both_worlds():
    """The protocol's own fault kind (world.LeaderPartition) is chosen, applied and counted alike."""
    cfg = xc.config("leader-partition", 3)
    assert xc.compare(cfg, 1, 50_000, xc.until_of(cfg, "fuzz")) == []
    assert fl.run_history(cfg, 1, 50_000, xc.until_of(cfg, "fuzz")).faults.get("leader_partition", 0) > 0


def test_a_single_server_answers_at_once_in_both_worlds():
    """DLedger 0.2.6's one-peer group: waitAck completes SUCCESS before anything is committed."""
    for profile in ("crash", "standard"):
        assert xc.compare(xc.config(profile, 1), 4, STEPS, None) == [], profile


def _first(runner, until, prop, seeds, expected):
    for seed in range(seeds):
        r = runner.run(seed, 50_000, until)
        if any(v.property == prop and (v.expected is not None) == expected for v in r.violations):
            return seed
    return None


@pytest.mark.parametrize("prop, overrides, profile", [
    ("LOG-3", {}, "os_crash"), ("LOG-4", {}, "os_crash"), ("LOG-2", {}, "os_crash"), ("LOG-6", {}, "os_crash"),
    ("LOG-5", {}, "os_crash"), ("LOG-1", {}, "os_crash"), ("LOG-3", {"dledger_version": "fixed"}, "os_crash"),
    ("LOG-3", {}, "standard")])
def test_expected_violations_carry_the_references_cause(prop, overrides, profile):
    """An expected violation, found by the twin, has the same step and cause text in the reference."""
    cfg = xc.config(profile, 3, overrides)
    until = xc.until_of(cfg, "fuzz")
    seed = _first(fl.Runner(cfg), until, prop, 40, expected=True)
    assert seed is not None, f"no expected {prop} in 40 {profile} histories"
    got: dict = {}
    assert xc.compare(cfg, seed, 50_000, until, out=got) == [], (prop, seed)
    assert (prop, True) in got["violations"]


MUTANT_CASES = [
    ("LOG-1", "handle_vote", em.vote_ignoring_curr_vote_for),
    ("LOG-2", "handle_vote", em.vote_ignoring_curr_vote_for),
    ("LOG-6", "handle_vote", em.vote_ignoring_curr_vote_for),
    ("LOG-3", "finish_vote_round", em.parse_own_vote_as_quorum),
    ("LOG-4", "finish_vote_round", em.parse_own_vote_as_quorum),
    ("LOG-5", "finish_vote_round", em.parse_own_vote_as_quorum),
    # a leader of its own vote alone commits what no majority held. (On the one-step model its
    # followers also answered its pushes with replies the guards do not give, RPL-3; on the
    # thread-level model each EntryHandler answers by its own guards, and neither world breaks
    # RPL-3 with this mutant in 150-400 seeds of standard, hostile, lossy or partition, so the
    # twin's RPL-3 has no election mutant to show it: crosscheck.compare holds it per event.)
    ("LOG-8", "finish_vote_round", em.parse_own_vote_as_quorum),
    ("RPL-2", "handle_vote", em.vote_ignoring_curr_vote_for),
    ("RPL-2", "handle_heart_beat", em.heartbeat_following_higher_term_at_old_term),
]


@pytest.mark.parametrize("prop, name, mutant", MUTANT_CASES, ids=[f"{c[0]}-{c[2].__name__}" for c in MUTANT_CASES])
def test_election_mutants_break_log_properties_unexpectedly_in_both_worlds(monkeypatch, prop, name, mutant):
    """An election mutant (two leaders in a term with no term file lost, a reply its guards do not
    give) breaks a LOG or RPL property with no known cause, in the same history and step in both
    worlds."""
    cfg = xc.config("standard", 3)
    until = 30_000
    # 40 seeds: on the thread-level model parse_own_vote_as_quorum first breaks LOG-8 at seed 35
    seed = _first(fl.Runner(cfg, mutant=mutant.__name__), until, prop, 40, expected=False)
    assert seed is not None, f"the twin's {mutant.__name__} never broke {prop}"
    monkeypatch.setattr(em.HOME[name], name, mutant)
    got: dict = {}
    assert xc.compare(cfg, seed, 50_000, until, out=got, mutant=mutant.__name__) == [], (mutant.__name__, seed)
    assert (prop, False) in got["violations"]


def test_no_leader_after_the_faults_fails_log_l_in_both_worlds():
    """With the leader elector off and no forced leader nobody ever leads: LOG-L, unexpected."""
    cfg = xc.config("gentle", 3, {"enable_leader_elector": False})
    got: dict = {}
    assert xc.compare(cfg, 0, 50_000, xc.until_of(cfg, "fuzz"), out=got) == []
    assert ("LOG-L", False) in got["violations"]


def test_a_reference_change_the_twin_does_not_follow_fails_naming_the_first_differing_event(monkeypatch):
    """The gate can fail: the client's append timeout changed in the reference alone."""
    cfg = xc.config("partition", 3)
    assert xc.compare(cfg, 1, 3000, None) == []
    monkeypatch.setattr(log_world, "CLIENT_RPC_TIMEOUT_MS", 2500)
    problems = xc.compare(cfg, 1, 3000, None)
    assert problems and problems[0].startswith("first difference at step ")
    assert "reference: " in problems[0] and "twin: " in problems[0]


def test_runner_reuses_its_arrays_without_leaking_state():
    cfg = xc.config("os_crash", 5)
    runner = fl.Runner(cfg)
    for seed in (7, 8, 7):
        a = runner.run(seed, 4000)
        b = fl.run_history(cfg, seed, 4000)
        assert (a.steps, a.t_ms, a.stopped, a.violations, a.stats, a.faults) == \
            (b.steps, b.t_ms, b.stopped, b.violations, b.stats, b.faults)


def test_runners_of_other_configs_share_the_arrays_without_leaking_state():
    """A fuzz run draws a config per history; Runners of one shape share one set of arrays, and a
    history run after another config's leaves no trace of it (each run as on fresh arrays)."""
    cfgs = [xc.config("os_crash", 3), xc.config("leader-partition", 3, {"dledger_version": "0.3.1.2"}),
            xc.config("hostile", 3, {"dledger_version": "fixed", "enable_fast_advance_commit_index": True})]
    runners = [fl.Runner(c) for c in cfgs]
    assert runners[0].s is runners[1].s is runners[2].s
    for k, seed in ((0, 3), (1, 4), (2, 5), (0, 4), (2, 3), (1, 3)):
        a = runners[k].run(seed, 4000)
        b = fl.run_history(cfgs[k], seed, 4000)
        assert (a.steps, a.t_ms, a.stopped, a.violations, a.stats, a.faults) == \
            (b.steps, b.t_ms, b.stopped, b.violations, b.stats, b.faults), (k, seed)


def test_fuzz_rows_of_the_fast_engine_agree_with_the_reference():
    """spark_harness.history: the fast world's row says what the reference's does."""
    for profile, seed in (("os_crash", 5), ("standard", 6)):
        spec = hist.HistorySpec(protocol="dledger_log", profile=profile, nodes=3, seed=seed)
        twin = hist.fast_summary(spec)
        assert twin is not None and hist.agree(twin, hist.run_history(spec)), (profile, seed)


def test_capacities_overflow_loudly():
    cfg = xc.config("standard", 3)
    with pytest.raises(CapacityError) as err:
        fl.run_history(cfg, 0, 5000, entries=20)
    assert err.value.what == "entries (log indexes)" and err.value.step >= 1
    r = fl.run_history(cfg, 0, 5000, flight=3, strict=False)
    assert r.overflow and r.stopped == "overflow:messages in flight"
    r = fl.run_history(xc.config("lossy", 5), 0, 5000, rpcs=4, strict=False)
    assert r.overflow and r.stopped == "overflow:open RPCs"


def test_unsupported_configs_are_refused():
    cfg = xc.config("standard", 3)
    assert fast.supports(cfg)
    with pytest.raises(Unsupported):
        fl.run_history(cfg.evolve(script=(object(),)), 0, 10)
    with pytest.raises(Unsupported):
        fast.run_history(cfg.evolve(protocol="ha"), 0, 10)
    with pytest.raises(Unsupported):  # the reference takes Java ints; the twin's bounds stay below 2**40 ms
        fl.run_history(log_world.make_config(3, {"max_heart_beat_leak": 2**31 - 1,
                                                 "heart_beat_time_interval_ms": 2**31 - 1}), 0, 10)
    with pytest.raises(Unsupported):  # a protocol-specific fault kind the twin does not know
        fl.run_history(cfg.evolve(profile=cfg.profile.evolve(ext=(("leader_crash", 0.01),))), 0, 10)
    with pytest.raises(Unsupported):
        fl.run_history(cfg.evolve(ids=("a", "b", "c", "c0", "c1")), 0, 10)
