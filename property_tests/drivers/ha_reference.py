"""The reference's classic replication handlers behind rmqspec.conform/1:
`python -m property_tests.drivers.ha_reference`.

Decode each case, let the reference answer it (conform.ha.answer: ReadSocketService's report
handling, HAClient's frame decoding and its loop, GroupTransferService, in reference_impl.ha),
write the answer. A driver for RocketMQ itself has the same loop around a DefaultMessageStore,
an HAConnection and its HAService (docs/conformance.md, "Classic replication cases").
"""

from __future__ import annotations

import sys

from conform.ha import WireError, answer
from property_tests.drivers.election_reference import serve

if __name__ == "__main__":
    inputs = sys.argv[sys.argv.index("--inputs") + 1].split(",") if "--inputs" in sys.argv else None
    serve(answer, "rmqspec reference (reference_impl.ha)", inputs, protocol="ha", error=WireError)
