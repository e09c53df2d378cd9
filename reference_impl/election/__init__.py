"""`election`: DLedger leader election and heartbeat (DLedger 0.2.6, as shipped with RocketMQ 4.9.4).

Theory of operation
-------------------
Models `MemberState`, `DLedgerLeaderElector` and the election entry points of
`DLedgerServer`, read from `io.openmessaging.storage.dledger` at tag dledger-0.2.6.
One `Member` record holds a node's MemberState fields, the elector's fields and the
state of the threads that block in Java, so that a node is one immutable value.

Roles are CANDIDATE (at start), FOLLOWER and LEADER. Terms move only forward, and only
in the candidate's own loop (`next_term`): a node that sees a higher term in a vote or
heartbeat turns CANDIDATE, answers `*_TERM_NOT_READY`, and sets
`need_increase_term_immediately` so that its next loop adopts the term.

Inputs: `on_tick` runs the node's threads that are due at `now` (the state-maintainer
loop, the preferred-leader check, a transferee's catch-up wait); the request handlers
answer RPCs; `on_response` feeds RPC replies, `None` standing for an RPC failure
(the Netty callback with no response). Time (`now`) and randomness (`draw`, a value
in [0, 2**16) standing for `Random.nextInt`) are explicit.

The state maintainer is the heart of it. `maintainState()` runs every 10 ms; a
candidate's vote round and a leader's heartbeat round block it until a latch is
counted down or the wait times out. The model keeps such a round as `VoteRound` /
`HeartBeatRound` (counters, latch, deadline) and parses it when the round ends, as
the Java thread does when `await` returns. Between two loops the thread sleeps
10 ms (`maintainer_sleep_ms`); `wake_at` is when a due condition becomes true or that
sleep ends, whichever is later, and under Java timing the world lets the tick fire up
to one period later when the condition fell due while the loop slept between idle
iterations (`server.wake_slack`; docs/fault-profiles.md). Everything one loop
iteration does is atomic here; Java lets RPC handlers run between its synchronized
blocks.

Persisted: `curr_term` and `curr_vote_for` (the `currterm` file, written by
`setCurrVoteFor` and `nextTerm`, with no fsync). Everything else is volatile;
`ledger_end_index/term` come back from the store. A restarted node is a CANDIDATE
that solicits votes at once at its persisted term.

`ledger_end_index/term` and the followers' water marks are inputs for now (the
DLedger log is a separate protocol that sets them).

Modules: `records` (roles, codes, DLedgerConfig, messages, observations),
`member_state` (the Member record), `leader_elector` (DLedgerLeaderElector),
`server` (DLedgerServer's election entry points, start-up, the node's tick), `world`
(the world glue: config, ghost variables, observable state, scenario actions).
"""
