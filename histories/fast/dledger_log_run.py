"""The Python side of the compiled dledger_log twin: build the arrays from a `WorldConfig`,
reset the world (histories.fast.dledger_log_world), run the kernel
(histories.fast.dledger_log), and say what happened in the reference's words: violations
with spec/dledger_log.py's cause texts, its `measure`, fault counts.

    from histories.fast import dledger_log_run as fl
    r = fl.run_history(cfg, seed=1, steps=50_000, until_ms=120_000)
    r.steps, r.t_ms, r.stopped, r.violations, r.stats, r.faults, r.world()
    fl.Runner(cfg).run(seed, steps, until_ms)      # many histories on one set of arrays (the fuzzer's)

The history is the one `histories.runner.run(cfg, SeededChooser(seed).choose, steps,
until_ms)` runs, event for event (histories/fast/dledger_log_crosscheck.py checks it).
"""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import attrs
import numpy as np

import histories.fast.dledger_log as K
import histories.fast.dledger_log_causes as causes
import histories.fast.dledger_log_decode as decode
import histories.fast.dledger_log_layout as L
import histories.fast.dledger_log_world as W
import histories.fast.election as E
import histories.fast.mt as mt_mod
from histories.fast.common import FAULT_NAMES, PROFILE_KINDS, CapacityError, FastResult, FastViolation, Unsupported
from histories.fast.dledger_log_monitor import G_GRES
from histories.fast.run import election_columns
from reference_impl import core
from reference_impl.core import faults
from reference_impl.dledger_log import world as log_world
from reference_impl.election import records as el
from spec import election as espec

MAX_NODES = 62  # node sets are int64 bit masks
DEFAULT_ENTRIES = 4096  # log indexes (entries per log, and every index-keyed table)
DEFAULT_FLIGHT = 8192  # a leader catching a follower up pushes up to dispatcher_max_pending_size at once
DEFAULT_RPCS = 8192
DEFAULT_TERMS = 4096
DEFAULT_MARKS = 64  # water-mark terms per pusher
DEFAULT_PENDING = 4096  # pending appends per pusher (and their terms)
DEFAULT_QUEUE = 1024  # entry handler's queue of COMPARE / TRUNCATE / COMMIT requests
DEFAULT_SETS = 8  # different entries acknowledged (or committed later) at one index
DEFAULT_OSLOST = 4096  # ghost history rows: drops (x16 their entries), votes (x4), leaderships, lost term files
DEFAULT_OUTS = 16384  # outputs of one transition
DEFAULT_LOG = 1 << 20  # events the log holds at most (log=True); more overflow loudly
STOP_NAMES = {L.STOP_STEPS: "steps", L.STOP_UNTIL: "until", L.STOP_IDLE: "idle"}
CODE_NAMES = {int(c): c.name for c in el.Code}


@attrs.frozen
class Prepared:
    """A WorldConfig compiled to the kernel's config arrays."""

    cfg: Any
    C: np.ndarray
    pw: np.ndarray
    pref: np.ndarray
    self_pref: np.ndarray
    isol: np.ndarray
    isolations: tuple
    down: int  # bit mask of the nodes not started at time 0
    caps: tuple  # (entries, flight, rpcs, terms, marks, pending, queue, sets, oslost, outs)


_PREPARED: dict[tuple, Prepared] = {}

_INT_FIELDS = ("max_pending_requests_num", "max_wait_ack_time_ms", "max_push_time_out_ms",
               "mapped_file_size_for_entry_data", "flush_file_interval", "check_point_interval",
               "dispatcher_max_pending_size", "dispatcher_error_sleep_ms", "commit_push_interval_ms",
               "leak_check_interval_ms", "check_fast_forward_interval_ms", "push_future_timeout_ms")


