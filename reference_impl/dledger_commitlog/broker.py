"""A RocketMQ 4.9.4 broker on a DLedger commitlog: BrokerController, DLedgerRoleChangeHandler,
SendMessageProcessor and PullMessageProcessor as far as this protocol needs them.

Theory of operation
-------------------
A broker is a DLedger server (reference_impl.dledger_log.server) whose log is the broker's
commitlog (reference_impl.dledger_commitlog), plus the broker's role, id and threads:

- DLedgerRoleChangeHandler: every role change of the DLedger member (the election's
  `RoleChanged`, also a candidate re-entering candidate) queues a task on one thread.
  CANDIDATE: `changeToSlave` unless already SLAVE. FOLLOWER: `changeToSlave`. LEADER:
  poll every 100 ms until the node is no longer leader (give up), or its log is empty,
  or `ledgerEndIndex == committedIndex` and dispatch has caught up; then
  `recoverTopicQueueTable` and `changeToMaster(SYNC_MASTER)`. The broker keeps its
  configured role (ASYNC_MASTER) and id (0) until the first task runs.
- `changeToSlave(id)`: brokerId = id (DLedgerCommitLog.id = selfId digits + 1; n0 -> 1),
  role SLAVE, `registerBrokerAll` one-way. `changeToMaster`: brokerId 0, role
  SYNC_MASTER, one-way registration. Only the periodic registration (every 30 s, the
  first at start) waits for the name server's answer, which is where a slave learns
  `masterAddr` for SlaveSynchronize.
- SEND: a SLAVE answers SERVICE_NOT_AVAILABLE; a master runs `asyncPutMessage` and
  answers when DLedger's future completes (PUT_OK -> SUCCESS, SERVICE_NOT_AVAILABLE ->
  SERVICE_NOT_AVAILABLE, OS_PAGECACHE_BUSY and UNKNOWN_ERROR -> SYSTEM_ERROR).
- PULL: the consume queue from the asked offset, messages read at their physical
  offsets; any role serves it (slaveReadEnable only changes the suggestion).
- The reput service dispatches committed messages into the consume queues.

Crash and restart: the DLedger node's, then `DLedgerCommitLog#recover` and a fresh
broker role (the configured one) and role-change queue.
"""

from __future__ import annotations

from typing import Any, ClassVar

from reference_impl import rocketmq
from reference_impl.core.inputs import InputError, check_fields, positive
from reference_impl.core.network import Respond, Send
from reference_impl.core.state import record
from reference_impl.dledger_commitlog import commitlog as cl
from reference_impl.dledger_log import entry_pusher as ep
from reference_impl.dledger_log import server as dn
from reference_impl.dledger_log import store as st
from reference_impl.election import records as el
from reference_impl.rocketmq import MASTER_ID, BrokerRole, ResponseCode

NAMESRV = "ns0"


RESPONSE_OF = {  # SendMessageProcessor#handlePutMessageResult
    rocketmq.PutMessageStatus.PUT_OK: ResponseCode.SUCCESS,
    rocketmq.PutMessageStatus.SERVICE_NOT_AVAILABLE: ResponseCode.SERVICE_NOT_AVAILABLE,
    rocketmq.PutMessageStatus.OS_PAGECACHE_BUSY: ResponseCode.SYSTEM_ERROR,  # "[PC_SYNCHRONIZED]broker busy"
    rocketmq.PutMessageStatus.UNKNOWN_ERROR: ResponseCode.SYSTEM_ERROR,
}


