"""`rmqspec prove`: every safety property of every symbolic spec, under each version profile.

For each profile of a spec (spec/symbolic.py Profile) the run

1. checks the proofs cannot be vacuous (Init satisfiable with the invariants, every
   action of Next able to fire);
2. tries to prove each state property inductive with its auxiliary invariants, for any
   cluster size (`inductive, any N`), and each step property for every action;
3. where that fails, runs bounded model checking on a 3-node cluster from the
   reference's initial state, to tell a real violation (a trace from Init) from a
   too-weak invariant (a counterexample to induction that no run reaches);
4. for a real violation of a protocol whose reference exists, searches a reference
   history that follows the trace (model_checks.replay) and writes it as a trace file
   that `rmqspec replay` re-runs.

A row is ok when its result is what the profile states: proved, or violated with a
counterexample when the profile names the known cause. Anything else (a property the
profile expects to hold that is not proved, a known violation the checkers no longer
find, a solver that gives up) fails the run.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

import attrs
import z3

from histories import files, shell
from model_checks import induction, witness
from reference_impl import core
from spec import symbolic as sy

BMC_NODES = ("n0", "n1", "n2")


@attrs.define
class Row:
    protocol: str
    property: str
    profile: str
    method: str
    result: str  # "proved", "violated", "unknown", "ok" (sanity), "vacuous"
    ok: bool
    seconds: float
    expected: str | None = None  # the known cause, when the profile expects a violation
    detail: str = ""
    cti: dict | None = None
    trace: list | None = None
    replay: dict | None = None

    def summary(self) -> dict:
        return attrs.asdict(self)


def _reference_init(spec: sy.SymbolicSpec) -> Any:
    """The abstract initial state of the reference world (3 nodes), if the reference exists."""
    if spec.reference is None or spec.abstract is None:
        return None

    try:
        p = core.protocol(spec.reference)
    except KeyError:
        return None
    return spec.abstract(core.init(p.make_config(len(BMC_NODES), {})))


def _bmc(spec: sy.SymbolicSpec, prop: str, switches: frozenset[str], init: Any, depth: int) -> induction.Outcome:
    """BMC from Init. A spec with macro actions (switch `macro`: compositions of Next steps,
    e.g. a whole election) is searched with them first, and a trace found that way is
    expanded into its actions of Next and searched again with that schedule: the trace
    reported is always a trace of Next."""
    step = next((p for p in spec.step_properties if p.id == prop), None)
    if step is not None:
        def bad(u, s, prev=None):  # noqa: ANN001
            return z3.Not(step.formula(u, prev, s)) if prev is not None else z3.BoolVal(False)
        two = True
    else:
        inv = spec.invariant(prop)

        def bad(u, s):  # noqa: ANN001
            return z3.Not(inv.formula(u, s))
        two = False
    if not any(a.optional == "macro" for a in spec.actions):
        return induction.bmc(spec, bad, BMC_NODES, depth, switches, init, spec.bmc_bounds, two_state=two)
    found = induction.bmc(spec, bad, BMC_NODES, depth, switches | {"macro"}, init, spec.bmc_bounds, two_state=two,
                          every=depth, shortest=False)
    if found.status != "violated":
        found.detail = f"over macro steps: {found.detail}"
        return found
    schedule = []
    for st in found.trace[1:]:
        if st["action"] == "elect":  # campaign, a grant from each other quorum member, become_leader
            schedule += ["campaign"] + ["grant_vote"] * (len(BMC_NODES) // 2) + ["become_leader"]
        else:
            schedule.append(st["action"])
    full = induction.bmc(spec, bad, BMC_NODES, len(schedule), switches, init, spec.bmc_bounds, two_state=two,
                         schedule=schedule)
    full.seconds += found.seconds
    if full.status != "violated":
        full.status = "unknown"
        full.detail = f"a trace over macro steps ({len(found.trace) - 1}) does not expand into Next: {full.detail}"
    return full


def _method(spec: sy.SymbolicSpec, prop: str) -> str:
    if any(p.id == prop for p in spec.step_properties):
        return "step, any N"
    inv = spec.invariant(prop)
    aux = [i for i in inv.support if i != prop]
    more = f" + {len(aux)} aux" if aux else ""
    if spec.induction_nodes:  # a finite-domain proof: every state of the bounded cluster
        bounds = ", ".join(f"{k} <= {hi}" for k, (_, hi) in spec.induction_bounds.items())
        return f"inductive, N={'/'.join(map(str, spec.induction_nodes))} ({bounds})" + more
    quorum = " + quorum axiom" if "quorum" in spec.kinds else ""
    return "inductive, any N" + quorum + more


def _inductive(spec: sy.SymbolicSpec, prop: str, switches: frozenset[str]) -> induction.Outcome:
    """Parametric when the spec allows it, else one finite-domain proof per cluster size."""
    if not spec.induction_nodes:
        # with a finite-domain fallback, give the parametric queries less time
        out = induction.inductive(spec, prop, switches, timeout_ms=5_000 if spec.induction_bounds else
                                  induction.QUERY_TIMEOUT_MS)
        if out.status == "unknown" and spec.induction_bounds:
            # Quantified counterexamples are hard for Z3's model finder: look for a CTI on
            # a finite cluster instead (a CTI there is a CTI; no CTI there proves nothing).
            small = induction.inductive(spec, prop, switches, nodes=len(BMC_NODES))
            if small.status == "violated":
                small.detail = f"any N: {out.detail}; N={len(BMC_NODES)}: {small.detail}"
                small.seconds += out.seconds
                return small
        return out
    total, out = 0.0, None
    for n in spec.induction_nodes:
        out = induction.inductive(spec, prop, switches, nodes=n)
        total += out.seconds
        if out.status != "proved":
            out.detail = f"N={n}: {out.detail}"
            break
    out.seconds = total
    return out


def prove_property(spec: sy.SymbolicSpec, profile: sy.Profile, prop: str, out_dir: str | None = None,
                   bmc_depth: int | None = None, replay: bool = True) -> Row:
    start = time.perf_counter()
    expected = profile.expected.get(prop)
    is_step = any(p.id == prop for p in spec.step_properties)
    outcome = (induction.step_property(spec, prop, profile.switches) if is_step
               else _inductive(spec, prop, profile.switches))
    row = Row(protocol=spec.protocol, property=prop, profile=profile.name, method=_method(spec, prop),
              result=outcome.status, ok=False, seconds=0.0, expected=expected, detail=outcome.detail)
    if outcome.status == "proved":
        row.ok = expected is None
        if expected is not None:
            row.detail += " -- but the profile expects a violation: the model lost it"
    elif outcome.status == "violated":
        row.cti = outcome.cti
        depth = bmc_depth or spec.bmc_depth
        bmc = _bmc(spec, prop, profile.switches, _reference_init(spec), depth)
        row.method += f"; BMC {len(BMC_NODES)} nodes, k<={depth}"
        row.detail = f"CTI: {outcome.detail}"
        if bmc.status == "violated":
            row.trace = bmc.trace
            row.detail += f"; BMC: a trace of {len(bmc.trace) - 1} steps from Init"
            row.ok = expected is not None
            if replay:
                row.replay = _replay(spec, prop, bmc.trace, out_dir)
                row.detail += "; " + row.replay["message"]
        else:
            row.result = "unknown"  # not inductive, yet no trace within the bound
            row.detail += f"; BMC: {bmc.detail or bmc.status}"
    row.seconds = time.perf_counter() - start
    return row


def _replay(spec: sy.SymbolicSpec, prop: str, trace: list, out_dir: str | None) -> dict:
    if spec.reference is None:
        return {"found": False, "message": "reference replay: this symbolic spec has no mapping to the reference yet"}
    if prop in spec.witness_scenarios:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        return witness.scenario_history(spec, prop, os.path.join(root, spec.witness_scenarios[prop]), out_dir)
    return witness.reference_history(spec, prop, trace, out_dir)


def sanity(spec: sy.SymbolicSpec, profile: sy.Profile) -> Row:
    start = time.perf_counter()
    holding = [inv for inv in spec.invariants if inv.property is not None and inv.property not in profile.expected]
    ids: list[str] = []
    for inv in holding:
        ids += [i for i in inv.support or (inv.id,) if i not in ids]
    problems = induction.vacuity(spec, ids, profile.switches)
    n = len(spec.next_actions(profile.switches))
    return Row(protocol=spec.protocol, property="(Next)", profile=profile.name, method="vacuity",
               result="vacuous" if problems else "ok", ok=not problems, seconds=time.perf_counter() - start,
               detail="; ".join(problems) or f"Init satisfiable with {len(ids)} invariants; all {n} actions fire")


def properties_of(spec: sy.SymbolicSpec) -> list[str]:
    out = [inv.property for inv in spec.invariants if inv.property is not None]
    return sorted(out + [p.id for p in spec.step_properties], key=_id_key)


def _id_key(prop: str) -> tuple:
    head, _, num = prop.rpartition("-")
    return (head, int(num)) if num.isdigit() else (prop, 0)


def _row(name: str, profile: str, prop: str | None, out_dir: str | None, replay: bool) -> Row:
    """One row: the profile's vacuity check (prop None) or one property under it."""
    spec = sy.for_protocol(name)
    prof = spec.profile(profile)
    return sanity(spec, prof) if prop is None else prove_property(spec, prof, prop, out_dir, replay=replay)


