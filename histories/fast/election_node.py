"""The election twin's node logic: DLedgerLeaderElector and MemberState
(reference_impl/election/{leader_elector, member_state}.py) over one row of `nd` per node:
roles, votes, heartbeats and their rounds. Leadership transfers are in `election_transfer`,
DLedgerServer's entry points (wake_at, on_tick) in `election_server`.

Each function is the reference function of the same name with a leading underscore,
its branches in the reference's order. Outputs (Send, Respond, observations) are pushed
to the caller's `ob` rows in the reference's output order (`oc[0]` counts them,
`oc[1]` flags an overflow).
"""

from __future__ import annotations

from numba import njit

from histories.fast.election_layout import *  # noqa: F403 - the columns and enums, by the reference's names


@njit(cache=True, inline='always')
def _is_quorum(C, num):
    return num >= C[C_N] // 2 + 1


@njit(cache=True, inline='always')
def _elapsed(now, since):
    return now - since if since >= 0 else LONG_AGO_MS


@njit(cache=True, inline='always')
def _rand_int(draw, bound):
    return (draw * bound) >> 16


@njit(cache=True, inline='always')
def _push_send(ob, oc, dst, mk, m0, m1, m2, m3, m4, ck, c1, c2, c3):
    k = oc[0]
    if k >= ob.shape[0]:
        oc[1] = 1
        return
    ob[k, 0] = OT_SEND
    ob[k, 1] = dst
    ob[k, 2] = mk
    ob[k, 3] = m0
    ob[k, 4] = m1
    ob[k, 5] = m2
    ob[k, 6] = m3
    ob[k, 7] = m4
    ob[k, 8] = ck
    ob[k, 9] = c1
    ob[k, 10] = c2
    ob[k, 11] = c3
    oc[0] = k + 1


@njit(cache=True, inline='always')
def _push_respond(ob, oc, rpc, mk, m0, m1):
    k = oc[0]
    if k >= ob.shape[0]:
        oc[1] = 1
        return
    ob[k, 0] = OT_RESPOND
    ob[k, 1] = rpc
    ob[k, 2] = mk
    ob[k, 3] = m0
    ob[k, 4] = m1
    oc[0] = k + 1


@njit(cache=True, inline='always')
def _push_obs(ob, oc, kind, a, b, c):
    k = oc[0]
    if k >= ob.shape[0]:
        oc[1] = 1
        return
    ob[k, 0] = OT_OBS
    ob[k, 1] = kind
    ob[k, 2] = a
    ob[k, 3] = b
    ob[k, 4] = c
    oc[0] = k + 1


@njit(cache=True, inline='always')
def _clear_take_leadership(nd, i):
    nd[i, TLW] = 0
    nd[i, TL_RPC] = 0
    nd[i, TL_TERM] = 0
    nd[i, TL_IDX] = 0
    nd[i, TL_STARTED] = 0
    nd[i, TL_WAITING] = 0
    nd[i, TL_FROM] = -1
    nd[i, TL_LEADER] = -1


@njit(cache=True)
def _boot(C, nd, live, i, now, term, vote, lei, let, ncp):
    """server.boot (and Member defaults): `ncp` is next_check_preferred_ms."""
    n = C[C_N]
    for f in range(NF):
        nd[i, f] = 0
    nd[i, TERM] = term
    nd[i, VOTE] = vote
    nd[i, ROLE] = CANDIDATE
    nd[i, LEADER_ID] = -1
    nd[i, LEI] = lei
    nd[i, LET] = let
    nd[i, KMAX] = -1
    nd[i, TRANSFEREE] = -1
    nd[i, TTTL] = -1
    nd[i, LLHB] = -1
    nd[i, LSHB] = -1
    nd[i, LSUCC] = -1
    nd[i, NTRV] = -1
    nd[i, NEEDINC] = 0
    nd[i, LPR] = WAIT_TO_REVOTE
    nd[i, NEXTLOOP] = now
    nd[i, RTYPE] = 0
    nd[i, ROUNDSEQ] = 0
    nd[i, NCP] = ncp
    nd[i, TIF] = 0
    _clear_take_leadership(nd, i)
    for j in range(n):
        live[i, j] = -1


