"""The `rmqspec` command line. It parses arguments and dispatches; nothing else.

Exit codes: 0 ok, 1 an unexpected property violation (or a failed check), 2 bad input
(one line on stderr, no traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, NoReturn

from histories import runner, scenario_file, timeline
from histories import trace as trace_mod
from model_checks import check, crosshair_run, explore, prove
from reference_impl import core
from reference_impl.core import codec, faults, scenario
from rmqspec import bench
from spark_harness import counterexample, fuzz, plan, shrink
from spark_harness.java import JavaMissing
from spec import properties, symbolic


class UsageError(Exception):
    """Bad input: reported in one line, exit 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {v}")
    return v


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def _csv(kind: type) -> Any:
    def parse(text: str) -> list:
        try:
            out = [kind(x) for x in text.split(",") if x.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a comma-separated list of {kind.__name__}: {text!r}") from None
        if not out:
            raise argparse.ArgumentTypeError("empty list")
        return out
    return parse


def _add_import(p: argparse.ArgumentParser) -> None:
    p.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                   help="import MODULE first (it may register extra protocols, e.g. a test mutant)")


def build_parser() -> Parser:
    parser = Parser(prog="rmqspec", description="RocketMQ HA protocols: reference, properties, checkers.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    sim = sub.add_parser("simulate", help="run one history and print a timeline")
    sim.add_argument("--protocol", default=None, help=f"one of: {', '.join(core.protocol_names())}")
    sim.add_argument("--nodes", type=_positive, default=None, help="number of nodes (default 3; offsets: 2)")
    sim.add_argument("--seed", type=_int, default=None, help="seed of the event chooser (default 1)")
    sim.add_argument("--steps", type=_positive, default=None, help="maximum events (default 5000)")
    sim.add_argument("--faults", default=None, help=f"fault profile: {', '.join(faults.names())} (some protocols add their own)")
    sim.add_argument("--script", default=None, help="scenario file (docs/scenario-format.md)")
    sim.add_argument("--config", default=None, help="protocol config overrides as JSON, e.g. '{\"max_heart_beat_leak\": 4}'")
    sim.add_argument("--trace", default=None, help="write the trace (JSON Lines) to this file")
    sim.add_argument("--max-lines", type=_positive, default=400, help="timeline lines to print (default 400)")
    sim.add_argument("--quiet", action="store_true", help="summary only, no timeline")
    sim.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    _add_import(sim)

    rep = sub.add_parser("replay", help="re-run a trace through the reference and compare every step")
    rep.add_argument("trace")
    rep.add_argument("--max-lines", type=_positive, default=400)
    rep.add_argument("--quiet", action="store_true")
    rep.add_argument("--json", action="store_true")
    _add_import(rep)

    chk = sub.add_parser("check-trace", help="validate a trace (e.g. from another implementation) against the reference")
    chk.add_argument("trace")
    chk.add_argument("--json", action="store_true")
    _add_import(chk)

    fz = sub.add_parser("fuzz", help="many randomized histories on Spark (docs/fuzzing.md)")
    fz.add_argument("--protocol", default="all",
                    help=f"one of: {', '.join(core.protocol_names())}; a comma-separated list; or all (default)")
    fz.add_argument("--histories", type=_positive, default=1000, help="histories per protocol (default 1000)")
    fz.add_argument("--steps", type=_positive, default=None,
                    help="at most this many events per history (default 50000: a safety cap; "
                         "histories end 60 s after faults stop)")
    fz.add_argument("--seed", type=_int, default=1, help="seed of the first history (default 1)")
    fz.add_argument("--master", default="local[*]",
                    help="Spark master: local[N], spark://host:port, ...; 'none' runs in this process (default local[*])")
    fz.add_argument("--out", default="out/fuzz", help="output directory (default out/fuzz)")
    fz.add_argument("--engine", choices=("fast", "reference"), default="fast",
                    help="fast: a protocol's compiled fast world where one exists, judged by the reference "
                         "(every violation re-run); reference: the reference only (default fast)")
    fz.add_argument("--coverage-sample", default=None, metavar="N|all",
                    help="with the fast engine: histories per protocol the reference also runs for coverage and "
                         "distinct states (default 200)")
    fz.add_argument("--faults", type=_csv(str), default=None,
                    help="fault profiles, comma-separated, or 'all' (default: every profile with faults)")
    fz.add_argument("--nodes", type=_csv(int), default=None, help="cluster sizes, comma-separated (default per protocol)")
    fz.add_argument("--config", default=None,
                    help="protocol config overrides for every history, as JSON (as simulate --config), "
                         "e.g. '{\"broker_role\": \"SYNC_MASTER\"}'")
    fz.add_argument("--parquet", default=None, help="where Spark writes per-history rows (default OUT/histories.parquet)")
    fz.add_argument("--shrink-budget", type=_positive, default=None, help="replayed steps per counterexample")
    fz.add_argument("--no-counterexamples", action="store_true", help="do not replay and shrink failing histories")
    fz.add_argument("--no-progress", action="store_true", help="no progress bar")
    fz.add_argument("--no-plots", action="store_true", help="no report plots (report.md without pictures)")
    fz.add_argument("--list-profiles", action="store_true", help="list the fault profiles per protocol and exit")
    fz.add_argument("--json", action="store_true", help="print report.json instead of the summary")
    _add_import(fz)

    shr = sub.add_parser("shrink", help="minimise a failing trace to the fewest events that still fail")
    shr.add_argument("trace")
    shr.add_argument("--property", default=None, help="the property to keep violated (default: the first unexpected)")
    shr.add_argument("--out", default=None, help="where to write the shrunk trace (default TRACE.shrunk.jsonl)")
    shr.add_argument("--budget", type=_positive, default=None, help="replayed steps at most")
    shr.add_argument("--json", action="store_true")
    _add_import(shr)

    prv = sub.add_parser("prove", help="Z3 proofs of the safety properties, per version profile")
    prv.add_argument("--protocol", default=None, help="one symbolic spec (default: all)")
    prv.add_argument("--profile", default=None,
                     help="one version profile (election: 4.9.4, 4.9.4+os-crash; dledger_log: 0.2.6, fixed)")
    prv.add_argument("--os-crash", action="store_true",
                     help="only the profiles with OS crashes that lose the un-fsynced currterm file")
    prv.add_argument("--out", default=None, help="directory for reference witness traces (default: a temp dir)")
    prv.add_argument("--no-witness", action="store_true", help="skip the search for reference witnesses")
    prv.add_argument("--jobs", type=_positive, default=2, help="worker processes (default 2)")
    prv.add_argument("--contracts", type=float, default=2.0, metavar="SECONDS",
                     help="CrossHair time per contract condition; 0 skips CrossHair (default 2)")
    prv.add_argument("--json", action="store_true")

    exp = sub.add_parser("explore", help="exhaustive exploration with symmetry reduction")
    exp.add_argument("--protocol", default="election")
    exp.add_argument("--nodes", type=_positive, default=3)
    exp.add_argument("--depth", type=_positive, default=8, help="events from the initial state (default 8)")
    exp.add_argument("--max-term", type=_int, default=2, help="do not expand states beyond this term (default 2)")
    exp.add_argument("--faults", default="none", help="fault profile (default none)")
    exp.add_argument("--draws", default="extremes", help="tick draws: 'extremes' (0 and 65535) or N evenly spaced")
    exp.add_argument("--no-symmetry", action="store_true")
    exp.add_argument("--max-states", type=_positive, default=None, help="stop after this many distinct states")
    exp.add_argument("--coverage", default="", help="random histories to compare, e.g. 10,100,1000")
    exp.add_argument("--out", default=None, help="write counterexample traces here")
    exp.add_argument("--json", action="store_true")

    gate = sub.add_parser("check", help="the quick CI gate: suites, proofs, conformance, contracts, exploration")
    gate.add_argument("--out", default=None, help="directory for reference witness traces")
    gate.add_argument("--json", action="store_true")

    bench = sub.add_parser("bench", help="throughput of the reference worlds and the fast worlds")
    bench.add_argument("--seconds", type=float, default=3.0, help="time per measurement (default 3)")
    bench.add_argument("--protocol", default=None, help="only this protocol")
    bench.add_argument("--json", action="store_true")
    bench.add_argument("--fuzz", action="store_true",
                       help="fuzz throughput: one process, a process pool and Spark local[N] in one run")
    bench.add_argument("--histories", type=_positive, default=None, help="with --fuzz: histories per engine")
    bench.add_argument("--cores", type=_positive, default=None, help="with --fuzz: processes / Spark cores")
    bench.add_argument("--engine", choices=("fast", "reference"), default="fast",
                       help="with --fuzz: the world the histories run on (default fast, where the protocol has one)")
    _add_import(bench)
    return parser


def _load_imports(args: argparse.Namespace) -> None:
    import importlib

    for name in getattr(args, "imports", []):
        try:
            importlib.import_module(name)
        except ImportError as e:
            raise UsageError(f"cannot import {name}: {e}") from None


# --- simulate ---


def _simulate_config(args: argparse.Namespace) -> tuple[core.WorldConfig, int, int, int | None, str]:
    if args.script:
        if args.protocol or args.nodes or args.config:
            raise UsageError("--script sets protocol, nodes and config; drop --protocol/--nodes/--config")
        sc = scenario_file.load(args.script)
        cfg = sc.cfg
        if args.faults:
            cfg = cfg.evolve(profile=faults.profile(args.faults, cfg.protocol))
        seed = args.seed if args.seed is not None else sc.seed
        return cfg, seed, args.steps or 1_000_000, sc.until_ms, sc.name
    name = args.protocol or "election"
    try:
        p = core.protocol(name)
    except KeyError:
        raise UsageError(f"unknown protocol {name!r}; known: {', '.join(core.protocol_names())}") from None
    overrides = _config_overrides(args.config) or {}
    nodes = args.nodes or p.default_nodes
    if nodes > 64:
        raise UsageError("--nodes must be at most 64")
    try:
        cfg = p.make_config(nodes, overrides).evolve(profile=faults.profile(args.faults or "none", name))
    except (KeyError, TypeError, ValueError) as e:
        raise UsageError(str(e.args[0] if e.args else e)) from None
    seed = args.seed if args.seed is not None else 1
    return cfg, seed, args.steps or 5000, None, f"{name}, {nodes} nodes, seed {seed}, faults {cfg.profile.name}"


def _config_overrides(text: str | None) -> dict | None:
    """`--config`: protocol config overrides as a JSON object (None when not given)."""
    if not text:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"--config is not JSON: {e}") from None
    if not isinstance(value, dict):
        raise UsageError("--config must be a JSON object")
    return value


