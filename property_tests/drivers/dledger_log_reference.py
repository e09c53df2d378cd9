"""The reference's log-replication handlers behind rmqspec.conform/1:
`python -m property_tests.drivers.dledger_log_reference`.

Decode each case, let the reference answer it (conform.dledger_log.answer: DLedgerServer's
handlePush and handleAppend, the EntryHandler thread, in reference_impl.dledger_log), write
the answer. A driver for DLedger itself has the same loop around a DLedgerMmapFileStore (or
DLedgerMemoryStore) filled with the case's entries, an EntryHandler, and DLedgerServer's checks.
"""

from __future__ import annotations

import sys

from conform.dledger_log import WireError, answer
from property_tests.drivers.election_reference import serve

if __name__ == "__main__":
    inputs = sys.argv[sys.argv.index("--inputs") + 1].split(",") if "--inputs" in sys.argv else None
    serve(answer, "rmqspec reference (reference_impl.dledger_log)", inputs, protocol="dledger_log", error=WireError)
