"""The Python side of the compiled election twin: build the arrays from a `WorldConfig`,
run the kernel, decode the result (and, on demand, the final world as reference objects).

    from histories.fast import run_history
    r = run_history(cfg, seed=1, steps=5000, until_ms=None)
    r.steps, r.t_ms, r.stopped, r.violations, r.stats, r.faults

The history is the one `histories.runner.run(cfg, SeededChooser(seed).choose, steps, until_ms)`
runs, event for event (histories/fast/crosscheck.py checks it).
"""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import attrs
import numpy as np

import histories.fast.decode as decode
import histories.fast.election as K
import histories.fast.mt as mt_mod
from histories.fast.common import FAULT_NAMES, PROFILE_KINDS, CapacityError, FastResult, FastViolation, Unsupported
from reference_impl import core
from reference_impl.core import faults
from reference_impl.election import world as election_world
from spec import election as espec

MAX_NODES = 62  # node sets are int64 bit masks
DEFAULT_FLIGHT = 1024
DEFAULT_RPCS = 1024
DEFAULT_TERMS = 4096
DEFAULT_LOG = 1 << 20  # events the log holds at most (log=True); more overflow loudly
DEFAULT_NOTES = 1 << 16  # the ghost's evidence notes (ACCEPTs, leaderships, lost term files); more overflow loudly
MAX_NOTES = 1 << 22  # run_history sizes the notes by its steps, up to this (Runner: DEFAULT_NOTES)
SEEDED = np.array([-2, 0, 0], np.int64)  # run_kernel's `force`: no forced choice, the seeded chooser picks
STOP_NAMES = {K.STOP_STEPS: "steps", K.STOP_UNTIL: "until", K.STOP_IDLE: "idle"}
OVERFLOW_NAMES = {K.OVERFLOW_FLIGHT: "messages in flight", K.OVERFLOW_RPCS: "open RPCs",
                  K.OVERFLOW_TERMS: "terms (ghost tables)", K.OVERFLOW_OUTS: "outputs of one transition",
                  K.OVERFLOW_EVENTS: "enabled events", K.OVERFLOW_LOG: "event log",
                  K.OVERFLOW_NOTES: "ghost notes (votes, leaderships, lost term files)"}


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
    lei: np.ndarray
    let: np.ndarray
    down: int  # bit mask of the nodes not started at time 0


_PREPARED: dict[tuple, Prepared] = {}


def _bounds(cfg, C: np.ndarray) -> None:
    """The properties' bounds, by spec/election.py's own functions: spec/bounds.py's defaults
    unless cfg.overrides sets a value (they read only the world's config)."""
    w = SimpleNamespace(cfg=cfg)
    C[K.C_HB1Q] = espec.hb1_quiet_ms(w)
    C[K.C_HB2B] = espec.hb2_bound_ms(w)
    C[K.C_ELELB] = espec.ele_l_bound_ms(w)
    C[K.C_LIVE1B] = espec.live1_bound_ms(w)
    C[K.C_LIVE2B] = espec.live2_bound_ms(w)
    C[K.C_LIVE3B] = espec.live3_bound_ms(w)
    for k in (K.C_HB1Q, K.C_HB2B, K.C_ELELB, K.C_LIVE1B, K.C_LIVE2B, K.C_LIVE3B):
        if not 0 <= C[k] < 1 << 40:
            raise Unsupported(f"a property bound of {int(C[k])} ms is outside the twin's range")


