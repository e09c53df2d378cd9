"""Log-replication cases: Hypothesis strategies for `rmqspec conform --protocol dledger_log`, and
the deterministic edge cases that `rmqspec vectors --protocol dledger_log` writes first.

Cases are built from the relations DLedger 0.2.6 branches on, not from free numbers: a store
is written by appendAsLeader / appendAsFollower from an empty one (so its positions are the
Java arithmetic), with terms that rise along it; a push's entry sits one before, at, one after
or two after the follower's end, with the local entry's term or another one, the same body or
another; its term is the follower's term or one either side, its leader the follower's leader
or another; a commit index is below, at or past the end. The EntryHandler holds appends at the
next index, past a gap or already held, and COMPARE / TRUNCATE / COMMIT requests in its queue,
some older than the one-second check. A leader's pending appends are one short of, at and past
maxPendingRequestsNum. Every choice's first value is the plainest, so a mismatch shrinks toward
a 3-node follower of term 2 with a short log.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

from hypothesis import strategies as hs

from conform.dledger_log import Case, EntryHandlerRun, Request
from reference_impl.core.state import FrozenMap
from reference_impl.dledger_log import entry_handler as eh
from reference_impl.dledger_log import entry_pusher as ep
from reference_impl.dledger_log import server as dn
from reference_impl.dledger_log import store as st
from reference_impl.election.member_state import Member
from reference_impl.election.records import DLedgerConfig, Role

BASE_NOW = 100_000
UNKNOWN = "n9"
OTHER_GROUP = "other-group"
BODY_SIZES = (16, 0, 100)
PUSH_TYPES = (ep.PushType.APPEND, ep.PushType.COMMIT, ep.PushType.COMPARE, ep.PushType.TRUNCATE)


@functools.lru_cache(maxsize=None)
def _range(lo: int, hi: int) -> hs.SearchStrategy:
    return hs.integers(lo, hi)


def pick(draw: hs.DrawFn, options: list | tuple) -> object:
    """One of `options`; shrinks toward the first."""
    return options[draw(_range(0, len(options) - 1))]


def mostly(draw: hs.DrawFn, common: object, rare: list | tuple) -> object:
    return common if draw(_range(0, 9)) < 9 else pick(draw, rare)


# --- building blocks (plain functions: the strategies and the edge cases share them) ---


def config(n: int = 3, max_pending: int = 10000) -> st.NodeConfig:
    return st.NodeConfig(dledger=DLedgerConfig(peers=tuple(f"n{i}" for i in range(n))),
                         log=st.LogConfig(max_pending_requests_num=max_pending))


def store(cfg: st.NodeConfig, terms: tuple[int, ...], body_size: int = 16, committed: int = -1) -> st.Store:
    """A store holding one entry per term in `terms`, written as a leader of that term would."""
    s = st.empty()
    for i, term in enumerate(terms):
        m = Member(self_id="n0", curr_term=term, role=Role.LEADER, leader_id="n0")
        s, _ = st.append_as_leader(cfg.log, s, m, st.Body(key=f"e{i}", length=body_size), 0)
    if committed >= 0 and s.entries:
        e = s.entries[min(committed, len(s.entries) - 1)]
        s = s.evolve(committed_index=e.index, committed_pos=e.pos + e.size)
    return s.evolve(flush_due_ms=-1)


def entry_at(cfg: st.NodeConfig, s: st.Store, index: int, term: int, key: str, size: int = 16) -> st.Entry:
    """The entry a leader holds at `index` when its log agrees with `s` below it: the position
    after s's entry index - 1 (or a position past s's end, when index is further on)."""
    prev = st.entry_at(s, index - 1)
    if prev is not None:
        pos = st.pre_append(cfg.log, prev.pos + prev.size, st.BODY_OFFSET + size)
    else:
        pos = max(0, index) * (st.BODY_OFFSET + size)
    return st.Entry(index=index, term=term, pos=pos, size=st.BODY_OFFSET + size, body=st.Body(key=key, length=size))


def member(self_id: str, term: int, role: Role, leader: str | None, s: st.Store, transferee: str | None = None
           ) -> Member:
    return Member(self_id=self_id, curr_term=term, role=role, leader_id=leader, transferee=transferee,
                  ledger_end_index=s.end_index, ledger_end_term=s.end_term if s.entries else -1)


def node(cfg: st.NodeConfig, m: Member, s: st.Store, now: int, handler: eh.EntryHandler | None = None,
         pusher: ep.Pusher | None = None) -> dn.DLedgerNode:
    return dn.DLedgerNode(member=m, store=s, pusher=pusher or ep.new_pusher(cfg, m.self_id, now),
                          handler=handler or eh.EntryHandler(last_check_fast_forward_ms=now))


def push(cfg: st.NodeConfig, m: Member, kind: ep.PushType, entry: st.Entry | None, term: int, leader: str,
         commit: int, remote: str | None = None, group: str | None = None) -> ep.PushEntryRequest:
    return ep.PushEntryRequest(group=group or cfg.dledger.group, remote_id=remote or m.self_id, leader_id=leader,
                               term=term, type=kind, entry=None if kind is ep.PushType.COMMIT else entry,
                               commit_index=commit)


# --- Hypothesis strategies ---


@hs.composite
def _follower_world(draw: hs.DrawFn) -> tuple[st.NodeConfig, Member, st.Store, int]:
    cfg = config(pick(draw, [3, 5, 2]))
    peers = cfg.dledger.peers
    self_id = pick(draw, peers[1:] + peers[:1])
    leader = pick(draw, [p for p in peers if p != self_id] + [None, self_id])
    term = pick(draw, [2, 1, 3])
    terms = pick(draw, [(), (1,), (1, 2, 2), (1, 1, 2, 2, 2), (2,), (1, 1, 1)])
    terms = tuple(min(t, term) for t in terms)
    s = store(cfg, terms, pick(draw, BODY_SIZES), pick(draw, [-1, len(terms) - 2, len(terms) - 1, 0]))
    role = mostly(draw, Role.FOLLOWER, [Role.CANDIDATE, Role.LEADER])
    return cfg, member(self_id, term, role, leader, s), s, term


def _push_for(draw: hs.DrawFn, cfg: st.NodeConfig, m: Member, s: st.Store, kind: ep.PushType | None = None
              ) -> ep.PushEntryRequest:
    """A push as a leader would send it to this follower, each field at or beside the value the
    follower's checks compare it with: an APPEND one past the end, a COMPARE or TRUNCATE at it."""
    kind = kind or pick(draw, PUSH_TYPES)
    deltas = [1, 0, 2, -1, -2] if kind is ep.PushType.APPEND else [0, -1, 1, -2, 2]
    index = s.end_index + pick(draw, deltas)
    local = st.entry_at(s, index)
    term = pick(draw, [m.curr_term, m.curr_term - 1, m.curr_term + 1])
    entry_term = pick(draw, [local.term if local is not None else min(term, m.curr_term), term, term + 1, 0])
    key = local.body.key if local is not None and draw(hs.booleans()) else f"x{index}"
    size = local.body.length if local is not None else pick(draw, BODY_SIZES)
    entry = entry_at(cfg, s, index, max(0, entry_term), key, size)
    if draw(_range(0, 9)) == 0:
        entry = entry.evolve(pos=entry.pos + pick(draw, [1, -1, st.BODY_OFFSET]))
    leader = pick(draw, [m.leader_id or cfg.dledger.peers[0], UNKNOWN, m.self_id])
    commit = pick(draw, [s.committed_index, index, s.end_index, -1, s.end_index + 3])
    remote = mostly(draw, m.self_id, [UNKNOWN])
    group = mostly(draw, cfg.dledger.group, [OTHER_GROUP])
    return push(cfg, m, kind, entry, term, leader, commit, remote, group)


