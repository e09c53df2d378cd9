"""DLedger 0.2.6's own election tests, re-created as scenario scripts.

Each file in scenarios/dledger/ mirrors one Java test method (LeaderElectorTest,
protocol.VoteRequestTest, protocol.HeartbeatRequestTest) with the Java test's timings
and assertions; its `java_test` names the method and its `description` says what it
asserts. Every file runs under several seeds: the Java tests' outcomes must not
depend on how the seeded chooser orders deliveries or draws the random waits.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from histories import runner, scenario_file
from reference_impl.core import scenario

ROOT = Path(__file__).parent.parent
SCENARIOS = ROOT / "property_tests" / "scenarios" / "dledger"
FILES = sorted(SCENARIOS.glob("*.json"))
SEEDS = range(1, 21)

# Property violations a scenario causes on purpose, with the reason. Each listed
# violation must occur (so the entry cannot go stale) and no other may.
CAUSED_BY_THE_TEST = {
    "heartbeat_request_test.test_heartbeat": {
        "ELE-5": "the test hands the follower a forged heartbeat from the leader of term T for term T + 1; "
                 "the follower adopts T + 1 and follows that node, which never became leader in T + 1",
    },
}

JAVA_CLASSES = {
    "leader_elector_test": "io.openmessaging.storage.dledger.LeaderElectorTest",
    "vote_request_test": "io.openmessaging.storage.dledger.protocol.VoteRequestTest",
    "heartbeat_request_test": "io.openmessaging.storage.dledger.protocol.HeartbeatRequestTest",
}


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def run_all_seeds(path: Path) -> list[str]:
    """Run the scenario under every seed; a list of what went wrong, per seed."""
    sc = scenario_file.load(str(path))
    allowed = CAUSED_BY_THE_TEST.get(path.stem, {})
    problems = []
    for seed in SEEDS:
        try:
            result = runner.simulate(sc.cfg, seed, steps=1_000_000, until_ms=sc.until_ms)
        except scenario.ScenarioError as e:
            problems.append(f"seed {seed}: the script could not run: {e}")
            continue
        if result.stopped != "until":
            problems.append(f"seed {seed}: stopped early ({result.stopped}) at t={result.world.now} ms")
        for e in result.failed_expectations:
            problems.append(f"seed {seed}: {e.message}")
        found = {v.property: v for v in result.unexpected}
        for prop, v in found.items():
            if prop not in allowed:
                problems.append(f"seed {seed}: {prop} violated at t={v.t_ms} ms: {v.detail}")
        for prop in allowed.keys() - found.keys():
            problems.append(f"seed {seed}: {prop} was expected to be violated ({allowed[prop]}) but held")
        expected_count = sum(1 for a in sc.cfg.script if "expect" in a.args)
        if len(result.expectations) != expected_count:
            problems.append(f"seed {seed}: {len(result.expectations)} expectations checked, "
                            f"the script has {expected_count}")
    return problems


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_java_scenario(path: Path) -> None:
    """The Java test's assertions hold in the reference, on every seed."""
    problems = run_all_seeds(path)
    java_test = json.loads(path.read_text(encoding="utf-8")).get("java_test")
    assert not problems, f"{path.name} ({java_test}):\n" + "\n".join(problems)


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_file_names_its_java_test(path: Path) -> None:
    """<java class in snake_case>.<java method in snake_case>.json, and `java_test` says the same."""
    d = json.loads(path.read_text(encoding="utf-8"))
    cls, _, method = d["java_test"].partition("#")
    prefix, _, stem_method = path.stem.partition(".")
    assert JAVA_CLASSES.get(prefix) == cls
    assert snake(method) == stem_method
    assert d["description"] and d["name"] == f"{cls.rsplit('.', 1)[1]}.{method}"


def test_every_java_test_has_a_scenario() -> None:
    want = {
        "leader_elector_test.test_single_server", "leader_elector_test.test_three_server",
        "leader_elector_test.test_three_server_and_restart_follower",
        "leader_elector_test.test_three_server_and_shutdown_leader",
        "leader_elector_test.test_three_server_and_shutdown_followers",
        "leader_elector_test.test_three_server_and_preferred_leader",
        "vote_request_test.test_vote_normal", "vote_request_test.test_vote_term_small_than_ledger",
        "vote_request_test.test_vote_already_voted", "heartbeat_request_test.test_heartbeat",
    }
    assert want <= {p.stem for p in FILES}


def test_scenario_format_doc_shows_its_example_file_as_it_is() -> None:
    """docs/scenario-format.md quotes one of these files in full; the quote must not drift."""
    doc = (ROOT / "docs" / "scenario-format.md").read_text(encoding="utf-8")
    m = re.search(r"^`(property_tests/scenarios/dledger/[\w.]+\.json)`:\n\n```json\n(.*?)\n```", doc, re.M | re.S)
    assert m, "the Example section names a scenario file and quotes it"
    assert json.loads(m.group(2)) == json.loads((ROOT / m.group(1)).read_text(encoding="utf-8"))
