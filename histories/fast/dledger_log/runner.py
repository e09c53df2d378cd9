"""Running the dledger_log twin from Python: prepare a configuration, reset per seed, run, collect the result.

`prepare` checks the configuration is one the twin supports and lays out its config table; `Runner` keeps a
compiled state table for one shape of configuration and is reused across histories (fuzzing, exploring);
`run_history` is the one-call form. `run_kernel` resumes the kernel after each pause for a cause question."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import attrs
import numpy as np

from histories.fast.core import coverage
from histories.fast.core import layout as core_layout
from histories.fast.core import mt as core_mt
from histories.fast.core.layout import (
    C_NODES,
    C_WRITE_LOG,
    FAULT_NAMES,
    STOP_NAMES,
    W_CALM,
    W_CALM_AT,
    W_CRASHES,
    W_FAULT_COUNTS,
    W_LOGGED,
    W_NOW,
    W_PAUSE,
    W_STEPS,
    W_STOP,
)
from histories.fast.core.results import (
    CapacityError,
    FastResult,
    FastViolation,
    Unsupported,
)
from histories.fast.core.table import State
from histories.fast.dledger_log import causes, decode, layout, world, world_observe
from histories.fast.dledger_log.layout import (
    C_ASTRAY_BOUND_MS,
    C_BODY_LENGTH,
    C_CHECK_FAST_FORWARD_INTERVAL_MS,
    C_CHECK_POINT_INTERVAL,
    C_CLIENT_INTERVAL_MS,
    C_CLIENTS,
    C_COMMIT_PUSH_INTERVAL_MS,
    C_COMPARE_QUEUE_CAPACITY,
    C_CURRENT_TERM_COMMIT,
    C_DISPATCHER_ERROR_SLEEP_MS,
    C_DISPATCHER_MAX_PENDING_SIZE,
    C_FAST_ADVANCE_COMMIT_INDEX,
    C_FLUSH_FILE_INTERVAL,
    C_FORCED_LEADER,
    C_FRESH_COMPARE,
    C_LEAK_CHECK_INTERVAL_MS,
    C_LIVE1_BOUND_MS,
    C_LIVE2_BOUND_MS,
    C_LIVE3_BOUND_MS,
    C_MAPPED_FILE_SIZE_FOR_ENTRY_DATA,
    C_MAX_PENDING_REQUESTS_NUM,
    C_MAX_PUSH_TIME_OUT_MS,
    C_MAX_WAIT_ACK_TIME_MS,
    C_ORDERED_PUSHES,
    C_PUSH_FUTURE_TIMEOUT_MS,
    C_PUSH_WAIT_MS,
    C_THREAD_WAIT_MS,
    C_V026,
    CAUSE_NONE,
    CAUSE_REQUEST_COLUMNS,
    CLIENT_COLUMNS,
    CODE_SLOTS,
    CONFIG_COLUMNS,
    DISPATCHER_COLUMNS,
    DROP_COLUMNS,
    ENTRY_COLUMNS,
    ENVELOPE_COLUMNS,
    HANDLER_COLUMNS,
    K_LEADER_PARTITION,
    MESSAGE_FIELDS,
    OUTPUT_COLUMNS,
    OVERFLOW_NAMES,
    PENDING_COLUMNS,
    PROPERTIES,
    PROPERTY_IDS,
    PUSH_WAIT_COLUMNS,
    PUSHER_COLUMNS,
    STORE_CHANGE_COLUMNS,
    STORE_COLUMNS,
    THIN_COLUMNS,
    V_CAUSE,
    V_STEP,
    V_TIME,
    VERDICT_COLUMNS,
    W_APPENDS,
    W_COMMITTED,
    W_COUNTED,
    W_FIRST_ACK,
    W_LEADER_PARTITIONS,
    WORLD_COLUMNS,
)
from histories.fast.election import layout as election_layout
from histories.fast.election import runner as election_runner
from histories.fast.election.layout import (
    C_PEERS,
    CURR_TERM,
    MEMBER_COLUMNS,
)
from reference_impl.core import faults
from reference_impl.dledger_log import world as log_world
from reference_impl.election import records as el
from spec import election as espec

MAX_MASK_NODES = 62  # node sets are int64 bit masks
DEFAULT_ENTRIES = 4096  # log indexes (entries per log, and every index-keyed table)
DEFAULT_FLIGHT = 8192  # a leader catching a follower up pushes up to dispatcher_max_pending_size at once
DEFAULT_RPCS = 8192
DEFAULT_TERMS = 4096
DEFAULT_MARKS = 64  # water-mark terms per pusher
DEFAULT_PENDING = 4096  # pending appends per pusher (and their terms)
DEFAULT_QUEUE = 1024  # entry handler's queue of COMPARE / TRUNCATE / COMMIT requests
DEFAULT_SETS = 8  # different entries acknowledged (or committed later) at one index
DEFAULT_HISTORY = 4096  # ghost history rows: drops (x16 their entries), votes (x4), leaderships, lost term files
DEFAULT_OUTPUTS = 16384  # outputs of one transition
DEFAULT_LOG = 1 << 20  # events the log holds at most (log=True); more overflow loudly
CODE_NAMES = {int(c): c.name for c in el.Code}


@attrs.frozen
class Prepared:
    """A WorldConfig as the kernel's config arrays."""

    cfg: Any
    config: np.ndarray
    weights: np.ndarray
    preferred: np.ndarray  # the preferred leaders' indexes, in the config's order
    self_preferred: np.ndarray
    isolations: np.ndarray  # each of core.isolations(nodes), as the mask of its minority
    isolation_groups: tuple
    down: int  # bit mask of the nodes not started at time 0
    caps: tuple  # (entries, flight, rpcs, terms, marks, pending, queue, sets, history, outputs)
    mutant: int | None  # a test mutant's number (election.mutants), None in production


