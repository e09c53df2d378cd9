"""The report's pictures (spark_harness.plots): SVG written directly, well-formed, with what
docs/fuzzing.md says a timeline and a report plot show, and the same bytes for the same input
whether a timeline is drawn from its trace file or from the page data its replay holds."""

import xml.etree.ElementTree as ET

from histories import runner, view
from reference_impl import core
from reference_impl.core import faults
from spark_harness import plots

SVG = "{http://www.w3.org/2000/svg}"


def _trace(tmp_path, steps=130):
    """An election history with crashes, OS crashes and restarts (profile hostile, seed 0
    loses a term file: ELE-3 at step 123), written as a trace."""
    cfg = core.protocol("election").make_config(3, {}).evolve(profile=faults.profile("hostile", "election"))
    path = tmp_path / "h.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        run = runner.simulate(cfg, 0, steps, trace_out=f)
    return str(path), run


def _texts(root):
    return [t.text for t in root.iter(SVG + "text")]


def test_a_timeline_shows_lanes_faults_chosen_events_and_the_violation(tmp_path):
    path, run = _trace(tmp_path)
    ele3 = next(v for v in run.violations if v.property == "ELE-3")
    out = plots.timeline(path, str(tmp_path / "t.svg"), "election ELE-3", ele3.step, "ELE-3", (1, 2, ele3.step))
    root = ET.parse(out).getroot()  # well-formed XML
    assert root.tag == SVG + "svg"
    texts = _texts(root)
    assert {"n0", "n1", "n2"} <= set(texts)  # a lane per node
    assert f"ELE-3 (step {ele3.step})" in texts and "election ELE-3" in texts
    assert {"CANDIDATE", "down", "crash", "OS crash", "restart", "chosen event"} <= set(texts)  # the legend
    fills = {p.get("fill") for p in root.iter(SVG + "path")}
    assert {plots.ROLE_COLORS["CANDIDATE"], "url(#down)"} <= fills  # lanes by role, and down
    assert any(t.startswith("t") and t[1:].isdigit() for t in texts)  # terms on the lanes
    rings = [c for c in root.iter(SVG + "circle") if c.get("stroke") == "orange"]
    assert len(rings) == 3 + 1  # three chosen events and the legend's
    assert any(p.get("stroke") == "red" for p in root.iter(SVG + "path"))  # an OS crash's cross
    assert any(line.get("stroke") == "red" for line in root.iter(SVG + "line"))  # the violating step


def test_a_timeline_is_the_same_bytes_from_its_file_and_from_its_page_data(tmp_path):
    for steps in (60, 400):  # drawn step by step, and over time
        path, _ = _trace(tmp_path, steps)
        data, violations = view.check_trace(path)
        assert data["replay"]["ok"] and bool(violations) == (steps > 123)  # ELE-3 at step 123
        a = open(plots.timeline(path, str(tmp_path / "a.svg"), "x", 5, "P", (1, 3))).read()
        b = open(plots.timeline(path, str(tmp_path / "b.svg"), "x", 5, "P", (1, 3), page=data)).read()
        c = open(plots.timeline(path, str(tmp_path / "c.svg"), "x", 5, "P", (1, 3))).read()
        assert a == b == c


def test_report_plots_name_every_distribution_and_coverage_group(tmp_path):
    dists = {"steps": {"count": 40, "min": 100, "max": 9000, "p50": 700, "p99": 8800,
                       "buckets": [[96, 104, 3], [640, 704, 30], [8192, 9216, 7]]},
             "stat:leader_losses": {"count": 40, "min": 0, "max": 3, "p50": 1, "p99": 3,
                                    "buckets": [[0, 1, 10], [1, 2, 20], [3, 4, 10]]},
             "stat:never": {"count": 0}}
    root = ET.parse(plots.distributions(str(tmp_path / "d.svg"), "election: distributions", dists)).getroot()
    texts = " ".join(_texts(root))
    assert "election: distributions" in texts and "steps  (n=40, p50=700, p99=8800)" in texts
    assert "stat:leader_losses" in texts and "stat:never" not in texts
    assert len([r for r in root.iter(SVG + "path") if r.get("fill") == "#1f77b4"]) == 2  # a histogram each
    root = ET.parse(plots.coverage(str(tmp_path / "c.svg"), "election: coverage", {"tick": (3, 4), "deliver": (5, 5)},
                                   {"VoteResponse": (2, 6)})).getroot()
    texts = _texts(root)
    assert {"tick", "deliver", "VoteResponse", "3/4", "5/5", "2/6"} <= set(texts)
    assert "actions (kind, over roles): 8/9" in texts and "branches (result codes): 2/6" in texts
