"""The election twin's schedule (reference_impl/core/schedule.py): the horizon, the enabled
protocol events in the reference's order, the fault kinds and the fault events of one kind.

`run_kernel` (election.py) calls these to list what may happen next before its chooser
picks; the exhaustive explorer (histories/fast/election_explore.py) calls the same
functions to enumerate every choice, so both see one list. They are inlined into their
callers (`inline='always'`): a call per step in the hot loop cost throughput. The network
and generic-fault parts take their counts as arguments, not from election's config, so
the dledger_log kernel, whose faults also hit its clients, calls the same code.

`net_horizon` and `net_events` also take the message kind delivered in send order on its
link (schedule._held, `Protocol.fifo`: dledger_log's PushEntryRequest under
`push_processor` "single_thread"), or NO_FIFO, and a scratch row `links` (per source node,
the mask of destinations where an envelope of that kind was already seen this pass). The
election kernel passes the constant NO_FIFO, so after inlining its loops are what they
were.
"""

from __future__ import annotations

from numba import njit

from histories.fast.election_layout import *  # noqa: F403 - the columns and enums, by the reference's names
from histories.fast.election_server import _wake_slack, wake_at

NO_FIFO = -1  # no message kind is delivered in send order: every envelope may overtake another


@njit(cache=True, inline='always')
def _enabled(C, pw, nd, alive, fl, rp, cut, ws, sn, evk, eva, kinds, wakes, slk, until_ms):
    """schedule._wakes, _horizon, protocol_events and fault_kinds: returns (h, nev, nk, past
    until_ms). evk/eva[:nev]: the protocol events (kind; node, flight row or rpc row);
    kinds[:nk]: the enabled fault kinds; wakes[j]: node j's wake_at (-1: down or nothing to
    do), its tick may fire from max(wake_at, since) up to slk[j] ms later."""
    n = C[C_N]
    java = C[C_JAVA] == 1
    stagger = C[C_STAGGER] if java else 0
    now = ws[W_NOW]
    calm = ws[W_CALM] == 1
    h = -1
    fresh = ws[W_FRESH]
    for j in range(n):
        t = wake_at(C, nd, j) if alive[j] == 1 else -1
        wakes[j] = t
        if t >= 0:
            sl = _wake_slack(C, nd, j, sn[j], t) if java else 0
            if stagger > sl and (fresh >> j) & 1:
                sl = stagger
            slk[j] = sl
            t = max(t, sn[j]) + sl
            if h < 0 or t < h:
                h = t
    dmax = CALM_DELAY_MAX if calm else C[C_DMAX]
    dmin = CALM_DELAY_MIN if calm else C[C_DMIN]
    nf = ws[W_NF]
    nr = ws[W_NR]
    calm_at = C[C_CALM_AT]
    # no message is delivered in send order here (NO_FIFO), so the `links` scratch (kinds) is not read
    h = net_horizon(h, fl, nf, rp, nr, cut, dmax, java, calm_at, calm, now, NO_FIFO, kinds)
    if until_ms >= 0 and h > until_ms:
        return h, 0, 0, True
    # --- protocol events (schedule.protocol_events), in the reference's order ---
    nev = 0
    if h >= 0:
        if calm_at == h and not calm:
            evk[nev] = EV_CALM
            eva[nev] = 0
            nev += 1
        for j in range(n):
            if wakes[j] >= 0 and max(wakes[j], sn[j]) <= h:
                evk[nev] = EV_TICK
                eva[nev] = j
                nev += 1
        nev = net_events(h, fl, nf, rp, nr, cut, dmin, dmax, evk, eva, nev, NO_FIFO, kinds)
    nk = fault_kinds(C, pw, alive, fl, nf, cut, ws, n, kinds) if not calm else 0
    return h, nev, nk, False


@njit(cache=True, inline='always')
def _held(fl, r, cut, fifo_mk, links):
    """schedule._held for flight row r, the rows before it having been asked in order this pass
    (`links` cleared first): an envelope of the FIFO kind behind an older one on its uncut link."""
    if fifo_mk == NO_FIFO or fl[r, E_MK] != fifo_mk:
        return False
    src = fl[r, E_SRC]
    dst = fl[r, E_DST]
    if (links[src] >> dst) & 1:
        return cut[src, dst] == 0
    links[src] |= 1 << dst
    return False


@njit(cache=True, inline='always')
def _clear_links(fifo_mk, links):
    if fifo_mk != NO_FIFO:
        for j in range(links.shape[0]):
            links[j] = 0


