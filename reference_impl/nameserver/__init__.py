"""`nameserver`: routing, broker liveness and producer failover (RocketMQ 4.9.4).

Theory of operation
-------------------
Brokers register with every NameServer every 30 s (`registerBrokerAll`); a NameServer
keeps its tables in `RouteInfoManager` and, every 10 s, drops brokers it has not heard
from for 120 s, or at once when their channel closes (FIN or RST over Netty
remoting). Clients poll routes every 30 s (`MQClientInstance`). A producer sends
synchronously with retries; `MQFaultStrategy` picks the queue, avoiding the broker
that just failed and, with latency fault tolerance, brokers that were slow. A dead
broker that is still routed costs sends until the expiry, which the properties
measure.

| module | Java |
|---|---|
| `route_info` | RouteInfoManager: brokerAddrTable, brokerLiveTable, topicQueueTable, registration, expiry |
| `namesrv` | NamesrvController and its request processor (register, unregister, get route) |
| `remoting` | Netty remoting: channels, connects, FIN and RST, one-way and sync calls |
| `broker` | a broker: BrokerController#registerBrokerAll, shutdown, role changes, the send path |
| `client_routes` | MQClientInstance: route polling, the broker address table, route conversions |
| `queue_selection` | TopicPublishInfo, MQFaultStrategy, LatencyFaultToleranceImpl |
| `producer` | DefaultMQProducerImpl: synchronous sends with retries |
| `consumer` | a consumer polling its subscriptions' routes |
| `ghost` | ghost variables: history the properties and reports need |
| `world` | the world glue: nodes, observable state, scenario actions, profiles |
"""
