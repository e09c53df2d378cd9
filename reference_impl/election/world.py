"""The election world: DLedger members (reference_impl.election) on the generic world.

Ghost variables (`ElectionGhost`) record history that properties need and no node
can see: which nodes became leader in each term, which candidates each voter granted
in each term (across crashes), since when each node has been cut off from a quorum,
and when the cluster first settled after the quiet tail began. The members never read
them.
"""

from __future__ import annotations

from typing import Any, ClassVar

from reference_impl import core
from reference_impl.core import inputs
from reference_impl.core.state import EMPTY, FrozenMap, freeze, record
from reference_impl.election import ghost as eg
from reference_impl.election import leader_elector as elector
from reference_impl.election import member_state as mstate
from reference_impl.election import records as el
from reference_impl.election import server as srv


@record
class ElectionConfig:
    """The election world's config: DLedger's own, plus what the store would hand back."""

    dledger: el.DLedgerConfig
    ledger_end_index: tuple[int, ...] = ()  # per node; empty: -1 everywhere (an empty log)
    ledger_end_term: tuple[int, ...] = ()

    LIMITS: ClassVar[dict] = dict.fromkeys(("ledger_end_index", "ledger_end_term"), (-1, inputs.JAVA_INT_MAX))

    def __attrs_post_init__(self) -> None:
        inputs.check_fields(self)
        for k in ("ledger_end_index", "ledger_end_term"):
            if getattr(self, k) and len(getattr(self, k)) != len(self.dledger.peers):
                raise inputs.InputError(k, f"needs one value per node ({len(self.dledger.peers)}), "
                                           f"got {len(getattr(self, k))}")


@record
class ElectionGhost:
    elected: FrozenMap = EMPTY  # term -> frozenset of ids that became LEADER in it
    grants: FrozenMap = EMPTY  # (voter id, term) -> frozenset of candidates it ACCEPTed
    cut_since: tuple[int, ...] = ()  # per node: since when it cannot reach a quorum both ways (-1: it can)
    settled_ms: int = -1  # first time after the quiet tail began that a leader had a quorum of followers
    terms: eg.Terms = eg.Terms()  # votes, leaderships and lost term files in history order (evidence)
    agreed: bool = False  # every live member follows one leader in its term (all_follow)
    agreed_since: int = 0  # when `agreed` last changed
    settled_leader: tuple | None = None  # (leader, term) a quorum of live members follows, or None
    stragglers: FrozenMap = EMPTY  # node -> since when it is live and outside `settled_leader`'s following
    transfers: FrozenMap = EMPTY  # leader -> when its leadership transfer began (TransferStarted), until it ends


def boot(c: ElectionConfig, node_id: str, i: int, now: int) -> mstate.Member:
    lei = c.ledger_end_index[i] if c.ledger_end_index else -1
    let = c.ledger_end_term[i] if c.ledger_end_term else -1
    return srv.boot(c.dledger, node_id, now, ledger_end_index=lei, ledger_end_term=let)


def wake_at(c: ElectionConfig, m: mstate.Member) -> int:
    return srv.wake_at(c.dledger, m)


def on_tick(c: ElectionConfig, m: mstate.Member, now: int, draw: int):
    return srv.on_tick(c.dledger, m, now, draw)


def on_request(c: ElectionConfig, m: mstate.Member, msg: Any, rpc: int, now: int):
    return srv.on_request(c.dledger, m, msg, rpc, now)


def on_response(c: ElectionConfig, m: mstate.Member, ctx: Any, peer: str, resp: Any, now: int):
    return srv.on_response(c.dledger, m, ctx, peer, resp, now)


def crash(c: ElectionConfig, m: mstate.Member, kind: str) -> mstate.Member:
    """An OS crash (or a lost disk) loses the currterm file, which is written without fsync.
    The ledger ends are inputs of this world and survive (the log is another protocol)."""
    return srv.crash(m, lose_term_file=kind != "process")


def restart(c: ElectionConfig, m: mstate.Member, now: int) -> mstate.Member:
    return srv.restart(c.dledger, m, now)


