"""The election's implementation log points: what a DLedger 0.2.6 process instrumented at its
natural log points writes when the reference takes a step (docs/conformance.md).

An implementation's log (`rmqspec.log/1`) records what happened in its own terms: a
client-side send (`DLedgerRpcService#vote`), a handler call with its request and answer
(`DLedgerLeaderElector#handleVote`), a future completing (`DLedgerRpcService#vote` with a
`response`), a state change inside `MemberState`, a `Random#nextInt` draw. The tolerant
checker (histories/tolerant.py) searches for a reference execution whose steps, seen
through this module, write the log. Each function here maps one reference step of one
node to the lines Java would write for it; the network's part (sends, handler calls,
completions) is generic (histories/impl_log.py) and uses the tables below.

Java's order inside one maintainer round (the sends in the peers' HashMap order, the
self-vote inline at the node's own position, `nextInt(maxVoteIntervalMs)` after the
sends) is kept for readability; the checker does not require it, since Java's handler
and callback threads interleave with the round anyway.
"""

from __future__ import annotations

from typing import Any

import attrs

from reference_impl import core
from reference_impl.election import leader_elector as elector
from reference_impl.election import records as el
from reference_impl.election import world as election_world
from reference_impl.election.member_state import Member, VoteRound


@attrs.frozen
class LogPoint:
    """One log point: where Java writes it, on which thread, and its fields."""

    at: str
    thread: str  # "maintainer", "handler", "callback", "process" (start, crash), "world" (network)
    fields: str
    when: str


NEXT_INT = "java.util.Random#nextInt"
SNAPSHOT = "MemberState"

POINTS = {p.at: p for p in (
    LogPoint("DLedgerRpcService#vote", "maintainer",
             "peer, request (a VoteRequest)", "the elector asks a peer for its vote (one line per peer)"),
    LogPoint("DLedgerRpcService#heartBeat", "maintainer",
             "peer, request (a HeartBeatRequest)", "a leader's heartbeat to one peer"),
    LogPoint("DLedgerRpcService#leadershipTransfer", "maintainer",
             "peer, request (a LeadershipTransferRequest)", "a leader hands over to a transferee"),
    LogPoint("DLedgerLeaderElector#handleVote", "handler",
             "peer (the requester), request, response", "after DLedgerServer#handleVote returned (its effects first)"),
    LogPoint("DLedgerLeaderElector#handleHeartBeat", "handler",
             "peer, request, response", "after DLedgerServer#handleHeartBeat returned"),
    LogPoint("DLedgerLeaderElector#handleLeadershipTransfer", "handler",
             "peer, request, response (absent while the answer is deferred)",
             "after DLedgerServer#handleLeadershipTransfer returned"),
    LogPoint("MemberState#changeToLeader", "maintainer", "term", "after the role changed"),
    LogPoint("MemberState#changeToCandidate", "any", "term (the argument)", "after the role changed"),
    LogPoint("MemberState#changeToFollower", "handler", "term, leader", "after the role changed"),
    LogPoint("MemberState#nextTerm", "maintainer", "term (the new term)", "after the term moved (it clears the vote)"),
    LogPoint("MemberState#setCurrVoteFor", "any", "term (currTerm), voted_for", "after the vote was persisted"),
    LogPoint(NEXT_INT, "maintainer", "bound, r", "every draw of the elector's Random"),
)}
# A completion is logged at the client-side point of its request, with `response` instead of `request`.
SEND_AT = {"VoteRequest": "DLedgerRpcService#vote", "HeartBeatRequest": "DLedgerRpcService#heartBeat",
           "LeadershipTransferRequest": "DLedgerRpcService#leadershipTransfer"}
HANDLE_AT = {"VoteRequest": "DLedgerLeaderElector#handleVote", "HeartBeatRequest": "DLedgerLeaderElector#handleHeartBeat",
             "LeadershipTransferRequest": "DLedgerLeaderElector#handleLeadershipTransfer"}
COMPLETE_AT = {"VoteResponse": "DLedgerRpcService#vote", "HeartBeatResponse": "DLedgerRpcService#heartBeat",
               "LeadershipTransferResponse": "DLedgerRpcService#leadershipTransfer"}
# a deferred answer (the transferee answers once it has won or lost) is a second handler line
REPLY_AT = {"LeadershipTransferResponse": "DLedgerLeaderElector#handleLeadershipTransfer"}
ROLE_AT = {el.Role.LEADER: "MemberState#changeToLeader", el.Role.CANDIDATE: "MemberState#changeToCandidate",
           el.Role.FOLLOWER: "MemberState#changeToFollower"}


def failed_reply(ctx: Any) -> Any:
    """The response a failed RPC's future completes with: DLedgerRpcNettyService 0.2.6 never
    completes exceptionally, it completes with `new VoteResponse()` (UNKNOWN, term -1) or a
    response with code NETWORK_ERROR."""
    kind = ctx[0]
    if kind == "vote":
        return el.VoteResponse()
    if kind == "hb":
        return el.HeartBeatResponse(code=el.Code.NETWORK_ERROR)
    return el.LeadershipTransferResponse(code=el.Code.NETWORK_ERROR)


