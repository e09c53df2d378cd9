"""The `rmqspec` command line. It parses arguments and dispatches; nothing else.

Exit codes: 0 ok, 1 an unexpected property violation (or a failed check), 2 bad input
(one line on stderr, no traceback; unreadable or unwritable files too), 3 an internal error
(a bug: one line naming it; RMQSPEC_DEBUG=1 prints the traceback).

Every number a flag takes is bounded, and the bound is in its --help: a run must end.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time
import traceback
from typing import Any, NoReturn

import attrs

from conform import report as conform_report
from conform import session as conform_session
from conform.driver import Driver, DriverError
from histories import formats, impl_log, runner, scenario_file, timeline, tolerant, view
from histories import trace as trace_mod
from histories.fast.common import Unsupported
from model_checks import check, crosshair_run, explore, explore_fast, prove
from reference_impl import core
from reference_impl.core import codec, faults, inputs, scenario
from property_tests.support import mutation as catalogue
from rmqspec import bench, mutation
from rmqspec.bench import EXPLORE_DEPTH
from spark_harness import counterexample, fuzz, plan, report_view, shrink
from spark_harness.java import JavaMissing
from spark_harness.progress import Progress
from spec import properties, symbolic


class UsageError(Exception):
    """Bad input: reported in one line, exit 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


INT64 = (-(1 << 63), (1 << 63) - 1)
MAX_STEPS = 10_000_000  # events of one history (simulate): a few minutes of the slowest world
MAX_HISTORIES = 1_000_000  # histories per protocol of one fuzz run
MAX_BUDGET = 100_000_000  # replayed steps of one shrink
MAX_LINES = 1_000_000
MAX_COVERAGE = 1_000_000  # random histories per explore --coverage figure
CORES = os.cpu_count() or 1


def _int_in(lo: int, hi: int) -> Any:
    """An integer flag within lo..hi (digits only: no '1e3', no 5,000-digit numbers)."""
    def parse(text: str) -> int:
        if not re.fullmatch(r"\s*[-+]?\d{1,20}\s*", text):
            raise argparse.ArgumentTypeError(f"not an integer: {formats.escape(text[:40])!r}")
        v = int(text)
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"must be in {lo:,}..{hi:,}, got {v:,}")
        return v
    return parse


def _float_in(lo: float, hi: float) -> Any:
    """A finite number flag within lo..hi (nan and inf refused)."""
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {formats.escape(text[:40])!r}") from None
        if not math.isfinite(v) or not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"must be a number in {lo:g}..{hi:g}, got {formats.escape(text[:40])}")
        return v
    return parse


_positive = _int_in(1, INT64[1])
_int = _int_in(*INT64)


def _csv(kind: Any, name: str = "") -> Any:
    def parse(text: str) -> list:
        parts = [x for x in text.split(",") if x.strip()]
        if len(parts) > 64:
            raise argparse.ArgumentTypeError("at most 64 values")
        try:
            out = [kind(x) for x in parts]
        except (ValueError, argparse.ArgumentTypeError) as e:
            raise argparse.ArgumentTypeError(f"not a comma-separated list of {name or kind.__name__}: "
                                             f"{formats.escape(text[:60])!r} ({e})") from None
        if not out:
            raise argparse.ArgumentTypeError("empty list")
        return out
    return parse


def _add_import(p: argparse.ArgumentParser) -> None:
    p.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                   help="import MODULE first (it may register extra protocols, e.g. a test mutant)")


