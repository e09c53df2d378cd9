"""`rmqspec conform`: another implementation's handlers, run through a driver, judged by the
reference (docs/conformance.md)."""

from __future__ import annotations

import argparse
import json
import os
import sys

from conform import report as conform_report
from conform import session as conform_session
from conform.driver import Driver, DriverError
from rmqspec.commands.usage import UsageError, add_progress, float_in, int64, int_in
from spark_harness.progress import Progress

# Shorter runs than these are a few seconds: no progress lines
QUIET_BYTES = 16 << 20  # a vectors file (about 7,000 vectors)

NAME = "conform"


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        NAME, help="check another implementation's handlers through a driver (docs/conformance.md)")
    parser.add_argument("--protocol", default="election",
                        help="the protocol whose handlers the driver runs (election, dledger_log, ha, nameserver)")
    parser.add_argument("--driver", required=True, metavar="CMD",
                        help="command that speaks rmqspec.conform/1 on stdin/stdout, e.g. 'java -cp ... Driver'")
    parser.add_argument("--count", type=int_in(1, 10_000_000), default=1000,
                        help="generated cases, 1..10,000,000 (default 1000)")
    parser.add_argument("--seed", type=int64, default=1,
                        help="seed of the case generator, a 64-bit integer (default 1)")
    parser.add_argument("--vectors", default=None, metavar="FILE",
                        help="run a vectors file's cases instead of generating")
    parser.add_argument("--timeout", type=float_in(0.01, 3600), default=10.0, metavar="SECONDS",
                        help="per-case answer timeout, 0.01..3600 s (default 10); the driver's hello gets 60 s or "
                             "this, whichever is longer (a JVM may start first)")
    parser.add_argument("--json", action="store_true", help="machine-readable outcome on stdout")
    add_progress(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    if args.timeout <= 0:
        raise UsageError("--timeout must be positive")
    quiet = args.json or args.no_progress
    if args.vectors:
        size = file_size(args.vectors)
        bar = Progress(size, label="conform", unit="bytes of vectors", enabled=not quiet and size > QUIET_BYTES)
    else:
        bar = Progress(args.count, label="conform", unit="cases agree", enabled=not quiet)
    try:
        driver = Driver(args.driver, args.timeout)
        try:
            if args.vectors:
                out = conform_session.conform_vectors(args.vectors, driver, bar.update)
            else:
                out = conform_session.conform(args.protocol, driver, args.count, args.seed, bar.update)
        except BaseException:
            driver.kill()  # an error, a timeout, Ctrl-C: the driver's whole process group, now
            raise
        driver.close()
        bar.finish()
    except DriverError as e:
        raise UsageError(f"driver: {e}") from None
    except conform_session.BadInput as e:
        raise UsageError(str(e)) from None
    if args.json:
        print(json.dumps(conform_report.as_json(out, args.driver), indent=2))
    else:
        conform_report.print_outcome(out, args.driver, sys.stdout, vectors=bool(args.vectors))
    return 0 if out.ok else 1


def file_size(path: str) -> int:
    """A file's size for a progress bar over its bytes (1 for a pipe or a device, or if unreadable:
    the reader says why)."""
    try:
        return max(1, os.stat(path).st_size)
    except OSError:
        return 1
