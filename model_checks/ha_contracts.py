"""CrossHair over the HA wire codec's contracts (reference_impl.ha.wire docstrings, PEP 316).

CrossHair explores each function symbolically and looks for inputs that meet the
`pre:` conditions but break a `post:` condition; `per_condition_timeout` bounds the
CPU seconds spent on each condition, so the check is a bounded search, not a proof.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

MODULES = ("reference_impl.ha.wire",)
ROOT = pathlib.Path(__file__).resolve().parent.parent


def run(per_condition_timeout: float = 1.0) -> tuple[bool, str]:
    """Check every contract of MODULES; (ok, CrossHair's report of counterexamples)."""
    cmd = [sys.executable, "-m", "crosshair", "check", *MODULES, "--analysis_kind=PEP316",
           f"--per_condition_timeout={per_condition_timeout}"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    return proc.returncode == 0, (proc.stdout + proc.stderr).strip()


if __name__ == "__main__":
    ok, report = run(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
    print(report or "no counterexample found")
    sys.exit(0 if ok else 1)
