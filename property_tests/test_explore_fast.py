"""The fast explorer (`rmqspec explore --engine fast`, model_checks/explore_fast.py) against the
reference explorer (model_checks/explore.py), which is the judge: the same distinct states at
every depth, with and without node symmetry, with and without faults, and a violation the fast
search finds replays in the reference (`rmqspec replay` of the trace it writes)."""

from __future__ import annotations

import json

import pytest

from histories import runner
from histories.mutants.election import HOME, parse_own_vote_as_quorum
from model_checks import explore, explore_fast
from reference_impl import core
from reference_impl.core import faults
from rmqspec import cli


def _cfg(profile: str, nodes: int = 3) -> core.WorldConfig:
    return core.protocol("election").make_config(nodes, {}).evolve(profile=faults.profile(profile, "election"))


# (faults, depth, symmetry): bounded so the reference side takes seconds
CASES = [("none", 6, False), ("none", 8, True), ("none", 10, True), ("crash", 5, False), ("crash", 6, True),
         ("partition", 4, False), ("partition", 5, True)]
MUTANT_DEPTH = 11  # parse_own_vote_as_quorum's first leader without a quorum, 3 nodes, no faults


@pytest.mark.parametrize("profile, depth, sym", CASES)
def test_distinct_states_per_depth_equal_the_reference(profile, depth, sym):
    cfg = _cfg(profile)
    ref = explore.Explorer(cfg, depth, 2, sym).run()
    fast = explore_fast.FastExplorer(cfg, depth, 2, sym).run()
    assert fast.engine == "fast" and fast.symmetry == ref.symmetry == sym
    assert fast.levels == ref.levels, (fast.levels, ref.levels)
    assert (fast.distinct_states, fast.transitions, fast.complete) == (ref.distinct_states, ref.transitions, True)
    assert set(fast.found) == set(ref.found)


def test_max_states_cuts_both_alike():
    cfg = _cfg("none")
    ref = explore.Explorer(cfg, 10, 2, True, max_states=3000).run()
    fast = explore_fast.FastExplorer(cfg, 10, 2, True, max_states=3000).run()
    assert (fast.levels, fast.distinct_states, fast.complete) == (ref.levels, ref.distinct_states, False)


def test_a_violation_found_fast_replays_in_the_reference(monkeypatch, tmp_path):
    """A candidate that counts its own vote as a quorum (a mutant in both worlds): the fast search
    finds a leader without a quorum (ELE-4), and its trace replays in the reference with that
    violation. A candidate's round is two steps (nextTerm, then the requests and the self-vote),
    so the first such leader is 11 events from the start (none within 10)."""
    monkeypatch.setattr(HOME["finish_vote_round"], "finish_vote_round", parse_own_vote_as_quorum)
    cfg = _cfg("none")
    ex = explore_fast.FastExplorer(cfg, MUTANT_DEPTH, 2, True, mutant=parse_own_vote_as_quorum.__name__)
    res = ex.run()
    ref = explore.Explorer(cfg, MUTANT_DEPTH, 2, True).run()
    assert res.levels == ref.levels
    assert res.unexpected() and set(res.found) == set(ref.found)
    explore.write_traces(ex, str(tmp_path))
    for f in res.unexpected():
        with open(f.trace, encoding="utf-8") as fh:
            replayed = runner.replay(fh, (), f.trace)
        assert replayed.mismatch is None
        assert f.property in {v.property for v in replayed.run.unexpected}, (f.property, replayed.run.violations)


def test_a_fast_violation_the_reference_lacks_is_refused(monkeypatch):
    """The reference judges: a twin-only violation (mutant in the twin alone) raises."""
    ex = explore_fast.FastExplorer(_cfg("none"), MUTANT_DEPTH, 2, True, mutant=parse_own_vote_as_quorum.__name__)
    with pytest.raises(explore_fast.MismatchError):
        ex.run()


def test_cli_engine_fast(capsys):
    """`rmqspec explore --engine fast --json` reports the engine and the reference's counts;
    --coverage samples reference histories, so it asks for the reference engine."""
    args = ["explore", "--protocol", "election", "--nodes", "3", "--depth", "5", "--json", "--no-progress"]
    runs = {}
    for engine in ("reference", "fast"):
        assert cli.main([*args, "--engine", engine]) == 0
        runs[engine] = json.loads(capsys.readouterr().out)
    assert runs["fast"]["engine"] == "fast" and runs["reference"]["engine"] == "reference"
    assert runs["fast"]["levels"] == runs["reference"]["levels"]
    assert cli.main([*args, "--engine", "fast", "--coverage", "10"]) == 2
