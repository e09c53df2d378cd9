"""A producer (DefaultMQProducerImpl, 4.9.4): synchronous sends with retries, over its routes.

Theory of operation
-------------------
Models `DefaultMQProducerImpl#sendDefaultImpl`, `#tryToFindTopicPublishInfo`,
`#sendKernelImpl` and `MQClientAPIImpl#processSendResponse` for SYNC sends, on top of a
`ClientInstance` (reference_impl.nameserver.client_routes) and the queue selection of
reference_impl.nameserver.queue_selection.

One `sendDefaultImpl` call is a `SendOp`. It finds the topic's publish info (fetching
the route from a NameServer when there is none that is `ok()`, then the default
topic's route), then makes up to `1 + retryTimesWhenSendFailed` attempts, all within
`sendMsgTimeout` measured from the call's start: before each attempt, if the time
spent exceeds the budget the call ends with "sendDefaultImpl call timeout"; each
attempt's RPC gets what is left. An attempt that throws (RemotingException,
MQClientException, or MQBrokerException with a code in `retryResponseCodes`) is
retried at once on a queue chosen with `lastBrokerName` = the broker that failed;
every attempt updates the fault table. A retry after a timeout or reset can store the
message twice: the broker may have stored the first attempt (at-least-once).

The send keeps the TopicPublishInfo object it started with (a route refresh replaces
the table's entry, not the send's); while they are the same object, selection state
(the index and the fallback's rewrite) is shared.

The application is a loop of sync sends, one every `send_interval_ms` after the last
returned, from `send_start_ms`; message ids are `<producer>-<n>`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from reference_impl import rocketmq
from reference_impl.core.network import Send
from reference_impl.core.inputs import JAVA_INT_MAX, check_fields, positive
from reference_impl.core.state import EMPTY, FrozenMap, record
from reference_impl.nameserver import client_routes as cr
from reference_impl.nameserver import queue_selection as qs
from reference_impl.nameserver import remoting as rm
from reference_impl.nameserver.broker import SendMessage, SendResponse

SEND_OK_CODES = {rocketmq.ResponseCode.SUCCESS: "SEND_OK",
                 rocketmq.ResponseCode.FLUSH_DISK_TIMEOUT: "FLUSH_DISK_TIMEOUT",
                 rocketmq.ResponseCode.FLUSH_SLAVE_TIMEOUT: "FLUSH_SLAVE_TIMEOUT",
                 rocketmq.ResponseCode.SLAVE_NOT_AVAILABLE: "SLAVE_NOT_AVAILABLE"}  # processSendResponse


@record
class ProducerConfig:
    """DefaultMQProducer defaults (4.9.4), the client's, and the application's send loop."""

    producer_group: str = "ProducerGroup"
    send_msg_timeout: int = 3000
    retry_times_when_send_failed: int = 2
    retry_another_broker_when_not_store_ok: bool = False
    create_topic_key: str = "TBW102"  # TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC
    retry_response_codes: tuple[int, ...] = (17, 14, 1, 16, 204, 205)  # TOPIC_NOT_EXIST, SERVICE_NOT_AVAILABLE, ...
    fault: qs.FaultStrategyConfig = qs.FaultStrategyConfig()
    client: cr.ClientConfig = cr.ClientConfig()
    topic: str = "TopicTest"  # the application's topic
    send_start_ms: int = 2000
    send_interval_ms: int = 100

    # send_interval_ms -1: the application sends only when a script says so
    LIMITS: ClassVar[dict] = positive("send_msg_timeout") | {"send_interval_ms": (-1, JAVA_INT_MAX),
        "retry_times_when_send_failed": (0, 16), "topic": (1, 127), "create_topic_key": (1, 127)}

    def __attrs_post_init__(self) -> None:
        check_fields(self)


@record
class SendOp:
    """One sendDefaultImpl call in progress."""

    msg_id: str
    topic: str
    begin_first: int  # beginTimestampFirst
    draw: int  # random draw of this call (seeds ThreadLocalIndexes on first use)
    phase: str = "route"  # route, route_default, kernel_route, sending
    tpi: cr.TopicPublishInfo | None = None
    times: int = 0
    mq: cr.MessageQueue | None = None
    brokers_sent: tuple = ()
    begin_prev: int = 0
    call_timeout: bool = False
    exception: str | None = None
    clock_lag: int = 0  # see `timed_out`


# --- observations ---


@record
class SendStarted:
    msg_id: str


@record
class QueueSelected:
    """selectOneMessageQueue chose `broker`/`queue_id` for attempt `attempt`; `brokers`: the broker
    names in the queue list it chose from."""

    msg_id: str
    attempt: int
    broker: str
    queue_id: int
    last_broker: str | None
    path: str
    brokers: tuple


@record
class QueueRewritten:
    """MQFaultStrategy's fallback rewrote the shared MessageQueue at `pos` of the route list."""

    topic: str
    pos: int
    old: str
    new: str


