"""The evidence behind the expected causes of the DLedger log properties (spec/dledger_log.py).

A violation of LOG-1..6 is expected only when this history holds its known cause, for
*that* entry, leader or term:

- "Figure 8" (DLedger <= 0.3.1.2, research section 2.8): the very entry was committed by a
  leader counting replicas of an entry from an older term (ghost `counted`), and the
  leader lacking it won with a log whose last term was higher (ghost `led_ends`);
- an OS crash that dropped *that* entry from the unflushed tail of a node that then
  elected the leader lacking it (ghost `drops`): DLedger acknowledges from the page
  cache, and flushes every 10 ms; a lost disk likewise;
- a truncation its leader's own log contradicts (stale COMPARE state; 0.2.6, 0.3.1.2);
- a term led twice, or by two leaders, or after a higher term, with the lost currterm
  file that allowed it between the two votes or leaderships (ghost `terms`).

A commit or SUCCESS answer for an entry no majority had held (LOG-8) explains nothing:
a violation at such an index is unexpected, whatever else the history holds.
"""

from __future__ import annotations

from typing import Any

from reference_impl import core
from reference_impl.dledger_log import ghost as lg
from reference_impl.dledger_log import store as st
from reference_impl.election import ghost as eg
from spec import election as espec

FIGURE_8 = ("index {i} (term {et}) was committed by a leader counting replicas of an entry of an older term "
            "(a majority held it: {holders}; no current-term rule in DLedger {v}, research section 2.8; fixed in "
            "0.4.0), and a leader whose log ended in the higher term {dt} displaced it")
OS_DROPPED = ("{who}'s OS crash at {at} ms dropped index {i} (term {et}) from its unflushed tail (flushed up to "
              "{flushed}: DLedger acknowledges appends from the page cache and flushes every flushFileInterval), "
              "and {who} then {then}")
DISK_DROPPED = "{who} lost its disk at {at} ms, index {i} (term {et}) with it, and then {then}"
STALE_DROPPED = ("{who} truncated index {i} (term {et}) at {at} ms on a TRUNCATE from {leader}, which held it "
                 "itself (stale COMPARE state), and then {then}")
RELED = ("{who} led term {t} at {t1} ms, lost its unflushed log tail and its currterm file in an OS crash at "
         "{lost} ms, and led term {t} again at {t2} ms, so two different entries carry term {t}")
REGRESSED = ("term {t} was led by {leader} at {at} ms after term {higher} had been: {who} lost its currterm file "
             "at {lost} ms (it was at term {was}) and then elected {leader} in term {t}, so what term {t} "
             "committed is outranked by logs of term {higher}")
TWO_LEADERS = "{leaders} both led term {t}, so their entries of term {t} differ: {why}"
LEADER_HELD = ("{node} truncated entries its leader {leader} holds itself at {at} ms: the TRUNCATE was decided on "
               "stale COMPARE state (a compareIndex kept from an earlier leadership, or an answer overtaken by a "
               "reordered APPEND), and updateCommittedIndex clamps the commit index down to the new end")


_SERVERS: list = [None, ()]  # (the world's nodes tuple, its servers): predicates ask many times per step


def servers(w: core.World) -> tuple:
    """The DLedger servers' nodes (in dledger_commitlog, each broker's DLedger node)."""
    if _SERVERS[0] is w.nodes:
        return _SERVERS[1]
    nodes = w.nodes[:len(w.cfg.proto.node.dledger.peers)]
    out = tuple(n.node for n in nodes) if nodes and hasattr(nodes[0], "node") else nodes
    _SERVERS[0], _SERVERS[1] = w.nodes, out
    return out


def dl(w: core.World, i: int) -> Any:
    n = w.nodes[i]
    return getattr(n, "node", n)


def fixed(w: core.World) -> bool:
    return w.cfg.proto.node.log.dledger_version == "fixed"


def electors(w: core.World, leader: str, term: int, seq: int) -> dict[str, int]:
    """Who made `leader` leader of `term` (the leadership noted at `seq`): the leader itself, as of
    then, and every voter whose ACCEPT for it in that term came in this candidacy (after any earlier
    leadership of it in that term), as of its last such vote. A voter accepts one candidate twice
    in a term only after it lost its term file, and the earlier ACCEPT elected the earlier leadership."""
    prev = max((s for x, _, s in w.ghost.terms.led.get(term, ()) if x == leader and s < seq), default=-1)
    out = {leader: seq}
    for (voter, t), votes in w.ghost.terms.votes.items():
        if t == term and voter != leader:
            last = max((s for cand, _, s in votes if cand == leader and prev < s < seq), default=None)
            if last is not None:
                out[voter] = last
    return out


def led_end(w: core.World, leader: str | None, term: int, before: int) -> int:
    """The last term of `leader`'s log when it last won `term` before event `before` (-1: it did not)."""
    for x, _, s in reversed(w.ghost.terms.led.get(term, ())):
        if x == leader and s < before:
            return w.ghost.led_ends.get(s, -1)
    return -1


