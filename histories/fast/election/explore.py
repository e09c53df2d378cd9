"""Exhaustive exploration over the election twin: state fingerprints, packing and successor expansion.

model_checks/explore_fast.py drives a breadth-first search; this module gives it the kernel side: a
fingerprint that is invariant under node permutations (`fingerprint`), `pack`/`unpack` of a state into a
frontier buffer, and `expand`, which applies every enabled event to a state."""

from __future__ import annotations

import numpy as np
from numba import njit

from histories.fast.core import schedule as core_schedule
from histories.fast.core import table as core_table
from histories.fast.core.layout import (
    E_DST,
    E_FIELDS,
    E_KIND,
    E_REPLY,
    E_RPC,
    E_SENT,
    E_SRC,
    EV_TICK,
    R_CONTEXT,
    R_CONTEXT_1,
    R_CONTEXT_2,
    R_CONTEXT_3,
    R_DEADLINE,
    R_ID,
    R_REQUESTER,
    R_RESPONDER,
    R_WINDOW,
    RPC_COLUMNS,
    W_CALM,
    W_CALM_AT,
    W_CRASHES,
    W_DISK_LOSSES,
    W_FLIGHT,
    W_FRESH,
    W_LAST_FAULT,
    W_LOST_WRITES,
    W_NEXT_ID,
    W_NOW,
    W_OS_CRASHES,
    W_RPCS,
    W_STEPS,
    W_STOP,
)
from histories.fast.election import layout
from histories.fast.election import world as election_world
from histories.fast.election.layout import (
    C_PEERS,
    CTX_TRANSFER,
    CURR_TERM,
    CURR_VOTE_FOR,
    ENVELOPE_COLUMNS,
    HEART_BEAT_REQUEST,
    LEADER_ID,
    LEADERSHIP_TRANSFER_REQUEST,
    MEMBER_COLUMNS,
    N_AT,
    N_CANDIDATE,
    N_KIND,
    N_NODE,
    N_TERM,
    NN_STRAGGLER_SINCE,
    NN_TRANSFER_SINCE,
    NODE_NOTE_COLUMNS,
    NOTE_COLUMNS,
    NOTE_VOTE,
    ROUND_ACCEPTED_NUM,
    ROUND_ALREADY_HAS_LEADER,
    ROUND_BIGGER_LEDGER_NUM,
    ROUND_HEART_BEAT,
    ROUND_INCONSIST_LEADER,
    ROUND_KIND,
    ROUND_KNOWN_MAX_TERM_IN_GROUP,
    ROUND_MAX_TERM,
    ROUND_SEQ,
    ROUND_SUCC_NUM,
    ROUND_VALID_NUM,
    ROUND_VOTE,
    TAKE_LEADERSHIP,
    TAKE_LEADERSHIP_LEADER_ID,
    TAKE_LEADERSHIP_RPC,
    TAKE_LEADERSHIP_TRANSFER_ID,
    TRANSFEREE,
    V_CAUSE,
    V_STEP,
    VOTE_REQUEST,
    VOTE_RESPONSE,
    W_AGREED,
    W_AGREED_SINCE,
    W_NOTES,
    W_SETTLED,
    W_SETTLED_LEADER,
    W_SETTLED_LEADER_TERM,
    WORLD_COLUMNS,
)

M1 = -49064778989728563  # MurmurHash3's fmix64 constants (0xff51afd7ed558ccd, 0xc4ceb9fe1a85ec53) as int64


M2 = -4265267296055464877


GOLD = -7046029254386353131  # 0x9E3779B97F4A7C15


LOW31 = (1 << 31) - 1


LOW33 = (1 << 33) - 1


NEED_SPACE = 1  # expand's status: the output buffers are full, grow them and call again from `done`


DONE = 0


MAX_STATES = 2  # --max-states reached


@njit(cache=True, inline='always')
def fmix(k):
    k ^= (k >> 33) & LOW31
    k *= M1
    k ^= (k >> 33) & LOW31
    k *= M2
    k ^= (k >> 33) & LOW31
    return k


