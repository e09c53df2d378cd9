"""Consumer-offset implementation logs written from seeded reference histories (docs/conformance.md,
"Consumer offsets' log points"), for the tests and `rmqspec bench --tolerant`."""

from __future__ import annotations

from histories.reference_log import LogWriter
from reference_impl import core
from reference_impl.core import chooser, faults

# Faults an offsets log can state: broker and consumer process crashes, restarts, partitions, heals
# (no message loss or one-way cut: a log has no line for them).
FAULTS = faults.FaultProfile(name="log-faults", delay_ms=(1, 10), crash=0.0006, restart=0.003, partition=0.0002,
                             heal=0.001)
QUIET = faults.FaultProfile(name="none", delay_ms=(1, 10))


def reference_log(profile: faults.FaultProfile, seed: int, steps: int, messages: int = 200) -> list[dict]:
    """The log of a seeded history: master n0, slave n1, the route source, p0 sending `messages`
    messages, consumers c0 and c1 of one group; a snapshot every 10 s. Each line is tagged with
    its step (`_step`, for histories.reference_logs.realistic)."""
    cfg = core.protocol("offsets").make_config(2, {"messages": messages}).evolve(profile=profile)
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
    return writer.lines()
