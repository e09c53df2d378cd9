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