@njit(cache=True, inline='always')
def mix(h, x):
    """One element into the running hash: a multiply and a xor-shift (a bijection of h for each x,
    high bits folded down), short enough a chain that a state costs ~1 us; `_fmix` at the end."""
    h = (h ^ x) * GOLD
    return h ^ ((h >> 31) & LOW33)


@njit(cache=True, inline='always')
def node(perm, i):
    return perm[i] if i >= 0 else i


@njit(cache=True, inline='always')
def mask(perm, m, n):
    out = 0
    for i in range(n):
        if (m >> i) & 1:
            out |= 1 << perm[i]
    return out


@njit(cache=True, inline='always')
def message(S, h, r, perm):
    """The message of flight row r (its kind's fields only; node ids renamed)."""
    flight = core_table.flight(S)
    message_kind = flight[r, E_KIND]
    h = mix(h, message_kind)
    nfld = 5 if message_kind == LEADERSHIP_TRANSFER_REQUEST else (4 if message_kind == VOTE_REQUEST else (3 if message_kind == VOTE_RESPONSE else 2))
    for f in range(nfld):
        v = flight[r, E_FIELDS + f]
        if (f == 0 and (message_kind == VOTE_REQUEST or message_kind == HEART_BEAT_REQUEST)) or (message_kind == LEADERSHIP_TRANSFER_REQUEST and (f == 1 or f == 2 or f == 4)):
            v = node(perm, v)
        h = mix(h, v)
    return h


@njit(cache=True, inline='always')
def rpc_content(S, r, perm):
    """An open RPC without its id and window (symmetry._Fingerprints.rpc)."""
    rpcs = core_table.rpcs(S)
    context = rpcs[r, R_CONTEXT]
    h = mix(mix(mix(mix(mix(7, perm[rpcs[r, R_REQUESTER]]), perm[rpcs[r, R_RESPONDER]]), rpcs[r, R_DEADLINE]), context), rpcs[r, R_CONTEXT_1])
    if context == CTX_TRANSFER:
        h = mix(mix(h, node(perm, rpcs[r, R_CONTEXT_2])), rpcs[r, R_CONTEXT_3])
    return fmix(h)


