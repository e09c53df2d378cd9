"""Traces of both DLedger protocols: a seeded history with faults, written as a trace, replays
step for step and passes check-trace; a tampered state is a mismatch; bad input exits 2."""

from __future__ import annotations

import io
import json

import pytest

from histories import runner
from reference_impl import core
from reference_impl.core import faults
from rmqspec import cli


@pytest.mark.parametrize(("protocol", "profile", "config"), [
    ("dledger_log", "hostile", {}),
    ("dledger_log", "standard", {"dledger_version": "fixed"}),
    ("dledger_commitlog", "standard", {"old_messages": 8, "mapped_file_size_commit_log": 2048}),
    ("dledger_commitlog", "os_crash", {}),
])
def test_simulated_trace_replays_identically(protocol: str, profile: str, config: dict) -> None:
    cfg = core.protocol(protocol).make_config(3, config).evolve(profile=faults.profile(profile, protocol))
    out = io.StringIO()
    result = runner.simulate(cfg, 5, 1500, trace_out=out)
    assert result.ok() and result.world.history.crashes + result.world.history.lost_writes.__len__() >= 0
    replayed = runner.replay(io.StringIO(out.getvalue()))
    assert replayed.mismatch is None and replayed.run.steps == result.steps
    assert replayed.run.world == result.world


def test_a_tampered_state_is_a_mismatch() -> None:
    cfg = core.protocol("dledger_log").make_config(3, {}).evolve(profile=faults.profile("standard", "dledger_log"))
    out = io.StringIO()
    runner.simulate(cfg, 2, 400, trace_out=out)
    lines = out.getvalue().splitlines()
    step = json.loads(lines[300])
    step["state"]["n0"]["committed_index"] = 12345
    lines[300] = json.dumps(step)
    replayed = runner.replay(io.StringIO("\n".join(lines) + "\n"))
    assert replayed.mismatch is not None and "committed_index" in replayed.mismatch.message


@pytest.mark.parametrize("args", [
    ["simulate", "--protocol", "dledger_log", "--config", '{"dledger_version": "0.9"}'],
    ["simulate", "--protocol", "dledger_log", "--config", '{"clients": "two"}'],
    ["simulate", "--protocol", "dledger_commitlog", "--config", '{"queues": 0}'],
    ["simulate", "--protocol", "dledger_commitlog", "--faults", "nope"],
])
def test_bad_input_exits_2(args: list, capsys) -> None:
    assert cli.main(args + ["--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rmqspec: error:") and len(err.strip().splitlines()) == 1
