"""Ghost variables and properties of the dledger_log fast world: reference_impl/dledger_log/
world.py's LogGhost (ghost_update) and spec/dledger_log.py's LOG-* properties with their
expected causes, over arrays, checked after every step with spec.properties.Monitor's rules.

The ghost tuple G (indexes G_*): per term `elected` (mask of servers) and `regressed`
(-1: absent); per entry index `gc` (the first entry committed there: present, term, pos,
size, body), `gx`/`gxn` (other entries committed there later, at most `sets` of them),
`ga`/`gan` (entries acknowledged SUCCESS there), `gcnt` (committed by counting an older
term); the insertion orders of the committed, conflicting and acknowledged indexes (the
reference's maps iterate in that order, and a cause is the first one's); `gol` (os_lost
rows) and `gres` (AppendResult counts by code).

Causes are five numbers (CA_* kind, a, b, mask, mask) that histories.fast.dledger_log_run
formats with spec/dledger_log.py's own texts.
"""

from __future__ import annotations

from numba import njit

from histories.fast import dledger_log_layout as L
from histories.fast import dledger_log_store as st
from histories.fast import election as E
from histories.fast.dledger_log_layout import (
    BIG,
    C_BLEN,
    C_CTC,
    C_NCL,
    CA_FIGURE_8,
    CA_LEADER_HELD,
    CA_NONE,
    CA_OS_LOST,
    CA_REGRESSED,
    CA_RELED,
    CA_TWO_LEADERS,
    ET_BODY,
    ET_POS,
    ET_SIZE,
    ET_TERM,
    HEADER,
    MD_BCHG,
    MD_DIRTY,
    MD_OEND,
    MD_SVB,
    MD_SVN,
    OVERFLOW_OSLOST,
    OVERFLOW_SETS,
    OVERFLOW_TERMS,
    P_LOG1,
    P_LOG5,
    P_LOG7,
    P_LOGL,
    S_BEGIN,
    S_COMMITTED,
    S_NENT,
    SUCCESS,
    V_CA,
    V_CB,
    V_CK,
    V_CM1,
    V_CM2,
    V_STEP,
    V_T,
    W_CALM,
    W_CALM_AT,
    W_FIRST_ACK,
    W_GVER,
    W_LOST,
    W_MAXIDX,
    W_MAXTERM,
    W_NACKED,
    W_NCOMMITTED,
    W_NCONFLICT,
    W_NCOUNTED,
    W_NOSLOST,
    W_NOW,
    W_STOP,
    W_TOPTERM,
)

G_ELECTED = 0
G_REGRESSED = 1
G_GC = 2
G_GCO = 3
G_GX = 4
G_GXN = 5
G_GXO = 6
G_GA = 7
G_GAN = 8
G_GAO = 9
G_GCNT = 10
G_GOL = 11
G_GRES = 12

LOG_L_BOUND_MS = 40_000  # spec.dledger_log.LOG_L_BOUND_MS


# --- ghost_update ---


@njit(cache=True, inline='always')
def _see_index(ws, index):
    ws[W_MAXIDX] = max(ws[W_MAXIDX], index)


@njit(cache=True)
def _set_add(ws, sets, counts, order, nord, index, term, pos, size, body):
    """frozenset | {entry} at `index` of a per-index set table; returns (added, new key)."""
    c = counts[index]
    for r in range(c):
        if (sets[index, r, 0] == term and sets[index, r, 1] == pos and sets[index, r, 2] == size
                and sets[index, r, 3] == body):
            return False
    if c >= sets.shape[1]:
        ws[W_STOP] = OVERFLOW_SETS
        return False
    sets[index, c, 0] = term
    sets[index, c, 1] = pos
    sets[index, c, 2] = size
    sets[index, c, 3] = body
    counts[index] = c + 1
    if c == 0:
        order[ws[nord]] = index
        ws[nord] += 1
    return True


