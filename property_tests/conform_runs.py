"""What the conform tests of every protocol share: the test drivers' commands, `rmqspec conform
--json` in this process, and a vectors file's layout (edge cases first, then generated ones)
checked through `vectors --check` and the reference driver."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rmqspec import cli

PY = sys.executable


def reference_driver(protocol: str) -> str:
    """The command of the reference behind the driver protocol (property_tests/drivers)."""
    return f"{PY} -m property_tests.drivers.{protocol}_reference"


def broken_driver(protocol: str, bug: str) -> str:
    """The command of the reference with one deliberate bug."""
    return f"{PY} -m property_tests.drivers.{protocol}_broken --bug {bug}"


def conform_json(capsys, driver: str, *more: str, protocol: str) -> tuple[int, dict]:
    """`rmqspec conform --protocol P --driver D --json ...`: its exit code and its JSON outcome (a test
    file binds its protocol: `functools.partial(conform_json, protocol=P)`)."""
    code = cli.main(["conform", "--protocol", protocol, "--driver", driver, "--json", *more])
    return code, json.loads(capsys.readouterr().out)


def write_vectors(path: Path, protocol: str, count: int, seed: int) -> Path:
    assert cli.main(["vectors", "--protocol", protocol, "--out", str(path), "--count", str(count), "--seed",
                     str(seed), "--json"]) == 0
    return path


def check_vectors_round_trip(capsys, protocol: str, inputs: tuple, path: Path, generated: int) -> None:
    """The file holds the edge cases, then `generated` random ones, a case of every input kind;
    `vectors --check` and the reference driver both agree with every one."""
    doc = json.loads(path.read_text())
    assert doc["protocol"] == protocol
    ids = [v["id"] for v in doc["vectors"]]
    assert ids[0].startswith("edge-") and sum(i.startswith("random-") for i in ids) == generated
    assert {v["requires"][0] for v in doc["vectors"]} == set(inputs)
    assert cli.main(["vectors", "--check", str(path)]) == 0
    capsys.readouterr()
    code, d = conform_json(capsys, reference_driver(protocol), "--vectors", str(path), protocol=protocol)
    assert code == 0 and d["cases"] == len(doc["vectors"])
