"""The dledger_log world: DLedger servers (reference_impl.dledger_log.server) and appending clients.

Nodes `n0..` are DLedger servers; nodes `c0..` are clients, each a DLedgerClient
appending one entry at a time: it sends APPEND to the server it believes leads, waits
for the answer (the server answers when the append's future completes; the RPC times
out after 3 s), learns the leader from NOT_LEADER answers, and appends again
`client_interval_ms` later. Random faults crash servers only.

Ghost variables (`LogGhost`, reference_impl.dledger_log.ghost) record what properties
need and no node can see: the leaders of each term, the first entry ever committed at
each index, later different entries committed there, the indexes a leader committed by
counting replicas of an entry from an older term (research section 2.8), the appends
answered SUCCESS, commits no majority had held, every entry a log lost and how, and the
votes and lost term files. Nodes never read them.
"""

from __future__ import annotations

from typing import Any, ClassVar

from reference_impl import core
from reference_impl.core import inputs
from reference_impl.core.inputs import POSITIVE, check_fields
from reference_impl.core.network import Send
from reference_impl.rocketmq import MAX_MESSAGE_SIZE
from reference_impl.core.state import freeze, record
from reference_impl.dledger_log import entry_pusher as ep
from reference_impl.dledger_log import ghost as lg
from reference_impl.dledger_log import server as dn
from reference_impl.dledger_log import store as st
from reference_impl.election import leader_elector as elector
from reference_impl.election import records as el

CLIENT_RPC_TIMEOUT_MS = 3000  # DLedgerClientRpcNettyService: invokeAsync(..., 3000, ...)


@record
class LogWorldConfig:
    node: st.NodeConfig
    clients: int = 2
    client_interval_ms: int = 500
    body_size: int = 16
    forced_leader: str | None = None  # the DLedger tests' harness: elector off, term 0, this node leads

    LIMITS: ClassVar[dict] = {"clients": (0, 8), "client_interval_ms": POSITIVE, "body_size": (0, MAX_MESSAGE_SIZE),
                              "forced_leader": (1, 64)}

    def __attrs_post_init__(self) -> None:
        check_fields(self)


@record
class LogClient:
    """DLedgerClient: one append at a time to the server it believes leads."""

    self_id: str
    leader_id: str | None
    next_append_ms: int = 0
    seq: int = 0
    waiting: bool = False


@record
class ClientResult:
    """Observation: the client got the answer to its append (code None: the RPC failed)."""

    key: str
    server: str
    code: el.Code | None
    index: int


LogGhost = lg.LogGhost  # the ghost variables (reference_impl.dledger_log.ghost)
servers, store_of = lg.servers, lg.store_of


# --- the client ---


def client_wake_at(c: LogWorldConfig, k: LogClient) -> int:
    return -1 if k.waiting else k.next_append_ms


def client_on_tick(c: LogWorldConfig, k: LogClient, now: int, draw: int) -> tuple[LogClient, tuple]:
    """DLedgerClient#append: send the next body to the believed leader (the first peer if none is known)."""
    if k.waiting or now < k.next_append_ms:
        return k, ()
    peers = c.node.dledger.peers
    target = k.leader_id if k.leader_id is not None else peers[draw % len(peers)]
    seq = k.seq + 1
    body = st.Body(key=f"{k.self_id}-{seq}", length=max(c.body_size, 1))
    req = ep.AppendEntryRequest(group=c.node.dledger.group, remote_id=target, body=body)
    return k.evolve(seq=seq, waiting=True), (Send(dst=target, msg=req, ctx=("append", body.key),
                                                  timeout_ms=CLIENT_RPC_TIMEOUT_MS),)


def client_on_response(c: LogWorldConfig, k: LogClient, ctx: Any, peer: str, resp: Any, now: int
                       ) -> tuple[LogClient, tuple]:
    """The append's answer: a NOT_LEADER answer names the leader to try next; a failure forgets it."""
    leader = k.leader_id
    if resp is None:
        leader = None
    elif resp.code is el.Code.NOT_LEADER:
        leader = resp.leader_id
    elif resp.code is el.Code.SUCCESS:
        leader = peer
    result = ClientResult(key=ctx[1], server=peer, code=None if resp is None else resp.code,
                          index=-1 if resp is None else resp.index)
    return k.evolve(waiting=False, leader_id=leader, next_append_ms=now + c.client_interval_ms), (result,)


# --- the protocol ---


