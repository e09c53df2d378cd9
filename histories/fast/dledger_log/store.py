"""A server's entry store: mirrors reference_impl/dledger_log/store.py.

Entries by index with term, position, size and body; the flushed and written marks; appends as leader and as
follower and truncation, in the reference's order."""

from __future__ import annotations

from numba import njit

from histories.fast.core import table as core_table
from histories.fast.core.layout import (
    W_STOP,
)
from histories.fast.dledger_log import layout
from histories.fast.dledger_log.layout import (
    BIG,
    BODY_OFFSET,
    C_CHECK_POINT_INTERVAL,
    C_FLUSH_FILE_INTERVAL,
    C_MAPPED_FILE_SIZE_FOR_ENTRY_DATA,
    DISK_ERROR,
    DISK_FULL,
    DIVERGED,
    ENTRY_COLUMNS,
    ET_BODY,
    ET_POS,
    ET_SIZE,
    ET_TERM,
    INCONSISTENT_INDEX,
    INDEX_LESS_THAN_LOCAL_BEGIN,
    INDEX_OUT_OF_RANGE,
    MIN_BLANK_LEN,
    NOT_FOLLOWER,
    OVERFLOW_ENTRIES,
    S_BEGIN_INDEX,
    S_CHECK_POINT,
    S_CHECK_POINT_DUE_MS,
    S_COMMITTED_INDEX,
    S_COMMITTED_POS,
    S_END_TERM,
    S_ENTRIES,
    S_FLUSH_DUE_MS,
    S_FLUSHED_INDEX,
    S_LAST_CHECK_POINT_MS,
    S_MIN_POS,
    SC_BEGIN_MOVED,
    SC_DIRTY,
    SC_OLD_BEGIN,
    SC_OLD_END,
    SC_SAVED,
    SC_SAVED_FROM,
)
from histories.fast.election import layout as election_layout
from histories.fast.election.layout import (
    CURR_TERM,
    FOLLOWER,
    INCONSISTENT_LEADER,
    INCONSISTENT_TERM,
    LEADER,
    LEADER_ID,
    LEADER_TRANSFERRING,
    NOT_LEADER,
    ROLE,
    TRANSFEREE,
)


@njit(cache=True, inline='always')
def end_index(store, i):
    """Store.end_index"""
    n = store[i, S_ENTRIES]
    return store[i, S_BEGIN_INDEX] + n - 1 if n > 0 else -1


@njit(cache=True, inline='always')
def offset_of(store, i, index):
    """store.entry_at as the row of the entry (-1: the log does not hold `index`)."""
    n = store[i, S_ENTRIES]
    b = store[i, S_BEGIN_INDEX]
    if n > 0 and b <= index <= b + n - 1:
        return index - b
    return -1


@njit(cache=True, inline='always')
def holds(entries, i, k, term, pos, size, body):
    """Entry row k of log i equals the entry (term, pos, size, body) (DLedgerEntry#equals; same index)."""
    return (entries[i, k, ET_TERM] == term and entries[i, k, ET_POS] == pos and entries[i, k, ET_SIZE] == size
            and entries[i, k, ET_BODY] == body)


@njit(cache=True, inline='always')
def get_code(store, i, index):
    """store.get's checks: 0 when the log holds `index`, else the DLedgerException's code."""
    if index < 0:
        return INDEX_OUT_OF_RANGE
    if index < store[i, S_BEGIN_INDEX]:
        return INDEX_LESS_THAN_LOCAL_BEGIN
    if index > end_index(store, i):
        return INDEX_OUT_OF_RANGE
    return 0


@njit(cache=True, inline='always')
def max_wrote_pos(store, entries, i):
    """store.max_wrote_pos (MmapFileList#getMaxWrotePosition)"""
    n = store[i, S_ENTRIES]
    if n == 0:
        return store[i, S_MIN_POS]
    return entries[i, n - 1, ET_POS] + entries[i, n - 1, ET_SIZE]


@njit(cache=True, inline='always')
def pre_append(S, wrote, size):
    """store.pre_append (MmapFileList#preAppend)"""
    config = core_table.config(S)
    file_size = config[C_MAPPED_FILE_SIZE_FOR_ENTRY_DATA]
    within = wrote % file_size
    if size + MIN_BLANK_LEN > file_size - within:
        return wrote - within + file_size
    return wrote


