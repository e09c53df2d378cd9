"""`rmqspec bench --coverage`: branch coverage of reference_impl/ under the default fuzz
(docs/fuzzing.md, "Branch coverage of the reference").

The fuzz report counts coverage in actions and result codes; this measures the
reference's own branches. Protocol by protocol, the first N histories of the default fuzz
plan (`make_plan(P, N, engine="reference")`: every fault profile, version profile and
cluster size cycled, switches, swarm subsets and directed shapes drawn per history) run
whole through `spark_harness.history.run_history` under coverage.py in branch mode,
measuring every file of `reference_impl/`. Tracing costs several times a history's CPU
time, so it is a benchmark, never part of a fuzz run or of CI.

Each protocol's result is written to `OUT/<protocol>.json` (the branches it took and
missed, per file); the summary reads every such file in OUT, so protocols measured one at
a time (in separate processes) still add up to the union over `reference_impl/`. A
protocol's row counts the files of its own package (`reference_impl/<protocol>/`); `core`
and `total` count the union of the protocols measured.

Branches are coverage.py's arcs between lines: a source line with two or more possible
next lines (an `if`, a loop, a `match` case, a short-circuit is not one) is a branch point
and each of its exits a branch. Lines marked `# pragma: no branch` are not counted; the
project marks none. A branch no history takes is listed under `missing` with its file and
line, so that docs/fuzzing.md can name each with what takes it or why nothing can.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

try:
    import coverage
except ImportError:  # the `dev` extra (pyproject.toml) is not installed: only --coverage needs it
    coverage = None

from histories import files

SCHEMA = "rmqspec.branch-coverage/1"
ROOT = Path(__file__).resolve().parent.parent / "reference_impl"
DEFAULT_HISTORIES = 1000  # the goal of issue 27: >= 97 % of the reference's branches by 1,000 histories a protocol
DEFAULT_OUT = "out/coverage"


class MissingCoverage(RuntimeError):
    """coverage.py is not installed."""


def _relative(path: str) -> str:
    return str(Path(path).resolve().relative_to(ROOT.parent))


def _owner(relative: str) -> str:
    """The package a file of reference_impl/ belongs to: a protocol's name, or `core`."""
    parts = Path(relative).parts
    return parts[1] if len(parts) > 2 and parts[1] != "core" else "core"


def measure(protocol: str, histories: int, seed: int = 1,
            on_history: Callable[[int], None] | None = None) -> dict:
    """Branch coverage of every file of reference_impl/ over the first `histories` histories
    of the protocol's default fuzz plan (reference engine), measured in a fresh process
    (rmqspec/coverage_worker.py) so that import-time branches count too."""
    if coverage is None:
        raise MissingCoverage("rmqspec bench --coverage needs coverage.py: pip install -e '.[dev]' (make does)")
    with tempfile.TemporaryDirectory(prefix="rmqspec-coverage-") as scratch:
        data_file = os.path.join(scratch, "coverage.data")
        cpu0 = _children_cpu()
        with subprocess.Popen([sys.executable, "-m", "rmqspec.coverage_worker", protocol, str(histories), str(seed),
                               data_file], stdout=subprocess.PIPE, text=True, cwd=ROOT.parent) as child:
            for line in child.stdout:
                if line.startswith("history ") and on_history is not None:
                    on_history(int(line.split()[1]))
        if child.returncode != 0:
            raise RuntimeError(f"the coverage worker for {protocol} exited {child.returncode}")
        cpu = _children_cpu() - cpu0
        cov = coverage.Coverage(branch=True, data_file=data_file, source=[str(ROOT)], config_file=False)
        cov.load()
        report = os.path.join(scratch, "coverage.json")
        cov.json_report(outfile=report, show_contexts=False)
        raw = json.loads(Path(report).read_text())
    per_file = {}
    for path, data in raw["files"].items():
        rel = _relative(path)
        executed = sorted(tuple(a) for a in data.get("executed_branches", []))
        missing = sorted(tuple(a) for a in data.get("missing_branches", []))
        if executed or missing:
            per_file[rel] = {"executed": executed, "missing": missing}
    return {"schema": SCHEMA, "protocol": protocol, "histories": histories, "seed": seed,
            "cpu_s": round(cpu, 1), "coverage_py": coverage.__version__, "files": per_file}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def write(result: dict, out: str) -> str:
    folder = files.out_folder(out)
    return files.write_text(os.path.join(folder, f"{result['protocol']}.json"), json.dumps(result, indent=1) + "\n")


