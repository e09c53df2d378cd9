"""`rmqspec fuzz`: many seeded histories of every protocol, on Spark or in one process.

The run: make the plan (spark_harness.plan), run it on the chosen engine
(spark_harness.engines) into an Aggregate, replay and shrink the shortest failing
history of each violated property (spark_harness.counterexample: on the executors, or
in a pool of processes with `--master none`; an expected violation on a smaller step
budget than an unexpected one), write them down on the driver, then write report.json,
report.md and plots (spark_harness.report) and the HTML view (spark_harness.report_view),
and print a summary table whose last lines say where the report and the view are.
Every part of the run is timed (report.json `timing`). Exit 1 when any history
violated a property unexpectedly.
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import IO

import attrs

from histories import files, formats, view
from reference_impl import core
from reference_impl.core import faults
from spark_harness import counterexample, engines, report_view, shrink
from spark_harness import report as report_mod
from spark_harness.aggregate import Aggregate
from spark_harness.history import DEFAULT_STEPS, TAIL_MS
from spark_harness.plan import COVERAGE_SAMPLE, default_profiles, make_plan
from spark_harness.progress import Progress

SHRINK_GROUP = "rmqspec-shrink"


@attrs.define(kw_only=True)
class FuzzOptions:
    protocol: str = "all"
    histories: int = 1000  # per protocol
    steps: int = DEFAULT_STEPS
    seed: int = 1
    engine: str = "fast"  # "fast": a protocol's fast world where one exists (spark_harness.plan); "reference"
    coverage_sample: int | None = COVERAGE_SAMPLE  # fast engine: histories per protocol the reference covers
    judge: str = "sample"  # fast engine: which violating histories the reference re-runs (spark_harness.plan)
    master: str = "local[*]"  # a Spark master URL, "none" (this process, shrinking in a pool), or engines.SUBMITTED
    out: str = "out/fuzz"
    faults: list[str] | None = None  # profile names, ["all"], or None: every profile with faults
    nodes: list[int] | None = None  # cluster sizes, or None: the protocol's bench_nodes
    config: dict | None = None  # protocol config overrides for every history (as `simulate --config`)
    vary: bool = True  # cycle version profiles, draw switches, swarm subsets and shapes (spark_harness/variants.py)
    imports: tuple[str, ...] = ()
    parquet: str | None = None  # where Spark writes the per-history rows (default OUT/histories.parquet)
    counterexamples: bool = True
    shrink_budget: int = shrink.DEFAULT_BUDGET  # replayed steps per unexpected violation's counterexample
    shrink_budget_expected: int = shrink.EXPECTED_BUDGET  # ... per expected violation's
    shrink_workers: int | None = None  # with master "none": processes that shrink (default: one per core)
    tail_ms: int = TAIL_MS
    progress: bool = True
    plots: bool = True  # report plots (counterexample timelines are drawn regardless)
    view: bool = True  # the HTML view: index.html and a page per counterexample (docs/view.md)


@attrs.define
class FuzzResult:
    report: dict
    aggregate: Aggregate
    exit_code: int


class _Clock:
    """The run's parts, timed: each `part(name)` block adds its wall seconds to `timing[name]`."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.timing: dict[str, float] = {}

    @contextlib.contextmanager
    def part(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timing[name] = self.timing.get(name, 0.0) + time.perf_counter() - start

    def total(self) -> float:
        return time.perf_counter() - self.start


# A run's outputs in OUT (besides _ship/, rebuilt by each run that needs it): a previous
# run's are removed first, so that the folder holds only what this run's report names.
OUTPUTS = ("report.json", "report.md", "index.html", "histories.jsonl", "histories.parquet", "plots", "counterexamples")


def run(opts: FuzzOptions, log: IO[str] | None = None) -> FuzzResult:
    """Run a fuzz job (module docstring) holding OUT's lock: a second run into the same folder
    raises files.FolderBusy. Raises plan.PlanError for bad arguments and
    spark_harness.java.JavaMissing when Spark is asked for and no Java is found."""
    with files.folder_lock(files.out_folder(opts.out), "rmqspec fuzz"):
        return _run(opts, log)


def _run(opts: FuzzOptions, log: IO[str] | None = None) -> FuzzResult:
    log = log if log is not None else sys.stdout
    clock = _Clock()
    plan = make_plan(opts.protocol, opts.histories, opts.seed, opts.steps, opts.faults, opts.nodes, opts.imports,
                     opts.tail_ms, opts.config, vary=opts.vary, engine=opts.engine,
                     coverage_sample=opts.coverage_sample, judge=opts.judge)
    out = files.out_folder(opts.out)
    for name in OUTPUTS:
        files.remove(os.path.join(out, name))
    progress = Progress(plan.total, enabled=opts.progress)
    outputs: dict = {"dir": out}
    on = ", ".join(f"{p} on {e}" for p, e in plan.engines.items())
    print(f"rmqspec fuzz: {', '.join(plan.protocols)}; {plan.histories:,} histories each "
          f"(seeds {plan.seed}..{plan.seed + plan.histories - 1}), master {opts.master}, out {formats.escape(out)}; {on}", file=log,
          flush=True)
    if opts.master == "none":
        with clock.part("histories_s"):
            agg = engines.run_local(plan, os.path.join(out, "histories.jsonl"), progress)
        master = "none"
        outputs["histories"] = "histories.jsonl"
        progress.finish()
        tasks = shrink_tasks(plan, agg, opts) if opts.counterexamples else []
        workers = min(len(tasks), opts.shrink_workers or os.cpu_count() or 1)
        with clock.part("shrink_s"):
            shrunk = shrink_in_processes(tasks, plan.imports, _budgets(opts), workers,
                                         _shrink_progress(tasks, opts, log, f"{workers} process(es)"))
        shrink_where = f"{workers} process(es)" if tasks else None
    else:
        if opts.progress:  # a JVM starts: seconds on an idle machine, a minute on a loaded one, without a line
            print(f"fuzz: starting Spark ({opts.master}; a JVM)", file=sys.stderr, flush=True)
        with clock.part("startup_s"):
            before = engines.active_session()
            spark = engines.session(opts.master)
        own = spark is not before  # a session the caller had open (same master) stays open
        parquet = opts.parquet or os.path.abspath(os.path.join(out, "histories.parquet"))
        try:
            with clock.part("histories_s"):
                agg = engines.run_spark(plan, spark, parquet, progress, ship_dir=os.path.join(out, "_ship"))
                master = spark.sparkContext.master
            progress.finish()
            # Failing histories are shrunk on the executors (in parallel), written down on the driver.
            tasks = shrink_tasks(plan, agg, opts) if opts.counterexamples else []
            with clock.part("shrink_s"):
                shrunk = shrink_on_spark(spark, tasks, plan.imports, _budgets(opts),
                                         _shrink_progress(tasks, opts, log, "the executors"))
            shrink_where = "the Spark executors" if tasks else None
        except BaseException:
            if own:  # interrupted or failed under a running job: the JVM says nothing of it
                own = False
                engines.stop_quietly(spark)
            raise
        finally:
            if own:
                spark.stop()
        outputs["histories"] = parquet if opts.parquet else "histories.parquet"
    def note(text: str) -> None:  # the pictures, plots and pages took 30 s without a line on a loaded machine
        if opts.progress:
            print(f"fuzz: {text}", file=sys.stderr, flush=True)

    with clock.part("write_s"):
        cexs = write_counterexamples(shrunk, out, plan.imports, clock.timing, note)
    # write_counterexamples counted its pictures under plots_s: not twice
    clock.timing["write_s"] -= clock.timing.get("plots_s", 0.0)
    if cexs:
        outputs["counterexamples"] = "counterexamples"
    rep = report_mod.build(plan, agg, master, clock.timing, outputs, cexs, shrinking_summary(opts, shrunk))
    rep["shrink_workers"] = shrink_where
    if opts.plots:
        note("drawing the report's plots (report.md's pictures)")
        with clock.part("plots_s"):
            report_mod.draw_plots(rep, out)
    if opts.view:
        note("writing the HTML view: index.html and a page per counterexample (each replays its trace)")
        with clock.part("write_s"):
            try:
                page = report_view.write(out, report=rep)
            except view.ViewError as e:  # the pages are a convenience: the report is still written
                rep["outputs"]["view_error"] = str(e)
            else:
                rep["outputs"]["view"] = os.path.relpath(page["out"], out)
    report_mod.finish_timing(rep, clock.timing, clock.total())
    report_mod.write(rep, out, with_plots=False)
    print(summary(rep, out), file=log)
    return FuzzResult(report=rep, aggregate=agg,
                      exit_code=1 if rep["unexpected_histories"] or rep["fast_mismatches"] else 0)


def _budgets(opts: FuzzOptions) -> tuple[int, int]:
    """(unexpected, expected) step budgets per counterexample."""
    return opts.shrink_budget, opts.shrink_budget_expected


def _shrink_progress(tasks: list[tuple], opts: FuzzOptions, log: IO[str], where: str) -> Progress:
    if tasks:
        n_exp = sum(1 for t in tasks if t[4].expected)
        print(f"shrinking {len(tasks)} counterexample(s) on {where}: {len(tasks) - n_exp} unexpected "
              f"(budget {opts.shrink_budget:,} replayed steps each), {n_exp} expected "
              f"(budget {opts.shrink_budget_expected:,})", file=log, flush=True)
    return Progress(len(tasks), label="shrink", unit="counterexamples", enabled=opts.progress and bool(tasks))


def shrink_tasks(plan, agg: Aggregate, opts: FuzzOptions) -> list[tuple]:
    """(protocol, property, spec, violating step, target) per violated property: its
    shortest unexpected failure if any, else its shortest expected one."""
    out = []
    for protocol in plan.protocols:
        pa = agg.protocols.get(protocol)
        for pid, tally in sorted(pa.violations.items()) if pa else ():
            first, expected = (tally.first_unexpected, False) if tally.first_unexpected else (tally.first_expected, True)
            spec = plan.spec(protocol, plan.index_of(first["seed"]))
            out.append((protocol, pid, spec, first["step"], shrink.Target(property=pid, expected=expected)))
    return out


def _shrink_task(imports: tuple[str, ...], budgets: tuple[int, int], task: tuple) -> tuple:
    """One task's shrink result, or the reason it failed (the history did not fail on
    replay). An unexpected violation gets budgets[0] replayed steps, an expected one budgets[1]."""
    _, _, spec, step, target = task
    budget = budgets[1] if target.expected else budgets[0]
    try:
        return task, counterexample.shrink_fuzz(spec, step, target, budget, imports), None
    except ValueError as e:
        return task, None, str(e)


def shrink_on_spark(spark, tasks: list[tuple], imports: tuple[str, ...], budgets: tuple[int, int],
                    progress: Progress | None = None) -> list[tuple]:
    """Shrink every task on the executors, one partition each (tasks are independent
    and deterministic: the results are those the driver would compute)."""
    if not tasks:
        return []
    sc = spark.sparkContext
    sc.setJobGroup(SHRINK_GROUP, f"rmqspec fuzz: shrink {len(tasks)} counterexamples")
    watcher = engines.Watcher(sc, SHRINK_GROUP, len(tasks), progress) if progress is not None else None
    if watcher is not None:
        watcher.start()
    try:
        items = [(i, tasks[i]) for i in sorted(range(len(tasks)), key=lambda i: -tasks[i][3])]  # longest first
        done = dict(sc.parallelize(items, len(items)).map(functools.partial(_indexed_shrink, imports, budgets))
                    .collect())
        return [done[i] for i in range(len(tasks))]
    finally:
        if watcher is not None:
            watcher.stop.set()
            watcher.join()
            progress.update(len(tasks), "done")
            progress.finish()


def _indexed_shrink(imports: tuple[str, ...], budgets: tuple[int, int], item: tuple[int, tuple]) -> tuple:
    i, task = item
    return i, _shrink_task(imports, budgets, task)


def shrink_in_processes(tasks: list[tuple], imports: tuple[str, ...], budgets: tuple[int, int], workers: int,
                        progress: Progress | None = None) -> list[tuple]:
    """Shrink every task in `workers` processes (one: in this process); results in the
    order of `tasks`, the same as computed one by one (shrinking is deterministic)."""
    results: dict[int, tuple] = {}
    work = functools.partial(_indexed_shrink, imports, budgets)
    items = [(i, tasks[i]) for i in sorted(range(len(tasks)), key=lambda i: -tasks[i][3])]  # longest first

    def done(i: int, result: tuple) -> None:
        results[i] = result
        if progress is not None:
            (protocol, pid, *_), res, _ = result
            progress.advance(1, f"{protocol} {pid}: " + ("not reproduced" if res is None else
                                                         f"{len(res.choices)} of {res.original} events"
                                                         + (" (budget ran out)" if res.exhausted else "")))

    if workers <= 1 or len(tasks) <= 1:
        for item in items:
            done(*work(item))
    else:
        ctx = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
        with ctx.Pool(workers) as pool:
            for i, result in pool.imap_unordered(work, items):
                done(i, result)
    if progress is not None:
        progress.finish()
    return [results[i] for i in range(len(tasks))]


def write_counterexamples(shrunk: list[tuple], out_dir: str, imports: tuple[str, ...],
                          timing: dict | None = None, note: Callable[[str], None] = lambda text: None) -> dict:
    """The shrunk histories into OUT/counterexamples/ (a real folder, never a symlink found there);
    `note` hears of each before it is written (its timeline picture takes a second or more)."""
    out: dict = {}
    directory = files.subfolder(out_dir, "counterexamples") if shrunk else ""
    for n, ((protocol, pid, spec, step, target), result, error) in enumerate(shrunk, 1):
        note(f"writing counterexample {n} of {len(shrunk)} ({protocol} {pid}): trace, timeline picture, notes")
        if result is None:  # the history does not fail again on replay: report it, do not hide it
            out[(protocol, pid)] = {"error": error, "verified": False}
        else:
            out[(protocol, pid)] = counterexample.write_fuzz(spec, step, target, result, directory, imports, timing)
    return out


def shrinking_summary(opts: FuzzOptions, shrunk: list[tuple]) -> dict:
    """What was shrunk how far (report.json `shrinking`)."""
    rows = []
    for (protocol, pid, _, step, target), result, error in shrunk:
        row = {"protocol": protocol, "property": pid, "expected": target.expected,
               "budget": opts.shrink_budget_expected if target.expected else opts.shrink_budget}
        if result is None:
            row |= {"error": error}
        else:
            row |= {"original_events": result.original, "choices": len(result.choices), "steps": result.steps,
                    "replays": result.attempts, "one_minimal": not result.exhausted}
        rows.append(row)
    return {"budget_unexpected": opts.shrink_budget, "budget_expected": opts.shrink_budget_expected,
            "counterexamples": len(rows), "one_minimal": sum(1 for r in rows if r.get("one_minimal")),
            "cut_short": sum(1 for r in rows if r.get("one_minimal") is False),
            "not_reproduced": sum(1 for r in rows if "error" in r), "by_property": rows}


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
    for p, vs in (r.get("versions") or {}).items():
        parts = [f"{label}: {x['histories']:,} histories, {x['violating_histories']:,} violating, "
                 f"{x['unexpected_histories']:,} unexpected" for label, x in vs.items() if x]
        lines.append(f"versions  {p}: " + " | ".join(parts))
    lines.append("")
    for p, v in r["by_protocol"].items():
        c = v["coverage"]
        lines.append(f"coverage  {p}: actions {c['actions']['hit']}/{c['actions']['total']}, branches "
                     f"{c['branches']['hit']}/{c['branches']['total']}, about "
                     f"{c['distinct_states']['estimate']:,} distinct states "
                     f"(±{c['distinct_states']['relative_error']:.1%}; the {c['source']['engine']} world over "
                     f"{c['source']['histories']:,} histories)")
        e = v["engine"]
        if e["engine"] == "fast":
            lines.append(f"engine    {p}: fast world; the reference judged {e['judged_by_reference']:,} histories"
                         + ("" if e["judge"].startswith("every history with a violation") else " (a sample)")
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
            if v.get("statement"):  # what the id means, so a finding reads without the catalogue at hand
                statement = " ".join(v["statement"].split())
                lines.append(f"      {statement[:150] + ('...' if len(statement) > 150 else '')}")
            cex = v.get("counterexample") or {}
            if cex.get("trace"):
                lines.append(f"      {cex['choices']} chosen events ({cex['faults']} faults): {cex['replay']}")
            elif cex.get("error"):
                lines.append(f"      not reproduced on replay: {cex['error']}")
        if not r["unexpected_histories"]:
            lines += ["", "Every violation above is expected: RocketMQ's own behaviour, with its cause (docs/properties.md "
                      "and the findings pages). To check your own implementation against the reference, start at "
                      "docs/conformance.md."]
    else:
        lines += ["", "violations: none"]
    outputs = r.get("outputs") or {}
    lines += ["", f"{r['histories']:,} histories, {r['steps']:,} events on {r['master']}. " + report_mod.timing_line(r),
              f"report: {formats.escape(os.path.join(out, 'report.md'))} (and report.json)"]
    if outputs.get("view"):
        lines.append(f"view:   {formats.escape(os.path.join(out, outputs['view']))} (open it in a browser to step through the "
                     "counterexamples)")
    elif outputs.get("view_error"):
        lines.append(f"view:   not written: {outputs['view_error']}")
    return "\n".join(lines)


def profiles_json() -> dict:
    """The fault profiles of every protocol (`rmqspec fuzz --list-profiles --json`)."""
    out = {}
    for name in core.protocol_names():
        core.protocol(name)  # imports the world module, which registers the protocol's own profiles
        out[name] = {}
        for prof in faults.names(name):
            p = faults.profile(prof, name)
            out[name][prof] = {"description": p.description, "calm_at_ms": p.calm_at_ms,
                               "random_faults": p.any_faults(), "fuzzed_by_default": prof in default_profiles(name)}
    return out


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