def boot(c: LogWorldConfig, node_id: str, i: int, now: int) -> Any:
    if node_id.startswith("c"):
        return LogClient(self_id=node_id, leader_id=c.forced_leader, next_append_ms=now + c.client_interval_ms)
    return dn.boot(c.node, node_id, now, forced_leader=c.forced_leader)


def wake_at(c: LogWorldConfig, n: Any) -> int:
    return client_wake_at(c, n) if isinstance(n, LogClient) else dn.wake_at(c.node, n)


def on_tick(c: LogWorldConfig, n: Any, now: int, draw: int):
    """A node that is one actor's tick: only a client is (a server's threads tick one by one, `on_thread_tick`)."""
    if isinstance(n, LogClient):
        return client_on_tick(c, n, now, draw)
    raise TypeError(f"a DLedger server's threads tick one at a time (on_thread_tick): {n.member.self_id}")


def on_request(c: LogWorldConfig, n: Any, msg: Any, rpc: int, now: int):
    if isinstance(n, LogClient):
        raise TypeError(f"a client serves no requests: {msg!r}")
    return dn.on_request(c.node, n, msg, rpc, now)


def on_response(c: LogWorldConfig, n: Any, ctx: Any, peer: str, resp: Any, now: int):
    if isinstance(n, LogClient):
        return client_on_response(c, n, ctx, peer, resp, now)
    return dn.on_response(c.node, n, ctx, peer, resp, now)


def crash(c: LogWorldConfig, n: Any, kind: str) -> Any:
    if isinstance(n, LogClient):
        return n.evolve(waiting=False)
    return dn.crash(c.node, n, kind)


def restart(c: LogWorldConfig, n: Any, now: int) -> Any:
    if isinstance(n, LogClient):
        return n.evolve(waiting=False, next_append_ms=now + c.client_interval_ms)
    return dn.restart(c.node, n, now, forced_leader=c.forced_leader)


def fifo(c: Any, msg: Any) -> bool:
    """Under push_processor "single_thread" a leader's pushes to one follower arrive in the
    order sent and are handled in it: DLedgerRpcNettyService sends every request to a peer over
    the one Netty channel NettyRemotingClient keeps per address (TCP delivers in order), and
    one thread takes PUSH requests in the order the channel reads them. Under "pool" the
    remoting server's public pool may handle them in any order, which the world's free
    reordering stands for. (`c`: any world config with a DLedger `node`, dledger_commitlog's too.)"""
    return type(msg) is ep.PushEntryRequest and c.node.log.ordered_pushes


# --- a nemesis aimed at the leader (this protocol's own fault kind) ---


@record
class LeaderPartition:
    """Fault kind `leader_partition`: the network is split anew (earlier cuts heal), with
    the server `leader` that leads now and every client on one side and the other servers
    on the other, as a partition between a primary's subnet and the rest of its group
    does. The leader goes on taking appends no follower gets until its lease runs out,
    while the others elect a leader of their own that gets none; repeated, this is how
    logs come to differ at the same index in different terms (Raft's Figure 8)."""

    leader: int


def _leaders(w: core.World) -> list[int]:
    out = []
    for i in servers(w):
        n = w.nodes[i]
        if w.alive[i] and getattr(n, "node", n).member.role is el.Role.LEADER:
            out.append(i)
    return out


def ext_faults(w: core.World, kind: str) -> list:
    return [LeaderPartition(leader=i) for i in _leaders(w)] if kind == "leader_partition" else []


def ext_apply(w: core.World, ev: Any, now: int) -> tuple[core.World, tuple]:
    if not isinstance(ev, LeaderPartition):
        raise TypeError(f"not a dledger event: {ev!r}")
    side = {ev.leader} | {i for i in range(len(w.cfg.ids)) if i not in servers(w)}
    rest = [i for i in servers(w) if i not in side]
    cut = frozenset((a, b) for a in side for b in rest) | frozenset((b, a) for a in side for b in rest)
    w = w.evolve(net=w.net.evolve(cut=cut), history=w.history.evolve(last_fault_ms=now))
    return w, ((-1, ev),)


# --- ghost (reference_impl.dledger_log.ghost) ---


def ghost_init(cfg: core.WorldConfig) -> LogGhost:
    return lg.init(cfg)


def ghost_update(g: LogGhost, w: core.World, i: int, obs: Any) -> LogGhost:
    """The step of the observation's type in `UPDATES` (what the world's clients report), else
    the log ghost's (ghost.update: the servers' observations and the faults)."""
    step = UPDATES.get(type(obs))
    return lg.update(g, w, i, obs) if step is None else step(g, w, i, obs)


