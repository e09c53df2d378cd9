"""A driver that speaks rmqspec.conform/1 badly in one chosen way, for the tests of
conform's error paths: `python -m property_tests.drivers.misbehaving --mode MODE`.

Modes: `not-json` (answers a case with a line of text), `wrong-shape` (an answer
without the state's fields), `crash` (exits on the first case, after a line on
stderr), `hang` (never answers the first case), `old-version` (a version 0 hello),
`wrong-case` (answers under another case id), `error` (reports that its handler
threw: a mismatch, not a protocol error).

Hostile ones (issue 28): `long-line` and `long-stderr` (5 MiB with no newline on stdout or
stderr, then a hang), `deep-hello` and `digits-hello` (a hello nested 100,000 deep or
with an integer of 100,001 digits), `deep-answer` and `digits-answer` (the same in an
answer). `child`, `child-not-json` and `child-hang` start a child process that would run
for an hour and write its pid to the file after `--pidfile`, then answer as the reference
does, answer with text, or hang: the child must not outlive the run.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

from conform.election import answer

FIVE_MIB = 5 << 20


def main(mode: str, pidfile: str | None) -> None:
    if mode.startswith("child"):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        with open(pidfile, "w") as f:
            f.write(str(child.pid))
    for line in sys.stdin:
        msg = json.loads(line)
        if "hello" in msg:
            out = {"hello": "rmqspec.conform", "version": 0 if mode == "old-version" else 1, "protocol": "election"}
            if mode == "deep-hello":
                out = '{"hello": "rmqspec.conform", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
            elif mode == "digits-hello":
                out = '{"hello": "rmqspec.conform", "version": ' + "1" * 100_001 + "}"
        elif msg.get("bye"):
            return
        elif mode in ("long-line", "long-stderr"):
            (sys.stdout if mode == "long-line" else sys.stderr).write("x" * FIVE_MIB)
            time.sleep(3600)
        elif mode == "deep-answer":
            out = '{"case": 1, "reply": ' + "[" * 100_000 + "]" * 100_000 + "}"
        elif mode == "digits-answer":
            out = '{"case": 1, "reply": null, "outputs": [], "state": ' + "7" * 100_001 + "}"
        elif mode == "child":
            case_id = msg.pop("case")
            out = {"case": case_id, **answer(msg)}
        elif mode == "child-not-json":
            out = "handled it!"
        elif mode == "child-hang":
            time.sleep(3600)
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
    main(sys.argv[sys.argv.index("--mode") + 1],
         sys.argv[sys.argv.index("--pidfile") + 1] if "--pidfile" in sys.argv else None)