@record
class AttemptSent:
    msg_id: str
    attempt: int
    broker: str
    broker_addr: str
    elapsed_ms: int  # since the call began


@record
class AttemptFailed:
    msg_id: str
    attempt: int
    broker: str
    error: str


@record
class SendDone:
    """sendDefaultImpl returned or threw: `status` is SEND_OK (or another SendStatus) or the exception."""

    msg_id: str
    status: str
    attempts: int
    brokers: tuple
    elapsed_ms: int


@record
class Producer:
    self_id: str
    client: cr.ClientInstance
    send_latency_fault_enable: bool = False
    publish: FrozenMap = EMPTY  # topicPublishInfoTable
    lft: qs.LatencyFaultTolerance = qs.LatencyFaultTolerance()
    op: SendOp | None = None
    next_send_ms: int = -1
    sent: int = 0  # messages begun so far (persisted by the application, so ids never repeat)
    next_epoch: int = 1
    fins: tuple | None = None  # after a process crash: (peer, Fin) the OS still has to send
    machine_down: bool = False


def boot(c: ProducerConfig, self_id: str, namesrvs: tuple, now: int, latency_fault: bool = False,
         sent: int = 0, inc: int = 0) -> Producer:
    """DefaultMQProducerImpl#start: the default topic's (empty) publish info, the client's tasks."""
    return Producer(self_id=self_id, client=cr.boot(c.client, self_id, namesrvs, now, inc),
                    send_latency_fault_enable=latency_fault,
                    publish=FrozenMap({c.create_topic_key: cr.TopicPublishInfo()}),
                    next_send_ms=now + c.send_start_ms if c.send_interval_ms >= 0 else -1, sent=sent)


def crash(p: Producer, kind: str) -> Producer:
    fins = rm.fins_on_crash(p.client.remoting) if kind == "process" else None
    return p.evolve(op=None, fins=fins, machine_down=kind != "process")


def restart(c: ProducerConfig, p: Producer, now: int) -> Producer:
    return boot(c, p.self_id, p.client.remoting.namesrv_addr_list, now, p.send_latency_fault_enable, p.sent,
                p.client.remoting.inc + 1).evolve(fins=p.fins)


def fault_cfg(c: ProducerConfig, p: Producer) -> qs.FaultStrategyConfig:
    return c.fault if c.fault.send_latency_fault_enable == p.send_latency_fault_enable else c.fault.evolve(
        send_latency_fault_enable=p.send_latency_fault_enable)


def wake_at(c: ProducerConfig, p: Producer) -> int:
    wake = cr.wake_at(p.client)
    if p.op is None and p.next_send_ms >= 0 and p.next_send_ms < wake:
        wake = p.next_send_ms
    return wake


def on_tick(c: ProducerConfig, p: Producer, now: int, draw: int) -> tuple[Producer, tuple]:
    """The client's scheduled tasks, and the application's next send."""
    outs: tuple = ()
    ci = p.client
    if now >= ci.next_clean_ms:
        ci = cr.clean_offline_broker(c.client, ci)
    if now >= ci.next_poll_ms:
        ci, o = cr.start_poll(c.client, ci, tuple(p.publish), now, draw)  # getPublishTopicList
        outs += o
    p = p.evolve(client=ci)
    p, outs = _dispatch(c, p, outs, now)
    if p.op is None and 0 <= p.next_send_ms <= now:
        p, o = start_send(c, p, now, draw)
        outs += o
    return p, outs


