"""The fuzz report: `report.json` (schema rmqspec.fuzz-report/1, docs/fuzzing.md) and
`report.md` with plots, built from an Aggregate alone.

Everything in the report but the keys in RUN_KEYS (timings, the master, the output
paths) is a function of the plan: the same seed range gives the same report on any
master, and `deterministic_view` is what tests compare.
"""

from __future__ import annotations

import json
import os
from typing import Any

from histories import files
from reference_impl.core import faults
from spark_harness import coverage, plots, sketch
from spark_harness.aggregate import Aggregate, ProtocolAggregate
from spark_harness.history import config_of
from spark_harness.plan import JUDGE_EVERY, Plan
from spec import properties as props

SCHEMA = "rmqspec.fuzz-report/1"
RUN_KEYS = ("wall_s", "steps_per_s", "histories_per_s", "timing", "master", "outputs", "shrink_workers")
# The parts of a run, in order (report.json `timing`); `other_s` is the rest of the wall time.
TIMING_PARTS = ("startup_s", "histories_s", "shrink_s", "plots_s", "write_s")


def deterministic_view(report: dict) -> dict:
    return {k: v for k, v in report.items() if k not in RUN_KEYS}


def _universes(plan: Plan, protocol: str) -> tuple[list[str], list[str]]:
    cfgs = [config_of(s) for s in plan.universe_specs(protocol)[:max(1, plan.histories)]]
    return coverage.action_universe(cfgs), coverage.branch_universe(protocol)


def _variants(pa: ProtocolAggregate) -> dict:
    """Per axis and value (spark_harness/variants.py): histories, violations, unexpected ones, causes."""
    out: dict[str, dict] = {}
    for key in sorted(pa.variants):
        axis, value = key.split("=", 1)
        c = pa.variants[key]
        props_ = {k[5:]: [n, c.get("unexp:" + k[5:], 0)] for k, n in sorted(c.items()) if k.startswith("viol:")}
        causes = sorted(((k[6:], n) for k, n in c.items() if k.startswith("cause:")), key=lambda kv: (-kv[1], kv[0]))
        out.setdefault(axis, {})[value] = {
            "histories": c["histories"], "steps": c["steps"], "violating_histories": c["violating"],
            "unexpected_histories": c["unexpected"], "properties": props_, "causes": dict(causes[:10])}
    return out
def coverage_source(plan: Plan, protocol: str, pa: ProtocolAggregate) -> dict:
    """Which world computed coverage and the distinct-state sketch, and over which histories."""
    if plan.engines.get(protocol) != "fast":
        return {"engine": "reference", "histories": pa.coverage_histories, "sample": "every history"}
    n = plan.histories if plan.coverage_sample is None else min(plan.coverage_sample, plan.histories)
    return {"engine": "fast", "histories": pa.coverage_histories, "sample": "every history",
            "cross_checked": (f"the reference also ran the first {n} histories (seeds {plan.seed}..{plan.seed + n - 1})"
                              " whole and must agree" if n else "none (--coverage-sample 0)")}


def _engine(plan: Plan, protocol: str, pa: ProtocolAggregate) -> dict:
    fast = plan.engines.get(protocol) == "fast"
    return {"engine": plan.engines.get(protocol, "reference"),
            "judge": ("every history with a violation" if plan.judge == "all" else
                      f"every history with an unexpected violation, and about 1 in {JUDGE_EVERY} of those whose "
                      f"violations are all expected (by a hash of the history's index)") if fast else None,
            "histories_by_engine": dict(sorted(pa.engines.items())),
            "judged_by_reference": pa.engines.get("both", 0) + pa.engines.get("mismatch", 0),
            "mismatches": pa.engines.get("mismatch", 0), "mismatch_seeds": pa.mismatches}


def _coverage(plan: Plan, protocol: str, pa: ProtocolAggregate) -> dict:
    actions, branches = _universes(plan, protocol)
    hit_a = sorted(set(actions) & pa.actions)
    hit_b = sorted(set(branches) & pa.branches)
    return {
        "source": coverage_source(plan, protocol, pa),
        "actions": {"hit": len(hit_a), "total": len(actions), "missed": sorted(set(actions) - pa.actions),
                    "hit_items": hit_a, "outside_universe": sorted(pa.actions - set(actions))},
        "branches": {"hit": len(hit_b), "total": len(branches), "missed": sorted(set(branches) - pa.branches),
                     "hit_items": hit_b},
        "kinds_seen": sorted(pa.kinds),
        "distinct_states": {"estimate": sketch.estimate(pa.registers), "relative_error": round(sketch.RELATIVE_ERROR, 4),
                            "method": f"HyperLogLog p={sketch.P} over 64-bit fingerprints of the observable state "
                                      "(histories.fast.core.sketch)"},
    }


