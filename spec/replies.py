"""Reply and term properties of DLedger (docs/properties.md: RPL-*), step predicates shared by the
election, dledger_log and dledger_commitlog worlds.

A step's replies are the reply envelopes it put in flight (their ids are at or above the
`next_id` of the world before). Each is matched with the request it answers: the request
delivered at this step, or (for pushes the EntryHandler thread answers later) the request
its node held queued before the step. The Java guards are restated here from the source
(DLedgerServer#handleHeartBeat / #handleVote / #handlePush, DLedgerLeaderElector#handleHeartBeat
/ #handleVote, DLedgerEntryPusher.EntryHandler), independently of the reference's functions,
so a mistake in one shows up against the other:

- RPL-1: no node answers SUCCESS to a heartbeat, ACCEPT to a vote, or SUCCESS to an APPEND
  push, of a term lower than its own. (EntryHandler#checkAppendFuture answers an APPEND
  from the log, with no term check, when the log already holds its entry: that one is
  allowed, since the entry was held before.)
- RPL-2: a heartbeat's or a vote's reply is what the guards give for that request and the
  node's state before it, and the state after agrees (a SUCCESS leaves a FOLLOWER of the
  request's leader in its term; an ACCEPT records the vote; nothing else moves the term
  or the vote).
- RPL-4: an append's answer carries the term, leaderId, index and pos DLedger sets for its code
  (DLedgerServer#handleAppend's catch: copyBaseInfo(request) and the member's leaderId; the
  QuorumAckChecker's completions: currTerm and the leader's own id), and NOT_LEADER only from a
  server that is not LEADER.
- RPL-3: a push's reply agrees with the EntryHandler's guards: a member or group that is
  not its own is refused at once; REPEATED_PUSH only for an index already waiting;
  SUCCESS to an APPEND or a TRUNCATE only in the request's term, following its leader, as
  a FOLLOWER, with the entry held after; SUCCESS to a COMPARE only for an entry the log
  holds at its index, and INCONSISTENT_STATE to one only for an entry it does not (0.2.6
  checks no term there, nor for a COMMIT).
"""

from __future__ import annotations

from typing import Any

from reference_impl import core
from reference_impl.core import network as net_mod
from reference_impl.dledger_log import store as st
from reference_impl.dledger_log.entry_pusher import AppendEntryResponse, PushEntryRequest, PushEntryResponse, PushType
from reference_impl.election import records as el
from reference_impl.election.member_state import Member
from reference_impl.election.records import Code, HeartBeatRequest, Role, VoteRequest, VoteResult


def member(n: Any) -> Any:
    """The election MemberState of a world node (an election member, a DLedger server, or a
    dledger_commitlog broker's DLedger node), or None for clients and other roles."""
    if type(n) is Member:
        return n  # an election world's node: RPL-1/2 ask at every reply
    d = getattr(n, "node", n)
    m = getattr(d, "member", d)
    return m if hasattr(m, "curr_vote_for") else None


def _dledger(w: core.World) -> Any:
    proto = w.cfg.proto
    return proto.dledger if hasattr(proto, "dledger") else proto.node.dledger


_ANSWERS: list = [None, None, []]  # (before, after, answers) of the last step asked: three properties ask


def answers(before: core.World, event: Any, after: core.World) -> list[tuple[int, Any, Any]]:
    """(responder index, request, reply) for every reply this step put in flight; the request is
    None when it cannot be found (a reply to a request no longer known)."""
    first = before.net.next_id
    if after.net.next_id == first:
        return []
    if _ANSWERS[0] is before and _ANSWERS[1] is after:
        return _ANSWERS[2]
    out = _answers(before, event, after, first)
    _ANSWERS[0], _ANSWERS[1], _ANSWERS[2] = before, after, out
    return out


