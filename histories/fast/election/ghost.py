"""The election ghost: the history of votes, leaders and crashes the monitor reasons with.

Mirrors reference_impl/election/ghost.py and ElectionGhost in reference_impl/election/world.py: it is never seen by a server; it tells a violated
property apart from an expected consequence of an injected fault (a lost term file, a revote)."""

from __future__ import annotations

from numba import njit

from histories.fast.core import table as core_table
from histories.fast.core.layout import (
    OVERFLOW_TERMS,
    W_CALM,
    W_LAST_FAULT,
    W_NOW,
    W_STOP,
)
from histories.fast.election import layout, member_state
from histories.fast.election.layout import (
    C_HB1_QUIET_MS,
    C_PEERS,
    C_TERMS,
    CANDIDATE,
    CHAIN_HEAD,
    CHAIN_TAIL,
    CURR_TERM,
    FOLLOWER,
    LEADER,
    LEADER_ID,
    N_AT,
    N_CANDIDATE,
    N_KIND,
    N_NEXT,
    N_NODE,
    N_TERM,
    NN_LOST_HEAD,
    NN_LOST_TAIL,
    NN_STRAGGLER_SINCE,
    NN_TRANSFER_SINCE,
    NOTE_LED,
    NOTE_LOST,
    NOTE_VOTE,
    OBS_FOLLOWER_TIMEOUT,
    OBS_ROLE_CHANGED,
    OBS_TRANSFER_DONE,
    OBS_TRANSFER_STARTED,
    OBS_VOTE_GRANTED,
    OVERFLOW_NOTES,
    P_HB1,
    ROLE,
    SM_FIRST_NEW_LEADER_TERM,
    SM_HB1,
    SM_LAST_NEW_LEADER_TERM,
    TRANSFEREE,
    V_STEP,
    W_AGREED,
    W_AGREED_SINCE,
    W_FIRST_STRAGGLER,
    W_FIRST_TRANSFER,
    W_NOTES,
    W_SETTLED,
    W_SETTLED_LEADER,
    W_SETTLED_LEADER_TERM,
    W_TERMS_WITH_TWO_LEADERS,
    W_TOP_TERM,
    W_VOTERS_WITH_TWO_CANDIDATES,
)


@njit(cache=True)
def add_note(S, kind, node, term, candidate, now):
    """One row of `nt` (seq = its index); -1 if the notes' capacity ran out."""
    world = core_table.world(S)
    notes = layout.notes(S)
    k = world[W_NOTES]
    if k >= notes.shape[0]:
        world[W_STOP] = OVERFLOW_NOTES
        return -1
    notes[k, N_KIND] = kind
    notes[k, N_NODE] = node
    notes[k, N_TERM] = term
    notes[k, N_CANDIDATE] = candidate
    notes[k, N_AT] = now
    notes[k, N_NEXT] = -1
    world[W_NOTES] = k + 1
    return k


@njit(cache=True)
def note_vote(S, voter, term, candidate, now):
    """ghost.note of a VoteGranted: appended to the (voter, term) chain."""
    notes = layout.notes(S)
    vote_chains = layout.vote_chains(S)
    k = add_note(S, NOTE_VOTE, voter, term, candidate, now)
    if k < 0:
        return
    last = vote_chains[term, voter, CHAIN_TAIL]
    if last < 0:
        vote_chains[term, voter, CHAIN_HEAD] = k
    else:
        notes[last, N_NEXT] = k
    vote_chains[term, voter, CHAIN_TAIL] = k


@njit(cache=True)
def note_led(S, leader, term, now):
    """ghost.note of a RoleChanged to LEADER."""
    add_note(S, NOTE_LED, leader, term, -1, now)


@njit(cache=True)
def note_crash(S, node, term_before, now):
    """ghost.note_crash of an OS crash or a disk loss (a process crash keeps the term file)."""
    notes = layout.notes(S)
    node_notes = layout.node_notes(S)
    k = add_note(S, NOTE_LOST, node, term_before, -1, now)
    if k < 0:
        return
    last = node_notes[node, NN_LOST_TAIL]
    if last < 0:
        node_notes[node, NN_LOST_HEAD] = k
    else:
        notes[last, N_NEXT] = k
    node_notes[node, NN_LOST_TAIL] = k


