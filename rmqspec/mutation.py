"""`rmqspec mutants`: how strong each property layer is alone, measured on deliberately
broken references (histories/mutants/catalogue.py, one rule broken each).

For each mutant and each layer the verdict is

- `killed`: the layer reports an UNEXPECTED violation (a property the mutant broke, with
  no known RocketMQ cause), and the same history without the mutant does not;
- `expected-only` (masking): the mutant made properties fail that the same history
  without it keeps, and every one of them was reported as an expected violation: a
  known cause was accepted as the explanation of a real bug, a defect of that cause's
  evidence;
- `survived`: the layer saw nothing.

Layers (each alone, so their scores can be compared):

- `fuzz`: the default fuzz plan of the mutant's protocol (`rmqspec fuzz --master none`:
  default profiles, cycled versions and configs), history by history from seed 1, up
  to `histories` histories or `seconds` of wall time, whichever comes first; it stops
  at the first killing history.
- `machines`: the protocol's Hypothesis state machines (property_tests/test_*_machine.py),
  run by pytest with `HYPOTHESIS_PROFILE=mutants` (ci's budget, no shrinking) and `RMQSPEC_MUTANT` set (property_tests/
  conftest.py installs the mutant in that process).
- `model`: conformance of seeded reference histories to the protocol's symbolic (Z3)
  relation and, where the explorer has a bound, an exhaustive exploration (the parts of
  `rmqspec check` that run the reference); `n/a` for protocols with neither.

The command lives here, above the checkers, because it drives three of them; the
mutants live in the histories layer (histories/mutants/), below every checker that installs
them, and never ship as protocols.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable

import attrs

from histories import runner
from histories.mutants import catalogue as mu
from model_checks import conformance as conf
from model_checks import explore as ex
from reference_impl import core
from reference_impl.core import chooser, faults
from spark_harness import plan as plan_mod
from spark_harness.history import run_history
from spec import symbolic as sy

LAYERS = ("fuzz", "machines", "model")
MACHINES = {
    "election": ("property_tests/test_election_machine.py",),
    "dledger_log": ("property_tests/test_dledger_log_machine.py",),
    "dledger_commitlog": ("property_tests/test_dledger_commitlog_machine.py",),
    "ha": ("property_tests/test_ha_machine.py",),
    "nameserver": ("property_tests/test_nameserver_machine.py",),
    "offsets": ("property_tests/test_offsets_machine.py",),
}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@attrs.define
class Verdict:
    mutant: str
    layer: str
    verdict: str  # killed, expected-only, survived, n/a, error
    detail: str = ""
    seconds: float = 0.0
    histories: int = 0  # fuzz: histories run

    def as_dict(self) -> dict:
        return attrs.asdict(self)


def _violations(row: dict) -> dict[str, str | None]:
    return {v["property"]: v["expected"] for v in row["violations"]}


def fuzz_layer(m: mu.Mutant, histories: int, seconds: float, seed: int = 1,
               progress: Callable[[str], None] | None = None) -> Verdict:
    plan = plan_mod.make_plan(m.protocol, histories, seed)
    start = time.perf_counter()
    masked: list[str] = []
    k = 0
    for k in range(histories):
        if time.perf_counter() - start > seconds:
            break
        spec = plan.spec(m.protocol, k)
        with mu.installed(m):
            row = run_history(spec)
        bad = _violations(row)
        if not bad:
            continue
        clean = _violations(run_history(spec))
        new = {p: c for p, c in bad.items() if p not in clean or (clean[p] is not None and c is None)}
        unexpected = sorted(p for p, c in new.items() if c is None)
        where = f"seed {spec.seed} ({spec.profile}, {spec.nodes} nodes, {dict(spec.label)})"
        if unexpected:
            steps = {v["property"]: v["step"] for v in row["violations"]}
            named = ", ".join(f"{p} (step {steps[p]})" for p in sorted(unexpected, key=lambda p: (steps[p], p)))
            before = f"; before that, masked as expected in {len(masked)}: {masked[0]}" if masked else ""
            return Verdict(m.name, "fuzz", "killed", f"{named} at history {k + 1}, {where}{before}",
                           round(time.perf_counter() - start, 1), k + 1)
        if new:
            masked.append(f"{', '.join(f'{p} as expected ({c[:80]})' for p, c in sorted(new.items()))} at {where}")
        if progress is not None:
            progress(f"{m.name}: history {k + 1}")
    elapsed = round(time.perf_counter() - start, 1)
    if masked:
        return Verdict(m.name, "fuzz", "expected-only", "; ".join(masked[:3]), elapsed, k + 1)
    return Verdict(m.name, "fuzz", "survived", f"nothing in {k + 1} histories", elapsed, k + 1)


def machines_layer(m: mu.Mutant, seconds: float) -> Verdict:
    start = time.perf_counter()
    env = dict(os.environ, RMQSPEC_MUTANT=m.name, HYPOTHESIS_PROFILE="mutants")
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *MACHINES[m.protocol]]
    try:
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=seconds)
    except subprocess.TimeoutExpired:
        return Verdict(m.name, "machines", "survived", f"no failure within {seconds:g} s",
                       round(time.perf_counter() - start, 1))
    elapsed = round(time.perf_counter() - start, 1)
    out = done.stdout + done.stderr
    if done.returncode == 0:
        return Verdict(m.name, "machines", "survived", "every machine passed", elapsed)
    # A machine reports a property failure as an AssertionError, in its own words (a violation,
    # or a finding without a cause); any other exception is the mutant crashing the machine.
    line = next((x.strip() for x in out.splitlines() if " violated at step " in x or "UNEXPECTED" in x), "") or next(
        (x.strip()[1:].strip() for x in out.splitlines() if x.startswith("E ") and "AssertionError" in x), "")
    if done.returncode == 1 and line:
        return Verdict(m.name, "machines", "killed", line[:200], elapsed)
    last = [x for x in out.splitlines() if x.strip()][-1:] or ["?"]
    return Verdict(m.name, "machines", "error", f"pytest exit {done.returncode}: {last[0][:200]}", elapsed)


def model_layer(m: mu.Mutant, steps: int = 1500, seeds: int = 3) -> Verdict:
    start = time.perf_counter()
    found: list[str] = []
    ran = False
    with mu.installed(m):
        for name in sy.names():
            spec = sy.for_protocol(name)
            if spec.reference != m.protocol or spec.abstract is None:
                continue
            ran = True
            p = core.protocol(m.protocol)
            for prof in ("standard", "hostile"):
                cfg = p.make_config(3, {}).evolve(profile=faults.profile(prof, m.protocol))
                for seed in range(1, seeds + 1):
                    checker = conf.StepChecker(spec)
                    runner.run(cfg, chooser.SeededChooser(seed).choose, steps, hooks=(checker,), properties=[])
                    found += [f"conformance {prof} seed {seed} step {x.step}: {x.message[:120]}"
                              for x in checker.mismatches[:1]]
                    if found:
                        break
                if found:
                    break
        if not found and m.protocol in ex.MEASURES:
            ran = True
            res = ex.Explorer(core.protocol(m.protocol).make_config(3, {}), depth=10, limit=2).run()
            found += [f"explorer: {f.property} at depth {f.depth}" for f in res.unexpected()]
    elapsed = round(time.perf_counter() - start, 1)
    if not ran:
        return Verdict(m.name, "model", "n/a", "no symbolic relation or explorer bound for this protocol", elapsed)
    if found:
        return Verdict(m.name, "model", "killed", found[0], elapsed)
    return Verdict(m.name, "model", "survived", "conformance and exploration found nothing", elapsed)


def run(names: list[str], layers: tuple[str, ...], histories: int, seconds: float,
        log: Callable[[Verdict], None] | None = None) -> list[Verdict]:
    out = []
    for name in names:
        m = mu.BY_NAME[name]
        for layer in layers:
            if layer == "fuzz":
                v = fuzz_layer(m, histories, seconds)
            elif layer == "machines":
                v = machines_layer(m, seconds)
            else:
                v = model_layer(m)
            out.append(v)
            if log is not None:
                log(v)
    return out


def scores(verdicts: list[Verdict]) -> dict[str, dict]:
    """Per layer: killed / applicable, and how many were masked or survived."""
    out = {}
    for layer in LAYERS:
        vs = [v for v in verdicts if v.layer == layer and v.verdict != "n/a"]
        if vs:
            out[layer] = {k: sum(v.verdict == k for v in vs) for k in ("killed", "expected-only", "survived", "error")}
            out[layer]["mutants"] = len(vs)
    return out


def not_caught(verdicts: list[Verdict]) -> list[str]:
    """The mutants no layer run killed (layers that do not apply, n/a, aside), and those a layer
    errored on: what makes `rmqspec mutants` exit 1. A survivor in one layer that another layer
    kills is a score, not a failure: the layers are measured alone so their strengths compare,
    and the machines and the model are not expected to reach every mutant (docs/benchmarks.md,
    "Mutation score")."""
    out: list[str] = []
    for name in dict.fromkeys(v.mutant for v in verdicts):
        mine = [v for v in verdicts if v.mutant == name and v.verdict != "n/a"]
        if any(v.verdict == "error" for v in mine) or (mine and not any(v.verdict == "killed" for v in mine)):
            out.append(name)
    return out


def table(verdicts: list[Verdict]) -> str:
    lines = [f"{'mutant':<44}{'layer':<10}{'verdict':<15}{'s':>7}  detail"]
    for v in verdicts:
        lines.append(f"{v.mutant:<44}{v.layer:<10}{v.verdict:<15}{v.seconds:>7.1f}  {v.detail}")
    lines.append("")
    for layer, s in scores(verdicts).items():
        lines.append(f"score {layer}: {s['killed']}/{s['mutants']} killed, {s['expected-only']} expected-only, "
                     f"{s['survived']} survived" + (f", {s['error']} error(s)" if s["error"] else ""))
    return "\n".join(lines)