def _handler(draw: hs.DrawFn, cfg: st.NodeConfig, m: Member, s: st.Store, now: int) -> eh.EntryHandler:
    writes: dict[int, eh.PushWait] = {}
    for k in range(draw(_range(0, 3))):
        req = _push_for(draw, cfg, m, s, ep.PushType.APPEND).evolve(remote_id=m.self_id, group=cfg.dledger.group)
        if req.entry is None:
            continue
        index = req.entry.index + k
        req = req.evolve(entry=req.entry.evolve(index=index))
        created = now - pick(draw, [0, 1000, 999, 5000])
        writes[index] = eh.PushWait(request=req, rpc=100 + k, created_ms=created, answered=draw(_range(0, 9)) == 0)
    queue = []
    for k in range(pick(draw, [0, 1, 2])):
        kind = pick(draw, [ep.PushType.COMPARE, ep.PushType.TRUNCATE, ep.PushType.COMMIT])
        req = _push_for(draw, cfg, m, s, kind).evolve(remote_id=m.self_id, group=cfg.dledger.group)
        queue.append(eh.PushWait(request=req, rpc=200 + k, created_ms=now - pick(draw, [0, 1000])))
    return eh.EntryHandler(write_requests=FrozenMap(writes), queue=tuple(queue),
                           last_check_fast_forward_ms=now - pick(draw, [0, 1000, 999, 1001]))