def _answers(before: core.World, event: Any, after: core.World, first: int) -> list[tuple[int, Any, Any]]:
    new = []
    for env in reversed(after.net.flight):
        if env.id < first:
            break
        if env.reply:
            new.append(env)
    if not new:
        return []
    delivered = net_mod.find(before.net, event.env) if type(event) is core.Deliver else None
    out = []
    for r in reversed(new):
        req = None
        if delivered is not None and not delivered.reply and delivered.rpc == r.rpc:
            req = delivered.msg
        elif isinstance(r.msg, PushEntryResponse):
            req = _queued(before.nodes[r.src], r.rpc)
        out.append((r.src, req, r.msg))
    return out


def _queued(n: Any, rpc: int) -> PushEntryRequest | None:
    """The push a DLedger node's EntryHandler held (queued or waiting) under RPC `rpc`."""
    h = getattr(getattr(n, "node", n), "handler", None)
    if h is None:
        return None
    for wait in h.queue:
        if wait.rpc == rpc:
            return wait.request
    for wait in h.write_requests.values():
        if wait.rpc == rpc:
            return wait.request
    return None


# --- the guards, restated from the Java source ---


def heart_beat_code(dl: Any, m: Any, req: el.HeartBeatRequest) -> Code:
    """DLedgerServer#handleHeartBeat, then DLedgerLeaderElector#handleHeartBeat."""
    if req.remote_id != m.self_id:
        return Code.UNKNOWN_MEMBER
    if req.group != dl.group:
        return Code.UNKNOWN_GROUP
    if req.leader_id not in dl.peers:
        return Code.UNKNOWN_MEMBER
    if req.leader_id == m.self_id:
        return Code.UNEXPECTED_MEMBER
    if req.term < m.curr_term:
        return Code.EXPIRED_TERM
    if req.term > m.curr_term:
        return Code.TERM_NOT_READY
    if m.leader_id is None or m.leader_id == req.leader_id:
        return Code.SUCCESS
    return Code.INCONSISTENT_LEADER


def vote_result(dl: Any, m: Any, req: el.VoteRequest) -> tuple[Code, VoteResult]:
    """DLedgerServer#handleVote, then DLedgerLeaderElector#handleVote(request, false): the log
    comparison comes before the term check in 0.2.6."""
    if req.remote_id != m.self_id:
        return Code.UNKNOWN_MEMBER, VoteResult.UNKNOWN
    if req.group != dl.group:
        return Code.UNKNOWN_GROUP, VoteResult.UNKNOWN

    def r(result: VoteResult) -> tuple[Code, VoteResult]:
        return Code.SUCCESS, result

    if req.leader_id not in dl.peers:
        return r(VoteResult.REJECT_UNKNOWN_LEADER)
    if req.leader_id == m.self_id:
        return r(VoteResult.REJECT_UNEXPECTED_LEADER)
    if req.ledger_end_term < m.ledger_end_term:
        return r(VoteResult.REJECT_EXPIRED_LEDGER_TERM)
    if req.ledger_end_term == m.ledger_end_term and req.ledger_end_index < m.ledger_end_index:
        return r(VoteResult.REJECT_SMALL_LEDGER_END_INDEX)
    if req.term < m.curr_term:
        return r(VoteResult.REJECT_EXPIRED_VOTE_TERM)
    if req.term > m.curr_term:
        return r(VoteResult.REJECT_TERM_NOT_READY)
    if m.curr_vote_for is not None and m.curr_vote_for != req.leader_id:
        return r(VoteResult.REJECT_ALREADY_HAS_LEADER if m.leader_id is not None else VoteResult.REJECT_ALREADY_VOTED)
    if req.term < m.ledger_end_term:
        return r(VoteResult.REJECT_TERM_SMALL_THAN_LEDGER)
    preferred = tuple(dl.preferred_leader_ids.split(";")) if dl.preferred_leader_ids is not None else ()
    taking = m.self_id in preferred and m.term_to_take_leadership == m.curr_term
    if taking and req.ledger_end_term == m.ledger_end_term and m.ledger_end_index >= req.ledger_end_index:
        return r(VoteResult.REJECT_TAKING_LEADERSHIP)
    return r(VoteResult.ACCEPT)


# --- RPL-1: no SUCCESS or ACCEPT for a lower term ---


