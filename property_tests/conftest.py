"""Hypothesis profiles: `ci` (derandomized, bounded: what .ci/run uses), `dev` (the
default for local runs, randomized, heavier) and `nightly` (long). Pick one with
HYPOTHESIS_PROFILE
(`mutants` is `ci` without shrinking, for `rmqspec mutants`).

Tests marked `slow` (long fuzz runs, the standalone Spark cluster, the slow model checks,
the README's long commands) run in `make test-all` and CI, not in `make test`
(docs/benchmarks.md, "The test suite"). A run is never silent for long: the kernels'
compile says what it does and how long it takes, and after 10 s without a line a
heartbeat names the tests still running."""

import functools
import os
import subprocess
import sys
import threading
import time

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
# Longest silence before a line saying what is still going on (issue 29: a compile must not look like a hang)
SILENCE_S = 10


@functools.cache
def _terminal():
    """The terminal as it was when pytest was configured: a copy of stderr's file descriptor
    (taken in pytest_configure), which pytest's output capture (it redirects fds 1 and 2 while it
    collects and runs tests) leaves alone, so a line written here is seen at once."""
    return os.fdopen(os.dup(sys.stderr.fileno()), "w", buffering=1)


_DOTS_SEEN = [""]  # pytest's line of dots when we last wrote (after our line, it is not mid-line)


def _say(config, text: str) -> None:
    """A line on the terminal now, on a line of its own (pytest may be in a line of dots)."""
    reporter = config.pluginmanager.getplugin("terminalreporter")
    dots = getattr(getattr(reporter, "_tw", None), "_current_line", "")
    mid_line = bool(dots) and dots != _DOTS_SEEN[0]
    _DOTS_SEEN[0] = dots
    _terminal().write(("\n" if mid_line else "") + text + "\n")


def _compile_kernels(config) -> None:
    """The controller compiles the fast worlds' kernels before the workers start, one process
    per module: otherwise every worker compiles the same kernels at once instead of loading
    them from Numba's cache (histories/fast/core/cache.py). A line every SILENCE_S seconds says it
    is still compiling. A failed compile is left to the tests that need the kernels to report."""
    _say(config, f"conftest: readying the compiled kernels of the fast worlds ({', '.join(_KERNELS)}), one "
                 "process each, before the workers start: seconds when this version of histories/fast was "
                 "compiled on this machine before (NUMBA_CACHE_DIR or ~/.cache/rmqspec), else a compile of about "
                 "8 CPU-minutes, 4 minutes on 2 idle cores (docs/benchmarks.md)")
    t0 = time.monotonic()
    procs = {m: subprocess.Popen([sys.executable, "-c", f"import {m}; {m}.compile_seconds()"]) for m in _KERNELS}
    next_line = t0 + SILENCE_S
    while procs:
        time.sleep(0.5)
        for m, p in list(procs.items()):
            if p.poll() is not None:
                del procs[m]
                verdict = "ready" if p.returncode == 0 else f"failed (exit {p.returncode}: the tests that need it say why)"
                _say(config, f"conftest: {m} {verdict} after {time.monotonic() - t0:.0f} s")
                next_line = time.monotonic() + SILENCE_S
        if procs and time.monotonic() >= next_line:
            _say(config, f"conftest: still compiling {', '.join(procs)} ({time.monotonic() - t0:.0f} s)")
            next_line += SILENCE_S


class Heartbeat:
    """After SILENCE_S seconds without a test finishing, one line: how many tests are done and
    which are still running, and for how long (under xdist the controller hears of each test's
    start and end from the workers). The tests' own output is untouched."""

    def __init__(self, config) -> None:
        self.config = config
        self.started = self.last = time.monotonic()
        self.running: dict[str, float] = {}
        self.done = 0
        self.total: int | None = None
        self.stop = threading.Event()
        threading.Thread(target=self._beat, name="heartbeat", daemon=True).start()

    def pytest_collection_finish(self, session) -> None:
        self.total = len(session.items)

    @pytest.hookimpl(optionalhook=True)  # an xdist hook: unknown when xdist is off (-p no:xdist)
    def pytest_xdist_node_collection_finished(self, node, ids) -> None:
        self.total = len(ids)

    def pytest_runtest_logstart(self, nodeid, location) -> None:
        self.running[nodeid] = time.monotonic()

    def pytest_runtest_logreport(self, report) -> None:
        self.last = time.monotonic()
        if report.when == "teardown":
            self.running.pop(report.nodeid, None)
            self.done += 1

    def pytest_unconfigure(self, config) -> None:
        self.stop.set()

    def _beat(self) -> None:
        while not self.stop.wait(1.0):
            now = time.monotonic()
            if now - self.last < SILENCE_S:
                continue
            self.last = now
            if self.total is None:
                _say(self.config, f"pytest: collecting the tests (importing the reference, Spark, Numba, Z3), "
                                  f"{now - self.started:.0f} s")
                continue
            running = sorted(self.running.items(), key=lambda kv: kv[1])[:3]
            what = "; ".join(f"{nodeid} ({now - t0:.0f} s)" for nodeid, t0 in running) or "between tests"
            _say(self.config, f"pytest: {self.done} of {self.total} tests done in {now - self.started:.0f} s; "
                              f"running: {what}")

def pytest_configure(config):
    _terminal()  # now, while fd 2 is still the terminal
    controller = not hasattr(config, "workerinput")
    if getattr(config.option, "numprocesses", None) and controller:
        _compile_kernels(config)
    if controller and not config.option.collectonly:
        config.pluginmanager.register(Heartbeat(config), "rmqspec-heartbeat")


@pytest.fixture(autouse=True)
def _fresh_memos():
    """No test sees another's wake-time memos: a test that swaps a reference function
    (a mutant, monkeypatch) would otherwise leave entries computed with it behind."""
    yield
    schedule.forget()


# `rmqspec mutants` runs the Hypothesis machines against one test-only mutant
# (histories/mutants/catalogue.py) by naming it here; never set in a normal run.
if os.environ.get("RMQSPEC_MUTANT"):
    from histories.mutants import catalogue as mutation

    mutation.install(os.environ["RMQSPEC_MUTANT"])
