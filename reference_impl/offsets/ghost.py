"""Ghost variables of the `offsets` world: what the group consumed, what the brokers held, and why
an offset went back. Nothing in the node transitions reads them (spec/offsets.py does).

- `consumed[(q, o)]`: how many times the group consumed message `o` of queue `q`;
  `done[q]`: the first offset of `q` the group has not consumed (everything below has been).
- `values[(broker, q)]`: the broker's offset for `q` as the observed changes account for it
  (commits it accepted, slave syncs, the consumerOffset.json a restart loaded, a crash);
  a broker whose table ever differed from that account is in `unaccounted`, and nothing it
  answers for that queue explains a regression;
- `peak[(broker, q)]`: the highest offset `broker` ever held for `q`, with how and when it
  got there (`peak_how`: a commit it accepted, a sync, a load);
  `lowerings[(broker, q)]`: every fall of its value below that peak since, and why
  (`Lowering`: a slave sync's putAll of the master's table; a restart that loaded exactly
  what its last persist wrote, `persisted`, below what it held at the crash, `pre_crash`; a
  lower commit accepted). A lowering whose evidence does not reproduce the value (a load of
  something else than the last persist, say) has no code and explains nothing.
- `regressions`: each time a consumer resumed a queue below the highest offset any broker
  had held for it (OFF-2), with the cause read from the above; `skips`: each time it
  resumed past a message the group had not consumed (OFF-1), and `corrections`: the offsets
  a consumer committed from a PULL_OFFSET_MOVED answer while the group had not consumed up
  to them (the evidence for OFF-1's one known cause, offsetCheckInSlave on a lagging slave).
- `resumed[(consumer, q)]`: the offset the consumer resumed from and the highest held
  offset then, so a duplicate is attributed to a regression or to at-least-once delivery
  (consumed but not yet committed when the queue changed hands or the consumer died).
- `answers[(consumer, q)]`: the QUERY_CONSUMER_OFFSET answers brokers gave the consumer
  for the queue since it last resumed it (`Answer`: when, which broker, the answer, what
  that broker held then and whether the account gives that very value, the highest offset
  any broker had held then and the cause of any gap to it then), each with the
  commits that raised that highest offset after the answer (`Raise`: when, where, which
  consumer committed it and whether that consumer had taken the queue). A resume below
  the highest held offset is the rebalance race `commit-after-read` only when the
  consumer resumed from exactly such an answer, the broker answered what it held, and
  everything above what was held when it answered came from other owners' commits
  accepted after the answer (docs/offsets.md). Every OFF-2 cause is judged on the answer the
  consumer resumed from: a regression is explained only when the consumer resumed from
  exactly an answer of that broker, the broker answered what its account gives, and the
  gap to the highest offset held is the very value a cause lowered it to, or commits of
  others accepted after the answer.
"""

from __future__ import annotations

from typing import Any

from reference_impl import core
from reference_impl.core import network as net_mod
from reference_impl.core.state import EMPTY, FrozenMap, record
from reference_impl.offsets.broker import key_of
from reference_impl.offsets.records import (
    Appended,
    Broker,
    Consumed,
    GetMessageStatus,
    OffsetCommitted,
    OffsetCorrected,
    OffsetQueried,
    OffsetRead,
    OffsetsLoaded,
    OffsetsPersisted,
    OffsetsSynced,
    PullServed,
)
from reference_impl.rocketmq import ResponseCode


@record
class Lowering:
    at_ms: int
    old: int
    new: int
    code: str  # slave-sync, master-restart, lower-commit
    cause: str


@record
class Regression:
    at_ms: int
    consumer: str
    queue_id: int
    resumed: int
    held: int  # the highest offset any broker had held for the queue
    broker: str | None
    code: str | None  # None: no known cause
    cause: str | None


@record
class Raise:
    """A commit that raised the highest offset any broker had held for a queue."""

    at_ms: int
    broker: str
    offset: int
    client: str  # the consumer whose request carried it ("": unknown)
    via: str
    owner: bool  # that consumer had taken the queue (resumed it) before


