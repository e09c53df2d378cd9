"""The reference under the implementation's scheduler: every tick's window widened by the slack
(Java's loop period plus a scheduling allowance; a server that runs several threads keeps
each thread's own window), messages within the declared delay plus the
slack, no fault but the log's own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from histories import impl_log as il
from histories.tolerant.records import Options
from reference_impl import core
from reference_impl.core import faults

_TOLERANT: dict[tuple[str, int], str] = {}


def _log_points(name: str) -> Any:
    try:
        return il.log_points(name)
    except il.LogError:
        return None


def java_slack(name: str) -> Callable | None:
    """The protocol's own tick slack, or else the Java polling its log points declare
    (`tick_slack` in reference_impl/<protocol>/log_points.py: a loop that looks only every so
    often, where the model acts the ms a condition becomes true)."""
    own = core.protocol(name).tick_slack
    if own is None:
        own = getattr(_log_points(name), "tick_slack", None)
    return own


def java_thread_slack(name: str) -> Callable | None:
    """For a protocol whose nodes run several threads (`Protocol.threads`): each thread's own
    slack under Java timing (`thread_slack`, (c, n, thread, since, wake) -> ms); None otherwise."""
    p = core.protocol(name)
    return p.thread_slack if p.threads is not None else None


def tolerant_protocol(name: str, slack: int) -> str:
    """The protocol `name` with every tick's window widened by `slack` ms (Java's loop period
    plus a scheduling allowance; a protocol whose nodes run several threads keeps their own),
    registered under a name of its own; the node transitions are the protocol's own. It keeps no ghost variables: what it runs is judged by the lines
    it writes, not by properties, and the ghost's bookkeeping would be most of a step's cost."""
    key = (name, slack)
    if key not in _TOLERANT:
        p = core.protocol(name)
        own = java_slack(name)

        def tick_slack(c: Any, n: Any, since: int, wake: int, own: Callable | None = own) -> int:
            return (own(c, n, since, wake) if own is not None else 0) + slack

        derived = f"{name}+slack{slack}"
        wrapped = p.evolve(name=derived, tick_slack=tick_slack, ghost_update=_no_ghost, ghost_crash=None)
        # A server that runs several threads keeps each thread's own Java window (`thread_slack`),
        # without the allowance: widened, a new leader's five threads and the cold start's vote
        # rounds multiply the executions past the beam (a log that was explained no longer was).
        # Its lines still match the log within the slack in time (docs/conformance.md, "Time").
        adapt = getattr(_log_points(name), "under_implementation", None)
        if adapt is not None:  # the protocol's own world events, as a log can tell them apart
            wrapped = adapt(wrapped)
        core.register(derived, lambda wrapped=wrapped: wrapped, listed=False)
        _TOLERANT[key] = derived
    return _TOLERANT[key]


def _no_ghost(ghost: Any, w: Any, i: int, obs: Any) -> Any:
    return ghost


def world_config(log: il.ImplLog, opts: Options) -> core.WorldConfig:
    # a process's threads begin up to the allowance later than Java's start-up stagger (a cold JVM
    # loads classes before a server's first loop)
    prof = faults.FaultProfile(name="tolerant", delay_ms=(0, log.delay_ms[1] + opts.slack_ms), timing="java",
                               stagger_ms=faults.STAGGER_MS + opts.slack_ms,
                               description="the implementation's scheduler: Java timing plus the slack")
    return log.cfg.evolve(protocol=tolerant_protocol(log.cfg.protocol, opts.slack_ms), profile=prof)
