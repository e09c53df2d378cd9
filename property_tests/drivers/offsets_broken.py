"""The reference's offset handlers with one deliberate bug behind rmqspec.conform/1, for the tests
that conform must catch it: `python -m property_tests.drivers.offsets_broken --bug NAME`.

The bug replaces one function of reference_impl.offsets.broker in this process only:

- `commit-keeps-higher`: commitOffset keeps the higher of the stored and the committed offset (Java
  overwrites, a lower one included: it only logs);
- `query-not-found-when-absent`: queryConsumerOffset answers QUERY_NOT_FOUND for every queue never
  committed (Java answers 0 when the queue's first message is not "in disk");
- `sync-merges-queues`: syncConsumerOffset merges the master's queues into the slave's per key (Java's
  putAll replaces the key's inner map whole);
- `sync-replaces-table`: syncConsumerOffset replaces the slave's table with the master's (putAll keeps
  the keys the master lacks).
"""

from __future__ import annotations

import sys

from conform.offsets import WireError, answer
from property_tests.drivers.election_reference import serve
from reference_impl.core.state import FrozenMap
from reference_impl.offsets import broker as ob
from reference_impl.offsets.records import QueryConsumerOffsetResponse
from reference_impl.rocketmq import ResponseCode

COMMIT = ob.commit_offset
QUERY = ob.query_consumer_offset


def commit_keeps_higher(table, key, queue_id, offset):
    old = ob.query_offset(table, key, queue_id)
    return COMMIT(table, key, queue_id, max(old, offset))


def query_not_found_when_absent(c, b, req):
    if ob.query_offset(b.offset_table, ob.key_of(req.topic, req.group), req.queue_id) < 0:
        return QueryConsumerOffsetResponse(code=ResponseCode.QUERY_NOT_FOUND)
    return QUERY(c, b, req)


def sync_merges_queues(slave, master):
    d = dict(slave.items())
    for key, inner in master.items():
        mine = d.get(key)
        d[key] = inner if mine is None else FrozenMap(sorted({**dict(mine.items()), **dict(inner.items())}.items()))
    return FrozenMap(d)


def sync_replaces_table(slave, master):
    return master


BUGS = {"commit-keeps-higher": ("commit_offset", commit_keeps_higher),
        "query-not-found-when-absent": ("query_consumer_offset", query_not_found_when_absent),
        "sync-merges-queues": ("put_all", sync_merges_queues),
        "sync-replaces-table": ("put_all", sync_replaces_table)}

if __name__ == "__main__":
    bug = sys.argv[sys.argv.index("--bug") + 1]
    name, replacement = BUGS[bug]
    setattr(ob, name, replacement)
    serve(answer, f"rmqspec reference with bug {bug}", protocol="offsets", error=WireError)