@njit(cache=True)
def _commit(ws, G, index, term, pos, size, body):
    """world._commit"""
    gc = L.g_gc(G)
    _see_index(ws, index)
    if gc[index, 0] == 0:
        gc[index, 0] = 1
        gc[index, 1] = term
        gc[index, 2] = pos
        gc[index, 3] = size
        gc[index, 4] = body
        L.g_gco(G)[ws[W_NCOMMITTED]] = index
        ws[W_NCOMMITTED] += 1
    elif ((gc[index, 1] != term or gc[index, 2] != pos or gc[index, 3] != size or gc[index, 4] != body)
          and _set_add(ws, L.g_gx(G), L.g_gxn(G), L.g_gxo(G), W_NCONFLICT, index, term, pos, size, body)):
        ws[W_GVER] += 1


@njit(cache=True)
def see_committed_prefix(ws, G, S, i, lo, hi):
    """world._see_committed_prefix: entries (lo, hi] of server i's log."""
    sto = L.sto_(S)
    ent = L.ent_(S)
    n = sto[i, S_NENT]
    if n == 0:
        return
    b = sto[i, S_BEGIN]
    for index in range(max(lo, b - 1) + 1, min(hi, b + n - 1) + 1):
        k = index - b
        _commit(ws, G, index, ent[i, k, ET_TERM], ent[i, k, ET_POS], ent[i, k, ET_SIZE], ent[i, k, ET_BODY])


@njit(cache=True)
def on_commit_advanced(ws, G, S, i, old, new, term, leader, entry_term):
    see_committed_prefix(ws, G, S, i, old, new)
    if leader == 1 and entry_term < term:
        gcnt = L.g_gcnt(G)
        for index in range(old + 1, new + 1):
            if 0 <= index < gcnt.shape[0] and gcnt[index] == 0:
                gcnt[index] = 1
                ws[W_NCOUNTED] += 1
                ws[W_GVER] += 1
                _see_index(ws, index)


@njit(cache=True)
def on_append_result(ws, G, S, i, code, index):
    if 0 <= code < L.g_gres(G).shape[0]:
        L.g_gres(G)[code] += 1
    if code == SUCCESS:
        sto = L.sto_(S)
        k = st.offset_of(sto, i, index)
        if k >= 0:
            ent = L.ent_(S)
            _see_index(ws, index)
            if _set_add(ws, L.g_ga(G), L.g_gan(G), L.g_gao(G), W_NACKED, index, ent[i, k, ET_TERM], ent[i, k, ET_POS],
                        ent[i, k, ET_SIZE], ent[i, k, ET_BODY]):
                ws[W_GVER] += 1
        if ws[W_CALM] == 1 and ws[W_FIRST_ACK] < 0:
            ws[W_FIRST_ACK] = ws[W_NOW]


@njit(cache=True)
def on_leader(ws, G, i, term):
    """world.ghost_update of RoleChanged(LEADER)"""
    elected = L.g_elected(G)
    if term < 0 or term >= elected.shape[0]:
        ws[W_STOP] = OVERFLOW_TERMS
        return
    ws[W_TOPTERM] = max(ws[W_TOPTERM], term)
    if ws[W_MAXTERM] > term:
        L.g_regressed(G)[term] = ws[W_MAXTERM]
        ws[W_GVER] += 1
    if (elected[term] >> i) & 1 == 0:
        elected[term] |= 1 << i
        ws[W_GVER] += 1
    ws[W_MAXTERM] = max(ws[W_MAXTERM], term)


@njit(cache=True)
def on_os_crash(C, ws, G, S, i):
    """world.ghost_update of an OS crash (or disk loss) of server i, after it."""
    end = st.end_index(L.sto_(S), i)
    others = -1
    for j in range(C[E.C_N]):
        if j != i:
            others = max(others, st.end_index(L.sto_(S), j))
    if others > end:
        gol = L.g_gol(G)
        r = ws[W_NOSLOST]
        if r >= gol.shape[0]:
            ws[W_STOP] = OVERFLOW_OSLOST
            return
        gol[r, 0] = i
        gol[r, 1] = end
        gol[r, 2] = others
        ws[W_NOSLOST] = r + 1
        ws[W_GVER] += 1


@njit(cache=True)
def on_restart_or_calm(C, ws, G, S, alive):
    """world.ghost_update of Restart and Calm: every live server's committed prefix."""
    sto = L.sto_(S)
    for j in range(C[E.C_N]):
        if alive[j] == 1:
            see_committed_prefix(ws, G, S, j, -1, sto[j, S_COMMITTED])


