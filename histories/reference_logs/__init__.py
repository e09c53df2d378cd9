"""Implementation logs written from seeded reference histories, and made realistic the way a
real implementation's log differs from the reference's order (docs/conformance.md): what the
tests of the tolerant checker and `rmqspec bench --tolerant` validate.

`reference_log` runs a seeded reference history and writes its log (histories.reference_log.LogWriter).
`realistic` then gives it an implementation's clock (an offset), timers and threads that run
late and lines that land in another order (each line's t_ms moved later by up to `jitter_ms`,
the lines re-sorted by time), and optionally leaves out the draws, the snapshots or the times.
`nameserver` and `offsets` hold those protocols' seeded histories; `read_real` reads the logs
real DLedger 0.2.6 and RocketMQ 4.9.4 wrote (property_tests/impl_logs/, shipped with the tests).
The mutations that make a log say what the protocol never does are test-only
(property_tests/support/impl_logs.py).
"""

from __future__ import annotations

import copy
import random
from pathlib import Path

from histories import impl_log, tolerant
from histories.reference_log import LogWriter
from histories import trace as trace_mod
from reference_impl import core
from reference_impl.core import chooser, faults

# The logs real implementations wrote live with the tests that read them.
REAL = Path(__file__).resolve().parent.parent.parent / "property_tests" / "impl_logs"
REAL_LOGS = REAL / "dledger-0.2.6"
REAL_HA_LOGS = REAL / "rocketmq-4.9.4" / "ha"
HA_SLACK_MS = 100  # a cold JVM spreads one step's lines over up to 100 ms (impl_logs/rocketmq-4.9.4/ha/README.md)

# Faults an implementation log can show (crash, restart, partition, cut, heal): no loss, no duplication.
PROFILES = {
    "none": faults.FaultProfile(name="none"),
    "crash": faults.FaultProfile(name="crash", delay_ms=(1, 10), crash=0.03, restart=0.05, calm_at_ms=60_000),
    "partition": faults.FaultProfile(name="partition", delay_ms=(1, 10), partition=0.03, heal=0.05,
                                     calm_at_ms=60_000),
    "cut": faults.FaultProfile(name="cut", delay_ms=(1, 10), one_way=0.03, heal=0.02, calm_at_ms=60_000),
}


def reference_log(protocol: str, profile: str | faults.FaultProfile, seed: int, steps: int, nodes: int = 3,
                  late_ms: int = 0, overrides: dict | None = None) -> list[dict]:
    """Header and event lines of the log a reference history writes; `late_ms`: the history's
    ticks may fire this much later than the reference's own windows allow (threads that run
    late, as the checker's scheduling allowance permits). Each line is tagged with its step
    (`_step`, for `realistic`). `profile` may be a FaultProfile; `overrides` the protocol's config."""
    if isinstance(profile, faults.FaultProfile):
        prof = profile
    else:
        prof = PROFILES[profile] if protocol == "election" else faults.profile(profile, protocol)
    cfg = core.protocol(protocol).make_config(nodes, overrides or {}).evolve(profile=prof)
    if late_ms:
        cfg = cfg.evolve(protocol=tolerant.tolerant_protocol(protocol, late_ms))
    writer = LogWriter(cfg, protocol=protocol, steps=True)
    choose = chooser.SeededChooser(seed).choose
    w = core.init(cfg)
    for i in range(1, steps + 1):
        ev = choose(w)
        if ev is None:
            break
        after, obs = core.step(w, ev)
        writer.step(i, w, ev, after, obs)
        w = after
    return writer.lines()


def strip(lines: list[dict]) -> list[dict]:
    """The log without the step tags `reference_log` adds."""
    return [{k: v for k, v in d.items() if not k.startswith("_")} for d in lines]


def read_real(name: str) -> list[dict]:
    with open(REAL_LOGS / f"{name}.jsonl", encoding="utf-8") as f:
        return [d for _, d in trace_mod.read_lines(f)]


