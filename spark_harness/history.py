"""One fuzz history as a pure function: `run_history(spec) -> summary`.

A history is (protocol, fault profile, number of nodes, config overrides, seed, step
budget); the overrides hold what its variant chose (spark_harness/variants.py), and the
row names it (`variant`: axis -> value, `config`: the overrides as JSON). It runs with histories.runner semantics (the seeded chooser, every property of
the protocol checked at every step) and ends `tail_ms` after the fault profile's quiet
tail begins (a profile without one, `none`, runs as long as the shared profiles:
faults.CALM_AT_MS + tail_ms), or at its step budget if that comes first. The default
budget is only a safety cap: worlds differ a lot in events per simulated second
(election a few hundred a minute, nameserver thousands), and a history cut off before
its quiet tail ends measures no recovery (the report counts them under `stopped`). The summary is a flat dict of JSON-able values
(the per-history row of the fuzz report): violations with the step of each, fault
counts, the protocol's measured quantities (its `measure` of the last state and, if
it has one, its step `meter`: spec.properties.meter), coverage (spark_harness.coverage) and
distinct observable states (spark_harness.sketch).

The same function serves a Spark task, a multiprocessing worker and `--master none`;
nothing in it reads a clock, so equal specs give equal summaries in any process.

`run_history_fast(spec, sample)` gives the same summary from the protocol's fast world
(histories.fast) where one exists, coverage and the distinct-state sketch included (the
twin computes them over every history, with the fingerprints below). The reference
judges: a history whose fast run violates a property unexpectedly, or is in the plan's
judged sample (spark_harness.plan, `judge`), is re-run through the reference up to its
last violation, whose verdicts are the ones kept (with expected causes and details), and
the two must agree; a history in the optional cross-check sample (`--coverage-sample`) is
run whole by the reference, which must agree on coverage and states too. Rows say which
world made them (`engine`): "reference", "fast", "both" (the reference re-ran it and the
fast world agreed) or "mismatch" (they disagreed; the reference's row is kept and the
fuzz run reports it as a finding).
"""

from __future__ import annotations

import enum
import json
from collections import Counter
from typing import Any

import attrs

from histories import fast, runner
from reference_impl import core
from reference_impl.core import chooser, faults
from reference_impl.core.state import thaw
from spark_harness import coverage, sketch
from spec import properties as props

DEFAULT_STEPS = 50_000  # a safety cap; histories normally end tail_ms after their faults stop
TAIL_MS = 60_000  # how long a history runs on after its faults stop, to measure recovery
FAULT_KINDS = ("drop", "duplicate", "crash", "os_crash", "disk_loss", "restart", "partition", "cut", "heal")


@attrs.frozen(kw_only=True)
class HistorySpec:
    protocol: str
    profile: str
    nodes: int
    seed: int
    steps: int = DEFAULT_STEPS
    tail_ms: int = TAIL_MS
    overrides: tuple = ()  # config overrides (the user's and the variant's), as sorted (key, value) pairs
    label: tuple = ()  # what varied (spark_harness/variants.py), as sorted (axis, value) pairs


_CONFIGS: dict[tuple, core.WorldConfig] = {}


def world_config(protocol: str, profile: str, nodes: int, overrides: tuple = ()) -> core.WorldConfig:
    key = (protocol, profile, nodes, overrides)
    cfg = _CONFIGS.get(key)
    if cfg is None:
        if len(_CONFIGS) > 4096:  # variants make many distinct configs; keep the memo bounded
            _CONFIGS.clear()
        cfg = _CONFIGS[key] = core.world_config(protocol, nodes, profile, dict(overrides))
    return cfg


def config_of(spec: HistorySpec) -> core.WorldConfig:
    return world_config(spec.protocol, spec.profile, spec.nodes, spec.overrides)


def until_ms(cfg: core.WorldConfig, tail_ms: int = TAIL_MS) -> int:
    calm_at = cfg.profile.calm_at_ms
    return (calm_at if calm_at is not None else faults.CALM_AT_MS) + tail_ms


_CODES: dict[str, dict[int, str]] = {}


def _code_labels(protocol: str) -> dict[int, str]:
    codes = _CODES.get(protocol)
    if codes is None:
        codes = _CODES[protocol] = coverage.code_labels(protocol)
    return codes


