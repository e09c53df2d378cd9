"""DLedger log properties (docs/properties.md: LOG-*).

Predicates read a world of the `dledger_log` protocol: server stores and the ghost
variables of reference_impl.dledger_log.ghost. A violation is expected only when this
history holds its known cause, for that very entry, leader or term
(spec/dledger_log_causes.py has the evidence and the causes' words).
"""

from __future__ import annotations

from typing import Any

import attrs

from reference_impl import core
from reference_impl.dledger_log import store as st
from reference_impl.election import records as el
from spec import dledger_log_causes as ev
from spec import election as espec
from spec import replies
from spec.properties import Property, register

# --- LOG-1: log matching ---


def log_matching_violation(w: core.World) -> tuple[str, str, int, int, int] | None:
    """Two logs holding entries of equal index and term must hold identical entries up to there.
    Returns (node, node, first differing index, the shared term above it, the index of that)."""
    stores = [n.store for n in ev.servers(w)]
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
                    return w.cfg.ids[a], w.cfg.ids[b], i, sa.entries[top - sa.begin_index].term, top
    return None


def log1(w: core.World) -> bool:
    return log_matching_violation(w) is None


def log1_expected(w: core.World, event: Any = None) -> str | None:
    """Two logs agree on (index, term) above a difference: some term's entries were made twice,
    which only a term led twice (or by two leaders) explains, with its lost-currterm evidence.
    Which term is not always the agreeing entry's: a follower of one leader of a term takes another
    leader's later entries above its own, since an APPEND checks no previous entry (DLedger
    compares logs only when a dispatcher starts, and a dispatcher whose leader keeps its term does
    not start again), and two leaders' no-op entries of one term at one index are equal values.
    So the terms of the two logs' entries from the difference up to the agreeing entry, those
    where they hold different entries of one term first (log1_cause_terms)."""
    v = log_matching_violation(w)
    if v is None:
        return None
    return next((c for t in log1_cause_terms(w, v) if (c := ev.term_cause(w, t))), None)


def log1_cause_terms(w: core.World, v: tuple) -> list[int]:
    """The terms of both logs' entries at indexes v[2]..v[4] of a LOG-1 violation `v`: first those
    where they hold different entries of one term, then all, in index order."""
    ids = w.cfg.ids
    sa, sb = (ev.dl(w, ids.index(x)).store for x in v[:2])
    same, every = [], []
    for index in range(v[2], v[4] + 1):
        a, b = st.entry_at(sa, index), st.entry_at(sb, index)
        if a.term == b.term and a != b:
            same.append(a.term)
        every += [a.term, b.term]
    return list(dict.fromkeys(same + every))


def log1_explain(w: core.World) -> str:
    v = log_matching_violation(w)
    return (f"{v[0]} and {v[1]} differ at index {v[2]} below an index where both hold an entry of term {v[3]}"
            if v else "see the trace")


# --- LOG-2 (leader completeness) and LOG-6 (acknowledged appends survive) ---


def _missing(w: core.World, i: int, wanted: Any) -> list[int]:
    """Indexes of `wanted` (index -> entry or set of entries) that node i's log does not hold."""
    s = ev.dl(w, i).store
    out = []
    for index, want in wanted.items():
        have = st.entry_at(s, index)
        if isinstance(want, frozenset):
            if have not in want:
                out.append(index)
        elif have != want:
            out.append(index)
    return out


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
    """A node becoming leader must hold `wanted`; a missing entry is expected only if this history
    shows why the leaders up to this one lost that very entry (_lacks)."""
    for i, o in obs:
        if not (isinstance(o, el.RoleChanged) and o.role is el.Role.LEADER):
            continue
        missing = _missing(after, i, wanted)
        if missing:
            causes = []
            for index in missing:
                want = wanted[index]
                entries = sorted(want, key=lambda e: e.term) if isinstance(want, frozenset) else [want]
                disp = ev.dl(after, i).member.ledger_end_term  # what its voters compared
                causes.append(next((c for e in entries if (c := ev.lacks(after, index, e, o.term, disp))), None))
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
    for i, (nb, na) in enumerate(zip(ev.servers(before), ev.servers(after))):
        if nb.store.entries is na.store.entries or not nb.store.entries:
            continue
        lost = [e for e in _dropped(nb.store, na.store) if committed.get(e.index) == e]
        if lost:
            indexes = sorted(e.index for e in lost)
            return _violated(after, f"{after.cfg.ids[i]} lost committed entries at {indexes}",
                             _loss_cause(before, event, after, i, lost))
    return True