def election_columns(C: np.ndarray, dl, prof, n: int, nt: int, crashable: tuple, terms: int, log: bool,
                     mutant: str | None) -> None:
    """The config columns both twins' election members read (the dledger_log layout keeps
    them at election's places): `n` servers, out of `nt` nodes a fault may hit (dledger_log's
    clients crash too); `crashable` is cfg.crashable, empty for all of them."""
    C[K.C_N] = n
    C[K.C_HBI] = dl.heart_beat_time_interval_ms
    C[K.C_LEAK] = dl.max_heart_beat_leak
    C[K.C_MINV] = dl.min_vote_interval_ms
    C[K.C_MAXV] = dl.max_vote_interval_ms
    C[K.C_ELECTOR] = 1 if dl.enable_leader_elector else 0
    C[K.C_PREF] = 1 if dl.preferred_leader_ids is not None else 0
    C[K.C_MINTL] = dl.min_take_leadership_vote_interval_ms
    C[K.C_MAXTL] = dl.max_take_leadership_vote_interval_ms
    C[K.C_MAXTWI] = dl.max_leadership_transfer_wait_index
    C[K.C_LTWT] = dl.leadership_transfer_wait_timeout
    C[K.C_RPCTO] = dl.rpc_timeout_ms
    C[K.C_SLEEP] = dl.maintainer_sleep_ms
    C[K.C_CPLI] = dl.check_preferred_leader_interval_ms
    C[K.C_DMIN], C[K.C_DMAX] = prof.delay_ms
    C[K.C_CALM_AT] = -1 if prof.calm_at_ms is None else prof.calm_at_ms
    C[K.C_JAVA] = 1 if prof.timing == "java" else 0
    C[K.C_STAGGER] = prof.stagger_ms
    C[K.C_STEPDOWN] = 1 if dl.step_down_on_higher_term else 0
    crashable = crashable or tuple(range(nt))
    C[K.C_CRASHABLE] = sum(1 << i for i in set(crashable) if 0 <= i < nt)
    C[K.C_TCAP] = terms
    C[K.C_LOG] = 1 if log else 0
    if mutant is not None:
        if mutant not in K.MUTANTS:
            raise Unsupported(f"the twin has no mutant {mutant!r}; it has {', '.join(K.MUTANTS)}")
        C[K.C_MUTANT] = K.MUTANTS[mutant]


def prepare(cfg, terms: int = DEFAULT_TERMS, log: bool = False, mutant: str | None = None) -> Prepared:
    """Check that the twin models `cfg` (raise Unsupported otherwise) and build its arrays.
    `mutant`: a property_tests/support/election_mutants.py function name (test-only broken variants)."""
    key = (id(cfg), terms, log, mutant)
    hit = _PREPARED.get(key)
    if hit is not None and hit.cfg is cfg:
        return hit
    if cfg.protocol != "election":
        raise Unsupported(f"the fast twin models the election protocol only, not {cfg.protocol!r}")
    if cfg.script:
        raise Unsupported("scenario scripts are not modelled by the fast twin")
    n = len(cfg.ids)
    if not 1 <= n <= MAX_NODES:
        raise Unsupported(f"the fast twin takes 1..{MAX_NODES} nodes, not {n}")
    prof = cfg.profile
    if any(w for _, w in prof.ext):
        raise Unsupported(f"protocol-specific fault kinds {prof.ext!r} are not modelled")
    pc = cfg.proto
    dl = pc.dledger
    if tuple(dl.peers) != tuple(cfg.ids):
        raise Unsupported("DLedgerConfig.peers must be the world's node ids, in order")
    if terms < 2:
        raise ValueError("terms capacity must be >= 2")
    ids = tuple(cfg.ids)
    C = np.zeros(K.CF, np.int64)
    _bounds(cfg, C)
    election_columns(C, dl, prof, n, n, cfg.crashable, terms, log, mutant)
    # int64 arithmetic: keep every input, and the products the twin forms, far from overflow
    numbers = {f.name: getattr(dl, f.name) for f in dl.__attrs_attrs__
               if isinstance(getattr(dl, f.name), int) and not isinstance(getattr(dl, f.name), bool)}
    numbers |= {"delay_ms": max(prof.delay_ms), "calm_at_ms": prof.calm_at_ms or 0, "stagger_ms": prof.stagger_ms}
    numbers |= {f"ledger_end[{i}]": abs(v) for i, v in enumerate(pc.ledger_end_index + pc.ledger_end_term)}
    for name, v in numbers.items():
        if abs(v) >= 1 << 31:
            raise Unsupported(f"{name} = {v} is outside the twin's range (|x| < 2**31)")
    pw = np.array([float(getattr(prof, k)) for k in PROFILE_KINDS], np.float64)
    preferred = dl.preferred()
    pref = np.array([ids.index(p) for p in preferred if p in ids], np.int64)
    self_pref = np.array([1 if node_id in preferred else 0 for node_id in ids], np.int64)
    isolations = tuple(core.isolations(n))
    isol = np.array([sum(1 << i for i in g[0]) for g in isolations], np.int64)  # each minority, as a mask
    lei = np.array(pc.ledger_end_index if pc.ledger_end_index else (-1,) * n, np.int64)
    let = np.array(pc.ledger_end_term if pc.ledger_end_term else (-1,) * n, np.int64)
    p = Prepared(cfg=cfg, C=C, pw=pw, pref=pref, self_pref=self_pref, isol=isol, isolations=isolations,
                 lei=lei, let=let, down=sum(1 << i for i in set(cfg.down) if 0 <= i < n))
    if len(_PREPARED) > 256:
        _PREPARED.clear()
    _PREPARED[key] = p
    return p


