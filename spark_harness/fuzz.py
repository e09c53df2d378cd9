"""`rmqspec fuzz`: many seeded histories of every protocol, on Spark or in one process.

The run: make the plan (spark_harness.plan), run it on the chosen engine
(spark_harness.engines) into an Aggregate, replay and shrink the shortest failing
history of each violated property on the driver (spark_harness.counterexample),
then write report.json, report.md and plots (spark_harness.report) and print a
summary table. Exit 1 when any history violated a property unexpectedly.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from typing import IO

import attrs

from reference_impl import core
from reference_impl.core import faults
from spark_harness import counterexample, engines, shrink
from spark_harness import report as report_mod
from spark_harness.aggregate import Aggregate
from spark_harness.history import DEFAULT_STEPS, TAIL_MS, HistorySpec
from spark_harness.plan import COVERAGE_SAMPLE, make_plan
from spark_harness.progress import Progress


@attrs.define(kw_only=True)
class FuzzOptions:
    protocol: str = "all"
    histories: int = 1000  # per protocol
    steps: int = DEFAULT_STEPS
    seed: int = 1
    engine: str = "fast"  # "fast": a protocol's fast world where one exists (spark_harness.plan); "reference"
    coverage_sample: int | None = COVERAGE_SAMPLE  # fast engine: histories per protocol the reference covers
    master: str = "local[*]"  # a Spark master URL, "none" (one process), or engines.SUBMITTED
    out: str = "out/fuzz"
    faults: list[str] | None = None  # profile names, ["all"], or None: every profile with faults
    nodes: list[int] | None = None  # cluster sizes, or None: the protocol's bench_nodes
    config: dict | None = None  # protocol config overrides for every history (as `simulate --config`)
    imports: tuple[str, ...] = ()
    parquet: str | None = None  # where Spark writes the per-history rows (default OUT/histories.parquet)
    counterexamples: bool = True
    shrink_budget: int = shrink.DEFAULT_BUDGET
    tail_ms: int = TAIL_MS
    progress: bool = True
    plots: bool = True  # report plots (counterexample timelines are drawn regardless)


@attrs.define
class FuzzResult:
    report: dict
    aggregate: Aggregate
    exit_code: int


def run(opts: FuzzOptions, log: IO[str] | None = None) -> FuzzResult:
    """Run a fuzz job (module docstring). Raises plan.PlanError for bad arguments and
    spark_harness.java.JavaMissing when Spark is asked for and no Java is found."""
    log = log if log is not None else sys.stdout
    plan = make_plan(opts.protocol, opts.histories, opts.seed, opts.steps, opts.faults, opts.nodes, opts.imports,
                     opts.tail_ms, opts.config, opts.engine, opts.coverage_sample)
    out = opts.out
    os.makedirs(out, exist_ok=True)
    progress = Progress(plan.total, enabled=opts.progress)
    timing: dict[str, float] = {}
    outputs: dict = {"dir": out}
    on = ", ".join(f"{p} on {e}" for p, e in plan.engines.items())
    print(f"rmqspec fuzz: {', '.join(plan.protocols)}; {plan.histories:,} histories each "
          f"(seeds {plan.seed}..{plan.seed + plan.histories - 1}), master {opts.master}, out {out}; {on}",
          file=log)
    cex_dir = os.path.join(out, "counterexamples")
    if opts.master == "none":
        start = time.perf_counter()
        agg = engines.run_local(plan, os.path.join(out, "histories.jsonl"), progress)
        timing["job_s"] = time.perf_counter() - start
        master = "none"
        outputs["histories"] = "histories.jsonl"
        progress.finish()
        start = time.perf_counter()
        cexs = shrink_failures(plan, agg, cex_dir, opts) if opts.counterexamples else {}
        timing["shrink_s"] = time.perf_counter() - start
    else:
        start = time.perf_counter()
        before = engines.active_session()
        spark = engines.session(opts.master)
        own = spark is not before  # a session the caller had open (same master) stays open
        timing["startup_s"] = time.perf_counter() - start
        parquet = opts.parquet or os.path.abspath(os.path.join(out, "histories.parquet"))
        start = time.perf_counter()
        try:
            try:
                agg = engines.run_spark(plan, spark, parquet, progress, ship_dir=os.path.join(out, "_ship"))
                master = spark.sparkContext.master
            finally:
                timing["job_s"] = time.perf_counter() - start
            progress.finish()
            # Failing histories are shrunk on the executors (in parallel), written down on the driver.
            start = time.perf_counter()
            tasks = shrink_tasks(plan, agg, opts) if opts.counterexamples else []
            if tasks:
                print(f"shrinking {len(tasks)} counterexamples on the executors", file=log)
            shrunk = shrink_on_spark(spark, tasks, plan.imports, opts.shrink_budget)
        finally:
            if own:
                spark.stop()
        cexs = write_counterexamples(shrunk, cex_dir, plan.imports)
        timing["shrink_s"] = time.perf_counter() - start
        outputs["histories"] = parquet if opts.parquet else "histories.parquet"
    if cexs:
        outputs["counterexamples"] = "counterexamples"
    rep = report_mod.build(plan, agg, master, timing, outputs, cexs)
    report_mod.write(rep, out, opts.plots)
    print(summary(rep, out), file=log)
    return FuzzResult(report=rep, aggregate=agg,
                      exit_code=1 if rep["unexpected_histories"] or rep["fast_mismatches"] else 0)


def shrink_tasks(plan, agg: Aggregate, opts: FuzzOptions) -> list[tuple]:
    """(protocol, property, spec, violating step, target) per violated property: its
    shortest unexpected failure if any, else its shortest expected one."""
    out = []
    for protocol in plan.protocols:
        pa = agg.protocols.get(protocol)
        for pid, tally in sorted(pa.violations.items()) if pa else ():
            first, expected = (tally.first_unexpected, False) if tally.first_unexpected else (tally.first_expected, True)
            spec = HistorySpec(protocol=protocol, profile=first["profile"], nodes=first["nodes"], seed=first["seed"],
                               steps=plan.steps, tail_ms=plan.tail_ms, overrides=plan.overrides)
            out.append((protocol, pid, spec, first["step"], shrink.Target(property=pid, expected=expected)))
    return out


def _shrink_task(imports: tuple[str, ...], budget: int, task: tuple) -> tuple:
    """One task's shrink result, or the reason it failed (the history did not fail on replay)."""
    _, _, spec, step, target = task
    try:
        return task, counterexample.shrink_fuzz(spec, step, target, budget, imports), None
    except ValueError as e:
        return task, None, str(e)


