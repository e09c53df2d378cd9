"""The election twin's DLedgerServer as the world sees it (reference_impl/election/server.py):
when a node's threads have something to do (wake_at, its Java-timing slack) and what a tick
runs (on_tick: the take-leadership wait, the preferred-leader check, a round's end or the
StateMaintainer's loop).
"""

from __future__ import annotations

from numba import njit

from histories.fast.election_layout import *  # noqa: F403 - the columns and enums, by the reference's names
from histories.fast.election_node import _finish_heart_beat_round, _finish_vote_round, _maintain_state, _push_respond
from histories.fast.election_transfer import _check_preferred_leader, _take_leadership_wait_step


@njit(cache=True, inline='always')
def _due(since, interval):
    return since + interval + 1 if since >= 0 else 0


@njit(cache=True, inline='always')
def _maintainer_due(C, nd, i):
    """server.maintainer_due"""
    role = nd[i, ROLE]
    if role == LEADER:
        return _due(nd[i, LSHB], C[C_HBI])
    if role == FOLLOWER:
        return _due(nd[i, LLHB], max(2, C[C_LEAK]) * C[C_HBI])
    if nd[i, NEEDINC] == 1:
        return 0
    return nd[i, NTRV]


@njit(cache=True, inline='always')
def _wake_slack(C, nd, i, since, wake):
    """server.wake_slack (`wake`: this node's wake_at)"""
    if nd[i, RTYPE] != 0 or C[C_ELECTOR] == 0:
        return 0
    md = _maintainer_due(C, nd, i)
    due = max(md, since)
    if due <= nd[i, NEXTLOOP] or wake < max(md, nd[i, NEXTLOOP]):
        return 0
    return C[C_SLEEP]


@njit(cache=True, inline='always')
def _round_due(C, nd, i):
    """server.round_due: a round's latch released, else its await timed out; DLedger 0.4.0
    sleeps VOTE_RESULT_WAIT_MS after a heartbeat latch (answers in those ms still count)."""
    rel = nd[i, RREL]
    if rel < 0:
        return nd[i, RDEADLINE]
    if C[C_STEPDOWN] == 1 and nd[i, RTYPE] == RT_HB:
        return min(rel + VOTE_RESULT_WAIT_MS, nd[i, RDEADLINE])
    return rel


@njit(cache=True, inline='always')
def wake_at(C, nd, i):
    """server.wake_at"""
    wake = -1
    if nd[i, RTYPE] != 0:
        wake = _round_due(C, nd, i)
    elif C[C_ELECTOR] == 1:
        wake = max(_maintainer_due(C, nd, i), nd[i, NEXTLOOP])
    if C[C_PREF] == 1 and nd[i, ROLE] == LEADER and nd[i, TIF] == 0:
        wake = nd[i, NCP] if wake < 0 else min(wake, nd[i, NCP])
    if nd[i, TLW] == 1 and nd[i, TL_WAITING] == 1:
        due = nd[i, TL_STARTED] + C[C_LTWT] + 1 if nd[i, TL_IDX] > nd[i, LEI] else 0
        wake = due if wake < 0 else min(wake, due)
    return wake


@njit(cache=True, inline='always')
def _on_tick(C, nd, live, wmk, i, now, draw, pref, self_pref, ob, oc):
    """server.on_tick"""
    if nd[i, TLW] == 1 and nd[i, TL_WAITING] == 1:
        rpc = nd[i, TL_RPC]
        has, code, t = _take_leadership_wait_step(C, nd, i, now, ob, oc)
        if has:
            _push_respond(ob, oc, rpc, MK_LT_RESP, code, t)
    if C[C_PREF] == 1 and nd[i, TIF] == 0 and now >= nd[i, NCP]:
        period = C[C_CPLI]
        nd[i, NCP] = now + period - (now - nd[i, NCP]) % period
        _check_preferred_leader(C, nd, live, wmk, i, pref, self_pref, ob, oc)
    if nd[i, RTYPE] != 0:
        if now >= _round_due(C, nd, i):
            if nd[i, RTYPE] == RT_VOTE:
                _finish_vote_round(C, nd, live, i, now, draw, self_pref, ob, oc)
            else:
                _finish_heart_beat_round(C, nd, i, now, ob, oc)
            nd[i, NEXTLOOP] = now + C[C_SLEEP]
    elif C[C_ELECTOR] == 1 and now >= nd[i, NEXTLOOP]:
        _maintain_state(C, nd, i, now, draw, self_pref, ob, oc)
