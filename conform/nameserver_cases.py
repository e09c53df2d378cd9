"""NameServer cases: Hypothesis strategies for `rmqspec conform --protocol nameserver`, and the
deterministic edge cases `rmqspec vectors` writes first.

A case's tables are what a NameServer holds after a few calls, not free values: the state is made
by applying 0 to 8 registrations, unregistrations and channel closes to empty tables with the
reference, then one more call is the case's input. The values come from small pools chosen so that
the relations the Java code branches on come up often: an address registering under another id of
its broker name (a slave switched to master), a master re-registering with the same DataVersion
(its queue data is not touched) or a new one, a slave registering while its master is live or not,
a channel that closes after its broker re-registered on a newer one (the stale channel finds no
live entry; the remote address is used), an unregistration naming an address the id no longer
holds, a topic whose broker names are all gone.

An address belongs to one broker name (each name has its own pool): the reference iterates tables
in insertion order where Java iterates a HashMap, and the two could differ only for an address
listed under two names (route_info.py says so).
"""

from __future__ import annotations

from collections.abc import Iterator

from hypothesis import assume
from hypothesis import strategies as st

from conform.nameserver import INPUTS, Case, ChannelDestroy, GetRoute, RegisterBroker, UnregisterBroker, run
from reference_impl.core.state import FrozenMap
from reference_impl.nameserver import route_info as ri

CLUSTERS = ("DefaultCluster", "cluster-2")
NAMES = ("broker-a", "broker-b", "broker-c")
CLUSTER_OF = {"broker-a": "DefaultCluster", "broker-b": "DefaultCluster", "broker-c": "cluster-2"}
TOPICS = ("TopicTest", "TBW102", "TopicB", "TopicC")
BASE_NOW = 1_000_000
STEP_MS = (1, 30_000)


def addresses(name: str) -> tuple[str, ...]:
    k = NAMES.index(name) + 1
    return tuple(f"10.0.{k}.{j}:10911" for j in (1, 2, 3))


ALL_ADDRESSES = tuple(a for n in NAMES for a in addresses(n))


def ha_address(addr: str) -> str:
    return addr.rsplit(":", 1)[0] + ":10912"


def channel(addr: str, incarnation: int) -> str:
    return f"{addr}#{incarnation}"


def pick(draw: st.DrawFn, options: list | tuple) -> object:
    return draw(st.sampled_from(tuple(options)))


def mostly(draw: st.DrawFn, common: object, rare: list | tuple) -> object:
    return common if draw(st.integers(0, 3)) else pick(draw, rare)


@st.composite
def topic_configs(draw: st.DrawFn, held: ri.DataVersion | None = None) -> ri.TopicConfigSerializeWrapper:
    """A registration's topics and DataVersion; `held`, the version the NameServer holds for the
    address, is taken half the time: registerBroker updates queue data only when the version
    changed (isBrokerTopicConfigChanged), and twelve random versions rarely meet it again."""
    chosen = draw(st.lists(st.sampled_from(TOPICS), max_size=3, unique=True))
    table = []
    for t in sorted(chosen):
        queues = pick(draw, (4, 8, 1, 16))
        table.append((t, ri.TopicConfig(topic_name=t, read_queue_nums=queues,
                                        write_queue_nums=mostly(draw, queues, (1, 8)),
                                        perm=mostly(draw, 6, (4, 2, 7)), topic_sys_flag=mostly(draw, 0, (1,)))))
    version = ri.DataVersion(timestamp=pick(draw, (0, 1, 2)), counter=pick(draw, (0, 1, 2, 3)))
    if held is not None and draw(st.booleans()):
        version = held
    return ri.TopicConfigSerializeWrapper(topic_config_table=FrozenMap(table), data_version=version)


@st.composite
def registrations(draw: st.DrawFn, rim: ri.RouteInfo) -> RegisterBroker:
    name = pick(draw, NAMES)
    addr = pick(draw, addresses(name))
    live = rim.broker_live_table.get(addr)
    filters = mostly(draw, None, ((), ("10.9.0.1:45001",), ("10.9.0.1:45001", "10.9.0.2:45001")))
    return RegisterBroker(cluster_name=mostly(draw, CLUSTER_OF[name], CLUSTERS), broker_addr=addr, broker_name=name,
                          broker_id=pick(draw, (0, 1, 2)), ha_server_addr=ha_address(addr),
                          topic_config=draw(topic_configs(live.data_version if live is not None else None)),
                          filter_server_list=filters,
                          channel=channel(addr, pick(draw, (0, 1, 2))))


@st.composite
def unregistrations(draw: st.DrawFn) -> UnregisterBroker:
    name = pick(draw, NAMES)
    return UnregisterBroker(cluster_name=mostly(draw, CLUSTER_OF[name], CLUSTERS),
                            broker_addr=pick(draw, addresses(name)), broker_name=name, broker_id=pick(draw, (0, 1, 2)))


