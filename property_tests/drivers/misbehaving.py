"""A driver that speaks rmqspec.conform/1 badly in one chosen way, for the tests of
conform's error paths: `python -m property_tests.drivers.misbehaving --mode MODE`.

Modes: `not-json` (answers a case with a line of text), `wrong-shape` (an answer
without the state's fields), `crash` (exits on the first case, after a line on
stderr), `hang` (never answers the first case), `old-version` (a version 0 hello),
`wrong-case` (answers under another case id), `error` (reports that its handler
threw: a mismatch, not a protocol error).
"""

from __future__ import annotations

import json
import sys
import time


def main(mode: str) -> None:
    for line in sys.stdin:
        msg = json.loads(line)
        if "hello" in msg:
            out = {"hello": "rmqspec.conform", "version": 0 if mode == "old-version" else 1, "protocol": "election"}
        elif msg.get("bye"):
            return
        elif mode == "not-json":
            out = "handled it!"
        elif mode == "wrong-shape":
            out = {"case": msg["case"], "reply": None, "outputs": [], "state": {"memberState": {}, "elector": {}}}
        elif mode == "crash":
            print("Exception in thread main: java.lang.IllegalStateException: boom", file=sys.stderr, flush=True)
            sys.exit(3)
        elif mode == "hang":
            time.sleep(3600)
        elif mode == "wrong-case":
            out = {"case": msg["case"] + 1, "reply": None, "outputs": [], "state": msg["state"]}
        else:
            out = {"case": msg["case"], "error": "java.lang.NullPointerException at handleVote"}
        sys.stdout.write((out if isinstance(out, str) else json.dumps(out)) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[sys.argv.index("--mode") + 1])