def cmd_simulate(args: argparse.Namespace) -> int:
    cfg, seed, steps, until_ms, title = _simulate_config(args)
    hooks: tuple = ()
    show = not args.quiet and not args.json
    if show:
        print(f"rmqspec simulate: {title}")
        hooks = (timeline.Timeline(sys.stdout, args.max_lines),)
    trace_out = None
    if args.trace:
        try:
            trace_out = open(args.trace, "w", encoding="utf-8")
        except OSError as e:
            raise UsageError(f"cannot write {args.trace}: {e.strerror}") from None
    try:
        result = runner.simulate(cfg, seed, steps, until_ms, trace_out=trace_out, hooks=hooks)
    finally:
        if trace_out is not None:
            trace_out.close()
    summary = result.summary() | {"protocol": cfg.protocol, "nodes": list(cfg.ids), "seed": seed,
                                  "faults": cfg.profile.name, "trace": args.trace}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print_summary(result, args.trace)
    return 0 if result.ok() else 1


def print_summary(result: Any, trace_path: str | None) -> None:
    w = result.world
    print()
    print(f"summary: {result.steps} events, {w.now / 1000:.1f} s simulated, stopped: {result.stopped}")
    final = scenario.observed(w)
    final_line = core.protocol(w.cfg.protocol).final_line
    print("  final:  " + (final_line(final) if final_line is not None else "  ".join(
        f"{n}:{o.get('role') or 'down'}" + (f"@{o['term']}" if o.get("term") is not None else "")
        for n, o in final.items())))
    if result.measures:
        print("  stats:  " + ", ".join(f"{k}={v}" for k, v in result.measures.items()))
    props_checked = len(_props(w.cfg.protocol))
    if result.violations:
        for v in result.violations:
            tag = f"expected ({v.expected})" if v.expected else "UNEXPECTED"
            print(f"  {v.property} violated at step {v.step} (t={v.t_ms} ms), {tag}: {v.detail}")
    print(f"  properties: {props_checked} checked at every step, {len(result.unexpected)} unexpected violation(s)")
    for e in result.expectations:
        if not e.ok:
            print(f"  EXPECTATION FAILED: {e.message}")
    if result.expectations:
        passed = sum(e.ok for e in result.expectations)
        print(f"  expectations: {passed}/{len(result.expectations)} held")
    if trace_path:
        print(f"  trace: {trace_path}  (rmqspec replay {trace_path})")


