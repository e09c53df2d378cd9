"""The dledger_log properties: mirrors spec/dledger_log.py.

Committed-prefix agreement, commit monotonicity and the other log properties, with the same expected causes
as the reference; `record` and `record_unexpected` write a violation row into the state table."""

from __future__ import annotations

from numba import njit

from histories.fast.core import table as core_table
from histories.fast.core.layout import (
    OVERFLOW_TERMS,
    W_CALM,
    W_CALM_AT,
    W_NOW,
    W_STOP,
)
from histories.fast.dledger_log import ghost, layout
from histories.fast.dledger_log import store as dledger_log_store
from histories.fast.dledger_log.layout import (
    BIG,
    BODY_OFFSET,
    CAUSE_NONE,
    C_ASTRAY_BOUND_MS,
    C_BODY_LENGTH,
    C_CLIENTS,
    C_LIVE1_BOUND_MS,
    C_LIVE2_BOUND_MS,
    C_LIVE3_BOUND_MS,
    ET_BODY,
    ET_POS,
    ET_SIZE,
    ET_TERM,
    LOG_L_BOUND_MS,
    LV_TRANSFER_SINCE,
    OVERFLOW_SETS,
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
    SC_BEGIN_MOVED,
    SC_DIRTY,
    SC_OLD_END,
    SC_SAVED,
    SC_SAVED_FROM,
    S_BEGIN_INDEX,
    S_COMMITTED_INDEX,
    S_ENTRIES,
    V_CAUSE,
    V_STEP,
    V_TIME,
    W_ACKED,
    W_AGREED,
    W_AGREED_SINCE,
    W_COMMITTED,
    W_CONFLICTS,
    W_COUNTED,
    W_EVIDENCE,
    W_FIRST_ACK,
    W_LEADERSHIPS,
    W_SETTLED_LEADER,
    W_SETTLED_LEADER_TERM,
    W_THIN,
    W_TOP_INDEX,
    W_TOP_LEADER_TERM,
    W_TOP_TERM,
    W_VOTES,
)
from histories.fast.election import layout as election_layout
from histories.fast.election.layout import (
    C_ENABLE_LEADER_ELECTOR,
    C_PEERS,
    C_STEP_DOWN_ON_HIGHER_TERM,
    CANDIDATE,
    CURR_TERM,
    FOLLOWER,
    LEADER_ID,
    LEDGER_END_INDEX,
    LEDGER_END_TERM,
    NN_STRAGGLER_SINCE,
    ROLE,
    SUCCESS,
)


@njit(cache=True, inline='always')
def see_index(S, index):
    world = core_table.world(S)
    world[W_TOP_INDEX] = max(world[W_TOP_INDEX], index)


@njit(cache=True)
def set_add(S, sets, counts, order, nord, index, term, pos, size, body):
    """frozenset | {entry} at `index` of a per-index set table; returns (added, new key)."""
    world = core_table.world(S)
    c = counts[index]
    for r in range(c):
        if (sets[index, r, 0] == term and sets[index, r, 1] == pos and sets[index, r, 2] == size
                and sets[index, r, 3] == body):
            return False
    if c >= sets.shape[1]:
        world[W_STOP] = OVERFLOW_SETS
        return False
    sets[index, c, 0] = term
    sets[index, c, 1] = pos
    sets[index, c, 2] = size
    sets[index, c, 3] = body
    counts[index] = c + 1
    if c == 0:
        order[world[nord]] = index
        world[nord] += 1
    return True


@njit(cache=True)
def commit(S, index, term, pos, size, body, cterm):
    """ghost._commit: a node of term `cterm` committed the entry (term, pos, size, body) at `index`."""
    world = core_table.world(S)
    committed = layout.committed(S)
    see_index(S, index)
    if committed[index, 0] == 0:
        committed[index, 0] = 1
        committed[index, 1] = term
        committed[index, 2] = pos
        committed[index, 3] = size
        committed[index, 4] = body
        layout.committed_order(S)[world[W_COMMITTED]] = index
        world[W_COMMITTED] += 1
    elif ((committed[index, 1] != term or committed[index, 2] != pos or committed[index, 3] != size or committed[index, 4] != body)
          and set_add(S, layout.conflicts(S), layout.conflict_counts(S), layout.conflict_order(S), W_CONFLICTS, index, term, pos, size, body)):
        conflict_terms = layout.conflict_terms(S)
        conflict_terms[index] = cterm if layout.conflict_counts(S)[index] == 1 else max(conflict_terms[index], cterm)
        world[W_EVIDENCE] += 1