def _loss_cause(before: core.World, event: Any, after: core.World, i: int, lost: list) -> str | None:
    """Why node i's log lost these committed entries at this step, from the drop this step recorded:
    an OS crash of node i with each entry past its flushed index, its disk loss, or a TRUNCATE it
    carried out that its leader's own log contradicts (stale COMPARE) or whose leader lacked them
    for a cause of this history."""
    node = after.cfg.ids[i]
    drop = next((d for d in reversed(after.ghost.drops) if d.server == node), None)
    if drop is None or drop.at_ms != after.now or not all(drop.holds(e.index, e) for e in lost):
        return None  # the log lost them without any recorded drop: no known cause
    first = lost[0]
    if drop.how == "disk-loss":
        return ev.DISK_DROPPED.format(who=node, at=drop.at_ms, i=first.index, et=first.term, then="lost it")
    if drop.how == "os-crash":
        if all(e.index > drop.flushed for e in lost):
            return ev.OS_DROPPED.format(who=node, at=drop.at_ms, i=first.index, et=first.term, flushed=drop.flushed,
                                     then="lost it")
        return None
    if drop.how != "truncate":
        return None
    held = ev.leader_held(after, i, lost)
    if held or drop.leader not in after.cfg.ids:
        return held
    disp = ev.led_end(after, drop.leader, drop.term, drop.seq)
    causes = [ev.lacks(after, e.index, e, drop.term, disp) for e in lost]
    return causes[0] if all(causes) else None


# --- LOG-4: the commit index never decreases on a live node ---


