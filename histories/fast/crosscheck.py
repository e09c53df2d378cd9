"""Cross-check a fast world against the reference, history by history.

For each (config, seed) both worlds run the same history: the reference through
`histories.runner.run(cfg, SeededChooser(seed).choose, steps, until_ms)` with a hook that
records every event, the twin through `histories.fast.run_history(..., log=True)`. They
must agree on every event (kind, node / envelope / RPC ids, time, tick draw, lateness,
number of observations), the stop reason, the verdicts (first violation of each
property: step, time, expected cause), the measured stats and fault counts, and the
whole final world (nodes, network, ghost variables, fault history, `since`, `fresh`:
the decoded twin world == the reference world).

    python -m histories.fast.crosscheck                  # 100 seeds x 5000 events x 7 profiles x 3, 5 nodes
    python -m histories.fast.crosscheck --seeds 10 --profiles standard,hostile --nodes 3
    python -m histories.fast.crosscheck --timing pinned  # or java (the default), or java,pinned
    python -m histories.fast.crosscheck --until fuzz     # fuzz-length histories (quiet tail + 60 s)
    python -m histories.fast.crosscheck --config preferred_leader_ids=n1

Exit status 1 on the first difference, which is printed (step, both events). The
election mutants (property_tests/support/election_mutants.py) are cross-checked by
property_tests/test_fast_election.py, which installs each in the reference.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from collections.abc import Callable
from typing import Any

import histories.fast.election as K
import histories.fast.run as fast
from histories import runner
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


def event_key(w: core.World, ev: Any) -> tuple[int, int, int]:
    """A reference event as the twin's log encodes it: (kind, a, b)."""
    t = type(ev)
    if t is core.Tick:
        return K.EV_TICK, ev.node, 0
    if t is core.Deliver:
        return K.EV_DELIVER, ev.env, 0
    if t is core.Drop:
        return K.EV_DROP, ev.env, 0
    if t is core.Duplicate:
        return K.EV_DUP, ev.env, 0
    if t is core.RpcFail:
        return K.EV_RPCFAIL, ev.rpc, 0
    if t is core.Crash:
        return K.EV_CRASH, ev.node, 2 if ev.disk else 1 if ev.os else 0
    if t is core.Restart:
        return K.EV_RESTART, ev.node, 0
    if t is core.Partition:
        return K.EV_PARTITION, core.isolations(len(w.nodes)).index(ev.groups), 0
    if t is core.CutLink:
        return K.EV_CUT, ev.src, ev.dst
    if t is core.Heal:
        return K.EV_HEAL, 0, 0
    if t is core.Calm:
        return K.EV_CALM, 0, 0
    raise TypeError(f"the twin has no event {ev!r}")


_FAULT_OF = {K.EV_DROP: "drop", K.EV_DUP: "duplicate", K.EV_RESTART: "restart", K.EV_PARTITION: "partition",
             K.EV_CUT: "cut", K.EV_HEAL: "heal"}
_CRASH_OF = {0: "crash", 1: "os_crash", 2: "disk_loss"}


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple] = []
        self.faults: collections.Counter = collections.Counter()

    def __call__(self, i: int, before: core.World, ev: Any, after: core.World, obs: tuple) -> None:
        k, a, b = event_key(before, ev)
        draw = ev.draw if k == K.EV_TICK else 0
        late = ev.late if k in (K.EV_TICK, K.EV_RPCFAIL) else 0
        self.events.append((k, a, b, after.now, draw, late, len(obs)))
        if k == K.EV_CRASH:
            self.faults[_CRASH_OF[b]] += 1
        elif k in _FAULT_OF:
            self.faults[_FAULT_OF[k]] += 1


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
    name = K.EVENT_NAMES.get(k, str(k))
    arg = {K.EV_TICK: f"node={a} draw={draw}" + (f" late={late}" if late else ""), K.EV_DELIVER: f"env={a}",
           K.EV_DROP: f"env={a}", K.EV_DUP: f"env={a}", K.EV_RPCFAIL: f"rpc={a}" + (f" late={late}" if late else ""),
           K.EV_CRASH: f"node={a} kind={_CRASH_OF.get(b)}", K.EV_RESTART: f"node={a}",
           K.EV_PARTITION: f"isolation #{a}", K.EV_CUT: f"{a}->{b}"}.get(k, "")
    return f"{name}({arg}) at t={t} ms, {nobs} observation(s)"


def _world_diff(ref: core.World, twin: core.World) -> list[str]:
    out = []
    for i, (a, b) in enumerate(zip(ref.nodes, twin.nodes)):
        if a != b:
            fields = [f for f in a.__attrs_attrs__ if getattr(a, f.name) != getattr(b, f.name)]
            out.append(f"node {i}: " + "; ".join(f"{f.name}: reference {getattr(a, f.name)!r} twin "
                                                  f"{getattr(b, f.name)!r}" for f in fields))
    for name in ("now", "alive", "net", "ghost", "history", "since", "fresh"):
        if getattr(ref, name) != getattr(twin, name):
            if name == "net":
                for part in ("flight", "rpcs", "cut", "next_id"):
                    if getattr(ref.net, part) != getattr(twin.net, part):
                        out.append(f"net.{part}: reference {getattr(ref.net, part)!r}\n   twin {getattr(twin.net, part)!r}")
            else:
                out.append(f"{name}: reference {getattr(ref, name)!r}\n   twin {getattr(twin, name)!r}")
    return out