def _client_result(g: LogGhost, w: core.World, i: int, obs: ClientResult) -> LogGhost:
    return g.evolve(appends=g.appends + 1)


UPDATES = {ClientResult: _client_result}


# --- observable state (trace-format.md, protocol dledger_log) ---


def observe(c: LogWorldConfig, n: Any, alive: bool) -> dict:
    if isinstance(n, LogClient):
        return {"alive": alive, "role": "CLIENT", "leader": n.leader_id, "appended": n.seq}
    m, s = n.member, n.store
    return {
        "alive": alive,
        "role": m.role.value if alive else None,
        "term": m.curr_term,
        "voted_for": m.curr_vote_for,
        "leader": m.leader_id if alive else None,
        "ledger_begin_index": s.begin_index,
        "ledger_end_index": s.end_index,
        "ledger_end_term": s.end_term,
        "committed_index": s.committed_index,
        "committed_pos": s.committed_pos,
        "max_wrote_pos": st.max_wrote_pos(s),
        "log_terms": [e.term for e in s.entries],
    }


# --- scenario actions: the DLedger tests' direct calls ---


@record
class Reply:
    """The answer a scenario got from a direct call (shown in timelines, checked by `expect`)."""

    request: Any
    reply: Any


@record
class AppendReply:
    """The last handleAppend's future: `code` None while it is still pending."""

    code: el.Code | None
    index: int
    pos: int


MAX_COUNT = 10_000  # entries one scripted append may add (the Java tests append at most a few thousand)
INDEX = (-1, inputs.JAVA_INT_MAX)


def _body(w: core.World, args: dict, k: int) -> st.Body:
    size = inputs.arg(args, "body_size", int, (0, MAX_MESSAGE_SIZE), w.cfg.proto.body_size)
    return st.Body(key=f"s{w.script_pos}-{k}", length=size)


def node_arg(w: core.World, args: dict, name: str) -> str:
    node = inputs.arg(args, name, str, (1, 64))
    if node not in w.cfg.ids:
        raise inputs.InputError(name, f"must name a node of {list(w.cfg.ids)}, got {inputs.show(node)}")
    return node


def script_action(w: core.World, do: str, i: int, args: dict) -> tuple[core.World, tuple]:
    c = w.cfg.proto.node
    n = w.nodes[i]
    if isinstance(n, LogClient):
        raise ValueError(f"{do} needs a server, {w.cfg.ids[i]} is a client")
    outs: tuple = ()
    if do == "append":
        # DLedgerServer#handleAppend, `count` times (the tests' loops); replies are the futures' states
        count, pos = inputs.arg(args, "count", int, (1, MAX_COUNT), 1), -1
        for k in range(count):
            n, pos, o = dn.handle_append(c, n, _body(w, args, k), w.now)
            outs += o
        last = [o for o in outs if isinstance(o, ep.AppendResult) and o.ref.key == f"s{w.script_pos}-{count - 1}"]
        outs += (Reply(request=args, reply=AppendReply(
            code=last[0].code if last else None, index=n.store.end_index, pos=pos)),)
    elif do == "append_as_leader":
        s = n.store
        for k in range(inputs.arg(args, "count", int, (1, MAX_COUNT), 1)):
            s, _ = st.append_as_leader(c.log, s, n.member, _body(w, args, k), w.now)
        n, outs = dn.sync(c, n, n.evolve(store=s))
    elif do == "copy_entries":
        # appendAsFollower(entries.get(i), term, leader) with entries read from another node's store
        source = w.nodes[w.cfg.ids.index(node_arg(w, args, "from"))]
        first, last = inputs.arg(args, "first", int, INDEX, 0), inputs.arg(args, "last", int, INDEX)
        term, leader = inputs.arg(args, "term", int, INDEX, 0), node_arg(w, args, "leader")
        if not isinstance(source, dn.DLedgerNode):
            raise ValueError("copy_entries: 'from' must name a server")
        src = source.store
        if not src.begin_index <= first <= last <= src.end_index:
            raise ValueError(f"copy_entries: {first}..{last} is not within the source's log")
        s = n.store
        for index in range(first, last + 1):
            s = st.append_as_follower(c.log, s, n.member, st.get(src, index), term, leader, w.now)
        n, outs = dn.sync(c, n, n.evolve(store=s))
    elif do == "revote":
        # DLedgerLeaderElector#testRevote (LeaderElectorTest makes a chosen node stand this way)
        m, outs = elector.test_revote(c.dledger, n.member, inputs.arg(args, "term", int, INDEX))
        n = n.evolve(member=m)
    elif do == "update_committed_index":
        s = st.update_committed_index(c.log, n.store, inputs.arg(args, "term", int, INDEX), n.member.curr_term,
                                      inputs.arg(args, "index", int, INDEX), w.now)
        n, outs = dn.sync(c, n, n.evolve(store=s))
    elif do == "shutdown":
        # DLedgerServer#shutdown: flush and checkpoint, then the process stops
        w = core.set_node(w, i, n.evolve(store=st.shutdown(n.store, w.now)))
        return core.apply_fault(w, core.Crash(node=i))
    elif do == "force_role":
        # what ServerTestHarness#launchServer(..., leaderId, FILE) does to MemberState before startup:
        # setCurrTermForTest(term), then changeToLeader / changeToFollower (no role-change handlers)
        m = dn.forced_member(c, n.member.self_id, node_arg(w, args, "leader"), w.now).evolve(
            curr_term=inputs.arg(args, "term", int, INDEX, 0), curr_vote_for=n.member.curr_vote_for,
            ledger_end_index=n.store.end_index, ledger_end_term=n.store.end_term)
        n = n.evolve(member=m)
    else:
        raise ValueError(f"unknown dledger_log action {do!r}")
    return core.apply_outs(core.set_node(w, i, n), i, outs)