def _add_progress(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")


def build_parser() -> Parser:
    parser = Parser(prog="rmqspec", description="RocketMQ HA protocols: reference, properties, checkers.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    sim = sub.add_parser("simulate", help="run one history and print a timeline")
    sim.add_argument("--protocol", default=None, help=f"one of: {', '.join(core.protocol_names())}")
    sim.add_argument("--nodes", type=_int_in(1, 64), default=None,
                     help="number of nodes, 1..64 (default 3; offsets: 2)")
    sim.add_argument("--seed", type=_int, default=None, help="seed of the event chooser, a 64-bit integer (default 1)")
    sim.add_argument("--steps", type=_int_in(1, MAX_STEPS), default=None,
                     help=f"maximum events, 1..{MAX_STEPS:,} (default 5000; with --script 1,000,000)")
    sim.add_argument("--faults", default=None, help=f"fault profile: {', '.join(faults.names())} (some protocols add their own)")
    sim.add_argument("--script", default=None, help="scenario file (docs/scenario-format.md)")
    sim.add_argument("--config", default=None, help="protocol config overrides as JSON, e.g. '{\"max_heart_beat_leak\": 4}'")
    sim.add_argument("--trace", default=None, help="write the trace (JSON Lines) to this file")
    sim.add_argument("--max-lines", type=_int_in(1, MAX_LINES), default=400,
                     help=f"timeline lines to print, 1..{MAX_LINES:,} (default 400)")
    sim.add_argument("--quiet", action="store_true", help="summary only, no timeline")
    sim.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    _add_import(sim)

    rep = sub.add_parser("replay", help="re-run a trace through the reference and compare every step")
    rep.add_argument("trace")
    rep.add_argument("--max-lines", type=_int_in(1, MAX_LINES), default=400,
                     help=f"timeline lines to print, 1..{MAX_LINES:,} (default 400)")
    rep.add_argument("--quiet", action="store_true")
    rep.add_argument("--json", action="store_true")
    _add_import(rep)

    chk = sub.add_parser("check-trace", help="validate a trace, or an implementation's log (searching for a reference "
                                             "execution that explains it), against the reference")
    chk.add_argument("trace", help="a trace (histories.trace/1) or an implementation log (rmqspec.log/1, "
                                   "docs/conformance.md)")
    chk.add_argument("--tolerant", action="store_true",
                     help="insist on tolerant validation (an implementation log is always checked tolerantly)")
    chk.add_argument("--slack-ms", type=_int_in(0, 60_000), default=None,
                     help="tolerant: scheduling allowance on top of the reference's windows, and how far a logged "
                          "t_ms may be from the reference's time, 0..60,000 (default 50)")
    chk.add_argument("--max-depth", type=_int_in(1, 64), default=None,
                     help="tolerant: reference events searched between two log lines, 1..64 (default 6)")
    chk.add_argument("--max-states", type=_int_in(1, 10_000_000), default=None,
                     help="tolerant: search states expanded per log line, 1..10,000,000 (default 3000)")
    chk.add_argument("--beam", type=_int_in(1, 1024), default=None,
                     help="tolerant: candidate executions kept between lines, 1..1024 (default 4; widened x4 twice "
                          "on a miss)")
    chk.add_argument("--json", action="store_true")
    _add_import(chk)

    vw = sub.add_parser("view", help="an interactive HTML page to step through a trace or a fuzz report (docs/view.md)")
    vw.add_argument("path", metavar="TRACE|REPORT_DIR", help="a trace (JSON Lines) or a `rmqspec fuzz --out` directory")
    vw.add_argument("--out", default=None,
                    help="the page to write (default: TRACE with .html; for a report, DIR/index.html, with one page "
                         "per counterexample next to its trace)")
    vw.add_argument("--no-replay", action="store_true",
                    help="do not replay through the reference (no send steps for arrows, no conformance line)")
    vw.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    _add_import(vw)

    fz = sub.add_parser("fuzz", help="many randomized histories on Spark (docs/fuzzing.md)")
    fz.add_argument("--protocol", default="all",
                    help=f"one of: {', '.join(core.protocol_names())}; a comma-separated list; or all (default)")
    fz.add_argument("--histories", type=_int_in(1, MAX_HISTORIES), default=1000,
                    help=f"histories per protocol, 1..{MAX_HISTORIES:,} (default 1000)")
    fz.add_argument("--steps", type=_int_in(1, MAX_STEPS), default=None,
                    help=f"at most this many events per history, 1..{MAX_STEPS:,} (default 50000: a safety cap; "
                         "histories end 60 s after faults stop)")
    fz.add_argument("--seed", type=_int_in(0, INT64[1] - MAX_HISTORIES), default=1,
                    help="seed of the first history, a non-negative 64-bit integer (default 1)")
    fz.add_argument("--master", default="local[*]",
                    help="Spark master: local[N], spark://host:port, ...; 'none' runs in this process (default local[*])")
    fz.add_argument("--out", default="out/fuzz", help="output directory (default out/fuzz)")
    fz.add_argument("--engine", choices=("fast", "reference"), default="fast",
                    help="fast: a protocol's compiled fast world where one exists, judged by the reference "
                         "(every violation re-run); reference: the reference only (default fast)")
    fz.add_argument("--coverage-sample", default=None, metavar="N|all",
                    help="with the fast engine: histories per protocol the reference also runs for coverage and "
                         "distinct states (default 200)")
    fz.add_argument("--faults", type=_csv(str), default=None,
                    help="fault profiles, comma-separated, or 'all' (default: every profile with faults)")
    fz.add_argument("--nodes", type=_csv(_int_in(1, 64), "integers in 1..64"), default=None,
                    help="cluster sizes 1..64, comma-separated (default per protocol)")
    fz.add_argument("--config", default=None,
                    help="protocol config overrides for every history, as JSON (as simulate --config), "
                         "e.g. '{\"broker_role\": \"SYNC_MASTER\"}'")
    fz.add_argument("--configs", choices=("cycle", "default"), default="cycle",
                    help="cycle: every version profile (fixed included) and drawn config switches, swarm subsets "
                         "of fault kinds and directed shapes per history (default); default: the protocol's defaults "
                         "for every history (docs/fuzzing.md, Variants)")
    fz.add_argument("--parquet", default=None, help="where Spark writes per-history rows (default OUT/histories.parquet)")
    fz.add_argument("--shrink-budget", type=_int_in(1, MAX_BUDGET), default=None,
                    help="replayed steps per counterexample of an unexpected violation, "
                         f"1..{MAX_BUDGET:,} (default {shrink.DEFAULT_BUDGET:,})")
    fz.add_argument("--shrink-budget-expected", type=_int_in(1, MAX_BUDGET), default=None,
                    help="replayed steps per counterexample of an expected violation (RocketMQ's documented "
                         f"behaviour: it illustrates, it need not be smallest), 1..{MAX_BUDGET:,} "
                         f"(default {shrink.EXPECTED_BUDGET:,})")
    fz.add_argument("--no-view", action="store_true", help="do not write the HTML view (index.html and a page per "
                                                           "counterexample; docs/view.md)")
    fz.add_argument("--no-counterexamples", action="store_true", help="do not replay and shrink failing histories")
    _add_progress(fz)
    fz.add_argument("--no-plots", action="store_true", help="no report plots (report.md without pictures)")
    fz.add_argument("--list-profiles", action="store_true", help="list the fault profiles per protocol and exit")
    fz.add_argument("--json", action="store_true", help="print report.json instead of the summary")
    _add_import(fz)

    shr = sub.add_parser("shrink", help="minimise a failing trace to the fewest events that still fail")
    shr.add_argument("trace")
    shr.add_argument("--property", default=None, help="the property to keep violated (default: the first unexpected)")
    shr.add_argument("--out", default=None, help="where to write the shrunk trace (default TRACE.shrunk.jsonl)")
    shr.add_argument("--budget", type=_int_in(1, MAX_BUDGET), default=None,
                     help=f"replayed steps at most, 1..{MAX_BUDGET:,}")
    shr.add_argument("--json", action="store_true")
    _add_progress(shr)
    _add_import(shr)

    prv = sub.add_parser("prove", help="Z3 proofs of the safety properties, per version profile")
    prv.add_argument("--protocol", default=None, help="one symbolic spec (default: all)")
    prv.add_argument("--profile", default=None,
                     help="one version profile (election: 4.9.4, 4.9.4+os-crash; dledger_log: 0.2.6, fixed)")
    prv.add_argument("--os-crash", action="store_true",
                     help="only the profiles with OS crashes that lose the un-fsynced currterm file")
    prv.add_argument("--out", default=None, help="directory for reference witness traces (default: a temp dir)")
    prv.add_argument("--no-witness", action="store_true", help="skip the search for reference witnesses")
    prv.add_argument("--jobs", type=_int_in(1, 256), default=2,
                     help=f"worker processes, 1..256, never more than the proof tasks or this machine's "
                          f"{CORES} cores (default 2)")
    prv.add_argument("--contracts", type=_float_in(0, 600), default=2.0, metavar="SECONDS",
                     help="CrossHair time per contract condition, 0..600 s; 0 skips CrossHair (default 2)")
    prv.add_argument("--json", action="store_true")
    _add_progress(prv)

    exp = sub.add_parser("explore", help="exhaustive exploration with symmetry reduction")
    exp.add_argument("--protocol", default="election")
    exp.add_argument("--nodes", type=_int_in(1, 7), default=3, help="nodes, 1..7 (default 3)")
    exp.add_argument("--depth", type=_int_in(1, 64), default=8, help="events from the initial state, 1..64 (default 8)")
    exp.add_argument("--max-term", type=_int_in(0, 64), default=2,
                     help="do not expand states beyond this term, 0..64 (default 2)")
    exp.add_argument("--faults", default="none", help="fault profile (default none)")
    exp.add_argument("--draws", default="extremes", help="tick draws: 'extremes' (0 and 65535) or N evenly spaced")
    exp.add_argument("--no-symmetry", action="store_true")
    exp.add_argument("--engine", choices=("reference", "fast"), default="reference",
                     help="reference: the Python worlds (default); fast: the election twin's arrays "
                          "(model_checks/explore_fast.py, the same search and counts)")
    exp.add_argument("--max-states", type=_int_in(1, 100_000_000), default=None,
                     help="stop after this many distinct states, 1..100,000,000")
    exp.add_argument("--coverage", type=_csv(_int_in(1, MAX_COVERAGE), f"integers in 1..{MAX_COVERAGE:,}"),
                     default=[], help=f"random histories to compare, e.g. 10,100,1000 (each 1..{MAX_COVERAGE:,}, "
                                      "at most 64 values)")
    exp.add_argument("--out", default=None, help="write counterexample traces here")
    exp.add_argument("--json", action="store_true")
    _add_progress(exp)

    gate = sub.add_parser("check", help="the quick CI gate: suites, proofs, conformance, contracts, exploration")
    gate.add_argument("--out", default=None, help="directory for reference witness traces")
    gate.add_argument("--parts", type=_csv(str), default=None,
                      help=f"only these parts, comma-separated (default all: {','.join(check.PARTS)})")
    gate.add_argument("--json", action="store_true")
    _add_progress(gate)

    con = sub.add_parser("conform",
                         help="check another implementation's handlers through a driver (docs/conformance.md)")
    con.add_argument("--protocol", default="election", help="the protocol whose handlers the driver runs (election)")
    con.add_argument("--driver", required=True, metavar="CMD",
                     help="command that speaks rmqspec.conform/1 on stdin/stdout, e.g. 'java -cp ... Driver'")
    con.add_argument("--count", type=_int_in(1, 10_000_000), default=1000,
                     help="generated cases, 1..10,000,000 (default 1000)")
    con.add_argument("--seed", type=_int, default=1, help="seed of the case generator (default 1)")
    con.add_argument("--vectors", default=None, metavar="FILE", help="run a vectors file's cases instead of generating")
    con.add_argument("--timeout", type=_float_in(0.01, 3600), default=10.0, metavar="SECONDS",
                     help="per-case answer timeout, 0.01..3600 (default 10)")
    con.add_argument("--json", action="store_true")

    vec = sub.add_parser("vectors", help="write static conformance vectors: cases with the reference's answers")
    vec.add_argument("--protocol", default="election", help="the protocol (election)")
    vec.add_argument("--out", default=None, metavar="FILE", help="where to write the vectors (JSON)")
    vec.add_argument("--count", type=_int_in(0, 1_000_000), default=500,
                     help="generated cases after the edge cases, 0..1,000,000 (default 500)")
    vec.add_argument("--seed", type=_int, default=1, help="seed of the case generator (default 1)")
    vec.add_argument("--check", default=None, metavar="FILE",
                     help="instead: check that a vectors file's answers are still the reference's")
    vec.add_argument("--json", action="store_true")

    mut = sub.add_parser("mutants", help="mutation score: which property layers kill deliberately broken references")
    mut.add_argument("--mutant", type=_csv(str), default=None, help="mutant names, comma-separated (default: all)")
    mut.add_argument("--protocol", type=_csv(str), default=None, help="only the mutants of these protocols")
    mut.add_argument("--layers", type=_csv(str), default=["fuzz", "machines", "model"],
                     help="fuzz, machines, model (default: all three)")
    mut.add_argument("--histories", type=_int_in(1, MAX_HISTORIES), default=300,
                     help=f"fuzz: histories per mutant at most, 1..{MAX_HISTORIES:,} (default 300)")
    mut.add_argument("--seconds", type=_float_in(1, 86_400), default=180.0,
                     help="fuzz and machines: wall time per mutant at most, 1..86,400 (default 180)")
    mut.add_argument("--list", action="store_true", help="list the mutants and the rule each breaks")
    mut.add_argument("--json", action="store_true")

    bench = sub.add_parser("bench", help="throughput of the reference worlds and the fast worlds")
    bench.add_argument("--seconds", type=_float_in(0.01, 600), default=3.0,
                       help="time per measurement, 0.01..600 (default 3)")
    bench.add_argument("--protocol", default=None, help="only this protocol")
    bench.add_argument("--json", action="store_true")
    bench.add_argument("--fuzz", action="store_true",
                       help="fuzz throughput: one process, a process pool and Spark local[N] in one run")
    bench.add_argument("--histories", type=_int_in(1, MAX_HISTORIES), default=None,
                       help=f"with --fuzz: histories per engine, 1..{MAX_HISTORIES:,}")
    bench.add_argument("--cores", type=_int_in(1, CORES), default=None,
                       help=f"with --fuzz: processes / Spark cores, 1..{CORES} (this machine's cores)")
    bench.add_argument("--engine", choices=("fast", "reference"), default="fast",
                       help="with --fuzz: the world the histories run on (default fast, where the protocol has one)")
    bench.add_argument("--explore", action="store_true",
                       help="rmqspec explore's distinct states per second, reference and fast engine (election, "
                            "3 nodes, faults none)")
    bench.add_argument("--depth", type=_int_in(1, 30), default=EXPLORE_DEPTH,
                       help="--explore: the search depth, 1..30 (default %(default)s)")
    bench.add_argument("--tolerant", action="store_true",
                       help="seconds to validate implementation logs (check-trace on rmqspec.log/1): 100- and "
                            "10,000-line election logs and the real DLedger 0.2.6 logs")
    _add_progress(bench)
    _add_import(bench)
    return parser


def _load_imports(args: argparse.Namespace) -> None:
    import importlib

    for name in getattr(args, "imports", []):
        try:
            importlib.import_module(name)
        except BaseException as e:  # noqa: BLE001 - a user's module may raise anything, even SystemExit
            if isinstance(e, KeyboardInterrupt):
                raise
            raise UsageError(f"cannot import {name}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                             ) from None


# --- simulate ---


def _simulate_config(args: argparse.Namespace) -> tuple[core.WorldConfig, int, int, int | None, str]:
    if args.script:
        if args.protocol or args.nodes or args.config:
            raise UsageError("--script sets protocol, nodes and config; drop --protocol/--nodes/--config")
        sc = scenario_file.load(args.script)
        cfg = sc.cfg
        if args.faults:
            cfg = cfg.evolve(profile=_profile(args.faults, cfg.protocol))
        seed = args.seed if args.seed is not None else sc.seed
        return cfg, seed, args.steps or 1_000_000, sc.until_ms, sc.name
    name = args.protocol or "election"
    try:
        p = core.protocol(name)
    except KeyError:
        raise UsageError(f"unknown protocol {name!r}; known: {', '.join(core.protocol_names())}") from None
    overrides = _config_overrides(args.config) or {}
    nodes = args.nodes or p.default_nodes
    _profile(args.faults or "none", name)  # an unknown profile is refused by name
    cfg = make_config(p, nodes, overrides, "--config", args.faults or "none")
    seed = args.seed if args.seed is not None else 1
    return cfg, seed, args.steps or 5000, None, f"{name}, {nodes} nodes, seed {seed}, faults {cfg.profile.name}"


def _profile(name: str, protocol: str) -> Any:
    try:
        return faults.profile(name, protocol)
    except KeyError as e:
        raise UsageError(str(e.args[0])) from None


def make_config(p: Any, nodes: int, overrides: dict, where: str, profile: str = "none") -> core.WorldConfig:
    """The protocol's world config with `overrides` (the generic fault keys among them,
    core.configure), or bad input naming the field."""
    try:
        return core.world_config(p.name, nodes, profile, overrides)
    except inputs.InputError as e:
        raise formats.FormatError(where, None, e.path, e.message) from None
    except (KeyError, TypeError, ValueError) as e:
        raise formats.FormatError(where, None, "", str(e.args[0] if e.args else e)) from None


def _config_overrides(text: str | None) -> dict | None:
    """`--config`: protocol config overrides as a strict JSON object (None when not given)."""
    if not text:
        return None
    if len(text.encode("utf-8", "surrogatepass")) > 1 << 20:
        raise UsageError("--config is longer than 1 MiB")
    return formats.check_overrides(formats.loads(text, "--config"), "--config")


def cmd_simulate(args: argparse.Namespace) -> int:
    cfg, seed, steps, until_ms, title = _simulate_config(args)
    hooks: tuple = ()
    show = not args.quiet and not args.json
    if show:
        print(f"rmqspec simulate: {formats.escape(title)}")
        hooks = (timeline.Timeline(sys.stdout, args.max_lines),)
    trace_out = _open_out(args.trace) if args.trace else None
    try:
        result = runner.simulate(cfg, seed, steps, until_ms, trace_out=trace_out, hooks=hooks)
        if trace_out is not None:
            trace_out.close()  # flushes: a full disk shows here
    except OSError as e:
        raise UsageError(f"cannot write {args.trace}: {e.strerror}") from None
    finally:
        if trace_out is not None and not trace_out.closed:
            try:
                trace_out.close()
            except OSError:
                pass  # already reported
    summary = result.summary() | {"protocol": cfg.protocol, "nodes": list(cfg.ids), "seed": seed,
                                  "faults": cfg.profile.name, "trace": args.trace}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print_summary(result, args.trace)
    return 0 if result.ok() else 1


def print_summary(result: Any, trace_path: str | None) -> None:
    w = result.world
    print()
    print(f"summary: {result.steps} events, {w.now / 1000:.1f} s simulated, stopped: {result.stopped}")
    final = scenario.observed(w)
    final_line = core.protocol(w.cfg.protocol).final_line
    print("  final:  " + (final_line(final) if final_line is not None else "  ".join(
        f"{n}:{o.get('role') or 'down'}" + (f"@{o['term']}" if o.get("term") is not None else "")
        for n, o in final.items())))
    if result.measures:
        print("  stats:  " + ", ".join(f"{k}={v}" for k, v in result.measures.items()))
    props_checked = len(_props(w.cfg.protocol))
    if result.violations:
        for v in result.violations:
            tag = f"expected ({v.expected})" if v.expected else "UNEXPECTED"
            print(f"  {v.property} violated at step {v.step} (t={v.t_ms} ms), {tag}: {formats.escape(v.detail)}")
    print(f"  properties: {props_checked} checked at every step, {len(result.unexpected)} unexpected violation(s)")
    for e in result.expectations:
        if not e.ok:
            print(f"  EXPECTATION FAILED: {formats.escape(e.message)}")
    if result.expectations:
        passed = sum(e.ok for e in result.expectations)
        print(f"  expectations: {passed}/{len(result.expectations)} held")
    if trace_path:
        print(f"  trace: {trace_path}  (rmqspec replay {trace_path})")


def _props(protocol: str) -> list:
    return properties.for_protocol(protocol)


# --- replay / check-trace ---


def _open_trace(path: str) -> Any:
    """A trace to read, in binary: the line limit counts bytes and each line is decoded strictly."""
    try:
        return open(path, "rb")
    except IsADirectoryError:
        raise UsageError(f"cannot read {path}: it is a directory, not a trace") from None
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None


def _open_out(path: str) -> Any:
    try:
        return open(path, "w", encoding="utf-8")
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror}") from None


def cmd_replay(args: argparse.Namespace) -> int:
    hooks: tuple = ()
    if not args.quiet and not args.json:
        print(f"rmqspec replay: {formats.escape(args.trace)}")
        hooks = (timeline.Timeline(sys.stdout, args.max_lines),)
    with _open_trace(args.trace) as f:
        result = runner.replay(f, hooks, args.trace)
    return _report_replay(result, args.json, "replay")


def cmd_check_trace(args: argparse.Namespace) -> int:
    with _open_trace(args.trace) as f:
        if impl_log.is_log(f):
            return _check_log(f, args)
        if args.tolerant:
            raise UsageError(f"{args.trace} is a reference trace ({trace_mod.SCHEMA}), checked strictly; "
                             f"tolerant validation reads an implementation log ({impl_log.SCHEMA}, docs/conformance.md)")
        result = runner.replay(f, (), args.trace)
    return _report_replay(result, args.json, "check-trace")


def _check_log(f: Any, args: argparse.Namespace) -> int:
    opts = tolerant.Options()
    for name in ("slack_ms", "max_depth", "max_states", "beam"):
        if getattr(args, name) is not None:
            setattr(opts, name, getattr(args, name))
    log = impl_log.read(f, os.path.basename(args.trace))
    show = None
    if len(log.lines) > 2000:
        def show(done: int, total: int) -> None:
            print(f"check-trace: {done}/{total} lines", file=sys.stderr, flush=True)
    result = tolerant.check(log, opts, show)
    if args.json:
        print(json.dumps(result.summary(log.ids), indent=2, default=str))
    else:
        print(result.text(log))
    return 0 if result.accepted else 1


def _report_replay(result: Any, as_json: bool, verb: str) -> int:
    mm = result.mismatch
    out = {
        "ok": result.ok(), "steps": result.run.steps, "t_ms": result.run.world.now,
        "mismatch": None if mm is None else {"step": mm.step, "line": mm.line, "message": mm.message},
        "violations": [v.property for v in result.run.violations],
        "unexpected_violations": [v.property for v in result.run.unexpected],
    }
    if as_json:
        print(json.dumps(out, indent=2))
    elif mm is not None:
        print(f"{verb}: MISMATCH at step {mm.step} (line {mm.line}): {formats.escape(mm.message)}")
    else:
        print(f"{verb}: {result.run.steps} steps match the reference "
              f"(t={result.run.world.now} ms); unexpected violations: {out['unexpected_violations'] or 'none'}")
        for v in result.run.violations:
            print(f"  {v.property} at step {v.step}: {'expected: ' + v.expected if v.expected else 'UNEXPECTED'} "
                  f"- {formats.escape(v.detail)}")
    return 0 if result.ok() else 1


def cmd_view(args: argparse.Namespace) -> int:
    try:
        if os.path.isdir(args.path):
            summary = report_view.write(args.path, args.out, replay=not args.no_replay)
        else:
            summary = view.write_trace_view(args.path, args.out, replay=not args.no_replay)
    except view.ViewError as e:
        raise UsageError(str(e)) from None
    if args.json:
        print(json.dumps(summary, indent=2))
    elif summary["kind"] == "report":
        print(f"view: wrote {summary['out']} ({len(summary['pages'])} counterexample page(s), "
              f"{summary['steps']:,} steps)")
        for page in summary["pages"]:
            print(f"  {page['property']}: {page['out']} ({page['steps']:,} steps)")
        for err in summary["errors"]:
            print(f"  not shown: {err}")
    else:
        print(f"view: wrote {summary['out']} ({summary['steps']:,} steps; violations: "
              f"{', '.join(summary['violations']) or 'none'})")
    return 0


def _coverage_sample(text: str | None) -> int | None:
    if text is None:
        return plan.COVERAGE_SAMPLE
    if text == "all":
        return None
    n = int(text) if re.fullmatch(r"\d{1,9}", text) else -1
    if not 0 <= n <= MAX_HISTORIES:
        raise UsageError(f"--coverage-sample must be a number of histories in 0..{MAX_HISTORIES:,} or all, "
                         f"not {formats.escape(text[:40])!r}")
    return n


def cmd_fuzz(args: argparse.Namespace) -> int:
    if args.list_profiles:
        print(json.dumps(fuzz.profiles_json(), indent=2) if args.json else fuzz.profiles_table())
        return 0
    config = _config_overrides(args.config)
    if not MASTER.fullmatch(args.master):
        raise UsageError(f"--master must be none, local, local[N], local[*], spark://HOST:PORT, yarn or k8s://URL; "
                         f"got {formats.escape(args.master[:80])!r}")
    opts = fuzz.FuzzOptions(protocol=args.protocol, histories=args.histories, seed=args.seed, master=args.master,
                            config=config, vary=args.configs == "cycle", engine=args.engine,
                            coverage_sample=_coverage_sample(args.coverage_sample),
                            out=args.out, faults=args.faults, nodes=args.nodes, imports=tuple(args.imports),
                            parquet=args.parquet, counterexamples=not args.no_counterexamples,
                            progress=not args.no_progress, plots=not args.no_plots, view=not args.no_view)
    if args.steps:
        opts.steps = args.steps
    if args.shrink_budget:
        opts.shrink_budget = args.shrink_budget
    if args.shrink_budget_expected:
        opts.shrink_budget_expected = args.shrink_budget_expected
    try:
        result = fuzz.run(opts, log=sys.stderr if args.json else sys.stdout)
    except plan.PlanError as e:
        raise UsageError(str(e)) from None
    except (JavaMissing, view.ViewError) as e:
        raise UsageError(str(e)) from None
    except OSError as e:
        raise UsageError(f"cannot write {args.out}: {e.strerror}") from None
    except Exception as e:  # Spark or its JVM failed (unreachable master, dead executors): one line, no trace
        if type(e).__module__.startswith(("py4j", "pyspark")):
            raise UsageError(f"Spark failed: {str(e).strip().splitlines()[0][:300]}") from None
        raise
    if args.json:
        print(json.dumps(result.report, indent=2))
    return result.exit_code


# `submitted` is what rmqspec/spark_submit.py passes: the master spark-submit was given
MASTER = re.compile(r"submitted|none|local(\[(\d{1,4}|\*)(,\d{1,4})?\])?|spark://[A-Za-z0-9.-]+:\d{1,5}(,[A-Za-z0-9.-]+:\d{1,5})*"
                    r"|yarn|k8s://[A-Za-z0-9.:/_-]+")


def cmd_shrink(args: argparse.Namespace) -> int:
    budget = args.budget or shrink.DEFAULT_BUDGET
    if args.out:  # refused before the work, not after it
        parent = os.path.dirname(args.out) or "."
        if not os.path.isdir(parent):
            raise UsageError(f"cannot write {args.out}: {parent} is not a directory")
    bar = Progress(budget, label="shrink", unit="replayed steps of the budget", enabled=not args.no_progress)
    try:
        entry = counterexample.from_trace(args.trace, args.out, args.property, tuple(args.imports), budget,
                                          lambda steps, best: bar.update(steps, f"best so far: {best} chosen events"))
    except IsADirectoryError as e:
        raise UsageError(f"{e.filename or args.trace}: is a directory") from None
    except OSError as e:  # the trace cannot be read, or the output cannot be written
        if e.filename == args.trace:
            raise UsageError(f"cannot read {args.trace}: {e.strerror}") from None
        raise UsageError(f"cannot write {args.out or e.filename}: {e.strerror}") from None
    except formats.FormatError as e:
        raise UsageError(str(e)) from None
    except (ValueError, KeyError) as e:
        raise UsageError(str(e.args[0] if e.args else e)) from None
    bar.finish(entry["shrink_steps"], f"{entry['choices']} chosen events, " +
               ("1-minimal" if entry["one_minimal"] else "the budget ran out"))
    if args.json:
        print(json.dumps(entry, indent=2))
    else:
        verdict = "expected" if entry["expected"] else "unexpected"
        print(f"shrink: {entry['property']} ({verdict}) kept violated with {entry['choices']} chosen events "
              f"({entry['faults']} faults) of {entry['original_events']}; {entry['trace_steps']} steps in the trace")
        print(f"  trace: {entry['trace']}" + (f"  picture: {entry['picture']}" if entry.get("picture") else ""))
        print(f"  {entry['replay']}")
    return 0 if entry["verified"] else 1


def cmd_mutants(args: argparse.Namespace) -> int:
    if args.list:
        for m in catalogue.MUTANTS:
            print(f"{m.name:<44} {m.rule} (should be caught by {', '.join(m.catches)})")
        return 0
    names = args.mutant or catalogue.names()
    unknown = [n for n in names if n not in catalogue.BY_NAME]
    if unknown:
        raise UsageError(f"unknown mutant(s) {', '.join(unknown)}; rmqspec mutants --list names them")
    if args.protocol:
        names = [n for n in names if catalogue.BY_NAME[n].protocol in args.protocol]
    bad = [x for x in args.layers if x not in mutation.LAYERS]
    if bad:
        raise UsageError(f"unknown layer(s) {', '.join(bad)}; known: {', '.join(mutation.LAYERS)}")
    log = None if args.json else (lambda v: print(f"{v.mutant:<44}{v.layer:<10}{v.verdict:<15}{v.seconds:>7.1f}  "
                                                  f"{v.detail}", file=sys.stderr, flush=True))
    verdicts = mutation.run(names, tuple(args.layers), args.histories, args.seconds, log)
    if args.json:
        print(json.dumps({"verdicts": [v.as_dict() for v in verdicts], "scores": mutation.scores(verdicts)},
                         indent=2))
    else:
        print(mutation.table(verdicts))
    return 0 if all(v.verdict in ("killed", "n/a") for v in verdicts) else 1


def cmd_bench(args: argparse.Namespace) -> int:
    if args.explore:
        rows = bench.explore(args.depth, log=None if args.no_progress else sys.stderr)
        if args.json:
            print(json.dumps(rows, indent=2))
        else:
            bench.print_explore(rows)
        return 0
    if args.tolerant:
        rows = bench.tolerant(log=sys.stderr)
        if args.json:
            print(json.dumps(rows, indent=2))
        else:
            bench.print_tolerant(rows)
        return 0
    if args.fuzz:
        bar = Progress(bench.FUZZ_PHASES, label="bench --fuzz", unit="phases", enabled=not args.no_progress)
        try:
            result = bench.fuzz(args.protocol or "election", args.histories, args.cores,
                                on_phase=lambda text: bar.advance(1, text), engine=args.engine)
        except JavaMissing as e:
            raise UsageError(str(e)) from None
        bar.finish()
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            bench.print_fuzz(result)
        return 0
    if args.protocol is not None and args.protocol not in core.protocol_names():
        raise UsageError(f"unknown protocol {args.protocol!r}; known: {', '.join(core.protocol_names())}")
    cases = bench.cases(args.protocol)
    bar = Progress(len(cases), label="bench", unit="rows", enabled=not args.no_progress)
    rows = bench.run(args.seconds, args.protocol, on_row=lambda r: bar.advance(
        1, f"{r['protocol']} {r['nodes']} nodes {r['engine']} {'checked' if r['checked'] else 'unchecked'}: "
           f"{r['events_per_s']:,} events/s"))
    bar.finish()
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        bench.print_table(rows)
    return 0


def cmd_prove(args: argparse.Namespace) -> int:
    if args.protocol is not None and args.protocol not in symbolic.names():
        raise UsageError(f"unknown protocol {args.protocol!r}; symbolic specs: {', '.join(symbolic.names())}")
    if args.contracts < 0:
        raise UsageError("--contracts must be 0 or more seconds")
    protocols = [args.protocol] if args.protocol else None
    if args.profile is not None and args.profile not in prove.profile_names(protocols):
        raise UsageError(f"unknown profile {args.profile!r}; known: {', '.join(prove.profile_names(protocols))}")
    if args.os_crash:  # the election model under OS crashes that lose the currterm file
        if protocols not in (None, ["election"]) or args.profile not in (None, "4.9.4+os-crash"):
            raise UsageError("--os-crash selects election's 4.9.4+os-crash profile; drop --protocol/--profile")
        protocols, args.profile = ["election"], "4.9.4+os-crash"
    out_dir = args.out or prove.default_out_dir()
    start = time.perf_counter()
    bar = Progress(len(prove.tasks_of(protocols, args.profile)), label="prove", unit="rows",
                   enabled=not args.no_progress)

    def on_row(r: prove.Row) -> None:
        bar.advance(1, f"{r.protocol}/{r.property} @ {r.profile}: {r.result} ({r.seconds:.1f} s)")

    rows = prove.run(protocols, out_dir, replay=not args.no_witness, profile=args.profile, jobs=args.jobs,
                     on_row=on_row)
    bar.finish()
    wall = time.perf_counter() - start
    conds, secs = [], 0.0
    if args.contracts:
        if not args.no_progress:
            n = sum(len(crosshair_run.conditions(m)) for m in crosshair_run.modules())
            print(f"prove: CrossHair over {n} contract conditions, up to {args.contracts:g} s each, "
                  f"in 2 processes ...", file=sys.stderr, flush=True)
        conds, secs = crosshair_run.run(args.contracts)
    ok = all(r.ok for r in rows) and not any(c.status == "refuted" for c in conds)
    if args.json:
        print(json.dumps({"ok": ok, "wall_s": round(wall + secs, 1), "proofs_wall_s": round(wall, 1),
                          "rows": [r.summary() for r in rows], "contracts": [attrs.asdict(c) for c in conds],
                          "contracts_seconds": round(secs, 1),
                          "contract_verdicts": [{"module": m, "contract": c, "status": s, "conditions": n}
                                                for m, c, s, n in crosshair_run.verdicts(conds)]},
                         indent=2, default=str))
    else:
        prove.print_table(rows, sys.stdout)
        if args.contracts:
            print()
            crosshair_run.print_report(conds, secs, sys.stdout)
        print(f"\nprove: {'ok' if ok else 'FAILED'} in {wall + secs:.1f} s wall ({wall:.1f} s of proofs in "
              f"{args.jobs} process(es), {sum(r.seconds for r in rows):.1f} s summed over rows"
              f"{f'; {secs:.1f} s of CrossHair' if args.contracts else ''})")
    return 0 if ok else 1


def cmd_explore(args: argparse.Namespace) -> int:
    if args.protocol not in core.protocol_names():
        raise UsageError(f"unknown protocol {args.protocol!r}; known: {', '.join(core.protocol_names())}")
    if args.nodes > 7:
        raise UsageError("--nodes must be at most 7 for exhaustive exploration")
    if args.draws == "extremes":
        draws = explore.EXTREMES
    else:
        try:
            k = int(args.draws)
        except ValueError:
            raise UsageError("--draws must be 'extremes' or a positive integer") from None
        if not 1 <= k <= 64:
            raise UsageError("--draws must be between 1 and 64")
        draws = tuple(sorted({(core.DRAW_SPAN - 1) * i // max(1, k - 1) for i in range(k)}))
    coverage = args.coverage
    try:
        cfg = core.protocol(args.protocol).make_config(args.nodes, {}).evolve(
            profile=faults.profile(args.faults, args.protocol))
    except (KeyError, ValueError) as e:
        raise UsageError(str(e.args[0] if e.args else e)) from None
    if args.engine == "fast":
        if args.coverage:
            raise UsageError("--coverage needs --engine reference (it samples reference histories)")
        try:
            ex = explore_fast.FastExplorer(cfg, args.depth, args.max_term, not args.no_symmetry, draws,
                                           args.max_states)
        except Unsupported as e:
            raise UsageError(f"--engine fast: {e}") from None
    else:
        ex = explore.Explorer(cfg, args.depth, args.max_term, not args.no_symmetry, draws, args.max_states)
    bar = Progress(args.depth, label="explore", unit="levels (each larger than the last)",
                   enabled=not args.no_progress)
    res = ex.run(lambda depth, new, seen: bar.update(depth, f"{seen:,} distinct states, {new:,} new at depth {depth}"))
    bar.finish()
    if coverage:
        ex.random_coverage(coverage)
    if args.out and res.found:
        explore.write_traces(ex, args.out)
    if args.json:
        print(json.dumps(res.summary(), indent=2))
    else:
        explore.print_report(res, sys.stdout)
    return 1 if res.unexpected() else 0


def cmd_conform(args: argparse.Namespace) -> int:
    if args.timeout <= 0:
        raise UsageError("--timeout must be positive")
    progress = None if args.json else (lambda text: print(f"conform: {text}", file=sys.stderr, flush=True))
    try:
        driver = Driver(args.driver, args.timeout)
        try:
            if args.vectors:
                out = conform_session.conform_vectors(args.vectors, driver, progress)
            else:
                out = conform_session.conform(args.protocol, driver, args.count, args.seed, progress)
        finally:
            driver.close()
    except DriverError as e:
        raise UsageError(f"driver: {e}") from None
    except conform_session.BadInput as e:
        raise UsageError(str(e)) from None
    if args.json:
        print(json.dumps(conform_report.as_json(out, args.driver), indent=2))
    else:
        conform_report.print_outcome(out, args.driver, sys.stdout, vectors=bool(args.vectors))
    return 0 if out.ok else 1


def cmd_vectors(args: argparse.Namespace) -> int:
    try:
        if args.check:
            count, wrong = conform_session.check_vectors(args.check)
            if args.json:
                print(json.dumps({"ok": not wrong, "vectors": count, "wrong": [
                    {"id": vid, "differences": [d.line() for d in diffs]} for vid, diffs in wrong]}, indent=2))
            else:
                print(f"vectors: {count - len(wrong)} of {count} answers are the reference's")
                for vid, diffs in wrong[:10]:
                    print(f"  {vid}: " + "; ".join(d.line() for d in diffs))
            return 0 if not wrong else 1
        if not args.out:
            raise UsageError("vectors needs --out FILE (or --check FILE)")
        if args.count < 0:
            raise UsageError("--count must be 0 or more")
        doc = conform_session.vectors(args.protocol, args.count, args.seed)
    except conform_session.BadInput as e:
        raise UsageError(str(e)) from None
    try:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    except OSError as e:
        raise UsageError(f"cannot write {args.out}: {e.strerror}") from None
    edge = sum(1 for v in doc["vectors"] if v["id"].startswith("edge-"))
    summary = {"ok": True, "out": args.out, "protocol": args.protocol, "vectors": len(doc["vectors"]),
               "edge": edge, "generated": len(doc["vectors"]) - edge, "seed": args.seed}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"vectors: {summary['vectors']} {args.protocol} vectors ({edge} edge cases, "
              f"{summary['generated']} generated with seed {args.seed}) in {args.out}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    only = tuple(args.parts or check.PARTS)
    unknown = [p for p in only if p not in check.PARTS]
    if unknown:
        raise UsageError(f"unknown part {unknown[0]!r}; parts: {', '.join(check.PARTS)}")
    bar = Progress(len(set(only)), label="check", unit="parts", enabled=not args.no_progress)

    def on_part(part: check.Part) -> None:
        bar.advance(1, f"{part.name} {'ok' if part.ok else 'FAILED'} ({part.seconds:.1f} s)")
        if not args.json:
            bar.clear()
            print(check.line(part), flush=True)

    parts = check.run(args.out, on_part, on_progress=bar.note, only=only)
    bar.finish()
    ok = all(p.ok for p in parts)
    if args.json:
        print(json.dumps({"ok": ok, "wall_s": round(sum(p.seconds for p in parts), 1),
                          "parts": [attrs.asdict(p) for p in parts]}, indent=2))
    else:
        print(f"check: {'ok' if ok else 'FAILED'} in {sum(p.seconds for p in parts):.1f} s")
    return 0 if ok else 1


COMMANDS = {"simulate": cmd_simulate, "replay": cmd_replay, "check-trace": cmd_check_trace, "bench": cmd_bench,
            "fuzz": cmd_fuzz, "view": cmd_view, "shrink": cmd_shrink, "prove": cmd_prove, "explore": cmd_explore,
            "check": cmd_check, "conform": cmd_conform, "vectors": cmd_vectors, "mutants": cmd_mutants}


def _bad_input(message: str) -> int:
    print(f"rmqspec: error: {formats.escape(message)}", file=sys.stderr)
    return 2


def _internal_error(e: BaseException) -> int:
    """A bug of ours: exit 3 with one line naming it (never 1, the code of a finding)."""
    if os.environ.get("RMQSPEC_DEBUG"):
        traceback.print_exception(e, file=sys.stderr)
    frames = traceback.extract_tb(e.__traceback__)
    ours = [f for f in frames if "site-packages" not in f.filename] or frames
    where = f" at {os.path.relpath(ours[-1].filename)}:{ours[-1].lineno} in {ours[-1].name}" if ours else ""
    text = formats.escape(str(e).splitlines()[0] if str(e) else "")[:200]
    print(f"rmqspec: internal error: {type(e).__name__}: {text}{where}. This is a bug in rmqspec: please report it "
          f"with the command that caused it (RMQSPEC_DEBUG=1 prints the traceback)", file=sys.stderr)
    return 3


def main(argv: list[str] | None = None) -> int:
    """Run one command; the exit code says how it went (the module's docstring)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 2
        _load_imports(args)
        return COMMANDS[args.command](args)
    except UsageError as e:
        return _bad_input(str(e))
    except (formats.FormatError, inputs.InputError, scenario.ScenarioError, codec.DecodeError) as e:
        return _bad_input(str(e))
    except UnicodeDecodeError:
        return _bad_input("input is not UTF-8 text")
    except BrokenPipeError:
        return 0
    except OSError as e:  # a file that cannot be read or written: a full disk, a missing directory
        return _bad_input(f"{e.filename}: {e.strerror}" if e.filename else f"{e.strerror or e}")
    except KeyboardInterrupt:
        print("rmqspec: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - anything else is a bug of ours
        return _internal_error(e)


if __name__ == "__main__":
    sys.exit(main())