def _pusher(draw: hs.DrawFn, cfg: st.NodeConfig, m: Member, s: st.Store, now: int) -> ep.Pusher:
    p = ep.new_pusher(cfg, m.self_id, now)
    peers = cfg.dledger.peers
    if draw(hs.booleans()):
        p = p.evolve(water_marks=FrozenMap({m.curr_term: tuple(pick(draw, [s.end_index, -1, s.end_index - 1])
                                                               for _ in peers)}))
    count = pick(draw, [0, cfg.log.max_pending_requests_num, cfg.log.max_pending_requests_num + 1, 1])
    futures = {s.end_index + 1 + k: ep.PendingAppend(pos=0, created_ms=now - 10, ref=None, rpc=300 + k)
               for k in range(min(count, 8))}
    if futures:
        p = p.evolve(pending=FrozenMap({m.curr_term: FrozenMap(futures)}))
    return p


@hs.composite
def _push_case(draw: hs.DrawFn) -> Case:
    cfg, m, s, _ = draw(_follower_world())
    now = BASE_NOW
    h = _handler(draw, cfg, m, s, now) if draw(hs.booleans()) else eh.EntryHandler(last_check_fast_forward_ms=now)
    return Case(config=cfg, node=node(cfg, m, s, now, h), now=now, input=Request(rpc=1, message=_push_for(
        draw, cfg, m, s)))


@hs.composite
def _entry_handler_case(draw: hs.DrawFn) -> Case:
    cfg, m, s, _ = draw(_follower_world())
    now = BASE_NOW
    return Case(config=cfg, node=node(cfg, m, s, now, _handler(draw, cfg, m, s, now)), now=now,
                input=EntryHandlerRun())


@hs.composite
def _append_case(draw: hs.DrawFn) -> Case:
    n = pick(draw, [3, 5, 1])
    cfg = config(n, pick(draw, [10000, 2, 1]))
    self_id = "n0"
    term = pick(draw, [2, 1, 3])
    s = store(cfg, pick(draw, [(), (1, 2), (2, 2, 2)]), pick(draw, BODY_SIZES))
    role = mostly(draw, Role.LEADER, [Role.FOLLOWER, Role.CANDIDATE])
    leader = self_id if role is Role.LEADER else pick(draw, ["n1", None])
    m = member(self_id, term, role, leader, s, transferee=mostly(draw, None, ["n1"]) if n > 1 else None)
    now = BASE_NOW
    req = ep.AppendEntryRequest(group=mostly(draw, cfg.dledger.group, [OTHER_GROUP]),
                                remote_id=mostly(draw, self_id, [UNKNOWN]),
                                body=st.Body(key="c0-1", length=pick(draw, BODY_SIZES)))
    return Case(config=cfg, node=node(cfg, m, s, now, pusher=_pusher(draw, cfg, m, s, now)), now=now,
                input=Request(rpc=1, message=req))


_BY_INPUT = {"PushEntryRequest": _push_case, "entry_handler": _entry_handler_case,
             "AppendEntryRequest": _append_case}


def cases(inputs: tuple[str, ...], features: frozenset) -> hs.SearchStrategy:
    """Cases of the input kinds the driver handles (dledger_log has no optional features)."""
    chosen = [_BY_INPUT[k]() for k in _BY_INPUT if k in inputs]
    if not chosen:
        return hs.nothing()
    return hs.one_of(chosen)


# --- deterministic edge cases ---


