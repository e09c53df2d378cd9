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

import json
import multiprocessing
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from histories import fast, reference_logs, runner
from histories import tolerant as tolerant_mod
from histories.reference_logs import nameserver as nameserver_logs
from histories.reference_logs import offsets as offsets_logs
from model_checks import explore as explore_mod
from model_checks import explore_fast
from reference_impl import core
from reference_impl.core import chooser, faults
from spark_harness import engines, report
from spark_harness import history as hist
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


# --- bench --fuzz: the fuzz pipeline against the twin alone, on one process, a pool and Spark ---

# histories per protocol and engine: enough that start-up is small against the work (say 20 s
# of the twin's CPU for election, 40 s for dledger_log on this machine), few enough for a bench
FUZZ_HISTORIES = {"fast": {"election": 20_000, "dledger_log": 1_000}, "reference": {"election": 600}}
FUZZ_DEFAULT_HISTORIES = 300


def _warm(protocol: str) -> int:
    """Import everything and run one short history, so pool start-up is not timed."""
    p = plan_mod.make_plan(protocol, 1, steps=200)
    return sum(r["steps"] for c in p.chunks(1) for r in plan_mod.run_chunk(p, c))


def tree_cpu_s() -> float | None:
    """CPU seconds (user + system) used so far by this process and all its live
    descendants (Spark's JVM and Python workers, a pool's processes), from Linux's
    /proc; None elsewhere. Reaped children count through their parent's cutime."""

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

    code = ("import resource, tempfile, os\n"
            "from spark_harness import engines, plan, progress\n"
            f"p = plan.make_plan({protocol!r}, {histories}, engine={engine!r})\n"
            "engines.run_local(p, os.path.join(tempfile.mkdtemp(), 'h.jsonl'), progress.Progress(1, enabled=False))\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return round(int(out.stdout.split()[-1]) / 1024, 1)


def twin_alone(plan: plan_mod.Plan, protocol: str) -> dict:
    """The twin's own rate on the plan's histories: events per CPU-second inside its kernel
    (the Runner's clock around the kernel), nothing of the fuzz pipeline around it."""

    events = cpu = 0.0
    histories = 0
    for k in range(plan.histories):
        spec = plan.spec(protocol, k)
        cfg = hist.config_of(spec)
        runner_ = hist.fast_runner(cfg)
        if runner_ is None:
            continue
        r = runner_.run(spec.seed, spec.steps, hist.until_ms(cfg, spec.tail_ms))
        events += r.steps
        cpu += r.seconds
        histories += 1
    return {"histories": histories, "events": int(events), "cpu_s": round(cpu, 3),
            "events_per_cpu_s": round(events / max(cpu, 1e-9))}


def end_to_end(protocol: str, histories: int, engine: str, folder: str) -> dict:
    """`rmqspec fuzz --protocol P --histories H --master none` with the default flags otherwise
    (judge sample, counterexamples, report, view and plots), in a fresh process: its events
    and the CPU seconds of it and its children, start-up included."""

    out = os.path.join(folder, f"e2e-{protocol}")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "rmqspec.cli", "fuzz", "--protocol", protocol, "--histories",
                           str(histories), "--master", "none", "--engine", engine, "--out", out, "--no-progress",
                           "--json"], capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"rmqspec fuzz failed ({proc.returncode}): {proc.stderr[-2000:]}")
    report_ = json.loads(proc.stdout)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"histories": report_["histories"], "events": report_["steps"], "seconds": round(wall, 2),
            "cpu_s": round(cpu, 2), "events_per_cpu_s": round(report_["steps"] / max(cpu, 1e-9)),
            "histories_judged": sum(v["engine"]["judged_by_reference"] for v in report_["by_protocol"].values()),
            "peak_rss_mib": round(after.ru_maxrss / 1024, 1), "exit": proc.returncode,
            "timing": report_.get("timing")}  # wall seconds per part: histories, shrinking, plots, writing


FUZZ_PHASES = 7  # per protocol: the twin alone, end to end, one process, a pool, Spark, two memory runs


