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

import ast
import hashlib
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
# Files of reference_impl/ that a fuzz history does not run by design, each with its reason.
# Their branches are reported apart (`not_fuzzed`); every other branch is in `fuzzed`.
NOT_FUZZED = {
    "log_points.py": "the implementation-log writer (rmqspec.log/1) that histories/reference_log.py and "
                     "check-trace call; a fuzz history writes no log (its tests: test_*_impl_logs.py, "
                     "test_*_log.py)",
    "core/codec.py": "trace encoding and decoding (replay, check-trace, counterexample files); a fuzz history "
                     "writes no trace, only its counterexamples do (test_trace.py)",
    "core/inputs.py": "validation of user input (simulate --config, scenario files, check-trace headers); the "
                      "fuzz builds valid configurations, so the error branches are for bad input "
                      "(test_hostile_inputs.py)",
}
ROOT = Path(__file__).resolve().parent.parent / "reference_impl"
DEFAULT_HISTORIES = 1000  # the goal of issue 27: >= 97 % of the reference's branches by 1,000 histories a protocol
DEFAULT_OUT = "out/coverage"


class MissingCoverage(RuntimeError):
    """coverage.py is not installed."""


def _relative(path: str) -> str:
    return str(Path(path).resolve().relative_to(ROOT.parent))


def not_fuzzed(relative: str) -> str | None:
    """Why no fuzz history runs this file (NOT_FUZZED), or None."""
    return next((why for suffix, why in NOT_FUZZED.items() if relative.endswith("/" + suffix)), None)


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
        done = 0
        with subprocess.Popen([sys.executable, "-m", "rmqspec.coverage_worker", protocol, str(histories), str(seed),
                               data_file], stdout=subprocess.PIPE, text=True, cwd=ROOT.parent) as child:
            try:
                for line in child.stdout:
                    if line.startswith("history "):
                        done += 1
                        if on_history is not None:
                            on_history(int(line.split()[1]))
            except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the worker stops too, keeping the histories it finished
                child.terminate()
                child.wait()
        if child.returncode != 0 or not os.path.exists(data_file):
            raise RuntimeError(f"the coverage worker for {protocol} exited {child.returncode}")
        cpu = _children_cpu() - cpu0
        per_file = files_of(data_file, scratch)
    return {"schema": SCHEMA, "protocol": protocol, "histories": done, "asked": histories, "seed": seed,
            "cpu_s": round(cpu, 1), "coverage_py": coverage.__version__, "files": per_file}


def files_of(data_file: str, scratch: str) -> dict:
    """Per file of reference_impl/ (relative to the repository), the branches taken and
    missed in a saved coverage.py data file, as sorted [from, to] line pairs."""
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
            digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
            per_file[rel] = {"executed": executed, "missing": missing, "source": digest}
    return per_file


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
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # not a measurement of ours
        if isinstance(data, dict) and data.get("schema") == SCHEMA:
            found.append(data)
    return found


def _ratio(executed: set, missing: set) -> dict:
    taken, total = len(executed), len(executed) + len(missing)
    return {"taken": taken, "total": total, "percent": round(100 * taken / total, 2) if total else 100.0}


def _count(executed: set, missing: set) -> dict:
    """All branches, and apart those of files the fuzz runs and those it does not (NOT_FUZZED);
    a branch is (file, from, to)."""
    def fuzzed(branches: set, want: bool) -> set:
        return {b for b in branches if (not_fuzzed(b[0]) is None) == want}
    return _ratio(executed, missing) | {"fuzzed": _ratio(fuzzed(executed, True), fuzzed(missing, True)),
                                        "not_fuzzed": _ratio(fuzzed(executed, False), fuzzed(missing, False))}


def summarize(results: list[dict]) -> dict:
    """Per protocol (its own package), `core`, and `total` (the union of every measured
    protocol over all of reference_impl/), with the missing branches by file."""
    union: dict[str, tuple[set, set]] = {}
    # The version of each file the union counts: the one its own protocol ran (core: the first
    # measurement's); a measurement of another version is left out, its line numbers do not compare.
    sources: dict[str, str] = {}
    for r in results:
        for rel, data in r["files"].items():
            if _owner(rel) == r["protocol"]:
                sources[rel] = data.get("source", "")
    for r in results:
        for rel, data in r["files"].items():
            sources.setdefault(rel, data.get("source", ""))
    stale = set()
    rows = {}
    for r in results:
        own_exec, own_miss = set(), set()
        for rel, data in r["files"].items():
            if sources[rel] != data.get("source", ""):
                stale.add(f"{rel} ({r['protocol']})")
                continue
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
            "total": _count(all_exec, all_miss), "missing": missing_by_file,
            "not_fuzzed": {rel: not_fuzzed(rel) for rel in sorted(union) if not_fuzzed(rel)},
            "stale": sorted(stale)}


def _cell(row: dict) -> str:
    return f"{row['taken']:>5,} / {row['total']:<5,} {row['percent']:>6.2f}%"


def print_summary(summary: dict, out: str) -> None:
    """A row per protocol (its own package), then core and the union: branches taken in the
    files a fuzz history runs, in those it does not (NOT_FUZZED), and in all."""
    print(f"{'package':<18} {'histories':>9}  {'fuzzed files':<21} {'not fuzzed':<21} {'all':<21} {'cpu s':>6}")
    for p, row in sorted(summary["protocols"].items()):
        print(f"{p:<18} {row['histories']:>9,}  {_cell(row['fuzzed'])}  {_cell(row['not_fuzzed'])}  {_cell(row)}  "
              f"{row['cpu_s']:>6,.0f}")
    for name in ("core", "total"):
        row = summary[name]
        print(f"{name:<18} {'':>9}  {_cell(row['fuzzed'])}  {_cell(row['not_fuzzed'])}  {_cell(row)}")
    if summary["stale"]:
        print(f"left out of the union: {len(summary['stale'])} measurements of a file on another version than its "
              f"own protocol's (--json: stale)")
    count = sum(len(v) for v in summary["missing"].values())
    print(f"{count} branches not taken, by file and line (from -> to; a negative target is the function's exit): "
          f"{os.path.join(out, 'missing.txt')}")


def _functions(path: Path) -> list[tuple[int, int, str]]:
    """(first line, last line, qualified name) of every function in a file, outermost first."""
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError):
        return []
    found = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    found.append((child.lineno, child.end_lineno or child.lineno, name))
                visit(child, name + ".")
    visit(tree, "")
    return found


def missing_text(summary: dict) -> str:
    """Every branch not taken, a line per file and function (`<module>` for top-level code),
    with the reason when no fuzz history runs the file."""
    lines = []
    for rel, arcs in summary["missing"].items():
        functions = _functions(ROOT.parent / rel)
        by_function: dict[str, list] = {}
        for a, b in arcs:
            inner = [f for f in functions if f[0] <= a <= f[1]]
            name = inner[-1][2] if inner else "<module>"
            by_function.setdefault(name, []).append(f"{a}->{b}")
        why = not_fuzzed(rel)
        for name, shown in by_function.items():
            lines.append(f"{rel} {name}: " + ", ".join(shown) + (f"  [not fuzzed: {why}]" if why else ""))
    return "\n".join(lines) + ("\n" if lines else "")
