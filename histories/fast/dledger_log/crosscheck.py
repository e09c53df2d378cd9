"""Cross-checking the dledger_log twin against reference_impl/dledger_log, event for event.

`compare` runs both worlds from one configuration and seed and reports the first difference; `main` is the
command line the gates and `rmqspec` use (`python -m histories.fast.dledger_log.crosscheck`)."""

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
from histories.fast.core.results import (
    CapacityError,
)
from histories.fast.dledger_log import runner as dledger_log_runner
from histories.fast.dledger_log.layout import (
    EV_LEADER_PARTITION,
)
from histories.fast.election import crosscheck as election_crosscheck
from reference_impl import core
from reference_impl.core import chooser, faults
from reference_impl.dledger_log import world as log_world

PROFILES = ("none", "lockstep", "gentle", "crash", "os_crash", "partition", "lossy", "standard", "hostile",
            "leader-partition")


# Config sets besides the defaults: the version profiles, the push processor, DLedger 0.4.0's
# no-op, a preferred leader (transfers), the DLedger tests' forced leader, files that roll,
# tight pending limits, more and fewer clients.
CONFIGS = {
    "default": {},
    "fixed": {"dledger_version": "fixed"},
    "v0312": {"dledger_version": "0.3.1.2"},
    "single": {"push_processor": "single_thread"},
    "noop": {"dledger_version": "fixed", "enable_fast_advance_commit_index": True},
    "preferred": {"preferred_leader_ids": "n1"},
    "forced": {"forced_leader": "n0"},
    "smallfiles": {"mapped_file_size_for_entry_data": 400, "body_size": 20},
    "tight": {"max_pending_requests_num": 2, "dispatcher_max_pending_size": 3, "max_wait_ack_time_ms": 800,
              "check_point_interval": 500},
    "busy": {"clients": 5, "client_interval_ms": 40},
    "quiet": {"clients": 0},
}


CAP_NAMES = ("entries", "flight", "rpcs", "terms", "marks", "pending", "queue", "sets", "oslost", "outs")


class LogRecorder(Recorder):
    """The election cross-check's recorder, and the protocol's own fault (world.LeaderPartition)."""

    def __call__(self, i: int, before: core.World, event: Any, after: core.World, obs: tuple) -> None:
        if isinstance(event, log_world.LeaderPartition):
            self.events.append((EV_LEADER_PARTITION, event.leader, 0, after.now, 0, 0, len(obs)))
            self.faults["leader_partition"] += 1
            return
        super().__call__(i, before, event, after, obs)


def describe(e: tuple | None) -> str:
    if e is not None and e[0] == EV_LEADER_PARTITION:
        return f"LeaderPartition(leader={e[1]}) at t={e[3]} ms, {e[6]} observation(s)"
    return election_crosscheck.describe(e)


def reference_run(cfg: core.WorldConfig, seed: Any, steps: int, until_ms: int | None):
    rec = LogRecorder()
    result = runner.run(cfg, chooser.SeededChooser(seed).choose, steps, until_ms, hooks=(rec,))
    return result, rec, result.measures


def compare(cfg: core.WorldConfig, seed: Any, steps: int, until_ms: int | None, out: dict | None = None,
            world: bool = True, mutant: str | None = None) -> list[str]:
    """Differences between the reference and the twin on one history ([] when identical);
    `out` receives the number of events and the verdicts. `mutant`: the name of the election
    mutant the caller installed in the reference (the twin runs its own copy)."""
    ref, rec, ref_stats = reference_run(cfg, seed, steps, until_ms)
    caps: dict = {}
    while True:  # a capacity that ran out is raised and the history run again (never truncated)
        try:
            twin = dledger_log_runner.run_history(cfg, seed, steps, until_ms, log=True, mutant=mutant, **caps)
            break
        except CapacityError as e:
            if out is not None:
                out["overflow"] = e.what
            caps = {k: 4 * v for k, v in zip(CAP_NAMES, e.result.prepared.caps)}
    if out is not None:
        out["steps"] = len(rec.events)
        out["violations"] = sorted((v.property, v.expected is not None) for v in ref.violations)
    return core_crosscheck.history_diff(ref, rec, ref_stats, twin, describe, world)


def config(profile: str, nodes: int, overrides: dict | None = None, timing: str = "java") -> core.WorldConfig:
    """A dledger_log world config: a named fault profile (dledger_log's calibration) under `timing`."""
    prof = faults.profile(profile, "dledger_log").evolve(timing=timing)
    return log_world.make_config(nodes, dict(overrides or {})).evolve(profile=prof)


def until_of(cfg: core.WorldConfig, until: str) -> int | None:
    if until == "none":
        return None
    if until == "fuzz":
        return (cfg.profile.calm_at_ms or faults.CALM_AT_MS) + 60_000
    return int(until)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--until", default="fuzz", help="'none' (steps only), 'fuzz' (quiet tail + 60 s) or ms")
    parser.add_argument("--profiles", default=",".join(PROFILES))
    parser.add_argument("--nodes", default="3,5")
    parser.add_argument("--timing", default="java", help="java, pinned, or java,pinned")
    parser.add_argument("--configs", default="default", help=f"named override sets: {', '.join(CONFIGS)}, all")
    parser.add_argument("--config", action="append", default=[], help="KEY=VALUE override (JSON value)")
    parser.add_argument("--no-world", action="store_true", help="skip the final-world comparison (faster)")
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
    verdicts: dict = {}
    t0 = time.perf_counter()
    for set_name, overrides in sets:
        for timing in args.timing.split(","):
            for profile in args.profiles.split(","):
                for nodes in (int(x) for x in args.nodes.split(",")):
                    cfg = config(profile, nodes, overrides, timing)
                    until = until_of(cfg, args.until)
                    n_ev = 0
                    for seed in range(args.first_seed, args.first_seed + args.seeds):
                        got: dict = {}
                        problems = compare(cfg, seed, args.steps, until, out=got, world=not args.no_world)
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
                            if "overflow" in got:
                                print(f"  seed {seed}: the twin's capacity of {got['overflow']} ran out; "
                                      "identical with larger capacities")
                            for v in got["violations"]:
                                verdicts[v] = verdicts.get(v, 0) + 1
                    events += n_ev
                    print(f"{set_name:>10} {timing:>6} {profile:>9} {nodes} nodes: {args.seeds} seeds, {n_ev} events "
                          "identical", flush=True)
    print(f"{total - bad}/{total} histories identical ({events} events) in {time.perf_counter() - t0:.0f} s")
    print("verdicts compared (property, expected): " + ", ".join(f"{p}{'' if e else '!'} x{c}"
                                                                 for (p, e), c in sorted(verdicts.items())))
    return 1 if bad else 0
