"""A world config from a protocol's name, a cluster size, a fault profile's name and overrides.

The protocol's own keys go to its `make_config`; two generic keys shape the faults of
any protocol, so a fuzz history that narrows them (spark_harness/variants.py) is still
one `--config` away from `rmqspec simulate`:

- `fault_kinds`: the profile's fault kinds to keep (FaultProfile weight names, the
  protocol's own `ext` kinds included); every other weight becomes 0. Swarm testing
  runs each history with a subset of the kinds, so rare shapes are not diluted.
- `crashable`: the node ids random crashes may pick (WorldConfig.crashable), e.g. only
  the master, so that its data loss happens while its slaves stay connected.
- `script`: scenario actions pinned at times (docs/scenario-format.md) among the random
  events, e.g. a slave's machine crashing during its first seconds of replication.

A trace header records the resulting profile and crashable nodes, so a trace replays
without these keys.
"""

from __future__ import annotations

import reference_impl.core.faults as faults
from reference_impl.core.plugin import protocol as protocol_of
from reference_impl.core.scenario import parse_actions
from reference_impl.core.state import thaw
from reference_impl.core.world import WorldConfig

WORLD_KEYS = ("fault_kinds", "crashable", "script")


def restrict(prof: faults.FaultProfile, kinds: list[str] | tuple[str, ...]) -> faults.FaultProfile:
    """`prof` with only `kinds` left (the others weigh 0); its name records what was kept."""
    own = [k for k, _ in prof.ext]
    unknown = sorted(set(kinds) - set(faults.FAULT_KINDS) - set(own))
    if unknown:
        raise ValueError(f"fault_kinds: unknown kind(s) {', '.join(unknown)}; "
                         f"known: {', '.join(faults.FAULT_KINDS + tuple(own))}")
    keep = set(kinds)
    changes = {k: 0.0 for k in faults.FAULT_KINDS if k not in keep and getattr(prof, k)}
    ext = tuple((k, w) for k, w in prof.ext if k in keep)
    kept = [k for k in faults.FAULT_KINDS + tuple(own) if k in keep]
    return prof.evolve(name=f"{prof.name}:{'+'.join(kept) or 'nothing'}", ext=ext, **changes)


def world_config(protocol: str, nodes: int, profile: str = "none", overrides: dict | None = None) -> WorldConfig:
    """The world config of `protocol` with `nodes` nodes under fault profile `profile`.
    Raises KeyError for an unknown protocol or profile and ValueError (or TypeError) for a
    bad override, with the message a user should read."""
    p = protocol_of(protocol)
    opts = dict(overrides or {})
    kinds = opts.pop("fault_kinds", None)
    targets = opts.pop("crashable", None)
    script = opts.pop("script", None)
    cfg = p.make_config(nodes, opts)
    prof = faults.profile(profile, protocol)
    if kinds is not None:
        if not isinstance(kinds, (list, tuple)) or not all(isinstance(k, str) for k in kinds):
            raise ValueError("fault_kinds must be a list of fault kind names")
        prof = restrict(prof, kinds)
    cfg = cfg.evolve(profile=prof)
    if targets is not None:
        if not isinstance(targets, (list, tuple)) or not targets or any(t not in cfg.ids for t in targets):
            raise ValueError(f"crashable must be a non-empty list of node ids among {list(cfg.ids)}")
        cfg = cfg.evolve(crashable=tuple(sorted(cfg.ids.index(t) for t in set(targets))))
    if script is not None:
        actions = [thaw(a) for a in script] if isinstance(script, (list, tuple)) else script
        cfg = cfg.evolve(script=parse_actions(actions, cfg.ids, p))
    return cfg