def _props(protocol: str) -> list:
    return properties.for_protocol(protocol)


# --- replay / check-trace ---


def _open_trace(path: str) -> Any:
    try:
        return open(path, encoding="utf-8", errors="strict")
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None


def cmd_replay(args: argparse.Namespace) -> int:
    hooks: tuple = ()
    if not args.quiet and not args.json:
        print(f"rmqspec replay: {args.trace}")
        hooks = (timeline.Timeline(sys.stdout, args.max_lines),)
    with _open_trace(args.trace) as f:
        result = runner.replay(f, hooks)
    return _report_replay(result, args.json, "replay")


def cmd_check_trace(args: argparse.Namespace) -> int:
    with _open_trace(args.trace) as f:
        result = runner.replay(f)
    return _report_replay(result, args.json, "check-trace")


def _report_replay(result: Any, as_json: bool, verb: str) -> int:
    mm = result.mismatch
    out = {
        "ok": result.ok(), "steps": result.run.steps, "t_ms": result.run.world.now,
        "mismatch": None if mm is None else {"step": mm.step, "line": mm.line, "message": mm.message},
        "violations": [v.property for v in result.run.violations],
        "unexpected_violations": [v.property for v in result.run.unexpected],
    }
    if as_json:
        print(json.dumps(out, indent=2))
    elif mm is not None:
        print(f"{verb}: MISMATCH at step {mm.step} (line {mm.line}): {mm.message}")
    else:
        print(f"{verb}: {result.run.steps} steps match the reference "
              f"(t={result.run.world.now} ms); unexpected violations: {out['unexpected_violations'] or 'none'}")
        for v in result.run.violations:
            print(f"  {v.property} at step {v.step}: {'expected: ' + v.expected if v.expected else 'UNEXPECTED'} "
                  f"- {v.detail}")
    return 0 if result.ok() else 1