def prepare(cfg, *, entries: int = DEFAULT_ENTRIES, flight: int = DEFAULT_FLIGHT, rpcs: int = DEFAULT_RPCS,
            terms: int = DEFAULT_TERMS, marks: int = DEFAULT_MARKS, pending: int = DEFAULT_PENDING,
            queue: int = DEFAULT_QUEUE, sets: int = DEFAULT_SETS, oslost: int = DEFAULT_OSLOST,
            outs: int = DEFAULT_OUTS, log: bool = False, mutant: str | None = None) -> Prepared:
    """Check that the twin models `cfg` (raise Unsupported otherwise) and build its arrays.
    `mutant`: a property_tests/support/election_mutants.py function name (test-only broken
    election members, installed in the reference's election modules by the tests)."""
    caps = (entries, flight, rpcs, terms, marks, pending, queue, sets, oslost, outs)
    key = (id(cfg), caps, log, mutant)
    hit = _PREPARED.get(key)
    if hit is not None and hit.cfg is cfg:
        return hit
    if cfg.protocol != "dledger_log":
        raise Unsupported(f"this fast twin models the dledger_log protocol, not {cfg.protocol!r}")
    if cfg.script:
        raise Unsupported("scenario scripts are not modelled by the fast twin")
    prof = cfg.profile
    lp_weight = 0.0
    for kind, weight in prof.ext:
        if kind != "leader_partition" and weight:
            raise Unsupported(f"the protocol-specific fault kind {kind!r} is not modelled")
        if kind == "leader_partition":
            lp_weight = float(weight)
    pc = cfg.proto
    dl = pc.node.dledger
    lg = pc.node.log
    n = len(dl.peers)
    ids = tuple(cfg.ids)
    nt = len(ids)
    if not 1 <= nt <= MAX_NODES:
        raise Unsupported(f"the fast twin takes 1..{MAX_NODES} nodes, not {nt}")
    if ids[:n] != tuple(dl.peers) or ids[n:] != tuple(f"c{k}" for k in range(nt - n)):
        raise Unsupported("the nodes must be the DLedger peers, in order, then clients c0..")
    if ids[:n] != tuple(f"n{k}" for k in range(n)):
        raise Unsupported("the DLedger peers must be n0..n{k} (dledger_log.world.make_config)")
    if min(caps) < 2:
        raise ValueError("every capacity must be >= 2")
    C = np.zeros(L.CF, np.int64)
    election_columns(C, dl, prof, n, nt, cfg.crashable, terms, log, mutant)
    C[L.C_NT] = nt
    C[L.C_NCL] = pc.clients
    C[L.C_CIV] = pc.client_interval_ms
    C[L.C_BLEN] = max(pc.body_size, 1)
    C[L.C_FORCED] = -1 if pc.forced_leader is None else ids.index(pc.forced_leader)
    C[L.C_V026] = 1 if lg.v026 else 0
    C[L.C_CTC] = 1 if lg.current_term_commit else 0
    C[L.C_FRESHCMP] = 1 if lg.fresh_compare else 0
    C[L.C_ORDERED] = 1 if lg.ordered_pushes else 0
    C[L.C_QCAP] = lg.compare_queue_capacity
    C[L.C_FASTADV] = 1 if lg.enable_fast_advance_commit_index else 0
    C[L.C_MAXPEND] = lg.max_pending_requests_num
    C[L.C_MAXWAIT] = lg.max_wait_ack_time_ms
    C[L.C_MAXPUSHTO] = lg.max_push_time_out_ms
    C[L.C_FILESIZE] = lg.mapped_file_size_for_entry_data
    C[L.C_FLUSHI] = lg.flush_file_interval
    C[L.C_CPI] = lg.check_point_interval
    C[L.C_DMAXPEND] = lg.dispatcher_max_pending_size
    C[L.C_ERRSLEEP] = lg.dispatcher_error_sleep_ms
    C[L.C_COMMITPI] = lg.commit_push_interval_ms
    C[L.C_LEAKI] = lg.leak_check_interval_ms
    C[L.C_CFFI] = lg.check_fast_forward_interval_ms
    C[L.C_PFTO] = lg.push_future_timeout_ms
    # the liveness bounds, as spec/election.py states them (spec/bounds.py's defaults and the overrides)
    shim = SimpleNamespace(cfg=cfg)
    for k, bound in ((L.C_LIVE1B, espec.live1_bound_ms), (L.C_LIVE2B, espec.live2_bound_ms),
                     (L.C_LIVE3B, espec.live3_bound_ms), (L.C_ASTRAYB, espec.astray_bound_ms)):
        ms = bound(shim)
        if not 0 <= ms < 1 << 40:
            raise Unsupported(f"a property bound of {ms} ms is outside the twin's range")
        C[k] = ms
    if lg.mapped_file_size_for_entry_data <= 0:
        raise Unsupported("mapped_file_size_for_entry_data must be positive")
    # int64 arithmetic: keep every input, and the sums the twin forms, far from overflow
    numbers = {f.name: getattr(dl, f.name) for f in dl.__attrs_attrs__
               if isinstance(getattr(dl, f.name), int) and not isinstance(getattr(dl, f.name), bool)}
    numbers |= {name: getattr(lg, name) for name in _INT_FIELDS}
    numbers |= {"delay_ms": max(prof.delay_ms), "calm_at_ms": prof.calm_at_ms or 0, "stagger_ms": prof.stagger_ms,
                "client_interval_ms": pc.client_interval_ms, "body_size": pc.body_size}
    for name, v in numbers.items():
        if abs(v) >= 1 << 40:
            raise Unsupported(f"{name} = {v} is outside the twin's range (|x| < 2**40)")
    pw = np.array([float(getattr(prof, k)) for k in PROFILE_KINDS] + [lp_weight], np.float64)  # [L.K_LP]
    preferred = dl.preferred()
    pref = np.array([ids.index(p) for p in preferred if p in dl.peers], np.int64)
    self_pref = np.array([1 if node_id in preferred else 0 for node_id in ids[:n]], np.int64)
    isolations = tuple(core.isolations(nt))
    isol = np.array([sum(1 << i for i in g[0]) for g in isolations], np.int64)  # each minority, as a mask
    p = Prepared(cfg=cfg, C=C, pw=pw, pref=pref, self_pref=self_pref, isol=isol, isolations=isolations,
                 down=sum(1 << i for i in set(cfg.down) if 0 <= i < nt), caps=caps)
    if len(_PREPARED) > 256:
        _PREPARED.clear()
    _PREPARED[key] = p
    return p