def tasks_of(protocols: list[str] | None = None, profile: str | None = None) -> list[tuple[str, str, str | None]]:
    """(protocol, profile, property or None for the vacuity row), in the table's order."""
    return [(name, prof.name, prop) for name in protocols or sy.names() for prof in sy.for_protocol(name).profiles
            if profile is None or prof.name == profile
            for prop in [None, *properties_of(sy.for_protocol(name))]]


def run(protocols: list[str] | None = None, out_dir: str | None = None, replay: bool = True,
        profile: str | None = None, jobs: int = 1, on_row: Callable[[Row], None] | None = None) -> list[Row]:
    """Every row of every profile (or of the profile named `profile`) of each spec, one
    task per row in `jobs` worker processes; rows keep the table's order, and `on_row`
    sees each as it finishes (progress)."""
    tasks = tasks_of(protocols, profile)
    jobs = min(jobs, len(tasks), os.cpu_count() or 1)  # never more processes than tasks or cores
    if jobs <= 1 or len(tasks) <= 1:
        rows = []
        for task in tasks:
            rows.append(_row(*task, out_dir, replay))
            if on_row is not None:
                on_row(rows[-1])
        return rows
    # the rows of the slowest profiles first, so the workers finish together
    order = sorted(range(len(tasks)), key=lambda i: -_WEIGHT.get(tasks[i][:2], 1))
    with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=multiprocessing.get_context("fork")) as pool:
        futures = {pool.submit(_row, *tasks[i], out_dir, replay): i for i in order}
        done: dict[int, Row] = {}
        for fut in as_completed(futures):
            done[futures[fut]] = fut.result()
            if on_row is not None:
                on_row(done[futures[fut]])
    return [done[i] for i in range(len(tasks))]


