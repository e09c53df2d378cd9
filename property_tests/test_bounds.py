"""Bounds owned by the spec: a property's bound comes from RocketMQ's documented defaults
(spec/bounds.py), or from a value the user set, never from the reference's own config.

A reference whose default drifted must break the property that bounds it: a NameServer that
expires brokers after 1,200 s instead of 120 s fails NS-1, while the same expiry asked for by
the user (`--config`, a scenario's `config`) is honoured.

With 4.9.4's defaults that drift changes nothing a history can show: the NameServer's Netty
idle handler (serverChannelMaxIdleTimeSeconds, 120 s) closes a silent broker's channel, and
onChannelDestroy drops the broker, 120 s after its last registration whether the scan's
expiry is 120 s or 1,200 s. The tests therefore run with the idle handler off (0, a
deployment's setting), where the scan alone bounds how long a dead broker stays listed.
"""

from __future__ import annotations

import json

import pytest

from histories import runner, scenario_file
from reference_impl import core
from reference_impl.core import codec
from reference_impl.nameserver import world as nw
from spec import bounds
from spec import election as espec
from spec import nameserver as nspec

CRASH_A_MASTER = {
    "schema": "rmqspec.scenario/1", "name": "a master's machine dies; its NameServer entry must expire",
    "protocol": "nameserver", "nodes": 2, "seed": 2, "until_ms": 200_000,
    "steps": [{"at_ms": 20_000, "do": "os_crash", "node": "b0-m"}],
}


NO_IDLE = {"server_channel_max_idle_time_seconds": 0}


def _scenario(config: dict | None = None) -> core.WorldConfig:
    d = dict(CRASH_A_MASTER, config={**NO_IDLE, **(config or {})})
    return scenario_file.parse(d, "crash_a_master").cfg


def _ns1(cfg: core.WorldConfig) -> list:
    r = runner.simulate(cfg, 2, 1_000_000, CRASH_A_MASTER["until_ms"])
    return [v for v in r.violations if v.property == "NS-1"]


def test_ns1_holds_with_rocketmq_expiry():
    assert _ns1(_scenario()) == []


def test_a_nameserver_expiring_brokers_after_1200_s_fails_ns1():
    """The reference's default drifted to 1,200 s (no override): NS-1 keeps its 120 s + 10 s bound and
    reports the dead master still listed, unexpectedly."""
    cfg = _scenario()
    proto, found = nw._set_leaf(cfg.proto, "broker_channel_expired_time", 1_200_000)
    assert found and "broker_channel_expired_time" not in cfg.overrides
    (v,) = _ns1(cfg.evolve(proto=proto))
    assert v.expected is None and "b0-m" in v.detail and "130000 ms" in v.detail


def test_an_expiry_the_user_sets_is_the_bound():
    """The same 1,200 s asked for in the scenario's config: NS-1 uses it and holds."""
    cfg = _scenario({"broker_channel_expired_time": 1_200_000})
    assert cfg.proto.namesrv.broker_channel_expired_time == 1_200_000
    assert nspec.ns1_bound_ms(core.init(cfg)) == 1_210_000
    assert _ns1(cfg) == []


def test_bounds_read_defaults_not_the_protocol_config():
    """Every bound function answers the documented default when the world config's record says
    otherwise but no override was given."""
    cfg = core.protocol("election").make_config(3, {})
    drifted = cfg.evolve(proto=cfg.proto.evolve(dledger=cfg.proto.dledger.evolve(heart_beat_time_interval_ms=20_000)))
    w, wd = core.init(cfg), core.init(drifted)
    for f in (espec.hb1_quiet_ms, espec.hb2_bound_ms, espec.ele_l_bound_ms, espec.live1_bound_ms,
              espec.live3_bound_ms):
        assert f(w) == f(wd), f.__name__
    asked = core.protocol("election").make_config(3, {"heart_beat_time_interval_ms": 20_000})
    assert espec.hb2_bound_ms(core.init(asked)) == espec.hb2_bound_ms(w) + 5 * 18_000


@pytest.mark.parametrize("key", sorted(bounds.DEFAULTS))
def test_every_default_names_a_config_key(key):
    """A bound's setting is overridable by the same key the protocols' make_config takes."""
    takers = []
    for name in ("election", "dledger_log", "dledger_commitlog", "nameserver", "ha", "offsets"):
        try:
            core.protocol(name).make_config(2 if name in ("ha", "offsets") else 3, {key: bounds.DEFAULTS[key]})
            takers.append(name)
        except ValueError:
            pass
    assert takers, key


def test_overrides_survive_a_trace_header():
    cfg = core.protocol("nameserver").make_config(2, {"broker_channel_expired_time": 60_000})
    back = codec.load_config(json.loads(json.dumps(codec.dump_config(cfg))))
    assert back.overrides == cfg.overrides and nspec.ns1_bound_ms(core.init(back)) == 70_000
