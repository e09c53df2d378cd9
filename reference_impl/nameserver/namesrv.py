"""A NameServer process (RocketMQ 4.9.4 NamesrvController) around its RouteInfoManager.

Theory of operation
-------------------
Models `NamesrvController` (the scheduled `scanNotActiveBroker`, initial delay 5 s,
every 10 s), `DefaultRequestProcessor` (REGISTER_BROKER, UNREGISTER_BROKER,
GET_ROUTEINFO_BY_TOPIC), `BrokerHousekeepingService` (a channel's close, exception or
idle event calls `RouteInfoManager#onChannelDestroy`) and the server side of
`NettyRemotingServer` (accepted channels, `IdleStateHandler(0, 0, 120 s)` that closes a
channel with no I/O for `serverChannelMaxIdleTimeSeconds`).

The routing tables are `reference_impl.nameserver.route_info`. Everything is in memory: a crash
loses the tables and the channels; a restarted NameServer is empty until brokers
register again. A process crash makes the OS send a FIN on every accepted channel; a
machine crash sends nothing, and clients find out by timeouts or by a RST (`Reset`) on
their next request.

Inputs: `on_tick` (the scan, idle channels), requests (`on_request`), FINs from clients
(`on_message`). Outputs: replies, FINs for channels it closes, and observations of what
changed in its tables (`BrokerRegistered`, `BrokerRemoved`, ...).
"""

from __future__ import annotations

from typing import Any

from reference_impl import rocketmq
from reference_impl.core.network import Send
from reference_impl.core.state import EMPTY, FrozenMap, record
from reference_impl.nameserver import route_info as ri
from reference_impl.nameserver.remoting import ChannelId, Connect, Connected, Fin, Reset


@record
class NamesrvConfig:
    """NamesrvController / NettyServerConfig defaults (4.9.4)."""

    scan_not_active_broker_initial_ms: int = 5000  # scheduleAtFixedRate(scanNotActiveBroker, 5, 10, SECONDS)
    scan_not_active_broker_interval_ms: int = 10000
    broker_channel_expired_time: int = ri.BROKER_CHANNEL_EXPIRED_TIME  # 120000
    server_channel_max_idle_time_seconds: int = 120  # NettyServerConfig; 0 disables the idle handler


# --- requests and replies (RequestCode / ResponseCode) ---


@record
class RegisterBroker:
    """REGISTER_BROKER: RegisterBrokerRequestHeader + RegisterBrokerBody."""

    chan: ChannelId | None
    cluster_name: str
    broker_addr: str
    broker_name: str
    broker_id: int
    ha_server_addr: str
    topic_config: ri.TopicConfigSerializeWrapper
    filter_server_list: tuple = ()


@record
class RegisterBrokerResponse:
    code: int
    ha_server_addr: str | None = None
    master_addr: str | None = None


@record
class UnregisterBroker:
    """UNREGISTER_BROKER"""

    chan: ChannelId | None
    cluster_name: str
    broker_addr: str
    broker_name: str
    broker_id: int


@record
class GetRouteInfo:
    """GET_ROUTEINFO_BY_TOPIC"""

    chan: ChannelId | None
    topic: str


@record
class RouteResponse:
    code: int
    route: ri.TopicRouteData | None = None


@record
class Response:
    code: int


# --- observations ---


@record
class BrokerRegistered:
    broker_addr: str
    broker_name: str
    broker_id: int
    first: bool


@record
class BrokerRemoved:
    """A live entry left the tables; `reason`: unregister, expired (the scan), channel_closed, channel_idle."""

    broker_addr: str
    reason: str


@record
class BrokerUnregistered:
    """unregisterBroker ran; `removed_addr` is what brokerAddrs held under `broker_id` (removal is by id)."""

    broker_addr: str
    broker_name: str
    broker_id: int
    removed_addr: str | None


@record
class ConnectionReset:
    """A request came on a channel this NameServer does not know: the peer gets a RST."""

    peer: str


# --- the node ---


