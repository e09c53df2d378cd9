"""NameServer implementation logs written from seeded reference histories (docs/conformance.md,
"The NameServer's log points"), for the tests and `rmqspec bench --tolerant`.

An implementation logs a DataVersion without its timestamp (it is on its own clock); so do these."""

from __future__ import annotations

import copy

from histories.reference_log import LogWriter
from reference_impl import core
from reference_impl.core import chooser, faults

# Faults a NameServer log can state: crashes (process and machine), restarts, partitions, heals,
# operators creating and deleting topics.
FAULTS = faults.FaultProfile(name="log-faults", delay_ms=(1, 5), crash=0.001, os_crash=0.0007, restart=0.002,
                             partition=0.0007, heal=0.002,
                             ext=(("create_topic", 0.001), ("delete_topic", 0.0005)))
QUIET = faults.FaultProfile(name="none", delay_ms=(1, 5))
# Operators creating and deleting topics often: mqadmin deleteTopic's lines (4.9.4 stops at the first
# slave, which refuses; docs/nameserver.md).
TOPICS = faults.FaultProfile(name="topics", delay_ms=(1, 5), ext=(("create_topic", 0.01), ("delete_topic", 0.01)))


def reference_log(profile: faults.FaultProfile, seed: int, steps: int) -> list[dict]:
    """The log of a seeded history: two broker groups with a slave each, two NameServers, p0 and
    p1 (with sendLatencyFaultEnable) sending one message a second, c0; a snapshot every 10 s.
    Each line is tagged with its step (`_step`, for histories.reference_logs.realistic)."""
    cfg = core.protocol("nameserver").make_config(2, {"send_interval_ms": 1000}).evolve(profile=profile)
    writer = LogWriter(cfg, steps=True, snapshot_ms=10_000)
    choose = chooser.SeededChooser(seed).choose
    w = core.init(cfg)
    for i in range(1, steps):
        ev = choose(w)
        if ev is None:
            break
        after, obs = core.step(w, ev)
        writer.step(i, w, ev, after, obs)
        w = after
    return without_timestamps(writer.lines())


def without_timestamps(lines: list[dict]) -> list[dict]:
    """Every DataVersion without its timestamp."""
    out = copy.deepcopy(lines)

    def walk(v: object) -> None:
        if isinstance(v, dict):
            version = v.get("data_version")
            if isinstance(version, dict):
                version.pop("timestamp", None)
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(out)
    return out
