"""The dledger_commitlog world: RocketMQ brokers on DLedger (reference_impl.dledger_commitlog.broker), a name
server, producers and consumers (reference_impl.dledger_commitlog.clients).

Nodes: brokers `n0..` (one DLedger group, one broker name), `ns0`, producers `p0..`,
consumers `c0..`. Random faults crash brokers only. A broker may start from an old,
plain commitlog (`old_messages`), which it seals and keeps below
`dividedCommitlogOffset` when it first starts on DLedger (the upgrade); those messages
count as acknowledged before the history began.

Ghost variables (`CommitLogGhost`) extend the log world's (`LogGhost`, so the LOG
properties read them too) with what the DCL properties need: the PUT_OK answers
(message key -> offset), offsets acknowledged for two keys, appends that landed at or
below an offset acknowledged before them, the offsets each message key was committed
at, which keys a producer retried after which answer, each broker's old commitlog as
sealed at the upgrade, the puts a broker took before its role handler recovered its
topicQueueTable, and the first send acknowledged after faults stopped.
"""

from __future__ import annotations

from typing import Any, ClassVar

from reference_impl import core, rocketmq
from reference_impl.core import inputs
from reference_impl.core.inputs import POSITIVE, check_fields
from reference_impl.core.state import EMPTY, FrozenMap, freeze, record
from reference_impl.dledger_commitlog import broker as bk
from reference_impl.dledger_commitlog import clients as cc
from reference_impl.dledger_commitlog import commitlog as cl
from reference_impl.dledger_log import store as st
from reference_impl.dledger_log import world as lw
from reference_impl.election import records as el

DEFAULT_PROPERTIES_LENGTH = 52  # "UNIQ_KEY\1<32 hex>\2WAIT\1true\2": the properties a producer sends


@record
class CommitLogWorldConfig:
    node: st.NodeConfig
    broker: bk.BrokerConfig = bk.BrokerConfig()
    producers: int = 1
    consumers: int = 1
    send_interval_ms: int = 500
    pull_interval_ms: int = 1000
    queues: int = 2
    topic: str = "TopicTest"
    body_size: int = 16
    properties_length: int = DEFAULT_PROPERTIES_LENGTH
    old_messages: int = 0  # messages in the plain commitlog before the upgrade (0: none)
    forced_leader: str | None = None

    # The model's caps: `queues` sizes every consumer's state; start-up and the consume-queue
    # checks grow with the square of `old_messages` (1,000, the Java test's figure, takes seconds).
    LIMITS: ClassVar[dict] = {
        "producers": (0, 4), "consumers": (0, 4), "send_interval_ms": POSITIVE, "pull_interval_ms": POSITIVE,
        "queues": (1, 1024), "topic": (1, 127), "body_size": (0, rocketmq.MAX_MESSAGE_SIZE),
        "properties_length": (0, 32767), "old_messages": (0, 1000), "forced_leader": (1, 64)}

    def __attrs_post_init__(self) -> None:
        check_fields(self)

    @property
    def message_length(self) -> int:
        return cl.message_length(self.body_size, self.topic, self.properties_length)


@record
class CommitLogGhost(lw.LogGhost):
    put_ok: FrozenMap = EMPTY  # message key -> offsets answered PUT_OK for it
    put_ok_index: FrozenMap = EMPTY  # offset answered PUT_OK -> its DLedger index (-1: the old commitlog)
    acked_offsets: FrozenMap = EMPTY  # offset -> the key first answered PUT_OK there
    offset_conflicts: FrozenMap = EMPTY  # offset -> later keys answered PUT_OK at the same offset
    max_acked_offset: int = -1
    order_violations: tuple = ()  # (key, offset, highest offset acked before it was appended)
    appended_floor: FrozenMap = EMPTY  # (key, offset) -> highest offset acked when it was appended
    committed_keys: FrozenMap = EMPTY  # message key -> frozenset of offsets it was committed at
    retries: FrozenMap = EMPTY  # message key -> tuple of (attempt, code) answers that were retried
    duplicated_sends: frozenset = frozenset()  # message keys whose SEND request the network duplicated
    sealed_old: FrozenMap = EMPTY  # broker id -> its old commitlog as sealed at the upgrade
    # (offset, message key) -> (broker id, ms): appended while that broker's LEADER role task had not yet run
    # recoverTopicQueueTable, so its queue offset came from the table its start-up recovery built
    unrecovered_puts: FrozenMap = EMPTY
    sends_ok: int = 0
    sends_failed: int = 0
    consumed: int = 0
    first_send_after_calm_ms: int = -1
    # DCL-Q: (key, offset) -> (time, broker id, its term) of entries appended in the quiet tail while
    # everything before them in the broker's log was committed, until committed; and the slowest commit
    # of one, (ms, key, offset, time, broker id, term)
    tail_appends: FrozenMap = EMPTY
    tail_slowest: tuple = ()


