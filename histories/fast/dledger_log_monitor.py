"""Ghost variables and properties of the dledger_log fast world: reference_impl/dledger_log/
world.py's LogGhost (ghost_update) and spec/dledger_log.py's LOG-* properties with their
expected causes, over arrays, checked after every step with spec.properties.Monitor's rules.

The ghost tuple G (indexes G_*): per term `elected` (mask of servers) and `regressed`
(-1: absent); per entry index `gc` (the first entry committed there: present, term, pos,
size, body), `gx`/`gxn` (other entries committed there later, at most `sets` of them),
`ga`/`gan` (entries acknowledged SUCCESS there), `gk`/`gcnt` (entries a leader committed
there by counting an older term); the insertion orders of the committed, conflicting,
acknowledged and counted indexes (the
reference's maps iterate in that order); `gres` (AppendResult counts by code); the
history the expected causes read (drops, thin, Terms, liveness) is
histories.fast.dledger_log_ghost's.

A violation's expected cause is evidence-based (this entry, this crash, this stale
TRUNCATE): rather than restate spec/dledger_log.py's cause logic, the kernel asks
(`request`) and pauses, and histories.fast.dledger_log_causes runs the spec's own
functions on the world of that step. The kernel decides only when to ask: each violation
that might still be recorded as expected, and for state properties only when the
evidence they read changed (W_GVER) since they were last found expected.
"""

from __future__ import annotations

from numba import njit

