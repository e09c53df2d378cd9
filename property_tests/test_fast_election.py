"""The election fast world (histories/fast/election) against the reference: the cross-check gate.

Every history here runs in both worlds and must match event for event (kind, node /
envelope / RPC ids, time, tick draw, lateness, observations), in verdicts, stats, fault
counts and the whole final world (nodes, network, ghost, fault history, `since`,
`fresh`). A change to the reference that the twin does not follow fails here, naming
the first differing event. Seeds per case scale with the Hypothesis profile (`ci`: 2,
`dev`: 10, `nightly`: 200). The first run of a version of histories/fast on a machine
compiles the kernel; later runs load it from Numba's cache (histories/fast/core/cache.py). The long check is
`python -m histories.fast.election.crosscheck` (docs/fast-worlds.md).
"""

from __future__ import annotations

import random
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import settings

numba = pytest.importorskip("numba")

from numba.core.caching import FunctionCache  # noqa: E402

from histories.fast import CapacityError, Unsupported  # noqa: E402
from histories.fast.core import cache, mt  # noqa: E402
from histories.fast.election import crosscheck as xc  # noqa: E402
from histories.fast.election import runner as fast  # noqa: E402
from histories.fast.election import world as election_world_twin  # noqa: E402
from histories.mutants.election import HOME, MUTANTS, ORIG, cfg_for  # noqa: E402
from reference_impl.core import configure, faults  # noqa: E402
from reference_impl.core import network as net_mod  # noqa: E402
from reference_impl.election import leader_elector as elector  # noqa: E402
from reference_impl.election import records as el  # noqa: E402
from reference_impl.election import world as election_world  # noqa: E402
from spark_harness import ship  # noqa: E402

