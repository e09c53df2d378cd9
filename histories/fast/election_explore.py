"""Exhaustive exploration over the election twin's arrays: one breadth-first level at a time.

`expand` takes the frontier (states packed one after another into an int64 buffer),
lists every choice of each state exactly as model_checks/explore.py's `events` does
(the protocol events in schedule order, each tick once per draw value, then every fault
event of every enabled kind: `election_schedule`), applies each through `run_kernel`
with that choice forced (one step: the twin's own transitions and monitor, no second
copy), fingerprints the result and keeps the new ones. The Python side is
model_checks/explore_fast.py.

A fingerprint hashes exactly what the reference explorer hashes (model_checks/symmetry.py),
so both count the same distinct states: without symmetry `hash(core.World)`, i.e. every
field `decode.world` reads (columns a record does not have, such as a HeartBeatRound's
vote counts or the take-leadership columns while there is none, are left out, since the
kernel may leave old values there); with symmetry the smallest hash over all renamings
of the nodes of what `_Fingerprints.under` hashes: no envelope or RPC ids (envelopes per
link in send order, an RPC by its content, an envelope of a closed RPC by that RPC's
id), no RPC window; `since` and `fresh` are renamed with their nodes.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from histories.fast.election import run_kernel
from histories.fast.election_layout import *  # noqa: F403 - the columns and enums, by the reference's names
from histories.fast.election_schedule import _enabled, fault_events

M1 = -49064778989728563  # MurmurHash3's fmix64 constants (0xff51afd7ed558ccd, 0xc4ceb9fe1a85ec53) as int64
M2 = -4265267296055464877
GOLD = -7046029254386353131  # 0x9E3779B97F4A7C15
LOW31 = (1 << 31) - 1
LOW33 = (1 << 33) - 1

NEED_SPACE = 1  # expand's status: the output buffers are full, grow them and call again from `done`
DONE = 0
MAX_STATES = 2  # --max-states reached


@njit(cache=True, inline='always')
def _fmix(k):
    k ^= (k >> 33) & LOW31
    k *= M1
    k ^= (k >> 33) & LOW31
    k *= M2
    k ^= (k >> 33) & LOW31
    return k


@njit(cache=True, inline='always')
def _mix(h, x):
    """One element into the running hash: a multiply and a xor-shift (a bijection of h for each x,
    high bits folded down), short enough a chain that a state costs ~1 us; `_fmix` at the end."""
    h = (h ^ x) * GOLD
    return h ^ ((h >> 31) & LOW33)


@njit(cache=True, inline='always')
def _node(perm, i):
    return perm[i] if i >= 0 else i


@njit(cache=True, inline='always')
def _mask(perm, m, n):
    out = 0
    for i in range(n):
        if (m >> i) & 1:
            out |= 1 << perm[i]
    return out


@njit(cache=True, inline='always')
def _message(h, fl, r, perm):
    """The message of flight row r (its kind's fields only; node ids renamed)."""
    mk = fl[r, E_MK]
    h = _mix(h, mk)
    nfld = 5 if mk == MK_LT_REQ else (4 if mk == MK_VOTE_REQ else (3 if mk == MK_VOTE_RESP else 2))
    for f in range(nfld):
        v = fl[r, E_M0 + f]
        if (f == 0 and (mk == MK_VOTE_REQ or mk == MK_HB_REQ)) or (mk == MK_LT_REQ and (f == 1 or f == 2 or f == 4)):
            v = _node(perm, v)
        h = _mix(h, v)
    return h


@njit(cache=True, inline='always')
def _rpc_content(rp, r, perm):
    """An open RPC without its id and window (symmetry._Fingerprints.rpc)."""
    ck = rp[r, R_CK]
    h = _mix(_mix(_mix(_mix(_mix(7, perm[rp[r, R_REQ]]), perm[rp[r, R_RESP]]), rp[r, R_DEADLINE]), ck), rp[r, R_C1])
    if ck == CK_TRANSFER:
        h = _mix(_mix(h, _node(perm, rp[r, R_C2])), rp[r, R_C3])
    return _fmix(h)


@njit(cache=True)
def fingerprint(n, nd, live, wmk, cut, fl, rp, elected, grants, ws, nt, own, perm, inv, sym, rh):
    """The hash of the world under renaming perm (node i becomes perm[i]; inv its inverse).
    sym: hash as the symmetry reduction does (no message or RPC ids, no windows). own[i]: `_own`
    of node i (what renaming does not touch, hashed once for all renamings). rh: scratch."""
    h = _mix(1, ws[W_NOW])
    for p in range(n):
        i = inv[p]
        h = _mix(h, own[i])
        tl = nd[i, TLW] != 0
        h = _mix(_mix(_mix(h, _node(perm, nd[i, VOTE])), _node(perm, nd[i, LEADER_ID])), _node(perm, nd[i, TRANSFEREE]))
        h = _mix(_mix(h, _node(perm, nd[i, TL_FROM]) if tl else 0), _node(perm, nd[i, TL_LEADER]) if tl else 0)
        for q in range(n):
            h = _mix(_mix(_mix(h, live[i, inv[q]]), wmk[i, inv[q]]), cut[i, inv[q]])
    nf = ws[W_NF]
    nr = ws[W_NR]
    if sym:
        for r in range(nr):  # the open RPCs by content, as a sorted multiset
            x = _rpc_content(rp, r, perm)
            k = r
            while k > 0 and rh[k - 1] > x:
                rh[k] = rh[k - 1]
                k -= 1
            rh[k] = x
        h = _mix(h, nr)
        for r in range(nr):
            h = _mix(h, rh[r])
        for p in range(n):  # envelopes per link, in send (id) order
            for q in range(n):
                cnt = 0
                for r in range(nf):
                    if perm[fl[r, E_SRC]] != p or perm[fl[r, E_DST]] != q:
                        continue
                    cnt += 1
                    h = _message(h, fl, r, perm)
                    h = _mix(_mix(h, fl[r, E_SENT]), fl[r, E_REPLY])
                    rpc = fl[r, E_RPC]
                    if rpc == 0:
                        h = _mix(h, 0)
                    else:
                        open_ = -1
                        for x in range(nr):
                            if rp[x, R_ID] == rpc:
                                open_ = x
                        if open_ >= 0:
                            h = _mix(_mix(h, 1), _rpc_content(rp, open_, perm))
                        else:
                            h = _mix(_mix(h, 2), rpc)
                h = _mix(h, cnt)
    else:
        h = _mix(h, nf)
        for r in range(nf):
            for f in range(E_MK):
                h = _mix(h, fl[r, f])
            h = _message(h, fl, r, perm)
        h = _mix(h, nr)
        for r in range(nr):
            h = _mix(_mix(_mix(_rpc_content(rp, r, perm), rp[r, R_ID]), rp[r, R_WINDOW]), h)
        h = _mix(h, ws[W_FRESH])
    h = _mix(h, ws[W_NEXT_ID])
    # the ghost: leaders and grants per term, its scalars, the notes (ghost.Terms) in seq order
    for t in range(elected.shape[0]):
        if elected[t] != 0:
            h = _mix(_mix(h, t), _mask(perm, elected[t], n))
        for p in range(n):
            g = grants[t, inv[p]]
            if g != 0:
                h = _mix(_mix(_mix(h, t), p), _mask(perm, g, n))
    h = _mix(_mix(_mix(h, ws[W_SETTLED]), ws[W_AGREED]), ws[W_AGREED_SINCE])
    sl = ws[W_SL]
    h = _mix(_mix(h, perm[sl] if sl >= 0 else -1), ws[W_SL_TERM] if sl >= 0 else 0)
    seq = ws[W_SEQ]
    h = _mix(h, seq)
    for s in range(seq):
        kind = nt[s, N_KIND]
        h = _mix(_mix(_mix(_mix(h, kind), perm[nt[s, N_NODE]]), nt[s, N_TERM]), nt[s, N_AT])
        if kind == NOTE_VOTE:
            h = _mix(h, perm[nt[s, N_CAND]])
    # core.History
    h = _mix(_mix(_mix(_mix(h, ws[W_LAST_FAULT]), ws[W_CRASHES]), ws[W_OS_CRASHES]), ws[W_DISK_LOSSES])
    h = _mix(_mix(_mix(h, _mask(perm, ws[W_LOST], n)), ws[W_CALM]), ws[W_CALM_AT])
    return _fmix(h)


@njit(cache=True)
def fixed_size(n, tcap):
    """int64s of a packed state's fixed part (the variable part: flight rows, RPC rows, notes)."""
    return WF + n * NF + 3 * n * n + 3 * n + n * LVF + tcap * (1 + 3 * n)


@njit(cache=True)
def pack(buf, o, n, nd, live, wmk, alive, fl, rp, cut, elected, grants, cs, ws, sn, nt, vl, lv):
    """Write the state at buf[o:]; returns the offset after it."""
    for k in range(WF):
        buf[o] = ws[k]
        o += 1
    for i in range(n):
        for c in range(NF):
            buf[o] = nd[i, c]
            o += 1
        for j in range(n):
            buf[o] = live[i, j]
            buf[o + 1] = wmk[i, j]
            buf[o + 2] = cut[i, j]
            o += 3
        buf[o] = alive[i]
        buf[o + 1] = cs[i]
        buf[o + 2] = sn[i]
        o += 3
        for c in range(LVF):
            buf[o] = lv[i, c]
            o += 1
    for t in range(elected.shape[0]):
        buf[o] = elected[t]
        o += 1
        for v in range(n):
            buf[o] = grants[t, v]
            buf[o + 1] = vl[t, v, 0]
            buf[o + 2] = vl[t, v, 1]
            o += 3
    for r in range(ws[W_NF]):
        for f in range(EF):
            buf[o] = fl[r, f]
            o += 1
    for r in range(ws[W_NR]):
        for f in range(RF):
            buf[o] = rp[r, f]
            o += 1
    for s in range(ws[W_SEQ]):
        for f in range(NTF):
            buf[o] = nt[s, f]
            o += 1
    return o


@njit(cache=True)
def unpack(buf, o, n, nd, live, wmk, alive, fl, rp, cut, elected, grants, cs, ws, sn, nt, vl, lv):
    """The state packed at buf[o:] into the arrays (rows past the counts are left as they are:
    the kernel reads flight, RPCs and notes only below their counts)."""
    for k in range(WF):
        ws[k] = buf[o]
        o += 1
    for i in range(n):
        for c in range(NF):
            nd[i, c] = buf[o]
            o += 1
        for j in range(n):
            live[i, j] = buf[o]
            wmk[i, j] = buf[o + 1]
            cut[i, j] = buf[o + 2]
            o += 3
        alive[i] = buf[o]
        cs[i] = buf[o + 1]
        sn[i] = buf[o + 2]
        o += 3
        for c in range(LVF):
            lv[i, c] = buf[o]
            o += 1
    for t in range(elected.shape[0]):
        elected[t] = buf[o]
        o += 1
        for v in range(n):
            grants[t, v] = buf[o]
            vl[t, v, 0] = buf[o + 1]
            vl[t, v, 1] = buf[o + 2]
            o += 3
    for r in range(ws[W_NF]):
        for f in range(EF):
            fl[r, f] = buf[o]
            o += 1
    for r in range(ws[W_NR]):
        for f in range(RF):
            rp[r, f] = buf[o]
            o += 1
    for s in range(ws[W_SEQ]):
        for f in range(NTF):
            nt[s, f] = buf[o]
            o += 1
    return o


def _own_columns() -> np.ndarray:
    """OWN[round type, take-leadership set, column]: 1 where `_own` hashes the column (the
    record has the field and it names no node), else 0."""
    out = np.ones((3, 2, NF), np.int64)
    for c in (VOTE, LEADER_ID, TRANSFEREE, TL_FROM, TL_LEADER):
        out[:, :, c] = 0
    out[0, :, RSEQ:RINC + 1] = 0
    out[RT_VOTE, :, [RSUCC, RMAXT, RINC]] = 0
    out[RT_HB, :, [RKMAX, RVALID, RACC, RBIG, RHASL]] = 0
    out[:, 0, TL_RPC:TL_LEADER + 1] = 0
    return out


OWN = _own_columns()


@njit(cache=True)
def _own(nd, alive, cs, lv, sn, fresh, i):
    """Node i's state without its node-id columns: its row as `decode.member` reads it, alive,
    the ghost's cut_since, stragglers and transfers entries, its since and whether it is fresh."""
    h = _mix(5, alive[i])
    rt = nd[i, RTYPE]
    tl = 1 if nd[i, TLW] != 0 else 0
    for c in range(NF):
        h = _mix(h, nd[i, c] * OWN[rt, tl, c])
    h = _mix(_mix(_mix(h, cs[i]), lv[i, LV_STRAG]), lv[i, LV_TRANS])
    return _fmix(_mix(_mix(h, sn[i]), (fresh >> i) & 1))


@njit(cache=True, inline='always')
def _blind(nd, i, c):
    """An id column of node i as itself (-2), another node (-3) or none (-1)."""
    v = nd[i, c]
    if (c == TL_FROM or c == TL_LEADER) and nd[i, TLW] == 0:
        return 0
    return -1 if v < 0 else (-2 if v == i else -3)


@njit(cache=True)
def key(n, nd, live, wmk, alive, fl, rp, cut, elected, grants, cs, ws, sn, nt, lv, perms, invs, sym, rh, sig):
    """The state's fingerprint: its own hash, or with symmetry the smallest over the renamings
    that list the nodes in order of their signatures (that set of renamed worlds is the same
    for every world of an orbit, so the smallest is the orbit's key; usually one renaming).
    sig[0]: each node's `_own`; sig[1]: its signature, `_own` and its id columns blinded, which
    renaming the nodes does not change (symmetry._Fingerprints.signature)."""
    for i in range(n):
        sig[0, i] = _own(nd, alive, cs, lv, sn, ws[W_FRESH], i)
        if sym:
            sig[1, i] = _fmix(_mix(_mix(_mix(_mix(_mix(sig[0, i], _blind(nd, i, VOTE)), _blind(nd, i, LEADER_ID)),
                                              _blind(nd, i, TRANSFEREE)), _blind(nd, i, TL_FROM)),
                                   _blind(nd, i, TL_LEADER)))
    best = 0
    first = True
    for k in range(perms.shape[0]):
        if sym:
            ok = True
            for p in range(1, n):
                if sig[1, invs[k, p - 1]] > sig[1, invs[k, p]]:
                    ok = False
                    break
            if not ok:
                continue
        x = fingerprint(n, nd, live, wmk, cut, fl, rp, elected, grants, ws, nt, sig[0], perms[k], invs[k], sym, rh)
        if first or x < best:
            best = x
            first = False
    return best


@njit(cache=True)
def expand(C, pw, pref, self_pref, isol, nd, live, wmk, alive, mt, fl, rp, cut, elected, grants, cs, ws, vi,
           sn, nt, vl, lv, log, evk, eva, fev_a, fev_b, kinds, wakes, slk, ob, oc, touched, prev_terms, force,
           front, foff, start, nfront, base, draws, limit, perms, invs, sym, rh, sig, is_state, seen, out, ooff, nout,
           par, evc, nstates, max_states, hits, ch, counts, keep):
    """Expand frontier states start..nfront-1 (state k at front[foff[k]:], global id base + k):
    every choice, applied by run_kernel. A new state (fingerprint not in `seen`, largest term
    <= limit or limit < 0) gets the next id: packed at out[ooff[nout]:], its parent and choice
    in par/evc. hits[p] = (parent id, choice) of the first violation of property p (a state
    property only in a new state within the limit, as the reference explorer checks).
    counts: [transitions, overflow code]. keep: pack the new states (not on the last level, which is
    never expanded). Returns (status, next frontier index, nout, nstates)."""
    n = C[C_N]
    niso = isol.shape[0]
    nd_ = draws.shape[0]
    rec = fixed_size(n, elected.shape[0]) + fl.shape[0] * EF + rp.shape[0] * RF + nt.shape[0] * NTF
    for f in range(start, nfront):
        if ooff[nout] + rec * (1 + ch.shape[0]) > out.shape[0] or nout + ch.shape[0] + 1 >= ooff.shape[0] \
                or nstates + ch.shape[0] >= par.shape[0]:
            return NEED_SPACE, f, nout, nstates
        unpack(front, foff[f], n, nd, live, wmk, alive, fl, rp, cut, elected, grants, cs, ws, sn, nt, vl, lv)
        # the choices, in model_checks.explore.events' order (ch rows: fault kind or -1, index, draw)
        _h, nev, nk, _past = _enabled(C, pw, nd, alive, fl, rp, cut, ws, sn, evk, eva, kinds, wakes, slk, -1)
        nch = 0
        for q in range(nev):
            if evk[q] == EV_TICK:
                for d in range(nd_):
                    ch[nch, 0] = -1
                    ch[nch, 1] = q
                    ch[nch, 2] = draws[d]
                    nch += 1
            else:
                ch[nch, 0] = -1
                ch[nch, 1] = q
                ch[nch, 2] = 0
                nch += 1
        for kk in range(nk):
            kind = kinds[kk]
            m = fault_events(C, alive, fl, ws[W_NF], cut, n, niso, kind, fev_a, fev_b)
            for sel in range(m):
                ch[nch, 0] = kind
                ch[nch, 1] = sel
                ch[nch, 2] = 0
                nch += 1
        for c in range(nch):
            if c > 0:
                unpack(front, foff[f], n, nd, live, wmk, alive, fl, rp, cut, elected, grants, cs, ws, sn, nt, vl, lv)
            for p in range(vi.shape[0]):  # this transition's verdicts alone
                for x in range(vi.shape[1]):
                    vi[p, x] = -1
                vi[p, V_CAUSE] = 0
            force[0] = ch[c, 0]
            force[1] = ch[c, 1]
            force[2] = ch[c, 2]
            run_kernel(C, pw, pref, self_pref, isol, nd, live, wmk, alive, mt, fl, rp, cut, elected, grants, cs, ws,
                       vi, sn, nt, vl, lv, log, evk, eva, fev_a, fev_b, kinds, wakes, slk, ob, oc, touched,
                       prev_terms, ws[W_STEPS] + 1, -1, force)
            if ws[W_STOP] < 0:
                counts[1] = ws[W_STOP]
                return ws[W_STOP], f, nout, nstates
            counts[0] += 1
            me = base + f
            for p in range(vi.shape[0]):
                if vi[p, V_STEP] >= 0 and hits[p, 0] < 0 and is_state[p] == 0:
                    hits[p, 0] = me
                    hits[p, 1] = c
            k2 = key(n, nd, live, wmk, alive, fl, rp, cut, elected, grants, cs, ws, sn, nt, lv, perms, invs, sym, rh, sig)
            if k2 in seen:
                continue
            if limit >= 0:
                top = 0
                for i in range(n):
                    top = max(top, nd[i, TERM])
                if top > limit:
                    continue
            seen[k2] = nstates
            par[nstates] = me
            evc[nstates] = c
            nstates += 1
            for p in range(vi.shape[0]):
                if vi[p, V_STEP] >= 0 and hits[p, 0] < 0 and is_state[p] == 1:
                    hits[p, 0] = me
                    hits[p, 1] = c
            if keep:  # the last level is counted and checked, never expanded: no need to keep it
                ooff[nout + 1] = pack(out, ooff[nout], n, nd, live, wmk, alive, fl, rp, cut, elected, grants, cs, ws,
                                      sn, nt, vl, lv)
            else:
                ooff[nout + 1] = ooff[nout]
            nout += 1
            if max_states > 0 and nstates >= max_states:
                return MAX_STATES, f + 1, nout, nstates
    return DONE, nfront, nout, nstates
