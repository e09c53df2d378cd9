"""The `rmqspec` command line. It builds the parser from rmqspec/commands/ (one module per
command: its options and its run), parses the arguments and dispatches; nothing else.

Exit codes: 0 ok, 1 an unexpected property violation (or a failed check), 2 bad input
(one line on stderr, no traceback; unreadable or unwritable files too), 3 an internal error
(a bug: one line naming it; RMQSPEC_DEBUG=1 prints the traceback), 130 Ctrl-C (SIGINT) and
143 SIGTERM (one line, `rmqspec: interrupted`, once every cleanup on the way out has run).

Every number a flag takes is bounded, and the bound is in its --help: a run must end.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import signal
import sys
import threading
import traceback
from typing import NoReturn

from histories import formats
from reference_impl.core import codec, inputs, scenario
from rmqspec.commands import (
    bench,
    check,
    check_trace,
    conform,
    explore,
    fuzz,
    mutants,
    prove,
    replay,
    shrink,
    simulate,
    vectors,
    view,
)
from rmqspec.commands.usage import UsageError

# In the order `rmqspec --help` lists them; each module adds its parser and runs its command.
COMMAND_MODULES = (simulate, replay, check_trace, view, fuzz, shrink, prove, explore, check, conform, vectors,
                   mutants, bench)


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def build_parser() -> Parser:
    parser = Parser(prog="rmqspec", description="RocketMQ HA protocols: reference, properties, checkers.")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for module in COMMAND_MODULES:
        module.add_parser(subparsers)
    return parser


def _load_imports(args: argparse.Namespace) -> None:
    for name in getattr(args, "imports", []):
        try:
            importlib.import_module(name)
        except BaseException as e:  # noqa: BLE001 - a user's module may raise anything, even SystemExit
            if isinstance(e, KeyboardInterrupt):
                raise
            raise UsageError(f"cannot import {name}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                             ) from None


# A command's name -> its run (looked up when the command runs: an --import module may replace one).
COMMANDS = {module.NAME: module.run for module in COMMAND_MODULES}


def _bad_input(message: str) -> int:
    print(f"rmqspec: error: {formats.escape(message)}", file=sys.stderr)
    return 2


def _internal_error(e: BaseException) -> int:
    """A bug of ours: exit 3 with one line naming it (never 1, the code of a finding)."""
    if os.environ.get("RMQSPEC_DEBUG"):
        traceback.print_exception(e, file=sys.stderr)
    frames = traceback.extract_tb(e.__traceback__)
    ours = [f for f in frames if "site-packages" not in f.filename] or frames
    where = f" at {os.path.relpath(ours[-1].filename)}:{ours[-1].lineno} in {ours[-1].name}" if ours else ""
    text = formats.escape(str(e).splitlines()[0] if str(e) else "")[:200]
    print(f"rmqspec: internal error: {type(e).__name__}: {text}{where}. This is a bug in rmqspec: please report it "
          f"with the command that caused it (RMQSPEC_DEBUG=1 prints the traceback)", file=sys.stderr)
    return 3


class Terminated(KeyboardInterrupt):
    """SIGTERM, unwound as Ctrl-C is: every `finally` and `except KeyboardInterrupt` on the
    way out runs (a driver's process group is killed, Spark is stopped, traces are moved
    into place)."""


_signalled: list[int] = []  # the signal that is ending this run, if any


def _on_signal(signum: int, frame: object) -> None:
    if _signalled:
        return  # a second Ctrl-C while the first one's cleanup runs: let it finish
    _signalled.append(signum)
    # What unwinds now may pass through libraries that log it on the root logger (py4j:
    # "KeyboardInterrupt while sending command" with a traceback): not on our stderr.
    logging.getLogger().addHandler(logging.NullHandler())
    raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def main(argv: list[str] | None = None) -> int:
    """Run one command; the exit code says how it went (the module's docstring)."""
    if threading.current_thread() is not threading.main_thread():
        return _main(argv)
    _signalled.clear()
    previous = {s: signal.signal(s, _on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        code = _main(argv)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if code == _INTERRUPTED or _signalled:
        print("rmqspec: interrupted", file=sys.stderr)
        return 128 + (_signalled[0] if _signalled else signal.SIGINT)
    return code


_INTERRUPTED = -1


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 2
        _load_imports(args)
        return COMMANDS[args.command](args)
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt) or _signalled:
            # A signal's unwinding may surface as another error (Spark's JVM gone while it stops):
            # interrupted all the same, and only that is said.
            return _INTERRUPTED
        if isinstance(e, SystemExit):
            raise
        return _report(e)


def _report(e: BaseException) -> int:
    """The one line for a command that ended with an exception: bad input (2) or a bug (3)."""
    if isinstance(e, (UsageError, formats.FormatError, inputs.InputError, scenario.ScenarioError,
                      codec.DecodeError)):
        return _bad_input(str(e))
    if isinstance(e, UnicodeDecodeError):
        return _bad_input("input is not UTF-8 text")
    if isinstance(e, BrokenPipeError):
        return 0
    if isinstance(e, OSError):  # a file that cannot be read or written: a full disk, a missing directory
        return _bad_input(f"{e.filename}: {e.strerror}" if e.filename else f"{e.strerror or e}")
    if isinstance(e, Exception):
        return _internal_error(e)
    raise e


if __name__ == "__main__":
    sys.exit(main())