def log4(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    if before.nodes is after.nodes:
        return True
    for i, (nb, na, ub, ua) in enumerate(zip(ev.servers(before), ev.servers(after), before.alive, after.alive)):
        old, new = nb.store.committed_index, na.store.committed_index
        if ub and ua and new < old:
            return _violated(after, f"{after.cfg.ids[i]}'s committed index went from {old} to {new}",
                             _decrease_cause(after, i, nb.store, na.store, new, old))
    return True


def _decrease_cause(w: core.World, i: int, sb: st.Store, sa: st.Store, new: int, old: int) -> str | None:
    """updateCommittedIndex clamps to the end, so a commit index goes back only once the log was cut
    below it (now, or by an earlier truncation): the cause is that of the truncation that took the
    entries it covered, found in node i's latest drop of them."""
    node = w.cfg.ids[i]
    drop = None
    for d in reversed(w.ghost.drops):
        if d.server == node and d.how == "truncate" and d.entries[0].index <= new + 1 <= d.entries[-1].index:
            drop = d
            break
    if drop is None:
        return None
    lost = [e for e in drop.entries if new < e.index <= old]
    if not lost:
        return None
    if drop.stale and not ev.fixed(w):
        return ev.LEADER_HELD.format(node=node, leader=drop.leader, at=drop.at_ms)
    if drop.leader not in w.cfg.ids:
        return None
    disp = ev.led_end(w, drop.leader, drop.term, drop.seq)
    causes = [ev.lacks(w, e.index, e, drop.term, disp) for e in lost]
    return causes[0] if all(causes) else None


# --- LOG-5: no two different entries are ever committed at one index ---


def log5(w: core.World) -> bool:
    return not w.ghost.conflicts


def log5_expected(w: core.World, event: Any = None) -> str | None:
    """Two entries committed at one index: the leaders up to the term in which the later entry was
    committed lacked the first one for a cause of this history (_lacks; Figure 8 when the later
    entry's term, or the last term of the log a leader of that term won with, is higher)."""
    g = w.ghost
    causes = []
    for index, others in g.conflicts.items():
        first = g.committed[index]
        later = max(e.term for e in others)
        upto = max(g.conflict_terms.get(index, later), later, first.term)  # the leaders up to that commit
        # what displaced the first entry: the later one, or the log its committing leader won with
        disp = max([later] + [g.led_ends.get(s, -1) for _, _, s in g.terms.led.get(upto, ())])
        causes.append(ev.lacks(w, index, first, upto, disp))
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
    return all(_shape_problem(cfg, k, n.store) is None for k, n in enumerate(ev.servers(w)))


def log7_explain(w: core.World) -> str:
    cfg = w.cfg.proto.node.log
    return "; ".join(f"{n.member.self_id}: {st.check_positions(cfg, n.store)}" for n in ev.servers(w)
                     if st.check_positions(cfg, n.store))


# --- LOG-8: a leader commits (and answers SUCCESS for) only what a majority has held ---


def log8(w: core.World) -> bool:
    return not w.ghost.thin


def log8_explain(w: core.World) -> str:
    t = next(iter(w.ghost.thin.values()))
    return (f"{t.leader} {t.what} index {t.index} (an entry of term {t.entry_term}) in term {t.term} at {t.at_ms} ms, "
            f"when only {list(t.holders)} of {len(ev.servers(w))} servers had held it")


# --- LOG-L: after faults stop, appends are acknowledged again ---

LOG_L_BOUND_MS = 40_000


def log_l(w: core.World) -> bool:
    h = w.history
    if not h.calm or w.ghost.first_ack_after_calm_ms >= 0 or w.now - h.calm_at_ms <= LOG_L_BOUND_MS:
        return True
    return w.cfg.proto.clients == 0


def log_l_explain(w: core.World) -> str:
    roles = ", ".join(f"{n.member.self_id}:{n.member.role.value}@{n.member.curr_term}" for n in ev.servers(w))
    return f"no append acknowledged {w.now - w.history.calm_at_ms} ms after faults stopped ({roles})"


def measure(w: core.World) -> dict:
    g, h = w.ghost, w.history
    servers = ev.servers(w)
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
    return tuple(n.store.entries for n in ev.servers(w))


def _term_reads(w: core.World) -> tuple:
    """What _term_cause reads (Property.cause_reads)."""
    return w.ghost.terms, w.ghost.regressed


def _lacks_reads(w: core.World) -> tuple:
    """What log5_expected reads besides `conflicts` (Property.cause_reads); the holders its text
    names come from the stores, but only whether a cause is found decides a verdict."""
    g = w.ghost
    return g.committed, g.conflict_terms, g.counted, g.thin, g.drops, g.terms, g.regressed, g.led_ends


LIVE_CAUSES = {"LIVE-1": espec.live1_expected, "LIVE-3": espec.live3_expected}

PROPERTIES = [
    Property(id="LOG-1", protocol="dledger_log", kind="safety", holds=log1, explain=log1_explain,
             expected_when=log1_expected, reads=_stores, cause_reads=_term_reads,
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
             expected_when=log5_expected, reads=lambda w: (w.ghost.conflicts,), cause_reads=_lacks_reads,
             statement="State machine safety: no two nodes ever commit different entries at the same index."),
    Property(id="LOG-6", protocol="dledger_log", kind="safety", holds_step=log6, explain=_step_explain,
             expected_when=_step_expected,
             statement="An append answered SUCCESS is held, at its index, by every node that becomes leader "
                       "afterwards."),
    Property(id="LOG-7", protocol="dledger_log", kind="safety", holds=log7, explain=log7_explain, reads=_stores,
             statement="Every log is contiguous by index, never decreases in term, and places entry i+1 at "
                       "pos(i) + 48 + body(i), or at the next file when that one cannot also hold a blank record."),
    Property(id="LOG-8", protocol="dledger_log", kind="safety", holds=log8, explain=log8_explain,
             reads=lambda w: (w.ghost.thin,),
             statement="A leader commits an index, or answers an append SUCCESS, only when a majority of the "
                       "servers (itself included) has held its entry there: QuorumAckChecker's quorum, counted on "
                       "the logs themselves (an entry a server lost in a crash or a truncation still counts)."),
    Property(id="RPL-1", protocol="dledger_log", kind="safety", holds_step=replies.rpl1, explain=replies.explain,
             statement=replies.RPL1),
    Property(id="RPL-2", protocol="dledger_log", kind="safety", holds_step=replies.rpl2, explain=replies.explain,
             statement=replies.RPL2),
    Property(id="RPL-3", protocol="dledger_log", kind="safety", holds_step=replies.rpl3, explain=replies.explain,
             statement=replies.RPL3),
    Property(id="RPL-4", protocol="dledger_log", kind="safety", holds_step=replies.rpl4, explain=replies.explain,
             statement=replies.RPL4),
    # LIVE-*, as in the election world; with logs, 0.2.6 and 0.3.1.2 break LIVE-1/3 (a candidate of a
    # higher term with a shorter log stays one for good: espec.stuck_candidates has the evidence)
    *[attrs.evolve(p, protocol="dledger_log", expected_when=LIVE_CAUSES.get(p.id)) for p in espec.PROPERTIES
      if p.id in espec.LIVENESS],
    Property(id="LOG-L", protocol="dledger_log", kind="bounded", holds=log_l, explain=log_l_explain,
             statement=f"After faults stop, a client append is acknowledged SUCCESS within {LOG_L_BOUND_MS} ms."),
]

register(PROPERTIES)