def shrink_on_spark(spark, tasks: list[tuple], imports: tuple[str, ...], budget: int) -> list[tuple]:
    """Shrink every task on the executors, one partition each (tasks are independent
    and deterministic: the results are those the driver would compute)."""
    if not tasks:
        return []
    sc = spark.sparkContext
    sc.setJobGroup("rmqspec-shrink", f"rmqspec fuzz: shrink {len(tasks)} counterexamples")
    longest_first = sorted(tasks, key=lambda t: -t[3])  # the longest replays start first: better balance
    return sc.parallelize(longest_first, len(tasks)).map(functools.partial(_shrink_task, imports, budget)).collect()


def write_counterexamples(shrunk: list[tuple], directory: str, imports: tuple[str, ...]) -> dict:
    out = {}
    for (protocol, pid, spec, step, target), result, error in shrunk:
        if result is None:  # the history does not fail again on replay: report it, do not hide it
            out[(protocol, pid)] = {"error": error, "verified": False}
        else:
            out[(protocol, pid)] = counterexample.write_fuzz(spec, step, target, result, directory, imports)
    return out


def shrink_failures(plan, agg: Aggregate, directory: str, opts: FuzzOptions) -> dict:
    """One shrunk counterexample per violated property, shrunk and written on the driver."""
    shrunk = [_shrink_task(plan.imports, opts.shrink_budget, t) for t in shrink_tasks(plan, agg, opts)]
    return write_counterexamples(shrunk, directory, plan.imports)