@record
class Answer:
    """A broker answered a consumer's QUERY_CONSUMER_OFFSET for a queue (RemoteBrokerOffsetStore#readOffset
    READ_FROM_STORE), and what happened to the queue's offsets after."""

    at_ms: int
    broker: str
    offset: int  # the answer (-1: QUERY_NOT_FOUND)
    value: int  # what the broker held for the queue then (-1: nothing)
    held: int  # the highest offset any broker had held for the queue then
    honest: bool  # the broker's table was what its account gives, and the answer is what it held
    code_then: str | None  # the cause of a gap (offset, held] already there at the answer (None: none known)
    cause_then: str | None
    late: tuple = ()  # (first, last) Raise after the answer; () if none
    late_by_others: bool = True  # every such raise was a commit of another consumer that had taken the queue


@record
class Ghost:
    consumed: FrozenMap = EMPTY
    done: tuple[int, ...] = ()
    stored: tuple[int, ...] = ()  # messages the master stored per queue
    peak: FrozenMap = EMPTY
    peak_how: FrozenMap = EMPTY  # (broker, q) -> (how it got its peak: commit, sync, load; when)
    lowerings: FrozenMap = EMPTY  # (broker, q) -> tuple of Lowering since its value was last at its peak
    values: FrozenMap = EMPTY  # (broker, q) -> its offset as the observed changes account for it (-1: none)
    unaccounted: frozenset = frozenset()  # (broker, q) whose table once differed from the account
    persisted: FrozenMap = EMPTY  # broker -> (time, the table its latest persist wrote)
    pre_crash: FrozenMap = EMPTY  # (broker, q) -> its accounted offset when it last crashed
    last_sync: FrozenMap = EMPTY  # slave -> when its latest syncConsumerOffset putAll ran
    started: FrozenMap = EMPTY  # broker -> when it last (re)started (0: at boot)
    regressions: tuple[Regression, ...] = ()
    skips: tuple[str, ...] = ()
    skip_causes: tuple[str | None, ...] = ()  # each skip's cause: a correction of that very offset, or None
    moved: FrozenMap = EMPTY  # q -> (broker, offset asked, nextBeginOffset, reproduced) of its latest PULL_OFFSET_MOVED
    corrections: FrozenMap = EMPTY  # (q, offset) -> (first unconsumed offset then, how a correction put it there)
    resumed: FrozenMap = EMPTY
    duplicates: int = 0
    duplicates_regression: int = 0
    syncs: int = 0
    commits_to_slave: int = 0
    incarnations: FrozenMap = EMPTY  # broker -> the incarnation whose consumerOffset.json load was seen
    answers: FrozenMap = EMPTY  # (consumer, q) -> tuple of Answer since it last resumed q


def init(cfg: Any) -> Ghost:
    """Nothing consumed, nothing held."""
    q = cfg.proto.queues
    return Ghost(done=(0,) * q, stored=(0,) * q)


def skipped_by_corrections(g: Ghost, queue_id: int, offset: int) -> str | None:
    """Why the group has not consumed every message of the queue below `offset`, when each one it
    has not is inside a gap an OFFSET_ILLEGAL correction jumped (from the first unconsumed offset
    then to the corrected one); None when any is not, or no gap is involved."""
    gaps = [(lo, hi, cause) for (q, hi), (lo, cause) in g.corrections.items() if q == queue_id]
    causes = []
    for o in range(g.done[queue_id], offset):
        if g.consumed.get((queue_id, o)):
            continue
        gap = next((gap for gap in gaps if gap[0] <= o < gap[1]), None)
        if gap is None:
            return None
        if gap[2] not in causes:
            causes.append(gap[2])
    return "; ".join(causes) or None


def held_max(g: Ghost, queue_id: int) -> int:
    """The highest offset any broker has held for the queue (-1: none)."""
    return max((v for (_, q), v in g.peak.items() if q == queue_id), default=-1)


def _value(b: Broker, queue_id: int) -> int:
    """A broker's offset for the group's queue (-1: none)."""
    inner = b.offset_table.get(key_of())
    return inner.get(queue_id, -1) if inner is not None else -1


