"""Ghost variables of the DLedger log worlds (dledger_log, and dledger_commitlog, which extends them).

History that the LOG properties (spec/dledger_log.py) need and no server can see. Nodes
never read any of it.

- `elected`, `regressed`: the servers that became leader of each term; a term led after
  a higher one had been (term files were lost).
- `committed`, `conflicts`: the first entry any node committed at each index, and other
  entries committed there later (LOG-5); `conflict_terms`: the highest term in which one of
  those was first committed (the node's term then), up to which leaders lacked the first.
- `counted`: the entries a leader committed by counting replicas of an entry of an older
  term, by index (Raft's Figure 8, research section 2.8).
- `led_ends`: the last term of each new leader's log when it won (`terms.led`'s seq -> its
  MemberState ledgerEndTerm, what its vote requests carried): a leader lacking a counted
  entry displaces it only with a log of a higher last term, which is what the voters compare.
- `acked`: the entries a leader answered SUCCESS for, by index (LOG-6).
- `thin`: commits and SUCCESS answers by a leader for an entry that a majority of the
  servers had not held (LOG-8): the quorum rule checked on the logs themselves. A
  server "has held" an entry when its log holds it now or a recorded drop took it.
- `drops`: every loss of entries from a server's log, with what caused it: an OS crash
  (the unflushed tail: entries past the flushed index), a disk loss, or a TRUNCATE the
  follower carried out (which leader sent it, and whether that leader held every entry
  it made the follower drop: a truncation decided on stale COMPARE state). These are
  the evidence the expected causes check: that *this* entry was lost, how, by whom.
- `terms` (reference_impl.election.ghost): votes, leaderships and lost currterm files
  in history order, for the term-file causes.
- `agreed`, `stragglers`, `transfers`: who follows whom, and since when (LIVE-1/2/3), as
  in the election world.
"""

from __future__ import annotations

from typing import Any

from reference_impl import core
from reference_impl.core.state import EMPTY, FrozenMap, record
from reference_impl.dledger_log import entry_pusher as ep
from reference_impl.dledger_log import server as dn
from reference_impl.dledger_log import store as st
from reference_impl.election import ghost as eg
from reference_impl.election import records as el


@record
class Drop:
    """Server `server` lost `entries` from its log at `at_ms` (`seq`: the order among `terms` events)."""

    server: str
    at_ms: int
    seq: int
    how: str  # "os-crash", "disk-loss", "truncate"
    entries: tuple  # ascending by index, contiguous
    flushed: int = -1  # os-crash: the flushed index just before the crash
    leader: str | None = None  # truncate: the leader whose TRUNCATE the follower carried out
    term: int = -1  # truncate: that TRUNCATE's term
    stale: bool = False  # truncate: that leader held the first dropped entry at that moment

    def holds(self, index: int, entry: Any) -> bool:
        """This drop took `entry` at `index`."""
        lo = self.entries[0].index
        return lo <= index <= self.entries[-1].index and self.entries[index - lo] == entry


@record
class Thin:
    """A leader committed (or answered SUCCESS for) an entry a majority had not held."""

    leader: str
    term: int
    index: int
    entry_term: int
    holders: tuple[str, ...]
    at_ms: int
    what: str  # "committed" or "acknowledged"


@record
class LogGhost:
    elected: FrozenMap = EMPTY  # term -> frozenset of server ids that became LEADER in it
    regressed: FrozenMap = EMPTY  # term -> a higher term that had a leader before this one led it
    committed: FrozenMap = EMPTY  # index -> the first entry any node committed there
    conflicts: FrozenMap = EMPTY  # index -> frozenset of other entries committed there later
    conflict_terms: FrozenMap = EMPTY  # index -> the highest term in which one of its conflicts was first committed
    counted: FrozenMap = EMPTY  # index -> frozenset of entries a leader committed there with an older-term commit entry
    led_ends: FrozenMap = EMPTY  # seq of a leadership in terms.led -> that leader's ledgerEndTerm when it won
    acked: FrozenMap = EMPTY  # index -> frozenset of entries a leader answered SUCCESS for at that index
    thin: FrozenMap = EMPTY  # index -> the first Thin commit or SUCCESS there
    drops: tuple = ()  # Drop, in history order
    terms: eg.Terms = eg.Terms()
    agreed: bool = False  # liveness (LIVE-1/2/3), as in the election world: see election.ghost.follow_note
    agreed_since: int = 0
    settled_leader: tuple | None = None
    stragglers: FrozenMap = EMPTY
    transfers: FrozenMap = EMPTY
    appends: int = 0
    results: FrozenMap = EMPTY  # AppendResult code name -> count
    first_ack_after_calm_ms: int = -1


