"""The network between the nodes of a world: messages in flight, open RPCs, cut links.

Theory of operation
-------------------
Every message is an `Envelope` in `Network.flight`, which is in send order (ids
count up; a duplicate's copy is a new envelope at the end). The world may deliver it
at any time in the window `[sent + delay_min, sent + delay_max]` of the fault profile;
the chooser decides when (and in what order, which gives reordering). A message whose
window closes while its link is cut, or that the chooser drops, is lost.

Reordering stands for the threads a receiver hands requests to (Netty's channel is one
TCP connection, which delivers in order; the remoting server's pools may handle them in
any order). Where the receiver handles a kind of message on one thread in the order its
connection reads it (DLedger's pushes under `push_processor` "single_thread"), the
protocol says so (`Protocol.fifo`), and the schedule delivers those messages on each
(src, dst) link in send order (core/schedule.py).

RocketMQ and DLedger talk over Netty request/response RPCs with a timeout
(`invokeAsync(addr, request, timeoutMillis, callback)`). An RPC is an `Rpc` record
that stays open until its reply is delivered or it fails:

- its request or reply is lost (dropped, or stuck behind a cut link): the requester
  learns at `sent + timeout` when it waits for the reply (`invokeSync`); with a callback
  (`invokeAsync`, `Send.scanned`) only Netty's response-table scan notices, on a 1 s
  timer and once `begin + timeout + 1000 <= now` (NettyRemotingAbstract#scanResponseTable,
  NettyRemotingClient's timer), so the callback fires at `sent + timeout + 1000` or up to
  one scan period later (the RPC's `window`; a reply that arrives before then still
  completes it);
- the responder is down (connection refused), or crashes while holding the request
  (connection reset): the callback fires at once.

A reply to an RPC that is no longer open is discarded, as Netty discards a response
whose opaque it no longer knows; so a duplicated request, answered twice, completes
its RPC once. One-way messages have no `Rpc`.

Nodes are addressed by index here; protocols use their own ids (`n0`, ...), and the
world translates.
"""

from __future__ import annotations

from typing import Any

from reference_impl.core.state import record

SCAN_GRACE_MS = 1000  # scanResponseTable removes a future once begin + timeout + 1000 <= now
SCAN_PERIOD_MS = 1000  # NettyRemotingClient#start: timer.scheduleAtFixedRate(scanResponseTable, 3000, 1000)


@record
class Send:
    """Output of a transition: send `msg` to `dst`; `ctx` comes back with the reply.

    `timeout_ms` None means a one-way message (no reply, no RPC). `scanned`: an
    `invokeAsync` whose callback learns of a timeout from Netty's response-table scan.
    """

    dst: str
    msg: Any
    ctx: Any = None
    timeout_ms: int | None = None
    scanned: bool = False


@record
class Respond:
    """Output of a transition: complete the earlier RPC `rpc` with reply `msg`.

    Used where Java returns a future that completes later (the transferee answers a
    leadership-transfer request only once it has won or lost).
    """

    rpc: int
    msg: Any


@record
class Envelope:
    id: int
    src: int
    dst: int
    msg: Any
    sent_ms: int
    rpc: int = 0  # 0: one-way
    reply: bool = False


@record
class Rpc:
    id: int
    requester: int
    responder: int
    deadline_ms: int  # the earliest its failure callback fires
    ctx: Any
    window: int = 0  # how much later it may fire (the scan period of an invokeAsync timeout)


@record
class Network:
    flight: tuple[Envelope, ...] = ()
    rpcs: tuple[Rpc, ...] = ()
    cut: frozenset[tuple[int, int]] = frozenset()
    next_id: int = 1


def link_up(net: Network, src: int, dst: int) -> bool:
    return not net.cut or (src, dst) not in net.cut


def find(net: Network, env_id: int) -> Envelope | None:
    for env in net.flight:
        if env.id == env_id:
            return env
    return None