def _account(g: Ghost, w: Any, broker: str, queue_id: int, old: int, new: int, code: str, why: str,
             exact: bool = True) -> Ghost:
    """An observed change of a broker's offset for a queue, from `old` (what the broker held) to `new`
    (what it holds now): keep the account (a broker that held something else than it gives leaves
    it), raise the peak, or record a lowering below it (`exact` False: its evidence does not
    reproduce `new`, so it explains nothing)."""
    k = (broker, queue_id)
    now = w.now
    if old != g.values.get(k, -1) or new != _value(w.nodes[w.cfg.ids.index(broker)], queue_id):
        g = g.evolve(unaccounted=g.unaccounted | {k})
    g = g.evolve(values=g.values.set(k, new))
    peak = g.peak.get(k, -1)
    if new > peak:
        how = "commit" if code == "lower-commit" else "sync" if code == "slave-sync" else "load"
        return g.evolve(peak=g.peak.set(k, new), peak_how=g.peak_how.set(k, (how, now)),
                        lowerings=g.lowerings.without(k) if k in g.lowerings else g.lowerings)
    if new < peak and new < old:
        low = Lowering(at_ms=now, old=old, new=new, code=code if exact else None, cause=why)
        return g.evolve(lowerings=g.lowerings.set(k, g.lowerings.get(k, ()) + (low,)))
    return g


def _broker_role(w: Any, broker: str) -> str:
    """Which of the two brokers `broker` is."""
    return "master" if broker == w.cfg.proto.brokers[0] else "slave"


def _regression_cause(g: Ghost, w: Any, broker: str | None, queue_id: int, answer: int
                      ) -> tuple[str | None, str | None]:
    """Why `broker` answered `answer`, below the highest offset held for the queue, judged when it
    answers: it held more once and every fall since is a lowering whose evidence reproduces the
    value it fell to; and/or another broker holds more than it ever did, for a reason that fits
    how that other broker got it (commits only the slave took; a slave that has not synced since
    the master got it, or synced after the master had lost it again). The code names the cause
    of the top of the gap; the text gives every cause found."""
    if broker is None:
        return None, None
    k = (broker, queue_id)
    mine = g.peak.get(k, -1)
    found = []
    if answer < mine:
        lows = g.lowerings.get(k, ())
        if not lows or any(low.code is None for low in lows):
            return None, None
        found += [(low.code, low.cause) for low in lows]
    others = [(v, b) for (b, q), v in g.peak.items() if q == queue_id and b != broker and v > max(answer, mine)]
    if others:
        top, other = max(others)
        how, at = g.peak_how.get((other, queue_id), ("?", -1))
        if _broker_role(w, broker) == "master":
            if how != "commit":
                return None, None
            found.append(("commits-on-slave-only",
                          f"{other} took offsets up to {top} that {broker} never had: commits go to the slave while "
                          f"the master is out of the consumer's route, and no broker copies a slave's offsets to the "
                          f"master (#2513)"))
        else:
            synced = g.last_sync.get(broker, -1)
            if at > synced:
                found.append(("slave-lag", f"the slave never had the master's {top} (the master took it at t={at} ms, "
                                           f"the slave's last syncConsumerOffset ran at t={synced} ms): it runs "
                                           f"every 10 s, and not at all while masterAddr is null"))
            else:
                lows = g.lowerings.get((other, queue_id), ())
                if not lows or any(low.code is None for low in lows):
                    return None, None
                found.append((lows[-1].code, f"{lows[-1].cause}; {broker}'s syncConsumerOffset at t={synced} ms "
                                             f"copied the master's lower value"))
    if not found:
        return None, None
    return found[-1][0], "; ".join(text for _, text in found)


def _requester(w: Any, rpc: int) -> str:
    """The node that sent the RPC `rpc` while it is open ("": unknown): the channel a broker's request
    came in on."""
    r = net_mod.find_rpc(w.net, rpc) if rpc >= 0 else None
    return w.cfg.ids[r.requester] if r is not None else ""


MAX_ANSWERS = 4  # answers kept per (consumer, queue) between two resumes (duplicated queries answer twice)


def _note_raise(g: Ghost, queue_id: int, r: Raise) -> Ghost:
    """The highest held offset of the queue rose: note it in every answer still waiting for its resume."""
    table = g.answers
    for k, answers in g.answers.items():
        if k[1] != queue_id:
            continue
        by_others = r.client not in ("", k[0]) and r.owner
        table = table.set(k, tuple(a.evolve(late=(a.late[0] if a.late else r, r),
                                            late_by_others=a.late_by_others and by_others) for a in answers))
    return g.evolve(answers=table)


def _resumed_answer(g: Ghost, consumer: str, o: Any) -> Answer | None:
    """The answer consumer resumed queue o.queue_id from: the latest one the broker it read from
    gave it with that very value, if the consumer resumed at it (computePullFromWhere: the offset,
    or 0 for QUERY_NOT_FOUND)."""
    for a in reversed(g.answers.get((consumer, o.queue_id), ())):
        if a.broker == o.addr and a.offset == o.answer and o.offset == max(a.offset, 0):
            return a
    return None


