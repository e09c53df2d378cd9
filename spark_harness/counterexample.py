"""Counterexamples: a failing history, replayed on the driver, shrunk, written down.

For each violated property a fuzz run keeps its shortest failing history (seed,
profile, nodes, violating step). Here that history is re-run from its seed up to the
violating step, shrunk (spark_harness.shrink), and written to `counterexamples/` as

- `<name>.jsonl`: the shrunk history as a trace (docs/trace-format.md), checked by
  replaying it through `histories.runner.replay` before it is reported;
- `<name>.png`: its timeline picture (spark_harness.plots.timeline);
- `<name>.md`: what was violated, the exact `rmqspec replay` command, and the
  `rmqspec simulate` command that reproduces the original, unshrunk history.

`rmqspec shrink TRACE` runs the same on a trace file.
"""

from __future__ import annotations

import os
import time
from typing import Any

from histories import files, runner, shell
from histories import trace as trace_mod
from reference_impl import core
from reference_impl.core import chooser, codec
from spark_harness import plots, shrink
from spark_harness.history import HistorySpec, config_json, config_of
from spark_harness.plan import load_imports


class StepsChooser:
    """Feeds recorded steps (trace encoding), decoding each in the world it meets."""

    def __init__(self, steps: list[dict]) -> None:
        self.steps = iter(steps)

    def choose(self, w: core.World) -> Any | None:
        d = next(self.steps, None)
        return None if d is None else codec.decode_event(w, d)


def display_path(path: str) -> str:
    """Relative to the working directory when inside it (commands stay short), else absolute."""
    rel = os.path.relpath(path)
    return os.path.abspath(path) if rel.startswith("..") else rel


def _imports(imports: tuple[str, ...]) -> list[str]:
    return [a for m in imports for a in ("--import", m)]


def replay_command(path: str, imports: tuple[str, ...] = ()) -> str:
    return shell.command("replay", *_imports(imports), path)


def simulate_command(spec: HistorySpec, steps: int, imports: tuple[str, ...] = ()) -> str:
    config = ["--config", config_json(spec.overrides)] if spec.overrides else []
    return shell.command("simulate", *_imports(imports), "--protocol", spec.protocol, "--nodes",
                         str(spec.nodes), "--seed", str(spec.seed), "--faults", spec.profile, "--steps", str(steps),
                         *config)


def write(cfg: core.WorldConfig, result: shrink.ShrinkResult, target: shrink.Target, directory: str, name: str,
          origin: dict, imports: tuple[str, ...] = (), timing: dict | None = None) -> dict:
    """Write the shrunk history's trace, picture and note; return what the report lists.
    `timing`, if given, adds the seconds spent drawing the picture to its `plots_s`."""
    files.out_folder(directory)
    steps, chosen = shrink.steps_of(cfg, result.choices, target, result.until_ms)
    path = os.path.join(directory, name + ".jsonl")
    extra = {"shrunk": {"property": target.property, "expected": target.expected, "chosen_steps": chosen,
                        "from": origin}}
    with files.atomic(path) as f:
        writer = trace_mod.TraceWriter(f, core.init(cfg), None, extra)
        run = runner.run(cfg, StepsChooser(steps).choose, len(steps), hooks=(writer.step,))
        writer.close(run.summary())
    with open(path, encoding="utf-8") as f:
        check = runner.replay(f)
    got = [v for v in check.run.violations if v.property == target.property]
    verified = (check.mismatch is None and bool(got) and (got[0].expected is not None) == target.expected)
    violation = got[0] if got else None
    faults = sum(1 for _, d in result.choices if d.get("kind") in shrink.FAULT_KINDS)
    rel = display_path(path)
    entry = {
        "property": target.property, "expected": target.expected, "protocol": cfg.protocol,
        "trace": rel, "replay": replay_command(rel, imports),
        "original_events": result.original, "choices": len(result.choices), "faults": faults,
        "trace_steps": len(steps), "violating_step": violation.step if violation else None,
        "detail": violation.detail if violation else None, "cause": violation.expected if violation else None,
        "shrink_replays": result.attempts, "shrink_steps": result.steps, "shrink_budget": result.budget,
        "one_minimal": not result.exhausted,
        "verified": verified, "from": origin,
    }
    if plots.available():
        start = time.perf_counter()
        png = plots.timeline(path, os.path.join(directory, name + ".png"),
                             f"{cfg.protocol} {target.property}: {len(result.choices)} chosen events "
                             f"({faults} faults) of {result.original}, {len(steps)} steps",
                             violation.step if violation else None, target.property, tuple(chosen))
        entry["picture"] = display_path(png)
        if timing is not None:
            timing["plots_s"] = timing.get("plots_s", 0.0) + time.perf_counter() - start
    files.write_text(os.path.join(directory, name + ".md"), note(entry))
    entry["note"] = display_path(os.path.join(directory, name + ".md"))
    return entry