def realistic(lines: list[dict], seed: int, jitter_ms: int = 2, clock_ms: int = 1_700_000_000_000,
              draws: bool = True, snapshots: bool = True, times: bool = True) -> list[dict]:
    """The log as an implementation would write it: on its own clock (`clock_ms` added), the
    lines of one step in any order (Java writes them from several threads), each step's lines
    up to `jitter_ms` later (the time a thread takes to reach its log point; a node's own
    lines keep their order), the nodes' lines merged by time, so that independent events of
    different nodes change places, never across a fault; optionally without the draws, the
    snapshots or the times. Timers that run late are in the history itself (`reference_log`'s
    `late_ms`): lateness changes what happens, so it cannot be added afterwards."""
    rng = random.Random(seed)
    header, events = copy.deepcopy(lines[0]), copy.deepcopy(lines[1:])
    lp = impl_log.log_points(header["protocol"])
    if not draws:
        events = [d for d in events if d["at"] != lp.NEXT_INT]
    if not snapshots:
        events = [d for d in events if d["at"] != lp.SNAPSHOT]
    if not draws or not snapshots:
        header["log_points"] = sorted(p for p in [*lp.POINTS, lp.SNAPSHOT]
                                      if (draws or p != lp.NEXT_INT) and (snapshots or p != lp.SNAPSHOT))
    steps: dict = {}
    for d in events:
        steps.setdefault(d.get("_step", id(d)), []).append(d)
    era, last, keyed, carried = 0, {}, [], {}
    for group in steps.values():  # in the reference's order
        rng.shuffle(group)
        # a step's completion line is written before what the node does with the answer, and
        # an answer after the store writes it reports (docs/conformance.md, "What comes first")
        group.sort(key=lambda d: {"completion": 0, "answer": 2}.get(d.get("_kind"), 1))
        late = rng.randint(0, jitter_ms)
        after = carried.get(group[0].get("_gets", -1), 0)  # a message is handled after it was sent
        for d in group:
            kind, env = d.pop("_kind", None), d.pop("_env", -1)
            d.pop("_step", None)
            d.pop("_gets", None)
            if d["at"] in impl_log.WORLD_POINTS or d["at"] in impl_log.protocol_facts(lp):
                era += 1  # a fault: nothing moves across it
                keyed.append(((era, d["t_ms"]), d))
                era += 1
                continue
            t = d["t_ms"] if d["at"] == lp.SNAPSHOT else max(d["t_ms"] + late, last.get(d["node"], 0), after)
            last[d["node"]] = t
            d["t_ms"] = t
            if kind in ("send", "answer"):
                carried[env] = t
            keyed.append(((era, t), d))
    keyed.sort(key=lambda x: x[0])  # stable
    events = [d for _, d in keyed]
    for d in events:
        d["t_ms"] += clock_ms
    prev = 0
    for d in events:  # a fault between two lines moved later keeps the times in order
        d["t_ms"] = prev = max(prev, d["t_ms"])
    if not times:
        for d in events:
            del d["t_ms"]
    return [header] + events


def parse(lines: list[dict]) -> impl_log.ImplLog:
    return impl_log.parse(enumerate(lines, 1))


def ha_bench_cases() -> list[tuple[str, list[dict], tolerant.Options]]:
    """The `ha` logs `rmqspec bench --tolerant` times: a reference-made SYNC_MASTER log with HA
    connection resets (3 brokers, one record size) and each log RocketMQ 4.9.4 wrote."""
    prof = faults.FaultProfile(name="conn", delay_ms=(1, 10), ext=(("conn_drop", 0.003),), calm_at_ms=60_000)
    lines = realistic(reference_log("ha", prof, 2, 900, nodes=3, overrides={
        "body_min": 99, "body_max": 99, "mapped_file_size_commit_log": 4096, "broker_role": "SYNC_MASTER"}), 2)
    cases = [("ha reference, SYNC_MASTER, resets", lines, tolerant.Options())]
    for path in sorted(REAL_HA_LOGS.glob("*.jsonl")):
        with open(path, encoding="utf-8") as f:
            real = [d for _, d in trace_mod.read_lines(f)]
        cases.append((f"RocketMQ 4.9.4 ha {path.stem}", real, tolerant.Options(slack_ms=HA_SLACK_MS)))
    return cases


def dledger_commitlog_bench_cases() -> list[tuple[str, list[dict], tolerant.Options]]:
    """The `dledger_commitlog` logs `rmqspec bench --tolerant` times: reference-made logs (3
    brokers, a name server, a producer and a consumer; no real DLedgerCommitLog log yet), one
    fault-free with puts, dispatches and pulls, one with broker crashes."""
    return [(f"dledger_commitlog reference, {profile}",
             realistic(reference_log("dledger_commitlog", profile, seed, steps, late_ms=5), seed), tolerant.Options())
            for profile, seed, steps in (("lockstep", 1, 250), ("crash", 5, 600))]
