"""The election twin's Python side: the config columns and arrays of a `WorldConfig`
(`prepare`), the arrays of a history (`new_state`, shared by every config of one shape), the
kernel run (`run_history`, `Runner`) and what it found in the reference's words (violations
with spec/election.py's cause texts, its measures, fault counts, coverage).

    from histories.fast.election import runner
    r = runner.run_history(cfg, seed=1, steps=5000, until_ms=None)
    r.steps, r.t_ms, r.stopped, r.violations, r.stats, r.faults, r.world()
    runner.Runner(cfg).run(seed, steps, until_ms)     # many histories, no arrays allocated per history

The history is the one `histories.runner.run(cfg, SeededChooser(seed).choose, steps, until_ms)`
runs, event for event (histories/fast/election/crosscheck.py checks it).
"""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import attrs
import numpy as np

from histories.fast.core import coverage, mt
from histories.fast.core import layout as core_layout
from histories.fast.core.layout import (
    C_CALM_AT_MS,
    C_CRASHABLE,
    C_DELAY_MAX_MS,
    C_DELAY_MIN_MS,
    C_JAVA_TIMING,
    C_NODES,
    C_STAGGER_MS,
    C_SEE_STATES,
    C_WRITE_LOG,
    FAULT_NAMES,
    LOG_COLUMNS,
    PROFILE_KINDS,
    RPC_COLUMNS,
    SEEDED,
    STOP_NAMES,
    W_CALM,
    W_CALM_AT,
    W_CRASHES,
    W_FAULT_COUNTS,
    W_LOGGED,
    W_NOW,
    W_STEPS,
    W_STOP,
)
from histories.fast.core.results import CapacityError, FastResult, FastViolation, Unsupported
from histories.fast.core.table import State
from histories.fast.election import decode, layout, mutants, world, world_observe
from histories.fast.election.layout import (
    C_CHECK_PREFERRED_LEADER_INTERVAL_MS,
    C_ELE_L_BOUND_MS,
    C_ENABLE_LEADER_ELECTOR,
    C_HB1_QUIET_MS,
    C_HB2_BOUND_MS,
    C_HEART_BEAT_TIME_INTERVAL_MS,
    C_LEADERSHIP_TRANSFER_WAIT_TIMEOUT,
    C_LIVE1_BOUND_MS,
    C_LIVE2_BOUND_MS,
    C_LIVE3_BOUND_MS,
    C_MAINTAINER_SLEEP_MS,
    C_MAX_HEART_BEAT_LEAK,
    C_MAX_LEADERSHIP_TRANSFER_WAIT_INDEX,
    C_MAX_TAKE_LEADERSHIP_VOTE_INTERVAL_MS,
    C_MAX_VOTE_INTERVAL_MS,
    C_MIN_TAKE_LEADERSHIP_VOTE_INTERVAL_MS,
    C_MIN_VOTE_INTERVAL_MS,
    C_PEERS,
    C_PREFERRED_LEADERS,
    C_RPC_TIMEOUT_MS,
    C_STEP_DOWN_ON_HIGHER_TERM,
    C_TERMS,
    CONFIG_COLUMNS,
    CURR_TERM,
    ENVELOPE_COLUMNS,
    MEMBER_COLUMNS,
    NODE_NOTE_COLUMNS,
    NOTE_COLUMNS,
    OUTPUT_COLUMNS,
    OVERFLOW_NAMES,
    P_ELE1,
    P_ELE3,
    PROPERTIES,
    PROPERTY_IDS,
    STEP_MARK_COLUMNS,
    V_CAUSE,
    V_NOTES,
    V_STEP,
    V_TIME,
    VERDICT_COLUMNS,
    W_LEADER_LOSSES,
    W_LEADERLESS_MS,
    W_LEADERLESS_SINCE,
    W_SETTLED,
    W_TOP_TERM,
    WORLD_COLUMNS,
)
from reference_impl import core
from reference_impl.core import faults
from reference_impl.election import world as election_world
from spec import election as espec

MAX_MASK_NODES = 62  # node sets are int64 bit masks
DEFAULT_FLIGHT = 1024
DEFAULT_RPCS = 1024
DEFAULT_TERMS = 4096
DEFAULT_LOG = 1 << 20  # events the log holds at most (log=True); more overflow loudly
DEFAULT_NOTES = 1 << 16  # the ghost's evidence notes (ACCEPTs, leaderships, lost term files); more overflow loudly
MAX_NOTES = 1 << 22  # run_history sizes the notes by its steps, up to this (Runner: DEFAULT_NOTES)


