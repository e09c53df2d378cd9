"""The README's commands run as written, in order, in a shell (issue 29: the docs are code).

Each command of the README's CLI block runs with bash in one scratch folder for the whole
module, which holds the checkout's `property_tests` and `.venv` (symlinks: the commands read
shipped files by their relative paths and write their outputs beside them), with PATH as
`source .venv/bin/activate` leaves it. A command's comment (its line and the comment lines
below it) says what it costs when that is over a minute; such a command is marked slow (make
test-all, CI). `exits N` in the comment is the exit code it must give; otherwise 0. The
`make` lines are run by CI itself (.ci/run: make test-all, make check).

A command rmqspec prints for the user to run next works from a fresh shell, where
.venv/bin is not on PATH (the replay command of a trace)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

ROOT = Path(__file__).resolve().parent.parent
VENV = Path(sys.executable).parent.parent
SCRIPT = VENV / "bin" / "rmqspec"
HANG_S = 3600  # a guard against a hang, not a timing assertion

if not SCRIPT.is_file():  # not run from an installed venv (make puts rmqspec in .venv/bin)
    pytest.skip(f"no rmqspec script beside {sys.executable}", allow_module_level=True)


@attrs.frozen
class Command:
    line: str  # as written, its comment included (bash drops the comment)
    comment: str  # its own comment and the comment lines under it

    @property
    def slow(self) -> bool:
        return "minute" in self.comment

    @property
    def exit_code(self) -> int:
        m = re.search(r"\bexits (\d)\b", self.comment)
        return int(m.group(1)) if m else 0


def readme_commands(text: str) -> list[Command]:
    """The commands of the README's CLI block (the first fenced block after '## The CLI'), in
    order; an indented comment line continues the comment of the command above it."""
    block = text[text.index("## The CLI\n"):].split("```")[1]
    out: list[Command] = []
    for line in block.splitlines():
        if not line.strip():
            continue
        if line[0].isspace():
            assert line.lstrip().startswith("#") and out, f"README: a continuation that is not a comment: {line!r}"
            out[-1] = attrs.evolve(out[-1], comment=out[-1].comment + " " + line.strip().lstrip("#").strip())
        else:
            out.append(Command(line, line.partition("#")[2].strip()))
    return out


COMMANDS = readme_commands((ROOT / "README.md").read_text())


def _env(fresh: bool = False) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("VIRTUAL_ENV", None)
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and Path(p).resolve() != (VENV / "bin").resolve()]
    if not fresh:  # as `source .venv/bin/activate` leaves it
        path.insert(0, str(VENV / "bin"))
        env["VIRTUAL_ENV"] = str(VENV)
    env["PATH"] = os.pathsep.join(path)
    return env


def bash(command: str, cwd: Path, fresh: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=_env(fresh), capture_output=True, text=True,
                          timeout=HANG_S)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    here = tmp_path_factory.mktemp("readme")
    (here / "property_tests").symlink_to(ROOT / "property_tests")
    (here / ".venv").symlink_to(VENV)
    return here


def test_the_readme_lists_its_commands_and_states_what_the_long_ones_cost():
    words = [c.line.split()[:2] for c in COMMANDS]
    assert words[0] == ["source", ".venv/bin/activate"]
    named = {w[1] for w in words if w[0] == "rmqspec"}
    assert named >= {"simulate", "replay", "check-trace", "conform", "vectors", "view", "shrink", "fuzz", "prove",
                     "explore", "check", "bench", "mutants"}
    assert not [c.line for c in COMMANDS if re.search(r"\bCMD\b|impl\.jsonl|\[--|\|", c.line.partition("#")[0])]
    assert any(c.slow for c in COMMANDS) and any(c.exit_code == 1 for c in COMMANDS)


@pytest.mark.parametrize("command", [pytest.param(c, marks=[pytest.mark.slow] if c.slow else [], id=f"{i:02d}-{c.line.split()[1]}")
                                     for i, c in enumerate(COMMANDS)])
def test_a_readme_command_runs_as_written(command, workdir):
    done = bash(command.line, workdir)
    assert done.returncode == command.exit_code, (
        f"{command.line}\nexit {done.returncode}, stdout ends:\n{done.stdout[-1500:]}\nstderr ends:\n{done.stderr[-1500:]}")


def test_the_replay_command_a_simulate_prints_runs_in_a_fresh_shell(tmp_path):
    """Without .venv/bin on PATH, `rmqspec` is not found: the command printed is the path."""
    done = bash(f"{shlex.quote(str(SCRIPT))} simulate --protocol election --steps 50 --trace t.jsonl --quiet",
                tmp_path, fresh=True)
    assert done.returncode == 0, done.stderr
    printed = re.search(r"\(([^()]* replay t\.jsonl)\)", done.stdout).group(1)
    assert not printed.startswith("rmqspec ") or bash("command -v rmqspec", tmp_path, fresh=True).returncode == 0
    again = bash(printed + " --quiet", tmp_path, fresh=True)
    assert again.returncode == 0 and "match" in again.stdout + again.stderr, again.stderr
