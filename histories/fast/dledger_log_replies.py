"""RPL-1, RPL-2 and RPL-3 in the dledger_log twin (spec/replies.py): every reply a step put
in flight, against the guards restated from the Java source, on the responder's state
before the step (`mb`: its election row; its log as the step began: the saved tail sv)
and after it.

Heartbeats and votes use the election twin's restated guards (election_replies); pushes
are restated here from spec.replies._push_reply_problem and _lower_term_success, apart
from the twin's entry handler (dledger_log_handler), so a mistake in one shows against the
other. The world addresses every push to its remote_id in the configured group, so the
UNKNOWN_MEMBER / UNKNOWN_GROUP guards always pass.
"""

from __future__ import annotations

from numba import njit

import histories.fast.dledger_log_ghost as lg
import histories.fast.dledger_log_layout as L
import histories.fast.dledger_log_store as st
import histories.fast.election as E
from histories.fast.dledger_log_layout import (
    BIG,
    DR_AT,
    DR_SERVER,
    INCONSISTENT_STATE,
    MD_DIRTY,
    MD_OEND,
    MD_SVB,
    REPEATED_PUSH,
    SUCCESS,
    T_APPEND,
    T_COMPARE,
    T_TRUNCATE,
    W_NDROPS,
)

RPL_3 = 3  # a push's reply the EntryHandler's guards do not give (bits: 1 << E.RPL_1, E.RPL_2, RPL_3)


@njit(cache=True)
def _holds_now(S, i, index, term, pos, size, body):
    sto = L.sto_(S)
    k = st.offset_of(sto, i, index)
    return k >= 0 and st.holds(L.ent_(S), i, k, term, pos, size, body)


@njit(cache=True)
def _held_before(S, i, index, term, pos, size, body):
    """st.entry_at(the log server i began the step with, index) == entry: below the step's first
    change the log is as it was; from there, the saved tail (sv) has what it held."""
    md = L.md_(S)
    d = md[i, MD_DIRTY]
    if d == BIG or index < d:
        return _holds_now(S, i, index, term, pos, size, body)
    svb = md[i, MD_SVB]
    if index < svb or index > md[i, MD_OEND]:
        return False
    sv = L.sv_(S)
    r = index - svb
    return sv[i, r, 0] == term and sv[i, r, 1] == pos and sv[i, r, 2] == size and sv[i, r, 3] == body


@njit(cache=True)
def _dropped_now(ws, G, i, now, index, term, pos, size, body, match):
    """A drop of server i at this time (that took this entry at `index`, if `match`)."""
    gdr = L.g_gdr(G)
    for r in range(ws[W_NDROPS] - 1, -1, -1):
        if gdr[r, DR_AT] != now:
            break
        if gdr[r, DR_SERVER] == i and (not match or lg.drop_holds(G, r, index, term, pos, size, body)):
            return True
    return False


@njit(cache=True)
def push_reply(ws, G, S, i, mb, code, rterm, typ, leader, has, index, term, pos, size, body, now):
    """rpl1 (an APPEND answered SUCCESS below the node's term, its entry not held before) and rpl3
    (spec.replies._push_reply_problem) on server i's reply `code` to a push it held."""
    nd = L.nd_(S)
    bad = 0
    if typ == T_APPEND and code == SUCCESS:
        t = max(mb[E.TERM], nd[i, E.TERM])  # the handler answers with the term the maintainer left it
        if rterm < t and not (has == 1 and _held_before(S, i, index, term, pos, size, body)):
            bad |= 1 << E.RPL_1
    if code == REPEATED_PUSH:
        # the EntryHandler answers it only at once (handle_push), never from its queue
        return bad | 1 << RPL_3
    if code == INCONSISTENT_STATE and typ == T_COMPARE and has == 1:
        if (_held_before(S, i, index, term, pos, size, body) and _holds_now(S, i, index, term, pos, size, body)
                and not _dropped_now(ws, G, i, now, 0, 0, 0, 0, 0, False)):
            bad |= 1 << RPL_3
        return bad
    if code != SUCCESS:
        return bad
    if typ == T_COMPARE:
        if has == 0 or (not _held_before(S, i, index, term, pos, size, body)
                        and not _holds_now(S, i, index, term, pos, size, body)):
            bad |= 1 << RPL_3
        return bad
    if typ == T_APPEND or typ == T_TRUNCATE:
        if has == 0 or (not _holds_now(S, i, index, term, pos, size, body)
                        and not _dropped_now(ws, G, i, now, index, term, pos, size, body, True)):
            return bad | 1 << RPL_3
        if typ == T_APPEND and _held_before(S, i, index, term, pos, size, body):
            return bad  # checkAppendFuture: answered from the log
        if not (nd[i, E.ROLE] == E.FOLLOWER and rterm == nd[i, E.TERM] and leader == nd[i, E.LEADER_ID]):
            bad |= 1 << RPL_3
    return bad


@njit(cache=True)
def immediate_push_reply(S, i, code, m):
    """rpl3 on the reply handle_push gave at once: REPEATED_PUSH only for an APPEND whose index
    was waiting (handle_push leaves write_requests as they were when it answers so)."""
    if code != REPEATED_PUSH:
        return 0
    index = m[L.RQ_EIDX]
    wr = L.wr_(S)
    if m[L.RQ_TYPE] == T_APPEND and m[L.RQ_HAS] == 1 and 0 <= index < wr.shape[1] and wr[i, index, L.PW_ON] == 1:
        return 0
    return 1 << RPL_3
