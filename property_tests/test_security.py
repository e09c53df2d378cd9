"""Safe on a shared machine (docs/security.md): each attack planted as it was made, and shown
to have no effect. Another local user is played by a folder owned by another uid (when the
tests run as root) or open to every user (otherwise): either is refused the same way.

- A pickle planted in the Numba cache fallback under the shared temp folder, at the very name
  Numba would load, never runs; the same pickle in a folder that is ours does (so the test
  could fail).
- Spark's Log4j2 configuration is shipped in the package; a symlink planted at the old fixed
  path under the temp folder is left alone.
- prove's default witness folder is private.
- Outputs replace a symlink planted at their name, never write through it; a symlinked folder
  inside an output folder is refused; `view` on a report folder received from someone else
  writes nothing outside it, whatever report.json names.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import pickle
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from histories import files
from histories.fast.core import cache
from model_checks import prove
from rmqspec import cli
from spark_harness import engines

ROOT = Path(__file__).resolve().parent.parent
ROOT_USER = os.getuid() == 0
OTHER_UID = 65534  # nobody


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _foreign(path: Path) -> Path:
    """`path` (a folder, made with its parents) as another user would leave it for us."""
    path.mkdir(parents=True, exist_ok=True)
    if ROOT_USER:
        os.chown(path, OTHER_UID, OTHER_UID)
        os.chmod(path, 0o700)
    else:
        os.chmod(path, 0o777)
    return path


class Payload:
    """Unpickling this creates `marker`: the stand-in for another user's code."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


# --- private folders under a shared temp folder ---


def test_a_temp_folder_another_user_made_first_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    planted = _foreign(tmp_path / f"rmqspec-{os.getuid()}")
    folder, why = files.private_temp("prove")
    assert why and str(planted) in why
    assert not files.inside(str(planted), str(folder))
    st = os.lstat(folder)
    assert st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) == 0o700


def test_a_symlink_at_the_temp_folder_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    (tmp_path / f"rmqspec-{os.getuid()}").symlink_to(theirs)
    folder, why = files.private_temp("prove")
    assert why and "symlink" in why
    assert not files.inside(str(theirs), str(folder)) and not (theirs / "prove").exists()


def test_a_temp_folder_of_ours_is_reused(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    first, why = files.private_temp("prove")
    again, why_again = files.private_temp("prove")
    assert why is None and why_again is None and first == again == tmp_path / f"rmqspec-{os.getuid()}" / "prove"


def test_prove_witnesses_go_to_a_private_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    _foreign(tmp_path / f"rmqspec-{os.getuid()}")
    out = Path(prove.default_out_dir())
    st = os.lstat(out)
    assert st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) == 0o700
    assert not files.inside(str(tmp_path / f"rmqspec-{os.getuid()}"), str(out))


# --- the Numba cache ---

_PROBE = """
import sys
from histories.fast.core import cache
import numba
ns = {"__name__": "histories.fast.probe"}
exec("def probe(x):\\n    return x + 1\\n", ns)
probe = numba.njit(cache=True)(ns["probe"])
assert probe(1) == 2
print(cache.FOLDER)
"""


