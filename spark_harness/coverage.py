"""Coverage of a fuzz run: actions and branches, cheap enough to record at every step.

Actions: `kind@role`, the world event that happened and the role of the node it acted
on, before the event. Kinds are the world's events (reference_impl.core.events): `tick`,
`deliver_request`, `deliver_reply`, `deliver_message` (one-way), `rpc_fail`, `drop`,
`duplicate`, `crash`, `os_crash`, `disk_loss`, `restart`, and the world-wide
`partition`, `cut`, `heal`, `calm` (role `-`); protocol events are `ext:<Type>`. A
node's role is the value of its record's `role` field when that is an enum (LEADER,
SLAVE, ...), else the record's class name (NameServer, Producer, ...), and `down` for
a node that is not running.
The universe (the "total") is every kind the fault profiles in use can produce,
paired with every role the protocol's node records can take (all members of their
role enums), under the world's rules: ticks, crashes and RPC failures need a running
node, restarts a stopped one. Pairs the protocol can never reach (a role it declares
but never enters, say) stay misses, and the report lists them.

Branches: result codes. Each protocol lists the codes where its Java code switches
(`Protocol.branches`: VoteResult.REJECT_ALREADY_VOTED, ParseResult.PASSED,
PutMessageStatus.PUT_OK, ...); a code is hit when a message delivered or an
observation the reference emits carries it in a field (an integer code also when a
record's `code` field holds its number). This is a cheap, honest proxy for branch
coverage that needs no tracing of the reference. Message and observation kinds seen
(`msg:VoteRequest`, `obs:RoleChanged`) are reported too, without a total.
"""

from __future__ import annotations

import enum
from typing import Any

import attrs

from reference_impl import core
from reference_impl.core import network as net_mod

_CRASH_KIND = {(False, False): "crash", (True, False): "os_crash", (True, True): "disk_loss"}


_SCALARS = frozenset({int, str, bool, float, type(None), bytes})
_LABELS: dict[Any, str] = {}  # enum member -> "Enum.MEMBER"


def label(member: enum.Enum) -> str:
    s = _LABELS.get(member)
    if s is None:
        s = _LABELS[member] = f"{type(member).__name__}.{member.name}"
    return s


def role_of(w: core.World, i: int) -> str:
    if i < 0:
        return "-"
    if not w.alive[i]:
        return "down"
    n = w.nodes[i]
    role = getattr(n, "role", None)
    return role.value if isinstance(role, enum.Enum) else type(n).__name__


def classify(w: core.World, ev: Any) -> tuple[str, int, Any]:
    """(kind, node index or -1, message) of an event about to be applied to `w`."""
    t = type(ev)
    if t is core.Tick:
        return "tick", ev.node, None
    if t is core.Deliver:
        env = net_mod.find(w.net, ev.env)
        kind = "deliver_reply" if env.reply else "deliver_request" if env.rpc else "deliver_message"
        return kind, env.dst, env.msg
    if t is core.RpcFail:
        return "rpc_fail", net_mod.find_rpc(w.net, ev.rpc).requester, None
    if t is core.Drop or t is core.Duplicate:
        return ("drop" if t is core.Drop else "duplicate"), net_mod.find(w.net, ev.env).dst, None
    if t is core.Crash:
        return _CRASH_KIND[(ev.os, ev.disk)], ev.node, None
    if t is core.Restart:
        return "restart", ev.node, None
    if t is core.Partition:
        return "partition", -1, None
    if t is core.CutLink:
        return "cut", -1, None
    if t is core.Heal:
        return "heal", -1, None
    if t is core.Calm:
        return "calm", -1, None
    if t is core.Scripted:
        return "script", -1, None
    return f"ext:{t.__name__}", -1, None


_FIELDS: dict[type, tuple[str, ...]] = {}


def codes_in(value: Any, out: set[str], codes: dict[int, str] | None = None) -> None:
    """Add `Enum.MEMBER` for every enum value among a record's fields (one level, and
    inside tuples held by its fields), and `Class.NAME` for a `code` field whose value
    `codes` (the protocol's code_labels) names."""
    t = type(value)
    names = _FIELDS.get(t)
    if names is None:
        names = _FIELDS[t] = tuple(f.name for f in attrs.fields(t)) if attrs.has(t) else ()
    for name in names:
        v = getattr(value, name)
        tv = type(v)
        if tv in _SCALARS:
            if codes and tv is int and name == "code":
                code = codes.get(v)
                if code is not None:
                    out.add(code)
            continue
        if isinstance(v, enum.Enum):
            out.add(label(v))
        elif tv is tuple:
            for x in v:
                if isinstance(x, enum.Enum):
                    out.add(label(x))


# --- universes (computed on the driver, never in the hot loop) ---


def code_labels(protocol: str) -> dict[int, str]:
    """value -> `Class.NAME` for the integer codes among the protocol's branches, so that a
    record whose `code` field holds the plain number (RemotingCommand#code) counts too."""
    out: dict[int, str] = {}
    for member in core.protocol(protocol).branches:
        if isinstance(member, int):
            out.setdefault(int(member), label(member))
    return out


def branch_universe(protocol: str) -> list[str]:
    """The protocol's result codes (`Protocol.branches`), as `Enum.MEMBER` labels."""
    return sorted({label(m) for m in core.protocol(protocol).branches})


def role_universe(cfgs: list[core.WorldConfig]) -> list[str]:
    roles = set()
    for cfg in cfgs:
        for n in core.init(cfg).nodes:
            role = getattr(n, "role", None)
            if isinstance(role, enum.Enum):
                roles.update(m.value for m in type(role))
            else:
                roles.add(type(n).__name__)
    return sorted(roles)


def action_universe(cfgs: list[core.WorldConfig]) -> list[str]:
    """Every kind@role the profiles of `cfgs` can produce (see the module docstring)."""
    if not cfgs:
        return []
    p = core.protocol(cfgs[0].protocol)
    roles = role_universe(cfgs)
    profiles = [c.profile for c in cfgs]

    def on(weight: str) -> bool:
        return any(getattr(prof, weight) for prof in profiles)

    running = ["tick", "deliver_request", "deliver_reply", "rpc_fail"]
    either = ["deliver_request", "deliver_reply"]
    if p.on_message is not None:
        running.append("deliver_message")
        either.append("deliver_message")
    running += [k for k in ("crash", "os_crash", "disk_loss") if on(k)]
    msg_faults = [k for k, w in (("drop", "loss"), ("duplicate", "duplicate")) if on(w)]
    out = {f"{k}@{r}" for k in running + msg_faults for r in roles}
    out |= {f"{k}@down" for k in either + msg_faults}
    # A message whose window closes behind a cut link is lost: drops happen under partitions too.
    if on("partition") or on("one_way"):
        out |= {f"drop@{r}" for r in roles + ["down"]}
    if on("restart"):
        out.add("restart@down")
    world = [k for k, w in (("partition", "partition"), ("cut", "one_way"), ("heal", "heal")) if on(w)]
    if any(prof.calm_at_ms is not None for prof in profiles):
        world.append("calm")
    out |= {f"{k}@-" for k in world}
    return sorted(out)