def drop_cause(w: core.World, index: int, entry: Any, who: dict[str, int], then: str) -> str | None:
    """A recorded loss of exactly `entry` at `index` by one of `who` (node -> the event it had to come
    before): an OS crash that took it from the unflushed tail, a lost disk, or (0.2.6, 0.3.1.2) a
    truncation its leader's own log contradicted."""
    for d in w.ghost.drops:
        limit = who.get(d.server)
        if limit is None or d.seq > limit or not d.holds(index, entry):
            continue
        args = dict(who=d.server, at=d.at_ms, i=index, et=entry.term, then=then)
        if d.how == "os-crash" and index > d.flushed:
            return OS_DROPPED.format(flushed=d.flushed, **args)
        if d.how == "disk-loss":
            return DISK_DROPPED.format(**args)
        if d.how == "truncate" and d.stale and not fixed(w):
            return STALE_DROPPED.format(leader=d.leader, **args)
    return None


def term_cause(w: core.World, term: int) -> str | None:
    """The lost-currterm causes of a term, each with its evidence: a node led it twice with its term
    file lost in between; two nodes led it and a voter accepted both, its file lost between the
    grants (ELE-1's evidence); or it was led after a higher term by the votes of a node that had
    lost its file while above it."""
    terms = w.ghost.terms
    led = terms.led.get(term, ())
    for k, (a, t1, s1) in enumerate(led):
        for b, t2, s2 in led[k + 1:]:
            lost = eg.lost_between(terms, a, s1, s2) if a == b else None
            if lost is not None:
                return RELED.format(who=a, t=term, t1=t1, t2=t2, lost=lost[0])
    leaders = sorted({x for x, _, _ in led})
    if len(leaders) > 1:
        why = espec.two_leaders_cause(terms, w.cfg.ids, term, leaders)
        if why:
            return TWO_LEADERS.format(leaders=", ".join(leaders), t=term, why=why)
    higher = w.ghost.regressed.get(term)
    if higher is not None:
        for x, at, s in led:
            for v, until in electors(w, x, term, s).items():
                for lost_at, was, ls in terms.term_lost.get(v, ()):
                    if ls < until and was > term:
                        return REGRESSED.format(t=term, leader=x, at=at, higher=higher, who=v, lost=lost_at,
                                                was=was)
    return None


def lacks(w: core.World, index: int, entry: Any, top: int, displacing: int) -> str | None:
    """Why the leaders of terms entry.term..top (and of any term led after a higher one, up to
    top) came to lack `entry` at `index`; `displacing`: the last term of the lacking leader's log
    when it won (what its voters compared), or of what stands at `index` instead. None: no known
    cause in this history. A commit (or SUCCESS) that no majority had held explains nothing."""
    g = w.ghost
    if index in g.thin:
        return None
    if entry in g.counted.get(index, ()) and displacing > entry.term:
        return FIGURE_8.format(i=index, et=entry.term, dt=displacing, holders=", ".join(holders(w, index, entry)),
                               v=w.cfg.proto.node.log.dledger_version)
    terms = g.terms
    lacking = sorted({t for t in terms.led if entry.term <= t <= top} | {t for t in g.regressed if t <= top})
    for t in lacking:
        for x, at, s in terms.led[t]:
            cause = drop_cause(w, index, entry, electors(w, x, t, s), f"elected {x} in term {t} ({at} ms)")
            if cause:
                return cause
    for t in sorted({entry.term, top} | set(lacking)):
        cause = term_cause(w, t)
        if cause:
            return cause
    return None


def holders(w: core.World, index: int, entry: Any) -> list[str]:
    return lg.ever_held(w.ghost, w, index, entry)


def term_at(w: core.World, i: int, index: int) -> int:
    """The term of what node i's log holds at `index`, or of its last entry when it is shorter."""
    s = dl(w, i).store
    e = st.entry_at(s, index)
    return e.term if e is not None else s.end_term


def cause(w: core.World, index: int) -> str | None:
    """A known cause, in this history, for the entries committed or acknowledged at `index` to be
    lost somewhere (None: unexpected). Used where the violation does not name a leader (DCL)."""
    g = w.ghost
    entries = {e for e in [g.committed.get(index)] if e is not None} | set(g.acked.get(index, ()))
    if not entries:
        return None
    top = max(g.elected, default=0)
    displacing = max([e.term for e in g.conflicts.get(index, ())] + [term_at(w, i, index) for i in
                                                                    range(len(servers(w)))], default=-1)
    for e in sorted(entries, key=lambda e: e.term):
        found = lacks(w, index, e, top, displacing)
        if found:
            return found
    return None


def leader_held(w: core.World, i: int, dropped: list) -> str | None:
    """Node i dropped these entries by carrying out a TRUNCATE whose leader held every one of them
    (a drop record says so): a truncation decided on stale COMPARE state. Both mechanisms are
    repaired in the "fixed" profile, where this is no known cause."""
    if fixed(w) or not dropped:
        return None
    node = w.cfg.ids[i]
    for d in reversed(w.ghost.drops):
        if d.server == node and d.how == "truncate" and all(d.holds(e.index, e) for e in dropped):
            return LEADER_HELD.format(node=node, leader=d.leader, at=d.at_ms) if d.stale else None
    return None
