"""What the command line accepts: the bounds on its numbers, the one-line error for bad
input (exit 2) and the `--config` overrides several commands take."""

from __future__ import annotations

import os

from histories import formats


class UsageError(Exception):
    """Bad input: reported in one line, exit 2."""


INT64 = (-(1 << 63), (1 << 63) - 1)
MAX_STEPS = 10_000_000  # events of one history (simulate): a few minutes of the slowest world
MAX_HISTORIES = 1_000_000  # histories per protocol of one fuzz run
MAX_BUDGET = 100_000_000  # replayed steps of one shrink
MAX_LINES = 1_000_000
MAX_COVERAGE = 1_000_000  # random histories per explore --coverage figure
CORES = os.cpu_count() or 1


def config_overrides(text: str | None) -> dict | None:
    """`--config`: protocol config overrides as a strict JSON object (None when not given)."""
    if not text:
        return None
    if len(text.encode("utf-8", "surrogatepass")) > 1 << 20:
        raise UsageError("--config is longer than 1 MiB")
    return formats.check_overrides(formats.loads(text, "--config"), "--config")
