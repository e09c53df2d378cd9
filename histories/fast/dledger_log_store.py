"""The log store of the dledger_log fast world: reference_impl/dledger_log/store.py over arrays.

Each function names the reference function it mirrors and keeps its branch order. A
store change goes through `touch` first, which keeps what the store held when the step
began (the monitor's LOG-3 / LOG-4 compare the logs before and after a step, and LOG-1
/ LOG-7 re-check only what changed). Errors (DLedgerException) are returned as codes, 0
meaning success. Layouts: histories/fast/dledger_log_layout.py.
"""

from __future__ import annotations

from numba import njit

import histories.fast.dledger_log_layout as L
import histories.fast.election as E
from histories.fast.dledger_log_layout import (
    BIG,
    C_CPI,
    C_FILESIZE,
    C_FLUSHI,
    DISK_ERROR,
    DISK_FULL,
    DIVERGED,
    ET_BODY,
    ET_POS,
    ET_SIZE,
    ET_TERM,
    ETF,
    HEADER,
    INCONSISTENT_INDEX,
    INCONSISTENT_LEADER,
    INCONSISTENT_TERM,
    INDEX_LESS_THAN_LOCAL_BEGIN,
    INDEX_OUT_OF_RANGE,
    LEADER_TRANSFERRING,
    MD_BCHG,
    MD_DIRTY,
    MD_OBEG,
    MD_OEND,
    MD_SVB,
    MD_SVN,
    MIN_BLANK_LEN,
    NOT_FOLLOWER,
    NOT_LEADER,
    OVERFLOW_ENTRIES,
    S_BEGIN,
    S_COMMITTED,
    S_CP,
    S_CP_DUE,
    S_CPOS,
    S_END_TERM,
    S_FLUSH_DUE,
    S_FLUSHED,
    S_LAST_CP,
    S_MINPOS,
    S_NENT,
    W_STOP,
)


@njit(cache=True, inline='always')
def end_index(sto, i):
    """Store.end_index"""
    n = sto[i, S_NENT]
    return sto[i, S_BEGIN] + n - 1 if n > 0 else -1


@njit(cache=True, inline='always')
def offset_of(sto, i, index):
    """store.entry_at as the row of the entry (-1: the log does not hold `index`)."""
    n = sto[i, S_NENT]
    b = sto[i, S_BEGIN]
    if n > 0 and b <= index <= b + n - 1:
        return index - b
    return -1


@njit(cache=True, inline='always')
def holds(ent, i, k, term, pos, size, body):
    """Entry row k of log i equals the entry (term, pos, size, body) (DLedgerEntry#equals; same index)."""
    return (ent[i, k, ET_TERM] == term and ent[i, k, ET_POS] == pos and ent[i, k, ET_SIZE] == size
            and ent[i, k, ET_BODY] == body)


@njit(cache=True, inline='always')
def get_code(sto, i, index):
    """store.get's checks: 0 when the log holds `index`, else the DLedgerException's code."""
    if index < 0:
        return INDEX_OUT_OF_RANGE
    if index < sto[i, S_BEGIN]:
        return INDEX_LESS_THAN_LOCAL_BEGIN
    if index > end_index(sto, i):
        return INDEX_OUT_OF_RANGE
    return 0


@njit(cache=True, inline='always')
def max_wrote_pos(sto, ent, i):
    """store.max_wrote_pos (MmapFileList#getMaxWrotePosition)"""
    n = sto[i, S_NENT]
    if n == 0:
        return sto[i, S_MINPOS]
    return ent[i, n - 1, ET_POS] + ent[i, n - 1, ET_SIZE]


@njit(cache=True, inline='always')
def pre_append(C, wrote, size):
    """store.pre_append (MmapFileList#preAppend)"""
    file_size = C[C_FILESIZE]
    within = wrote % file_size
    if size + MIN_BLANK_LEN > file_size - within:
        return wrote - within + file_size
    return wrote


