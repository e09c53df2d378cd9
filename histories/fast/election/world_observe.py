"""What the election twin covers and observes, as the reference's fuzz probe sees it:
world.observe (reference_impl/election/world.py) of each member as a digest
(histories.fast.core.sketch), the distinct observable states of a history, and the coverage
labels (spark_harness.coverage: roles, message and observation kinds, the protocol's
branches `world.BRANCHES`).
"""

from __future__ import annotations

from numba import njit

from histories.fast.core import coverage, sketch, table
from histories.fast.core.layout import (
    C_SEE_STATES,
    CV_CUT_CHANGED,
    CV_NODE_DIGESTS,
    CV_TOUCHED,
    LB_KEYS,
    LB_NODE_IDS,
    LB_PARSE_RESULTS,
    LB_ROLE_NAMES,
    LB_ROLES,
    LB_VOTE_RESULTS,
    ROLE_DOWN,
    W_STOP,
)
from histories.fast.election import layout
from histories.fast.election.layout import (
    C_PEERS,
    CURR_TERM,
    CURR_VOTE_FOR,
    HEART_BEAT_REQUEST,
    HEART_BEAT_RESPONSE,
    LEADER_ID,
    LEADERSHIP_TRANSFER_REQUEST,
    LEADERSHIP_TRANSFER_RESPONSE,
    LEDGER_END_INDEX,
    LEDGER_END_TERM,
    OBS_FOLLOWER_TIMEOUT,
    OBS_LEADER_STEP_DOWN,
    OBS_ROLE_CHANGED,
    OBS_TRANSFER_DONE,
    OBS_TRANSFER_STARTED,
    OBS_VOTE_GRANTED,
    OBS_VOTE_PARSED,
    PARSE_RESULTS,
    ROLE,
    ROLES,
    VOTE_REQUEST,
    VOTE_RESPONSE,
    VOTE_RESULTS,
)

ROLE_FIRST = ROLE_DOWN + 1  # a member's role R is coverage role ROLE_FIRST + R
MESSAGES = {VOTE_REQUEST: "VoteRequest", VOTE_RESPONSE: "VoteResponse", HEART_BEAT_REQUEST: "HeartBeatRequest",
            HEART_BEAT_RESPONSE: "HeartBeatResponse", LEADERSHIP_TRANSFER_REQUEST: "LeadershipTransferRequest",
            LEADERSHIP_TRANSFER_RESPONSE: "LeadershipTransferResponse"}
OBSERVATIONS = {OBS_ROLE_CHANGED: "RoleChanged", OBS_VOTE_GRANTED: "VoteGranted", OBS_VOTE_PARSED: "VoteParsed",
                OBS_FOLLOWER_TIMEOUT: "FollowerTimeout", OBS_LEADER_STEP_DOWN: "LeaderStepDown",
                OBS_TRANSFER_DONE: "TransferDone", OBS_TRANSFER_STARTED: "TransferStarted"}
# world.observe's keys, in its order
KEYS = ("alive", "role", "term", "voted_for", "leader", "ledger_end_index", "ledger_end_term", "committed_index",
        "log_terms")


_SPECS: dict = {}


def spec(cfg) -> coverage.Spec:
    """The election twin's coverage spec for `cfg` (its node ids)."""
    ids = tuple(cfg.ids)
    hit = _SPECS.get(ids)
    if hit is None:
        branches, table_ = coverage.labels("election", ids, {LB_VOTE_RESULTS: VOTE_RESULTS,
                                                             LB_PARSE_RESULTS: PARSE_RESULTS, LB_ROLES: ROLES},
                                           tuple(r.value for r in ROLES), KEYS)
        hit = _SPECS[ids] = coverage.Spec(roles=tuple(r.value for r in ROLES), actions=(), messages=MESSAGES,
                                          observations=OBSERVATIONS, twin_event=None, branches=branches,
                                          labels=table_)
    return hit


