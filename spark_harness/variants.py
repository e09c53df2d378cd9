"""What else varies between fuzz histories: version profiles, configuration switches a
deployment really uses, swarm subsets of fault kinds, and directed fault shapes.

A fuzz plan names history k of protocol P by arithmetic (spark_harness/plan.py): its
seed, its fault profile and its cluster size, and, here, its **version profile**, cycled
like the profile so that every job runs the `fixed` versions (the known findings
repaired) beside RocketMQ 4.9.4's own (the first version, `default`). Everything else is
drawn from the history's own generator, `random.Random("rmqspec-variant:P:seed")`, which
is not the chooser's (that one is `Random(seed)`), so a history is still named by
(protocol, k) and its seed:

- **switches**: one value of each configuration switch of the protocol (HA's
  `broker_role` and flush mode, DLedger's `preferred_leader_ids`, ...); the first value
  is the default and comes with probability 1/2, the others share the rest;
- **swarm** (half of the histories whose profile mixes several kinds): each fault kind of
  the profile is kept with probability 1/2 (restarts and heals go with what they undo),
  the generic `fault_kinds` key (reference_impl/core/configure.py). Uniform mixing
  dilutes rare shapes: a history with partitions and no loss, or crashes and no
  partitions, reaches states that every-kind-at-once histories almost never do;
- **shape** (a third of the histories whose profile allows one): a directed fault shape
  whose precondition random faults rarely meet, e.g. only the HA master may crash (its
  data loss happens while its slaves stay connected; the generic `crashable` key), or a
  slave's machine crashes at a drawn instant of its initial sync (a pinned `script`).

All of it is a dict of config overrides (`Variant.overrides`), which `rmqspec simulate
--config` takes as it is, and a label per axis (`Variant.label`: what the history ran,
in the per-history row and the report). Keys the user fixed with `--config` are not
varied. `SPACES` holds each protocol's axes; a protocol without an entry (a test mutant
registered under its own name) runs with its defaults.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import attrs

from reference_impl.core import faults
from reference_impl.core.state import freeze

DEFAULT = "default"
FIXED = "fixed"
PRIMARY = ("loss", "duplicate", "crash", "os_crash", "disk_loss", "partition", "one_way")
RECOVERY = {"restart": ("crash", "os_crash", "disk_loss"), "heal": ("partition", "one_way")}
SWARM_SHARE = 0.5  # of the histories whose profile mixes two or more kinds
SHAPE_SHARE = 1 / 3  # of the histories whose profile allows one of the protocol's shapes


@attrs.frozen(kw_only=True)
class Switch:
    """A configuration switch: values as (label, overrides), the default first. `values` may
    be a function of the cluster size (e.g. which node is the preferred leader)."""

    name: str
    values: tuple | Callable[[int], tuple]
    when: Callable[[dict], bool] | None = None  # (overrides chosen so far) -> applies?

    def choices(self, nodes: int) -> tuple:
        return self.values(nodes) if callable(self.values) else self.values


@attrs.frozen(kw_only=True)
class Shape:
    """A directed fault shape: config overrides (`crashable`, a pinned `script`, ...) for
    profiles that weigh one of `needs`."""

    name: str
    needs: tuple[str, ...]  # fault kinds the profile must weigh (any of them)
    overrides: Callable[[int, random.Random], dict]  # (nodes, the history's generator) -> overrides
    description: str = ""


@attrs.frozen(kw_only=True)
class Space:
    versions: tuple = ((DEFAULT, {}),)  # (label, overrides), RocketMQ 4.9.4's first; cycled
    switches: tuple[Switch, ...] = ()
    shapes: tuple[Shape, ...] = ()


@attrs.frozen(kw_only=True)
class Variant:
    label: tuple  # sorted (axis, value label) pairs
    overrides: tuple  # sorted (key, value) pairs, the user's --config included

    def labels(self) -> dict:
        return dict(self.label)


def _preferred(nodes: int) -> tuple:
    """DLedger's preferredLeaderIds (RocketMQ: preferredLeaderId): none, or one of the peers."""
    return ((DEFAULT, {}),) + tuple((f"n{i}", {"preferred_leader_ids": f"n{i}"}) for i in range(nodes))


PREFERRED = Switch(name="preferred_leader", values=_preferred)
SMALL_FILE = 16 * 1024


