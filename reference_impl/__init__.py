"""The executable reference: RocketMQ's HA protocols as pure state-transition functions.

Nothing here reads a clock, a global RNG, the network or the disk; time and random
draws are explicit inputs, and all nondeterminism is the choice of the next event.

`core` is the generic world; each protocol is a package over it (its `world` module
holds the `PROTOCOL` plug-in), and `rocketmq` is the vocabulary the RocketMQ protocols
share. Protocols register here by name and are loaded on first use, so a process
that runs one protocol does not import the other five.
"""

import importlib

from reference_impl.core import plugin

PROTOCOL_PACKAGES = ("election", "dledger_log", "dledger_commitlog", "ha", "offsets", "nameserver")

for _name in PROTOCOL_PACKAGES:
    plugin.register(_name, lambda name=_name: importlib.import_module(f"reference_impl.{name}.world").PROTOCOL)