@njit(cache=True)
def fingerprint(S, n, own, perm, inv, sym, scratch):
    """The hash of the world under renaming perm (node i becomes perm[i]; inv its inverse).
    sym: hash as the symmetry reduction does (no message or RPC ids, no windows). own[i]: `_own`
    of node i (what renaming does not touch, hashed once for all renamings). scratch: a row to sort in."""
    members = layout.members(S)
    peers_live = layout.peers_live(S)
    water_marks = layout.water_marks(S)
    cut = core_table.cut(S)
    flight = core_table.flight(S)
    rpcs = core_table.rpcs(S)
    elected = layout.elected(S)
    grants = layout.grants(S)
    world = core_table.world(S)
    notes = layout.notes(S)
    h = mix(1, world[W_NOW])
    for p in range(n):
        i = inv[p]
        h = mix(h, own[i])
        taking = members[i, TAKE_LEADERSHIP] != 0
        h = mix(mix(mix(h, node(perm, members[i, CURR_VOTE_FOR])), node(perm, members[i, LEADER_ID])), node(perm, members[i, TRANSFEREE]))
        h = mix(mix(h, node(perm, members[i, TAKE_LEADERSHIP_TRANSFER_ID]) if taking else 0), node(perm, members[i, TAKE_LEADERSHIP_LEADER_ID]) if taking else 0)
        for q in range(n):
            h = mix(mix(mix(h, peers_live[i, inv[q]]), water_marks[i, inv[q]]), cut[i, inv[q]])
    flight_count = world[W_FLIGHT]
    rpc_count = world[W_RPCS]
    if sym:
        for r in range(rpc_count):  # the open RPCs by content, as a sorted multiset
            x = rpc_content(S, r, perm)
            k = r
            while k > 0 and scratch[k - 1] > x:
                scratch[k] = scratch[k - 1]
                k -= 1
            scratch[k] = x
        h = mix(h, rpc_count)
        for r in range(rpc_count):
            h = mix(h, scratch[r])
        for p in range(n):  # envelopes per link, in send (id) order
            for q in range(n):
                cnt = 0
                for r in range(flight_count):
                    if perm[flight[r, E_SRC]] != p or perm[flight[r, E_DST]] != q:
                        continue
                    cnt += 1
                    h = message(S, h, r, perm)
                    h = mix(mix(h, flight[r, E_SENT]), flight[r, E_REPLY])
                    rpc = flight[r, E_RPC]
                    if rpc == 0:
                        h = mix(h, 0)
                    else:
                        open_ = -1
                        for x in range(rpc_count):
                            if rpcs[x, R_ID] == rpc:
                                open_ = x
                        if open_ >= 0:
                            h = mix(mix(h, 1), rpc_content(S, open_, perm))
                        else:
                            h = mix(mix(h, 2), rpc)
                h = mix(h, cnt)
    else:
        h = mix(h, flight_count)
        for r in range(flight_count):
            for f in range(E_KIND):
                h = mix(h, flight[r, f])
            h = message(S, h, r, perm)
        h = mix(h, rpc_count)
        for r in range(rpc_count):
            h = mix(mix(mix(rpc_content(S, r, perm), rpcs[r, R_ID]), rpcs[r, R_WINDOW]), h)
        h = mix(h, world[W_FRESH])
    h = mix(h, world[W_NEXT_ID])
    # the ghost: leaders and grants per term, its scalars, the notes (ghost.Terms) in seq order
    for t in range(elected.shape[0]):
        if elected[t] != 0:
            h = mix(mix(h, t), mask(perm, elected[t], n))
        for p in range(n):
            g = grants[t, inv[p]]
            if g != 0:
                h = mix(mix(mix(h, t), p), mask(perm, g, n))
    h = mix(mix(mix(h, world[W_SETTLED]), world[W_AGREED]), world[W_AGREED_SINCE])
    settled_leader = world[W_SETTLED_LEADER]
    h = mix(mix(h, perm[settled_leader] if settled_leader >= 0 else -1), world[W_SETTLED_LEADER_TERM] if settled_leader >= 0 else 0)
    seq = world[W_NOTES]
    h = mix(h, seq)
    for s in range(seq):
        kind = notes[s, N_KIND]
        h = mix(mix(mix(mix(h, kind), perm[notes[s, N_NODE]]), notes[s, N_TERM]), notes[s, N_AT])
        if kind == NOTE_VOTE:
            h = mix(h, perm[notes[s, N_CANDIDATE]])
    # core.History
    h = mix(mix(mix(mix(h, world[W_LAST_FAULT]), world[W_CRASHES]), world[W_OS_CRASHES]), world[W_DISK_LOSSES])
    h = mix(mix(mix(h, mask(perm, world[W_LOST_WRITES], n)), world[W_CALM]), world[W_CALM_AT])
    return fmix(h)


@njit(cache=True)
def fixed_size(n, tcap):
    """int64s of a packed state's fixed part (the variable part: flight rows, RPC rows, notes)."""
    return WORLD_COLUMNS + n * MEMBER_COLUMNS + 3 * n * n + 3 * n + n * NODE_NOTE_COLUMNS + tcap * (1 + 3 * n)