def member_of(n: Any) -> Member | None:
    """The election member inside a node (the DLedger log protocols wrap it)."""
    if isinstance(n, Member):
        return n
    m = getattr(n, "member", None)
    return m if isinstance(m, Member) else None


def dledger_config(c: Any) -> el.DLedgerConfig:
    """The DLedgerConfig inside a protocol config (election's, or the DLedger log's)."""
    while not isinstance(c, el.DLedgerConfig):
        c = c.dledger if hasattr(c, "dledger") else c.node
    return c


def member_lines(cfg: el.DLedgerConfig, on_tick: bool, before: Member, after: Member, obs: list, draw: int
                 ) -> list[tuple[str, dict]]:
    """MemberState's and the elector's own lines for one step of one member: role changes,
    votes, the term moving, and the draws of DLedgerLeaderElector's Random (on a tick:
    `nextInt(maxVoteIntervalMs)` for a round's wait, `nextInt(max - min)` for the next vote
    time when a round is parsed to a WAIT_* result or a term is adopted)."""
    out: list[tuple[str, dict]] = []
    if on_tick and after.curr_term > before.curr_term:
        out.append(("MemberState#nextTerm", {"term": after.curr_term}))
    bound = -1
    for o in obs:
        if isinstance(o, el.RoleChanged):
            fields: dict = {"term": o.term}
            if o.role is el.Role.FOLLOWER:
                fields["leader"] = o.leader
            out.append((ROLE_AT[o.role], fields))
        elif isinstance(o, el.VoteGranted):
            out.append(("MemberState#setCurrVoteFor", {"term": o.term, "voted_for": o.candidate}))
        elif isinstance(o, el.VoteParsed) and o.result in (el.ParseResult.WAIT_TO_REVOTE,
                                                            el.ParseResult.WAIT_TO_VOTE_NEXT):
            bound = _vote_time_bound(cfg, before)
    if on_tick and bound < 0:
        started = isinstance(after.round, VoteRound) and after.round_seq > before.round_seq
        if started:
            bound = cfg.max_vote_interval_ms
        elif (before.round is None and before.role is el.Role.CANDIDATE and before.need_increase_term_immediately
              and not after.need_increase_term_immediately):
            bound = _vote_time_bound(cfg, after)
    if bound > 0:
        draw_line = (NEXT_INT, {"bound": bound, "r": el.rand_int(draw, bound)})
        # a parse draws before it changes role; a round draws after its sends
        if any(o for o in obs if isinstance(o, el.VoteParsed)):
            out.insert(0, draw_line)
        else:
            out.append(draw_line)
    return out


def _vote_time_bound(cfg: el.DLedgerConfig, m: Member) -> int:
    """The bound of getNextTimeToRequestVote's nextInt."""
    if elector.is_taking_leadership(cfg, m):
        return cfg.max_take_leadership_vote_interval_ms - cfg.min_take_leadership_vote_interval_ms
    return cfg.max_vote_interval_ms - cfg.min_vote_interval_ms


def node_lines(c: Any, on_tick: bool, before: Any, after: Any, obs: list, draw: int) -> list[tuple[str, dict]]:
    """The lines one node writes for one reference step, besides the network's."""
    mb, ma = member_of(before), member_of(after)
    if mb is None or ma is None:
        return []
    return member_lines(dledger_config(c), on_tick, mb, ma, obs, draw)


def snapshot(c: Any, n: Any, alive: bool) -> dict:
    """What a `MemberState` line shows (read under the MemberState lock)."""
    m = member_of(n)
    return {"role": m.role.value, "term": m.curr_term, "voted_for": m.curr_vote_for, "leader": m.leader_id}


def make_config(nodes: tuple[str, ...], config: dict) -> core.WorldConfig:
    """The world a log's header describes: `config.dledger` holds DLedgerConfig fields in
    snake_case (DLedger's defaults otherwise); `config.ledger_end_index`/`ledger_end_term`
    one value per node (an empty log by default)."""
    opts = dict(config.get("dledger", {}))
    for k in ("ledger_end_index", "ledger_end_term"):
        if k in config:
            opts[k] = config[k]
    extra = set(config) - {"dledger", "ledger_end_index", "ledger_end_term"}
    if extra:
        raise ValueError(f"unknown election config key(s): {', '.join(sorted(extra))}")
    cfg = election_world.make_config(len(nodes), opts)
    return cfg.evolve(ids=tuple(nodes), proto=cfg.proto.evolve(dledger=cfg.proto.dledger.evolve(peers=tuple(nodes))))


def header_config(cfg: core.WorldConfig) -> dict:
    """The header's `config` for a world of ours (the inverse of `make_config`)."""
    c = dledger_config(cfg.proto)
    default = el.DLedgerConfig(peers=c.peers)
    out: dict = {"dledger": {f.name: getattr(c, f.name) for f in attrs.fields(el.DLedgerConfig)
                             if f.name != "peers" and getattr(c, f.name) != getattr(default, f.name)}}
    for k in ("ledger_end_index", "ledger_end_term"):
        if getattr(cfg.proto, k, ()):
            out[k] = list(getattr(cfg.proto, k))
    return out


def logs_draws(n: Any) -> bool:
    """Whether a node's draws are the elector's Random#nextInt calls (logged at NEXT_INT)."""
    return True