# --- the kernel's side ---


@njit(cache=True, inline='always')
def role(S, node):
    """spark_harness.coverage.role_of: the member's role, or down."""
    if table.alive(S)[node] == 0:
        return ROLE_DOWN
    return ROLE_FIRST + layout.members(S)[node, ROLE]


@njit(cache=True, inline='always')
def node_or_none(S, node):
    """A node id's digest, None's for -1."""
    return table.labels(S)[LB_NODE_IDS + node] if node >= 0 else sketch.NONE


@njit(cache=True)
def node_digest(S, i):
    """core.sketch.digest of world.observe(member i)."""
    members = layout.members(S)
    keys = table.labels(S)
    alive = table.alive(S)[i] == 1
    h = sketch.DICT
    h = sketch.fold(sketch.fold(h, keys[LB_KEYS + 0]), sketch.of_bool(alive))
    role_digest = keys[LB_ROLE_NAMES + members[i, ROLE]] if alive else sketch.NONE
    h = sketch.fold(sketch.fold(h, keys[LB_KEYS + 1]), role_digest)
    h = sketch.fold(sketch.fold(h, keys[LB_KEYS + 2]), sketch.of_int(members[i, CURR_TERM]))
    h = sketch.fold(sketch.fold(h, keys[LB_KEYS + 3]), node_or_none(S, members[i, CURR_VOTE_FOR]))
    leader = node_or_none(S, members[i, LEADER_ID]) if alive else sketch.NONE
    h = sketch.fold(sketch.fold(h, keys[LB_KEYS + 4]), leader)
    h = sketch.fold(sketch.fold(h, keys[LB_KEYS + 5]), sketch.of_int(members[i, LEDGER_END_INDEX]))
    h = sketch.fold(sketch.fold(h, keys[LB_KEYS + 6]), sketch.of_int(members[i, LEDGER_END_TERM]))
    h = sketch.fold(sketch.fold(h, keys[LB_KEYS + 7]), sketch.of_int(-1))
    return sketch.fold(sketch.fold(h, keys[LB_KEYS + 8]), sketch.of_list(0, 0))


@njit(cache=True, inline='always')
def unchanged(S, i):
    """Whether member i's observed fields are what they were at its last digest (and note them)."""
    members = layout.members(S)
    alive = coverage.same(S, i, 0, table.alive(S)[i])
    role = coverage.same(S, i, 1, members[i, ROLE])
    term = coverage.same(S, i, 2, members[i, CURR_TERM])
    vote = coverage.same(S, i, 3, members[i, CURR_VOTE_FOR])
    leader = coverage.same(S, i, 4, members[i, LEADER_ID])
    index = coverage.same(S, i, 5, members[i, LEDGER_END_INDEX])
    ledger_term = coverage.same(S, i, 6, members[i, LEDGER_END_TERM])
    return alive and role and term and vote and leader and index and ledger_term


@njit(cache=True)
def see_state(S, every_node):
    """After a step (or at the start, `every_node`): the nodes it touched are observed again; if
    one's digest or the cut changed, the world's fingerprint joins the distinct states."""
    cover = table.coverage(S)
    if table.config(S)[C_SEE_STATES] == 0:
        return True
    n = table.config(S)[C_PEERS]
    moved = cover[CV_CUT_CHANGED] == 1 or every_node
    touched = cover[CV_TOUCHED]
    for i in range(n):
        if every_node or (touched >> i) & 1:
            if unchanged(S, i) and not every_node:
                continue
            d = node_digest(S, i)
            if d != cover[CV_NODE_DIGESTS + i]:
                cover[CV_NODE_DIGESTS + i] = d
                moved = True
    cover[CV_TOUCHED] = 0
    cover[CV_CUT_CHANGED] = 0
    if moved:
        coverage.add_state(S, coverage.world_fingerprint(S, n))
    return table.world(S)[W_STOP] >= 0