@njit(cache=True)
def see_committed_prefix(S, i, lo, hi, cterm):
    """ghost._see_committed_prefix: entries (lo, hi] of server i's log, seen in term `cterm`."""
    store = layout.store(S)
    entries = layout.entries(S)
    n = store[i, S_ENTRIES]
    if n == 0:
        return
    b = store[i, S_BEGIN_INDEX]
    for index in range(max(lo, b - 1) + 1, min(hi, b + n - 1) + 1):
        k = index - b
        commit(S, index, entries[i, k, ET_TERM], entries[i, k, ET_POS], entries[i, k, ET_SIZE], entries[i, k, ET_BODY], cterm)


@njit(cache=True)
def on_commit_advanced(S, i, old, new, term, leader, entry_term, now):
    world = core_table.world(S)
    see_committed_prefix(S, i, old, new, term)
    if leader == 1:
        # ghost._check_majority of every newly committed entry the leader's log holds
        store = layout.store(S)
        entries = layout.entries(S)
        n = store[i, S_ENTRIES]
        b = store[i, S_BEGIN_INDEX]
        if n > 0:
            for index in range(max(old, b - 1) + 1, min(new, b + n - 1) + 1):
                k = index - b
                ghost.check_majority(S, i, index, entries[i, k, ET_TERM], entries[i, k, ET_POS], entries[i, k, ET_SIZE], entries[i, k, ET_BODY], term, 0, now)
    if leader == 1 and entry_term < term:
        # ghost `counted`: every entry this commit took, by index
        store = layout.store(S)
        entries = layout.entries(S)
        n = store[i, S_ENTRIES]
        b = store[i, S_BEGIN_INDEX]
        for index in range(max(old, b - 1) + 1, min(new, b + n - 1) + 1):
            k = index - b
            see_index(S, index)
            if set_add(S, layout.counted(S), layout.counted_counts(S), layout.counted_order(S), W_COUNTED, index, entries[i, k, ET_TERM], entries[i, k, ET_POS], entries[i, k, ET_SIZE], entries[i, k, ET_BODY]):
                world[W_EVIDENCE] += 1


@njit(cache=True)
def on_append_result(S, i, code, index, term, now):
    world = core_table.world(S)
    if 0 <= code < layout.results(S).shape[0]:
        layout.results(S)[code] += 1
    if code == SUCCESS:
        store = layout.store(S)
        k = dledger_log_store.offset_of(store, i, index)
        if k >= 0:
            entries = layout.entries(S)
            see_index(S, index)
            if set_add(S, layout.acked(S), layout.acked_counts(S), layout.acked_order(S), W_ACKED, index, entries[i, k, ET_TERM], entries[i, k, ET_POS], entries[i, k, ET_SIZE], entries[i, k, ET_BODY]):
                world[W_EVIDENCE] += 1
            ghost.check_majority(S, i, index, entries[i, k, ET_TERM], entries[i, k, ET_POS], entries[i, k, ET_SIZE], entries[i, k, ET_BODY], term, 1, now)
        if world[W_CALM] == 1 and world[W_FIRST_ACK] < 0:
            world[W_FIRST_ACK] = world[W_NOW]


@njit(cache=True)
def on_leader(S, i, term, end_term, now):
    """ghost.update of RoleChanged(LEADER): Terms.led with `led_ends`, then `regressed` and `elected`"""
    world = core_table.world(S)
    ghost.note_led(S, i, term, end_term, now)
    elected = layout.elected(S)
    if term < 0 or term >= elected.shape[0]:
        world[W_STOP] = OVERFLOW_TERMS
        return
    world[W_TOP_TERM] = max(world[W_TOP_TERM], term)
    if world[W_TOP_LEADER_TERM] > term:
        layout.regressed(S)[term] = world[W_TOP_LEADER_TERM]
        world[W_EVIDENCE] += 1
    if (elected[term] >> i) & 1 == 0:
        elected[term] |= 1 << i
        world[W_EVIDENCE] += 1
    world[W_TOP_LEADER_TERM] = max(world[W_TOP_LEADER_TERM], term)


