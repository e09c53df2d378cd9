"""`rmqspec bench`: throughput of the reference worlds and the fast worlds (docs/benchmarks.md).

Each row runs whole histories (HISTORY_STEPS events, profile `standard`, fresh seed
each) for a fixed wall time and reports events per second and per CPU-second, with
every property checked at every step and, for the reference, with no checks too. A
protocol with a fast world (histories.fast) gets a row for it as well (`engine`
"fast"; it always checks every property); its compile or cache load happens before
the clock starts. All rows of one run share the machine's conditions, so read them as
ratios: `ratios` divides each fast row's events per CPU-second by the reference's.
`--explore` does the same for `rmqspec explore`'s distinct states per second.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable
from typing import Any

from histories import fast, runner
from histories import tolerant as tolerant_mod
from model_checks import explore as explore_mod
from model_checks import explore_fast
from property_tests.support import impl_logs
from reference_impl import core
from reference_impl.core import chooser, faults
from spark_harness import engines, report
from spark_harness import plan as plan_mod
from spark_harness.progress import Progress
from spec import properties

HISTORY_STEPS = 5000


def measure(protocol: str, nodes: int, checked: bool, seconds: float, profile: str = "standard",
            engine: str = "reference") -> dict:
    """Whole histories of one world for `seconds` of wall time (at least one)."""
    cfg = core.protocol(protocol).make_config(nodes, {}).evolve(profile=faults.profile(profile, protocol))
    props = properties.for_protocol(protocol) if checked else []
    if engine == "fast":
        twin = fast.Runner(cfg)
        twin.run(0, 10)  # compile or load the kernel before the clock starts
        one = lambda seed: twin.run(seed, HISTORY_STEPS).steps
    else:
        one = lambda seed: runner.run(cfg, chooser.SeededChooser(seed).choose, HISTORY_STEPS, properties=props).steps
    events = histories = 0
    seed = 0
    start, cpu0 = time.perf_counter(), time.process_time()
    while True:
        events += one(seed)
        histories += 1
        seed += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            break
    cpu = max(time.process_time() - cpu0, 1e-9)
    return {"protocol": protocol, "nodes": nodes, "checked": checked, "engine": engine, "profile": profile,
            "histories": histories, "events": events, "seconds": round(elapsed, 3), "cpu_s": round(cpu, 3),
            "events_per_s": round(events / elapsed), "events_per_cpu_s": round(events / cpu),
            "histories_per_s": round(histories / elapsed, 2)}


def cases(only: str | None = None, engines: tuple[str, ...] = ("reference", "fast")) -> list[tuple[str, int, bool, str]]:
    """(protocol, nodes, checked, engine) of every row, in order: the reference with and
    without its properties, then the fast world (every property checked) where one exists."""
    out = []
    for protocol in core.protocol_names():
        if only and protocol != only:
            continue
        for nodes in core.protocol(protocol).bench_nodes:
            if "reference" in engines:
                out += [(protocol, nodes, checked, "reference") for checked in (True, False)]
            if "fast" in engines and protocol in fast.PROTOCOLS:
                out.append((protocol, nodes, True, "fast"))
    return out


def run(seconds: float, only: str | None = None, on_row: Callable[[dict], None] | None = None,
        engines: tuple[str, ...] = ("reference", "fast")) -> list[dict]:
    """A row per case, `seconds` each; `on_row` sees each row as it is measured (progress)."""
    rows = []
    for protocol, nodes, checked, engine in cases(only, engines):
        rows.append(measure(protocol, nodes, checked, seconds, engine=engine))
        if on_row is not None:
            on_row(rows[-1])
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    for row in rows:
        row["peak_rss_mib"] = round(peak_mib, 1)
    return rows


def ratios(rows: list[dict]) -> list[dict]:
    """Fast world vs reference, events per CPU-second, both checking every property."""
    ref = {(r["protocol"], r["nodes"]): r for r in rows if r["engine"] == "reference" and r["checked"]}
    return [{"protocol": r["protocol"], "nodes": r["nodes"],
             "fast_vs_reference": round(r["events_per_cpu_s"] / ref[(r["protocol"], r["nodes"])]["events_per_cpu_s"], 1)}
            for r in rows if r["engine"] == "fast" and (r["protocol"], r["nodes"]) in ref]


def print_table(rows: list[dict]) -> None:
    print(f"{'protocol':<18}{'nodes':>6}  {'engine':<10}{'properties':<11}{'events/s':>12}{'events/CPU-s':>14}"
          f"{'histories/s':>13}{'events':>12}")
    for r in rows:
        print(f"{r['protocol']:<18}{r['nodes']:>6}  {r['engine']:<10}{'checked' if r['checked'] else 'off':<11}"
              f"{r['events_per_s']:>12,}{r['events_per_cpu_s']:>14,}{r['histories_per_s']:>13}{r['events']:>12,}")
    for x in ratios(rows):
        print(f"{x['protocol']} {x['nodes']} nodes: the fast world runs {x['fast_vs_reference']}x the reference's "
              "checked events per CPU-second")
    if rows:
        print(f"peak RSS {rows[0]['peak_rss_mib']} MiB; one process, {HISTORY_STEPS}-event histories, "
              f"profile {rows[0]['profile']}")


# --- bench --fuzz: the fuzz pipeline on one process, a process pool and Spark, in one run ---

FUZZ_HISTORIES = {"reference": 600, "fast": 10_000}


def _warm(_: int) -> int:
    """Import everything and run one short history, so pool start-up is not timed."""

    p = plan_mod.make_plan("election", 1, steps=200, coverage_sample=0)
    return sum(r["steps"] for c in p.chunks(1) for r in plan_mod.run_chunk(p, c))


def tree_cpu_s() -> float | None:
    """CPU seconds (user + system) used so far by this process and all its live
    descendants (Spark's JVM and Python workers, a pool's processes), from Linux's
    /proc; None elsewhere. Reaped children count through their parent's cutime."""
    import os

    try:
        tick = os.sysconf("SC_CLK_TCK")
        parent, cpu = {}, {}
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as f:
                    stat = f.read()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            parent[int(name)] = int(fields[1])
            cpu[int(name)] = sum(int(x) for x in fields[11:15])
    except (OSError, ValueError):
        return None
    total, frontier = 0, [os.getpid()]
    while frontier:
        pid = frontier.pop()
        total += cpu.get(pid, 0)
        frontier += [c for c, p in parent.items() if p == pid]
    return total / tick


