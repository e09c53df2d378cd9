"""Test-only broken members: the twin's side of histories/mutants/election.py
(and the cross-check gate's own), so that unexpected verdicts of every property are
cross-checked too.

None of this is in a production handler. The server (histories.fast.election.server) calls
a mutant at the seam where the reference's monkeypatched function would run, under
`if mutant is not None`; the production kernel is compiled with `mutant=None`, and Numba
prunes those branches at compile time (a branch on an argument typed None), so its machine
code holds none of this. A test passes the mutant's number (`prepare(cfg, mutant=name)`),
which compiles a second kernel with the seams in.

Each mutant is written as the reference mutant acts: on the member's state around the
production function it replaces (the reference's replacement calls the original), at the
point where the reference's seam is. The cross-check gate runs each in both worlds.
"""

from __future__ import annotations

from numba import njit

from histories.fast.core import outputs
from histories.fast.core.table import config as config_of
from histories.fast.election import layout
from histories.fast.election.layout import (
    C_PEERS,
    CANDIDATE,
    CURR_TERM,
    CURR_VOTE_FOR,
    FOLLOWER,
    INCONSISTENT_LEADER,
    LAST_LEADER_HEART_BEAT_TIME,
    LAST_PARSE_RESULT,
    LAST_SUCC_HEART_BEAT_TIME,
    LEADER_ID,
    LEDGER_END_TERM,
    NEED_INCREASE_TERM_IMMEDIATELY,
    NEXT_TIME_TO_REQUEST_VOTE,
    OBS_ROLE_CHANGED,
    ROLE,
    ROUND_ACCEPTED_NUM,
    ROUND_ALREADY_HAS_LEADER,
    ROUND_BIGGER_LEDGER_NUM,
    ROUND_KNOWN_MAX_TERM_IN_GROUP,
    ROUND_TERM,
    ROUND_VALID_NUM,
    SUCCESS,
    WAIT_TO_REVOTE,
    WAIT_TO_VOTE_NEXT,
)

# histories/mutants/election.py's mutants, by the name of the function each
# replaces, and property_tests/test_fast_election.py's own (RPL-1/2, LIVE-1/3)
VOTE_IGNORING_CURR_VOTE_FOR = 1  # handle_vote
PARSE_OWN_VOTE_AS_QUORUM = 2  # finish_vote_round
HEARTBEAT_NOT_REFRESHING_TIMER = 3  # handle_heart_beat
CRASH_LOSING_TERM_FILE = 4  # crash
CRASH_LOSING_VOTE = 5  # crash
HEARTBEAT_FOLLOWING_HIGHER_TERM_AT_OLD_TERM = 6  # handle_heart_beat
LEADER_LEASE_NEVER_EXPIRES = 7  # finish_heart_beat_round
CANDIDATE_NEVER_INCREMENTS_TERM = 8  # maintain_as_candidate
HEARTBEAT_ACCEPTING_LOWER_TERM = 9  # handle_heart_beat
LAST_NODE_NEVER_FOLLOWS = 10  # handle_heart_beat
MUTANTS = {"vote_ignoring_curr_vote_for": VOTE_IGNORING_CURR_VOTE_FOR,
           "parse_own_vote_as_quorum": PARSE_OWN_VOTE_AS_QUORUM,
           "heartbeat_not_refreshing_timer": HEARTBEAT_NOT_REFRESHING_TIMER,
           "crash_losing_term_file": CRASH_LOSING_TERM_FILE, "crash_losing_vote": CRASH_LOSING_VOTE,
           "heartbeat_following_higher_term_at_old_term": HEARTBEAT_FOLLOWING_HIGHER_TERM_AT_OLD_TERM,
           "leader_lease_never_expires": LEADER_LEASE_NEVER_EXPIRES,
           "candidate_never_increments_term": CANDIDATE_NEVER_INCREMENTS_TERM,
           "heartbeat_accepting_lower_term": HEARTBEAT_ACCEPTING_LOWER_TERM,
           "last_node_never_follows": LAST_NODE_NEVER_FOLLOWS}


@njit(cache=True, inline='always')
def _grants_without_vote(S, i, term, self_vote, taking, ledger_end_index, ledger_end_term):
    """Whether handle_vote, asked again with the member's vote forgotten, would grant: past the
    checks before the vote's, only the ledger-term and taking-leadership ones are left."""
    members = layout.members(S)
    return (not term < members[i, LEDGER_END_TERM]
            and not (not self_vote and taking and ledger_end_term == members[i, LEDGER_END_TERM]
                     and members[i, layout.LEDGER_END_INDEX] >= ledger_end_index))


@njit(cache=True)
def before_handle_vote(S, i, mutant, candidate, term, ledger_end_index, ledger_end_term, self_vote, taking):
    """vote_ignoring_curr_vote_for: handleVote asked again with curr_vote_for None where the
    member already voted for another in this term; the member forgets its vote when that
    would grant (handle_vote then grants), else it answers as handleVote does. `taking`:
    leader_elector.is_taking_leadership."""
    if mutant != VOTE_IGNORING_CURR_VOTE_FOR:
        return
    members = layout.members(S)
    vote = members[i, CURR_VOTE_FOR]
    if (0 <= candidate < config_of(S)[C_PEERS] and (self_vote or candidate != i)
            and members[i, CURR_TERM] == term and vote >= 0 and vote != candidate
            and not (ledger_end_term < members[i, LEDGER_END_TERM])
            and not (ledger_end_term == members[i, LEDGER_END_TERM]
                     and ledger_end_index < members[i, layout.LEDGER_END_INDEX])
            and _grants_without_vote(S, i, term, self_vote, taking, ledger_end_index, ledger_end_term)):
        members[i, CURR_VOTE_FOR] = -1


