"""Hypothesis machines for the DLedger log and commitlog worlds, on the shared WorldMachine."""

from __future__ import annotations

from property_tests.support.machines import WorldMachine
from reference_impl import core
from spec import properties as props

# Every fault kind is enabled; the weights only matter to the seeded chooser, not to Hypothesis.
ALL_FAULTS = core.FaultProfile(name="machine", delay_ms=(1, 50), loss=0.01, duplicate=0.01, crash=0.01, restart=0.01,
                               partition=0.01, one_way=0.01, heal=0.01, calm_at_ms=60_000,
                               description="property_tests: every fault but OS crashes")
WITH_OS_CRASHES = ALL_FAULTS.evolve(name="machine-os", os_crash=0.01,
                                    description="property_tests: every fault, OS crashes included")


class ProtocolMachine(WorldMachine):
    """A world of PROTOCOL with NODES servers and CONFIG overrides, every property but SKIP."""

    BURST = 40
    PROTOCOL = ""
    NODES = 3
    CONFIG: dict = {}
    PROFILE = ALL_FAULTS
    SKIP: tuple[str, ...] = ()  # bounded properties an adversary choosing every draw can defeat

    def make_config(self) -> core.WorldConfig:
        return core.protocol(self.PROTOCOL).make_config(self.NODES, dict(self.CONFIG)).evolve(profile=self.PROFILE)

    def properties(self) -> list[props.Property]:
        return [p for p in props.for_protocol(self.PROTOCOL) if p.id not in self.SKIP]