@njit(cache=True, inline='always')
def lost_between(S, node, after_seq, until_seq):
    """ghost.lost_between: the first lost note of `node` strictly between the two seqs (-1: none)."""
    notes = layout.notes(S)
    node_notes = layout.node_notes(S)
    k = node_notes[node, NN_LOST_HEAD]
    while k >= 0:
        if after_seq < k < until_seq:
            return k
        k = notes[k, N_NEXT]
    return -1


@njit(cache=True)
def revote_cause(S, voter, term, a, b):
    """spec.election.revote_cause, as a yes/no: an ACCEPT of a or b, a lost term file, then
    an ACCEPT of the other."""
    notes = layout.notes(S)
    vote_chains = layout.vote_chains(S)
    k = vote_chains[term, voter, CHAIN_HEAD]
    while k >= 0:
        context_1 = notes[k, N_CANDIDATE]
        if context_1 == a or context_1 == b:
            k2 = notes[k, N_NEXT]
            while k2 >= 0:
                context_2 = notes[k2, N_CANDIDATE]
                if (context_2 == a or context_2 == b) and context_2 != context_1 and lost_between(S, voter, k, k2) >= 0:
                    return True
                k2 = notes[k2, N_NEXT]
        k = notes[k, N_NEXT]
    return False


@njit(cache=True)
def two_leaders_cause(S, term):
    """spec.election.two_leaders_cause, as a yes/no: every pair of term's leaders has a voter
    whose second ACCEPT came after it lost its term file."""
    config = core_table.config(S)
    elected = layout.elected(S)
    n = config[C_PEERS]
    leaders = elected[term]
    for a in range(n):
        if leaders >> a & 1 == 0:
            continue
        for b in range(a + 1, n):
            if leaders >> b & 1 == 0:
                continue
            found = False
            for v in range(n):
                if revote_cause(S, v, term, a, b):
                    found = True
                    break
            if not found:
                return False
    return True


@njit(cache=True)
def ele1_expected(S):
    """spec.election.ele1_expected, as a yes/no: every term with two leaders has the evidence."""
    world = core_table.world(S)
    elected = layout.elected(S)
    any_term = False
    for t in range(world[W_TOP_TERM] + 1):
        if elected[t] & (elected[t] - 1):  # two leaders or more
            any_term = True
            if not two_leaders_cause(S, t):
                return False
    return any_term


@njit(cache=True)
def ele2_expected(S):
    """spec.election.ele2_expected, as a yes/no: each change of candidate in a voter's ACCEPTs
    of one term followed a loss of its term file."""
    config = core_table.config(S)
    world = core_table.world(S)
    notes = layout.notes(S)
    vote_chains = layout.vote_chains(S)
    grants = layout.grants(S)
    n = config[C_PEERS]
    found = False
    for t in range(world[W_TOP_TERM] + 1):
        for v in range(n):
            if grants[t, v] & (grants[t, v] - 1) == 0:
                continue
            k = vote_chains[t, v, CHAIN_HEAD]
            while k >= 0:
                k2 = notes[k, N_NEXT]
                if k2 < 0:
                    break
                context_1 = notes[k, N_CANDIDATE]
                context_2 = notes[k2, N_CANDIDATE]
                if context_1 != context_2:
                    if not revote_cause(S, v, t, context_1, context_2):
                        return False
                    found = True
                k = k2
            if not found:
                return False  # the grants were not seen in order: no evidence
    return found


@njit(cache=True, inline='always')
def follows(S, f, leader):
    """A FOLLOWER of `leader` in the leader's term."""
    members = layout.members(S)
    return members[f, ROLE] == FOLLOWER and members[f, LEADER_ID] == leader and members[f, CURR_TERM] == members[leader, CURR_TERM]