@record
class BrokerConfig:
    """MessageStoreConfig / BrokerConfig fields the DLedger commitlog reads, with 4.9.4 defaults."""

    broker_name: str = "broker-a"
    broker_role: str = "ASYNC_MASTER"  # brokerRole before the first DLedger role change
    broker_id: int = 0  # brokerId (MixAll.MASTER_ID) before the first change
    mapped_file_size_commit_log: int = 1 << 30
    register_name_server_period_ms: int = 30_000  # registerBrokerAll: max(10000, min(30000, 60000))
    role_poll_ms: int = 100  # DLedgerRoleChangeHandler: Thread.sleep(100)
    max_msg_nums_per_pull: int = 32

    LIMITS: ClassVar[dict] = positive("mapped_file_size_commit_log", "register_name_server_period_ms",
                                      "role_poll_ms", "max_msg_nums_per_pull")

    def __attrs_post_init__(self) -> None:
        check_fields(self)
        if self.broker_role not in [r.value for r in BrokerRole]:
            raise InputError("broker_role", f"must be one of {', '.join(r.value for r in BrokerRole)}, "
                                            f"got {self.broker_role!r}")


# --- messages ---


@record
class SendMessageRequest:
    key: str
    topic: str
    queue_id: int
    length: int  # the encoded message's size (its body, topic and properties)


@record
class SendMessageResponse:
    code: ResponseCode
    offset: int = -1  # wroteOffset: entry pos + 48
    queue_offset: int = -1
    msg_id: str | None = None  # createMessageId(storeHost, wroteOffset)


@record
class PullMessageRequest:
    queue_id: int
    offset: int
    max_msg_nums: int = 32


@record
class PullMessageResponse:
    code: ResponseCode
    messages: tuple = ()
    next_begin_offset: int = -1
    min_offset: int = 0
    max_offset: int = 0


@record
class RegisterBroker:
    broker_name: str
    broker_id: int
    addr: str


@record
class RegisterBrokerResult:
    master_addr: str | None


# --- observations ---


@record
class PutResult:
    """A put was answered: the trace's put results (status, offset, size, message id)."""

    key: str
    status: rocketmq.PutMessageStatus
    offset: int
    size: int
    msg_id: str | None
    queue_id: int
    queue_offset: int
    index: int = -1  # the DLedger entry's index (-1: not appended)


@record
class Appended:
    """asyncPutMessage got a position: the message is in the leader's log at `offset` (pos + 48)."""

    key: str
    offset: int


@record
class BecameMaster:
    term: int


@record
class BecameSlave:
    broker_id: int


# --- state ---


@record
class Broker:
    node: dn.DLedgerNode
    store: cl.MessageStore
    id: int  # DLedgerCommitLog.id: selfId digits + 1
    broker_role: BrokerRole = BrokerRole.ASYNC_MASTER
    broker_id: int = 0
    role_tasks: tuple = ()  # the handler's single-thread executor: (term, role) in order
    role_wait_until: int = -1  # the LEADER task's next check
    master_addr: str | None = None  # SlaveSynchronize.masterAddr
    next_register_ms: int = 0


def dledger_id(self_id: str) -> int:
    """DLedgerCommitLog: Integer.parseInt(selfId.substring(1)) + 1."""
    return int(self_id[1:]) + 1


def msg_id(node_id: str, offset: int) -> str:
    """MessageDecoder#createMessageId(storeHost, wroteOffset), with the node id for the host."""
    return f"{node_id}:{offset:016X}"


def boot(cfg: st.NodeConfig, bc: BrokerConfig, self_id: str, now: int, node: dn.DLedgerNode | None = None,
         store: cl.MessageStore | None = None, forced_leader: str | None = None) -> Broker:
    """BrokerController start: DLedger's store recovers, then DLedgerCommitLog#recover (the upgrade),
    then DefaultMessageStore#start dispatches what the consume queues lack before anything else runs."""
    m = node.member if node is not None else None
    n = dn.boot(cfg, self_id, now, store=node.store if node is not None else None, forced_leader=forced_leader,
                curr_term=m.curr_term if m else 0, curr_vote_for=m.curr_vote_for if m else None)
    s, ms = cl.recover(n.store, store if store is not None else cl.MessageStore(), bc.mapped_file_size_commit_log)
    n = n.evolve(store=s)
    return Broker(node=n, store=ms, id=dledger_id(self_id), broker_role=BrokerRole(bc.broker_role),
                  broker_id=bc.broker_id, next_register_ms=now)


