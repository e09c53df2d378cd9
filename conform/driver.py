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

The driver is another program, so what it writes is input like any file (docs/security.md):
a line on stdout or stderr is read up to MAX_LINE_BYTES (the limit of every JSON Lines
format of ours) and a longer one ends the run; an answer is strict JSON (formats.loads:
no duplicate keys, no integer of more than 20 digits, no nesting deeper than 32). The
driver runs in a session and process group of its own, and `close` and `kill` end the
whole group, so a child the driver started does not outlive the run, however it ends.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import queue
import shlex
import signal
import subprocess
import threading
import time

import attrs

from histories import formats

WIRE = "rmqspec.conform"
VERSION = 1
HELLO_TIMEOUT_S = 60.0  # a JVM or a compiler may start first
MAX_LINE_BYTES = formats.MAX_LINE_BYTES  # a line from the driver, on stdout or stderr
EXIT_GRACE_S = 5.0  # after bye, how long the driver has to exit before its group is killed
QUEUED_LINES = 64  # stdout lines read ahead of the answers asked for; then the driver waits
STDERR_KEPT = 20  # the driver's last stderr lines kept for an error message, each clipped


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
            # A session of its own: Ctrl-C at the terminal reaches us, not the driver, and
            # killpg ends the driver with every child it started.
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         cwd=cwd, start_new_session=True)
        except OSError as e:
            raise DriverError(f"cannot start the driver {argv[0]!r}: {e.strerror or e}") from None
        self._lines: queue.Queue[bytes | None] = queue.Queue(QUEUED_LINES)
        self._stderr: collections.deque[str] = collections.deque(maxlen=STDERR_KEPT)
        self._failure: DriverError | None = None  # what a pump found wrong, raised by the next _receive
        self._stdout_pump = threading.Thread(target=self._pump_stdout, daemon=True)
        self._stderr_pump = threading.Thread(target=self._pump_stderr, daemon=True)
        self._stdout_pump.start()
        self._stderr_pump.start()

    def _pump_stdout(self) -> None:
        while True:
            line = self.proc.stdout.readline(MAX_LINE_BYTES + 1)
            if len(line) > MAX_LINE_BYTES:
                self._fail(f"the driver wrote a line longer than {MAX_LINE_BYTES} bytes to stdout")
                break
            if not line:
                break
            self._lines.put(line)
        self._lines.put(None)

    def _pump_stderr(self) -> None:
        while True:
            line = self.proc.stderr.readline(MAX_LINE_BYTES + 1)
            if len(line) > MAX_LINE_BYTES:
                self._fail(f"the driver wrote a line longer than {MAX_LINE_BYTES} bytes to stderr")
                return
            if not line:
                return
            text = line.decode("utf-8", "replace").rstrip()
            if text.strip():
                self._stderr.append(_clip(text, 1000))

    def _fail(self, message: str) -> None:
        """A pump's finding: the driver's group is killed (its pipes close, and a waiting
        _receive wakes up) and the message is what the run reports."""
        if self._failure is None:
            self._failure = DriverError(message)
        self._kill_group()

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
        impl = impl if isinstance(impl, str) else json.dumps(impl)
        return Hello(implementation=formats.escape(_clip(impl, 200)),
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
        """Say bye, give the driver EXIT_GRACE_S to exit, then end its whole process group."""
        try:
            self._send({"bye": True})
            self.proc.stdin.close()
        except (DriverError, OSError, ValueError):
            pass
        self._end(EXIT_GRACE_S)

    def kill(self) -> None:
        """End the driver and its whole process group now (an error, a timeout, Ctrl-C)."""
        self._end(0.0)

    def _end(self, grace_s: float) -> None:
        if self.proc.returncode is not None:
            return
        # The leader is waited for without being reaped: while it is a zombie its pid, the
        # group's id, cannot be reused, so killpg reaches the driver's children and no one else.
        deadline = time.monotonic() + grace_s
        while not self._exited_unreaped() and time.monotonic() < deadline:
            time.sleep(0.01)
        self._kill_group()
        self.proc.wait()
        with contextlib.suppress(OSError, ValueError):
            self.proc.stdin.close()  # (stdout and stderr stay open: a pump thread may be reading them)

    def _exited_unreaped(self) -> bool:
        try:
            return os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:
            return True

    def _kill_group(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)

    # --- lines ---

    def _send(self, obj: dict) -> None:
        try:
            self.proc.stdin.write((json.dumps(obj) + "\n").encode("utf-8"))
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise self._failure or DriverError(self._exited("before reading its input")) from None

    def _receive(self, what: str, timeout_s: float) -> dict:
        try:
            line = self._lines.get(timeout=timeout_s)
        except queue.Empty:
            self.kill()
            raise DriverError(f"no answer to {what} within {timeout_s:g} s (--timeout)") from None
        if self._failure is not None:
            self.kill()
            raise self._failure
        if line is None:
            raise DriverError(self._exited(f"without answering {what}"))
        try:
            obj = formats.loads(line, what)
        except formats.FormatError as e:
            self.kill()
            if e.message.startswith("not JSON"):
                raise DriverError(f"the answer to {what} is not JSON: {_clip(_text(line))}") from None
            raise DriverError(f"the answer to {what} is refused: {e.message}") from None
        if not isinstance(obj, dict):
            self.kill()
            raise DriverError(f"the answer to {what} is not a JSON object: {_clip(_text(line))}")
        return obj

    def _exited(self, when: str) -> str:
        self._end(EXIT_GRACE_S)
        self._stderr_pump.join(timeout=2)
        if self._failure is not None:
            return str(self._failure)
        tail = f"; its stderr ends: {_clip(self._stderr[-1])}" if self._stderr else ""
        return f"the driver exited (code {self.proc.returncode}) {when}{tail}"


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


def _text(line: bytes) -> str:
    return line.decode("utf-8", "replace").strip()


def _clip(text: str, n: int = 100) -> str:
    return text if len(text) <= n else text[:n - 3] + "..."
