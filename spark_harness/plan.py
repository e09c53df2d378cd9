"""The fuzz plan: which histories a run holds, and how they are cut into tasks.

History k (k = 0 .. histories-1) of protocol P, with p profiles, v version profiles
(RocketMQ 4.9.4's first, `fixed` among the others: spark_harness/variants.py) and
c = k mod (p * v), has seed `seed + k`, fault profile `profiles[c % p]`, version
`versions[(c % p + c // p) % v]` (a diagonal: any v consecutive histories run every
version, any p every profile, and p * v of them every pair) and `nodes[(k // (p * v))
% len(nodes)]` nodes; its configuration switches, swarm subset of fault kinds and
directed fault shape are drawn from its seed (variants.draw). So a plan names every
history by arithmetic and its seed, and a task needs only its seed range. Chunks
(Spark partitions, multiprocessing tasks) are contiguous ranges of k; how a plan is
chunked changes nothing in the results.

Each protocol runs on an engine: its fast world (histories.fast) when the plan asks for
`fast` and one models every config of the plan, else the reference. The fast world computes
coverage and the distinct-state sketch of every history itself, with the reference's
fingerprints; the first `coverage_sample` histories of each protocol (None: all; 0 by
default, property_tests/test_fast_coverage.py holds the twins to the reference on a
sample) also run whole through the reference, whose row must agree with the fast world's
(spark_harness.history.run_history_fast). The reference re-runs every history in which the
fast world found a violation (`judge` "all"), or (`judge` "sample") every one with an
unexpected violation and about 1 in JUDGE_EVERY of those whose violations are all expected,
chosen by a hash of k (k mod JUDGE_EVERY would follow the profile and version cycle and
judge only some of their pairs): the fast world's expected verdicts come from the spec's own
cause functions, and the sample keeps checking that its worlds are the reference's.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Iterator

import attrs

from histories import fast
from reference_impl import PROTOCOL_PACKAGES, core
from reference_impl.core import faults
from spark_harness import variants
from spark_harness.history import DEFAULT_STEPS, TAIL_MS, HistorySpec, run_history, run_history_fast

MAX_CHUNK = 200  # histories per task at most on the reference: keeps tasks short enough to balance and show progress
# On a fast world a history costs about a thousandth of the reference's: a task of 200 would be
# over before Spark had scheduled the next (about 10 ms a task, plus a Python worker's hand-off),
# so fast tasks hold at least FAST_MIN_CHUNK histories, at most FAST_MAX_CHUNK.
FAST_MIN_CHUNK = 500
FAST_MAX_CHUNK = 20_000
ENGINES = ("fast", "reference")
COVERAGE_SAMPLE = 0  # fast engine: histories per protocol the reference also runs whole, to cross-check coverage
JUDGES = ("all", "sample")
JUDGE_EVERY = 10  # judge "sample": 1 in this many of the histories whose violations are all expected


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
    overrides: tuple = ()  # the user's config overrides for every history, as sorted (key, value) pairs
    versions: dict = attrs.Factory(dict)  # protocol -> tuple of (label, overrides), cycled
    vary: bool = True  # draw switches, swarm subsets and shapes per history (variants.py)
    engine: str = "reference"  # what was asked for: "fast" (where a fast world exists) or "reference"
    engines: dict = attrs.Factory(dict)  # protocol -> the engine it runs on
    coverage_sample: int | None = None  # on the fast engine: the reference also runs the first N whole (None: all)
    judge: str = "sample"  # on the fast engine: "all" violating histories re-run by the reference, or a "sample"

    def in_sample(self, k: int) -> bool:
        return self.coverage_sample is None or k < self.coverage_sample

    def judged(self, k: int) -> bool:
        """The reference re-runs history k if the fast world finds any violation in it (with judge
        "sample", and only expected ones, if k is in the sample)."""
        return self.judge == "all" or in_judge_sample(k)


    def _axes(self, protocol: str, k: int) -> tuple[str, tuple, int]:
        profiles, versions, nodes = self.profiles[protocol], self.versions[protocol], self.nodes[protocol]
        p, v = len(profiles), len(versions)
        c = k % (p * v)  # a diagonal: the first v histories run every version, p * v every pair
        return profiles[c % p], versions[(c % p + c // p) % v], nodes[(k // (p * v)) % len(nodes)]

    def spec(self, protocol: str, k: int) -> HistorySpec:
        profile, version, nodes = self._axes(protocol, k)
        variant = variants.draw(protocol, faults.profile(profile, protocol), nodes, self.seed + k, version,
                                self.overrides, self.vary)
        return HistorySpec(protocol=protocol, profile=profile, nodes=nodes, seed=self.seed + k, steps=self.steps,
                           tail_ms=self.tail_ms, overrides=variant.overrides, label=variant.label)

    def universe_specs(self, protocol: str) -> list[HistorySpec]:
        """One history per (profile, version, cluster size) with no drawn variation: the
        configurations whose fault kinds and roles a coverage universe counts."""
        n = len(self.profiles[protocol]) * len(self.versions[protocol]) * len(self.nodes[protocol])
        out = []
        for k in range(n):
            profile, version, nodes = self._axes(protocol, k)
            over = tuple(sorted((dict(version[1]) | dict(self.overrides)).items()))
            out.append(HistorySpec(protocol=protocol, profile=profile, nodes=nodes, seed=self.seed + k,
                                   steps=self.steps, tail_ms=self.tail_ms, overrides=over))
        return out

    def index_of(self, seed: int) -> int:
        return seed - self.seed

    @property
    def total(self) -> int:
        return self.histories * len(self.protocols)

    def chunks(self, parallelism: int) -> list[Chunk]:
        """About four chunks per core for each protocol, at most MAX_CHUNK histories each on the
        reference; on a fast world FAST_MIN_CHUNK to FAST_MAX_CHUNK, but never fewer chunks than
        cores."""
        out = []
        cores = max(1, parallelism)
        for p in self.protocols:
            even = math.ceil(self.histories / (4 * cores))
            if self.engines.get(p) == "fast":
                least = min(FAST_MIN_CHUNK, math.ceil(self.histories / cores))
                size = max(1, min(FAST_MAX_CHUNK, max(least, even)))
            else:
                size = max(1, min(MAX_CHUNK, even))
            out += [Chunk(protocol=p, start=a, stop=min(a + size, self.histories)) for a in range(0, self.histories, size)]
        return out


def in_judge_sample(k: int) -> bool:
    """History k is in the judged sample: splitmix64 of k, mod JUDGE_EVERY, is 0."""
    z = (k + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return (z ^ (z >> 31)) % JUDGE_EVERY == 0


def load_imports(modules: tuple[str, ...]) -> None:
    for name in modules:
        importlib.import_module(name)


def run_chunk(plan: Plan, chunk: Chunk) -> Iterator[dict]:
    """The summaries of a chunk's histories, one by one (a task's whole work)."""
    load_imports(plan.imports)
    on_fast = plan.engines.get(chunk.protocol) == "fast"
    for k in range(chunk.start, chunk.stop):
        spec = plan.spec(chunk.protocol, k)
        yield run_history_fast(spec, plan.in_sample(k), plan.judged(k)) if on_fast else run_history(spec)


def default_profiles(protocol: str) -> tuple[str, ...]:
    """Every profile of the protocol that injects faults, gentle to hostile: not `none`,
    nor profiles meant for scenario scripts that bring their own faults (`scripted`,
    `lockstep`)."""
    return tuple(name for name in faults.names(protocol) if faults.profile(name, protocol).any_faults())


def make_plan(protocol: str, histories: int, seed: int = 1, steps: int = DEFAULT_STEPS,
              profiles: list[str] | None = None, nodes: list[int] | None = None,
              imports: tuple[str, ...] = (), tail_ms: int = TAIL_MS, config: dict | None = None,
              vary: bool = True, engine: str = "fast", coverage_sample: int | None = COVERAGE_SAMPLE,
              judge: str = "sample") -> Plan:
    """A plan for one protocol, a comma-separated list of them, or `all`; unknown names
    raise PlanError with the known ones. `vary` False runs every history with the
    protocol's defaults and the user's config (no version cycling, no drawn variation).
    `engine` "fast" runs each protocol that has a fast world on it (module docstring)."""
    if engine not in ENGINES:
        raise PlanError(f"unknown engine {engine!r}; known: {', '.join(ENGINES)}")
    if judge not in JUDGES:
        raise PlanError(f"unknown judge {judge!r}; known: {', '.join(JUDGES)}")
    if coverage_sample is not None and coverage_sample < 0:
        raise PlanError("--coverage-sample must be 0 or more (or all)")
    load_imports(imports)
    known = core.protocol_names()
    # `all` is the six protocols rmqspec ships: a protocol another module registered (an
    # --import, or a test's mutant protocol imported earlier in the same process) runs when
    # named, never because it happens to be registered.
    shipped = [p for p in known if p in PROTOCOL_PACKAGES]
    names = [p.strip() for p in protocol.split(",") if p.strip()]
    protocols: tuple[str, ...] = ()
    for name in names:
        if name == "all":
            protocols += tuple(p for p in shipped if p not in protocols)
        elif name not in known:
            raise PlanError(f"unknown protocol {name!r}; known: {', '.join(known)}, all")
        elif name not in protocols:
            protocols += (name,)
    if not protocols:
        raise PlanError(f"no protocol named; known: {', '.join(known)}, all")
    config = dict(config or {})
    for key, value in config.items():
        if isinstance(value, list) and all(isinstance(x, (str, int)) for x in value):
            continue  # e.g. fault_kinds, crashable, latency_fault_producers
        if not isinstance(value, (str, int, float, bool)) and value is not None:
            raise PlanError(f"config value of {key!r} must be a string, number, boolean, null or list")
    overrides = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in config.items()))
    by_profile, by_nodes, by_version = {}, {}, {}
    for p in protocols:
        proto = core.protocol(p)
        names = faults.names(p)
        chosen = tuple(names) if profiles == ["all"] else tuple(profiles) if profiles else default_profiles(p)
        for name in chosen:
            if name not in names:
                raise PlanError(f"unknown fault profile {name!r} for {p}; known: {', '.join(names)}, all")
        by_profile[p] = chosen
        by_nodes[p] = tuple(nodes) if nodes else tuple(proto.bench_nodes)
        by_version[p] = variants.versions(p, config, vary)
        for n in by_nodes[p]:
            if not 1 <= n <= 64:
                raise PlanError(f"cluster sizes must be 1..64, not {n}")
            for _, version in by_version[p]:
                try:
                    core.world_config(p, n, chosen[0], dict(version) | config)
                except (ValueError, TypeError, KeyError) as e:
                    raise PlanError(f"{p} cannot run with {n} nodes: {e.args[0] if e.args else e}") from None
    if histories <= 0 or steps <= 0:
        raise PlanError("--histories and --steps must be positive")
    plan = Plan(protocols=protocols, histories=histories, seed=seed, steps=steps, tail_ms=tail_ms,
                profiles=by_profile, nodes=by_nodes, imports=tuple(imports), overrides=overrides,
                versions=by_version, vary=vary, engine=engine, coverage_sample=coverage_sample, judge=judge)
    engines = {p: "fast" if engine == "fast" and p in fast.PROTOCOLS else "reference" for p in protocols}
    return attrs.evolve(plan, engines=engines)
