"""The twins' coverage and distinct observable states against the reference's: the gate for
`rmqspec fuzz`'s coverage on the fast engine (docs/fast-worlds.md, "Coverage and distinct
states").

Each twin computes, over every history it runs, what spark_harness.history's Probe records on
the reference: actions (kind@role), the result codes (branches) among delivered messages and
observations, the kinds of messages and observations, and the distinct observable states
with the reference's fingerprints (histories.fast.core.sketch). Here a sample of fuzz
histories (the fuzzer's own plan: every fault profile, version cycle and drawn variant) runs
in both worlds and the rows must agree, coverage included (spark_harness.history.agree).
Histories per protocol scale with the Hypothesis profile (`ci`: 12, `dev`: 30, `nightly`: 300).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import settings

numba = pytest.importorskip("numba")

from histories.fast.core import sketch as fingerprints  # noqa: E402
from spark_harness import history as hist  # noqa: E402
from spark_harness import plan as plan_mod  # noqa: E402
from spark_harness import sketch  # noqa: E402

HISTORIES = max(12, settings.default.max_examples * 3 // 5)  # ci 12, dev 30, nightly 300
COVERAGE = ("actions", "branches", "kinds", "states", "state_sketch")


@pytest.mark.parametrize("protocol", ["election", "dledger_log"])
def test_the_twins_coverage_and_states_are_the_references_on_fuzz_histories(protocol):
    """A sample of the fuzz plan's histories in both worlds: the same rows, coverage and the
    distinct-state sketch included, and the counts are not trivially equal (states vary)."""
    plan = plan_mod.make_plan(protocol, HISTORIES, steps=4000)
    states = set()
    for k in range(HISTORIES):
        spec = plan.spec(protocol, k)
        twin = hist.fast_summary(spec)
        if twin is None:  # a drawn variant the twin does not model
            continue
        ref = hist.run_history(spec)
        bad = {key: (ref[key], twin[key]) for key in COVERAGE if ref[key] != twin[key]}
        assert not bad, (k, spec, bad)
        assert hist.agree(twin, ref), (k, spec)
        states.add(twin["states"])
    assert len(states) > 3  # histories of different lengths and faults reach different numbers of states


def test_a_log_that_changes_under_the_twin_changes_its_fingerprint_as_the_references_does():
    """dledger_log's `log_terms` is a running sum in the twin: truncations, crashes and restarts
    (os_crash drops unflushed entries) keep it equal to the reference's digest of the whole log."""
    for seed in range(3):
        spec = hist.HistorySpec(protocol="dledger_log", profile="os_crash", nodes=3, seed=seed, steps=3000)
        twin, ref = hist.fast_summary(spec), hist.run_history(spec)
        assert twin is not None and twin["states"] == ref["states"] > 50, (seed, twin["states"], ref["states"])
        assert twin["state_sketch"] == ref["state_sketch"]


def test_a_broken_fingerprint_in_the_twin_is_caught():
    """The gate can fail: the reference's digest of an int changed alone makes every row differ."""
    spec = hist.HistorySpec(protocol="election", profile="crash", nodes=3, seed=1, steps=2000)
    twin = hist.fast_summary(spec)
    orig = fingerprints.digest

    def other(v):
        return orig(v) ^ 1 if type(v) is int else orig(v)

    try:
        fingerprints.digest = other
        ref = hist.run_history(spec)
    finally:
        fingerprints.digest = orig
    assert twin["states"] == ref["states"] and twin["state_sketch"] != ref["state_sketch"]
    assert not hist.agree(twin, ref)


def test_fingerprints_of_values_are_the_same_in_python_and_numba():
    """core.sketch's Python digest of ints and int lists against its Numba fold, on edge values."""
    values = [0, 1, -1, 2**31 - 1, -(2**40), 2**62, -(2**63)]
    for v in values:
        assert fingerprints.digest(v) == int(np.int64(fingerprints.of_int(v))) & fingerprints.MASK
    terms = [0, 1, 1, 3, -1, 2**40] * 5
    total = 0
    for k, t in enumerate(terms):
        total += fingerprints.list_item(k, fingerprints.of_int(t))
    want = fingerprints.digest(terms)
    got = int(np.int64(fingerprints.of_list(len(terms), _signed(total))))
    assert got & fingerprints.MASK == want
    assert sketch.sparse({want}) == sketch.sparse(np.array([want], np.uint64))


def _signed(x: int) -> int:
    """x modulo 2^64 as an int64 (how the kernel's sums wrap)."""
    x &= fingerprints.MASK
    return x - (1 << 64) if x >= 1 << 63 else x
