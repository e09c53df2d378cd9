"""The election twin's ghost record beyond elected/grants (reference_impl/election/ghost.py):
the evidence notes (`Terms`: every ACCEPT, every leadership won, every lost term file, in
history order) and the liveness fields (agreed, agreed_since, settled_leader, stragglers,
transfers), and the evidence behind ELE-1/ELE-2's expected causes (spec/election.py:
revote_cause, two_leaders_cause, ele2_expected).

The notes are rows of `nt`, row index == seq (each note takes one seq). The votes of one
(term, voter) are chained (`vl` head/tail, `N_NEXT`), as are one node's lost term files
(`lv` LV_LHEAD/LV_LTAIL), so the evidence is found without scanning every note. The kernel
only decides whether a cause exists; the cause's text is spec's own, over the notes before
the violation (histories.fast.run._cause).
"""

from __future__ import annotations

from numba import njit

from histories.fast.election_layout import *  # noqa: F403 - the columns and enums, by the reference's names
from histories.fast.election_node import _is_quorum

# =====================================================================================
# ghost.Terms: note, note_crash, lost_between
# =====================================================================================


@njit(cache=True)
def _add_note(ws, nt, kind, node, term, cand, now):
    """One row of `nt` (seq = its index); -1 if the notes' capacity ran out."""
    k = ws[W_SEQ]
    if k >= nt.shape[0]:
        ws[W_STOP] = OVERFLOW_NOTES
        return -1
    nt[k, N_KIND] = kind
    nt[k, N_NODE] = node
    nt[k, N_TERM] = term
    nt[k, N_CAND] = cand
    nt[k, N_AT] = now
    nt[k, N_NEXT] = -1
    ws[W_SEQ] = k + 1
    return k


@njit(cache=True)
def _note_vote(ws, nt, vl, voter, term, cand, now):
    """ghost.note of a VoteGranted: appended to the (voter, term) chain."""
    k = _add_note(ws, nt, NOTE_VOTE, voter, term, cand, now)
    if k < 0:
        return
    last = vl[term, voter, VL_TAIL]
    if last < 0:
        vl[term, voter, VL_HEAD] = k
    else:
        nt[last, N_NEXT] = k
    vl[term, voter, VL_TAIL] = k


@njit(cache=True)
def _note_led(ws, nt, leader, term, now):
    """ghost.note of a RoleChanged to LEADER."""
    _add_note(ws, nt, NOTE_LED, leader, term, -1, now)


@njit(cache=True)
def _note_crash(ws, nt, lv, node, term_before, now):
    """ghost.note_crash of an OS crash or a disk loss (a process crash keeps the term file)."""
    k = _add_note(ws, nt, NOTE_LOST, node, term_before, -1, now)
    if k < 0:
        return
    last = lv[node, LV_LTAIL]
    if last < 0:
        lv[node, LV_LHEAD] = k
    else:
        nt[last, N_NEXT] = k
    lv[node, LV_LTAIL] = k


@njit(cache=True, inline='always')
def _lost_between(nt, lv, node, after_seq, until_seq):
    """ghost.lost_between: the first lost note of `node` strictly between the two seqs (-1: none)."""
    k = lv[node, LV_LHEAD]
    while k >= 0:
        if after_seq < k < until_seq:
            return k
        k = nt[k, N_NEXT]
    return -1


# =====================================================================================
# the evidence of spec/election.py's expected causes
# =====================================================================================


@njit(cache=True)
def _revote_cause(nt, vl, lv, voter, term, a, b):
    """spec.election.revote_cause, as a yes/no: an ACCEPT of a or b, a lost term file, then
    an ACCEPT of the other."""
    k = vl[term, voter, VL_HEAD]
    while k >= 0:
        c1 = nt[k, N_CAND]
        if c1 == a or c1 == b:
            k2 = nt[k, N_NEXT]
            while k2 >= 0:
                c2 = nt[k2, N_CAND]
                if (c2 == a or c2 == b) and c2 != c1 and _lost_between(nt, lv, voter, k, k2) >= 0:
                    return True
                k2 = nt[k2, N_NEXT]
        k = nt[k, N_NEXT]
    return False


@njit(cache=True)
def _two_leaders_cause(C, nt, vl, lv, elected, term):
    """spec.election.two_leaders_cause, as a yes/no: every pair of term's leaders has a voter
    whose second ACCEPT came after it lost its term file."""
    n = C[C_N]
    leaders = elected[term]
    for a in range(n):
        if leaders >> a & 1 == 0:
            continue
        for b in range(a + 1, n):
            if leaders >> b & 1 == 0:
                continue
            found = False
            for v in range(n):
                if _revote_cause(nt, vl, lv, v, term, a, b):
                    found = True
                    break
            if not found:
                return False
    return True


