"""Named fault profiles, from gentle to hostile (docs/fault-profiles.md).

Weights are per step: at each step the seeded chooser injects a fault with
probability equal to the summed weights of the fault kinds enabled then (at most
one half), so a weight of 0.01 means roughly one such fault per hundred events. A
3-node election world takes 200-500 events per simulated minute, so `standard`
gives a few crashes and partitions and a few dozen lost messages per minute.
Every profile but `none` ends in a quiet tail (`calm_at_ms`): faults stop, links heal
and down nodes restart, so recovery can be measured (ELE-L and its kin).
"""

from __future__ import annotations

from reference_impl.world import FaultProfile

CALM_AT_MS = 60_000

PROFILES: dict[str, FaultProfile] = {p.name: p for p in (
    FaultProfile(name="none", description="No faults; messages arrive within 1-5 ms."),
    FaultProfile(name="gentle", delay_ms=(1, 20), loss=0.01, crash=0.005, restart=0.05, calm_at_ms=CALM_AT_MS,
                 description="Rare message loss and the odd process crash; delays up to 20 ms."),
    FaultProfile(name="crash", delay_ms=(1, 10), crash=0.03, restart=0.05, calm_at_ms=CALM_AT_MS,
                 description="Process crashes and restarts only (persisted state survives)."),
    FaultProfile(name="partition", delay_ms=(1, 10), partition=0.03, one_way=0.02, heal=0.05,
                 calm_at_ms=CALM_AT_MS,
                 description="Symmetric partitions (a node alone, or a minority) and one-way link cuts, then heals."),
    FaultProfile(name="lossy", delay_ms=(1, 200), loss=0.08, duplicate=0.05, calm_at_ms=CALM_AT_MS,
                 description="Loss, duplication, and delays up to 200 ms that reorder messages."),
    FaultProfile(name="standard", delay_ms=(1, 50), loss=0.05, duplicate=0.02, crash=0.02, restart=0.05,
                 partition=0.02, one_way=0.015, heal=0.05, calm_at_ms=CALM_AT_MS,
                 description="Everything but OS crashes: loss, duplication, reordering, crashes, partitions."),
    FaultProfile(name="hostile", delay_ms=(1, 500), loss=0.1, duplicate=0.05, crash=0.02, os_crash=0.01,
                 restart=0.08, partition=0.03, one_way=0.02, heal=0.04, calm_at_ms=2 * CALM_AT_MS,
                 description="standard, harsher, plus OS crashes that lose unsynced writes "
                             "(for DLedger: the currterm file, so ELE-1/2/3 violations are expected)."),
)}


# Per-protocol profiles: event rates differ between worlds, so a protocol may define
# profiles of the same names with weights calibrated for it, and profiles of its own.
_BY_PROTOCOL: dict[str, dict[str, FaultProfile]] = {}


def register(protocol: str, profiles: list[FaultProfile]) -> None:
    _BY_PROTOCOL.setdefault(protocol, {}).update({p.name: p for p in profiles})


def names(protocol: str | None = None) -> list[str]:
    own = _BY_PROTOCOL.get(protocol, {}) if protocol else {}
    return list(dict.fromkeys([*PROFILES, *own]))


def profile(name: str, protocol: str | None = None) -> FaultProfile:
    """The profile `name`, calibrated for `protocol` when it defines its own."""
    if protocol is not None:
        from reference_impl import world

        world.protocol(protocol)  # loading a protocol registers its profiles
        own = _BY_PROTOCOL.get(protocol, {})
        if name in own:
            return own[name]
    try:
        return PROFILES[name]
    except KeyError:
        raise KeyError(f"unknown fault profile {name!r}; known: {', '.join(names(protocol))}") from None
