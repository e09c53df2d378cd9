"""Classic master/slave HA (HA-1, the prefix property) as a Z3 transition relation.

Abstraction (of reference_impl.ha_*, at the level of bytes and offsets)
-----------------------------------------------------------------------
The master's CommitLog is `mb[o]` for 0 <= o < `mlen` (its max offset); slave n holds
`sb[n, o]` for `base[n]` <= o < `slen[n]`. The stream of one connection is a set of
one-byte frames `fr(n, o, b)` in flight (a transfer of a range is a run of them; a set
covers loss, duplication and reordering, which a reconnect can expose). `push[n]` is
the connection's nextTransferFromWhere.

- `append`: a put on the master (CommitLog#putMessage) writes the next offset;
- `push`: HAConnection.WriteSocketService sends the byte at nextTransferFromWhere;
- `receive`: HAClient#dispatchReadRequest appends a frame whose offset is the slave's
  max offset, or any offset when the slave's log is empty (slavePhyOffset == 0: it
  starts where the master's transfer starts, HA-5); any other offset is not appended
  (HA-6) and the connection is reset;
- `report`: the slave (re)connects and reports its max offset; the master continues from
  there, or from any offset up to its max if the slave reports 0 (the start of the last
  mapped file);
- `truncate` (switch `os_crash`): an OS crash of the master loses its unflushed tail, and
  recovery truncates to a lower max offset.

Bytes are small integers (only equality matters). The proof of HA-1 is parametric: any
number of slaves, unbounded offsets.
"""

from __future__ import annotations

import z3

from spec import symbolic as sy
from spec.symbolic import Action, Invariant, Var, add, sel, store

KINDS = {"node": None, "off": "int", "byte": "int"}

VARIABLES = (
    Var("mlen", (), "off"),
    Var("mb", ("off",), "byte"),
    Var("base", ("node",), "off"),
    Var("slen", ("node",), "off"),
    Var("sb", ("node", "off"), "byte"),
    Var("push", ("node",), "off"),
    Var("fr", ("node", "off", "byte"), lossy=True),
)
V = {v.name: v for v in VARIABLES}


def init(u, s):
    """Empty master and slaves, nothing in flight, every connection at offset 0."""
    return [
        ("empty master", sel(s.mlen) == 0),
        ("empty slaves", u.forall(["node"], lambda n: z3.And(sel(s.slen, n) == 0, sel(s.base, n) == 0,
                                                            sel(s.push, n) == 0))),
        ("nothing in flight", s.fr == sy.literal(u, V["fr"], False, {})),
    ]


def append(u, s, s2, b):
    """CommitLog#putMessage on the master: the next offset."""
    m = sel(s.mlen)
    return [
        ("byte written", s2.mb == store(s.mb, m, b)),
        ("max offset grows", s2.mlen == store(s.mlen, m + 1)),
    ]


def push(u, s, s2, n):
    """WriteSocketService: transfer the byte at nextTransferFromWhere."""
    p = sel(s.push, n)
    return [
        ("something to send", z3.And(p >= 0, p < sel(s.mlen))),
        ("frame sent", sy.sends(u, s2.fr, add(s.fr, n, p, sel(s.mb, p)))),
        ("next offset", s2.push == store(s.push, n, p + 1)),
    ]


def receive(u, s, s2, n, o, b):
    """HAClient#dispatchReadRequest: append at the slave's max offset (any offset if empty)."""
    e = sel(s.slen, n)
    empty = e == 0
    return [
        ("frame in flight", sel(s.fr, n, o, b)),
        ("offset is the slave's max offset, or the slave is empty", z3.Or(o == e, empty)),
        ("byte appended", s2.sb == store(s.sb, n, o, b)),
        ("slave max offset", s2.slen == store(s.slen, n, o + 1)),
        ("an empty slave starts at the frame", s2.base == store(s.base, n, z3.If(empty, o, sel(s.base, n)))),
        ("frame consumed", sy.sends(u, s2.fr, s.fr)),
    ]