_PREPARED: dict[tuple, Prepared] = {}

_INT_FIELDS = ("max_pending_requests_num", "max_wait_ack_time_ms", "max_push_time_out_ms",
               "mapped_file_size_for_entry_data", "flush_file_interval", "check_point_interval",
               "dispatcher_max_pending_size", "dispatcher_error_sleep_ms", "commit_push_interval_ms",
               "leak_check_interval_ms", "check_fast_forward_interval_ms", "push_future_timeout_ms")


def log_columns(config: np.ndarray, cfg, ids: tuple) -> None:
    """The config columns of the log, its threads and the clients (LogConfig, the world's)."""
    world_config = cfg.proto
    log_config = world_config.node.log
    config[C_CLIENTS] = world_config.clients
    config[C_CLIENT_INTERVAL_MS] = world_config.client_interval_ms
    config[C_BODY_LENGTH] = max(world_config.body_size, 1)
    config[C_FORCED_LEADER] = -1 if world_config.forced_leader is None else ids.index(world_config.forced_leader)
    config[C_V026] = 1 if log_config.v026 else 0
    config[C_CURRENT_TERM_COMMIT] = 1 if log_config.current_term_commit else 0
    config[C_FRESH_COMPARE] = 1 if log_config.fresh_compare else 0
    config[C_ORDERED_PUSHES] = 1 if log_config.ordered_pushes else 0
    config[C_COMPARE_QUEUE_CAPACITY] = log_config.compare_queue_capacity
    config[C_FAST_ADVANCE_COMMIT_INDEX] = 1 if log_config.enable_fast_advance_commit_index else 0
    config[C_MAX_PENDING_REQUESTS_NUM] = log_config.max_pending_requests_num
    config[C_MAX_WAIT_ACK_TIME_MS] = log_config.max_wait_ack_time_ms
    config[C_MAX_PUSH_TIME_OUT_MS] = log_config.max_push_time_out_ms
    config[C_MAPPED_FILE_SIZE_FOR_ENTRY_DATA] = log_config.mapped_file_size_for_entry_data
    config[C_FLUSH_FILE_INTERVAL] = log_config.flush_file_interval
    config[C_CHECK_POINT_INTERVAL] = log_config.check_point_interval
    config[C_DISPATCHER_MAX_PENDING_SIZE] = log_config.dispatcher_max_pending_size
    config[C_DISPATCHER_ERROR_SLEEP_MS] = log_config.dispatcher_error_sleep_ms
    config[C_COMMIT_PUSH_INTERVAL_MS] = log_config.commit_push_interval_ms
    config[C_LEAK_CHECK_INTERVAL_MS] = log_config.leak_check_interval_ms
    config[C_CHECK_FAST_FORWARD_INTERVAL_MS] = log_config.check_fast_forward_interval_ms
    config[C_PUSH_FUTURE_TIMEOUT_MS] = log_config.push_future_timeout_ms
    config[C_PUSH_WAIT_MS] = log_config.push_wait_ms
    config[C_THREAD_WAIT_MS] = log_config.thread_wait_ms
    # the liveness bounds, as spec/election.py states them (spec/bounds.py's defaults and the overrides)
    shim = SimpleNamespace(cfg=cfg)
    for k, bound in ((C_LIVE1_BOUND_MS, espec.live1_bound_ms), (C_LIVE2_BOUND_MS, espec.live2_bound_ms),
                     (C_LIVE3_BOUND_MS, espec.live3_bound_ms), (C_ASTRAY_BOUND_MS, espec.astray_bound_ms)):
        bound_ms = bound(shim)
        if not 0 <= bound_ms < 1 << 40:
            raise Unsupported(f"a property bound of {bound_ms} ms is outside the twin's range")
        config[k] = bound_ms