def load(out: str) -> list[dict]:
    """Every protocol's measurement in OUT, by protocol name."""
    folder = Path(out)
    found = []
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text())
        if data.get("schema") == SCHEMA:
            found.append(data)
    return found


def _count(executed: set, missing: set) -> dict:
    taken, total = len(executed), len(executed) + len(missing)
    return {"taken": taken, "total": total, "percent": round(100 * taken / total, 2) if total else 100.0}


def summarize(results: list[dict]) -> dict:
    """Per protocol (its own package), `core`, and `total` (the union of every measured
    protocol over all of reference_impl/), with the missing branches by file."""
    union: dict[str, tuple[set, set]] = {}
    rows = {}
    for r in results:
        own_exec, own_miss = set(), set()
        for rel, data in r["files"].items():
            executed = {tuple(a) for a in data["executed"]}
            missing = {tuple(a) for a in data["missing"]}
            seen = union.setdefault(rel, (set(), set()))
            seen[0].update(executed)
            seen[1].update(missing)
            if _owner(rel) == r["protocol"]:
                own_exec |= {(rel, *a) for a in executed}
                own_miss |= {(rel, *a) for a in missing}
        rows[r["protocol"]] = {"histories": r["histories"], "seed": r["seed"], "cpu_s": r["cpu_s"],
                               **_count(own_exec, own_miss)}
    measured = {r["protocol"] for r in results}
    by_owner: dict[str, tuple[set, set]] = {}
    missing_by_file = {}
    for rel, (executed, missing) in sorted(union.items()):
        owner = _owner(rel)
        if owner != "core" and owner not in measured:
            continue  # a protocol not measured: its package's branches are not part of this union
        missing = missing - executed  # a branch one protocol took and another missed is taken
        acc = by_owner.setdefault(owner, (set(), set()))
        acc[0].update((rel, *a) for a in executed)
        acc[1].update((rel, *a) for a in missing)
        if missing:
            missing_by_file[rel] = sorted(missing)
    core_exec, core_miss = by_owner.get("core", (set(), set()))
    all_exec = set().union(*(e for e, _ in by_owner.values())) if by_owner else set()
    all_miss = set().union(*(m for _, m in by_owner.values())) if by_owner else set()
    return {"schema": SCHEMA + "-summary", "protocols": rows, "core": _count(core_exec, core_miss),
            "total": _count(all_exec, all_miss), "missing": missing_by_file}


def print_summary(summary: dict, out: str) -> None:
    print(f"{'package':<20} {'histories':>9} {'branches':>14} {'taken':>8} {'cpu s':>8}")
    for p, row in sorted(summary["protocols"].items()):
        print(f"{p:<20} {row['histories']:>9,} {row['taken']:>6,} / {row['total']:<5,} {row['percent']:>7.2f}% "
              f"{row['cpu_s']:>8,.0f}")
    for name in ("core", "total"):
        row = summary[name]
        print(f"{name:<20} {'':>9} {row['taken']:>6,} / {row['total']:<5,} {row['percent']:>7.2f}%")
    count = sum(len(v) for v in summary["missing"].values())
    print(f"{count} branches not taken, by file and line (from -> to; a negative target is the function's exit): "
          f"{os.path.join(out, 'missing.txt')}")


def missing_text(summary: dict) -> str:
    lines = []
    for rel, arcs in summary["missing"].items():
        lines.append(f"{rel}: " + ", ".join(f"{a}->{b}" for a, b in arcs))
    return "\n".join(lines) + ("\n" if lines else "")
