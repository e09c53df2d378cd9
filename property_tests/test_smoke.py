"""End-to-end: a default election run elects one leader and its trace replays."""

import io

from histories import runner
from reference_impl.core import faults
from reference_impl.election import world as election_world


def test_three_nodes_elect_one_leader_and_trace_replays():
    cfg = election_world.make_config(3).evolve(profile=faults.profile("none"))
    out = io.StringIO()
    result = runner.simulate(cfg, seed=1, steps=500, trace_out=out)
    roles = sorted(m.role.value for m in result.world.nodes)
    assert roles == ["FOLLOWER", "FOLLOWER", "LEADER"]
    assert result.ok()
    replayed = runner.replay(io.StringIO(out.getvalue()))
    assert replayed.mismatch is None and replayed.run.steps == result.steps
    assert replayed.run.world == result.world
