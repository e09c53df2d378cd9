"""A broker as the NameServer protocol sees it: registration, shutdown, role changes, sends.

Theory of operation
-------------------
Models `BrokerController#start` / `registerBrokerAll` / `doRegisterBrokerAll` /
`shutdown` / `changeToMaster` / `changeToSlave`, `BrokerOuterAPI#registerBrokerAll` /
`unregisterBrokerAll` (4.9.4, classic master/slave, `forceRegister` = true), and the
part of `SendMessageProcessor` + `DefaultMessageStore#putMessage` that decides a send's
response code.

Registration: at start the broker registers with every NameServer at once (in parallel,
each its own `invokeSync(namesrvAddr, REGISTER_BROKER, 6000)`), waits for all answers or
`registerBrokerTimeoutMills` (6000 ms), and only then schedules the periodic task:
first run 10 s later, then every `max(10000, min(registerNameServerPeriod, 60000))` =
30 s at a fixed rate. A round's answers arrive in any order; the first successful one
(`results.get(0)`) sets the slave's master address and HA address. NameServers are
independent: a failure with one does not affect another.

A send is stored only by a master (broker id 0); a slave answers
SERVICE_NOT_AVAILABLE. The message store itself (flush, replication) is other
protocols' business: here a stored message is an observation (`MessageStored`) and a
per-queue offset. Persisted across a crash: topic config and its DataVersion, queue
offsets. Volatile: channels, the registration schedule, the master address.
"""

from __future__ import annotations

from typing import Any, ClassVar

from reference_impl import rocketmq
from reference_impl.core.inputs import check_fields, positive
from reference_impl.core.state import EMPTY, FrozenMap, record
from reference_impl.nameserver import namesrv as ns
from reference_impl.nameserver import remoting as rm
from reference_impl.nameserver import route_info as ri

REGISTER_INITIAL_DELAY_MS = 10_000  # BrokerController#start: scheduleAtFixedRate(..., 1000 * 10, period)
UNREGISTER_TIMEOUT_MS = 3000  # BrokerOuterAPI#unregisterBroker: invokeSync(..., 3000)


@record
class BrokerConfig:
    """BrokerConfig defaults (4.9.4) shared by the world's brokers (name and id are per broker)."""

    broker_cluster_name: str = "DefaultCluster"
    register_name_server_period: int = 30000
    register_broker_timeout_mills: int = 6000
    force_register: bool = True  # false would query QUERY_DATA_VERSION first (not modelled)
    broker_permission: int = ri.PermName.PERM_READ | ri.PermName.PERM_WRITE
    netty: rm.NettyClientConfig = rm.NettyClientConfig()

    LIMITS: ClassVar[dict] = positive("register_name_server_period", "register_broker_timeout_mills") | {
        "broker_cluster_name": (1, 127), "broker_permission": (0, 7)}

    def __attrs_post_init__(self) -> None:
        check_fields(self)

    def register_period_ms(self) -> int:
        return max(10000, min(self.register_name_server_period, 60000))


# --- producer <-> broker messages ---


@record
class SendMessage:
    """SEND_MESSAGE (SendMessageRequestHeader, the fields that matter); `msg_id` is the UNIQ_KEY,
    the same on every retry; `attempt` is the retry number (0 first)."""

    producer: str
    topic: str
    queue_id: int
    msg_id: str
    attempt: int


@record
class SendResponse:
    code: int
    msg_id: str = ""
    queue_id: int = -1
    queue_offset: int = -1


# --- observations ---


@record
class MessageStored:
    msg_id: str
    attempt: int
    producer: str
    topic: str
    queue_id: int
    queue_offset: int


@record
class RegisterRoundDone:
    """registerBrokerAll returned: which NameServers answered, and what results.get(0) set."""

    ok: tuple
    failed: tuple
    master_addr: str | None


@record
class RoleChanged:
    broker_id: int


# --- state ---