def _initial_sync_crash(nodes: int, rng: random.Random) -> dict:
    """One slave's machine crashes while its first mapped file is still unflushed: after its
    first report (haSendHeartbeatInterval, 5 s) and before the flush thread's first thorough
    flush (10 s), under ASYNC_FLUSH; random crashes spare the slaves so that the pinned one
    finds it up."""
    slave = f"n{1 + rng.randrange(max(1, nodes - 1))}"
    at = 5_500 + rng.randrange(4_500)
    return {"crashable": ["n0"], "mapped_file_size_commit_log": SMALL_FILE, "flush_disk_type": "ASYNC_FLUSH",
            "script": [{"at_ms": at, "do": "os_crash", "node": slave}]}


SPACES: dict[str, Space] = {
    "election": Space(switches=(PREFERRED,)),
    "dledger_log": Space(
        versions=(("0.2.6", {}), ("0.3.1.2", {"dledger_version": "0.3.1.2"}), (FIXED, {"dledger_version": FIXED})),
        switches=(
            PREFERRED,
            Switch(name="fast_advance", values=((DEFAULT, {}), ("on", {"enable_fast_advance_commit_index": True})),
                   when=lambda o: o.get("dledger_version") == FIXED),
        )),
    "dledger_commitlog": Space(
        versions=(("0.2.6", {}), ("0.3.1.2", {"dledger_version": "0.3.1.2"}),
                  # DLedger 0.4.0 pairs the current-term rule with a no-op on election (docs/dledger-findings.md)
                  (FIXED, {"dledger_version": FIXED, "enable_fast_advance_commit_index": True})),
        switches=(
            PREFERRED,
            Switch(name="store", values=((DEFAULT, {}), ("upgraded", {"old_messages": 8,
                                                                      "mapped_file_size_commit_log": 2048}))),
        )),
    "ha": Space(
        versions=(("4.9.4", {}), ("4.9.2", {"version": "4.9.2"}), (FIXED, {"version": FIXED})),
        switches=(
            Switch(name="broker_role", values=(("ASYNC_MASTER", {}), ("SYNC_MASTER", {"broker_role": "SYNC_MASTER"}))),
            Switch(name="flush", values=(("ASYNC_FLUSH", {}), ("SYNC_FLUSH", {"flush_disk_type": "SYNC_FLUSH"}))),
            # 1 GiB files never roll in a few minutes of puts; 16 KiB files roll every ~160 messages,
            # so a slave asking for 0 is fed from the start of the last file (HA-5/HA-6's preconditions).
            Switch(name="mapped_file", values=(("1GiB", {}), ("16KiB", {"mapped_file_size_commit_log": SMALL_FILE}))),
            Switch(name="producers", values=(("1", {}), ("2", {"producers": 2}))),
        ),
        shapes=(
            Shape(name="master-data-loss", needs=("os_crash", "disk_loss"),
                  overrides=lambda n, rng: {"crashable": ["n0"]},
                  description="only the master crashes: it loses data while its slaves stay connected"),
            Shape(name="slave-data-loss", needs=("os_crash", "disk_loss"),
                  overrides=lambda n, rng: {"crashable": [f"n{i}" for i in range(1, n)]},
                  description="only slaves crash: a slave comes back with less than it reported, or empty"),
            Shape(name="slave-crash-in-initial-sync", needs=("crash", "os_crash", "disk_loss"),
                  overrides=_initial_sync_crash,
                  description="a slave's machine crashes between its first report (5 s) and its first flush, with "
                              "16 KiB files: its first file survives empty while the master rolls on"),
        )),
    "nameserver": Space(
        # 4.9.8's MQFaultStrategy returns a new MessageQueue instead of rewriting the route's (NS-7);
        # 4.9.5's mqadmin deleteTopic asks masters only (ISSUE #4644)
        versions=(("4.9.4", {}), (FIXED, {"fault_fallback_mutates_queue": False, "delete_topic_in_slaves": False})),
        switches=(
            Switch(name="name_servers", values=(("2", {}), ("3", {"name_servers": 3}))),
            # NettyServerConfig.serverChannelMaxIdleTimeSeconds: 0 turns the idle close off, so a silent
            # broker leaves by scanNotActiveBroker's 120 s expiry alone (the two race at 120 s otherwise)
            Switch(name="idle_close", values=(("120s", {}), ("off", {"server_channel_max_idle_time_seconds": 0}))),
            Switch(name="latency_fault", values=(("p1", {}), ("none", {"latency_fault_producers": []}),
                                                 ("p0+p1", {"latency_fault_producers": ["p0", "p1"]}))),
        ),
        shapes=(
            Shape(name="namesrv-restarts", needs=("crash", "os_crash"),
                  overrides=lambda n, rng: {"crashable": ["ns0", "ns1"]},
                  description="only NameServers crash: they restart empty while brokers create and delete topics"),
        )),
    "offsets": Space(
        switches=(
            Switch(name="slave_read", values=((DEFAULT, {}), ("on", {"slave_read_enable": True}))),
            Switch(name="offset_check_in_slave", values=((DEFAULT, {}), ("on", {"offset_check_in_slave": True}))),
        )),
}