def _run_probe(tmp_path: Path) -> subprocess.CompletedProcess:
    """A kernel of histories/fast compiled with caching in a fresh process whose home cache is
    not writable (a file stands where the folder should be), as on a read-only executor."""
    blocked = tmp_path / "readonly-home-cache"
    blocked.write_text("")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env |= {"TMPDIR": str(tmp_path / "tmp"), "XDG_CACHE_HOME": str(blocked), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", _PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)


def _plant_index(folder: Path, marker: Path) -> None:
    """A Numba index file at the name the probe's cache would load (file, qualname, module, line, Python)."""
    name = f"string.probe-probe-1.py{sys.version_info[0]}{sys.version_info[1]}{sys.abiflags}.nbi"
    (folder / name).write_bytes(pickle.dumps(Payload(marker)))


def test_a_pickle_planted_in_the_shared_cache_fallback_never_runs(tmp_path):
    marker = tmp_path / "payload-ran"
    base = tmp_path / "tmp" / f"rmqspec-{os.getuid()}"
    planted = base / f"numba-{cache.digest()}"
    planted.mkdir(parents=True)
    _plant_index(planted, marker)
    _foreign(planted)
    _foreign(base)
    run = _run_probe(tmp_path)
    assert run.returncode == 0, run.stderr
    assert not marker.exists()
    used = Path(run.stdout.strip().splitlines()[-1])
    assert not files.inside(str(base), str(used))
    assert "not cached across runs" in run.stderr and len(run.stderr.strip().splitlines()) == 1


def test_the_same_pickle_in_a_folder_of_ours_does_run(tmp_path):
    """The control: the planted index is loaded when the folder is one we trust, so the test
    above would fail if the fallback still used a folder another user made."""
    marker = tmp_path / "payload-ran"
    base = files.private_folder(tmp_path / "tmp" / f"rmqspec-{os.getuid()}")
    ours = files.private_folder(base / f"numba-{cache.digest()}")
    _plant_index(ours, marker)
    run = _run_probe(tmp_path)
    assert run.returncode == 0, run.stderr
    assert marker.exists() and Path(run.stdout.strip().splitlines()[-1]) == ours


# --- Spark's Log4j2 configuration ---


def test_log4j_configuration_is_shipped_and_a_planted_symlink_is_left_alone(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    (tmp_path / "rmqspec-log4j2.properties").symlink_to(victim)
    path = engines.quiet_log4j()
    assert Path(path).resolve().parent == (ROOT / "spark_harness").resolve()
    assert "rootLogger.level = error" in Path(path).read_text()
    assert victim.read_text() == "mine\n"


# --- outputs ---


def _victim(tmp_path: Path, name: str) -> Path:
    v = tmp_path / "elsewhere" / name
    v.parent.mkdir(exist_ok=True)
    v.write_text("not yours\n")
    return v


def test_atomic_write_replaces_a_symlink_and_keeps_the_umask(tmp_path):
    victim = _victim(tmp_path, "target")
    link = tmp_path / "out.txt"
    link.symlink_to(victim)
    files.write_text(str(link), "ours\n")
    assert victim.read_text() == "not yours\n"
    assert not link.is_symlink() and link.read_text() == "ours\n"
    assert stat.S_IMODE(link.stat().st_mode) == 0o666 & ~files._UMASK
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_a_stream_the_user_names_is_written_to_not_replaced(tmp_path):
    """`--trace /dev/stdout` or a pipe: a FIFO stays a FIFO and gets the text."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    files.write_text(str(fifo), "through the pipe\n")
    reader.join(10)
    assert got == ["through the pipe\n"] and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_simulate_trace_replaces_a_symlink_not_its_target(tmp_path):
    victim = _victim(tmp_path, "bashrc")
    link = tmp_path / "t.jsonl"
    link.symlink_to(victim)
    code, out, err = _cli("simulate", "--protocol", "election", "--steps", "50", "--trace", str(link), "--quiet")
    assert code == 0, err
    assert victim.read_text() == "not yours\n" and not link.is_symlink()
    assert json.loads(link.read_text().splitlines()[0])["protocol"] == "election"


def test_vectors_out_replaces_a_symlink_not_its_target(tmp_path):
    victim = _victim(tmp_path, "v.json")
    link = tmp_path / "v.json"
    link.symlink_to(victim)
    code, out, err = _cli("vectors", "--protocol", "election", "--count", "3", "--out", str(link))
    assert code == 0, err
    assert victim.read_text() == "not yours\n" and not link.is_symlink()


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sec") / "rep"
    code, stdout, err = _cli("fuzz", "--protocol", "election", "--histories", "8", "--master", "none", "--engine",
                             "reference", "--out", str(out), "--no-progress", "--no-plots")
    assert code == 0, (stdout, err)
    assert list(out.glob("counterexamples/*.jsonl")), "the fuzz run must leave a counterexample to view"
    return out


def test_fuzz_out_replaces_planted_symlinks(tmp_path):
    out = tmp_path / "rep"
    out.mkdir()
    victims = {}
    for name in ("report.md", "report.json", "index.html", "histories.jsonl"):
        victims[name] = _victim(tmp_path, name)
        (out / name).symlink_to(victims[name])
    code, stdout, err = _cli("fuzz", "--protocol", "election", "--histories", "4", "--master", "none", "--engine",
                             "reference", "--out", str(out), "--no-progress", "--no-plots")
    assert code == 0, err
    for name, v in victims.items():
        assert v.read_text() == "not yours\n", name
        assert not (out / name).is_symlink() and (out / name).stat().st_size > 0, name


def test_fuzz_refuses_a_symlinked_counterexamples_folder(tmp_path):
    out = tmp_path / "rep"
    out.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / "counterexamples").symlink_to(elsewhere)
    code, stdout, err = _cli("fuzz", "--protocol", "election", "--histories", "8", "--master", "none", "--engine",
                             "reference", "--out", str(out), "--no-progress", "--no-plots")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "symlink" in err, (code, err)
    assert list(elsewhere.iterdir()) == []


def test_view_of_a_received_report_writes_nothing_outside_it(report_dir, tmp_path):
    received = tmp_path / "received"
    shutil.copytree(report_dir, received)
    for html in received.glob("**/*.html"):
        html.unlink()
    victims = []
    for trace in received.glob("counterexamples/*.jsonl"):
        v = _victim(tmp_path, trace.stem + ".html")
        (trace.parent / (trace.stem + ".html")).symlink_to(v)
        victims.append(v)
    # report.json names traces outside the folder by absolute paths: one under the name of the
    # report's own copy (which is shown instead), one under a name the folder lacks (not shown)
    outside = tmp_path / "outside"
    outside.mkdir()
    report = json.loads((received / "report.json").read_text())
    key, entry = next((k, v) for k, v in report["violations"].items() if (v.get("counterexample") or {}).get("trace"))
    own = Path(entry["counterexample"]["trace"]).name
    shutil.copy(received / "counterexamples" / own, outside / own)
    shutil.copy(received / "counterexamples" / own, outside / "only-outside.jsonl")
    entry["counterexample"]["trace"] = str(outside / own)
    report["violations"][key + "-copy"] = json.loads(json.dumps(entry))
    report["violations"][key + "-copy"]["counterexample"]["trace"] = str(outside / "only-outside.jsonl")
    (received / "report.json").write_text(json.dumps(report))
    before = sorted(p.name for p in outside.iterdir())
    code, stdout, err = _cli("view", str(received), "--json")
    assert code == 0, err
    for v in victims:
        assert v.read_text() == "not yours\n"
    assert sorted(p.name for p in outside.iterdir()) == before
    summary = json.loads(stdout)
    own_traces = len(list((received / "counterexamples").glob("*.jsonl")))
    assert len(summary["pages"]) == own_traces, "the report's own copy of a trace is shown, the outside one is not"
    assert summary["errors"] == ["trace missing: only-outside.jsonl"]
    for page in summary["pages"]:
        assert files.inside(str(received), page["out"]) and not Path(page["out"]).is_symlink()
