"""The reference's classic replication handlers with one deliberate bug behind rmqspec.conform/1,
for the tests that conform must catch it: `python -m property_tests.drivers.ha_broken --bug NAME`.

The bug replaces one function of reference_impl.ha in this process only:

- `first-report-checked`: ReadSocketService range-checks the slave's first report too (4.9.4
  checks only the acks after it; the `fixed` profile's repair, in the wrong version);
- `first-complete-report`: ReadSocketService takes the first complete 8 bytes of a read instead
  of the last (`processReadEvent` reads the long just below the last 8-byte boundary);
- `heartbeat-not-appended`: HAClient hands no empty frame to appendToCommitLog (Java does: a
  heartbeat to a slave without a mapped file creates its first file);
- `transfer-strict`: GroupTransferService wants push2SlaveMaxOffset above nextOffset (Java: at
  or above).
"""

from __future__ import annotations

import sys

from conform.ha import WireError, answer
from property_tests.drivers.election_reference import serve
from reference_impl.ha import commit_log as st
from reference_impl.ha import service as svc
from reference_impl.ha import wire

READ_EVENT = svc.read_event
APPEND_DATA = st.append_data


def first_report_checked(c, b, conn_id, chunk, now):
    conn = next(x for x in b.conns if x.id == conn_id)
    ack, _ = wire.read_acks(conn.read_pending, chunk)
    if ack is not None and conn.slave_request_offset < 0 and ack > st.max_offset(b.store):
        return svc.close_connection(b, conn_id, "first report above the master's max offset")
    return READ_EVENT(c, b, conn_id, chunk, now)


def first_complete_report(pending, chunk):
    buf = pending + chunk
    whole = len(buf) - len(buf) % wire.ACK_SIZE
    if whole == 0:
        return None, buf
    return int.from_bytes(buf[:wire.ACK_SIZE], "big", signed=True), buf[whole:]


def append_skipping_empty(s, size, start_offset, blob):
    if not blob:
        return s, True
    return APPEND_DATA(s, size, start_offset, blob)


def transfer_strict(c, b, req):
    return b.push2slave_max > req.next_offset


BUGS = {"first-report-checked": (svc, "read_event", first_report_checked),
        "first-complete-report": (wire, "read_acks", first_complete_report),
        "heartbeat-not-appended": (st, "append_data", append_skipping_empty),
        "transfer-strict": (svc, "transfer_ok", transfer_strict)}

if __name__ == "__main__":
    bug = sys.argv[sys.argv.index("--bug") + 1]
    module, name, replacement = BUGS[bug]
    setattr(module, name, replacement)
    serve(answer, f"rmqspec reference with bug {bug}", protocol="ha", error=WireError)