@record
class NameServer:
    self_id: str
    inc: int = 0
    rim: ri.RouteInfo = ri.RouteInfo()
    channels: FrozenMap = EMPTY  # ChannelId -> last I/O time, for every accepted channel
    next_scan_ms: int = 0
    fins: tuple | None = None  # after a process crash: (peer, Fin) the OS still has to send
    machine_down: bool = False  # crashed with its machine: no FIN, no RST


def boot(c: NamesrvConfig, self_id: str, now: int, inc: int = 0) -> NameServer:
    """NamesrvController#initialize + start: empty tables, the scan scheduled."""
    return NameServer(self_id=self_id, inc=inc, next_scan_ms=now + c.scan_not_active_broker_initial_ms)


def crash(n: NameServer, kind: str) -> NameServer:
    """Everything is volatile. A process crash leaves FINs for the OS to send."""
    fins = tuple((chan.client, Fin(chan=chan)) for chan in n.channels) if kind == "process" else None
    return NameServer(self_id=n.self_id, inc=n.inc, fins=fins, machine_down=kind != "process")


def restart(c: NamesrvConfig, n: NameServer, now: int) -> NameServer:
    return boot(c, n.self_id, now, inc=n.inc + 1).evolve(fins=n.fins)


def remote_addr(chan: ChannelId) -> str:
    """RemotingHelper.parseChannelRemoteAddr: the client's ephemeral socket address, never a broker address."""
    return f"{chan.client}#{chan.inc}.{chan.k}"


def idle_ms(c: NamesrvConfig) -> int:
    return c.server_channel_max_idle_time_seconds * 1000


def wake_at(c: NamesrvConfig, n: NameServer) -> int:
    wake = n.next_scan_ms
    idle = idle_ms(c)
    if idle > 0:
        for last in n.channels.values():
            if last + idle < wake:
                wake = last + idle
    return wake


def _removed(before: ri.RouteInfo, after: ri.RouteInfo, reason: str) -> tuple:
    return tuple(BrokerRemoved(broker_addr=a, reason=reason) for a in before.broker_live_table
                 if a not in after.broker_live_table)


def on_tick(c: NamesrvConfig, n: NameServer, now: int) -> tuple[NameServer, tuple]:
    """The scheduled scanNotActiveBroker, and the IdleStateHandler of each channel."""
    outs: tuple = ()
    if now >= n.next_scan_ms:
        n, outs = scan_not_active_broker(c, n, now)
        nxt = n.next_scan_ms
        while nxt <= now:
            nxt += c.scan_not_active_broker_interval_ms
        n = n.evolve(next_scan_ms=nxt)
    idle = idle_ms(c)
    if idle > 0:
        for chan, last in tuple(n.channels.items()):
            if last + idle <= now:
                n, closed = close_channel(n, chan, "channel_idle")
                outs += closed
    return n, outs


def scan_not_active_broker(c: NamesrvConfig, n: NameServer, now: int) -> tuple[NameServer, tuple]:
    """RouteInfoManager#scanNotActiveBroker, with RemotingUtil.closeChannel on each expired channel."""
    rim, removed = ri.scan_not_active_broker(n.rim, now, c.broker_channel_expired_time)
    if not removed:
        return n, ()
    outs: tuple = _removed(n.rim, rim, "expired")
    channels = n.channels
    for _, chan in removed:
        if chan in channels:
            channels = channels.without(chan)
            outs += (Send(dst=chan.client, msg=Fin(chan=chan)),)
    return n.evolve(rim=rim, channels=channels), outs


def close_channel(n: NameServer, chan: ChannelId, reason: str) -> tuple[NameServer, tuple]:
    """The server closes a channel (idle): FIN to the client, then onChannelDestroy."""
    n = n.evolve(channels=n.channels.without(chan))
    n, outs = on_channel_destroy(n, chan, reason)
    return n, outs + (Send(dst=chan.client, msg=Fin(chan=chan)),)


