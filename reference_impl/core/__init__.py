"""The generic world every protocol runs on; it imports nothing outside `core`.

| module | what |
|---|---|
| `state` | frozen records (`record`), `FrozenMap`, and their JSON form (`encode`, `freeze`, `thaw`) |
| `inputs` | values from outside, checked: `check_fields`, `structure` (JSON to records), `InputError` |
| `network` | messages in flight, Netty-style RPCs, cut links |
| `events` | the world's events (`Tick`, `Deliver`, `Crash`, ...) |
| `plugin` | the `Protocol` plug-in record and the registry of protocols |
| `faults` | `FaultProfile` and the named profiles |
| `world` | the `World` value, its config and history, `init` |
| `schedule` | time and what may happen next: the horizon, `enabled`, `event_time` |
| `transitions` | what happens: `step(world, event)`, routing a node's outputs |
| `chooser` | the seeded chooser (`SeededChooser`) |
| `scenario` | the scenario-script language |
| `codec` | events and configs as JSON, and back |
| `configure` | a world config from protocol, nodes, profile name and overrides (`world_config`) |

This package's namespace is the generic world's interface, so a checker writes
`from reference_impl import core` and then `core.step(w, e)`, `core.Tick`, ...
(docs/architecture.md). Modules inside `core` import each other directly.
"""

from reference_impl.core.configure import world_config
from reference_impl.core.events import (
                                        DRAW_SPAN,
                                        FAULT_EVENTS,
                                        Calm,
                                        Crash,
                                        CutLink,
                                        Deliver,
                                        Drop,
                                        Duplicate,
                                        Heal,
                                        Partition,
                                        Restart,
                                        RpcFail,
                                        Scripted,
                                        Tick,
)
from reference_impl.core.faults import FAULT_KINDS, FaultProfile
from reference_impl.core.plugin import Protocol, protocol, protocol_names, register
from reference_impl.core.schedule import (
                                        CALM_DELAY_MS,
                                        crashable,
                                        deadline,
                                        delay_window,
                                        enabled,
                                        event_time,
                                        fault_events,
                                        fault_kinds,
                                        horizon,
                                        is_enabled,
                                        isolations,
                                        protocol_events,
                                        rpc_window,
                                        thread_wake_times,
                                        tick_window,
                                        wake_times,
)
from reference_impl.core.transitions import apply_fault, apply_outs, crash_node, restart_node, route, step
from reference_impl.core.world import History, World, WorldConfig, index_of, init, set_node, wake_of

__all__ = [
    "DRAW_SPAN", "FAULT_EVENTS", "Calm", "Crash", "CutLink", "Deliver", "Drop", "Duplicate", "Heal", "Partition",
    "Restart", "RpcFail", "Scripted", "Tick", "FAULT_KINDS", "FaultProfile", "Protocol", "protocol",
    "protocol_names", "register", "CALM_DELAY_MS", "crashable", "deadline", "delay_window", "enabled", "event_time",
    "fault_events", "fault_kinds", "horizon", "is_enabled", "isolations", "protocol_events",
    "rpc_window", "thread_wake_times", "tick_window",
    "wake_times",
    "apply_fault", "apply_outs", "crash_node", "restart_node", "route", "step", "History", "World", "WorldConfig",
    "index_of", "init", "set_node", "wake_of", "world_config",
]