def _regression(a: Answer | None, consumer: str, o: Any, held: int) -> tuple[str | None, str | None, int]:
    """Why consumer resumed queue o.queue_id at o.offset, below `held` (the highest offset any broker
    has held for it): the cause of the gap at the answer it resumed from, and for anything held
    above that since, the rebalance race `commit-after-read` (docs/offsets.md): every offset above
    what was held at the answer was first held after it, through commits of other consumers that
    had taken the queue before (its previous owner dropping it, or still committing it). Returns
    (code, cause, the highest offset held at the answer), or (None, why not, held)."""
    if a is None:
        return None, (f"{consumer} resumed at {o.offset} from {o.addr}'s answer {o.answer}, which {o.addr} never gave "
                      f"it"), held
    if not a.honest:
        return None, f"{o.addr} answered {a.offset}, which is not what its offset table's history gives", held
    if a.offset < a.held and a.code_then is None:
        return None, None, held  # part of the gap was there at the answer already, with no known cause
    if held <= a.held:
        return a.code_then, a.cause_then, held
    if not a.late or not a.late_by_others or a.late[1].offset != held:
        return None, None, held  # something rose after the answer, and not only by other owners' commits
    first, last = a.late
    text = (f"{o.addr} answered {consumer}'s query for queue {o.queue_id} with {a.offset} at t={a.at_ms} ms, "
            f"when no broker had held more than {a.held}; then {first.client}, which had taken the queue "
            f"before, committed {first.offset} to "
            f"{first.broker} ({first.via}, accepted at t={first.at_ms} ms)"
            + (f", up to {last.client}'s {last.offset} at t={last.at_ms} ms" if last is not first else "")
            + ": the previous owner's commit is not ordered with the new owner's readOffset "
              "(RebalanceImpl/RebalancePushImpl: persist one-way on dropping the queue, readOffset "
              "READ_FROM_STORE on taking it; at-least-once on a rebalance)")
    if a.offset < a.held:
        text = f"{a.cause_then}; {text}"
    return "commit-after-read", text, a.held


def _honest(g: Ghost, broker: str, queue_id: int, value: int, answer: int) -> bool:
    """The broker held what its account gives, and answered it (ConsumerManageProcessor#queryConsumerOffset:
    the offset; without one, 0 or QUERY_NOT_FOUND)."""
    k = (broker, queue_id)
    if k in g.unaccounted or value != g.values.get(k, -1):
        return False
    return answer == value if value >= 0 else answer in (0, -1)


def update(g: Ghost, w: Any, i: int, o: Any) -> Ghost:
    """Fold one observation (or a fault event, node -1) into the ghost: the step of its type in
    `UPDATES`; other observations leave it as it is."""
    step = UPDATES.get(type(o))
    return g if step is None else step(g, w, i, o)


def _consumed(g: Ghost, w: Any, i: int, o: Consumed) -> Ghost:
    k = (o.queue_id, o.queue_offset)
    n = g.consumed.get(k, 0) + 1
    g = g.evolve(consumed=g.consumed.set(k, n))
    if n > 1:
        r = g.resumed.get((w.cfg.ids[i], o.queue_id))
        by_regression = r is not None and r[0] <= o.queue_offset < r[1]
        g = g.evolve(duplicates=g.duplicates + 1, duplicates_regression=g.duplicates_regression + by_regression)
    d = g.done[o.queue_id]
    if o.queue_offset == d:
        while g.consumed.get((o.queue_id, d), 0):
            d += 1
        g = g.evolve(done=g.done[:o.queue_id] + (d,) + g.done[o.queue_id + 1:])
    return g


def _pull_served(g: Ghost, w: Any, i: int, o: PullServed) -> Ghost:
    if o.code != ResponseCode.PULL_OFFSET_MOVED:
        return g
    # the correction's value, reproduced: DefaultMessageStore#getMessage's nextOffsetCorrection to the
    # queue's max offset (OFFSET_OVERFLOW_BADLY), which a slave makes only with offsetCheckInSlave
    b = w.nodes[i]
    top = len(b.store.cqs[o.queue_id]) if 0 <= o.queue_id < len(b.store.cqs) else -1
    exact = (w.cfg.proto.offset_check_in_slave and o.status is GetMessageStatus.OFFSET_OVERFLOW_BADLY
             and o.next_begin_offset == top)
    return g.evolve(moved=g.moved.set(o.queue_id, (w.cfg.ids[i], o.offset, o.next_begin_offset, exact)))