class Probe:
    """A step hook recording coverage, fault counts and distinct observable states."""

    def __init__(self, cfg: core.WorldConfig) -> None:
        self.actions: set[tuple[str, str]] = set()
        self.branches: set[str] = set()
        self.kinds: set[str] = set()
        self.faults: Counter = Counter()
        self.states: set[int] = set()
        self._fp = sketch.StateFingerprints(cfg)
        self._codes = _code_labels(cfg.protocol)
        # The protocol's own fault kinds (FaultProfile.ext, e.g. HA's conn_drop) arrive as
        # `ext:<Type>` events; which types are faults is learnt from Protocol.ext_faults.
        self._ext_kinds = tuple(k for k, weight in cfg.profile.ext if weight)
        self._ext_faults = core.protocol(cfg.protocol).ext_faults
        self._ext_fault_of: dict[type, str | None] = {}

    def start(self, w: core.World) -> None:
        self.states.add(self._fp.changed(w))

    def __call__(self, i: int, before: core.World, ev: Any, after: core.World, obs: tuple) -> None:
        kind, node, msg = coverage.classify(before, ev)
        self.actions.add((kind, coverage.role_of(before, node)))
        if kind in FAULT_KINDS:
            self.faults[kind] += 1
        elif self._ext_kinds and kind.startswith("ext:"):
            t = type(ev)
            if t not in self._ext_fault_of:
                self._ext_fault_of[t] = next((k for k in self._ext_kinds if ev in self._ext_faults(before, k)), None)
            if self._ext_fault_of[t] is not None:
                self.faults[self._ext_fault_of[t]] += 1
        if msg is not None:
            self.kinds.add("msg:" + type(msg).__name__)
            coverage.codes_in(msg, self.branches, self._codes)
        for _, o in obs:
            self.kinds.add("obs:" + type(o).__name__)
            coverage.codes_in(o, self.branches, self._codes)
        if after.nodes is not before.nodes or after.alive is not before.alive or after.net.cut is not before.net.cut:
            fp = self._fp.changed(after)
            if fp is not None:
                self.states.add(fp)


def config_json(overrides: tuple) -> str:
    """A history's config overrides as `rmqspec simulate --config` takes them."""
    return json.dumps({k: thaw(v) for k, v in overrides}, sort_keys=True, separators=(",", ":"))


def numeric_stats(measures: dict) -> dict[str, float]:
    """The protocol's measured quantities that are numbers (None: not measured in this history)."""
    out = {}
    for k, v in measures.items():
        if isinstance(v, bool) or isinstance(v, (int, float)) and not isinstance(v, enum.Enum):
            out[k] = float(v)
    return out


def run_history(spec: HistorySpec) -> dict:
    """Run one seeded history and summarise it (see the module docstring)."""
    cfg = config_of(spec)
    probe = Probe(cfg)
    probe.start(core.init(cfg))
    meter = props.meter(cfg.protocol, cfg)
    result = runner.run(cfg, chooser.SeededChooser(spec.seed).choose, spec.steps, until_ms(cfg, spec.tail_ms),
                        hooks=(probe,) if meter is None else (probe, meter))
    measures = result.measures if meter is None else result.measures | meter.result(result.world)
    violations = sorted(result.violations, key=lambda v: (v.step, v.property))
    return {
        "protocol": spec.protocol, "profile": spec.profile, "nodes": spec.nodes, "seed": spec.seed,
        "variant": dict(spec.label), "config": config_json(spec.overrides),
        "steps": result.steps, "t_ms": result.world.now, "stopped": result.stopped,
        "violations": [{"property": v.property, "step": v.step, "t_ms": v.t_ms, "expected": v.expected,
                        "detail": v.detail[:500]} for v in violations],
        "unexpected": sum(v.expected is None for v in violations),
        "expected": sum(v.expected is not None for v in violations),
        "faults": {k: probe.faults[k] for k in sorted(probe.faults)},
        "stats": numeric_stats(measures),
        "actions": sorted(f"{k}@{r}" for k, r in probe.actions),
        "branches": sorted(probe.branches),
        "kinds": sorted(probe.kinds),
        "states": len(probe.states),
        "state_sketch": sketch.sparse(probe.states),
        "engine": "reference",
    }


# --- the fast world ---

AGREE_KEYS = ("steps", "t_ms", "stopped", "unexpected", "expected", "faults", "stats")
COVERAGE_KEYS = ("actions", "branches", "kinds", "states", "state_sketch")
_RUNNERS: dict[int, tuple] = {}  # id(config) -> (config, fast Runner); a Runner borrows its shape's arrays