@njit(cache=True)
def _take_leadership_task_check(nd, i, term, role, ob, oc):
    """leader_elector.take_leadership_task_check"""
    if nd[i, TTTL] == -1 or nd[i, TLW] == 0 or nd[i, TL_WAITING] == 1:
        return
    target = nd[i, TTTL]
    if term > target:
        code = EXPIRED_TERM
    elif term == target:
        if role == LEADER:
            code = SUCCESS
        elif role == FOLLOWER:
            code = TAKE_LEADERSHIP_FAILED
        else:
            return
    else:
        code = TAKE_LEADERSHIP_FAILED if role == FOLLOWER else INTERNAL_ERROR
    rpc = nd[i, TL_RPC]
    nd[i, TTTL] = -1
    _clear_take_leadership(nd, i)
    _push_respond(ob, oc, rpc, MK_LT_RESP, code, term)


@njit(cache=True)
def _handle_role_change(nd, i, term, role, ob, oc):
    """leader_elector.handle_role_change"""
    _take_leadership_task_check(nd, i, term, role, ob, oc)
    _push_obs(ob, oc, OB_ROLE, term, role, nd[i, LEADER_ID])


@njit(cache=True)
def _change_role_to_leader(C, nd, live, i, term, ob, oc):
    if nd[i, TERM] != term:
        return
    nd[i, ROLE] = LEADER
    nd[i, LEADER_ID] = i
    for j in range(C[C_N]):
        live[i, j] = -1
    nd[i, LSHB] = -1
    _handle_role_change(nd, i, term, LEADER, ob, oc)


@njit(cache=True)
def _change_role_to_candidate(nd, i, term, ob, oc):
    if term < nd[i, TERM]:
        return
    nd[i, ROLE] = CANDIDATE
    nd[i, LEADER_ID] = -1
    nd[i, TRANSFEREE] = -1
    if term > nd[i, KMAX]:
        nd[i, KMAX] = term
    _handle_role_change(nd, i, term, CANDIDATE, ob, oc)


@njit(cache=True)
def _change_role_to_follower(nd, i, term, leader, now, ob, oc):
    nd[i, LPR] = WAIT_TO_REVOTE
    nd[i, ROLE] = FOLLOWER
    nd[i, LEADER_ID] = leader
    nd[i, TRANSFEREE] = -1
    nd[i, LLHB] = now
    _handle_role_change(nd, i, term, FOLLOWER, ob, oc)


@njit(cache=True)
def _is_taking_leadership(C, nd, i, self_pref):
    return C[C_PREF] == 1 and nd[i, TTTL] == nd[i, TERM] and self_pref[i] == 1