@st.composite
def channel_closes(draw: st.DrawFn, rim: ri.RouteInfo) -> ChannelDestroy:
    addr = pick(draw, ALL_ADDRESSES + ("10.8.0.1:53211",))
    live = [x.channel for x in rim.broker_live_table.values()]
    chan = draw(st.one_of(st.sampled_from(tuple(live)) if live else st.nothing(),
                          st.sampled_from((channel(addr, 0), channel(addr, 1), "10.8.0.1:53211#0")), st.none()))
    return ChannelDestroy(remote_addr=mostly(draw, addr, ("",)), channel=chan)


@st.composite
def calls(draw: st.DrawFn, kind: str, rim: ri.RouteInfo) -> object:
    if kind == "register_broker":
        return draw(registrations(rim))
    if kind == "unregister_broker":
        return draw(unregistrations())
    if kind == "get_route":
        return GetRoute(topic=pick(draw, TOPICS + ("TopicNone",)))
    return draw(channel_closes(rim))


@st.composite
def histories(draw: st.DrawFn) -> tuple[ri.RouteInfo, int]:
    """Tables after 0..8 calls from empty ones, and the time after the last."""
    rim, now = ri.RouteInfo(), BASE_NOW
    for _ in range(draw(st.integers(0, 8))):
        kind = pick(draw, ("register_broker", "register_broker", "register_broker", "unregister_broker",
                           "channel_destroy"))
        now += draw(st.integers(*STEP_MS))
        rim, _ = run(Case(rim=rim, now=now, input=draw(calls(kind, rim))))
    return rim, now


@st.composite
def cases(draw: st.DrawFn, kinds: tuple[str, ...], features: frozenset) -> Case:
    """A case a driver that handles `kinds` can answer."""
    usable = [k for k in INPUTS if k in kinds]
    assume(usable)
    rim, now = draw(histories())
    now += draw(st.integers(*STEP_MS))
    return Case(rim=rim, now=now, input=draw(calls(pick(draw, usable), rim)))


# --- edge cases ---


def _register(name: str, j: int, broker_id: int, topics: dict | None = None, counter: int = 1,
              incarnation: int = 0, cluster: str | None = None) -> RegisterBroker:
    addr = addresses(name)[j]
    table = FrozenMap((t, ri.TopicConfig(topic_name=t, read_queue_nums=q, write_queue_nums=q))
                      for t, q in sorted((topics or {}).items()))
    return RegisterBroker(cluster_name=cluster or CLUSTER_OF[name], broker_addr=addr, broker_name=name,
                          broker_id=broker_id, ha_server_addr=ha_address(addr),
                          topic_config=ri.TopicConfigSerializeWrapper(topic_config_table=table,
                                                                      data_version=ri.DataVersion(counter=counter)),
                          filter_server_list=None, channel=channel(addr, incarnation))


def _after(*inputs: object) -> tuple[ri.RouteInfo, int]:
    rim, now = ri.RouteInfo(), BASE_NOW
    for inp in inputs:
        now += 1000
        rim, _ = run(Case(rim=rim, now=now, input=inp))
    return rim, now + 1000


def _case(history: tuple, inp: object) -> Case:
    rim, now = _after(*history)
    return Case(rim=rim, now=now, input=inp)


def edge_cases() -> Iterator[Case]:
    master = _register("broker-a", 0, 0, {"TopicTest": 4})
    slave = _register("broker-a", 1, 1)
    a_addr, s_addr = addresses("broker-a")[0], addresses("broker-a")[1]
    yield _case((), master)  # the first registration: cluster, broker data, queue data, live entry
    yield _case((), slave)  # a slave before its master: no master address in the answer
    yield _case((master,), slave)  # a slave while its master is live: haServerAddr and masterAddr
    yield _case((master,), _register("broker-a", 0, 0, {"TopicTest": 8}, counter=1))  # same version: queues kept
    yield _case((master,), _register("broker-a", 0, 0, {"TopicTest": 8}, counter=2))  # a new version: queues updated
    yield _case((master, slave), _register("broker-a", 1, 0, {"TopicTest": 4}))  # the slave switched to master
    yield _case((master, slave), UnregisterBroker(cluster_name="DefaultCluster", broker_addr=s_addr,
                                                  broker_name="broker-a", broker_id=0))  # removes by id, not address
    yield _case((master,), UnregisterBroker(cluster_name="DefaultCluster", broker_addr=a_addr,
                                            broker_name="broker-a", broker_id=0))  # the last address: name and topic go
    yield _case((master,), GetRoute(topic="TopicTest"))
    yield _case((master,), GetRoute(topic="TopicNone"))  # TOPIC_NOT_EXIST
    yield _case((master, _register("broker-a", 0, 0, {"TopicTest": 4}, incarnation=1)),
                ChannelDestroy(remote_addr=a_addr, channel=channel(a_addr, 0)))  # a stale channel: the address is used
    yield _case((master,), ChannelDestroy(remote_addr="10.8.0.1:53211", channel="10.8.0.1:53211#0"))  # a client's
    yield _case((master, _register("broker-b", 0, 0, {"TopicTest": 4})),
                ChannelDestroy(remote_addr="", channel=channel(a_addr, 0)))  # found by its channel
