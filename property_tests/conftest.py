"""Hypothesis profiles: `ci` (derandomized, bounded: what .ci/run uses), `dev` (the
default for local runs, randomized, heavier) and `nightly` (long). Pick one with
HYPOTHESIS_PROFILE
(`mutants` is `ci` without shrinking, for `rmqspec mutants`)."""

import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, Phase, settings

from reference_impl.core import schedule

settings.register_profile("ci", derandomize=True, max_examples=30, stateful_step_count=60, deadline=None,
                          database=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=150, stateful_step_count=120, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("nightly", max_examples=3000, stateful_step_count=400, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
# `rmqspec mutants`: the ci budget without shrinking (a verdict needs a failure, not the smallest one)
settings.register_profile("mutants", parent=settings.get_profile("ci"), print_blob=False,
                          phases=[Phase.explicit, Phase.reuse, Phase.generate])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


# the modules whose compile_seconds() compiles (or loads) Numba kernels: the twins, the explorer
_KERNELS = ("histories.fast.election.runner", "histories.fast.dledger_log.runner", "model_checks.explore_fast")


def pytest_configure(config):
    """Under pytest-xdist (`make test` runs -n auto) the controller compiles the fast worlds'
    kernels before the workers start, one process per module: otherwise every worker compiles the
    same kernels at once (about 150 CPU-seconds a twin when this version of histories/fast is new
    to the machine) instead of loading them from Numba's cache (histories/fast/core/cache.py). A
    failed compile is left to the tests that need the kernels to report."""
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        procs = [subprocess.Popen([sys.executable, "-c", f"import {m}; {m}.compile_seconds()"]) for m in _KERNELS]
        for p in procs:
            p.wait()


@pytest.fixture(autouse=True)
def _fresh_memos():
    """No test sees another's wake-time memos: a test that swaps a reference function
    (a mutant, monkeypatch) would otherwise leave entries computed with it behind."""
    yield
    schedule.forget()


# `rmqspec mutants` runs the Hypothesis machines against one test-only mutant
# (property_tests/support/mutation.py) by naming it here; never set in a normal run.
if os.environ.get("RMQSPEC_MUTANT"):
    from property_tests.support import mutation

    mutation.install(os.environ["RMQSPEC_MUTANT"])
