"""The progress lines long commands print on stderr (spark_harness/progress.py): in a log,
a line per item when there are few, a line per tenth when there are many, one last line
without a guess of the time left; nothing when disabled."""

import io

from spark_harness import progress
from spark_harness.progress import ITEM_LINES, Progress


def lines(out: io.StringIO) -> list[str]:
    return out.getvalue().splitlines()


def test_few_items_get_a_line_each_and_one_last_line():
    out = io.StringIO()
    bar = Progress(3, label="prove", unit="rows", out=out)
    for row in ("a", "b", "c"):
        bar.advance(1, f"row {row}")
    bar.finish()
    bar.finish()
    got = lines(out)
    assert len(got) == 3 and got[0].startswith("prove [") and "1/3 rows" in got[0] and got[0].endswith("row a")
    assert "3/3 rows" in got[-1] and "eta" not in got[-1]


def test_many_items_get_a_first_line_and_one_per_tenth():
    out = io.StringIO()
    bar = Progress(10 * ITEM_LINES, unit="histories", out=out)
    for _ in range(10 * ITEM_LINES):
        bar.advance(1)
    bar.finish()
    got = lines(out)
    assert len(got) == 11 and " 0%" in got[0] and "100%" in got[-1]  # the start, then every tenth


def test_an_early_end_says_where_it_stopped_without_an_eta():
    out = io.StringIO()
    bar = Progress(1000, label="shrink", unit="replayed steps", out=out)
    bar.update(120, "best so far: 7")
    bar.finish(130, "5 chosen events, 1-minimal")
    got = lines(out)
    assert "eta" in got[0] and got[-1].endswith("130/1,000 replayed steps  0 s  5 chosen events, 1-minimal")


def test_a_note_says_what_runs_without_moving():
    out = io.StringIO()
    bar = Progress(5, label="check", unit="parts", out=out)
    bar.note("running suites")
    bar.note("running suites")
    bar.advance(1, "suites ok")
    got = lines(out)
    assert len(got) == 2 and "0/5 parts" in got[0] and got[0].endswith("running suites") and "1/5" in got[1]


def test_disabled_prints_nothing():
    out = io.StringIO()
    bar = Progress(3, out=out, enabled=False)
    bar.advance(1)
    bar.note("x")
    bar.finish()
    assert out.getvalue() == ""


def test_a_log_gets_a_line_after_a_quiet_spell_even_when_nothing_moved(monkeypatch):
    """A history that runs for a minute must not look like a hang: at least every QUIET_S
    seconds of updates, one line with the time it has taken (the clock is a fake one)."""
    clock = [100.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    out = io.StringIO()
    bar = Progress(10 * ITEM_LINES, unit="histories", out=out)
    bar.update(1, "tasks 0/36, 2 running")
    assert len(out.getvalue().splitlines()) == 1
    clock[0] += progress.QUIET_S / 2
    bar.update(1, "tasks 0/36, 2 running")
    assert len(out.getvalue().splitlines()) == 1
    clock[0] += progress.QUIET_S / 2
    bar.update(1, "tasks 0/36, 2 running")
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and f"{progress.QUIET_S:.0f} s" in lines[1]
