"""`rmqspec vectors`: static conformance vectors, cases with the reference's answers, written
or checked (docs/conformance.md)."""

from __future__ import annotations

import argparse
import json
import time

from conform import session as conform_session
from histories import files, formats
from rmqspec.commands.conform import QUIET_BYTES, file_size
from rmqspec.commands.usage import UsageError, add_json, add_progress, add_seed, int_in
from spark_harness.progress import QUIET_S, Progress

QUIET_COUNT = 10_000  # vectors --count: from this many, progress lines from the start (else after QUIET_S)

NAME = "vectors"


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(NAME, help="write static conformance vectors: cases with the reference's answers")
    parser.add_argument("--protocol", default="election", help="the protocol (election, dledger_log, ha, nameserver)")
    parser.add_argument("--out", default=None, metavar="FILE", help="where to write the vectors (JSON)")
    parser.add_argument("--count", type=int_in(0, 1_000_000), default=500,
                        help="generated cases after the edge cases, 0..1,000,000 (default 500)")
    add_seed(parser, "case generator")
    parser.add_argument("--check", default=None, metavar="FILE",
                        help="instead: check that a vectors file's answers are still the reference's")
    add_json(parser)
    add_progress(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    quiet = args.json or args.no_progress
    try:
        if args.check:
            size = file_size(args.check)
            bar = Progress(size, label="vectors", unit="bytes checked", enabled=not quiet,
                           after_s=0.0 if size > QUIET_BYTES else QUIET_S)
            count, n_wrong, wrong = conform_session.check_vectors(args.check, bar.update)
            bar.finish()
            if args.json:
                print(json.dumps({"ok": not n_wrong, "vectors": count, "wrong_count": n_wrong, "wrong": [
                    {"id": vid, "differences": lines} for vid, lines in wrong]}, indent=2))
            else:
                print(f"vectors: {count - n_wrong} of {count} answers are the reference's")
                for vid, lines in wrong[:10]:
                    print(f"  {formats.escape(vid)}: " + "; ".join(lines))
            return 0 if not n_wrong else 1
        if not args.out:
            raise UsageError("vectors needs --out FILE (or --check FILE)")
        if args.count < 0:
            raise UsageError("--count must be 0 or more")
        bars: dict[str, Progress] = {}
        started = time.monotonic()

        def progress(done: int, total: int, what: str) -> None:
            if what not in bars:
                for earlier in bars.values():
                    earlier.finish()
                # a bar per phase; a run shorter than QUIET_S (all phases) prints none
                quiet_for = 0.0 if args.count >= QUIET_COUNT else max(0.0, QUIET_S - (time.monotonic() - started))
                bars[what] = Progress(total, label="vectors", unit=what, enabled=not quiet, after_s=quiet_for)
            bars[what].update(done)

        conform_session.subject(args.protocol)  # an unknown protocol before the output is touched
        try:
            with files.atomic(args.out) as out:  # written as it is made, moved into place when done
                written = conform_session.vectors(args.protocol, args.count, args.seed, out, progress)
        except OSError as e:
            raise UsageError(f"cannot write {args.out}: {e.strerror}") from None
        for bar in bars.values():
            bar.finish()
    except conform_session.BadInput as e:
        raise UsageError(str(e)) from None
    summary = {"ok": True, "out": args.out, "protocol": args.protocol, "vectors": written.vectors,
               "edge": written.edge, "generated": written.generated, "seed": args.seed}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"vectors: {summary['vectors']} {args.protocol} vectors ({summary['edge']} edge cases, "
              f"{summary['generated']} generated with seed {args.seed}) in {formats.escape(args.out)}")
    return 0