def prepare(cfg, *, entries: int = DEFAULT_ENTRIES, flight: int = DEFAULT_FLIGHT, rpcs: int = DEFAULT_RPCS,
            terms: int = DEFAULT_TERMS, marks: int = DEFAULT_MARKS, pending: int = DEFAULT_PENDING,
            queue: int = DEFAULT_QUEUE, sets: int = DEFAULT_SETS, oslost: int = DEFAULT_HISTORY,
            outs: int = DEFAULT_OUTPUTS, log: bool = False, mutant: str | None = None) -> Prepared:
    """Check that the twin models `cfg` (raise Unsupported otherwise) and build its arrays.
    `mutant`: a histories/mutants/election.py function name (test-only broken
    election members, installed in the reference's election modules by the tests). `oslost`
    (rows of the ghost's history) and `outs` (outputs of one transition) keep their old names."""
    caps = (entries, flight, rpcs, terms, marks, pending, queue, sets, oslost, outs)
    key = (id(cfg), caps, log, mutant)
    hit = _PREPARED.get(key)
    if hit is not None and hit.cfg is cfg:
        return hit
    if cfg.protocol != "dledger_log":
        raise Unsupported(f"this fast twin models the dledger_log protocol, not {cfg.protocol!r}")
    if cfg.script:
        raise Unsupported("scenario scripts are not modelled by the fast twin")
    profile = cfg.profile
    partition_weight = 0.0
    for kind, weight in profile.ext:
        if kind != "leader_partition" and weight:
            raise Unsupported(f"the protocol-specific fault kind {kind!r} is not modelled")
        if kind == "leader_partition":
            partition_weight = float(weight)
    dledger = cfg.proto.node.dledger
    log_config = cfg.proto.node.log
    n = len(dledger.peers)
    ids = tuple(cfg.ids)
    nodes = len(ids)
    if not 1 <= nodes <= MAX_MASK_NODES:
        raise Unsupported(f"the fast twin takes 1..{MAX_MASK_NODES} nodes, not {nodes}")
    if ids[:n] != tuple(dledger.peers) or ids[n:] != tuple(f"c{k}" for k in range(nodes - n)):
        raise Unsupported("the nodes must be the DLedger peers, in order, then clients c0..")
    if ids[:n] != tuple(f"n{k}" for k in range(n)):
        raise Unsupported("the DLedger peers must be n0..n{k} (dledger_log.world.make_config)")
    if min(caps) < 2:
        raise ValueError("every capacity must be >= 2")
    config = np.zeros(CONFIG_COLUMNS, np.int64)
    election_runner.core_columns(config, profile, nodes, cfg.crashable, log)
    election_runner.member_columns(config, dledger, n, terms)
    log_columns(config, cfg, ids)
    if log_config.mapped_file_size_for_entry_data <= 0:
        raise Unsupported("mapped_file_size_for_entry_data must be positive")
    numbers = {f.name: getattr(dledger, f.name) for f in dledger.__attrs_attrs__
               if isinstance(getattr(dledger, f.name), int) and not isinstance(getattr(dledger, f.name), bool)}
    numbers |= {name: getattr(log_config, name) for name in _INT_FIELDS}
    numbers |= {"delay_ms": max(profile.delay_ms), "calm_at_ms": profile.calm_at_ms or 0,
                "stagger_ms": profile.stagger_ms, "client_interval_ms": cfg.proto.client_interval_ms,
                "body_size": cfg.proto.body_size}
    election_runner.check_range(numbers, 1 << 40)
    preferred = dledger.preferred()
    groups, masks = election_runner.isolations_of(nodes)
    p = Prepared(cfg=cfg, config=config, weights=election_runner.weights_of(profile, (partition_weight,)),
                 preferred=np.array([ids.index(x) for x in preferred if x in dledger.peers], np.int64),
                 self_preferred=np.array([1 if node_id in preferred else 0 for node_id in ids[:n]], np.int64),
                 isolations=masks, isolation_groups=groups, down=sum(1 << i for i in set(cfg.down) if 0 <= i < nodes),
                 caps=caps, mutant=election_runner.mutant_number(mutant))
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
    s.put(election_layout.PREFERRED, "preferred", p.preferred)
    s.put(election_layout.SELF_PREFERRED, "self_preferred", p.self_preferred)
    s.put(core_layout.LABELS, "labels", world_observe.spec(p.cfg).labels)
    s.prepared = p


