"""One NameServer's broker tables (NS-2, it lists only registered brokers) as a Z3 transition relation.

Abstraction (of reference_impl.nameserver.route_info, one NameServer, one broker name)
--------------------------------------------------------------------------
NameServers do not talk to each other, so NS-2 is a property of each one alone. For one
broker name, `has[id]` / `at[id]` is brokerAddrTable's brokerAddrs (id -> address), `live[a]`
the brokerLiveTable; `reg[a]` is the ghost of reference_impl.nameserver.ghost: the address
registered with this NameServer and has not left its live table since (BrokerRegistered
adds it, BrokerRemoved, emitted when an address leaves the live table, takes it out).

- `register(a, i)`: RouteInfoManager#registerBroker: drop <j, a> for every other id j
  ("switch slave to master: first remove <1, IP:PORT>"), put <i, a>, refresh the live entry;
- `destroy(a)`: scanNotActiveBroker (expiry) / onChannelDestroy: the live entry goes and the
  address is removed from brokerAddrs;
- `unregister_by_id(a, i)` (switch `by_id`, 4.9.4): RouteInfoManager#unregisterBroker removes
  the live entry of `a` but brokerAddrs' entry under *id* `i`, whatever address it holds;
- `unregister_by_address(a, i)` (switch `by_address`): the same, removing `a`'s entry (the
  fix one would make; not a RocketMQ version).

Not modelled: topic queue data, several broker names or clusters (an address registers under
one name), a NameServer's own crash (it restarts empty, and so does the ghost).

NS-2 (spec/nameserver.py `ns2`): every address the NameServer lists, in the live table or in
brokerAddrs, is registered. Proved inductive for any number of addresses and ids without the
by-id unregister; under 4.9.4 the unregister by id is a counterexample to induction, and BMC
finds the 2-step trace: a broker registers as master (id 0), changes role (the registration
with its new id, sent oneway, does not reach this NameServer), then unregisters as id 1 on
shutdown: its route entry under id 0 stays, listed, while the live entry (and so the
registration) is gone. This is the cause `ns2_expected` names in reference histories.
"""

from __future__ import annotations

import z3

from spec import symbolic as sy
from spec.symbolic import Action, Invariant, Var, sel, store

KINDS = {"node": None, "bid": "int"}  # node: a broker address; bid: a broker id (0 = master)

VARIABLES = (
    Var("has", ("bid",)),
    Var("at", ("bid",), "node"),
    Var("live", ("node",)),
    Var("reg", ("node",)),
)
V = {v.name: v for v in VARIABLES}
_T, _F = z3.BoolVal(True), z3.BoolVal(False)


def init(u, s):
    """A NameServer that just started: empty tables, nothing registered."""
    return [
        ("no route entry", u.forall(["bid"], lambda i: z3.Not(sel(s.has, i)))),
        ("no live entry, nothing registered", u.forall(["node"], lambda a: z3.And(z3.Not(sel(s.live, a)),
                                                                                  z3.Not(sel(s.reg, a))))),
    ]


def _removed_from_live(u, s, s2, a):
    """The live entry of `a` goes; the ghost drops `a` if it was live (BrokerRemoved)."""
    return [
        ("live entry removed", s2.live == store(s.live, a, _F)),
        ("ghost: removed if it was live", s2.reg == store(s.reg, a, z3.And(sel(s.reg, a), z3.Not(sel(s.live, a))))),
    ]


def register(u, s, s2, a, i):
    """RouteInfoManager#registerBroker: <j, a> dropped for j != i, <i, a> put, live entry refreshed."""
    return [
        ("a broker id", i >= 0),
        ("other ids of this address dropped, <i, a> put", u.forall(["bid"], lambda j: z3.And(
            sel(s2.has, j) == z3.If(j == i, _T, z3.And(sel(s.has, j), sel(s.at, j) != a)),
            sel(s2.at, j) == z3.If(j == i, a, sel(s.at, j))))),
        ("live entry", s2.live == store(s.live, a, _T)),
        ("ghost: registered", s2.reg == store(s.reg, a, _T)),
    ]


def destroy(u, s, s2, a):
    """RouteInfoManager#scanNotActiveBroker -> onChannelDestroy: `a` leaves the live table and brokerAddrs."""
    return _removed_from_live(u, s, s2, a) + [
        ("every entry of the address removed", u.forall(["bid"], lambda j: sel(s2.has, j) == z3.And(
            sel(s.has, j), sel(s.at, j) != a))),
        ("addresses kept", s2.at == s.at),
    ]


def unregister_by_id(u, s, s2, a, i):
    """RouteInfoManager#unregisterBroker (4.9.4): the live entry of `a`, and brokerAddrs' entry under id `i`."""
    return _removed_from_live(u, s, s2, a) + [
        ("the entry under id i removed, whatever its address", s2.has == store(s.has, i, _F)),
        ("addresses kept", s2.at == s.at),
    ]


def unregister_by_address(u, s, s2, a, i):
    """unregisterBroker removing `a`'s own entry, under whatever id (a fix, not a RocketMQ version;
    removing the entry under id `i` only when it holds `a` is not enough: `a` may sit under another id)."""
    return _removed_from_live(u, s, s2, a) + [
        ("a's entry removed, under any id", u.forall(["bid"], lambda j: sel(s2.has, j) == z3.And(
            sel(s.has, j), sel(s.at, j) != a))),
        ("addresses kept", s2.at == s.at),
    ]


ACTIONS = (
    Action("register", (("a", "node"), ("i", "bid")), ("has", "at", "live", "reg"), register, register.__doc__),
    Action("destroy", (("a", "node"),), ("has", "live", "reg"), destroy, destroy.__doc__),
    Action("unregister_by_id", (("a", "node"), ("i", "bid")), ("has", "live", "reg"), unregister_by_id,
           unregister_by_id.__doc__, optional="by_id"),
    Action("unregister_by_address", (("a", "node"), ("i", "bid")), ("has", "live", "reg"), unregister_by_address,
           unregister_by_address.__doc__, optional="by_address"),
)


def ns2(u, s):
    """Every listed address (live entry, or brokerAddrs' address under some id) is registered."""
    return u.forall(["node", "bid"], lambda a, i: z3.And(
        z3.Implies(sel(s.live, a), sel(s.reg, a)),
        z3.Implies(z3.And(sel(s.has, i), sel(s.at, i) == a), sel(s.reg, a))))


INVARIANTS = (
    Invariant("NS-2", ns2, "A NameServer lists (live table or route) only broker addresses that registered with it "
              "and were not removed since.", "NS-2", ("NS-2",)),
)

BY_ID = ("RouteInfoManager#unregisterBroker removes brokerAddrs by id, not by address: a broker whose role change "
         "the NameServer has not seen unregisters under its new id and keeps its route entry under the old one")

PROFILES = (
    sy.Profile("4.9.4", frozenset({"by_id"}), "RocketMQ 4.9.4 RouteInfoManager (unregisterBroker removes by id)",
               expected={"NS-2": BY_ID}),
    sy.Profile("by-address", frozenset({"by_address"}),
               "as 4.9.4, but unregisterBroker removes the broker's own address (a fix, not a release)"),
)

SPEC = sy.SymbolicSpec(
    protocol="nameserver", kinds=KINDS, variables=VARIABLES, init=init, actions=ACTIONS, invariants=INVARIANTS,
    profiles=PROFILES, reference=None, bmc_bounds={"bid": (0, 1)}, bmc_depth=4, doc=__doc__.split("\n\n")[0])

sy.register(SPEC)
