"""The dledger_commitlog world's other nodes: a name server, producers and consumers (RocketMQ 4.9.4 clients).

Theory of operation
-------------------
- `ns0` keeps the broker group's `brokerAddrs` (brokerId -> address) as
  RouteInfoManager#registerBroker does: a registration first removes other ids held by
  the same address, then sets its id; a registration that waits for an answer gets the
  master's address (id 0). There is no 120 s expiry and no channel-close removal: an
  address stays until another registration replaces it.
- A producer (DefaultMQProducer, sync send) polls the route every 30 s (first after
  10 ms) and sends one message at a time to the master address of its route
  (`findBrokerAddressInPublish`: id 0 only), choosing queues round robin. A send makes
  up to 3 attempts within `sendMsgTimeout` (3000 ms in total): a failed RPC or an answer
  in `retryResponseCodes` (SYSTEM_ERROR, SERVICE_NOT_AVAILABLE, ...) is retried, on the
  same broker since the group is the topic's only broker; a retry keeps the message's
  key (its UNIQ_KEY). With no master in the route the send fails at once ("No route
  info") and the route is polled again.
- A consumer polls the route the same way and pulls each queue in turn from the master
  (id 0), or, with none, the first slave (`findBrokerAddressInSubscribe`'s fall back);
  it starts at offset 0, moves on by what it got, takes the broker's next begin offset
  when told the offset moved, and waits `pull_interval_ms` (standing in for long
  polling) when there is nothing new.
"""

from __future__ import annotations

from typing import Any

from reference_impl import rocketmq
from reference_impl.core.network import Send
from reference_impl.core.state import EMPTY, FrozenMap, record
from reference_impl.dledger_commitlog import broker as bk

SEND_MSG_TIMEOUT_MS = 3000  # DefaultMQProducer.sendMsgTimeout
TIMES_TOTAL = 3  # 1 + retryTimesWhenSendFailed (2)
RETRY_RESPONSE_CODES = frozenset({17, 14, 1, 16, 204, 205})  # DefaultMQProducer.retryResponseCodes
POLL_NAME_SERVER_INTERVAL_MS = 30_000  # ClientConfig.pollNameServerInterval
ROUTE_RPC_TIMEOUT_MS = 3000  # mqClientApiTimeout
PULL_RPC_TIMEOUT_MS = 3000


@record
class GetRoute:
    topic: str


@record
class RouteData:
    broker_addrs: FrozenMap  # brokerId -> address


@record
class NameServer:
    self_id: str
    broker_addrs: FrozenMap = EMPTY


@record
class Sending:
    key: str
    attempt: int
    started_ms: int
    queue_id: int


@record
class Producer:
    self_id: str
    route: FrozenMap = EMPTY
    next_poll_ms: int = 10
    next_send_ms: int = 0
    seq: int = 0
    send_which_queue: int = 0
    sending: Sending | None = None


@record
class Consumer:
    self_id: str
    offsets: tuple[int, ...] = ()
    route: FrozenMap = EMPTY
    next_poll_ms: int = 10
    next_pull_ms: int = 0
    turn: int = 0
    waiting: bool = False


# --- observations ---


@record
class SendAttempt:
    """The producer got an answer to one attempt (code None: the RPC failed)."""

    key: str
    attempt: int
    broker: str | None
    code: int | None
    retried: bool


@record
class SendDone:
    key: str
    status: str  # SEND_OK, or FAILED
    attempts: int
    offset: int


@record
class Consumed:
    key: str
    queue_id: int
    queue_offset: int
    phys_offset: int
    broker: str


# --- the name server ---


def register_broker(ns: NameServer, req: bk.RegisterBroker) -> NameServer:
    """RouteInfoManager#registerBroker's brokerAddrs update ("switch slave to master")."""
    addrs = {k: v for k, v in ns.broker_addrs.items() if not (v == req.addr and k != req.broker_id)}
    addrs[req.broker_id] = req.addr
    return ns.evolve(broker_addrs=FrozenMap(addrs))


def namesrv_on_request(ns: NameServer, msg: Any) -> tuple[NameServer, Any]:
    if isinstance(msg, bk.RegisterBroker):
        ns = register_broker(ns, msg)
        master = ns.broker_addrs.get(rocketmq.MASTER_ID) if msg.broker_id else None
        return ns, bk.RegisterBrokerResult(master_addr=master)
    return ns, RouteData(broker_addrs=ns.broker_addrs)


# --- the producer ---


def producer_wake_at(p: Producer) -> int:
    wake = p.next_poll_ms
    if p.sending is None:
        wake = min(wake, p.next_send_ms)
    return wake


def producer_on_tick(c: Any, p: Producer, now: int) -> tuple[Producer, tuple]:
    outs: tuple = ()
    if now >= p.next_poll_ms:
        p = p.evolve(next_poll_ms=now + POLL_NAME_SERVER_INTERVAL_MS)
        outs += (Send(dst=bk.NAMESRV, msg=GetRoute(topic=c.topic), ctx=("route",), timeout_ms=ROUTE_RPC_TIMEOUT_MS),)
    if p.sending is None and now >= p.next_send_ms:
        seq = p.seq + 1
        p = p.evolve(seq=seq, sending=Sending(key=f"{p.self_id}-{seq}", attempt=0, started_ms=now, queue_id=-1))
        p, o = attempt(c, p, now)
        outs += o
    return p, outs