def _violation_entry(protocol: str, prop: props.Property | None, tally: Any, cexs: dict) -> dict:
    first = tally.first_unexpected or tally.first_expected
    out = {"protocol": protocol, "kind": prop.kind if prop else None, "statement": prop.statement if prop else None,
           "histories": tally.histories, "unexpected": tally.unexpected, "expected": tally.expected,
           "causes": dict(sorted(tally.causes.items(), key=lambda kv: (-kv[1], kv[0]))[:10]),
           "shortest": {k: first.get(k) for k in ("seed", "profile", "nodes", "variant", "config", "step", "t_ms",
                                                  "detail")}}
    cex = cexs.get((protocol, prop.id if prop else None))
    if cex is not None:
        out["counterexample"] = cex
        out["trace"] = cex.get("trace")
        out["replay"] = cex.get("replay")
    return out


def build(plan: Plan, agg: Aggregate, master: str, timing: dict, outputs: dict, cexs: dict,
          shrinking: dict | None = None) -> dict:
    """The report.json document (module docstring; docs/fuzzing.md lists every key).
    Its wall time is the sum of `timing` until finish_timing gives the whole run's."""
    by_protocol = {}
    violations: dict[str, dict] = {}
    expected_found: dict[str, int] = {}
    ids_seen: dict[str, int] = {}
    for p in plan.protocols:
        for pid in agg.protocols.get(p, ProtocolAggregate()).violations:
            ids_seen[pid] = ids_seen.get(pid, 0) + 1
    for p in plan.protocols:
        pa = agg.protocols.get(p, ProtocolAggregate())
        catalogue = {q.id: q for q in props.for_protocol(p)}
        pv = {}
        for pid in sorted(pa.violations):
            entry = _violation_entry(p, catalogue.get(pid), pa.violations[pid], cexs)
            pv[pid] = entry
            key = pid if ids_seen[pid] == 1 else f"{p}/{pid}"
            violations[key] = entry
            if entry["expected"]:
                expected_found[key] = entry["expected"]
        profiles = {}
        for name in plan.profiles[p]:
            c = pa.profiles.get(name, {})
            n = c.get("histories", 0)
            prof = faults.profile(name, p)
            profiles[name] = {
                "histories": n, "steps": c.get("steps", 0), "violating_histories": c.get("violating", 0),
                "unexpected_histories": c.get("unexpected", 0),
                "faults_per_history": {k[6:]: round(v / n, 2) for k, v in sorted(c.items()) if k.startswith("fault:")}
                if n else {},
                "description": prof.description, "calm_at_ms": prof.calm_at_ms}
        by_protocol[p] = {
            "histories": pa.histories, "steps": pa.steps, "simulated_s": round(pa.sim_ms / 1000, 1),
            "stopped": dict(sorted(pa.stopped.items())), "nodes": {str(k): v for k, v in sorted(pa.nodes.items())},
            "profiles": profiles,
            "variants": _variants(pa),
            "properties": {q.id: {"kind": q.kind, "violating_histories": pa.violations[q.id].histories
                                  if q.id in pa.violations else 0} for q in catalogue.values()},
            "violations": pv,
            "engine": _engine(plan, p, pa),
            "coverage": _coverage(plan, p, pa),
            "stats": {name: h.summary() for name, h in sorted(pa.dists.items())},
        }
    steps = agg.steps
    report = {
        "schema": SCHEMA,
        "protocol": plan.protocols[0] if len(plan.protocols) == 1 else "all",
        "protocols": list(plan.protocols),
        "histories": agg.histories, "steps": steps,
        "seeds": [plan.seed, plan.seed + plan.histories - 1], "max_steps": plan.steps, "tail_ms": plan.tail_ms,
        "config": dict(plan.overrides),
        "vary": plan.vary,
        "versions": {p: {label: v["variants"].get("version", {}).get(label) for label, _ in plan.versions[p]}
                     for p, v in by_protocol.items() if len(plan.versions[p]) > 1},
        "unexpected_histories": sum(pa.profiles[x].get("unexpected", 0) for pa in agg.protocols.values()
                                    for x in pa.profiles),
        "engine": plan.engine,
        "engines": {p: plan.engines.get(p, "reference") for p in plan.protocols},
        "fast_mismatches": sum(pa.engines.get("mismatch", 0) for pa in agg.protocols.values()),
        "violations": violations,
        "expected_violations_found": expected_found,
        "coverage": {p: {"actions": [v["coverage"]["actions"]["hit"], v["coverage"]["actions"]["total"]],
                         "branches": [v["coverage"]["branches"]["hit"], v["coverage"]["branches"]["total"]],
                         "distinct_states": v["coverage"]["distinct_states"]["estimate"],
                         "histories": v["coverage"]["source"]["histories"]}
                     for p, v in by_protocol.items()},
        "stats": {p: {k: {x: s.get(x) for x in ("count", "min", "p50", "p90", "p99", "max", "mean")}
                      for k, s in v["stats"].items()} for p, v in by_protocol.items()},
        "by_protocol": by_protocol,
        "shrinking": shrinking or {"counterexamples": 0, "by_property": []},
        "master": master,
        "outputs": outputs,
    }
    finish_timing(report, timing, sum(timing.values()))
    return report


