"""`rmqspec bench`: throughput of the worlds, of fuzzing, of exploration and of tolerant
validation (docs/benchmarks.md)."""

from __future__ import annotations

import argparse
import json
import sys

from histories import fast
from reference_impl import core
from rmqspec import bench
from rmqspec.commands.usage import CORES, MAX_HISTORIES, UsageError, add_import, add_progress, float_in, int_in
from spark_harness.java import JavaMissing
from spark_harness.progress import Progress

NAME = "bench"


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(NAME, help="throughput of the reference worlds and the fast worlds")
    parser.add_argument("--seconds", type=float_in(0.01, 600), default=3.0,
                        help="time per measurement, 0.01..600 (default 3)")
    parser.add_argument("--protocol", default=None, help="only this protocol")
    parser.add_argument("--json", action="store_true", help="machine-readable measurements on stdout")
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
    add_progress(parser)
    add_import(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    if args.explore:
        rows = bench.explore(args.depth, log=None if args.no_progress else sys.stderr)
        if args.json:
            print(json.dumps(rows, indent=2))
        else:
            bench.print_explore(rows)
        return 0
    if args.tolerant:
        rows = bench.tolerant(log=sys.stderr, protocol=args.protocol)
        if args.json:
            print(json.dumps(rows, indent=2))
        else:
            bench.print_tolerant(rows)
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
