"""The executable reference: RocketMQ's HA protocols as pure state-transition functions.

Nothing here reads a clock, a global RNG, the network or the disk; time and random
draws are explicit inputs, and all nondeterminism is the choice of the next event.
Protocols register here by name; each is loaded on first use.
"""

import importlib

from reference_impl import world

PROTOCOL_MODULES = {
    "election": "reference_impl.election_world",
    "nameserver": "reference_impl.nameserver_world",
    "ha": "reference_impl.ha_world",
    "dledger_log": "reference_impl.dledger_log_world",
    "dledger_commitlog": "reference_impl.dledger_commitlog_world",
}

for _name, _module in PROTOCOL_MODULES.items():
    world.register(_name, lambda m=_module: importlib.import_module(m).PROTOCOL)