# --- the protocol ---


def boot(c: CommitLogWorldConfig, node_id: str, i: int, now: int) -> Any:
    if node_id == bk.NAMESRV:
        return cc.NameServer(self_id=node_id)
    if node_id[0] == "p":
        return cc.Producer(self_id=node_id, next_send_ms=now + c.send_interval_ms)
    if node_id[0] == "c":
        return cc.Consumer(self_id=node_id, offsets=(0,) * c.queues)
    return bk.boot(c.node, c.broker, node_id, now, store=old_store(c), forced_leader=c.forced_leader)


def old_store(c: CommitLogWorldConfig) -> cl.MessageStore | None:
    """The plain commitlog (and its consume queues) a broker had before the upgrade."""
    if not c.old_messages:
        return None
    msgs, next_offset = [], {}
    for k in range(c.old_messages):
        q = k % c.queues
        msgs.append(cl.Message(key=f"old-{k}", topic=c.topic, queue_id=q, queue_offset=next_offset.get(q, 0),
                               length=c.message_length))
        next_offset[q] = next_offset.get(q, 0) + 1
    old = cl.build_old_commitlog(tuple(msgs), c.broker.mapped_file_size_commit_log)
    ms = cl.MessageStore(old=old)
    for m in old.messages:
        ms = cl.put_unit(ms, m)
    return ms


def wake_at(c: CommitLogWorldConfig, n: Any) -> int:
    if isinstance(n, bk.Broker):
        return bk.wake_at(c.node, n)
    if isinstance(n, cc.Producer):
        return cc.producer_wake_at(n)
    if isinstance(n, cc.Consumer):
        return cc.consumer_wake_at(n)
    return -1


def on_tick(c: CommitLogWorldConfig, n: Any, now: int, draw: int):
    """A node that is one actor's tick (a producer or consumer; a broker's threads tick one by one)."""
    if isinstance(n, cc.Producer):
        return cc.producer_on_tick(c, n, now)
    if isinstance(n, cc.Consumer):
        return cc.consumer_on_tick(c, n, now)
    raise TypeError(f"{type(n).__name__} ticks through on_thread_tick")


# --- the threads: a broker's are its DLedger server's plus its own (broker.thread_names); the
# producer, consumer and name server are one actor each ---


def threads(c: CommitLogWorldConfig, n: Any) -> tuple[str, ...]:
    return bk.thread_names(c.node, n) if isinstance(n, bk.Broker) else (type(n).__name__.lower(),)


def thread_wakes(c: CommitLogWorldConfig, n: Any) -> tuple[int, ...]:
    return bk.thread_wakes(c.node, n) if isinstance(n, bk.Broker) else (wake_at(c, n),)


def thread_slack(c: CommitLogWorldConfig, n: Any, k: int, since: int, wake: int) -> int:
    return bk.thread_slack(c.node, n, k, since, wake) if isinstance(n, bk.Broker) else 0


def on_thread_tick(c: CommitLogWorldConfig, n: Any, k: int, now: int, draw: int):
    if isinstance(n, bk.Broker):
        return bk.on_thread_tick(c.node, c.broker, n, k, now, draw)
    return on_tick(c, n, now, draw)


