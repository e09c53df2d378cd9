"""The compiled twin of the `election` world: the kernel, `run_kernel`, runs a whole history.

It runs a seeded history the way `histories.runner.run(cfg, SeededChooser(seed).choose,
steps, until_ms)` does, event for event: the same enabled events in the same order
(`schedule.protocol_events` then `schedule.fault_events`), the same random draws from
the same MT19937 sequence (`histories.fast.mt`) in `SeededChooser`'s order, the same
transitions (`election_node`, after reference_impl/election; the generic world of
reference_impl/core: `schedule`, `transitions`, `network`, in `run_kernel` and
`election_world`), the same ghost variables and every property of spec/election.py at
every step, with the Monitor's rules for first and expected violations.

The hot loop never calls Python: Python (`histories.fast.run`) only builds the arrays
from a `WorldConfig` and decodes the results. This module's namespace is the election
twin's interface: the layout (`election_layout`), the node logic (`election_node`,
`election_transfer`, `election_server`), the world (`election_world`), its ghost
(`election_ghost`) and the reply guards (`election_replies`) are reachable from here under
their reference names.
"""

from __future__ import annotations

from numba import njit

from histories.fast.common import borrow
from histories.fast.election_ghost import (  # noqa: F401 - re-exported
    _all_follow,
    _ele1_expected,
    _ele2_expected,
    _follow_note,
    _followed,
    _note_crash,
    _revote_cause,
    _transfer_note,
    _transfers_changed,
    _two_leaders_cause,
)
from histories.fast.election_layout import *  # noqa: F403 - the columns and enums, by the reference's names
from histories.fast.election_node import (  # noqa: F401 - re-exported
    _boot,
    _change_role_to_candidate,
    _change_role_to_follower,
    _change_role_to_leader,
    _clear_take_leadership,
    _elapsed,
    _finish_heart_beat_round,
    _finish_vote_round,
    _get_next_time_to_request_vote,
    _handle_heart_beat,
    _handle_heart_beat_ref,
    _handle_role_change,
    _handle_vote,
    _is_quorum,
    _is_taking_leadership,
    _maintain_as_candidate,
    _maintain_as_follower,
    _maintain_state,
    _on_heart_beat_response,
    _on_vote_response,
    _push_obs,
    _push_respond,
    _push_send,
    _rand_int,
    _send_heartbeats,
    _step_down,
    _take_leadership_task_check,
    _vote_for_quorum_responses,
)
from histories.fast.election_replies import RPL_1, RPL_2, _heart_beat_reply, _vote_reply
from histories.fast.election_schedule import _enabled, fault_events
from histories.fast.election_server import _due, _maintainer_due, _on_tick, _round_due, _wake_slack, wake_at  # noqa: F401 - re-exported
from histories.fast.election_transfer import (  # noqa: F401 - re-exported
    _check_preferred_leader,
    _handle_leadership_transfer,
    _handle_take_leadership,
    _on_leadership_transfer_response,
    _server_handle_leadership_transfer,
    _take_leadership_wait_step,
)
from histories.fast.election_world import (  # noqa: F401 - re-exported
    _check_liveness,
    _close_rpc,
    _ele4_term,
    _fault,
    _find_rpc,
    _ghost_obs,
    _net_reply,
    _net_send,
    _node_down,
    _popcount,
    _record,
    _record_expected,
    _remove_env,
    _route,
    _settled,
    _update_cut_since,
)
from histories.fast.mt import genrand, getrandbits, randbelow, random53  # noqa: F401  (genrand: tests)