def _peak_rss_mib(protocol: str, histories: int, engine: str) -> float:
    """Peak RSS of a fresh `--master none` run of `histories` histories (a subprocess)."""
    import subprocess
    import sys

    code = ("import resource, tempfile, os\n"
            "from spark_harness import engines, plan, progress\n"
            f"p = plan.make_plan({protocol!r}, {histories}, engine={engine!r}, coverage_sample=0)\n"
            "engines.run_local(p, os.path.join(tempfile.mkdtemp(), 'h.jsonl'), progress.Progress(1, enabled=False))\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return round(int(out.stdout.split()[-1]) / 1024, 1)


FUZZ_PHASES = 5  # one process, a pool, Spark, two memory runs


def fuzz(protocol: str = "election", histories: int | None = None, cores: int | None = None,
         on_phase: Callable[[str], None] | None = None, engine: str = "fast") -> dict:
    """Histories and events per second of the same fuzz plan (every fault profile,
    the protocol's cluster sizes) run three ways, and the driver's peak memory at two
    sizes. Start-up (Spark session, pool spawn) is measured apart and excluded from
    the rates; each engine writes its per-history rows (JSON Lines or Parquet) and
    aggregates them, as `rmqspec fuzz` does. On the fast world (`engine` "fast", where
    the protocol has one) no coverage sample is taken: the reference only judges the
    histories with a violation."""
    import multiprocessing
    import os
    import tempfile


    cores = cores or os.cpu_count() or 2
    plan = plan_mod.make_plan(protocol, 1, engine=engine)
    engine = plan.engines[protocol]
    histories = histories or FUZZ_HISTORIES[engine]
    plan = plan_mod.make_plan(protocol, histories, engine=engine, coverage_sample=0)
    tmp = tempfile.mkdtemp(prefix="rmqspec-bench-")
    quiet = Progress(1, enabled=False)
    load_before = os.getloadavg()
    rows, views = [], {}

    def row(engine: str, workers: int, agg, seconds: float, startup: float, cpu: float | None) -> None:
        rows.append({"engine": engine, "workers": workers, "histories": agg.histories, "events": agg.steps,
                     "seconds": round(seconds, 2), "startup_s": round(startup, 2),
                     "histories_per_s": round(agg.histories / seconds, 1), "events_per_s": round(agg.steps / seconds),
                     "cpu_s": None if cpu is None else round(cpu, 2)})
        views[engine] = report.deterministic_view(report.build(plan, agg, engine, {}, {}, {}))

    def phase(text: str) -> None:
        if on_phase is not None:
            on_phase(text)

    def cpu_since(before: float | None) -> float | None:
        now = tree_cpu_s()
        return None if before is None or now is None else now - before

    start, cpu0 = time.perf_counter(), tree_cpu_s()
    agg = engines.run_local(plan, os.path.join(tmp, "one.jsonl"), quiet)
    row("one process", 1, agg, time.perf_counter() - start, 0.0, cpu_since(cpu0))
    phase(f"one process: {rows[-1]['seconds']} s")

    start = time.perf_counter()
    pool = multiprocessing.get_context("spawn").Pool(cores)
    pool.map(_warm, range(cores))
    startup = time.perf_counter() - start
    try:
        start, cpu0 = time.perf_counter(), tree_cpu_s()
        agg = engines.run_processes(plan, cores, os.path.join(tmp, "pool.jsonl"), quiet, pool=pool)
        row("multiprocessing", cores, agg, time.perf_counter() - start, startup, cpu_since(cpu0))
        phase(f"multiprocessing: {rows[-1]['seconds']} s (+{rows[-1]['startup_s']} s start-up)")
    finally:
        pool.close()
        pool.join()

    start = time.perf_counter()
    spark = engines.session(f"local[{cores}]", app="rmqspec bench")
    warm = plan_mod.make_plan(protocol, 2 * cores, steps=200, engine=engine, coverage_sample=0)
    engines.run_spark(warm, spark, os.path.join(tmp, "warm.parquet"), quiet)
    startup = time.perf_counter() - start
    try:
        start, cpu0 = time.perf_counter(), tree_cpu_s()
        agg = engines.run_spark(plan, spark, os.path.join(tmp, "spark.parquet"), quiet)
        row(f"spark local[{cores}]", cores, agg, time.perf_counter() - start, startup, cpu_since(cpu0))
        phase(f"spark: {rows[-1]['seconds']} s (+{rows[-1]['startup_s']} s start-up)")
    finally:
        spark.stop()

    one = rows[0]["events_per_s"]
    for r in rows:
        r["speedup"] = round(r["events_per_s"] / one, 2)
        # CPU spent per unit of work relative to one process: what the engine costs on top,
        # whatever else the machine runs (wall-clock ratios suffer from other load; this does not).
        r["cpu_efficiency"] = (round(rows[0]["cpu_s"] / r["cpu_s"], 3) if r["cpu_s"] and rows[0]["cpu_s"]
                               else None)
    memory = {}
    for n in (max(1, histories // 8), max(2, histories // 2)):
        memory[n] = _peak_rss_mib(protocol, n, engine)
        phase(f"peak RSS at {n} histories: {memory[n]} MiB")
    return {"protocol": protocol, "engine": engine, "cores": cores, "histories": histories, "rows": rows,
            "spark_vs_one": rows[2]["speedup"],
            "spark_vs_multiprocessing": round(rows[2]["events_per_s"] / rows[1]["events_per_s"], 3),
            "same_results": all(v == views["one process"] for v in views.values()),
            "driver_peak_rss_mib": memory, "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()]}


def print_fuzz(r: dict) -> None:
    print(f"rmqspec bench --fuzz: {r['protocol']} on the {r['engine']} world, {r['histories']} histories per "
          f"engine, {r['cores']} cores")
    print(f"{'engine':<20}{'histories/s':>12}{'events/s':>11}{'speedup':>9}{'seconds':>9}{'start-up s':>12}"
          f"{'CPU s':>8}{'CPU eff.':>10}")
    for x in r["rows"]:
        print(f"{x['engine']:<20}{x['histories_per_s']:>12}{x['events_per_s']:>11,}{x['speedup']:>9}"
              f"{x['seconds']:>9}{x['startup_s']:>12}{x['cpu_s'] if x['cpu_s'] is not None else '-':>8}"
              f"{x['cpu_efficiency'] if x['cpu_efficiency'] is not None else '-':>10}")
    print(f"Spark vs one process {r['spark_vs_one']}x, vs multiprocessing {r['spark_vs_multiprocessing']}x; "
          f"same results on every engine: {r['same_results']}")
    print("driver peak RSS (--master none): " + ", ".join(f"{n} histories {m} MiB"
                                                           for n, m in r["driver_peak_rss_mib"].items()))
    print(f"load average before {r['loadavg_before']}, after {r['loadavg_after']} (other work on the machine skews "
          "wall-clock ratios; CPU efficiency = one process's CPU seconds / the engine's, for the same histories)")


# --- bench --tolerant: validating implementation logs (histories/tolerant) ---

TOLERANT_SIZES = (100, 10_000)  # lines of the reference-made election logs


def tolerant(sizes: tuple[int, ...] = TOLERANT_SIZES, log: Any = None) -> list[dict]:
    """Seconds to validate election logs of the given sizes (reference histories under the
    `crash` profile, ticks up to 30 ms late, lines reordered as support/impl_logs.realistic
    does) and each real DLedger 0.2.6 log of property_tests/impl_logs, with the default bounds."""
    rows = []
    cases = []
    for size in sizes:
        lines = impl_logs.realistic(impl_logs.reference_log("election", "crash", 1, size + size // 8, late_ms=30), 1)
        cases.append((f"reference, {size} lines", lines[:size + 1]))
    for path in sorted(impl_logs.REAL_LOGS.glob("*.jsonl")):
        cases.append((f"DLedger 0.2.6 {path.stem}", impl_logs.read_real(path.stem)))
    options: dict[str, tolerant_mod.Options] = {}
    for name, lines, opts in impl_logs.ha_bench_cases():  # ha: reference-made, and RocketMQ 4.9.4's own logs
        cases.append((name, lines))
        options[name] = opts
    for name, lines in cases:
        if log is not None:
            print(f"bench --tolerant: {name}", file=log, flush=True)
        parsed = impl_logs.parse(lines)
        start = time.perf_counter()
        r = tolerant_mod.check(parsed, options.get(name))
        elapsed = time.perf_counter() - start
        rows.append({"log": name, "lines": r.lines, "accepted": r.accepted, "seconds": round(elapsed, 3),
                     "lines_per_s": round(r.lines / elapsed), "states_expanded": r.stats.states_expanded,
                     "beam_widenings": r.stats.beam_widenings,
                     "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)})
    return rows


def print_tolerant(rows: list[dict]) -> None:
    print(f"{'log':<42}{'lines':>7}{'ok':>4}{'seconds':>9}{'lines/s':>9}{'states':>8}{'RSS MiB':>9}")
    for r in rows:
        print(f"{r['log']:<42}{r['lines']:>7}{'yes' if r['accepted'] else 'NO':>4}{r['seconds']:>9}"
              f"{r['lines_per_s']:>9,}{r['states_expanded']:>8}{r['peak_rss_mib']:>9}")


EXPLORE_DEPTH = 10


def explore(depth: int = EXPLORE_DEPTH, use_symmetry: bool = True, log: Any = None) -> list[dict]:
    """Distinct states per second and per CPU-second of `rmqspec explore` on both engines, one
    row each: election, 3 nodes, faults none, terms <= 2, tick draws {0, 65535}. The fast
    engine's kernels are loaded (or compiled) by depth-1 searches before the clock starts,
    and both searches must count the same states."""
    cfg = core.protocol("election").make_config(3, {}).evolve(profile=faults.profile("none", "election"))
    explore_fast.compile_seconds()
    rows = []
    for engine in ("reference", "fast"):
        if log is not None:
            print(f"bench --explore: {engine}, depth {depth}", file=log, flush=True)
        make = explore_fast.FastExplorer if engine == "fast" else explore_mod.Explorer
        ex = make(cfg, depth, 2, use_symmetry)
        wall, cpu = time.perf_counter(), time.process_time()
        res = ex.run()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        rows.append({"protocol": "election", "nodes": 3, "engine": engine, "depth": depth, "symmetry": use_symmetry,
                     "distinct_states": res.distinct_states, "seconds": round(wall, 3),
                     "states_per_s": round(res.distinct_states / wall), "cpu_s": round(cpu, 3),
                     "states_per_cpu_s": round(res.distinct_states / max(cpu, 1e-9))})
    if rows[0]["distinct_states"] != rows[1]["distinct_states"]:
        raise AssertionError(f"the engines counted {rows[0]['distinct_states']} and {rows[1]['distinct_states']} "
                             f"distinct states to depth {depth}")
    rows[1]["ratio"] = round(rows[1]["states_per_cpu_s"] / max(rows[0]["states_per_cpu_s"], 1), 1)
    return rows


def print_explore(rows: list[dict]) -> None:
    print(f"{'engine':<11}{'depth':>6}{'states':>10}{'seconds':>9}{'states/s':>10}{'states/CPU-s':>14}{'ratio':>7}")
    for r in rows:
        print(f"{r['engine']:<11}{r['depth']:>6}{r['distinct_states']:>10,}{r['seconds']:>9}{r['states_per_s']:>10,}"
              f"{r['states_per_cpu_s']:>14,}{r.get('ratio', 1):>7}")
