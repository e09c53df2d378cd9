"""The election protocol as a Z3 transition relation (DLedger 0.2.6 leader election).

Abstraction of reference_impl.election.world
---------------------------------------------
Per node: `alive`, `term` (currTerm), the vote (`has_vote`, `vote`: currVoteFor), the
`role`, the leader (`has_leader`, `leader`: leaderId) and the ledger end
(`lei`, `let`: ledgerEndIndex / ledgerEndTerm, inputs the election never changes).
When a node has no vote or no leader, `vote` / `leader` hold the node itself, so every
update is a single `Store`.

Messages in flight, as sets: `vreq(c, t, i, lt)` a VoteRequest from candidate c for
term t carrying its ledger end (i, lt), and `hb(l, t)` a HeartBeatRequest from leader l
in term t. Replies change only the round counters of the Java threads, which the
abstraction drops: a candidate may become leader once a quorum has granted it a vote
in its term (its round counts ACCEPT replies of distinct voters, each of which is such a
grant). `asking` marks a candidate's loop between its locked part (`maintainAsCandidate` under
the MemberState lock: nextTerm when due, the term and ledger ends read) and
`voteForQuorumResponses`: Java releases the lock in between, so a heartbeat may make the node a
FOLLOWER first and the requests still go out (docs/election.md). The requests carry the term
read under the lock, which is still `term`: only this thread moves it, and a crash ends the loop.

Ghost variables, exactly the reference's: `elected(t, n)` n became leader in term t,
`grants(v, t, c)` voter v ACCEPTed candidate c in term t (across crashes).

Timing is abstracted away: a node may become candidate at any time (a follower's
heartbeat timeout, a leader's lost lease, a higher term seen in a vote or heartbeat, a
leadership transfer), which over-approximates when Java does it. What the proof relies
on is kept exact: votes are persisted and checked against the voter's own term, the log
check precedes the term check, terms move only in the candidate's own loop
(`MemberState#nextTerm`), becoming follower needs a heartbeat of the node's own term
while it has no leader, and a restart keeps term and vote. An OS crash that loses the
currterm file (`lose_term_file`) is a separate action behind the switch `os_crash`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import z3

from reference_impl.core.state import record
from reference_impl.election import records as el
from spec import symbolic as sy
from spec.symbolic import Action, Invariant, StepProperty, Var, add, sel, store

KINDS = {"node": None, "quorum": None, "term": "int", "index": "int", "role": "enum:CANDIDATE,FOLLOWER,LEADER"}

VARIABLES = (
    Var("alive", ("node",)),
    Var("term", ("node",), "term"),
    Var("has_vote", ("node",)),
    Var("vote", ("node",), "node"),
    Var("role", ("node",), "role"),
    Var("has_leader", ("node",)),
    Var("leader", ("node",), "node"),
    Var("lei", ("node",), "index"),
    Var("let", ("node",), "term"),
    Var("vreq", ("node", "term", "index", "term"), lossy=True),
    Var("hb", ("node", "term"), lossy=True),
    Var("elected", ("term", "node")),
    Var("grants", ("node", "term", "node")),
    Var("asking", ("node",)),
)


def _role(u: sy.Universe, name: str) -> z3.ExprRef:
    return u.enum("role", name)


def init(u: sy.Universe, s: sy.State) -> list[sy.Clause]:
    """DLedgerServer#startup of every member: term 0, no vote, CANDIDATE, no leader, nothing sent."""
    cand = _role(u, "CANDIDATE")
    return [
        ("term 0", u.forall(["node"], lambda n: sel(s.term, n) == 0)),
        ("no vote", u.forall(["node"], lambda n: z3.And(z3.Not(sel(s.has_vote, n)), sel(s.vote, n) == n))),
        ("candidate", u.forall(["node"], lambda n: sel(s.role, n) == cand)),
        ("no leader", u.forall(["node"], lambda n: z3.And(z3.Not(sel(s.has_leader, n)), sel(s.leader, n) == n))),
        ("no vote request", s.vreq == sy.literal(u, VARIABLES[9], False, {})),
        ("no heartbeat", s.hb == sy.literal(u, VARIABLES[10], False, {})),
        ("nobody elected", s.elected == sy.literal(u, VARIABLES[11], False, {})),
        ("no grant", s.grants == sy.literal(u, VARIABLES[12], False, {})),
        ("no vote under way", u.forall(["node"], lambda n: z3.Not(sel(s.asking, n)))),
    ]


