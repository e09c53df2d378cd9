"""The DLedger log (append, replication, commit) as a Z3 transition relation.

Abstraction (the executable `dledger_log` protocol has not landed yet; this model
stands on the Java source, ../shared/research/rocketmq_semantics.md section 2)
-------------------------------------------------------------------------------
Per node: `cur` (currTerm), `leads` (role LEADER), the persisted vote, the log as the
term of each entry (`log[n, i]`, meaningful for 0 <= i <= end[n]) and `end`
(ledgerEndIndex, -1 when empty). Elections are the election model's, with the log
check on the request's ledger end: `vreq(c, t, i, lt)`.

Ghost variables: `elected`, `grants` as in election; the request a grant answered
(`gri`, `grt`); the log of the leader of each term (`ll[t, i]`, `le[t]`: a leader only
appends, so this is its log while it leads and after); the watermarks
(`wm[t, n]`, DLedgerEntryPusher's peerWaterMarksByTerm: the highest index n
acknowledged in term t); and the commit points `cpt(k, t)`: the leader of term t
committed up to index k (the entry committed at index i <= k is ll[t, i]).

Replication is one action, the net effect of the leader's COMPARE / TRUNCATE / APPEND
rounds (EntryDispatcher#doCompare, doTruncate, doAppend) on a follower of the same
term: the follower's log becomes a prefix of the leader's, ending at or above the
highest index where their entries agree (doCompare walks down from the shorter end to
the first equal entry and truncates there), and its watermark in that term rises to
the new end. Stale pushes are covered, since the leader's log only grows.

Commit (QuorumAckChecker): the leader commits index k once a quorum's watermarks in
its term reach k. DLedger 0.2.6 (and 0.3.1.2) counts watermarks whatever the term of
the entry at k (`commit_by_count`); 0.4.0's fix ("commit entry which is in current
term") commits only an entry of the leader's own term (`commit_current_term`), Raft's
rule. Each version profile enables one of the two.
"""

from __future__ import annotations

import z3

from spec import symbolic as sy
from spec.symbolic import Action, Invariant, Var, add, sel, store

KINDS = {"node": None, "quorum": None, "term": "int", "index": "int"}

VARIABLES = (
    Var("cur", ("node",), "term"),
    Var("leads", ("node",)),
    Var("has_vote", ("node",)),
    Var("vote", ("node",), "node"),
    Var("log", ("node", "index"), "term"),
    Var("end", ("node",), "index"),
    Var("vreq", ("node", "term", "index", "term"), lossy=True),
    Var("elected", ("term", "node")),
    Var("grants", ("node", "term", "node")),
    Var("gri", ("node", "term"), "index"),
    Var("grt", ("node", "term"), "term"),
    Var("ldr", ("term",), "node"),
    Var("ll", ("term", "index"), "term"),
    Var("le", ("term",), "index"),
    Var("wm", ("term", "node"), "index"),
    Var("cpt", ("index", "term")),
)
V = {v.name: v for v in VARIABLES}


def last_term(s: sy.State, n: z3.ExprRef) -> z3.ExprRef:
    """The ledgerEndTerm: the term of the last entry, -1 for an empty log."""
    e = sel(s.end, n)
    return z3.If(e >= 0, sel(s.log, n, e), -1)


def init(u, s):
    """Every member empty at term 0; no leader, vote, watermark or commit."""
    return [
        ("term 0", u.forall(["node"], lambda n: sel(s.cur, n) == 0)),
        ("not leading", u.forall(["node"], lambda n: z3.Not(sel(s.leads, n)))),
        ("no vote", u.forall(["node"], lambda n: z3.And(z3.Not(sel(s.has_vote, n)), sel(s.vote, n) == n))),
        ("empty logs", u.forall(["node"], lambda n: sel(s.end, n) == -1)),
        ("no vote request", s.vreq == sy.literal(u, V["vreq"], False, {})),
        ("nobody elected", s.elected == sy.literal(u, V["elected"], False, {})),
        ("no grant", s.grants == sy.literal(u, V["grants"], False, {})),
        ("no leader log", u.forall(["term"], lambda t: sel(s.le, t) == -1)),
        ("no watermark", u.forall(["term", "node"], lambda t, n: sel(s.wm, t, n) == -1)),
        ("nothing committed", s.cpt == sy.literal(u, V["cpt"], False, {})),
    ]