@njit(cache=True)
def touch(S, i, d):
    """Before log i changes at index `d` and above: keep the entries the step began with
    from there on (in sv, from md[i, SC_SAVED_FROM]), once per index per step."""
    store = layout.store(S)
    entries = layout.entries(S)
    store_changes = layout.store_changes(S)
    saved_entries = layout.saved_entries(S)
    n = store[i, S_ENTRIES]
    b = store[i, S_BEGIN_INDEX]
    if store_changes[i, SC_DIRTY] == BIG:
        store_changes[i, SC_OLD_BEGIN] = b
        store_changes[i, SC_OLD_END] = b + n - 1 if n > 0 else -1
        store_changes[i, SC_DIRTY] = d
        lo = max(d, b) if n > 0 else d
        cnt = 0
        if n > 0:
            for idx in range(lo, b + n):
                for f in range(ENTRY_COLUMNS):
                    saved_entries[i, cnt, f] = entries[i, idx - b, f]
                cnt += 1
        store_changes[i, SC_SAVED_FROM] = lo
        store_changes[i, SC_SAVED] = cnt
        return
    if d >= store_changes[i, SC_DIRTY]:
        return
    store_changes[i, SC_DIRTY] = d
    oend = store_changes[i, SC_OLD_END]
    if oend < 0:
        return
    lo = max(d, store_changes[i, SC_OLD_BEGIN])
    svn = store_changes[i, SC_SAVED]
    hi = store_changes[i, SC_SAVED_FROM] if svn > 0 else oend + 1
    added = hi - lo
    if added <= 0:
        return
    # entries [lo, hi) have not changed in this step: the log still holds them at their rows
    for r in range(svn - 1, -1, -1):
        for f in range(ENTRY_COLUMNS):
            saved_entries[i, r + added, f] = saved_entries[i, r, f]
    for idx in range(lo, hi):
        for f in range(ENTRY_COLUMNS):
            saved_entries[i, idx - lo, f] = entries[i, idx - b, f]
    store_changes[i, SC_SAVED_FROM] = lo
    store_changes[i, SC_SAVED] = svn + added


@njit(cache=True, inline='always')
def dirty(store, i, due):
    """store._dirty"""
    if store[i, S_FLUSH_DUE_MS] < 0:
        store[i, S_FLUSH_DUE_MS] = due


@njit(cache=True, inline='always')
def push_entry(S, i, index, term, pos, size, body):
    """Append an entry at the end of log i (its index is end + 1, or any on an empty log)."""
    store = layout.store(S)
    entries = layout.entries(S)
    n = store[i, S_ENTRIES]
    if n == 0:
        store[i, S_BEGIN_INDEX] = index
        layout.store_changes(S)[i, SC_BEGIN_MOVED] = 1
    entries[i, n, ET_TERM] = term
    entries[i, n, ET_POS] = pos
    entries[i, n, ET_SIZE] = size
    entries[i, n, ET_BODY] = body
    store[i, S_ENTRIES] = n + 1


@njit(cache=True)
def append_as_leader(S, i, body, body_length, now):
    """store.append_as_leader -> (code, index, term, pos): code 0, the entry is appended."""
    config = core_table.config(S)
    members = election_layout.members(S)
    store = layout.store(S)
    if members[i, ROLE] != LEADER:
        return NOT_LEADER, -1, -1, -1
    if members[i, TRANSFEREE] >= 0:
        return LEADER_TRANSFERRING, -1, -1, -1
    size = BODY_OFFSET + body_length
    index = end_index(store, i) + 1
    if index >= layout.entries(S).shape[1]:
        core_table.world(S)[W_STOP] = OVERFLOW_ENTRIES
        return DISK_FULL, -1, -1, -1
    pos = pre_append(S, max_wrote_pos(store, layout.entries(S), i), size)
    term = members[i, CURR_TERM]
    touch(S, i, index)
    push_entry(S, i, index, term, pos, size, body)
    store[i, S_END_TERM] = term
    dirty(store, i, now + config[C_FLUSH_FILE_INTERVAL])
    return 0, index, term, pos


