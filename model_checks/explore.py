"""Exhaustive exploration of a world (`rmqspec explore`): breadth-first over every
enabled event, with state fingerprints and node-symmetry reduction.

Theory of operation
-------------------
The exhaustive chooser offers every event `world.enabled` lists; a tick's random draw,
which feeds `Random.nextInt` (vote timeouts, round deadlines), is restricted to a
small set of values (by default the two extremes, 0 and DRAW_SPAN - 1), since
enumerating all 2^16 is pointless. States are deduplicated by the fingerprint of
their node-renaming orbit (model_checks.symmetry). The search is bounded by depth
(events from the initial state) and by a protocol measure (for election: the largest
currTerm); states beyond the measure's limit are checked but not expanded. Every
property of the protocol is checked on every state (state properties) and every
transition (step properties); the first violation of each property is kept with the
event path that reaches it, written as a trace `rmqspec replay` re-runs.

Random coverage: the seeded chooser of `simulate` (with draws mapped to the same set)
runs H histories of the same depth from the same configuration; the report says how
many of the exhaustive distinct states they visit.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from histories import files
from histories import trace as trace_mod
from model_checks import symmetry
from reference_impl import core
from reference_impl.core import chooser
from spec import properties

EXTREMES = (0, core.DRAW_SPAN - 1)

# Protocol measures that bound the search: name -> (what it counts, measure(world)).
MEASURES: dict[str, tuple[str, Callable[[core.World], int]]] = {
    "election": ("max currTerm", lambda w: max(m.curr_term for m in w.nodes)),
}


def events(w: core.World, draws: tuple[int, ...] = EXTREMES) -> list:
    """Every event enabled in `w`, one tick (of a node, or of one thread of a threaded node) per draw value."""
    out: list = []
    for ev in core.protocol_events(w):
        if isinstance(ev, core.Tick):
            out.extend(ev.evolve(draw=d) for d in draws)
        else:
            out.append(ev)
    out.extend(core.fault_events(w))
    return out


@attrs.define
class Found:
    """The first violation of a property: where, why, and the path to it."""

    property: str
    expected: str | None
    depth: int
    events: list
    trace: str | None = None


@attrs.define
class ExploreResult:
    protocol: str
    nodes: int
    depth: int
    bound: str
    symmetry: bool
    draws: tuple[int, ...]
    profile: str
    engine: str = "reference"  # or "fast": model_checks/explore_fast.py over the election twin's arrays
    distinct_states: int = 0
    transitions: int = 0
    levels: list[int] = attrs.field(factory=list)  # new distinct states per depth
    complete: bool = False  # the whole bounded space was explored (nothing cut by max_states)
    seconds: float = 0.0
    found: dict[str, Found] = attrs.field(factory=dict)
    coverage: list[dict] = attrs.field(factory=list)

    @property
    def states_per_s(self) -> float:
        return self.distinct_states / self.seconds if self.seconds else 0.0

    def unexpected(self) -> list[Found]:
        return [f for f in self.found.values() if f.expected is None]

    def summary(self) -> dict:
        return {
            "protocol": self.protocol, "nodes": self.nodes, "depth": self.depth, "bound": self.bound,
            "symmetry": self.symmetry, "draws": list(self.draws), "faults": self.profile, "engine": self.engine,
            "distinct_states": self.distinct_states, "transitions": self.transitions, "levels": self.levels,
            "complete": self.complete, "seconds": round(self.seconds, 2),
            "states_per_s": round(self.states_per_s, 1),
            "violations": {k: {"expected": f.expected, "depth": f.depth, "trace": f.trace} for k, f in self.found.items()},
            "unexpected": [f.property for f in self.unexpected()],
            "coverage": self.coverage,
        }


class Explorer:
    """Breadth-first search over the worlds of `cfg`; keeps the fingerprints it has seen."""

    def __init__(self, cfg: core.WorldConfig, depth: int, limit: int | None = None, use_symmetry: bool = True,
                 draws: tuple[int, ...] = EXTREMES, max_states: int | None = None) -> None:
        # Java timing (a due tick may fire anywhere within its loop period) multiplies the
        # states by the possible delays; the explorer pins each tick to its wake time.
        cfg = cfg.evolve(profile=cfg.profile.evolve(timing="pinned"))
        self.cfg, self.depth, self.limit, self.draws, self.max_states = cfg, depth, limit, draws, max_states
        self.fingerprint = symmetry.fingerprinter(cfg, use_symmetry)
        self.measure = MEASURES.get(cfg.protocol)
        props = properties.for_protocol(cfg.protocol)
        self.state_props = [p for p in props if p.holds is not None]
        self.step_props = [p for p in props if p.holds_step is not None]
        self.parent: dict[int, tuple[int, Any] | None] = {}
        bound = f"depth {depth}"
        if limit is not None and self.measure is not None:
            bound += f", {self.measure[0]} <= {limit}"
        self.result = ExploreResult(protocol=cfg.protocol, nodes=len(cfg.ids), depth=depth, bound=bound,
                                    symmetry=self.fingerprint is not hash, draws=draws, profile=cfg.profile.name)

    def within(self, w: core.World) -> bool:
        return self.limit is None or self.measure is None or self.measure[1](w) <= self.limit

    def _found(self, prop: Any, w: core.World, event: Any, key: int, extra: Any, depth: int) -> None:
        if prop.id in self.result.found:
            return
        cause = prop.expected_when(w, event) if prop.expected_when else None
        path = self.path(key) + ([extra] if extra is not None else [])
        self.result.found[prop.id] = Found(property=prop.id, expected=cause, depth=depth, events=path)

    def path(self, key: int) -> list:
        """The events from the initial world to the stored world with fingerprint `key`."""
        out = []
        link = self.parent[key]
        while link is not None:
            key, ev = link
            out.append(ev)
            link = self.parent[key]
        return out[::-1]

    def run(self, on_level: Callable[[int, int, int], None] | None = None) -> ExploreResult:
        """Breadth first to `depth`; `on_level(depth, new states, distinct states so far)`
        after each level (progress)."""
        res = self.result
        start = time.perf_counter()
        w0 = core.init(self.cfg)
        k0 = self.fingerprint(w0)
        self.parent[k0] = None
        for p in self.state_props:
            if not p.holds(w0):
                self._found(p, w0, None, k0, None, 0)
        frontier = [(w0, k0)]
        res.levels.append(1)
        complete = True
        for level in range(1, self.depth + 1):
            nxt = []
            for w, k in frontier:
                for ev in events(w, self.draws):
                    w2, obs = core.step(w, ev)
                    res.transitions += 1
                    for p in self.step_props:
                        if p.id not in res.found and not p.holds_step(w, ev, w2, obs):
                            self._found(p, w2, ev, k, ev, level)
                    k2 = self.fingerprint(w2)
                    if k2 in self.parent:
                        continue
                    if not self.within(w2):
                        continue
                    self.parent[k2] = (k, ev)
                    for p in self.state_props:
                        if p.id not in res.found and not p.holds(w2):
                            self._found(p, w2, ev, k2, None, level)
                    nxt.append((w2, k2))
                    if self.max_states is not None and len(self.parent) >= self.max_states:
                        complete = False
                        break
                if not complete:
                    break
            res.levels.append(len(nxt))
            if on_level is not None:
                on_level(level, len(nxt), len(self.parent))
            frontier = nxt
            if not complete or not frontier:
                break
        res.complete = complete
        res.distinct_states = len(self.parent)
        res.seconds = time.perf_counter() - start
        return res

    def random_coverage(self, histories: Iterable[int], seed: int = 1) -> list[dict]:
        """How many of the explored states H random histories of the same depth visit."""
        explored = self.parent
        seen: set[int] = set()
        rows = []
        done = 0
        w0 = core.init(self.cfg)
        start = time.perf_counter()
        for target in sorted(histories):
            while done < target:
                pick = chooser.SeededChooser(seed + done)
                w = w0
                seen.add(self.fingerprint(w))
                for _ in range(self.depth):
                    ev = pick.choose(w)
                    if ev is None:
                        break
                    if isinstance(ev, core.Tick):
                        ev = core.Tick(node=ev.node, thread=ev.thread, draw=self.draws[ev.draw % len(self.draws)])
                    w, _ = core.step(w, ev)
                    if not self.within(w):
                        break
                    seen.add(self.fingerprint(w))
                done += 1
            inside = sum(1 for k in seen if k in explored)
            rows.append({"histories": target, "distinct_visited": len(seen), "in_exhaustive": inside,
                         "coverage": round(inside / len(explored), 4) if explored else 0.0,
                         "seconds": round(time.perf_counter() - start, 2)})
        self.result.coverage = rows
        return rows


def write_traces(explorer: Explorer, out_dir: str) -> None:
    """Write each found violation as a trace file `rmqspec replay` re-runs."""
    files.out_folder(out_dir)
    for prop_id, found in explorer.result.found.items():
        path = os.path.join(out_dir, f"{explorer.cfg.protocol}-{prop_id}.jsonl")
        write_event_trace(explorer.cfg, found.events, path, {"explore": explorer.result.bound})
        found.trace = path


def write_event_trace(cfg: core.WorldConfig, evs: list, path: str, extra: dict | None = None) -> None:
    """Run `evs` from the initial world of `cfg` and write the history as a trace."""

    w = core.init(cfg)
    with files.atomic(path) as f:
        writer = trace_mod.TraceWriter(f, w, None, extra)
        for i, ev in enumerate(evs, 1):
            after, obs = core.step(w, ev)
            writer.step(i, w, ev, after, obs)
            w = after
        writer.close({"steps": len(evs), "source": "model_checks"})


def print_report(res: ExploreResult, out) -> None:  # noqa: ANN001
    print(f"explore {res.protocol} ({res.engine} engine): {res.nodes} nodes, faults {res.profile} (timing pinned), bound {res.bound}, "
          f"draws {list(res.draws)}, symmetry {'on' if res.symmetry else 'off'}", file=out)
    state = "complete" if res.complete else "CUT SHORT by --max-states"
    print(f"  {res.distinct_states} distinct states, {res.transitions} transitions, {res.seconds:.1f} s, "
          f"{res.states_per_s:.0f} distinct states/s ({state})", file=out)
    print(f"  new states by depth: {res.levels}", file=out)
    if not res.found:
        print("  every property held in every state", file=out)
    for f in res.found.values():
        tag = f"expected ({f.expected})" if f.expected else "UNEXPECTED"
        where = f"; trace {f.trace}" if f.trace else ""
        print(f"  {f.property} violated at depth {f.depth}, {tag}{where}", file=out)
    for row in res.coverage:
        print(f"  random: {row['histories']} histories visit {row['in_exhaustive']} of the "
              f"{res.distinct_states} states ({100 * row['coverage']:.2f}%) in {row['seconds']} s", file=out)
