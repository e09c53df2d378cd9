"""DLedger log properties (docs/properties.md: LOG-*).

Predicates read a world of the `dledger_log` protocol: server stores and the ghost
variables of reference_impl.dledger_log.world. A violation is expected only when this
history holds its known cause:

- "Figure 8" (DLedger <= 0.3.1.2, research section 2.8): the index was committed by a
  leader counting replicas of an entry from an older term (ghost `counted`);
- an OS crash that may have lost the index from a node's unflushed tail (ghost
  `os_lost`): DLedger acknowledges from the page cache, and flushes every 10 ms;
- two leaders in one term after a node lost its currterm file in an OS crash.
"""

from __future__ import annotations

from typing import Any

from reference_impl import core
from reference_impl.dledger_log import store as st
from reference_impl.election import records as el
from spec.properties import Property, register

FIGURE_8 = ("index {i} was committed by a leader counting replicas of an entry of an older term "
            "(no current-term rule in DLedger {v}, research section 2.8; fixed in 0.4.0)")
OS_LOST = ("an OS crash of {who} may have dropped index {i} from its unflushed tail (DLedger acknowledges "
           "appends from the page cache and flushes every flushFileInterval)")
RELED = ("{who} lost its unflushed log tail (and its currterm file) in an OS crash and led term {t} again, "
         "so two different entries carry term {t}")
REGRESSED = ("term {t} was led after term {higher} had been (terms went back: {who} lost currterm files in OS "
             "crashes), so what term {t} committed is outranked by logs of term {higher}")
TWO_LEADERS = ("{leaders} both led term {t} (ELE-1: {who} lost a currterm file in an OS crash), "
               "so their entries of term {t} differ")
LEADER_HELD = ("{node} truncated entries its leader {leader} holds itself: the TRUNCATE was decided on stale "
               "COMPARE state (a compareIndex kept from an earlier leadership, or an answer overtaken by a "
               "reordered APPEND), and updateCommittedIndex clamps the commit index down to the new end")


_SERVERS: list = [None, ()]  # (the world's nodes tuple, its servers): predicates ask many times per step


def _servers(w: core.World) -> tuple:
    """The DLedger servers' nodes (in dledger_commitlog, each broker's DLedger node)."""
    if _SERVERS[0] is w.nodes:
        return _SERVERS[1]
    nodes = w.nodes[:len(w.cfg.proto.node.dledger.peers)]
    out = tuple(n.node for n in nodes) if nodes and hasattr(nodes[0], "node") else nodes
    _SERVERS[0], _SERVERS[1] = w.nodes, out
    return out


def _dl(w: core.World, i: int) -> Any:
    n = w.nodes[i]
    return getattr(n, "node", n)


def _reled(w: core.World, term: int) -> str | None:
    """A node that lost writes in an OS crash led `term` (again, or besides another leader), or
    `term` was led after a higher one (lost term files let terms go back)."""
    lost = {w.cfg.ids[i] for i in w.history.lost_writes}
    if term in w.ghost.regressed and lost:
        return REGRESSED.format(t=term, higher=w.ghost.regressed[term], who=", ".join(sorted(lost)))
    leaders = w.ghost.elected.get(term, frozenset())
    who = sorted(lost & leaders)
    if who:
        return RELED.format(who=", ".join(who), t=term)
    if len(leaders) > 1 and lost:
        return TWO_LEADERS.format(t=term, leaders=", ".join(sorted(leaders)), who=", ".join(sorted(lost)))
    return None


def _cause(w: core.World, index: int) -> str | None:
    """The known cause, in this history, of a violation at `index` (None: unexpected)."""
    g = w.ghost
    if index in g.counted:
        return FIGURE_8.format(i=index, v=w.cfg.proto.node.log.dledger_version)
    who = sorted({node for node, lo, hi in g.os_lost if lo < index <= hi})
    if who:
        return OS_LOST.format(who=", ".join(who), i=index)
    terms = {e.term for e in [g.committed.get(index)] if e is not None}
    terms |= {e.term for e in g.conflicts.get(index, ())} | {e.term for e in g.acked.get(index, ())}
    for t in sorted(terms):
        cause = _reled(w, t)
        if cause:
            return cause
    return None