@njit(cache=True)
def pack(S, buf, o, n):
    """Write the state at buf[o:]; returns the offset after it."""
    members = layout.members(S)
    peers_live = layout.peers_live(S)
    water_marks = layout.water_marks(S)
    alive = core_table.alive(S)
    flight = core_table.flight(S)
    rpcs = core_table.rpcs(S)
    cut = core_table.cut(S)
    elected = layout.elected(S)
    grants = layout.grants(S)
    cut_since = layout.cut_since(S)
    world = core_table.world(S)
    since = core_table.since(S)
    notes = layout.notes(S)
    vote_chains = layout.vote_chains(S)
    node_notes = layout.node_notes(S)
    for k in range(WORLD_COLUMNS):
        buf[o] = world[k]
        o += 1
    for i in range(n):
        for c in range(MEMBER_COLUMNS):
            buf[o] = members[i, c]
            o += 1
        for j in range(n):
            buf[o] = peers_live[i, j]
            buf[o + 1] = water_marks[i, j]
            buf[o + 2] = cut[i, j]
            o += 3
        buf[o] = alive[i]
        buf[o + 1] = cut_since[i]
        buf[o + 2] = since[i]
        o += 3
        for c in range(NODE_NOTE_COLUMNS):
            buf[o] = node_notes[i, c]
            o += 1
    for t in range(elected.shape[0]):
        buf[o] = elected[t]
        o += 1
        for v in range(n):
            buf[o] = grants[t, v]
            buf[o + 1] = vote_chains[t, v, 0]
            buf[o + 2] = vote_chains[t, v, 1]
            o += 3
    for r in range(world[W_FLIGHT]):
        for f in range(ENVELOPE_COLUMNS):
            buf[o] = flight[r, f]
            o += 1
    for r in range(world[W_RPCS]):
        for f in range(RPC_COLUMNS):
            buf[o] = rpcs[r, f]
            o += 1
    for s in range(world[W_NOTES]):
        for f in range(NOTE_COLUMNS):
            buf[o] = notes[s, f]
            o += 1
    return o


@njit(cache=True)
def unpack(S, buf, o, n):
    """The state packed at buf[o:] into the arrays (rows past the counts are left as they are:
    the kernel reads flight, RPCs and notes only below their counts)."""
    members = layout.members(S)
    peers_live = layout.peers_live(S)
    water_marks = layout.water_marks(S)
    alive = core_table.alive(S)
    flight = core_table.flight(S)
    rpcs = core_table.rpcs(S)
    cut = core_table.cut(S)
    elected = layout.elected(S)
    grants = layout.grants(S)
    cut_since = layout.cut_since(S)
    world = core_table.world(S)
    since = core_table.since(S)
    notes = layout.notes(S)
    vote_chains = layout.vote_chains(S)
    node_notes = layout.node_notes(S)
    for k in range(WORLD_COLUMNS):
        world[k] = buf[o]
        o += 1
    for i in range(n):
        for c in range(MEMBER_COLUMNS):
            members[i, c] = buf[o]
            o += 1
        for j in range(n):
            peers_live[i, j] = buf[o]
            water_marks[i, j] = buf[o + 1]
            cut[i, j] = buf[o + 2]
            o += 3
        alive[i] = buf[o]
        cut_since[i] = buf[o + 1]
        since[i] = buf[o + 2]
        o += 3
        for c in range(NODE_NOTE_COLUMNS):
            node_notes[i, c] = buf[o]
            o += 1
    for t in range(elected.shape[0]):
        elected[t] = buf[o]
        o += 1
        for v in range(n):
            grants[t, v] = buf[o]
            vote_chains[t, v, 0] = buf[o + 1]
            vote_chains[t, v, 1] = buf[o + 2]
            o += 3
    for r in range(world[W_FLIGHT]):
        for f in range(ENVELOPE_COLUMNS):
            flight[r, f] = buf[o]
            o += 1
    for r in range(world[W_RPCS]):
        for f in range(RPC_COLUMNS):
            rpcs[r, f] = buf[o]
            o += 1
    for s in range(world[W_NOTES]):
        for f in range(NOTE_COLUMNS):
            notes[s, f] = buf[o]
            o += 1
    return o


def own_columns() -> np.ndarray:
    """OWN[round type, take-leadership set, column]: 1 where `_own` hashes the column (the
    record has the field and it names no node), else 0."""
    out = np.ones((3, 2, MEMBER_COLUMNS), np.int64)
    for c in (CURR_VOTE_FOR, LEADER_ID, TRANSFEREE, TAKE_LEADERSHIP_TRANSFER_ID, TAKE_LEADERSHIP_LEADER_ID):
        out[:, :, c] = 0
    out[0, :, ROUND_SEQ:ROUND_INCONSIST_LEADER + 1] = 0
    out[ROUND_VOTE, :, [ROUND_SUCC_NUM, ROUND_MAX_TERM, ROUND_INCONSIST_LEADER]] = 0
    out[ROUND_HEART_BEAT, :, [ROUND_KNOWN_MAX_TERM_IN_GROUP, ROUND_VALID_NUM, ROUND_ACCEPTED_NUM, ROUND_BIGGER_LEDGER_NUM, ROUND_ALREADY_HAS_LEADER]] = 0
    out[:, 0, TAKE_LEADERSHIP_RPC:TAKE_LEADERSHIP_LEADER_ID + 1] = 0
    return out


