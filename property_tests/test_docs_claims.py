"""What the README and docs claim, checked where a test can check it (issue 29: six claims
were false). Figures that depend on the machine (seconds, events per second) are not
checked here: docs/benchmarks.md says how they were measured and on what.

- the limits the trace and scenario formats state are the readers' (a script's actions,
  header keys);
- every numeric flag is bounded and its --help states the bound, and every option and
  positional argument has a help text;
- every command takes --json, and its listings print JSON with it;
- a transcript in the docs (`$ rmqspec ...` and what it printed) is what the command
  prints now, apart from elapsed seconds;
- the demo's counts in the README and docs/fuzzing.md are what the demo's fuzz run gives
  (slow: make test-all).
"""

from __future__ import annotations

import argparse
import io
import json
import re
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from conform.driver import HELLO_TIMEOUT_S
from histories import formats
from rmqspec import cli

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# elapsed time in a transcript, the one thing that differs from run to run: "(0.51 s)"
SECONDS = re.compile(r"\(\d+(\.\d+)? s\)")


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def text(name: str) -> str:
    return " ".join((ROOT / name).read_text().split())  # a sentence may break across lines


def number(s: str) -> int:
    return int(s.replace(",", ""))


# --- the formats' limits ---

def test_the_script_limit_the_docs_state_is_the_readers(tmp_path):
    stated = (re.findall(r"a script of more than ([\d,]+) actions", text("docs/trace-format.md"))
              + re.findall(r"the script has at most ([\d,]+) actions", text("docs/trace-format.md"))
              + re.findall(r"`steps` holds at most ([\d,]+) actions", text("docs/scenario-format.md")))
    assert len(stated) == 3 and {number(n) for n in stated} == {formats.MAX_SCRIPT_ACTIONS}
    code, _, _ = run("simulate", "--script", str(ROOT / "property_tests/scenarios/election/lost_currterm_two_leaders.json"),
                     "--trace", str(tmp_path / "s.jsonl"), "--quiet")
    lines = (tmp_path / "s.jsonl").read_text().splitlines()
    header = json.loads(lines[0])
    header["config"]["script"] = [{"at_ms": 0, "do": "heal"}] * (formats.MAX_SCRIPT_ACTIONS + 1)
    (tmp_path / "long.jsonl").write_text("\n".join([json.dumps(header, separators=(",", ":")), *lines[1:]]) + "\n")
    code, _, err = run("replay", str(tmp_path / "long.jsonl"), "--quiet")
    assert code == 2 and f"{formats.MAX_SCRIPT_ACTIONS:,}" in err and len(err.strip().splitlines()) == 1


def test_other_header_keys_are_refused_unless_they_begin_x(tmp_path):
    assert "Any other key is refused, except extension keys that begin with `x_`" in text("docs/trace-format.md")
    trace = tmp_path / "t.jsonl"
    assert run("simulate", "--protocol", "election", "--steps", "30", "--trace", str(trace), "--quiet")[0] == 0
    lines = trace.read_text().splitlines()
    for key, expected in (("x_colour", 0), ("colour", 2)):
        header = json.loads(lines[0]) | {key: "blue"}
        (tmp_path / f"{key}.jsonl").write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
        code, _, err = run("replay", str(tmp_path / f"{key}.jsonl"), "--quiet")
        assert code == expected, (key, err)
        assert expected == 0 or "colour" in err


# --- the command line ---

def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _options(p: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in p._actions if not isinstance(a, argparse._HelpAction)]


# flags whose value is a number written as text (or a word), so argparse sees no type
NUMBER_AS_TEXT = {("explore", "--draws"), ("fuzz", "--coverage-sample")}
BOUND = re.compile(r"(-?[\d,]+(?:\.\d+)?)\.\.([\d,]+(?:\.\d+)?)")


def _numeric(command: str, a: argparse.Action) -> bool:
    """A flag that takes a number: the bounded parsers of rmqspec/commands/usage.py (`int_in`,
    `float_in`), a list of integers, or a number written as text."""
    flag = a.option_strings[0] if a.option_strings else a.dest
    kind = getattr(a.type, "__qualname__", "")
    return ((command, flag) in NUMBER_AS_TEXT or kind.startswith(("int_in.", "float_in."))
            or kind.startswith("comma_list.") and "integers" in (a.help or ""))


