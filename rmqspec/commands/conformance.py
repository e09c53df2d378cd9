"""`rmqspec conform`, `vectors` and `mutants`: another implementation's handlers judged by
the reference (docs/conformance.md), and the checkers judged by deliberately broken
references."""

from __future__ import annotations

import argparse
import json
import os
import sys

from conform import report as conform_report
from conform import session as conform_session
from conform.driver import Driver, DriverError
from histories import files, formats
from property_tests.support import mutation as catalogue
from rmqspec import mutation
from rmqspec.commands.usage import UsageError
from spark_harness.progress import Progress


# Shorter runs than these are a few seconds: no progress lines
QUIET_BYTES = 16 << 20  # a vectors file (about 7,000 vectors)
QUIET_COUNT = 10_000  # vectors --count


def cmd_conform(args: argparse.Namespace) -> int:
    if args.timeout <= 0:
        raise UsageError("--timeout must be positive")
    quiet = args.json or args.no_progress
    if args.vectors:
        size = _size(args.vectors)
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


def cmd_vectors(args: argparse.Namespace) -> int:
    quiet = args.json or args.no_progress
    try:
        if args.check:
            size = _size(args.check)
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


def _size(path: str) -> int:
    """A file's size for a progress bar over its bytes (1 for a pipe or a device, or if unreadable:
    the reader says why)."""
    try:
        return max(1, os.stat(path).st_size)
    except OSError:
        return 1


def cmd_mutants(args: argparse.Namespace) -> int:
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

