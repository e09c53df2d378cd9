"""HA-9..HA-13 (spec/ha_decisions.py): each decision property reports a broken reference as an
UNEXPECTED violation on the step that makes the wrong decision, and the same history is clean without
the break (no unexpected violation, none of that property)."""

from __future__ import annotations

import pytest

from histories import runner
from histories.mutants import catalogue as mu
from reference_impl import core
from reference_impl.core import faults
from reference_impl.core import network as net
from reference_impl.core.network import Respond
from reference_impl.ha import broker as ha_broker
from reference_impl.ha import commit_log as st
from reference_impl.ha import service as ha_service
from reference_impl.ha import wire
from reference_impl.ha.records import SendMessage
from reference_impl.rocketmq import PutMessageStatus
from spec import ha_decisions, properties

PROTOCOL = "ha"
SYNC = {"broker_role": "SYNC_MASTER", "flush_disk_type": "SYNC_FLUSH"}


def simulate(profile: str, seed: int, steps: int, overrides: dict) -> runner.RunResult:
    cfg = core.protocol(PROTOCOL).make_config(2, overrides)
    return runner.simulate(cfg.evolve(profile=faults.profile(profile, PROTOCOL)), seed, steps)


# (mutant, the decision property that must report it, a history that shows it)
CAUGHT = [
    ("ha.housekeeping_after_4s", "HA-10", "gentle", 1, 1300, {}),
    ("ha.slave_ok_without_connection", "HA-11", "gentle", 1, 800, SYNC),
    ("ha.sync_flush_answers_at_once", "HA-12", "none", 1, 20, SYNC),
]


@pytest.mark.parametrize(("mutant", "prop", "profile", "seed", "steps", "overrides"), CAUGHT,
                         ids=[c[0] for c in CAUGHT])
def test_a_wrong_decision_is_an_unexpected_violation_of_its_property(mutant, prop, profile, seed, steps,
                                                                     overrides) -> None:
    assert prop in mu.BY_NAME[mutant].catches
    with mu.installed(mu.BY_NAME[mutant]):
        broken = simulate(profile, seed, steps, overrides)
    found = [v for v in broken.violations if v.property == prop]
    assert found and found[0].expected is None, broken.violations
    clean = simulate(profile, seed, steps, overrides)
    assert not [v for v in clean.violations if v.expected is None], clean.violations
    assert not [v for v in clean.violations if v.property == prop]


def test_a_send_the_network_delivered_twice_is_judged_as_its_own_put() -> None:
    """lossy, seed 1: step 1100 delivers a SEND_MESSAGE a second time (the same rpc); its new put
    waits for GroupCommitService like any other, while the first delivery's put already has its
    flush status. HA-11/HA-12 judge the put this delivery made, not the first one of that rpc."""
    r = simulate("lossy", 1, 1200, SYNC)
    assert not [v for v in r.violations if v.property in ("HA-11", "HA-12")], r.violations


def _duplicate_after_close(broken_copy: bool) -> list:
    """SYNC_MASTER without a slave: p0's SEND is duplicated, the first copy is answered
    SLAVE_NOT_AVAILABLE and that answer closes the RPC, then the second copy arrives and the master
    puts the message again (SendMessageProcessor serves every request it reads). Its answer goes
    nowhere: the producer no longer waits for that opaque (NettyRemotingAbstract#processResponseCommand).
    `broken_copy`: the second put is served by a reference whose isSlaveOK holds without a
    connection. Returns the violations."""
    cfg = core.protocol(PROTOCOL).make_config(2, {"broker_role": "SYNC_MASTER", "flush_disk_type": "ASYNC_FLUSH",
                                                  "producers": 1, "messages": 3})
    w = core.init(cfg.evolve(profile=faults.profile("none", PROTOCOL)))
    monitor = properties.Monitor(properties.for_protocol(PROTOCOL))
    monitor.start(w)
    steps = [0]

    def do(event):
        nonlocal w
        after, obs = core.step(w, event)
        steps[0] += 1
        monitor.check(steps[0], w, event, after, obs)
        w = after

    producer = cfg.ids.index("p0")
    while not [e for e in w.net.flight if type(e.msg) is SendMessage]:
        do(next(e for e in core.protocol_events(w) if type(e) is core.Tick and e.node == producer))
    send = next(e for e in w.net.flight if type(e.msg) is SendMessage)
    do(core.Duplicate(env=send.id))
    copy = next(e for e in w.net.flight if type(e.msg) is SendMessage and e.id != send.id)
    do(core.Deliver(env=send.id))
    reply = next(e for e in w.net.flight if e.reply)
    assert reply.msg.status is PutMessageStatus.SLAVE_NOT_AVAILABLE
    do(core.Deliver(env=reply.id))
    assert net.find_rpc(w.net, send.rpc) is None
    if broken_copy:
        with mu.installed(mu.BY_NAME["ha.slave_ok_without_connection"]):
            do(core.Deliver(env=copy.id))
    else:
        do(core.Deliver(env=copy.id))
    assert st.max_offset(w.nodes[0].store) == 2 * reply.msg.size  # the copy was put again
    return list(monitor.violations.values())


