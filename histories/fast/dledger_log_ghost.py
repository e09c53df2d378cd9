"""The log ghost's history over arrays: reference_impl/dledger_log/ghost.py's drops, thin
commits, the election ghost's Terms (votes, leaderships, lost term files) and the
liveness fields (agreed, settled_leader, stragglers, transfers), updated as
ghost.update / ghost.crash_note update them. Nodes never read any of it.

Arrays (dledger_log_layout): gdr (drop rows DR_*, in history order) with their entries
in gdp; gth per index (TH_*) with the insertion order in gtho; gvo (voter, term,
candidate, at, seq), gled (term, leader, at, seq), gtl (node, at, term, seq) in
history order; glv per node (LV_*). Every change to what expected causes read bumps
W_GVER, so the state properties' cached causes are computed again.
"""

from __future__ import annotations

from numba import njit

import histories.fast.dledger_log_layout as L
import histories.fast.dledger_log_store as st
import histories.fast.election as E
from histories.fast.dledger_log_layout import (
    BIG,
    DR_AT,
    DR_FLUSHED,
    DR_HI,
    DR_HOW,
    DR_LEADER,
    DR_LO,
    DR_PAY,
    DR_SEQ,
    DR_SERVER,
    DR_STALE,
    DR_TERM,
    HOW_DISK,
    HOW_OS,
    HOW_TRUNCATE,
    LV_STRAG,
    LV_TRANSFER,
    MD_DIRTY,
    MD_SVB,
    MD_SVN,
    OVERFLOW_OSLOST,
    S_BEGIN,
    S_FLUSHED,
    S_NENT,
    TH_AT,
    TH_ETERM,
    TH_HOLDERS,
    TH_LEADER,
    TH_ON,
    TH_TERM,
    TH_WHAT,
    W_AGREED,
    W_AGREED_SINCE,
    W_GVER,
    W_NDPAY,
    W_NDROPS,
    W_NLED,
    W_NTHIN,
    W_NTL,
    W_NVOTES,
    W_SEQ,
    W_SETTLED,
    W_SETTLED_T,
    W_STOP,
)

# --- Terms (reference_impl/election/ghost.py) ---


@njit(cache=True)
def _note_vote(ws, G, voter, term, cand, now):
    """election.ghost.note of a VoteGranted: (voter, term) -> + (candidate, at, seq)."""
    gvo = L.g_gvo(G)
    r = ws[W_NVOTES]
    if r >= gvo.shape[0]:
        ws[W_STOP] = OVERFLOW_OSLOST
        return
    gvo[r, 0] = voter
    gvo[r, 1] = term
    gvo[r, 2] = cand
    gvo[r, 3] = now
    gvo[r, 4] = ws[W_SEQ]
    ws[W_NVOTES] = r + 1
    ws[W_SEQ] += 1
    ws[W_GVER] += 1


@njit(cache=True)
def _note_led(ws, G, leader, term, end_term, now):
    """election.ghost.note of a RoleChanged to LEADER: term -> + (leader, at, seq), and the
    leader's ledgerEndTerm then (LogGhost.led_ends)."""
    gled = L.g_gled(G)
    r = ws[W_NLED]
    if r >= gled.shape[0]:
        ws[W_STOP] = OVERFLOW_OSLOST
        return
    gled[r, 0] = term
    gled[r, 1] = leader
    gled[r, 2] = now
    gled[r, 3] = ws[W_SEQ]
    gled[r, 4] = end_term
    ws[W_NLED] = r + 1
    ws[W_SEQ] += 1
    ws[W_GVER] += 1


@njit(cache=True)
def _note_crash(ws, G, node, kind, term_before, now):
    """election.ghost.note_crash: an OS crash or disk loss takes the currterm file."""
    if kind == 0:
        return
    gtl = L.g_gtl(G)
    r = ws[W_NTL]
    if r >= gtl.shape[0]:
        ws[W_STOP] = OVERFLOW_OSLOST
        return
    gtl[r, 0] = node
    gtl[r, 1] = now
    gtl[r, 2] = term_before
    gtl[r, 3] = ws[W_SEQ]
    ws[W_NTL] = r + 1
    ws[W_SEQ] += 1
    ws[W_GVER] += 1


# --- drops ---


@njit(cache=True)
def _drop_row(ws, G, server, now, how, lo, hi, flushed, leader, term):
    """ghost._drop: a new Drop row (its entries are the caller's to copy), or -1 on overflow."""
    gdr = L.g_gdr(G)
    gdp = L.g_gdp(G)
    r = ws[W_NDROPS]
    pay = ws[W_NDPAY]
    if r >= gdr.shape[0] or pay + hi - lo + 1 > gdp.shape[0]:
        ws[W_STOP] = OVERFLOW_OSLOST
        return -1
    gdr[r, DR_SERVER] = server
    gdr[r, DR_AT] = now
    gdr[r, DR_SEQ] = ws[W_SEQ]
    gdr[r, DR_HOW] = how
    gdr[r, DR_LO] = lo
    gdr[r, DR_HI] = hi
    gdr[r, DR_FLUSHED] = flushed
    gdr[r, DR_LEADER] = leader
    gdr[r, DR_TERM] = term
    gdr[r, DR_STALE] = 0
    gdr[r, DR_PAY] = pay
    ws[W_NDROPS] = r + 1
    ws[W_NDPAY] = pay + hi - lo + 1
    ws[W_SEQ] += 1
    ws[W_GVER] += 1
    return r