def timeout(u, s, s2, n, t2):
    """changeRoleToCandidate then MemberState#nextTerm: a larger term, no vote, no longer leader."""
    return [
        ("term grows", t2 > sel(s.cur, n)),
        ("term set", s2.cur == store(s.cur, n, t2)),
        ("not leading", s2.leads == store(s.leads, n, False)),
        ("vote cleared", s2.has_vote == store(s.has_vote, n, False)),
        ("vote cleared (value)", s2.vote == store(s.vote, n, n)),
    ]


def step_down(u, s, s2, n):
    """A leader turns candidate (lost lease, crash) at its term."""
    return [("not leading", s2.leads == store(s.leads, n, False))]


def _grant(s, s2, v, c, t, i, lt):
    return [
        ("vote recorded", s2.vote == store(s.vote, v, c)),
        ("vote persisted", s2.has_vote == store(s.has_vote, v, True)),
        ("grant in the ghost", s2.grants == add(s.grants, v, t, c)),
        ("request answered: index", s2.gri == store(s.gri, v, t, i)),
        ("request answered: term", s2.grt == store(s.grt, v, t, lt)),
    ]


def request_vote(u, s, s2, c):
    """voteForQuorumResponses: VoteRequest(currTerm, ledgerEndIndex, ledgerEndTerm), and the self vote.

    Simplified: the reference sends the ends read under the lock one step earlier (the
    candidate's loop is two steps, docs/election.md); in between a heartbeat of the term may
    make the node a follower that appends. Such a request is for a term whose quorum already
    voted for its leader, so it cannot win; this relation sends the ends at the time of sending."""
    t, e, lt = sel(s.cur, c), sel(s.end, c), last_term(s, c)
    ok = z3.And(z3.Or(z3.Not(sel(s.has_vote, c)), sel(s.vote, c) == c), t >= lt)
    granted = _grant(s, s2, c, c, t, e, lt)
    unchanged = {"vote": s.vote, "has_vote": s.has_vote, "grants": s.grants, "gri": s.gri, "grt": s.grt}
    out = [("not leading", z3.Not(sel(s.leads, c))),
           ("sends VoteRequest", sy.sends(u, s2.vreq, add(s.vreq, c, t, e, lt)))]
    for (label, clause), name in zip(granted, ("vote", "has_vote", "grants", "gri", "grt")):
        out.append((label + " if self vote accepted",
                    z3.If(ok, clause, s2[name] == unchanged[name])))
    return out


def grant_vote(u, s, s2, v, c, t, i, lt):
    """handleVote ACCEPT: log at least as fresh (checked first), no other vote in the term.
    A voter behind the request's term adopts it and votes in one step here; DLedger answers
    TERM_NOT_READY, adopts the term in its own loop and grants the candidate's next request
    (two steps, which this action over-approximates)."""
    behind = t > sel(s.cur, v)
    return [
        ("VoteRequest in flight", sel(s.vreq, c, t, i, lt)),
        ("not the candidate itself", v != c),
        ("log not older: ledgerEndTerm", lt >= last_term(s, v)),
        ("log not shorter: ledgerEndIndex", z3.Or(lt > last_term(s, v), i >= sel(s.end, v))),
        ("request term not below the voter's currTerm", t >= sel(s.cur, v)),
        ("no vote for another candidate in the term",
         z3.Or(behind, z3.Not(sel(s.has_vote, v)), sel(s.vote, v) == c)),
        ("term not below ledgerEndTerm", t >= last_term(s, v)),
        ("voter at the request's term", s2.cur == store(s.cur, v, t)),
        ("a voter that moves on stops leading", s2.leads == store(s.leads, v, z3.And(sel(s.leads, v), z3.Not(behind)))),
    ] + _grant(s, s2, v, c, t, i, lt)


