"""`rmqspec simulate`: one history of a protocol (or a scenario file), a readable timeline, a
summary and an optional trace."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from typing import Any

from histories import files, formats, runner, scenario_file, shell, timeline
from reference_impl import core
from reference_impl.core import faults, inputs, scenario
from rmqspec.commands.usage import MAX_LINES, MAX_STEPS, UsageError, add_import, config_overrides, int64, int_in
from spec import properties

NAME = "simulate"


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(NAME, help="run one history and print a timeline")
    parser.add_argument("--protocol", default=None, help=f"one of: {', '.join(core.protocol_names())}")
    parser.add_argument("--nodes", type=int_in(1, 64), default=None,
                        help="number of nodes, 1..64 (default 3; offsets: 2)")
    parser.add_argument("--seed", type=int64, default=None,
                        help="seed of the event chooser, a 64-bit integer (default 1)")
    parser.add_argument("--steps", type=int_in(1, MAX_STEPS), default=None,
                        help=f"maximum events, 1..{MAX_STEPS:,} (default 5000; with --script 1,000,000)")
    parser.add_argument("--faults", default=None,
                        help=f"fault profile: {', '.join(faults.names())} (some protocols add their own)")
    parser.add_argument("--script", default=None, help="scenario file (docs/scenario-format.md)")
    parser.add_argument("--config", default=None,
                        help="protocol config overrides as JSON, e.g. '{\"max_heart_beat_leak\": 4}'")
    parser.add_argument("--trace", default=None, help="write the trace (JSON Lines) to this file")
    parser.add_argument("--max-lines", type=int_in(1, MAX_LINES), default=400,
                        help=f"timeline lines to print, 1..{MAX_LINES:,} (default 400)")
    parser.add_argument("--quiet", action="store_true", help="summary only, no timeline")
    parser.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    add_import(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    cfg, seed, steps, until_ms, title = _simulate_config(args)
    hooks: tuple = ()
    show = not args.quiet and not args.json
    if show:
        print(f"rmqspec simulate: {formats.escape(title)}")
        hooks = (timeline.Timeline(sys.stdout, args.max_lines),)
    try:
        # Written as it is produced, in place as far as it got if the run is interrupted.
        with contextlib.ExitStack() as stack:
            trace_out = stack.enter_context(files.atomic(args.trace, keep_partial=True)) if args.trace else None
            result = runner.simulate(cfg, seed, steps, until_ms, trace_out=trace_out, hooks=hooks)
    except OSError as e:
        raise UsageError(f"cannot write {args.trace}: {e.strerror}") from None
    summary = result.summary() | {"protocol": cfg.protocol, "nodes": list(cfg.ids), "seed": seed,
                                  "faults": cfg.profile.name, "trace": args.trace}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print_summary(result, args.trace, args.imports)
    return 0 if result.ok() else 1


def _simulate_config(args: argparse.Namespace) -> tuple[core.WorldConfig, int, int, int | None, str]:
    if args.script:
        if args.protocol or args.nodes or args.config:
            raise UsageError("--script sets protocol, nodes and config; drop --protocol/--nodes/--config")
        sc = scenario_file.load(args.script)
        cfg = sc.cfg
        if args.faults:
            cfg = cfg.evolve(profile=_profile(args.faults, cfg.protocol))
        seed = args.seed if args.seed is not None else sc.seed
        return cfg, seed, args.steps or 1_000_000, sc.until_ms, sc.name
    name = args.protocol or "election"
    try:
        p = core.protocol(name)
    except KeyError:
        raise UsageError(f"unknown protocol {name!r}; known: {', '.join(core.protocol_names())}") from None
    overrides = config_overrides(args.config) or {}
    nodes = args.nodes or p.default_nodes
    _profile(args.faults or "none", name)  # an unknown profile is refused by name
    cfg = make_config(p, nodes, overrides, "--config", args.faults or "none")
    seed = args.seed if args.seed is not None else 1
    return cfg, seed, args.steps or 5000, None, f"{name}, {nodes} nodes, seed {seed}, faults {cfg.profile.name}"


def _profile(name: str, protocol: str) -> Any:
    try:
        return faults.profile(name, protocol)
    except KeyError as e:
        raise UsageError(str(e.args[0])) from None


def make_config(p: Any, nodes: int, overrides: dict, where: str, profile: str = "none") -> core.WorldConfig:
    """The protocol's world config with `overrides` (the generic fault keys among them,
    core.configure), or bad input naming the field."""
    try:
        return core.world_config(p.name, nodes, profile, overrides)
    except inputs.InputError as e:
        raise formats.FormatError(where, None, e.path, e.message) from None
    except (KeyError, TypeError, ValueError) as e:
        raise formats.FormatError(where, None, "", str(e.args[0] if e.args else e)) from None


def print_summary(result: Any, trace_path: str | None, imports: list[str] | tuple[str, ...] = ()) -> None:
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
            print(f"  {v.property} violated at step {v.step} (t={v.t_ms} ms), {tag}: {formats.escape(v.detail)}")
    print(f"  properties: {props_checked} checked at every step, {len(result.unexpected)} unexpected violation(s)")
    for e in result.expectations:
        if not e.ok:
            print(f"  EXPECTATION FAILED: {formats.escape(e.message)}")
    if result.expectations:
        passed = sum(e.ok for e in result.expectations)
        print(f"  expectations: {passed}/{len(result.expectations)} held")
    if trace_path:
        replay = shell.command("replay", *(a for m in imports for a in ("--import", m)), trace_path)
        print(f"  trace: {formats.escape(trace_path)}  ({formats.escape(replay)})")


def _props(protocol: str) -> list:
    return properties.for_protocol(protocol)
