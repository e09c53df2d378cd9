"""Tolerant validation: search for a reference execution that explains an implementation log.

Theory of operation
-------------------
An implementation log (histories/impl_log.py, docs/conformance.md) records what happened
in the implementation's own terms. Validating it means finding a reference execution
(a sequence of world events) that writes it, the way TLA+ trace validation searches a
spec's behaviours for one that matches an etcd raft or CCF log.

The checker keeps a *frontier*: the reference executions (as search states) that explain
the log up to the current line. A search state is a world, the lines the reference has
written that the log has not shown yet (*pending*, each with the time the reference
wrote it), and per node how many draws it has written. For the next log line it tries,
from every frontier state:

1. a pending line that matches it (the oldest): the implementation wrote it later than
   the reference's order would suggest (a *reordering*, e.g. a handler thread logging
   while the maintainer is mid-round);
2. else a breadth-first search over reference events: ticks, deliveries, RPC failures
   and message drops that the reference enables, each at a time chosen to match the log,
   until an event writes the line. Events on the way that write nothing the log records
   are *hidden* (a round's parse tick, a reply to a finished round, a drop behind a cut
   link); lines they or the explaining event write besides the line go to pending, and
   must appear later in the log, within the slack of their time.

World facts (crash, restart, partition, heal) are applied when their line comes, whatever
the fault profile says. A `MemberState`-like snapshot line is explained by a state whose
node shows those fields. The states that explain the line, deduplicated, form the next
frontier.

Time is the implementation's clock. Its `t_ms` is an observation: the reference's time
of the event that writes a line may differ from it by the slack (`--slack-ms`, default 50
ms: thread scheduling, log-writing delay). The reference runs with Java timing plus the
same allowance on top of its own windows: a due tick may fire up to its loop period plus
the slack late (`Tick.late`), a message takes 0 to the declared maximum delay plus the
slack, an async RPC timeout fires within Netty's scan period (`RpcFail.late`); the search
picks the lateness that puts each event at its line's time. Lines with no `t_ms` only
constrain the order, within a window of lines. A logged draw (`nextInt(bound) = r`) is the
smallest tick draw that scales to r; an unlogged one is an unknown the search tries.

Bounds (`Options`): at most `max_depth` reference events between two log lines, at most
`max_states` search states expanded per line, at most `beam` executions kept between
lines. The report says how often each was hit; a log rejected after a bound was hit may
be explainable with a larger bound.
"""

from __future__ import annotations

from collections.abc import Callable

from histories import impl_log as il
from histories.tolerant.checker import Checker
from histories.tolerant.records import Options, Result, State, Stats
from histories.tolerant.scheduler import tolerant_protocol, world_config

__all__ = ["Checker", "Options", "Result", "State", "Stats", "check", "tolerant_protocol", "world_config"]


def check(log: il.ImplLog, opts: Options | None = None, progress: Callable[[int, int], None] | None = None) -> Result:
    """Validate an implementation log: accepted with what was inferred, or rejected with the
    longest explained prefix, the line nothing explains and the closest executions.
    `progress(done, total)` is called every 500 lines."""
    return Checker(log, opts, progress).run()