def attempt(c: Any, p: Producer, now: int) -> tuple[Producer, tuple]:
    """One round of sendDefaultImpl's loop: the next queue, the master's address, the RPC."""
    s = p.sending
    master = p.route.get(rocketmq.MASTER_ID)
    if master is None:
        done = SendDone(key=s.key, status="FAILED", attempts=s.attempt, offset=-1)  # "No route info of this topic"
        return p.evolve(sending=None, next_send_ms=now + c.send_interval_ms, next_poll_ms=now), (done,)
    queue = p.send_which_queue % c.queues
    s = s.evolve(attempt=s.attempt + 1, queue_id=queue)
    req = bk.SendMessageRequest(key=s.key, topic=c.topic, queue_id=queue, length=c.message_length)
    left = SEND_MSG_TIMEOUT_MS - (now - s.started_ms)
    return p.evolve(sending=s, send_which_queue=p.send_which_queue + 1), (
        Send(dst=master, msg=req, ctx=("send", s.key, s.attempt), timeout_ms=max(1, left)),)


def producer_on_response(c: Any, p: Producer, ctx: Any, peer: str, resp: Any, now: int) -> tuple[Producer, tuple]:
    if ctx[0] == "route":
        return (p.evolve(route=resp.broker_addrs) if resp is not None else p), ()
    s = p.sending
    if s is None or ctx[1] != s.key or ctx[2] != s.attempt:
        return p, ()
    code = None if resp is None else int(resp.code)
    if code == 0:
        return p.evolve(sending=None, next_send_ms=now + c.send_interval_ms), (
            SendAttempt(key=s.key, attempt=s.attempt, broker=peer, code=code, retried=False),
            SendDone(key=s.key, status="SEND_OK", attempts=s.attempt, offset=resp.offset))
    retry = (code is None or code in RETRY_RESPONSE_CODES) and s.attempt < TIMES_TOTAL \
        and now - s.started_ms < SEND_MSG_TIMEOUT_MS
    note = SendAttempt(key=s.key, attempt=s.attempt, broker=peer, code=code, retried=retry)
    if retry:
        p, outs = attempt(c, p, now)
        return p, (note,) + outs
    return p.evolve(sending=None, next_send_ms=now + c.send_interval_ms), (
        note, SendDone(key=s.key, status="FAILED", attempts=s.attempt, offset=-1))


# --- the consumer ---


def consumer_wake_at(k: Consumer) -> int:
    return k.next_poll_ms if k.waiting else min(k.next_poll_ms, k.next_pull_ms)


def consumer_on_tick(c: Any, k: Consumer, now: int) -> tuple[Consumer, tuple]:
    outs: tuple = ()
    if now >= k.next_poll_ms:
        k = k.evolve(next_poll_ms=now + POLL_NAME_SERVER_INTERVAL_MS)
        outs += (Send(dst=bk.NAMESRV, msg=GetRoute(topic=c.topic), ctx=("route",), timeout_ms=ROUTE_RPC_TIMEOUT_MS),)
    if not k.waiting and now >= k.next_pull_ms:
        target = k.route.get(rocketmq.MASTER_ID)
        if target is None and k.route:
            target = k.route[min(k.route)]
        if target is None:
            return k.evolve(next_pull_ms=now + c.pull_interval_ms), outs
        offsets = k.offsets or (0,) * c.queues
        q = k.turn % c.queues
        req = bk.PullMessageRequest(queue_id=q, offset=offsets[q])
        k = k.evolve(offsets=offsets, waiting=True, turn=k.turn + 1)
        outs += (Send(dst=target, msg=req, ctx=("pull", q, offsets[q]), timeout_ms=PULL_RPC_TIMEOUT_MS),)
    return k, outs


def consumer_on_response(c: Any, k: Consumer, ctx: Any, peer: str, resp: Any, now: int) -> tuple[Consumer, tuple]:
    if ctx[0] == "route":
        return (k.evolve(route=resp.broker_addrs) if resp is not None else k), ()
    _, q, asked = ctx
    k = k.evolve(waiting=False)
    if resp is None or resp.code is rocketmq.ResponseCode.PULL_NOT_FOUND:
        return k.evolve(next_pull_ms=now + c.pull_interval_ms), ()
    offsets = list(k.offsets)
    outs: tuple = ()
    if resp.code is rocketmq.ResponseCode.SUCCESS:
        for i, m in enumerate(resp.messages):
            outs += (Consumed(key=m.key, queue_id=q, queue_offset=asked + i, phys_offset=m.phys_offset, broker=peer),)
        offsets[q] = resp.next_begin_offset
        return k.evolve(offsets=tuple(offsets), next_pull_ms=now), outs
    if resp.code is rocketmq.ResponseCode.PULL_OFFSET_MOVED:
        offsets[q] = resp.next_begin_offset
    return k.evolve(offsets=tuple(offsets), next_pull_ms=now + c.pull_interval_ms), outs