def servers(w: core.World) -> range:
    return range(w.cfg.proto.node.dledger.peer_size())


def dnode(n: Any) -> Any:
    """The DLedger node of a world node (a dledger_commitlog broker wraps one), or None."""
    d = getattr(n, "node", n)
    return d if isinstance(d, dn.DLedgerNode) else None


def store_of(w: core.World, i: int) -> st.Store:
    """Server i's log (in dledger_commitlog, the broker's DLedger node's)."""
    n = w.nodes[i]
    return getattr(n, "node", n).store


def init(cfg: core.WorldConfig) -> LogGhost:
    return LogGhost()


def majority(n: int, k: int) -> bool:
    """k of n servers are a majority (MemberState#isQuorum: k >= n / 2 + 1)."""
    return 2 * k > n


def ever_held(g: LogGhost, w: core.World, index: int, entry: Any) -> list[str]:
    """The servers whose log holds `entry` at `index` now, or held it until a recorded drop."""
    ids = w.cfg.ids
    out = {ids[j] for j in servers(w) if st.entry_at(store_of(w, j), index) == entry}
    out |= {d.server for d in g.drops if d.server not in out and d.holds(index, entry)}
    return sorted(out)


def _check_majority(g: LogGhost, w: core.World, i: int, index: int, entry: Any, term: int, what: str) -> LogGhost:
    if index in g.thin:
        return g
    holders = ever_held(g, w, index, entry)
    if majority(len(servers(w)), len(holders)):
        return g
    return g.evolve(thin=g.thin.set(index, Thin(leader=w.cfg.ids[i], term=term, index=index, entry_term=entry.term,
                                                holders=tuple(holders), at_ms=w.now, what=what)))


def _commit(g: LogGhost, index: int, e: st.Entry, term: int) -> LogGhost:
    """A node of term `term` committed `e` at `index`."""
    first = g.committed.get(index)
    if first is None:
        return g.evolve(committed=g.committed.set(index, e))
    seen = g.conflicts.get(index, frozenset())
    if first != e and e not in seen:
        return g.evolve(conflicts=g.conflicts.set(index, seen | {e}),
                        conflict_terms=g.conflict_terms.set(index, max(term, g.conflict_terms.get(index, term))))
    return g


def _see_committed_prefix(g: LogGhost, s: st.Store, lo: int, hi: int, term: int) -> LogGhost:
    """Entries (lo, hi] of a store whose committed index covers them, seen by a node of term `term`."""
    for index in range(max(lo, s.begin_index - 1) + 1, min(hi, s.end_index) + 1):
        g = _commit(g, index, s.entries[index - s.begin_index], term)
    return g


def _drop(g: LogGhost, d: Drop) -> LogGhost:
    terms = g.terms
    return g.evolve(drops=g.drops + (d.evolve(seq=terms.seq),), terms=terms.evolve(seq=terms.seq + 1))


def crash_note(g: LogGhost, w: core.World, i: int, kind: str, crashed: Any) -> LogGhost:
    """Server i is crashing: what its log loses (the unflushed tail, or everything with the disk),
    and its currterm file (OS crash or disk loss)."""
    before, after = dnode(w.nodes[i]), dnode(crashed)
    if before is None or after is None:
        return g
    node_id = w.cfg.ids[i]
    g = g.evolve(terms=eg.note_crash(g.terms, node_id, kind, before.member.curr_term, w.now))
    lost = st.lost_entries(before.store, after.store)
    if lost:
        g = _drop(g, Drop(server=node_id, at_ms=w.now, seq=0, how="disk-loss" if kind == "disk" else "os-crash"
                          if kind == "os" else "process-crash", entries=lost, flushed=before.store.flushed_index))
    return g


def _follow(g: LogGhost, w: core.World) -> LogGhost:
    k = len(servers(w))
    members = tuple(dnode(n).member for n in w.nodes[:k])
    return eg.follow_note(g, w.cfg.ids[:k], members, w.alive[:k], w.now, w.cfg.proto.node.dledger.is_quorum)


def update(g: LogGhost, w: core.World, i: int, obs: Any) -> LogGhost:
    """Fold one observation (or a fault event, node -1) into the ghost: the step of its type in
    `UPDATES`; other observations leave it as it is."""
    step = UPDATES.get(type(obs))
    return g if step is None else step(g, w, i, obs)


def _transfer(g: LogGhost, w: core.World, i: int, obs: Any) -> LogGhost:
    """A leadership transfer started or ended, or node i's role changed (which ends one)."""
    return g.evolve(transfers=eg.transfer_note(g.transfers, w.cfg.ids[i], dnode(w.nodes[i]).member, w.now))