@njit(cache=True)
def followed(S):
    """ghost.followed: the first live LEADER a quorum of live members follows in its term (-1: none)."""
    config = core_table.config(S)
    members = layout.members(S)
    alive = core_table.alive(S)
    n = config[C_PEERS]
    for i in range(n):
        if alive[i] == 1 and members[i, ROLE] == LEADER:
            c = 1
            for f in range(n):
                if alive[f] == 1 and follows(S, f, i):
                    c += 1
            if member_state.is_quorum(S, c):
                return i
    return -1


@njit(cache=True)
def all_follow(S):
    """ghost.all_follow: exactly one live LEADER, every other live member its FOLLOWER in its term."""
    config = core_table.config(S)
    members = layout.members(S)
    alive = core_table.alive(S)
    n = config[C_PEERS]
    leader = -1
    for i in range(n):
        if alive[i] == 1 and members[i, ROLE] == LEADER:
            if leader >= 0:
                return False
            leader = i
    if leader < 0:
        return False
    for i in range(n):
        if alive[i] == 1 and i != leader and not follows(S, i, leader):
            return False
    return True


@njit(cache=True)
def follow_note(S, now):
    """ghost.follow_note: agreed and since when; the leadership a quorum follows and the live
    members outside it, with since when (a new leadership starts their clocks again)."""
    config = core_table.config(S)
    world = core_table.world(S)
    members = layout.members(S)
    alive = core_table.alive(S)
    node_notes = layout.node_notes(S)
    n = config[C_PEERS]
    agreed = 1 if all_follow(S) else 0
    if agreed != world[W_AGREED]:
        world[W_AGREED] = agreed
        world[W_AGREED_SINCE] = now
    lead = followed(S)
    leader_term = members[lead, CURR_TERM] if lead >= 0 else 0
    same = lead == world[W_SETTLED_LEADER] and leader_term == world[W_SETTLED_LEADER_TERM]
    first = -1
    for j in range(n):
        outside = lead >= 0 and alive[j] == 1 and j != lead and not (
            members[j, ROLE] == FOLLOWER and members[j, LEADER_ID] == lead and members[j, CURR_TERM] == leader_term)
        if not outside:
            node_notes[j, NN_STRAGGLER_SINCE] = -1
            continue
        if not same or node_notes[j, NN_STRAGGLER_SINCE] < 0:
            node_notes[j, NN_STRAGGLER_SINCE] = now
        if first < 0 or node_notes[j, NN_STRAGGLER_SINCE] < first:
            first = node_notes[j, NN_STRAGGLER_SINCE]
    world[W_SETTLED_LEADER] = lead
    world[W_SETTLED_LEADER_TERM] = leader_term
    world[W_FIRST_STRAGGLER] = first


@njit(cache=True)
def transfer_note(S, i, now):
    """ghost.transfer_note: a leader mid-transfer (its transferee set) since when."""
    members = layout.members(S)
    node_notes = layout.node_notes(S)
    if members[i, ROLE] == LEADER and members[i, TRANSFEREE] >= 0:
        if node_notes[i, NN_TRANSFER_SINCE] < 0:
            node_notes[i, NN_TRANSFER_SINCE] = now
    else:
        node_notes[i, NN_TRANSFER_SINCE] = -1
    transfers_changed(S)


@njit(cache=True)
def transfers_changed(S):
    """The earliest transfer still open (W_FIRST_TRANSFER), after ghost.transfers changed."""
    config = core_table.config(S)
    world = core_table.world(S)
    node_notes = layout.node_notes(S)
    first = -1
    for j in range(config[C_PEERS]):
        t = node_notes[j, NN_TRANSFER_SINCE]
        if t >= 0 and (first < 0 or t < first):
            first = t
    world[W_FIRST_TRANSFER] = first


@njit(cache=True, inline='always')
def popcount(x):
    c = 0
    while x:
        x &= x - 1
        c += 1
    return c


@njit(cache=True)
def settled(S):
    """election world.settled"""
    config = core_table.config(S)
    members = layout.members(S)
    alive = core_table.alive(S)
    n = config[C_PEERS]
    for i in range(n):
        if alive[i] == 1 and members[i, ROLE] == LEADER:
            followers = 0
            for f in range(n):
                if (alive[f] == 1 and members[f, ROLE] == FOLLOWER and members[f, LEADER_ID] == i
                        and members[f, CURR_TERM] == members[i, CURR_TERM]):
                    followers += 1
            if member_state.is_quorum(S, followers + 1):
                return True
    return False


