"""`rmqspec prove`, `explore` and `check`: Z3 proofs, exhaustive exploration, and the quick
CI gate that runs them with the suites."""

from __future__ import annotations

import argparse
import json
import sys
import time

import attrs

from histories.fast import Unsupported
from model_checks import check, crosshair_run, explore, explore_fast, prove
from reference_impl import core
from reference_impl.core import faults
from rmqspec.commands.usage import UsageError
from spark_harness.progress import Progress
from spec import symbolic


def cmd_prove(args: argparse.Namespace) -> int:
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


def cmd_explore(args: argparse.Namespace) -> int:
    if args.protocol not in core.protocol_names():
        raise UsageError(f"unknown protocol {args.protocol!r}; known: {', '.join(core.protocol_names())}")
    if args.nodes > 7:
        raise UsageError("--nodes must be at most 7 for exhaustive exploration")
    if args.draws == "extremes":
        draws = explore.EXTREMES
    else:
        try:
            k = int(args.draws)
        except ValueError:
            raise UsageError("--draws must be 'extremes' or a positive integer") from None
        if not 1 <= k <= 64:
            raise UsageError("--draws must be between 1 and 64")
        draws = tuple(sorted({(core.DRAW_SPAN - 1) * i // max(1, k - 1) for i in range(k)}))
    coverage = args.coverage
    try:
        cfg = core.protocol(args.protocol).make_config(args.nodes, {}).evolve(
            profile=faults.profile(args.faults, args.protocol))
    except (KeyError, ValueError) as e:
        raise UsageError(str(e.args[0] if e.args else e)) from None
    if args.engine == "fast":
        if args.coverage:
            raise UsageError("--coverage needs --engine reference (it samples reference histories)")
        try:
            ex = explore_fast.FastExplorer(cfg, args.depth, args.max_term, not args.no_symmetry, draws,
                                           args.max_states)
        except Unsupported as e:
            raise UsageError(f"--engine fast: {e}") from None
    else:
        ex = explore.Explorer(cfg, args.depth, args.max_term, not args.no_symmetry, draws, args.max_states)
    bar = Progress(args.depth, label="explore", unit="levels (each larger than the last)",
                   enabled=not args.no_progress)
    res = ex.run(lambda depth, new, seen: bar.update(depth, f"{seen:,} distinct states, {new:,} new at depth {depth}"))
    bar.finish()
    if coverage:
        ex.random_coverage(coverage)
    if args.out and res.found:
        explore.write_traces(ex, args.out)
    if args.json:
        print(json.dumps(res.summary(), indent=2))
    else:
        explore.print_report(res, sys.stdout)
    return 1 if res.unexpected() else 0


def cmd_check(args: argparse.Namespace) -> int:
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