def _offset_corrected(g: Ghost, w: Any, i: int, o: OffsetCorrected) -> Ghost:
    moved = g.moved.get(o.queue_id)
    done = g.done[o.queue_id]
    if (moved is None or moved[1:3] != (o.asked, o.corrected) or not moved[3] or o.corrected <= done
            or _broker_role(w, moved[0]) != "slave"):
        return g
    cause = (f"slave {moved[0]} answered {w.cfg.ids[i]}'s pull of queue {o.queue_id} at {o.asked} with "
             f"PULL_OFFSET_MOVED, nextBeginOffset {o.corrected} (offsetCheckInSlave: a slave behind what the "
             f"master served corrects the offset to its own max), and the consumer committed {o.corrected} "
             f"and dropped its process queue while the group had consumed only below {done} "
             f"(DefaultMQPushConsumerImpl's OFFSET_ILLEGAL path)")
    return g.evolve(corrections=g.corrections.set((o.queue_id, o.corrected), (done, cause)))


def _offset_committed(g: Ghost, w: Any, i: int, o: OffsetCommitted) -> Ghost:
    broker = w.cfg.ids[i]
    top = held_max(g, o.queue_id) if g.answers else -1
    g = _account(g, w, broker, o.queue_id, o.old, o.offset, "lower-commit",
                 f"{broker} accepted a commit of {o.offset} below its {o.old} (commitOffset takes lower offsets)")
    if g.answers and o.offset > top:
        client = o.client or _requester(w, o.rpc)
        g = _note_raise(g, o.queue_id, Raise(at_ms=w.now, broker=broker, offset=o.offset, client=client,
                                             via=o.via, owner=(client, o.queue_id) in g.resumed))
    if _broker_role(w, broker) == "slave":
        g = g.evolve(commits_to_slave=g.commits_to_slave + 1)
    return g


def _offsets_synced(g: Ghost, w: Any, i: int, o: OffsetsSynced) -> Ghost:
    now = w.now
    broker = w.cfg.ids[i]
    before = o.before.get(key_of())
    synced = o.table.get(key_of())
    for queue_id in range(len(g.done)):
        old = before.get(queue_id, -1) if before is not None else -1
        new = synced.get(queue_id, -1) if synced is not None else old  # putAll: the master's map replaces
        g = _account(g, w, broker, queue_id, old, new, "slave-sync",
                     f"syncConsumerOffset put the master's table into {broker}'s (putAll) at t={now} ms: "
                     f"{broker}'s offset fell to the master's {new}")
    return g.evolve(syncs=g.syncs + 1, last_sync=g.last_sync.set(broker, now))


def _offsets_persisted(g: Ghost, w: Any, i: int, o: OffsetsPersisted) -> Ghost:
    return g.evolve(persisted=g.persisted.set(w.cfg.ids[i], (w.now, o.table)))


def _offset_queried(g: Ghost, w: Any, i: int, o: OffsetQueried) -> Ghost:
    broker = w.cfg.ids[i]
    held = held_max(g, o.queue_id)
    value = _value(w.nodes[i], o.queue_id)
    honest = _honest(g, broker, o.queue_id, value, o.offset)
    code, cause = (_regression_cause(g, w, broker, o.queue_id, o.offset) if honest and o.offset < held
                   else (None, None))
    a = Answer(at_ms=w.now, broker=broker, offset=o.offset, value=value, held=held, honest=honest,
               code_then=code, cause_then=cause)
    k = (_requester(w, o.rpc), o.queue_id)
    if not k[0]:
        return g  # an RPC no longer open (a duplicated request): nobody takes this answer
    return g.evolve(answers=g.answers.set(k, (g.answers.get(k, ()) + (a,))[-MAX_ANSWERS:]))


def _queries_die(g: Ghost, w: Any, o: core.Crash | core.Restart) -> Ghost:
    """A consumer's open queries die with it (a crash or a restart)."""
    if not 0 <= o.node < len(w.cfg.ids):
        return g
    consumer = w.cfg.ids[o.node]
    stale = [k for k in g.answers if k[0] == consumer]
    if stale:
        table = g.answers
        for k in stale:
            table = table.without(k)
        g = g.evolve(answers=table)
    return g