@attrs.frozen
class Prepared:
    """A WorldConfig as the kernel's config arrays."""

    cfg: Any
    config: np.ndarray
    weights: np.ndarray
    preferred: np.ndarray  # the preferred leaders' indexes, in the config's order
    self_preferred: np.ndarray
    isolations: np.ndarray  # each of core.isolations(n), as the mask of its minority
    isolation_groups: tuple
    initial_ledger: np.ndarray  # [n, 2]: ledger_end_index and ledger_end_term each node boots with
    down: int  # bit mask of the nodes not started at time 0
    mutant: int | None  # a test mutant's number (election.mutants), None in production


_PREPARED: dict[tuple, Prepared] = {}


def property_bounds(cfg, config: np.ndarray) -> None:
    """The properties' bounds, by spec/election.py's own functions: spec/bounds.py's defaults
    unless cfg.overrides sets a value (they read only the world's config)."""
    w = SimpleNamespace(cfg=cfg)
    config[C_HB1_QUIET_MS] = espec.hb1_quiet_ms(w)
    config[C_HB2_BOUND_MS] = espec.hb2_bound_ms(w)
    config[C_ELE_L_BOUND_MS] = espec.ele_l_bound_ms(w)
    config[C_LIVE1_BOUND_MS] = espec.live1_bound_ms(w)
    config[C_LIVE2_BOUND_MS] = espec.live2_bound_ms(w)
    config[C_LIVE3_BOUND_MS] = espec.live3_bound_ms(w)
    for k in (C_HB1_QUIET_MS, C_HB2_BOUND_MS, C_ELE_L_BOUND_MS, C_LIVE1_BOUND_MS, C_LIVE2_BOUND_MS, C_LIVE3_BOUND_MS):
        if not 0 <= config[k] < 1 << 40:
            raise Unsupported(f"a property bound of {int(config[k])} ms is outside the twin's range")


def core_columns(config: np.ndarray, profile, nodes: int, crashable: tuple, log: bool,
                 see_states: bool = True) -> None:
    """The core config columns: `nodes` is every node a fault may hit (cfg.crashable, empty for
    all of them, says which a crash may pick); `see_states`: count the distinct observable states."""
    config[C_NODES] = nodes
    config[C_DELAY_MIN_MS], config[C_DELAY_MAX_MS] = profile.delay_ms
    config[C_CALM_AT_MS] = -1 if profile.calm_at_ms is None else profile.calm_at_ms
    config[C_JAVA_TIMING] = 1 if profile.timing == "java" else 0
    config[C_STAGGER_MS] = profile.stagger_ms
    crashable = crashable or tuple(range(nodes))
    config[C_CRASHABLE] = sum(1 << i for i in set(crashable) if 0 <= i < nodes)
    config[C_WRITE_LOG] = 1 if log else 0
    config[C_SEE_STATES] = 1 if see_states else 0


def member_columns(config: np.ndarray, dledger, peers: int, terms: int) -> None:
    """The config columns both twins' members read (DLedgerConfig)."""
    config[C_PEERS] = peers
    config[C_HEART_BEAT_TIME_INTERVAL_MS] = dledger.heart_beat_time_interval_ms
    config[C_MAX_HEART_BEAT_LEAK] = dledger.max_heart_beat_leak
    config[C_MIN_VOTE_INTERVAL_MS] = dledger.min_vote_interval_ms
    config[C_MAX_VOTE_INTERVAL_MS] = dledger.max_vote_interval_ms
    config[C_ENABLE_LEADER_ELECTOR] = 1 if dledger.enable_leader_elector else 0
    config[C_PREFERRED_LEADERS] = 1 if dledger.preferred_leader_ids is not None else 0
    config[C_MIN_TAKE_LEADERSHIP_VOTE_INTERVAL_MS] = dledger.min_take_leadership_vote_interval_ms
    config[C_MAX_TAKE_LEADERSHIP_VOTE_INTERVAL_MS] = dledger.max_take_leadership_vote_interval_ms
    config[C_MAX_LEADERSHIP_TRANSFER_WAIT_INDEX] = dledger.max_leadership_transfer_wait_index
    config[C_LEADERSHIP_TRANSFER_WAIT_TIMEOUT] = dledger.leadership_transfer_wait_timeout
    config[C_RPC_TIMEOUT_MS] = dledger.rpc_timeout_ms
    config[C_MAINTAINER_SLEEP_MS] = dledger.maintainer_sleep_ms
    config[C_CHECK_PREFERRED_LEADER_INTERVAL_MS] = dledger.check_preferred_leader_interval_ms
    config[C_STEP_DOWN_ON_HIGHER_TERM] = 1 if dledger.step_down_on_higher_term else 0
    config[C_TERMS] = terms