def test_every_numeric_flag_states_its_bound_and_the_bound_holds():
    """README: "Every numeric flag is bounded and its --help states the bound"; one past the
    upper bound is bad input (exit 2), naming the flag."""
    assert "Every numeric flag is bounded and its `--help` states the bound" in text("README.md")
    checked = []
    for command, p in _subcommands().items():
        for a in _options(p):
            if not a.option_strings or not _numeric(command, a):
                continue
            flag = a.option_strings[0]
            help_text = a.help or ""
            bound = BOUND.search(help_text)
            assert bound or "64-bit integer" in help_text, f"{command} {flag}: --help states no bound: {help_text!r}"
            checked.append((command, flag))
            if bound:
                hi = bound.group(2).replace(",", "")
                past = str(int(float(hi)) + 1)
                extra = ("--driver", "true") if command == "conform" else ()
                code, _, err = run(command, *extra, flag, past)
                assert code == 2 and err.count("\n") == 1, (command, flag, past, err)
    for must in [("conform", "--seed"), ("vectors", "--seed"), ("explore", "--draws"), ("explore", "--max-states"),
                 ("fuzz", "--coverage-sample"), ("simulate", "--seed"), ("fuzz", "--histories")]:
        assert must in checked, must


def test_every_option_and_positional_argument_has_a_help_text():
    missing = [f"{command} {a.option_strings[0] if a.option_strings else a.dest}"
               for command, p in _subcommands().items() for a in _options(p) if not (a.help or "").strip()]
    assert missing == []


def test_conform_timeout_help_states_the_hellos_own_timeout():
    timeout = next(a for a in _subcommands()["conform"]._actions if "--timeout" in a.option_strings)
    assert f"{HELLO_TIMEOUT_S:g} s" in timeout.help


def test_every_command_takes_json_and_its_listings_print_json():
    """README: "Every command takes `--json` (its stdout is then one JSON document)"."""
    assert "Every command takes `--json`" in text("README.md")
    assert [c for c, p in _subcommands().items() if not any("--json" in a.option_strings for a in _options(p))] == []
    code, out, _ = run("mutants", "--list", "--json")
    listing = json.loads(out)
    assert code == 0 and len(listing["mutants"]) >= 12
    assert all(m["name"] and m["rule"] and m["catches"] for m in listing["mutants"])
    code, out, _ = run("fuzz", "--list-profiles", "--json")
    assert code == 0 and "election" in json.loads(out)


# --- transcripts ---

def _transcripts() -> list[tuple[str, int, str, list[str]]]:
    """(doc, line, command, printed lines) for each fenced block that starts `$ rmqspec ...`
    and whose files are in the checkout (a block about a file the reader makes is left out)."""
    found = []
    for path in DOCS:
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            if not (line.startswith("$ rmqspec ") and i and lines[i - 1].startswith("```")):
                continue
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            argv = line[2:].split()[1:]
            files = [a for a in argv if a.endswith((".json", ".jsonl"))]
            if all((ROOT / f).is_file() for f in files):
                found.append((path.name, i + 1, line[2:], lines[i + 1:end]))
    return found


TRANSCRIPTS = _transcripts()


def test_the_docs_hold_transcripts_to_check():
    assert {doc for doc, *_ in TRANSCRIPTS} >= {"README.md", "conformance.md", "scenario-format.md"}


@pytest.mark.parametrize("doc, line, command, printed", TRANSCRIPTS, ids=[f"{d}:{n}" for d, n, *_ in TRANSCRIPTS])
def test_a_transcript_in_the_docs_is_what_the_command_prints(doc, line, command, printed, monkeypatch):
    monkeypatch.chdir(ROOT)
    code, out, err = run(*command.split()[1:])
    assert code == 0, err
    got = [SECONDS.sub("(_ s)", x) for x in out.rstrip("\n").splitlines()]
    assert got == [SECONDS.sub("(_ s)", x) for x in printed], f"{doc} line {line}: {command}"


# --- the demo's counts ---

@pytest.mark.slow
def test_the_demo_counts_in_the_docs_are_the_demo_runs(tmp_path):
    """`make demo`'s fuzz run (in this process, no Spark: the same histories and report)
    gives the histories, events and counterexamples the README and docs/fuzzing.md state."""
    readme, fuzzing = text("README.md"), text("docs/fuzzing.md")
    histories, events = re.search(r"(\d+) histories, ([\d,]+) events on local\[\*\]", readme).groups()
    shrunk = re.search(r"all (\d+) are expected violations, so each gets the small expected budget: (\d+) end "
                       r"1-minimal, (\d+) are cut short", fuzzing)
    assert shrunk, "docs/fuzzing.md no longer states the demo's counterexamples"
    code, out, err = run("fuzz", "--protocol", "all", "--histories", "12", "--engine", "reference", "--configs",
                       "default", "--master", "none", "--out", str(tmp_path / "demo"), "--no-progress", "--no-plots",
                       "--no-view")
    assert code == 0, (err + out)[-3000:]  # the summary (stdout) names an unexpected violation
    report = json.loads((tmp_path / "demo" / "report.json").read_text())
    assert (report["histories"], report["steps"]) == (number(histories), number(events))
    shrinking = report["shrinking"]
    assert (shrinking["counterexamples"], shrinking["one_minimal"], shrinking["cut_short"]) == tuple(
        number(n) for n in shrunk.groups())
    assert all(row["expected"] for row in shrinking["by_property"])
