"""Netty remoting as the NameServer protocol sees it: TCP channels, connects, FIN and RST.

Theory of operation
-------------------
Models the parts of `NettyRemotingClient` (4.9.4) that decide routing outcomes:
`invokeSync(addr, request, timeoutMillis)` with `getAndCreateChannel`,
`getAndCreateNameserverChannel` (round-robin over the NameServer list from a random
`namesrvIndex`), `createChannel` (connect, `connectTimeoutMillis` 3000) and
`closeChannel`, with `clientCloseSocketIfTimeout` = true (its 4.9.4 default).

A channel is a `ChannelId` (client, incarnation, k): unique per client process, so a
late FIN of an old channel never matches a newer one. The client keeps its
established channels per server address in a `RemotingClient`; the server keeps the
channels it accepted (with their last I/O time) in its own state. The world's network
carries the segments that matter:

- `Connect` / `Connected`: the TCP handshake. A refused connect (the server process is
  down) fails at once; an unanswered one (the server's machine is off, or the link is
  cut) fails after `connect_timeout_millis`.
- a request on an established channel: its reply, or `Reset` (RST) when the server does
  not know the channel (it closed it, or restarted without the client hearing a FIN).
- `Fin`: one side closed the channel; the other side drops it when it arrives. A process
  crash makes the OS send FINs for every open channel; a machine crash sends nothing.

`invokeSync` checks its budget after getting a channel (`costTime > timeoutMillis` ->
RemotingTimeoutException, closing the fresh channel): the model does the same after
`Connected` arrives. This is what makes apache/rocketmq#7056 reachable: with two
NameServers and the first unreachable, the 3000 ms connect timeout uses the whole
3000 ms budget of every call.
"""

from __future__ import annotations

from typing import Any

from reference_impl.core.network import Send
from reference_impl.core.state import EMPTY, FrozenMap, record


@record
class NettyClientConfig:
    """NettyClientConfig / NettySystemConfig defaults (4.9.4)."""

    connect_timeout_millis: int = 3000  # com.rocketmq.remoting.client.connect.timeout
    client_close_socket_if_timeout: bool = True  # com.rocketmq.remoting.client.closeSocketIfTimeout


@record
class ChannelId:
    client: str
    inc: int
    k: int


# --- segments ---


@record
class Connect:
    """TCP SYN (an RPC: its reply is the handshake completing)."""

    chan: ChannelId


@record
class Connected:
    chan: ChannelId


@record
class Reset:
    """RST: the server has no such channel (closed or forgotten); the request was not processed."""


@record
class Fin:
    """One side closed `chan` (one-way)."""

    chan: ChannelId


# --- client side ---


@record
class RemotingClient:
    """NettyRemotingClient state: established channels and the chosen NameServer."""

    owner: str
    inc: int = 0
    next_k: int = 1
    channels: FrozenMap = EMPTY  # server address -> ChannelId
    namesrv_addr_list: tuple = ()
    namesrv_index: int | None = None  # namesrvIndex, drawn at first use (initValueIndex: random % 999)
    namesrv_addr_choosed: str | None = None


@record
class Invoke:
    """An invokeSync in progress (the RPC context). `addr` None: a NameServer call."""

    purpose: Any  # what the caller does with the outcome
    addr: str | None
    request: Any  # a record with a `chan` field
    began: int
    timeout: int
    stage: str  # "connect" or "request"
    target: str  # the server this stage talks to
    deadline: int  # when this stage's RPC times out
    tries: int = 0  # NameServer connect attempts so far in this call
    oneway: bool = False  # invokeOneway: the request is written, no reply is awaited


@record
class Done:
    """An invokeSync finished: `response` or an `error` (a Java exception name)."""

    purpose: Any
    target: str
    response: Any = None
    error: str | None = None


def hand_over_done(owner: Any, outs: tuple, on_done: Any) -> tuple[Any, tuple]:
    """Give each finished invokeSync to its caller, `on_done(owner, done) -> (owner, outputs)`
    (the callback Java runs on the calling thread when invokeSync returns); pass the rest through."""
    rest: tuple = ()
    for o in outs:
        if isinstance(o, Done):
            owner, more = on_done(owner, o)
            rest += more
        else:
            rest += (o,)
    return owner, rest


# Exception names, as Java throws them (reported in observations and send results).
CONNECT_EXCEPTION = "RemotingConnectException"
TIMEOUT_EXCEPTION = "RemotingTimeoutException"
CALL_TIMEOUT_EXCEPTION = "RemotingTimeoutException:invokeSync call timeout"  # budget spent before the request
SEND_REQUEST_EXCEPTION = "RemotingSendRequestException"


def init_client(owner: str, inc: int, namesrv_addr_list: tuple) -> RemotingClient:
    return RemotingClient(owner=owner, inc=inc, namesrv_addr_list=namesrv_addr_list)


def invoke_sync(cfg: NettyClientConfig, rc: RemotingClient, addr: str | None, request: Any, timeout: int,
                purpose: Any, now: int, draw: int | None = None, oneway: bool = False
                ) -> tuple[RemotingClient, tuple]:
    """NettyRemotingClient#invokeSync (or #invokeOneway): use the established channel, else
    connect first. `addr` None chooses a NameServer (getAndCreateNameserverChannel)."""
    inv = Invoke(purpose=purpose, addr=addr, request=request, began=now, timeout=timeout, stage="request",
                 target=addr or "", deadline=now + timeout, oneway=oneway)
    if addr is None:
        chosen = rc.namesrv_addr_choosed
        if chosen is not None and chosen in rc.channels:
            return rc, _send_request(rc, inv.evolve(target=chosen), now)
        if not rc.namesrv_addr_list:
            return rc, (Done(purpose=purpose, target="", error=CONNECT_EXCEPTION),)
        if rc.namesrv_index is None:
            rc = rc.evolve(namesrv_index=(draw or 0) % 999)
        return _connect_next_namesrv(cfg, rc, inv, now)
    if addr in rc.channels:
        return rc, _send_request(rc, inv, now)
    return _connect(cfg, rc, inv, addr, now)


