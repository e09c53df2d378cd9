"""The process `rmqspec bench --coverage` measures one protocol in (rmqspec/branch_coverage.py):

    python -m rmqspec.coverage_worker PROTOCOL HISTORIES SEED DATA_FILE

coverage.py starts before anything of the project is imported, so that the branches a
module takes while it is imported (registries, tables built at import) count like the
others; then the first HISTORIES histories of the protocol's default fuzz plan run on the
reference, and the measurement is saved to DATA_FILE. No property is checked: properties
observe the world and never change it, so the reference takes the same branches, the
tracing costs less, and a branch of the reference that only a property's expected-cause
function calls is not counted as taken by the fuzz. A line `history K` on stdout follows
each history, for the parent's progress bar.
"""

from __future__ import annotations

import signal
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


def _interrupted(signum, frame) -> None:
    raise KeyboardInterrupt


def main(protocol: str, histories: int, seed: int) -> None:
    """Run the histories; SIGTERM or SIGINT ends the run early, and what the whole histories
    took is kept (the parent counts the `history` lines; the one interrupted is discarded
    with the tracer's data of it: the data is saved only up to the last whole history)."""
    plan = make_plan(protocol, histories, seed=seed, engine="reference")
    for k in range(histories):
        _tracer.start()
        try:
            run_history(plan.spec(protocol, k), check=False)
        except KeyboardInterrupt:
            _tracer.stop()
            return
        _tracer.stop()
        _tracer.save()
        print(f"history {k}", flush=True)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _interrupted)
    _tracer.stop()  # imports done: main() traces each history and saves after each whole one
    _tracer.save()
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