@record
class RegisterRound:
    """A registerBrokerAll blocked in countDownLatch.await(registerBrokerTimeoutMills)."""

    seq: int
    deadline: int
    pending: frozenset
    results: tuple = ()  # (namesrv, RegisterBrokerResult) in arrival order
    failed: tuple = ()
    startup: bool = False


@record
class Broker:
    self_id: str  # the broker address
    broker_name: str
    broker_id: int
    remoting: rm.RemotingClient
    topic_config: FrozenMap = EMPTY  # topic -> TopicConfig (persisted)
    data_version: ri.DataVersion = ri.DataVersion()  # persisted with the topic config
    queue_offsets: FrozenMap = EMPTY  # (topic, queueId) -> next offset (persisted)
    started: bool = False  # start()'s registration has begun
    next_register_ms: int = -1  # the periodic task's next run; -1 until start() returned
    round: RegisterRound | None = None
    round_seq: int = 0
    # registerIncrementBrokerData calls blocked on the BrokerController monitor while a round
    # holds it: the TopicConfig each admin thread captured, in the order they came (volatile)
    waiting_increments: tuple = ()
    master_addr: str | None = None  # SlaveSynchronize.masterAddr
    ha_master_addr: str | None = None  # HAClient master address (updateMasterHAServerAddrPeriodically)
    stopping: tuple | None = None  # shutdown(): NameServers still to unregister from
    exited: bool = False  # shutdown() finished: the process exits
    fins: tuple | None = None  # after a process crash: (peer, Fin) the OS still has to send
    machine_down: bool = False  # crashed with its machine: no FIN, no RST


def boot(c: BrokerConfig, self_id: str, broker_name: str, broker_id: int, namesrvs: tuple,
         topics: FrozenMap, now: int) -> Broker:
    """A broker whose store holds `topics`; its DataVersion dates from its first start."""
    return Broker(self_id=self_id, broker_name=broker_name, broker_id=broker_id,
                  remoting=rm.init_client(self_id, 0, namesrvs), topic_config=topics,
                  data_version=ri.DataVersion(timestamp=now, counter=0))


def crash(b: Broker, kind: str) -> Broker:
    """The store survives (topic config, offsets), unless the disk is lost: then the broker comes
    back with its configured topics under a new DataVersion and empty queues. A process crash
    leaves FINs for the OS to send."""
    fins = rm.fins_on_crash(b.remoting) if kind == "process" else None
    lost = kind == "disk"
    return Broker(self_id=b.self_id, broker_name=b.broker_name, broker_id=b.broker_id, remoting=b.remoting,
                  topic_config=b.topic_config, data_version=ri.DataVersion(timestamp=-1) if lost else b.data_version,
                  queue_offsets=EMPTY if lost else b.queue_offsets, fins=fins, machine_down=kind != "process")


def restart(c: BrokerConfig, b: Broker, now: int) -> Broker:
    version = ri.DataVersion(timestamp=now) if b.data_version.timestamp < 0 else b.data_version
    return crash(b, "process").evolve(remoting=rm.restart_client(b.remoting), fins=b.fins, data_version=version)


def is_master(b: Broker) -> bool:
    return b.broker_id == rocketmq.MASTER_ID


def wake_at(c: BrokerConfig, b: Broker) -> int:
    if b.exited or b.stopping is not None:
        return -1
    if not b.started:
        return 0
    if b.round is not None:
        return b.round.deadline
    return b.next_register_ms


def on_tick(c: BrokerConfig, b: Broker, now: int, draw: int) -> tuple[Broker, tuple]:
    """start()'s registration, the periodic registerBrokerAll, and a round's latch timeout."""
    if b.exited or b.stopping is not None:
        return b, ()
    if not b.started:
        return register_broker_all(c, b.evolve(started=True), now, startup=True)
    if b.round is not None:
        if now >= b.round.deadline:
            return finish_round(c, b, now)
        return b, ()
    if 0 <= b.next_register_ms <= now:
        b = b.evolve(next_register_ms=b.next_register_ms + c.register_period_ms())
        return register_broker_all(c, b, now)
    return b, ()


