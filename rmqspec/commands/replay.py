"""`rmqspec replay`: re-run a trace through the reference and compare every step; what it
reports is check-trace's report for a reference trace too."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from histories import formats, runner, timeline
from histories import trace as trace_mod
from rmqspec.commands.usage import MAX_LINES, UsageError, add_import, int_in

NAME = "replay"


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(NAME, help="re-run a trace through the reference and compare every step")
    parser.add_argument("trace", help="a trace (rmqspec.trace/1, JSON Lines: what simulate --trace, fuzz, shrink, "
                                      "explore --out and prove write)")
    parser.add_argument("--max-lines", type=int_in(1, MAX_LINES), default=400,
                        help=f"timeline lines to print, 1..{MAX_LINES:,} (default 400)")
    parser.add_argument("--quiet", action="store_true", help="summary only, no timeline")
    parser.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    add_import(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    hooks: tuple = ()
    if not args.quiet and not args.json:
        print(f"rmqspec replay: {formats.escape(args.trace)}")
        hooks = (timeline.Timeline(sys.stdout, args.max_lines),)
    with open_trace(args.trace) as f:
        result = runner.replay(f, hooks, args.trace)
    return report_replay(result, args.json, "replay")


def open_trace(path: str) -> Any:
    """A trace to read, in binary: the line limit counts bytes and each line is decoded strictly."""
    try:
        return open(path, "rb")
    except IsADirectoryError:
        raise UsageError(f"cannot read {path}: it is a directory, not a trace") from None
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None


def report_replay(result: Any, as_json: bool, verb: str) -> int:
    mm = result.mismatch
    out = {
        "ok": result.ok(), "steps": result.run.steps, "t_ms": result.run.world.now,
        "mismatch": None if mm is None else {"step": mm.step, "line": mm.line, "message": mm.message,
                                             "note": trace_mod.written_elsewhere(result.header)},
        "violations": [v.property for v in result.run.violations],
        "unexpected_violations": [v.property for v in result.run.unexpected],
    }
    if as_json:
        print(json.dumps(out, indent=2))
    elif mm is not None:
        print(f"{verb}: MISMATCH at step {mm.step} (line {mm.line}): {formats.escape(mm.message)}")
        note = trace_mod.written_elsewhere(result.header)
        if note:
            print(f"  note: {formats.escape(note)}")
    else:
        print(f"{verb}: {result.run.steps} steps match the reference "
              f"(t={result.run.world.now} ms); unexpected violations: {out['unexpected_violations'] or 'none'}")
        for v in result.run.violations:
            print(f"  {v.property} at step {v.step}: {'expected: ' + v.expected if v.expected else 'UNEXPECTED'} "
                  f"- {formats.escape(v.detail)}")
    return 0 if result.ok() else 1
