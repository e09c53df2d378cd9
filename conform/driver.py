"""The driver process and the JSON-lines protocol `rmqspec.conform/1` (docs/conformance.md).

rmqspec starts the driver command, writes one JSON object per line to its stdin and
reads one per line from its stdout:

    rmqspec -> {"hello": "rmqspec.conform", "version": 1, "protocol": "election"}
    driver  -> {"hello": "rmqspec.conform", "version": 1, "protocol": "election",
                "implementation": "...", "inputs": [...], "features": [...]}
    rmqspec -> {"case": 1, "config": ..., "state": ..., "now_ms": ..., "input": ...}
    driver  -> {"case": 1, "reply": ..., "outputs": [...], "state": ...}   or {"case": 1, "error": "..."}
    ...
    rmqspec -> {"bye": true}, then closes stdin

Anything else (a line that is not a JSON object, an answer to another case, a process
that exits, no answer within the per-case timeout) is a `DriverError`: the driver does
not speak the protocol, reported in one line. The driver's stderr is its own; the last
lines are kept for that one line.
"""

from __future__ import annotations

import collections
import json
import os
import queue
import shlex
import signal
import subprocess
import threading

import attrs

WIRE = "rmqspec.conform"
VERSION = 1
HELLO_TIMEOUT_S = 60.0  # a JVM or a compiler may start first


class DriverError(Exception):
    """The driver does not speak the protocol (exit 2)."""


@attrs.frozen
class Hello:
    implementation: str
    inputs: tuple[str, ...]
    features: frozenset[str]


class Driver:
    """A running driver process; `close` ends it (and its process group, if it lingers)."""

    def __init__(self, command: str, timeout_s: float = 10.0, cwd: str | None = None) -> None:
        self.command = command
        self.timeout_s = timeout_s
        try:
            argv = shlex.split(command)
        except ValueError as e:
            raise DriverError(f"cannot parse the driver command: {e}") from None
        if not argv:
            raise DriverError("the driver command is empty")
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         text=True, encoding="utf-8", errors="replace", bufsize=1, cwd=cwd,
                                         start_new_session=True)
        except OSError as e:
            raise DriverError(f"cannot start the driver {argv[0]!r}: {e.strerror or e}") from None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stderr: collections.deque[str] = collections.deque(maxlen=20)
        threading.Thread(target=self._pump_stdout, daemon=True).start()
        self._stderr_pump = threading.Thread(target=self._pump_stderr, daemon=True)
        self._stderr_pump.start()

    def _pump_stdout(self) -> None:
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _pump_stderr(self) -> None:
        for line in self.proc.stderr:
            if line.strip():
                self._stderr.append(line.rstrip())

    # --- the protocol ---

    def hello(self, protocol: str, inputs: tuple[str, ...], features: tuple[str, ...]) -> Hello:
        """Greet the driver and read what it handles (default: every input and feature)."""
        self._send({"hello": WIRE, "version": VERSION, "protocol": protocol})
        h = self._receive("the hello", max(HELLO_TIMEOUT_S, self.timeout_s))
        if h.get("hello") != WIRE:
            raise DriverError(f"the driver's first line is not a {WIRE} hello: {_clip(json.dumps(h))}")
        if h.get("version") != VERSION:
            raise DriverError(f"the driver speaks {WIRE} version {h.get('version')!r}; rmqspec speaks {VERSION}")
        if h.get("protocol") != protocol:
            raise DriverError(f"the driver is for protocol {h.get('protocol')!r}, not {protocol!r}")
        got_inputs = _names(h, "inputs", inputs)
        got_features = _names(h, "features", features)
        if not got_inputs:
            raise DriverError("the driver's hello lists no inputs")
        impl = h.get("implementation", "")
        return Hello(implementation=impl if isinstance(impl, str) else json.dumps(impl),
                     inputs=tuple(k for k in inputs if k in got_inputs), features=frozenset(got_features))

    def ask(self, case_id: int, case: dict) -> dict:
        """Send one case; its answer, checked to be an object for this case."""
        self._send({"case": case_id, **case})
        ans = self._receive(f"case {case_id}", self.timeout_s)
        if ans.get("case") != case_id:
            raise DriverError(f"the answer to case {case_id} names case {ans.get('case')!r}: {_clip(json.dumps(ans))}")
        if "error" in ans and not isinstance(ans["error"], str):
            raise DriverError(f"the answer to case {case_id} has an error that is not a string")
        return ans

    def close(self) -> None:
        try:
            self._send({"bye": True})
            self.proc.stdin.close()
        except (DriverError, OSError, ValueError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # our own session: the driver and its children
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
            self.proc.wait()

    # --- lines ---

    def _send(self, obj: dict) -> None:
        try:
            self.proc.stdin.write(json.dumps(obj) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise DriverError(self._exited("before reading its input")) from None

    def _receive(self, what: str, timeout_s: float) -> dict:
        try:
            line = self._lines.get(timeout=timeout_s)
        except queue.Empty:
            self.kill()
            raise DriverError(f"no answer to {what} within {timeout_s:g} s (--timeout)") from None
        if line is None:
            raise DriverError(self._exited(f"without answering {what}"))
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            self.kill()
            raise DriverError(f"the answer to {what} is not JSON: {_clip(line.strip())}") from None
        if not isinstance(obj, dict):
            self.kill()
            raise DriverError(f"the answer to {what} is not a JSON object: {_clip(line.strip())}")
        return obj

    def _exited(self, when: str) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.returncode
        self._stderr_pump.join(timeout=2)
        tail = f"; its stderr ends: {_clip(self._stderr[-1])}" if self._stderr else ""
        return f"the driver exited (code {code}) {when}{tail}"


def _names(h: dict, key: str, known: tuple[str, ...]) -> set[str]:
    if key not in h:
        return set(known)
    got = h[key]
    if not isinstance(got, list) or not all(isinstance(x, str) for x in got):
        raise DriverError(f"the driver's hello.{key} must be a list of names")
    unknown = sorted(set(got) - set(known))
    if unknown:
        raise DriverError(f"the driver's hello.{key} names unknown {key} {unknown}; known: {list(known)}")
    return set(got)


def _clip(text: str, n: int = 100) -> str:
    return text if len(text) <= n else text[:n - 3] + "..."
