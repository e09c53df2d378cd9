"""Run CrossHair over the contracts of model_checks.contracts and report every condition.

CrossHair runs in child processes (it patches the interpreter while it analyses), the
contracts split between them, each condition with a CPU-time limit. A condition is

- confirmed: CrossHair explored every execution path and the postcondition held;
- counterexample: CrossHair found inputs that satisfy the preconditions and break it;
- unknown: neither within the time limit (reported as such, never as a pass).
"""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
import time

import attrs

from model_checks import contracts, ha_contracts

LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+): (?P<level>info|error|warning): (?P<msg>.*)$")


@attrs.define
class Condition:
    contract: str
    condition: str
    line: int
    status: str = "unknown"  # "confirmed", "counterexample", "unknown"
    message: str = ""
    module: str = ""


def contract_functions(module) -> list:  # noqa: ANN001
    """The module's contracts: its CONTRACTS if it lists them, else every function
    defined in it whose docstring states a `post:` condition (e.g. reference_impl.ha.wire)."""
    if hasattr(module, "CONTRACTS"):
        return list(module.CONTRACTS)
    return [fn for _, fn in inspect.getmembers(module, inspect.isfunction)
            if fn.__module__ == module.__name__ and "post:" in (fn.__doc__ or "")]


def conditions(module=contracts) -> list[Condition]:  # noqa: ANN001
    """Every postcondition of every contract of `module`, with its source line."""
    out = []
    for fn in contract_functions(module):
        lines, first = inspect.getsourcelines(fn)
        for offset, text in enumerate(lines):
            stripped = text.strip()
            if stripped.startswith("post:"):
                out.append(Condition(fn.__name__, stripped[5:].strip(), first + offset, module=module.__name__))
    return out


def _spans(module) -> list[tuple[int, int, str]]:  # noqa: ANN001
    out = []
    for fn in contract_functions(module):
        lines, first = inspect.getsourcelines(fn)
        out.append((first, first + len(lines) - 1, fn.__name__))
    return out


def modules() -> tuple:
    """The modules whose contracts `rmqspec prove` checks: model_checks.contracts and the
    HA wire codec's own (model_checks.ha_contracts.MODULES)."""
    import importlib


    return (contracts, *(importlib.import_module(m) for m in ha_contracts.MODULES))


def run(per_condition_timeout: float = 4.0, workers: int = 2, mods: tuple | None = None
        ) -> tuple[list[Condition], float]:
    """CrossHair over every contract of `mods` (default: modules()), split over `workers`
    child processes; every postcondition comes back with its status."""
    start = time.perf_counter()
    mods = mods or modules()
    conds, by_key, spans, targets = [], {}, {}, []
    for module in mods:
        path = os.path.abspath(inspect.getsourcefile(module))
        cs = conditions(module)
        conds += cs
        by_key.update({(path, c.line): c for c in cs})
        spans[path] = _spans(module)
        targets += [f"{module.__name__}.{fn.__name__}" for fn in contract_functions(module)]
    groups = [targets[i::workers] for i in range(workers)]
    exe = os.path.join(os.path.dirname(sys.executable), "crosshair")
    cmd = [exe] if os.path.exists(exe) else [sys.executable, "-m", "crosshair"]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    procs = [subprocess.Popen(
        cmd + ["check", "--report_all", "--analysis_kind", "PEP316",
               "--per_condition_timeout", str(per_condition_timeout), *group],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=root, env=_env()) for group in groups if group]
    extra = []
    for p in procs:
        out, err = p.communicate()
        for raw in out.splitlines():
            m = LINE.match(raw.strip())
            if not m:
                continue
            path = os.path.abspath(os.path.join(root, m["path"]))
            line, msg = int(m["line"]), m["msg"]
            cond = by_key.get((path, line))
            if cond is None:
                # An error reported at another line of a contract (an exception raised
                # inside it, a failed precondition check): a counterexample to that contract.
                name = next((n for lo, hi, n in spans.get(path, ()) if lo <= line <= hi), None)
                if m["level"] == "error":
                    extra.append(Condition(name or "(crosshair)", "no exception", line, "counterexample", msg,
                                           os.path.basename(path)))
                continue
            if m["level"] == "error":
                cond.status, cond.message = "counterexample", msg
            elif msg.startswith("Confirmed"):
                cond.status, cond.message = "confirmed", msg
            else:
                cond.status, cond.message = "unknown", msg or "not confirmed within the time limit"
        if p.returncode not in (0, 1):
            extra.append(Condition("(crosshair)", "runs", 0, "counterexample",
                                   f"crosshair exited {p.returncode}: {err.strip()[-300:]}"))
    for c in conds:
        if c.status == "unknown" and not c.message:
            c.message = "not confirmed within the time limit"
    return conds + extra, time.perf_counter() - start


def _env() -> dict:
    """The child sees the packages this process sees (the repository root first)."""
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    return env


def print_report(conds: list[Condition], seconds: float, out) -> None:  # noqa: ANN001
    counts = {s: sum(c.status == s for c in conds) for s in ("confirmed", "counterexample", "unknown")}
    print(f"CrossHair: {len(conds)} conditions: {counts['confirmed']} confirmed, "
          f"{counts['counterexample']} counterexample(s), {counts['unknown']} unknown ({seconds:.1f} s)", file=out)
    for c in conds:
        if c.status != "confirmed":
            print(f"  {c.status:14s} {c.module}.{c.contract}: post: {c.condition}  -- {c.message}", file=out)
