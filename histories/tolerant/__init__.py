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

1. a pending line that matches it (the oldest) and whose causes the log has shown: the
   implementation wrote it later than the reference's order would suggest (a
   *reordering*, e.g. a handler thread logging while the maintainer is mid-round);
2. else a breadth-first search over reference events: whatever the reference enables
   (ticks, deliveries, RPC failures, message drops), each at a time chosen to match the
   log, until an event writes the line after all its causes. Events on the way that write
   nothing the log records are *hidden* (a round's parse tick, a reply to a finished round,
   a drop behind a cut link); lines they or the explaining event write besides the line go
   to pending, and must appear later in the log, within the slack of their time.

A line is never assumed to be logged late when another line needs it before in cause
(docs/conformance.md, "What comes first"): a delivery's lines come after the line that
sent the message, a node's lines after its earlier completion lines (a callback logs before
its future completes, and the node acts on the answer after), an answer after the store
writes it reports. Each pending line carries the pending lines it must come after, each
node and each message in flight the pending lines its later lines must come after; a line
whose causes are still pending cannot be consumed, and the log's end excuses no line a
logged one depends on. So a leader's SUCCESS logged before its quorum's acknowledgements is
rejected at its line whatever the slack.

World facts (crash, restart, partition, heal) are applied when their line comes, whatever
the fault profile says. A `MemberState`-like snapshot line is explained by a state whose
node shows those fields. The states that explain the line, deduplicated, form the next
frontier.

Time is the implementation's clock. Its `t_ms` is an observation: the reference's time
of the event that writes a line may differ from it by the slack (`--slack-ms`, default 50
ms: thread scheduling, log-writing delay). The reference runs with Java timing plus the
same allowance on top of its own windows: a due tick may fire up to its loop period plus
the slack late (`Tick.late`; a server whose threads are separate actors keeps each
thread's own Java window, and each tick is timed by its own thread), a message takes 0 to
the declared maximum delay plus the slack, an async RPC timeout fires within Netty's scan period (`RpcFail.late`); the search
picks the lateness that puts each event at its line's time. Lines with no `t_ms` only
constrain the order, within a window of lines. A logged draw (`nextInt(bound) = r`) is the
smallest tick draw that scales to r; an unlogged one is an unknown the search tries.

Bounds (`Options`): at most `max_depth` reference events between two log lines, at most
`max_states` search states expanded per line (shared by the frontier), at most `beam`
executions kept between lines; a retry from a checkpoint with a wider beam expands at most
`max_states` states in all. The report says how often each was hit; a rejection says that
a larger bound might explain the line only when the line's state budget stopped its search.
A rejection names the line that differs and the field, what the reference writes instead
and what it waits for (histories/tolerant/diagnosis.py).

| module | does |
|---|---|
| `records` | options, statistics, a search state (an execution), the result and its reports |
| `scheduler` | the reference under the implementation's scheduler (windows widened by the slack) |
| `lookahead` | the log indexed for looking ahead; the lines the reference writes, interned |
| `search` | one line: the breadth-first search, events timed to the log, what comes first |
| `diagnosis` | the verdict on a line nothing explains |
| `checker` | the whole log: frontier, beam, checkpoints and retries, the verdict |
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
