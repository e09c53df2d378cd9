"""Small builders shared by the election unit tests: configs, members, requests, output filters."""

from __future__ import annotations

from typing import Any

from reference_impl import core
from reference_impl.core.network import Send
from reference_impl.election import member_state as mstate
from reference_impl.election import records as el

CFG3 = el.DLedgerConfig(peers=("n0", "n1", "n2"))
CFG5 = el.DLedgerConfig(peers=("n0", "n1", "n2", "n3", "n4"))
DRAW_MAX = core.DRAW_SPAN - 1


def member(self_id: str = "n0", **fields: Any) -> mstate.Member:
    """A member with DLedger's initial state, overridden by `fields`."""
    return mstate.Member(self_id=self_id, **fields)


def follower(self_id: str = "n0", term: int = 1, leader: str = "n1", **fields: Any) -> mstate.Member:
    return member(self_id, curr_term=term, role=el.Role.FOLLOWER, leader_id=leader, **fields)


def leader(self_id: str = "n0", term: int = 1, **fields: Any) -> mstate.Member:
    return member(self_id, curr_term=term, curr_vote_for=self_id, role=el.Role.LEADER, leader_id=self_id, **fields)


def vote_req(candidate: str = "n1", term: int = 1, to: str = "n0", lei: int = -1, let: int = -1,
             group: str = "default") -> el.VoteRequest:
    return el.VoteRequest(group=group, remote_id=to, leader_id=candidate, term=term, ledger_end_index=lei,
                          ledger_end_term=let)


def hb_req(leader_id: str = "n1", term: int = 1, to: str = "n0", group: str = "default") -> el.HeartBeatRequest:
    return el.HeartBeatRequest(group=group, local_id=leader_id, remote_id=to, leader_id=leader_id, term=term)


def of_type(outs: tuple, cls: type) -> list:
    return [o for o in outs if isinstance(o, cls)]


def sends(outs: tuple) -> list:
    return of_type(outs, Send)


def roles(outs: tuple) -> list[tuple[int, el.Role]]:
    return [(o.term, o.role) for o in of_type(outs, el.RoleChanged)]