def report(u, s, s2, n, x):
    """The slave (re)connects and reports its max offset: the master continues from it, or
    from an offset of its choice up to its max (the last mapped file) if the slave reports 0."""
    e = sel(s.slen, n)
    return [
        ("from the reported offset, or any offset for an empty slave",
         z3.Or(x == e, z3.And(e == 0, x >= 0, x <= sel(s.mlen)))),
        ("connection offset", s2.push == store(s.push, n, x)),
        ("the old stream is gone", sy.sends(u, s2.fr, s.fr)),
    ]


def truncate(u, s, s2, x):
    """An OS crash of the master drops its unflushed tail; recovery truncates to x."""
    return [
        ("a lower max offset", z3.And(x >= 0, x < sel(s.mlen))),
        ("truncated", s2.mlen == store(s.mlen, x)),
    ]


def idle(u, s, s2):
    """A step that changes no log: a lost frame, an ack, a timer."""
    return []


ACTIONS = (
    Action("append", (("b", "byte"),), ("mb", "mlen"), append, append.__doc__),
    Action("push", (("n", "node"),), ("fr", "push"), push, push.__doc__),
    Action("receive", (("n", "node"), ("o", "off"), ("b", "byte")), ("sb", "slen", "base", "fr"), receive,
           receive.__doc__),
    Action("report", (("n", "node"), ("x", "off")), ("push", "fr"), report, report.__doc__),
    Action("truncate", (("x", "off"),), ("mlen",), truncate, truncate.__doc__, optional="os_crash"),
    Action("idle", (), (), idle, idle.__doc__),
)


def ha1(u, s):
    """Every slave's bytes are the master's at the same offsets, none beyond the master's max."""
    return u.forall(["node", "off"], lambda n, i: z3.Implies(
        z3.And(i >= sel(s.base, n), i < sel(s.slen, n)), z3.And(i < sel(s.mlen), sel(s.sb, n, i) == sel(s.mb, i))))


def frames(u, s):
    return u.forall(["node", "off", "byte"], lambda n, o, b: z3.Implies(
        sel(s.fr, n, o, b), z3.And(o >= 0, o < sel(s.mlen), b == sel(s.mb, o))))


def ranges(u, s):
    return z3.And(sel(s.mlen) >= 0, u.forall(["node"], lambda n: z3.And(
        sel(s.base, n) >= 0, sel(s.base, n) <= sel(s.slen, n), sel(s.push, n) >= 0)))


INVARIANTS = (
    Invariant("HA-1", ha1, "Every slave's CommitLog is a prefix-copy of the master's.", "HA-1",
              ("HA-1", "FRAMES", "RANGES")),
    Invariant("FRAMES", frames, "A frame in flight carries the master's byte at its offset, below its max."),
    Invariant("RANGES", ranges, "Offsets are not negative; a slave's base is at most its max offset."),
)

TRUNCATED = ("an OS crash of the master lost its unflushed tail and recovery truncated it, while a slave already "
             "held those bytes")

PROFILES = (
    sy.Profile("4.9.4", frozenset(), "RocketMQ 4.9.4 classic HA; the master's crashes keep its page cache"),
    sy.Profile("4.9.4+os-crash", frozenset({"os_crash"}),
               "as 4.9.4, plus OS crashes of the master that truncate its unflushed tail",
               expected={"HA-1": TRUNCATED}),
)

SPEC = sy.SymbolicSpec(
    protocol="ha", kinds=KINDS, variables=VARIABLES, init=init, actions=ACTIONS, invariants=INVARIANTS,
    profiles=PROFILES, reference=None, bmc_bounds={"off": (-1, 3), "byte": (0, 1)}, bmc_depth=8,
    induction_bounds={"off": (-1, 3), "byte": (0, 1)},
    doc=__doc__.split("\n\n")[0])

sy.register(SPEC)