def on_request(c: CommitLogWorldConfig, n: Any, msg: Any, rpc: int, now: int):
    if isinstance(n, bk.Broker):
        return bk.on_request(c.node, c.broker, n, msg, rpc, now)
    if isinstance(n, cc.NameServer):
        n, reply = cc.namesrv_on_request(n, msg)
        return n, reply, ()
    raise TypeError(f"{n.self_id} serves no requests: {msg!r}")


def on_response(c: CommitLogWorldConfig, n: Any, ctx: Any, peer: str, resp: Any, now: int):
    if isinstance(n, bk.Broker):
        return bk.on_response(c.node, n, ctx, peer, resp, now)
    if isinstance(n, cc.Producer):
        return cc.producer_on_response(c, n, ctx, peer, resp, now)
    return cc.consumer_on_response(c, n, ctx, peer, resp, now)


def on_message(c: CommitLogWorldConfig, n: Any, msg: Any, peer: str, now: int):
    """One-way messages: registerBrokerAll(oneway = true) to the name server."""
    if isinstance(n, cc.NameServer) and isinstance(msg, bk.RegisterBroker):
        return cc.register_broker(n, msg), ()
    return n, ()


def crash(c: CommitLogWorldConfig, n: Any, kind: str) -> Any:
    if isinstance(n, bk.Broker):
        return bk.crash(c.node, n, kind)
    if isinstance(n, cc.NameServer):
        return cc.NameServer(self_id=n.self_id)  # RouteInfoManager is memory only
    if isinstance(n, cc.Producer):
        return n.evolve(sending=None)
    return n.evolve(waiting=False)


def restart(c: CommitLogWorldConfig, n: Any, now: int) -> Any:
    if isinstance(n, bk.Broker):
        return bk.restart(c.node, c.broker, n, now, forced_leader=c.forced_leader)
    if isinstance(n, cc.Producer):
        return n.evolve(next_send_ms=now + c.send_interval_ms, next_poll_ms=now + 10)
    if isinstance(n, cc.Consumer):
        return n.evolve(next_pull_ms=now, next_poll_ms=now + 10)
    return n


# --- ghost ---


def ghost_init(cfg: core.WorldConfig) -> CommitLogGhost:
    c = cfg.proto
    g = CommitLogGhost()
    ms = old_store(c)
    if ms is not None:  # the old log's messages were acknowledged before the history began
        for m in ms.old.messages:
            g = _ack(g, m.key, m.phys_offset)
    return g


def _ack(g: CommitLogGhost, key: str, offset: int) -> CommitLogGhost:
    first = g.acked_offsets.get(offset)
    if first is None:
        g = g.evolve(acked_offsets=g.acked_offsets.set(offset, key))
    elif first != key:
        g = g.evolve(offset_conflicts=g.offset_conflicts.set(offset, g.offset_conflicts.get(offset, ()) + (key,)))
    return g.evolve(put_ok=g.put_ok.set(key, g.put_ok.get(key, ()) + (offset,)),
                    max_acked_offset=max(g.max_acked_offset, offset))


def ghost_update(g: CommitLogGhost, w: core.World, i: int, obs: Any) -> CommitLogGhost:
    """The DLedger log's ghost step (dledger_log's ghost_update), then the broker's of the
    observation's type in `UPDATES`; other observations leave the broker's fields as they are."""
    g = lw.ghost_update(g, w, i, obs)
    step = UPDATES.get(type(obs))
    return g if step is None else step(g, w, i, obs)


def _put_result(g: CommitLogGhost, w: core.World, i: int, obs: bk.PutResult) -> CommitLogGhost:
    if obs.status is rocketmq.PutMessageStatus.PUT_OK:
        floor = g.appended_floor.get((obs.key, obs.offset), -1)
        if obs.offset <= floor:
            g = g.evolve(order_violations=g.order_violations + ((obs.key, obs.offset, floor),))
        g = _ack(g, obs.key, obs.offset).evolve(put_ok_index=g.put_ok_index.set(obs.offset, obs.index))
    return g


