"""`rmqspec check`: the quick gate for CI. Each part is small and each must pass:

- suites: short seeded histories of every protocol under each fault profile, every
  property checked at every step (no unexpected violation);
- proofs: `rmqspec prove` (every row as its profile states);
- conformance: seeded reference histories, every step checked against the spec;
- contracts: CrossHair over model_checks.contracts (no counterexample; unknowns reported);
- explore: a small exhaustive exploration of each protocol with a symbolic spec.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import attrs

from histories import runner
from model_checks import conformance as conf
from model_checks import crosshair_run, prove
from model_checks import explore as ex
from reference_impl import core
from reference_impl.core import chooser, faults
from spec import symbolic as sy

SUITE_PROFILES = ("none", "standard", "hostile")


@attrs.define
class Part:
    name: str
    ok: bool
    seconds: float
    detail: str


def suites(seeds: int = 1, steps: int = 1500) -> Part:
    bad, runs = [], 0
    for name in core.protocol_names():
        p = core.protocol(name)
        for prof in SUITE_PROFILES:
            cfg = p.make_config(p.bench_nodes[0], {}).evolve(profile=faults.profile(prof, name))
            for seed in range(1, seeds + 1):
                r = runner.run(cfg, chooser.SeededChooser(seed).choose, steps)
                runs += 1
                bad += [f"{name}/{prof}/seed {seed}: {v.property}" for v in r.unexpected]
    return Part("suites", not bad, 0.0, "; ".join(bad) or f"{runs} histories of {steps} steps, no unexpected violation")


def proofs(out_dir: str | None) -> Part:
    # no reference witness search here (the property suites replay the scenario findings)
    rows = prove.run(out_dir=out_dir, replay=False, jobs=2)
    failed = [f"{r.protocol}/{r.property}@{r.profile}: {r.result}" for r in rows if not r.ok]
    found = sum(r.result == "violated" for r in rows)
    return Part("proofs", not failed, 0.0,
                "; ".join(failed) or f"{len(rows)} rows as expected ({found} known violations found)")


def conformance(steps: int = 800) -> Part:
    bad, checked = [], 0
    for name in sy.names():
        spec = sy.for_protocol(name)
        if spec.reference is None or spec.abstract is None or spec.reference not in core.protocol_names():
            continue
        p = core.protocol(spec.reference)
        for prof in ("standard", "hostile"):
            cfg = p.make_config(3, {}).evolve(profile=faults.profile(prof, spec.reference))
            checker = conf.StepChecker(spec)
            runner.run(cfg, chooser.SeededChooser(1).choose, steps, hooks=(checker,))
            checked += checker.steps - checker.stutters
            bad += [f"{name}/{prof} step {m.step}: {m.message}" for m in checker.mismatches]
    return Part("conformance", not bad, 0.0, "; ".join(bad) or f"{checked} non-stutter steps conform")


def contracts(timeout: float = 1.0) -> Part:
    conds, _ = crosshair_run.run(timeout)
    cex = [f"{c.contract}: {c.condition}" for c in conds if c.status == "counterexample"]
    n = {s: sum(c.status == s for c in conds) for s in ("confirmed", "unknown")}
    return Part("contracts", not cex, 0.0, "; ".join(cex) or
                f"{len(conds)} conditions: {n['confirmed']} confirmed, {n['unknown']} unknown, no counterexample")


def explore(depth: int = 10) -> Part:
    bad, states = [], 0
    for name in ex.MEASURES:
        if name not in core.protocol_names():
            continue
        res = ex.Explorer(core.protocol(name).make_config(3, {}), depth=depth, limit=2).run()
        states += res.distinct_states
        bad += [f"{name}: {f.property}" for f in res.unexpected()]
    return Part("explore", not bad, 0.0, "; ".join(bad) or f"{states} states to depth {depth}, every property held")


def run(out_dir: str | None = None, on_part: Callable[[Part], None] | None = None) -> list[Part]:
    parts = []
    for fn in (suites, lambda: proofs(out_dir), conformance, contracts, explore):
        start = time.perf_counter()
        try:
            part = fn()
        except Exception as e:  # a crash of a checker is a failed check, reported in one line
            part = Part(getattr(fn, "__name__", "proofs"), False, 0.0, f"crashed: {type(e).__name__}: {e}")
        part.seconds = time.perf_counter() - start
        parts.append(part)
        if on_part is not None:
            on_part(part)
    return parts


def line(part: Part) -> str:
    return f"{part.name:12s} {'ok' if part.ok else 'FAIL':4s} {part.seconds:6.1f} s  {part.detail}"