OWN = own_columns()


@njit(cache=True)
def own(S, fresh, i):
    """Node i's state without its node-id columns: its row as `decode.member` reads it, alive,
    the ghost's cut_since, stragglers and transfers entries, its since and whether it is fresh."""
    members = layout.members(S)
    alive = core_table.alive(S)
    cut_since = layout.cut_since(S)
    node_notes = layout.node_notes(S)
    since = core_table.since(S)
    h = mix(5, alive[i])
    round_kind = members[i, ROUND_KIND]
    taking = 1 if members[i, TAKE_LEADERSHIP] != 0 else 0
    for c in range(MEMBER_COLUMNS):
        h = mix(h, members[i, c] * OWN[round_kind, taking, c])
    h = mix(mix(mix(h, cut_since[i]), node_notes[i, NN_STRAGGLER_SINCE]), node_notes[i, NN_TRANSFER_SINCE])
    return fmix(mix(mix(h, since[i]), (fresh >> i) & 1))


@njit(cache=True, inline='always')
def blind(S, i, c):
    """An id column of node i as itself (-2), another node (-3) or none (-1)."""
    members = layout.members(S)
    v = members[i, c]
    if (c == TAKE_LEADERSHIP_TRANSFER_ID or c == TAKE_LEADERSHIP_LEADER_ID) and members[i, TAKE_LEADERSHIP] == 0:
        return 0
    return -1 if v < 0 else (-2 if v == i else -3)


@njit(cache=True)
def key(S, n, symmetry):
    """The state's fingerprint: its own hash, or with symmetry the smallest over the renamings
    that list the nodes in order of their signatures (that set of renamed worlds is the same
    for every world of an orbit, so the smallest is the orbit's key; usually one renaming).
    sig[0]: each node's `_own`; sig[1]: its signature, `_own` and its id columns blinded, which
    renaming the nodes does not change (symmetry._Fingerprints.signature).
    symmetry = (perms, invs, sym, scratch, sig): the renamings, their inverses, whether to reduce
    by symmetry, and scratch rows."""
    perms, invs, sym, scratch, sig = symmetry
    world = core_table.world(S)
    for i in range(n):
        sig[0, i] = own(S, world[W_FRESH], i)
        if sym:
            sig[1, i] = fmix(mix(mix(mix(mix(mix(sig[0, i], blind(S, i, CURR_VOTE_FOR)), blind(S, i, LEADER_ID)),
                                              blind(S, i, TRANSFEREE)), blind(S, i, TAKE_LEADERSHIP_TRANSFER_ID)),
                                   blind(S, i, TAKE_LEADERSHIP_LEADER_ID)))
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
        x = fingerprint(S, n, sig[0], perms[k], invs[k], sym, scratch)
        if first or x < best:
            best = x
            first = False
    return best


