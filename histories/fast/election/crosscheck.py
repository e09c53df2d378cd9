"""Cross-checking the election twin against reference_impl/election, event for event.

`compare` runs both worlds from one configuration and seed and reports the first difference; `main` is the
command line the gates and `rmqspec` use (`python -m histories.fast.election.crosscheck`)."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from histories import runner
from histories.fast.core import crosscheck as core_crosscheck
from histories.fast.core.crosscheck import (
    Recorder,
)
from histories.fast.core.layout import (
    EV_CRASH,
    EV_CUT,
    EV_DELIVER,
    EV_DROP,
    EV_DUPLICATE,
    EV_PARTITION,
    EV_RESTART,
    EV_RPC_FAIL,
    EV_TICK,
    EVENT_NAMES,
)
from histories.fast.election import runner as election_runner
from reference_impl import core
from reference_impl.core import chooser, faults
from reference_impl.election import world as election_world
from spec import properties as props

PROFILES = ("none", "gentle", "crash", "partition", "lossy", "standard", "hostile")


# Config overrides the check covers besides the defaults: preferred leaders (transfers),
# other timings, and a leader elector that is off.
# Per-node tuples are cut to the cluster size.
CONFIGS = {
    "default": {},
    "preferred": {"preferred_leader_ids": "n1"},
    "preferred2": {"preferred_leader_ids": "n2;n0", "heart_beat_time_interval_ms": 500},
    "tuned": {"heart_beat_time_interval_ms": 700, "max_heart_beat_leak": 2, "min_vote_interval_ms": 100,
              "max_vote_interval_ms": 400},
    # uneven logs: ledger rejections, a preferred transferee that cannot catch up, terms below a ledger term
    "ledger": {"ledger_end_index": (10, 10, 4, 10, 10), "ledger_end_term": (3, 3, 3, 1, 3),
               "preferred_leader_ids": "n2;n1"},
    # votes so slow that ELE-L fails unexpectedly in some histories
    "slowvote": {"min_vote_interval_ms": 15000, "max_vote_interval_ms": 40000},
    "noelector": {"enable_leader_elector": False},
    # DLedger 0.4.0: a higher term in a heartbeat answer comes first, after voteResultWaitTime
    "stepdown": {"step_down_on_higher_term": True, "preferred_leader_ids": "n1"},
}


def reference_run(cfg: core.WorldConfig, seed: Any, steps: int, until_ms: int | None):
    rec = Recorder()
    meter = props.meter("election", cfg)
    result = runner.run(cfg, chooser.SeededChooser(seed).choose, steps, until_ms, hooks=(rec, meter))
    stats = result.measures | meter.result(result.world)
    return result, rec, stats


def describe(e: tuple | None) -> str:
    if e is None:
        return "(no event: the history ended)"
    k, a, b, t, draw, late, nobs = e
    name = EVENT_NAMES.get(k, str(k))
    arg = {EV_TICK: f"node={a}" + (f" thread={b}" if b else "") + f" draw={draw}" + (f" late={late}" if late else ""), EV_DELIVER: f"env={a}",
           EV_DROP: f"env={a}", EV_DUPLICATE: f"env={a}", EV_RPC_FAIL: f"rpc={a}" + (f" late={late}" if late else ""),
           EV_CRASH: f"node={a} kind={core_crosscheck.CRASH_OF.get(b)}", EV_RESTART: f"node={a}",
           EV_PARTITION: f"isolation #{a}", EV_CUT: f"{a}->{b}"}.get(k, "")
    return f"{name}({arg}) at t={t} ms, {nobs} observation(s)"


def compare(cfg: core.WorldConfig, seed: Any, steps: int, until_ms: int | None, out: dict | None = None,
            mutant: str | None = None) -> list[str]:
    """Differences between the reference and the twin on one history ([] when identical);
    `out` receives the number of events and the unexpected verdicts. `mutant`: the name of
    the election mutant the caller installed in the reference (the twin runs its own copy)."""
    ref, rec, ref_stats = reference_run(cfg, seed, steps, until_ms)
    twin = election_runner.run_history(cfg, seed, steps, until_ms, log=True, mutant=mutant)
    if out is not None:
        out["steps"] = len(rec.events)
        out["unexpected"] = {v.property for v in ref.violations if v.expected is None}
    return core_crosscheck.history_diff(ref, rec, ref_stats, twin, describe)


def config(profile: str, nodes: int, overrides: dict | None = None, timing: str = "java",
           stagger_ms: int | None = None) -> core.WorldConfig:
    """An election world config: a named fault profile under `timing`, DLedger overrides
    (per-node tuples are cut to the cluster size)."""
    o = {k: v[:nodes] if isinstance(v, tuple) else v for k, v in (overrides or {}).items()}
    prof = faults.profile(profile, "election").evolve(timing=timing)
    if stagger_ms is not None:
        prof = prof.evolve(stagger_ms=stagger_ms)
    return election_world.make_config(nodes, o).evolve(profile=prof)


def until_of(cfg: core.WorldConfig, until: str) -> int | None:
    if until == "none":
        return None
    if until == "fuzz":
        return (cfg.profile.calm_at_ms or faults.CALM_AT_MS) + 60_000
    return int(until)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--until", default="none", help="'none' (steps only), 'fuzz' (quiet tail + 60 s) or ms")
    parser.add_argument("--profiles", default=",".join(PROFILES))
    parser.add_argument("--nodes", default="3,5")
    parser.add_argument("--timing", default="java", help="java, pinned, or java,pinned")
    parser.add_argument("--stagger", type=int, default=None, help="FaultProfile.stagger_ms (default: the profile's)")
    parser.add_argument("--configs", default="default", help=f"named override sets: {', '.join(CONFIGS)}, all")
    parser.add_argument("--config", action="append", default=[], help="KEY=VALUE DLedgerConfig override (JSON value)")
    parser.add_argument("--keep-going", action="store_true", help="check every history, report all differences")
    args = parser.parse_args(argv)
    names = list(CONFIGS) if args.configs == "all" else args.configs.split(",")
    sets = [(name, CONFIGS[name]) for name in names]
    if args.config:
        extra = {}
        for pair in args.config:
            k, v = pair.split("=", 1)
            try:
                extra[k] = json.loads(v)
            except json.JSONDecodeError:
                extra[k] = v
        sets = [("+".join(names) + "+" + ",".join(args.config), {**o, **extra}) for _, o in sets]
    total = bad = events = 0
    t0 = time.perf_counter()
    for set_name, overrides in sets:
        for timing in args.timing.split(","):
            for profile in args.profiles.split(","):
                for nodes in (int(x) for x in args.nodes.split(",")):
                    cfg = config(profile, nodes, overrides, timing, args.stagger)
                    until = until_of(cfg, args.until)
                    n_ev = 0
                    for seed in range(args.first_seed, args.first_seed + args.seeds):
                        got: dict = {}
                        problems = compare(cfg, seed, args.steps, until, out=got)
                        total += 1
                        if problems:
                            bad += 1
                            print(f"DIFFERENT: config={set_name} timing={timing} profile={profile} nodes={nodes} "
                                  f"seed={seed}")
                            for p in problems:
                                print("  " + p)
                            if not args.keep_going:
                                return 1
                        else:
                            n_ev += got["steps"]
                    events += n_ev
                    print(f"{set_name:>10} {timing:>6} {profile:>9} {nodes} nodes: {args.seeds} seeds, {n_ev} events "
                          "identical", flush=True)
    print(f"{total - bad}/{total} histories identical ({events} events) in {time.perf_counter() - t0:.0f} s")
    return 1 if bad else 0
