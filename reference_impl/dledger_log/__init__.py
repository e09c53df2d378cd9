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
Each thread's work is atomic; one tick runs every thread of a node that is due.

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
