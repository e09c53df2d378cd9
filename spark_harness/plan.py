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

`make_plan` resolves each protocol once into a `ProtocolPlan` (`Plan.parts`): its fault
profiles (the records themselves), version profiles, cluster sizes, engine and coverage
universe. Everything after it (the specs of the histories, the chunks, the report and its
coverage totals) reads that record and resolves none of them again.

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

from histories import fast, presentation
from reference_impl import PROTOCOL_PACKAGES, core
from reference_impl.core import faults
from spark_harness import coverage, variants
from spark_harness.history import DEFAULT_STEPS, TAIL_MS, HistorySpec, config_of, run_history, run_history_fast

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


@attrs.frozen(kw_only=True)
class ProtocolPlan:
    """One protocol of a plan, resolved once by `make_plan`: what every later part of a fuzz run
    reads (the specs of its histories, the chunks, the report and its coverage totals), so that
    none of them resolves a profile, a version or a universe again."""

    name: str
    profiles: tuple[faults.FaultProfile, ...]  # cycled, in this order
    versions: tuple  # (label, overrides) version profiles, cycled (spark_harness/variants.py)
    nodes: tuple[int, ...]  # cluster sizes, cycled
    engine: str  # the engine it runs on: "fast" or "reference"
    # The coverage universe (spark_harness/coverage.py) of the configurations the plan's histories
    # run: one per (profile, version, cluster size) that some history k < histories has.
    roles: tuple[str, ...] = ()
    actions: tuple[str, ...] = ()
    branches: tuple[str, ...] = ()

    @property
    def profile_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.profiles)

    def axes(self, k: int) -> tuple[faults.FaultProfile, tuple, int]:
        """History k's fault profile, version and cluster size (module docstring)."""
        p, v = len(self.profiles), len(self.versions)
        c = k % (p * v)  # a diagonal: the first v histories run every version, p * v every pair
        return self.profiles[c % p], self.versions[(c % p + c // p) % v], self.nodes[(k // (p * v)) % len(self.nodes)]

    @property
    def combinations(self) -> int:
        """(profile, version, cluster size) combinations: history k and k + this run the same ones."""
        return len(self.profiles) * len(self.versions) * len(self.nodes)


@attrs.frozen(kw_only=True, hash=False)
class Plan:
    """A fuzz run's histories (module docstring): what is shared, and each protocol's part."""

    protocols: tuple[str, ...]
    histories: int  # per protocol
    seed: int = 1
    steps: int = DEFAULT_STEPS
    tail_ms: int = TAIL_MS
    parts: dict = attrs.Factory(dict)  # protocol -> its ProtocolPlan
    imports: tuple[str, ...] = ()  # modules that register extra protocols (imported in every task)
    overrides: tuple = ()  # the user's config overrides for every history, as sorted (key, value) pairs
    vary: bool = True  # draw switches, swarm subsets and shapes per history (variants.py)
    engine: str = "reference"  # what was asked for: "fast" (where a fast world exists) or "reference"
    coverage_sample: int | None = None  # on the fast engine: the reference also runs the first N whole (None: all)
    judge: str = "sample"  # on the fast engine: "all" violating histories re-run by the reference, or a "sample"

    def in_sample(self, k: int) -> bool:
        return self.coverage_sample is None or k < self.coverage_sample

    def judged(self, k: int) -> bool:
        """The reference re-runs history k if the fast world finds any violation in it (with judge
        "sample", and only expected ones, if k is in the sample)."""
        return self.judge == "all" or in_judge_sample(k)

    def spec(self, protocol: str, k: int) -> HistorySpec:
        part = self.parts[protocol]
        profile, version, nodes = part.axes(k)
        variant = variants.draw(protocol, profile, nodes, self.seed + k, version, self.overrides, self.vary)
        return HistorySpec(protocol=protocol, profile=profile.name, nodes=nodes, seed=self.seed + k,
                           steps=self.steps, tail_ms=self.tail_ms, overrides=variant.overrides, label=variant.label)

    def universe_specs(self, protocol: str) -> list[HistorySpec]:
        """One history per (profile, version, cluster size) with no drawn variation: the
        configurations whose fault kinds and roles a coverage universe counts."""
        return universe_specs(self.parts[protocol], self.seed, self.steps, self.tail_ms, self.overrides)

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
            if self.parts[p].engine == "fast":
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
    on_fast = plan.parts[chunk.protocol].engine == "fast"
    for k in range(chunk.start, chunk.stop):
        spec = plan.spec(chunk.protocol, k)
        yield run_history_fast(spec, plan.in_sample(k), plan.judged(k)) if on_fast else run_history(spec)


def engine_for(protocol: str, asked: str) -> str:
    """The engine `protocol` runs on when `asked` ("fast" or "reference") is asked for."""
    return "fast" if asked == "fast" and protocol in fast.PROTOCOLS else "reference"


def default_profiles(protocol: str, known: dict[str, faults.FaultProfile] | None = None) -> tuple[str, ...]:
    """Every profile of the protocol that injects faults, gentle to hostile: not `none`,
    nor profiles meant for scenario scripts that bring their own faults (`scripted`,
    `lockstep`). `known`: the protocol's profiles by name (faults.by_name), if resolved already."""
    known = faults.by_name(protocol) if known is None else known
    return tuple(name for name, prof in known.items() if prof.any_faults())


def universe_specs(part: ProtocolPlan, seed: int, steps: int, tail_ms: int, overrides: tuple,
                   histories: int | None = None) -> list[HistorySpec]:
    """One history per (profile, version, cluster size) of `part` (of its first `histories`
    histories, if given), with no drawn variation: the configurations whose fault kinds and roles
    a coverage universe counts."""
    out = []
    for k in range(part.combinations if histories is None else min(part.combinations, histories)):
        profile, version, nodes = part.axes(k)
        over = tuple(sorted((dict(version[1]) | dict(overrides)).items()))
        out.append(HistorySpec(protocol=part.name, profile=profile.name, nodes=nodes, seed=seed + k, steps=steps,
                               tail_ms=tail_ms, overrides=over))
    return out


def with_universe(part: ProtocolPlan, histories: int, seed: int, steps: int, tail_ms: int,
                  overrides: tuple) -> ProtocolPlan:
    """`part` with its coverage universe: over the configurations of its first `histories`
    histories (every combination once there are as many histories as combinations)."""
    specs = universe_specs(part, seed, steps, tail_ms, overrides, max(1, histories))
    try:
        cfgs = [config_of(s) for s in specs]
    except (ValueError, TypeError, KeyError) as e:
        raise PlanError(f"{part.name} cannot run: {e.args[0] if e.args else e}") from None
    roles = coverage.role_universe(cfgs)
    return attrs.evolve(part, roles=tuple(roles), actions=tuple(coverage.action_universe(cfgs, roles)),
                        branches=tuple(coverage.branch_universe(part.name)))


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
    parts = {}
    for p in protocols:
        known = faults.by_name(p)
        chosen = tuple(known) if profiles == ["all"] else tuple(profiles) if profiles else default_profiles(p, known)
        for name in chosen:
            if name not in known:
                raise PlanError(f"unknown fault profile {name!r} for {p}; known: {', '.join(known)}, all")
        part = ProtocolPlan(name=p, profiles=tuple(known[name] for name in chosen),
                            versions=variants.versions(p, config, vary),
                            nodes=tuple(nodes) if nodes else tuple(presentation.of(p).bench_nodes),
                            engine=engine_for(p, engine))
        for n in part.nodes:
            if not 1 <= n <= 64:
                raise PlanError(f"cluster sizes must be 1..64, not {n}")
            for _, version in part.versions:
                try:
                    core.world_config(p, n, chosen[0], dict(version) | config)
                except (ValueError, TypeError, KeyError) as e:
                    raise PlanError(f"{p} cannot run with {n} nodes: {e.args[0] if e.args else e}") from None
        parts[p] = part
    if histories <= 0 or steps <= 0:
        raise PlanError("--histories and --steps must be positive")
    parts = {p: with_universe(part, histories, seed, steps, tail_ms, overrides) for p, part in parts.items()}
    return Plan(protocols=protocols, histories=histories, seed=seed, steps=steps, tail_ms=tail_ms, parts=parts,
                imports=tuple(imports), overrides=overrides, vary=vary, engine=engine,
                coverage_sample=coverage_sample, judge=judge)
