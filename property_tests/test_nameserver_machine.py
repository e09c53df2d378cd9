"""A Hypothesis stateful machine over the nameserver world: Hypothesis chooses the faults (process and
machine crashes of brokers and NameServers, restarts, partitions, one-way cuts, heals, lost messages),
the operators' actions (role changes, shutdowns) and how long the world runs in between; every step is
checked against every NS-* property, and a violation must be one RocketMQ is known to allow here."""

import random

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from reference_impl import core
from reference_impl.core import faults
from reference_impl.nameserver import world as nw
from spec import properties as props

MAX_EVENTS_PER_RULE = 3000


class NameServerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        # A sparser world than the default (a send a second per producer) so that minutes pass in
        # a few hundred events and expiry, re-registration and route polls all come into play.
        cfg = nw.make_config(2, {"send_interval_ms": 1000})
        self.w = core.init(cfg.evolve(profile=faults.profile("none")))
        self.monitor = props.Monitor(props.for_protocol("nameserver"))
        self.monitor.start(self.w)
        self.i = 0

    def _step(self, event) -> None:
        after, obs = core.step(self.w, event)
        self.i += 1
        self.monitor.check(self.i, self.w, event, after, obs)
        self.w = after

    def _run(self, seed: int, events: int, until_ms: int | None = None) -> None:
        rng = random.Random(seed)
        for _ in range(events):
            if until_ms is not None and self.w.now >= until_ms:
                return
            evs = core.protocol_events(self.w)
            if not evs:
                return
            ev = evs[rng.randrange(len(evs))]
            if isinstance(ev, core.Tick):
                ev = core.Tick(node=ev.node, draw=rng.getrandbits(16))
            self._step(ev)

    @rule(seed=st.integers(0, 1 << 16), events=st.integers(1, 60))
    def run(self, seed, events):
        self._run(seed, events)

    @rule(seed=st.integers(0, 1 << 16), ms=st.sampled_from([3_000, 35_000, 140_000]))
    def wait(self, seed, ms):
        self._run(seed, MAX_EVENTS_PER_RULE, self.w.now + ms)

    def _crashable(self):
        return core.crashable(self.w)

    @precondition(lambda self: core.crashable(self.w))
    @rule(data=st.data(), machine=st.booleans())
    def crash(self, data, machine):
        node = data.draw(st.sampled_from(self._crashable()))
        self._step(core.Crash(node=node, os=machine))

    @precondition(lambda self: not all(self.w.alive))
    @rule(data=st.data())
    def restart(self, data):
        self._step(core.Restart(node=data.draw(st.sampled_from([i for i, up in enumerate(self.w.alive) if not up]))))

    @rule(data=st.data())
    def partition(self, data):
        self._step(core.Partition(groups=data.draw(st.sampled_from(core.isolations(len(self.w.nodes))))))

    @rule(a=st.integers(0, 8), b=st.integers(0, 8))
    def cut(self, a, b):
        if a != b:
            self._step(core.CutLink(src=a, dst=b))

    @precondition(lambda self: bool(self.w.net.cut))
    @rule()
    def heal(self):
        self._step(core.Heal())

    @precondition(lambda self: bool(self.w.net.flight))
    @rule(data=st.data())
    def lose(self, data):
        env = data.draw(st.sampled_from(self.w.net.flight))
        self._step(core.Drop(env=env.id))

    @rule(data=st.data(), action=st.sampled_from(["change_to_slave", "change_to_master", "shutdown"]))
    def operator(self, data, action):
        brokers = [i for i, x in enumerate(self.w.cfg.ids) if x.startswith("b") and self.w.alive[i]
                   and self.w.nodes[i].stopping is None]
        if not brokers:
            return
        i = data.draw(st.sampled_from(brokers))
        args = {"broker_id": data.draw(st.integers(1, 2))} if action == "change_to_slave" else {}
        before = self.w
        self.w, obs = nw.script_action(self.w, action, i, args)
        self.i += 1
        self.monitor.check(self.i, before, None, self.w, obs)

    @invariant()
    def only_known_violations(self):
        bad = self.monitor.unexpected()
        assert not bad, [(v.property, v.step, v.detail) for v in bad]


TestNameServerMachine = NameServerMachine.TestCase