def new_state(p: Prepared, log_cap: int = 0) -> State:
    """The arrays of a history of `p`'s shape (servers, nodes, capacities)."""
    n = int(p.config[C_PEERS])
    nodes = int(p.config[C_NODES])
    entries, flight, rpcs, terms, marks, pending, queue, sets, history, outputs = p.caps
    i64 = np.int64
    s = State(layout.SLOTS)
    election_runner.core_arrays(s, nodes, flight, rpcs, log_cap, 1 + nodes + flight + rpcs,
                                max(flight, nodes * nodes + 64), K_LEADER_PARTITION + 1, outputs + 1, OUTPUT_COLUMNS,
                                ENVELOPE_COLUMNS, PROPERTIES, VERDICT_COLUMNS, WORLD_COLUMNS)
    put = s.put
    put(election_layout.MEMBERS, "members", np.zeros((n, MEMBER_COLUMNS), i64))
    put(election_layout.PEERS_LIVE, "peers_live", np.full((n, n), -1, i64))
    put(election_layout.WATER_MARKS, "water_marks", np.full((n, n + 1), -1, i64))
    put(layout.STORE, "store", np.zeros((n, STORE_COLUMNS), i64))
    put(layout.ENTRIES, "entries", np.zeros((n, entries, ENTRY_COLUMNS), i64))
    put(layout.PUSHER, "pusher", np.zeros((n, PUSHER_COLUMNS), i64))
    put(layout.WATER_MARK_TERMS, "water_mark_terms", np.zeros((n, marks, 1 + n), i64))
    put(layout.PENDING_TERMS, "pending_terms", np.zeros((n, pending), i64))
    put(layout.PENDING, "pending", np.zeros((n, pending, PENDING_COLUMNS), i64))
    put(layout.DISPATCHERS, "dispatchers", np.zeros((n, n, DISPATCHER_COLUMNS), i64))
    put(layout.PENDING_MAPS, "pending_maps", np.full((n, n, entries), -1, i64))
    put(layout.HANDLER, "handler", np.zeros((n, HANDLER_COLUMNS), i64))
    put(layout.WRITE_REQUESTS, "write_requests", np.zeros((n, entries, PUSH_WAIT_COLUMNS), i64))
    put(layout.HANDLER_QUEUE, "handler_queue", np.zeros((n, queue, PUSH_WAIT_COLUMNS), i64))
    put(layout.LAST_SEQS, "last_seqs", np.zeros((n, n, 3), i64))
    put(layout.CLIENTS, "clients", np.zeros((max(nodes - n, 1), CLIENT_COLUMNS), i64))
    put(layout.STORE_CHANGES, "store_changes", np.zeros((n, STORE_CHANGE_COLUMNS), i64))
    put(layout.SAVED_ENTRIES, "saved_entries", np.zeros((n, entries, ENTRY_COLUMNS), i64))
    put(layout.ROLLBACK, "rollback", np.zeros(DISPATCHER_COLUMNS, i64))
    put(layout.ELECTED, "elected", np.zeros(terms, i64))
    put(layout.REGRESSED, "regressed", np.full(terms, -1, i64))
    put(layout.COMMITTED, "committed", np.zeros((entries, 5), i64))
    put(layout.COMMITTED_ORDER, "committed_order", np.zeros(entries, i64))
    put(layout.CONFLICTS, "conflicts", np.zeros((entries, sets, 4), i64))
    put(layout.CONFLICT_COUNTS, "conflict_counts", np.zeros(entries, i64))
    put(layout.CONFLICT_ORDER, "conflict_order", np.zeros(entries, i64))
    put(layout.ACKED, "acked", np.zeros((entries, sets, 4), i64))
    put(layout.ACKED_COUNTS, "acked_counts", np.zeros(entries, i64))
    put(layout.ACKED_ORDER, "acked_order", np.zeros(entries, i64))
    put(layout.COUNTED_COUNTS, "counted_counts", np.zeros(entries, i64))
    put(layout.DROPS, "drops", np.zeros((history, DROP_COLUMNS), i64))
    put(layout.RESULTS, "results", np.zeros(CODE_SLOTS, i64))
    put(layout.DROPPED_ENTRIES, "dropped_entries", np.zeros((16 * history, 4), i64))
    put(layout.THIN, "thin", np.zeros((entries, THIN_COLUMNS), i64))
    put(layout.THIN_ORDER, "thin_order", np.zeros(entries, i64))
    put(layout.VOTES, "votes", np.zeros((4 * history, 5), i64))
    put(layout.LEADERSHIPS, "leaderships", np.zeros((history, 5), i64))
    put(layout.TERMS_LOST, "terms_lost", np.zeros((history, 4), i64))
    put(layout.LIVENESS, "liveness", np.full((n, 2), -1, i64))
    put(layout.CAUSE_REQUESTS, "cause_requests", np.zeros((PROPERTIES, CAUSE_REQUEST_COLUMNS), i64))
    put(layout.MEMBER_BEFORE, "member_before", np.zeros(MEMBER_COLUMNS, i64))
    put(layout.COUNTED, "counted", np.zeros((entries, sets, 4), i64))
    put(layout.COUNTED_ORDER, "counted_order", np.zeros(entries, i64))
    put(layout.CONFLICT_TERMS, "conflict_terms", np.zeros(entries, i64))
    put(layout.LOG_PAIRS, "log_pairs", np.full((n, n), -1, i64))
    put(layout.CAUSE_CACHE, "cause_cache", np.zeros(16, i64))
    put(layout.COMMIT_BEFORE, "commit_before", np.zeros(n, i64))
    put(layout.ALIVE_BEFORE, "alive_before", np.zeros(n, i64))
    put(layout.NEW_LEADERS, "new_leaders", np.zeros(64, i64))
    put(layout.REPLY_FIELDS, "reply_fields", np.zeros(MESSAGE_FIELDS, i64))
    put(layout.MESSAGE, "message", np.zeros(MESSAGE_FIELDS, i64))
    put(layout.LOG_SUMS, "log_sums", np.zeros((n, entries + 2), i64))
    put(layout.THREAD_WAKES, "thread_wakes", np.full((nodes, n + 3), -1, i64))
    put(layout.THREAD_SINCE, "thread_since", np.zeros((nodes, n + 3), i64))
    put(layout.THREAD_SLACK, "thread_slack", np.zeros((nodes, n + 3), i64))
    s.texts = {}  # property index -> the expected cause recorded in its verdict (causes)
    s.memo = {}  # the ghost's tables decoded so far in this history (decode)
    use(p, s)
    return s