# --- actions (one per kind of reference step; docstrings name the Java code) ---


def start_vote(u, s, s2, c):
    """maintainAsCandidate's `synchronized (memberState)` block when the vote is due and no term
    change waits: the term and ledger ends the requests will carry are read; the lock is released."""
    return [
        ("candidate alive", sel(s.alive, c)),
        ("role is CANDIDATE", sel(s.role, c) == _role(u, "CANDIDATE")),
        ("no vote under way", z3.Not(sel(s.asking, c))),
        ("vote under way", s2.asking == store(s.asking, c, True)),
    ]


def request_vote(u, s, s2, c):
    """voteForQuorumResponses once the lock was released, whatever the role is by now: send
    VoteRequests for the term read under the lock (still currTerm) and vote for oneself through
    handleVote(self=true), which ACCEPTs unless this node already voted for another in this term
    or the term is below its own ledger end term."""
    t = sel(s.term, c)
    self_ok = z3.And(z3.Or(z3.Not(sel(s.has_vote, c)), sel(s.vote, c) == c), t >= sel(s.let, c))
    return [
        ("candidate alive", sel(s.alive, c)),
        ("a vote under way", sel(s.asking, c)),
        ("the vote is sent", s2.asking == store(s.asking, c, False)),
        ("sends VoteRequest(currTerm, ledger end)",
         sy.sends(u, s2.vreq, add(s.vreq, c, t, sel(s.lei, c), sel(s.let, c)))),
        ("self vote recorded if accepted", s2.vote == sy.ite(self_ok, store(s.vote, c, c), s.vote)),
        ("self vote persisted if accepted", s2.has_vote == sy.ite(self_ok, store(s.has_vote, c, True), s.has_vote)),
        ("self grant in the ghost", s2.grants == sy.ite(self_ok, add(s.grants, c, t, c), s.grants)),
    ]


def grant_vote(u, s, s2, v, c, t, i, lt):
    """handleVote answers ACCEPT: the guards in Java order (log before term), then setCurrVoteFor."""
    return [
        ("VoteRequest in flight", sel(s.vreq, c, t, i, lt)),
        ("voter alive", sel(s.alive, v)),
        ("not the candidate itself", v != c),
        ("log not older: ledgerEndTerm", lt >= sel(s.let, v)),
        ("log not shorter: ledgerEndIndex", z3.Or(lt > sel(s.let, v), i >= sel(s.lei, v))),
        ("request term is the voter's currTerm", t == sel(s.term, v)),
        ("no vote for another candidate", z3.Or(z3.Not(sel(s.has_vote, v)), sel(s.vote, v) == c)),
        ("term not below ledgerEndTerm", t >= sel(s.let, v)),
        ("vote recorded", s2.vote == store(s.vote, v, c)),
        ("vote persisted", s2.has_vote == store(s.has_vote, v, True)),
        ("grant in the ghost", s2.grants == add(s.grants, v, t, c)),
    ]


def become_candidate(u, s, s2, n):
    """changeRoleToCandidate (heartbeat timeout, lost lease, a higher term seen, leadership
    transfer): role CANDIDATE, leader cleared; currTerm and currVoteFor kept."""
    return [
        ("node alive", sel(s.alive, n)),
        ("role CANDIDATE", s2.role == store(s.role, n, _role(u, "CANDIDATE"))),
        ("leader cleared", s2.has_leader == store(s.has_leader, n, False)),
        ("leader cleared (value)", s2.leader == store(s.leader, n, n)),
    ]


