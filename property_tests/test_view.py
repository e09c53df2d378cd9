"""`rmqspec view`: the page's data (steps, send steps, violations), escaping of hostile
trace text, a fuzz report's index, bad input (exit 2, one line), --json; and a real
headless browser (Debian's chromium) that runs the page's script and renders a known
counterexample. The browser tests skip when no browser is installed.

Regenerate the screenshots in docs/images with
    RMQSPEC_VIEW_SCREENSHOTS=docs/images .venv/bin/python -m pytest property_tests/test_view.py -k screenshot
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from histories import view
from rmqspec import cli

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "property_tests" / "scenarios" / "election" / "lost_currterm_two_leaders.json"
PROTOCOLS = ("election", "dledger_log", "dledger_commitlog", "ha", "offsets", "nameserver")
# Runs if the page's script ever executes trace text; the tests look for its marks.
EVIL = ('</script><script>document.body.setAttribute("data-pwned","1")</script>'
        '<img src=x onerror="document.body.setAttribute(\'data-pwned\',\'2\')">\u2028\u2029<!--')
DATA_RE = re.compile(r'<script type="application/json" id="rmq-data">(.*?)</script>', re.S)
EXTERNAL_RE = re.compile(r"""(?:src|href|action)\s*=\s*["']?\s*(?:https?:)?//""", re.I)


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _simulate(path: Path, *argv: str) -> Path:
    code, out, err = _cli("simulate", *argv, "--trace", str(path), "--quiet")
    assert code in (0, 1) and path.exists(), (code, out, err)
    return path


def _embedded(page: str) -> dict:
    m = DATA_RE.search(page)
    assert m, "no embedded data"
    return json.loads(m.group(1))


def _rename(x, old: str, new: str):
    if isinstance(x, str):
        return new if x == old else x
    if isinstance(x, list):
        return [_rename(v, old, new) for v in x]
    if isinstance(x, dict):
        return {(new if k == old else k): _rename(v, old, new) for k, v in x.items()}
    return x


def _hostile_trace(src: Path, dst: Path) -> Path:
    """The trace with EVIL as a header note (the extension key `x_note`) and as a violation's
    property and detail: the free text a trace may carry (a node id is refused at the door,
    test_hostile_node_ids_are_refused_at_the_door)."""
    lines = []
    for line in src.read_text().splitlines():
        d = json.loads(line)
        if "schema" in d:
            d["x_note"] = EVIL
        if "result" in d:
            d["result"]["violations"] = [{"property": "ELE-1" + EVIL, "step": 5, "t_ms": 0, "expected": None,
                                          "detail": EVIL}]
        lines.append(json.dumps(d))
    dst.write_text("\n".join(lines) + "\n")
    return dst


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("view")


@pytest.fixture(scope="module")
def ele1(work) -> Path:
    """The scenario where two nodes lose their currterm file: ELE-3, then ELE-2, then ELE-1."""
    return _simulate(work / "ele1.jsonl", "--script", str(SCENARIO))


class Facts:
    """What the ELE-1 scenario's trace says of itself (its result line): the rows a page
    shows (the initial state and every step) and the step of each violation. Tests read
    these rather than numbers that move when the reference's timing does."""

    def __init__(self, trace: Path) -> None:
        result = json.loads(trace.read_text().splitlines()[-1])["result"]
        self.rows = result["steps"] + 1
        self.v = {v["property"]: v["step"] for v in result["violations"]}
        self.tags = [f"{v['property']}@{v['step']}" for v in result["violations"]]


@pytest.fixture(scope="module")
def facts(ele1) -> Facts:
    f = Facts(ele1)
    assert list(f.v) == ["ELE-3", "ELE-2", "ELE-1"] and f.v["ELE-3"] < f.v["ELE-2"] < f.v["ELE-1"] < f.rows - 1
    return f


@pytest.fixture(scope="module")
def hostile(work) -> Path:
    t = _simulate(work / "plain.jsonl", "--seed", "3", "--steps", "120", "--faults", "standard")
    return _hostile_trace(t, work / "hostile.jsonl")