def find_rpc(net: Network, rpc_id: int) -> Rpc | None:
    for rpc in net.rpcs:
        if rpc.id == rpc_id:
            return rpc
    return None


def send(net: Network, now: int, src: int, dst: int, msg: Any, ctx: Any = None,
         timeout_ms: int | None = None, scanned: bool = False) -> Network:
    """Put a message in flight; with `timeout_ms`, open an RPC for it."""
    nid = net.next_id
    if timeout_ms is None:
        env = Envelope(id=nid, src=src, dst=dst, msg=msg, sent_ms=now)
        return net.evolve(flight=net.flight + (env,), next_id=nid + 1)
    env = Envelope(id=nid, src=src, dst=dst, msg=msg, sent_ms=now, rpc=nid)
    if scanned:
        rpc = Rpc(id=nid, requester=src, responder=dst, deadline_ms=now + timeout_ms + SCAN_GRACE_MS, ctx=ctx,
                  window=SCAN_PERIOD_MS)
    else:
        rpc = Rpc(id=nid, requester=src, responder=dst, deadline_ms=now + timeout_ms, ctx=ctx)
    return net.evolve(flight=net.flight + (env,), rpcs=net.rpcs + (rpc,), next_id=nid + 1)


def reply(net: Network, now: int, rpc_id: int, msg: Any) -> Network:
    """Send the reply of an open RPC back to its requester (no-op if it already closed)."""
    rpc = find_rpc(net, rpc_id)
    if rpc is None:
        return net
    env = Envelope(id=net.next_id, src=rpc.responder, dst=rpc.requester, msg=msg,
                   sent_ms=now, rpc=rpc_id, reply=True)
    return net.evolve(flight=net.flight + (env,), next_id=net.next_id + 1)


def take(net: Network, env_id: int) -> tuple[Envelope, Network]:
    """The envelope `env_id` (which must be in flight) and the network without it."""
    flight = net.flight
    for k, env in enumerate(flight):
        if env.id == env_id:
            return env, net.evolve(flight=flight[:k] + flight[k + 1:])
    raise KeyError(env_id)


def remove(net: Network, env_id: int) -> Network:
    flight = net.flight
    for k, env in enumerate(flight):
        if env.id == env_id:
            return net.evolve(flight=flight[:k] + flight[k + 1:])
    return net


def duplicate(net: Network, env_id: int) -> Network:
    env = find(net, env_id)
    assert env is not None
    copy = env.evolve(id=net.next_id)
    return net.evolve(flight=net.flight + (copy,), next_id=net.next_id + 1)


def close_rpc(net: Network, rpc_id: int) -> Network:
    rpcs = net.rpcs
    for k, rpc in enumerate(rpcs):
        if rpc.id == rpc_id:
            return net.evolve(rpcs=rpcs[:k] + rpcs[k + 1:])
    return net


def fail_now(net: Network, rpc_id: int, now: int) -> Network:
    """Make an open RPC fail at `now` (connection refused or reset)."""
    return net.evolve(rpcs=tuple(r.evolve(deadline_ms=now, window=0) if r.id == rpc_id and r.deadline_ms > now
                                 else r for r in net.rpcs))


def node_down(net: Network, node: int, now: int, reset: bool = True) -> Network:
    """A node's process died: its sockets are gone.

    Messages to or from it vanish; RPCs it was serving fail at once for their
    requesters (connection reset); RPCs it had issued are forgotten with it.
    `reset` False: the machine went down with it and sends no RST, so the RPCs it was
    serving run until their deadlines.
    """
    flight = tuple(e for e in net.flight if e.src != node and e.dst != node)
    rpcs = tuple(r.evolve(deadline_ms=now, window=0) if reset and r.responder == node and r.deadline_ms > now else r
                 for r in net.rpcs if r.requester != node)
    return net.evolve(flight=flight, rpcs=rpcs)