def summary(r: dict, out: str) -> str:
    w = max([len(p) for p in r["by_protocol"]] + [8]) + 2
    pw = max([len(n) for v in r["by_protocol"].values() for n in v["profiles"]] + [7]) + 2
    lines = ["", f"{'protocol':<{w}}{'profile':<{pw}}{'histories':>10}{'events':>12}{'violating':>11}{'unexpected':>11}"]
    for p, v in r["by_protocol"].items():
        for name, pr in v["profiles"].items():
            lines.append(f"{p:<{w}}{name:<{pw}}{pr['histories']:>10,}{pr['steps']:>12,}"
                         f"{pr['violating_histories']:>11,}{pr['unexpected_histories']:>11,}")
        viol = sum(pr["violating_histories"] for pr in v["profiles"].values())
        unexp = sum(pr["unexpected_histories"] for pr in v["profiles"].values())
        lines.append(f"{p:<{w}}{'(all)':<{pw}}{v['histories']:>10,}{v['steps']:>12,}{viol:>11,}{unexp:>11,}")
    lines.append("")
    for p, v in r["by_protocol"].items():
        c = v["coverage"]
        lines.append(f"coverage  {p}: actions {c['actions']['hit']}/{c['actions']['total']}, branches "
                     f"{c['branches']['hit']}/{c['branches']['total']}, about "
                     f"{c['distinct_states']['estimate']:,} distinct states "
                     f"(±{c['distinct_states']['relative_error']:.1%}; the reference over "
                     f"{c['source']['histories']:,} histories)")
        e = v["engine"]
        if e["engine"] == "fast":
            lines.append(f"engine    {p}: fast world; the reference judged {e['judged_by_reference']:,} histories"
                         + (f", FAST WORLD DISAGREED in {e['mismatches']:,} (seeds "
                            f"{', '.join(str(m['seed']) for m in e['mismatch_seeds'])})" if e["mismatches"] else
                            ", all agreed"))
        stats = [f"{k[5:]} p50 {s['p50']:g} p99 {s['p99']:g}" for k, s in v["stats"].items()
                 if k.startswith("stat:") and s.get("count")]
        if stats:
            lines.append(f"measured  {p}: " + " | ".join(stats))
    if r["violations"]:
        lines += ["", "violations:"]
        kw = max(len(k) for k in r["violations"])
        for key, v in r["violations"].items():
            verdict = f"UNEXPECTED in {v['unexpected']:,}" if v["unexpected"] else "expected"
            lines.append(f"  {key:<{kw}}  {verdict:<18} {v['histories']:>7,} histories")
            cex = v.get("counterexample") or {}
            if cex.get("trace"):
                lines.append(f"      {cex['choices']} chosen events ({cex['faults']} faults): {cex['replay']}")
            elif cex.get("error"):
                lines.append(f"      not reproduced on replay: {cex['error']}")
    else:
        lines += ["", "violations: none"]
    lines += ["", f"{r['histories']:,} histories, {r['steps']:,} events in {r['wall_s']} s "
                  f"({r['steps_per_s'] or 0:,} events/s) on {r['master']}",
              f"report: {os.path.join(out, 'report.json')}, {os.path.join(out, 'report.md')}"]
    return "\n".join(lines)


def profiles_table() -> str:
    """The fault profiles of every protocol (`rmqspec fuzz --list-profiles`)."""

    lines = []
    for name in core.protocol_names():
        core.protocol(name)  # imports the world module, which registers the protocol's own profiles
        lines.append(f"{name}:")
        width = max(len(prof) for prof in faults.names(name))
        for prof in faults.names(name):
            p = faults.profile(prof, name)
            tail = f"faults stop at {p.calm_at_ms / 1000:g} s" if p.calm_at_ms is not None else "no quiet tail"
            if not p.any_faults():
                tail = "no random faults"
            lines.append(f"  {prof:<{width}}  {tail:<21} {p.description}")
    return "\n".join(lines)