@njit(cache=True)
def _ele1_expected(C, ws, nt, vl, lv, elected):
    """spec.election.ele1_expected, as a yes/no: every term with two leaders has the evidence."""
    any_term = False
    for t in range(ws[W_MAXTERM_SEEN] + 1):
        if elected[t] & (elected[t] - 1):  # two leaders or more
            any_term = True
            if not _two_leaders_cause(C, nt, vl, lv, elected, t):
                return False
    return any_term


@njit(cache=True)
def _ele2_expected(C, ws, nt, vl, lv, grants):
    """spec.election.ele2_expected, as a yes/no: each change of candidate in a voter's ACCEPTs
    of one term followed a loss of its term file."""
    n = C[C_N]
    found = False
    for t in range(ws[W_MAXTERM_SEEN] + 1):
        for v in range(n):
            if grants[t, v] & (grants[t, v] - 1) == 0:
                continue
            k = vl[t, v, VL_HEAD]
            while k >= 0:
                k2 = nt[k, N_NEXT]
                if k2 < 0:
                    break
                c1 = nt[k, N_CAND]
                c2 = nt[k2, N_CAND]
                if c1 != c2:
                    if not _revote_cause(nt, vl, lv, v, t, c1, c2):
                        return False
                    found = True
                k = k2
            if not found:
                return False  # the grants were not seen in order: no evidence
    return found


# =====================================================================================
# liveness: follow_note, followed, all_follow, transfer_note
# =====================================================================================


@njit(cache=True, inline='always')
def _follows(nd, f, leader):
    """A FOLLOWER of `leader` in the leader's term."""
    return nd[f, ROLE] == FOLLOWER and nd[f, LEADER_ID] == leader and nd[f, TERM] == nd[leader, TERM]


@njit(cache=True)
def _followed(C, nd, alive):
    """ghost.followed: the first live LEADER a quorum of live members follows in its term (-1: none)."""
    n = C[C_N]
    for i in range(n):
        if alive[i] == 1 and nd[i, ROLE] == LEADER:
            c = 1
            for f in range(n):
                if alive[f] == 1 and _follows(nd, f, i):
                    c += 1
            if _is_quorum(C, c):
                return i
    return -1


@njit(cache=True)
def _all_follow(C, nd, alive):
    """ghost.all_follow: exactly one live LEADER, every other live member its FOLLOWER in its term."""
    n = C[C_N]
    leader = -1
    for i in range(n):
        if alive[i] == 1 and nd[i, ROLE] == LEADER:
            if leader >= 0:
                return False
            leader = i
    if leader < 0:
        return False
    for i in range(n):
        if alive[i] == 1 and i != leader and not _follows(nd, i, leader):
            return False
    return True


@njit(cache=True)
def _follow_note(C, ws, nd, alive, lv, now):
    """ghost.follow_note: agreed and since when; the leadership a quorum follows and the live
    members outside it, with since when (a new leadership starts their clocks again)."""
    n = C[C_N]
    agreed = 1 if _all_follow(C, nd, alive) else 0
    if agreed != ws[W_AGREED]:
        ws[W_AGREED] = agreed
        ws[W_AGREED_SINCE] = now
    lead = _followed(C, nd, alive)
    lterm = nd[lead, TERM] if lead >= 0 else 0
    same = lead == ws[W_SL] and lterm == ws[W_SL_TERM]
    first = -1
    for j in range(n):
        outside = lead >= 0 and alive[j] == 1 and j != lead and not (
            nd[j, ROLE] == FOLLOWER and nd[j, LEADER_ID] == lead and nd[j, TERM] == lterm)
        if not outside:
            lv[j, LV_STRAG] = -1
            continue
        if not same or lv[j, LV_STRAG] < 0:
            lv[j, LV_STRAG] = now
        if first < 0 or lv[j, LV_STRAG] < first:
            first = lv[j, LV_STRAG]
    ws[W_SL] = lead
    ws[W_SL_TERM] = lterm
    ws[W_STRAG_MIN] = first


@njit(cache=True)
def _transfer_note(C, ws, nd, lv, i, now):
    """ghost.transfer_note: a leader mid-transfer (its transferee set) since when."""
    if nd[i, ROLE] == LEADER and nd[i, TRANSFEREE] >= 0:
        if lv[i, LV_TRANS] < 0:
            lv[i, LV_TRANS] = now
    else:
        lv[i, LV_TRANS] = -1
    _transfers_changed(C, ws, lv)


@njit(cache=True)
def _transfers_changed(C, ws, lv):
    """The earliest transfer still open (W_TRANS_MIN), after ghost.transfers changed."""
    first = -1
    for j in range(C[C_N]):
        t = lv[j, LV_TRANS]
        if t >= 0 and (first < 0 or t < first):
            first = t
    ws[W_TRANS_MIN] = first