def _lower_term_success(before: core.World, after: core.World, i: int, req: Any, reply: Any) -> str | None:
    mb = member(before.nodes[i])
    if mb is None:
        return None
    kind = type(req)
    if kind is HeartBeatRequest:
        if reply.code is Code.SUCCESS and req.term < mb.curr_term:
            return (f"{after.cfg.ids[i]} (term {mb.curr_term}) answered SUCCESS to {req.leader_id}'s heartbeat of "
                    f"term {req.term}")
    elif kind is VoteRequest:
        if reply.vote_result is VoteResult.ACCEPT and req.term < mb.curr_term:
            return f"{after.cfg.ids[i]} (term {mb.curr_term}) accepted {req.leader_id}'s vote request of term {req.term}"
    elif kind is PushEntryRequest and req.type is PushType.APPEND and reply.code is Code.SUCCESS:
        ma = member(after.nodes[i])  # the handler answers with the term the maintainer left it this step
        term = max(mb.curr_term, ma.curr_term if ma is not None else mb.curr_term)
        held = req.entry is not None and st.entry_at(getattr(before.nodes[i], "node", before.nodes[i]).store,
                                                     req.entry.index) == req.entry
        if req.term < term and not held:
            return (f"{after.cfg.ids[i]} (term {term}) answered SUCCESS to {req.leader_id}'s APPEND of index "
                    f"{req.entry.index} in term {req.term}, an entry its log did not hold")
    return None