def fuzz(protocols: tuple[str, ...] | None = None, histories: int | None = None, cores: int | None = None,
         on_phase: Callable[[str], None] | None = None, engine: str = "fast") -> dict:
    """Per protocol, in one run: the twin alone on the plan's histories; `rmqspec fuzz` end to
    end (a fresh process, default flags, `--master none`); then the same plan on one process,
    a process pool and Spark `local[cores]`, each after its start-up (session, pool spawn,
    kernels loaded: measured apart) and end to end; the driver's peak memory at two sizes.
    Every rate is per CPU-second of the whole process tree as well as per wall second (the
    machine is shared: CPU-seconds and ratios of one run are what compare)."""

    cores = cores or os.cpu_count() or 2
    if not protocols:
        protocols = fast.PROTOCOLS if engine == "fast" else ("election",)
    tmp = tempfile.mkdtemp(prefix="rmqspec-bench-")
    out = {"engine": engine, "cores": cores, "loadavg_before": [round(x, 2) for x in os.getloadavg()],
           "protocols": {}}
    for protocol in protocols:
        out["protocols"][protocol] = _fuzz_protocol(protocol, histories, cores, on_phase, engine, tmp)
    out["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    return out


def _fuzz_protocol(protocol: str, histories: int | None, cores: int, on_phase, engine: str, tmp: str) -> dict:

    def phase(text: str) -> None:
        if on_phase is not None:
            on_phase(f"{protocol}: {text}")

    def cpu_since(before: float | None) -> float | None:
        now = tree_cpu_s()
        return None if before is None or now is None else now - before

    engine = plan_mod.make_plan(protocol, 1, engine=engine).engines[protocol]
    histories = histories or FUZZ_HISTORIES[engine].get(protocol, FUZZ_DEFAULT_HISTORIES)
    plan = plan_mod.make_plan(protocol, histories, engine=engine)
    rows, views = [], {}
    result = {"engine": engine, "histories": histories}

    if engine == "fast":
        result["twin_alone"] = twin_alone(plan, protocol)
        phase(f"the twin alone: {result['twin_alone']['events_per_cpu_s']:,} events/CPU-s")
    result["end_to_end"] = end_to_end(protocol, histories, engine, tmp)
    phase(f"rmqspec fuzz end to end: {result['end_to_end']['events_per_cpu_s']:,} events/CPU-s")
    if engine == "fast":
        result["end_to_end_vs_twin"] = round(result["end_to_end"]["events_per_cpu_s"]
                                             / result["twin_alone"]["events_per_cpu_s"], 3)

    def row(name: str, workers: int, agg, seconds: float, startup: float, cpu: float | None,
            startup_cpu: float | None) -> None:
        rows.append({"engine": name, "workers": workers, "histories": agg.histories, "events": agg.steps,
                     "seconds": round(seconds, 2), "startup_s": round(startup, 2),
                     "histories_per_s": round(agg.histories / seconds, 1), "events_per_s": round(agg.steps / seconds),
                     "cpu_s": None if cpu is None else round(cpu, 2),
                     "startup_cpu_s": None if startup_cpu is None else round(startup_cpu, 2),
                     "events_per_cpu_s": None if not cpu else round(agg.steps / cpu)})
        views[name] = report.deterministic_view(report.build(plan, agg, engine, {}, {}, {}))

    quiet = Progress(1, enabled=False)
    start, cpu0 = time.perf_counter(), tree_cpu_s()
    agg = engines.run_local(plan, os.path.join(tmp, f"{protocol}-one.jsonl"), quiet)
    row("one process", 1, agg, time.perf_counter() - start, 0.0, cpu_since(cpu0), 0.0)
    phase(f"one process: {rows[-1]['seconds']} s")

    start, cpu0 = time.perf_counter(), tree_cpu_s()
    pool = multiprocessing.get_context("spawn").Pool(cores)
    pool.map(_warm, [protocol] * cores)
    startup, startup_cpu = time.perf_counter() - start, cpu_since(cpu0)
    try:
        start, cpu0 = time.perf_counter(), tree_cpu_s()
        agg = engines.run_processes(plan, cores, os.path.join(tmp, f"{protocol}-pool.jsonl"), quiet, pool=pool)
        row("multiprocessing", cores, agg, time.perf_counter() - start, startup, cpu_since(cpu0), startup_cpu)
        phase(f"multiprocessing: {rows[-1]['seconds']} s (+{rows[-1]['startup_s']} s start-up)")
    finally:
        pool.close()
        pool.join()

    start, cpu0 = time.perf_counter(), tree_cpu_s()
    spark = engines.session(f"local[{cores}]", app="rmqspec bench")
    warm = plan_mod.make_plan(protocol, 4 * cores, steps=200, engine=engine)
    engines.run_spark(warm, spark, os.path.join(tmp, f"{protocol}-warm.parquet"), quiet)
    startup, startup_cpu = time.perf_counter() - start, cpu_since(cpu0)
    try:
        start, cpu0 = time.perf_counter(), tree_cpu_s()
        agg = engines.run_spark(plan, spark, os.path.join(tmp, f"{protocol}-spark.parquet"), quiet)
        row(f"spark local[{cores}]", cores, agg, time.perf_counter() - start, startup, cpu_since(cpu0), startup_cpu)
        phase(f"spark: {rows[-1]['seconds']} s (+{rows[-1]['startup_s']} s start-up)")
    finally:
        spark.stop()

    one = rows[0]
    for r in rows:
        r["speedup"] = round(one["seconds"] / r["seconds"], 2)  # after start-up, wall clock
        r["speedup_end_to_end"] = round(one["seconds"] / (r["seconds"] + r["startup_s"]), 2)
        # CPU spent per unit of work relative to one process: what the engine costs on top, whatever
        # else the machine runs (wall-clock ratios suffer from other load; this does not)
        r["cpu_efficiency"] = round(one["cpu_s"] / r["cpu_s"], 3) if r["cpu_s"] and one["cpu_s"] else None
        total = (r["cpu_s"] or 0) + (r["startup_cpu_s"] or 0)
        r["cpu_efficiency_end_to_end"] = round(one["cpu_s"] / total, 3) if total and one["cpu_s"] else None
        r["startup_share"] = round(r["startup_s"] / (r["seconds"] + r["startup_s"]), 3)
    memory = {}
    for n in (max(1, histories // 8), max(2, histories // 2)):
        memory[n] = _peak_rss_mib(protocol, n, engine)
        phase(f"peak RSS at {n} histories: {memory[n]} MiB")
    spark_row = rows[2]
    result |= {"rows": rows, "spark_vs_one": spark_row["speedup"],
               "spark_vs_one_cpu": round(cores * spark_row["cpu_efficiency"], 2)
               if spark_row["cpu_efficiency"] else None,
               "spark_vs_multiprocessing": round(rows[1]["seconds"] / spark_row["seconds"], 3),
               "same_results": all(v == views["one process"] for v in views.values()),
               "driver_peak_rss_mib": memory}
    return result


def print_fuzz(r: dict) -> None:
    print(f"rmqspec bench --fuzz: {r['engine']} engine, {r['cores']} cores; load average before "
          f"{r['loadavg_before']}, after {r['loadavg_after']}")
    for protocol, x in r["protocols"].items():
        print(f"\n{protocol}: {x['histories']:,} histories per engine ({x['engine']} world)")
        if "twin_alone" in x:
            t, e = x["twin_alone"], x["end_to_end"]
            print(f"  the twin alone        {t['events_per_cpu_s']:>12,} events/CPU-s ({t['events']:,} events in "
                  f"{t['cpu_s']} CPU-s)")
            print(f"  rmqspec fuzz, end to end {e['events_per_cpu_s']:>9,} events/CPU-s ({e['cpu_s']} CPU-s, "
                  f"{e['seconds']} s, {e['histories_judged']:,} judged by the reference): "
                  f"{x['end_to_end_vs_twin']:.0%} of the twin's rate")
            if e.get("timing"):
                print("    its wall time: " + ", ".join(f"{k.removesuffix('_s')} {v} s" for k, v in e["timing"].items()))
        print(f"  {'engine':<20}{'events/s':>11}{'events/CPU-s':>14}{'speedup':>9}{'seconds':>9}{'start-up s':>12}"
              f"{'CPU eff.':>10}{'e2e eff.':>10}")
        for row_ in x["rows"]:
            print(f"  {row_['engine']:<20}{row_['events_per_s']:>11,}{row_['events_per_cpu_s'] or 0:>14,}"
                  f"{row_['speedup']:>9}{row_['seconds']:>9}{row_['startup_s']:>12}"
                  f"{row_['cpu_efficiency'] if row_['cpu_efficiency'] is not None else '-':>10}"
                  f"{row_['cpu_efficiency_end_to_end'] if row_['cpu_efficiency_end_to_end'] is not None else '-':>10}")
        print(f"  Spark vs one process {x['spark_vs_one']}x by wall clock after start-up, {x['spark_vs_one_cpu']}x by "
              f"CPU ({r['cores']} x its CPU efficiency); start-up {x['rows'][2]['startup_share']:.0%} of its run; "
              f"same results on every engine: {x['same_results']}")
        print("  driver peak RSS (--master none): " + ", ".join(f"{n} histories {m} MiB"
                                                             for n, m in x["driver_peak_rss_mib"].items()))


# --- bench --tolerant: validating implementation logs (histories/tolerant) ---

TOLERANT_SIZES = (100, 10_000)  # lines of the reference-made election logs


def tolerant(sizes: tuple[int, ...] = TOLERANT_SIZES, log: Any = None, protocol: str | None = None) -> list[dict]:
    """Seconds to validate election logs of the given sizes (reference histories under the
    `crash` profile, ticks up to 30 ms late, lines reordered as histories/reference_logs.realistic
    does), each real DLedger 0.2.6 log of property_tests/impl_logs, with the default bounds, the ha
    and dledger_commitlog logs of reference_logs' bench cases, two nameserver logs
    (reference_logs/nameserver.py: fault-free, and with crashes, partitions and topics) and two offsets
    logs (reference_logs/offsets.py: fault-free, and with the master down and back). `protocol`
    (`nameserver`, `offsets`): only that protocol's logs."""
    rows = []
    cases = []
    for size in sizes:
        history = reference_logs.reference_log("election", "crash", 1, size + size // 8, late_ms=30)
        lines = reference_logs.realistic(history, 1)
        cases.append((f"reference, {size} lines", lines[:size + 1]))
    for path in sorted(reference_logs.REAL_LOGS.glob("*.jsonl")):
        cases.append((f"DLedger 0.2.6 {path.stem}", reference_logs.read_real(path.stem)))
    options: dict[str, tolerant_mod.Options] = {}
    # ha: reference-made, and RocketMQ 4.9.4's own logs; dledger_commitlog: reference-made
    for name, lines, opts in reference_logs.ha_bench_cases() + reference_logs.dledger_commitlog_bench_cases():
        cases.append((name, lines))
        options[name] = opts
    for steps, profile in ((400, nameserver_logs.QUIET), (2500, nameserver_logs.FAULTS)):
        lines = reference_logs.realistic(nameserver_logs.reference_log(profile, 1, steps), 1)
        cases.append((f"nameserver reference, {profile.name}, {len(lines) - 1} lines", lines))
    for steps, profile, seed in ((1500, offsets_logs.QUIET, 1), (4000, offsets_logs.FAULTS, 3)):
        lines = reference_logs.realistic(offsets_logs.reference_log(profile, seed, steps), seed)
        cases.append((f"offsets reference, {profile.name}, {len(lines) - 1} lines", lines))
    if protocol is not None:
        cases = [(name, lines) for name, lines in cases if name.startswith(f"{protocol} ")]
    for name, lines in cases:
        if log is not None:
            print(f"bench --tolerant: {name}", file=log, flush=True)
        parsed = reference_logs.parse(lines)
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
