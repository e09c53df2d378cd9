"""The reference with one deliberate bug behind rmqspec.conform/1, for the tests that
conform must catch it: `python -m property_tests.drivers.election_broken --bug NAME`.

The bug replaces one function of reference_impl.election.leader_elector in this
process only (as the test-only mutants of histories.mutants.election do):

- `ignore-vote-for`: handleVote(request, self=false), the RPC handler, decides as if
  currVoteFor were null (votes twice in a term; the candidate's inline self-vote is right);
- `heartbeat-lower-term-code`: a heartbeat of a lower term is answered TERM_NOT_READY
  instead of EXPIRED_TERM;
- `vote-interval-ignores-min`: getNextTimeToRequestVote draws nextInt(maxVoteIntervalMs)
  and forgets minVoteIntervalMs.
"""

from __future__ import annotations

import sys

from conform.election import answer
from histories.mutants.election import ORIG, vote_ignoring_curr_vote_for
from property_tests.drivers.election_reference import serve
from reference_impl.election import leader_elector as elector
from reference_impl.election.records import Code, rand_int

GET_NEXT_TIME = elector.get_next_time_to_request_vote


def vote_ignoring_curr_vote_for_from_peers(cfg, m, req, self_vote):
    if self_vote:
        return ORIG["handle_vote"](cfg, m, req, self_vote)
    return vote_ignoring_curr_vote_for(cfg, m, req, self_vote)


def heart_beat_lower_term_code(cfg, m, req, now):
    m2, resp, outs = ORIG["handle_heart_beat"](cfg, m, req, now)
    if resp.code is Code.EXPIRED_TERM:
        resp = resp.evolve(code=Code.TERM_NOT_READY)
    return m2, resp, outs


def next_time_ignoring_min(cfg, m, now, draw):
    if elector.is_taking_leadership(cfg, m):
        return GET_NEXT_TIME(cfg, m, now, draw)
    return now + rand_int(draw, cfg.max_vote_interval_ms)


BUGS = {"ignore-vote-for": ("handle_vote", vote_ignoring_curr_vote_for_from_peers),
        "heartbeat-lower-term-code": ("handle_heart_beat", heart_beat_lower_term_code),
        "vote-interval-ignores-min": ("get_next_time_to_request_vote", next_time_ignoring_min)}

if __name__ == "__main__":
    bug = sys.argv[sys.argv.index("--bug") + 1]
    name, replacement = BUGS[bug]
    setattr(elector, name, replacement)
    serve(answer, f"rmqspec reference with bug {bug}")