@attrs.define
class State:
    """Every array the kernel reads and writes: the whole world of one history."""

    S: tuple  # the nodes (dledger_log_layout.I_*)
    G: tuple  # the ghost (dledger_log_monitor.G_*)
    T: np.ndarray  # the state table of S and G (the kernel's view of them)
    alive: np.ndarray
    mt: np.ndarray
    fl: np.ndarray
    rp: np.ndarray
    cut: np.ndarray
    sn: np.ndarray  # World.since
    rwake: np.ndarray  # each node's wake_at
    slk: np.ndarray  # each node's tick slack
    vi: np.ndarray
    texts: dict  # property index -> the expected cause recorded in vi (dledger_log_causes)
    memo: dict  # the ghost's tables decoded so far in this history (dledger_log_decode)
    lmp: np.ndarray  # LOG-1 bookkeeping per pair of logs
    lcache: np.ndarray  # LOG-1 / LOG-5 cause caches
    ocommit: np.ndarray  # scratch: commit indexes and liveness when the step began
    oalive: np.ndarray
    newl: np.ndarray  # scratch: the step's new leaders
    log: np.ndarray
    evk: np.ndarray
    eva: np.ndarray
    fev_a: np.ndarray
    fev_b: np.ndarray
    kinds: np.ndarray
    links: np.ndarray  # scratch: per node, the destinations its FIFO messages were seen to (election_schedule._held)
    ob: np.ndarray
    oc: np.ndarray
    msg: np.ndarray
    m: np.ndarray

    @property
    def ws(self) -> np.ndarray:
        return self.S[L.I_WS]


