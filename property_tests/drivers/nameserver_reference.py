"""The reference's RouteInfoManager behind rmqspec.conform/1:
`python -m property_tests.drivers.nameserver_reference` (conform.nameserver.answer over
reference_impl.nameserver.route_info)."""

from __future__ import annotations

import sys

from conform.nameserver import WireError, answer
from property_tests.drivers.election_reference import serve

if __name__ == "__main__":
    inputs = sys.argv[sys.argv.index("--inputs") + 1].split(",") if "--inputs" in sys.argv else None
    serve(answer, "rmqspec reference (reference_impl.nameserver.route_info)", inputs, protocol="nameserver",
          error=WireError)
