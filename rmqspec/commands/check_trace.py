"""`rmqspec check-trace`: validate a reference trace (strictly, as replay does) or an
implementation's log (tolerantly: a search for a reference execution that explains it,
docs/conformance.md)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from histories import impl_log, runner, tolerant
from histories import trace as trace_mod
from rmqspec.commands.replay import open_trace, report_replay
from rmqspec.commands.usage import UsageError, add_import, int_in

NAME = "check-trace"


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(NAME, help="validate a trace, or an implementation's log (searching for a reference "
                                              "execution that explains it), against the reference")
    parser.add_argument("trace", help="a trace (rmqspec.trace/1) or an implementation log (rmqspec.log/1, "
                                      "docs/conformance.md)")
    parser.add_argument("--tolerant", action="store_true",
                        help="insist on tolerant validation (an implementation log is always checked tolerantly)")
    parser.add_argument("--slack-ms", type=int_in(0, 60_000), default=None,
                        help="tolerant: scheduling allowance on top of the reference's windows, and how far a logged "
                             "t_ms may be from the reference's time, 0..60,000 (default 50)")
    parser.add_argument("--max-depth", type=int_in(1, 64), default=None,
                        help="tolerant: reference events searched between two log lines, 1..64 (default 6)")
    parser.add_argument("--max-states", type=int_in(1, 10_000_000), default=None,
                        help="tolerant: search states expanded per log line, 1..10,000,000 (default 3000)")
    parser.add_argument("--beam", type=int_in(1, 1024), default=None,
                        help="tolerant: candidate executions kept between lines, 1..1024 (default 4; widened x4 twice "
                             "on a miss)")
    parser.add_argument("--json", action="store_true", help="machine-readable verdict on stdout")
    add_import(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    with open_trace(args.trace) as f:
        if impl_log.is_log(f):
            return _check_log(f, args)
        if args.tolerant:
            raise UsageError(f"{args.trace} is a reference trace ({trace_mod.SCHEMA}), checked strictly; "
                             f"tolerant validation reads an implementation log ({impl_log.SCHEMA}, docs/conformance.md)")
        result = runner.replay(f, (), args.trace)
    return report_replay(result, args.json, "check-trace")


def _check_log(f: Any, args: argparse.Namespace) -> int:
    opts = tolerant.Options()
    for name in ("slack_ms", "max_depth", "max_states", "beam"):
        if getattr(args, name) is not None:
            setattr(opts, name, getattr(args, name))
    log = impl_log.read(f, args.trace)
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
