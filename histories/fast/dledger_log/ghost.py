"""The dledger_log ghost: the history of votes, leaders, crashes and dropped entries the monitor reasons with.

Mirrors reference_impl/dledger_log/ghost.py: it is never seen by a server; it exists so a
violated property can be told apart from an expected consequence of an injected fault."""

from __future__ import annotations

from numba import njit

from histories.fast.core import table as core_table
from histories.fast.core.layout import (
    W_STOP,
)
from histories.fast.dledger_log import layout
from histories.fast.dledger_log import store as dledger_log_store
from histories.fast.dledger_log.layout import (
    BIG,
    DR_AT,
    DR_ENTRIES,
    DR_FLUSHED,
    DR_HIGH,
    DR_HOW,
    DR_LEADER,
    DR_LOW,
    DR_SEQ,
    DR_SERVER,
    DR_STALE,
    DR_TERM,
    HOW_DISK,
    HOW_OS,
    HOW_TRUNCATE,
    LV_TRANSFER_SINCE,
    OVERFLOW_HISTORY,
    SC_DIRTY,
    SC_SAVED,
    SC_SAVED_FROM,
    S_BEGIN_INDEX,
    S_ENTRIES,
    S_FLUSHED_INDEX,
    TH_AT,
    TH_ENTRY_TERM,
    TH_HOLDERS,
    TH_LEADER,
    TH_ON,
    TH_TERM,
    TH_WHAT,
    W_AGREED,
    W_AGREED_SINCE,
    W_DROPPED_ENTRIES,
    W_DROPS,
    W_EVIDENCE,
    W_LEADERSHIPS,
    W_NOTES,
    W_SETTLED_LEADER,
    W_SETTLED_LEADER_TERM,
    W_TERMS_LOST,
    W_THIN,
    W_VOTES,
)
from histories.fast.election import layout as election_layout
from histories.fast.election.layout import (
    C_PEERS,
    CURR_TERM,
    FOLLOWER,
    LEADER,
    LEADER_ID,
    NN_STRAGGLER_SINCE,
    ROLE,
    TRANSFEREE,
)


@njit(cache=True)
def note_vote(S, voter, term, candidate, now):
    """election.ghost.note of a VoteGranted: (voter, term) -> + (candidate, at, seq)."""
    world = core_table.world(S)
    votes = layout.votes(S)
    r = world[W_VOTES]
    if r >= votes.shape[0]:
        world[W_STOP] = OVERFLOW_HISTORY
        return
    votes[r, 0] = voter
    votes[r, 1] = term
    votes[r, 2] = candidate
    votes[r, 3] = now
    votes[r, 4] = world[W_NOTES]
    world[W_VOTES] = r + 1
    world[W_NOTES] += 1
    world[W_EVIDENCE] += 1


@njit(cache=True)
def note_led(S, leader, term, end_term, now):
    """election.ghost.note of a RoleChanged to LEADER: term -> + (leader, at, seq), and the
    leader's ledgerEndTerm then (LogGhost.led_ends)."""
    world = core_table.world(S)
    leaderships = layout.leaderships(S)
    r = world[W_LEADERSHIPS]
    if r >= leaderships.shape[0]:
        world[W_STOP] = OVERFLOW_HISTORY
        return
    leaderships[r, 0] = term
    leaderships[r, 1] = leader
    leaderships[r, 2] = now
    leaderships[r, 3] = world[W_NOTES]
    leaderships[r, 4] = end_term
    world[W_LEADERSHIPS] = r + 1
    world[W_NOTES] += 1
    world[W_EVIDENCE] += 1


@njit(cache=True)
def note_crash(S, node, kind, term_before, now):
    """election.ghost.note_crash: an OS crash or disk loss takes the currterm file."""
    world = core_table.world(S)
    if kind == 0:
        return
    terms_lost = layout.terms_lost(S)
    r = world[W_TERMS_LOST]
    if r >= terms_lost.shape[0]:
        world[W_STOP] = OVERFLOW_HISTORY
        return
    terms_lost[r, 0] = node
    terms_lost[r, 1] = now
    terms_lost[r, 2] = term_before
    terms_lost[r, 3] = world[W_NOTES]
    world[W_TERMS_LOST] = r + 1
    world[W_NOTES] += 1
    world[W_EVIDENCE] += 1


@njit(cache=True)
def drop_row(S, server, now, how, lo, hi, flushed, leader, term):
    """ghost._drop: a new Drop row (its entries are the caller's to copy), or -1 on overflow."""
    world = core_table.world(S)
    drops = layout.drops(S)
    dropped_entries = layout.dropped_entries(S)
    r = world[W_DROPS]
    pay = world[W_DROPPED_ENTRIES]
    if r >= drops.shape[0] or pay + hi - lo + 1 > dropped_entries.shape[0]:
        world[W_STOP] = OVERFLOW_HISTORY
        return -1
    drops[r, DR_SERVER] = server
    drops[r, DR_AT] = now
    drops[r, DR_SEQ] = world[W_NOTES]
    drops[r, DR_HOW] = how
    drops[r, DR_LOW] = lo
    drops[r, DR_HIGH] = hi
    drops[r, DR_FLUSHED] = flushed
    drops[r, DR_LEADER] = leader
    drops[r, DR_TERM] = term
    drops[r, DR_STALE] = 0
    drops[r, DR_ENTRIES] = pay
    world[W_DROPS] = r + 1
    world[W_DROPPED_ENTRIES] = pay + hi - lo + 1
    world[W_NOTES] += 1
    world[W_EVIDENCE] += 1
    return r