def _connect_next_namesrv(cfg: NettyClientConfig, rc: RemotingClient, inv: Invoke, now: int
                          ) -> tuple[RemotingClient, tuple]:
    """One turn of getAndCreateNameserverChannel's loop: ++namesrvIndex, choose, connect."""
    index = rc.namesrv_index + 1
    target = rc.namesrv_addr_list[index % len(rc.namesrv_addr_list)]
    rc = rc.evolve(namesrv_index=index, namesrv_addr_choosed=target)
    return _connect(cfg, rc, inv.evolve(tries=inv.tries + 1), target, now)


def _connect(cfg: NettyClientConfig, rc: RemotingClient, inv: Invoke, target: str, now: int
             ) -> tuple[RemotingClient, tuple]:
    """NettyRemotingClient#createChannel: bootstrap.connect, awaited for connectTimeoutMillis."""
    chan = ChannelId(client=rc.owner, inc=rc.inc, k=rc.next_k)
    inv = inv.evolve(stage="connect", target=target, deadline=now + cfg.connect_timeout_millis)
    return rc.evolve(next_k=rc.next_k + 1), (Send(dst=target, msg=Connect(chan=chan), ctx=inv,
                                                  timeout_ms=cfg.connect_timeout_millis),)


def _send_request(rc: RemotingClient, inv: Invoke, now: int) -> tuple:
    msg = inv.request.evolve(chan=rc.channels[inv.target])
    if inv.oneway:
        return Send(dst=inv.target, msg=msg), Done(purpose=inv.purpose, target=inv.target)
    return (Send(dst=inv.target, msg=msg, ctx=inv, timeout_ms=max(1, inv.deadline - now)),)


def on_invoke_response(cfg: NettyClientConfig, rc: RemotingClient, inv: Invoke, resp: Any, now: int
                       ) -> tuple[RemotingClient, tuple]:
    """The reply (or failure, `resp` None) of one stage of an invokeSync. The outputs end
    with a `Done` once the call has an outcome."""
    fast = resp is None and now < inv.deadline  # refused or reset, not a timeout
    if inv.stage == "connect":
        if isinstance(resp, Connected):
            rc = rc.evolve(channels=rc.channels.set(inv.target, resp.chan))
            cost = now - inv.began
            if inv.timeout < cost:
                # invokeSync: "invokeSync call the addr[...] timeout", then closeChannel.
                rc, outs = close_channel(rc, inv.target)
                return rc, outs + (Done(purpose=inv.purpose, target=inv.target, error=CALL_TIMEOUT_EXCEPTION),)
            inv = inv.evolve(stage="request", deadline=inv.began + inv.timeout)
            return rc, _send_request(rc, inv, now)
        # createChannel returned null: refused (at once) or no answer within connectTimeoutMillis.
        if inv.addr is None and inv.tries < len(rc.namesrv_addr_list):
            return _connect_next_namesrv(cfg, rc, inv, now)
        return rc, (Done(purpose=inv.purpose, target=inv.target, error=CONNECT_EXCEPTION),)
    if resp is None or isinstance(resp, Reset):
        if isinstance(resp, Reset) or fast:
            # The channel is dead (RST or the peer's process died): failFast, closeChannel.
            rc = rc.evolve(channels=_without_chan(rc.channels, inv.target, inv.request))
            return rc, (Done(purpose=inv.purpose, target=inv.target, error=SEND_REQUEST_EXCEPTION),)
        outs: tuple = ()
        if cfg.client_close_socket_if_timeout:
            rc, outs = close_channel(rc, inv.target, only=_chan_of(inv.request))
        return rc, outs + (Done(purpose=inv.purpose, target=inv.target, error=TIMEOUT_EXCEPTION),)
    return rc, (Done(purpose=inv.purpose, target=inv.target, response=resp),)


def _chan_of(request: Any) -> ChannelId | None:
    return getattr(request, "chan", None)


def _without_chan(channels: FrozenMap, target: str, request: Any) -> FrozenMap:
    chan = _chan_of(request)
    return channels.without(target) if chan is None or channels.get(target) in (chan, None) else channels


def close_channel(rc: RemotingClient, target: str, only: ChannelId | None = None) -> tuple[RemotingClient, tuple]:
    """NettyRemotingClient#closeChannel: forget the channel to `target` and send FIN."""
    chan = rc.channels.get(target)
    if chan is None or (only is not None and chan != only):
        return rc, ()
    return rc.evolve(channels=rc.channels.without(target)), (Send(dst=target, msg=Fin(chan=chan)),)


def on_fin(rc: RemotingClient, peer: str, chan: ChannelId) -> RemotingClient:
    """The server closed the channel: NettyConnectManageHandler#close -> closeChannel."""
    if rc.channels.get(peer) == chan:
        return rc.evolve(channels=rc.channels.without(peer))
    return rc


def fins_on_crash(rc: RemotingClient) -> tuple:
    """What the OS sends when the process dies: a FIN on every open channel (peer, Fin)."""
    return tuple((peer, Fin(chan=chan)) for peer, chan in rc.channels.items())


def restart_client(rc: RemotingClient) -> RemotingClient:
    """A new process: no channels, a new incarnation, the index drawn again."""
    return RemotingClient(owner=rc.owner, inc=rc.inc + 1, namesrv_addr_list=rc.namesrv_addr_list)
