"""The reference's election handlers behind rmqspec.conform/1: `python -m property_tests.drivers.election_reference`.

The shortest possible driver: decode each case, let the reference answer it
(conform.election.answer: DLedgerServer's entry points in reference_impl.election),
write the answer. A driver for another implementation has the same loop, with its own
decoding of the state into its own handler.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable

from conform.election import WireError, answer

HELLO = {"hello": "rmqspec.conform", "version": 1, "protocol": "election"}


def serve(respond: Callable[[dict], dict], implementation: str, inputs: list[str] | None = None,
          protocol: str = "election", error: type = WireError) -> None:
    """Answer hello, cases and bye on stdin/stdout until bye or end of input."""
    for line in sys.stdin:
        msg = json.loads(line)
        if "hello" in msg:
            hello = {**HELLO, "protocol": protocol, "implementation": implementation}
            if inputs is not None:
                hello["inputs"] = inputs
            out = hello
        elif msg.get("bye"):
            return
        else:
            case_id = msg.pop("case")
            try:
                out = {"case": case_id, **respond(msg)}
            except error as e:
                out = {"case": case_id, "error": f"cannot load the case: {e}"}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    inputs = sys.argv[sys.argv.index("--inputs") + 1].split(",") if "--inputs" in sys.argv else None
    serve(answer, "rmqspec reference (reference_impl.election)", inputs)
