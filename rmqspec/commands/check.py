"""`rmqspec check`: the quick CI gate (smoke suites, proofs, conformance to the symbolic
relations, contracts, a bounded exploration)."""

from __future__ import annotations

import argparse
import json

import attrs

from model_checks import check
from rmqspec.commands.usage import UsageError, add_progress, comma_list
from spark_harness.progress import Progress

NAME = "check"


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        NAME, help="the quick CI gate: suites, proofs, conformance, contracts, exploration "
                   "(about 2 minutes on 2 idle cores)",
        description="The quick CI gate: the smoke suites, Z3 proofs, conformance to the symbolic relations, CrossHair "
                    "contracts and a bounded exploration. About 2 minutes on 2 idle cores (110 s measured, "
                    "docs/benchmarks.md); a line per part as it ends.")
    parser.add_argument("--out", default=None, help="directory for reference witness traces")
    parser.add_argument("--parts", type=comma_list(str), default=None,
                        help=f"only these parts, comma-separated (default all: {','.join(check.PARTS)})")
    parser.add_argument("--json", action="store_true", help="machine-readable results on stdout")
    add_progress(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    only = tuple(args.parts or check.PARTS)
    unknown = [p for p in only if p not in check.PARTS]
    if unknown:
        raise UsageError(f"unknown part {unknown[0]!r}; parts: {', '.join(check.PARTS)}")
    bar = Progress(len(set(only)), label="check", unit="parts", enabled=not args.no_progress)

    def on_part(part: check.Part) -> None:
        bar.advance(1, f"{part.name} {'ok' if part.ok else 'FAILED'} ({part.seconds:.1f} s)")
        if not args.json:
            bar.clear()
            print(check.line(part), flush=True)

    parts = check.run(args.out, on_part, on_progress=bar.note, only=only)
    bar.finish()
    ok = all(p.ok for p in parts)
    if args.json:
        print(json.dumps({"ok": ok, "wall_s": round(sum(p.seconds for p in parts), 1),
                          "parts": [attrs.asdict(p) for p in parts]}, indent=2))
    else:
        print(f"check: {'ok' if ok else 'FAILED'} in {sum(p.seconds for p in parts):.1f} s")
    return 0 if ok else 1