def campaign(u, s, s2, c, t2):
    """maintainAsCandidate in one loop: MemberState#nextTerm, then voteForQuorumResponses at the new term."""
    e, lt = sel(s.end, c), last_term(s, c)
    return [
        ("term grows", t2 > sel(s.cur, c)),
        ("term set", s2.cur == store(s.cur, c, t2)),
        ("not leading", s2.leads == store(s.leads, c, False)),
        ("sends VoteRequest", sy.sends(u, s2.vreq, add(s.vreq, c, t2, e, lt))),
        ("self vote (the vote was just cleared)", z3.Implies(t2 >= lt, z3.And(_clauses(_grant(s, s2, c, c, t2, e, lt))))),
        ("no self vote below ledgerEndTerm", z3.Implies(t2 < lt, z3.And(
            s2.has_vote == store(s.has_vote, c, False), s2.vote == store(s.vote, c, c), s2.grants == s.grants,
            s2.gri == s.gri, s2.grt == s.grt))),
    ]


def _clauses(cl):
    return [c for _, c in cl]


def become_leader(u, s, s2, c):
    """The vote round PASSED -> changeRoleToLeader; the leader's own watermark reaches its end."""
    t = sel(s.cur, c)
    e = sel(s.end, c)
    return [
        ("a quorum granted it a vote in currTerm", sy.some_quorum(u, lambda v: sel(s.grants, v, t, c))),
        ("leading", s2.leads == store(s.leads, c, True)),
        ("elected in the ghost", s2.elected == add(s.elected, t, c)),
        ("leader of the term", s2.ldr == store(s.ldr, t, c)),
        ("leader log of the term", s2.ll == sy.tabulate(u, V["ll"], lambda tt, i: z3.If(
            tt == t, sel(s.log, c, i), sel(s.ll, tt, i)))),
        ("leader log end of the term", s2.le == store(s.le, t, e)),
        ("own watermark", s2.wm == store(s.wm, t, c, z3.If(e > sel(s.wm, t, c), e, sel(s.wm, t, c)))),
    ]


def append(u, s, s2, l):
    """DLedgerMmapFileStore#appendAsLeader: the next index, the leader's currTerm; waitAck's own watermark."""
    t = sel(s.cur, l)
    e = sel(s.end, l) + 1
    return [
        ("leading", sel(s.leads, l)),
        ("entry appended", s2.log == store(s.log, l, e, t)),
        ("end advances", s2.end == store(s.end, l, e)),
        ("leader log of the term", s2.ll == store(s.ll, t, e, t)),
        ("leader log end of the term", s2.le == store(s.le, t, e)),
        ("own watermark", s2.wm == store(s.wm, t, l, e)),
    ]


def replicate(u, s, s2, f, l, t, k):
    """EntryDispatcher COMPARE/TRUNCATE/APPEND on a follower of term t: its log becomes the leader's
    up to k, at or above the highest index where they agree; its watermark in t rises to k."""
    lt_end = sel(s.le, t)
    return [
        ("pushed by the leader of term t", sel(s.elected, t, l)),
        ("not the leader itself", f != l),
        ("follower's currTerm is t", sel(s.cur, f) == t),
        ("follower is not leading", z3.Not(sel(s.leads, f))),
        ("k within the leader's log", z3.And(k >= 0, k <= lt_end)),
        ("k at or above the highest agreeing index", u.forall(["index"], lambda j: z3.Implies(
            z3.And(j > k, j <= sel(s.end, f), j <= lt_end), sel(s.log, f, j) != sel(s.ll, t, j)))),
        ("follower log is the leader's prefix", s2.log == sy.tabulate(u, V["log"], lambda n, i: z3.If(
            z3.And(n == f, i <= k), sel(s.ll, t, i), sel(s.log, n, i)))),
        ("follower end", s2.end == store(s.end, f, k)),
        ("watermark", s2.wm == store(s.wm, t, f, z3.If(k > sel(s.wm, t, f), k, sel(s.wm, t, f)))),
    ]


