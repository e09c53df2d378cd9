"""`rmqspec conform`, `vectors` and `mutants`: another implementation's handlers judged by
the reference (docs/conformance.md), and the checkers judged by deliberately broken
references."""

from __future__ import annotations

import argparse
import json
import sys

from conform import report as conform_report
from conform import session as conform_session
from conform.driver import Driver, DriverError
from histories import files
from property_tests.support import mutation as catalogue
from rmqspec import mutation
from rmqspec.commands.usage import UsageError


def cmd_conform(args: argparse.Namespace) -> int:
    if args.timeout <= 0:
        raise UsageError("--timeout must be positive")
    progress = None if args.json else (lambda text: print(f"conform: {text}", file=sys.stderr, flush=True))
    try:
        driver = Driver(args.driver, args.timeout)
        try:
            if args.vectors:
                out = conform_session.conform_vectors(args.vectors, driver, progress)
            else:
                out = conform_session.conform(args.protocol, driver, args.count, args.seed, progress)
        finally:
            driver.close()
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
    try:
        if args.check:
            count, wrong = conform_session.check_vectors(args.check)
            if args.json:
                print(json.dumps({"ok": not wrong, "vectors": count, "wrong": [
                    {"id": vid, "differences": [d.line() for d in diffs]} for vid, diffs in wrong]}, indent=2))
            else:
                print(f"vectors: {count - len(wrong)} of {count} answers are the reference's")
                for vid, diffs in wrong[:10]:
                    print(f"  {vid}: " + "; ".join(d.line() for d in diffs))
            return 0 if not wrong else 1
        if not args.out:
            raise UsageError("vectors needs --out FILE (or --check FILE)")
        if args.count < 0:
            raise UsageError("--count must be 0 or more")
        doc = conform_session.vectors(args.protocol, args.count, args.seed)
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
              f"{summary['generated']} generated with seed {args.seed}) in {args.out}")
    return 0


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