def _coverage_sample(text: str | None) -> int | None:
    if text is None:
        return plan.COVERAGE_SAMPLE
    if text == "all":
        return None
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise UsageError(f"--coverage-sample must be a number of histories or all, not {text!r}")
    return n


def cmd_fuzz(args: argparse.Namespace) -> int:
    if args.list_profiles:
        print(fuzz.profiles_table())
        return 0
    config = _config_overrides(args.config)
    opts = fuzz.FuzzOptions(protocol=args.protocol, histories=args.histories, seed=args.seed, master=args.master,
                            config=config, engine=args.engine, coverage_sample=_coverage_sample(args.coverage_sample),
                            out=args.out, faults=args.faults, nodes=args.nodes, imports=tuple(args.imports),
                            parquet=args.parquet, counterexamples=not args.no_counterexamples,
                            progress=not args.no_progress and not args.json, plots=not args.no_plots)
    if args.steps:
        opts.steps = args.steps
    if args.shrink_budget:
        opts.shrink_budget = args.shrink_budget
    try:
        result = fuzz.run(opts, log=sys.stderr if args.json else sys.stdout)
    except plan.PlanError as e:
        raise UsageError(str(e)) from None
    except JavaMissing as e:
        raise UsageError(str(e)) from None
    except OSError as e:
        raise UsageError(f"cannot write {args.out}: {e.strerror}") from None
    except Exception as e:  # Spark or its JVM failed (unreachable master, dead executors): one line, no trace
        if type(e).__module__.startswith(("py4j", "pyspark")):
            raise UsageError(f"Spark failed: {str(e).strip().splitlines()[0][:300]}") from None
        raise
    if args.json:
        print(json.dumps(result.report, indent=2))
    return result.exit_code