@njit(cache=True)
def on_restart_or_calm(S):
    """world.ghost_update of Restart and Calm: every live server's committed prefix."""
    config = core_table.config(S)
    alive = core_table.alive(S)
    store = layout.store(S)
    for j in range(config[C_PEERS]):
        if alive[j] == 1:
            see_committed_prefix(S, j, -1, store[j, S_COMMITTED_INDEX], election_layout.members(S)[j, CURR_TERM])


@njit(cache=True)
def dropped_first(S, i, committed_only):
    """Walk spec.dledger_log._dropped(before, after) of server i (the step's saved tail against
    the log now) and call back nothing: returns (count, lowest index, highest index) of the
    dropped entries (only those the ghost holds as committed there, if `committed_only`)."""
    store_changes = layout.store_changes(S)
    saved_entries = layout.saved_entries(S)
    store = layout.store(S)
    entries = layout.entries(S)
    committed = layout.committed(S)
    cnt = 0
    lo = BIG
    hi = -1
    if store_changes[i, SC_DIRTY] == BIG:
        return 0, lo, hi
    base = store_changes[i, SC_SAVED_FROM]
    for r in range(store_changes[i, SC_SAVED] - 1, -1, -1):
        index = base + r
        k = dledger_log_store.offset_of(store, i, index)
        if k >= 0 and dledger_log_store.holds(entries, i, k, saved_entries[i, r, 0], saved_entries[i, r, 1], saved_entries[i, r, 2], saved_entries[i, r, 3]):
            break
        if committed_only and not (committed[index, 0] == 1 and committed[index, 1] == saved_entries[i, r, 0] and committed[index, 2] == saved_entries[i, r, 1]
                                   and committed[index, 3] == saved_entries[i, r, 2] and committed[index, 4] == saved_entries[i, r, 3]):
            continue
        cnt += 1
        lo = min(lo, index)
        hi = max(hi, index)
    return cnt, lo, hi


@njit(cache=True, inline='always')
def record(S, p, step, now, k):
    verdicts = core_table.verdicts(S)
    verdicts[p, V_STEP] = step
    verdicts[p, V_TIME] = now
    verdicts[p, V_CAUSE] = k


@njit(cache=True, inline='always')
def may_record(S, p):
    """A violation of p may still be recorded: none yet, or only an expected one."""
    verdicts = core_table.verdicts(S)
    return verdicts[p, V_STEP] < 0 or verdicts[p, V_CAUSE] != CAUSE_NONE


@njit(cache=True, inline='always')
def record_unexpected(S, p, step, now):
    """Monitor._record of a violation with no known cause (it replaces an expected one)."""
    if may_record(S, p):
        record(S, p, step, now, CAUSE_NONE)


@njit(cache=True, inline='always')
def request(S, p, a, b, c):
    """Ask the caller for p's expected cause on the world after this step (the kernel pauses):
    histories.fast.dledger_log_causes computes it with spec/dledger_log.py's own functions."""
    cause_requests = layout.cause_requests(S)
    cause_requests[p, RQ_ON] = 1
    cause_requests[p, RQ_A] = a
    cause_requests[p, RQ_B] = b
    cause_requests[p, RQ_C] = c


@njit(cache=True)
def identical(entries, a, offset_a, b, offset_b):
    return (entries[a, offset_a, ET_TERM] == entries[b, offset_b, ET_TERM] and entries[a, offset_a, ET_POS] == entries[b, offset_b, ET_POS]
            and entries[a, offset_a, ET_SIZE] == entries[b, offset_b, ET_SIZE] and entries[a, offset_a, ET_BODY] == entries[b, offset_b, ET_BODY])