def rpl1(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    for i, req, reply in answers(before, event, after):
        if req is not None and _lower_term_success(before, after, i, req, reply):
            return _violated(after, _lower_term_success(before, after, i, req, reply))
    return True


# --- RPL-2: heartbeat and vote replies follow the guards ---


def _election_reply_problem(before: core.World, after: core.World, i: int, req: Any, reply: Any) -> str | None:
    mb, ma = member(before.nodes[i]), member(after.nodes[i])
    if mb is None or ma is None or not after.alive[i]:
        return None
    node = after.cfg.ids[i]
    dl = _dledger(after)
    kind = type(req)
    if kind is HeartBeatRequest:
        want = heart_beat_code(dl, mb, req)
        if reply.code is not want:
            return (f"{node} answered {reply.code.name} to {req.leader_id}'s heartbeat of term {req.term} in state "
                    f"{mb.role.value}@{mb.curr_term} leader {mb.leader_id}; the guards give {want.name}")
        if want is Code.SUCCESS and not (ma.role is Role.FOLLOWER and ma.leader_id == req.leader_id
                                         and ma.curr_term == req.term):
            return f"{node} answered SUCCESS to {req.leader_id}'s heartbeat but is {ma.role.value} of {ma.leader_id}"
        if want is not Code.SUCCESS and (ma.curr_term != mb.curr_term or ma.curr_vote_for != mb.curr_vote_for
                                         or ma.last_leader_heart_beat_time != mb.last_leader_heart_beat_time):
            return f"{node} answered {want.name} to a heartbeat and still changed its term, vote or heartbeat time"
        return None
    if kind is VoteRequest:
        code, result = vote_result(dl, mb, req)
        if (reply.code, reply.vote_result) != (code, result):
            return (f"{node} answered {reply.code.name}/{reply.vote_result.name} to {req.leader_id}'s vote request "
                    f"(term {req.term}, ledger {req.ledger_end_term}/{req.ledger_end_index}) in state "
                    f"{mb.role.value}@{mb.curr_term} voted {mb.curr_vote_for} ledger "
                    f"{mb.ledger_end_term}/{mb.ledger_end_index}; the guards give {code.name}/{result.name}")
        if result is VoteResult.ACCEPT and (ma.curr_vote_for != req.leader_id or ma.curr_term != req.term):
            return f"{node} accepted {req.leader_id} in term {req.term} but records a vote for {ma.curr_vote_for}"
        if result is not VoteResult.ACCEPT and (ma.curr_term != mb.curr_term or ma.curr_vote_for != mb.curr_vote_for):
            return f"{node} answered {result.name} and still changed its term or vote"
    return None


_DELIVER = core.Deliver


def rpl2(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    if type(event) is not _DELIVER:
        return True
    for i, req, reply in answers(before, event, after):
        if req is not None:
            problem = _election_reply_problem(before, after, i, req, reply)
            if problem:
                return _violated(after, problem)
    return True


# --- RPL-3: push replies follow the EntryHandler's guards ---


def _push_reply_problem(before: core.World, after: core.World, i: int, req: Any, reply: Any) -> str | None:
    if not isinstance(req, PushEntryRequest):
        return None
    mb, ma = member(before.nodes[i]), member(after.nodes[i])
    if mb is None or ma is None:
        return None
    node = after.cfg.ids[i]
    what = f"{node} answered {reply.code.name} to {req.leader_id}'s {req.type.value} (term {req.term})"
    dl = _dledger(after)
    if req.remote_id != mb.self_id or req.group != dl.group:
        want = Code.UNKNOWN_MEMBER if req.remote_id != mb.self_id else Code.UNKNOWN_GROUP
        return None if reply.code is want else f"{what}; the request is not for its member or group: {want.name}"
    if reply.code is Code.REPEATED_PUSH:
        h = getattr(before.nodes[i], "node", before.nodes[i]).handler
        ok = req.type is PushType.APPEND and req.entry is not None and req.entry.index in h.write_requests
        return None if ok else f"{what}, though no APPEND of that index was waiting"
    sb = getattr(before.nodes[i], "node", before.nodes[i]).store
    sa = getattr(after.nodes[i], "node", after.nodes[i]).store
    if reply.code is Code.INCONSISTENT_STATE and req.type is PushType.COMPARE and req.entry is not None:
        e = req.entry
        node_drops = [d for d in getattr(after.ghost, "drops", ()) if d.server == node and d.at_ms == after.now]
        if st.entry_at(sb, e.index) == e and st.entry_at(sa, e.index) == e and not node_drops:
            return f"{what}, though its log holds that very entry at index {e.index} (handleDoCompare: equal is SUCCESS)"
        return None
    if reply.code is not Code.SUCCESS:
        return None
    if req.type is PushType.COMPARE:
        e = req.entry
        if e is None or (st.entry_at(sb, e.index) != e and st.entry_at(sa, e.index) != e):
            return f"{what}, an entry its log does not hold at index {e.index if e else None}"
        return None
    if req.type in (PushType.APPEND, PushType.TRUNCATE):
        e = req.entry
        node_drops = [d for d in getattr(after.ghost, "drops", ()) if d.server == node and d.at_ms == after.now]
        if e is None or (st.entry_at(sa, e.index) != e and not any(d.holds(e.index, e) for d in node_drops)):
            return f"{what}, and its log does not hold that entry at index {e.index if e else None}"
        if req.type is PushType.APPEND and st.entry_at(sb, e.index) == e:
            return None  # checkAppendFuture: answered from the log
        if not (ma.role is Role.FOLLOWER and req.term == ma.curr_term and req.leader_id == ma.leader_id):
            return (f"{what} as {ma.role.value}@{ma.curr_term} following {ma.leader_id}: appendAsFollower and "
                    f"truncate check the role, the term and the leader")
    return None


def rpl3(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    for i, req, reply in answers(before, event, after):
        if isinstance(reply, PushEntryResponse) and req is not None:
            problem = _push_reply_problem(before, after, i, req, reply)
            if problem:
                return _violated(after, problem)
    return True


# --- RPL-4: the fields of an append's answer ---

# DLedgerServer#handleAppend's guards and the store's appendAsLeader throw DLedgerException; the catch
# answers copyBaseInfo(request) with that code and memberState.getLeaderId().
_EXCEPTION_CODES = frozenset({Code.UNKNOWN_MEMBER, Code.UNKNOWN_GROUP, Code.NOT_LEADER, Code.LEADER_TRANSFERRING,
                              Code.DISK_FULL, Code.DISK_ERROR})
# RequestOrResponse.term of an AppendEntryRequest: DLedgerClient (and DLedgerCommitLog) never set it
UNSET_TERM = -1


def _append_reply_problem(before: core.World, after: core.World, i: int, reply: AppendEntryResponse) -> str | None:
    """What is wrong with server i's AppendEntryResponse, given the server before the step (None: nothing)."""
    n = before.nodes[i]
    m = member(n)
    what = f"{before.cfg.ids[i]} answered an append {reply.code.name} (term {reply.term}, leader {reply.leader_id})"
    if reply.code in _EXCEPTION_CODES:
        if reply.code is Code.NOT_LEADER and m.role is Role.LEADER:
            return f"{what} while it was LEADER (DLedgerServer#handleAppend checks memberState.isLeader())"
        want = (UNSET_TERM, m.leader_id, -1, -1)
        where = "DLedgerServer#handleAppend's catch: copyBaseInfo(request), the member's leaderId"
    elif reply.code is Code.TERM_CHANGED:
        want = (UNSET_TERM, m.leader_id, reply.index, -1)
        where = "QuorumAckChecker: TERM_CHANGED sets no term, the member's leaderId"
    elif reply.code in (Code.LEADER_PENDING_FULL, Code.WAIT_QUORUM_ACK_TIMEOUT):
        want = (m.curr_term, m.self_id, -1 if reply.code is Code.LEADER_PENDING_FULL else reply.index, -1)
        where = "currTerm and the leader's own id"
    elif reply.code is Code.SUCCESS:
        e = st.entry_at(getattr(after.nodes[i], "node", after.nodes[i]).store, reply.index)
        want = (m.curr_term, m.self_id, reply.index, e.pos if e is not None else "the entry's position")
        where = "QuorumAckChecker: currTerm, the leader's own id, the entry's index and position"
    else:
        return None
    got = (reply.term, reply.leader_id, reply.index, reply.pos)
    if got != want:
        return f"{what}, index {reply.index}, pos {reply.pos}; DLedger sets (term, leaderId, index, pos) {want}: {where}"
    return None


def rpl4(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    if type(event) is not core.Deliver and type(event) is not core.Tick:
        return True  # a duplicated answer is the copy of one checked when it was given
    for i, _, reply in answers(before, event, after):
        if isinstance(reply, AppendEntryResponse) and member(before.nodes[i]) is not None:
            problem = _append_reply_problem(before, after, i, reply)
            if problem:
                return _violated(after, problem)
    return True


# A step property leaves its description here for `explain`, which sees only the world after.
_LAST: dict[int, tuple] = {}


def _violated(w: core.World, description: str) -> bool:
    if len(_LAST) > 64:
        _LAST.clear()
    _LAST[id(w)] = (w, description)
    return False


def explain(w: core.World) -> str:
    hit = _LAST.get(id(w))
    return hit[1] if hit is not None and hit[0] is w else "see the trace"


RPL1 = ("No node answers SUCCESS to a heartbeat, ACCEPT to a vote, or SUCCESS to an APPEND push of a term lower "
        "than its own (an APPEND whose entry its log already held excepted: checkAppendFuture answers from the "
        "log).")
RPL2 = ("A heartbeat's or a vote's reply is what DLedger's guards give for that request and the node's state "
        "before it (handleHeartBeat, handleVote), and the state after agrees with the reply.")
RPL4 = ("An append's answer carries what DLedger sets for its code: a DLedgerException's (UNKNOWN_MEMBER, "
        "UNKNOWN_GROUP, NOT_LEADER only from a server that is not LEADER, LEADER_TRANSFERRING) the request's term (-1: "
        "clients never set it) and the server's leader, index and pos -1; TERM_CHANGED no term (-1) and the server's "
        "leader; LEADER_PENDING_FULL and WAIT_QUORUM_ACK_TIMEOUT the server's currTerm and its own id; SUCCESS the "
        "server's currTerm, its own id, and the entry's index and position.")
RPL3 = ("A push's reply agrees with the EntryHandler's guards: SUCCESS to an APPEND or a TRUNCATE only in the "
        "request's term, following its leader, as a FOLLOWER, with the entry held after; SUCCESS to a COMPARE only "
        "for an entry the log holds, INCONSISTENT_STATE only for one it does not; REPEATED_PUSH only for an index "
        "already waiting.")