SCRIPT_ACTIONS = ("append", "append_as_leader", "copy_entries", "update_committed_index", "revote", "shutdown",
                  "force_role")


# --- configs ---

LOG_KEYS = {a.name for a in st.LogConfig.__attrs_attrs__}
WORLD_KEYS = {"clients", "client_interval_ms", "body_size", "forced_leader"}


def make_config(nodes: int = 3, overrides: dict | None = None) -> core.WorldConfig:
    """Servers n0..n{nodes-1} plus `clients` clients c0..; `overrides` takes DLedgerConfig and
    LogConfig field names (e.g. dledger_version) and the world's own keys."""
    opts = dict(overrides or {})
    world = {k: opts.pop(k) for k in list(opts) if k in WORLD_KEYS}
    log = {k: opts.pop(k) for k in list(opts) if k in LOG_KEYS}
    unknown = set(opts) - {a.name for a in el.DLedgerConfig.__attrs_attrs__}
    if unknown:
        raise ValueError(f"unknown dledger_log config key(s): {', '.join(sorted(unknown))}")
    if "peers" in opts:
        raise ValueError("peers are the world's servers; set the number of nodes instead")
    peers = tuple(f"n{i}" for i in range(nodes))
    if log.get("dledger_version") == "fixed":  # DLedger 0.4.0's heartbeat parse as well (records.DLedgerConfig)
        opts.setdefault("step_down_on_higher_term", True)
    leader = world.get("forced_leader")
    if leader is not None:
        if leader not in peers:
            raise ValueError(f"forced_leader {leader!r} is not one of {list(peers)}")
        opts.setdefault("enable_leader_elector", False)
    node = st.NodeConfig(dledger=el.DLedgerConfig(peers=peers, **inputs.structure_fields(el.DLedgerConfig, opts)),
                         log=st.LogConfig(**inputs.structure_fields(st.LogConfig, log)))
    proto = LogWorldConfig(node=node, **inputs.structure_fields(LogWorldConfig, world))
    ids = peers + tuple(f"c{k}" for k in range(proto.clients))
    return core.WorldConfig(protocol="dledger_log", ids=ids, proto=proto, crashable=tuple(range(nodes)),
                            overrides=freeze(dict(overrides or {})))


def load_config(d: dict) -> LogWorldConfig:
    """The config from a trace header (`dump_config`'s `proto`)."""
    return inputs.structure(d, LogWorldConfig)


def check_ids(c: LogWorldConfig, ids: tuple[str, ...]) -> None:
    want = c.node.dledger.peers + tuple(f"c{k}" for k in range(c.clients))
    if want != ids:
        raise ValueError(f"the config's servers and {c.clients} client(s) are {list(want)}, not {list(ids)}")



