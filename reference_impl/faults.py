"""Named fault profiles, from gentle to hostile (docs/fault-profiles.md).

Weights are per step: at each step the seeded chooser injects a fault with
probability equal to the summed weights of the fault kinds enabled then (at most
one half), so a weight of 0.01 means roughly one such fault per hundred events.
Every profile but `none` ends in a quiet tail (`calm_at_ms`): faults stop, links heal
and down nodes restart, so recovery can be measured (ELE-L and its kin).
"""

from __future__ import annotations

from reference_impl.world import FaultProfile

CALM_AT_MS = 60_000

PROFILES: dict[str, FaultProfile] = {p.name: p for p in (
    FaultProfile(name="none", description="No faults; messages arrive within 1-5 ms."),
    FaultProfile(name="gentle", delay_ms=(1, 20), loss=0.002, crash=0.0005, restart=0.01, calm_at_ms=CALM_AT_MS,
                 description="Rare message loss and the odd process crash; delays up to 20 ms."),
    FaultProfile(name="crash", delay_ms=(1, 10), crash=0.004, restart=0.01, calm_at_ms=CALM_AT_MS,
                 description="Process crashes and restarts only (the persisted state survives)."),
    FaultProfile(name="partition", delay_ms=(1, 10), partition=0.004, one_way=0.002, heal=0.01,
                 calm_at_ms=CALM_AT_MS,
                 description="Symmetric partitions (a node alone, or a minority) and one-way link cuts, then heals."),
    FaultProfile(name="lossy", delay_ms=(1, 200), loss=0.03, duplicate=0.02, calm_at_ms=CALM_AT_MS,
                 description="Loss, duplication, and delays up to 200 ms that reorder messages."),
    FaultProfile(name="standard", delay_ms=(1, 50), loss=0.02, duplicate=0.01, crash=0.003, restart=0.01,
                 partition=0.003, one_way=0.002, heal=0.01, calm_at_ms=CALM_AT_MS,
                 description="Everything but OS crashes: loss, duplication, reordering, crashes, partitions."),
    FaultProfile(name="hostile", delay_ms=(1, 500), loss=0.05, duplicate=0.03, crash=0.004, os_crash=0.002,
                 restart=0.01, partition=0.004, one_way=0.003, heal=0.008, calm_at_ms=2 * CALM_AT_MS,
                 description="standard, harsher, plus OS crashes that lose unsynced writes "
                             "(for DLedger: the currterm file, so ELE-1/2/3 violations are expected)."),
)}


def profile(name: str) -> FaultProfile:
    try:
        return PROFILES[name]
    except KeyError:
        raise KeyError(f"unknown fault profile {name!r}; known: {', '.join(PROFILES)}") from None