@njit(cache=True)
def expand(S, mutant, frontier, choosing, found, symmetry, bounds):
    """Expand frontier states start..nfront-1 (state k at front[foff[k]:], global id base + k):
    every choice, applied by the kernel (election.world.run, one step; `mutant` as it takes it). A
    new state (fingerprint not in `seen`, largest term <= limit or limit < 0) gets the next id:
    packed at out[ooff[nout]:], its parent and choice in par/evc. hits[p] = (parent id, choice) of
    the first violation of property p (a state property only in a new state within the limit, as
    the reference explorer checks). counts: [transitions, overflow code]. keep: pack the new
    states (not on the last level, which is never expanded).

    The search's arrays come in groups: frontier = (front, foff, out, ooff); choosing = (draws,
    choices: scratch rows of fault kind or -1, index, draw); found = (seen, par, evc, hits,
    is_state, counts); symmetry = (perms, invs, sym, scratch, sig), as `key` takes it; bounds =
    (start, nfront, base, nout, nstates, limit, max_states, keep).
    Returns (status, next frontier index, nout, nstates)."""
    front, foff, out, ooff = frontier
    draws, choices = choosing
    seen, par, evc, hits, is_state, counts = found
    start, nfront, base, nout, nstates, limit, max_states, keep = bounds
    config = core_table.config(S)
    isolations = core_table.isolations(S)
    members = layout.members(S)
    flight = core_table.flight(S)
    rpcs = core_table.rpcs(S)
    elected = layout.elected(S)
    world = core_table.world(S)
    verdicts = core_table.verdicts(S)
    notes = layout.notes(S)
    event_kinds = core_table.event_kinds(S)
    kinds = core_table.kinds(S)
    force = core_table.force(S)
    n = config[C_PEERS]
    isolation_count = isolations.shape[0]
    draw_count = draws.shape[0]
    rec = fixed_size(n, elected.shape[0]) + flight.shape[0] * ENVELOPE_COLUMNS + rpcs.shape[0] * RPC_COLUMNS + notes.shape[0] * NOTE_COLUMNS
    for f in range(start, nfront):
        if ooff[nout] + rec * (1 + choices.shape[0]) > out.shape[0] or nout + choices.shape[0] + 1 >= ooff.shape[0] \
                or nstates + choices.shape[0] >= par.shape[0]:
            return NEED_SPACE, f, nout, nstates
        unpack(S, front, foff[f], n)
        # the choices, in model_checks.explore.events' order (ch rows: fault kind or -1, index, draw)
        _horizon, event_count, kind_count, _past = election_world.enabled(S, -1)
        nch = 0
        for q in range(event_count):
            if event_kinds[q] == EV_TICK:
                for d in range(draw_count):
                    choices[nch, 0] = -1
                    choices[nch, 1] = q
                    choices[nch, 2] = draws[d]
                    nch += 1
            else:
                choices[nch, 0] = -1
                choices[nch, 1] = q
                choices[nch, 2] = 0
                nch += 1
        for kind_index in range(kind_count):
            kind = kinds[kind_index]
            m = core_schedule.fault_events(S, world[W_FLIGHT], n, isolation_count, kind)
            for sel in range(m):
                choices[nch, 0] = kind
                choices[nch, 1] = sel
                choices[nch, 2] = 0
                nch += 1
        for c in range(nch):
            if c > 0:
                unpack(S, front, foff[f], n)
            for p in range(verdicts.shape[0]):  # this transition's verdicts alone
                for x in range(verdicts.shape[1]):
                    verdicts[p, x] = -1
                verdicts[p, V_CAUSE] = 0
            force[0] = choices[c, 0]
            force[1] = choices[c, 1]
            force[2] = choices[c, 2]
            election_world.run(S, world[W_STEPS] + 1, -1, mutant)
            if world[W_STOP] < 0:
                counts[1] = world[W_STOP]
                return world[W_STOP], f, nout, nstates
            counts[0] += 1
            state_id = base + f
            for p in range(verdicts.shape[0]):
                if verdicts[p, V_STEP] >= 0 and hits[p, 0] < 0 and is_state[p] == 0:
                    hits[p, 0] = state_id
                    hits[p, 1] = c
            k2 = key(S, n, symmetry)
            if k2 in seen:
                continue
            if limit >= 0:
                top = 0
                for i in range(n):
                    top = max(top, members[i, CURR_TERM])
                if top > limit:
                    continue
            seen[k2] = nstates
            par[nstates] = state_id
            evc[nstates] = c
            nstates += 1
            for p in range(verdicts.shape[0]):
                if verdicts[p, V_STEP] >= 0 and hits[p, 0] < 0 and is_state[p] == 1:
                    hits[p, 0] = state_id
                    hits[p, 1] = c
            if keep:  # the last level is counted and checked, never expanded: no need to keep it
                ooff[nout + 1] = pack(S, out, ooff[nout], n)
            else:
                ooff[nout + 1] = ooff[nout]
            nout += 1
            if max_states > 0 and nstates >= max_states:
                return MAX_STATES, f + 1, nout, nstates
    return DONE, nfront, nout, nstates