@attrs.define
class State:
    """Every array the kernel reads and writes (the whole world of one history)."""

    nd: np.ndarray
    live: np.ndarray
    wmk: np.ndarray
    alive: np.ndarray
    mt: np.ndarray
    fl: np.ndarray
    rp: np.ndarray
    cut: np.ndarray
    elected: np.ndarray
    grants: np.ndarray
    cs: np.ndarray
    ws: np.ndarray
    vi: np.ndarray
    sn: np.ndarray  # World.since
    nt: np.ndarray  # the ghost's notes (election_ghost)
    vl: np.ndarray
    lv: np.ndarray
    log: np.ndarray
    # the kernel's scratch space (it allocates nothing itself: election.borrow)
    evk: np.ndarray
    eva: np.ndarray
    fev_a: np.ndarray
    fev_b: np.ndarray
    kinds: np.ndarray
    wakes: np.ndarray
    slk: np.ndarray
    ob: np.ndarray
    oc: np.ndarray
    touched: np.ndarray
    prev_terms: np.ndarray


def new_state(p: Prepared, seed: Any, flight: int = DEFAULT_FLIGHT, rpcs: int = DEFAULT_RPCS,
              log_cap: int = 0, notes: int = DEFAULT_NOTES) -> State:
    """world.init(cfg) and SeededChooser(seed), as arrays."""
    C = p.C
    n = int(C[K.C_N])
    terms = int(C[K.C_TCAP])
    s = State(nd=np.zeros((n, K.NF), np.int64), live=np.full((n, n), -1, np.int64),
              wmk=np.full((n, n), -1, np.int64), alive=np.ones(n, np.int64), mt=np.zeros(mt_mod.N + 1, np.int64),
              fl=np.zeros((flight, K.EF), np.int64), rp=np.zeros((rpcs, K.RF), np.int64),
              cut=np.zeros((n, n), np.int64), elected=np.zeros(terms, np.int64),
              grants=np.zeros((terms, n), np.int64), cs=np.full(n, -1, np.int64), ws=np.zeros(K.WF, np.int64),
              vi=np.full((K.NPROP, K.VF), -1, np.int64), sn=np.zeros(n, np.int64),
              nt=np.zeros((notes, K.NTF), np.int64), vl=np.full((terms, n, 2), -1, np.int64),
              lv=np.full((n, K.LVF), -1, np.int64), log=np.zeros((max(log_cap, 1), K.LF), np.int64),
              evk=np.zeros(1 + n + flight + rpcs, np.int64), eva=np.zeros(1 + n + flight + rpcs, np.int64),
              fev_a=np.zeros(max(flight, n * n + 64), np.int64), fev_b=np.zeros(max(flight, n * n + 64), np.int64),
              kinds=np.zeros(9, np.int64), wakes=np.zeros(n, np.int64), slk=np.zeros(n, np.int64), ob=np.zeros((4 * n + 32, K.OF), np.int64),
              oc=np.zeros(2, np.int64), touched=np.zeros(4, np.int64), prev_terms=np.zeros(n, np.int64))
    reset(p, s, seed)
    return s