SEEDS = max(2, settings.default.max_examples // 15)  # ci 2, dev 10, nightly 200
STEPS = 600
TIMINGS = ("java", "pinned")


@numba.njit
def _draws(state, ops, args, out):
    for j in range(ops.shape[0]):
        if ops[j] == 0:
            out[j] = mt.random53(state)
        elif ops[j] == 1:
            out[j] = mt.randbelow(state, args[j])
        else:
            out[j] = mt.getrandbits(state, 16)


@pytest.mark.parametrize("seed", [0, 1, 12345, -7, 2**40 + 3, 10**30, "text"])
def test_mersenne_twister_is_cpythons(seed):
    """random(), randrange(n) / choice (n = 1 included) and getrandbits(16), interleaved, across twists."""
    state = np.zeros(625, np.int64)
    mt.seed_into(state, seed)
    assert tuple(int(x) for x in state) == random.Random(seed).getstate()[1]
    pick = random.Random(99)
    ops = np.array([pick.randrange(3) for _ in range(3000)])
    args = np.array([pick.randrange(1, 2500) for _ in range(3000)])
    out = np.zeros(3000)
    _draws(state, ops, args, out)
    r = random.Random(seed)
    want = [r.random() if o == 0 else r.choice(range(a)) if o == 1 else r.getrandbits(16) for o, a in zip(ops, args)]
    assert list(out) == want
    assert tuple(int(x) for x in state) == r.getstate()[1]


@pytest.mark.parametrize("timing", TIMINGS)
@pytest.mark.parametrize("profile", xc.PROFILES)
@pytest.mark.parametrize("nodes", [3, 5])
def test_twin_matches_reference_under_every_fault_profile(profile, nodes, timing):
    cfg = xc.config(profile, nodes, timing=timing)
    for seed in range(SEEDS):
        assert xc.compare(cfg, seed, STEPS, None) == [], (profile, nodes, timing, seed)


@pytest.mark.parametrize("timing", TIMINGS)
@pytest.mark.parametrize("name", ["preferred", "preferred2", "tuned", "ledger", "slowvote", "noelector", "stepdown"])
def test_twin_matches_reference_under_config_overrides(name, timing):
    """Preferred leaders and transfers, other timings (and so other bounds: spec/bounds.py reads
    the overrides), uneven logs, ELE-L failing, no elector, DLedger 0.4.0's step-down."""
    for profile, nodes in (("standard", 3), ("hostile", 5)):
        cfg = xc.config(profile, nodes, xc.CONFIGS[name], timing=timing)
        for seed in range(3, 3 + SEEDS // 2):
            assert xc.compare(cfg, seed, 1500, None) == [], (name, profile, nodes, timing, seed)


@pytest.mark.parametrize("stagger", [0, 7])
def test_twin_follows_the_start_up_stagger(stagger):
    """FaultProfile.stagger_ms: no stagger, and a long one (first ticks up to 7 ms late)."""
    for profile, nodes in (("none", 3), ("crash", 5)):
        cfg = xc.config(profile, nodes, stagger_ms=stagger)
        assert xc.compare(cfg, 11, STEPS, None) == [], (profile, nodes, stagger)


@pytest.mark.slow  # fuzz-length histories (make test-all)
def test_twin_matches_reference_on_fuzz_length_histories():
    """Histories as the fuzzer runs them: up to the quiet tail plus 60 s (settle_ms measured)."""
    for profile in ("standard", "hostile"):
        cfg = xc.config(profile, 3)
        until = cfg.profile.calm_at_ms + 60_000
        assert xc.compare(cfg, 5, 50_000, until) == [], profile


@pytest.mark.parametrize("overrides", [
    {"fault_kinds": ["os_crash", "restart"]},
    {"fault_kinds": ["partition", "heal", "loss"], "preferred_leader_ids": "n2"},
    {"crashable": ["n0"], "fault_kinds": ["crash", "disk_loss", "restart", "one_way"]},
])
def test_twin_matches_reference_on_fuzz_variants(overrides):
    """The fuzzer's variants (spark_harness/variants.py): fault kinds narrowed, crashable nodes."""
    for nodes in (3, 5):
        cfg = configure.world_config("election", nodes, "hostile", overrides)
        for seed in range(SEEDS):
            assert xc.compare(cfg, seed, 1500, None) == [], (overrides, nodes, seed)


@pytest.mark.parametrize("prop, name, profile, nodes, seeds", [
    ("LIVE-2", "preferred", "partition", 3, 4),  # transfers whose RPC is lost while the leader keeps leading
    ("LIVE-3", "preferred2", "partition", 3, 4),  # stragglers blocked in their own vote latch
])
@pytest.mark.slow  # fuzz-length histories (make test-all)
def test_liveness_agrees_on_fuzz_length_histories(prop, name, profile, nodes, seeds):
    """Where transfers and stragglers are common, the twin and the reference agree on
    fuzz-length histories, and neither reports the property: its bound counts Netty's
    response-table scan and a straggler's vote latch (spec/election.py). The mutants below
    make LIVE-1/3 fire in both worlds."""
    cfg = xc.config(profile, nodes, xc.CONFIGS[name])
    until = xc.until_of(cfg, "fuzz")
    for seed in range(seeds):
        got: dict = {}
        assert xc.compare(cfg, seed, 50_000, until, out=got) == [], (prop, seed)
        assert prop not in got["unexpected"], (prop, seed)


# --- mutants of this gate's own (the properties spec/replies.py and the LIVE-* add) ---


def heartbeat_accepting_lower_term(cfg, m, req, now):
    """A node that answers SUCCESS to a heartbeat of a lower term, changing nothing (breaks RPL-1)."""
    if cfg.is_peer_member(req.leader_id) and req.leader_id != m.self_id and req.term < m.curr_term:
        return m, el.HeartBeatResponse(), ()
    return ORIG["handle_heart_beat"](cfg, m, req, now)


def last_node_never_follows(cfg, m, req, now):
    """The last peer refuses its term's leader (INCONSISTENT_LEADER) while it has none: it never
    follows, and with the shortest log it never leads either (breaks LIVE-3, LIVE-1, RPL-2)."""
    if (m.self_id == cfg.peers[-1] and cfg.is_peer_member(req.leader_id) and req.leader_id != m.self_id
            and req.term == m.curr_term and m.leader_id is None):
        return m, el.HeartBeatResponse(code=el.Code.INCONSISTENT_LEADER), ()
    return ORIG["handle_heart_beat"](cfg, m, req, now)


BEHIND = {"ledger_end_index": (5, 5, 1), "ledger_end_term": (1, 1, 1)}
OWN_MUTANTS = [
    # (property, mutant, config, seeds, steps); each replaces leader_elector.handle_heart_beat
    ("RPL-1", heartbeat_accepting_lower_term, cfg_for("standard"), 40, 3000),
    ("RPL-2", heartbeat_accepting_lower_term, cfg_for("standard"), 40, 3000),
    ("LIVE-3", last_node_never_follows, election_world.make_config(3, BEHIND).evolve(
        profile=faults.profile("gentle").evolve(calm_at_ms=5_000)), 10, 3000),
    ("LIVE-1", last_node_never_follows, election_world.make_config(3, BEHIND).evolve(
        profile=faults.profile("crash").evolve(calm_at_ms=5_000)), 10, 3000),
]


@pytest.mark.parametrize("prop, mutant, cfg, seeds, steps", OWN_MUTANTS,
                         ids=[f"{m[0]}-{m[1].__name__}" for m in OWN_MUTANTS])
def test_reply_and_liveness_mutants_fire_in_both_worlds(monkeypatch, prop, mutant, cfg, seeds, steps):
    """RPL-1/2 and LIVE-1/3 broken on purpose, in both worlds, with the same verdicts."""
    runner = fast.Runner(cfg, mutant=mutant.__name__)
    seed = next((s for s in range(seeds) if any(v.property == prop for v in runner.run(s, steps).unexpected)), None)
    assert seed is not None, f"the twin's {mutant.__name__} never broke {prop} in range({seeds})"
    monkeypatch.setattr(elector, "handle_heart_beat", mutant)
    got: dict = {}
    assert xc.compare(cfg, seed, steps, None, out=got, mutant=mutant.__name__) == [], (mutant.__name__, seed)
    assert prop in got["unexpected"]


def test_ticks_and_rpc_failures_fire_late_under_java_timing_only():
    """The lateness the chooser draws (a due loop's phase, Netty's scan) is in the events, and
    pinned timing never draws any."""
    java = fast.run_history(xc.config("standard", 3), 2, 3000, log=True)
    pinned = fast.run_history(xc.config("standard", 3, timing="pinned"), 2, 3000, log=True)
    late_ticks = java.log[(java.log[:, 0] == 1) & (java.log[:, 5] > 0)]
    late_fails = java.log[(java.log[:, 0] == 5) & (java.log[:, 5] > 0)]
    assert len(late_ticks) and len(late_fails)
    assert not pinned.log[:, 5].any()


@pytest.mark.parametrize("prop, name, mutant, cfg, seeds, steps", MUTANTS,
                         ids=[f"{m[0]}-{m[2].__name__}" for m in MUTANTS])
def test_mutants_fire_in_both_worlds(monkeypatch, prop, name, mutant, cfg, seeds, steps):
    """Each election mutant, installed in the reference and in the twin, breaks its property
    unexpectedly in the same history, with the same verdicts, in both worlds."""
    runner = fast.Runner(cfg, mutant=mutant.__name__)
    seed = next((s for s in range(seeds) if any(v.property == prop for v in runner.run(s, steps).unexpected)), None)
    assert seed is not None, f"the twin's {mutant.__name__} never broke {prop} in range({seeds})"
    monkeypatch.setattr(HOME[name], name, mutant)
    got: dict = {}
    assert xc.compare(cfg, seed, steps, None, out=got, mutant=mutant.__name__) == [], (mutant.__name__, seed)
    assert prop in got["unexpected"]


def test_a_reference_change_the_twin_does_not_follow_fails_naming_the_first_differing_event(monkeypatch):
    """The gate can fail: Netty's scan grace changed in the reference alone."""
    cfg = xc.config("partition", 3)
    assert xc.compare(cfg, 1, 3000, None) == []
    monkeypatch.setattr(net_mod, "SCAN_GRACE_MS", 900)
    problems = xc.compare(cfg, 1, 3000, None)
    assert problems and problems[0].startswith("first difference at step ")
    assert "reference: " in problems[0] and "twin: " in problems[0]


def test_expected_violations_carry_the_references_cause():
    cfg = xc.config("hostile", 3)
    results = [fast.run_history(cfg, seed, 3000) for seed in range(8)]
    expected = [v for r in results for v in r.violations]
    assert expected and all(v.expected and "lost its currterm file" in v.expected for v in expected)
    assert xc.compare(cfg, next(i for i, r in enumerate(results) if r.violations), 3000, None) == []


def test_two_leaders_of_a_term_carry_the_references_evidence():
    """ELE-1 expected: the cause names the voter, both ACCEPTs and the OS crash between them, as
    the reference words it from this history's evidence (the twin rebuilds the ghost it reads)."""
    cfg = xc.config("hostile", 3)
    until = xc.until_of(cfg, "fuzz")
    runner = fast.Runner(cfg)
    seed = next(s for s in range(40) if any(v.property == "ELE-1" and v.expected
                                            for v in runner.run(s, 50_000, until).violations))
    r = fast.run_history(cfg, seed, 50_000, until)
    ele1 = next(v for v in r.violations if v.property == "ELE-1")
    assert "lost its currterm file" in ele1.expected and " at " in ele1.expected and ele1.who
    assert xc.compare(cfg, seed, 50_000, until) == []


def test_runner_reuses_its_arrays_without_leaking_state():
    cfg = xc.config("hostile", 5)
    runner = fast.Runner(cfg)
    for seed in (7, 8, 7):
        a = runner.run(seed, 2000)
        b = fast.run_history(cfg, seed, 2000)
        assert (a.steps, a.t_ms, a.stopped, a.violations, a.stats, a.faults) == \
            (b.steps, b.t_ms, b.stopped, b.violations, b.stats, b.faults)


def test_capacities_overflow_loudly():
    cfg = xc.config("lossy", 5)
    with pytest.raises(CapacityError) as err:
        fast.run_history(cfg, 0, 2000, flight=3)
    assert err.value.what == "messages in flight" and err.value.step >= 1
    r = fast.run_history(cfg, 0, 2000, rpcs=2, strict=False)
    assert r.overflow and r.stopped == "overflow:open RPCs"
    r = fast.run_history(cfg, 0, 2000, notes=4, strict=False)
    assert r.overflow and r.stopped.startswith("overflow:ghost notes")


def test_unsupported_configs_are_refused():
    cfg = election_world.make_config(3).evolve(profile=faults.profile("standard", "election"))
    with pytest.raises(Unsupported):
        fast.run_history(cfg.evolve(script=(object(),)), 0, 10)
    with pytest.raises(Unsupported):
        fast.run_history(cfg.evolve(protocol="ha"), 0, 10)
    with pytest.raises(Unsupported):  # the reference takes Java ints; the twin's bounds stay below 2**40 ms
        fast.run_history(election_world.make_config(3, {"max_heart_beat_leak": 2**31 - 1,
                                                        "heart_beat_time_interval_ms": 2**31 - 1}), 0, 10)


def test_the_cache_digest_covers_what_kernels_are_compiled_from_and_no_more():
    """Numba folds module globals into machine code: the reference's modules a kernel module
    imports constants from are in the digest (a changed constant compiles afresh), and so is
    every module of the package a kernel module imports; the Python side alone is not."""
    modules = cache.compiled_from()
    for kernel in ("histories.fast.election.world", "histories.fast.election.leader_elector",
                   "histories.fast.dledger_log.world", "histories.fast.core.layout", "histories.fast.core.mt"):
        assert kernel in modules
    assert "reference_impl.election.leader_elector" in modules  # VOTE_LATCH_BASE_MS, VOTE_RESULT_WAIT_MS
    assert "reference_impl.core.network" in modules  # SCAN_GRACE_MS, SCAN_PERIOD_MS
    for python_side in ("histories.fast.election.decode", "histories.fast.election.runner",
                        "histories.fast.dledger_log.crosscheck", "histories.fast.core.cache"):
        assert python_side not in modules


def test_kernels_are_cached_by_the_package_digest_in_a_checkout_and_in_the_shipped_zip(tmp_path):
    """Numba's own rule would key a kernel shipped to Spark executors on the zip's path and time,
    new for every job (each executor compiled the twins again); ours keys every function of the
    package on one folder named by the package's digest, the same from the checkout and the zip."""
    here = FunctionCache(election_world_twin.run.py_func)._cache_path
    assert here == cache.FOLDER and cache.FOLDER.endswith(f"numba-{cache.digest()}")
    probe = ("import sys; sys.path.insert(0, sys.argv[1]); from numba.core.caching import FunctionCache; "
             "from histories.fast.core import cache; from histories.fast.election import world; "
             "print(cache.__file__); print(FunctionCache(world.run.py_func)._cache_path)")
    zipped = ship.build_zip(str(tmp_path))
    out = subprocess.run([sys.executable, "-c", probe, zipped], capture_output=True, text=True, check=True,
                         cwd=tmp_path).stdout.split()
    assert out[0].startswith(zipped) and out[1] == here
