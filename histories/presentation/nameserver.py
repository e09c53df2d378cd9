"""The NameServer world's timeline and summary text (histories.presentation): who lists which
brokers, a broker's role, the route a producer sees, what a consumer subscribes, failed sends,
MQFaultStrategy's rewrites, operators' topic changes."""

from __future__ import annotations

from typing import Any

from reference_impl import core
from reference_impl.nameserver import broker as nb
from reference_impl.nameserver import namesrv as ns
from reference_impl.nameserver import producer as pr
from reference_impl.nameserver.world import CreateTopic, DeleteTopic, OsFin, ProcessExit

def describe(node_id: str, now: dict, before: dict | None) -> str | None:
    """A line for the timeline when a node's headline changed."""
    if before is not None and now == before:
        return None
    if not now.get("alive"):
        return None if before is not None and not before.get("alive") else "down"
    role = now["role"]
    if role == "NAMESRV":
        keys = ("live_brokers", "broker_addrs")
        if before is not None and before.get("alive") and all(now[k] == before[k] for k in keys):
            return None
        return "lists " + (" ".join(now["live_brokers"]) or "no broker")
    if role in ("MASTER", "SLAVE"):
        if before is not None and before.get("alive") and before["role"] == role:
            return None
        return f"{role} of {now['broker_name']} (id {now['broker_id']})"
    if role == "PRODUCER":
        routes = now["publish_queues"]
        if before is not None and before.get("alive") and routes == before["publish_queues"]:
            return None
        brokers = sorted({q.split(":")[0] for qs_ in routes.values() for q in qs_})
        return "route: " + (" ".join(brokers) or "none")
    if before is not None and before.get("alive") and now["subscribe"] == before["subscribe"]:
        return None
    return "subscribes " + (" ".join(sorted({q.split(":")[0] for mqs in now["subscribe"].values() for q in mqs}))
                            or "nothing")


def describe_obs(w: core.World, node_id: str, o: Any) -> str | None:
    """Timeline lines for failed sends, MQFaultStrategy's rewrites, dropped brokers, stored
    retries, operators' topic changes and process exits."""
    t = type(o)
    if t is pr.SendDone:
        path = " -> ".join(o.brokers) or "no broker"
        return f"send {o.msg_id}: {o.status} via {path} ({o.elapsed_ms} ms)" if o.status != "SEND_OK" else None
    if t is pr.QueueRewritten:
        return f"MQFaultStrategy rewrote queue {o.pos} of its route: {o.old} -> {o.new}"
    if t is ns.BrokerRemoved:
        return f"drops {o.broker_addr} ({o.reason})"
    if t is nb.MessageStored:
        m = w.ghost.msgs.get(o.msg_id)
        return f"stores {o.msg_id} again (copy {m.copies}, retry {o.attempt})" if m is not None and m.copies > 1 \
            else None
    if t is CreateTopic:
        return f"operator: updateTopic {o.topic} on {w.cfg.ids[o.node]}"
    if t is DeleteTopic:
        return f"operator: deleteTopic {o.topic} (masters, then NameServers)"
    if t is OsFin:
        return None
    if t is ProcessExit:
        return "exits after shutdown"
    return None


def final_line(observed: dict) -> str:
    """The summary's final line: what each NameServer lists, each broker's role, each producer's sends."""
    parts = []
    for node_id, o in observed.items():
        if not o.get("alive"):
            parts.append(f"{node_id}:down")
        elif o["role"] == "NAMESRV":
            parts.append(f"{node_id}:[{' '.join(o['live_brokers'])}]")
        elif o["role"] in ("MASTER", "SLAVE"):
            parts.append(f"{node_id}:{o['role']}")
        elif o["role"] == "PRODUCER":
            parts.append(f"{node_id}:{o['sent']} sent")
    return "  ".join(parts)
