"""The compiled election twin (histories.fast) against the reference: a bounded cross-check.

Every history here runs in both worlds and must match event for event (kind, ids, time,
draw, observations), in verdicts, stats, fault counts and the whole final world. The
long check is `python -m histories.fast.crosscheck` (histories.fast/README.md). The first run
in a fresh checkout compiles the kernel (about 30 s); later runs load it from Numba's cache.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

numba = pytest.importorskip("numba")

from histories.fast import crosscheck as xc  # noqa: E402
from histories.fast import mt  # noqa: E402
from histories.fast import run as fast  # noqa: E402
from reference_impl.core import faults  # noqa: E402
from reference_impl.election import world as election_world  # noqa: E402

STEPS = 600


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


@pytest.mark.parametrize("profile", xc.PROFILES)
@pytest.mark.parametrize("nodes", [3, 5])
def test_twin_matches_reference_under_every_profile(profile, nodes):
    cfg = xc.config(profile, nodes)
    for seed in (0, 1):
        assert xc.compare(cfg, seed, STEPS, None) == [], (profile, nodes, seed)


@pytest.mark.parametrize("name", ["preferred", "preferred2", "tuned", "ledger", "slowvote", "noelector"])
def test_twin_matches_reference_under_config_overrides(name):
    """Preferred leaders and transfers, other timings, uneven logs, ELE-L failing, no elector."""
    for profile, nodes in (("standard", 3), ("hostile", 5)):
        cfg = xc.config(profile, nodes, xc.CONFIGS[name])
        assert xc.compare(cfg, 3, 1500, None) == [], (name, profile, nodes)


def test_twin_matches_reference_on_fuzz_length_histories():
    """Histories as the fuzzer runs them: up to the quiet tail plus 60 s (settle_ms measured)."""
    for profile in ("standard", "hostile"):
        cfg = xc.config(profile, 3)
        until = cfg.profile.calm_at_ms + 60_000
        got: dict = {}
        assert xc.compare(cfg, 5, 50_000, until, out=got) == []


def test_twin_reports_every_property_like_the_reference():
    """Under the mutants of property_tests/mutants.py every property fails unexpectedly; the
    twin has the same mutants and must give the same verdicts (first step, time, cause)."""
    seen = set()
    for prop, fn, mutant, cfg, seeds, steps in xc.mutant_cases():
        runner = fast.Runner(cfg, mutant=mutant)
        seed = next(s for s in range(seeds) if any(v.property == prop for v in runner.run(s, steps).unexpected))
        got: dict = {}
        assert xc.compare_mutant(fn, mutant, cfg, seed, steps, out=got) == [], (mutant, seed)
        assert prop in got["unexpected"]
        seen |= got["unexpected"]
    assert seen == {"ELE-1", "ELE-2", "ELE-3", "ELE-4", "ELE-5", "HB-1", "HB-2", "ELE-L"}


def test_expected_violations_carry_the_references_cause():
    cfg = xc.config("hostile", 3)
    results = [fast.run_history(cfg, seed, 3000) for seed in range(6)]
    expected = [v for r in results for v in r.violations]
    assert expected and all(v.expected and "lost its currterm file" in v.expected for v in expected)
    assert xc.compare(cfg, next(i for i, r in enumerate(results) if r.violations), 3000, None) == []


def test_java_timing_slack_matches_the_planned_reference_model():
    """slack > 0 (ticks fire up to slack ms late, the late value drawn by the chooser), against
    the reference patched with the planned semantics (histories.fast.java_timing)."""
    for profile, nodes in (("standard", 3), ("hostile", 5), ("none", 3)):
        assert xc.compare(xc.config(profile, nodes), 2, STEPS, None, slack=10) == [], (profile, nodes)
    r = fast.run_history(xc.config("standard", 3), 2, STEPS, log=True, slack=10)
    assert (r.log[r.log[:, 0] == 1][:, 5] > 0).any()


def test_runner_reuses_its_arrays_without_leaking_state():
    cfg = xc.config("hostile", 5)
    runner = fast.Runner(cfg)
    for seed in (7, 8, 7):
        a = runner.run(seed, 2000)
        b = fast.run_history(cfg, seed, 2000)
        assert (a.steps, a.t_ms, a.stopped, a.violations, a.stats, a.faults) == \
            (b.steps, b.t_ms, b.stopped, b.violations, b.stats, b.faults)


def test_history_summary_matches_the_fuzzers():
    from spark_harness import history

    spec = history.HistorySpec(protocol="election", profile="hostile", nodes=3, seed=4)
    ref = history.run_history(spec)
    twin = fast.history_summary(spec)
    assert set(twin) == set(ref)
    for key in ("steps", "t_ms", "stopped", "unexpected", "expected", "faults", "stats"):
        assert twin[key] == ref[key], key
    assert [(v["property"], v["step"], v["t_ms"], v["expected"]) for v in twin["violations"]] == \
        [(v["property"], v["step"], v["t_ms"], v["expected"]) for v in ref["violations"]]


def test_capacities_overflow_loudly():
    cfg = xc.config("lossy", 5)
    with pytest.raises(fast.CapacityError) as err:
        fast.run_history(cfg, 0, 2000, flight=3)
    assert err.value.what == "messages in flight" and err.value.step >= 1
    r = fast.run_history(cfg, 0, 2000, rpcs=2, strict=False)
    assert r.overflow and r.stopped == "overflow:open RPCs"


def test_unsupported_configs_are_refused():
    from reference_impl import scenario  # noqa: F401

    cfg = election_world.make_config(3).evolve(profile=faults.profile("standard", "election"))
    with pytest.raises(fast.Unsupported):
        fast.run_history(cfg.evolve(script=(object(),)), 0, 10)
    with pytest.raises(fast.Unsupported):
        fast.run_history(cfg.evolve(protocol="ha"), 0, 10)
    with pytest.raises(fast.Unsupported):
        fast.run_history(election_world.make_config(3, {"max_heart_beat_leak": 2**40}), 0, 10)