@njit(cache=True)
def touch(S, i, d):
    """Before log i changes at index `d` and above: keep the entries the step began with
    from there on (in sv, from md[i, MD_SVB]), once per index per step."""
    sto = L.sto_(S)
    ent = L.ent_(S)
    md = L.md_(S)
    sv = L.sv_(S)
    n = sto[i, S_NENT]
    b = sto[i, S_BEGIN]
    if md[i, MD_DIRTY] == BIG:
        md[i, MD_OBEG] = b
        md[i, MD_OEND] = b + n - 1 if n > 0 else -1
        md[i, MD_DIRTY] = d
        lo = max(d, b) if n > 0 else d
        cnt = 0
        if n > 0:
            for idx in range(lo, b + n):
                for f in range(ETF):
                    sv[i, cnt, f] = ent[i, idx - b, f]
                cnt += 1
        md[i, MD_SVB] = lo
        md[i, MD_SVN] = cnt
        return
    if d >= md[i, MD_DIRTY]:
        return
    md[i, MD_DIRTY] = d
    oend = md[i, MD_OEND]
    if oend < 0:
        return
    lo = max(d, md[i, MD_OBEG])
    svn = md[i, MD_SVN]
    hi = md[i, MD_SVB] if svn > 0 else oend + 1
    m = hi - lo
    if m <= 0:
        return
    # entries [lo, hi) have not changed in this step: the log still holds them at their rows
    for r in range(svn - 1, -1, -1):
        for f in range(ETF):
            sv[i, r + m, f] = sv[i, r, f]
    for idx in range(lo, hi):
        for f in range(ETF):
            sv[i, idx - lo, f] = ent[i, idx - b, f]
    md[i, MD_SVB] = lo
    md[i, MD_SVN] = svn + m


@njit(cache=True, inline='always')
def _dirty(sto, i, due):
    """store._dirty"""
    if sto[i, S_FLUSH_DUE] < 0:
        sto[i, S_FLUSH_DUE] = due


@njit(cache=True, inline='always')
def _push_entry(S, i, index, term, pos, size, body):
    """Append an entry at the end of log i (its index is end + 1, or any on an empty log)."""
    sto = L.sto_(S)
    ent = L.ent_(S)
    n = sto[i, S_NENT]
    if n == 0:
        sto[i, S_BEGIN] = index
        L.md_(S)[i, MD_BCHG] = 1
    ent[i, n, ET_TERM] = term
    ent[i, n, ET_POS] = pos
    ent[i, n, ET_SIZE] = size
    ent[i, n, ET_BODY] = body
    sto[i, S_NENT] = n + 1


@njit(cache=True)
def append_as_leader(C, S, i, body, blen, now):
    """store.append_as_leader -> (code, index, term, pos): code 0, the entry is appended."""
    nd = L.nd_(S)
    sto = L.sto_(S)
    if nd[i, E.ROLE] != E.LEADER:
        return NOT_LEADER, -1, -1, -1
    if nd[i, E.TRANSFEREE] >= 0:
        return LEADER_TRANSFERRING, -1, -1, -1
    size = HEADER + blen
    index = end_index(sto, i) + 1
    if index >= L.ent_(S).shape[1]:
        L.ws_(S)[W_STOP] = OVERFLOW_ENTRIES
        return DISK_FULL, -1, -1, -1
    pos = pre_append(C, max_wrote_pos(sto, L.ent_(S), i), size)
    term = nd[i, E.TERM]
    touch(S, i, index)
    _push_entry(S, i, index, term, pos, size, body)
    sto[i, S_END_TERM] = term
    _dirty(sto, i, now + C[C_FLUSHI])
    return 0, index, term, pos