def start_send(c: ProducerConfig, p: Producer, now: int, draw: int, msg_id: str | None = None
               ) -> tuple[Producer, tuple]:
    """DefaultMQProducer#send(msg) -> sendDefaultImpl(msg, SYNC, null, sendMsgTimeout)."""
    msg_id = msg_id or f"{p.self_id}-{p.sent + 1}"
    op = SendOp(msg_id=msg_id, topic=c.topic, begin_first=now, draw=draw)
    p = p.evolve(op=op, sent=p.sent + 1)
    p, outs = try_to_find_topic_publish_info(c, p, now, draw)
    return p, (SendStarted(msg_id=msg_id),) + outs


def try_to_find_topic_publish_info(c: ProducerConfig, p: Producer, now: int, draw: int | None = None
                                   ) -> tuple[Producer, tuple]:
    """DefaultMQProducerImpl#tryToFindTopicPublishInfo: fetch the route if the info is not ok()."""
    op = p.op
    info = p.publish.get(op.topic)
    if info is not None and info.ok():
        return proceed(c, p, info, now)
    if info is None:
        p = p.evolve(publish=p.publish.set(op.topic, cr.TopicPublishInfo()))
    ci, outs = cr.update_topic_route(c.client, p.client, op.topic, ("send", op.msg_id, op.topic), now, draw)
    p = p.evolve(client=ci, op=op.evolve(phase="route"))
    return _dispatch(c, p, outs, now)


def proceed(c: ProducerConfig, p: Producer, info: cr.TopicPublishInfo, now: int) -> tuple[Producer, tuple]:
    """sendDefaultImpl once the publish info is known: the attempt loop, or "No route info"."""
    if not info.ok():
        return finish(c, p, "MQClientException:NO_ROUTE_INFO", now)
    p = p.evolve(op=p.op.evolve(tpi=info))
    return attempt(c, p, now)


def attempt(c: ProducerConfig, p: Producer, now: int) -> tuple[Producer, tuple]:
    """One turn of sendDefaultImpl's loop: select a queue, check the budget, sendKernelImpl."""
    op = p.op
    times_total = 1 + c.retry_times_when_send_failed
    if op.times >= times_total:
        # "Send [n] times, still failed": an MQClientException wrapping the last exception.
        return finish(c, p, f"MQClientException:{op.exception}", now)
    last = op.mq.broker_name if op.mq is not None else None
    brokers = tuple(dict.fromkeys(q.broker_name for q in op.tpi.message_queue_list))
    tpi, lft, sel = qs.select_one_message_queue(fault_cfg(c, p), op.tpi, p.lft, last, now, op.draw)
    outs: tuple = (QueueSelected(msg_id=op.msg_id, attempt=op.times, broker=sel.mq.broker_name,
                                 queue_id=sel.mq.queue_id, last_broker=last, path=sel.path, brokers=brokers),)
    if sel.rewrite is not None:
        pos, old, new = sel.rewrite
        outs += (QueueRewritten(topic=op.topic, pos=pos, old=str(old), new=str(new)),)
    shared = p.publish.get(op.topic)
    if shared is not None and shared.epoch == op.tpi.epoch:
        p = p.evolve(publish=p.publish.set(op.topic, tpi))  # the table holds the same object
    op = op.evolve(tpi=tpi, mq=sel.mq, brokers_sent=op.brokers_sent + (sel.mq.broker_name,), begin_prev=now)
    p = p.evolve(lft=lft, op=op)
    if c.send_msg_timeout < now - op.begin_first + op.clock_lag:
        p = p.evolve(op=op.evolve(call_timeout=True))
        return finish(c, p, "RemotingTooMuchRequestException:sendDefaultImpl call timeout", now, outs)
    p, more = send_kernel_impl(c, p, now)
    return p, outs + more