# Rough seconds per (protocol, profile), to schedule the longest first.
_WEIGHT = {("election", "4.9.4+os-crash"): 30, ("dledger_log", "0.2.6"): 30, ("dledger_log", "fixed"): 20}


def print_table(rows: list[Row], out: Any) -> None:
    head = ("property", "profile", "method", "result", "seconds")
    cells = []
    for r in rows:
        result = r.result
        if r.expected is not None and r.result == "violated":
            result = "violated (expected)"
        if not r.ok:
            result = result.upper() + " !"
        cells.append((f"{r.protocol}/{r.property}", r.profile, r.method, result, f"{r.seconds:.2f}"))
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(head)]
    line = "  ".join(h.ljust(w) for h, w in zip(head, widths))
    print(line, file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for c in cells:
        print("  ".join(v.ljust(w) for v, w in zip(c, widths)), file=out)
    print("\nprofiles:", file=out)
    for name, prof in dict.fromkeys((r.protocol, r.profile) for r in rows):
        print(f"  {name} {prof}: {sy.for_protocol(name).profile(prof).description}", file=out)
    for r in rows:
        if r.result in ("violated", "unknown") or not r.ok:
            print(f"\n{r.protocol}/{r.property} under {r.profile}: {r.result}"
                  + (f" -- known cause: {r.expected}" if r.expected else ""), file=out)
            print(f"  {r.detail}", file=out)
            if r.trace:
                print("  BMC trace:", file=out)
                for i, st in enumerate(r.trace):
                    args = ", ".join(f"{k}={v}" for k, v in st["params"].items())
                    print(f"    {i:2d}. {st['action']}({args})", file=out)
            if r.replay and r.replay.get("trace"):
                print(f"  reference trace: {r.replay['trace']}  ({shell.command('replay', r.replay['trace'])})",
                      file=out)


def default_out_dir() -> str:
    """Where witnesses go without --out: a private folder of this user's under the temp folder
    (`$TMPDIR/rmqspec-<uid>/prove`), never a fixed shared path another user could make first."""
    folder, why = files.private_temp("prove")
    if why:
        print(f"rmqspec prove: {why}", file=sys.stderr)
    return str(folder)


def profile_names(protocols: list[str] | None = None) -> list[str]:
    return sorted({p.name for name in protocols or sy.names() for p in sy.for_protocol(name).profiles})
