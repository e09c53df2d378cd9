"""`rmqspec explore`: exhaustive exploration of small worlds with symmetry reduction."""

from __future__ import annotations

import argparse
import json
import sys

from histories.fast import Unsupported
from model_checks import explore, explore_fast
from reference_impl import core
from reference_impl.core import faults
from rmqspec.commands.usage import MAX_COVERAGE, UsageError, add_progress, comma_list, int_in
from spark_harness.progress import Progress

NAME = "explore"


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(NAME, help="exhaustive exploration with symmetry reduction")
    parser.add_argument("--protocol", default="election",
                        help="the protocol whose worlds are searched (default election; --engine fast: election only)")
    parser.add_argument("--nodes", type=int_in(1, 7), default=3, help="nodes, 1..7 (default 3)")
    parser.add_argument("--depth", type=int_in(1, 64), default=8,
                        help="events from the initial state, 1..64 (default 8)")
    parser.add_argument("--max-term", type=int_in(0, 64), default=2,
                        help="do not expand states beyond this term, 0..64 (default 2)")
    parser.add_argument("--faults", default="none", help="fault profile (default none)")
    parser.add_argument("--draws", default="extremes",
                        help="tick draws: 'extremes' (0 and 65535, the default) or N evenly spaced, 1..64")
    parser.add_argument("--no-symmetry", action="store_true",
                        help="no symmetry reduction: states that differ only by renaming the nodes are counted apart")
    parser.add_argument("--engine", choices=("reference", "fast"), default="reference",
                        help="reference: the Python worlds (default); fast: the election twin's arrays "
                             "(model_checks/explore_fast.py, the same search and counts)")
    parser.add_argument("--max-states", type=int_in(1, 100_000_000), default=None,
                        help="stop after this many distinct states, 1..100,000,000")
    parser.add_argument("--coverage", type=comma_list(int_in(1, MAX_COVERAGE), f"integers in 1..{MAX_COVERAGE:,}"),
                        default=[], help=f"random histories to compare, e.g. 10,100,1000 (each 1..{MAX_COVERAGE:,}, "
                                         "at most 64 values)")
    parser.add_argument("--out", default=None, help="write counterexample traces here")
    parser.add_argument("--json", action="store_true", help="machine-readable results on stdout")
    add_progress(parser)
    return parser


def run(args: argparse.Namespace) -> int:
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