def finish_timing(report: dict, timing: dict, wall_s: float) -> None:
    """The run keys of time: `wall_s` (the whole run), `timing` (its parts, TIMING_PARTS,
    and `other_s`, the rest: planning, aggregating coverage, ...), and the histories'
    throughput (`steps_per_s`, `histories_per_s`: over `histories_s` alone)."""
    parts = {k: round(timing[k], 2) for k in TIMING_PARTS if k in timing}
    parts["other_s"] = round(max(0.0, wall_s - sum(timing.get(k, 0.0) for k in TIMING_PARTS)), 2)
    job_s = timing.get("histories_s") or 0
    report["wall_s"] = round(wall_s, 2)
    report["timing"] = parts
    report["steps_per_s"] = round(report["steps"] / job_s) if job_s else None
    report["histories_per_s"] = round(report["histories"] / job_s, 1) if job_s else None


# --- writing ---


def draw_plots(report: dict, out_dir: str) -> dict:
    """plots/<protocol>-{distributions,coverage}.png, named in report["outputs"]["plots"]
    (nothing where matplotlib is missing)."""
    pictures: dict[str, dict[str, str]] = {}
    if plots.available():
        folder = files.subfolder(out_dir, "plots")
        for p, v in report["by_protocol"].items():
            pictures[p] = {
                "distributions": plots.distributions(os.path.join(folder, f"{p}-distributions.png"),
                                                     f"{p}: per-history distributions", v["stats"]),
                "coverage": plots.coverage(os.path.join(folder, f"{p}-coverage.png"), f"{p}: coverage",
                                           *_coverage_groups(v["coverage"]))}
    report["outputs"] = dict(report.get("outputs") or {}) | {
        "plots": {p: {k: os.path.relpath(x, out_dir) for k, x in d.items()} for p, d in pictures.items()}}
    return pictures


def write(report: dict, out_dir: str, with_plots: bool = True) -> dict:
    """report.json and report.md (and first the plots, unless with_plots is False: a
    caller that timed draw_plots itself passes False); returns the paths written."""
    files.out_folder(out_dir)
    written = {"report_json": os.path.join(out_dir, "report.json"), "report_md": os.path.join(out_dir, "report.md")}
    if with_plots:
        draw_plots(report, out_dir)
    report["outputs"] = {"plots": {}} | dict(report.get("outputs") or {}) | {"report_md": "report.md"}
    files.write_text(written["report_json"], json.dumps(report, indent=2, sort_keys=False) + "\n")
    files.write_text(written["report_md"], markdown(report))
    return written