def _leader_held(w: core.World, i: int, dropped: list) -> str | None:
    """Node i's dropped entries are all in its leader's log: a benign, stale-compare truncation
    (both mechanisms are repaired in the "fixed" profile, where this is no known cause)."""
    n = _dl(w, i)
    term_cause = _reled(w, n.member.curr_term)
    if term_cause:
        return term_cause
    if w.cfg.proto.node.log.dledger_version == "fixed":
        return None
    leader = n.member.leader_id
    if leader is None or leader not in w.cfg.ids:
        return None
    ls = _dl(w, w.cfg.ids.index(leader)).store
    if all(st.entry_at(ls, e.index) == e for e in dropped):
        return LEADER_HELD.format(node=w.cfg.ids[i], leader=leader)
    return None


# --- LOG-1: log matching ---


def log_matching_violation(w: core.World) -> tuple[str, str, int, int] | None:
    """Two logs holding entries of equal index and term must hold identical entries up to there.
    Returns (node, node, first differing index, the shared term above it)."""
    stores = [n.store for n in _servers(w)]
    for a in range(len(stores)):
        for b in range(a + 1, len(stores)):
            sa, sb = stores[a], stores[b]
            if not sa.entries or not sb.entries:
                continue
            lo, hi = max(sa.begin_index, sb.begin_index), min(sa.end_index, sb.end_index)
            top = -1
            for i in range(hi, lo - 1, -1):
                if sa.entries[i - sa.begin_index].term == sb.entries[i - sb.begin_index].term:
                    top = i
                    break
            if top < lo:
                continue
            pa, pb = sa.entries[lo - sa.begin_index:top - sa.begin_index + 1], sb.entries[
                lo - sb.begin_index:top - sb.begin_index + 1]
            if pa == pb:  # tuple equality runs in C, and entries are mostly the very same objects
                continue
            for i in range(lo, top + 1):
                ea, eb = sa.entries[i - sa.begin_index], sb.entries[i - sb.begin_index]
                if ea is not eb and ea != eb:
                    return w.cfg.ids[a], w.cfg.ids[b], i, sa.entries[top - sa.begin_index].term
    return None


def log1(w: core.World) -> bool:
    return log_matching_violation(w) is None


def log1_expected(w: core.World, event: Any = None) -> str | None:
    v = log_matching_violation(w)
    return _reled(w, v[3]) if v else None


def log1_explain(w: core.World) -> str:
    v = log_matching_violation(w)
    return (f"{v[0]} and {v[1]} differ at index {v[2]} below an index where both hold an entry of term {v[3]}"
            if v else "see the trace")


# --- LOG-2 (leader completeness) and LOG-6 (acknowledged appends survive) ---


def _missing(w: core.World, i: int, wanted: Any) -> list[int]:
    """Indexes of `wanted` (index -> entry or set of entries) that node i's log does not hold."""
    s = _dl(w, i).store
    out = []
    for index, want in wanted.items():
        have = st.entry_at(s, index)
        if isinstance(want, frozenset):
            if have not in want:
                out.append(index)
        elif have != want:
            out.append(index)
    return out


def _new_leaders(obs: tuple) -> list[int]:
    return [i for i, o in obs if isinstance(o, el.RoleChanged) and o.role is el.Role.LEADER]


# Step properties compute their violation, and its cause, with `before` at hand, and leave
# both here for expected_when / explain, which see only the world after the step.
_LAST: dict[int, tuple] = {}  # id(world after a violating step) -> (that world, description, cause)


def _violated(w: core.World, description: str, cause: str | None) -> bool:
    if len(_LAST) > 64:
        _LAST.clear()
    _LAST[id(w)] = (w, description, cause)
    return False


def _recall(w: core.World) -> tuple[str, str | None]:
    hit = _LAST.get(id(w))
    return (hit[1], hit[2]) if hit is not None and hit[0] is w else ("see the trace", None)


def _step_expected(w: core.World, event: Any = None) -> str | None:
    return _recall(w)[1]


def _step_explain(w: core.World) -> str:
    return _recall(w)[0]