@njit(cache=True)
def crash_note(ws, G, S, i, kind, now):
    """ghost.crash_note, before server i's crash of `kind` (0 process, 1 OS, 2 disk): its
    currterm file, then the entries the crash takes (store.crash: the unflushed tail, or all)."""
    nd = L.nd_(S)
    _note_crash(ws, G, i, kind, nd[i, E.TERM], now)
    if kind == 0:
        return
    sto = L.sto_(S)
    n = sto[i, S_NENT]
    if n == 0:
        return
    b = sto[i, S_BEGIN]
    keep = 0 if kind == 2 else min(max(0, sto[i, S_FLUSHED] - b + 1), n)
    if keep >= n:
        return
    r = _drop_row(ws, G, i, now, HOW_DISK if kind == 2 else HOW_OS, b + keep, b + n - 1, sto[i, S_FLUSHED], -1, -1)
    if r < 0:
        return
    ent = L.ent_(S)
    gdp = L.g_gdp(G)
    pay = L.g_gdr(G)[r, DR_PAY]
    for k in range(keep, n):
        for f in range(4):
            gdp[pay + k - keep, f] = ent[i, k, f]


@njit(cache=True)
def lost_range(S, i):
    """store.lost_entries(the log the step began with, the log now) of server i, from the saved
    tail (sv): (lo, hi, first sv row), lo > hi when nothing was lost."""
    md = L.md_(S)
    sv = L.sv_(S)
    sto = L.sto_(S)
    ent = L.ent_(S)
    base = md[i, MD_SVB]
    lo = 1
    hi = 0
    if md[i, MD_DIRTY] == BIG:  # the log did not change in this step (sv is an older step's)
        return lo, hi, 0
    for r in range(md[i, MD_SVN] - 1, -1, -1):
        index = base + r
        k = st.offset_of(sto, i, index)
        if k >= 0 and st.holds(ent, i, k, sv[i, r, 0], sv[i, r, 1], sv[i, r, 2], sv[i, r, 3]):
            break
        if hi < lo:
            hi = index
        lo = index
    return lo, hi, lo - base


@njit(cache=True)
def on_entries_dropped(C, ws, G, S, i, leader, term, now):
    """ghost.update of EntriesDropped: a truncate Drop, stale when its leader (a server) held the
    first dropped entry at that moment."""
    lo, hi, r0 = lost_range(S, i)
    if lo > hi:
        return
    r = _drop_row(ws, G, i, now, HOW_TRUNCATE, lo, hi, -1, leader, term)
    if r < 0:
        return
    sv = L.sv_(S)
    gdp = L.g_gdp(G)
    pay = L.g_gdr(G)[r, DR_PAY]
    for k in range(hi - lo + 1):
        for f in range(4):
            gdp[pay + k, f] = sv[i, r0 + k, f]
    if 0 <= leader < C[E.C_N]:
        sto = L.sto_(S)
        ent = L.ent_(S)
        kk = st.offset_of(sto, leader, lo)
        held = kk >= 0 and st.holds(ent, leader, kk, gdp[pay, 0], gdp[pay, 1], gdp[pay, 2], gdp[pay, 3])
        L.g_gdr(G)[r, DR_STALE] = 1 if held else 0


@njit(cache=True)
def drop_holds(G, r, index, term, pos, size, body):
    """Drop.holds: drop r took this entry at `index`."""
    gdr = L.g_gdr(G)
    if not gdr[r, DR_LO] <= index <= gdr[r, DR_HI]:
        return False
    gdp = L.g_gdp(G)
    k = gdr[r, DR_PAY] + index - gdr[r, DR_LO]
    return gdp[k, 0] == term and gdp[k, 1] == pos and gdp[k, 2] == size and gdp[k, 3] == body


# --- thin commits (LOG-8) ---


@njit(cache=True)
def ever_held(C, ws, G, S, index, term, pos, size, body):
    """ghost.ever_held, as a bit mask of servers."""
    sto = L.sto_(S)
    ent = L.ent_(S)
    mask = 0
    for j in range(C[E.C_N]):
        k = st.offset_of(sto, j, index)
        if k >= 0 and st.holds(ent, j, k, term, pos, size, body):
            mask |= 1 << j
    gdr = L.g_gdr(G)
    for r in range(ws[W_NDROPS]):
        j = gdr[r, DR_SERVER]
        if (mask >> j) & 1 == 0 and drop_holds(G, r, index, term, pos, size, body):
            mask |= 1 << j
    return mask


