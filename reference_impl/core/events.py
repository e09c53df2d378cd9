"""The world's events: one record per action, as raft.tla has one action per message type.

`step(world, event)` (reference_impl.core.transitions) applies them; `enabled(world)`
(reference_impl.core.schedule) lists the ones that may happen next. A protocol may add
events of its own (`Protocol.ext_*`), for example HA's TCP byte streams.
"""

from __future__ import annotations

from reference_impl.core.state import record

DRAW_SPAN = 1 << 16  # a tick's draw is uniform in [0, DRAW_SPAN); Random#nextInt(bound) is draw * bound >> 16


@record
class Tick:
    """A node's thread that is due runs one pass of its loop; `draw` feeds its random choice.

    `thread`: which of the node's threads (0 for a protocol whose node is one actor; a
    protocol whose nodes run several threads lists them, `Protocol.threads`, and each is
    an actor with its own ticks). `late`: how many ms after the thread's wake time the
    tick fires. Under Java timing (FaultProfile.timing) a due loop is noticed anywhere
    within the protocol's loop period (`Protocol.tick_slack`, `Protocol.thread_slack`);
    pinned timing fires at the wake time (late 0)."""

    node: int
    draw: int = 0
    late: int = 0
    thread: int = 0


@record
class Deliver:
    env: int  # Envelope.id


@record
class Drop:
    env: int


@record
class Duplicate:
    env: int


@record
class RpcFail:
    """An open RPC's callback fires with no response (timeout, refused or reset connection).
    `late`: ms after its deadline; under Java timing an invokeAsync timeout fires within
    one scan period of Netty's response table (network.Rpc.window)."""

    rpc: int
    late: int = 0


@record
class Crash:
    """The node's process dies. `os`: the machine goes down too and unsynced writes are lost.
    `disk`: the machine's disk is lost as well (it comes back empty)."""

    node: int
    os: bool = False
    disk: bool = False

    def kind(self) -> str:
        return "disk" if self.disk else "os" if self.os else "process"


@record
class Restart:
    node: int


@record
class Partition:
    """Cut every link between nodes of different groups (both directions)."""

    groups: tuple[tuple[int, ...], ...]


@record
class CutLink:
    """Cut one direction of one link: `src` can no longer reach `dst`."""

    src: int
    dst: int


@record
class Heal:
    pass


@record
class Calm:
    """The quiet tail begins: links heal, down nodes restart, no more faults."""


@record
class Scripted:
    """Action `index` of the scenario script, at its time."""

    index: int


FAULT_EVENTS = (Drop, Duplicate, Crash, Restart, Partition, CutLink, Heal)