def compare(cfg: core.WorldConfig, seed: Any, steps: int, until_ms: int | None, out: dict | None = None,
            mutant: str | None = None) -> list[str]:
    """Differences between the reference and the twin on one history ([] when identical);
    `out` receives the number of events and the unexpected verdicts. `mutant`: the name of
    the election mutant the caller installed in the reference (the twin runs its own copy)."""
    ref, rec, ref_stats = reference_run(cfg, seed, steps, until_ms)
    tw = fast.run_history(cfg, seed, steps, until_ms, log=True, mutant=mutant)
    if out is not None:
        out["steps"] = len(rec.events)
        out["unexpected"] = {v.property for v in ref.violations if v.expected is None}
    return history_diff(ref, rec, ref_stats, tw, describe)


def history_diff(ref: Any, rec: Recorder, ref_stats: dict, tw: Any, describe_event: Callable[[tuple | None], str],
                 world: bool = True) -> list[str]:
    """The differences between a reference run and its twin's, for either twin: the first event
    that differs (then nothing more, as what follows it differs anyway), else the end, the
    verdicts, the measures, the fault counts and, with `world`, the final worlds."""
    twin_events = [tuple(int(x) for x in row) for row in tw.log]
    problems = []
    for i, (a, b) in enumerate(zip(rec.events, twin_events)):
        if a != b:
            problems.append(f"first difference at step {i + 1}:\n  reference: {describe_event(a)}\n  twin:      "
                            f"{describe_event(b)}")
            if i > 0:
                problems.append(f"  (step {i}: {describe_event(rec.events[i - 1])})")
            return problems
    if len(rec.events) != len(twin_events):
        i = min(len(rec.events), len(twin_events))
        problems.append(f"first difference at step {i + 1}:\n  reference: "
                        f"{describe_event(rec.events[i] if i < len(rec.events) else None)}\n  twin:      "
                        f"{describe_event(twin_events[i] if i < len(twin_events) else None)}")
        return problems
    if (ref.steps, ref.world.now, ref.stopped) != (tw.steps, tw.t_ms, tw.stopped):
        problems.append(f"end: reference {(ref.steps, ref.world.now, ref.stopped)} twin "
                        f"{(tw.steps, tw.t_ms, tw.stopped)}")
    rv = sorted((v.property, v.step, v.t_ms, v.expected) for v in ref.violations)
    tv = sorted((v.property, v.step, v.t_ms, v.expected) for v in tw.violations)
    if rv != tv:
        problems.append(f"verdicts: reference {rv}\n  twin {tv}")
    if ref_stats != tw.stats:
        problems.append(f"stats: reference {ref_stats} twin {tw.stats}")
    if dict(rec.faults) != tw.faults:
        problems.append(f"faults: reference {dict(rec.faults)} twin {tw.faults}")
    if world:
        problems += _world_diff(ref.world, tw.world())
    return problems


def config(profile: str, nodes: int, overrides: dict | None = None, timing: str = "java",
           stagger_ms: int | None = None) -> core.WorldConfig:
    """An election world config: a named fault profile under `timing`, DLedger overrides
    (per-node tuples are cut to the cluster size)."""
    o = {k: v[:nodes] if isinstance(v, tuple) else v for k, v in (overrides or {}).items()}
    prof = faults.profile(profile, "election").evolve(timing=timing)
    if stagger_ms is not None:
        prof = prof.evolve(stagger_ms=stagger_ms)
    return election_world.make_config(nodes, o).evolve(profile=prof)


def _until(cfg: core.WorldConfig, until: str) -> int | None:
    if until == "none":
        return None
    if until == "fuzz":
        return (cfg.profile.calm_at_ms or faults.CALM_AT_MS) + 60_000
    return int(until)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=5000)
    ap.add_argument("--until", default="none", help="'none' (steps only), 'fuzz' (quiet tail + 60 s) or ms")
    ap.add_argument("--profiles", default=",".join(PROFILES))
    ap.add_argument("--nodes", default="3,5")
    ap.add_argument("--timing", default="java", help="java, pinned, or java,pinned")
    ap.add_argument("--stagger", type=int, default=None, help="FaultProfile.stagger_ms (default: the profile's)")
    ap.add_argument("--configs", default="default", help=f"named override sets: {', '.join(CONFIGS)}, all")
    ap.add_argument("--config", action="append", default=[], help="KEY=VALUE DLedgerConfig override (JSON value)")
    ap.add_argument("--keep-going", action="store_true", help="check every history, report all differences")
    args = ap.parse_args(argv)
    names = list(CONFIGS) if args.configs == "all" else args.configs.split(",")
    sets = [(name, CONFIGS[name]) for name in names]
    if args.config:
        extra = {}
        for kv in args.config:
            k, v = kv.split("=", 1)
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
                    until = _until(cfg, args.until)
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


if __name__ == "__main__":
    sys.exit(main())
