"""Reference witnesses of violations the symbolic model finds.

A BMC trace of the symbolic model abstracts time away: its actions happen in an
order the reference's timers may not allow (every DLedger member starts a vote round
at time 0, before any message can arrive). So the witness is found by search on the
reference itself: seeded histories whose fault profile injects exactly the fault
kinds the BMC trace uses (e.g. OS crashes and restarts), until the property monitor
reports the same property violated with its known cause. The history, cut at the
violation, is written as a trace and replayed through `rmqspec replay`'s machinery to
confirm it.
"""

from __future__ import annotations

import os
import time

from histories import files, runner, scenario_file
from reference_impl import core
from reference_impl.core import chooser
from spec import symbolic as sy

SEARCH_SECONDS = 20.0
HISTORY_STEPS = 3000


def witness_profile(spec: sy.SymbolicSpec, trace: list[dict]) -> core.FaultProfile:
    kinds = {spec.fault_actions[st["action"]] for st in trace if st["action"] in spec.fault_actions}
    weights = {k: 0.02 for k in kinds}
    if kinds & {"crash", "os_crash", "disk_loss"}:
        weights["restart"] = 0.1
    return core.FaultProfile(name="witness", delay_ms=(1, 20), loss=0.02, **weights,
                             description="the fault kinds of a BMC trace, for a reference witness")


def reference_history(spec: sy.SymbolicSpec, prop: str, trace: list[dict], out_dir: str | None,
                      nodes: int = 3, seconds: float = SEARCH_SECONDS) -> dict:
    p = core.protocol(spec.reference)
    cfg = p.make_config(nodes, {}).evolve(profile=witness_profile(spec, trace))
    deadline = time.perf_counter() + seconds
    seed = 0
    while time.perf_counter() < deadline:
        seed += 1
        result = runner.run(cfg, chooser.SeededChooser(seed).choose, HISTORY_STEPS)
        hit = next((v for v in result.violations if v.property == prop), None)
        if hit is None:
            continue
        out = {"found": True, "seed": seed, "steps": hit.step, "expected": hit.expected,
               "faults": sorted(k for k in core.FAULT_KINDS if getattr(cfg.profile, k, 0))}
        if out_dir is not None:
            files.out_folder(out_dir)
            path = os.path.join(out_dir, f"{spec.protocol}-{prop}-witness.jsonl")
            with files.atomic(path) as f:
                runner.simulate(cfg, seed, hit.step, trace_out=f)
            with open(path, encoding="utf-8") as f:
                again = runner.replay(f)
            replayed = again.mismatch is None and any(v.property == prop for v in again.run.violations)
            out.update(trace=path, replays=replayed)
        cause = "with its known cause" if hit.expected else "with NO known cause"
        out["message"] = (f"reference: seed {seed} reaches it at step {hit.step} {cause}"
                          + (f"; trace {'replays' if out.get('replays') else 'does NOT replay'}" if out_dir else ""))
        return out
    return {"found": False, "message": f"reference: no history of {seed} seeds reached it within {seconds:.0f} s"}


def scenario_history(spec: sy.SymbolicSpec, prop: str, path: str, out_dir: str | None, seeds: int = 5) -> dict:
    """A reference witness from a scenario script that stages the BMC trace's interleaving
    (written by hand from the trace: the reference's elections are driven by timers, so
    which node wins which term is staged with partitions and crashes). The script is run
    with a few seeds until the property is violated, written as a trace and replayed."""

    sc = scenario_file.load(path)
    for seed in range(1, seeds + 1):
        result = runner.simulate(sc.cfg, seed, 1_000_000, sc.until_ms)
        hit = next((v for v in result.violations if v.property == prop), None)
        if hit is None:
            continue
        out = {"found": True, "seed": seed, "steps": hit.step, "expected": hit.expected, "scenario": path}
        if out_dir is not None:
            files.out_folder(out_dir)
            trace = os.path.join(out_dir, f"{spec.protocol}-{prop}-witness.jsonl")
            with files.atomic(trace) as f:
                runner.simulate(sc.cfg, seed, hit.step, sc.until_ms, trace_out=f)
            with open(trace, encoding="utf-8") as f:
                again = runner.replay(f)
            out.update(trace=trace, replays=again.mismatch is None and any(v.property == prop for v in again.run.violations))
        cause = "with its known cause" if hit.expected else "with NO known cause"
        out["message"] = (f"reference: scenario {os.path.basename(path)} (seed {seed}) reaches it at step {hit.step} "
                          f"{cause}" + (f"; trace {'replays' if out.get('replays') else 'does NOT replay'}"
                                        if out_dir else ""))
        return out
    return {"found": False, "message": f"reference: scenario {os.path.basename(path)} did not reach {prop} "
                                      f"in {seeds} seeds"}
