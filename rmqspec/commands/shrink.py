"""`rmqspec shrink`: a failing trace cut down to the fewest events that still fail
(docs/fuzzing.md)."""

from __future__ import annotations

import argparse
import json
import os

from histories import formats
from rmqspec.commands.usage import MAX_BUDGET, UsageError, add_import, add_progress, int_in
from spark_harness import counterexample, shrink
from spark_harness.progress import Progress

NAME = "shrink"


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(NAME, help="minimise a failing trace to the fewest events that still fail")
    parser.add_argument("trace", help="a trace (rmqspec.trace/1) whose history violates a property, e.g. a fuzz "
                                      "counterexample or simulate --trace of a violating history")
    parser.add_argument("--property", default=None,
                        help="the property to keep violated (default: the first unexpected, else the first expected)")
    parser.add_argument("--out", default=None, help="where to write the shrunk trace (default TRACE.shrunk.jsonl)")
    parser.add_argument("--budget", type=int_in(1, MAX_BUDGET), default=None,
                        help=f"replayed steps at most, 1..{MAX_BUDGET:,}")
    parser.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    add_progress(parser)
    add_import(parser)
    return parser


def run(args: argparse.Namespace) -> int:
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
        print(f"  trace: {formats.escape(entry['trace'])}" +
              (f"  picture: {formats.escape(entry['picture'])}" if entry.get("picture") else ""))
        print(f"  {entry['replay']}")
    return 0 if entry["verified"] else 1
