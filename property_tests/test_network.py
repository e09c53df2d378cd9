"""reference_impl.core.network: messages in flight, Netty-style RPCs and what a node's death does to them."""

from __future__ import annotations

from reference_impl.core import network as net


def two_rpcs():
    """0 asks 1 (rpc 1), 1 asks 2 (rpc 2), 2 tells 0 one-way (envelope 3), all at t = 100."""
    n = net.send(net.Network(), 100, 0, 1, "ask-1", ctx="c1", timeout_ms=3000)
    n = net.send(n, 100, 1, 2, "ask-2", ctx="c2", timeout_ms=3000)
    return net.send(n, 100, 2, 0, "note")


def test_one_way_send_opens_no_rpc():
    """A message without timeout is an envelope with rpc 0 and no Rpc record."""
    n = net.send(net.Network(), 5, 0, 1, "hello")
    (env,) = n.flight
    assert (env.src, env.dst, env.msg, env.sent_ms, env.rpc, env.reply) == (0, 1, "hello", 5, 0, False)
    assert n.rpcs == () and n.next_id == 2


def test_rpc_send_opens_an_rpc_with_its_deadline():
    """A request with timeout_ms opens an Rpc that fails at sent + timeout unless answered."""
    n = net.send(net.Network(), 5, 0, 1, "req", ctx=("vote", 1), timeout_ms=3000)
    (env,), (rpc,) = n.flight, n.rpcs
    assert env.rpc == rpc.id == env.id
    assert (rpc.requester, rpc.responder, rpc.deadline_ms, rpc.ctx) == (0, 1, 3005, ("vote", 1))


def test_reply_travels_back_on_the_open_rpc():
    """reply() puts a reply envelope from responder to requester, tagged with the RPC."""
    n = net.send(net.Network(), 5, 0, 1, "req", timeout_ms=3000)
    n = net.reply(net.remove(n, 1), 9, 1, "resp")
    (env,) = n.flight
    assert (env.src, env.dst, env.msg, env.sent_ms, env.rpc, env.reply) == (1, 0, "resp", 9, 1, True)


def test_reply_to_a_closed_rpc_is_discarded():
    """Netty drops a response whose opaque it no longer knows: no envelope is created."""
    n = net.send(net.Network(), 5, 0, 1, "req", timeout_ms=3000)
    n = net.close_rpc(net.remove(n, 1), 1)
    assert net.reply(n, 9, 1, "resp") == n


def test_duplicate_copies_the_message_under_a_new_id():
    """A duplicate is the same message, endpoints, send time and RPC, with a fresh id."""
    n = net.send(net.Network(), 5, 0, 1, "req", timeout_ms=3000)
    n = net.duplicate(n, 1)
    a, b = n.flight
    assert b == a.evolve(id=2) and n.next_id == 3 and len(n.rpcs) == 1


def test_fail_now_only_moves_a_deadline_earlier():
    """fail_now brings an open RPC's deadline to now; an earlier deadline and other RPCs are untouched."""
    n = two_rpcs()
    n2 = net.fail_now(n, 1, 500)
    assert [r.deadline_ms for r in n2.rpcs] == [500, 3100]
    assert net.fail_now(n2, 1, 800) == n2  # already due earlier


def test_node_down_drops_its_messages_and_fails_what_it_served():
    """Messages to or from the dead node vanish; RPCs it served fail now; RPCs it issued are forgotten."""
    n = net.node_down(two_rpcs(), 1, 700)
    assert [e.msg for e in n.flight] == ["note"]
    assert [(r.id, r.requester, r.responder, r.deadline_ms) for r in n.rpcs] == [(1, 0, 1, 700)]


def test_node_down_keeps_an_earlier_deadline():
    """An RPC already past its deadline keeps it (it fails at its own time, not later)."""
    n = net.fail_now(two_rpcs(), 1, 300)
    assert net.node_down(n, 1, 700).rpcs[0].deadline_ms == 300


def test_links_are_directed():
    """A cut (src, dst) blocks that direction only."""
    n = net.Network(cut=frozenset({(0, 1)}))
    assert not net.link_up(n, 0, 1) and net.link_up(n, 1, 0) and net.link_up(n, 0, 2)


def test_find_returns_none_for_unknown_ids():
    """Lookups of envelopes and RPCs that are gone return None."""
    n = two_rpcs()
    assert net.find(n, 99) is None and net.find_rpc(n, 3) is None and net.find(n, 3).msg == "note"