import histories.fast.dledger_log_ghost as lg
import histories.fast.dledger_log_layout as L
import histories.fast.dledger_log_store as st
import histories.fast.election as E
from histories.fast.dledger_log_layout import (
    BIG,
    C_BLEN,
    C_LIVE1B,
    C_LIVE2B,
    C_ASTRAYB,
    C_LIVE3B,
    C_NCL,
    CA_NONE,
    ET_BODY,
    ET_POS,
    ET_SIZE,
    ET_TERM,
    HEADER,
    LV_STRAG,
    LV_TRANSFER,
    MD_BCHG,
    MD_DIRTY,
    MD_OEND,
    MD_SVB,
    MD_SVN,
    OVERFLOW_SETS,
    OVERFLOW_TERMS,
    P_LIVE1,
    P_LIVE2,
    P_LIVE3,
    P_LOG1,
    P_LOG5,
    P_LOG7,
    P_LOG8,
    P_LOGL,
    RQ_A,
    RQ_B,
    RQ_C,
    RQ_ON,
    S_BEGIN,
    S_COMMITTED,
    S_NENT,
    SUCCESS,
    V_CK,
    V_STEP,
    V_T,
    W_AGREED,
    W_AGREED_SINCE,
    W_CALM,
    W_CALM_AT,
    W_FIRST_ACK,
    W_GVER,
    W_MAXIDX,
    W_MAXTERM,
    W_NACKED,
    W_NCOMMITTED,
    W_NCONFLICT,
    W_NCOUNTED,
    W_NLED,
    W_NOW,
    W_NTHIN,
    W_NVOTES,
    W_SETTLED,
    W_SETTLED_T,
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
G_GDR = 11
G_GRES = 12
G_GDP = 13
G_GTH = 14
G_GTHO = 15
G_GVO = 16
G_GLED = 17
G_GTL = 18
G_GLV = 19
G_RQ = 20
G_MB = 21
G_GK = 22
G_GKO = 23
G_GXT = 24

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
def _commit(ws, G, index, term, pos, size, body, cterm):
    """ghost._commit: a node of term `cterm` committed the entry (term, pos, size, body) at `index`."""
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
        gxt = L.g_gxt(G)
        gxt[index] = cterm if L.g_gxn(G)[index] == 1 else max(gxt[index], cterm)
        ws[W_GVER] += 1


@njit(cache=True)
def see_committed_prefix(ws, G, S, i, lo, hi, cterm):
    """ghost._see_committed_prefix: entries (lo, hi] of server i's log, seen in term `cterm`."""
    sto = L.sto_(S)
    ent = L.ent_(S)
    n = sto[i, S_NENT]
    if n == 0:
        return
    b = sto[i, S_BEGIN]
    for index in range(max(lo, b - 1) + 1, min(hi, b + n - 1) + 1):
        k = index - b
        _commit(ws, G, index, ent[i, k, ET_TERM], ent[i, k, ET_POS], ent[i, k, ET_SIZE], ent[i, k, ET_BODY], cterm)


@njit(cache=True)
def on_commit_advanced(C, ws, G, S, i, old, new, term, leader, entry_term, now):
    see_committed_prefix(ws, G, S, i, old, new, term)
    if leader == 1:
        # ghost._check_majority of every newly committed entry the leader's log holds
        sto = L.sto_(S)
        ent = L.ent_(S)
        n = sto[i, S_NENT]
        b = sto[i, S_BEGIN]
        if n > 0:
            for index in range(max(old, b - 1) + 1, min(new, b + n - 1) + 1):
                k = index - b
                lg.check_majority(C, ws, G, S, i, index, ent[i, k, ET_TERM], ent[i, k, ET_POS], ent[i, k, ET_SIZE],
                                  ent[i, k, ET_BODY], term, 0, now)
    if leader == 1 and entry_term < term:
        # ghost `counted`: every entry this commit took, by index
        sto = L.sto_(S)
        ent = L.ent_(S)
        n = sto[i, S_NENT]
        b = sto[i, S_BEGIN]
        for index in range(max(old, b - 1) + 1, min(new, b + n - 1) + 1):
            k = index - b
            _see_index(ws, index)
            if _set_add(ws, L.g_gk(G), L.g_gcnt(G), L.g_gko(G), W_NCOUNTED, index, ent[i, k, ET_TERM],
                        ent[i, k, ET_POS], ent[i, k, ET_SIZE], ent[i, k, ET_BODY]):
                ws[W_GVER] += 1


@njit(cache=True)
def on_append_result(C, ws, G, S, i, code, index, term, now):
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
            lg.check_majority(C, ws, G, S, i, index, ent[i, k, ET_TERM], ent[i, k, ET_POS], ent[i, k, ET_SIZE],
                              ent[i, k, ET_BODY], term, 1, now)
        if ws[W_CALM] == 1 and ws[W_FIRST_ACK] < 0:
            ws[W_FIRST_ACK] = ws[W_NOW]


@njit(cache=True)
def on_leader(ws, G, i, term, end_term, now):
    """ghost.update of RoleChanged(LEADER): Terms.led with `led_ends`, then `regressed` and `elected`"""
    lg._note_led(ws, G, i, term, end_term, now)
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
def on_restart_or_calm(C, ws, G, S, alive):
    """world.ghost_update of Restart and Calm: every live server's committed prefix."""
    sto = L.sto_(S)
    for j in range(C[E.C_N]):
        if alive[j] == 1:
            see_committed_prefix(ws, G, S, j, -1, sto[j, S_COMMITTED], L.nd_(S)[j, E.TERM])


# --- what a step dropped (spec.dledger_log._dropped) ---


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


# --- the Monitor's bookkeeping (spec.properties.Monitor._record) ---


@njit(cache=True, inline='always')
def record(vi, p, step, now, k):
    vi[p, V_STEP] = step
    vi[p, V_T] = now
    vi[p, V_CK] = k


@njit(cache=True, inline='always')
def may_record(vi, p):
    """A violation of p may still be recorded: none yet, or only an expected one."""
    return vi[p, V_STEP] < 0 or vi[p, V_CK] != CA_NONE


@njit(cache=True, inline='always')
def record_unexpected(vi, p, step, now):
    """Monitor._record of a violation with no known cause (it replaces an expected one)."""
    if may_record(vi, p):
        record(vi, p, step, now, CA_NONE)


@njit(cache=True, inline='always')
def request(G, p, a, b, c):
    """Ask the caller for p's expected cause on the world after this step (the kernel pauses):
    histories.fast.dledger_log_causes computes it with spec/dledger_log.py's own functions."""
    rq = L.rq_(G)
    rq[p, RQ_ON] = 1
    rq[p, RQ_A] = a
    rq[p, RQ_B] = b
    rq[p, RQ_C] = c


# --- LOG-1: log matching, re-checked where a log changed ---


@njit(cache=True)
def _identical(ent, a, ka, b, kb):
    return (ent[a, ka, ET_TERM] == ent[b, kb, ET_TERM] and ent[a, ka, ET_POS] == ent[b, kb, ET_POS]
            and ent[a, ka, ET_SIZE] == ent[b, kb, ET_SIZE] and ent[a, ka, ET_BODY] == ent[b, kb, ET_BODY])


@njit(cache=True)
def pair_scan(S, a, b):
    """spec.dledger_log.log_matching_violation for the pair (a, b) from scratch:
    (holds, P, differing index, key): P is the first index of the overlap where the logs differ
    (past the overlap if none); they violate log matching iff some index from P to the overlap's
    end holds entries of equal terms. The key digests what the violation's cause reads besides the
    ghost (spec.dledger_log.log1_cause_terms: the pair, and both logs' terms from P up to the
    highest such index), so the cause is asked again only when that changed."""
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
            key = (a * 64 + b) * 1_000_003 + p
            for j in range(p, idx + 1):
                same = ent[a, j - ba, ET_TERM] == ent[b, j - bb, ET_TERM] and not _identical(ent, a, j - ba, b, j - bb)
                key = (key * 1_000_003 + ent[a, j - ba, ET_TERM]) * 1_000_003 + ent[b, j - bb, ET_TERM] * 2 + same
            return False, p, p, key
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
    """The first violating pair in the reference's order: (found, its pair_scan key)."""
    for a in range(n):
        for b in range(a + 1, n):
            h, _, _, key = pair_scan(S, a, b)
            if not h:
                return True, key
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
def stuck_candidates(C, S, alive, lead, lterm, mask):
    """spec.election.stuck_candidates is not None for the servers in `mask` (0.2.6 / 0.3.1.2):
    each a live CANDIDATE above the followed term whose log too many live peers beat."""
    if C[E.C_STEPDOWN] == 1 or lead < 0 or mask == 0:
        return False
    nd = L.nd_(S)
    n = C[E.C_N]
    quorum = n // 2 + 1
    for x in range(n):
        if (mask >> x) & 1 == 0:
            continue
        if alive[x] == 0 or nd[x, E.ROLE] != E.CANDIDATE or nd[x, E.TERM] <= lterm:
            return False
        ahead = 0
        for o in range(n):
            if o != x and alive[o] == 1 and (nd[x, E.LET] < nd[o, E.LET] or (
                    nd[x, E.LET] == nd[o, E.LET] and nd[x, E.LEI] < nd[o, E.LEI])):
                ahead += 1
        if n - ahead >= quorum:
            return False
    return True


@njit(cache=True)
def astray_possible(C, G, ws, x, lead, lterm, now, calm_at):
    """spec.election.astray for node x but its two_leaders_cause (which the caller's pause asks):
    another leader of the followed term lterm won it within C_ASTRAYB (from the calm on), and it is
    x or x accepted it in lterm."""
    gled = L.g_gled(G)
    gvo = L.g_gvo(G)
    for r in range(ws[W_NLED]):
        other = gled[r, 1]
        if gled[r, 0] != lterm or other == lead or now - max(gled[r, 2], calm_at) > C[C_ASTRAYB]:
            continue
        if other == x:
            return True
        for v in range(ws[W_NVOTES]):
            if gvo[v, 0] == x and gvo[v, 1] == lterm and gvo[v, 2] == other:
                return True
    return False


@njit(cache=True)
def _check_liveness(C, ws, G, S, alive, vi, step, now):
    """LIVE-1, LIVE-2, LIVE-3 (spec/election.py, as the log world has them)."""
    n = C[E.C_N]
    calm = ws[W_CALM] == 1
    calm_at = ws[W_CALM_AT]
    glv = L.g_glv(G)
    lead = ws[W_SETTLED]
    lterm = ws[W_SETTLED_T]
    nd = L.nd_(S)
    if (calm and ws[W_AGREED] == 0 and now - max(ws[W_AGREED_SINCE], calm_at) > C[C_LIVE1B] and C[E.C_ELECTOR] == 1
            and may_record(vi, P_LIVE1)):
        mask = 0
        if lead >= 0:
            for k in range(n):
                if alive[k] == 1 and k != lead and not (nd[k, E.ROLE] == E.FOLLOWER and nd[k, E.LEADER_ID] == lead
                                                        and nd[k, E.TERM] == lterm):
                    mask |= 1 << k
        if not stuck_candidates(C, S, alive, lead, lterm, mask):
            record(vi, P_LIVE1, step, now, CA_NONE)
        elif vi[P_LIVE1, V_STEP] < 0:
            request(G, P_LIVE1, 0, 0, 0)
    if vi[P_LIVE2, V_STEP] < 0:
        for k in range(n):
            if glv[k, LV_TRANSFER] >= 0 and now - glv[k, LV_TRANSFER] > C[C_LIVE2B]:
                record(vi, P_LIVE2, step, now, CA_NONE)
                break
    if calm and may_record(vi, P_LIVE3):
        # spec.election.live3_expected: each late straggler a stuck candidate or astray
        late = 0
        ask = False
        for k in range(n):
            if glv[k, LV_STRAG] >= 0 and now - max(glv[k, LV_STRAG], calm_at) > C[C_LIVE3B]:
                late |= 1 << k
                if not stuck_candidates(C, S, alive, lead, lterm, 1 << k):
                    if not astray_possible(C, G, ws, k, lead, lterm, now, calm_at):
                        record(vi, P_LIVE3, step, now, CA_NONE)
                        return
                    ask = True
        if ask:
            request(G, P_LIVE3, 0, 0, 0)  # astray needs ELE-1's evidence and its time, so every step
        elif late != 0 and vi[P_LIVE3, V_STEP] < 0:
            request(G, P_LIVE3, 0, 0, 0)


@njit(cache=True)
def check_states(C, ws, G, S, alive, vi, lmp, lcache, step, now):
    """The state properties after a step: LOG-1 (where logs changed), LOG-5, LOG-7, LOG-8,
    LIVE-*, LOG-L. lmp[a, b]: the pair's first difference while it holds (-1: re-scan);
    lcache: what the LOG-1 and LOG-5 causes were last asked on ([0], [1]: GVER and LOG-1's
    pair_scan key; [6]: GVER), so a violation still explained by unchanged evidence is not asked again."""
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
        key = lcache[1]
        if changed or lcache[0] != ws[W_GVER]:
            _, key = log1_first(S, n)
        if vi[P_LOG1, V_STEP] < 0 or lcache[0] != ws[W_GVER] or lcache[1] != key:
            lcache[0] = ws[W_GVER]
            lcache[1] = key
            request(G, P_LOG1, 0, 0, 0)
    # LOG-5
    if ws[W_NCONFLICT] > 0 and may_record(vi, P_LOG5) and (vi[P_LOG5, V_STEP] < 0 or lcache[6] != ws[W_GVER]):
        lcache[6] = ws[W_GVER]
        request(G, P_LOG5, 0, 0, 0)
    # LOG-7
    if changed and vi[P_LOG7, V_STEP] < 0:
        for j in range(n):
            if md[j, MD_DIRTY] != BIG:
                frm = -BIG if md[j, MD_BCHG] == 1 else md[j, MD_DIRTY]
                if not shape_ok(C, S, j, frm):
                    record(vi, P_LOG7, step, now, CA_NONE)
                    break
    # LOG-8
    if ws[W_NTHIN] > 0 and vi[P_LOG8, V_STEP] < 0:
        record(vi, P_LOG8, step, now, CA_NONE)
    _check_liveness(C, ws, G, S, alive, vi, step, now)
    # LOG-L
    if (vi[P_LOGL, V_STEP] < 0 and ws[W_CALM] == 1 and ws[W_FIRST_ACK] < 0
            and now - ws[W_CALM_AT] > LOG_L_BOUND_MS and C[C_NCL] != 0):
        record(vi, P_LOGL, step, now, CA_NONE)