@njit(cache=True, inline='always')
def _handle_vote(C, nd, i, cand, term, lei, let, self_vote, self_pref, ob, oc):
    """leader_elector.handle_vote -> (reply term, vote_result)"""
    curr = nd[i, TERM]
    if cand < 0 or cand >= C[C_N]:
        return curr, V_REJECT_UNKNOWN_LEADER
    if not self_vote and cand == i:
        return curr, V_REJECT_UNEXPECTED_LEADER
    if let < nd[i, LET]:
        return curr, V_REJECT_EXPIRED_LEDGER_TERM
    if let == nd[i, LET] and lei < nd[i, LEI]:
        return curr, V_REJECT_SMALL_LEDGER_END_INDEX
    if term < curr:
        return curr, V_REJECT_EXPIRED_VOTE_TERM
    if term == curr:
        if nd[i, VOTE] >= 0 and nd[i, VOTE] != cand:
            # mutant 1 grants when the rest of handleVote would (it re-runs with no vote)
            if not (C[C_MUTANT] == MUT_VOTE_IGNORING_VOTE and not term < nd[i, LET]
                    and not (not self_vote and _is_taking_leadership(C, nd, i, self_pref)
                             and let == nd[i, LET] and nd[i, LEI] >= lei)):
                if nd[i, LEADER_ID] >= 0:
                    return curr, V_REJECT_ALREADY_HAS_LEADER
                return curr, V_REJECT_ALREADY_VOTED
    else:
        _change_role_to_candidate(nd, i, term, ob, oc)
        nd[i, NEEDINC] = 1
        return curr, V_REJECT_TERM_NOT_READY
    if term < nd[i, LET]:
        return nd[i, LET], V_REJECT_TERM_SMALL_THAN_LEDGER
    if (not self_vote and _is_taking_leadership(C, nd, i, self_pref) and let == nd[i, LET]
            and nd[i, LEI] >= lei):
        return curr, V_REJECT_TAKING_LEADERSHIP
    nd[i, VOTE] = cand
    _push_obs(ob, oc, OB_GRANT, nd[i, TERM], cand, 0)
    return curr, V_ACCEPT


@njit(cache=True, inline='always')
def _handle_heart_beat(C, nd, i, leader, term, now, ob, oc):
    """leader_elector.handle_heart_beat -> (code, reply term)"""
    mut = C[C_MUTANT]
    if mut == MUT_HB_FOLLOW_HIGHER and 0 <= leader < C[C_N] and leader != i and term > nd[i, TERM]:
        nd[i, ROLE] = FOLLOWER
        nd[i, LEADER_ID] = leader
        nd[i, LLHB] = now
        _push_obs(ob, oc, OB_ROLE, nd[i, TERM], FOLLOWER, leader)
        return SUCCESS, -1
    if mut == MUT_HB_ACCEPT_LOWER and 0 <= leader < C[C_N] and leader != i and term < nd[i, TERM]:
        return SUCCESS, -1
    if (mut == MUT_LAST_NEVER_FOLLOWS and i == C[C_N] - 1 and 0 <= leader < C[C_N] and leader != i
            and term == nd[i, TERM] and nd[i, LEADER_ID] < 0):
        return INCONSISTENT_LEADER, -1
    if mut == MUT_HB_NO_REFRESH and nd[i, ROLE] == FOLLOWER:
        before = nd[i, LLHB]
        code, rterm = _handle_heart_beat_ref(C, nd, i, leader, term, now, ob, oc)
        if nd[i, ROLE] == FOLLOWER:
            nd[i, LLHB] = before
        return code, rterm
    return _handle_heart_beat_ref(C, nd, i, leader, term, now, ob, oc)


@njit(cache=True, inline='always')
def _handle_heart_beat_ref(C, nd, i, leader, term, now, ob, oc):
    if leader < 0 or leader >= C[C_N]:
        return UNKNOWN_MEMBER, nd[i, TERM]
    if leader == i:
        return UNEXPECTED_MEMBER, nd[i, TERM]
    if term < nd[i, TERM]:
        return EXPIRED_TERM, nd[i, TERM]
    if term == nd[i, TERM]:
        if leader == nd[i, LEADER_ID]:
            nd[i, LLHB] = now
            return SUCCESS, -1
        if nd[i, LEADER_ID] < 0:
            _change_role_to_follower(nd, i, term, leader, now, ob, oc)
            return SUCCESS, -1
        return INCONSISTENT_LEADER, -1
    _change_role_to_candidate(nd, i, term, ob, oc)
    nd[i, NEEDINC] = 1
    return TERM_NOT_READY, -1


@njit(cache=True)
def _get_next_time_to_request_vote(C, nd, i, now, draw, self_pref):
    if _is_taking_leadership(C, nd, i, self_pref):
        lo = C[C_MINTL]
        hi = C[C_MAXTL]
    else:
        lo = C[C_MINV]
        hi = C[C_MAXV]
    return now + lo + _rand_int(draw, hi - lo)