def space(protocol: str) -> Space:
    return SPACES.get(protocol, Space())


def versions(protocol: str, user: dict, vary: bool = True) -> tuple:
    """The version profiles a plan cycles: all of the protocol's, or only the default when
    variation is off or the user fixed a version key with --config (then labelled so)."""
    vs = space(protocol).versions
    if any(set(o) & set(user) for _, o in vs):
        return (("--config", {}),)
    return vs if vary else vs[:1]


def rng_of(protocol: str, seed: int) -> random.Random:
    return random.Random(f"rmqspec-variant:{protocol}:{seed}")


def swarm_kinds(prof: faults.FaultProfile, rng: random.Random) -> list[str] | None:
    """A random subset of the profile's fault kinds (None: the profile mixes fewer than two)."""
    own = [k for k, w in prof.ext if w]
    primary = [k for k in PRIMARY if getattr(prof, k)] + own
    if len(primary) < 2:
        return None
    kept = [k for k in primary if rng.random() < 0.5]
    if not kept:
        kept = [rng.choice(primary)]
    if len(kept) == len(primary):
        return None
    for k, needs in RECOVERY.items():
        if getattr(prof, k) and any(x in kept for x in needs):
            kept.append(k)
    return kept


def draw(protocol: str, profile: faults.FaultProfile, nodes: int, seed: int, version: tuple,
         user: tuple = (), vary: bool = True) -> Variant:
    """The variant of one history (module docstring): the version given, the rest drawn."""
    fixed = dict(user)
    label = {"version": version[0]} if len(space(protocol).versions) > 1 else {}
    chosen = dict(version[1])
    if vary:
        rng = rng_of(protocol, seed)
        sp = space(protocol)
        for sw in sp.switches:
            values = sw.choices(nodes)
            # always draw, so that one switch's values do not shift the others' draws
            pick = 0 if rng.random() < 0.5 else 1 + rng.randrange(len(values) - 1)
            if sw.when is not None and not sw.when(chosen):
                continue
            if any(k in fixed for _, o in values for k in o):
                continue
            name, over = values[pick]
            label[sw.name] = name
            chosen.update(over)
        swarm = rng.random() < SWARM_SHARE
        kinds = swarm_kinds(profile, rng) if swarm and "fault_kinds" not in fixed else None
        if kinds is not None:
            chosen["fault_kinds"] = kinds
            label["swarm"] = "+".join(k for k in kinds if k not in RECOVERY)
        shapes = [s for s in sp.shapes if any(getattr(profile, k) for k in s.needs)]
        shape_roll, shape_pick = rng.random(), rng.randrange(max(1, len(shapes)))
        if shapes and shape_roll < SHAPE_SHARE:
            shape = shapes[shape_pick]
            over = shape.overrides(nodes, rng)
            dropped = kinds is not None and not any(k in kinds for k in shape.needs)  # the swarm left it out
            if not dropped and not set(over) & set(fixed):
                label["shape"] = shape.name
                chosen.update(over)
                for sw in sp.switches:  # a shape may set a switch's key: label what the history runs
                    values = sw.choices(nodes)
                    if sw.name not in label or not {k for _, o in values for k in o} & set(over):
                        continue
                    label[sw.name] = next((name for name, o in values[1:]
                                           if all(chosen.get(k) == v for k, v in o.items())), values[0][0])
    chosen.update(fixed)
    return Variant(label=tuple(sorted(label.items())), overrides=tuple(sorted((k, _freeze(v))
                                                                               for k, v in chosen.items())))


def _freeze(v):
    return tuple(freeze(x) for x in v) if isinstance(v, list) else freeze(v)