def reset(p: Prepared, s: State, seed: Any) -> None:
    """core.world.init and SeededChooser(seed) over `s` (fresh, or left by an earlier history)."""
    use(p, s)
    world.reset(s.table, p.down)
    s.texts.clear()
    s.memo.clear()
    core_mt.seed_into(s.mt, seed)


def run_kernel(p: Prepared, s: State, steps: int, until_ms: int | None) -> None:
    """The kernel to the end of the history; where it pauses, the expected causes it asked for
    are computed here (causes) and it goes on."""
    until = -1 if until_ms is None else int(until_ms)
    mutant = None if p.mutant is None else np.int64(p.mutant)
    while True:
        if mutant is None:  # the production kernel: the mutants' seams compiled out
            world.run(s.table, int(steps), until, None)
        else:
            world.run(s.table, int(steps), until, mutant)
        if s.world[W_PAUSE] != 1:
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
    s = new_state(p, log_cap=min(steps, log_cap) if log else 0)
    reset(p, s, seed)
    t0 = time.process_time()
    run_kernel(p, s, steps, until_ms)
    return result(p, s, time.process_time() - t0, strict)


def result(p: Prepared, s: State, seconds: float, strict: bool) -> FastResult:
    w = s.world
    code = int(w[W_STOP])
    steps = int(w[W_STEPS])
    violations = []
    for k, pid in enumerate(PROPERTY_IDS):
        row = s.verdicts[k]
        if row[V_STEP] >= 0:
            expected = s.texts.get(k) if row[V_CAUSE] != CAUSE_NONE else None
            violations.append(FastViolation(property=pid, step=int(row[V_STEP]), t_ms=int(row[V_TIME]),
                                            expected=expected, who=()))
    violations.sort(key=lambda v: (v.step, v.property))
    stopped = STOP_NAMES.get(code) or f"overflow:{OVERFLOW_NAMES.get(code, code)}"
    log = s.event_log[:int(w[W_LOGGED])].copy() if p.config[C_WRITE_LOG] == 1 else None
    faults_seen = {name: int(w[W_FAULT_COUNTS + k]) for k, name in enumerate(FAULT_NAMES) if w[W_FAULT_COUNTS + k]}
    if w[W_LEADER_PARTITIONS]:
        faults_seen["leader_partition"] = int(w[W_LEADER_PARTITIONS])
    r = FastResult(steps=steps, t_ms=int(w[W_NOW]), stopped=stopped, violations=violations, stats=measure(p, s),
                   faults=faults_seen, log=log, prepared=p, state=s, seconds=seconds, world_of=decode.world,
                   coverage=coverage.of(world_observe.spec(p.cfg), s))
    if code < 0 and strict:
        raise CapacityError(OVERFLOW_NAMES.get(code, str(code)), steps, r)
    return r


