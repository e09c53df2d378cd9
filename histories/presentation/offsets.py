"""The consumer-offsets world's timeline and summary text (histories.presentation): the route
and queues a consumer sees, a slave's master, slave syncs that change offsets, resumes, commits
below the stored offset, and the final offsets and what each consumer consumed."""

from __future__ import annotations

from typing import Any

from reference_impl import core
from reference_impl.offsets.records import BROKER_NAME
from reference_impl.offsets.world import table_json

def describe(node_id: str, now: dict, before: dict | None) -> str | None:
    """Timeline lines: role changes, the route a consumer sees, queues it holds, a slave's master."""
    if before is None or now.get("alive") != before.get("alive"):
        return None
    if now["role"] == "CONSUMER":
        parts = []
        if now["broker_addrs"] != before["broker_addrs"]:
            parts.append(f"route {BROKER_NAME}: {now['broker_addrs'] or 'none'}")
        if set(now["assigned"]) != set(before["assigned"]):
            parts.append(f"queues {sorted(now['assigned'])}")
        return "; ".join(parts) or None
    if now["role"] == "SLAVE" and now["master_addr"] != before["master_addr"]:
        return f"masterAddr {now['master_addr']}"
    return None


def describe_obs(w: core.World, node_id: str, o: Any) -> str | None:
    """Timeline lines for slave syncs that change offsets, resumes, and lower commits."""
    name = type(o).__name__
    if name == "OffsetsSynced" and any(o.before.get(k) != v for k, v in o.table.items()):
        return f"syncConsumerOffset from {o.master}: {table_json(o.table)}"
    if name == "OffsetRead":
        return f"resumes queue {o.queue_id} at {o.offset} (read from {o.addr}, answer {o.answer})"
    if name == "OffsetCommitted" and o.offset < o.old:
        return f"commit {o.offset} of queue {o.queue_id} below {o.old} accepted ({o.via})"
    return None


def final_line(observed: dict) -> str:
    """The summary's final line: each broker's offsets and what each consumer consumed."""
    parts = []
    for node, o in observed.items():
        if o.get("role") in ("MASTER", "SLAVE"):
            parts.append(f"{node} {o['offset_table']}")
        elif o.get("role") == "CONSUMER":
            parts.append(f"{node} consumed {o['consumed']}")
    return "; ".join(parts)