def _leader_lacks(after: core.World, obs: tuple, wanted: Any, what: str) -> bool:
    for i in _new_leaders(obs):
        missing = _missing(after, i, wanted)
        if missing:
            causes = [_cause(after, index) for index in missing]
            return _violated(after, f"new leader {after.cfg.ids[i]} lacks {what} entries at {missing}",
                             causes[0] if all(causes) else None)
    return True


def log2(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    return _leader_lacks(after, obs, after.ghost.committed, "committed") if obs else True


def log6(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    return _leader_lacks(after, obs, after.ghost.acked, "acknowledged") if obs else True


# --- LOG-3: a committed entry is never truncated or replaced ---


def _dropped(sb: st.Store, sa: st.Store) -> list:
    """Entries of `sb` that `sa` no longer holds, walking down from the old end."""
    out = []
    for e in reversed(sb.entries):
        now = st.entry_at(sa, e.index)
        if now is e or now == e:
            break
        out.append(e)
    return out


def log3(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    committed = after.ghost.committed
    if not committed or before.nodes is after.nodes:
        return True
    for i, (nb, na) in enumerate(zip(_servers(before), _servers(after))):
        if nb.store.entries is na.store.entries or not nb.store.entries:
            continue
        lost = [e for e in _dropped(nb.store, na.store) if committed.get(e.index) == e]
        if lost:
            indexes = sorted(e.index for e in lost)
            if isinstance(event, core.Crash) and event.os:
                cause = OS_LOST.format(who=after.cfg.ids[i], i=indexes[0])
            else:
                causes = [_cause(after, index) for index in indexes]
                cause = causes[0] if all(causes) else _leader_held(after, i, lost)
            return _violated(after, f"{after.cfg.ids[i]} lost committed entries at {indexes}", cause)
    return True


# --- LOG-4: the commit index never decreases on a live node ---


def log4(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    if before.nodes is after.nodes:
        return True
    for i, (nb, na, ub, ua) in enumerate(zip(_servers(before), _servers(after), before.alive, after.alive)):
        old, new = nb.store.committed_index, na.store.committed_index
        if ub and ua and new < old:
            return _violated(after, f"{after.cfg.ids[i]}'s committed index went from {old} to {new}",
                             _decrease_cause(after, i, nb.store, na.store, new, old))
    return True


def _decrease_cause(w: core.World, i: int, sb: st.Store, sa: st.Store, new: int, old: int) -> str | None:
    """updateCommittedIndex clamps to the end, so a commit index goes back only once the log was cut
    below it (now, or by an earlier truncation): the cause is that of the entries it covered."""
    causes = [_cause(w, index) for index in range(new + 1, old + 1)]
    if causes and all(causes):
        return causes[0]
    dropped = _dropped(sb, sa) or [e for e in (w.ghost.committed.get(k) for k in range(new + 1, old + 1))
                                   if e is not None]
    return _leader_held(w, i, dropped) if dropped else None


# --- LOG-5: no two different entries are ever committed at one index ---


def log5(w: core.World) -> bool:
    return not w.ghost.conflicts


def log5_expected(w: core.World, event: Any = None) -> str | None:
    causes = [_cause(w, i) for i in w.ghost.conflicts]
    return causes[0] if causes and all(causes) else None


def log5_explain(w: core.World) -> str:
    parts = [f"index {i}: first {w.ghost.committed[i]}, later {sorted(map(repr, es))}"
             for i, es in sorted(w.ghost.conflicts.items())]
    return "; ".join(parts)


# --- LOG-7: the store's shape (indexes, terms, positions by the 48-byte header arithmetic) ---

# The last log verified in each server slot. Stores only ever build a new log as a
# prefix of the old one plus new entries, so a log that holds the very same entry
# object at some index as the last verified log shares the whole prefix below it; only
# what follows needs checking (appends: one entry).
_SHAPED: dict[int, tuple] = {}


def _shape_problem(cfg: st.LogConfig, slot: int, s: st.Store) -> str | None:
    entries = s.entries
    old = _SHAPED.get(slot)
    start = 0
    if old is not None and old[1] == s.begin_index:
        prev = old[0]
        if prev is entries:
            return None
        j = min(len(prev), len(entries)) - 1
        while j >= 0 and entries[j] is not prev[j]:
            j -= 1
        start = max(j, 0)
    problem = st.check_positions(cfg, s.evolve(entries=entries[start:]) if start else s)
    if problem is None:
        _SHAPED[slot] = (entries, s.begin_index)
    return problem


def log7(w: core.World) -> bool:
    cfg = w.cfg.proto.node.log
    return all(_shape_problem(cfg, k, n.store) is None for k, n in enumerate(_servers(w)))


def log7_explain(w: core.World) -> str:
    cfg = w.cfg.proto.node.log
    return "; ".join(f"{n.member.self_id}: {st.check_positions(cfg, n.store)}" for n in _servers(w)
                     if st.check_positions(cfg, n.store))


# --- LOG-L: after faults stop, appends are acknowledged again ---

LOG_L_BOUND_MS = 40_000


def log_l(w: core.World) -> bool:
    h = w.history
    if not h.calm or w.ghost.first_ack_after_calm_ms >= 0 or w.now - h.calm_at_ms <= LOG_L_BOUND_MS:
        return True
    return w.cfg.proto.clients == 0


def log_l_explain(w: core.World) -> str:
    roles = ", ".join(f"{n.member.self_id}:{n.member.role.value}@{n.member.curr_term}" for n in _servers(w))
    return f"no append acknowledged {w.now - w.history.calm_at_ms} ms after faults stopped ({roles})"


def measure(w: core.World) -> dict:
    g, h = w.ghost, w.history
    servers = _servers(w)
    return {
        "appends": g.appends,
        "results": dict(sorted(g.results.items())),
        "committed": len(g.committed),
        "counted_commits": len(g.counted),
        "ack_after_calm_ms": g.first_ack_after_calm_ms - h.calm_at_ms
        if h.calm and g.first_ack_after_calm_ms >= 0 else None,
        "max_term": max(n.member.curr_term for n in servers),
        "crashes": h.crashes,
    }


def _stores(w: core.World) -> tuple:
    return tuple(n.store.entries for n in _servers(w))


PROPERTIES = [
    Property(id="LOG-1", protocol="dledger_log", kind="safety", holds=log1, explain=log1_explain,
             expected_when=log1_expected, reads=_stores,
             statement="Log matching: two logs that hold an entry of the same index and term hold identical "
                       "entries at every index up to it."),
    Property(id="LOG-2", protocol="dledger_log", kind="safety", holds_step=log2, explain=_step_explain,
             expected_when=_step_expected,
             statement="Leader completeness: a node becoming leader holds every entry committed before."),
    Property(id="LOG-3", protocol="dledger_log", kind="safety", holds_step=log3, explain=_step_explain,
             expected_when=_step_expected,
             statement="A committed entry is never truncated from, or replaced in, a log that holds it."),
    Property(id="LOG-4", protocol="dledger_log", kind="safety", holds_step=log4, explain=_step_explain,
             expected_when=_step_expected,
             statement="The commit index never decreases on a live node."),
    Property(id="LOG-5", protocol="dledger_log", kind="safety", holds=log5, explain=log5_explain,
             expected_when=log5_expected, reads=lambda w: (w.ghost.conflicts,),
             statement="State machine safety: no two nodes ever commit different entries at the same index."),
    Property(id="LOG-6", protocol="dledger_log", kind="safety", holds_step=log6, explain=_step_explain,
             expected_when=_step_expected,
             statement="An append answered SUCCESS is held, at its index, by every node that becomes leader "
                       "afterwards."),
    Property(id="LOG-7", protocol="dledger_log", kind="safety", holds=log7, explain=log7_explain, reads=_stores,
             statement="Every log is contiguous by index, never decreases in term, and places entry i+1 at "
                       "pos(i) + 48 + body(i), or at the next file when that one cannot also hold a blank record."),
    Property(id="LOG-L", protocol="dledger_log", kind="bounded", holds=log_l, explain=log_l_explain,
             statement=f"After faults stop, a client append is acknowledged SUCCESS within {LOG_L_BOUND_MS} ms."),
]

register(PROPERTIES)