def _appended(g: CommitLogGhost, w: core.World, i: int, obs: bk.Appended) -> CommitLogGhost:
    g = g.evolve(appended_floor=g.appended_floor.set((obs.key, obs.offset), g.max_acked_offset))
    if any(role is el.Role.LEADER for _, role in w.nodes[i].role_tasks):
        g = g.evolve(unrecovered_puts=g.unrecovered_puts.set((obs.offset, obs.key), (w.cfg.ids[i], w.now)))
    s = w.nodes[i].node.store
    if w.history.calm and s.committed_index == s.end_index - 1:
        g = g.evolve(tail_appends=g.tail_appends.set((obs.key, obs.offset), (
            w.now, w.cfg.ids[i], w.nodes[i].node.member.curr_term)))
    return g


def _send_attempt(g: CommitLogGhost, w: core.World, i: int, obs: cc.SendAttempt) -> CommitLogGhost:
    if not obs.retried:
        return g
    return g.evolve(retries=g.retries.set(obs.key, g.retries.get(obs.key, ()) + ((obs.attempt, obs.code),)))


def _send_done(g: CommitLogGhost, w: core.World, i: int, obs: cc.SendDone) -> CommitLogGhost:
    if obs.status != "SEND_OK":
        return g.evolve(sends_failed=g.sends_failed + 1)
    g = g.evolve(sends_ok=g.sends_ok + 1)
    if w.history.calm and g.first_send_after_calm_ms < 0:
        g = g.evolve(first_send_after_calm_ms=w.now)
    return g


def _duplicate(g: CommitLogGhost, w: core.World, i: int, obs: core.Duplicate) -> CommitLogGhost:
    env = next((e for e in w.net.flight if e.id == obs.env), None)
    if env is not None and isinstance(env.msg, bk.SendMessageRequest):
        g = g.evolve(duplicated_sends=g.duplicated_sends | {env.msg.key})
    return g


def _consumed(g: CommitLogGhost, w: core.World, i: int, obs: cc.Consumed) -> CommitLogGhost:
    return g.evolve(consumed=g.consumed + 1)


def _role_handled(g: CommitLogGhost, w: core.World, i: int, obs: bk.BecameMaster | bk.BecameSlave) -> CommitLogGhost:
    old = w.nodes[i].store.old
    if old is not None and old.sealed and w.cfg.ids[i] not in g.sealed_old:
        g = g.evolve(sealed_old=g.sealed_old.set(w.cfg.ids[i], old))
    return g


def _commit_advanced(g: CommitLogGhost, w: core.World, i: int, obs: lw.dn.CommitAdvanced) -> CommitLogGhost:
    s = lw.store_of(w, i)
    for index in range(max(obs.old, s.begin_index - 1) + 1, min(obs.new, s.end_index) + 1):
        e = s.entries[index - s.begin_index]
        if not isinstance(e.body, cl.Message):
            continue  # a no-op (enable_fast_advance_commit_index)
        key, offset = e.body.key, e.pos + st.BODY_OFFSET
        owed = g.tail_appends.get((key, offset))
        if owed is not None:
            ms = w.now - owed[0]
            g = g.evolve(tail_appends=g.tail_appends.without((key, offset)))
            if not g.tail_slowest or ms > g.tail_slowest[0]:
                g = g.evolve(tail_slowest=(ms, key, offset) + owed)
        if offset not in g.committed_keys.get(key, frozenset()):
            g = g.evolve(committed_keys=g.committed_keys.set(key, g.committed_keys.get(key, frozenset())
                                                             | {offset}))
    return g


# What each observation (or fault event) does to the broker's ghost fields, by its type, as
# core/transitions.py steps the world by the event's type.
UPDATES = {
    bk.PutResult: _put_result, bk.Appended: _appended, cc.SendAttempt: _send_attempt, cc.SendDone: _send_done,
    core.Duplicate: _duplicate, cc.Consumed: _consumed, bk.BecameMaster: _role_handled, bk.BecameSlave: _role_handled,
    lw.dn.CommitAdvanced: _commit_advanced,
}


# --- observable state (trace-format.md) ---