def topic_config_wrapper(c: BrokerConfig, b: Broker, only: tuple | None = None) -> ri.TopicConfigSerializeWrapper:
    """TopicConfigManager#buildTopicConfigSerializeWrapper; a broker that is not both readable
    and writable re-sends every topic with perm = brokerPermission (registerBrokerAll). `only`
    (registerIncrementBrokerData): the TopicConfigs to send instead of the whole table, with the
    DataVersion as it is when the request is built (the admin thread passes the live object)."""
    table = b.topic_config if only is None else FrozenMap((tc.topic_name, tc) for tc in only)
    perm = c.broker_permission
    if not (ri.PermName.is_writeable(perm) and ri.PermName.is_readable(perm)):
        table = FrozenMap((t, tc.evolve(perm=perm)) for t, tc in table.items())
    return ri.TopicConfigSerializeWrapper(topic_config_table=table, data_version=b.data_version)


def register_request(c: BrokerConfig, b: Broker, wrapper: ri.TopicConfigSerializeWrapper) -> ns.RegisterBroker:
    return ns.RegisterBroker(chan=None, cluster_name=c.broker_cluster_name, broker_addr=b.self_id,
                             broker_name=b.broker_name, broker_id=b.broker_id, ha_server_addr=b.self_id,
                             topic_config=wrapper)


def register_broker_all(c: BrokerConfig, b: Broker, now: int, startup: bool = False, oneway: bool = False,
                        only: tuple | None = None) -> tuple[Broker, tuple]:
    """BrokerController#registerBrokerAll -> BrokerOuterAPI#registerBrokerAll: one
    REGISTER_BROKER per NameServer in parallel, then wait for all or the timeout."""
    req = register_request(c, b, topic_config_wrapper(c, b, only))
    namesrvs = b.remoting.namesrv_addr_list
    seq = b.round_seq + 1
    b = b.evolve(round_seq=seq)
    if oneway:
        # invokeOneway: nothing to wait for; the result list stays empty.
        rc, outs = b.remoting, ()
        for addr in namesrvs:
            rc, o = rm.invoke_sync(c.netty, rc, addr, req, c.register_broker_timeout_mills, ("register", 0), now,
                                   oneway=True)
            outs += o
        return b.evolve(remoting=rc), _drop_done(outs)
    b = b.evolve(round=RegisterRound(seq=seq, deadline=now + c.register_broker_timeout_mills,
                                     pending=frozenset(namesrvs), startup=startup))
    outs = ()
    for addr in namesrvs:
        rc, o = rm.invoke_sync(c.netty, b.remoting, addr, req, c.register_broker_timeout_mills,
                               ("register", seq), now)
        b = b.evolve(remoting=rc)
        b, o = _route_done(c, b, o, now)
        outs += o
    return b, outs


def _drop_done(outs: tuple) -> tuple:
    return tuple(o for o in outs if not isinstance(o, rm.Done))


def _route_done(c: BrokerConfig, b: Broker, outs: tuple, now: int) -> tuple[Broker, tuple]:
    return rm.hand_over_done(b, outs, lambda b, done: on_done(c, b, done, now))


def on_done(c: BrokerConfig, b: Broker, done: rm.Done, now: int) -> tuple[Broker, tuple]:
    kind = done.purpose[0]
    if kind == "register":
        rnd = b.round
        if rnd is None or rnd.seq != done.purpose[1] or done.target not in rnd.pending:
            return b, ()  # the round already returned; Java adds to a list nobody reads
        resp = done.response
        if isinstance(resp, ns.RegisterBrokerResponse) and resp.code == rocketmq.ResponseCode.SUCCESS:
            result = ri.RegisterBrokerResult(ha_server_addr=resp.ha_server_addr, master_addr=resp.master_addr)
            rnd = rnd.evolve(results=rnd.results + ((done.target, result),))
        else:
            rnd = rnd.evolve(failed=rnd.failed + (done.target,))
        rnd = rnd.evolve(pending=rnd.pending - {done.target})
        b = b.evolve(round=rnd)
        if not rnd.pending:
            return finish_round(c, b, now)
        return b, ()
    if kind == "unregister":
        return unregister_next(c, b, now)
    return b, ()


