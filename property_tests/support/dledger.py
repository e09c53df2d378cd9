"""Builders shared by the DLedger log and commitlog tests: configs, nodes, scripted runs."""

from __future__ import annotations

from typing import Any

from histories import runner, scenario_file
from reference_impl import core
from reference_impl.dledger_log import entry_pusher as ep
from reference_impl.dledger_log import store as st
from reference_impl.election import member_state as mstate
from reference_impl.election import records as el

PEERS3 = ("n0", "n1", "n2")


def node_cfg(peers: tuple[str, ...] = PEERS3, **log: Any) -> st.NodeConfig:
    return st.NodeConfig(dledger=el.DLedgerConfig(peers=peers, enable_leader_elector=False), log=st.LogConfig(**log))


def member(self_id: str = "n0", role: el.Role = el.Role.LEADER, term: int = 0, leader: str | None = None,
           **fields: Any) -> mstate.Member:
    lead = self_id if role is el.Role.LEADER else leader
    return mstate.Member(self_id=self_id, curr_term=term, role=role, leader_id=lead, **fields)


def body(key: str = "b", length: int = 16) -> st.Body:
    return st.Body(key=key, length=length)


def leader_store(cfg: st.LogConfig, n: int, length: int = 16, term: int = 0, s: st.Store | None = None
                 ) -> st.Store:
    """A store with n entries appended as leader of `term`."""
    s = s if s is not None else st.empty()
    m = member("n0", el.Role.LEADER, term)
    for i in range(n):
        s, _ = st.append_as_leader(cfg, s, m, body(f"e{i}", length), 0)
    return s


def results(obs: list, cls: type = ep.AppendResult) -> list:
    return [o for _, o in obs if isinstance(o, cls)]


def run_script(nodes: int, steps: list[dict], until_ms: int, config: dict | None = None, seed: int = 1,
               down: list[str] | None = None, protocol: str = "dledger_log", faults: str = "none"
               ) -> tuple[runner.RunResult, list]:
    """Run a scenario given inline; returns the result and every (node index, observation)."""
    sc = scenario_file.parse({"protocol": protocol, "nodes": nodes, "config": config or {}, "until_ms": until_ms,
                              "steps": steps, "down": down or [], "faults": faults})
    seen: list = []

    def hook(i: int, before: core.World, event: Any, after: core.World, obs: tuple) -> None:
        seen.extend(obs)

    result = runner.simulate(sc.cfg, seed, 2_000_000, until_ms, hooks=(hook,))
    return result, seen


def store_of(w: core.World, node_id: str) -> st.Store:
    return w.nodes[w.cfg.ids.index(node_id)].store


def forced(leader: str, **config: Any) -> dict:
    """The DLedger tests' harness (launchServer(..., leaderId, FILE)) with no clients."""
    return {"forced_leader": leader, "clients": 0, **config}


