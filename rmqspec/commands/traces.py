"""`rmqspec simulate`, `replay` and `check-trace`: run one history, re-run a trace, and
validate a trace or an implementation's log against the reference."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from typing import Any

from histories import files, formats, impl_log, runner, scenario_file, shell, timeline, tolerant
from histories import trace as trace_mod
from reference_impl import core
from reference_impl.core import faults, inputs, scenario
from rmqspec.commands.usage import UsageError, config_overrides
from spec import properties

# --- simulate ---


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


def cmd_simulate(args: argparse.Namespace) -> int:
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



# --- replay / check-trace ---


def _open_trace(path: str) -> Any:
    """A trace to read, in binary: the line limit counts bytes and each line is decoded strictly."""
    try:
        return open(path, "rb")
    except IsADirectoryError:
        raise UsageError(f"cannot read {path}: it is a directory, not a trace") from None
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None


def cmd_replay(args: argparse.Namespace) -> int:
    hooks: tuple = ()
    if not args.quiet and not args.json:
        print(f"rmqspec replay: {formats.escape(args.trace)}")
        hooks = (timeline.Timeline(sys.stdout, args.max_lines),)
    with _open_trace(args.trace) as f:
        result = runner.replay(f, hooks, args.trace)
    return _report_replay(result, args.json, "replay")


def cmd_check_trace(args: argparse.Namespace) -> int:
    with _open_trace(args.trace) as f:
        if impl_log.is_log(f):
            return _check_log(f, args)
        if args.tolerant:
            raise UsageError(f"{args.trace} is a reference trace ({trace_mod.SCHEMA}), checked strictly; "
                             f"tolerant validation reads an implementation log ({impl_log.SCHEMA}, docs/conformance.md)")
        result = runner.replay(f, (), args.trace)
    return _report_replay(result, args.json, "check-trace")


def _check_log(f: Any, args: argparse.Namespace) -> int:
    opts = tolerant.Options()
    for name in ("slack_ms", "max_depth", "max_states", "beam"):
        if getattr(args, name) is not None:
            setattr(opts, name, getattr(args, name))
    log = impl_log.read(f, args.trace)
    show = None
    if len(log.lines) > 2000:
        def show(done: int, total: int) -> None:
            print(f"check-trace: {done}/{total} lines", file=sys.stderr, flush=True)
    result = tolerant.check(log, opts, show)
    if args.json:
        print(json.dumps(result.summary(log.ids), indent=2, default=str))
    else:
        print(result.text(log))
    return 0 if result.accepted else 1


def _report_replay(result: Any, as_json: bool, verb: str) -> int:
    mm = result.mismatch
    out = {
        "ok": result.ok(), "steps": result.run.steps, "t_ms": result.run.world.now,
        "mismatch": None if mm is None else {"step": mm.step, "line": mm.line, "message": mm.message,
                                             "note": trace_mod.written_elsewhere(result.header)},
        "violations": [v.property for v in result.run.violations],
        "unexpected_violations": [v.property for v in result.run.unexpected],
    }
    if as_json:
        print(json.dumps(out, indent=2))
    elif mm is not None:
        print(f"{verb}: MISMATCH at step {mm.step} (line {mm.line}): {formats.escape(mm.message)}")
        note = trace_mod.written_elsewhere(result.header)
        if note:
            print(f"  note: {formats.escape(note)}")
    else:
        print(f"{verb}: {result.run.steps} steps match the reference "
              f"(t={result.run.world.now} ms); unexpected violations: {out['unexpected_violations'] or 'none'}")
        for v in result.run.violations:
            print(f"  {v.property} at step {v.step}: {'expected: ' + v.expected if v.expected else 'UNEXPECTED'} "
                  f"- {formats.escape(v.detail)}")
    return 0 if result.ok() else 1