@njit(cache=True)
def reset(C, lei, let, down, nd, live, alive, fl, rp, cut, elected, grants, cs, ws, vi, sn, vl, lv):
    """world.init(cfg) in place over arrays a previous history used (or fresh ones)."""
    n = C[C_N]
    top = min(ws[W_MAXTERM_SEEN] + 1, elected.shape[0]) if ws[W_STEPS] > 0 else elected.shape[0]
    for t in range(top):
        elected[t] = 0
        for v in range(n):
            grants[t, v] = 0
            vl[t, v, VL_HEAD] = -1
            vl[t, v, VL_TAIL] = -1
    for i in range(n):
        for f in range(LVF):
            lv[i, f] = -1
    for i in range(n):
        _boot(C, nd, live, i, 0, 0, -1, lei[i], let[i], C[C_CPLI])
        alive[i] = 0 if (down >> i) & 1 else 1
        cs[i] = -1
        for j in range(n):
            cut[i, j] = 0
    for k in range(ws.shape[0]):
        ws[k] = 0
    ws[W_NEXT_ID] = 1
    ws[W_CALM_AT] = -1
    ws[W_LAST_FAULT] = -1
    ws[W_SETTLED] = -1
    ws[W_METER_SINCE] = 0
    ws[W_SL] = -1  # ghost.settled_leader None (agreed False since 0, no notes)
    ws[W_TRANS_MIN] = -1
    ws[W_STRAG_MIN] = -1
    for i in range(n):
        sn[i] = 0  # World.since
        if alive[i] == 1:
            ws[W_FRESH] |= 1 << i
    for p in range(vi.shape[0]):
        for f in range(vi.shape[1]):
            vi[p, f] = -1
        vi[p, V_CAUSE] = 0