def new_state(p: Prepared, seed: Any, log_cap: int = 0) -> State:
    """core.world.init(cfg) and SeededChooser(seed), as arrays."""
    C = p.C
    n = int(C[E.C_N])
    nt = int(C[L.C_NT])
    entries, flight, rpcs, terms, marks, pending, queue, sets, oslost, outs = p.caps
    i64 = np.int64
    S = (np.zeros((n, E.NF), i64),  # nd
         np.full((n, n), -1, i64),  # live
         np.full((n, n + 1), -1, i64),  # wmk
         np.zeros((n, L.SF), i64),  # sto
         np.zeros((n, entries, L.ETF), i64),  # ent
         np.zeros((n, L.PUF), i64),  # pu
         np.zeros((n, marks, 1 + n), i64),  # wmt
         np.zeros((n, pending), i64),  # ptm
         np.zeros((n, pending, L.PDF), i64),  # pend
         np.zeros((n, n, L.DF), i64),  # dp
         np.full((n, n, entries), -1, i64),  # pm
         np.zeros((n, L.HF), i64),  # eh
         np.zeros((n, entries, L.PWF), i64),  # wr
         np.zeros((n, queue, L.PWF), i64),  # hq
         np.zeros((n, n, 3), i64),  # lseq
         np.zeros((max(nt - n, 1), L.CLF), i64),  # cl
         np.zeros((n, L.MDF), i64),  # md
         np.zeros((n, entries, L.ETF), i64),  # sv
         np.zeros(L.WF, i64),  # ws
         np.zeros(L.DF, i64))  # res
    G = (np.zeros(terms, i64),  # elected
         np.full(terms, -1, i64),  # regressed
         np.zeros((entries, 5), i64),  # gc
         np.zeros(entries, i64),  # gco
         np.zeros((entries, sets, 4), i64),  # gx
         np.zeros(entries, i64),  # gxn
         np.zeros(entries, i64),  # gxo
         np.zeros((entries, sets, 4), i64),  # ga
         np.zeros(entries, i64),  # gan
         np.zeros(entries, i64),  # gao
         np.zeros(entries, i64),  # gcnt: entries in gk per index
         np.zeros((oslost, L.DRF), i64),  # gdr
         np.zeros(L.CODE_SLOTS, i64),  # gres
         np.zeros((16 * oslost, 4), i64),  # gdp
         np.zeros((entries, L.THF), i64),  # gth
         np.zeros(entries, i64),  # gtho
         np.zeros((4 * oslost, 5), i64),  # gvo
         np.zeros((oslost, 5), i64),  # gled
         np.zeros((oslost, 4), i64),  # gtl
         np.full((n, 2), -1, i64),  # glv
         np.zeros((L.NPROP, L.RQF), i64),  # rq
         np.zeros(E.NF, i64),  # mb
         np.zeros((entries, sets, 4), i64),  # gk
         np.zeros(entries, i64),  # gko
         np.zeros(entries, i64))  # gxt
    nev = 1 + nt + flight + rpcs
    s = State(S=S, G=G, T=L.table_of(S + G), alive=np.ones(nt, i64), mt=np.zeros(mt_mod.N + 1, i64), fl=np.zeros((flight, L.EF), i64),
              rp=np.zeros((rpcs, L.RF), i64), cut=np.zeros((nt, nt), i64), sn=np.zeros(nt, i64),
              rwake=np.zeros(nt, i64), slk=np.zeros(nt, i64), vi=np.zeros((L.NPROP, L.VF), i64), texts={}, memo={},
              lmp=np.full((n, n), -1, i64), lcache=np.zeros(16, i64), ocommit=np.zeros(n, i64),
              oalive=np.zeros(n, i64), newl=np.zeros(64, i64), log=np.zeros((max(log_cap, 1), E.LF), i64),
              evk=np.zeros(nev, i64), eva=np.zeros(nev, i64), fev_a=np.zeros(max(flight, nt * nt + 64), i64),
              fev_b=np.zeros(max(flight, nt * nt + 64), i64), kinds=np.zeros(L.K_LP + 1, i64), links=np.zeros(nt, i64),
              ob=np.zeros((outs + 1, L.OF), i64), oc=np.zeros(2, i64), msg=np.zeros(L.NMF, i64),
              m=np.zeros(L.NMF, i64))
    reset(p, s, seed)
    return s


def reset(p: Prepared, s: State, seed: Any) -> None:
    """core.world.init and SeededChooser(seed) over `s` (fresh, or left by an earlier history)."""
    W.reset(p.C, p.down, s.T, s.alive, s.fl, s.rp, s.cut, s.sn, s.rwake, s.slk, s.vi, s.lmp, s.lcache)
    s.texts.clear()
    s.memo.clear()
    mt_mod.seed_into(s.mt, seed)


def _run(p: Prepared, s: State, steps: int, until_ms: int | None) -> None:
    """The kernel to the end of the history; where it pauses, the expected causes it asked for
    are computed here (dledger_log_causes) and it goes on."""
    until = -1 if until_ms is None else int(until_ms)
    while True:
        K.run_kernel(p.C, p.pw, p.pref, p.self_pref, p.isol, s.T, s.alive, s.mt, s.fl, s.rp, s.cut, s.sn, s.rwake,
                     s.slk, s.vi, s.lmp, s.lcache, s.ocommit, s.oalive, s.newl, s.log, s.evk, s.eva, s.fev_a,
                     s.fev_b, s.kinds, s.links, s.ob, s.oc, s.msg, s.m, int(steps), until)
        if s.ws[L.W_PAUSE] != 1:
            return
        causes.answer(p, s)


def run_history(cfg, seed: Any, steps: int, until_ms: int | None = None, *, log: bool = False, strict: bool = True,
                log_cap: int = DEFAULT_LOG, mutant: str | None = None, **caps: int) -> FastResult:
    """One seeded history of `cfg` (a dledger_log WorldConfig): what
    `histories.runner.run(cfg, SeededChooser(seed).choose, steps, until_ms)` runs.

    Capacities (`entries`, `flight`, `rpcs`, `terms`, ...: prepare's keywords) are checked,
    never truncated: an overflow raises CapacityError (strict) or returns
    stopped="overflow:<what>". `log`: keep the event log (FastResult.log)."""
    p = prepare(cfg, log=log, mutant=mutant, **caps)
    s = new_state(p, seed, log_cap=min(steps, log_cap) if log else 0)
    t0 = time.process_time()
    _run(p, s, steps, until_ms)
    dt = time.process_time() - t0
    return _result(p, s, dt, strict)