@njit(cache=True)
def append_as_follower(S, i, index, term, pos, size, body, leader_term, leader, now):
    """store.append_as_follower -> code (0: appended)."""
    config = core_table.config(S)
    members = election_layout.members(S)
    store = layout.store(S)
    if members[i, ROLE] != FOLLOWER:
        return NOT_FOLLOWER
    if index != end_index(store, i) + 1:
        return INCONSISTENT_INDEX
    if leader_term != members[i, CURR_TERM]:
        return INCONSISTENT_TERM
    if leader != members[i, LEADER_ID]:
        return INCONSISTENT_LEADER
    if pre_append(S, max_wrote_pos(store, layout.entries(S), i), size) != pos:
        return DISK_ERROR
    if index >= layout.entries(S).shape[1]:
        core_table.world(S)[W_STOP] = OVERFLOW_ENTRIES
        return DISK_FULL
    touch(S, i, index)
    push_entry(S, i, index, term, pos, size, body)
    store[i, S_END_TERM] = term
    dirty(store, i, now + config[C_FLUSH_FILE_INTERVAL])
    return 0


@njit(cache=True)
def truncate(S, i, index, term, pos, size, body, leader_term, leader, now):
    """store.truncate -> code (0: the log now ends at the leader's entry)."""
    config = core_table.config(S)
    members = election_layout.members(S)
    store = layout.store(S)
    entries = layout.entries(S)
    store_changes = layout.store_changes(S)
    if members[i, ROLE] != FOLLOWER:
        return NOT_FOLLOWER
    if leader_term != members[i, CURR_TERM]:
        return INCONSISTENT_TERM
    if leader != members[i, LEADER_ID]:
        return INCONSISTENT_LEADER
    n = store[i, S_ENTRIES]
    b = store[i, S_BEGIN_INDEX]
    k = offset_of(store, i, index)
    existed = k >= 0 and holds(entries, i, k, term, pos, size, body)
    if existed:
        # keep the entries up to `index` (the reference filters by index: a prefix)
        touch(S, i, index + 1)
        store[i, S_ENTRIES] = k + 1
        store[i, S_FLUSHED_INDEX] = min(store[i, S_FLUSHED_INDEX], index)
    else:
        # kept: the entries that end at or before the entry's position. Positions grow with
        # the index in every log the world builds, so they are a prefix; a log where they are
        # not would need the general filter, and the history goes to the reference instead.
        kept = 0
        while kept < n and entries[i, kept, ET_POS] + entries[i, kept, ET_SIZE] <= pos:
            kept += 1
        for r in range(kept, n):
            if entries[i, r, ET_POS] + entries[i, r, ET_SIZE] <= pos:
                core_table.world(S)[W_STOP] = DIVERGED
                return DISK_ERROR
        wrote = entries[i, kept - 1, ET_POS] + entries[i, kept - 1, ET_SIZE] if kept > 0 else store[i, S_MIN_POS]
        if index >= entries.shape[1]:
            core_table.world(S)[W_STOP] = OVERFLOW_ENTRIES
            return DISK_FULL
        if pre_append(S, wrote, size) == pos and (kept == 0 or b + kept - 1 == index - 1):
            if kept == 0:
                touch(S, i, b if n > 0 else index)
                if n == 0 or b != index:
                    store_changes[i, SC_BEGIN_MOVED] = 1
                store[i, S_BEGIN_INDEX] = index
            else:
                touch(S, i, b + kept)
            store[i, S_ENTRIES] = kept + 1
            r = kept
        else:  # rebuildWithPos: every data file goes; the list restarts at the entry's position
            touch(S, i, b if n > 0 else index)
            if n == 0 or b != index:
                store_changes[i, SC_BEGIN_MOVED] = 1
            store[i, S_BEGIN_INDEX] = index
            store[i, S_ENTRIES] = 1
            store[i, S_MIN_POS] = pos
            r = 0
        entries[i, r, ET_TERM] = term
        entries[i, r, ET_POS] = pos
        entries[i, r, ET_SIZE] = size
        entries[i, r, ET_BODY] = body
        store[i, S_FLUSHED_INDEX] = min(store[i, S_FLUSHED_INDEX], index - 1)
    store[i, S_END_TERM] = term
    dirty(store, i, now + config[C_FLUSH_FILE_INTERVAL])
    return 0