@njit(cache=True)
def append_as_follower(C, S, i, index, term, pos, size, body, leader_term, leader, now):
    """store.append_as_follower -> code (0: appended)."""
    nd = L.nd_(S)
    sto = L.sto_(S)
    if nd[i, E.ROLE] != E.FOLLOWER:
        return NOT_FOLLOWER
    if index != end_index(sto, i) + 1:
        return INCONSISTENT_INDEX
    if leader_term != nd[i, E.TERM]:
        return INCONSISTENT_TERM
    if leader != nd[i, E.LEADER_ID]:
        return INCONSISTENT_LEADER
    if pre_append(C, max_wrote_pos(sto, L.ent_(S), i), size) != pos:
        return DISK_ERROR
    if index >= L.ent_(S).shape[1]:
        L.ws_(S)[W_STOP] = OVERFLOW_ENTRIES
        return DISK_FULL
    touch(S, i, index)
    _push_entry(S, i, index, term, pos, size, body)
    sto[i, S_END_TERM] = term
    _dirty(sto, i, now + C[C_FLUSHI])
    return 0


@njit(cache=True)
def truncate(C, S, i, index, term, pos, size, body, leader_term, leader, now):
    """store.truncate -> code (0: the log now ends at the leader's entry)."""
    nd = L.nd_(S)
    sto = L.sto_(S)
    ent = L.ent_(S)
    md = L.md_(S)
    if nd[i, E.ROLE] != E.FOLLOWER:
        return NOT_FOLLOWER
    if leader_term != nd[i, E.TERM]:
        return INCONSISTENT_TERM
    if leader != nd[i, E.LEADER_ID]:
        return INCONSISTENT_LEADER
    n = sto[i, S_NENT]
    b = sto[i, S_BEGIN]
    k = offset_of(sto, i, index)
    existed = k >= 0 and holds(ent, i, k, term, pos, size, body)
    if existed:
        # keep the entries up to `index` (the reference filters by index: a prefix)
        touch(S, i, index + 1)
        sto[i, S_NENT] = k + 1
        sto[i, S_FLUSHED] = min(sto[i, S_FLUSHED], index)
    else:
        # kept: the entries that end at or before the entry's position. Positions grow with
        # the index in every log the world builds, so they are a prefix; a log where they are
        # not would need the general filter, and the history goes to the reference instead.
        kept = 0
        while kept < n and ent[i, kept, ET_POS] + ent[i, kept, ET_SIZE] <= pos:
            kept += 1
        for r in range(kept, n):
            if ent[i, r, ET_POS] + ent[i, r, ET_SIZE] <= pos:
                L.ws_(S)[W_STOP] = DIVERGED
                return DISK_ERROR
        wrote = ent[i, kept - 1, ET_POS] + ent[i, kept - 1, ET_SIZE] if kept > 0 else sto[i, S_MINPOS]
        if index >= ent.shape[1]:
            L.ws_(S)[W_STOP] = OVERFLOW_ENTRIES
            return DISK_FULL
        if pre_append(C, wrote, size) == pos and (kept == 0 or b + kept - 1 == index - 1):
            if kept == 0:
                touch(S, i, b if n > 0 else index)
                if n == 0 or b != index:
                    md[i, MD_BCHG] = 1
                sto[i, S_BEGIN] = index
            else:
                touch(S, i, b + kept)
            sto[i, S_NENT] = kept + 1
            r = kept
        else:  # rebuildWithPos: every data file goes; the list restarts at the entry's position
            touch(S, i, b if n > 0 else index)
            if n == 0 or b != index:
                md[i, MD_BCHG] = 1
            sto[i, S_BEGIN] = index
            sto[i, S_NENT] = 1
            sto[i, S_MINPOS] = pos
            r = 0
        ent[i, r, ET_TERM] = term
        ent[i, r, ET_POS] = pos
        ent[i, r, ET_SIZE] = size
        ent[i, r, ET_BODY] = body
        sto[i, S_FLUSHED] = min(sto[i, S_FLUSHED], index - 1)
    sto[i, S_END_TERM] = term
    _dirty(sto, i, now + C[C_FLUSHI])
    return 0