def weights_of(profile, own: tuple = ()) -> np.ndarray:
    """The fault profile's weights in PROFILE_KINDS order, then the twin's own kinds'."""
    return np.array([float(getattr(profile, k)) for k in PROFILE_KINDS] + [float(w) for w in own], np.float64)


def isolations_of(nodes: int) -> tuple[tuple, np.ndarray]:
    """core.isolations(nodes), and each one's minority as a mask."""
    groups = tuple(core.isolations(nodes))
    return groups, np.array([sum(1 << i for i in g[0]) for g in groups], np.int64)


def mutant_number(mutant: str | None) -> int | None:
    if mutant is None:
        return None
    if mutant not in mutants.MUTANTS:
        raise Unsupported(f"the twin has no mutant {mutant!r}; it has {', '.join(mutants.MUTANTS)}")
    return mutants.MUTANTS[mutant]


def check_range(numbers: dict, limit: int) -> None:
    """int64 arithmetic: keep every input, and what the twin adds to it, far from overflow."""
    for name, v in numbers.items():
        if abs(v) >= limit:
            raise Unsupported(f"{name} = {v} is outside the twin's range (|x| < 2**{limit.bit_length() - 1})")


def prepare(cfg, terms: int = DEFAULT_TERMS, log: bool = False, mutant: str | None = None,
            see_states: bool = True) -> Prepared:
    """Check that the twin models `cfg` (raise Unsupported otherwise) and build its arrays.
    `mutant`: a histories/mutants/election.py function name (test-only broken variants);
    `see_states` False: no distinct observable states (the explorer counts its own)."""
    key = (id(cfg), terms, log, mutant, see_states)
    hit = _PREPARED.get(key)
    if hit is not None and hit.cfg is cfg:
        return hit
    if cfg.protocol != "election":
        raise Unsupported(f"the fast twin models the election protocol only, not {cfg.protocol!r}")
    if cfg.script:
        raise Unsupported("scenario scripts are not modelled by the fast twin")
    n = len(cfg.ids)
    if not 1 <= n <= MAX_MASK_NODES:
        raise Unsupported(f"the fast twin takes 1..{MAX_MASK_NODES} nodes, not {n}")
    profile = cfg.profile
    if any(w for _, w in profile.ext):
        raise Unsupported(f"protocol-specific fault kinds {profile.ext!r} are not modelled")
    dledger = cfg.proto.dledger
    if tuple(dledger.peers) != tuple(cfg.ids):
        raise Unsupported("DLedgerConfig.peers must be the world's node ids, in order")
    if terms < 2:
        raise ValueError("terms capacity must be >= 2")
    ids = tuple(cfg.ids)
    config = np.zeros(CONFIG_COLUMNS, np.int64)
    property_bounds(cfg, config)
    core_columns(config, profile, n, cfg.crashable, log, see_states)
    member_columns(config, dledger, n, terms)
    ends = cfg.proto.ledger_end_index + cfg.proto.ledger_end_term
    numbers = {f.name: getattr(dledger, f.name) for f in dledger.__attrs_attrs__
               if isinstance(getattr(dledger, f.name), int) and not isinstance(getattr(dledger, f.name), bool)}
    numbers |= {"delay_ms": max(profile.delay_ms), "calm_at_ms": profile.calm_at_ms or 0,
                "stagger_ms": profile.stagger_ms} | {f"ledger_end[{i}]": abs(v) for i, v in enumerate(ends)}
    check_range(numbers, 1 << 31)
    preferred = dledger.preferred()
    groups, masks = isolations_of(n)
    initial = np.full((n, 2), -1, np.int64)
    if cfg.proto.ledger_end_index:
        initial[:, 0] = cfg.proto.ledger_end_index
    if cfg.proto.ledger_end_term:
        initial[:, 1] = cfg.proto.ledger_end_term
    p = Prepared(cfg=cfg, config=config, weights=weights_of(profile),
                 preferred=np.array([ids.index(x) for x in preferred if x in ids], np.int64),
                 self_preferred=np.array([1 if node_id in preferred else 0 for node_id in ids], np.int64),
                 isolations=masks, isolation_groups=groups, initial_ledger=initial,
                 down=sum(1 << i for i in set(cfg.down) if 0 <= i < n), mutant=mutant_number(mutant))
    if len(_PREPARED) > 256:
        _PREPARED.clear()
    _PREPARED[key] = p
    return p


