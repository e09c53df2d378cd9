"""Hypothesis profiles: `ci` (derandomized, bounded: what .ci/run uses), `dev` (the
default for local runs, randomized, heavier) and `nightly` (long). Pick one with
HYPOTHESIS_PROFILE."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", derandomize=True, max_examples=30, stateful_step_count=60, deadline=None,
                          database=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=150, stateful_step_count=120, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("nightly", max_examples=3000, stateful_step_count=400, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