@njit(cache=True)
def check_majority(C, ws, G, S, i, index, term, pos, size, body, leader_term, what, now):
    """ghost._check_majority: a leader committed (what 0) or answered SUCCESS for (1) this entry."""
    gth = L.g_gth(G)
    if gth[index, TH_ON] == 1:
        return
    # the logs that hold it now usually make the majority; the drops only add holders
    sto = L.sto_(S)
    ent = L.ent_(S)
    now_held = 0
    for j in range(C[E.C_N]):
        kk = st.offset_of(sto, j, index)
        if kk >= 0 and st.holds(ent, j, kk, term, pos, size, body):
            now_held += 1
    if 2 * now_held > C[E.C_N]:
        return
    holders = ever_held(C, ws, G, S, index, term, pos, size, body)
    k = 0
    x = holders
    while x:
        x &= x - 1
        k += 1
    if 2 * k > C[E.C_N]:
        return
    gth[index, TH_ON] = 1
    gth[index, TH_LEADER] = i
    gth[index, TH_TERM] = leader_term
    gth[index, TH_ETERM] = term
    gth[index, TH_HOLDERS] = holders
    gth[index, TH_AT] = now
    gth[index, TH_WHAT] = what
    L.g_gtho(G)[ws[W_NTHIN]] = index
    ws[W_NTHIN] += 1
    ws[W_GVER] += 1


# --- liveness (election.ghost.follow_note, transfer_note) ---


@njit(cache=True)
def _follows(nd, k, lead):
    return nd[k, E.ROLE] == E.FOLLOWER and nd[k, E.LEADER_ID] == lead and nd[k, E.TERM] == nd[lead, E.TERM]


@njit(cache=True)
def followed(C, S, alive):
    """election.ghost.followed: the live LEADER a quorum of live members follows in its term (-1: none)."""
    nd = L.nd_(S)
    n = C[E.C_N]
    for k in range(n):
        if alive[k] == 1 and nd[k, E.ROLE] == E.LEADER:
            cnt = 1
            for f in range(n):
                if alive[f] == 1 and _follows(nd, f, k):
                    cnt += 1
            if cnt >= n // 2 + 1:
                return k
    return -1


@njit(cache=True)
def all_follow(C, S, alive):
    """election.ghost.all_follow"""
    nd = L.nd_(S)
    n = C[E.C_N]
    leader = -1
    for k in range(n):
        if alive[k] == 1 and nd[k, E.ROLE] == E.LEADER:
            if leader >= 0:
                return False
            leader = k
    if leader < 0:
        return False
    for k in range(n):
        if alive[k] == 1 and k != leader and not _follows(nd, k, leader):
            return False
    return True


@njit(cache=True)
def outside(C, S, alive, lead, k):
    """Live member k is outside the leadership of `lead` (in its term)."""
    return alive[k] == 1 and k != lead and not _follows(L.nd_(S), k, lead)


@njit(cache=True)
def follow_note(C, ws, G, S, alive, now):
    """election.ghost.follow_note over the servers."""
    agreed = 1 if all_follow(C, S, alive) else 0
    if agreed != ws[W_AGREED]:
        ws[W_AGREED] = agreed
        ws[W_AGREED_SINCE] = now
    lead = followed(C, S, alive)
    lterm = L.nd_(S)[lead, E.TERM] if lead >= 0 else -1
    same = lead == ws[W_SETTLED] and (lead < 0 or lterm == ws[W_SETTLED_T])
    glv = L.g_glv(G)
    for k in range(C[E.C_N]):
        if lead >= 0 and outside(C, S, alive, lead, k):
            if not (same and glv[k, LV_STRAG] >= 0):
                glv[k, LV_STRAG] = now
        else:
            glv[k, LV_STRAG] = -1
    ws[W_SETTLED] = lead
    ws[W_SETTLED_T] = lterm


@njit(cache=True)
def transfer_note(ws, G, S, i, now):
    """election.ghost.transfer_note for server i."""
    nd = L.nd_(S)
    glv = L.g_glv(G)
    if nd[i, E.ROLE] == E.LEADER and nd[i, E.TRANSFEREE] >= 0:
        if glv[i, LV_TRANSFER] < 0:
            glv[i, LV_TRANSFER] = now
    else:
        glv[i, LV_TRANSFER] = -1


@njit(cache=True)
def reset(ws, G):
    """The history tables up to what the last history used (ws is cleared after this)."""
    gth = L.g_gth(G)
    gtho = L.g_gtho(G)
    for r in range(ws[W_NTHIN]):
        gth[gtho[r], TH_ON] = 0
    glv = L.g_glv(G)
    for k in range(glv.shape[0]):
        glv[k, LV_STRAG] = -1
        glv[k, LV_TRANSFER] = -1
