"""Consumer offsets on a master and its slave (OFF-3, slave sync is putAll) as a Z3 transition relation.

Abstraction (of reference_impl.offsets.broker, at the level of the offset tables)
-------------------------------------------------------------------------------
A ConsumerOffsetManager's offsetTable is a map topic@group -> (queueId -> offset). Each
table is three arrays: `?k[key]` (the key is present), `?q[key, queue]` (the queue is in
the key's inner map) and `?o[key, queue]` (its offset), for the master (`m`), the slave
(`s`) and the master's answer to GET_ALL_CONSUMER_OFFSET in flight (`n`, with `pending`).

- `master_commit` / `slave_commit`: ConsumerOffsetManager#commitOffset (an
  UPDATE_CONSUMER_OFFSET to either broker; any offset, a lower one is only logged): the key
  appears if absent (its inner map is then the one queue) and the queue's offset is put;
- `serve`: AdminBrokerProcessor#getAllConsumerOffset, the master's whole table as the answer;
- `sync`: SlaveSynchronize#syncConsumerOffset applies the answer with
  `offsetTable.putAll(...)`: per key of the answer, the master's inner map replaces the
  slave's (queues only the slave had are gone); keys only the slave has stay.

`synced` is a ghost: the last step was a sync (every action writes it). OFF-3 is stated, as
its executable predicate (spec/offsets.py `off3`) is, of the sync step: the slave's keys
after are those it had plus those of the answer, and each key's inner map is the answer's
if the answer has the key, else the slave's before. It is a step property, proved for
every action for any number of keys and queues and unbounded offsets. The value of the
proof is that the relation is written as Java's outer-map putAll, not as the property, and
a merge of inner maps or a max-merge (the fixes one might expect) fail it (a test).

The key kind is named `node` because the framework's finite universes (vacuity, BMC)
enumerate that kind; here its values are topic@group keys.
"""

from __future__ import annotations

import z3

from spec import symbolic as sy
from spec.symbolic import Action, StepProperty, Var, sel, store

KINDS = {"node": None, "queue": "int", "off": "int"}


def _table(prefix: str) -> tuple[Var, ...]:
    return (Var(f"{prefix}k", ("node",)), Var(f"{prefix}q", ("node", "queue")), Var(f"{prefix}o", ("node", "queue"), "off"))


VARIABLES = _table("m") + _table("s") + _table("n") + (Var("pending", ()), Var("synced", ()))
V = {v.name: v for v in VARIABLES}


def init(u, s):
    """Empty tables on both brokers, no answer in flight."""
    out = []
    for p in "msn":
        out.append((f"{p} empty", u.forall(["node", "queue"], lambda k, q, p=p: z3.And(
            z3.Not(sel(s[f"{p}k"], k)), z3.Not(sel(s[f"{p}q"], k, q))))))
    return out + [("no answer", z3.Not(sel(s.pending))), ("no sync yet", z3.Not(sel(s.synced)))]


def _commit(p: str, s, s2, k, q, x):
    """ConsumerOffsetManager#commitOffset on table `p`: computeIfAbsent(key), then put."""
    # a new key's inner map holds only this queue: an absent key's inner map is empty (Init;
    # no action removes a key)
    return [
        ("key present", s2[f"{p}k"] == store(s[f"{p}k"], k, z3.BoolVal(True))),
        ("queue present", s2[f"{p}q"] == store(s[f"{p}q"], k, q, z3.BoolVal(True))),
        ("offset put, whatever the old one", s2[f"{p}o"] == store(s[f"{p}o"], k, q, x)),
        ("a commit, not a sync", s2.synced == store(s.synced, z3.BoolVal(False))),
    ]


def master_commit(u, s, s2, k, q, x):
    """ConsumerManageProcessor#updateConsumerOffset on the master -> commitOffset."""
    return _commit("m", s, s2, k, q, x)


def slave_commit(u, s, s2, k, q, x):
    """ConsumerManageProcessor#updateConsumerOffset on the slave (commits to the first address
    when the master is down) -> commitOffset."""
    return _commit("s", s, s2, k, q, x)