def next_term(u, s, s2, c, t2):
    """MemberState#nextTerm in the candidate's loop: a larger term (knownMaxTermInGroup or +1), vote
    cleared. After a WAIT_TO_VOTE_NEXT round the same locked block goes on to read the new term for
    the vote (`start_vote`); after a higher term was seen it only adopts the term."""
    return [
        ("node alive", sel(s.alive, c)),
        ("role is CANDIDATE", sel(s.role, c) == _role(u, "CANDIDATE")),
        ("no vote under way", z3.Not(sel(s.asking, c))),
        ("term grows", t2 > sel(s.term, c)),
        ("term set", s2.term == store(s.term, c, t2)),
        ("vote cleared", s2.has_vote == store(s.has_vote, c, False)),
        ("vote cleared (value)", s2.vote == store(s.vote, c, c)),
        ("vote under way or not", z3.Or(s2.asking == s.asking, s2.asking == store(s.asking, c, True))),
    ]


def become_leader(u, s, s2, c):
    """The vote round PASSED (a quorum ACCEPTed) -> changeRoleToLeader(term), which only checks currTerm."""
    t = sel(s.term, c)
    return [
        ("node alive", sel(s.alive, c)),
        ("a quorum granted it a vote in currTerm", sy.some_quorum(u, lambda v: sel(s.grants, v, t, c))),
        ("role LEADER", s2.role == store(s.role, c, _role(u, "LEADER"))),
        ("leader is itself", s2.has_leader == store(s.has_leader, c, True)),
        ("leader is itself (value)", s2.leader == store(s.leader, c, c)),
        ("elected in the ghost", s2.elected == add(s.elected, t, c)),
    ]


def send_heartbeats(u, s, s2, l):
    """maintainAsLeader -> sendHeartbeats: HeartBeatRequest(currTerm, leaderId) to every peer."""
    return [
        ("node alive", sel(s.alive, l)),
        ("role is LEADER", sel(s.role, l) == _role(u, "LEADER")),
        ("sends HeartBeatRequest(currTerm)", sy.sends(u, s2.hb, add(s.hb, l, sel(s.term, l)))),
    ]


def become_follower(u, s, s2, n, l, t):
    """handleHeartBeat, same term and no leader known -> changeRoleToFollower(term, leaderId)."""
    return [
        ("HeartBeatRequest in flight", sel(s.hb, l, t)),
        ("node alive", sel(s.alive, n)),
        ("not its own heartbeat", n != l),
        ("heartbeat term is currTerm", t == sel(s.term, n)),
        ("no leader known", z3.Not(sel(s.has_leader, n))),
        ("role FOLLOWER", s2.role == store(s.role, n, _role(u, "FOLLOWER"))),
        ("leader recorded", s2.has_leader == store(s.has_leader, n, True)),
        ("leader recorded (value)", s2.leader == store(s.leader, n, l)),
    ]


def crash(u, s, s2, n):
    """The process dies: the currterm file (term and vote) survives; volatile role and leader reset."""
    return [
        ("node alive", sel(s.alive, n)),
        ("down", s2.alive == store(s.alive, n, False)),
        ("role reset to CANDIDATE", s2.role == store(s.role, n, _role(u, "CANDIDATE"))),
        ("leader reset", s2.has_leader == store(s.has_leader, n, False)),
        ("leader reset (value)", s2.leader == store(s.leader, n, n)),
        ("the loop's vote is gone", s2.asking == store(s.asking, n, False)),
    ]


def restart(u, s, s2, n):
    """DLedgerServer#startup after a crash: MemberState#loadTerm; a CANDIDATE again."""
    return [
        ("node down", z3.Not(sel(s.alive, n))),
        ("up", s2.alive == store(s.alive, n, True)),
    ]


def lose_term_file(u, s, s2, n):
    """An OS crash before the un-fsynced currterm file reached the disk (IOUtils.string2File):
    the node comes back with term 0 and no vote."""
    return crash(u, s, s2, n) + [
        ("term file lost: term 0", s2.term == store(s.term, n, 0)),
        ("term file lost: no vote", s2.has_vote == store(s.has_vote, n, False)),
        ("term file lost: no vote (value)", s2.vote == store(s.vote, n, n)),
    ]