@pytest.fixture(scope="module")
def fuzz_run(work) -> tuple[Path, str, dict]:
    """A fuzz report dir, fuzz's stdout, and the pages fuzz itself wrote (before any `view`)."""
    out = work / "rep"
    code, stdout, err = _cli("fuzz", "--protocol", "election", "--histories", "8", "--master", "none", "--out",
                             str(out), "--no-progress", "--no-plots")
    assert code == 0, (stdout, err)
    pages = {p.name: p.read_text(encoding="utf-8") for p in [out / "index.html", *out.glob("counterexamples/*.html")]
             if p.exists()}
    return out, stdout, pages


@pytest.fixture(scope="module")
def report(fuzz_run) -> Path:
    return fuzz_run[0]


# --- the page's data ---


def test_election_page_holds_every_step_the_violations_and_send_steps(ele1, facts, work):
    """Every step and the initial state are embedded; ELE-1 at its step with its known
    cause; deliveries know the row they were sent at, always an earlier one."""
    data = view.read_trace(str(ele1))
    assert [s["i"] for s in data["steps"]] == list(range(facts.rows))
    assert data["steps"][0]["e"] is None and set(data["steps"][0]["s"]) == {"n0", "n1", "n2"}
    ele1_v = [v for v in data["violations"] if v["property"] == "ELE-1"]
    assert len(ele1_v) == 1 and ele1_v[0]["step"] == facts.v["ELE-1"] and "currterm" in ele1_v[0]["expected"]
    assert "two leaders in one term" in ele1_v[0]["detail"]
    assert data["violations_from"] == "trace" and data["replay"]["ok"] is True
    sends = [(k, s["f"]) for k, s in enumerate(data["steps"]) if "f" in s]
    assert sends and all(0 <= f < k for k, f in sends)
    assert all(data["steps"][k]["e"]["kind"] in ("deliver", "drop", "duplicate") for k, _ in sends)
    # The state is stored as changes: the ELE-1 step gives only the node that became leader.
    at = data["steps"][facts.v["ELE-1"]]["s"]
    (leader,) = at
    assert at[leader]["role"] == "LEADER" and leader in ele1_v[0]["detail"]
    page = view.render(data)
    assert _embedded(page) == json.loads(json.dumps(data))
    assert "Content-Security-Policy" in page and "'sha256-" in page


def test_page_round_trips_and_is_self_contained_for_every_protocol(work):
    """Each protocol's trace makes a page whose data round-trips, with no external
    src/href and no remote fetch of any kind."""
    for p in PROTOCOLS:
        t = _simulate(work / f"{p}.jsonl", "--protocol", p, "--seed", "1", "--steps", "150", "--faults", "standard")
        data = view.read_trace(str(t))
        assert data["protocol"] == p and len(data["steps"]) == 151 and data["replay"]["ok"], p
        assert any("f" in s for s in data["steps"]), p
        page = view.render(data)
        assert _embedded(page) == json.loads(json.dumps(data)), p
        assert not EXTERNAL_RE.search(page), p
        for token in ("<link", "<iframe", "@import", "url(", "fetch(", "XMLHttpRequest", "WebSocket"):
            assert token not in page, (p, token)


def test_hostile_strings_are_data_never_markup(hostile):
    """A note and a violation made of </script>, <img onerror> and U+2028 appear only
    JSON-escaped: the page's only </script> tags are its own."""
    data = view.read_trace(str(hostile))
    assert data["note"] == EVIL and data["replay"]["ok"]
    assert any(v["detail"] == EVIL for v in data["violations"])
    page = view.render(data)
    assert page.count("</script>") == 2  # the data block's and the script's
    assert "<img" not in page and "<!--" not in page and "\u2028" not in page and "\u2029" not in page
    assert EVIL not in page and "<script>document" not in page
    assert _embedded(page)["note"] == EVIL
    csp = re.search(r'Content-Security-Policy" content="([^"]*)"', page).group(1)
    assert "script-src 'sha256-" in csp and "unsafe-inline" not in csp.split("style-src")[0]


