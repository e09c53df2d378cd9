"""Test-only mutants of the election reference: each breaks one rule DLedger relies on.

A mutant is a replacement for one function of the election reference, installed with
monkeypatch on the module that defines it (`HOME[name]`): module globals are looked up
at call time, and the other election modules call it through that module, so every
caller sees it.
property_tests/test_mutants.py shows the checkers catch each one; test_cli.py uses one for exit code 1.
"""

from __future__ import annotations

from reference_impl.core import faults
from reference_impl.election import leader_elector as elector
from reference_impl.election import records as el
from reference_impl.election import server as srv
from reference_impl.election import world as election_world

HOME = {name: elector for name in ("handle_vote", "finish_vote_round", "handle_heart_beat", "finish_heart_beat_round",
                                   "maintain_as_candidate")} | {"crash": srv}
ORIG = {name: getattr(module, name) for name, module in HOME.items()}


# --- the mutants: (function name, replacement) ---


def vote_ignoring_curr_vote_for(cfg, m, req, self_vote):
    """handleVote that forgets it already voted in this term (grants every same-term candidate)."""
    m2, resp, outs = ORIG["handle_vote"](cfg, m.evolve(curr_vote_for=None), req, self_vote)
    if resp.vote_result is el.VoteResult.ACCEPT:
        return m2, resp, outs
    return ORIG["handle_vote"](cfg, m, req, self_vote)


def parse_own_vote_as_quorum(cfg, m, vr, now, draw):
    """A candidate whose own ACCEPT counts as a quorum: changeRoleToLeader without a quorum of votes."""
    if vr.known_max_term_in_group <= vr.term and vr.accepted_num >= 1:
        n = cfg.peer_size()
        vr = vr.evolve(accepted_num=n, valid_num=n, already_has_leader=False, bigger_ledger_num=0)
    return ORIG["finish_vote_round"](cfg, m, vr, now, draw)


def heartbeat_not_refreshing_timer(cfg, m, req, now):
    """A follower that answers heartbeats but never refreshes lastLeaderHeartBeatTime."""
    m2, resp, outs = ORIG["handle_heart_beat"](cfg, m, req, now)
    if m.role is el.Role.FOLLOWER and m2.role is el.Role.FOLLOWER:
        m2 = m2.evolve(last_leader_heart_beat_time=m.last_leader_heart_beat_time)
    return m2, resp, outs


def crash_losing_term_file(m, lose_term_file=False):
    """Every process crash loses the currterm file (as if it were never written)."""
    return ORIG["crash"](m, lose_term_file=True)


def crash_losing_vote(m, lose_term_file=False):
    """A crash keeps currTerm but not currVoteFor (a term file without the voteLeader key)."""
    return ORIG["crash"](m, lose_term_file).evolve(curr_vote_for=None)


def heartbeat_following_higher_term_at_old_term(cfg, m, req, now):
    """A higher-term heartbeat makes the node a follower of that leader without adopting its term."""
    if cfg.is_peer_member(req.leader_id) and req.leader_id != m.self_id and req.term > m.curr_term:
        m2 = m.evolve(role=el.Role.FOLLOWER, leader_id=req.leader_id, last_leader_heart_beat_time=now)
        return m2, el.HeartBeatResponse(), (el.RoleChanged(term=m.curr_term, role=el.Role.FOLLOWER,
                                                           leader=req.leader_id),)
    return ORIG["handle_heart_beat"](cfg, m, req, now)


def leader_lease_never_expires(cfg, m, hb, now):
    """sendHeartbeats' parse with the lease check gone: a cut-off leader keeps leading."""
    return ORIG["finish_heart_beat_round"](cfg, m.evolve(last_succ_heart_beat_time=now), hb, now)


def candidate_never_increments_term(cfg, m, now, draw):
    """maintainAsCandidate that treats WAIT_TO_VOTE_NEXT as WAIT_TO_REVOTE: split votes repeat forever."""
    if m.last_parse_result is el.ParseResult.WAIT_TO_VOTE_NEXT:
        m = m.evolve(last_parse_result=el.ParseResult.WAIT_TO_REVOTE)
    return ORIG["maintain_as_candidate"](cfg, m, now, draw)


def cfg_for(profile, nodes=3, calm_at_ms=None):
    prof = faults.profile(profile)
    if calm_at_ms is not None:
        prof = prof.evolve(calm_at_ms=calm_at_ms)
    return election_world.make_config(nodes).evolve(profile=prof)


MUTANTS = [
    # (property, function, mutant, config, seeds, steps)
    ("ELE-2", "handle_vote", vote_ignoring_curr_vote_for, cfg_for("none"), 20, 300),
    ("ELE-1", "handle_vote", vote_ignoring_curr_vote_for, cfg_for("none"), 20, 300),
    ("ELE-4", "finish_vote_round", parse_own_vote_as_quorum, cfg_for("none"), 20, 300),
    ("ELE-1", "finish_vote_round", parse_own_vote_as_quorum, cfg_for("none"), 20, 300),
    ("ELE-3", "crash", crash_losing_term_file, cfg_for("crash"), 40, 3000),
    ("ELE-2", "crash", crash_losing_vote, cfg_for("crash"), 40, 3000),
    ("ELE-5", "handle_heart_beat", heartbeat_following_higher_term_at_old_term, cfg_for("standard"), 40, 3000),
    ("HB-1", "handle_heart_beat", heartbeat_not_refreshing_timer, cfg_for("none"), 10, 1000),
    ("HB-2", "finish_heart_beat_round", leader_lease_never_expires, cfg_for("partition"), 40, 3000),
    ("ELE-L", "maintain_as_candidate", candidate_never_increments_term, cfg_for("crash", calm_at_ms=20_000),
     40, 3000),
]