def _commit(u, s, s2, l, k, current_term: bool):
    t = sel(s.cur, l)
    out = [
        ("leading", sel(s.leads, l)),
        ("k within its log", z3.And(k >= 0, k <= sel(s.end, l))),
        ("a quorum's watermarks in currTerm reach k", sy.some_quorum(u, lambda n: sel(s.wm, t, n) >= k)),
    ]
    if current_term:
        out.append(("the entry at k is of currTerm", sel(s.log, l, k) == t))
    return out + [("commit point", s2.cpt == add(s.cpt, k, t))]


def commit_by_count(u, s, s2, l, k):
    """QuorumAckChecker (0.2.6): quorumIndex from the watermarks alone -> updateCommittedIndex."""
    return _commit(u, s, s2, l, k, current_term=False)


def commit_current_term(u, s, s2, l, k):
    """The 0.4.0 fix: only an entry of the leader's own term is committed by counting (Raft's rule)."""
    return _commit(u, s, s2, l, k, current_term=True)


def elect(u, s, s2, c, t2, q):
    """A macro step for bounded model checking only (switch `macro`): campaign(c, t2), then
    grant_vote by every other member of the quorum q (each behind t2, its log not fresher),
    then become_leader(c). It is their composition, so a trace over it is a trace of Next
    once expanded; model_checks.prove expands it and asks BMC for the expanded trace."""
    e, lt = sel(s.end, c), last_term(s, c)

    def inq(n):
        return sy.in_quorum(u, n, q)

    def fresh_enough(v):
        return z3.Or(lt > last_term(s, v), z3.And(lt == last_term(s, v), e >= sel(s.end, v)))

    return [
        ("term grows", t2 > sel(s.cur, c)),
        ("the candidate is in the quorum", inq(c)),
        ("self vote: term not below ledgerEndTerm", t2 >= lt),
        ("every other voter is behind the term", u.forall(["node"], lambda v: z3.Implies(
            z3.And(inq(v), v != c), z3.And(t2 > sel(s.cur, v), t2 >= last_term(s, v))))),
        ("every other voter's log is not fresher", u.forall(["node"], lambda v: z3.Implies(
            z3.And(inq(v), v != c), fresh_enough(v)))),
        ("sends VoteRequest", sy.sends(u, s2.vreq, add(s.vreq, c, t2, e, lt))),
        ("voters at t2", s2.cur == sy.tabulate(u, V["cur"], lambda n: z3.If(inq(n), t2, sel(s.cur, n)))),
        ("the candidate leads, other voters do not", s2.leads == sy.tabulate(u, V["leads"], lambda n: z3.If(
            n == c, True, z3.If(inq(n), False, sel(s.leads, n))))),
        ("votes persisted", s2.has_vote == sy.tabulate(u, V["has_vote"], lambda n: z3.Or(inq(n), sel(s.has_vote, n)))),
        ("votes recorded", s2.vote == sy.tabulate(u, V["vote"], lambda n: z3.If(inq(n), c, sel(s.vote, n)))),
        ("grants in the ghost", s2.grants == sy.tabulate(u, V["grants"], lambda v, t, cc: z3.Or(
            z3.And(inq(v), t == t2, cc == c), sel(s.grants, v, t, cc)))),
        ("requests answered: index", s2.gri == sy.tabulate(u, V["gri"], lambda v, t: z3.If(
            z3.And(inq(v), t == t2), e, sel(s.gri, v, t)))),
        ("requests answered: term", s2.grt == sy.tabulate(u, V["grt"], lambda v, t: z3.If(
            z3.And(inq(v), t == t2), lt, sel(s.grt, v, t)))),
        ("elected in the ghost", s2.elected == add(s.elected, t2, c)),
        ("leader of the term", s2.ldr == store(s.ldr, t2, c)),
        ("leader log of the term", s2.ll == sy.tabulate(u, V["ll"], lambda tt, i: z3.If(
            tt == t2, sel(s.log, c, i), sel(s.ll, tt, i)))),
        ("leader log end of the term", s2.le == store(s.le, t2, e)),
        ("own watermark", s2.wm == store(s.wm, t2, c, z3.If(e > sel(s.wm, t2, c), e, sel(s.wm, t2, c)))),
    ]


