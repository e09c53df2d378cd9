"""The election properties: mirrors spec/election.py.

At most one leader per term, the liveness bounds and the others, with the same expected causes as the
reference; `record` writes a violation row into the state table."""

from __future__ import annotations

from numba import njit

from histories.fast.core import table as core_table
from histories.fast.core.layout import (
    OVERFLOW_TERMS,
    W_CALM,
    W_CALM_AT,
    W_STOP,
)
from histories.fast.election import ghost, layout, member_state
from histories.fast.election.layout import (
    C_ELE_L_BOUND_MS,
    C_ENABLE_LEADER_ELECTOR,
    C_HB2_BOUND_MS,
    C_LIVE1_BOUND_MS,
    C_LIVE2_BOUND_MS,
    C_LIVE3_BOUND_MS,
    C_PEERS,
    C_TERMS,
    CURR_TERM,
    FOLLOWER,
    LEADER,
    LEADER_ID,
    P_ELE1,
    P_ELE2,
    P_ELE3,
    P_ELE4,
    P_ELE5,
    P_ELEL,
    P_HB1,
    P_HB2,
    P_LIVE1,
    P_LIVE2,
    P_LIVE3,
    P_RPL1,
    P_RPL2,
    ROLE,
    SM_FIRST_NEW_LEADER_TERM,
    SM_HB1,
    SM_LAST_NEW_LEADER_TERM,
    SM_OS_CRASHED,
    SM_REPLIES,
    V_CAUSE,
    V_CAUSE_CACHED,
    V_CAUSE_VERSION,
    V_NOTES,
    V_STEP,
    V_TIME,
    W_AGREED,
    W_AGREED_SINCE,
    W_FIRST_STRAGGLER,
    W_FIRST_TRANSFER,
    W_LEADER_LOSSES,
    W_LEADERLESS_MS,
    W_LEADERLESS_SINCE,
    W_NOTES,
    W_SETTLED,
    W_TERMS_WITH_TWO_LEADERS,
    W_VOTERS_WITH_TWO_CANDIDATES,
)
from histories.fast.election.replies import RPL_1, RPL_2


@njit(cache=True)
def ele4_term(S, t):
    """spec.election.ele4 restricted to term t."""
    config = core_table.config(S)
    elected = layout.elected(S)
    grants = layout.grants(S)
    n = config[C_PEERS]
    leaders = elected[t]
    for leader in range(n):
        if leaders >> leader & 1:
            voters = 0
            for v in range(n):
                if grants[t, v] >> leader & 1:
                    voters += 1
            if not member_state.is_quorum(S, voters):
                return False
    return True


@njit(cache=True, inline='always')
def record(S, p, step, now, cause):
    verdicts = core_table.verdicts(S)
    verdicts[p, V_STEP] = step
    verdicts[p, V_TIME] = now
    verdicts[p, V_CAUSE] = cause


@njit(cache=True)
def record_expected(S, p, step, now, event_cause):
    """Monitor._record for a property with expected_when: keep the first violation unless a
    later one has no known cause while the recorded one had one. ELE-1/2's evidence changes
    only with a note (W_NOTES), so it is computed once per ghost version."""
    world = core_table.world(S)
    verdicts = core_table.verdicts(S)
    if verdicts[p, V_STEP] >= 0 and verdicts[p, V_CAUSE] == 0:
        return
    if p == P_ELE3:
        cause = event_cause
    else:
        if verdicts[p, V_CAUSE_VERSION] == world[W_NOTES]:
            cause = verdicts[p, V_CAUSE_CACHED]
        else:
            if p == P_ELE1:
                cause = 1 if ghost.ele1_expected(S) else 0
            else:
                cause = 1 if ghost.ele2_expected(S) else 0
            verdicts[p, V_CAUSE_VERSION] = world[W_NOTES]
            verdicts[p, V_CAUSE_CACHED] = cause
    if verdicts[p, V_STEP] >= 0 and cause != 0:
        return
    record(S, p, step, now, cause)
    verdicts[p, V_NOTES] = world[W_NOTES]


