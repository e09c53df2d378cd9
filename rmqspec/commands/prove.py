"""`rmqspec prove`: Z3 proofs of the safety properties per version profile, reference witnesses
and CrossHair contracts."""

from __future__ import annotations

import argparse
import json
import sys
import time

import attrs

from model_checks import crosshair_run, prove
from rmqspec.commands.usage import CORES, UsageError, add_progress, float_in, int_in
from spark_harness.progress import Progress
from spec import symbolic

NAME = "prove"


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(NAME, help="Z3 proofs of the safety properties, per version profile")
    parser.add_argument("--protocol", default=None, help="one symbolic spec (default: all)")
    parser.add_argument("--profile", default=None,
                        help="one version profile (election: 4.9.4, 4.9.4+os-crash; dledger_log: 0.2.6, fixed)")
    parser.add_argument("--os-crash", action="store_true",
                        help="only the profiles with OS crashes that lose the un-fsynced currterm file")
    parser.add_argument("--out", default=None, help="directory for reference witness traces (default: a temp dir)")
    parser.add_argument("--no-witness", action="store_true", help="skip the search for reference witnesses")
    parser.add_argument("--jobs", type=int_in(1, 256), default=2,
                        help=f"worker processes, 1..256, never more than the proof tasks or this machine's "
                             f"{CORES} cores (default 2)")
    parser.add_argument("--contracts", type=float_in(0, 600), default=2.0, metavar="SECONDS",
                        help="CrossHair time per contract condition, 0..600 s; 0 skips CrossHair (default 2)")
    parser.add_argument("--json", action="store_true", help="machine-readable results on stdout")
    add_progress(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    if args.protocol is not None and args.protocol not in symbolic.names():
        raise UsageError(f"unknown protocol {args.protocol!r}; symbolic specs: {', '.join(symbolic.names())}")
    if args.contracts < 0:
        raise UsageError("--contracts must be 0 or more seconds")
    protocols = [args.protocol] if args.protocol else None
    if args.profile is not None and args.profile not in prove.profile_names(protocols):
        raise UsageError(f"unknown profile {args.profile!r}; known: {', '.join(prove.profile_names(protocols))}")
    if args.os_crash:  # the election model under OS crashes that lose the currterm file
        if protocols not in (None, ["election"]) or args.profile not in (None, "4.9.4+os-crash"):
            raise UsageError("--os-crash selects election's 4.9.4+os-crash profile; drop --protocol/--profile")
        protocols, args.profile = ["election"], "4.9.4+os-crash"
    out_dir = args.out or prove.default_out_dir()
    start = time.perf_counter()
    bar = Progress(len(prove.tasks_of(protocols, args.profile)), label="prove", unit="rows",
                   enabled=not args.no_progress)

    def on_row(r: prove.Row) -> None:
        bar.advance(1, f"{r.protocol}/{r.property} @ {r.profile}: {r.result} ({r.seconds:.1f} s)")

    rows = prove.run(protocols, out_dir, replay=not args.no_witness, profile=args.profile, jobs=args.jobs,
                     on_row=on_row)
    bar.finish()
    wall = time.perf_counter() - start
    conds, secs = [], 0.0
    if args.contracts:
        if not args.no_progress:
            n = sum(len(crosshair_run.conditions(m)) for m in crosshair_run.modules())
            print(f"prove: CrossHair over {n} contract conditions, up to {args.contracts:g} s each, "
                  f"in 2 processes ...", file=sys.stderr, flush=True)
        conds, secs = crosshair_run.run(args.contracts)
    ok = all(r.ok for r in rows) and not any(c.status == "refuted" for c in conds)
    if args.json:
        print(json.dumps({"ok": ok, "wall_s": round(wall + secs, 1), "proofs_wall_s": round(wall, 1),
                          "rows": [r.summary() for r in rows], "contracts": [attrs.asdict(c) for c in conds],
                          "contracts_seconds": round(secs, 1),
                          "contract_verdicts": [{"module": m, "contract": c, "status": s, "conditions": n}
                                                for m, c, s, n in crosshair_run.verdicts(conds)]},
                         indent=2, default=str))
    else:
        prove.print_table(rows, sys.stdout)
        if args.contracts:
            print()
            crosshair_run.print_report(conds, secs, sys.stdout)
        print(f"\nprove: {'ok' if ok else 'FAILED'} in {wall + secs:.1f} s wall ({wall:.1f} s of proofs in "
              f"{args.jobs} process(es), {sum(r.seconds for r in rows):.1f} s summed over rows"
              f"{f'; {secs:.1f} s of CrossHair' if args.contracts else ''})")
    return 0 if ok else 1