def ghost_init(cfg: core.WorldConfig) -> ElectionGhost:
    return ElectionGhost(cut_since=(-1,) * len(cfg.ids))


def ghost_crash(g: ElectionGhost, w: core.World, i: int, kind: str, crashed: Any) -> ElectionGhost:
    return g.evolve(terms=eg.note_crash(g.terms, w.cfg.ids[i], kind, w.nodes[i].curr_term, w.now))


def ghost_update(g: ElectionGhost, w: core.World, i: int, obs: Any) -> ElectionGhost:
    """Fold one observation (or a fault event, node -1) into the ghost: the step of its type in
    `UPDATES`; other observations leave it as it is."""
    step = UPDATES.get(type(obs))
    return g if step is None else step(g, w, i, obs)


def _follow(g: ElectionGhost, w: core.World) -> ElectionGhost:
    """Who follows whom (the liveness fields) changes only with a role change or a fault."""
    return eg.follow_note(g, w.cfg.ids, w.nodes, w.alive, w.now, w.cfg.proto.dledger.is_quorum)


def _cut(g: ElectionGhost, w: core.World) -> ElectionGhost:
    return g.evolve(cut_since=cut_since(w, g.cut_since))


def _transfer(g: ElectionGhost, w: core.World, i: int, obs: Any) -> ElectionGhost:
    """A leadership transfer started or ended, or node i's role changed (which ends one)."""
    return g.evolve(transfers=eg.transfer_note(g.transfers, w.cfg.ids[i], w.nodes[i], w.now))


def _role_changed(g: ElectionGhost, w: core.World, i: int, obs: el.RoleChanged) -> ElectionGhost:
    g = _follow(g.evolve(terms=eg.note(g.terms, w.cfg.ids[i], obs, w.now)), w)
    g = _transfer(g, w, i, obs)
    if obs.role is el.Role.LEADER:
        node_id = w.cfg.ids[i]
        g = g.evolve(elected=g.elected.set(obs.term, g.elected.get(obs.term, frozenset()) | {node_id}))
    if w.history.calm and g.settled_ms < 0 and obs.role is not el.Role.CANDIDATE and settled(w):
        g = g.evolve(settled_ms=w.now)
    return g


def _vote_granted(g: ElectionGhost, w: core.World, i: int, obs: el.VoteGranted) -> ElectionGhost:
    key = (w.cfg.ids[i], obs.term)
    return g.evolve(terms=eg.note(g.terms, w.cfg.ids[i], obs, w.now),
                    grants=g.grants.set(key, g.grants.get(key, frozenset()) | {obs.candidate}))


def _crash(g: ElectionGhost, w: core.World, i: int, obs: core.Crash) -> ElectionGhost:
    g = _follow(g, w)
    return _cut(g.evolve(transfers=g.transfers.without(w.cfg.ids[obs.node])), w)


def _restart(g: ElectionGhost, w: core.World, i: int, obs: core.Restart) -> ElectionGhost:
    return _cut(_follow(g, w), w)


def _calm(g: ElectionGhost, w: core.World, i: int, obs: core.Calm) -> ElectionGhost:
    g = _cut(_follow(g, w), w)
    return g.evolve(settled_ms=w.now) if settled(w) else g


def _link_fault(g: ElectionGhost, w: core.World, i: int, obs: Any) -> ElectionGhost:
    """A message lost or duplicated, a partition, a cut link or a heal: who is cut off may change."""
    return _cut(g, w)


def settled(w: core.World) -> bool:
    """A live leader has a quorum of live members (itself included) following it in its term."""
    cfg = w.cfg.proto.dledger
    for m, up in zip(w.nodes, w.alive):
        if up and m.role is el.Role.LEADER:
            followers = sum(1 for f, f_up in zip(w.nodes, w.alive)
                            if f_up and f.role is el.Role.FOLLOWER and f.leader_id == m.self_id
                            and f.curr_term == m.curr_term)
            if cfg.is_quorum(followers + 1):
                return True
    return False


