"""The `rmqspec` command line. It parses arguments and dispatches to rmqspec/commands/
(one module per group of subcommands); nothing else.

Exit codes: 0 ok, 1 an unexpected property violation (or a failed check), 2 bad input
(one line on stderr, no traceback; unreadable or unwritable files too), 3 an internal error
(a bug: one line naming it; RMQSPEC_DEBUG=1 prints the traceback), 130 Ctrl-C (SIGINT) and
143 SIGTERM (one line, `rmqspec: interrupted`, once every cleanup on the way out has run).

Every number a flag takes is bounded, and the bound is in its --help: a run must end.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import math
import os
import re
import signal
import sys
import threading
import traceback
from typing import Any, NoReturn

from histories import formats
from model_checks import check
from reference_impl import core
from reference_impl.core import codec, faults, inputs, scenario
from rmqspec.bench import EXPLORE_DEPTH
from rmqspec.commands.bench import cmd_bench
from rmqspec.commands.checks import cmd_check, cmd_explore, cmd_prove
from rmqspec.commands.conformance import cmd_conform, cmd_mutants, cmd_vectors
from rmqspec.commands.fuzz import cmd_fuzz, cmd_shrink
from rmqspec.commands.traces import cmd_check_trace, cmd_replay, cmd_simulate
from rmqspec.commands.usage import (
    CORES,
    INT64,
    MAX_BUDGET,
    MAX_COVERAGE,
    MAX_HISTORIES,
    MAX_LINES,
    MAX_STEPS,
    UsageError,
)
from rmqspec.commands.view import cmd_view
from spark_harness import plan, shrink


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


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
    rep.add_argument("trace", help="a trace (rmqspec.trace/1, JSON Lines: what simulate --trace, fuzz, shrink, "
                                   "explore --out and prove write)")
    rep.add_argument("--max-lines", type=_int_in(1, MAX_LINES), default=400,
                     help=f"timeline lines to print, 1..{MAX_LINES:,} (default 400)")
    rep.add_argument("--quiet", action="store_true", help="summary only, no timeline")
    rep.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    _add_import(rep)

    chk = sub.add_parser("check-trace", help="validate a trace, or an implementation's log (searching for a reference "
                                             "execution that explains it), against the reference")
    chk.add_argument("trace", help="a trace (rmqspec.trace/1) or an implementation log (rmqspec.log/1, "
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
    chk.add_argument("--json", action="store_true", help="machine-readable verdict on stdout")
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
                         "(see --judge); reference: the reference only (default fast)")
    fz.add_argument("--judge", choices=("all", "sample"), default="sample",
                    help="with the fast engine, which histories with a violation the reference re-runs: sample (default): "
                         f"every one with an unexpected violation and about 1 in {plan.JUDGE_EVERY} of the rest; all")
    fz.add_argument("--coverage-sample", default=None, metavar="N|all",
                    help="with the fast engine: histories per protocol the reference also runs whole, its row "
                         "required to agree with the fast world's, coverage and distinct states included, "
                         f"0..{MAX_HISTORIES:,} or all (default 0: the fast world computes both over every history)")
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
    shr.add_argument("trace", help="a trace (rmqspec.trace/1) whose history violates a property, e.g. a fuzz "
                                   "counterexample or simulate --trace of a violating history")
    shr.add_argument("--property", default=None, help="the property to keep violated (default: the first unexpected, else the first expected)")
    shr.add_argument("--out", default=None, help="where to write the shrunk trace (default TRACE.shrunk.jsonl)")
    shr.add_argument("--budget", type=_int_in(1, MAX_BUDGET), default=None,
                     help=f"replayed steps at most, 1..{MAX_BUDGET:,}")
    shr.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
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
    prv.add_argument("--json", action="store_true", help="machine-readable results on stdout")
    _add_progress(prv)

    exp = sub.add_parser("explore", help="exhaustive exploration with symmetry reduction")
    exp.add_argument("--protocol", default="election",
                     help="the protocol whose worlds are searched (default election; --engine fast: election only)")
    exp.add_argument("--nodes", type=_int_in(1, 7), default=3, help="nodes, 1..7 (default 3)")
    exp.add_argument("--depth", type=_int_in(1, 64), default=8, help="events from the initial state, 1..64 (default 8)")
    exp.add_argument("--max-term", type=_int_in(0, 64), default=2,
                     help="do not expand states beyond this term, 0..64 (default 2)")
    exp.add_argument("--faults", default="none", help="fault profile (default none)")
    exp.add_argument("--draws", default="extremes",
                     help="tick draws: 'extremes' (0 and 65535, the default) or N evenly spaced, 1..64")
    exp.add_argument("--no-symmetry", action="store_true",
                     help="no symmetry reduction: states that differ only by renaming the nodes are counted apart")
    exp.add_argument("--engine", choices=("reference", "fast"), default="reference",
                     help="reference: the Python worlds (default); fast: the election twin's arrays "
                          "(model_checks/explore_fast.py, the same search and counts)")
    exp.add_argument("--max-states", type=_int_in(1, 100_000_000), default=None,
                     help="stop after this many distinct states, 1..100,000,000")
    exp.add_argument("--coverage", type=_csv(_int_in(1, MAX_COVERAGE), f"integers in 1..{MAX_COVERAGE:,}"),
                     default=[], help=f"random histories to compare, e.g. 10,100,1000 (each 1..{MAX_COVERAGE:,}, "
                                      "at most 64 values)")
    exp.add_argument("--out", default=None, help="write counterexample traces here")
    exp.add_argument("--json", action="store_true", help="machine-readable results on stdout")
    _add_progress(exp)

    gate = sub.add_parser("check", help="the quick CI gate: suites, proofs, conformance, contracts, exploration "
                                        "(about 2 minutes on 2 idle cores)",
                          description="The quick CI gate: the smoke suites, Z3 proofs, conformance to the symbolic "
                                      "relations, CrossHair contracts and a bounded exploration. About 2 minutes on "
                                      "2 idle cores (110 s measured, docs/benchmarks.md); a line per part as it ends.")
    gate.add_argument("--out", default=None, help="directory for reference witness traces")
    gate.add_argument("--parts", type=_csv(str), default=None,
                      help=f"only these parts, comma-separated (default all: {','.join(check.PARTS)})")
    gate.add_argument("--json", action="store_true", help="machine-readable results on stdout")
    _add_progress(gate)

    con = sub.add_parser("conform",
                         help="check another implementation's handlers through a driver (docs/conformance.md)")
    con.add_argument("--protocol", default="election",
                     help="the protocol whose handlers the driver runs (election, dledger_log, ha, nameserver)")
    con.add_argument("--driver", required=True, metavar="CMD",
                     help="command that speaks rmqspec.conform/1 on stdin/stdout, e.g. 'java -cp ... Driver'")
    con.add_argument("--count", type=_int_in(1, 10_000_000), default=1000,
                     help="generated cases, 1..10,000,000 (default 1000)")
    con.add_argument("--seed", type=_int, default=1,
                     help="seed of the case generator, a 64-bit integer (default 1)")
    con.add_argument("--vectors", default=None, metavar="FILE", help="run a vectors file's cases instead of generating")
    con.add_argument("--timeout", type=_float_in(0.01, 3600), default=10.0, metavar="SECONDS",
                     help="per-case answer timeout, 0.01..3600 s (default 10); the driver's hello gets 60 s or "
                          "this, whichever is longer (a JVM may start first)")
    con.add_argument("--json", action="store_true", help="machine-readable outcome on stdout")
    _add_progress(con)

    vec = sub.add_parser("vectors", help="write static conformance vectors: cases with the reference's answers")
    vec.add_argument("--protocol", default="election", help="the protocol (election, dledger_log, ha, nameserver)")
    vec.add_argument("--out", default=None, metavar="FILE", help="where to write the vectors (JSON)")
    vec.add_argument("--count", type=_int_in(0, 1_000_000), default=500,
                     help="generated cases after the edge cases, 0..1,000,000 (default 500)")
    vec.add_argument("--seed", type=_int, default=1,
                     help="seed of the case generator, a 64-bit integer (default 1)")
    vec.add_argument("--check", default=None, metavar="FILE",
                     help="instead: check that a vectors file's answers are still the reference's")
    vec.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    _add_progress(vec)

    mut = sub.add_parser("mutants", help="mutation score: which property layers kill deliberately broken references")
    mut.add_argument("--mutant", type=_csv(str), default=None, help="mutant names, comma-separated (default: all)")
    mut.add_argument("--protocol", type=_csv(str), default=None, help="only the mutants of these protocols")
    mut.add_argument("--layers", type=_csv(str), default=["fuzz", "machines", "model"],
                     help="fuzz, machines, model (default: all three)")
    mut.add_argument("--histories", type=_int_in(1, MAX_HISTORIES), default=300,
                     help=f"fuzz: histories per mutant at most, 1..{MAX_HISTORIES:,} (default 300)")
    mut.add_argument("--seconds", type=_float_in(1, 86_400), default=180.0,
                     help="fuzz and machines: wall time per mutant at most, 1..86,400 (default 180)")
    mut.add_argument("--list", action="store_true", help="list the mutants and the rule each breaks (with --json: "
                                                         "as JSON)")
    mut.add_argument("--json", action="store_true", help="verdicts and scores on stdout as JSON")

    bench = sub.add_parser("bench", help="throughput of the reference worlds and the fast worlds")
    bench.add_argument("--seconds", type=_float_in(0.01, 600), default=3.0,
                       help="time per measurement, 0.01..600 (default 3)")
    bench.add_argument("--protocol", default=None, help="only this protocol")
    bench.add_argument("--json", action="store_true", help="machine-readable measurements on stdout")
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
    for name in getattr(args, "imports", []):
        try:
            importlib.import_module(name)
        except BaseException as e:  # noqa: BLE001 - a user's module may raise anything, even SystemExit
            if isinstance(e, KeyboardInterrupt):
                raise
            raise UsageError(f"cannot import {name}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                             ) from None


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


class Terminated(KeyboardInterrupt):
    """SIGTERM, unwound as Ctrl-C is: every `finally` and `except KeyboardInterrupt` on the
    way out runs (a driver's process group is killed, Spark is stopped, traces are moved
    into place)."""


_signalled: list[int] = []  # the signal that is ending this run, if any


def _on_signal(signum: int, frame: object) -> None:
    if _signalled:
        return  # a second Ctrl-C while the first one's cleanup runs: let it finish
    _signalled.append(signum)
    # What unwinds now may pass through libraries that log it on the root logger (py4j:
    # "KeyboardInterrupt while sending command" with a traceback): not on our stderr.
    logging.getLogger().addHandler(logging.NullHandler())
    raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def main(argv: list[str] | None = None) -> int:
    """Run one command; the exit code says how it went (the module's docstring)."""
    if threading.current_thread() is not threading.main_thread():
        return _main(argv)
    _signalled.clear()
    previous = {s: signal.signal(s, _on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        code = _main(argv)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if code == _INTERRUPTED or _signalled:
        print("rmqspec: interrupted", file=sys.stderr)
        return 128 + (_signalled[0] if _signalled else signal.SIGINT)
    return code


_INTERRUPTED = -1


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 2
        _load_imports(args)
        return COMMANDS[args.command](args)
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt) or _signalled:
            # A signal's unwinding may surface as another error (Spark's JVM gone while it stops):
            # interrupted all the same, and only that is said.
            return _INTERRUPTED
        if isinstance(e, SystemExit):
            raise
        return _report(e)


def _report(e: BaseException) -> int:
    """The one line for a command that ended with an exception: bad input (2) or a bug (3)."""
    if isinstance(e, (UsageError, formats.FormatError, inputs.InputError, scenario.ScenarioError,
                      codec.DecodeError)):
        return _bad_input(str(e))
    if isinstance(e, UnicodeDecodeError):
        return _bad_input("input is not UTF-8 text")
    if isinstance(e, BrokenPipeError):
        return 0
    if isinstance(e, OSError):  # a file that cannot be read or written: a full disk, a missing directory
        return _bad_input(f"{e.filename}: {e.strerror}" if e.filename else f"{e.strerror or e}")
    if isinstance(e, Exception):
        return _internal_error(e)
    raise e


if __name__ == "__main__":
    sys.exit(main())
