"""The published JSON Schemas (docs/schemas/) accept what the tool writes and refuse the hostile
cases the tool refuses, so an implementer validating with their own tools agrees with us."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest
from referencing import Registry, Resource

from histories import runner, scenario_file
from histories import trace as trace_mod
from property_tests import parser_fuzz as pf

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = {p.name: json.loads(p.read_text()) for p in (ROOT / "docs" / "schemas").glob("*.json")}
REGISTRY = Registry().with_resources((s["$id"].rsplit("/", 1)[0] + "/" + name, Resource.from_contents(s))
                                     for name, s in SCHEMAS.items())


def validator(name):
    schema = SCHEMAS[name]
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, registry=REGISTRY)


@pytest.fixture(scope="module")
def traces():
    return {p: [json.loads(x) for x in data.decode().splitlines()] for p, data in pf.trace_seeds(steps=60).items()}


def test_every_trace_the_tool_writes_fits_the_schemas(traces):
    header, step = validator("trace-header.json"), validator("trace-step.json")
    for protocol, objs in traces.items():
        header.validate(objs[0])
        for k, o in enumerate(objs[1:], 2):
            assert not list(step.iter_errors(o)), (protocol, k, o)


def test_every_shipped_scenario_and_config_fits_the_schemas():
    scenario, config = validator("scenario.json"), validator("fuzz-config.json")
    for path in pf.SCENARIOS:
        scenario.validate(json.loads(path.read_text()))
    for text in pf.CONFIG_SEEDS.values():
        config.validate(json.loads(text))


def _trace_refused_by_both(objs, line, tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in objs))
    with pytest.raises(trace_mod.TraceError), open(path, "rb") as f:
        runner.replay(f)
    schema = validator("trace-header.json" if line == 0 else "trace-step.json")
    assert list(schema.iter_errors(objs[line])), objs[line]


@pytest.mark.parametrize("line, change", [
    (0, lambda o: o["config"].__setitem__("script", 5)),
    (0, lambda o: o["config"].__setitem__("ids", ["n0", "n0", "n2"])),
    (0, lambda o: o["config"]["profile"].__setitem__("loss", 2)),
    (0, lambda o: o.__setitem__("bogus", 1)),
    (0, lambda o: o["config"].__setitem__("script", [{"at_ms": 1.5, "do": "heal"}])),
    (3, lambda o: o.__setitem__("t_ms", 1.5)),
    (3, lambda o: o.__setitem__("event", {"kind": "tick", "node": "n0", "draw": 65536})),
    (3, lambda o: o.__setitem__("event", {"kind": "tick", "node": "\x1b[2J"})),
    (3, lambda o: o.__setitem__("event", {"kind": "explode"})),
    (3, lambda o: o.__setitem__("i", -1)),
], ids=["script-int", "duplicate-ids", "weight-2", "unknown-header-key", "float-at", "float-t", "draw-65536",
        "escape-node", "unknown-kind", "negative-i"])
def test_hostile_traces_are_refused_by_schema_and_tool(traces, tmp_path, line, change):
    objs = copy.deepcopy(traces["election"])
    change(objs[line])
    _trace_refused_by_both(objs, line, tmp_path)


@pytest.mark.parametrize("change", [
    lambda d: d.__setitem__("until_ms", 2 ** 64),
    lambda d: d.__setitem__("nodes", "3"),
    lambda d: d.__setitem__("config", [1]),
    lambda d: d.__setitem__("surprise", 1),
    lambda d: d["steps"].append({"at_ms": 1.5, "do": "heal"}),
], ids=["until-2**64", "nodes-string", "config-list", "unknown-key", "float-at"])
def test_hostile_scenarios_are_refused_by_schema_and_tool(change):
    d = json.loads((ROOT / "property_tests/scenarios/election/lost_currterm_two_leaders.json").read_text())
    change(d)
    assert list(validator("scenario.json").iter_errors(d))
    with pytest.raises(ValueError):
        scenario_file.parse(d)


def test_shrunk_and_explored_traces_fit_the_schemas(tmp_path):
    """The traces `shrink` and the explorer write carry their provenance in the header; they fit too,
    and check-trace reads them."""
    from model_checks import explore
    from reference_impl.election import world as election_world
    from rmqspec import cli

    hostile = tmp_path / "h.jsonl"
    assert cli.main(["simulate", "--faults", "hostile", "--seed", "0", "--steps", "4000", "--trace", str(hostile),
                     "--quiet"]) == 0
    shrunk = tmp_path / "s.jsonl"
    assert cli.main(["shrink", str(hostile), "--out", str(shrunk), "--budget", "2000"]) == 0
    explored = tmp_path / "e.jsonl"
    cfg = election_world.make_config(3)
    explore.write_event_trace(cfg, [], str(explored), {"explore": {"depth": 3}})
    for path in (shrunk, explored):
        objs = [json.loads(x) for x in path.read_text().splitlines()]
        validator("trace-header.json").validate(objs[0])
        for o in objs[1:]:
            validator("trace-step.json").validate(o)
        assert cli.main(["check-trace", str(path)]) == 0