def test_hostile_node_ids_are_refused_at_the_door(work):
    """A trace whose node n1 is renamed to EVIL everywhere never reaches a page."""
    t = _simulate(work / "plain-ids.jsonl", "--seed", "3", "--steps", "60", "--faults", "standard")
    bad = work / "evil-ids.jsonl"
    bad.write_text("".join(json.dumps(_rename(json.loads(x), "n1", EVIL)) + "\n" for x in t.read_text().splitlines()))
    with pytest.raises(view.ViewError, match="ids"):
        view.read_trace(str(bad))


def test_embed_json_escapes_what_could_end_a_script():
    text = view.embed_json({"a": "</script><!--\u2028\u2029&", "b": math.nan})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"a": "</script><!--\u2028\u2029&", "b": "nan"}


def test_no_replay_has_no_send_steps(ele1):
    data = view.read_trace(str(ele1), replay=False)
    assert data["replay"] is None and not any("f" in s for s in data["steps"])
    assert [v["property"] for v in data["violations"]] == ["ELE-3", "ELE-2", "ELE-1"]


def test_trace_without_result_line_takes_violations_from_replay(ele1, facts, work):
    """A trace from elsewhere (no result line, no ids, no times): the replay finds the violations."""
    lines = []
    for line in ele1.read_text().splitlines():
        d = json.loads(line)
        if "result" in d:
            continue
        d.pop("t_ms", None)
        if isinstance(d.get("event"), dict):
            d["event"].pop("id", None)
        lines.append(json.dumps(d))
    t = work / "foreign.jsonl"
    t.write_text("\n".join(lines) + "\n")
    data = view.read_trace(str(t))
    assert data["violations_from"] == "replay" and data["result"] is None
    assert {v["property"]: v["step"] for v in data["violations"]} == facts.v
    assert any("f" in s for s in data["steps"])


def test_mismatching_trace_is_still_shown_with_the_mismatch(ele1, facts, work):
    lines = ele1.read_text().splitlines()
    d = json.loads(lines[12])
    d["state"]["n1"]["term"] = 5
    lines[12] = json.dumps(d)
    t = work / "mismatch.jsonl"
    t.write_text("\n".join(lines) + "\n")
    data = view.read_trace(str(t))
    assert data["replay"]["ok"] is False and data["replay"]["mismatch"]["step"] == d["i"]
    assert len(data["steps"]) == facts.rows  # every step is shown; send steps only where the reference agreed
    assert all(k <= d["i"] for k, s in enumerate(data["steps"]) if "f" in s)


# --- the command ---


