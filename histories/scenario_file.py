"""Scenario files (docs/scenario-format.md): read, validate, turn into a world config."""

from __future__ import annotations

import json
from typing import Any

import attrs

from reference_impl import core
from reference_impl.core import faults, scenario

SCHEMA = "rmqspec.scenario/1"
MAX_BYTES = 1 << 20
KEYS = {"schema", "name", "description", "java_test", "protocol", "nodes", "config", "seed", "faults", "timing",
        "down", "until_ms", "steps"}


@attrs.define
class Scenario:
    name: str
    description: str
    java_test: str | None
    cfg: core.WorldConfig
    seed: int
    until_ms: int


def load(path: str) -> Scenario:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise scenario.ScenarioError(f"cannot read {path}: {e.strerror}") from None
    if len(text) > MAX_BYTES:
        raise scenario.ScenarioError(f"{path}: larger than {MAX_BYTES} bytes")
    try:
        d = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as e:
        raise scenario.ScenarioError(f"{path}: not JSON ({e})") from None
    return parse(d, path)


def parse(d: Any, where: str = "scenario") -> Scenario:
    if not isinstance(d, dict):
        raise scenario.ScenarioError(f"{where}: must be a JSON object")
    if d.get("schema", SCHEMA) != SCHEMA:
        raise scenario.ScenarioError(f"{where}: schema must be {SCHEMA!r}")
    unknown = set(d) - KEYS
    if unknown:
        raise scenario.ScenarioError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    name = d.get("protocol")
    try:
        p = core.protocol(name)
    except KeyError:
        raise scenario.ScenarioError(
            f"{where}: 'protocol' must be one of {', '.join(core.protocol_names())}") from None
    nodes = d.get("nodes", 3)
    if not isinstance(nodes, int) or not 1 <= nodes <= 64:
        raise scenario.ScenarioError(f"{where}: 'nodes' must be an integer in 1..64")
    until = d.get("until_ms")
    if not isinstance(until, int) or until <= 0:
        raise scenario.ScenarioError(f"{where}: 'until_ms' (the end of the scenario) must be a positive integer")
    seed = d.get("seed", 0)
    if not isinstance(seed, int):
        raise scenario.ScenarioError(f"{where}: 'seed' must be an integer")
    try:
        cfg = p.make_config(nodes, d.get("config") or {})
        profile = faults.profile(d.get("faults", "none"), name)
        if "timing" in d:
            profile = profile.evolve(timing=d["timing"])
    except (KeyError, TypeError, ValueError) as e:
        raise scenario.ScenarioError(f"{where}: {e.args[0] if e.args else e}") from None
    down = d.get("down", [])
    if not isinstance(down, list) or any(x not in cfg.ids for x in down):
        raise scenario.ScenarioError(f"{where}: 'down' must list node ids of {list(cfg.ids)}")
    actions = scenario.parse_actions(d.get("steps", []), cfg.ids, p)
    cfg = cfg.evolve(profile=profile, script=actions, down=tuple(cfg.ids.index(x) for x in down))
    return Scenario(name=d.get("name", where), description=d.get("description", ""), java_test=d.get("java_test"),
                    cfg=cfg, seed=seed, until_ms=until)
