"""`rmqspec mutants`: the catalogue of test-only mutants (histories/mutants/catalogue.py)
and the verdicts of the layer runner (rmqspec/mutation.py)."""

import io
from collections import Counter
from contextlib import redirect_stderr, redirect_stdout

from histories.mutants import catalogue as catalogue
from rmqspec import cli, mutation


def test_every_protocol_has_at_least_two_mutants_each_breaking_one_function():
    per = Counter(m.protocol for m in catalogue.MUTANTS)
    assert set(per) == {"election", "dledger_log", "dledger_commitlog", "ha", "nameserver", "offsets"}
    assert min(per.values()) >= 2
    assert len({m.name for m in catalogue.MUTANTS}) == len(catalogue.MUTANTS)
    for m in catalogue.MUTANTS:
        assert m.rule and m.catches and callable(getattr(m.module, m.function)), m.name


def test_a_mutant_is_in_place_only_while_installed():
    for m in catalogue.MUTANTS:
        orig = getattr(m.module, m.function)
        with catalogue.installed(m):
            assert getattr(m.module, m.function) is not orig
        assert getattr(m.module, m.function) is orig


def test_the_fuzz_layer_kills_a_double_vote_at_once_and_names_the_history():
    v = mutation.fuzz_layer(catalogue.BY_NAME["election.vote_ignores_curr_vote_for"], histories=3, seconds=60)
    assert v.verdict == "killed" and v.histories == 1 and "ELE-2" in v.detail and "seed 1" in v.detail
    assert mutation.scores([v]) == {"fuzz": {"killed": 1, "expected-only": 0, "survived": 0, "error": 0,
                                             "mutants": 1}}


def test_mutants_list_and_bad_names():
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        assert cli.main(["mutants", "--list"]) == 0
        assert cli.main(["mutants", "--mutant", "nope"]) == 2
    assert "ha.slave_appends_at_its_own_offset" in out.getvalue() and "nope" in err.getvalue()


def test_a_mutant_killed_by_one_layer_passes_and_one_no_layer_kills_fails():
    """`rmqspec mutants` exits 1 only for a mutant that no layer run killed, or a layer that
    errored: on a clean checkout the machines let 8 mutants through that the fuzz layer kills
    (docs/benchmarks.md), which is a score, not a failure."""
    def v(mutant, layer, verdict):
        return mutation.Verdict(mutant, layer, verdict, "", 0.0)
    assert mutation.not_caught([v("a", "fuzz", "killed"), v("a", "machines", "survived"), v("a", "model", "n/a"),
                                v("b", "fuzz", "n/a")]) == []
    assert mutation.not_caught([v("a", "fuzz", "survived"), v("a", "machines", "expected-only"),
                                v("b", "fuzz", "killed"), v("c", "fuzz", "killed"), v("c", "machines", "error")]
                               ) == ["a", "c"]
