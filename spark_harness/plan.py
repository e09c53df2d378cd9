"""The fuzz plan: which histories a run holds, and how they are cut into tasks.

History k (k = 0 .. histories-1) of protocol P has seed `seed + k`, fault profile
`profiles[k % len(profiles)]` and `nodes[(k // len(profiles)) % len(nodes)]` nodes, so
a plan names every history by arithmetic and a task needs only its seed range. Chunks
(Spark partitions, multiprocessing tasks) are contiguous ranges of k; how a plan is
chunked changes nothing in the results.

Each protocol runs on an engine: its fast world (histories.fast) when the plan asks for
`fast` and one models every config of the plan, else the reference. On the fast world
the first `coverage_sample` histories of each protocol (None: all) also run through the
reference, which alone computes coverage and the distinct-state sketch
(spark_harness.history.run_history_fast).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Iterator

import attrs

from histories import fast
from reference_impl import core
from reference_impl.core import faults
from spark_harness.history import DEFAULT_STEPS, TAIL_MS, HistorySpec, config_of, run_history, run_history_fast

MAX_CHUNK = 200  # histories per task at most: keeps tasks short enough to balance and to show progress
ENGINES = ("fast", "reference")
COVERAGE_SAMPLE = 200  # histories per protocol the reference runs for coverage on the fast engine


class PlanError(ValueError):
    """A plan that names an unknown protocol, profile or cluster size."""


@attrs.frozen(kw_only=True)
class Chunk:
    protocol: str
    start: int
    stop: int

    def __len__(self) -> int:
        return self.stop - self.start


@attrs.frozen(kw_only=True, hash=False)
class Plan:
    protocols: tuple[str, ...]
    histories: int  # per protocol
    seed: int = 1
    steps: int = DEFAULT_STEPS
    tail_ms: int = TAIL_MS
    profiles: dict = attrs.Factory(dict)  # protocol -> tuple of profile names
    nodes: dict = attrs.Factory(dict)  # protocol -> tuple of cluster sizes
    imports: tuple[str, ...] = ()  # modules that register extra protocols (imported in every task)
    overrides: tuple = ()  # protocol config overrides for every history, as sorted (key, value) pairs
    engine: str = "reference"  # what was asked for: "fast" (where a fast world exists) or "reference"
    engines: dict = attrs.Factory(dict)  # protocol -> the engine it runs on
    coverage_sample: int | None = None  # on the fast engine: the first N histories get coverage (None: all)

    def in_sample(self, k: int) -> bool:
        return self.coverage_sample is None or k < self.coverage_sample

    def spec(self, protocol: str, k: int) -> HistorySpec:
        profiles, nodes = self.profiles[protocol], self.nodes[protocol]
        return HistorySpec(protocol=protocol, profile=profiles[k % len(profiles)],
                           nodes=nodes[(k // len(profiles)) % len(nodes)], seed=self.seed + k,
                           steps=self.steps, tail_ms=self.tail_ms, overrides=self.overrides)

    def index_of(self, seed: int) -> int:
        return seed - self.seed

    @property
    def total(self) -> int:
        return self.histories * len(self.protocols)

    def chunks(self, parallelism: int) -> list[Chunk]:
        """About four chunks per core for each protocol, at most MAX_CHUNK histories each."""
        size = max(1, min(MAX_CHUNK, math.ceil(self.histories / (4 * max(1, parallelism)))))
        return [Chunk(protocol=p, start=a, stop=min(a + size, self.histories))
                for p in self.protocols for a in range(0, self.histories, size)]


def load_imports(modules: tuple[str, ...]) -> None:
    for name in modules:
        importlib.import_module(name)


def run_chunk(plan: Plan, chunk: Chunk) -> Iterator[dict]:
    """The summaries of a chunk's histories, one by one (a task's whole work)."""
    load_imports(plan.imports)
    on_fast = plan.engines.get(chunk.protocol) == "fast"
    for k in range(chunk.start, chunk.stop):
        spec = plan.spec(chunk.protocol, k)
        yield run_history_fast(spec, plan.in_sample(k)) if on_fast else run_history(spec)


def default_profiles(protocol: str) -> tuple[str, ...]:
    """Every profile of the protocol that injects faults, gentle to hostile: not `none`,
    nor profiles meant for scenario scripts that bring their own faults (`scripted`,
    `lockstep`)."""
    return tuple(name for name in faults.names(protocol) if faults.profile(name, protocol).any_faults())


def make_plan(protocol: str, histories: int, seed: int = 1, steps: int = DEFAULT_STEPS,
              profiles: list[str] | None = None, nodes: list[int] | None = None,
              imports: tuple[str, ...] = (), tail_ms: int = TAIL_MS, config: dict | None = None,
              engine: str = "fast", coverage_sample: int | None = COVERAGE_SAMPLE) -> Plan:
    """A plan for one protocol, a comma-separated list of them, or `all`; unknown names
    raise PlanError with the known ones. `engine` "fast" runs each protocol that has a
    fast world on it (module docstring)."""
    if engine not in ENGINES:
        raise PlanError(f"unknown engine {engine!r}; known: {', '.join(ENGINES)}")
    if coverage_sample is not None and coverage_sample < 0:
        raise PlanError("--coverage-sample must be 0 or more (or all)")
    load_imports(imports)
    known = core.protocol_names()
    names = [p.strip() for p in protocol.split(",") if p.strip()]
    protocols: tuple[str, ...] = ()
    for name in names:
        if name == "all":
            protocols += tuple(p for p in known if p not in protocols)
        elif name not in known:
            raise PlanError(f"unknown protocol {name!r}; known: {', '.join(known)}, all")
        elif name not in protocols:
            protocols += (name,)
    if not protocols:
        raise PlanError(f"no protocol named; known: {', '.join(known)}, all")
    config = dict(config or {})
    for key, value in config.items():
        if not isinstance(value, (str, int, float, bool)) and value is not None:
            raise PlanError(f"config value of {key!r} must be a string, number, boolean or null")
    overrides = tuple(sorted(config.items()))
    by_profile, by_nodes = {}, {}
    for p in protocols:
        proto = core.protocol(p)
        names = faults.names(p)
        chosen = tuple(names) if profiles == ["all"] else tuple(profiles) if profiles else default_profiles(p)
        for name in chosen:
            if name not in names:
                raise PlanError(f"unknown fault profile {name!r} for {p}; known: {', '.join(names)}, all")
        by_profile[p] = chosen
        by_nodes[p] = tuple(nodes) if nodes else tuple(proto.bench_nodes)
        for n in by_nodes[p]:
            if not 1 <= n <= 64:
                raise PlanError(f"cluster sizes must be 1..64, not {n}")
            try:
                proto.make_config(n, dict(config))
            except (ValueError, TypeError, KeyError) as e:
                raise PlanError(f"{p} cannot run with {n} nodes: {e}") from None
    if histories <= 0 or steps <= 0:
        raise PlanError("--histories and --steps must be positive")
    plan = Plan(protocols=protocols, histories=histories, seed=seed, steps=steps, tail_ms=tail_ms,
                profiles=by_profile, nodes=by_nodes, imports=tuple(imports), overrides=overrides, engine=engine,
                coverage_sample=coverage_sample)
    engines = {p: "fast" if engine == "fast" and _fast_runs_all(plan, p) else "reference" for p in protocols}
    return attrs.evolve(plan, engines=engines)


def _fast_runs_all(plan: Plan, protocol: str) -> bool:
    """Whether the protocol's fast world models every config of the plan."""
    combos = len(plan.profiles[protocol]) * len(plan.nodes[protocol])
    return all(fast.supports(config_of(plan.spec(protocol, k))) for k in range(min(plan.histories, combos)))