def observe(c: CommitLogWorldConfig, n: Any, alive: bool) -> dict:
    if isinstance(n, bk.Broker):
        d = lw.observe(c, n.node, alive)
        d.update(broker_role=n.broker_role.value if alive else None, broker_id=n.broker_id,
                 divided_offset=n.store.divided_offset, max_phy_offset=cl.get_max_offset(n.node.store),
                 dispatched=cl.dispatch_behind_bytes(n.node.store, n.store) == 0, master_addr=n.master_addr,
                 queue_max_offsets=[len(n.store.consume_queues.get(q, ())) for q in range(c.queues)])
        return d
    if isinstance(n, cc.NameServer):
        return {"alive": alive, "role": "NAMESRV", "broker_addrs": {str(k): v for k, v in n.broker_addrs.items()}}
    if isinstance(n, cc.Producer):
        return {"alive": alive, "role": "PRODUCER", "sent": n.seq}
    return {"alive": alive, "role": "CONSUMER", "offsets": list(n.offsets)}


# --- scenario actions: the RocketMQ store tests' direct calls ---


def script_action(w: core.World, do: str, i: int, args: dict) -> tuple[core.World, tuple]:
    c = w.cfg.proto
    b = w.nodes[i]
    if not isinstance(b, bk.Broker):
        raise ValueError(f"{do} needs a broker, {w.cfg.ids[i]} is not one")
    outs: tuple = ()
    if do == "put":
        # DefaultMessageStore#putMessage, `count` times (the tests' doPutMessages): queue, body size, topic
        topic = inputs.arg(args, "topic", str, (1, 127), c.topic)
        length = cl.message_length(inputs.arg(args, "body_size", int, (0, rocketmq.MAX_MESSAGE_SIZE), c.body_size),
                                   topic, inputs.arg(args, "properties_length", int, (0, 32767), 0),
                                   inputs.arg(args, "ipv6", bool, None, False))
        queue_id = inputs.arg(args, "queue_id", int, (0, c.queues - 1), 0)
        for k in range(inputs.arg(args, "count", int, (1, lw.MAX_COUNT), 1)):
            req = bk.SendMessageRequest(key=f"s{w.script_pos}-{k}", topic=topic, queue_id=queue_id, length=length)
            b, _, o = bk.handle_send(c.node, b, req, 0, w.now)
            outs += o
    elif do == "delete_expired_files":
        ms, _ = cl.delete_expired_file(b.store)
        b = b.evolve(store=ms)
    elif do == "force_role":
        m = lw.dn.forced_member(c.node, b.node.member.self_id, lw.node_arg(w, args, "leader"), w.now).evolve(
            curr_term=inputs.arg(args, "term", int, lw.INDEX, 0), ledger_end_index=b.node.store.end_index,
            ledger_end_term=b.node.store.end_term)
        b = b.evolve(node=b.node.evolve(member=m))
    elif do == "shutdown":
        # DefaultMessageStore#shutdown: DLedger flushes and checkpoints, then the process stops
        b = b.evolve(node=b.node.evolve(store=st.shutdown(b.node.store, w.now)))
        return core.apply_fault(core.set_node(w, i, b), core.Crash(node=i))
    else:
        raise ValueError(f"unknown dledger_commitlog action {do!r}")
    return core.apply_outs(core.set_node(w, i, b), i, outs)


SCRIPT_ACTIONS = ("put", "delete_expired_files", "force_role", "shutdown")


# --- configs ---

WORLD_KEYS = {a.name for a in CommitLogWorldConfig.__attrs_attrs__} - {"node", "broker"}
BROKER_KEYS = {a.name for a in bk.BrokerConfig.__attrs_attrs__}