@njit(cache=True)
def check_liveness(S, step, now):
    """ELE-L, LIVE-1, LIVE-2, LIVE-3 (spec/election.py: ele_l, live1, live2, live3), bounded state
    properties with no expected cause: the first violation of each is kept. LIVE-2 and LIVE-3
    hold unless the earliest open transfer / straggler is past its bound, so they read the
    one number the ghost keeps (a loop over the nodes at every step cost 15% of the kernel)."""
    config = core_table.config(S)
    world = core_table.world(S)
    verdicts = core_table.verdicts(S)
    first = world[W_FIRST_TRANSFER]
    if first >= 0 and now - first > config[C_LIVE2_BOUND_MS] and verdicts[P_LIVE2, V_STEP] < 0:
        record(S, P_LIVE2, step, now, 0)
    if world[W_CALM] == 0:
        return
    calm_at = world[W_CALM_AT]
    if config[C_ENABLE_LEADER_ELECTOR] == 1:
        if verdicts[P_ELEL, V_STEP] < 0 and world[W_SETTLED] < 0 and now - calm_at > config[C_ELE_L_BOUND_MS]:
            record(S, P_ELEL, step, now, 0)
        if (verdicts[P_LIVE1, V_STEP] < 0 and world[W_AGREED] == 0
                and now - max(world[W_AGREED_SINCE], calm_at) > config[C_LIVE1_BOUND_MS]):
            record(S, P_LIVE1, step, now, 0)
    first = world[W_FIRST_STRAGGLER]
    if first >= 0 and now - max(first, calm_at) > config[C_LIVE3_BOUND_MS] and verdicts[P_LIVE3, V_STEP] < 0:
        record(S, P_LIVE3, step, now, 0)


@njit(cache=True)
def check_ele5(S, step, now):
    """ELE-5: a follower of term t records a leader that won t (False: a term beyond the
    ghost's capacity, the kernel stops)."""
    config = core_table.config(S)
    members = layout.members(S)
    alive = core_table.alive(S)
    elected = layout.elected(S)
    for j in range(config[C_PEERS]):
        if alive[j] == 1 and members[j, ROLE] == FOLLOWER:
            leader = members[j, LEADER_ID]
            if members[j, CURR_TERM] >= config[C_TERMS]:
                return False
            if leader < 0 or (elected[members[j, CURR_TERM]] >> leader) & 1 == 0:
                record(S, P_ELE5, step, now, 0)
                break
    return True


@njit(cache=True)
def check(S, step, now):
    """spec.properties.Monitor.check after a step: the state properties, then the step ones,
    each in the catalogue's order, with the Monitor's rules (the first violation of each is
    kept; an expected one gives way to a later unexpected one). False when a term went past
    the ghost tables' capacity (the kernel then stops)."""
    config = core_table.config(S)
    world = core_table.world(S)
    verdicts = core_table.verdicts(S)
    members = layout.members(S)
    alive = core_table.alive(S)
    marks = layout.step_marks(S)
    previous = layout.previous_terms(S)
    cut_since = layout.cut_since(S)
    if world[W_TERMS_WITH_TWO_LEADERS] > 0:
        record_expected(S, P_ELE1, step, now, 0)
    if world[W_VOTERS_WITH_TWO_CANDIDATES] > 0:
        record_expected(S, P_ELE2, step, now, 0)
    if verdicts[P_ELE4, V_STEP] < 0 and marks[SM_FIRST_NEW_LEADER_TERM] >= 0:
        for term in range(marks[SM_FIRST_NEW_LEADER_TERM], marks[SM_LAST_NEW_LEADER_TERM] + 1):
            if not ele4_term(S, term):
                record(S, P_ELE4, step, now, 0)
                break
    if verdicts[P_ELE5, V_STEP] < 0 and not check_ele5(S, step, now):
        world[W_STOP] = OVERFLOW_TERMS
        return False
    if verdicts[P_HB2, V_STEP] < 0:
        for j in range(config[C_PEERS]):
            if (alive[j] == 1 and members[j, ROLE] == LEADER and cut_since[j] >= 0
                    and now - cut_since[j] > config[C_HB2_BOUND_MS]):
                record(S, P_HB2, step, now, 0)
                break
    check_liveness(S, step, now)
    decreased = False
    for j in range(config[C_PEERS]):
        if members[j, CURR_TERM] < previous[j]:
            decreased = True
        previous[j] = members[j, CURR_TERM]
    if decreased:
        crashed = marks[SM_OS_CRASHED]
        record_expected(S, P_ELE3, step, now, (1 << crashed) if crashed >= 0 else 0)
    if marks[SM_HB1] == 1 and verdicts[P_HB1, V_STEP] < 0:
        record(S, P_HB1, step, now, 0)
    if marks[SM_REPLIES] >> RPL_1 & 1 and verdicts[P_RPL1, V_STEP] < 0:
        record(S, P_RPL1, step, now, 0)
    if marks[SM_REPLIES] >> RPL_2 & 1 and verdicts[P_RPL2, V_STEP] < 0:
        record(S, P_RPL2, step, now, 0)
    return True


@njit(cache=True, inline='always')
def meter(S, now):
    """spec.election.meter (LeaderlessMeter) after a step that made observations: how long the
    cluster went without a settled leader, and how often it lost one."""
    world = core_table.world(S)
    if ghost.settled(S):
        if world[W_LEADERLESS_SINCE] >= 0:
            world[W_LEADERLESS_MS] += now - world[W_LEADERLESS_SINCE]
            world[W_LEADERLESS_SINCE] = -1
    elif world[W_LEADERLESS_SINCE] < 0:
        world[W_LEADERLESS_SINCE] = now
        world[W_LEADER_LOSSES] += 1
