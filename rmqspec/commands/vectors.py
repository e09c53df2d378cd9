"""`rmqspec vectors`: static conformance vectors, cases with the reference's answers, written
or checked (docs/conformance.md)."""

from __future__ import annotations

import argparse
import json

from conform import session as conform_session
from histories import files, formats
from rmqspec.commands.conform import QUIET_BYTES, file_size
from rmqspec.commands.usage import UsageError, add_progress, int64, int_in
from spark_harness.progress import Progress

QUIET_COUNT = 10_000  # vectors --count

NAME = "vectors"


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(NAME, help="write static conformance vectors: cases with the reference's answers")
    parser.add_argument("--protocol", default="election", help="the protocol (election, dledger_log, ha, nameserver)")
    parser.add_argument("--out", default=None, metavar="FILE", help="where to write the vectors (JSON)")
    parser.add_argument("--count", type=int_in(0, 1_000_000), default=500,
                        help="generated cases after the edge cases, 0..1,000,000 (default 500)")
    parser.add_argument("--seed", type=int64, default=1,
                        help="seed of the case generator, a 64-bit integer (default 1)")
    parser.add_argument("--check", default=None, metavar="FILE",
                        help="instead: check that a vectors file's answers are still the reference's")
    parser.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    add_progress(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    quiet = args.json or args.no_progress
    try:
        if args.check:
            size = file_size(args.check)
            bar = Progress(size, label="vectors", unit="bytes checked", enabled=not quiet and size > QUIET_BYTES)
            count, n_wrong, wrong = conform_session.check_vectors(args.check, bar.update)
            bar.finish()
            if args.json:
                print(json.dumps({"ok": not n_wrong, "vectors": count, "wrong_count": n_wrong, "wrong": [
                    {"id": vid, "differences": [d.line() for d in diffs]} for vid, diffs in wrong]}, indent=2))
            else:
                print(f"vectors: {count - n_wrong} of {count} answers are the reference's")
                for vid, diffs in wrong[:10]:
                    print(f"  {formats.escape(vid)}: " + "; ".join(d.line() for d in diffs))
            return 0 if not n_wrong else 1
        if not args.out:
            raise UsageError("vectors needs --out FILE (or --check FILE)")
        if args.count < 0:
            raise UsageError("--count must be 0 or more")
        bars: dict[str, Progress] = {}

        def progress(done: int, total: int, what: str) -> None:
            if what not in bars:
                for earlier in bars.values():
                    earlier.finish()
                bars[what] = Progress(total, label="vectors", unit=what, enabled=not quiet and args.count >= QUIET_COUNT)
            bars[what].update(done)

        doc = conform_session.vectors(args.protocol, args.count, args.seed, progress)
        for bar in bars.values():
            bar.finish()
    except conform_session.BadInput as e:
        raise UsageError(str(e)) from None
    try:
        files.write_text(args.out, json.dumps(doc, indent=1) + "\n")
    except OSError as e:
        raise UsageError(f"cannot write {args.out}: {e.strerror}") from None
    edge = sum(1 for v in doc["vectors"] if v["id"].startswith("edge-"))
    summary = {"ok": True, "out": args.out, "protocol": args.protocol, "vectors": len(doc["vectors"]),
               "edge": edge, "generated": len(doc["vectors"]) - edge, "seed": args.seed}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"vectors: {summary['vectors']} {args.protocol} vectors ({edge} edge cases, "
              f"{summary['generated']} generated with seed {args.seed}) in {formats.escape(args.out)}")
    return 0