@njit(cache=True)
def crash_note(S, i, kind, now):
    """ghost.crash_note, before server i's crash of `kind` (0 process, 1 OS, 2 disk): its
    currterm file, then the entries the crash takes (store.crash: the unflushed tail, or all)."""
    members = election_layout.members(S)
    note_crash(S, i, kind, members[i, CURR_TERM], now)
    if kind == 0:
        return
    store = layout.store(S)
    n = store[i, S_ENTRIES]
    if n == 0:
        return
    b = store[i, S_BEGIN_INDEX]
    keep = 0 if kind == 2 else min(max(0, store[i, S_FLUSHED_INDEX] - b + 1), n)
    if keep >= n:
        return
    r = drop_row(S, i, now, HOW_DISK if kind == 2 else HOW_OS, b + keep, b + n - 1, store[i, S_FLUSHED_INDEX], -1, -1)
    if r < 0:
        return
    entries = layout.entries(S)
    dropped_entries = layout.dropped_entries(S)
    pay = layout.drops(S)[r, DR_ENTRIES]
    for k in range(keep, n):
        for f in range(4):
            dropped_entries[pay + k - keep, f] = entries[i, k, f]


@njit(cache=True)
def lost_range(S, i):
    """store.lost_entries(the log the step began with, the log now) of server i, from the saved
    tail (sv): (lo, hi, first sv row), lo > hi when nothing was lost."""
    store_changes = layout.store_changes(S)
    saved_entries = layout.saved_entries(S)
    store = layout.store(S)
    entries = layout.entries(S)
    base = store_changes[i, SC_SAVED_FROM]
    lo = 1
    hi = 0
    if store_changes[i, SC_DIRTY] == BIG:  # the log did not change in this step (sv is an older step's)
        return lo, hi, 0
    for r in range(store_changes[i, SC_SAVED] - 1, -1, -1):
        index = base + r
        k = dledger_log_store.offset_of(store, i, index)
        if k >= 0 and dledger_log_store.holds(entries, i, k, saved_entries[i, r, 0], saved_entries[i, r, 1], saved_entries[i, r, 2], saved_entries[i, r, 3]):
            break
        if hi < lo:
            hi = index
        lo = index
    return lo, hi, lo - base


@njit(cache=True)
def on_entries_dropped(S, i, leader, term, now):
    """ghost.update of EntriesDropped: a truncate Drop, stale when its leader (a server) held the
    first dropped entry at that moment."""
    config = core_table.config(S)
    lo, hi, r0 = lost_range(S, i)
    if lo > hi:
        return
    r = drop_row(S, i, now, HOW_TRUNCATE, lo, hi, -1, leader, term)
    if r < 0:
        return
    saved_entries = layout.saved_entries(S)
    dropped_entries = layout.dropped_entries(S)
    pay = layout.drops(S)[r, DR_ENTRIES]
    for k in range(hi - lo + 1):
        for f in range(4):
            dropped_entries[pay + k, f] = saved_entries[i, r0 + k, f]
    if 0 <= leader < config[C_PEERS]:
        store = layout.store(S)
        entries = layout.entries(S)
        offset = dledger_log_store.offset_of(store, leader, lo)
        held = offset >= 0 and dledger_log_store.holds(entries, leader, offset, dropped_entries[pay, 0], dropped_entries[pay, 1], dropped_entries[pay, 2], dropped_entries[pay, 3])
        layout.drops(S)[r, DR_STALE] = 1 if held else 0


@njit(cache=True)
def drop_holds(S, r, index, term, pos, size, body):
    """Drop.holds: drop r took this entry at `index`."""
    drops = layout.drops(S)
    if not drops[r, DR_LOW] <= index <= drops[r, DR_HIGH]:
        return False
    dropped_entries = layout.dropped_entries(S)
    k = drops[r, DR_ENTRIES] + index - drops[r, DR_LOW]
    return dropped_entries[k, 0] == term and dropped_entries[k, 1] == pos and dropped_entries[k, 2] == size and dropped_entries[k, 3] == body


@njit(cache=True)
def ever_held(S, index, term, pos, size, body):
    """ghost.ever_held, as a bit mask of servers."""
    config = core_table.config(S)
    world = core_table.world(S)
    store = layout.store(S)
    entries = layout.entries(S)
    mask = 0
    for j in range(config[C_PEERS]):
        k = dledger_log_store.offset_of(store, j, index)
        if k >= 0 and dledger_log_store.holds(entries, j, k, term, pos, size, body):
            mask |= 1 << j
    drops = layout.drops(S)
    for r in range(world[W_DROPS]):
        j = drops[r, DR_SERVER]
        if (mask >> j) & 1 == 0 and drop_holds(S, r, index, term, pos, size, body):
            mask |= 1 << j
    return mask


