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

from model_checks import contracts

LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+): (?P<level>info|error|warning): (?P<msg>.*)$")


@attrs.define
class Condition:
    contract: str
    condition: str
    line: int
    status: str = "unknown"  # "confirmed", "counterexample", "unknown"
    message: str = ""


def conditions(module=contracts) -> list[Condition]:  # noqa: ANN001
    """Every postcondition of every contract of `module` (its CONTRACTS), with its source line."""
    out = []
    for fn in module.CONTRACTS:
        lines, first = inspect.getsourcelines(fn)
        for offset, text in enumerate(lines):
            stripped = text.strip()
            if stripped.startswith("post:"):
                out.append(Condition(fn.__name__, stripped[5:].strip(), first + offset))
    return out


def run(per_condition_timeout: float = 4.0, workers: int = 2, module=contracts  # noqa: ANN001
        ) -> tuple[list[Condition], float]:
    start = time.perf_counter()
    conds = conditions(module)
    path = inspect.getsourcefile(module)
    names = [fn.__name__ for fn in module.CONTRACTS]
    groups = [names[i::workers] for i in range(workers)]
    exe = os.path.join(os.path.dirname(sys.executable), "crosshair")
    cmd = [exe] if os.path.exists(exe) else [sys.executable, "-m", "crosshair"]
    procs = []
    for group in groups:
        if not group:
            continue
        targets = [f"{module.__name__}.{n}" for n in group]
        procs.append(subprocess.Popen(
            cmd + ["check", "--report_all", "--analysis_kind", "PEP316",
                   "--per_condition_timeout", str(per_condition_timeout), *targets],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            cwd=os.path.dirname(os.path.dirname(path)), env=_env()))
    by_line = {c.line: c for c in conds}
    errors = []
    for p in procs:
        out, err = p.communicate()
        for raw in out.splitlines():
            m = LINE.match(raw.strip())
            if not m or os.path.basename(m["path"]) != os.path.basename(path):
                continue
            cond = by_line.get(int(m["line"]))
            msg = m["msg"]
            if cond is None:
                errors.append(raw)
                continue
            if m["level"] == "error":
                cond.status, cond.message = "counterexample", msg
            elif msg.startswith("Confirmed"):
                cond.status, cond.message = "confirmed", msg
            else:
                cond.status, cond.message = "unknown", msg
        if p.returncode not in (0, 1):
            errors.append(f"crosshair exited {p.returncode}: {err.strip()[-300:]}")
    for raw in errors:
        conds.append(Condition("(crosshair)", raw, 0, "counterexample", raw))
    return conds, time.perf_counter() - start


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
            print(f"  {c.status:14s} {c.contract}: post: {c.condition}  -- {c.message}", file=out)