def lose_messages(u, s, s2):
    """A step that changes no node: a rejected request, a reply, a loss."""
    return []


ACTIONS = (
    Action("timeout", (("n", "node"), ("t2", "term")), ("cur", "leads", "has_vote", "vote"), timeout,
           timeout.__doc__),
    Action("step_down", (("n", "node"),), ("leads",), step_down, step_down.__doc__),
    Action("request_vote", (("c", "node"),), ("vreq", "vote", "has_vote", "grants", "gri", "grt"), request_vote,
           request_vote.__doc__),
    Action("grant_vote", (("v", "node"), ("c", "node"), ("t", "term"), ("i", "index"), ("lt", "term")),
           ("cur", "leads", "vote", "has_vote", "grants", "gri", "grt"), grant_vote, grant_vote.__doc__),
    Action("campaign", (("c", "node"), ("t2", "term")),
           ("cur", "leads", "vreq", "vote", "has_vote", "grants", "gri", "grt"), campaign, campaign.__doc__),
    Action("become_leader", (("c", "node"),), ("leads", "elected", "ldr", "ll", "le", "wm"), become_leader,
           become_leader.__doc__),
    Action("append", (("l", "node"),), ("log", "end", "ll", "le", "wm"), append, append.__doc__),
    Action("replicate", (("f", "node"), ("l", "node"), ("t", "term"), ("k", "index")), ("log", "end", "wm"),
           replicate, replicate.__doc__),
    Action("commit_by_count", (("l", "node"), ("k", "index")), ("cpt",), commit_by_count, commit_by_count.__doc__,
           optional="count_commit"),
    Action("commit_current_term", (("l", "node"), ("k", "index")), ("cpt",), commit_current_term,
           commit_current_term.__doc__, optional="current_term_commit"),
    Action("elect", (("c", "node"), ("t2", "term"), ("q", "quorum")),
           ("cur", "leads", "vreq", "vote", "has_vote", "grants", "gri", "grt", "elected", "ldr", "ll", "le", "wm"),
           elect, elect.__doc__, optional="macro"),
    Action("lose_messages", (), (), lose_messages, lose_messages.__doc__),
)


# --- invariants: LOG-1, LOG-2 and the auxiliary invariants of their proofs ---


def _has(s, n, i):
    return z3.And(i >= 0, i <= sel(s.end, n))


def _in_ll(s, t, i):
    return z3.And(i >= 0, i <= sel(s.le, t))


def log1(u, s):
    """Log matching: two logs with an entry of the same term at index i agree up to i."""
    return u.forall(["node", "node", "index", "index"], lambda a, b, i, j: z3.Implies(
        z3.And(_has(s, a, i), _has(s, b, i), sel(s.log, a, i) == sel(s.log, b, i), j >= 0, j <= i),
        sel(s.log, a, j) == sel(s.log, b, j)))


def log2(u, s):
    """Leader completeness: a leader holds every entry committed in its term or before."""
    return u.forall(["node", "index", "term", "index"], lambda n, k, tc, i: z3.Implies(
        z3.And(sel(s.leads, n), sel(s.cpt, k, tc), tc <= sel(s.cur, n), i >= 0, i <= k),
        z3.And(i <= sel(s.end, n), sel(s.log, n, i) == sel(s.ll, tc, i))))


def qa(u, s, k, tc):
    """A quorum has acknowledged index k in term tc."""
    return sy.some_quorum(u, lambda n: sel(s.wm, tc, n) >= k)


def pqa(u, s, k, tc):
    """A quorum may still acknowledge index k in term tc: each member has, or is not past tc."""
    return sy.some_quorum(u, lambda n: z3.Or(sel(s.wm, tc, n) >= k, sel(s.cur, n) <= tc))


def _tc_entry(s, k, tc):
    return z3.And(_in_ll(s, tc, k), sel(s.ll, tc, k) == tc)