def on_channel_destroy(n: NameServer, chan: ChannelId, reason: str) -> tuple[NameServer, tuple]:
    """BrokerHousekeepingService#onChannelClose/Idle -> RouteInfoManager#onChannelDestroy."""
    rim = ri.on_channel_destroy(n.rim, remote_addr(chan), chan)
    if rim is n.rim:
        return n, ()
    return n.evolve(rim=rim), _removed(n.rim, rim, reason)


def on_request(c: NamesrvConfig, n: NameServer, msg: Any, rpc: int, now: int) -> tuple[NameServer, Any, tuple]:
    """NettyRemotingServer + DefaultRequestProcessor#processRequest."""
    if isinstance(msg, Connect):
        return n.evolve(channels=n.channels.set(msg.chan, now)), Connected(chan=msg.chan), ()
    chan = msg.chan
    if chan not in n.channels:
        return n, Reset(), (ConnectionReset(peer=chan.client),)
    n = n.evolve(channels=n.channels.set(chan, now))
    if isinstance(msg, RegisterBroker):
        return register_broker(n, msg, now)
    if isinstance(msg, GetRouteInfo):
        return n, get_route_info_by_topic(n, msg.topic), ()
    if isinstance(msg, UnregisterBroker):
        return unregister_broker(n, msg)
    raise TypeError(f"not a NameServer request: {msg!r}")


def register_broker(n: NameServer, req: RegisterBroker, now: int) -> tuple[NameServer, Any, tuple]:
    """DefaultRequestProcessor#registerBrokerWithFilterServer (the body's crc32 always matches here)."""
    rim, result, first = ri.register_broker(n.rim, req.cluster_name, req.broker_addr, req.broker_name,
                                            req.broker_id, req.ha_server_addr, req.topic_config,
                                            req.filter_server_list, req.chan, now)
    reply = RegisterBrokerResponse(code=rocketmq.ResponseCode.SUCCESS, ha_server_addr=result.ha_server_addr,
                                   master_addr=result.master_addr)
    obs = (BrokerRegistered(broker_addr=req.broker_addr, broker_name=req.broker_name, broker_id=req.broker_id,
                            first=first),)
    return n.evolve(rim=rim), reply, obs


def unregister_broker(n: NameServer, req: UnregisterBroker) -> tuple[NameServer, Any, tuple]:
    """DefaultRequestProcessor#unregisterBroker"""
    rim, removed_addr = ri.unregister_broker(n.rim, req.cluster_name, req.broker_addr, req.broker_name,
                                             req.broker_id)
    obs = (BrokerUnregistered(broker_addr=req.broker_addr, broker_name=req.broker_name, broker_id=req.broker_id,
                              removed_addr=removed_addr),) + _removed(n.rim, rim, "unregister")
    return n.evolve(rim=rim), Response(code=rocketmq.ResponseCode.SUCCESS), obs


def get_route_info_by_topic(n: NameServer, topic: str) -> RouteResponse:
    """DefaultRequestProcessor#getRouteInfoByTopic (orderMessageEnable is false)."""
    route = ri.pickup_topic_route_data(n.rim, topic)
    if route is None:
        return RouteResponse(code=rocketmq.ResponseCode.TOPIC_NOT_EXIST)
    return RouteResponse(code=rocketmq.ResponseCode.SUCCESS, route=route)


def on_message(c: NamesrvConfig, n: NameServer, msg: Any, peer: str, now: int) -> tuple[NameServer, tuple]:
    """A client's FIN (channelInactive -> BrokerHousekeepingService#onChannelClose), or a
    oneway REGISTER_BROKER (BrokerController#changeToMaster/changeToSlave)."""
    if isinstance(msg, RegisterBroker):
        if msg.chan not in n.channels:
            return n, ()  # the RST goes back to nobody waiting for it
        n, _, obs = register_broker(n.evolve(channels=n.channels.set(msg.chan, now)), msg, now)
        return n, obs
    if isinstance(msg, Fin) and msg.chan in n.channels:
        n = n.evolve(channels=n.channels.without(msg.chan))
        return on_channel_destroy(n, msg.chan, "channel_closed")
    return n, ()