@njit(cache=True)
def pair_scan(S, a, b):
    """spec.dledger_log.log_matching_violation for the pair (a, b) from scratch:
    (holds, P, differing index, key): P is the first index of the overlap where the logs differ
    (past the overlap if none); they violate log matching iff some index from P to the overlap's
    end holds entries of equal terms. The key digests what the violation's cause reads besides the
    ghost (spec.dledger_log.log1_cause_terms: the pair, and both logs' terms from P up to the
    highest such index), so the cause is asked again only when that changed."""
    store = layout.store(S)
    entries = layout.entries(S)
    count_a = store[a, S_ENTRIES]
    count_b = store[b, S_ENTRIES]
    if count_a == 0 or count_b == 0:
        return True, -1, 0, 0
    begin_a = store[a, S_BEGIN_INDEX]
    begin_b = store[b, S_BEGIN_INDEX]
    lo = max(begin_a, begin_b)
    hi = min(begin_a + count_a - 1, begin_b + count_b - 1)
    p = lo
    while p <= hi and identical(entries, a, p - begin_a, b, p - begin_b):
        p += 1
    for idx in range(hi, p - 1, -1):
        if entries[a, idx - begin_a, ET_TERM] == entries[b, idx - begin_b, ET_TERM]:
            key = (a * 64 + b) * 1_000_003 + p
            for j in range(p, idx + 1):
                same = entries[a, j - begin_a, ET_TERM] == entries[b, j - begin_b, ET_TERM] and not identical(entries, a, j - begin_a, b, j - begin_b)
                key = (key * 1_000_003 + entries[a, j - begin_a, ET_TERM]) * 1_000_003 + entries[b, j - begin_b, ET_TERM] * 2 + same
            return False, p, p, key
    return True, p, 0, 0


@njit(cache=True)
def pair_update(S, a, b, first_difference):
    """The pair (a, b) held at the last check with first difference pp; re-check what the step
    changed (md: dirty index, old ends). Returns (holds, new P)."""
    store = layout.store(S)
    entries = layout.entries(S)
    store_changes = layout.store_changes(S)
    count_a = store[a, S_ENTRIES]
    count_b = store[b, S_ENTRIES]
    if count_a == 0 or count_b == 0 or first_difference < 0 or store_changes[a, SC_BEGIN_MOVED] == 1 or store_changes[b, SC_BEGIN_MOVED] == 1:
        h, p, _, _ = pair_scan(S, a, b)
        return h, p
    begin_a = store[a, S_BEGIN_INDEX]
    begin_b = store[b, S_BEGIN_INDEX]
    hi = min(begin_a + count_a - 1, begin_b + count_b - 1)
    x = min(store_changes[a, SC_DIRTY], store_changes[b, SC_DIRTY]) - 1
    oea = store_changes[a, SC_OLD_END] if store_changes[a, SC_DIRTY] != BIG else begin_a + count_a - 1
    oeb = store_changes[b, SC_OLD_END] if store_changes[b, SC_DIRTY] != BIG else begin_b + count_b - 1
    hi_old = min(oea, oeb)
    p = min(first_difference, x + 1)
    while p <= hi and identical(entries, a, p - begin_a, b, p - begin_b):
        p += 1
    for idx in range(max(p, min(x, hi_old) + 1), hi + 1):
        if entries[a, idx - begin_a, ET_TERM] == entries[b, idx - begin_b, ET_TERM]:
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


@njit(cache=True)
def shape_ok(S, i, frm):
    """store.check_positions over entries from index `frm` on (and the pair before it)."""
    config = core_table.config(S)
    store = layout.store(S)
    entries = layout.entries(S)
    n = store[i, S_ENTRIES]
    b = store[i, S_BEGIN_INDEX]
    k0 = max(0, frm - b)
    body_length = config[C_BODY_LENGTH]
    for k in range(k0, n):
        body = entries[i, k, ET_BODY]
        if entries[i, k, ET_SIZE] != BODY_OFFSET + (body_length if body != 0 else 0):
            return False
        if k > 0:
            if entries[i, k, ET_TERM] < entries[i, k - 1, ET_TERM]:
                return False
            wrote = entries[i, k - 1, ET_POS] + entries[i, k - 1, ET_SIZE]
            if entries[i, k, ET_POS] != dledger_log_store.pre_append(S, wrote, entries[i, k, ET_SIZE]):
                return False
    return True