@njit(cache=True)
def update_committed_index(C, S, i, term, curr_term, new, now):
    """store.update_committed_index"""
    sto = L.sto_(S)
    ent = L.ent_(S)
    end = end_index(sto, i)
    if new == -1 or end == -1 or term < curr_term or new == sto[i, S_COMMITTED]:
        return
    if new < sto[i, S_COMMITTED] or new < sto[i, S_BEGIN]:
        return
    new = min(new, end)
    k = new - sto[i, S_BEGIN]
    sto[i, S_COMMITTED] = new
    sto[i, S_CPOS] = ent[i, k, ET_POS] + ent[i, k, ET_SIZE]
    if sto[i, S_CP_DUE] < 0:
        period = C[C_CPI] + 1
        due = sto[i, S_LAST_CP] + period
        if due <= now:
            due += ((now - due) // period + 1) * period
        sto[i, S_CP_DUE] = due


@njit(cache=True, inline='always')
def flush_wake_at(sto, i):
    """store.flush_wake_at"""
    a = sto[i, S_FLUSH_DUE]
    b = sto[i, S_CP_DUE]
    if a < 0:
        return b
    return a if b < 0 else min(a, b)


@njit(cache=True)
def on_flush_tick(sto, i, now):
    """store.on_flush_tick (and persist_check_point)"""
    if 0 <= sto[i, S_FLUSH_DUE] <= now:
        sto[i, S_FLUSHED] = end_index(sto, i)
        sto[i, S_FLUSH_DUE] = -1
    if 0 <= sto[i, S_CP_DUE] <= now:
        sto[i, S_CP] = sto[i, S_COMMITTED]
        sto[i, S_LAST_CP] = now
        sto[i, S_CP_DUE] = -1


@njit(cache=True)
def empty(sto, i, now):
    """store.empty / Store(): no entries, defaults (last_check_point_ms = now)."""
    sto[i, S_NENT] = 0
    sto[i, S_BEGIN] = -1
    sto[i, S_END_TERM] = -1
    sto[i, S_COMMITTED] = -1
    sto[i, S_CPOS] = -1
    sto[i, S_MINPOS] = 0
    sto[i, S_FLUSHED] = -1
    sto[i, S_FLUSH_DUE] = -1
    sto[i, S_CP] = -1
    sto[i, S_LAST_CP] = now
    sto[i, S_CP_DUE] = -1


@njit(cache=True)
def crash(S, i, kind):
    """store.crash: kind 0 process (all survives), 1 OS (the flushed prefix, no checkpoint), 2 disk."""
    sto = L.sto_(S)
    if kind == 0:
        return
    n = sto[i, S_NENT]
    b = sto[i, S_BEGIN]
    if kind == 2:
        if n > 0:
            touch(S, i, b)
            L.md_(S)[i, MD_BCHG] = 1
        empty(sto, i, 0)
        return
    keep = max(0, sto[i, S_FLUSHED] - b + 1) if n > 0 else 0
    keep = min(keep, n)
    if keep < n:
        touch(S, i, b + keep)
        if keep == 0:
            L.md_(S)[i, MD_BCHG] = 1
    sto[i, S_NENT] = keep
    if keep == 0:
        sto[i, S_BEGIN] = -1
        sto[i, S_END_TERM] = -1
    else:
        sto[i, S_END_TERM] = L.ent_(S)[i, keep - 1, ET_TERM]
    sto[i, S_CP] = -1


@njit(cache=True)
def recover(C, S, i, curr_term, now):
    """store.recover after a restart."""
    sto = L.sto_(S)
    n = sto[i, S_NENT]
    end = end_index(sto, i)
    if n == 0:
        sto[i, S_END_TERM] = -1
    sto[i, S_COMMITTED] = -1
    sto[i, S_CPOS] = -1
    sto[i, S_FLUSHED] = end
    sto[i, S_FLUSH_DUE] = -1
    sto[i, S_LAST_CP] = now
    sto[i, S_CP_DUE] = -1
    if sto[i, S_CP] >= 0:
        update_committed_index(C, S, i, curr_term, curr_term, sto[i, S_CP], now)
        sto[i, S_CP_DUE] = -1

