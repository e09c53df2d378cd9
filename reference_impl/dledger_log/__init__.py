"""`dledger_log`: DLedger log append, replication and commit (DLedger 0.2.6, in RocketMQ 4.9.4).

Theory of operation
-------------------
A server is the election's `Member` (reference_impl.election, unchanged) plus its log
store and the replication threads. The leader appends a client's entry to its own
store (`DLedgerServer#handleAppend`), and one EntryDispatcher per follower pushes it:
COMPARE to find where the logs agree, TRUNCATE the follower's tail, then APPEND, and
COMMIT to carry the commit index. The follower's EntryHandler applies pushes in index
order. The leader's QuorumAckChecker advances the commit index to the highest index a
quorum holds in the current term's water marks, and completes the clients' futures.
Each Java thread (the state maintainer, the entry handler, one dispatcher per peer, the
quorum ack checker, the flush service) is an actor of the world with its own wake time
and its own tick; one step of a thread is one pass of its loop up to where it blocks or
waits (`server`).

Persisted: the term file (the election's) and the store's bytes up to what was
flushed (an OS crash drops the unflushed tail). Clients append one entry at a time and
learn the leader from NOT_LEADER answers.

| module | Java |
|---|---|
| `store` | DLedgerMmapFileStore (index and data files, flush, recovery, truncation) |
| `entry_pusher` | DLedgerEntryPusher (leader side, QuorumAckChecker), DLedgerServer#handleAppend |
| `entry_dispatcher` | DLedgerEntryPusher.EntryDispatcher (one per follower) |
| `entry_handler` | DLedgerEntryPusher.EntryHandler (the follower side) |
| `server` | DLedgerServer: the member, the log and the threads as one node |
| `world` | the world glue: servers and clients, ghost variables, observable state, profiles |
"""
