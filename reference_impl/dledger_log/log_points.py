"""The DLedger log's implementation log points: what a DLedger 0.2.6 server (and its
DLedgerClient) instrumented at its natural log points writes when the reference takes a step
(docs/conformance.md).

A server writes the election's lines (reference_impl.election.log_points: votes, heartbeats,
MemberState, the elector's draws) and the log's: a push sent by an EntryDispatcher and its
completion (`DLedgerRpcService#push`), a push handled by the follower's EntryHandler
(`DLedgerEntryPusher.EntryHandler#handlePush`: the request when it arrives, the response
when the handler thread answers it), a client's append handled by the leader
(`DLedgerServer#handleAppend`: the request, then the response once the QuorumAckChecker
completes its future), the store's appends (`DLedgerStore#appendAsLeader`,
`#appendAsFollower`), truncations (`DLedgerStore#truncate`) and commit index moves
(`DLedgerStore#updateCommittedIndex`). A client writes its appends and their answers
(`DLedgerClient#append`). An answer that is not given at once (a push, an append) is a
second line of the handler's log point with the `response` and no `request`.
"""

from __future__ import annotations

from typing import Any

import attrs

from reference_impl import core
from reference_impl.core.inputs import JAVA_INT_MAX
from reference_impl.core.network import Send
from reference_impl.dledger_log import entry_pusher as ep
from reference_impl.dledger_log import server as dn
from reference_impl.dledger_log import store as st
from reference_impl.dledger_log import world as log_world
from reference_impl.election import log_points as election_points
from reference_impl.election import records as el
from reference_impl.rocketmq import MAX_MESSAGE_SIZE

LogPoint = election_points.LogPoint
NEXT_INT = election_points.NEXT_INT
SNAPSHOT = election_points.SNAPSHOT

POINTS = dict(election_points.POINTS)
POINTS.update({p.at: p for p in (
    LogPoint("DLedgerRpcService#push", "dispatcher",
             "peer, request (a PushEntryRequest); its completion: peer, response", "an EntryDispatcher pushes"),
    LogPoint("DLedgerEntryPusher.EntryHandler#handlePush", "handler",
             "peer, request when it arrives; peer, response when the EntryHandler answers it",
             "the follower's side of a push"),
    LogPoint("DLedgerServer#handleAppend", "handler",
             "peer (the client), request; peer, response when the append's future completes",
             "the leader takes a client's entry"),
    LogPoint("DLedgerClient#append", "client", "peer (the server), request; its completion: peer, response",
             "a client appends one entry"),
    LogPoint("DLedgerStore#appendAsLeader", "handler", "index, term", "an entry written by the leader"),
    LogPoint("DLedgerStore#appendAsFollower", "handler", "index, term", "an entry written by a follower"),
    LogPoint("DLedgerStore#truncate", "handler", "index (the new end)", "a follower's log cut back"),
    LogPoint("DLedgerStore#updateCommittedIndex", "any", "index", "the committed index moved"),
)})
SEND_AT = dict(election_points.SEND_AT, PushEntryRequest="DLedgerRpcService#push",
               AppendEntryRequest="DLedgerClient#append")
HANDLE_AT = dict(election_points.HANDLE_AT, PushEntryRequest="DLedgerEntryPusher.EntryHandler#handlePush",
                 AppendEntryRequest="DLedgerServer#handleAppend")
COMPLETE_AT = dict(election_points.COMPLETE_AT, PushEntryResponse="DLedgerRpcService#push",
                   AppendEntryResponse="DLedgerClient#append")
# reference-internal fields an implementation does not have (by the message's JSON `type`; a
# PushEntryRequest's is its push type): the order a modelled connection keeps
INTERNAL_FIELDS = {t.value: ("seq",) for t in ep.PushType}
# The lines an answer reports, written before it in the same step (docs/conformance.md, "What comes
# first"): EntryHandler#handleDoAppend and #handleDoTruncate write the store and then complete the
# push's future, and only then call updateCommittedIndex, so a commit line may follow the answer.
ANSWER_AFTER = {"DLedgerEntryPusher.EntryHandler#handlePush": ("DLedgerStore#appendAsFollower",
                                                               "DLedgerStore#truncate")}
