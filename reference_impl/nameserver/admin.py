"""The operator's `mqadmin deleteTopic -c <cluster> -t <topic>`, as one step of the world.

Theory of operation
-------------------
Models `DeleteTopicSubCommand#deleteTopic` (RocketMQ 4.9.4) with `DefaultMQAdminExt`:

1. `CommandUtil#fetchMasterAndSlaveAddrByClusterName`: `examineBrokerClusterInfo` asks one
   NameServer (the admin's remoting client picks it; the model takes the first one alive) for
   the cluster's broker names, and collects every address they list, masters and slaves. From
   4.9.5 (ISSUE #4644) `fetchMasterAddrByClusterName`: masters only
   (`NameServerWorldConfig.delete_topic_in_slaves`).
2. `deleteTopicInBroker`: for each address in turn, `DELETE_TOPIC_IN_BROKER` (invokeSync). A
   master drops the topic (`AdminBrokerProcessor#deleteTopic` -> `TopicConfigManager#deleteTopicConfig`,
   which moves the DataVersion on); a slave answers SYSTEM_ERROR (`validateSlave`: "Can't modify
   topic ... from slave broker"), and a broker that is down does not answer: either way
   `MQClientAPIImpl#deleteTopicInBroker` throws, and the command stops there.
3. Only if every broker answered SUCCESS, `deleteTopicInNameServer`: each NameServer of the
   admin's `namesrvAddr` in turn drops the cluster's queue data of the topic
   (`RouteInfoManager#deleteTopic(topic, clusterName)`); a NameServer that is down stops it.

Simplifications: the command runs in one step (its RPCs take no simulated time, so nothing
interleaves with them); the address set is a `HashSet`, whose order Java leaves to the
strings' hashes: the model goes through it sorted; the admin tool reaches every live node
(partitions cut only the world's own links).
"""

from __future__ import annotations

from reference_impl import core
from reference_impl.core.state import record
from reference_impl.nameserver import broker as nb
from reference_impl.nameserver import route_info as ri


@record
class DeleteTopicDone:
    """What `mqadmin deleteTopic` did: the brokers that dropped the topic (in order), the
    NameServers that dropped it, where it stopped (an address, or None when it finished), and
    the (NameServer, broker name) queue data of the topic that the NameServers dropped."""

    topic: str
    brokers: tuple
    name_servers: tuple
    stopped_at: str | None
    reason: str | None
    removed: tuple = ()


def _up(w: core.World, i: int) -> bool:
    n = w.nodes[i]
    return w.alive[i] and not (type(n) is nb.Broker and (n.exited or n.stopping is not None))


def delete_topic_sub_command(w: core.World, topic: str, now: int,
                             asked: int | None = None) -> tuple[core.World, DeleteTopicDone]:
    """DeleteTopicSubCommand#deleteTopic (module docstring); `asked`: the NameServer whose
    cluster info the command reads (default: the first one alive)."""
    c = w.cfg.proto
    cluster = c.broker.broker_cluster_name
    index = {nid: i for i, nid in enumerate(w.cfg.ids)}
    if asked is None:
        asked = next((index[a] for a in c.name_servers if _up(w, index[a])), None)
    if asked is None or not _up(w, asked):
        return w, DeleteTopicDone(topic=topic, brokers=(), name_servers=(), stopped_at=None,
                                  reason="examineBrokerClusterInfo: no NameServer answers")
    rim = w.nodes[asked].rim
    addrs = set()
    for name in rim.cluster_addr_table.get(cluster, frozenset()):
        data = rim.broker_addr_table.get(name)
        if data is not None:
            addrs |= {a for bid, a in data.broker_addrs.items() if c.delete_topic_in_slaves or bid == ri.MASTER_ID}
    done: list[str] = []
    for addr in sorted(addrs):
        i = index.get(addr)
        if i is None or not _up(w, i):
            return w, DeleteTopicDone(topic=topic, brokers=tuple(done), name_servers=(), stopped_at=addr,
                                      reason="the broker does not answer")
        b = w.nodes[i]
        if not nb.is_master(b):
            return w, DeleteTopicDone(topic=topic, brokers=tuple(done), name_servers=(), stopped_at=addr,
                                      reason="a slave answers SYSTEM_ERROR (validateSlave)")
        w = core.set_node(w, i, nb.delete_topic_config(b, topic, now))
        done.append(addr)
    dropped: list[str] = []
    removed: list[tuple[str, str]] = []
    for addr in c.name_servers:
        i = index[addr]
        if not _up(w, i):
            return w, DeleteTopicDone(topic=topic, brokers=tuple(done), name_servers=tuple(dropped), stopped_at=addr,
                                      reason="the NameServer does not answer", removed=tuple(removed))
        n = w.nodes[i]
        rim = ri.delete_topic(n.rim, topic, cluster)
        before, after = n.rim.topic_queue_table.get(topic, {}), rim.topic_queue_table.get(topic, {})
        removed += [(addr, name) for name in sorted(before) if name not in after]
        w = core.set_node(w, i, n.evolve(rim=rim))
        dropped.append(addr)
    return w, DeleteTopicDone(topic=topic, brokers=tuple(done), name_servers=tuple(dropped), stopped_at=None,
                              reason=None, removed=tuple(removed))