@njit(cache=True, inline='always')
def _send_heartbeats(C, nd, i, now, ob, oc):
    """leader_elector.send_heartbeats (after maintain_as_leader set last_send_heart_beat_time)"""
    seq = nd[i, ROUNDSEQ] + 1
    for p in range(C[C_N]):
        if p != i:
            _push_send(ob, oc, p, MK_HB_REQ, nd[i, LEADER_ID], nd[i, TERM], 0, 0, 0, CK_HB, seq, 0, 0)
    nd[i, RTYPE] = RT_HB
    nd[i, RSEQ] = seq
    nd[i, RTERM] = nd[i, TERM]
    nd[i, RDEADLINE] = now + C[C_HBI]
    nd[i, RALL] = 1
    nd[i, RSUCC] = 1
    nd[i, RNR] = 0
    nd[i, RMAXT] = -1
    nd[i, RINC] = 0
    nd[i, RREL] = -1
    nd[i, RKMAX] = 0
    nd[i, RVALID] = 0
    nd[i, RACC] = 0
    nd[i, RBIG] = 0
    nd[i, RHASL] = 0
    nd[i, ROUNDSEQ] = seq


@njit(cache=True, inline='always')
def _on_heart_beat_response(C, nd, live, i, seq, peer, has_resp, code, rterm, now):
    """leader_elector.on_heart_beat_response"""
    if not has_resp:
        code = NETWORK_ERROR
    live[i, peer] = 1 if code != NETWORK_ERROR else 0
    if nd[i, RTYPE] != RT_HB or nd[i, RSEQ] != seq:
        return
    if code == SUCCESS:
        nd[i, RSUCC] += 1
    elif code == EXPIRED_TERM:
        nd[i, RMAXT] = rterm
    elif code == INCONSISTENT_LEADER:
        nd[i, RINC] = 1
    elif code == TERM_NOT_READY:
        nd[i, RNR] += 1
    nd[i, RALL] += 1
    if nd[i, RREL] < 0 and (_is_quorum(C, nd[i, RSUCC]) or _is_quorum(C, nd[i, RSUCC] + nd[i, RNR])
                            or nd[i, RALL] == C[C_N]):
        nd[i, RREL] = now


@njit(cache=True)
def _finish_heart_beat_round(C, nd, i, now, ob, oc):
    """leader_elector.finish_heart_beat_round"""
    if C[C_MUTANT] == MUT_LEASE_NEVER_EXPIRES:
        nd[i, LSUCC] = now
    succ = nd[i, RSUCC]
    nr = nd[i, RNR]
    hterm = nd[i, RTERM]
    maxt = nd[i, RMAXT]
    inc = nd[i, RINC]
    nd[i, RTYPE] = 0
    if C[C_STEPDOWN] == 1 and maxt > hterm:
        # DLedger 0.4.0 looks at the highest term before it counts the quorum
        _step_down(nd, i, maxt, hterm, 0, ob, oc)
        return
    if _is_quorum(C, succ):
        nd[i, LSUCC] = now
        return
    if _is_quorum(C, succ + nr):
        nd[i, LSHB] = -1
        return
    if maxt > hterm:
        reason = 0
        term = maxt
    elif inc == 1:
        reason = 1
        term = hterm
    elif _elapsed(now, nd[i, LSUCC]) > C[C_LEAK] * C[C_HBI]:
        reason = 2
        term = hterm
    else:
        return
    _step_down(nd, i, term, hterm, reason, ob, oc)