@njit(cache=True)
def check_majority(S, i, index, term, pos, size, body, leader_term, what, now):
    """ghost._check_majority: a leader committed (what 0) or answered SUCCESS for (1) this entry."""
    config = core_table.config(S)
    world = core_table.world(S)
    thin = layout.thin(S)
    if thin[index, TH_ON] == 1:
        return
    # the logs that hold it now usually make the majority; the drops only add holders
    store = layout.store(S)
    entries = layout.entries(S)
    now_held = 0
    for j in range(config[C_PEERS]):
        offset = dledger_log_store.offset_of(store, j, index)
        if offset >= 0 and dledger_log_store.holds(entries, j, offset, term, pos, size, body):
            now_held += 1
    if 2 * now_held > config[C_PEERS]:
        return
    holders = ever_held(S, index, term, pos, size, body)
    k = 0
    x = holders
    while x:
        x &= x - 1
        k += 1
    if 2 * k > config[C_PEERS]:
        return
    thin[index, TH_ON] = 1
    thin[index, TH_LEADER] = i
    thin[index, TH_TERM] = leader_term
    thin[index, TH_ENTRY_TERM] = term
    thin[index, TH_HOLDERS] = holders
    thin[index, TH_AT] = now
    thin[index, TH_WHAT] = what
    layout.thin_order(S)[world[W_THIN]] = index
    world[W_THIN] += 1
    world[W_EVIDENCE] += 1


@njit(cache=True)
def follows(S, k, lead):
    members = election_layout.members(S)
    return members[k, ROLE] == FOLLOWER and members[k, LEADER_ID] == lead and members[k, CURR_TERM] == members[lead, CURR_TERM]


@njit(cache=True)
def followed(S):
    """election.ghost.followed: the live LEADER a quorum of live members follows in its term (-1: none)."""
    config = core_table.config(S)
    alive = core_table.alive(S)
    members = election_layout.members(S)
    n = config[C_PEERS]
    for k in range(n):
        if alive[k] == 1 and members[k, ROLE] == LEADER:
            cnt = 1
            for f in range(n):
                if alive[f] == 1 and follows(S, f, k):
                    cnt += 1
            if cnt >= n // 2 + 1:
                return k
    return -1


@njit(cache=True)
def all_follow(S):
    """election.ghost.all_follow"""
    config = core_table.config(S)
    alive = core_table.alive(S)
    members = election_layout.members(S)
    n = config[C_PEERS]
    leader = -1
    for k in range(n):
        if alive[k] == 1 and members[k, ROLE] == LEADER:
            if leader >= 0:
                return False
            leader = k
    if leader < 0:
        return False
    for k in range(n):
        if alive[k] == 1 and k != leader and not follows(S, k, leader):
            return False
    return True


@njit(cache=True)
def outside(S, lead, k):
    """Live member k is outside the leadership of `lead` (in its term)."""
    alive = core_table.alive(S)
    return alive[k] == 1 and k != lead and not follows(S, k, lead)


@njit(cache=True)
def follow_note(S, now):
    """election.ghost.follow_note over the servers."""
    config = core_table.config(S)
    world = core_table.world(S)
    agreed = 1 if all_follow(S) else 0
    if agreed != world[W_AGREED]:
        world[W_AGREED] = agreed
        world[W_AGREED_SINCE] = now
    lead = followed(S)
    leader_term = election_layout.members(S)[lead, CURR_TERM] if lead >= 0 else -1
    same = lead == world[W_SETTLED_LEADER] and (lead < 0 or leader_term == world[W_SETTLED_LEADER_TERM])
    liveness = layout.liveness(S)
    for k in range(config[C_PEERS]):
        if lead >= 0 and outside(S, lead, k):
            if not (same and liveness[k, NN_STRAGGLER_SINCE] >= 0):
                liveness[k, NN_STRAGGLER_SINCE] = now
        else:
            liveness[k, NN_STRAGGLER_SINCE] = -1
    world[W_SETTLED_LEADER] = lead
    world[W_SETTLED_LEADER_TERM] = leader_term


@njit(cache=True)
def transfer_note(S, i, now):
    """election.ghost.transfer_note for server i."""
    members = election_layout.members(S)
    liveness = layout.liveness(S)
    if members[i, ROLE] == LEADER and members[i, TRANSFEREE] >= 0:
        if liveness[i, LV_TRANSFER_SINCE] < 0:
            liveness[i, LV_TRANSFER_SINCE] = now
    else:
        liveness[i, LV_TRANSFER_SINCE] = -1


@njit(cache=True)
def reset_ghost(S):
    """The history tables up to what the last history used (ws is cleared after this)."""
    world = core_table.world(S)
    thin = layout.thin(S)
    thin_order = layout.thin_order(S)
    for r in range(world[W_THIN]):
        thin[thin_order[r], TH_ON] = 0
    liveness = layout.liveness(S)
    for k in range(liveness.shape[0]):
        liveness[k, NN_STRAGGLER_SINCE] = -1
        liveness[k, LV_TRANSFER_SINCE] = -1
