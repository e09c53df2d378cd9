"""The compiled twin of the `dledger_log` world: one Numba kernel over fixed-layout arrays.

It runs the history `histories.runner.run(cfg, SeededChooser(seed).choose, steps,
until_ms)` runs for a dledger_log config, event for event: the same enabled events in the
same order (core.schedule.protocol_events, then fault_events), the same draws from the
same MT19937 sequence (histories.fast.mt), the same Java timing (a node's wake time,
`World.since`, the slack of its tick, Netty's scan window of an invokeAsync timeout), the
same transitions (reference_impl/dledger_log and the election member, through the
election twin's functions), the same ghost variables and every property of
spec/dledger_log.py after every step, with the Monitor's rules for first and expected
violations.

The modules: `dledger_log_layout` (array layouts), `dledger_log_store` (the log store),
`dledger_log_pusher` (the pusher's state: water marks, pending appends, the dispatchers'
rows), `dledger_log_quorum_ack` (the QuorumAckChecker), `dledger_log_dispatcher` (the
EntryDispatchers), `dledger_log_handler` (the follower's EntryHandler), `dledger_log_node`
(the server), `dledger_log_client` (the appending client), `dledger_log_net` (the
network), `dledger_log_monitor` (the ghost's maps and the state properties),
`dledger_log_ghost` (the ghost's history: drops, thin commits, Terms, liveness),
`dledger_log_steps` and `dledger_log_replies` (step properties, RPL-*),
`dledger_log_world` (world.init, a node's wake time, requests and responses to a node,
routing its outputs, a node coming up), this one (the loop: horizon, enabled events,
chooser, faults, the monitor), `dledger_log_run` (the Python side, which answers the
kernel's requests for expected causes with `dledger_log_causes`) and `dledger_log_decode`
(arrays back to reference objects).
"""

from __future__ import annotations

from numba import njit

import histories.fast.dledger_log_client as CL
import histories.fast.dledger_log_ghost as LG
import histories.fast.dledger_log_layout as L
import histories.fast.dledger_log_monitor as M
import histories.fast.dledger_log_net as NET
import histories.fast.dledger_log_node as N
import histories.fast.dledger_log_replies as R
import histories.fast.dledger_log_steps as STEPS
import histories.fast.election as E
from histories.fast.common import borrow
from histories.fast.dledger_log_layout import (
    BIG,
    C_NT,
    E_DST,
    E_ID,
    E_M0,
    E_MK,
    E_REPLY,
    E_RPC,
    E_SENT,
    E_SRC,
    EF,
    EV_LP,
    K_LP,
    LV_TRANSFER,
    MD_BCHG,
    MD_DIRTY,
    NMF,
    OVERFLOW_FLIGHT,
    OVERFLOW_LOG,
    OVERFLOW_OUTS,
    P_RPL1,
    P_RPL2,
    P_RPL3,
    R_C1,
    R_C2,
    R_C3,
    R_CK,
    R_DEADLINE,
    R_ID,
    R_REQ,
    R_RESP,
    R_WINDOW,
    RF,
    RQ_ON,
    S_COMMITTED,
    STOP_IDLE,
    STOP_STEPS,
    STOP_UNTIL,
    V_STEP,
    W_CALM,
    W_CALM_AT,
    W_CRASHES,
    W_DISK_LOSSES,
    W_EVENTS0,
    W_FAULT0,
    W_FRESH,
    W_GVER,
    W_LAST_FAULT,
    W_LOST,
    W_LP_FAULTS,
    W_NCUT,
    W_NEXT_ID,
    W_NF,
    W_NLOG,
    W_NOW,
    W_NR,
    W_OS_CRASHES,
    W_PAUSE,
    W_RPL,
    W_STEPS,
    W_STOP,
)
from histories.fast.dledger_log_world import _leader_up, _on_request, _on_response, _refresh, _route, _up, _wake_of
from histories.fast.election_schedule import NO_FIFO, fault_events, fault_kinds, net_events, net_horizon
from histories.fast.election_world import _close_rpc, _node_down, _remove_env
from histories.fast.mt import getrandbits, randbelow, random53

# =====================================================================================
# the loop
# =====================================================================================


