"""`rmqspec bench`: throughput of the reference worlds (docs/benchmarks.md).

Each row runs whole histories (HISTORY_STEPS events, profile `standard`, fresh seed
each) for a fixed wall time and reports events per second, with every property
checked at every step and, for comparison, with no checks. All rows of one run share
the machine's conditions, so read them as ratios.
"""

from __future__ import annotations

import resource
import time

from reference_impl import chooser, faults
from reference_impl import world as wm
from rmqspec import runner
from spec import properties

HISTORY_STEPS = 5000


def measure(protocol: str, nodes: int, checked: bool, seconds: float, profile: str = "standard") -> dict:
    cfg = wm.protocol(protocol).make_config(nodes, {}).evolve(profile=faults.profile(profile, protocol))
    props = properties.for_protocol(protocol) if checked else []
    events = histories = 0
    seed = 0
    start = time.perf_counter()
    while True:
        result = runner.run(cfg, chooser.SeededChooser(seed).choose, HISTORY_STEPS, properties=props)
        events += result.steps
        histories += 1
        seed += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            break
    return {"protocol": protocol, "nodes": nodes, "checked": checked, "profile": profile,
            "histories": histories, "events": events, "seconds": round(elapsed, 3),
            "events_per_s": round(events / elapsed), "histories_per_s": round(histories / elapsed, 2)}


def run(seconds: float, only: str | None = None) -> list[dict]:
    rows = []
    for protocol in wm.protocol_names():
        if only and protocol != only:
            continue
        for nodes in wm.protocol(protocol).bench_nodes:
            for checked in (True, False):
                rows.append(measure(protocol, nodes, checked, seconds))
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    for row in rows:
        row["peak_rss_mib"] = round(peak_mib, 1)
    return rows


def print_table(rows: list[dict]) -> None:
    print(f"{'protocol':<12}{'nodes':>6}  {'properties':<11}{'events/s':>10}{'histories/s':>13}{'events':>10}")
    for r in rows:
        print(f"{r['protocol']:<12}{r['nodes']:>6}  {'checked' if r['checked'] else 'off':<11}"
              f"{r['events_per_s']:>10,}{r['histories_per_s']:>13}{r['events']:>10,}")
    if rows:
        print(f"peak RSS {rows[0]['peak_rss_mib']} MiB; one process, {HISTORY_STEPS}-event histories, "
              f"profile {rows[0]['profile']}")