def test_view_json_end_to_end(ele1, facts, work):
    """The installed entry point: exit 0, --json with ok, out, steps and violations; the page is written."""
    out = work / "e2e.html"
    proc = subprocess.run([sys.executable, "-m", "rmqspec.cli", "view", str(ele1), "--out", str(out), "--json"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert d["ok"] is True and d["out"] == str(out) and d["steps"] == facts.rows and d["kind"] == "trace"
    assert d["violations"] == facts.tags and d["replay"] == "match"
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_view_default_out_is_next_to_the_trace(ele1, facts):
    code, out, err = _cli("view", str(ele1))
    assert code == 0 and err == "" and facts.tags[-1] in out
    assert ele1.with_suffix(".html").exists()


def test_report_dir_gets_an_index_linking_every_counterexample(report):
    """One page per counterexample next to its trace, an index.html linking each with
    its property, verdict, cause and replay command, and report.md linking the index."""
    rep = json.loads((report / "report.json").read_text())
    cexs = {k: v["counterexample"] for k, v in rep["violations"].items() if v.get("counterexample")}
    assert cexs, "the fuzz run found no counterexample to show"
    code, out, err = _cli("view", str(report), "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["ok"] and d["kind"] == "report" and d["out"] == str(report / "index.html") and not d["errors"]
    assert {p["property"] for p in d["pages"]} == set(cexs)
    index = (report / "index.html").read_text(encoding="utf-8")
    for key, cex in cexs.items():
        page = Path(cex["trace"]).with_suffix(".html")
        assert page.exists()
        data = _embedded(page.read_text(encoding="utf-8"))
        assert data["links"]["index"] == "../index.html"
        step = next(v["step"] for v in data["violations"] if v["property"] == cex["property"])
        rel = os.path.relpath(page, report)
        assert f'href="{rel}#step={step}"' in index and f"<b>{key}</b>" in index  # opens at the violation
        assert os.path.basename(cex["trace"]) in index and "rmqspec replay" in index
        assert cex["cause"] in index.replace("&#x27;", "'")
    assert d["steps"] == sum(p["steps"] for p in d["pages"])
    assert "<script" not in index and not EXTERNAL_RE.search(index)
    assert "[index.html](index.html)" in (report / "report.md").read_text()


def test_fuzz_writes_the_view_itself_and_says_where(fuzz_run):
    """`rmqspec fuzz` writes index.html and a page per counterexample without `view`,
    report.md links the index, and the last lines of its output name the report and the view."""
    out, stdout, pages = fuzz_run
    rep = json.loads((out / "report.json").read_text())
    traces = [Path(v["counterexample"]["trace"]) for v in rep["violations"].values() if v.get("counterexample")]
    assert traces and "index.html" in pages and rep["outputs"]["view"] == "index.html"
    for t in traces:
        page = pages[t.with_suffix(".html").name]
        assert _embedded(page)["links"]["index"] == "../index.html"
        assert f'href="counterexamples/{t.with_suffix(".html").name}#step=' in pages["index.html"]
    assert "[index.html](index.html)" in (out / "report.md").read_text()
    assert stdout.rstrip().splitlines()[-2:] == [
        f"report: {out / 'report.md'} (and report.json)",
        f"view:   {out / 'index.html'} (open it in a browser to step through the counterexamples)"]


def test_report_index_escapes_hostile_report_text(report, hostile, work):
    rep = json.loads((report / "report.json").read_text())
    key = next(iter(rep["violations"]))
    v = rep["violations"][key]
    v["statement"] = v["counterexample"]["cause"] = EVIL
    rep["violations"][EVIL] = rep["violations"].pop(key)
    v["counterexample"]["trace"] = str(hostile)
    bad = work / "badrep"
    bad.mkdir()
    (bad / "report.json").write_text(json.dumps(rep))
    code, out, err = _cli("view", str(bad), "--json")
    assert code == 0, err
    index = (bad / "index.html").read_text(encoding="utf-8")
    assert "<script" not in index and "<img" not in index and "&lt;img src=x" in index


@pytest.mark.parametrize("case", ["missing", "plain_dir", "not_json", "not_a_trace", "bad_report", "overwrite",
                                  "empty", "binary"])
def test_bad_input_exits_2_with_one_line(case, tmp_path, ele1):
    argv = {
        "missing": [str(tmp_path / "nope.jsonl")],
        "plain_dir": [str(tmp_path)],
        "not_json": [str(tmp_path / "x.txt")],
        "not_a_trace": [str(tmp_path / "x.json")],
        "bad_report": [str(tmp_path / "rep")],
        "overwrite": [str(ele1), "--out", str(ele1)],
        "empty": [str(tmp_path / "empty.jsonl")],
        "binary": [str(tmp_path / "bin.jsonl")],
    }[case]
    (tmp_path / "x.txt").write_text("hello\n")
    (tmp_path / "x.json").write_text('{"schema": "rmqspec.fuzz-report/1"}\n')
    (tmp_path / "rep").mkdir()
    (tmp_path / "rep" / "report.json").write_text('{"schema": "something-else"}')
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "bin.jsonl").write_bytes(b"\xff\xfe\x00garbage\n")
    before = ele1.read_bytes()
    code, out, err = _cli("view", *argv, "--json")
    assert code == 2, (code, out, err)
    assert len(err.splitlines()) == 1 and err.startswith("rmqspec: error: ") and "Traceback" not in err + out
    assert out == "" and ele1.read_bytes() == before


# --- a real browser ---


def _browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None


@pytest.fixture(scope="module")
def browser():
    path = _browser()
    if path is None:
        pytest.skip("no headless browser: install Debian's chromium (apt-get install -y chromium) to run this test")
    return path


def _chromium(browser: str, tmp: Path, url: str, *extra: str) -> subprocess.CompletedProcess:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--hide-scrollbars", f"--user-data-dir={profile}", "--window-size=1400,900",
           "--virtual-time-budget=10000", *extra, url]
    # The timeout only guards against a hung browser; nothing is asserted about time.
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    shutil.rmtree(profile, ignore_errors=True)
    return proc


def _dom(browser: str, tmp: Path, page: Path, fragment: str = "") -> str:
    proc = _chromium(browser, tmp, page.resolve().as_uri() + fragment, "--dump-dom")
    assert proc.returncode == 0 and "<body" in proc.stdout, proc.stderr[-2000:]
    return proc.stdout


def _body(dom: str) -> dict:
    tag = re.search(r"<body([^>]*)>", dom).group(1)
    return dict(re.findall(r'([\w-]+)="([^"]*)"', tag))


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_browser_renders_the_counterexample_and_selects_the_hash_step(browser, ele1, facts, tmp_path):
    """The page's script runs under its CSP, draws every step, marks ELE-1 at its step,
    and #step=N selects that step: its state table shows n2 just became LEADER."""
    page = tmp_path / "ele1.html"
    view.write_trace_view(str(ele1), str(page))
    at = facts.v["ELE-1"]
    dom = _dom(browser, tmp_path, page, f"#step={at}")
    body = _body(dom)
    assert body.get("data-ready") == "true", dom[:2000]
    assert body["data-steps"] == str(facts.rows) and body["data-selected"] == str(at)
    assert body["data-violations"].split() == facts.tags
    assert re.search(rf"<title>rmqspec view: election.*ELE-1 at {at}</title>", dom)
    assert f'<table class="state" id="state-table" data-step="{at}">' in dom
    assert re.search(r'<td class="chg" data-node="n2" data-field="role">LEADER</td>', dom)
    assert re.search(r'<td data-node="n0" data-field="role">LEADER</td>', dom)  # the other leader of term 1
    assert 'data-property="ELE-1"' in dom and "two leaders in one term" in dom and "known cause:" in dom
    # Another step by hash: where ELE-3 (a term went down) is violated.
    ele3 = str(facts.v["ELE-3"])
    body3 = _body(_dom(browser, tmp_path, page, f"#step={ele3}"))
    assert body3["data-selected"] == ele3 and body3["data-ready"] == "true"


def test_browser_renders_every_protocol(browser, tmp_path):
    """Each protocol's page (its own roles, clients, protocol events) renders to the end."""
    for p in PROTOCOLS:
        t = _simulate(tmp_path / f"{p}.jsonl", "--protocol", p, "--seed", "1", "--steps", "300", "--faults",
                      "standard")
        page = tmp_path / f"{p}.html"
        view.write_trace_view(str(t), str(page))
        body = _body(_dom(browser, tmp_path, page, "#step=150"))
        assert body.get("data-ready") == "true" and body["data-steps"] == "301" and body["data-selected"] == "150", p


def test_browser_never_runs_hostile_trace_text(browser, hostile, tmp_path):
    page = tmp_path / "hostile.html"
    view.write_trace_view(str(hostile), str(page))
    dom = _dom(browser, tmp_path, page, "#step=5")
    body = _body(dom)
    assert body.get("data-ready") == "true" and "data-pwned" not in body
    assert "<img" not in dom and "&lt;img src=x onerror=" in dom  # shown as text
    assert "&lt;/script&gt;&lt;script&gt;" in dom


def test_browser_opens_20000_steps_without_a_node_per_step(browser, tmp_path):
    """A 20,000-step history: the page is ready with every step, and its DOM stays small
    (lanes are a canvas; only the selected step's table is built)."""
    t = _simulate(tmp_path / "big.jsonl", "--seed", "2", "--steps", "20000", "--faults", "standard")
    page = tmp_path / "big.html"
    view.write_trace_view(str(t), str(page))
    dom = _dom(browser, tmp_path, page, "#step=15000")
    body = _body(dom)
    assert body.get("data-ready") == "true" and body["data-steps"] == "20001" and body["data-selected"] == "15000"
    assert dom.count("<") - dom.count("</") < 1500  # elements, not 20,000 rows


def _save_docs_png(src: Path, name: str) -> None:
    """With RMQSPEC_VIEW_SCREENSHOTS=DIR, keep a small (palette) copy there for the docs."""
    if not os.environ.get("RMQSPEC_VIEW_SCREENSHOTS"):
        return
    target = ROOT / os.environ["RMQSPEC_VIEW_SCREENSHOTS"]  # relative to the repository (an absolute path stays)
    os.makedirs(target, exist_ok=True)
    try:
        from PIL import Image
    except ImportError:
        shutil.copy(src, os.path.join(target, name))
        return
    with Image.open(src) as im:
        im.convert("RGB").quantize(colors=96).save(os.path.join(target, name), optimize=True)


def test_browser_screenshot_of_the_counterexample(browser, ele1, facts, report, tmp_path, monkeypatch):
    """Screenshots of the ELE-1 step, of the faults before it and of a fuzz report's
    index (docs/images)."""
    monkeypatch.chdir(ele1.parent)  # the page shows `rmqspec replay ele1.jsonl`
    page = tmp_path / "ele1.html"
    view.write_trace_view(ele1.name, str(page))
    for fragment, name in ((f"#step={facts.v['ELE-1']}", "view-ele1.png"),
                           (f"#step={facts.v['ELE-3'] + 1}", "view-ele1-faults.png")):
        png = tmp_path / name
        proc = _chromium(browser, tmp_path, page.resolve().as_uri() + fragment, f"--screenshot={png}")
        assert proc.returncode == 0 and png.exists(), proc.stderr[-2000:]
        assert _png_size(png) == (1400, 900) and png.stat().st_size > 20_000  # drawn, not blank
        _save_docs_png(png, name)
    code, _, err = _cli("view", str(report))
    assert code == 0, err
    png2 = tmp_path / "view-index.png"
    proc = _chromium(browser, tmp_path, (report / "index.html").resolve().as_uri(), f"--screenshot={png2}")
    assert proc.returncode == 0 and _png_size(png2) == (1400, 900), proc.stderr[-2000:]
    _save_docs_png(png2, "view-index.png")


class _Cdp:
    """The DevTools protocol over --remote-debugging-pipe (fds 3 and 4): enough to load a
    page, press keys, click and evaluate, with no extra package."""

    def __init__(self, browser: str, profile: Path) -> None:
        to_browser, from_browser = os.pipe(), os.pipe()

        def child() -> None:  # the browser reads commands on fd 3 and writes replies on fd 4
            r = fcntl.fcntl(to_browser[0], fcntl.F_DUPFD, 10)
            w = fcntl.fcntl(from_browser[1], fcntl.F_DUPFD, 10)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.proc = subprocess.Popen(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
             f"--user-data-dir={profile}", "--window-size=1400,900", "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=child,
            close_fds=False)
        os.close(to_browser[0])
        os.close(from_browser[1])
        self.w = os.fdopen(to_browser[1], "wb", buffering=0)
        self.r = os.fdopen(from_browser[0], "rb", buffering=0)
        self.buf, self.n, self.session, self.events = b"", 0, None, []

    def _read(self) -> dict:
        while b"\0" not in self.buf:
            chunk = self.r.read(1 << 16)
            if not chunk:
                raise EOFError("the browser closed its DevTools pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method: str, params: dict | None = None, browser_level: bool = False) -> dict:
        self.n += 1
        m = {"id": self.n, "method": method, "params": params or {}}
        if self.session and not browser_level:
            m["sessionId"] = self.session
        self.w.write(json.dumps(m).encode() + b"\0")
        while True:
            d = self._read()
            if d.get("id") == self.n:
                assert "error" not in d, d
                return d["result"]
            if "method" in d:
                self.events.append(d["method"])

    def wait_event(self, method: str) -> None:
        while method not in self.events:
            d = self._read()
            if "method" in d:
                self.events.append(d["method"])

    def open(self, url: str) -> None:
        target = self.call("Target.createTarget", {"url": "about:blank"}, browser_level=True)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 browser_level=True)["sessionId"]
        self.call("Page.enable")
        self.events.clear()
        self.call("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired")

    def eval(self, expression: str):
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        assert "exceptionDetails" not in r, r
        return r["result"].get("value")

    def key(self, key: str, code: str, vk: int) -> None:
        text = key if len(key) == 1 else ""
        self.call("Input.dispatchKeyEvent", {"type": "keyDown", "key": key, "code": code,
                                             "windowsVirtualKeyCode": vk, "text": text})
        self.call("Input.dispatchKeyEvent", {"type": "keyUp", "key": key, "code": code, "windowsVirtualKeyCode": vk})

    def click(self, x: float, y: float) -> None:
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.call("Browser.close", browser_level=True)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.w.close()
        self.r.close()


@pytest.fixture
def cdp(browser, tmp_path):
    c = _Cdp(browser, tmp_path / "cdp-profile")
    yield c
    c.close()


SELECTED = "document.body.dataset.selected"
NEXT_FRAME = "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))"


def test_browser_keys_clicks_and_hash_move_the_selection(cdp, ele1, facts, tmp_path):
    """Right/left step, n/p jump between violations and faults (the partition at 42,
    the crashes at 43/44, ...), Home/End, a click on a row and on a violation button
    select, and the URL hash follows."""
    page = tmp_path / "ele1.html"
    view.write_trace_view(str(ele1), str(page))
    cdp.open(page.resolve().as_uri() + "#step=10")
    assert cdp.eval("document.body.dataset.ready") == "true" and cdp.eval(SELECTED) == "10"
    steps = []
    for key, code, vk in (("ArrowRight", "ArrowRight", 39), ("ArrowRight", "ArrowRight", 39),
                          ("ArrowLeft", "ArrowLeft", 37), ("n", "KeyN", 78), ("n", "KeyN", 78), ("p", "KeyP", 80),
                          ("End", "End", 35), ("p", "KeyP", 80), ("Home", "Home", 36)):
        cdp.key(key, code, vk)
        steps.append(cdp.eval(SELECTED))
    assert steps[:6] == ["11", "12", "11", "42", "43", "42"]
    last = facts.rows - 1
    assert steps[6] == str(last) and int(steps[7]) < last and steps[8] == "0"
    assert cdp.eval("location.hash") == "#step=0"
    assert cdp.eval("document.getElementById('state-table').dataset.step") == "0"
    # A click on the sixth row (step 5) of the lanes.
    rect = cdp.eval("JSON.stringify(document.getElementById('scroller').getBoundingClientRect())")
    box = json.loads(rect)
    cdp.eval(NEXT_FRAME)
    cdp.click(box["left"] + 100, box["top"] + 5 * 20 + 10 - cdp.eval("document.getElementById('scroller').scrollTop"))
    assert cdp.eval(SELECTED) == "5"
    # The ELE-1 button, then a hash change.
    cdp.eval("[...document.querySelectorAll('.chip')].find(b => b.textContent.startsWith('ELE-1')).click()")
    assert cdp.eval(SELECTED) == str(facts.v["ELE-1"])
    assert cdp.eval("document.querySelector('.vbox').dataset.property") == "ELE-1"
    cdp.eval(f"location.hash = '#step={facts.v['ELE-2']}'")
    cdp.eval(NEXT_FRAME)
    assert cdp.eval(SELECTED) == str(facts.v["ELE-2"])


def test_browser_scrolls_a_20000_step_history(cdp, tmp_path):
    """Scrolled to the end of 20,000 steps, the canvas draws the rows there: the lanes
    have their role colours at the lane's centre."""
    t = _simulate(tmp_path / "big.jsonl", "--seed", "2", "--steps", "20000", "--faults", "standard")
    page = tmp_path / "big.html"
    view.write_trace_view(str(t), str(page))
    cdp.open(page.resolve().as_uri())
    assert cdp.eval("document.body.dataset.steps") == "20001"
    drawn = cdp.eval("""new Promise(r => {
      const sc = document.getElementById('scroller'), cv = document.getElementById('lanes');
      sc.scrollTop = sc.scrollHeight;
      requestAnimationFrame(() => requestAnimationFrame(() => {
        const g = cv.getContext('2d'), d = g.getImageData(0, 0, cv.width, cv.height).data;
        let ink = 0;
        for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0 && (d[i] < 200 || d[i + 1] < 200)) ink++;
        r({top: sc.scrollTop, ink: ink, pixels: d.length / 4});
      }));
    })""")
    assert drawn["top"] > 20000 * 20 - 2000 and drawn["ink"] > drawn["pixels"] * 0.01, drawn