# --- expected causes (spec/dledger_log.py) ---


@njit(cache=True, inline='always')
def _popcount(x):
    c = 0
    while x:
        x &= x - 1
        c += 1
    return c


@njit(cache=True)
def reled(ws, G, term):
    """spec.dledger_log._reled"""
    lost = ws[W_LOST]
    elected = L.g_elected(G)
    if term < 0 or term >= elected.shape[0]:
        return CA_NONE, 0, 0, 0, 0
    if L.g_regressed(G)[term] >= 0 and lost != 0:
        return CA_REGRESSED, term, L.g_regressed(G)[term], lost, 0
    leaders = elected[term]
    who = lost & leaders
    if who != 0:
        return CA_RELED, term, 0, who, 0
    if _popcount(leaders) > 1 and lost != 0:
        return CA_TWO_LEADERS, term, 0, leaders, lost
    return CA_NONE, 0, 0, 0, 0


@njit(cache=True)
def cause(ws, G, index):
    """spec.dledger_log._cause: the known cause of a violation at `index` (kind CA_NONE: none)."""
    gcnt = L.g_gcnt(G)
    if 0 <= index < gcnt.shape[0] and gcnt[index] == 1:
        return CA_FIGURE_8, index, 0, 0, 0
    gol = L.g_gol(G)
    who = 0
    for r in range(ws[W_NOSLOST]):
        if gol[r, 1] < index <= gol[r, 2]:
            who |= 1 << gol[r, 0]
    if who != 0:
        return CA_OS_LOST, index, 0, who, 0
    if index < 0 or index >= gcnt.shape[0]:
        return CA_NONE, 0, 0, 0, 0
    # the terms of what was committed, conflicting or acknowledged there, in ascending order
    last = -1
    while True:
        t = BIG
        gc = L.g_gc(G)
        if gc[index, 0] == 1 and last < gc[index, 1] < t:
            t = gc[index, 1]
        gx = L.g_gx(G)
        for r in range(L.g_gxn(G)[index]):
            if last < gx[index, r, 0] < t:
                t = gx[index, r, 0]
        ga = L.g_ga(G)
        for r in range(L.g_gan(G)[index]):
            if last < ga[index, r, 0] < t:
                t = ga[index, r, 0]
        if t == BIG:
            return CA_NONE, 0, 0, 0, 0
        k, a, b, m1, m2 = reled(ws, G, t)
        if k != CA_NONE:
            return k, a, b, m1, m2
        last = t


@njit(cache=True)
def dropped_first(S, i, committed_only, G):
    """Walk spec.dledger_log._dropped(before, after) of server i (the step's saved tail against
    the log now) and call back nothing: returns (count, lowest index, highest index) of the
    dropped entries (only those the ghost holds as committed there, if `committed_only`)."""
    md = L.md_(S)
    sv = L.sv_(S)
    sto = L.sto_(S)
    ent = L.ent_(S)
    gc = L.g_gc(G)
    cnt = 0
    lo = BIG
    hi = -1
    if md[i, MD_DIRTY] == BIG:
        return 0, lo, hi
    base = md[i, MD_SVB]
    for r in range(md[i, MD_SVN] - 1, -1, -1):
        index = base + r
        k = st.offset_of(sto, i, index)
        if k >= 0 and st.holds(ent, i, k, sv[i, r, 0], sv[i, r, 1], sv[i, r, 2], sv[i, r, 3]):
            break
        if committed_only and not (gc[index, 0] == 1 and gc[index, 1] == sv[i, r, 0] and gc[index, 2] == sv[i, r, 1]
                                   and gc[index, 3] == sv[i, r, 2] and gc[index, 4] == sv[i, r, 3]):
            continue
        cnt += 1
        lo = min(lo, index)
        hi = max(hi, index)
    return cnt, lo, hi


