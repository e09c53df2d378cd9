"""Scenario files (docs/scenario-format.md): read, validate, turn into a world config."""

from __future__ import annotations

import json
from typing import Any

import attrs

from histories import formats
from reference_impl import core
from reference_impl.core import faults, inputs, scenario

SCHEMA = "rmqspec.scenario/1"
MAX_BYTES = formats.MAX_LINE_BYTES
# A trace header carries the script (compact JSON), and a trace line holds at most
# MAX_LINE_BYTES: a script must leave room for the rest of the header.
MAX_SCRIPT_BYTES = formats.MAX_LINE_BYTES - (256 << 10)


@attrs.define
class Scenario:
    name: str
    description: str
    java_test: str | None
    cfg: core.WorldConfig
    seed: int
    until_ms: int


def load(path: str) -> Scenario:
    """Read and check a scenario file; FormatError (bad input) names the file and field."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except IsADirectoryError:
        raise formats.FormatError(path, None, "", "is a directory, not a scenario file") from None
    except OSError as e:
        raise formats.FormatError(path, None, "", f"cannot be read: {e.strerror}") from None
    if len(data) > MAX_BYTES:
        raise formats.FormatError(path, None, "", f"is larger than {MAX_BYTES} bytes")
    return parse(formats.loads(data, path), path)


def parse(d: Any, where: str = "scenario") -> Scenario:
    """A parsed scenario file as a world config, or FormatError naming the field."""
    if not isinstance(d, dict):
        raise formats.FormatError(where, None, "", f"must be a JSON object, got {formats.show(d)}")
    if d.get("schema", SCHEMA) != SCHEMA:
        raise formats.FormatError(where, None, "schema", f"must be {SCHEMA!r}")
    doc = formats.check(d, formats.ScenarioDoc, where)
    try:
        p = core.protocol(doc.protocol)
    except KeyError:
        raise formats.FormatError(where, None, "protocol",
                                  f"must be one of {', '.join(core.protocol_names())}, got {doc.protocol!r}") from None
    formats.check_overrides(doc.config, f"{where}: config")
    try:
        cfg = p.make_config(doc.nodes, doc.config)
    except inputs.InputError as e:
        raise formats.FormatError(where, None, inputs.join("config", e.path), e.message) from None
    except (KeyError, TypeError, ValueError) as e:
        raise formats.FormatError(where, None, "config", str(e.args[0] if e.args else e)) from None
    try:
        profile = faults.profile(doc.faults, doc.protocol)
    except KeyError as e:
        raise formats.FormatError(where, None, "faults", str(e.args[0])) from None
    if doc.timing is not None:
        try:
            profile = attrs.evolve(profile, timing=doc.timing)
        except ValueError as e:
            raise formats.FormatError(where, None, "timing", str(e)) from None
    if any(x not in cfg.ids for x in doc.down):
        raise formats.FormatError(where, None, "down", f"must list node ids of {list(cfg.ids)}")
    try:
        actions = scenario.parse_actions(doc.steps, cfg.ids, p)
    except inputs.InputError as e:
        raise formats.FormatError(where, None, inputs.join("steps", e.path), e.message) from None
    if len(json.dumps(doc.steps, separators=(",", ":"))) > MAX_SCRIPT_BYTES:
        raise formats.FormatError(where, None, "steps", f"take more than {MAX_SCRIPT_BYTES} bytes as compact JSON, "
                                                        "more than a trace header can carry")
    cfg = cfg.evolve(profile=profile, script=actions, down=tuple(cfg.ids.index(x) for x in doc.down))
    return Scenario(name=doc.name if doc.name is not None else where, description=doc.description,
                    java_test=doc.java_test, cfg=cfg, seed=doc.seed, until_ms=doc.until_ms)