def cmd_shrink(args: argparse.Namespace) -> int:
    try:
        entry = counterexample.from_trace(args.trace, args.out, args.property, tuple(args.imports),
                                          args.budget or shrink.DEFAULT_BUDGET)
    except FileNotFoundError:
        raise UsageError(f"cannot read {args.trace}") from None
    except (ValueError, KeyError) as e:
        raise UsageError(str(e.args[0] if e.args else e)) from None
    if args.json:
        print(json.dumps(entry, indent=2))
    else:
        verdict = "expected" if entry["expected"] else "unexpected"
        print(f"shrink: {entry['property']} ({verdict}) kept violated with {entry['choices']} chosen events "
              f"({entry['faults']} faults) of {entry['original_events']}; {entry['trace_steps']} steps in the trace")
        print(f"  trace: {entry['trace']}" + (f"  picture: {entry['picture']}" if entry.get("picture") else ""))
        print(f"  {entry['replay']}")
    return 0 if entry["verified"] else 1


def cmd_bench(args: argparse.Namespace) -> int:
    if args.fuzz:

        try:
            result = bench.fuzz(args.protocol or "election", args.histories, args.cores, args.engine)
        except JavaMissing as e:
            raise UsageError(str(e)) from None
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            bench.print_fuzz(result)
        return 0
    if args.protocol is not None and args.protocol not in core.protocol_names():
        raise UsageError(f"unknown protocol {args.protocol!r}; known: {', '.join(core.protocol_names())}")
    rows = bench.run(args.seconds, args.protocol)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        bench.print_table(rows)
    return 0


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
    rows = prove.run(protocols, out_dir, replay=not args.no_witness, profile=args.profile, jobs=args.jobs)
    wall = time.perf_counter() - start
    conds, secs = crosshair_run.run(args.contracts) if args.contracts else ([], 0.0)
    ok = all(r.ok for r in rows) and not any(c.status == "counterexample" for c in conds)
    if args.json:
        print(json.dumps({"ok": ok, "wall_s": round(wall + secs, 1), "rows": [r.summary() for r in rows],
                          "contracts": [c.__dict__ for c in conds], "contracts_seconds": round(secs, 1)},
                         indent=2, default=str))
    else:
        prove.print_table(rows, sys.stdout)
        if args.contracts:
            print()
            crosshair_run.print_report(conds, secs, sys.stdout)
        print(f"\nprove: {'ok' if ok else 'FAILED'} in {wall + secs:.1f} s wall ({sum(r.seconds for r in rows):.1f} s of "
              f"proofs{f', {secs:.1f} s of CrossHair' if args.contracts else ''})")
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
    try:
        coverage = [int(x) for x in args.coverage.split(",") if x.strip()]
    except ValueError:
        raise UsageError("--coverage takes comma-separated numbers of histories") from None
    if any(c <= 0 for c in coverage):
        raise UsageError("--coverage numbers must be positive")
    try:
        cfg = core.protocol(args.protocol).make_config(args.nodes, {}).evolve(
            profile=faults.profile(args.faults, args.protocol))
    except (KeyError, ValueError) as e:
        raise UsageError(str(e.args[0] if e.args else e)) from None
    ex = explore.Explorer(cfg, args.depth, args.max_term, not args.no_symmetry, draws, args.max_states)
    res = ex.run()
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
    show = None if args.json else (lambda part: print(check.line(part), flush=True))
    parts = check.run(args.out, show)
    ok = all(p.ok for p in parts)
    if args.json:
        print(json.dumps({"ok": ok, "parts": [p.__dict__ for p in parts]}, indent=2))
    else:
        print(f"check: {'ok' if ok else 'FAILED'} in {sum(p.seconds for p in parts):.1f} s")
    return 0 if ok else 1


COMMANDS = {"simulate": cmd_simulate, "replay": cmd_replay, "check-trace": cmd_check_trace, "bench": cmd_bench,
            "fuzz": cmd_fuzz, "shrink": cmd_shrink, "prove": cmd_prove, "explore": cmd_explore, "check": cmd_check}


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 2
        _load_imports(args)
        return COMMANDS[args.command](args)
    except UsageError as e:
        print(f"rmqspec: error: {e}", file=sys.stderr)
        return 2
    except (scenario.ScenarioError, trace_mod.TraceError, codec.DecodeError) as e:
        print(f"rmqspec: error: {e}", file=sys.stderr)
        return 2
    except UnicodeDecodeError:
        print("rmqspec: error: input is not UTF-8 text", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