@njit(cache=True, inline='always')
def _fault(ws):
    ws[W_LAST_FAULT] = ws[W_NOW]


@njit(cache=True)
def run_kernel(C, pw, pref, self_pref, isol, T, alive, mt, fl, rp, cut, sn, rwake, slk, vi, lmp, lcache,
               ocommit, oalive, newl, log, evk, eva, fev_a, fev_b, kinds, links, ob, oc, msg, m, steps, until_ms):
    """Run a history in place over the arrays; ws[W_STOP] says why it stopped. Every array
    comes from the caller (histories.fast.dledger_log_run.new_state), which owns them; T is
    the state table of the nodes' and the ghost's arrays (dledger_log_layout.table_of)."""
    S = borrow(T)
    G = S  # the ghost's arrays are in the same table
    C = borrow(C)
    pw = borrow(pw)
    pref = borrow(pref)
    self_pref = borrow(self_pref)
    isol = borrow(isol)
    alive = borrow(alive)
    mt = borrow(mt)
    fl = borrow(fl)
    rp = borrow(rp)
    cut = borrow(cut)
    sn = borrow(sn)
    rwake = borrow(rwake)
    slk = borrow(slk)
    vi = borrow(vi)
    lmp = borrow(lmp)
    lcache = borrow(lcache)
    ocommit = borrow(ocommit)
    oalive = borrow(oalive)
    newl = borrow(newl)
    log = borrow(log)
    evk = borrow(evk)
    eva = borrow(eva)
    fev_a = borrow(fev_a)
    fev_b = borrow(fev_b)
    kinds = borrow(kinds)
    links = borrow(links)
    ob = borrow(ob)
    oc = borrow(oc)
    msg = borrow(msg)
    m = borrow(m)
    ws = L.ws_(S)
    md = L.md_(S)
    sto = L.sto_(S)
    n = C[E.C_N]
    nt = C[C_NT]
    java = C[E.C_JAVA] == 1
    stagger = C[E.C_STAGGER] if java else 0
    want_log = C[E.C_LOG] == 1
    fifo_mk = L.MK_PUSH_REQ if C[L.C_ORDERED] == 1 else NO_FIFO  # world.fifo: pushes in send order on a link
    fcap = fl.shape[0]
    niso = isol.shape[0]
    step = ws[W_STEPS]
    stop = STOP_STEPS
    ws[W_PAUSE] = 0
    while step < steps:
        now = ws[W_NOW]
        calm = ws[W_CALM] == 1
        # --- the horizon (schedule._wakes and _horizon) ---
        h = -1
        for j in range(nt):
            if alive[j] == 1 and rwake[j] >= 0:
                t = max(rwake[j], sn[j]) + slk[j]
                if h < 0 or t < h:
                    h = t
        dmax = E.CALM_DELAY_MAX if calm else C[E.C_DMAX]
        dmin = E.CALM_DELAY_MIN if calm else C[E.C_DMIN]
        nf = ws[W_NF]
        nr = ws[W_NR]
        calm_at = C[E.C_CALM_AT]
        h = net_horizon(h, fl, nf, rp, nr, cut, dmax, java, calm_at, calm, now, fifo_mk, links)
        if until_ms >= 0 and h > until_ms:
            stop = STOP_UNTIL
            break
        # --- protocol events (schedule.protocol_events), in the reference's order ---
        nev = 0
        if h >= 0:
            if calm_at == h and not calm:
                evk[nev] = E.EV_CALM
                eva[nev] = 0
                nev += 1
            for j in range(nt):
                if alive[j] == 1 and rwake[j] >= 0 and max(rwake[j], sn[j]) <= h:
                    evk[nev] = E.EV_TICK
                    eva[nev] = j
                    nev += 1
            nev = net_events(h, fl, nf, rp, nr, cut, dmin, dmax, evk, eva, nev, fifo_mk, links)
        # --- fault kinds (schedule.fault_kinds) ---
        nk = 0
        if not calm:
            nk = fault_kinds(C, pw, alive, fl, nf, cut, ws, nt, kinds)
            # the profile's own kinds (FaultProfile.ext) come last: world.ext_faults' leader_partition
            if pw[K_LP] > 0 and _leader_up(S, alive, n) >= 0:
                kinds[nk] = K_LP
                nk += 1
        # --- the seeded chooser (chooser.SeededChooser.choose) ---
        fault_kind = -1
        if nk > 0:
            total = 0.0
            for q in range(nk):
                total += pw[kinds[q]]
            if nev == 0 or random53(mt) < min(E.MAX_FAULT_SHARE, total):
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
        newl[0] = 0
        ws[W_RPL] = 0
        for j in range(n):
            ocommit[j] = sto[j, S_COMMITTED]
            oalive[j] = alive[j]
        nobs = 0
        ev_kind = 0
        ev_a = 0
        ev_b = 0
        draw = 0
        late = 0
        if fault_kind >= 0:
            # schedule.fault_events(w, (kind,)), then rng.choice
            if fault_kind == K_LP:
                cnt = 0
                for j in range(n):  # world._leaders
                    if alive[j] == 1 and L.nd_(S)[j, E.ROLE] == E.LEADER:
                        fev_a[cnt] = j
                        cnt += 1
            else:
                cnt = fault_events(C, alive, fl, nf, cut, nt, niso, fault_kind, fev_a, fev_b)
            sel = randbelow(mt, cnt)
            a = fev_a[sel]
            if fault_kind == E.K_LOSS:
                ev_kind = E.EV_DROP
                ev_a = fl[a, E_ID]
                _remove_env(ws, fl, a, EF)
                _fault(ws)
                ws[W_FAULT0 + 0] += 1
            elif fault_kind == E.K_DUP:
                ev_kind = E.EV_DUP
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
            elif fault_kind == E.K_CRASH or fault_kind == E.K_OS or fault_kind == E.K_DISK:
                # core.transitions._down with dledger_log's crash
                ev_kind = E.EV_CRASH
                ev_a = a
                kind = 0 if fault_kind == E.K_CRASH else (1 if fault_kind == E.K_OS else 2)
                ev_b = kind
                if a < n:
                    LG.crash_note(ws, G, S, a, kind, now)  # core.transitions._down: ghost_crash first
                    N.crash_server(C, S, a, kind)
                else:
                    CL.crash_client(S, a - n)
                new = _wake_of(C, S, a)
                if new != rwake[a]:  # core.set_node: since_after
                    sn[a] = now
                rwake[a] = new
                alive[a] = 0
                _node_down(ws, fl, rp, a, now)
                ws[W_CRASHES] += 1
                if kind != 0:
                    ws[W_OS_CRASHES] += 1
                    if (ws[W_LOST] >> a) & 1 == 0:
                        ws[W_LOST] |= 1 << a
                        ws[W_GVER] += 1
                if kind == 2:
                    ws[W_DISK_LOSSES] += 1
                _fault(ws)
                ws[W_FAULT0 + 2 + kind] += 1
                nobs = 1
                if a < n:  # ghost.update of Crash: who follows whom; a crashed node transfers nothing
                    LG.follow_note(C, ws, G, S, alive, now)
                    L.g_glv(G)[a, LV_TRANSFER] = -1
            elif fault_kind == E.K_RESTART:
                ev_kind = E.EV_RESTART
                ev_a = a
                _up(C, S, alive, sn, rwake, slk, a, now, java, stagger)
                _fault(ws)
                ws[W_FAULT0 + 5] += 1
                nobs = 1
                LG.follow_note(C, ws, G, S, alive, now)
                M.on_restart_or_calm(C, ws, G, S, alive)
            elif fault_kind == E.K_PARTITION:
                ev_kind = E.EV_PARTITION
                ev_a = a
                mino = isol[a]
                for x in range(nt):
                    for y in range(nt):
                        if x != y and ((mino >> x) & 1) != ((mino >> y) & 1) and cut[x, y] == 0:
                            cut[x, y] = 1
                            ws[W_NCUT] += 1
                _fault(ws)
                ws[W_FAULT0 + 6] += 1
                nobs = 1
            elif fault_kind == E.K_ONEWAY:
                ev_kind = E.EV_CUT
                ev_a = a
                ev_b = fev_b[sel]
                cut[a, ev_b] = 1
                ws[W_NCUT] += 1
                _fault(ws)
                ws[W_FAULT0 + 7] += 1
                nobs = 1
            elif fault_kind == K_LP:
                # world.ext_apply(LeaderPartition): the cut is made anew, the leader and the
                # clients on one side, the other servers on the other; no ghost update
                ev_kind = EV_LP
                ev_a = a
                ncut = 0
                for x in range(nt):
                    sx = x == a or x >= n
                    for y in range(nt):
                        sy = y == a or y >= n
                        cut[x, y] = 1 if sx != sy else 0
                        ncut += cut[x, y]
                ws[W_NCUT] = ncut
                _fault(ws)
                ws[W_LP_FAULTS] += 1
                nobs = 1
            else:
                ev_kind = E.EV_HEAL
                for x in range(nt):
                    for y in range(nt):
                        cut[x, y] = 0
                ws[W_NCUT] = 0
                _fault(ws)
                ws[W_FAULT0 + 8] += 1
                nobs = 1
        else:
            q = randbelow(mt, nev) if nev > 1 else 0
            k = evk[q]
            a = eva[q]
            if k == E.EV_TICK:
                # the chooser's draw, then schedule.tick_window and its lateness
                draw = getrandbits(mt, 16)
                eff = max(rwake[a], sn[a])
                lo = max(0, now - eff)
                hi = max(lo, min(slk[a], h - eff))
                late = lo
                if hi > lo:
                    late = lo + randbelow(mt, hi - lo + 1)
                t = max(now, eff + late)
                ws[W_NOW] = t
                ev_kind = E.EV_TICK
                ev_a = a
                if a < n:
                    STEPS._snapshot(S, a)
                    N.server_on_tick(C, S, a, t, draw, pref, self_pref, ob, oc)
                else:
                    CL.client_on_tick(C, S, a - n, t, draw, ob, oc)
                ws[W_FRESH] &= ~(1 << a)
                _refresh(C, S, sn, rwake, slk, a, t, java, stagger)
                nobs = _route(C, S, G, ws, fl, rp, alive, newl, a, t, ob, oc, msg)
            elif k == E.EV_DELIVER:
                t = max(now, fl[a, E_SENT] + dmin)
                ws[W_NOW] = t
                ev_kind = E.EV_DELIVER
                ev_a = fl[a, E_ID]
                src = fl[a, E_SRC]
                dst = fl[a, E_DST]
                rpc_id = fl[a, E_RPC]
                mk = fl[a, E_MK]
                for j in range(NMF):
                    m[j] = fl[a, E_M0 + j]
                is_reply = fl[a, E_REPLY] == 1
                _remove_env(ws, fl, a, EF)
                if is_reply:
                    r = NET._find_rpc(ws, rp, rpc_id)
                    if r >= 0 and alive[dst] == 1:
                        ck = rp[r, R_CK]
                        c1 = rp[r, R_C1]
                        c2 = rp[r, R_C2]
                        c3 = rp[r, R_C3]
                        _close_rpc(ws, rp, r, RF)
                        _on_response(C, S, dst, ck, c1, c2, c3, src, True, m, t, ob, oc)
                        _refresh(C, S, sn, rwake, slk, dst, t, java, stagger)
                        nobs = _route(C, S, G, ws, fl, rp, alive, newl, dst, t, ob, oc, msg)
                elif alive[dst] == 0:
                    if rpc_id != 0:  # network.fail_now: connection refused
                        r = NET._find_rpc(ws, rp, rpc_id)
                        if r >= 0 and rp[r, R_DEADLINE] > t:
                            rp[r, R_DEADLINE] = t
                            rp[r, R_WINDOW] = 0
                else:
                    if dst < n:
                        STEPS._snapshot(S, dst)
                    rk = _on_request(C, S, dst, mk, m, rpc_id, t, pref, self_pref, ob, oc, msg)
                    if rk != 0 and NET._net_reply(ws, fl, rp, t, rpc_id, rk, msg):
                        ws[W_RPL] |= STEPS._request_reply(C, S, dst, mk, m, rk, msg, self_pref)
                    _refresh(C, S, sn, rwake, slk, dst, t, java, stagger)
                    nobs = _route(C, S, G, ws, fl, rp, alive, newl, dst, t, ob, oc, msg)
            elif k == E.EV_DROP:
                # a window that closed behind a cut link: lost, not a new fault
                ev_kind = E.EV_DROP
                ev_a = fl[a, E_ID]
                _remove_env(ws, fl, a, EF)
                ws[W_FAULT0 + 0] += 1
            elif k == E.EV_RPCFAIL:
                deadline = rp[a, R_DEADLINE]
                lo = max(0, now - deadline)
                hi = max(lo, min(rp[a, R_WINDOW] if java else 0, h - deadline))
                late = lo
                if hi > lo:
                    late = lo + randbelow(mt, hi - lo + 1)
                t = max(now, deadline + late)
                ws[W_NOW] = t
                ev_kind = E.EV_RPCFAIL
                ev_a = rp[a, R_ID]
                i = rp[a, R_REQ]
                peer = rp[a, R_RESP]
                ck = rp[a, R_CK]
                c1 = rp[a, R_C1]
                c2 = rp[a, R_C2]
                c3 = rp[a, R_C3]
                _close_rpc(ws, rp, a, RF)
                if alive[i] == 1:
                    _on_response(C, S, i, ck, c1, c2, c3, peer, False, m, t, ob, oc)
                    _refresh(C, S, sn, rwake, slk, i, t, java, stagger)
                    nobs = _route(C, S, G, ws, fl, rp, alive, newl, i, t, ob, oc, msg)
            else:
                # transitions._calm
                t = h
                ws[W_NOW] = t
                ev_kind = E.EV_CALM
                for x in range(nt):
                    for y in range(nt):
                        cut[x, y] = 0
                ws[W_NCUT] = 0
                ws[W_CALM] = 1
                ws[W_CALM_AT] = t
                ws[W_LAST_FAULT] = t
                nobs = 1
                for j in range(nt):
                    if alive[j] == 0:
                        _up(C, S, alive, sn, rwake, slk, j, t, java, stagger)
                        nobs += 1
                LG.follow_note(C, ws, G, S, alive, t)
                M.on_restart_or_calm(C, ws, G, S, alive)
        if oc[1] != 0:
            ws[W_STOP] = OVERFLOW_OUTS
        if ws[W_STOP] < 0:
            ws[W_STEPS] = step
            return
        now = ws[W_NOW]
        # --- the monitor (spec.properties.Monitor.check): state properties, then step ones ---
        M.check_states(C, ws, G, S, alive, vi, lmp, lcache, step, now)
        STEPS._check_steps(C, ws, G, S, vi, alive, oalive, ocommit, newl, nobs)
        bits = ws[W_RPL]
        if bits != 0:
            for b, prop in ((E.RPL_1, P_RPL1), (E.RPL_2, P_RPL2), (R.RPL_3, P_RPL3)):
                if (bits >> b) & 1 and vi[prop, V_STEP] < 0:
                    M.record(vi, prop, step, now, 0)
        for j in range(n):
            md[j, MD_DIRTY] = BIG
            md[j, MD_BCHG] = 0
        ws[W_EVENTS0 + ev_kind] += 1
        if ws[W_STOP] < 0:
            ws[W_STEPS] = step
            return
        if want_log:
            nl = ws[W_NLOG]
            if nl >= log.shape[0]:
                ws[W_STOP] = OVERFLOW_LOG
                ws[W_STEPS] = step
                return
            log[nl, E.L_KIND] = ev_kind
            log[nl, E.L_A] = ev_a
            log[nl, E.L_B] = ev_b
            log[nl, E.L_T] = now
            log[nl, E.L_DRAW] = draw
            log[nl, E.L_LATE] = late
            log[nl, E.L_NOBS] = nobs
            ws[W_NLOG] = nl + 1
        rq = L.rq_(S)
        for p in range(rq.shape[0]):
            if rq[p, RQ_ON] == 1:
                ws[W_PAUSE] = 1  # the caller answers rq (the causes) and calls again
        if ws[W_PAUSE] == 1:
            ws[W_STEPS] = step
            return
    ws[W_STEPS] = step
    ws[W_STOP] = stop