# A 3-server world with two clients takes about 2,500 events per simulated minute (the
# election world 200-500), so the per-step weights are a sixth of the generic ones: a
# 60 s fault window still holds several crashes and partitions.
CALM_AT_MS = 60_000
PROFILES = (
    core.FaultProfile(name="lockstep", delay_ms=(1, 1),
                      description="No faults; every message takes exactly 1 ms (for scripts that time a step "
                                "between an acknowledgement and a flush)."),
    core.FaultProfile(name="gentle", delay_ms=(1, 20), loss=0.002, crash=0.001, restart=0.01, calm_at_ms=CALM_AT_MS,
                      description="Rare message loss and the odd process crash; delays up to 20 ms."),
    core.FaultProfile(name="crash", delay_ms=(1, 10), crash=0.005, restart=0.01, calm_at_ms=CALM_AT_MS,
                      description="Process crashes and restarts only (the page cache survives: nothing is lost)."),
    core.FaultProfile(name="os_crash", delay_ms=(1, 10), crash=0.002, os_crash=0.003, restart=0.01,
                      calm_at_ms=CALM_AT_MS,
                      description="Process and OS crashes: an OS crash loses the unflushed tail, the checkpoint and "
                                "the currterm file (LOG-2/3/5/6 violations are expected)."),
    core.FaultProfile(name="partition", delay_ms=(1, 10), partition=0.005, one_way=0.003, heal=0.01,
                      calm_at_ms=CALM_AT_MS,
                      description="Symmetric partitions and one-way link cuts, then heals."),
    core.FaultProfile(name="lossy", delay_ms=(1, 200), loss=0.03, duplicate=0.02, calm_at_ms=CALM_AT_MS,
                      description="Loss, duplication and reordering of pushes, votes and heartbeats."),
    core.FaultProfile(name="standard", delay_ms=(1, 50), loss=0.01, duplicate=0.004, crash=0.004, restart=0.01,
                      partition=0.004, one_way=0.003, heal=0.01, calm_at_ms=CALM_AT_MS,
                      description="Everything but OS crashes: loss, duplication, reordering, crashes, partitions."),
    core.FaultProfile(name="hostile", delay_ms=(1, 500), loss=0.02, duplicate=0.01, crash=0.004, os_crash=0.002,
                      restart=0.015, partition=0.005, one_way=0.004, heal=0.008, calm_at_ms=2 * CALM_AT_MS,
                      description="standard, harsher, plus OS crashes that lose unflushed entries and term files."),
    # A directed shape: about every 8 s the leader and the clients are split from the other
    # servers anew, so a deposed leader's tail and its successor's meet (Raft's Figure 8).
    core.FaultProfile(name="leader-partition", delay_ms=(1, 10), ext=(("leader_partition", 0.003),),
                      calm_at_ms=CALM_AT_MS,
                      description="The leader and the clients are split from the other servers, again and again "
                                "(earlier cuts heal each time): logs diverge across terms."),
)


# Result codes where the Java code switches: a fuzz run's branch coverage counts each one.
BRANCHES = (*el.Code, *el.ParseResult, *ep.PushType, *el.Role, *el.VoteResult)


# --- the threads: each a world actor (reference_impl.dledger_log.server); a client is one ---

CLIENT_THREADS = ("client",)


def threads(c: LogWorldConfig, n: Any) -> tuple[str, ...]:
    return CLIENT_THREADS if isinstance(n, LogClient) else dn.thread_names(c.node, n)


def thread_wakes(c: LogWorldConfig, n: Any) -> tuple[int, ...]:
    return (client_wake_at(c, n),) if isinstance(n, LogClient) else dn.thread_wakes(c.node, n)


def on_thread_tick(c: LogWorldConfig, n: Any, k: int, now: int, draw: int):
    if isinstance(n, LogClient):
        return client_on_tick(c, n, now, draw)
    return dn.on_thread_tick(c.node, n, k, now, draw)


def thread_slack(c: LogWorldConfig, n: Any, k: int, since: int, wake: int) -> int:
    return dn.thread_slack(c.node, n, k, since, wake) if isinstance(n, dn.DLedgerNode) else 0


PROTOCOL = core.Protocol(
    name="dledger_log", threads=threads, thread_wakes=thread_wakes, on_thread_tick=on_thread_tick,
    thread_slack=thread_slack, boot=boot, wake_at=wake_at, on_tick=on_tick, on_request=on_request, on_response=on_response,
    on_message=None, crash=crash, restart=restart, ghost_init=ghost_init, ghost_update=ghost_update,
    ghost_crash=lg.crash_note, observe=observe, make_config=make_config, load_config=load_config, check_ids=check_ids,
    script_action=script_action, script_actions=SCRIPT_ACTIONS, profiles=PROFILES, branches=BRANCHES,
    ext_faults=ext_faults, ext_apply=ext_apply, fifo=fifo)