@njit(cache=True)
def update_committed_index(S, i, term, curr_term, new, now):
    """store.update_committed_index"""
    config = core_table.config(S)
    store = layout.store(S)
    entries = layout.entries(S)
    end = end_index(store, i)
    if new == -1 or end == -1 or term < curr_term or new == store[i, S_COMMITTED_INDEX]:
        return
    if new < store[i, S_COMMITTED_INDEX] or new < store[i, S_BEGIN_INDEX]:
        return
    new = min(new, end)
    k = new - store[i, S_BEGIN_INDEX]
    store[i, S_COMMITTED_INDEX] = new
    store[i, S_COMMITTED_POS] = entries[i, k, ET_POS] + entries[i, k, ET_SIZE]
    if store[i, S_CHECK_POINT_DUE_MS] < 0:
        period = config[C_CHECK_POINT_INTERVAL] + 1
        due = store[i, S_LAST_CHECK_POINT_MS] + period
        if due <= now:
            due += ((now - due) // period + 1) * period
        store[i, S_CHECK_POINT_DUE_MS] = due


@njit(cache=True, inline='always')
def flush_wake_at(store, i):
    """store.flush_wake_at"""
    a = store[i, S_FLUSH_DUE_MS]
    b = store[i, S_CHECK_POINT_DUE_MS]
    if a < 0:
        return b
    return a if b < 0 else min(a, b)


@njit(cache=True)
def on_flush_tick(store, i, now):
    """store.on_flush_tick (and persist_check_point)"""
    if 0 <= store[i, S_FLUSH_DUE_MS] <= now:
        store[i, S_FLUSHED_INDEX] = end_index(store, i)
        store[i, S_FLUSH_DUE_MS] = -1
    if 0 <= store[i, S_CHECK_POINT_DUE_MS] <= now:
        store[i, S_CHECK_POINT] = store[i, S_COMMITTED_INDEX]
        store[i, S_LAST_CHECK_POINT_MS] = now
        store[i, S_CHECK_POINT_DUE_MS] = -1


@njit(cache=True)
def empty(store, i, now):
    """store.empty / Store(): no entries, defaults (last_check_point_ms = now)."""
    store[i, S_ENTRIES] = 0
    store[i, S_BEGIN_INDEX] = -1
    store[i, S_END_TERM] = -1
    store[i, S_COMMITTED_INDEX] = -1
    store[i, S_COMMITTED_POS] = -1
    store[i, S_MIN_POS] = 0
    store[i, S_FLUSHED_INDEX] = -1
    store[i, S_FLUSH_DUE_MS] = -1
    store[i, S_CHECK_POINT] = -1
    store[i, S_LAST_CHECK_POINT_MS] = now
    store[i, S_CHECK_POINT_DUE_MS] = -1


@njit(cache=True)
def crash(S, i, kind):
    """store.crash: kind 0 process (all survives), 1 OS (the flushed prefix, no checkpoint), 2 disk."""
    store = layout.store(S)
    if kind == 0:
        return
    n = store[i, S_ENTRIES]
    b = store[i, S_BEGIN_INDEX]
    if kind == 2:
        if n > 0:
            touch(S, i, b)
            layout.store_changes(S)[i, SC_BEGIN_MOVED] = 1
        empty(store, i, 0)
        return
    keep = max(0, store[i, S_FLUSHED_INDEX] - b + 1) if n > 0 else 0
    keep = min(keep, n)
    if keep < n:
        touch(S, i, b + keep)
        if keep == 0:
            layout.store_changes(S)[i, SC_BEGIN_MOVED] = 1
    store[i, S_ENTRIES] = keep
    if keep == 0:
        store[i, S_BEGIN_INDEX] = -1
        store[i, S_END_TERM] = -1
    else:
        store[i, S_END_TERM] = layout.entries(S)[i, keep - 1, ET_TERM]
    store[i, S_CHECK_POINT] = -1


@njit(cache=True)
def recover(S, i, curr_term, now):
    """store.recover after a restart."""
    store = layout.store(S)
    n = store[i, S_ENTRIES]
    end = end_index(store, i)
    if n == 0:
        store[i, S_END_TERM] = -1
    store[i, S_COMMITTED_INDEX] = -1
    store[i, S_COMMITTED_POS] = -1
    store[i, S_FLUSHED_INDEX] = end
    store[i, S_FLUSH_DUE_MS] = -1
    store[i, S_LAST_CHECK_POINT_MS] = now
    store[i, S_CHECK_POINT_DUE_MS] = -1
    if store[i, S_CHECK_POINT] >= 0:
        update_committed_index(S, i, curr_term, curr_term, store[i, S_CHECK_POINT], now)
        store[i, S_CHECK_POINT_DUE_MS] = -1
