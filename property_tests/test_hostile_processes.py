"""Hostile programs and signals (issue 28, parts 2 and 3): a driver under test that floods a
pipe, nests its JSON or leaves a child behind; Ctrl-C and SIGTERM during `conform` and
during a fuzz on Spark; two fuzz runs into one folder. Each is one line and exit 2 (or
130/143 for a signal), with bounded memory and nothing left running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conform import session as conform_session
from histories import files
from rmqspec import cli
from spark_harness import java

PY = sys.executable
RMQSPEC = Path(PY).with_name("rmqspec")


def misbehaving(mode: str, *more: str) -> str:
    return " ".join([PY, "-m", "property_tests.drivers.misbehaving", "--mode", mode, *map(str, more)])


def run(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def gone(pid: int, within_s: float = 30.0) -> bool:
    """Whether process `pid` has ended (a killed orphan is reaped by init, not at once)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        with open(f"/proc/{pid}/stat") as f:  # a zombie not yet reaped has ended too
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                return True
        time.sleep(0.1)
    return False


def kill_if_alive(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


# --- a driver's output is bounded input ---


@pytest.mark.parametrize("mode, says", [
    ("long-line", "the driver wrote a line longer than 4194304 bytes to stdout"),
    ("long-stderr", "the driver wrote a line longer than 4194304 bytes to stderr"),
    ("deep-hello", "the answer to the hello is refused: JSON nests deeper than 32 levels"),
    ("digits-hello", "the answer to the hello is refused: JSON has an integer of 100001 digits (at most 20)"),
    ("deep-answer", "the answer to case 1 is refused: JSON nests deeper than 32 levels"),
    ("digits-answer", "the answer to case 1 is refused: JSON has an integer of 100001 digits (at most 20)"),
])
def test_a_driver_that_floods_or_nests_is_one_line_and_exit_2(capsys, mode, says):
    """5 MiB with no newline once grew rmqspec to 7.3 GiB; a deep or long-digit answer was a traceback."""
    code, out, err = run(capsys, "conform", "--driver", misbehaving(mode), "--count", "5", "--timeout", "30")
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("rmqspec: error: driver: ") and says in err, err


# --- a driver's process group ends with the run ---


@pytest.mark.parametrize("mode, expected_code", [("child", 0), ("child-not-json", 2), ("child-hang", 2)],
                         ids=["done", "error", "timeout"])
def test_a_child_the_driver_started_does_not_outlive_the_run(capsys, tmp_path, mode, expected_code):
    pidfile = tmp_path / "child.pid"
    code, _, _ = run(capsys, "conform", "--driver", misbehaving(mode, "--pidfile", pidfile), "--count", "3",
                     "--timeout", "2")
    child = int(pidfile.read_text())
    try:
        assert code == expected_code and gone(child)
    finally:
        kill_if_alive(child)


def start_in_own_group(argv: list[str], **kwargs) -> subprocess.Popen:
    """A command started as a terminal starts it: a process group of its own, which a
    Ctrl-C (or `timeout`, or a CI runner's SIGTERM) signals as a whole."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True, **kwargs)


@pytest.mark.skipif(not RMQSPEC.exists(), reason="rmqspec is not installed here")
@pytest.mark.parametrize("signum, exit_code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["ctrl-c", "sigterm"])
def test_a_signal_during_conform_ends_the_driver_group_with_one_line(tmp_path, signum, exit_code):
    """SIGTERM once killed rmqspec at once and left the driver (in its own session) and its child running."""
    pidfile = tmp_path / "child.pid"
    p = start_in_own_group([str(RMQSPEC), "conform", "--json", "--timeout", "3600",
                            "--driver", misbehaving("child-hang", "--pidfile", str(pidfile))])
    child = None
    try:
        deadline = time.monotonic() + 120
        while not pidfile.exists() or not pidfile.read_text():
            assert time.monotonic() < deadline and p.poll() is None, p.communicate()
            time.sleep(0.1)
        child = int(pidfile.read_text())
        time.sleep(1)  # the hello answered, case 1 waiting
        os.killpg(p.pid, signum)
        out, err = p.communicate(timeout=60)
        assert p.returncode == exit_code and err == "rmqspec: interrupted\n", (p.returncode, err)
        assert gone(child)
    finally:
        if p.poll() is None:
            p.kill()
        if child:
            kill_if_alive(child)


# --- Ctrl-C and SIGTERM during a fuzz on Spark ---


def _java() -> str | None:
    try:
        return java.find_java_home()
    except java.JavaMissing:
        return None


@pytest.mark.skipif(not RMQSPEC.exists() or _java() is None, reason="needs the installed rmqspec and a Java for Spark")
@pytest.mark.parametrize("signum, exit_code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["ctrl-c", "sigterm"])
def test_a_signal_during_a_spark_fuzz_is_one_line(tmp_path, signum, exit_code):
    """Ctrl-C on `local[2]` printed 225 lines with three Python tracebacks (PySpark's SIGINT
    handler cancelling jobs through py4j from inside py4j) and SIGTERM 182 lines of JVM
    errors. Signalled as a terminal signals it (the whole process group) once the job's
    first progress line is out: one line, exit 130 or 143. (local[1]: the machine's cap.)"""
    p = start_in_own_group([str(RMQSPEC), "fuzz", "--protocol", "election", "--histories", "100000",
                            "--engine", "reference", "--master", "local[1]", "--out", str(tmp_path / "out")])
    try:
        before = []
        for line in p.stderr:  # Spark's start-up notes, then the job's first progress line
            before.append(line)
            if line.startswith("fuzz ["):
                break
        assert p.poll() is None, "".join(before)
        time.sleep(2)
        os.killpg(p.pid, signum)
        out, after = p.communicate(timeout=300)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == exit_code and after == "rmqspec: interrupted\n", (p.returncode, after[-3000:])
    assert "Traceback" not in "".join(before) + out


# --- two fuzz runs into one folder ---


FUZZ = ("fuzz", "--protocol", "election", "--master", "none", "--engine", "reference", "--no-progress", "--no-plots")


def test_a_second_fuzz_run_into_a_folder_in_use_refuses(capsys, tmp_path):
    """The second run once replaced the first's report under it; now it refuses at once."""
    out = tmp_path / "out"
    out.mkdir()
    with files.folder_lock(str(out), "rmqspec fuzz"):
        code, stdout, err = run(capsys, *FUZZ, "--histories", "2", "--out", out)
    assert code == 2 and len(err.splitlines()) == 1, err
    assert f"{out} is in use by another run (rmqspec fuzz, pid {os.getpid()})" in err
    assert sorted(p.name for p in out.iterdir()) == [files.LOCK_NAME]
    code, stdout, err = run(capsys, *FUZZ, "--histories", "2", "--out", out)
    assert code == 0, err  # the lock is released with the run that held it


def test_a_previous_runs_counterexamples_are_cleared(capsys, tmp_path):
    """A run that writes no counterexample into a folder that held some: none are left behind,
    so nothing in the folder is another run's, unreferenced by this run's report."""
    out = tmp_path / "out"
    code, _, err = run(capsys, *FUZZ, "--histories", "8", "--out", out)
    assert code == 0 and list(out.glob("counterexamples/*.jsonl")), err
    code, _, err = run(capsys, *FUZZ, "--histories", "8", "--out", out, "--no-counterexamples", "--no-view")
    assert code == 0, err
    assert not (out / "counterexamples").exists() and not (out / "index.html").exists()
    assert json.loads((out / "report.json").read_text())["outputs"].get("counterexamples") is None


# --- progress of long conform and vectors runs ---


def test_conform_shows_its_progress_on_stderr(capsys):
    """A slow driver's 1,000 cases printed nothing for minutes (a line every 250 cases)."""
    reference = f"{PY} -m property_tests.drivers.election_reference"
    code, out, err = run(capsys, "conform", "--driver", reference, "--count", "20")
    lines = err.splitlines()
    assert code == 0 and len(lines) == 20 and all(x.startswith("conform [") for x in lines), err
    assert " 1/20 cases agree " in lines[0] and " 20/20 cases agree " in lines[-1]
    code, out, err = run(capsys, "conform", "--driver", reference, "--count", "20", "--no-progress")
    assert code == 0 and err == ""


def test_vectors_generation_reports_both_phases():
    """`vectors --count 1000000` printed nothing while it generated and answered cases."""
    seen: dict[str, tuple[int, int]] = {}
    conform_session.vectors("election", 30, 1, lambda done, total, what: seen.__setitem__(what, (done, total)))
    assert seen["distinct cases generated"] == (30, 30)
    done, total = seen["cases answered by the reference"]
    assert done == total > 30