@njit(cache=True)
def _step_down(nd, i, term, hterm, reason, ob, oc):
    """The end of finish_heart_beat_round: change_role_to_candidate(term), a LeaderStepDown
    first among the outputs if a leader stepped down."""
    was_leader = nd[i, ROLE] == LEADER
    k = oc[0]
    _change_role_to_candidate(nd, i, term, ob, oc)
    if was_leader and nd[i, ROLE] == CANDIDATE:
        # LeaderStepDown comes first among the outputs; observations take no ids, so
        # only their count matters to the world (the meter), and the log records counts.
        _push_obs(ob, oc, OB_STEPDOWN, hterm, reason, 0)
        if oc[0] > k + 1:
            last = oc[0] - 1
            for f in range(OF):
                tmp = ob[last, f]
                for r in range(last, k, -1):
                    ob[r, f] = ob[r - 1, f]
                ob[k, f] = tmp


@njit(cache=True, inline='always')
def _maintain_as_follower(C, nd, i, now, ob, oc):
    since = _elapsed(now, nd[i, LLHB])
    if since <= 2 * C[C_HBI]:
        return
    if since <= C[C_LEAK] * C[C_HBI]:
        return
    _push_obs(ob, oc, OB_FTO, nd[i, TERM], nd[i, LEADER_ID], 0)
    _change_role_to_candidate(nd, i, nd[i, TERM], ob, oc)


@njit(cache=True, inline='always')
def _on_vote_response(C, nd, i, seq, has_resp, result, rterm, now):
    """leader_elector.on_vote_response"""
    if nd[i, RTYPE] != RT_VOTE or nd[i, RSEQ] != seq:
        return
    if not has_resp:
        result = V_UNKNOWN
    if result != V_UNKNOWN:
        nd[i, RVALID] += 1
    if result == V_ACCEPT:
        nd[i, RACC] += 1
    elif result == V_REJECT_ALREADY_HAS_LEADER:
        nd[i, RHASL] = 1
    elif result == V_REJECT_TERM_SMALL_THAN_LEDGER or result == V_REJECT_EXPIRED_VOTE_TERM:
        if rterm > nd[i, RKMAX]:
            nd[i, RKMAX] = rterm
    elif result == V_REJECT_EXPIRED_LEDGER_TERM or result == V_REJECT_SMALL_LEDGER_END_INDEX:
        nd[i, RBIG] += 1
    elif result == V_REJECT_TERM_NOT_READY:
        nd[i, RNR] += 1
    nd[i, RALL] += 1
    if nd[i, RREL] < 0 and (nd[i, RHASL] == 1 or _is_quorum(C, nd[i, RACC])
                            or _is_quorum(C, nd[i, RACC] + nd[i, RNR]) or nd[i, RALL] == C[C_N]):
        nd[i, RREL] = now


@njit(cache=True)
def _vote_for_quorum_responses(C, nd, i, now, draw, self_pref, ob, oc):
    term = nd[i, TERM]
    seq = nd[i, ROUNDSEQ] + 1
    nd[i, ROUNDSEQ] = seq
    nd[i, RTYPE] = RT_VOTE
    nd[i, RSEQ] = seq
    nd[i, RTERM] = term
    nd[i, RKMAX] = term
    nd[i, RDEADLINE] = now + VOTE_WAIT_BASE_MS + _rand_int(draw, C[C_MAXV])
    nd[i, RALL] = 0
    nd[i, RVALID] = 0
    nd[i, RACC] = 0
    nd[i, RNR] = 0
    nd[i, RBIG] = 0
    nd[i, RHASL] = 0
    nd[i, RREL] = -1
    nd[i, RSUCC] = 0
    nd[i, RMAXT] = 0
    nd[i, RINC] = 0
    for p in range(C[C_N]):
        if p == i:
            rterm, result = _handle_vote(C, nd, i, i, term, nd[i, LEI], nd[i, LET], True, self_pref, ob, oc)
            _on_vote_response(C, nd, i, seq, True, result, rterm, now)
        else:
            _push_send(ob, oc, p, MK_VOTE_REQ, i, term, nd[i, LEI], nd[i, LET], 0, CK_VOTE, seq, 0, 0)