def crash(cfg: st.NodeConfig, b: Broker, kind: str) -> Broker:
    """What survives: DLedger's files as dledger_store says; consume queues unless the disk is lost."""
    store = cl.MessageStore() if kind == "disk" else b.store
    return b.evolve(node=dn.crash(cfg, b.node, kind), store=store)


def restart(cfg: st.NodeConfig, bc: BrokerConfig, b: Broker, now: int, forced_leader: str | None = None) -> Broker:
    return boot(cfg, bc, b.node.member.self_id, now, b.node, b.store, forced_leader)


# --- role changes (DLedgerRoleChangeHandler, BrokerController) ---


def register(b: Broker, oneway: bool) -> Send:
    """BrokerController#registerBrokerAll to the name server."""
    req = RegisterBroker(broker_name="", broker_id=b.broker_id, addr=b.node.member.self_id)
    return Send(dst=NAMESRV, msg=req) if oneway else Send(dst=NAMESRV, msg=req, ctx=("register",), timeout_ms=6000)


def change_to_slave(b: Broker) -> tuple[Broker, tuple]:
    """BrokerController#changeToSlave(id): brokerId = id (1 if 0), SLAVE, one-way registration."""
    b = b.evolve(broker_id=b.id if b.id != 0 else 1, broker_role=BrokerRole.SLAVE)
    return b, (register(b, oneway=True), BecameSlave(broker_id=b.broker_id))


def change_to_master(b: Broker) -> tuple[Broker, tuple]:
    """BrokerController#changeToMaster(SYNC_MASTER): brokerId 0, one-way registration."""
    b = b.evolve(broker_id=MASTER_ID, broker_role=BrokerRole.SYNC_MASTER)
    return b, (register(b, oneway=True), BecameMaster(term=b.node.member.curr_term))


def queue_role_changes(b: Broker, outs: tuple) -> Broker:
    """DLedgerRoleChangeHandler#handle: submit each role change to the single-thread executor."""
    tasks = tuple((o.term, o.role) for o in outs if isinstance(o, el.RoleChanged))
    return b.evolve(role_tasks=b.role_tasks + tasks) if tasks else b


def role_handler_wake_at(b: Broker) -> int:
    if not b.role_tasks:
        return -1
    return max(0, b.role_wait_until) if b.role_tasks[0][1] is el.Role.LEADER else 0


def run_role_handler(bc: BrokerConfig, b: Broker, now: int) -> tuple[Broker, tuple]:
    """The executor's tasks in order; the LEADER task sleeps 100 ms between its checks."""
    outs: tuple = ()
    while b.role_tasks:
        term, role = b.role_tasks[0]
        if role is el.Role.LEADER:
            if now < b.role_wait_until:
                break
            s, m = b.node.store, b.node.member
            if m.role is not el.Role.LEADER:
                b = b.evolve(role_tasks=b.role_tasks[1:], role_wait_until=-1)  # succ = false
                continue
            ready = s.end_index == -1 or (s.end_index == s.committed_index
                                          and cl.dispatch_behind_bytes(s, b.store) == 0)
            if not ready:
                b = b.evolve(role_wait_until=now + bc.role_poll_ms)
                break
            b = b.evolve(store=cl.recover_topic_queue_table(b.store), role_tasks=b.role_tasks[1:],
                         role_wait_until=-1)
            b, o = change_to_master(b)
        elif role is el.Role.FOLLOWER or b.broker_role is not BrokerRole.SLAVE:
            b, o = change_to_slave(b.evolve(role_tasks=b.role_tasks[1:]))
        else:
            b, o = b.evolve(role_tasks=b.role_tasks[1:]), ()
        outs += o
    return b, outs


# --- the put path (SendMessageProcessor, DLedgerCommitLog#asyncPutMessage) ---