def finish_round(c: BrokerConfig, b: Broker, now: int) -> tuple[Broker, tuple]:
    """doRegisterBrokerAll after the latch: results.get(0) sets the master (HA) address."""
    rnd = b.round
    b = b.evolve(round=None)
    outs: tuple = ()
    if b.waiting_increments:
        # the monitor is released: the first admin thread waiting in registerIncrementBrokerData
        # takes it (Java's monitor is not fair: the model takes them in the order they came)
        tc, rest = b.waiting_increments[0], b.waiting_increments[1:]
        b, outs = register_broker_all(c, b.evolve(waiting_increments=rest), now, only=(tc,))
    master = b.master_addr
    if rnd.results:
        first = rnd.results[0][1]
        if not is_master(b) and first.ha_server_addr is not None:
            b = b.evolve(ha_master_addr=first.ha_server_addr)  # updateMasterHAServerAddrPeriodically (slaves)
        master = first.master_addr
        b = b.evolve(master_addr=master)
    if rnd.startup:
        b = b.evolve(next_register_ms=now + REGISTER_INITIAL_DELAY_MS)
    failed = rnd.failed + tuple(sorted(rnd.pending))
    return b, (RegisterRoundDone(ok=tuple(a for a, _ in rnd.results), failed=failed, master_addr=master),) + outs


def on_response(c: BrokerConfig, b: Broker, ctx: Any, peer: str, resp: Any, now: int) -> tuple[Broker, tuple]:
    rc, outs = rm.on_invoke_response(c.netty, b.remoting, ctx, resp, now)
    return _route_done(c, b.evolve(remoting=rc), outs, now)


def on_message(c: BrokerConfig, b: Broker, msg: Any, peer: str, now: int) -> tuple[Broker, tuple]:
    if isinstance(msg, rm.Fin):
        return b.evolve(remoting=rm.on_fin(b.remoting, peer, msg.chan)), ()
    return b, ()


def on_request(c: BrokerConfig, b: Broker, msg: Any, rpc: int, now: int) -> tuple[Broker, Any, tuple]:
    if isinstance(msg, SendMessage):
        return send_message(c, b, msg)
    raise TypeError(f"not a broker request: {msg!r}")


def send_message(c: BrokerConfig, b: Broker, req: SendMessage) -> tuple[Broker, Any, tuple]:
    """SendMessageProcessor#sendMessage -> DefaultMessageStore#putMessage, the branches that
    decide the response code here (autoCreateTopicEnable is false)."""
    if b.stopping is not None or b.exited:
        return b, rm.Reset(), ()  # the remoting server is shut down: the connection is reset
    tc = b.topic_config.get(req.topic)
    if tc is None:
        return b, SendResponse(code=rocketmq.ResponseCode.TOPIC_NOT_EXIST, msg_id=req.msg_id), ()
    if req.queue_id >= max(tc.write_queue_nums, tc.read_queue_nums):
        return b, SendResponse(code=rocketmq.ResponseCode.SYSTEM_ERROR, msg_id=req.msg_id), ()  # "queueId is illegal"
    if not is_master(b):
        # checkStoreStatus: BrokerRole.SLAVE -> SERVICE_NOT_AVAILABLE
        return b, SendResponse(code=rocketmq.ResponseCode.SERVICE_NOT_AVAILABLE, msg_id=req.msg_id), ()
    key = (req.topic, req.queue_id)
    offset = b.queue_offsets.get(key, 0)
    b = b.evolve(queue_offsets=b.queue_offsets.set(key, offset + 1))
    stored = MessageStored(msg_id=req.msg_id, attempt=req.attempt, producer=req.producer, topic=req.topic,
                           queue_id=req.queue_id, queue_offset=offset)
    return b, SendResponse(code=rocketmq.ResponseCode.SUCCESS, msg_id=req.msg_id, queue_id=req.queue_id,
                           queue_offset=offset), (stored,)


