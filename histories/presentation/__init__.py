"""How the tools show a protocol and which clusters they run it on: the other half of a
protocol's plug-in (docs/architecture.md, "The `Presentation` record").

`reference_impl.core.Protocol` says what a protocol *is* (its node transitions, ghost and
configuration), which is all the world needs. A `Presentation` says what only the tools
above the reference read: the timeline's and the summary's text (histories.timeline,
`rmqspec simulate`) and the cluster sizes `rmqspec bench`, `fuzz` and the model checks run
(`bench_nodes`), with the size `--nodes` defaults to. The six shipped protocols are in
`SHIPPED`; a module that registers a protocol of its own (an `--import`, the test-only
mutants) registers its presentation with `register`, or gets `DEFAULT`: the election-style
timeline on three nodes.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from histories.presentation import nameserver, offsets


@attrs.frozen(kw_only=True)
class Presentation:
    """How a protocol is shown and on which cluster sizes the tools run it."""

    # Readable output (the timeline and summary); None: the election-style defaults.
    describe: Callable | None = None  # (node_id, observed now, observed before | None) -> timeline text | None
    describe_obs: Callable | None = None  # (world, node_id, observation) -> timeline text | None
    final_line: Callable | None = None  # (observed state of every node) -> the summary's "final:" text
    bench_nodes: tuple[int, ...] = (3,)  # cluster sizes `rmqspec bench` and `fuzz` use
    default_nodes: int = 3  # `--nodes` when the command line gives none


DEFAULT = Presentation()
SHIPPED = {
    "election": Presentation(bench_nodes=(3, 5)),
    "dledger_log": Presentation(bench_nodes=(3, 5)),
    "dledger_commitlog": Presentation(bench_nodes=(3, 5)),
    "ha": Presentation(bench_nodes=(2, 3)),
    "nameserver": Presentation(describe=nameserver.describe, describe_obs=nameserver.describe_obs,
                               final_line=nameserver.final_line, bench_nodes=(2, 3)),
    "offsets": Presentation(describe=offsets.describe, describe_obs=offsets.describe_obs,
                            final_line=offsets.final_line, bench_nodes=(2,), default_nodes=2),
}
_REGISTERED: dict[str, Presentation] = {}


def register(name: str, presentation: Presentation) -> None:
    """The presentation of a protocol registered by another module (core.register)."""
    _REGISTERED[name] = presentation


def of(name: str) -> Presentation:
    """The protocol's presentation: registered, shipped, or else DEFAULT."""
    return _REGISTERED.get(name) or SHIPPED.get(name, DEFAULT)