AUX = {
    "ELE-1": lambda u, s: u.forall(["term", "node", "node"], lambda t, a, b: z3.Implies(
        z3.And(sel(s.elected, t, a), sel(s.elected, t, b)), a == b)),
    "ELE-2": lambda u, s: u.forall(["node", "term", "node", "node"], lambda v, t, a, b: z3.Implies(
        z3.And(sel(s.grants, v, t, a), sel(s.grants, v, t, b)), a == b)),
    "ELE-4": lambda u, s: u.forall(["term", "node"], lambda t, n: z3.Implies(
        sel(s.elected, t, n), sy.some_quorum(u, lambda v: sel(s.grants, v, t, n)))),
    "VOTE-TERM": lambda u, s: u.forall(["node", "term", "node"], lambda v, t, c: z3.Implies(
        sel(s.grants, v, t, c), t <= sel(s.cur, v))),
    "VOTE-RECORD": lambda u, s: u.forall(["node", "node"], lambda v, c: z3.Implies(
        sel(s.grants, v, sel(s.cur, v), c), z3.And(sel(s.has_vote, v), sel(s.vote, v) == c))),
    "LEADS-ELECTED": lambda u, s: u.forall(["node"], lambda n: z3.Implies(
        sel(s.leads, n), sel(s.elected, sel(s.cur, n), n))),
    "ELECTED-LOG": lambda u, s: u.forall(["node", "index"], lambda n, i: z3.Implies(
        sel(s.elected, sel(s.cur, n), n), z3.And(sel(s.end, n) == sel(s.le, sel(s.cur, n)), z3.Implies(
            _has(s, n, i), sel(s.log, n, i) == sel(s.ll, sel(s.cur, n), i))))),
    "CUR-RANGE": lambda u, s: u.forall(["node"], lambda n: sel(s.cur, n) >= 0),
    "ELECTED-TERM": lambda u, s: u.forall(["term", "node"], lambda t, c: z3.Implies(
        sel(s.elected, t, c), z3.And(t <= sel(s.cur, c), sel(s.ldr, t) == c))),
    "GRANT-TERM": lambda u, s: u.forall(["node", "term", "node"], lambda v, t, c: z3.Implies(
        sel(s.grants, v, t, c), t <= sel(s.cur, c))),
    "VREQ-TERM": lambda u, s: u.forall(["node", "term", "index", "term"], lambda c, t, i, lt: z3.Implies(
        sel(s.vreq, c, t, i, lt), t <= sel(s.cur, c))),
    "LE-ELECTED": lambda u, s: u.forall(["term"], lambda t: z3.Implies(
        sel(s.le, t) >= 0, sel(s.elected, t, sel(s.ldr, t)))),
    "END-RANGE": lambda u, s: u.forall(["node"], lambda n: sel(s.end, n) >= -1),
    "LE-RANGE": lambda u, s: u.forall(["term"], lambda t: sel(s.le, t) >= -1),
    "LOG-TERM": lambda u, s: u.forall(["node", "index"], lambda n, i: z3.Implies(
        _has(s, n, i), sel(s.log, n, i) <= sel(s.cur, n))),
    "LL-TERM": lambda u, s: u.forall(["term", "index"], lambda t, i: z3.Implies(
        _in_ll(s, t, i), sel(s.ll, t, i) <= t)),
    "LL-MONO": lambda u, s: u.forall(["term", "index", "index"], lambda t, i, j: z3.Implies(
        z3.And(_in_ll(s, t, i), j >= 0, j <= i), sel(s.ll, t, j) <= sel(s.ll, t, i))),
    "LOG-PREFIX": lambda u, s: u.forall(["node", "index", "index"], lambda n, i, j: z3.Implies(
        z3.And(_has(s, n, i), j >= 0, j <= i), z3.And(
            i <= sel(s.le, sel(s.log, n, i)), sel(s.log, n, j) == sel(s.ll, sel(s.log, n, i), j)))),
    "LL-PREFIX": lambda u, s: u.forall(["term", "index", "index"], lambda t, i, j: z3.Implies(
        z3.And(_in_ll(s, t, i), j >= 0, j <= i), z3.And(
            i <= sel(s.le, sel(s.ll, t, i)), sel(s.ll, t, j) == sel(s.ll, sel(s.ll, t, i), j)))),
    "LE-QUORUM": lambda u, s: u.forall(["term"], lambda t: z3.Implies(
        sel(s.le, t) >= 0, sy.some_quorum(u, lambda v: sel(s.cur, v) >= t))),
    "ELECTED-QUORUM": lambda u, s: u.forall(["term", "node"], lambda t, l: z3.Implies(
        sel(s.elected, t, l), sy.some_quorum(u, lambda v: sel(s.cur, v) >= t))),
    "WM-LE": lambda u, s: u.forall(["term", "node"], lambda t, n: sel(s.wm, t, n) <= sel(s.le, t)),
    "WM-CUR": lambda u, s: u.forall(["term", "node"], lambda t, n: z3.Implies(
        sel(s.wm, t, n) >= 0, sel(s.cur, n) >= t)),
    "VREQ-CURRENT": lambda u, s: u.forall(["node", "term", "index", "term"], lambda c, t, i, lt: z3.Implies(
        z3.And(sel(s.vreq, c, t, i, lt), sel(s.cur, c) == t,
               u.forall(["node"], lambda l: z3.Not(sel(s.elected, t, l)))),
        z3.And(i == sel(s.end, c), lt == last_term(s, c)))),
    "GRANT-CURRENT": lambda u, s: u.forall(["node", "term", "node"], lambda v, t, c: z3.Implies(
        z3.And(sel(s.grants, v, t, c), sel(s.cur, c) == t,
               u.forall(["node"], lambda l: z3.Not(sel(s.elected, t, l)))),
        z3.And(sel(s.gri, v, t) == sel(s.end, c), sel(s.grt, v, t) == last_term(s, c)))),
    "ACK-HOLDS": lambda u, s: u.forall(["node", "term", "index"], lambda v, tc, k: z3.Implies(
        z3.And(sel(s.wm, tc, v) >= k, _tc_entry(s, k, tc), pqa(u, s, k, tc)),
        z3.And(k <= sel(s.end, v), sel(s.log, v, k) == tc))),
    "GRANT-DOM": lambda u, s: u.forall(["node", "term", "node", "term", "index"], lambda v, t, c, tc, k: z3.Implies(
        z3.And(sel(s.grants, v, t, c), tc < t, sel(s.wm, tc, v) >= k, _tc_entry(s, k, tc), pqa(u, s, k, tc)),
        z3.Or(sel(s.grt, v, t) > tc, z3.And(sel(s.grt, v, t) == tc, sel(s.gri, v, t) >= k)))),
    "ELECTED-HOLDS": lambda u, s: u.forall(["term", "node", "term", "index"], lambda t, l, tc, k: z3.Implies(
        z3.And(sel(s.elected, t, l), tc < t, _tc_entry(s, k, tc), pqa(u, s, k, tc)),
        z3.And(k <= sel(s.le, t), sel(s.ll, t, k) == tc))),
    "LL-HOLDS": lambda u, s: u.forall(["term", "term", "index"], lambda t, tc, k: z3.Implies(
        z3.And(sel(s.le, t) >= 0, tc < t, _tc_entry(s, k, tc), pqa(u, s, k, tc)),
        z3.And(k <= sel(s.le, t), sel(s.ll, t, k) == tc))),
    "COMMIT-ACKED": lambda u, s: u.forall(["index", "term"], lambda k, tc: z3.Implies(
        sel(s.cpt, k, tc), z3.And(_tc_entry(s, k, tc), qa(u, s, k, tc)))),
}