@njit(cache=True)
def leader_held(C, ws, G, S, i, mode, lo, hi):
    """spec.dledger_log._leader_held for node i's dropped entries: mode 0 every entry the
    step dropped, 1 the dropped ones the ghost holds as committed, 2 the ghost's committed
    entries at lo+1..hi (LOG-4's fallback)."""
    nd = L.nd_(S)
    k, a, b, m1, m2 = reled(ws, G, nd[i, E.TERM])
    if k != CA_NONE:
        return k, a, b, m1, m2
    if C[C_CTC] == 1:  # the "fixed" version profile: no known cause
        return CA_NONE, 0, 0, 0, 0
    leader = nd[i, E.LEADER_ID]
    if leader < 0 or leader >= C[E.C_N]:
        return CA_NONE, 0, 0, 0, 0
    sto = L.sto_(S)
    ent = L.ent_(S)
    gc = L.g_gc(G)
    if mode == 2:
        for index in range(lo + 1, hi + 1):
            if 0 <= index < gc.shape[0] and gc[index, 0] == 1:
                kk = st.offset_of(sto, leader, index)
                if kk < 0 or not st.holds(ent, leader, kk, gc[index, 1], gc[index, 2], gc[index, 3], gc[index, 4]):
                    return CA_NONE, 0, 0, 0, 0
        return CA_LEADER_HELD, i, leader, 0, 0
    md = L.md_(S)
    sv = L.sv_(S)
    base = md[i, MD_SVB]
    for r in range(md[i, MD_SVN] - 1, -1, -1):
        index = base + r
        kk = st.offset_of(sto, i, index)
        if kk >= 0 and st.holds(ent, i, kk, sv[i, r, 0], sv[i, r, 1], sv[i, r, 2], sv[i, r, 3]):
            break
        if mode == 1 and not (gc[index, 0] == 1 and gc[index, 1] == sv[i, r, 0] and gc[index, 2] == sv[i, r, 1]
                              and gc[index, 3] == sv[i, r, 2] and gc[index, 4] == sv[i, r, 3]):
            continue
        kl = st.offset_of(sto, leader, index)
        if kl < 0 or not st.holds(ent, leader, kl, sv[i, r, 0], sv[i, r, 1], sv[i, r, 2], sv[i, r, 3]):
            return CA_NONE, 0, 0, 0, 0
    return CA_LEADER_HELD, i, leader, 0, 0


# --- the Monitor's bookkeeping (spec.properties.Monitor._record) ---


@njit(cache=True, inline='always')
def record(vi, p, step, now, k, a, b, m1, m2):
    vi[p, V_STEP] = step
    vi[p, V_T] = now
    vi[p, V_CK] = k
    vi[p, V_CA] = a
    vi[p, V_CB] = b
    vi[p, V_CM1] = m1
    vi[p, V_CM2] = m2


@njit(cache=True, inline='always')
def may_record(vi, p):
    """A violation of p may still be recorded: none yet, or only an expected one."""
    return vi[p, V_STEP] < 0 or vi[p, V_CK] != CA_NONE


@njit(cache=True, inline='always')
def record_expected(vi, p, step, now, k, a, b, m1, m2):
    """Monitor._record for a property with expected_when, its cause computed."""
    if vi[p, V_STEP] >= 0 and (vi[p, V_CK] == CA_NONE or k != CA_NONE):
        return
    record(vi, p, step, now, k, a, b, m1, m2)


# --- LOG-1: log matching, re-checked where a log changed ---


@njit(cache=True)
def _identical(ent, a, ka, b, kb):
    return (ent[a, ka, ET_TERM] == ent[b, kb, ET_TERM] and ent[a, ka, ET_POS] == ent[b, kb, ET_POS]
            and ent[a, ka, ET_SIZE] == ent[b, kb, ET_SIZE] and ent[a, ka, ET_BODY] == ent[b, kb, ET_BODY])


@njit(cache=True)
def pair_scan(S, a, b):
    """spec.dledger_log.log_matching_violation for the pair (a, b) from scratch:
    (holds, P, differing index, term at the top): P is the first index of the overlap where
    the logs differ (past the overlap if none); they violate log matching iff some index
    from P to the overlap's end holds entries of equal terms."""
    sto = L.sto_(S)
    ent = L.ent_(S)
    na = sto[a, S_NENT]
    nb = sto[b, S_NENT]
    if na == 0 or nb == 0:
        return True, -1, 0, 0
    ba = sto[a, S_BEGIN]
    bb = sto[b, S_BEGIN]
    lo = max(ba, bb)
    hi = min(ba + na - 1, bb + nb - 1)
    p = lo
    while p <= hi and _identical(ent, a, p - ba, b, p - bb):
        p += 1
    for idx in range(hi, p - 1, -1):
        if ent[a, idx - ba, ET_TERM] == ent[b, idx - bb, ET_TERM]:
            return False, p, p, ent[a, idx - ba, ET_TERM]
    return True, p, 0, 0


