"""`rmqspec mutants`: which property layers kill deliberately broken references
(histories/mutants/; the measuring is rmqspec/mutation.py)."""

from __future__ import annotations

import argparse
import json
import sys

from histories.mutants import catalogue
from rmqspec import mutation
from rmqspec.commands.usage import MAX_HISTORIES, UsageError, comma_list, float_in, int_in

NAME = "mutants"


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        NAME, help="mutation score: which property layers kill deliberately broken references")
    parser.add_argument("--mutant", type=comma_list(str), default=None,
                        help="mutant names, comma-separated (default: all)")
    parser.add_argument("--protocol", type=comma_list(str), default=None, help="only the mutants of these protocols")
    parser.add_argument("--layers", type=comma_list(str), default=["fuzz", "machines", "model"],
                        help="fuzz, machines, model (default: all three)")
    parser.add_argument("--histories", type=int_in(1, MAX_HISTORIES), default=300,
                        help=f"fuzz: histories per mutant at most, 1..{MAX_HISTORIES:,} (default 300)")
    parser.add_argument("--seconds", type=float_in(1, 86_400), default=180.0,
                        help="fuzz and machines: wall time per mutant at most, 1..86,400 (default 180)")
    parser.add_argument("--list", action="store_true",
                        help="list the mutants and the rule each breaks (with --json: as JSON)")
    parser.add_argument("--json", action="store_true", help="verdicts and scores on stdout as JSON")
    return parser


def run(args: argparse.Namespace) -> int:
    if args.list:
        if args.json:
            print(json.dumps({"mutants": [{"name": m.name, "protocol": m.protocol, "rule": m.rule,
                                           "catches": list(m.catches)} for m in catalogue.MUTANTS]}, indent=2))
            return 0
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
    escaped = mutation.not_caught(verdicts)
    if args.json:
        print(json.dumps({"verdicts": [v.as_dict() for v in verdicts], "scores": mutation.scores(verdicts),
                          "not_caught": escaped}, indent=2))
    else:
        print(mutation.table(verdicts))
        print(f"every mutant killed by at least one layer ({', '.join(args.layers)})" if not escaped else
              f"not killed by any layer run ({', '.join(args.layers)}), or a layer failed: {', '.join(escaped)}")
    return 1 if escaped else 0