def _crash(g: Ghost, w: Any, i: int, o: core.Crash) -> Ghost:
    g = _queries_die(g, w, o)
    if type(w.nodes[o.node]) is not Broker:
        return g
    broker = w.cfg.ids[o.node]  # the table in memory is gone
    pre, values = g.pre_crash, g.values
    for queue_id in range(len(g.done)):
        k = (broker, queue_id)
        pre, values = pre.set(k, values.get(k, -1)), values.set(k, -1)
    return g.evolve(pre_crash=pre, values=values)


def _restart(g: Ghost, w: Any, i: int, o: core.Restart) -> Ghost:
    return _brokers_loaded(_queries_die(g, w, o), w, i, o)


def _brokers_loaded(g: Ghost, w: Any, i: int, o: core.Restart | core.Calm) -> Ghost:
    """A broker restart (or every broker still down restarting at Calm) loads consumerOffset.json."""
    for j, n in enumerate(w.nodes):
        if type(n) is Broker and g.incarnations.get(n.id, 0) != n.incarnation:
            g = _offsets_loaded(g.evolve(incarnations=g.incarnations.set(n.id, n.incarnation)), w, j,
                                OffsetsLoaded(table=n.offset_table))
    return g


def _offsets_loaded(g: Ghost, w: Any, i: int, o: OffsetsLoaded) -> Ghost:
    broker = w.cfg.ids[i]
    at, wrote = g.persisted.get(broker, (-1, EMPTY))
    inner, last = o.table.get(key_of()), wrote.get(key_of())
    code = "master-restart" if _broker_role(w, broker) == "master" else "slave-restart"
    g = g.evolve(started=g.started.set(broker, w.now))
    for queue_id in range(len(g.done)):
        k = (broker, queue_id)
        new = inner.get(queue_id, -1) if inner is not None else -1
        persisted = last.get(queue_id, -1) if last is not None else -1
        old = g.pre_crash.get(k, -1)
        g = g.evolve(values=g.values.set(k, old))
        g = _account(g, w, broker, queue_id, old, new, code,
                     f"{broker} restarted and loaded consumerOffset.json ({new}, what its last persist wrote at "
                     f"t={at} ms): the commits up to {old} since were lost with the process",
                     exact=new == persisted)
    return g


def _offset_read(g: Ghost, w: Any, i: int, o: OffsetRead) -> Ghost:
    consumer = w.cfg.ids[i]
    held = held_max(g, o.queue_id)
    k = (consumer, o.queue_id)
    before = g
    if k in g.answers:
        g = g.evolve(answers=g.answers.without(k))
    if o.offset < 0:
        return g
    g = g.evolve(resumed=g.resumed.set(k, (o.offset, held)))
    if o.offset > g.done[o.queue_id]:
        g = g.evolve(skips=g.skips + (f"{consumer} resumed queue {o.queue_id} at {o.offset} (read from {o.addr}) "
                                      f"but the group has not consumed offset {g.done[o.queue_id]}",))
        g = g.evolve(skip_causes=g.skip_causes + (skipped_by_corrections(g, o.queue_id, o.offset),))
    if o.offset < held:  # judged on the answers as they stood before this resume
        code, cause, floor = _regression(_resumed_answer(before, consumer, o), consumer, o, held)
        if code == "commit-after-read":  # duplicates above what was held at the answer are at-least-once
            g = g.evolve(resumed=g.resumed.set(k, (o.offset, floor)))
        g = g.evolve(regressions=g.regressions + (Regression(
            at_ms=w.now, consumer=consumer, queue_id=o.queue_id, resumed=o.offset, held=held, broker=o.addr,
            code=code, cause=cause if code is not None else None),))
    return g


def _appended(g: Ghost, w: Any, i: int, o: Appended) -> Ghost:
    return g.evolve(stored=g.stored[:o.queue_id] + (o.queue_offset + 1,) + g.stored[o.queue_id + 1:])


# What each observation (or fault event) does to the ghost, by its type, as core/transitions.py
# steps the world by the event's type.
UPDATES = {
    Consumed: _consumed, PullServed: _pull_served, OffsetCorrected: _offset_corrected,
    OffsetCommitted: _offset_committed, OffsetsSynced: _offsets_synced, OffsetsPersisted: _offsets_persisted,
    OffsetQueried: _offset_queried, core.Crash: _crash, core.Restart: _restart, core.Calm: _brokers_loaded,
    OffsetsLoaded: _offsets_loaded, OffsetRead: _offset_read, Appended: _appended,
}