@njit(cache=True, inline='always')
def net_horizon(h, fl, nf, rp, nr, cut, dmax, java, calm_at, calm, now, fifo_mk, links):
    """The rest of schedule._horizon once the nodes' wake times are in `h`: each envelope's
    latest delivery (not a held one's), each RPC's failure (its window later under Java
    timing), the quiet tail; never before now. Both twins' flight, RPC and world columns
    agree (their layouts)."""
    _clear_links(fifo_mk, links)
    for r in range(nf):
        if _held(fl, r, cut, fifo_mk, links):
            continue
        t = fl[r, E_SENT] + dmax
        if h < 0 or t < h:
            h = t
    for r in range(nr):
        t = rp[r, R_DEADLINE] + rp[r, R_WINDOW] if java else rp[r, R_DEADLINE]
        if h < 0 or t < h:
            h = t
    if calm_at >= 0 and not calm and (h < 0 or calm_at < h):
        h = calm_at
    if h >= 0 and h < now:
        h = now
    return h


@njit(cache=True, inline='always')
def net_events(h, fl, nf, rp, nr, cut, dmin, dmax, evk, eva, nev, fifo_mk, links):
    """schedule.protocol_events after the ticks: deliveries (none of a held envelope) or drops
    behind a cut link, and RPC failures, due by the horizon, appended to evk/eva[nev:];
    returns the new count."""
    _clear_links(fifo_mk, links)
    for r in range(nf):
        held = _held(fl, r, cut, fifo_mk, links)
        if cut[fl[r, E_SRC], fl[r, E_DST]] == 1:
            if fl[r, E_SENT] + dmax <= h:
                evk[nev] = EV_DROP
                eva[nev] = r
                nev += 1
        elif fl[r, E_SENT] + dmin <= h and not held:
            evk[nev] = EV_DELIVER
            eva[nev] = r
            nev += 1
    for r in range(nr):
        if rp[r, R_DEADLINE] <= h:
            evk[nev] = EV_RPCFAIL
            eva[nev] = r
            nev += 1
    return nev


@njit(cache=True, inline='always')
def fault_kinds(C, pw, alive, fl, nf, cut, ws, n, kinds):
    """schedule.fault_kinds before the calm, for the generic kinds (a twin appends its own):
    kinds[:nk]; returns nk."""
    nk = 0
    if pw[K_LOSS] > 0:
        for r in range(nf):
            if cut[fl[r, E_SRC], fl[r, E_DST]] == 0:
                kinds[nk] = K_LOSS
                nk += 1
                break
    if pw[K_DUP] > 0 and nf > 0:
        kinds[nk] = K_DUP
        nk += 1
    up = False
    if pw[K_CRASH] > 0 or pw[K_OS] > 0 or pw[K_DISK] > 0:
        for j in range(n):
            if alive[j] == 1 and (C[C_CRASHABLE] >> j) & 1:
                up = True
                break
    if pw[K_CRASH] > 0 and up:
        kinds[nk] = K_CRASH
        nk += 1
    if pw[K_OS] > 0 and up:
        kinds[nk] = K_OS
        nk += 1
    if pw[K_DISK] > 0 and up:
        kinds[nk] = K_DISK
        nk += 1
    if pw[K_RESTART] > 0:
        for j in range(n):
            if alive[j] == 0:
                kinds[nk] = K_RESTART
                nk += 1
                break
    if pw[K_PARTITION] > 0 and n > 1:
        kinds[nk] = K_PARTITION
        nk += 1
    if pw[K_ONEWAY] > 0 and ws[W_NCUT] < n * (n - 1):
        kinds[nk] = K_ONEWAY
        nk += 1
    if pw[K_HEAL] > 0 and ws[W_NCUT] > 0:
        kinds[nk] = K_HEAL
        nk += 1
    return nk


@njit(cache=True, inline='always')
def fault_events(C, alive, fl, nf, cut, n, niso, kind, fev_a, fev_b):
    """schedule.fault_events(w, (kind,)) for the generic kinds: their count m, in
    fev_a/fev_b[:m] (a flight row, a node, a partition's index in core.isolations, or a
    one-way cut's (a, b)). n is the nodes a fault may hit: election's servers, dledger_log's
    servers and clients; a twin lists its own kinds before calling this."""
    m = 0
    if kind == K_LOSS:
        for r in range(nf):
            if cut[fl[r, E_SRC], fl[r, E_DST]] == 0:
                fev_a[m] = r
                m += 1
    elif kind == K_DUP:
        for r in range(nf):
            fev_a[m] = r
            m += 1
    elif kind == K_CRASH or kind == K_OS or kind == K_DISK:
        for j in range(n):
            if alive[j] == 1 and (C[C_CRASHABLE] >> j) & 1:
                fev_a[m] = j
                m += 1
    elif kind == K_RESTART:
        for j in range(n):
            if alive[j] == 0:
                fev_a[m] = j
                m += 1
    elif kind == K_PARTITION:
        for g in range(niso):
            fev_a[m] = g
            m += 1
    elif kind == K_ONEWAY:
        for a in range(n):
            for b in range(n):
                if a != b and cut[a, b] == 0:
                    fev_a[m] = a
                    fev_b[m] = b
                    m += 1
    else:
        fev_a[m] = 0
        m += 1
    return m