def send_kernel_impl(c: ProducerConfig, p: Producer, now: int, routed: bool = False) -> tuple[Producer, tuple]:
    """DefaultMQProducerImpl#sendKernelImpl: the master's address (fetching the route once if
    the table's info is not ok), the budget check, then the SEND_MESSAGE RPC."""
    op = p.op
    addr = cr.find_broker_address_in_publish(p.client, op.mq.broker_name)
    if addr is None and not routed:
        info = p.publish.get(op.topic)
        if info is None or not info.ok():
            ci, outs = cr.update_topic_route(c.client, p.client, op.topic, ("kernel", op.msg_id, op.topic), now)
            p = p.evolve(client=ci, op=op.evolve(phase="kernel_route"))
            return _dispatch(c, p, outs, now)
    if addr is None:
        return attempt_failed(c, p, "MQClientException:BROKER_NOT_EXIST", now)
    elapsed = now - op.begin_first + op.clock_lag
    if c.send_msg_timeout < elapsed:
        return attempt_failed(c, p, "RemotingTooMuchRequestException:sendKernelImpl call timeout", now)
    # A budget of 0 ms still writes the request (invokeSyncImpl's waitResponse(0) then gives up at
    # once): a 0 ms RPC, which fails in the same millisecond while its request stays in flight
    # (the broker may still store it). The next attempt then reads the same millisecond, sees the
    # budget just spent and makes another 0 ms attempt; the whole loop takes well under one.
    timeout = c.send_msg_timeout - elapsed
    req = SendMessage(producer=p.self_id, topic=op.topic, queue_id=op.mq.queue_id, msg_id=op.msg_id,
                      attempt=op.times)
    p = p.evolve(op=op.evolve(phase="sending"))
    return p, (AttemptSent(msg_id=op.msg_id, attempt=op.times, broker=op.mq.broker_name, broker_addr=addr,
                           elapsed_ms=elapsed),
               Send(dst=addr, msg=req, ctx=("send", op.msg_id, op.times, now + timeout),
                    timeout_ms=timeout))


def attempt_failed(c: ProducerConfig, p: Producer, error: str, now: int, retry: bool = True
                   ) -> tuple[Producer, tuple]:
    """A catch block of sendDefaultImpl: updateFaultItem(isolation), then retry or throw."""
    op = p.op
    latency = now - op.begin_prev
    lft = qs.mq_update_fault_item(fault_cfg(c, p), p.lft, op.mq.broker_name, latency, True, now)
    failed = AttemptFailed(msg_id=op.msg_id, attempt=op.times, broker=op.mq.broker_name, error=error)
    p = p.evolve(lft=lft, op=op.evolve(exception=error, times=op.times + 1))
    if not retry:
        p, outs = finish(c, p, error, now)
        return p, (failed,) + outs
    p, outs = attempt(c, p, now)
    return p, (failed,) + outs


def on_send_response(c: ProducerConfig, p: Producer, ctx: tuple, resp: Any, now: int) -> tuple[Producer, tuple]:
    """MQClientAPIImpl#processSendResponse and sendDefaultImpl's handling of the result."""
    op = p.op
    if op is None or op.phase != "sending" or (op.msg_id, op.times) != (ctx[1], ctx[2]):
        return p, ()  # a reply to a call that has already returned
    if isinstance(resp, SendResponse):
        status = SEND_OK_CODES.get(resp.code)
        if status is not None:
            lft = qs.mq_update_fault_item(fault_cfg(c, p), p.lft, op.mq.broker_name, now - op.begin_prev, False, now)
            p = p.evolve(lft=lft)
            if status != "SEND_OK" and c.retry_another_broker_when_not_store_ok:
                p = p.evolve(op=op.evolve(times=op.times + 1, exception=status))
                return attempt(c, p, now)
            return finish(c, p, status, now)
        error = f"MQBrokerException:{resp.code}"
        return attempt_failed(c, p, error, now, retry=resp.code in c.retry_response_codes)
    if isinstance(resp, rm.Reset) or resp is None and now < ctx[3]:
        return attempt_failed(c, p, rm.SEND_REQUEST_EXCEPTION, now)  # reset or refused: failed at once
    return attempt_failed(c, p.evolve(op=timed_out(op)), rm.TIMEOUT_EXCEPTION, now)


def timed_out(op: SendOp) -> SendOp:
    """An attempt's RPC timed out, at exactly the send's budget when it was the whole budget.

    Java then logs and reads currentTimeMillis: whether costTime shows the budget itself
    (3000: one more attempt, with a 0 ms budget, whose request is still written) or one
    millisecond more (3001: "call timeout") depends on where the millisecond ticks fall.
    The model's clock is exact, so the send's draw decides: it reads 1 ms late half the time."""
    return op.evolve(clock_lag=max(op.clock_lag, (op.draw >> 15) & 1))