def lose_messages(u, s, s2):
    """A step that changes no node: a delivery answered with a rejection, a reply, a drop, a
    partition, a timer with nothing to do."""
    return []


ACTIONS = (
    Action("start_vote", (("c", "node"),), ("asking",), start_vote, start_vote.__doc__),
    Action("request_vote", (("c", "node"),), ("asking", "vreq", "vote", "has_vote", "grants"), request_vote,
           request_vote.__doc__),
    Action("grant_vote", (("v", "node"), ("c", "node"), ("t", "term"), ("i", "index"), ("lt", "term")),
           ("vote", "has_vote", "grants"), grant_vote, grant_vote.__doc__),
    Action("become_candidate", (("n", "node"),), ("role", "has_leader", "leader"), become_candidate,
           become_candidate.__doc__),
    Action("next_term", (("c", "node"), ("t2", "term")), ("term", "has_vote", "vote", "asking"), next_term,
           next_term.__doc__),
    Action("become_leader", (("c", "node"),), ("role", "has_leader", "leader", "elected"), become_leader,
           become_leader.__doc__),
    Action("send_heartbeats", (("l", "node"),), ("hb",), send_heartbeats, send_heartbeats.__doc__),
    Action("become_follower", (("n", "node"), ("l", "node"), ("t", "term")), ("role", "has_leader", "leader"),
           become_follower, become_follower.__doc__),
    Action("crash", (("n", "node"),), ("alive", "role", "has_leader", "leader", "asking"), crash, crash.__doc__),
    Action("restart", (("n", "node"),), ("alive",), restart, restart.__doc__),
    Action("lose_term_file", (("n", "node"),),
           ("alive", "role", "has_leader", "leader", "asking", "term", "has_vote", "vote"),
           lose_term_file, lose_term_file.__doc__, optional="os_crash"),
    Action("lose_messages", (), (), lose_messages, lose_messages.__doc__),
)


# --- invariants: the properties of spec/election.py, and the auxiliary ones their proofs need ---


def ele1(u, s):
    return u.forall(["term", "node", "node"], lambda t, a, b: z3.Implies(
        z3.And(sel(s.elected, t, a), sel(s.elected, t, b)), a == b))


def ele2(u, s):
    return u.forall(["node", "term", "node", "node"], lambda v, t, a, b: z3.Implies(
        z3.And(sel(s.grants, v, t, a), sel(s.grants, v, t, b)), a == b))


def ele4(u, s):
    return u.forall(["term", "node"], lambda t, n: z3.Implies(
        sel(s.elected, t, n), sy.some_quorum(u, lambda v: sel(s.grants, v, t, n))))


def _follows_elected(s, n):
    return z3.And(sel(s.has_leader, n), sel(s.elected, sel(s.term, n), sel(s.leader, n)))


def ele5(u, s):
    fol = _role(u, "FOLLOWER")
    return u.forall(["node"], lambda n: z3.Implies(z3.And(sel(s.alive, n), sel(s.role, n) == fol),
                                                    _follows_elected(s, n)))


def vote_term(u, s):
    return u.forall(["node", "term", "node"], lambda v, t, c: z3.Implies(sel(s.grants, v, t, c), t <= sel(s.term, v)))


def vote_record(u, s):
    return u.forall(["node", "node"], lambda v, c: z3.Implies(
        sel(s.grants, v, sel(s.term, v), c), z3.And(sel(s.has_vote, v), sel(s.vote, v) == c)))


def leader_elected(u, s):
    lead = _role(u, "LEADER")
    return u.forall(["node"], lambda n: z3.Implies(sel(s.role, n) == lead, z3.And(
        sel(s.has_leader, n), sel(s.leader, n) == n, sel(s.elected, sel(s.term, n), n))))


def heartbeat_elected(u, s):
    return u.forall(["node", "term"], lambda l, t: z3.Implies(sel(s.hb, l, t), sel(s.elected, t, l)))


