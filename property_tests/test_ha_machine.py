"""A Hypothesis stateful machine over the HA world: Hypothesis picks every event (which
thread runs, which segment of which stream arrives and how long it is, which fault
strikes), and every HA property is checked after every step. A violation must be
expected (its cause named by the history) or the machine fails, shrunk."""

from hypothesis import strategies as hs
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from reference_impl import core
from reference_impl.ha.world import make_config
from spec import properties

ALL_FAULTS = core.FaultProfile(name="all", delay_ms=(1, 30), loss=0.1, duplicate=0.02, crash=0.1, os_crash=0.1,
                               disk_loss=0.05, restart=0.1, partition=0.1, one_way=0.1, heal=0.1,
                               ext=(("conn_drop", 0.1),), calm_at_ms=40_000)


class HypothesisChooser:
    """Local stand-in for property_tests.machines.HypothesisChooser (main): Hypothesis draws
    the next event, a fault about one time in eight, and a tick's random value."""

    def __init__(self, data) -> None:
        self.data = data

    def choose(self, w: core.World):
        events = core.protocol_events(w)
        kinds = core.fault_kinds(w)
        if kinds and (not events or self.data.draw(hs.integers(0, 7), label="fault?") == 0):
            kind = self.data.draw(hs.sampled_from(kinds), label="fault kind")
            return self.data.draw(hs.sampled_from(core.fault_events(w, (kind,))), label="fault")
        if not events:
            return None
        ev = self.data.draw(hs.sampled_from(events), label="event")
        if isinstance(ev, core.Tick):
            ev = ev.evolve(draw=self.data.draw(hs.integers(0, core.DRAW_SPAN - 1), label="draw"))
        return ev


class HaWorld(RuleBasedStateMachine):
    @initialize(nodes=hs.integers(2, 3), role=hs.sampled_from(["SYNC_MASTER", "ASYNC_MASTER"]),
                flush=hs.sampled_from(["ASYNC_FLUSH", "SYNC_FLUSH"]), version=hs.sampled_from(["4.9.4", "fixed"]),
                file_size=hs.sampled_from([256, 1024, 1 << 30]), producers=hs.integers(1, 2))
    def boot(self, nodes, role, flush, version, file_size, producers):
        cfg = make_config(nodes, {"broker_role": role, "flush_disk_type": flush, "version": version,
                                  "mapped_file_size_commit_log": file_size, "producers": producers,
                                  "messages": 40, "socket_buffer_bytes": 512, "ha_transfer_batch_size": 200})
        self.cfg = cfg.evolve(profile=ALL_FAULTS)
        self.w = core.init(self.cfg)
        self.monitor = properties.Monitor(properties.for_protocol("ha"))
        self.monitor.start(self.w)
        self.steps = 0

    @rule(data=hs.data(), count=hs.integers(1, 25))
    def run_events(self, data, count):
        chooser = HypothesisChooser(data)
        for _ in range(count):
            ev = chooser.choose(self.w)
            if ev is None:
                return
            after, obs = core.step(self.w, ev)
            self.steps += 1
            self.monitor.check(self.steps, self.w, ev, after, obs)
            self.w = after

    @invariant()
    def only_expected_violations(self):
        if hasattr(self, "monitor"):
            bad = self.monitor.unexpected()
            assert not bad, [(v.property, v.detail) for v in bad]

    @invariant()
    def ghost_findings_all_have_causes(self):
        if hasattr(self, "w"):
            g = self.w.ghost
            findings = g.lost + g.missing + tuple(g.misplaced.values())
            assert all(f.cause for f in findings), [f for f in findings if not f.cause]


def test_ha_world_machine():
    run_state_machine_as_test(HaWorld)