def fast_runner(cfg: core.WorldConfig):
    """The fast world's runner for `cfg`, or None when the fast world does not model it (a
    drawn variant: a script, a protocol's own fault kind; spark_harness/variants.py)."""
    hit = _RUNNERS.get(id(cfg))
    if hit is None or hit[0] is not cfg:
        if len(_RUNNERS) > 4096:
            _RUNNERS.clear()
        try:
            runner_ = fast.Runner(cfg)
        except fast.Unsupported:
            runner_ = None
        hit = _RUNNERS[id(cfg)] = (cfg, runner_)
    return hit[1]


def fast_summary(spec: HistorySpec) -> dict | None:
    """The fast world's summary of a history, its coverage and distinct observable states
    included (violation details empty: the reference writes those when it judges), or None
    when the fast world does not model its config or a capacity of it overflowed (the
    reference runs it instead)."""
    cfg = config_of(spec)
    fr = fast_runner(cfg)
    if fr is None:
        return None
    r = fr.run(spec.seed, spec.steps, until_ms(cfg, spec.tail_ms))
    if r.overflow:
        return None
    c = r.coverage
    return {
        "protocol": spec.protocol, "profile": spec.profile, "nodes": spec.nodes, "seed": spec.seed,
        "variant": dict(spec.label), "config": config_json(spec.overrides),  # as the reference's row names them
        "steps": r.steps, "t_ms": r.t_ms, "stopped": r.stopped,
        "violations": [{"property": v.property, "step": v.step, "t_ms": v.t_ms, "expected": v.expected,
                        "detail": ""} for v in r.violations],
        "unexpected": sum(v.expected is None for v in r.violations),
        "expected": sum(v.expected is not None for v in r.violations),
        "faults": dict(sorted(r.faults.items())),
        "stats": numeric_stats(r.stats),
        "actions": c.actions, "branches": c.branches, "kinds": c.kinds, "states": c.states,
        "state_sketch": sketch.sparse(c.fingerprints),
        "engine": "fast",
    }


def agree(fast_row: dict, ref_row: dict) -> bool:
    """The fast world's summary says what the reference's does: verdicts, measures, fault
    counts, coverage and distinct states (all but the violations' details)."""
    key = lambda row: [(v["property"], v["step"], v["t_ms"], v["expected"]) for v in row["violations"]]
    return key(fast_row) == key(ref_row) and all(fast_row[k] == ref_row[k] for k in AGREE_KEYS + COVERAGE_KEYS)


def judge(spec: HistorySpec, twin: dict) -> dict:
    """The reference re-runs a history the fast world found violating, up to the step of
    its last violation: its verdicts (first violation of each property, expected or not,
    with the reference's cause and detail) replace the fast world's, and must equal them.
    Nothing after that step can change a recorded verdict but an unexpected violation,
    which the fast world would have reported too. The fast world's coverage stands."""
    cfg = config_of(spec)
    last = max(v["step"] for v in twin["violations"])
    result = runner.run(cfg, chooser.SeededChooser(spec.seed).choose, last, until_ms(cfg, spec.tail_ms))
    ref = [{"property": v.property, "step": v.step, "t_ms": v.t_ms, "expected": v.expected,
            "detail": v.detail[:500]} for v in sorted(result.violations, key=lambda v: (v.step, v.property))]
    key = lambda vs: [(v["property"], v["step"], v["t_ms"], v["expected"]) for v in vs]
    same = key(ref) == key(twin["violations"]) and result.steps == last
    return twin | {"violations": ref, "unexpected": sum(v["expected"] is None for v in ref),
                   "expected": sum(v["expected"] is not None for v in ref), "engine": "both" if same else "mismatch"}


def run_history_fast(spec: HistorySpec, sample: bool = False, judged: bool = True) -> dict:
    """The summary of one history from the fast world, judged by the reference (module
    docstring); `sample`: the history is in the cross-check sample (the reference runs it
    whole, its row is kept, and the fast world's must agree with it, coverage and distinct
    states included); `judged` False: the reference re-runs it only if the fast world finds
    an unexpected violation (spark_harness.plan)."""
    twin = fast_summary(spec)
    if twin is None:
        return run_history(spec)  # not modelled, or a capacity ran out: the reference's row alone
    if sample:
        ref = run_history(spec)
        return ref | {"engine": "both" if agree(twin, ref) else "mismatch"}
    return judge(spec, twin) if twin["violations"] and (judged or twin["unexpected"]) else twin
