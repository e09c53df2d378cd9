"""Mutated inputs the tool itself writes (traces, scenario files, --config) never crash a parser:
every one ends in exit 0, 1 or 2 (one stderr line), never an internal error, a traceback or a
hang, and memory stays bounded (property_tests/parser_fuzz.py; the long run is recorded in
docs/benchmarks.md)."""

from __future__ import annotations

import random
import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from property_tests import parser_fuzz as pf

MAX_PEAK_BYTES = 256 << 20  # one input's Python allocations at most


@pytest.fixture(scope="module")
def seeds():
    return pf.trace_seeds(steps=20), pf.scenario_seeds()


@given(entry=st.sampled_from(pf.ENTRIES), protocol=st.sampled_from(sorted(pf.CONFIG_SEEDS)),
       which=st.integers(0, 10 ** 6), rng_seed=st.integers(0, 2 ** 32 - 1))
def test_mutated_inputs_exit_0_1_or_2_with_one_line(seeds, tmp_path_factory, entry, protocol, which, rng_seed):
    """A trace (check-trace, replay, shrink), a scenario (simulate --script) or a --config, mutated
    by flipped bytes, dropped or repeated lines, swapped JSON types or removed keys: exit 0/1/2."""
    traces, scenarios = seeds
    rng = random.Random(rng_seed)
    if entry in ("check-trace", "replay", "shrink"):
        seed = traces[protocol]
    elif entry == "script":
        seed = scenarios[sorted(scenarios)[which % len(scenarios)]]
    else:
        seed = pf.CONFIG_SEEDS[protocol].encode()
    data = pf.mutated(seed, rng)
    workdir = str(tmp_path_factory.mktemp("pf"))
    tracemalloc.start()
    try:
        crash = pf.one(entry, data, workdir, protocol)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert crash is None, f"{entry}: {crash}\ninput: {data[:2000]!r}"
    assert peak < MAX_PEAK_BYTES, f"{entry} allocated {peak >> 20} MiB"


def test_unmutated_seeds_are_accepted(seeds, tmp_path):
    """The seeds themselves: every trace checks (exit 0), every scenario runs, every --config parses."""
    traces, scenarios = seeds
    for protocol, data in traces.items():
        assert pf.feed("check-trace", data, str(tmp_path), protocol)[0] == 0, protocol
    for name in sorted(scenarios)[:5]:
        assert pf.feed("script", scenarios[name], str(tmp_path))[0] in (0, 1), name
    for protocol, text in pf.CONFIG_SEEDS.items():
        assert pf.feed("config", text.encode(), str(tmp_path), protocol)[0] == 0, protocol