def make_config(nodes: int = 3, overrides: dict | None = None) -> core.WorldConfig:
    """Brokers n0..n{nodes-1}, ns0, `producers` producers p0.. and `consumers` consumers c0..;
    overrides take DLedgerConfig, LogConfig, BrokerConfig and the world's own field names."""
    opts = dict(overrides or {})
    world = {k: opts.pop(k) for k in list(opts) if k in WORLD_KEYS}
    broker = {k: opts.pop(k) for k in list(opts) if k in BROKER_KEYS}
    log = {k: opts.pop(k) for k in list(opts) if k in lw.LOG_KEYS}
    unknown = set(opts) - {a.name for a in el.DLedgerConfig.__attrs_attrs__}
    if unknown:
        raise ValueError(f"unknown dledger_commitlog config key(s): {', '.join(sorted(unknown))}")
    if "peers" in opts:
        raise ValueError("peers are the world's brokers; set the number of nodes instead")
    peers = tuple(f"n{i}" for i in range(nodes))
    if log.get("dledger_version") == "fixed":  # DLedger 0.4.0's heartbeat parse as well (records.DLedgerConfig)
        opts.setdefault("step_down_on_higher_term", True)
    if world.get("forced_leader") is not None:
        if world["forced_leader"] not in peers:
            raise ValueError(f"forced_leader {world['forced_leader']!r} is not one of {list(peers)}")
        opts.setdefault("enable_leader_elector", False)
    broker = bk.BrokerConfig(**inputs.structure_fields(bk.BrokerConfig, broker))
    # DLedgerCommitLog: dLedgerConfig.setMappedFileSizeForEntryData(mappedFileSizeCommitLog)
    log.setdefault("mapped_file_size_for_entry_data", broker.mapped_file_size_commit_log)
    node = st.NodeConfig(dledger=el.DLedgerConfig(peers=peers, **inputs.structure_fields(el.DLedgerConfig, opts)),
                         log=st.LogConfig(**inputs.structure_fields(st.LogConfig, log)))
    proto = CommitLogWorldConfig(node=node, broker=broker, **inputs.structure_fields(CommitLogWorldConfig, world))
    ids = peers + (bk.NAMESRV,) + tuple(f"p{k}" for k in range(proto.producers)) + tuple(
        f"c{k}" for k in range(proto.consumers))
    return core.WorldConfig(protocol="dledger_commitlog", ids=ids, proto=proto, crashable=tuple(range(nodes)),
                            overrides=freeze(dict(overrides or {})))


def load_config(d: dict) -> CommitLogWorldConfig:
    """The config from a trace header (`dump_config`'s `proto`)."""
    return inputs.structure(d, CommitLogWorldConfig)


def check_ids(c: CommitLogWorldConfig, ids: tuple[str, ...]) -> None:
    want = c.node.dledger.peers + (bk.NAMESRV,) + tuple(f"p{k}" for k in range(c.producers)) + tuple(
        f"c{k}" for k in range(c.consumers))
    if want != ids:
        raise ValueError(f"the config's brokers, NameServer, producers and consumers are {list(want)}, not {list(ids)}")



# Result codes where the Java code switches: a fuzz run's branch coverage counts each one.
_PUT, _RC = rocketmq.PutMessageStatus, rocketmq.ResponseCode
BRANCHES = (*rocketmq.BrokerRole, *el.Code, *el.ParseResult, *el.Role, *el.VoteResult,
            _PUT.PUT_OK, _PUT.SERVICE_NOT_AVAILABLE, _PUT.OS_PAGECACHE_BUSY, _PUT.UNKNOWN_ERROR,
            _RC.SUCCESS, _RC.SYSTEM_ERROR, _RC.SERVICE_NOT_AVAILABLE, _RC.PULL_NOT_FOUND,
            _RC.PULL_RETRY_IMMEDIATELY, _RC.PULL_OFFSET_MOVED)


PROTOCOL = core.Protocol(
    name="dledger_commitlog", threads=threads, thread_wakes=thread_wakes, on_thread_tick=on_thread_tick,
    thread_slack=thread_slack, boot=boot, wake_at=wake_at, on_tick=on_tick, on_request=on_request,
    on_response=on_response, on_message=on_message, crash=crash, restart=restart, ghost_init=ghost_init,
    ghost_update=ghost_update, ghost_crash=lw.lg.crash_note, observe=observe, make_config=make_config,
    load_config=load_config, check_ids=check_ids, script_action=script_action, script_actions=SCRIPT_ACTIONS,
    profiles=lw.PROFILES, branches=BRANCHES, ext_faults=lw.ext_faults, ext_apply=lw.ext_apply, fifo=lw.fifo)
