"""Commands written for the user to paste into a fresh shell (a replay command in a fuzz
report, a counterexample's notes, a trace's summary line).

`make` installs rmqspec into the checkout's `.venv`, whose `bin` folder is not on a fresh
shell's PATH: a command printed as `rmqspec replay ...` would fail there with `command not
found` (issue 29). `program()` names this installation's `rmqspec` script the way it can be
typed from the current folder: `rmqspec` when that is what the shell finds, else its path.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys


def program() -> str:
    """`rmqspec` if the shell's PATH finds this installation's script; else the script's path,
    relative to the current folder when it is below it (`.venv/bin/rmqspec`). Where no script
    sits beside this interpreter (a Spark executor running the shipped zip), `rmqspec`."""
    script = os.path.join(os.path.dirname(sys.executable), "rmqspec")
    if not os.path.isfile(script):
        return "rmqspec"
    found = shutil.which("rmqspec")
    if found and os.path.samefile(found, script):
        return "rmqspec"
    relative = os.path.relpath(script)
    return script if relative.startswith(os.pardir) else relative


def command(*args: str) -> str:
    """A whole command line, quoted for a POSIX shell: `command("replay", "t.jsonl")`."""
    return shlex.join([program(), *args])