def _vote_granted(g: LogGhost, w: core.World, i: int, obs: el.VoteGranted | el.RoleChanged) -> LogGhost:
    return g.evolve(terms=eg.note(g.terms, w.cfg.ids[i], obs, w.now))


def _role_changed(g: LogGhost, w: core.World, i: int, obs: el.RoleChanged) -> LogGhost:
    g = _transfer(_follow(g, w), w, i, obs)
    seq = g.terms.seq
    g = _vote_granted(g, w, i, obs)  # a LEADER role is noted in the terms as a vote is
    if obs.role is el.Role.LEADER:
        g = g.evolve(led_ends=g.led_ends.set(seq, dnode(w.nodes[i]).member.ledger_end_term))
        higher = max((x for x in g.elected if x > obs.term), default=None)
        if higher is not None:
            g = g.evolve(regressed=g.regressed.set(obs.term, higher))
        g = g.evolve(elected=g.elected.set(obs.term, g.elected.get(obs.term, frozenset()) | {w.cfg.ids[i]}))
    return g


def _crash(g: LogGhost, w: core.World, i: int, obs: core.Crash) -> LogGhost:
    g = _follow(g, w)
    return g.evolve(transfers=g.transfers.without(w.cfg.ids[obs.node]))


def _restart(g: LogGhost, w: core.World, i: int, obs: core.Restart | core.Calm) -> LogGhost:
    g = _follow(g, w)
    for j in servers(w):  # a restarted node's committed index comes back from its checkpoint
        if w.alive[j]:
            s = store_of(w, j)
            g = _see_committed_prefix(g, s, -1, s.committed_index, dnode(w.nodes[j]).member.curr_term)
    return g


def _commit_advanced(g: LogGhost, w: core.World, i: int, obs: dn.CommitAdvanced) -> LogGhost:
    s = store_of(w, i)
    g = _see_committed_prefix(g, s, obs.old, obs.new, obs.term)
    if obs.leader:
        for index in range(max(obs.old, s.begin_index - 1) + 1, min(obs.new, s.end_index) + 1):
            g = _check_majority(g, w, i, index, s.entries[index - s.begin_index], obs.term, "committed")
        if obs.entry_term < obs.term:
            counted = g.counted
            for index in range(max(obs.old, s.begin_index - 1) + 1, min(obs.new, s.end_index) + 1):
                counted = counted.set(index, counted.get(index, frozenset()) | {s.entries[index - s.begin_index]})
            g = g.evolve(counted=counted)
    return g


def _entries_dropped(g: LogGhost, w: core.World, i: int, obs: dn.EntriesDropped) -> LogGhost:
    node_id = w.cfg.ids[i]
    req = obs.truncate
    leader, term, stale = None, -1, False
    if req is not None:
        leader, term = req.leader_id, req.term
        if leader in w.cfg.ids[:len(servers(w))]:
            ls = store_of(w, w.cfg.ids.index(leader))
            # A truncation decided on fresh COMPARE state cuts right after the last index where
            # the logs agree, so the first entry it drops differs from the leader's. If the
            # leader holds that entry, the compare went below that point: stale state.
            stale = bool(obs.entries) and st.entry_at(ls, obs.entries[0].index) == obs.entries[0]
    return _drop(g, Drop(server=node_id, at_ms=w.now, seq=0, how="truncate", entries=obs.entries, leader=leader,
                         term=term, stale=stale))


def _append_result(g: LogGhost, w: core.World, i: int, obs: ep.AppendResult) -> LogGhost:
    name = obs.code.name
    g = g.evolve(results=g.results.set(name, g.results.get(name, 0) + 1))
    if obs.code is el.Code.SUCCESS:
        e = st.entry_at(store_of(w, i), obs.index)
        if e is not None:
            g = g.evolve(acked=g.acked.set(obs.index, g.acked.get(obs.index, frozenset()) | {e}))
            g = _check_majority(g, w, i, obs.index, e, obs.term, "acknowledged")
        if w.history.calm and g.first_ack_after_calm_ms < 0:
            g = g.evolve(first_ack_after_calm_ms=w.now)
    return g


# What each observation (or fault event) does to the ghost, by its type, as core/transitions.py
# steps the world by the event's type.
UPDATES = {
    el.RoleChanged: _role_changed, el.VoteGranted: _vote_granted, el.TransferStarted: _transfer,
    el.TransferDone: _transfer, core.Crash: _crash, core.Restart: _restart, core.Calm: _restart,
    dn.CommitAdvanced: _commit_advanced, dn.EntriesDropped: _entries_dropped, ep.AppendResult: _append_result,
}