def reset(p: Prepared, s: State, seed: Any) -> None:
    """world.init and SeededChooser(seed) over `s` (fresh, or left by an earlier history)."""
    K.reset(p.C, p.lei, p.let, p.down, s.nd, s.live, s.alive, s.fl, s.rp, s.cut, s.elected, s.grants, s.cs, s.ws,
            s.vi, s.sn, s.vl, s.lv)
    mt_mod.seed_into(s.mt, seed)


def _run(p: Prepared, s: State, steps: int, until_ms: int | None) -> None:
    K.run_kernel(p.C, p.pw, p.pref, p.self_pref, p.isol, s.nd, s.live, s.wmk, s.alive, s.mt, s.fl, s.rp, s.cut,
                 s.elected, s.grants, s.cs, s.ws, s.vi, s.sn, s.nt, s.vl, s.lv, s.log, s.evk, s.eva, s.fev_a, s.fev_b,
                 s.kinds, s.wakes, s.slk, s.ob, s.oc, s.touched, s.prev_terms, int(steps),
                 -1 if until_ms is None else int(until_ms), SEEDED)


def run_history(cfg, seed: Any, steps: int, until_ms: int | None = None, *, log: bool = False,
                flight: int = DEFAULT_FLIGHT, rpcs: int = DEFAULT_RPCS, terms: int = DEFAULT_TERMS,
                strict: bool = True, mutant: str | None = None, log_cap: int = DEFAULT_LOG,
                notes: int | None = None) -> FastResult:
    """One seeded history of `cfg` (an election WorldConfig): what
    `histories.runner.run(cfg, SeededChooser(seed).choose, steps, until_ms)` runs.

    Capacities (`flight`, `rpcs`, `terms`) are checked, never truncated: an overflow
    raises CapacityError (strict) or returns stopped="overflow:<what>"; `notes` (the ghost's
    evidence) defaults to what `steps` can take. `log`: keep the
    event log (FastResult.log). `mutant`: a test-only broken variant (K.MUTANTS)."""
    p = prepare(cfg, terms=terms, log=log, mutant=mutant)
    if notes is None:  # a step takes at most two notes (a self-vote or a leadership, a grant, a lost file)
        notes = min(max(DEFAULT_NOTES, 2 * steps + 64), MAX_NOTES)
    s = new_state(p, seed, flight=flight, rpcs=rpcs, log_cap=min(steps, log_cap) if log else 0, notes=notes)
    t0 = time.process_time()
    _run(p, s, steps, until_ms)
    dt = time.process_time() - t0
    return _result(p, s, dt, strict)


def _cause(p: Prepared, s: State, k: int) -> tuple[str | None, tuple[str, ...]]:
    """The expected cause of property row k's recorded violation, as spec/election.py words it
    (None: unexpected), and the nodes it names. The kernel decided that a cause exists; ELE-1/2's
    text is spec's ele1_expected / ele2_expected over the ghost as it was at that step (the notes
    before V_SEQ, the part of it spec reads: decode.ghost_at)."""
    if s.vi[k, K.V_CAUSE] == 0:
        return None, ()
    ids = p.cfg.ids
    if k == K.P_ELE3:
        who = tuple(ids[i] for i in range(len(ids)) if int(s.vi[k, K.V_CAUSE]) >> i & 1)
        return espec.TERM_FILE_LOST.format(who=", ".join(who)), who
    g = decode.ghost_at(p.cfg, s.nt, int(s.vi[k, K.V_SEQ]), two_leaders=k == K.P_ELE1)
    w = SimpleNamespace(cfg=p.cfg, ghost=g)
    text = espec.ele1_expected(w) if k == K.P_ELE1 else espec.ele2_expected(w)
    if text is None:
        raise RuntimeError(f"fast world: the kernel found evidence for {K.PROPERTY_IDS[k]}'s expected cause, "
                           "spec/election.py does not (a twin bug: run the history on the reference)")
    lost = set(g.terms.term_lost)  # the voters with two candidates in a term that lost their term file
    who = tuple(sorted({v for (v, _), votes in g.terms.votes.items() if v in lost and len({x[0] for x in votes}) > 1}))
    return text, who