def test_a_send_delivered_after_its_rpc_closed_is_judged_by_what_the_master_did() -> None:
    """The CI false alarm (test_ha_machine, profile ci): HA-11 looked for the second put's answer,
    found none (the network discards an answer to a closed RPC) and reported 'a put ending at -1'.
    The put's end is its Appended record, and a put that did not wait shows the at-once decision."""
    assert not [v for v in _duplicate_after_close(False) if v.property == "HA-11"]


def test_a_wrong_decision_on_a_send_delivered_after_its_rpc_closed_is_unexpected() -> None:
    found = [v for v in _duplicate_after_close(True) if v.property == "HA-11"]
    assert found and found[0].expected is None and "isSlaveOK failed (0 connection(s)" in found[0].detail, found


def _two_puts_of_one_send(monkeypatch, broken: bool) -> tuple[bool, str]:
    """`fixed`, SYNC_MASTER, 256-byte files: one SEND delivered twice is put at 0 and again at 256 (two
    puts of one rpc); an empty slave is fed from 256 (the last mapped file) and acks past the copy.
    At slaveTimeout GroupTransferService answers the put at 0 FLUSH_SLAVE_TIMEOUT (no connection
    started at or below it) and the copy PUT_OK, in one tick: HA-11 judges each answer against its
    own put (the machine's false alarm judged the put at 0 by the copy's PUT_OK). `broken`:
    GroupTransferService takes push2SlaveMaxOffset alone, as 4.9.4 does, so the put at 0 is PUT_OK.
    Returns HA-11's verdict on that tick and its reason."""
    if broken:
        monkeypatch.setattr(ha_service, "transfer_ok", lambda c, b, req: b.push2slave_max >= req.next_offset)
    cfg = core.protocol(PROTOCOL).make_config(2, {"broker_role": "SYNC_MASTER", "version": "fixed",
                                                  "mapped_file_size_commit_log": 256})
    w = core.init(cfg.evolve(profile=faults.profile("none", PROTOCOL)))
    c = cfg.proto
    send = SendMessage(msg_id="p0-0", body="p0-0|" + "." * 150)
    flight = net.send(w.net, 0, cfg.ids.index("p0"), 0, send, timeout_ms=c.send_msg_timeout)
    rpc = flight.flight[-1].rpc
    flight = net.remove(flight, flight.flight[-1].id)  # delivered (twice): the RPC stays open
    b = ha_service.accept(c, w.nodes[0], 1, "n1", 0)
    b, _, _ = ha_broker.handle_put(c, b, send, rpc, 0)
    b, _, _ = ha_broker.handle_put(c, b, send, rpc, 0)
    first, copy = b.puts
    assert (first.offset, copy.offset) == (0, 256)
    b, _ = ha_service.read_event(c, b, 1, wire.encode_ack(0), 1)
    b, _ = ha_service.write_loop(c, b, 0, 1)
    assert b.conns[0].transfer_start == 256
    b, _ = ha_service.read_event(c, b, 1, wire.encode_ack(copy.offset + copy.size), 2)
    ghost = w.ghost.evolve(appended_at=w.ghost.appended_at.set(0, 0).set(256, 0))
    before = w.evolve(now=2, nodes=(b,) + w.nodes[1:], net=flight, ghost=ghost)
    now = c.store.slave_timeout + 10
    after_master, outs = ha_broker.on_tick(c, b, now, 0)
    answers = [o for o in outs if isinstance(o, Respond)]
    assert [(o.rpc, o.msg.offset) for o in answers] == [(rpc, 0), (rpc, 256)]
    for o in answers:
        flight = net.reply(flight, now, o.rpc, o.msg)
    after = before.evolve(now=now, nodes=(after_master,) + w.nodes[1:], net=flight)
    verdict = ha_decisions.ha11(before, core.Tick(node=0, draw=0), after, ())
    return verdict, ha_decisions._why(after)


def test_two_puts_of_one_send_are_judged_each_by_its_own_answer(monkeypatch) -> None:
    assert _two_puts_of_one_send(monkeypatch, broken=False) == (True, "see the trace")


def test_a_put_ok_for_the_put_the_transfer_did_not_cover_is_unexpected(monkeypatch) -> None:
    verdict, why = _two_puts_of_one_send(monkeypatch, broken=True)
    assert not verdict and "answered p0-0 (end 179) PUT_OK" in why, why