@njit(cache=True)
def handle_heart_beat(S, i, mutant, leader, term, now):
    """The heartbeat mutants that answer instead of handleHeartBeat: (answered, code, reply term)."""
    members = layout.members(S)
    peers = config_of(S)[C_PEERS]
    peer = 0 <= leader < peers and leader != i
    if mutant == HEARTBEAT_FOLLOWING_HIGHER_TERM_AT_OLD_TERM and peer and term > members[i, CURR_TERM]:
        members[i, ROLE] = FOLLOWER
        members[i, LEADER_ID] = leader
        members[i, LAST_LEADER_HEART_BEAT_TIME] = now
        outputs.push_observation(S, OBS_ROLE_CHANGED, members[i, CURR_TERM], FOLLOWER, leader)
        return True, SUCCESS, -1
    if mutant == HEARTBEAT_ACCEPTING_LOWER_TERM and peer and term < members[i, CURR_TERM]:
        return True, SUCCESS, -1
    if (mutant == LAST_NODE_NEVER_FOLLOWS and i == peers - 1 and peer and term == members[i, CURR_TERM]
            and members[i, LEADER_ID] < 0):
        return True, INCONSISTENT_LEADER, -1
    return False, 0, 0


@njit(cache=True, inline='always')
def keeps_heart_beat_time(S, i, mutant):
    """heartbeat_not_refreshing_timer: a follower's last heartbeat time before handleHeartBeat,
    to put back if it is still a follower after it (-2: not this mutant, or not a follower)."""
    members = layout.members(S)
    if mutant == HEARTBEAT_NOT_REFRESHING_TIMER and members[i, ROLE] == FOLLOWER:
        return members[i, LAST_LEADER_HEART_BEAT_TIME]
    return -2


@njit(cache=True, inline='always')
def after_heart_beat(S, i, kept):
    members = layout.members(S)
    if kept != -2 and members[i, ROLE] == FOLLOWER:
        members[i, LAST_LEADER_HEART_BEAT_TIME] = kept


@njit(cache=True, inline='always')
def before_finish_vote_round(S, i, mutant):
    """parse_own_vote_as_quorum: a round the candidate's own ACCEPT is in counts as a quorum."""
    members = layout.members(S)
    if (mutant == PARSE_OWN_VOTE_AS_QUORUM and members[i, ROUND_KNOWN_MAX_TERM_IN_GROUP] <= members[i, ROUND_TERM]
            and members[i, ROUND_ACCEPTED_NUM] >= 1):
        peers = config_of(S)[C_PEERS]
        members[i, ROUND_ACCEPTED_NUM] = peers
        members[i, ROUND_VALID_NUM] = peers
        members[i, ROUND_ALREADY_HAS_LEADER] = 0
        members[i, ROUND_BIGGER_LEDGER_NUM] = 0


@njit(cache=True, inline='always')
def before_finish_heart_beat_round(S, i, mutant, now):
    """leader_lease_never_expires: the round is parsed as if the last heartbeat had just succeeded."""
    if mutant == LEADER_LEASE_NEVER_EXPIRES:
        layout.members(S)[i, LAST_SUCC_HEART_BEAT_TIME] = now


@njit(cache=True)
def before_maintain_state(S, i, mutant, now, taking):
    """The mutants of what the state maintainer's candidate does: candidate_never_increments_term
    treats WAIT_TO_VOTE_NEXT as WAIT_TO_REVOTE; vote_ignoring_curr_vote_for reaches the
    candidate's own vote (handle_vote with self_vote), which it casts when its timer is due
    and it need not increase its term first (then it votes in its current term)."""
    members = layout.members(S)
    if members[i, ROLE] != CANDIDATE:
        return
    if mutant == CANDIDATE_NEVER_INCREMENTS_TERM and members[i, LAST_PARSE_RESULT] == WAIT_TO_VOTE_NEXT:
        members[i, LAST_PARSE_RESULT] = WAIT_TO_REVOTE
    if (mutant == VOTE_IGNORING_CURR_VOTE_FOR and now >= members[i, NEXT_TIME_TO_REQUEST_VOTE]
            and members[i, NEED_INCREASE_TERM_IMMEDIATELY] == 0 and members[i, LAST_PARSE_RESULT] != WAIT_TO_VOTE_NEXT):
        before_handle_vote(S, i, mutant, i, members[i, CURR_TERM], members[i, layout.LEDGER_END_INDEX],
                           members[i, LEDGER_END_TERM], True, taking)


@njit(cache=True, inline='always')
def crash_loses_term_file(mutant, lose_term_file):
    """crash_losing_term_file: every crash loses the currterm file."""
    return lose_term_file or mutant == CRASH_LOSING_TERM_FILE


@njit(cache=True, inline='always')
def after_crash(S, i, mutant):
    """crash_losing_vote: the term file keeps currTerm but not currVoteFor."""
    if mutant == CRASH_LOSING_VOTE:
        layout.members(S)[i, CURR_VOTE_FOR] = -1
