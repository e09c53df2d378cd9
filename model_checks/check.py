"""`rmqspec check`: the quick gate for CI. Each part is small and each must pass:

- suites: short seeded histories of every protocol under each fault profile, every
  property checked at every step (no unexpected violation);
- proofs: `rmqspec prove` (every row as its profile states);
- conformance: seeded reference histories, every step checked against the spec;
- contracts: CrossHair over model_checks.contracts (confirmed / unknown / refuted; none refuted);
- explore: a small exhaustive exploration of each protocol with a symbolic spec.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import attrs

from histories import presentation, runner
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
            cfg = p.make_config(presentation.of(name).bench_nodes[0], {}).evolve(profile=faults.profile(prof, name))
            for seed in range(1, seeds + 1):
                r = runner.run(cfg, chooser.SeededChooser(seed).choose, steps)
                runs += 1
                bad += [f"{name}/{prof}/seed {seed}: {v.property}" for v in r.unexpected]
    return Part("suites", not bad, 0.0, "; ".join(bad) or f"{runs} histories of {steps} steps, no unexpected violation")


def proofs(out_dir: str | None, on_progress: Callable[[str], None] | None = None) -> Part:
    # no reference witness search here (the property suites replay the scenario findings)
    total, done = len(prove.tasks_of()), []

    def on_row(r: prove.Row) -> None:
        done.append(r)
        if on_progress is not None:
            on_progress(f"proofs: {len(done)}/{total} rows, last {r.protocol}/{r.property} @ {r.profile}: {r.result}")

    rows = prove.run(out_dir=out_dir, replay=False, jobs=2, on_row=on_row)
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
    refuted = [f"{c.contract}: {c.condition} refuted" for c in conds if c.status == "refuted"]
    return Part("contracts", not refuted, 0.0, crosshair_run.summary(conds) + ("; " + "; ".join(refuted)
                                                                                 if refuted else ""))


def explore(depth: int = 10) -> Part:
    bad, states = [], 0
    for name in ex.MEASURES:
        if name not in core.protocol_names():
            continue
        res = ex.Explorer(core.protocol(name).make_config(3, {}), depth=depth, limit=2).run()
        states += res.distinct_states
        bad += [f"{name}: {f.property}" for f in res.unexpected()]
    return Part("explore", not bad, 0.0, "; ".join(bad) or f"{states} states to depth {depth}, every property held")


PARTS = ("suites", "proofs", "conformance", "contracts", "explore")


def run(out_dir: str | None = None, on_part: Callable[[Part], None] | None = None,
        on_progress: Callable[[str], None] | None = None, only: tuple[str, ...] = PARTS) -> list[Part]:
    """Every part in order (or those named in `only`); `on_part` sees each as it ends,
    `on_progress` a line of what is running (progress)."""
    parts = []
    steps = {"suites": suites, "proofs": lambda: proofs(out_dir, on_progress), "conformance": conformance,
             "contracts": contracts, "explore": explore}
    for name in (n for n in PARTS if n in only):
        if on_progress is not None:
            on_progress(f"running {name}")
        start = time.perf_counter()
        try:
            part = steps[name]()
        except Exception as e:  # a crash of a checker is a failed check, reported in one line
            part = Part(name, False, 0.0, f"crashed: {type(e).__name__}: {e}")
        part.seconds = time.perf_counter() - start
        parts.append(part)
        if on_part is not None:
            on_part(part)
    return parts


def line(part: Part) -> str:
    return f"{part.name:12s} {'ok' if part.ok else 'FAIL':4s} {part.seconds:6.1f} s  {part.detail}"

