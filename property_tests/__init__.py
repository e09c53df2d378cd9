"""pytest + Hypothesis suites: unit tests per transition branch, stateful machines per
world, and scenario tests named after the Java tests they mirror.

The suites run with frozen records (reference_impl.core.state): a transition that
assigns to a field instead of calling `evolve` fails here. This package is imported
before its conftest and any test module, so the setting is in place before any record
class is made; subprocesses (the CLI, Spark's workers) inherit it."""

import os

os.environ.setdefault("RMQSPEC_FROZEN_RECORDS", "1")
