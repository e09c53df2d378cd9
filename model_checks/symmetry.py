"""Node-symmetry reduction: a world and its copies with the nodes renamed are one state.

The members of a cluster are interchangeable when their configurations are (same
DLedger config, same initial ledger, no scenario script naming them, no node listed
as down or crashable). Renaming node i to pi(i) everywhere (node ids inside records
and messages, node indices of the network, the per-node tuples of the world and of
the ghost) then maps histories to histories and properties to themselves, so the
explorer keeps one representative per orbit, as TLC's SYMMETRY does.

The key of an orbit is the smallest hash among the renamings of a world (the set of
those hashes is the same for every world of the orbit). Like TLC, the explorer keeps
only these 64-bit fingerprints: with n states the chance that two different states
share one is about n^2 / 2^65 (3e-8 for a million states).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import attrs

from reference_impl import core
from reference_impl.core import network as net_mod
from reference_impl.core.state import FrozenMap

# Ghost fields that are tuples indexed by node position (not by id), per ghost class.
PER_NODE_FIELDS: dict[str, tuple[str, ...]] = {"ElectionGhost": ("cut_since",)}

# Protocols whose node states never hold a message or RPC id (in the symmetric
# configurations the explorer reduces: election keeps an RPC id only for a leadership
# transfer, which needs a preferred leader, and that breaks symmetry anyway).
ID_FREE = frozenset({"election"})

_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields(cls: type) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in attrs.fields(cls))
    return names


def rename(value: Any, ids: dict[str, str]) -> Any:
    """`value` with every node id replaced as `ids` says (records, tuples, sets, maps)."""
    if isinstance(value, str):
        return ids.get(value, value)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, tuple):
        return tuple(rename(v, ids) for v in value)
    if isinstance(value, frozenset):
        return frozenset(rename(v, ids) for v in value)
    if isinstance(value, FrozenMap):
        return FrozenMap((rename(k, ids), rename(v, ids)) for k, v in value.items())
    if attrs.has(type(value)):
        changes = {}
        for name in _fields(type(value)):
            old = getattr(value, name)
            new = rename(old, ids)
            if new is not old and new != old:
                changes[name] = new
        return value.evolve(**changes) if changes else value
    return value


def _permute(seq: tuple, perm: tuple[int, ...]) -> tuple:
    out = [None] * len(seq)
    for i, v in enumerate(seq):
        out[perm[i]] = v
    return tuple(out)


def apply(w: core.World, perm: tuple[int, ...]) -> core.World:
    """The world with node i renamed to node perm[i]."""
    names = w.cfg.ids
    ids = {names[i]: names[j] for i, j in enumerate(perm)}
    net = w.net
    flight = tuple(e.evolve(src=perm[e.src], dst=perm[e.dst], msg=rename(e.msg, ids)) for e in net.flight)
    rpcs = tuple(r.evolve(requester=perm[r.requester], responder=perm[r.responder], ctx=rename(r.ctx, ids))
                 for r in net.rpcs)
    cut = frozenset((perm[a], perm[b]) for a, b in net.cut)
    ghost = rename(w.ghost, ids)
    per_node = PER_NODE_FIELDS.get(type(ghost).__name__, ())
    if per_node:
        ghost = ghost.evolve(**{f: _permute(getattr(ghost, f), perm) for f in per_node})
    h = w.history
    return w.evolve(nodes=_permute(tuple(rename(n, ids) for n in w.nodes), perm), alive=_permute(w.alive, perm),
                    net=net_mod.Network(flight=flight, rpcs=rpcs, cut=cut, next_id=net.next_id), ghost=ghost,
                    history=h.evolve(lost_writes=frozenset(perm[i] for i in h.lost_writes)) if h.lost_writes else h)


def symmetric(cfg: core.WorldConfig) -> bool:
    """Whether the nodes of worlds of `cfg` are interchangeable."""
    if cfg.script or cfg.down or cfg.crashable:
        return False
    proto = cfg.proto
    for name in ("ledger_end_index", "ledger_end_term"):
        values = getattr(proto, name, ())
        if len(set(values)) > 1:
            return False
    dl = getattr(proto, "dledger", None)
    return dl is None or getattr(dl, "preferred_leader_ids", None) is None


class _Fingerprints:
    """Orbit fingerprints, computed from per-component hashes under each renaming.

    Successive worlds share almost all of their parts (a step replaces one node and a
    few messages), and parts are immutable, so the hash of a renamed part is memoized
    by the part's identity (the memo holds the part, so its id cannot be reused)."""

    MEMO_LIMIT = 1 << 20

    def __init__(self, cfg: core.WorldConfig) -> None:
        n = len(cfg.ids)
        self.perms = list(itertools.permutations(range(n)))
        self.ids = [{cfg.ids[i]: cfg.ids[j] for i, j in enumerate(p)} for p in self.perms]
        self.memo: dict[tuple[int, int], tuple[Any, int]] = {}
        # Renamings that blind a node's view: itself "#self", every other node "#other".
        self.blind = [{x: ("#self" if j == i else "#other") for j, x in enumerate(cfg.ids)} for i in range(n)]
        self.index = {p: k for k, p in enumerate(self.perms)}
        self.blind_memo: dict[tuple[int, int], tuple[Any, int]] = {}
        self.id_free = cfg.protocol in ID_FREE

    def part(self, obj: Any, k: int, blank: tuple[str, ...] = ()) -> int:
        key = (id(obj), k)
        hit = self.memo.get(key)
        if hit is not None and hit[0] is obj:
            return hit[1]
        h = hash(rename(obj.evolve(**{f: () for f in blank}) if blank else obj, self.ids[k]))
        if len(self.memo) > self.MEMO_LIMIT:
            self.memo.clear()
        self.memo[key] = (obj, h)
        return h

    def rpc(self, r: Any, k: int, perm: tuple[int, ...]) -> int:
        return hash((self.part(r.ctx, k), perm[r.requester], perm[r.responder], r.deadline_ms))

    def under(self, w: core.World, k: int) -> int:
        perm = self.perms[k]
        n = len(perm)
        nodes = [0] * n
        alive = [False] * n
        for i, (m, up) in enumerate(zip(w.nodes, w.alive)):
            nodes[perm[i]] = self.part(m, k)
            alive[perm[i]] = up
        net = w.net
        ghost = w.ghost
        per_node = PER_NODE_FIELDS.get(type(ghost).__name__, ())
        ghost_h = self.part(ghost, k, per_node)
        per_node_h = tuple(_permute(getattr(ghost, f), perm) for f in per_node)
        h = w.history
        lost = frozenset(perm[i] for i in h.lost_writes)
        # Message and RPC ids are names the network hands out in send order, and a node
        # sends to its peers in id order, so renaming the nodes does not commute with
        # stepping on the ids: hash the network without them (RPCs by content, envelopes
        # per link in send order, a reply by the content of its RPC while it is open).
        # Only where no node state holds an id (ID_FREE): a node that keeps an RPC id to
        # answer later would tie its state to one RPC, which dropping ids would lose.
        if self.id_free:
            rpc_h = {r.id: self.rpc(r, k, perm) for r in net.rpcs}
            links: dict[tuple[int, int], list[int]] = {}
            for e in sorted(net.flight, key=_env_id):
                links.setdefault((perm[e.src], perm[e.dst]), []).append(hash((
                    self.part(e.msg, k), e.sent_ms, rpc_h.get(e.rpc, ("closed", e.rpc)) if e.rpc else 0, e.reply)))
            flight_h: Any = frozenset((link, tuple(hs)) for link, hs in links.items())
            rpcs_h: Any = tuple(sorted(rpc_h.values()))
        else:
            flight_h = tuple(hash((self.part(e.msg, k), perm[e.src], perm[e.dst], e.id, e.sent_ms, e.rpc, e.reply))
                             for e in net.flight)
            rpcs_h = tuple(hash((self.rpc(r, k, perm), r.id)) for r in net.rpcs)
        # `since` decides when a node's tick may fire and `fresh` whether its start-up stagger
        # still applies: both are part of the state, renamed with their nodes.
        since = [0] * n
        for i, t in enumerate(w.since):
            since[perm[i]] = t
        fresh = frozenset(perm[i] for i in w.fresh)
        return hash((w.now, tuple(nodes), tuple(alive), tuple(since), fresh, flight_h, rpcs_h,
                     frozenset((perm[a], perm[b]) for a, b in net.cut), net.next_id, ghost_h, per_node_h,
                     h.evolve(lost_writes=lost) if lost else h, w.script_pos, w.vars, w.ext))

    def signature(self, w: core.World, i: int) -> int:
        """A hash of node i's own state that renaming the nodes does not change."""
        m = w.nodes[i]
        key = (id(m), i)
        hit = self.blind_memo.get(key)
        if hit is None or hit[0] is not m:
            if len(self.blind_memo) > self.MEMO_LIMIT:
                self.blind_memo.clear()
            hit = self.blind_memo[key] = (m, hash(rename(m, self.blind[i])))
        return hash((hit[1], w.alive[i]))

    def candidates(self, w: core.World) -> list[int]:
        """The renamings that list the nodes in order of their signatures (ties: all orders)."""
        sigs = [self.signature(w, i) for i in range(len(w.nodes))]
        order = sorted(range(len(sigs)), key=sigs.__getitem__)
        groups: list[list[int]] = []
        for i in order:
            if groups and sigs[groups[-1][0]] == sigs[i]:
                groups[-1].append(i)
            else:
                groups.append([i])
        out = []
        for choice in itertools.product(*[list(itertools.permutations(g)) for g in groups]):
            seq = [i for g in choice for i in g]  # seq[r] = the node that gets rank r
            perm = [0] * len(seq)
            for rank, i in enumerate(seq):
                perm[i] = rank
            out.append(self.index[tuple(perm)])
        return out

    def __call__(self, w: core.World) -> int:
        return min(self.under(w, k) for k in self.candidates(w))


def _env_id(e: Any) -> int:
    return e.id


def fingerprinter(cfg: core.WorldConfig, enabled: bool = True) -> Callable[[core.World], int]:
    """A function mapping a world to the fingerprint of its orbit (of the world alone
    when symmetry is off or does not apply to `cfg`)."""
    if not enabled or not symmetric(cfg):
        return hash
    return _Fingerprints(cfg)