def reaches_quorum(w: core.World, i: int) -> bool:
    """Node i can exchange messages both ways with a quorum of live members (itself included)."""
    cut = w.net.cut
    peers = sum(1 for j, up in enumerate(w.alive)
                if j != i and up and (i, j) not in cut and (j, i) not in cut)
    return w.cfg.proto.dledger.is_quorum(peers + 1)


def cut_since(w: core.World, before: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    for i, since in enumerate(before):
        if w.alive[i] and not reaches_quorum(w, i):
            out.append(since if since >= 0 else w.now)
        else:
            out.append(-1)
    return tuple(out)


def observe(c: ElectionConfig, m: mstate.Member, alive: bool) -> dict:
    """The observable state of one member (trace-format.md, protocol `election`)."""
    return {
        "alive": alive,
        "role": m.role.value if alive else None,
        "term": m.curr_term,
        "voted_for": m.curr_vote_for,
        "leader": m.leader_id if alive else None,
        "ledger_end_index": m.ledger_end_index,
        "ledger_end_term": m.ledger_end_term,
        "committed_index": -1,
        "log_terms": [],
    }


# --- scenario hooks: the DLedger tests' direct calls ---


@record
class Reply:
    """The answer to a request a scenario handed straight to a node's handler."""

    request: Any
    reply: Any


ID = (1, 64)  # the length of a node id a scenario names
INDEX = (-1, inputs.JAVA_INT_MAX)  # terms and ledger indexes a scenario sets (-1: none)


def request_from(cfg: el.DLedgerConfig, node_id: str, spec: dict) -> tuple[Any, bool]:
    """Build a VoteRequest / HeartBeatRequest from a scenario's `request` object.
    Defaults are what the Java tests leave unset or set to the addressee."""
    if not isinstance(spec, dict):
        raise inputs.InputError("request", f"must be an object, got {inputs.show(spec)}")
    arg = inputs.arg
    kind = arg(spec, "type", str)
    group = arg(spec, "group", str, None, cfg.group)
    remote = arg(spec, "remote_id", str, ID, node_id)
    leader, term = arg(spec, "leader_id", str, ID), arg(spec, "term", int, INDEX)
    if kind == "VoteRequest":
        return el.VoteRequest(group=group, remote_id=remote, leader_id=leader, term=term,
                              ledger_end_index=arg(spec, "ledger_end_index", int, INDEX, -1),
                              ledger_end_term=arg(spec, "ledger_end_term", int, INDEX, -1)), \
            arg(spec, "self", bool, None, False)
    if kind == "HeartBeatRequest":
        return el.HeartBeatRequest(group=group, local_id=arg(spec, "local_id", str, ID, leader), remote_id=remote,
                                   leader_id=leader, term=term), False
    raise ValueError(f"unknown request type {kind!r} (VoteRequest, HeartBeatRequest)")


def script_action(w: core.World, do: str, i: int, args: dict) -> tuple[core.World, tuple]:
    """Election-specific scenario actions, each a Java test hook or direct handler call."""
    c = w.cfg.proto.dledger
    m = w.nodes[i]
    arg = inputs.arg
    if do == "revote":
        m, outs = elector.test_revote(c, m, arg(args, "term", int, INDEX))
    elif do == "change_to_candidate":
        # MemberState#changeToCandidate alone (VoteRequestTest calls it directly): no handlers fire.
        term = arg(args, "term", int, INDEX)
        if term < m.curr_term:
            raise ValueError(f"changeToCandidate({term}) below currTerm {m.curr_term}")
        m, outs = m.evolve(role=el.Role.CANDIDATE, leader_id=None, transferee=None,
                           known_max_term_in_group=max(m.known_max_term_in_group, term)), ()
    elif do == "set_vote_for":
        m, outs = m.evolve(curr_vote_for=arg(args, "leader_id", str | None, ID)), ()
    elif do == "update_ledger":
        index, term = arg(args, "index", int, INDEX), arg(args, "term", int, INDEX)
        m, outs = mstate.update_ledger_index_and_term(m, index, term), ()
    elif do == "transfer_leadership":
        m, reply, outs = elector.handle_leadership_transfer(c, m, m.curr_term, arg(args, "transferee", str, ID))
        if reply is not None:
            outs += (Reply(request=args, reply=reply),)
    elif do == "request":
        req, self_vote = request_from(c, w.cfg.ids[i], args["request"])
        if isinstance(req, el.VoteRequest):
            m, reply, outs = (elector.handle_vote(c, m, req, True) if self_vote else srv.server_handle_vote(c, m, req))
        else:
            m, reply, outs = srv.server_handle_heart_beat(c, m, req, w.now)
        outs += (Reply(request=req, reply=reply),)
    else:
        raise ValueError(f"unknown election action {do!r}")
    return core.apply_outs(core.set_node(w, i, m), i, outs)


SCRIPT_ACTIONS = ("revote", "change_to_candidate", "set_vote_for", "update_ledger", "transfer_leadership", "request")


def make_config(nodes: int = 3, overrides: dict | None = None) -> core.WorldConfig:
    """A world of members n0..n{nodes-1} with DLedgerConfig defaults. `overrides` takes
    DLedgerConfig field names, plus `ledger_end_index` / `ledger_end_term` (one per node)."""
    ids = tuple(f"n{i}" for i in range(nodes))
    opts = dict(overrides or {})
    ledger = inputs.structure_fields(ElectionConfig, {k: opts.pop(k) for k in ("ledger_end_index", "ledger_end_term")
                                                      if k in opts})
    unknown = set(opts) - {a.name for a in el.DLedgerConfig.__attrs_attrs__}
    if unknown:
        raise ValueError(f"unknown election config key(s): {', '.join(sorted(map(str, unknown)))}")
    if "peers" in opts:
        raise ValueError("peers are the world's nodes; set the number of nodes instead")
    dledger = el.DLedgerConfig(peers=ids, **inputs.structure_fields(el.DLedgerConfig, opts))
    return core.WorldConfig(protocol="election", ids=ids, overrides=freeze(dict(overrides or {})),
                            proto=ElectionConfig(dledger=dledger, **ledger))


def load_config(d: dict) -> ElectionConfig:
    """The config from a trace header (`dump_config`'s `proto`)."""
    return inputs.structure(d, ElectionConfig)


def check_ids(c: ElectionConfig, ids: tuple[str, ...]) -> None:
    if tuple(c.dledger.peers) != ids:
        raise ValueError(f"the peers {list(c.dledger.peers)} are not the world's nodes {list(ids)}")



# Result codes where the Java code switches: a fuzz run's branch coverage counts each one.
BRANCHES = (*el.Code, *el.ParseResult, *el.Role, *el.VoteResult)


def tick_slack(c: ElectionConfig, m: mstate.Member, since: int, wake: int) -> int:
    return srv.wake_slack(c.dledger, m, since, wake)


# What each observation (or fault event) does to the ghost, by its type, as core/transitions.py
# steps the world by the event's type.
UPDATES = {
    el.RoleChanged: _role_changed, el.VoteGranted: _vote_granted, el.TransferStarted: _transfer,
    el.TransferDone: _transfer, core.Crash: _crash, core.Restart: _restart, core.Calm: _calm,
    **dict.fromkeys((core.Drop, core.Duplicate, core.Partition, core.CutLink, core.Heal), _link_fault),
}


PROTOCOL = core.Protocol(
    name="election", tick_slack=tick_slack, boot=boot, wake_at=wake_at, on_tick=on_tick, on_request=on_request, on_response=on_response,
    on_message=None, crash=crash, restart=restart, ghost_init=ghost_init, ghost_update=ghost_update,
    ghost_crash=ghost_crash, observe=observe, make_config=make_config, load_config=load_config, check_ids=check_ids,
    script_action=script_action, script_actions=SCRIPT_ACTIONS, branches=BRANCHES)
