"""`offsets`: consumer offsets in master/slave mode (RocketMQ 4.9.4).

Theory of operation
-------------------
A master and a slave hold each consumer group's offsets (`ConsumerOffsetManager`);
the slave copies the master's table every 10 s (`SlaveSynchronize`, putAll). Consumers
pull from the master, or from the slave when the master suggests it or is gone
(`PullMessageProcessor`'s suggestion, `findBrokerAddressInSubscribe`), commit offsets
to the broker they choose (`RemoteBrokerOffsetStore#updateConsumeOffsetToBroker`, every
5 s and on the pull path), and read the offset back when a rebalance gives them a
queue. When the master returns, its table may be older than what consumers committed
to the slave, so a group may resume below what it had consumed (OFF-2: duplicates).

| module | Java |
|---|---|
| `records` | configs, broker, consumer, producer and route records, messages, observations |
| `broker` | ConsumerOffsetManager, SlaveSynchronize, PullMessageProcessor, the offset requests |
| `client` | RemoteBrokerOffsetStore, MQClientInstance's broker choice, RebalanceImpl, the route source |
| `ghost` | ghost variables: what the group consumed, what the brokers held, why an offset went back |
| `world` | the world glue: observable state, scenario actions, profiles |
"""