def handle_send(cfg: st.NodeConfig, b: Broker, req: SendMessageRequest, rpc: int, now: int
                ) -> tuple[Broker, SendMessageResponse | None, tuple]:
    """A SLAVE refuses (checkStoreStatus); a master reserves the queue offset and appends.
    The answer comes now for a rejection or an immediate SUCCESS, else when the future completes."""
    self_id = b.node.member.self_id
    if b.broker_role is BrokerRole.SLAVE:
        put = PutResult(key=req.key, status=rocketmq.PutMessageStatus.SERVICE_NOT_AVAILABLE, offset=-1, size=req.length,
                        msg_id=None, queue_id=req.queue_id, queue_offset=-1)
        return b, SendMessageResponse(code=ResponseCode.SERVICE_NOT_AVAILABLE), (put,)
    ms, msg = cl.reserve_queue_offset(b.store, cl.Message(key=req.key, topic=req.topic, queue_id=req.queue_id,
                                                          length=req.length))
    n, pos, outs = dn.handle_append(cfg, b.node, msg, now, hook=cl.append_hook, ref=("put", rpc, msg))
    b = b.evolve(node=n)
    if pos == -1:  # rejected before the append: OS_PAGECACHE_BUSY, at once
        put = PutResult(key=req.key, status=rocketmq.PutMessageStatus.OS_PAGECACHE_BUSY, offset=-1, size=req.length,
                        msg_id=None, queue_id=req.queue_id, queue_offset=msg.queue_offset)
        return b, SendMessageResponse(code=ResponseCode.SYSTEM_ERROR), (put,) + outs
    b = b.evolve(store=cl.after_append(ms, msg))
    outs = (Appended(key=req.key, offset=pos + st.BODY_OFFSET),) + outs
    done = [o for o in outs if isinstance(o, ep.AppendResult)]
    if not done:
        return b, None, outs
    resp, put = put_answer(self_id, done[0], pos)
    return b, resp, (put,) + outs


def put_answer(self_id: str, r: ep.AppendResult, pos: int) -> tuple[SendMessageResponse, PutResult]:
    """The future's code, mapped (DLedgerCommitLog#asyncPutMessage's thenApply) and answered."""
    _, _, msg = r.ref
    status = cl.put_status(r.code)
    wrote = pos + st.BODY_OFFSET
    put = PutResult(key=msg.key, status=status, offset=wrote, size=msg.length, msg_id=msg_id(self_id, wrote),
                    queue_id=msg.queue_id, queue_offset=msg.queue_offset, index=r.index)
    resp = SendMessageResponse(code=RESPONSE_OF[status], offset=wrote, queue_offset=msg.queue_offset,
                               msg_id=put.msg_id)
    return resp, put


def answer_puts(b: Broker, outs: tuple) -> tuple:
    """Futures of puts that completed: answer their SEND RPCs."""
    extra: tuple = ()
    for o in outs:
        if isinstance(o, ep.AppendResult) and isinstance(o.ref, tuple) and o.ref[0] == "put":
            resp, put = put_answer(b.node.member.self_id, o, o.future_pos)
            extra += (Respond(rpc=o.ref[1], msg=resp), put)
    return outs + extra


# --- the pull path (PullMessageProcessor, DefaultMessageStore#getMessage) ---


def handle_pull(bc: BrokerConfig, b: Broker, req: PullMessageRequest) -> PullMessageResponse:
    """getMessage: units from the consume queue at the asked offset, messages read at their offsets."""
    units = b.store.consume_queues.get(req.queue_id, ())
    max_offset = len(units)
    if max_offset == 0:
        return PullMessageResponse(code=ResponseCode.PULL_NOT_FOUND, next_begin_offset=0)  # NO_MESSAGE_IN_QUEUE
    if req.offset < 0 or req.offset > max_offset:
        return PullMessageResponse(code=ResponseCode.PULL_OFFSET_MOVED, next_begin_offset=max_offset,
                                   max_offset=max_offset)  # OFFSET_OVERFLOW_BADLY
    if req.offset == max_offset:
        return PullMessageResponse(code=ResponseCode.PULL_NOT_FOUND, next_begin_offset=req.offset,
                                   max_offset=max_offset)  # OFFSET_OVERFLOW_ONE
    got = []
    for phys, _ in units[req.offset:req.offset + min(req.max_msg_nums, bc.max_msg_nums_per_pull)]:
        m = cl.get_message(b.store, b.node.store, phys)
        if m is not None:
            got.append(m)
    return PullMessageResponse(code=ResponseCode.SUCCESS if got else ResponseCode.PULL_RETRY_IMMEDIATELY,
                               messages=tuple(got), next_begin_offset=req.offset + len(got) if got else req.offset,
                               max_offset=max_offset)