def follower_elected(u, s):
    fol = _role(u, "FOLLOWER")
    return u.forall(["node"], lambda n: z3.Implies(sel(s.role, n) == fol, _follows_elected(s, n)))


VOTE_AUX = ("VOTE-TERM", "VOTE-RECORD")
FOLLOW_AUX = ("LEADER-ELECTED", "HB-ELECTED", "FOLLOWER-ELECTED")

INVARIANTS = (
    Invariant("ELE-1", ele1, "At most one node becomes leader in a term.", "ELE-1",
              ("ELE-1", "ELE-2", "ELE-4") + VOTE_AUX),
    Invariant("ELE-2", ele2, "A voter grants at most one candidate per term.", "ELE-2", ("ELE-2",) + VOTE_AUX),
    Invariant("ELE-4", ele4, "A leader of term t was granted votes by a quorum in t.", "ELE-4", ("ELE-4",)),
    Invariant("ELE-5", ele5, "A live follower of term t follows a node elected in t.", "ELE-5",
              ("ELE-5",) + FOLLOW_AUX),
    Invariant("VOTE-TERM", vote_term, "A voter's currTerm is at least every term it granted a vote in."),
    Invariant("VOTE-RECORD", vote_record, "A grant in the voter's current term is its persisted currVoteFor."),
    Invariant("LEADER-ELECTED", leader_elected, "A LEADER leads itself and was elected in its currTerm."),
    Invariant("HB-ELECTED", heartbeat_elected, "A heartbeat of term t comes from a node elected in t."),
    Invariant("FOLLOWER-ELECTED", follower_elected,
              "A FOLLOWER (live or not) has a leader elected in its currTerm."),
)


def ele3(u, s, s2):
    return u.forall(["node"], lambda n: sel(s.term, n) <= sel(s2.term, n))


STEP_PROPERTIES = (StepProperty("ELE-3", ele3, "A node's currTerm never decreases, across crashes."),)


# --- the abstraction of a reference world ---


@record
class ElectionAbstract:
    nodes: tuple[str, ...]
    alive: tuple[bool, ...]
    term: tuple[int, ...]
    vote: tuple[str | None, ...]
    role: tuple[str, ...]
    leader: tuple[str | None, ...]
    lei: tuple[int, ...]
    let: tuple[int, ...]
    vreq: frozenset  # (candidate, term, ledger end index, ledger end term)
    hb: frozenset  # (leader, term)
    elected: frozenset  # (term, node)
    grants: frozenset  # (voter, term, candidate)
    asking: tuple[bool, ...]  # a candidate's loop between its locked part and its vote requests


def abstract(w: Any) -> ElectionAbstract:
    """The abstract state of an election world (reference_impl.election.world)."""
    vreq, hb = set(), set()
    for env in w.net.flight:
        msg = env.msg
        if env.reply:
            continue
        if isinstance(msg, el.VoteRequest):
            vreq.add((msg.leader_id, msg.term, msg.ledger_end_index, msg.ledger_end_term))
        elif isinstance(msg, el.HeartBeatRequest):
            hb.add((msg.leader_id, msg.term))
    g = w.ghost
    nodes = w.nodes
    return ElectionAbstract(
        nodes=w.cfg.ids, alive=w.alive, term=tuple(m.curr_term for m in nodes),
        vote=tuple(m.curr_vote_for for m in nodes), role=tuple(m.role.value for m in nodes),
        leader=tuple(m.leader_id for m in nodes), lei=tuple(m.ledger_end_index for m in nodes),
        let=tuple(m.ledger_end_term for m in nodes), vreq=frozenset(vreq), hb=frozenset(hb),
        elected=frozenset((t, n) for t, ids in g.elected.items() for n in ids),
        grants=frozenset((v, t, c) for (v, t), cs in g.grants.items() for c in cs),
        asking=tuple(m.vote_start is not None for m in nodes))


def terms_of(a: ElectionAbstract) -> set[int]:
    out = {0, *a.term, *a.let}
    out.update(t for _, t, _, _ in a.vreq)
    out.update(lt for _, _, _, lt in a.vreq)
    out.update(t for _, t in a.hb)
    out.update(t for t, _ in a.elected)
    out.update(t for _, t, _ in a.grants)
    return out


