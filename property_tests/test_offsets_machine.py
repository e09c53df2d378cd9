"""A Hypothesis stateful machine over the offsets world (property_tests.machines.WorldMachine): Hypothesis
picks single events and faults (crashes and restarts of the master, the slave and consumers, partitions,
one-way cuts, lost one-way commits), bursts of protocol events, and waits of seconds to minutes in
simulated time (route refresh, registration, slave sync, rebalance all come into play). Every OFF-*
property is checked after every step; a violation must be one RocketMQ is known to allow (OFF-2 with a
cause the history names)."""

import random

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import rule, run_state_machine_as_test

from property_tests.support.machines import WorldMachine
from reference_impl import core
from reference_impl.offsets.world import make_config
from spec import properties as props

MACHINE_FAULTS = core.FaultProfile(name="machine", delay_ms=(1, 30), loss=0.01, duplicate=0.01, crash=0.01,
                                   restart=0.01, partition=0.01, one_way=0.01, heal=0.01,
                                   description="property_tests: every fault of the offsets world")
MAX_EVENTS_PER_WAIT = 2500


class OffsetsMachine(WorldMachine):
    SLAVE_READ_ENABLE = False

    def make_config(self) -> core.WorldConfig:
        # 2,000 bytes of "RAM": a backlog of 8 messages makes getMessage suggest the slave.
        # Idle pulls and replication every second (not 200 ms) keep the minutes of a wait cheap.
        cfg = make_config(2, {"messages": 300, "send_interval_ms": 300, "consume_ms": 100, "queues": 2,
                              "total_physical_memory_size": 2000, "slave_read_enable": self.SLAVE_READ_ENABLE,
                              "pull_idle_wait_ms": 1000, "ha_transfer_interval_ms": 1000})
        return cfg.evolve(profile=MACHINE_FAULTS)

    def properties(self) -> list[props.Property]:
        return props.for_protocol("offsets")

    @rule(seed=st.integers(0, 1 << 16), ms=st.sampled_from([2_000, 12_000, 35_000]))
    def wait(self, seed, ms):
        """Let the world run on its own (no faults) for `ms` of simulated time."""
        self._run(seed, ms)

    @rule(seed=st.integers(0, 1 << 16), down_ms=st.sampled_from([8_000, 40_000, 70_000]),
          after_ms=st.sampled_from([5_000, 45_000]), consumers_restart=st.booleans())
    def master_down_and_back(self, seed, down_ms, after_ms, consumers_restart):
        """Seed 001's outage: the master is down for `down_ms`, then back for `after_ms`; with
        `consumers_restart`, the consumers stop 5 s before the master returns and start again just after
        it (#1094: having committed to the slave, they read the master's stale offsets)."""
        if not self.world.alive[0]:
            return
        consumers = [i for i, x in enumerate(self.world.cfg.ids) if x.startswith("c") and self.world.alive[i]]
        self.apply(core.Crash(node=0))
        self._run(seed, down_ms - 5000)
        if consumers_restart:
            for i in consumers:
                self.apply(core.Crash(node=i))
        self._run(seed + 1, 5000)
        self.apply(core.Restart(node=0))
        if consumers_restart:
            self._run(seed + 2, 1000)
            for i in consumers:
                if not self.world.alive[i]:
                    self.apply(core.Restart(node=i))
        self._run(seed + 3, after_ms)

    def _run(self, seed, ms):
        rng = random.Random(seed)
        until = self.world.now + ms
        for _ in range(MAX_EVENTS_PER_WAIT):
            if core.horizon(self.world) > until:
                return
            events = core.protocol_events(self.world)
            if not events:
                return
            ev = events[rng.randrange(len(events))]
            if isinstance(ev, core.Tick):
                ev = core.Tick(node=ev.node, draw=rng.getrandbits(16))
            self.apply(ev)


class OffsetsMachineSlaveRead(OffsetsMachine):
    """slaveReadEnable = true: lagging consumers are sent to the slave (whichBrokerWhenConsumeSlowly)."""

    SLAVE_READ_ENABLE = True


@pytest.mark.parametrize("machine", [OffsetsMachine, OffsetsMachineSlaveRead])
def test_offsets_world_machine(machine):
    # A rule may run minutes of simulated time: fewer, shorter programs than the profile's default.
    current = settings.default
    run_state_machine_as_test(machine, settings=settings(current, max_examples=max(1, current.max_examples // 3),
                                                         stateful_step_count=min(current.stateful_step_count, 30)))