AUX_DOC = {
    "CUR-RANGE": "currTerm is never negative.",
    "ELECTED-TERM": "A node elected in t has reached t, and is the term's recorded leader.",
    "GRANT-TERM": "A candidate granted a vote in t has reached t.",
    "VREQ-TERM": "A vote request for t comes from a node that has reached t.",
    "LE-ELECTED": "A term with a leader log has an elected leader.",
    "LEADS-ELECTED": "A leader was elected in its currTerm.",
    "ELECTED-LOG": "A node elected in its currTerm holds exactly that term's leader log.",
    "LOG-TERM": "No entry is of a term above its holder's currTerm.",
    "LL-TERM": "A leader log of term t holds no entry above t.",
    "LL-MONO": "Entry terms never decrease along a leader log.",
    "LOG-PREFIX": "Every log, up to an entry of term t, is a prefix of term t's leader log.",
    "LL-PREFIX": "The same for the leader logs themselves.",
    "LE-QUORUM": "A term with a leader log has a quorum at or past it.",
    "ELECTED-QUORUM": "A term with an elected leader has a quorum at or past it.",
    "WM-LE": "A watermark never exceeds the leader log of its term.",
    "WM-CUR": "A node acknowledges in term t only while at t, so its currTerm is at least t.",
    "VREQ-CURRENT": "A candidate's requests carry its current ledger end until someone wins the term.",
    "GRANT-CURRENT": "Likewise the request each grant answered.",
    "ACK-HOLDS": "A node that acknowledged an entry of term tc still holds it while a quorum may still ack it.",
    "GRANT-DOM": "A vote given after acknowledging such an entry went to a log at least as fresh.",
    "ELECTED-HOLDS": "Leaders elected after such an entry hold it.",
    "LL-HOLDS": "Likewise every later leader log.",
    "COMMIT-ACKED": "A commit point is an entry of the committing term, acknowledged by a quorum in it.",
}