def note(e: dict) -> str:
    verdict = f"expected (known cause: {e['cause']})" if e["expected"] else "UNEXPECTED"
    lines = [f"# {e['protocol']} {e['property']}: {verdict}", "",
             f"{e['detail']}", "",
             f"Shrunk from {e['original_events']} events to {e['choices']} chosen events ({e['faults']} faults); "
             f"with the fault-free steps between them the trace has {e['trace_steps']} steps and the property "
             f"fails at step {e['violating_step']}."
             + ("" if e["one_minimal"] else " (The shrink budget ran out: smaller may exist.)"), ""]
    if e.get("picture"):
        lines += [f"![timeline]({os.path.basename(e['picture'])})", ""]
    lines += ["Replay the counterexample:", "", "    " + e["replay"], ""]
    if e["from"].get("simulate"):
        lines += ["Reproduce the original history (before shrinking):", "", "    " + e["from"]["simulate"], ""]
    return "\n".join(lines)


def shrink_fuzz(spec: HistorySpec, violating_step: int, target: shrink.Target,
                budget: int = shrink.DEFAULT_BUDGET, imports: tuple[str, ...] = ()) -> shrink.ShrinkResult:
    """Replay a fuzz history from its seed to its violation and shrink it (a pure
    function of its arguments: it may run on a Spark executor as well as the driver).
    Raises ValueError when the history does not fail again on replay."""

    load_imports(imports)
    cfg = config_of(spec)
    choices = shrink.record(cfg, chooser.SeededChooser(spec.seed).choose, violating_step)
    return shrink.shrink(cfg, choices, target, budget)


def write_fuzz(spec: HistorySpec, violating_step: int, target: shrink.Target, result: shrink.ShrinkResult,
               directory: str, imports: tuple[str, ...] = (), timing: dict | None = None) -> dict:
    """Write a shrunk fuzz history down (trace, picture, note) on the driver."""
    name = f"{spec.protocol}-{target.property}-seed{spec.seed}"
    origin = {"seed": spec.seed, "profile": spec.profile, "nodes": spec.nodes, "variant": dict(spec.label),
              "step": violating_step, "simulate": simulate_command(spec, violating_step, imports)}
    return write(config_of(spec), result, target, directory, name, origin, imports, timing)


def from_trace(path: str, out_path: str | None, prop_id: str | None, imports: tuple[str, ...] = (),
               budget: int = shrink.DEFAULT_BUDGET, on_attempt: Any = None) -> dict:
    """Shrink a trace file (rmqspec shrink). Raises trace_mod.TraceError for unreadable
    traces and ValueError when it violates nothing (or not `prop_id`)."""
    with open(path, "rb") as f:
        lines = trace_mod.read_lines(f, path)
        header, cfg = trace_mod.read_header(lines, path)
        steps = (trace_mod.check_step(d, path, n) for n, d in lines if "result" not in d)
        recorded = [(s.t_ms or 0, s.event) for s in steps if s.event is not None]
    target = shrink.first_violation(cfg, [e for _, e in recorded], prop_id)
    if target is None:
        raise ValueError(f"{path} violates {'no property' if prop_id is None else prop_id} when replayed")
    result = shrink.shrink(cfg, recorded, target, budget, on_attempt)
    out_path = out_path or (path.removesuffix(".jsonl")) + ".shrunk.jsonl"
    directory, base = os.path.split(out_path)
    name = base.removesuffix(".jsonl")
    origin = {"trace": display_path(path), "seed": header.get("seed")}
    return write(cfg, result, target, directory or ".", name, origin, imports)