@njit(cache=True)
def pair_update(S, a, b, pp):
    """The pair (a, b) held at the last check with first difference pp; re-check what the step
    changed (md: dirty index, old ends). Returns (holds, new P)."""
    sto = L.sto_(S)
    ent = L.ent_(S)
    md = L.md_(S)
    na = sto[a, S_NENT]
    nb = sto[b, S_NENT]
    if na == 0 or nb == 0 or pp < 0 or md[a, MD_BCHG] == 1 or md[b, MD_BCHG] == 1:
        h, p, _, _ = pair_scan(S, a, b)
        return h, p
    ba = sto[a, S_BEGIN]
    bb = sto[b, S_BEGIN]
    hi = min(ba + na - 1, bb + nb - 1)
    x = min(md[a, MD_DIRTY], md[b, MD_DIRTY]) - 1
    oea = md[a, MD_OEND] if md[a, MD_DIRTY] != BIG else ba + na - 1
    oeb = md[b, MD_OEND] if md[b, MD_DIRTY] != BIG else bb + nb - 1
    hi_old = min(oea, oeb)
    p = min(pp, x + 1)
    while p <= hi and _identical(ent, a, p - ba, b, p - bb):
        p += 1
    for idx in range(max(p, min(x, hi_old) + 1), hi + 1):
        if ent[a, idx - ba, ET_TERM] == ent[b, idx - bb, ET_TERM]:
            return False, p
    return True, p


@njit(cache=True)
def log1_first(S, n):
    """The first violating pair in the reference's order: (found, term at its top)."""
    for a in range(n):
        for b in range(a + 1, n):
            h, _, _, term = pair_scan(S, a, b)
            if not h:
                return True, term
    return False, 0


# --- LOG-7: the store's shape ---


@njit(cache=True)
def shape_ok(C, S, i, frm):
    """store.check_positions over entries from index `frm` on (and the pair before it)."""
    sto = L.sto_(S)
    ent = L.ent_(S)
    n = sto[i, S_NENT]
    b = sto[i, S_BEGIN]
    k0 = max(0, frm - b)
    blen = C[C_BLEN]
    for k in range(k0, n):
        body = ent[i, k, ET_BODY]
        if ent[i, k, ET_SIZE] != HEADER + (blen if body != 0 else 0):
            return False
        if k > 0:
            if ent[i, k, ET_TERM] < ent[i, k - 1, ET_TERM]:
                return False
            wrote = ent[i, k - 1, ET_POS] + ent[i, k - 1, ET_SIZE]
            if ent[i, k, ET_POS] != st.pre_append(C, wrote, ent[i, k, ET_SIZE]):
                return False
    return True


