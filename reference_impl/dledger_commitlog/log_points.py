"""RocketMQ 4.9.4's CommitLog on DLedger: what its brokers, name server, producers and consumers,
instrumented at their natural log points, write when the reference takes a step
(docs/conformance.md, "RocketMQ's CommitLog on DLedger").

A broker is a DLedger server whose entries are the broker's messages, so it writes every line
of the DLedger log (reference_impl.dledger_log.log_points: the election's votes, heartbeats,
MemberState changes and draws, the pushes, the store's appends, truncations and commit index
moves) and, on top, the broker's own: the put result its producer's send gets
(`DefaultMessageStore#asyncPutMessage`: DLedgerCommitLog#asyncPutMessage's future mapped to a
PutMessageStatus, or a SLAVE's refusal), each message the reput service dispatches into a
consume queue (`ReputMessageService#doReput`), and the role changes DLedgerRoleChangeHandler
makes (`BrokerController#changeToMaster`, `#changeToSlave`). The DLedger lines are the DLedger
log's own table applied to the broker's DLedger node; this table adds only what is RocketMQ's.

The other nodes write the RPCs they send, handle and complete, at the Java method that does
it: the producer's `DefaultMQProducer#send` (one line per attempt, its answer or failure), the
broker's `SendMessageProcessor#asyncSendMessage` (the send, then its answer once the future
completes), the consumer's pulls, the route queries to the name server and the brokers'
registrations.
"""

from __future__ import annotations

from typing import Any

from reference_impl import core
from reference_impl.core.state import record
from reference_impl.dledger_commitlog import broker as bk
from reference_impl.dledger_commitlog import world as cw
from reference_impl.dledger_log import log_points as log_points
from reference_impl.election import log_points as election_points
from reference_impl.election import records as el

LogPoint = log_points.LogPoint
NEXT_INT = log_points.NEXT_INT
SNAPSHOT = log_points.SNAPSHOT

PUT_AT = "DefaultMessageStore#asyncPutMessage"
DISPATCH_AT = "ReputMessageService#doReput"
TO_MASTER_AT = "BrokerController#changeToMaster"
TO_SLAVE_AT = "BrokerController#changeToSlave"
SEND = "DefaultMQProducer#send"
SEND_HANDLER = "SendMessageProcessor#asyncSendMessage"
PULL = "DefaultMQPullConsumer#pull"
PULL_HANDLER = "PullMessageProcessor#processRequest"
ROUTE = "MQClientAPIImpl#getTopicRouteInfoFromNameServer"
ROUTE_HANDLER = "DefaultRequestProcessor#getRouteInfoByTopic"
REGISTER = "BrokerOuterAPI#registerBrokerAll"
REGISTER_HANDLER = "DefaultRequestProcessor#registerBroker"

POINTS = dict(log_points.POINTS)
POINTS.update({p.at: p for p in (
    LogPoint(PUT_AT, "any", "key (the message's UNIQ_KEY), status (a PutMessageStatus), offset (wroteOffset: "
             "entry pos + 48; -1 without an append), size, queue_id, queue_offset, index (the DLedger entry; -1)",
             "a put's result: DLedgerCommitLog#asyncPutMessage's future completed, or the put was refused"),
    LogPoint(DISPATCH_AT, "reput", "queue_id, queue_offset, offset (the physical offset), size",
             "the reput service dispatched one committed message into its consume queue"),
    LogPoint(TO_MASTER_AT, "role handler", "term (the DLedger term it became leader in)",
             "DLedgerRoleChangeHandler made the broker SYNC_MASTER (brokerId 0)"),
    LogPoint(TO_SLAVE_AT, "role handler", "broker_id", "DLedgerRoleChangeHandler made the broker SLAVE"),
    LogPoint(SEND, "client", "peer (the broker), request (a SendMessageRequest); its completion: peer, response "
             "(a SendMessageResponse, or a SendException)", "a producer's send attempt"),
    LogPoint(SEND_HANDLER, "handler", "peer (the producer), request; peer, response once the put's future completes",
             "the broker takes a send"),
    LogPoint(PULL, "client", "peer (the broker), request (a PullMessageRequest); its completion: peer, response",
             "a consumer pulls one queue"),
    LogPoint(PULL_HANDLER, "handler", "peer (the consumer), request, response", "the broker serves a pull"),
    LogPoint(ROUTE, "client", "peer (the name server), request (GetRoute); its completion: peer, response "
             "(RouteData: broker_addrs)", "a client polls the topic's route"),
    LogPoint(ROUTE_HANDLER, "handler", "peer, request, response", "the name server answers a route query"),
    LogPoint(REGISTER, "any", "peer (the name server), request (RegisterBroker); its completion, when it waits "
             "for one: peer, response (RegisterBrokerResult: master_addr)", "a broker registers"),
    LogPoint(REGISTER_HANDLER, "handler", "peer (the broker), request [, response]",
             "the name server takes a registration"),
)})