# --- the node as the world sees it ---


# The broker's own threads after its DLedger server's (dledger_log.server.thread_names): the
# role-change handler's single-thread executor, the reput service, the scheduled registration.
BROKER_THREADS = ("DLedgerRoleChangeHandler", "ReputMessageService", "BrokerControllerScheduledThread")


def thread_names(cfg: st.NodeConfig, b: Broker) -> tuple[str, ...]:
    return dn.thread_names(cfg, b.node) + BROKER_THREADS


def thread_wakes(cfg: st.NodeConfig, b: Broker) -> tuple[int, ...]:
    return dn.thread_wakes(cfg, b.node) + (role_handler_wake_at(b), cl.reput_wake_at(b.node.store, b.store),
                                           b.next_register_ms)


def wake_at(cfg: st.NodeConfig, b: Broker) -> int:
    return min((t for t in thread_wakes(cfg, b) if t >= 0), default=-1)


def thread_slack(cfg: st.NodeConfig, b: Broker, k: int, since: int, wake: int) -> int:
    """The DLedger server's threads' slack (dledger_log.server.thread_slack); the broker's own
    threads (role changes, reput, registration) act on time."""
    return dn.thread_slack(cfg, b.node, k, since, wake) if k < dn.flush_thread(cfg) + 1 else 0


def _after_node(b: Broker, n: dn.DLedgerNode, outs: tuple) -> tuple[Broker, tuple]:
    b = queue_role_changes(b.evolve(node=n), outs)
    return b, answer_puts(b, outs)


def on_thread_tick(cfg: st.NodeConfig, bc: BrokerConfig, b: Broker, k: int, now: int, draw: int
                   ) -> tuple[Broker, tuple]:
    """One step of thread k: one of the DLedger server's, or the broker's own (BROKER_THREADS)."""
    own = k - dn.flush_thread(cfg) - 1
    if own < 0:
        n, o = dn.on_thread_tick(cfg, b.node, k, now, draw)
        return _after_node(b, n, o) if n is not b.node or o else (b, ())
    if own == 0:
        return run_role_handler(bc, b, now) if 0 <= role_handler_wake_at(b) <= now else (b, ())
    if own == 1:
        if not 0 <= cl.reput_wake_at(b.node.store, b.store) <= now:
            return b, ()
        return b.evolve(store=cl.do_reput(b.node.store, b.store)), ()
    if now < b.next_register_ms:
        return b, ()
    b = b.evolve(next_register_ms=now + bc.register_name_server_period_ms)
    return b, (register(b, oneway=False),)


def on_request(cfg: st.NodeConfig, bc: BrokerConfig, b: Broker, msg: Any, rpc: int, now: int
               ) -> tuple[Broker, Any, tuple]:
    if isinstance(msg, SendMessageRequest):
        return handle_send(cfg, b, msg, rpc, now)
    if isinstance(msg, PullMessageRequest):
        return b, handle_pull(bc, b, msg), ()
    n, reply, outs = dn.on_request(cfg, b.node, msg, rpc, now)
    b, outs = _after_node(b, n, outs)
    return b, reply, outs


def on_response(cfg: st.NodeConfig, b: Broker, ctx: Any, peer: str, resp: Any, now: int) -> tuple[Broker, tuple]:
    if ctx[0] == "register":
        # registerBrokerAll's result: slaveSynchronize.setMasterAddr(result.getMasterAddr())
        return (b.evolve(master_addr=resp.master_addr) if resp is not None else b), ()
    n, outs = dn.on_response(cfg, b.node, ctx, peer, resp, now)
    return _after_node(b, n, outs)