# --- operator actions (scenario scripts) ---


def shutdown(c: BrokerConfig, b: Broker, now: int) -> tuple[Broker, tuple]:
    """BrokerController#shutdown: the remoting server stops, then unregisterBrokerAll asks
    each NameServer in turn (invokeSync, 3000 ms), then the process exits."""
    b = b.evolve(stopping=b.remoting.namesrv_addr_list, round=None, waiting_increments=())
    return unregister_next(c, b, now)


def unregister_next(c: BrokerConfig, b: Broker, now: int) -> tuple[Broker, tuple]:
    """BrokerOuterAPI#unregisterBrokerAll: the next NameServer, or exit when none is left."""
    if not b.stopping:
        return b.evolve(stopping=(), exited=True), ()
    addr, rest = b.stopping[0], b.stopping[1:]
    req = ns.UnregisterBroker(chan=None, cluster_name=c.broker_cluster_name, broker_addr=b.self_id,
                              broker_name=b.broker_name, broker_id=b.broker_id)
    rc, outs = rm.invoke_sync(c.netty, b.remoting, addr, req, UNREGISTER_TIMEOUT_MS, ("unregister", addr), now)
    return _route_done(c, b.evolve(remoting=rc, stopping=rest), outs, now)


def change_to_slave(c: BrokerConfig, b: Broker, broker_id: int, now: int) -> tuple[Broker, tuple]:
    """BrokerController#changeToSlave: id (0 becomes 1), masterAddr cleared, registerBrokerAll oneway."""
    b = b.evolve(broker_id=1 if broker_id == 0 else broker_id, master_addr=None)
    b, outs = register_broker_all(c, b, now, oneway=True)
    return b, (RoleChanged(broker_id=b.broker_id),) + outs


def change_to_master(c: BrokerConfig, b: Broker, now: int) -> tuple[Broker, tuple]:
    """BrokerController#changeToMaster: id 0, masterAddr cleared, registerBrokerAll oneway."""
    b = b.evolve(broker_id=rocketmq.MASTER_ID, master_addr=None)
    b, outs = register_broker_all(c, b, now, oneway=True)
    return b, (RoleChanged(broker_id=b.broker_id),) + outs


def create_topic(c: BrokerConfig, b: Broker, tc: ri.TopicConfig, now: int) -> tuple[Broker, tuple]:
    """AdminBrokerProcessor#updateAndCreateTopic: TopicConfigManager#updateTopicConfig bumps the
    DataVersion, then registerIncrementBrokerData registers that one topic (sync). Both it and
    registerBrokerAll are synchronized on the BrokerController: while a round waits for its
    answers, the increment waits for the monitor and is sent when the round returns
    (finish_round), with the DataVersion as it is then."""
    b = b.evolve(topic_config=b.topic_config.set(tc.topic_name, tc), data_version=b.data_version.next_version(now))
    if b.round is not None:
        return b.evolve(waiting_increments=b.waiting_increments + (tc,)), ()
    return register_broker_all(c, b, now, only=(tc,))


def delete_topic_config(b: Broker, topic: str, now: int) -> Broker:
    """TopicConfigManager#deleteTopicConfig (AdminBrokerProcessor#deleteTopic): the topic
    leaves the table and the DataVersion moves on; nothing is registered until the next round."""
    if topic not in b.topic_config:
        return b
    return b.evolve(topic_config=b.topic_config.without(topic), data_version=b.data_version.next_version(now))