def use(p: Prepared, s: State) -> None:
    """The config's own arrays in the state's table (the rest of the state fits every config
    of its shape)."""
    s.put(core_layout.CONFIG, "config", p.config)
    s.put(core_layout.WEIGHTS, "weights", p.weights)
    s.put(core_layout.ISOLATIONS, "isolations", p.isolations)
    s.put(layout.PREFERRED, "preferred", p.preferred if len(p.preferred) else np.zeros(1, np.int64)[:0])
    s.put(layout.SELF_PREFERRED, "self_preferred", p.self_preferred)
    s.put(layout.INITIAL_LEDGER, "initial_ledger", p.initial_ledger)
    s.put(core_layout.LABELS, "labels", world_observe.spec(p.cfg).labels)
    s.prepared = p


def new_state(p: Prepared, flight: int = DEFAULT_FLIGHT, rpcs: int = DEFAULT_RPCS, log_cap: int = 0,
              notes: int = DEFAULT_NOTES) -> State:
    """The arrays of a history of `p`'s shape (nodes, capacities)."""
    n = int(p.config[C_PEERS])
    terms = int(p.config[C_TERMS])
    i64 = np.int64
    s = State(layout.SLOTS)
    core_arrays(s, n, flight, rpcs, log_cap, 1 + n + flight + rpcs, max(flight, n * n + 64), 9, 4 * n + 32,
                OUTPUT_COLUMNS, ENVELOPE_COLUMNS, PROPERTIES, VERDICT_COLUMNS, WORLD_COLUMNS)
    s.put(layout.MEMBERS, "members", np.zeros((n, MEMBER_COLUMNS), i64))
    s.put(layout.PEERS_LIVE, "peers_live", np.full((n, n), -1, i64))
    s.put(layout.WATER_MARKS, "water_marks", np.full((n, n), -1, i64))
    s.put(layout.ELECTED, "elected", np.zeros(terms, i64))
    s.put(layout.GRANTS, "grants", np.zeros((terms, n), i64))
    s.put(layout.CUT_SINCE, "cut_since", np.full(n, -1, i64))
    s.put(layout.NOTES, "notes", np.zeros((notes, NOTE_COLUMNS), i64))
    s.put(layout.VOTE_CHAINS, "vote_chains", np.full((terms, n, 2), -1, i64))
    s.put(layout.NODE_NOTES, "node_notes", np.full((n, NODE_NOTE_COLUMNS), -1, i64))
    s.put(layout.STEP_MARKS, "step_marks", np.zeros(STEP_MARK_COLUMNS, i64))
    s.put(layout.PREVIOUS_TERMS, "previous_terms", np.zeros(n, i64))
    use(p, s)
    return s


def core_arrays(s: State, nodes: int, flight: int, rpcs: int, log_cap: int, events: int, fault_events: int,
                kinds: int, outputs: int, output_columns: int, envelope_columns: int, properties: int,
                verdict_columns: int, world_columns: int) -> None:
    """The arrays of the core's slots (histories.fast.core.layout)."""
    i64 = np.int64
    s.put(core_layout.ALIVE, "alive", np.ones(nodes, i64))
    s.put(core_layout.SINCE, "since", np.zeros(nodes, i64))
    s.put(core_layout.WAKE_TIMES, "wake_times", np.zeros(nodes, i64))
    s.put(core_layout.SLACK, "slack", np.zeros(nodes, i64))
    s.put(core_layout.FLIGHT, "flight", np.zeros((flight, envelope_columns), i64))
    s.put(core_layout.RPCS, "rpcs", np.zeros((rpcs, RPC_COLUMNS), i64))
    s.put(core_layout.CUT, "cut", np.zeros((nodes, nodes), i64))
    s.put(core_layout.WORLD, "world", np.zeros(world_columns, i64))
    s.put(core_layout.MT, "mt", np.zeros(mt.N + 1, i64))
    s.put(core_layout.EVENT_LOG, "event_log", np.zeros((max(log_cap, 1), LOG_COLUMNS), i64))
    s.put(core_layout.EVENT_KINDS, "event_kinds", np.zeros(events, i64))
    s.put(core_layout.EVENT_ARGS, "event_args", np.zeros(events, i64))
    s.put(core_layout.FAULT_TARGETS, "fault_targets", np.zeros(fault_events, i64))
    s.put(core_layout.FAULT_PEERS, "fault_peers", np.zeros(fault_events, i64))
    s.put(core_layout.KINDS, "kinds", np.zeros(kinds, i64))
    s.put(core_layout.LINKS, "links", np.zeros(nodes, i64))
    s.put(core_layout.OUTPUTS, "outputs", np.zeros((outputs, output_columns), i64))
    s.put(core_layout.OUTPUT_COUNT, "output_count", np.zeros(2, i64))
    s.put(core_layout.VERDICTS, "verdicts", np.full((properties, verdict_columns), -1, i64))
    s.put(core_layout.FORCE, "force", np.array([SEEDED, 0, 0], i64))
    s.put(core_layout.EVENT, "event", np.zeros(LOG_COLUMNS, i64))
    coverage.add_arrays(s, nodes)