@njit(cache=True, inline='always')
def _maintain_as_candidate(C, nd, i, now, draw, self_pref, ob, oc):
    if C[C_MUTANT] == MUT_NEVER_INCREMENT and nd[i, LPR] == WAIT_TO_VOTE_NEXT:
        nd[i, LPR] = WAIT_TO_REVOTE
    if now < nd[i, NTRV] and nd[i, NEEDINC] == 0:
        return
    if nd[i, ROLE] != CANDIDATE:
        return
    if nd[i, LPR] == WAIT_TO_VOTE_NEXT or nd[i, NEEDINC] == 1:
        # MemberState#nextTerm
        if nd[i, KMAX] > nd[i, TERM]:
            nd[i, TERM] = nd[i, KMAX]
        else:
            nd[i, TERM] += 1
        nd[i, VOTE] = -1
        nd[i, LPR] = WAIT_TO_REVOTE
    if nd[i, NEEDINC] == 1:
        nd[i, NTRV] = _get_next_time_to_request_vote(C, nd, i, now, draw, self_pref)
        nd[i, NEEDINC] = 0
        return
    _vote_for_quorum_responses(C, nd, i, now, draw, self_pref, ob, oc)


@njit(cache=True)
def _finish_vote_round(C, nd, live, i, now, draw, self_pref, ob, oc):
    """leader_elector.finish_vote_round"""
    vterm = nd[i, RTERM]
    kmax = nd[i, RKMAX]
    hasl = nd[i, RHASL]
    valid = nd[i, RVALID]
    big = nd[i, RBIG]
    acc = nd[i, RACC]
    nr = nd[i, RNR]
    if C[C_MUTANT] == MUT_OWN_VOTE_QUORUM and kmax <= vterm and acc >= 1:
        acc = C[C_N]
        valid = C[C_N]
        hasl = 0
        big = 0
    nd[i, RTYPE] = 0
    nxt = nd[i, NTRV]
    if kmax > vterm:
        result = WAIT_TO_VOTE_NEXT
        nxt = _get_next_time_to_request_vote(C, nd, i, now, draw, self_pref)
        nd[i, NTRV] = nxt
        _change_role_to_candidate(nd, i, kmax, ob, oc)
    elif hasl == 1:
        result = WAIT_TO_REVOTE
        nxt = _get_next_time_to_request_vote(C, nd, i, now, draw, self_pref) + C[C_HBI] * C[C_LEAK]
    elif not _is_quorum(C, valid):
        result = WAIT_TO_REVOTE
        nxt = _get_next_time_to_request_vote(C, nd, i, now, draw, self_pref)
    elif not _is_quorum(C, valid - big):
        result = WAIT_TO_REVOTE
        nxt = _get_next_time_to_request_vote(C, nd, i, now, draw, self_pref) + C[C_MAXV]
    elif _is_quorum(C, acc):
        result = PASSED
    elif _is_quorum(C, acc + nr):
        result = REVOTE_IMMEDIATELY
    else:
        result = WAIT_TO_VOTE_NEXT
        nxt = _get_next_time_to_request_vote(C, nd, i, now, draw, self_pref)
    nd[i, NTRV] = nxt
    nd[i, LPR] = result
    _push_obs(ob, oc, OB_PARSED, vterm, result, acc)
    if result == PASSED:
        _change_role_to_leader(C, nd, live, i, vterm, ob, oc)


@njit(cache=True, inline='always')
def _maintain_state(C, nd, i, now, draw, self_pref, ob, oc):
    nd[i, NEXTLOOP] = now + C[C_SLEEP]
    role = nd[i, ROLE]
    if role == LEADER:
        if _elapsed(now, nd[i, LSHB]) <= C[C_HBI]:
            return
        nd[i, LSHB] = now
        _send_heartbeats(C, nd, i, now, ob, oc)
    elif role == FOLLOWER:
        _maintain_as_follower(C, nd, i, now, ob, oc)
    else:
        _maintain_as_candidate(C, nd, i, now, draw, self_pref, ob, oc)
