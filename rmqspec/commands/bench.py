"""`rmqspec bench`: throughput of the worlds, of fuzzing, of exploration and of tolerant
validation (docs/benchmarks.md)."""

from __future__ import annotations

import argparse
import json
import sys

from histories import fast
from reference_impl import core
from rmqspec import bench
from rmqspec.commands.usage import UsageError
from spark_harness.java import JavaMissing
from spark_harness.progress import Progress


def cmd_bench(args: argparse.Namespace) -> int:
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