def edge_cases() -> Iterator[Case]:
    """From a plain state (a 3-node group, term 2, the follower n1 of leader n0 holding entries
    of terms 1, 2, 2, two committed): every push type at every index relation and term
    relation, the EntryHandler with each kind of work waiting, and handleAppend at each guard."""
    cfg = config()
    now = BASE_NOW
    for terms in ((1, 2, 2), ()):
        s = store(cfg, terms, committed=1)
        m = member("n1", 2, Role.FOLLOWER, "n0", s)
        for kind in PUSH_TYPES:
            for delta in (-1, 0, 1, 2):
                index = s.end_index + delta
                local = st.entry_at(s, index)
                for entry_term, key in ((local.term, local.body.key) if local else (2, f"x{index}"),
                                        (3, f"x{index}"), (1, f"x{index}")):
                    for term, leader in ((2, "n0"), (1, "n0"), (3, "n0"), (2, "n2")):
                        req = push(cfg, m, kind, entry_at(cfg, s, index, entry_term, key), term, leader,
                                   min(s.end_index, 2) if index >= 0 else -1)
                        yield Case(config=cfg, node=node(cfg, m, s, now), now=now, input=Request(rpc=1, message=req))
                        waiting = _waiting(req, now)
                        yield Case(config=cfg, node=node(cfg, m, s, now, waiting), now=now, input=EntryHandlerRun())
        for wrong in ({"remote": "n2"}, {"group": OTHER_GROUP}):
            req = push(cfg, m, ep.PushType.APPEND, entry_at(cfg, s, s.end_index + 1, 2, "y"), 2, "n0", -1, **wrong)
            yield Case(config=cfg, node=node(cfg, m, s, now), now=now, input=Request(rpc=1, message=req))
        for role in (Role.CANDIDATE, Role.LEADER):
            req = push(cfg, m, ep.PushType.APPEND, entry_at(cfg, s, s.end_index + 1, 2, "y"), 2, "n0", -1)
            other = member("n1", 2, role, "n0" if role is Role.FOLLOWER else None, s)
            yield Case(config=cfg, node=node(cfg, other, s, now, _waiting(req, now)), now=now,
                       input=EntryHandlerRun())
        # appends past a gap, older and younger than the one-second check
        for age in (0, 1000):
            req = push(cfg, m, ep.PushType.APPEND, entry_at(cfg, s, s.end_index + 2, 2, "z"), 2, "n0", -1)
            h = eh.EntryHandler(write_requests=FrozenMap({req.entry.index: eh.PushWait(request=req, rpc=7,
                                                                                       created_ms=now - age)}),
                                last_check_fast_forward_ms=now - 1001)
            yield Case(config=cfg, node=node(cfg, m, s, now, h), now=now, input=EntryHandlerRun())
    yield from _append_edges(cfg, now)


def _waiting(req: ep.PushEntryRequest, now: int) -> eh.EntryHandler:
    """The EntryHandler after handlePush filed `req` (rpc 1)."""
    wait = eh.PushWait(request=req, rpc=1, created_ms=now)
    if req.type is ep.PushType.APPEND and req.entry is not None:
        return eh.EntryHandler(write_requests=FrozenMap({req.entry.index: wait}), last_check_fast_forward_ms=now)
    return eh.EntryHandler(queue=(wait,), last_check_fast_forward_ms=now)


def _append_edges(cfg: st.NodeConfig, now: int) -> Iterator[Case]:
    s = store(cfg, (1, 2))
    body = st.Body(key="c0-1", length=16)
    for role, leader, transferee in ((Role.LEADER, "n0", None), (Role.FOLLOWER, "n1", None),
                                     (Role.CANDIDATE, None, None), (Role.LEADER, "n0", "n1")):
        m = member("n0", 2, role, leader, s, transferee)
        for group, remote in ((cfg.dledger.group, "n0"), (OTHER_GROUP, "n0"), (cfg.dledger.group, "n1")):
            req = ep.AppendEntryRequest(group=group, remote_id=remote, body=body)
            yield Case(config=cfg, node=node(cfg, m, s, now), now=now, input=Request(rpc=1, message=req))
    for limit in (1, 2):
        small = config(3, limit)
        m = member("n0", 2, Role.LEADER, "n0", s)
        for count in (limit, limit + 1):
            futures = FrozenMap({s.end_index + 1 + k: ep.PendingAppend(pos=0, created_ms=now, ref=None, rpc=10 + k)
                                 for k in range(count)})
            p = ep.new_pusher(small, "n0", now).evolve(pending=FrozenMap({2: futures}))
            req = ep.AppendEntryRequest(group=small.dledger.group, remote_id="n0", body=body)
            yield Case(config=small, node=node(small, m, s, now, pusher=p), now=now, input=Request(rpc=1, message=req))
    single = config(1)
    m = member("n0", 2, Role.LEADER, "n0", s)
    req = ep.AppendEntryRequest(group=single.dledger.group, remote_id="n0", body=body)
    yield Case(config=single, node=node(single, m, s, now), now=now, input=Request(rpc=1, message=req))
