"""Fault profiles: which faults may happen, how often, and when they stop; and the named
profiles, from gentle to hostile (docs/fault-profiles.md).

Weights are per step: at each step the seeded chooser injects a fault with
probability equal to the summed weights of the fault kinds enabled then (at most
one half), so a weight of 0.01 means roughly one such fault per hundred events. A
3-node election world takes 200-500 events per simulated minute, so `standard`
gives a few crashes and partitions and a few dozen lost messages per minute.
Every profile but `none` ends in a quiet tail (`calm_at_ms`): faults stop, links heal
and down nodes restart, so recovery can be measured (ELE-L and its kin).
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

import reference_impl.core.plugin as plugin
from reference_impl.core.inputs import check_fields
from reference_impl.core.state import record

TIMINGS = ("java", "pinned")
DAY_MS = 86_400_000
STAGGER_MS = 1  # processes started together begin their loops within this (docs/fault-profiles.md)
FAULT_KINDS = ("loss", "duplicate", "crash", "os_crash", "disk_loss", "restart", "partition", "one_way", "heal")


def _ext_weights(v: Any) -> tuple[tuple[str, float], ...]:
    return tuple((str(k), float(w)) for k, w in v)


@record
class FaultProfile:
    """Which faults may happen, how often (weights the seeded chooser uses per step), and when they stop.

    `delay_ms` is the window within which a message is delivered unless lost.
    `calm_at_ms`: from then on no faults; links heal and down nodes restart (the quiet tail).
    `ext`: weights of the protocol's own fault kinds (`Protocol.ext_faults`), e.g. HA's
    `conn_drop`; `getattr(profile, kind)` reads them like the generic weights.
    """

    name: str = "none"
    delay_ms: tuple[int, int] = (1, 5)
    loss: float = 0.0
    duplicate: float = 0.0
    crash: float = 0.0
    os_crash: float = 0.0
    disk_loss: float = 0.0
    restart: float = 0.0
    partition: float = 0.0
    one_way: float = 0.0
    heal: float = 0.0
    calm_at_ms: int | None = None
    description: str = ""
    ext: tuple[tuple[str, float], ...] = attrs.field(default=(), converter=_ext_weights)
    # "java": a due tick fires anywhere within the protocol's loop period after its wake
    # time (Tick.late, drawn by the seeded chooser), and a node's first tick after it
    # (re)starts up to `stagger_ms` late; "pinned": exactly at its wake time (the explorer
    # pins timing to keep the state space small).
    timing: str = "java"
    stagger_ms: int = STAGGER_MS

    def __getattr__(self, name: str) -> float:
        # only reached for names that are not fields: the protocol's own fault kinds
        if not name.startswith("_"):
            for kind, weight in object.__getattribute__(self, "ext"):
                if kind == name:
                    return weight
        raise AttributeError(name)

    # Weights are probabilities per step; delays, the calm and the stagger are at most a day. A
    # name is a registered one (64) plus, for a profile narrowed to some kinds, ":" and the kinds kept.
    LIMITS: ClassVar[dict] = dict.fromkeys(FAULT_KINDS, (0.0, 1.0)) | {
        "name": (1, 256), "description": (0, 4096), "delay_ms": (0, DAY_MS), "calm_at_ms": (0, DAY_MS),
        "stagger_ms": (0, DAY_MS)}

    def __attrs_post_init__(self) -> None:
        check_fields(self)
        d = self.delay_ms
        if not (isinstance(d, tuple) and len(d) == 2 and all(isinstance(x, int) and not isinstance(x, bool)
                                                             for x in d) and 0 <= d[0] <= d[1]):
            raise ValueError(f"delay_ms must be two integers 0 <= min <= max, got {d!r}")
        for name in FAULT_KINDS:
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0:
                raise ValueError(f"fault weight {name} must be a non-negative number, got {v!r}")
        if self.calm_at_ms is not None and (not isinstance(self.calm_at_ms, int) or self.calm_at_ms < 0):
            raise ValueError(f"calm_at_ms must be a non-negative integer or null, got {self.calm_at_ms!r}")
        if not isinstance(self.stagger_ms, int) or isinstance(self.stagger_ms, bool) or self.stagger_ms < 0:
            raise ValueError(f"stagger_ms must be a non-negative integer, got {self.stagger_ms!r}")
        if self.timing not in TIMINGS:
            raise ValueError(f"timing must be one of {', '.join(TIMINGS)}, got {self.timing!r}")

    def any_faults(self) -> bool:
        return any((self.loss, self.duplicate, self.crash, self.os_crash, self.disk_loss, self.partition,
                    self.one_way)) or any(w for _, w in self.ext)


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
# profiles of the same names with weights calibrated for it, and profiles of its own
# (`Protocol.profiles`).


def _own(protocol: str | None) -> dict[str, FaultProfile]:
    return {p.name: p for p in plugin.protocol(protocol).profiles} if protocol else {}


def names(protocol: str | None = None) -> list[str]:
    return list(dict.fromkeys([*PROFILES, *_own(protocol)]))


def by_name(protocol: str | None = None) -> dict[str, FaultProfile]:
    """Every profile `protocol` runs, by name in the order of `names`: each `profile(name, protocol)`
    at once (a fuzz plan resolves them once)."""
    own = _own(protocol)
    return {name: own.get(name) or PROFILES[name] for name in dict.fromkeys([*PROFILES, *own])}


def profile(name: str, protocol: str | None = None) -> FaultProfile:
    """The profile `name`, calibrated for `protocol` when it defines its own."""
    own = _own(protocol)
    if name in own:
        return own[name]
    try:
        return PROFILES[name]
    except KeyError:
        raise KeyError(f"unknown fault profile {name!r}; known: {', '.join(names(protocol))}") from None
