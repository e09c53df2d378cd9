"""`dledger_commitlog`: RocketMQ 4.9.4's CommitLog on DLedger, and the smooth upgrade to it.

Theory of operation
-------------------
A broker is a DLedger server (reference_impl.dledger_log) whose log entries are the
broker's messages. `DLedgerCommitLog` appends a message as one DLedger entry and
answers the producer when DLedger's future completes; the message's physical offset is
the entry's position plus the entry header. A broker that starts from a plain
commitlog seals it and reads every offset below `dividedCommitlogOffset` from it (the
upgrade). The DLedgerRoleChangeHandler turns the member's role changes into the
broker's: a leader becomes SYNC_MASTER once its log is committed and dispatched, any
other role SLAVE; brokers register with the name server, producers send and retry,
consumers pull from the consume queues the reput service builds.

| module | Java |
|---|---|
| `commitlog` | DLedgerCommitLog and the DefaultMessageStore parts it drives (append, read, recover, the divided offset) |
| `broker` | BrokerController, DLedgerRoleChangeHandler, SendMessageProcessor, PullMessageProcessor |
| `clients` | the name server, producers (DefaultMQProducerImpl) and consumers the brokers talk to |
| `world` | the world glue: ghost variables, observable state, scenario actions |
"""
