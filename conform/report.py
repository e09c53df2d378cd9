"""A conformance outcome, readable and as JSON."""

from __future__ import annotations

import json
from typing import IO

from conform.session import Mismatch, Outcome, subject


def as_json(out: Outcome, command: str) -> dict:
    return {
        "ok": out.ok, "protocol": out.protocol, "driver": command,
        "implementation": out.hello.implementation, "inputs": list(out.hello.inputs),
        "features": sorted(out.hello.features),
        "cases": out.cases, "kinds": dict(sorted(out.kinds.items())),
        "shrink_cases": out.shrink_cases, "mismatches": out.mismatches, "skipped": out.skipped,
        "flaky": out.flaky,
        "mismatch": None if out.mismatch is None else mismatch_json(out.mismatch),
    }


def mismatch_json(mm: Mismatch) -> dict:
    return {"case": mm.case, "vector": mm.vector_id, "requires": list(mm.requires),
            "expected": mm.expected, "got": mm.got,
            "differences": [{"path": d.path, "expected": d.expected, "got": d.got} for d in mm.differences]}


def print_outcome(out: Outcome, command: str, f: IO[str], vectors: bool = False) -> None:
    impl = f" ({out.hello.implementation})" if out.hello.implementation else ""
    print(f"conform: {out.protocol}, driver {command!r}{impl}", file=f)
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(out.kinds.items(), key=lambda kv: -kv[1]))
    skipped = f"; {out.skipped} vectors need inputs or features the driver does not declare" if out.skipped else ""
    if out.mismatch is None:
        print(f"  {out.cases} {'vectors' if vectors else 'cases'} agree with the reference ({kinds}){skipped}", file=f)
        return
    mm = out.mismatch
    if vectors:
        print(f"  MISMATCH: {out.mismatches} of {out.cases} vectors differ{skipped}; the first, {mm.vector_id}:",
              file=f)
    else:
        shrunk = f"; shrunk with {out.shrink_cases} more cases" if out.shrink_cases else ""
        flaky = " (the driver answered its replay differently: flaky)" if out.flaky else ""
        print(f"  MISMATCH after {out.cases} agreeing cases ({kinds or 'none'}){shrunk}{flaky}:", file=f)
    print_mismatch(out.protocol, mm, f)


def print_mismatch(protocol: str, mm: Mismatch, f: IO[str]) -> None:
    s = subject(protocol)
    wire = {k: v for k, v in mm.case.items() if k != "case"}
    for line in s.describe(wire):
        print(f"  {line}", file=f)
    print("  differs:", file=f)
    for d in mm.differences:
        print(f"    {d.line(s.value_name)}", file=f)
    print(f"  expected: {json.dumps(mm.expected)}", file=f)
    print(f"  got:      {json.dumps(mm.got)}", file=f)
    print(f"  case:     {json.dumps(mm.case)}", file=f)