@njit(cache=True)
def stuck_candidates(S, lead, leader_term, mask):
    """spec.election.stuck_candidates is not None for the servers in `mask` (0.2.6 / 0.3.1.2):
    each a live CANDIDATE above the followed term whose log too many live peers beat."""
    config = core_table.config(S)
    alive = core_table.alive(S)
    if config[C_STEP_DOWN_ON_HIGHER_TERM] == 1 or lead < 0 or mask == 0:
        return False
    members = election_layout.members(S)
    n = config[C_PEERS]
    quorum = n // 2 + 1
    for x in range(n):
        if (mask >> x) & 1 == 0:
            continue
        if alive[x] == 0 or members[x, ROLE] != CANDIDATE or members[x, CURR_TERM] <= leader_term:
            return False
        ahead = 0
        for o in range(n):
            if o != x and alive[o] == 1 and (members[x, LEDGER_END_TERM] < members[o, LEDGER_END_TERM] or (
                    members[x, LEDGER_END_TERM] == members[o, LEDGER_END_TERM] and members[x, LEDGER_END_INDEX] < members[o, LEDGER_END_INDEX])):
                ahead += 1
        if n - ahead >= quorum:
            return False
    return True


@njit(cache=True)
def astray_possible(S, x, lead, leader_term, now, calm_at):
    """spec.election.astray for node x but its two_leaders_cause (which the caller's pause asks):
    another leader of the followed term lterm won it within C_ASTRAY_BOUND_MS (from the calm on), and it is
    x or x accepted it in lterm."""
    config = core_table.config(S)
    world = core_table.world(S)
    leaderships = layout.leaderships(S)
    votes = layout.votes(S)
    for r in range(world[W_LEADERSHIPS]):
        other = leaderships[r, 1]
        if leaderships[r, 0] != leader_term or other == lead or now - max(leaderships[r, 2], calm_at) > config[C_ASTRAY_BOUND_MS]:
            continue
        if other == x:
            return True
        for v in range(world[W_VOTES]):
            if votes[v, 0] == x and votes[v, 1] == leader_term and votes[v, 2] == other:
                return True
    return False


@njit(cache=True)
def check_liveness(S, step, now):
    """LIVE-1, LIVE-2, LIVE-3 (spec/election.py, as the log world has them)."""
    config = core_table.config(S)
    world = core_table.world(S)
    alive = core_table.alive(S)
    verdicts = core_table.verdicts(S)
    n = config[C_PEERS]
    calm = world[W_CALM] == 1
    calm_at = world[W_CALM_AT]
    liveness = layout.liveness(S)
    lead = world[W_SETTLED_LEADER]
    leader_term = world[W_SETTLED_LEADER_TERM]
    members = election_layout.members(S)
    if (calm and world[W_AGREED] == 0 and now - max(world[W_AGREED_SINCE], calm_at) > config[C_LIVE1_BOUND_MS] and config[C_ENABLE_LEADER_ELECTOR] == 1
            and may_record(S, P_LIVE1)):
        mask = 0
        if lead >= 0:
            for k in range(n):
                if alive[k] == 1 and k != lead and not (members[k, ROLE] == FOLLOWER and members[k, LEADER_ID] == lead
                                                        and members[k, CURR_TERM] == leader_term):
                    mask |= 1 << k
        if not stuck_candidates(S, lead, leader_term, mask):
            record(S, P_LIVE1, step, now, CAUSE_NONE)
        elif verdicts[P_LIVE1, V_STEP] < 0:
            request(S, P_LIVE1, 0, 0, 0)
    if verdicts[P_LIVE2, V_STEP] < 0:
        for k in range(n):
            if liveness[k, LV_TRANSFER_SINCE] >= 0 and now - liveness[k, LV_TRANSFER_SINCE] > config[C_LIVE2_BOUND_MS]:
                record(S, P_LIVE2, step, now, CAUSE_NONE)
                break
    if calm and may_record(S, P_LIVE3):
        # spec.election.live3_expected: each late straggler a stuck candidate or astray
        late = 0
        ask = False
        for k in range(n):
            if liveness[k, NN_STRAGGLER_SINCE] >= 0 and now - max(liveness[k, NN_STRAGGLER_SINCE], calm_at) > config[C_LIVE3_BOUND_MS]:
                late |= 1 << k
                if not stuck_candidates(S, lead, leader_term, 1 << k):
                    if not astray_possible(S, k, lead, leader_term, now, calm_at):
                        record(S, P_LIVE3, step, now, CAUSE_NONE)
                        return
                    ask = True
        if ask:
            request(S, P_LIVE3, 0, 0, 0)  # astray needs ELE-1's evidence and its time, so every step
        elif late != 0 and verdicts[P_LIVE3, V_STEP] < 0:
            request(S, P_LIVE3, 0, 0, 0)


