"""Ghost history of terms, votes and lost term files, shared by the DLedger worlds.

The expected violations of the election and log properties (ELE-1/2/3, LOG-1/2/5, ...)
all go back to DLedger 0.2.6 writing `currterm` without fsync: an OS crash (or a lost
disk) can leave a node at term 0 with no vote. A violation is explained by that only
when the history shows the link: the voter that accepted two candidates of one term
lost its term file *between* the two grants; the node that led a term twice lost it
between the two leaderships. So this record keeps times, not only sets:

- `votes`: (voter, term) -> ((candidate, at_ms, seq), ...), every ACCEPT in order;
- `led`: term -> ((leader, at_ms, seq), ...), every leadership won in that term;
- `term_lost`: node id -> ((at_ms, term, seq), ...), each OS crash or disk loss of the
  node (its currterm file is gone) and the term it had just before.

`seq` numbers the noted events in history order (several steps share a millisecond).

`election.world`, `dledger_log.world` and `dledger_commitlog.world` fold observations
into it; no node ever reads it.
"""

from __future__ import annotations

from typing import Any

from reference_impl.core.state import EMPTY, FrozenMap, record
from reference_impl.election import records as el


@record
class Terms:
    votes: FrozenMap = EMPTY  # (voter, term) -> tuple of (candidate, at_ms, seq)
    led: FrozenMap = EMPTY  # term -> tuple of (leader, at_ms, seq)
    term_lost: FrozenMap = EMPTY  # node id -> tuple of (at_ms, term before, seq)
    seq: int = 0  # events noted so far


def note(t: Terms, node_id: str, obs: Any, now: int) -> Terms:
    """Fold one observation of node `node_id` (a VoteGranted, a RoleChanged to LEADER)."""
    if isinstance(obs, el.VoteGranted):
        key = (node_id, obs.term)
        return t.evolve(votes=t.votes.set(key, t.votes.get(key, ()) + ((obs.candidate, now, t.seq),)), seq=t.seq + 1)
    if isinstance(obs, el.RoleChanged) and obs.role is el.Role.LEADER:
        return t.evolve(led=t.led.set(obs.term, t.led.get(obs.term, ()) + ((node_id, now, t.seq),)), seq=t.seq + 1)
    return t


def note_crash(t: Terms, node_id: str, kind: str, term_before: int, now: int) -> Terms:
    """Node `node_id` is about to crash; an OS crash or disk loss takes its currterm file."""
    if kind == "process":
        return t
    lost = t.term_lost.get(node_id, ()) + ((now, term_before, t.seq),)
    return t.evolve(term_lost=t.term_lost.set(node_id, lost), seq=t.seq + 1)


def lost_between(t: Terms, node_id: str, after_seq: int, until_seq: int) -> tuple[int, int, int] | None:
    """The first loss of node_id's term file noted after event `after_seq` and before `until_seq`,
    as (at_ms, term before, seq), or None."""
    for lost in t.term_lost.get(node_id, ()):
        if after_seq < lost[2] < until_seq:
            return lost
    return None


# --- liveness: who follows whom (LIVE-1/2/3), for any ghost record with the fields
# agreed, agreed_since, settled_leader, stragglers ---


def transfer_note(transfers: FrozenMap, node_id: str, m: Any, now: int) -> FrozenMap:
    """A leader mid-transfer (its transferee set) since when; read from the member itself whenever it
    reports a transfer starting or ending or a role change, so a transferee left set is seen."""
    if m.role is el.Role.LEADER and m.transferee is not None:
        return transfers if node_id in transfers else transfers.set(node_id, now)
    return transfers.without(node_id)


def follow_note(g: Any, ids: tuple, members: Any, alive: tuple, now: int, is_quorum: Any) -> Any:
    """Fold the members' roles into the liveness ghost fields (any ghost record that has them):
    `agreed` (all_follow) and when it last changed; the leadership a quorum follows, and the
    live members outside it with since when (a new leadership starts their clocks again)."""
    agreed = all_follow(members, alive)
    if agreed != g.agreed:
        g = g.evolve(agreed=agreed, agreed_since=now)
    lead = followed(members, alive, is_quorum)
    outside = {ids[k] for k, (m, up) in enumerate(zip(members, alive))
               if lead is not None and up and not (m.self_id == lead[0] or (
                   m.role is el.Role.FOLLOWER and m.leader_id == lead[0] and m.curr_term == lead[1]))}
    old = g.stragglers if lead == g.settled_leader else EMPTY
    stragglers = FrozenMap((x, old.get(x, now)) for x in sorted(outside))
    if lead != g.settled_leader or stragglers != g.stragglers:
        g = g.evolve(settled_leader=lead, stragglers=stragglers)
    return g


def followed(members: Any, alive: tuple, is_quorum: Any) -> tuple | None:
    """(leader, term) of a live LEADER that a quorum of live members (itself included) follows in its term."""
    for m, up in zip(members, alive):
        if up and m.role is el.Role.LEADER:
            n = 1 + sum(1 for f, f_up in zip(members, alive) if f_up and f.role is el.Role.FOLLOWER
                        and f.leader_id == m.self_id and f.curr_term == m.curr_term)
            if is_quorum(n):
                return m.self_id, m.curr_term
    return None


def all_follow(members: Any, alive: tuple) -> bool:
    """Every live member follows one leader: exactly one live LEADER, and every other live member
    a FOLLOWER of it in its term (the agreement LIVE-1 asks for). Roles change only with a
    RoleChanged observation or a fault, so the ghost recomputes it then."""
    leader = None
    for m, up in zip(members, alive):
        if up and m.role is el.Role.LEADER:
            if leader is not None:
                return False
            leader = m
    if leader is None:
        return False
    return all(m is leader or (m.role is el.Role.FOLLOWER and m.leader_id == leader.self_id
                               and m.curr_term == leader.curr_term) for m, up in zip(members, alive) if up)