@njit(cache=True)
def check_states(C, ws, G, S, vi, lmp, lcache, step, now):
    """The state properties after a step: LOG-1 (where logs changed), LOG-5, LOG-7, LOG-L.
    lmp[a, b]: the pair's first difference while it holds (-1: re-scan); lcache: the LOG-1
    and LOG-5 causes computed at GVER lcache[0] / lcache[6] for unchanged logs."""
    n = C[E.C_N]
    md = L.md_(S)
    changed = False
    for j in range(n):
        if md[j, MD_DIRTY] != BIG:
            changed = True
    # LOG-1: pairs where a log changed are re-checked; the others keep their verdict
    if changed:
        bad = False
        for a in range(n):
            for b in range(a + 1, n):
                if md[a, MD_DIRTY] != BIG or md[b, MD_DIRTY] != BIG:
                    h, p = pair_update(S, a, b, lmp[a, b])
                    lmp[a, b] = p if h else -2  # -2: violated, scanned in full until it holds again
                if lmp[a, b] == -2:
                    bad = True
        lcache[5] = 1 if bad else 0
    if lcache[5] == 1 and may_record(vi, P_LOG1):
        if changed or lcache[0] != ws[W_GVER]:
            _, term = log1_first(S, n)
            k, ca, cb, m1, m2 = reled(ws, G, term)
            lcache[0] = ws[W_GVER]
            lcache[1] = k
            lcache[2] = ca
            lcache[3] = cb
            lcache[4] = m1
            lcache[7] = m2
        record_expected(vi, P_LOG1, step, now, lcache[1], lcache[2], lcache[3], lcache[4], lcache[7])
    # LOG-5
    if ws[W_NCONFLICT] > 0 and may_record(vi, P_LOG5):
        if lcache[6] != ws[W_GVER]:
            lcache[6] = ws[W_GVER]
            gxo = L.g_gxo(G)
            k0, a0, b0, m10, m20 = CA_NONE, 0, 0, 0, 0
            for r in range(ws[W_NCONFLICT]):
                k, a, b, m1, m2 = cause(ws, G, gxo[r])
                if k == CA_NONE:
                    k0 = CA_NONE
                    break
                if r == 0:
                    k0, a0, b0, m10, m20 = k, a, b, m1, m2
            lcache[8] = k0
            lcache[9] = a0
            lcache[10] = b0
            lcache[11] = m10
            lcache[12] = m20
        record_expected(vi, P_LOG5, step, now, lcache[8], lcache[9], lcache[10], lcache[11], lcache[12])
    # LOG-7
    if changed and vi[P_LOG7, V_STEP] < 0:
        for j in range(n):
            if md[j, MD_DIRTY] != BIG:
                frm = -BIG if md[j, MD_BCHG] == 1 else md[j, MD_DIRTY]
                if not shape_ok(C, S, j, frm):
                    record(vi, P_LOG7, step, now, CA_NONE, 0, 0, 0, 0)
                    break
    # LOG-L
    if (vi[P_LOGL, V_STEP] < 0 and ws[W_CALM] == 1 and ws[W_FIRST_ACK] < 0
            and now - ws[W_CALM_AT] > LOG_L_BOUND_MS and C[C_NCL] != 0):
        record(vi, P_LOGL, step, now, CA_NONE, 0, 0, 0, 0)



@njit(cache=True)
def lost_cause(ws, G, S, i, committed_only):
    """The causes of node i's dropped entries (those the ghost holds as committed, if
    `committed_only`), in index order: the first one's if every one has a cause."""
    md = L.md_(S)
    sv = L.sv_(S)
    sto = L.sto_(S)
    ent = L.ent_(S)
    gc = L.g_gc(G)
    base = md[i, MD_SVB]
    k0, a0, b0, m10, m20 = CA_NONE, 0, 0, 0, 0
    low = BIG
    for r in range(md[i, MD_SVN] - 1, -1, -1):
        index = base + r
        kk = st.offset_of(sto, i, index)
        if kk >= 0 and st.holds(ent, i, kk, sv[i, r, 0], sv[i, r, 1], sv[i, r, 2], sv[i, r, 3]):
            break
        if committed_only and not (gc[index, 0] == 1 and gc[index, 1] == sv[i, r, 0] and gc[index, 2] == sv[i, r, 1]
                                   and gc[index, 3] == sv[i, r, 2] and gc[index, 4] == sv[i, r, 3]):
            continue
        k, a, b, m1, m2 = cause(ws, G, index)
        if k == CA_NONE:
            return CA_NONE, 0, 0, 0, 0
        if index < low:
            low = index
            k0, a0, b0, m10, m20 = k, a, b, m1, m2
    return k0, a0, b0, m10, m20


@njit(cache=True)
def range_cause(ws, G, lo, hi):
    """[_cause(w, index) for index in range(lo + 1, hi + 1)]: the first if all have one."""
    if hi <= lo:
        return CA_NONE, 0, 0, 0, 0
    k0, a0, b0, m10, m20 = CA_NONE, 0, 0, 0, 0
    for index in range(lo + 1, hi + 1):
        k, a, b, m1, m2 = cause(ws, G, index)
        if k == CA_NONE:
            return CA_NONE, 0, 0, 0, 0
        if index == lo + 1:
            k0, a0, b0, m10, m20 = k, a, b, m1, m2
    return k0, a0, b0, m10, m20
