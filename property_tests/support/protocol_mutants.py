"""Test-only mutants: deliberately broken references the checkers must catch.

Importing this module registers them as protocols of their own, with the original's
properties, so the fuzzer, `simulate` and `replay` can run them (`--import
property_tests.protocol_mutants`). They never replace the real reference
(histories/mutants/election.py holds the other kind: single-function replacements installed
with monkeypatch for the Hypothesis machines).

- `election_mutant`: a voter that has already voted in this term votes again for the
  next candidate that asks (DLedgerLeaderElector#handleVote without the
  REJECT_ALREADY_VOTED branch). ELE-2 must fail, unexpectedly (no term file was lost).
"""

from __future__ import annotations

import sys
from typing import Any

import attrs

from reference_impl import core
from reference_impl.election import member_state as mstate
from reference_impl.election import records as el
from reference_impl.election import world as election_world
from spec import election as election_spec
from spec import properties as props

ELECTION_MUTANT = "election_mutant"


def double_vote_on_request(c: Any, m: mstate.Member, msg: Any, rpc: int, now: int) -> tuple[mstate.Member, Any, tuple]:
    m, reply, outs = election_world.on_request(c, m, msg, rpc, now)
    if isinstance(msg, el.VoteRequest) and reply is not None \
            and reply.vote_result is el.VoteResult.REJECT_ALREADY_VOTED:
        m = m.evolve(curr_vote_for=msg.leader_id)
        reply = reply.evolve(vote_result=el.VoteResult.ACCEPT)
        outs = outs + (el.VoteGranted(term=m.curr_term, candidate=msg.leader_id),)
    return m, reply, outs


def _mutant_config(nodes: int = 3, overrides: dict | None = None) -> core.WorldConfig:
    return election_world.make_config(nodes, overrides).evolve(protocol=ELECTION_MUTANT)


PROTOCOL = attrs.evolve(election_world.PROTOCOL, name=ELECTION_MUTANT, on_request=double_vote_on_request,
                        make_config=_mutant_config)

if ELECTION_MUTANT not in core.protocol_names():
    core.register(ELECTION_MUTANT, lambda: PROTOCOL)
    props.register([attrs.evolve(p, protocol=ELECTION_MUTANT) for p in election_spec.PROPERTIES])
    sys.modules[f"spec.{ELECTION_MUTANT}"] = election_spec  # measure() and meter() look up spec.<protocol>
