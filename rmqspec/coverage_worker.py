"""The process `rmqspec bench --coverage` measures one protocol in (rmqspec/branch_coverage.py):

    python -m rmqspec.coverage_worker PROTOCOL HISTORIES SEED DATA_FILE

coverage.py starts before anything of the project is imported, so that the branches a
module takes while it is imported (registries, tables built at import) count like the
others; then the first HISTORIES histories of the protocol's default fuzz plan run on the
reference, and the measurement is saved to DATA_FILE. A line `history K` on stdout follows
each history, for the parent's progress bar.
"""

from __future__ import annotations

import sys
from pathlib import Path

import coverage

REFERENCE = Path(__file__).resolve().parent.parent / "reference_impl"
_tracer = None
if __name__ == "__main__":
    _tracer = coverage.Coverage(branch=True, data_file=sys.argv[4], source=[str(REFERENCE)], config_file=False)
    _tracer.start()

# Imported after the tracer starts, on purpose (module docstring).
from spark_harness.history import run_history  # noqa: E402
from spark_harness.plan import make_plan  # noqa: E402


def main(protocol: str, histories: int, seed: int) -> None:
    plan = make_plan(protocol, histories, seed=seed, engine="reference")
    for k in range(histories):
        run_history(plan.spec(protocol, k))
        print(f"history {k}", flush=True)


if __name__ == "__main__":
    try:
        main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
    finally:
        _tracer.stop()
        _tracer.save()
