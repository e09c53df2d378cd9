"""The reference's offset handlers behind rmqspec.conform/1:
`python -m property_tests.drivers.offsets_reference` (conform.offsets.answer over
reference_impl.offsets.broker)."""

from __future__ import annotations

import sys

from conform.offsets import WireError, answer
from property_tests.drivers.election_reference import serve

if __name__ == "__main__":
    inputs = sys.argv[sys.argv.index("--inputs") + 1].split(",") if "--inputs" in sys.argv else None
    serve(answer, "rmqspec reference (reference_impl.offsets.broker)", inputs, protocol="offsets", error=WireError)
