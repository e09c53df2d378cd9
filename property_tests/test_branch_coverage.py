"""`rmqspec bench --coverage` (rmqspec/branch_coverage.py): branch coverage of reference_impl/
under the default fuzz plan, and the directed shapes and switches added so that the plan
takes the branches it missed (docs/fuzzing.md, "Branch coverage of the reference")."""

from __future__ import annotations

import json

from rmqspec import branch_coverage, cli


def _result(protocol: str, files: dict) -> dict:
    return {"schema": branch_coverage.SCHEMA, "protocol": protocol, "histories": 1, "seed": 1, "cpu_s": 0.0,
            "coverage_py": "x", "files": files}


def test_summary_counts_a_protocol_own_package_and_the_union_of_core():
    """A branch of core that one protocol missed and another took is taken; a protocol's row
    counts its own package only."""
    ha = _result("ha", {"reference_impl/ha/service.py": {"executed": [[1, 2]], "missing": [[1, 3]]},
                        "reference_impl/core/world.py": {"executed": [[5, 6]], "missing": [[5, 7]]}})
    election = _result("election", {"reference_impl/election/server.py": {"executed": [[1, 2], [1, 3]], "missing": []},
                                    "reference_impl/core/world.py": {"executed": [[5, 7]], "missing": [[5, 6]]},
                                    "reference_impl/ha/service.py": {"executed": [], "missing": [[1, 2], [1, 3]]}})
    s = branch_coverage.summarize([ha, election])
    assert s["protocols"]["ha"] == {"histories": 1, "seed": 1, "cpu_s": 0.0, "taken": 1, "total": 2,
                                    "percent": 50.0}
    assert (s["protocols"]["election"]["taken"], s["protocols"]["election"]["total"]) == (2, 2)
    assert (s["core"]["taken"], s["core"]["total"]) == (2, 2)
    assert (s["total"]["taken"], s["total"]["total"]) == (5, 6)
    assert s["missing"] == {"reference_impl/ha/service.py": [(1, 3)]}
    assert branch_coverage.missing_text(s) == "reference_impl/ha/service.py: 1->3\n"


def test_a_protocol_not_measured_leaves_its_package_out_of_the_union():
    election = _result("election", {"reference_impl/election/server.py": {"executed": [[1, 2]], "missing": []},
                                    "reference_impl/ha/service.py": {"executed": [], "missing": [[1, 2]]}})
    s = branch_coverage.summarize([election])
    assert (s["total"]["taken"], s["total"]["total"]) == (1, 1)
    assert s["missing"] == {}


def test_bench_coverage_measures_election_histories(tmp_path, capsys):
    """Three election histories in a traced worker: the election package's branches are
    counted, some taken, and import-time branches of reference_impl/__init__.py are taken
    (the tracer starts before the project is imported)."""
    out = tmp_path / "cov"
    code = cli.main(["bench", "--coverage", "--protocol", "election", "--histories", "3", "--out", str(out),
                     "--no-progress", "--json"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    row = summary["protocols"]["election"]
    assert row["histories"] == 3 and 0 < row["taken"] < row["total"]
    measured = json.loads((out / "election.json").read_text())
    assert measured["files"]["reference_impl/__init__.py"]["executed"]
    assert (out / "missing.txt").read_text().startswith("reference_impl/")