def reset(p: Prepared, s: State, seed: Any) -> None:
    """world.init and SeededChooser(seed) over `s` (fresh, or left by an earlier history)."""
    use(p, s)
    world.reset(s.table, p.down)
    mt.seed_into(s.mt, seed)


def run_kernel(p: Prepared, s: State, steps: int, until_ms: int | None) -> None:
    until = -1 if until_ms is None else int(until_ms)
    if p.mutant is None:  # the production kernel: the mutants' seams compiled out
        world.run(s.table, int(steps), until, None)
    else:
        world.run(s.table, int(steps), until, np.int64(p.mutant))


def run_history(cfg, seed: Any, steps: int, until_ms: int | None = None, *, log: bool = False,
                flight: int = DEFAULT_FLIGHT, rpcs: int = DEFAULT_RPCS, terms: int = DEFAULT_TERMS,
                strict: bool = True, mutant: str | None = None, log_cap: int = DEFAULT_LOG,
                notes: int | None = None) -> FastResult:
    """One seeded history of `cfg` (an election WorldConfig): what
    `histories.runner.run(cfg, SeededChooser(seed).choose, steps, until_ms)` runs.

    Capacities (`flight`, `rpcs`, `terms`) are checked, never truncated: an overflow
    raises CapacityError (strict) or returns stopped="overflow:<what>"; `notes` (the ghost's
    evidence) defaults to what `steps` can take. `log`: keep the event log (FastResult.log).
    `mutant`: a test-only broken variant (election.mutants.MUTANTS)."""
    p = prepare(cfg, terms=terms, log=log, mutant=mutant)
    if notes is None:  # a step takes at most two notes (a self-vote or a leadership, a grant, a lost file)
        notes = min(max(DEFAULT_NOTES, 2 * steps + 64), MAX_NOTES)
    s = new_state(p, flight=flight, rpcs=rpcs, log_cap=min(steps, log_cap) if log else 0, notes=notes)
    reset(p, s, seed)
    t0 = time.process_time()
    run_kernel(p, s, steps, until_ms)
    return result(p, s, time.process_time() - t0, strict)


def cause(p: Prepared, s: State, k: int) -> tuple[str | None, tuple[str, ...]]:
    """The expected cause of property row k's recorded violation, as spec/election.py words it
    (None: unexpected), and the nodes it names. The kernel decided that a cause exists; ELE-1/2's
    text is spec's ele1_expected / ele2_expected over the ghost as it was at that step (the notes
    before V_NOTES, the part of it spec reads: decode.ghost_at)."""
    verdicts = s.verdicts
    if verdicts[k, V_CAUSE] == 0:
        return None, ()
    ids = p.cfg.ids
    if k == P_ELE3:
        who = tuple(ids[i] for i in range(len(ids)) if int(verdicts[k, V_CAUSE]) >> i & 1)
        return espec.TERM_FILE_LOST.format(who=", ".join(who)), who
    g = decode.ghost_at(p.cfg, s.notes, int(verdicts[k, V_NOTES]), two_leaders=k == P_ELE1)
    w = SimpleNamespace(cfg=p.cfg, ghost=g)
    text = espec.ele1_expected(w) if k == P_ELE1 else espec.ele2_expected(w)
    if text is None:
        raise RuntimeError(f"fast world: the kernel found evidence for {PROPERTY_IDS[k]}'s expected cause, "
                           "spec/election.py does not (a twin bug: run the history on the reference)")
    lost = set(g.terms.term_lost)  # the voters with two candidates in a term that lost their term file
    who = tuple(sorted({v for (v, _), votes in g.terms.votes.items() if v in lost and len({x[0] for x in votes}) > 1}))
    return text, who