@njit(cache=True)
def update_cut_since(S, now):
    """election world.cut_since (the ghost seeing a fault or Calm)."""
    config = core_table.config(S)
    alive = core_table.alive(S)
    cut = core_table.cut(S)
    cut_since = layout.cut_since(S)
    n = config[C_PEERS]
    for i in range(n):
        reach = False
        if alive[i] == 1:
            peers = 0
            for j in range(n):
                if j != i and alive[j] == 1 and cut[i, j] == 0 and cut[j, i] == 0:
                    peers += 1
            reach = member_state.is_quorum(S, peers + 1)
        if alive[i] == 1 and not reach:
            if cut_since[i] < 0:
                cut_since[i] = now
        else:
            cut_since[i] = -1


@njit(cache=True)
def see_observation(S, i, k):
    """election world.ghost_update for one observation of node i (and HB-1, which reads them)."""
    config = core_table.config(S)
    world = core_table.world(S)
    members = layout.members(S)
    alive = core_table.alive(S)
    cut = core_table.cut(S)
    elected = layout.elected(S)
    grants = layout.grants(S)
    verdicts = core_table.verdicts(S)
    outputs = core_table.outputs(S)
    step_marks = layout.step_marks(S)
    kind = outputs[k, 1]
    now = world[W_NOW]
    if kind == OBS_ROLE_CHANGED:
        term = outputs[k, 2]
        role = outputs[k, 3]
        if role == LEADER:
            if term >= config[C_TERMS] or term < 0:
                world[W_STOP] = OVERFLOW_TERMS
                return
            note_led(S, i, term, now)
        follow_note(S, now)
        transfer_note(S, i, now)
        if role == LEADER:
            bit = 1 << i
            if elected[term] & bit == 0:
                elected[term] |= bit
                if term > world[W_TOP_TERM]:
                    world[W_TOP_TERM] = term
                if popcount(elected[term]) == 2:
                    world[W_TERMS_WITH_TWO_LEADERS] += 1
                step_marks[SM_FIRST_NEW_LEADER_TERM] = (min(step_marks[SM_FIRST_NEW_LEADER_TERM], term)
                                                         if step_marks[SM_FIRST_NEW_LEADER_TERM] >= 0 else term)
                step_marks[SM_LAST_NEW_LEADER_TERM] = max(step_marks[SM_LAST_NEW_LEADER_TERM], term)
        if world[W_CALM] == 1 and world[W_SETTLED] < 0 and role != CANDIDATE and settled(S):
            world[W_SETTLED] = now
    elif kind == OBS_VOTE_GRANTED:
        term = outputs[k, 2]
        if term >= config[C_TERMS] or term < 0:
            world[W_STOP] = OVERFLOW_TERMS
            return
        if term > world[W_TOP_TERM]:
            world[W_TOP_TERM] = term
        note_vote(S, i, term, outputs[k, 3], now)
        bit = 1 << outputs[k, 3]
        if grants[term, i] & bit == 0:
            grants[term, i] |= bit
            if popcount(grants[term, i]) == 2:
                world[W_VOTERS_WITH_TWO_CANDIDATES] += 1
    elif kind == OBS_TRANSFER_DONE or kind == OBS_TRANSFER_STARTED:
        transfer_note(S, i, now)
    elif kind == OBS_FOLLOWER_TIMEOUT:
        # HB-1 (spec.election.hb1): node i timed out on leader j; j's state, the links and
        # the fault history are the same before and after this step (only i changed).
        j = outputs[k, 3]
        if j >= 0 and verdicts[P_HB1, V_STEP] < 0 and now - world[W_LAST_FAULT] > config[C_HB1_QUIET_MS]:
            if alive[j] == 1 and members[j, ROLE] == LEADER and members[j, CURR_TERM] == outputs[k, 2] and cut[j, i] == 0:
                step_marks[SM_HB1] = 1