def _coverage_groups(cov: dict) -> tuple[dict, dict]:
    """Hit/total per event kind (actions) and per enum (branches), for the coverage plot."""
    groups = []
    for part, sep in (("actions", "@"), ("branches", ".")):
        g: dict[str, list[int]] = {}
        for item in cov[part]["hit_items"]:
            c = g.setdefault(item.split(sep)[0], [0, 0])
            c[0] += 1
            c[1] += 1
        for item in cov[part]["missed"]:
            g.setdefault(item.split(sep)[0], [0, 0])[1] += 1
        groups.append({k: (v[0], v[1]) for k, v in sorted(g.items())})
    return groups[0], groups[1]


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:g}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def markdown(r: dict) -> str:
    """A readable report: what ran, the verdict, violations with counterexamples,
    coverage, distributions and the fault profiles."""
    out = [f"# rmqspec fuzz report: {', '.join(r['protocols'])}", "",
           f"{r['histories']:,} histories, {r['steps']:,} events, seeds {r['seeds'][0]}..{r['seeds'][1]}, "
           f"at most {r['max_steps']:,} events each (or {r['tail_ms'] // 1000} s after faults stop); "
           f"master `{r['master']}`.", "", timing_line(r), ""]
    if r.get("config"):
        out += [f"Config overrides for every history: `{json.dumps(r['config'], sort_keys=True)}`.", ""]
    unexpected = {k: v for k, v in r["violations"].items() if v["unexpected"]}
    out += ["**Verdict:** " + (f"UNEXPECTED violations of {', '.join(unexpected)}" if unexpected
                               else "no unexpected violation") +
            (f"; expected violations found: {', '.join(r['expected_violations_found'])}"
             if r["expected_violations_found"] else "") + ".", ""]
    view = (r.get("outputs") or {}).get("view")
    if view:
        out += [f"Step through the counterexamples in a browser: [{view}]({view}) (docs/view.md; "
                f"`rmqspec view {(r.get('outputs') or {}).get('dir') or 'DIR'}` writes it again).", ""]
    out += shrinking_lines(r)
    for p, v in r["by_protocol"].items():
        out += [f"## {p}", "", "| profile | histories | events | violating | unexpected | faults per history |",
                "|---|---:|---:|---:|---:|---|"]
        for name, pr in v["profiles"].items():
            fph = ", ".join(f"{k} {x:g}" for k, x in pr["faults_per_history"].items()) or "-"
            out.append(f"| {name} | {pr['histories']:,} | {pr['steps']:,} | {pr['violating_histories']:,} | "
                       f"{pr['unexpected_histories']:,} | {fph} |")
        out += _variants_md(v["variants"])
        out += ["", "### Properties", "", "| ID | kind | violating histories | unexpected | expected | counterexample |",
                "|---|---|---:|---:|---:|---|"]
        for pid, q in v["properties"].items():
            viol = v["violations"].get(pid)
            cex = viol.get("counterexample") if viol else None
            link = (f"[{os.path.basename(cex['trace'])}]({_rel(r, cex['note'])})" if cex and cex.get("trace")
                    else "not reproduced" if cex else "-")
            out.append(f"| {pid} | {q['kind']} | {q['violating_histories']:,} | "
                       f"{viol['unexpected'] if viol else 0:,} | {viol['expected'] if viol else 0:,} | {link} |")
        for pid, viol in v["violations"].items():
            cex = viol.get("counterexample")
            ran = ", ".join(f"{a} {x}" for a, x in (viol["shortest"].get("variant") or {}).items())
            out += ["", f"#### {pid}: {'UNEXPECTED' if viol['unexpected'] else 'expected'}", "",
                    f"{viol['statement']}", "",
                    f"Shortest failing history: seed {viol['shortest']['seed']}, profile "
                    f"{viol['shortest']['profile']}, {viol['shortest']['nodes']} nodes"
                    + (f" ({ran})" if ran else "") + f", step "
                    f"{viol['shortest']['step']}: {viol['shortest']['detail']}", ""]
            for cause, n in viol["causes"].items():
                out.append(f"- known cause ({n:,} histories): {cause}")
            if cex and not cex.get("trace"):
                out += ["", f"The history did not fail again when replayed (a bug in rmqspec): {cex.get('error')}"]
            elif cex:
                out += ["", f"Shrunk to {cex['choices']} chosen events ({cex['faults']} faults) of "
                            f"{cex['original_events']}; {cex['trace_steps']} steps in the trace"
                            + ("" if cex["verified"] else " (NOT reproduced by replay: a bug in rmqspec)") + ".", "",
                        "    " + cex["replay"], ""]
                if cex.get("picture"):
                    out.append(f"![{pid} timeline]({_rel(r, cex['picture'])})")
        eng = v["engine"]
        out += ["", f"Engine: {eng['engine']}"
                + (f"; the reference re-ran {eng['judged_by_reference']:,} histories ({eng['judge']}, and the "
                   f"coverage sample): the fast world disagreed in {eng['mismatches']:,}"
                   + (f" (seeds {', '.join(str(m['seed']) for m in eng['mismatch_seeds'])}; a bug in the fast "
                      "world, the reference's verdicts are the ones counted)" if eng["mismatches"] else "")
                   if eng["engine"] == "fast" else "") + "."]
        cov = v["coverage"]
        ds = cov["distinct_states"]
        out += ["", "### Coverage", "",
                f"Computed by the {cov['source']['engine']} over {cov['source']['histories']:,} histories: "
                f"{cov['source']['sample']}.", "",
                f"- actions (event kind at role): {cov['actions']['hit']}/{cov['actions']['total']}; never: "
                + (", ".join(cov["actions"]["missed"]) or "none"),
                f"- branches (result codes): {cov['branches']['hit']}/{cov['branches']['total']}; never: "
                + (", ".join(cov["branches"]["missed"]) or "none"),
                f"- distinct observable states: about {ds['estimate']:,} (±{ds['relative_error']:.1%}, {ds['method']})",
                f"- message and observation kinds seen: {', '.join(cov['kinds_seen'])}", ""]
        plots_p = (r.get("outputs") or {}).get("plots", {}).get(p, {})
        if plots_p.get("coverage"):
            out += [f"![{p} coverage]({plots_p['coverage']})", ""]
        out += ["### Distributions (per history)", "", "| quantity | n | min | p50 | p90 | p99 | max | mean |",
                "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for name, s in v["stats"].items():
            if s.get("count"):
                out.append(f"| {name} | {s['count']:,} | " + " | ".join(_fmt(s[k]) for k in
                                                                        ("min", "p50", "p90", "p99", "max", "mean")) + " |")
        if plots_p.get("distributions"):
            out += ["", f"![{p} distributions]({plots_p['distributions']})"]
        out += ["", "### Fault profiles", ""]
        for name, pr in v["profiles"].items():
            tail = f"faults stop at {pr['calm_at_ms'] / 1000:g} s" if pr["calm_at_ms"] is not None else "no quiet tail"
            out.append(f"- **{name}** ({tail}): {pr['description']}")
        out.append("")
    out += ["Quantiles come from log-bucketed histograms (8 buckets per power of two); `stat:*` rows are the "
            "protocol's measured quantities (spec/<protocol>.py `measure`). See docs/fuzzing.md.", ""]
    return "\n".join(out)


def timing_line(r: dict) -> str:
    """The run's wall time with its parts, in words."""
    t = r.get("timing") or {}
    names = {"startup_s": "Spark start-up", "histories_s": "histories", "shrink_s": "shrinking",
             "plots_s": "plots", "write_s": "writing traces, notes and pages", "other_s": "other"}
    parts = []
    for key, name in names.items():
        if key not in t:
            continue
        text = f"{name} {t[key]:g} s"
        if key == "histories_s" and r.get("steps_per_s"):
            text += f" ({_fmt(r['steps_per_s'])} events/s, {_fmt(r['histories_per_s'])} histories/s)"
        if key == "shrink_s" and r.get("shrink_workers"):
            text += f" (on {r['shrink_workers']})"
        parts.append(text)
    return f"The run took {r['wall_s']:g} s: " + ", ".join(parts) + "."


def shrinking_lines(r: dict) -> list[str]:
    """What was shrunk how far, in words (report.json `shrinking`)."""
    sh = r.get("shrinking") or {}
    if not sh.get("counterexamples"):
        return []
    line = (f"Shrinking: {sh['counterexamples']} counterexample(s), a budget of "
            f"{sh['budget_unexpected']:,} replayed steps for an unexpected violation and "
            f"{sh['budget_expected']:,} for an expected one; {sh['one_minimal']} are 1-minimal (no single chosen "
            f"event can go)")
    short = [x for x in sh["by_property"] if x.get("one_minimal") is False]
    if short:
        line += "; cut short by the budget: " + ", ".join(
            f"{x['protocol']} {x['property']} ({x['original_events']:,} -> {x['choices']:,} events)" for x in short)
    lost = [x for x in sh["by_property"] if "error" in x]
    if lost:
        line += "; NOT reproduced on replay (a bug in rmqspec): " + ", ".join(
            f"{x['protocol']} {x['property']}" for x in lost)
    return [line + ".", ""]
def _variants_md(variants: dict) -> list[str]:
    """What varied between the histories (versions first: 4.9.4's own against `fixed`)."""
    if not variants:
        return []
    out = ["", "### Versions and configurations", "",
           "Versions are cycled; the other axes are drawn per history (docs/fuzzing.md, \"Variants\").", "",
           "| axis | value | histories | violating | unexpected | violated (unexpected) | top expected causes |",
           "|---|---|---:|---:|---:|---|---|"]
    for axis in sorted(variants, key=lambda a: (a != "version", a)):
        for value, x in variants[axis].items():
            viol = ", ".join(f"{pid} {n} ({u})" if u else f"{pid} {n}" for pid, (n, u) in x["properties"].items())
            causes = "; ".join(f"{n}: {c[:90]}" for c, n in list(x["causes"].items())[:2])
            out.append(f"| {axis} | {value} | {x['histories']:,} | {x['violating_histories']:,} | "
                       f"{x['unexpected_histories']:,} | {viol or '-'} | {causes or '-'} |")
    return out


def _rel(r: dict, path: str) -> str:
    base = (r.get("outputs") or {}).get("dir")
    return os.path.relpath(path, base) if base else path