@njit(cache=True)
def run_kernel(C, pw, pref, self_pref, isol, nd, live, wmk, alive, mt, fl, rp, cut, elected, grants, cs, ws, vi,
               sn, nt, vl, lv, log, evk, eva, fev_a, fev_b, kinds, wakes, slk, ob, oc, touched, prev_terms,
               steps, until_ms, force):
    """Run a history in place over the arrays; ws[W_STOP] says why it stopped. The scratch
    arrays (evk .. prev_terms) come from the caller too (`run.new_state`): see `borrow`.
    evk/eva: the protocol events (kind; node, flight row or rpc row); fev_a/fev_b: the fault
    events of the chosen kind; ob/oc: one transition's outputs and their count. nt/vl/lv: the ghost's notes and per-node fields
    (election_ghost)."""
    C = borrow(C)
    pw = borrow(pw)
    pref = borrow(pref)
    self_pref = borrow(self_pref)
    isol = borrow(isol)
    nd = borrow(nd)
    live = borrow(live)
    wmk = borrow(wmk)
    alive = borrow(alive)
    mt = borrow(mt)
    fl = borrow(fl)
    rp = borrow(rp)
    cut = borrow(cut)
    elected = borrow(elected)
    grants = borrow(grants)
    cs = borrow(cs)
    ws = borrow(ws)
    vi = borrow(vi)
    log = borrow(log)
    evk = borrow(evk)
    eva = borrow(eva)
    fev_a = borrow(fev_a)
    fev_b = borrow(fev_b)
    kinds = borrow(kinds)
    wakes = borrow(wakes)
    slk = borrow(slk)
    sn = borrow(sn)
    ob = borrow(ob)
    oc = borrow(oc)
    touched = borrow(touched)
    prev_terms = borrow(prev_terms)
    nt = borrow(nt)
    vl = borrow(vl)
    lv = borrow(lv)
    force = borrow(force)
    n = C[C_N]
    java = C[C_JAVA] == 1
    # force[0] -2: the seeded chooser picks; -1: protocol event force[1], k >= 0: fault force[1] of kind k,
    # a tick drawing force[2] (model_checks' exhaustive explorer steps every choice this way)
    forced = force[0] >= -1
    want_log = C[C_LOG] == 1
    fcap = fl.shape[0]
    for j in range(n):
        prev_terms[j] = nd[j, TERM]
    niso = isol.shape[0]
    step = ws[W_STEPS]
    stop = STOP_STEPS
    while step < steps:
        now = ws[W_NOW]
        calm = ws[W_CALM] == 1
        # the horizon, the protocol events and the fault kinds (election_schedule: schedule.py)
        h, nev, nk, past = _enabled(C, pw, nd, alive, fl, rp, cut, ws, sn, evk, eva, kinds, wakes, slk, until_ms)
        if past:
            stop = STOP_UNTIL
            break
        dmin = CALM_DELAY_MIN if calm else C[C_DMIN]
        nf = ws[W_NF]
        # --- the seeded chooser (chooser.SeededChooser.choose) ---
        fault_kind = -1
        if forced:  # the explorer's choice (election_explore): a protocol event, or a fault of this kind
            fault_kind = force[0]
        elif nk > 0:
            total = 0.0
            for q in range(nk):
                total += pw[kinds[q]]
            if nev == 0 or random53(mt) < min(MAX_FAULT_SHARE, total):
                pick = random53(mt) * total
                fault_kind = kinds[nk - 1]
                for q in range(nk):
                    pick -= pw[kinds[q]]
                    if pick < 0:
                        fault_kind = kinds[q]
                        break
        if fault_kind < 0 and nev == 0:
            stop = STOP_IDLE
            break
        step += 1
        oc[0] = 0
        oc[1] = 0
        touched[0] = -1
        touched[1] = -1
        touched[2] = 0
        touched[3] = 0
        nobs = 0
        ev_kind = 0
        ev_a = 0
        ev_b = 0
        draw = 0
        late = 0
        crash_os_node = -1
        if fault_kind >= 0:
            # schedule.fault_events(w, (kind,)), then rng.choice
            m = fault_events(C, alive, fl, nf, cut, n, niso, fault_kind, fev_a, fev_b)
            sel = force[1] if forced else randbelow(mt, m)
            a = fev_a[sel]
            if fault_kind == K_LOSS:
                # transitions._drop: a loss fault (its link is up)
                ev_kind = EV_DROP
                ev_a = fl[a, E_ID]
                _remove_env(ws, fl, a, EF)
                _fault(ws)
                ws[W_FAULT0 + 0] += 1
            elif fault_kind == K_DUP:
                ev_kind = EV_DUP
                ev_a = fl[a, E_ID]
                if nf >= fcap:
                    ws[W_STOP] = OVERFLOW_FLIGHT
                else:
                    for f in range(EF):
                        fl[nf, f] = fl[a, f]
                    fl[nf, E_ID] = ws[W_NEXT_ID]
                    ws[W_NEXT_ID] += 1
                    ws[W_NF] = nf + 1
                _fault(ws)
                ws[W_FAULT0 + 1] += 1
            elif fault_kind == K_CRASH or fault_kind == K_OS or fault_kind == K_DISK:
                # transitions._down with the election world's crash
                ev_kind = EV_CRASH
                ev_a = a
                lose = fault_kind != K_CRASH
                ev_b = 0 if not lose else (2 if fault_kind == K_DISK else 1)
                forget = lose or C[C_MUTANT] == MUT_CRASH_LOSES_TERM
                if lose:  # election world.ghost_crash: the ghost sees the term file go
                    _note_crash(ws, nt, lv, a, nd[a, TERM], now)
                term = 0 if forget else nd[a, TERM]
                vote = -1 if forget or C[C_MUTANT] == MUT_CRASH_LOSES_VOTE else nd[a, VOTE]
                _boot(C, nd, live, a, 0, term, vote, nd[a, LEI], nd[a, LET], 0)
                nd[a, NEXTLOOP] = 0
                if wake_at(C, nd, a) != wakes[a]:  # core.set_node: since_after
                    sn[a] = now
                alive[a] = 0
                _node_down(ws, fl, rp, a, now)
                ws[W_CRASHES] += 1
                if lose:
                    ws[W_OS_CRASHES] += 1
                    ws[W_LOST] |= 1 << a
                    crash_os_node = a
                if fault_kind == K_DISK:
                    ws[W_DISK_LOSSES] += 1
                _follow_note(C, ws, nd, alive, lv, now)  # ghost_update(Crash)
                lv[a, LV_TRANS] = -1
                _transfers_changed(C, ws, lv)
                _fault(ws)
                ws[W_FAULT0 + (2 if fault_kind == K_CRASH else (3 if fault_kind == K_OS else 4))] += 1
                nobs = 1
            elif fault_kind == K_RESTART:
                ev_kind = EV_RESTART
                ev_a = a
                _boot(C, nd, live, a, now, nd[a, TERM], nd[a, VOTE], nd[a, LEI], nd[a, LET], now + C[C_CPLI])
                alive[a] = 1
                sn[a] = now  # transitions._up: a restarted process starts its threads now
                ws[W_FRESH] |= 1 << a
                _follow_note(C, ws, nd, alive, lv, now)  # ghost_update(Restart)
                _fault(ws)
                ws[W_FAULT0 + 5] += 1
                nobs = 1
            elif fault_kind == K_PARTITION:
                ev_kind = EV_PARTITION
                ev_a = a
                mino = isol[a]
                for x in range(n):
                    for y in range(n):
                        if x != y and ((mino >> x) & 1) != ((mino >> y) & 1) and cut[x, y] == 0:
                            cut[x, y] = 1
                            ws[W_NCUT] += 1
                _fault(ws)
                ws[W_FAULT0 + 6] += 1
                nobs = 1
            elif fault_kind == K_ONEWAY:
                ev_kind = EV_CUT
                ev_a = a
                ev_b = fev_b[sel]
                cut[a, ev_b] = 1
                ws[W_NCUT] += 1
                _fault(ws)
                ws[W_FAULT0 + 7] += 1
                nobs = 1
            else:
                ev_kind = EV_HEAL
                for x in range(n):
                    for y in range(n):
                        cut[x, y] = 0
                ws[W_NCUT] = 0
                _fault(ws)
                ws[W_FAULT0 + 8] += 1
                nobs = 1
            _update_cut_since(C, alive, cut, cs, now)
        else:
            q = force[1] if forced else (randbelow(mt, nev) if nev > 1 else 0)
            k = evk[q]
            a = eva[q]
            if k == EV_TICK:
                # the chooser's draw, then schedule.tick_window and its lateness
                draw = force[2] if forced else getrandbits(mt, 16)
                eff = max(wakes[a], sn[a])
                lo = max(0, now - eff)
                hi = max(lo, min(slk[a], h - eff))
                late = lo
                if hi > lo and not forced:
                    late = lo + randbelow(mt, hi - lo + 1)
                t = max(now, eff + late)
                ws[W_NOW] = t
                ev_kind = EV_TICK
                ev_a = a
                _on_tick(C, nd, live, wmk, a, t, draw, pref, self_pref, ob, oc)
                ws[W_FRESH] &= ~(1 << a)
                if wake_at(C, nd, a) != wakes[a]:  # world.since_after
                    sn[a] = t
                nobs = _route(C, ws, nd, alive, cut, fl, rp, elected, grants, vi, nt, vl, lv, a, t, ob, oc, touched)
            elif k == EV_DELIVER:
                # transitions._deliver
                t = max(now, fl[a, E_SENT] + dmin)
                ws[W_NOW] = t
                ev_kind = EV_DELIVER
                ev_a = fl[a, E_ID]
                src = fl[a, E_SRC]
                dst = fl[a, E_DST]
                rpc_id = fl[a, E_RPC]
                mk = fl[a, E_MK]
                m0 = fl[a, E_M0]
                m1 = fl[a, E_M0 + 1]
                m2 = fl[a, E_M0 + 2]
                m3 = fl[a, E_M0 + 3]
                m4 = fl[a, E_M0 + 4]
                is_reply = fl[a, E_REPLY] == 1
                _remove_env(ws, fl, a, EF)
                if is_reply:
                    r = _find_rpc(ws, rp, rpc_id)
                    if r >= 0 and alive[dst] == 1:
                        ck = rp[r, R_CK]
                        c1 = rp[r, R_C1]
                        c2 = rp[r, R_C2]
                        c3 = rp[r, R_C3]
                        _close_rpc(ws, rp, r, RF)
                        # server.on_response
                        if ck == CK_HB:
                            _on_heart_beat_response(C, nd, live, dst, c1, src, True, m0, m1, t)
                        elif ck == CK_VOTE:
                            _on_vote_response(C, nd, dst, c1, True, m1, m0, t)
                        else:
                            _on_leadership_transfer_response(nd, dst, c1, c2, c3, True, m0, m1, ob, oc)
                        if wake_at(C, nd, dst) != wakes[dst]:
                            sn[dst] = t
                        nobs = _route(C, ws, nd, alive, cut, fl, rp, elected, grants, vi, nt, vl, lv, dst, t, ob, oc,
                                      touched)
                elif alive[dst] == 0:
                    if rpc_id != 0:
                        # network.fail_now: connection refused
                        r = _find_rpc(ws, rp, rpc_id)
                        if r >= 0 and rp[r, R_DEADLINE] > t:
                            rp[r, R_DEADLINE] = t
                            rp[r, R_WINDOW] = 0
                else:
                    # server.on_request; RPL-1/2 hold its reply to the guards on the state before
                    b_term = nd[dst, TERM]
                    b_vote = nd[dst, VOTE]
                    b_leader = nd[dst, LEADER_ID]
                    if mk == MK_HB_REQ:
                        b_llhb = nd[dst, LLHB]
                        code, rterm = _handle_heart_beat(C, nd, dst, m0, m1, t, ob, oc)
                        if _net_reply(ws, fl, rp, t, rpc_id, MK_HB_RESP, code, rterm, 0):
                            touched[3] = _heart_beat_reply(nd, dst, m0, m1, code, b_term, b_vote, b_leader, b_llhb)
                    elif mk == MK_VOTE_REQ:
                        b_lei = nd[dst, LEI]
                        b_let = nd[dst, LET]
                        b_tttl = nd[dst, TTTL]
                        rterm, result = _handle_vote(C, nd, dst, m0, m1, m2, m3, False, self_pref, ob, oc)
                        if _net_reply(ws, fl, rp, t, rpc_id, MK_VOTE_RESP, rterm, result, SUCCESS):
                            touched[3] = _vote_reply(C, nd, dst, m0, m1, m2, m3, self_pref, result, b_term, b_vote,
                                                     b_leader, b_lei, b_let, b_tttl)
                    else:
                        has, code, rterm = _server_handle_leadership_transfer(
                            C, nd, wmk, dst, m0, m1, m2, m3, m4, rpc_id, t, ob, oc)
                        if has:
                            _net_reply(ws, fl, rp, t, rpc_id, MK_LT_RESP, code, rterm, 0)
                    if wake_at(C, nd, dst) != wakes[dst]:
                        sn[dst] = t
                    nobs = _route(C, ws, nd, alive, cut, fl, rp, elected, grants, vi, nt, vl, lv, dst, t, ob, oc, touched)
            elif k == EV_DROP:
                # a window that closed behind a cut link: lost, not a new fault
                ev_kind = EV_DROP
                ev_a = fl[a, E_ID]
                _remove_env(ws, fl, a, EF)
                ws[W_FAULT0 + 0] += 1
                _update_cut_since(C, alive, cut, cs, now)
            elif k == EV_RPCFAIL:
                # schedule.rpc_window and the chooser's lateness draw
                deadline = rp[a, R_DEADLINE]
                lo = max(0, now - deadline)
                hi = max(lo, min(rp[a, R_WINDOW] if java else 0, h - deadline))
                late = lo
                if hi > lo and not forced:
                    late = lo + randbelow(mt, hi - lo + 1)
                t = max(now, deadline + late)
                ws[W_NOW] = t
                ev_kind = EV_RPCFAIL
                ev_a = rp[a, R_ID]
                i = rp[a, R_REQ]
                peer = rp[a, R_RESP]
                ck = rp[a, R_CK]
                c1 = rp[a, R_C1]
                c2 = rp[a, R_C2]
                c3 = rp[a, R_C3]
                _close_rpc(ws, rp, a, RF)
                if alive[i] == 1:
                    if ck == CK_HB:
                        _on_heart_beat_response(C, nd, live, i, c1, peer, False, 0, 0, t)
                    elif ck == CK_VOTE:
                        _on_vote_response(C, nd, i, c1, False, 0, 0, t)
                    else:
                        _on_leadership_transfer_response(nd, i, c1, c2, c3, False, 0, 0, ob, oc)
                    if wake_at(C, nd, i) != wakes[i]:
                        sn[i] = t
                    nobs = _route(C, ws, nd, alive, cut, fl, rp, elected, grants, vi, nt, vl, lv, i, t, ob, oc, touched)
            else:
                # transitions._calm
                t = h
                ws[W_NOW] = t
                ev_kind = EV_CALM
                for x in range(n):
                    for y in range(n):
                        cut[x, y] = 0
                ws[W_NCUT] = 0
                ws[W_CALM] = 1
                ws[W_CALM_AT] = t
                ws[W_LAST_FAULT] = t
                nobs = 1
                for j in range(n):
                    if alive[j] == 0:
                        _boot(C, nd, live, j, t, nd[j, TERM], nd[j, VOTE], nd[j, LEI], nd[j, LET], t + C[C_CPLI])
                        alive[j] = 1
                        sn[j] = t  # a restarted process starts its threads now
                        ws[W_FRESH] |= 1 << j
                        nobs += 1
                _follow_note(C, ws, nd, alive, lv, t)  # ghost_update(Calm)
                _update_cut_since(C, alive, cut, cs, t)
                if _settled(C, nd, alive):
                    ws[W_SETTLED] = t
        if oc[1] != 0:
            ws[W_STOP] = OVERFLOW_OUTS
        if ws[W_STOP] < 0:
            ws[W_STEPS] = step
            return
        now = ws[W_NOW]
        # --- the monitor (spec.properties.Monitor.check): state properties, then step ones ---
        if ws[W_ELE1_BAD] > 0:
            _record_expected(C, ws, vi, nt, vl, lv, elected, grants, P_ELE1, step, now, 0)
        if ws[W_ELE2_BAD] > 0:
            _record_expected(C, ws, vi, nt, vl, lv, elected, grants, P_ELE2, step, now, 0)
        if vi[P_ELE4, V_STEP] < 0 and touched[0] >= 0:
            for t4 in range(touched[0], touched[1] + 1):
                if not _ele4_term(C, elected, grants, t4):
                    _record(vi, P_ELE4, step, now, 0)
                    break
        if vi[P_ELE5, V_STEP] < 0:
            for j in range(n):
                if alive[j] == 1 and nd[j, ROLE] == FOLLOWER:
                    ld = nd[j, LEADER_ID]
                    if nd[j, TERM] >= C[C_TCAP]:
                        ws[W_STOP] = OVERFLOW_TERMS
                        ws[W_STEPS] = step
                        return
                    if ld < 0 or (elected[nd[j, TERM]] >> ld) & 1 == 0:
                        _record(vi, P_ELE5, step, now, 0)
                        break
        if vi[P_HB2, V_STEP] < 0:
            for j in range(n):
                if alive[j] == 1 and nd[j, ROLE] == LEADER and cs[j] >= 0 and now - cs[j] > C[C_HB2B]:
                    _record(vi, P_HB2, step, now, 0)
                    break
        _check_liveness(C, ws, lv, vi, step, now)
        decreased = False
        for j in range(n):
            if nd[j, TERM] < prev_terms[j]:
                decreased = True
            prev_terms[j] = nd[j, TERM]
        if decreased:
            _record_expected(C, ws, vi, nt, vl, lv, elected, grants, P_ELE3, step, now,
                             (1 << crash_os_node) if crash_os_node >= 0 else 0)
        if touched[2] == 1 and vi[P_HB1, V_STEP] < 0:
            _record(vi, P_HB1, step, now, 0)
        if touched[3] >> RPL_1 & 1 and vi[P_RPL1, V_STEP] < 0:
            _record(vi, P_RPL1, step, now, 0)
        if touched[3] >> RPL_2 & 1 and vi[P_RPL2, V_STEP] < 0:
            _record(vi, P_RPL2, step, now, 0)
        # --- the LeaderlessMeter (spec.election.meter) ---
        if nobs > 0:
            if _settled(C, nd, alive):
                if ws[W_METER_SINCE] >= 0:
                    ws[W_METER_TOTAL] += now - ws[W_METER_SINCE]
                    ws[W_METER_SINCE] = -1
            elif ws[W_METER_SINCE] < 0:
                ws[W_METER_SINCE] = now
                ws[W_METER_EPISODES] += 1
        ws[W_EVENTS_TICK + ev_kind] += 1
        if want_log:
            nl = ws[W_NLOG]
            if nl >= log.shape[0]:
                ws[W_STOP] = OVERFLOW_LOG
                ws[W_STEPS] = step
                return
            log[nl, L_KIND] = ev_kind
            log[nl, L_A] = ev_a
            log[nl, L_B] = ev_b
            log[nl, L_T] = now
            log[nl, L_DRAW] = draw
            log[nl, L_LATE] = late
            log[nl, L_NOBS] = nobs
            ws[W_NLOG] = nl + 1
    ws[W_STEPS] = step
    ws[W_STOP] = stop