# a deferred answer is written at the handler's log point (with `response` only)
REPLY_AT = {"PushEntryResponse": "DLedgerEntryPusher.EntryHandler#handlePush",
            "AppendEntryResponse": "DLedgerServer#handleAppend",
            "LeadershipTransferResponse": "DLedgerLeaderElector#handleLeadershipTransfer"}


def failed_reply(ctx: Any) -> Any:
    """What a failed RPC's future completes with: DLedgerRpcNettyService#push completes it with
    copyBaseInfo(request) (its term) and code NETWORK_ERROR, beginIndex and endIndex 0
    (ep.failed_push_response, which the dispatcher reads too); the model's client sees an
    AppendEntryResponse of code NETWORK_ERROR."""
    if ctx[0] == "push":
        return ep.failed_push_response(ctx)
    if ctx[0] == "append":
        return ep.AppendEntryResponse(code=el.Code.NETWORK_ERROR)
    return election_points.failed_reply(ctx)


def node_lines(c: Any, on_tick: bool, before: Any, after: Any, obs: list, draw: int) -> list[tuple[str, dict]]:
    """A server's own lines for one step: the election's, then the store's."""
    if not isinstance(before, dn.DLedgerNode) or not isinstance(after, dn.DLedgerNode):
        return []
    out = election_points.member_lines(c.node.dledger, on_tick, before.member, after.member, obs, draw)
    s0, s1 = before.store, after.store
    if s1.entries is s0.entries:  # an unchanged log writes nothing (and is not walked)
        common = s0.end_index
    else:
        common = _parting(s0, s1)
    if s1.end_index < s0.end_index:
        common = min(common, s1.end_index)
    if common < s0.end_index:
        out.append(("DLedgerStore#truncate", {"index": common}))
    at = "DLedgerStore#appendAsLeader" if after.member.role is el.Role.LEADER else "DLedgerStore#appendAsFollower"
    if s1.entries is not s0.entries and s1.entries:
        for e in s1.entries[max(0, common + 1 - s1.begin_index):]:
            out.append((at, {"index": e.index, "term": e.term}))
    for o in obs:
        if isinstance(o, dn.CommitAdvanced):
            out.append(("DLedgerStore#updateCommittedIndex", {"index": o.new}))
    return out


def _parting(s0: st.Store, s1: st.Store) -> int:
    """The last index up to which the two logs agree, at most s0's end (a truncation rewrites
    the tail). The common part is compared as whole tuples first: a log that only grew shares
    its entries with the one before, and walking them one by one would cost the whole log at
    every append."""
    if s0.begin_index == s1.begin_index:
        m = min(len(s0.entries), len(s1.entries))
        if s0.entries[:m] == s1.entries[:m]:
            return s0.end_index
    for e in s1.entries:
        if e.index <= s0.end_index and st.entry_at(s0, e.index) != e:
            return e.index - 1
    return s0.end_index


def snapshot(c: Any, n: Any, alive: bool) -> dict | None:
    """A server's `MemberState` line (role, term, vote, leader and the ledger's end); clients have none."""
    if not isinstance(n, dn.DLedgerNode):
        return None
    out = election_points.snapshot(c, n.member, alive)
    out.update(ledger_end_index=n.store.end_index, ledger_end_term=n.store.end_term)
    return out