def finish(c: ProducerConfig, p: Producer, status: str, now: int, outs: tuple = ()) -> tuple[Producer, tuple]:
    op = p.op
    done = SendDone(msg_id=op.msg_id, status=status, attempts=len(op.brokers_sent), brokers=op.brokers_sent,
                    elapsed_ms=now - op.begin_first)
    nxt = now + c.send_interval_ms if c.send_interval_ms >= 0 else -1
    return p.evolve(op=None, next_send_ms=nxt), outs + (done,)


# --- replies and route fetches ---


def on_response(c: ProducerConfig, p: Producer, ctx: Any, peer: str, resp: Any, now: int) -> tuple[Producer, tuple]:
    if isinstance(ctx, tuple) and ctx[0] == "send":
        return on_send_response(c, p, ctx, resp, now)
    rc, outs = rm.on_invoke_response(c.client.netty, p.client.remoting, ctx, resp, now)
    return _dispatch(c, p.evolve(client=p.client.evolve(remoting=rc)), outs, now)


def _dispatch(c: ProducerConfig, p: Producer, outs: tuple, now: int) -> tuple[Producer, tuple]:
    """Hand finished NameServer calls to whoever made them; pass other outputs through."""
    return rm.hand_over_done(p, outs, lambda p, done: route_fetched(c, p, done, now))


def need_update(p: Producer, topic: str) -> bool:
    """DefaultMQProducerImpl#isPublishTopicNeedUpdate"""
    info = p.publish.get(topic)
    return info is None or not info.ok()


def route_fetched(c: ProducerConfig, p: Producer, done: rm.Done, now: int) -> tuple[Producer, tuple]:
    """updateTopicRouteInfoFromNameServer finished: update the publish info, then resume its caller."""
    who, topic = done.purpose[0], done.purpose[-1]
    fetch_topic = c.create_topic_key if who == "send_default" else topic
    ci, seen, route = cr.route_done(p.client, fetch_topic, done, need_update(p, fetch_topic))
    outs: tuple = (seen,)
    if route is not None and who != "send_default":
        # The default topic's route would need the queueNums rewrite of the auto-create path; no
        # broker here registers TBW102 (autoCreateTopicEnable is false), so it never comes back.
        info = cr.topic_route_data_to_publish_info(topic, route, p.next_epoch).evolve(have_topic_router_info=True)
        p = p.evolve(publish=p.publish.set(topic, info), next_epoch=p.next_epoch + 1)
    p = p.evolve(client=ci)
    if who == "poll":
        ci, more = cr.poll_done(c.client, p.client, done, now)
        p, more = _dispatch(c, p.evolve(client=ci), more, now)
        return p, outs + more
    op = p.op
    if op is None or op.msg_id != done.purpose[1]:
        return p, outs
    if who == "kernel":
        if done.error is not None:
            p, more = attempt_failed(c, p, "IllegalStateException:" + done.error, now, retry=False)
            return p, outs + more
        p, more = send_kernel_impl(c, p, now, routed=True)
        return p, outs + more
    if done.error is not None:
        # updateTopicRouteInfoFromNameServer rethrows the RemotingException: the send throws.
        p, more = finish(c, p, "IllegalStateException:" + done.error, now)
        return p, outs + more
    info = p.publish.get(op.topic)
    if who == "send" and not (info.have_topic_router_info or info.ok()):
        ci, more = cr.update_topic_route(c.client, p.client, c.create_topic_key,
                                         ("send_default", op.msg_id, op.topic), now)
        p = p.evolve(client=ci, op=op.evolve(phase="route_default"))
        p, more = _dispatch(c, p, more, now)
        return p, outs + more
    p, more = proceed(c, p, info, now)
    return p, outs + more


def on_message(c: ProducerConfig, p: Producer, msg: Any, peer: str, now: int) -> tuple[Producer, tuple]:
    if isinstance(msg, rm.Fin):
        return p.evolve(client=cr.on_fin(p.client, peer, msg.chan)), ()
    return p, ()
