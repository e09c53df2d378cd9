"""The reference's RouteInfoManager with one deliberate bug behind rmqspec.conform/1, for the tests
that conform must catch it: `python -m property_tests.drivers.nameserver_broken --bug NAME`.

The bug replaces one function of reference_impl.nameserver.route_info in this process only:

- `slave-creates-queues`: registerBroker creates queue data from a slave's topic configs too (Java:
  only a master's, id 0);
- `version-ignored`: registerBroker updates queue data on every registration, changed DataVersion
  or not (Java: only when isBrokerTopicConfigChanged or registerFirst);
- `unregister-by-address`: unregisterBroker removes the address it is given instead of the id's
  (Java removes by id);
- `route-without-filters`: pickupTopicRouteData leaves the filter servers out.
"""

from __future__ import annotations

import sys

from conform.nameserver import WireError, answer
from property_tests.drivers.election_reference import serve
from reference_impl.core.state import EMPTY
from reference_impl.nameserver import route_info as ri

REGISTER = ri.register_broker
UNREGISTER = ri.unregister_broker
PICKUP = ri.pickup_topic_route_data


def slave_creates_queues(rim, cluster_name, broker_addr, broker_name, broker_id, ha_server_addr, wrapper, filters,
                         channel, now):
    rim, result, first = REGISTER(rim, cluster_name, broker_addr, broker_name, broker_id, ha_server_addr, wrapper,
                                  filters, channel, now)
    if broker_id != ri.MASTER_ID and wrapper is not None:
        for tc in wrapper.topic_config_table.values():
            rim = ri.create_and_update_queue_data(rim, broker_name, tc)
    return rim, result, first


def version_ignored(rim, cluster_name, broker_addr, broker_name, broker_id, ha_server_addr, wrapper, filters,
                    channel, now):
    rim, result, first = REGISTER(rim, cluster_name, broker_addr, broker_name, broker_id, ha_server_addr, wrapper,
                                  filters, channel, now)
    if broker_id == ri.MASTER_ID and wrapper is not None:
        for tc in wrapper.topic_config_table.values():
            rim = ri.create_and_update_queue_data(rim, broker_name, tc)
    return rim, result, first


def unregister_by_address(rim, cluster_name, broker_addr, broker_name, broker_id):
    data = rim.broker_addr_table.get(broker_name)
    held = {a: bid for bid, a in data.broker_addrs.items()} if data is not None else {}
    return UNREGISTER(rim, cluster_name, broker_addr, broker_name, held.get(broker_addr, broker_id))


def route_without_filters(rim, topic):
    route = PICKUP(rim, topic)
    return None if route is None else route.evolve(filter_server_table=EMPTY)


BUGS = {"slave-creates-queues": ("register_broker", slave_creates_queues),
        "version-ignored": ("register_broker", version_ignored),
        "unregister-by-address": ("unregister_broker", unregister_by_address),
        "route-without-filters": ("pickup_topic_route_data", route_without_filters)}

if __name__ == "__main__":
    bug = sys.argv[sys.argv.index("--bug") + 1]
    name, replacement = BUGS[bug]
    setattr(ri, name, replacement)
    serve(answer, f"rmqspec reference with bug {bug}", protocol="nameserver", error=WireError)