@record
class SendException:
    """What a producer's send attempt completes with when its RPC failed (a timeout, a refused
    connection): the RemotingException NettyRemotingClient#invokeSync throws."""


@record
class PullException:
    """A consumer's pull whose RPC failed (the RemotingException of invokeSync)."""


@record
class RouteException:
    """A route query whose RPC failed (the RemotingException of invokeSync)."""


@record
class RegisterException:
    """A registration that waited for an answer and got none (the RemotingException of invokeSync)."""


FAILED = {"send": SendException, "pull": PullException, "route": RouteException, "register": RegisterException}


SEND_AT = dict(log_points.SEND_AT, SendMessageRequest=SEND, PullMessageRequest=PULL, GetRoute=ROUTE,
               RegisterBroker=REGISTER)
HANDLE_AT = dict(log_points.HANDLE_AT, SendMessageRequest=SEND_HANDLER, PullMessageRequest=PULL_HANDLER,
                 GetRoute=ROUTE_HANDLER, RegisterBroker=REGISTER_HANDLER)
COMPLETE_AT = dict(log_points.COMPLETE_AT, SendMessageResponse=SEND, PullMessageResponse=PULL, RouteData=ROUTE,
                   RegisterBrokerResult=REGISTER, SendException=SEND, PullException=PULL, RouteException=ROUTE,
                   RegisterException=REGISTER)
REPLY_AT = dict(log_points.REPLY_AT, SendMessageResponse=SEND_HANDLER)
INTERNAL_FIELDS = log_points.INTERNAL_FIELDS


def failed_reply(ctx: Any) -> Any:
    """A client's failed RPC completes with its call's exception (written at the call's own log
    point); a DLedger RPC's as the DLedger log says."""
    if ctx[0] in FAILED:
        return FAILED[ctx[0]]()
    return log_points.failed_reply(ctx)


def node_lines(c: Any, on_tick: bool, before: Any, after: Any, obs: list, draw: int) -> list[tuple[str, dict]]:
    """A broker's lines for one step: its DLedger node's (the DLedger log's table), then the
    broker's put results, dispatches and role changes. The other nodes have none of their own."""
    if not isinstance(before, bk.Broker) or not isinstance(after, bk.Broker):
        return []
    out = log_points.node_lines(c, on_tick, before.node, after.node, obs, draw)
    for o in obs:
        if isinstance(o, bk.PutResult):
            out.append((PUT_AT, {"key": o.key, "status": o.status.value, "offset": o.offset, "size": o.size,
                                 "queue_id": o.queue_id, "queue_offset": o.queue_offset, "index": o.index}))
        elif isinstance(o, bk.BecameMaster):
            out.append((TO_MASTER_AT, {"term": o.term}))
        elif isinstance(o, bk.BecameSlave):
            out.append((TO_SLAVE_AT, {"broker_id": o.broker_id}))
    out += dispatched(before.store.consume_queues, after.store.consume_queues)
    return out


def dispatched(before: Any, after: Any) -> list[tuple[str, dict]]:
    """The units the reput service added to the consume queues, queue by queue (a queue that a
    recovery cut and the reput service refilled shows its refilled units)."""
    out = []
    for q in sorted(after):
        old, new = before.get(q, ()), after[q]
        common = 0
        while common < min(len(old), len(new)) and old[common] == new[common]:
            common += 1
        for k in range(common, len(new)):
            phys, size = new[k]
            out.append((DISPATCH_AT, {"queue_id": q, "queue_offset": k, "offset": phys, "size": size}))
    return out


