"""`rmqspec bench`: throughput of the worlds, of fuzzing, of exploration and of tolerant
validation (docs/benchmarks.md)."""

from __future__ import annotations

import argparse
import json
import os
import sys

from histories import fast, files
from reference_impl import PROTOCOL_PACKAGES, core
from rmqspec import bench, branch_coverage
from rmqspec.commands.usage import (
    CORES,
    MAX_HISTORIES,
    UsageError,
    add_import,
    add_json,
    add_progress,
    emit,
    float_in,
    int_in,
)
from spark_harness.java import JavaMissing
from spark_harness.progress import Progress

NAME = "bench"


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(NAME, help="throughput of the reference worlds and the fast worlds")
    parser.add_argument("--seconds", type=float_in(0.01, 600), default=3.0,
                        help="time per measurement, 0.01..600 (default 3)")
    parser.add_argument("--protocol", default=None, help="only this protocol")
    add_json(parser, "measurements")
    parser.add_argument("--fuzz", action="store_true",
                        help="fuzz throughput: one process, a process pool and Spark local[N] in one run")
    parser.add_argument("--histories", type=int_in(1, MAX_HISTORIES), default=None,
                        help=f"with --fuzz: histories per engine, 1..{MAX_HISTORIES:,}")
    parser.add_argument("--cores", type=int_in(1, CORES), default=None,
                        help=f"with --fuzz: processes / Spark cores, 1..{CORES} (this machine's cores)")
    parser.add_argument("--engine", choices=("fast", "reference"), default="fast",
                        help="with --fuzz: the world the histories run on (default fast, where the protocol has one)")
    parser.add_argument("--explore", action="store_true",
                        help="rmqspec explore's distinct states per second, reference and fast engine (election, "
                             "3 nodes, faults none)")
    parser.add_argument("--depth", type=int_in(1, 30), default=bench.EXPLORE_DEPTH,
                        help="--explore: the search depth, 1..30 (default %(default)s)")
    parser.add_argument("--tolerant", action="store_true",
                        help="seconds to validate implementation logs (check-trace on rmqspec.log/1): 100- and "
                             "10,000-line election logs and the real DLedger 0.2.6 logs")
    parser.add_argument("--coverage", action="store_true",
                        help="branch coverage of reference_impl/ (coverage.py, branch mode) over the first "
                             f"--histories histories (default {branch_coverage.DEFAULT_HISTORIES:,}) of each "
                             "protocol's default fuzz plan, on the reference, one protocol after another; "
                             "writes OUT/<protocol>.json and OUT/missing.txt")
    parser.add_argument("--seed", type=int_in(0, 2**62), default=1,
                        help=f"with --coverage: seed of the plan's first history, 0..{2**62:,} (default 1)")
    parser.add_argument("--out", default=branch_coverage.DEFAULT_OUT,
                        help="with --coverage: where each protocol's measurement goes; the summary adds up every "
                             "protocol measured there (default %(default)s)")
    add_progress(parser)
    add_import(parser)
    return parser


def run_coverage(args: argparse.Namespace) -> int:
    protocols = tuple(p.strip() for p in args.protocol.split(",")) if args.protocol else PROTOCOL_PACKAGES
    for p in protocols:
        if p not in PROTOCOL_PACKAGES:  # the worker imports rmqspec's own protocols only
            raise UsageError(f"unknown protocol {p!r} for --coverage; known: {', '.join(PROTOCOL_PACKAGES)}")
    histories = args.histories or branch_coverage.DEFAULT_HISTORIES
    try:
        files.out_folder(args.out)
    except OSError as e:
        raise UsageError(f"--out {args.out}: {e.strerror or e}") from None
    bar = Progress(histories * len(protocols), label="bench --coverage", unit="histories",
                   enabled=not args.no_progress)
    for p in protocols:
        try:
            result = branch_coverage.measure(p, histories, args.seed,
                                             on_history=lambda k, p=p: bar.advance(1, f"{p} history {k + 1}"))
        except branch_coverage.MissingCoverage as e:
            raise UsageError(str(e)) from None
        branch_coverage.write(result, args.out)
    bar.finish()
    summary = branch_coverage.summarize(branch_coverage.load(args.out))
    files.write_text(os.path.join(args.out, "missing.txt"), branch_coverage.missing_text(summary))
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        branch_coverage.print_summary(summary, args.out)
    return 0


def run(args: argparse.Namespace) -> int:
    if args.coverage:
        return run_coverage(args)
    if args.explore:
        emit(bench.explore(args.depth, log=None if args.no_progress else sys.stderr), args.json, bench.print_explore)
        return 0
    if args.tolerant:
        emit(bench.tolerant(log=sys.stderr, protocol=args.protocol), args.json, bench.print_tolerant)
        return 0
    if args.fuzz:
        protocols = tuple(p.strip() for p in args.protocol.split(",")) if args.protocol else None
        for p in protocols or ():
            if p not in core.protocol_names():
                raise UsageError(f"unknown protocol {p!r}; known: {', '.join(core.protocol_names())}")
        count = len(protocols) if protocols else (len(fast.PROTOCOLS) if args.engine == "fast" else 1)
        bar = Progress(bench.FUZZ_PHASES * count, label="bench --fuzz", unit="phases", enabled=not args.no_progress)
        try:
            result = bench.fuzz(protocols, args.histories, args.cores,
                                on_phase=lambda text: bar.advance(1, text), engine=args.engine)
        except JavaMissing as e:
            raise UsageError(str(e)) from None
        bar.finish()
        emit(result, args.json, bench.print_fuzz)
        return 0
    if args.protocol is not None and args.protocol not in core.protocol_names():
        raise UsageError(f"unknown protocol {args.protocol!r}; known: {', '.join(core.protocol_names())}")
    cases = bench.cases(args.protocol)
    bar = Progress(len(cases), label="bench", unit="rows", enabled=not args.no_progress)
    rows = bench.run(args.seconds, args.protocol, on_row=lambda r: bar.advance(
        1, f"{r['protocol']} {r['nodes']} nodes {r['engine']} {'checked' if r['checked'] else 'unchecked'}: "
           f"{r['events_per_s']:,} events/s"))
    bar.finish()
    emit(rows, args.json, bench.print_table)
    return 0