def serve(u, s, s2):
    """AdminBrokerProcessor#getAllConsumerOffset: the master's table as the answer."""
    return [
        ("answer keys", s2.nk == s.mk), ("answer queues", s2.nq == s.mq), ("answer offsets", s2.no == s.mo),
        ("answer in flight", s2.pending == store(s.pending, z3.BoolVal(True))),
        ("not a sync", s2.synced == store(s.synced, z3.BoolVal(False))),
    ]


def sync(u, s, s2):
    """SlaveSynchronize#syncConsumerOffset: offsetTable.putAll(answer) on the outer map."""
    return [
        ("an answer arrived", sel(s.pending)),
        ("putAll: keys of the answer are put", u.forall(["node"], lambda k: sel(s2.sk, k) == z3.Or(sel(s.sk, k),
                                                                                                   sel(s.nk, k)))),
        ("putAll: an answer key's value (the inner map) replaces the slave's",
         u.forall(["node", "queue"], lambda k, q: z3.And(
             sel(s2.sq, k, q) == z3.If(sel(s.nk, k), sel(s.nq, k, q), sel(s.sq, k, q)),
             sel(s2.so, k, q) == z3.If(sel(s.nk, k), sel(s.no, k, q), sel(s.so, k, q))))),
        ("answer consumed", s2.pending == store(s.pending, z3.BoolVal(False))),
        ("a sync", s2.synced == store(s.synced, z3.BoolVal(True))),
    ]


ACTIONS = (
    Action("master_commit", (("k", "node"), ("q", "queue"), ("x", "off")), ("mk", "mq", "mo", "synced"),
           master_commit, master_commit.__doc__),
    Action("slave_commit", (("k", "node"), ("q", "queue"), ("x", "off")), ("sk", "sq", "so", "synced"),
           slave_commit, slave_commit.__doc__),
    Action("serve", (), ("nk", "nq", "no", "pending", "synced"), serve, serve.__doc__),
    Action("sync", (), ("sk", "sq", "so", "pending", "synced"), sync, sync.__doc__),
)


def off3(u, s, s2):
    """spec/offsets.py off3: after a sync, the slave's keys are its keys before plus the
    answer's, and each key's inner map (queue set and offsets) is the answer's if the answer
    has the key, else the slave's before."""
    def key_ok(k):
        def inner(q):
            from_answer = z3.And(sel(s2.sq, k, q) == sel(s.nq, k, q),
                                 z3.Implies(sel(s.nq, k, q), sel(s2.so, k, q) == sel(s.no, k, q)))
            kept = z3.And(sel(s2.sq, k, q) == sel(s.sq, k, q),
                          z3.Implies(sel(s.sq, k, q), sel(s2.so, k, q) == sel(s.so, k, q)))
            return z3.If(sel(s.nk, k), from_answer, kept)
        return z3.And(sel(s2.sk, k) == z3.Or(sel(s.sk, k), sel(s.nk, k)), u.forall(["queue"], inner))
    return z3.Implies(sel(s2.synced), u.forall(["node"], key_ok))


STEP_PROPERTIES = (StepProperty("OFF-3", off3, "Slave sync is putAll: after syncConsumerOffset every key the master "
                                "has maps to the master's queue table, every other key keeps the slave's."),)

PROFILES = (sy.Profile("4.9.4", frozenset(), "RocketMQ 4.9.4 SlaveSynchronize#syncConsumerOffset (putAll)"),)

SPEC = sy.SymbolicSpec(
    protocol="offsets", kinds=KINDS, variables=VARIABLES, init=init, actions=ACTIONS, invariants=(),
    step_properties=STEP_PROPERTIES, profiles=PROFILES, reference=None,
    bmc_bounds={"queue": (0, 1), "off": (-1, 3)}, bmc_depth=6, doc=__doc__.split("\n\n")[0])

sy.register(SPEC)
