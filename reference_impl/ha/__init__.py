"""`ha`: classic master/slave CommitLog replication (RocketMQ 4.9.4, non-DLedger), over byte streams.

Theory of operation
-------------------
A broker group is one master and its slaves; there is no failover. Producers send to
the master, whose put path appends to its CommitLog and completes two futures: the
flush (ASYNC_FLUSH at once, SYNC_FLUSH by GroupCommitService) and the replica
(ASYNC_MASTER at once, SYNC_MASTER by GroupTransferService once a slave's report covers
the message, or FLUSH_SLAVE_TIMEOUT). The HA connection is a TCP byte stream in each
direction: the slave's HAClient reports its max offset every 5 s and after each frame;
the master's HAConnection pushes frames of `[offset][size][bytes]` from where the slave
asked. The CommitLog is real bytes in mapped files, with page cache, flush and
recovery, so crash kinds differ in what survives.

| module | Java |
|---|---|
| `commit_log` | CommitLog, MappedFileQueue, MappedFile: bytes, flush, recovery |
| `wire` | the HA wire format: transfer frames and offset reports |
| `records` | MessageStoreConfig, the broker record, messages, observations, version profiles |
| `service` | HAService, HAConnection (read and write sides), HAClient, GroupTransferService |
| `broker` | the put path (CommitLog#asyncPutMessage), FlushRealTimeService, GroupCommitService, producers |
| `ghost` | ghost variables: history the properties need and no broker can see |
| `world` | the world glue: the TCP streams as world state, observable state, profiles |
"""
