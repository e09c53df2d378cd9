"""Events per CPU-second: the compiled twin vs the reference, same configs and seeds,
every election property checked at every step in both.

    python -m fast_proto.bench                       # 3-node standard, 600 seeds x 5000 events
    python -m fast_proto.bench --seeds 200 --profile hostile --nodes 5 --ref-seeds 20

CPU time is `time.process_time()` around the runs only (the twin's compile or cache load
is measured and reported apart, as `compile`).
"""

from __future__ import annotations

import argparse
import sys
import time

from reference_impl import chooser
from rmqspec import runner

from fast_proto import run as fast
from fast_proto.crosscheck import config


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="standard")
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--seeds", type=int, default=600)
    ap.add_argument("--steps", type=int, default=5000)
    ap.add_argument("--ref-seeds", type=int, default=None, help="seeds for the reference (default: all)")
    ap.add_argument("--slack", type=int, default=0)
    args = ap.parse_args(argv)
    cfg = config(args.profile, args.nodes)

    t0 = time.perf_counter()
    fast.run_history(cfg, 0, 10)
    compile_s = time.perf_counter() - t0

    events = 0
    t = time.process_time()
    twin_runner = fast.Runner(cfg, slack=args.slack)
    for seed in range(args.seeds):
        events += twin_runner.run(seed, args.steps).steps
    cpu = time.process_time() - t
    twin = events / cpu
    print(f"twin:      {events:>10} events in {cpu:8.2f} CPU-s = {twin:12,.0f} events/CPU-s "
          f"(compile or cache load before: {compile_s:.1f} s wall)")

    ref_seeds = args.seeds if args.ref_seeds is None else args.ref_seeds
    ref_events = 0
    t = time.process_time()
    for seed in range(ref_seeds):
        ref_events += runner.run(cfg, chooser.SeededChooser(seed).choose, args.steps).steps
    ref_cpu = time.process_time() - t
    ref = ref_events / ref_cpu
    print(f"reference: {ref_events:>10} events in {ref_cpu:8.2f} CPU-s = {ref:12,.0f} events/CPU-s")
    print(f"ratio:     {twin / ref:.0f}x  ({args.nodes}-node {args.profile}, seeds 0..{args.seeds - 1} x "
          f"{args.steps} events, all properties checked every step)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