LOG1_SUPPORT = ("LOG-1", "ELE-1", "ELE-2", "ELE-4", "VOTE-TERM", "VOTE-RECORD", "LEADS-ELECTED", "ELECTED-LOG",
                "CUR-RANGE", "ELECTED-TERM", "GRANT-TERM", "VREQ-TERM", "LE-ELECTED", "END-RANGE", "LE-RANGE", "LOG-TERM", "LL-TERM", "LOG-PREFIX", "LL-PREFIX")
LOG2_SUPPORT = ("LOG-2",) + LOG1_SUPPORT + (
    "LL-MONO", "LE-QUORUM", "ELECTED-QUORUM", "WM-LE", "WM-CUR", "VREQ-CURRENT", "GRANT-CURRENT", "ACK-HOLDS",
    "GRANT-DOM", "ELECTED-HOLDS", "LL-HOLDS", "COMMIT-ACKED")

INVARIANTS = (
    Invariant("LOG-1", log1, "Two logs holding an entry of the same index and term agree up to it.", "LOG-1",
              LOG1_SUPPORT),
    Invariant("LOG-2", log2, "A leader holds every entry committed in its term or an earlier one.", "LOG-2",
              LOG2_SUPPORT),
) + tuple(Invariant(k, f, AUX_DOC.get(k, k)) for k, f in AUX.items())

COMMIT_BY_COUNT = ("DLedger <= 0.3.1.2 commits an entry of an older term by counting watermarks "
                   "(QuorumAckChecker); a new leader with a higher ledgerEndTerm can lack it (Raft's Figure 8, "
                   "openmessaging/dledger issue #4)")

PROFILES = (
    sy.Profile("0.2.6", frozenset({"count_commit"}),
               "DLedger 0.2.6 as RocketMQ 4.9.4 ships it: commit by counting watermarks",
               expected={"LOG-2": COMMIT_BY_COUNT}),
    sy.Profile("fixed", frozenset({"current_term_commit"}),
               "DLedger 0.4.0's fix: commit only an entry of the leader's current term"),
)

SPEC = sy.SymbolicSpec(
    protocol="dledger_log", kinds=KINDS, variables=VARIABLES, init=init, actions=ACTIONS, invariants=INVARIANTS,
    axioms=sy.quorum_axioms, profiles=PROFILES, reference="dledger_log",
    witness_scenarios={"LOG-2": "property_tests/scenarios/dledger_log/figure8_commit_by_counting.json"},
    bmc_bounds={"term": (-1, 4), "index": (-1, 0)}, bmc_depth=8,
    bmc_actions=("elect", "append", "replicate", "commit_by_count", "commit_current_term"),
    induction_nodes=(3,), induction_bounds={"term": (-1, 3), "index": (-1, 1)}, doc=__doc__.split("\n\n")[0])

sy.register(SPEC)