def make_config(nodes: tuple[str, ...], config: dict) -> core.WorldConfig:
    """Servers n0..n{k-1} then clients c0..c{m-1}, as the reference names them; `config.dledger`
    holds DLedgerConfig fields, `config.log` the store's (LogConfig), and `client_interval_ms`,
    `body_size` the clients' pace and entry size."""
    servers = [x for x in nodes if not x.startswith("c")]
    clients = [x for x in nodes if x.startswith("c")]
    if list(nodes) != servers + clients or servers != [f"n{i}" for i in range(len(servers))] or \
            clients != [f"c{i}" for i in range(len(clients))]:
        raise ValueError("dledger_log nodes are servers n0.. then clients c0..")
    extra = set(config) - {"dledger", "log", "client_interval_ms", "body_size"}
    if extra:
        raise ValueError(f"unknown dledger_log config key(s): {', '.join(sorted(extra))}")
    opts = dict(config.get("dledger", {}))
    opts.update(config.get("log", {}))
    opts.update({k: config[k] for k in ("client_interval_ms", "body_size") if k in config})
    opts["clients"] = len(clients)
    return log_world.make_config(len(servers), opts)


def header_config(cfg: core.WorldConfig) -> dict:
    """The header's `config` for a world of ours (the inverse of `make_config`)."""
    c = cfg.proto
    dl = election_points.header_config(cfg)["dledger"]
    default_log = st.LogConfig()
    out: dict = {"dledger": dl,
                 "log": {f.name: getattr(c.node.log, f.name) for f in attrs.fields(st.LogConfig)
                         if getattr(c.node.log, f.name) != getattr(default_log, f.name)}}
    for k in ("client_interval_ms", "body_size"):
        if getattr(c, k) != getattr(log_world.LogWorldConfig(node=c.node), k):
            out[k] = getattr(c, k)
    return out


# --- clients outside the world (a log's header "clients": "outside", docs/conformance.md) ---

CLIENT_POINTS = ("DLedgerClient#append",)  # what a modelled client writes; an outside one writes nothing


def clients_outside(cfg: core.WorldConfig) -> core.WorldConfig:
    """The world of a log whose clients are outside it: the model's clients never append on
    their own (the appends come from the log, `outside_request`); they only take the answers."""
    return cfg.evolve(proto=cfg.proto.evolve(client_interval_ms=JAVA_INT_MAX))


def outside_nodes(cfg: core.WorldConfig) -> tuple[int, ...]:
    """The clients' node indexes."""
    return tuple(i for i, x in enumerate(cfg.ids) if x.startswith("c"))


def outside_request(c: Any, server: str, request: dict, key: str) -> tuple:
    """What an outside client's append, as the server logged it at `DLedgerServer#handleAppend`,
    is in the model: the RPC a model client sends (DLedgerClient#append), to `server`. The
    body is the log's `{key, length}`; a body without a key gets `key`, one without a length
    the world's body size. Raises ValueError naming the field that is not one."""
    if request.get("type", "AppendEntryRequest") != "AppendEntryRequest":
        raise ValueError(f"request.type must be AppendEntryRequest, got {request.get('type')!r}")
    group = request.get("group", c.node.dledger.group)
    remote = request.get("remote_id", server)
    body = request.get("body", {})
    if not isinstance(group, str) or not isinstance(remote, str) or not isinstance(body, dict):
        raise ValueError("request.group and request.remote_id must be strings, request.body an object")
    length = body.get("length", max(c.body_size, 1))
    if not isinstance(length, int) or isinstance(length, bool) or not 0 <= length <= MAX_MESSAGE_SIZE:
        raise ValueError(f"request.body.length must be an integer in 0..{MAX_MESSAGE_SIZE}")
    key = body.get("key", key)
    if not isinstance(key, str):
        raise ValueError("request.body.key must be a string")
    msg = ep.AppendEntryRequest(group=group, remote_id=remote, body=st.Body(key=key, length=length))
    return (Send(dst=server, msg=msg, ctx=("append", key), timeout_ms=log_world.CLIENT_RPC_TIMEOUT_MS),)


def logs_draws(n: Any) -> bool:
    """A server's draws are its elector's Random#nextInt calls; a client's (which server it
    tries first) is the reference's choice, an unknown the search infers from its send."""
    return isinstance(n, dn.DLedgerNode)
