"""`rmqspec view`: the HTML page of a trace or of a fuzz report (docs/view.md)."""

from __future__ import annotations

import argparse
import json
import os

from histories import formats, view
from rmqspec.commands.usage import UsageError, add_import
from spark_harness import report_view

NAME = "view"


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        NAME, help="an interactive HTML page to step through a trace or a fuzz report (docs/view.md)")
    parser.add_argument("path", metavar="TRACE|REPORT_DIR",
                        help="a trace (JSON Lines) or a `rmqspec fuzz --out` directory")
    parser.add_argument("--out", default=None,
                        help="the page to write (default: TRACE with .html; for a report, DIR/index.html, with one "
                             "page per counterexample next to its trace)")
    parser.add_argument("--no-replay", action="store_true",
                        help="do not replay through the reference (no send steps for arrows, no conformance line)")
    parser.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    add_import(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    try:
        if os.path.isdir(args.path):
            summary = report_view.write(args.path, args.out, replay=not args.no_replay)
        else:
            summary = view.write_trace_view(args.path, args.out, replay=not args.no_replay)
    except view.ViewError as e:
        raise UsageError(str(e)) from None
    if args.json:
        print(json.dumps(summary, indent=2))
    elif summary["kind"] == "report":
        print(f"view: wrote {formats.escape(summary['out'])} ({len(summary['pages'])} counterexample page(s), "
              f"{summary['steps']:,} steps)")
        for page in summary["pages"]:
            print(f"  {page['property']}: {formats.escape(page['out'])} ({page['steps']:,} steps)")
        for err in summary["errors"]:
            print(f"  not shown: {formats.escape(err)}")
    else:
        print(f"view: wrote {formats.escape(summary['out'])} ({summary['steps']:,} steps; violations: "
              f"{', '.join(summary['violations']) or 'none'})")
    return 0