@njit(cache=True)
def check_states(S, step, now):
    """The state properties after a step: LOG-1 (where logs changed), LOG-5, LOG-7, LOG-8,
    LIVE-*, LOG-L. lmp[a, b]: the pair's first difference while it holds (-1: re-scan);
    lcache: what the LOG-1 and LOG-5 causes were last asked on ([0], [1]: GVER and LOG-1's
    pair_scan key; [6]: GVER), so a violation still explained by unchanged evidence is not asked again."""
    config = core_table.config(S)
    world = core_table.world(S)
    verdicts = core_table.verdicts(S)
    log_pairs = layout.log_pairs(S)
    cause_cache = layout.cause_cache(S)
    n = config[C_PEERS]
    store_changes = layout.store_changes(S)
    changed = False
    for j in range(n):
        if store_changes[j, SC_DIRTY] != BIG:
            changed = True
    # LOG-1: pairs where a log changed are re-checked; the others keep their verdict
    if changed:
        bad = False
        for a in range(n):
            for b in range(a + 1, n):
                if store_changes[a, SC_DIRTY] != BIG or store_changes[b, SC_DIRTY] != BIG:
                    h, p = pair_update(S, a, b, log_pairs[a, b])
                    log_pairs[a, b] = p if h else -2  # -2: violated, scanned in full until it holds again
                if log_pairs[a, b] == -2:
                    bad = True
        cause_cache[5] = 1 if bad else 0
    if cause_cache[5] == 1 and may_record(S, P_LOG1):
        key = cause_cache[1]
        if changed or cause_cache[0] != world[W_EVIDENCE]:
            _, key = log1_first(S, n)
        if verdicts[P_LOG1, V_STEP] < 0 or cause_cache[0] != world[W_EVIDENCE] or cause_cache[1] != key:
            cause_cache[0] = world[W_EVIDENCE]
            cause_cache[1] = key
            request(S, P_LOG1, 0, 0, 0)
    # LOG-5
    if world[W_CONFLICTS] > 0 and may_record(S, P_LOG5) and (verdicts[P_LOG5, V_STEP] < 0 or cause_cache[6] != world[W_EVIDENCE]):
        cause_cache[6] = world[W_EVIDENCE]
        request(S, P_LOG5, 0, 0, 0)
    # LOG-7
    if changed and verdicts[P_LOG7, V_STEP] < 0:
        for j in range(n):
            if store_changes[j, SC_DIRTY] != BIG:
                frm = -BIG if store_changes[j, SC_BEGIN_MOVED] == 1 else store_changes[j, SC_DIRTY]
                if not shape_ok(S, j, frm):
                    record(S, P_LOG7, step, now, CAUSE_NONE)
                    break
    # LOG-8
    if world[W_THIN] > 0 and verdicts[P_LOG8, V_STEP] < 0:
        record(S, P_LOG8, step, now, CAUSE_NONE)
    check_liveness(S, step, now)
    # LOG-L
    if (verdicts[P_LOGL, V_STEP] < 0 and world[W_CALM] == 1 and world[W_FIRST_ACK] < 0
            and now - world[W_CALM_AT] > LOG_L_BOUND_MS and config[C_CLIENTS] != 0):
        record(S, P_LOGL, step, now, CAUSE_NONE)