def measure(p: Prepared, s: State) -> dict:
    """spec.dledger_log.measure of the final world."""
    w = s.world
    results = s.results
    calm = w[W_CALM] == 1
    first = int(w[W_FIRST_ACK])
    return {
        "appends": int(w[W_APPENDS]),
        "results": {CODE_NAMES[c]: int(results[c]) for c in sorted(CODE_NAMES, key=lambda c: CODE_NAMES[c])
                    if 0 <= c < len(results) and results[c]},
        "committed": int(w[W_COMMITTED]),
        "counted_commits": int(w[W_COUNTED]),
        "ack_after_calm_ms": first - int(w[W_CALM_AT]) if calm and first >= 0 else None,
        "max_term": int(s.members[:, CURR_TERM].max()),
        "crashes": int(w[W_CRASHES]),
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
        shape = (int(self.p.config[C_PEERS]), int(self.p.config[C_NODES]), self.p.caps)
        self.s = _STATES.get(shape)
        if self.s is None:
            if len(_STATES) > 8:
                _STATES.clear()
            self.s = _STATES[shape] = new_state(self.p)

    def run(self, seed: Any, steps: int, until_ms: int | None = None) -> FastResult:
        reset(self.p, self.s, seed)
        t0 = time.process_time()
        run_kernel(self.p, self.s, steps, until_ms)
        r = result(self.p, self.s, time.process_time() - t0, strict=False)
        r.state = None
        return r


def compile_seconds() -> float:
    """Wall time to get the kernel ready in this process (compile, or load from the cache)."""
    cfg = log_world.make_config(3).evolve(profile=faults.profile("standard", "dledger_log"))
    t0 = time.perf_counter()
    run_history(cfg, 0, 10)
    return time.perf_counter() - t0