def _result(p: Prepared, s: State, seconds: float, strict: bool) -> FastResult:
    ws = s.ws
    code = int(ws[K.W_STOP])
    steps = int(ws[K.W_STEPS])
    violations = []
    for k, pid in enumerate(K.PROPERTY_IDS):
        if s.vi[k, K.V_STEP] >= 0:
            expected, who = _cause(p, s, k)
            violations.append(FastViolation(property=pid, step=int(s.vi[k, K.V_STEP]), t_ms=int(s.vi[k, K.V_T]),
                                            expected=expected, who=who))
    violations.sort(key=lambda v: (v.step, v.property))
    now = int(ws[K.W_NOW])
    calm = ws[K.W_CALM] == 1
    settled = int(ws[K.W_SETTLED])
    since = int(ws[K.W_METER_SINCE])
    stats = {
        "settle_ms": settled - int(ws[K.W_CALM_AT]) if calm and settled >= 0 else None,
        "elections": int(sum(bin(int(x)).count("1") for x in s.elected[:int(ws[K.W_MAXTERM_SEEN]) + 1])),
        "max_term": int(s.nd[:, K.TERM].max()),
        "crashes": int(ws[K.W_CRASHES]),
        "leaderless_ms": int(ws[K.W_METER_TOTAL]) + (now - since if since >= 0 else 0),
        "leader_losses": int(ws[K.W_METER_EPISODES]),
    }
    faults = {name: int(ws[K.W_FAULT0 + k]) for k, name in enumerate(FAULT_NAMES) if ws[K.W_FAULT0 + k]}
    stopped = STOP_NAMES.get(code) or f"overflow:{OVERFLOW_NAMES.get(code, code)}"
    log = s.log[:int(ws[K.W_NLOG])].copy() if p.C[K.C_LOG] == 1 else None
    r = FastResult(steps=steps, t_ms=now, stopped=stopped, violations=violations, stats=stats, faults=faults,
                   log=log, prepared=p, state=s, seconds=seconds, world_of=decode.world)
    if code < 0 and strict:
        raise CapacityError(OVERFLOW_NAMES.get(code, str(code)), steps, r)
    return r


class Runner:
    """Many histories of one config on one set of arrays (reset in place between them):
    the fast path for fuzzing and benchmarks. Its results carry no state (`world()` needs
    `run_history`), and a capacity overflow is reported as stopped="overflow:..."."""

    def __init__(self, cfg, *, flight: int = DEFAULT_FLIGHT, rpcs: int = DEFAULT_RPCS,
                 terms: int = DEFAULT_TERMS, mutant: str | None = None) -> None:
        self.p = prepare(cfg, terms=terms, mutant=mutant)
        self.s = new_state(self.p, 0, flight=flight, rpcs=rpcs)

    def run(self, seed: Any, steps: int, until_ms: int | None = None) -> FastResult:
        reset(self.p, self.s, seed)
        t0 = time.process_time()
        _run(self.p, self.s, steps, until_ms)
        r = _result(self.p, self.s, time.process_time() - t0, strict=False)
        r.state = None
        return r


def compile_seconds() -> float:
    """Wall time to get the kernel ready in this process (compile, or load from the cache)."""
    cfg = election_world.make_config(3).evolve(profile=faults.profile("standard", "election"))
    t0 = time.perf_counter()
    run_history(cfg, 0, 10)
    return time.perf_counter() - t0