def measure(p: Prepared, s: State) -> dict:
    """spec.election.measure of the final world and the LeaderlessMeter's result."""
    w = s.world
    now = int(w[W_NOW])
    calm = w[W_CALM] == 1
    settled = int(w[W_SETTLED])
    since = int(w[W_LEADERLESS_SINCE])
    return {
        "settle_ms": settled - int(w[W_CALM_AT]) if calm and settled >= 0 else None,
        "elections": int(sum(bin(int(x)).count("1") for x in s.elected[:int(w[W_TOP_TERM]) + 1])),
        "max_term": int(s.members[:, CURR_TERM].max()),
        "crashes": int(w[W_CRASHES]),
        "leaderless_ms": int(w[W_LEADERLESS_MS]) + (now - since if since >= 0 else 0),
        "leader_losses": int(w[W_LEADER_LOSSES]),
    }


def result(p: Prepared, s: State, seconds: float, strict: bool) -> FastResult:
    w = s.world
    code = int(w[W_STOP])
    steps = int(w[W_STEPS])
    violations = []
    for k, pid in enumerate(PROPERTY_IDS):
        if s.verdicts[k, V_STEP] >= 0:
            expected, who = cause(p, s, k)
            violations.append(FastViolation(property=pid, step=int(s.verdicts[k, V_STEP]),
                                            t_ms=int(s.verdicts[k, V_TIME]), expected=expected, who=who))
    violations.sort(key=lambda v: (v.step, v.property))
    faults_seen = {name: int(w[W_FAULT_COUNTS + k]) for k, name in enumerate(FAULT_NAMES) if w[W_FAULT_COUNTS + k]}
    stopped = STOP_NAMES.get(code) or f"overflow:{OVERFLOW_NAMES.get(code, code)}"
    log = s.event_log[:int(w[W_LOGGED])].copy() if p.config[C_WRITE_LOG] == 1 else None
    r = FastResult(steps=steps, t_ms=int(w[W_NOW]), stopped=stopped, violations=violations, stats=measure(p, s),
                   faults=faults_seen, log=log, prepared=p, state=s, seconds=seconds, world_of=decode.world,
                   coverage=coverage.of(world_observe.spec(p.cfg), s))
    if code < 0 and strict:
        raise CapacityError(OVERFLOW_NAMES.get(code, str(code)), steps, r)
    return r


# Arrays by shape (nodes, capacities), shared by the Runners of every config of that shape in
# this process: a fuzz run draws a config per history, and allocating the arrays cost more
# than a history; reset() rebuilds all a history reads.
_STATES: dict[tuple, State] = {}


class Runner:
    """Many histories of one config on one set of arrays (reset in place between them): the
    fast path for fuzzing and benchmarks. Runners of configs of one shape share the arrays (a
    run resets them whole). Its results carry no state (`world()` needs `run_history`), and a
    capacity overflow is reported as stopped="overflow:..."."""

    def __init__(self, cfg, *, flight: int = DEFAULT_FLIGHT, rpcs: int = DEFAULT_RPCS,
                 terms: int = DEFAULT_TERMS, mutant: str | None = None) -> None:
        self.p = prepare(cfg, terms=terms, mutant=mutant)
        shape = (int(self.p.config[C_PEERS]), flight, rpcs, terms)
        self.s = _STATES.get(shape)
        if self.s is None:
            if len(_STATES) > 8:
                _STATES.clear()
            self.s = _STATES[shape] = new_state(self.p, flight=flight, rpcs=rpcs)

    def run(self, seed: Any, steps: int, until_ms: int | None = None) -> FastResult:
        reset(self.p, self.s, seed)
        t0 = time.process_time()
        run_kernel(self.p, self.s, steps, until_ms)
        r = result(self.p, self.s, time.process_time() - t0, strict=False)
        r.state = None
        return r


def compile_seconds() -> float:
    """Wall time to get the kernel ready in this process (compile, or load from the cache)."""
    cfg = election_world.make_config(3).evolve(profile=faults.profile("standard", "election"))
    t0 = time.perf_counter()
    run_history(cfg, 0, 10)
    return time.perf_counter() - t0