def _result(p: Prepared, s: State, seconds: float, strict: bool) -> FastResult:
    ws = s.ws
    code = int(ws[L.W_STOP])
    steps = int(ws[L.W_STEPS])
    violations = []
    for k, pid in enumerate(L.PROPERTY_IDS):
        row = s.vi[k]
        if row[L.V_STEP] >= 0:
            expected = s.texts.get(k) if row[L.V_CK] != L.CA_NONE else None
            violations.append(FastViolation(property=pid, step=int(row[L.V_STEP]), t_ms=int(row[L.V_T]),
                                            expected=expected, who=()))
    violations.sort(key=lambda v: (v.step, v.property))
    stopped = STOP_NAMES.get(code) or f"overflow:{L.OVERFLOW_NAMES.get(code, code)}"
    log = s.log[:int(ws[L.W_NLOG])].copy() if p.C[E.C_LOG] == 1 else None
    r = FastResult(steps=steps, t_ms=int(ws[L.W_NOW]), stopped=stopped, violations=violations, stats=measure(p, s),
                   faults={name: int(ws[L.W_FAULT0 + k]) for k, name in enumerate(FAULT_NAMES)
                           if ws[L.W_FAULT0 + k]} | ({"leader_partition": int(ws[L.W_LP_FAULTS])}
                                                    if ws[L.W_LP_FAULTS] else {}),
                   log=log, prepared=p, state=s, seconds=seconds, world_of=decode.world)
    if code < 0 and strict:
        raise CapacityError(L.OVERFLOW_NAMES.get(code, str(code)), steps, r)
    return r


def measure(p: Prepared, s: State) -> dict:
    """spec.dledger_log.measure of the final world."""
    ws = s.ws
    gres = s.G[G_GRES]
    calm = ws[L.W_CALM] == 1
    first = int(ws[L.W_FIRST_ACK])
    return {
        "appends": int(ws[L.W_APPENDS]),
        "results": {CODE_NAMES[c]: int(gres[c]) for c in sorted(CODE_NAMES, key=lambda c: CODE_NAMES[c])
                    if 0 <= c < len(gres) and gres[c]},
        "committed": int(ws[L.W_NCOMMITTED]),
        "counted_commits": int(ws[L.W_NCOUNTED]),
        "ack_after_calm_ms": first - int(ws[L.W_CALM_AT]) if calm and first >= 0 else None,
        "max_term": int(s.S[L.I_ND][:, E.TERM].max()),
        "crashes": int(ws[L.W_CRASHES]),
    }


# Arrays by shape (servers, nodes, capacities), shared by the Runners of every config of that
# shape in this process: a fuzz run draws a config per history, and allocating the arrays (tens of
# MB with the default capacities) cost more than a history; reset() rebuilds all a history reads.
_STATES: dict[tuple, State] = {}


class Runner:
    """Many histories of one config on one set of arrays (reset in place between them):
    the fast path for fuzzing and benchmarks. Runners of configs of one shape share the arrays
    (a run resets them whole, so runs may interleave). Its results carry no state (`world()`
    needs `run_history`), and a capacity overflow is reported as stopped="overflow:..."."""

    def __init__(self, cfg, *, mutant: str | None = None, **caps: int) -> None:
        self.p = prepare(cfg, mutant=mutant, **caps)
        shape = (int(self.p.C[E.C_N]), int(self.p.C[L.C_NT]), self.p.caps)
        self.s = _STATES.get(shape)
        if self.s is None:
            if len(_STATES) > 8:
                _STATES.clear()
            self.s = _STATES[shape] = new_state(self.p, 0)

    def run(self, seed: Any, steps: int, until_ms: int | None = None) -> FastResult:
        reset(self.p, self.s, seed)
        t0 = time.process_time()
        _run(self.p, self.s, steps, until_ms)
        r = _result(self.p, self.s, time.process_time() - t0, strict=False)
        r.state = None
        return r


def compile_seconds() -> float:
    """Wall time to get the kernel ready in this process (compile, or load from the cache)."""
    cfg = log_world.make_config(3).evolve(profile=faults.profile("standard", "dledger_log"))
    t0 = time.perf_counter()
    run_history(cfg, 0, 10)
    return time.perf_counter() - t0