def universe_for(states: Sequence[ElectionAbstract]) -> sy.Universe:
    """A finite universe covering every value the given abstract states mention."""
    terms: set[int] = set()
    indexes: set[int] = set()
    for a in states:
        terms |= terms_of(a)
        indexes |= {*a.lei, *(i for _, _, i, _ in a.vreq)}
    return sy.finite_nodes(KINDS, states[0].nodes, {"term": terms, "index": indexes})


def concrete(u: sy.Universe, a: ElectionAbstract) -> sy.State:
    """The abstract state as Z3 literals in the finite universe `u`."""
    node = u.node_of
    ids = a.nodes

    def per_node(var: Var, values, conv) -> z3.ExprRef:
        return sy.literal(u, var, conv(values[0], ids[0]), {(node[n],): conv(v, n) for n, v in zip(ids, values)})

    V = {v.name: v for v in VARIABLES}

    def num(v: int, kind: str = "term") -> z3.ExprRef:
        return sy.num(u, kind, v)

    return sy.State({
        "alive": per_node(V["alive"], a.alive, lambda v, n: z3.BoolVal(v)),
        "term": per_node(V["term"], a.term, lambda v, n: num(v)),
        "has_vote": per_node(V["has_vote"], a.vote, lambda v, n: z3.BoolVal(v is not None)),
        "vote": per_node(V["vote"], a.vote, lambda v, n: node[v if v is not None else n]),
        "role": per_node(V["role"], a.role, lambda v, n: u.enum("role", v)),
        "has_leader": per_node(V["has_leader"], a.leader, lambda v, n: z3.BoolVal(v is not None)),
        "leader": per_node(V["leader"], a.leader, lambda v, n: node[v if v is not None else n]),
        "lei": per_node(V["lei"], a.lei, lambda v, n: num(v, "index")),
        "let": per_node(V["let"], a.let, lambda v, n: num(v)),
        "vreq": sy.literal(u, V["vreq"], False, {(node[c], num(t), num(i, "index"), num(lt)): True
                                                  for c, t, i, lt in a.vreq}),
        "hb": sy.literal(u, V["hb"], False, {(node[l], num(t)): True for l, t in a.hb}),
        "elected": sy.literal(u, V["elected"], False, {(num(t), node[n]): True for t, n in a.elected}),
        "grants": sy.literal(u, V["grants"], False, {(node[v], num(t), node[c]): True for v, t, c in a.grants}),
        "asking": per_node(V["asking"], a.asking, lambda v, n: z3.BoolVal(v)),
    })


TERM_FILE_LOST = ("an OS crash loses the currterm file, which DLedger 0.2.6 writes without fsync "
                  "(IOUtils.string2File): the voter forgets its term and vote")

PROFILES = (
    sy.Profile("4.9.4", frozenset(), "DLedger 0.2.6 as RocketMQ 4.9.4 ships it; process crashes keep the currterm file"),
    sy.Profile("4.9.4+os-crash", frozenset({"os_crash"}),
               "as 4.9.4, plus OS crashes that lose the un-fsynced currterm file (lose_term_file)",
               expected={"ELE-1": TERM_FILE_LOST, "ELE-2": TERM_FILE_LOST, "ELE-3": TERM_FILE_LOST}),
)

SPEC = sy.SymbolicSpec(
    protocol="election", kinds=KINDS, variables=VARIABLES, init=init, actions=ACTIONS, invariants=INVARIANTS,
    step_properties=STEP_PROPERTIES, axioms=sy.quorum_axioms, abstract=abstract, concrete=concrete,
    universe_for=universe_for, profiles=PROFILES, reference="election",
    bmc_bounds={"term": (-1, 3), "index": (-1, 0)}, bmc_depth=12,
    fault_actions={"crash": "crash", "lose_term_file": "os_crash", "restart": "restart"}, doc=__doc__.split("\n\n")[0])

sy.register(SPEC)