def snapshot(c: Any, n: Any, alive: bool) -> dict | None:
    """A broker's `MemberState` line: the DLedger log's fields and the broker's role and id."""
    if not isinstance(n, bk.Broker):
        return None
    out = log_points.snapshot(c, n.node, alive)
    if out is not None:
        out.update(broker_role=n.broker_role.value, broker_id=n.broker_id)
    return out


def make_config(nodes: tuple[str, ...], config: dict) -> core.WorldConfig:
    """Brokers n0..n{k-1}, `ns0`, producers p0.. then consumers c0..; `config` holds `dledger`
    (DLedgerConfig fields), `log` (the DLedger store's LogConfig), `broker` (BrokerConfig) and
    the world's own keys (`send_interval_ms`, `queues`, `body_size`, ...)."""
    brokers = [x for x in nodes if x.startswith("n") and x[1:].isdigit()]
    producers = [x for x in nodes if x.startswith("p")]
    consumers = [x for x in nodes if x.startswith("c")]
    want = [f"n{i}" for i in range(len(brokers))] + [bk.NAMESRV] + [f"p{i}" for i in range(len(producers))] + \
        [f"c{i}" for i in range(len(consumers))]
    if list(nodes) != want:
        raise ValueError("dledger_commitlog nodes are brokers n0.., then ns0, producers p0.. and consumers c0..")
    extra = set(config) - {"dledger", "log", "broker"} - cw.WORLD_KEYS
    if extra:
        raise ValueError(f"unknown dledger_commitlog config key(s): {', '.join(sorted(extra))}")
    for section in ("dledger", "log", "broker"):
        if not isinstance(config.get(section, {}), dict):
            raise ValueError(f"config.{section} must be an object")
    opts: dict = {}
    for section in ("dledger", "log", "broker"):
        opts.update(config.get(section, {}))
    opts.update({k: v for k, v in config.items() if k in cw.WORLD_KEYS})
    opts.update(producers=len(producers), consumers=len(consumers))
    return cw.make_config(len(brokers), opts)


def header_config(cfg: core.WorldConfig) -> dict:
    """The header's `config` for a world of ours (the inverse of `make_config`): the overrides it
    was made with, sorted into their sections."""
    c = cfg.proto
    dledger = dict(election_points.header_config(cfg)["dledger"])
    out: dict = {"dledger": dledger, "log": {}, "broker": {}}
    for k, v in dict(cfg.overrides).items():
        if k in cw.BROKER_KEYS:
            out["broker"][k] = v
        elif k in cw.lw.LOG_KEYS:
            out["log"][k] = v
        elif k in cw.WORLD_KEYS and k not in ("producers", "consumers"):
            out[k] = v
    out["log"].setdefault("mapped_file_size_for_entry_data", c.node.log.mapped_file_size_for_entry_data)
    return {k: v for k, v in out.items() if v != {} or k == "dledger"}


def logs_draws(n: Any) -> bool:
    """A broker's draws are its DLedger elector's Random#nextInt calls; the clients draw nothing."""
    return isinstance(n, bk.Broker)



def loop_phase(c: Any, n: Any, now: int) -> int | None:
    """The phase of a broker's loop that the log does not show: DLedgerRoleChangeHandler's LEADER
    task checks every `role_poll_ms` (Thread.sleep(100)) and writes nothing until it makes the
    broker master, so only its phase (its next check's time modulo the period, a just-queued
    task's first check being now) decides whether a check falls before or after a commit of the
    same ms. None: no LEADER task queued (a client, or a broker without one). The tolerant checker
    keeps executions of each phase apart (histories.tolerant.checker.kept)."""
    if not isinstance(n, bk.Broker) or not n.role_tasks or n.role_tasks[0][1] is not el.Role.LEADER:
        return None
    wake = bk.role_handler_wake_at(n)
    return (wake if wake > 0 else now) % c.broker.role_poll_ms
