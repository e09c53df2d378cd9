"""Scenario scripts: actions pinned at times while the world runs on its own in between.

A script is a list of actions (docs/scenario-format.md). Each becomes a `Scripted`
event of the world at its `at_ms`; between them timers fire and messages flow as the
chooser decides. Values in an action may refer to the world: `"$T"` a name bound by
an earlier `let`, `"$T+1"`, `"@LEADER"` the one live node whose observed role is
LEADER (`"@FOLLOWER[1]"`: the second by id), `{"field": "term", "node": "n0"}` an
observed field, `{"max": "term"}` the largest value of a field over live nodes.

Expectations (`expect`) are checked against the observable state (the trace's `state`),
so the same language serves every protocol. With `within_ms` an expectation must come
true at some step inside the window. A role reference that names no node (or several)
stops an action, but only makes an expectation false for the moment, so a window can
wait for it. Everything here is pure: evaluation reads the world.
"""

from __future__ import annotations

import enum
import re
from typing import Any

from reference_impl.core.events import Calm, Crash, CutLink, Heal, Partition, Restart
from reference_impl.core.inputs import JAVA_INT_MAX, InputError, show
from reference_impl.core.plugin import Protocol, protocol
from reference_impl.core.state import FrozenMap, encode, freeze, record, thaw
from reference_impl.core.transitions import apply_fault
from reference_impl.core.world import World

GENERIC_ACTIONS = ("crash", "os_crash", "disk_loss", "restart", "partition", "cut", "heal", "calm", "let", "expect")
COMPARATORS = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "ge": lambda a, b: a >= b,
               "gt": lambda a, b: a > b, "le": lambda a, b: a <= b, "lt": lambda a, b: a < b}


ORDERINGS = ("ge", "gt", "le", "lt")


def _number(v: Any) -> bool:
    return type(v) in (int, float)


def _brief(v: Any, limit: int = 200) -> str:
    text = repr(v)
    return text if len(text) <= limit else text[:limit - 3] + "..."


class ScenarioError(ValueError):
    """A script that cannot run: unknown action, bad reference, malformed value."""


class Unresolved(ScenarioError):
    """A role reference (`@LEADER`) that names no node, or several, at this moment.
    An action cannot run then; an expectation is simply not (yet) true."""


@record
class Action:
    at_ms: int
    do: str
    node: Any  # an expression naming a node, or None
    args: Any  # frozen: every other field of the action
    within_ms: int
    index: int
    source: Any  # frozen copy of the action as written

    def apply(self, w: World) -> tuple[World, tuple]:
        """Carry out this action at `w.now`: the world's `Scripted` event calls this."""
        return apply(w, self)


@record
class Expectation:
    """Observation: an `expect` (or a request's expected reply) was checked."""

    index: int
    ok: bool
    message: str


@record
class ExpectPending:
    """Observation: an `expect ... within_ms` window opened; the runner watches it."""

    index: int
    deadline_ms: int


MAX_ACTIONS = 100_000  # a script's actions (a 4 MiB trace header holds about that many)
MAX_TIME_MS = JAVA_INT_MAX  # at_ms, within_ms: about 24.8 days
MAX_DEPTH = 32  # nesting of an action's values (a `note`, an `expect`)
JAVA_LONG_MIN, JAVA_LONG_MAX = -(1 << 63), (1 << 63) - 1  # Long.MIN_VALUE, Long.MAX_VALUE


class ActionError(InputError, ScenarioError):
    """A script action that does not fit the language; `path` is `[index].field`."""


def parse_actions(steps: Any, ids: tuple[str, ...], proto: Protocol) -> tuple[Action, ...]:
    """Validate a script's actions and sort them by time (stable for equal times)."""
    if not isinstance(steps, (list, tuple)):
        raise ActionError("", f"must be a list of actions, got {show(steps)}")
    if len(steps) > MAX_ACTIONS:
        raise ActionError("", f"must have at most {MAX_ACTIONS:,} actions, got {len(steps):,}")
    known = GENERIC_ACTIONS + proto.script_actions
    actions = []
    for i, raw in enumerate(steps):
        if not isinstance(raw, dict):
            raise ActionError(f"[{i}]", f"must be an action object, got {show(raw)}")
        at = raw.get("at_ms")
        if type(at) is not int or not 0 <= at <= MAX_TIME_MS:
            raise ActionError(f"[{i}].at_ms", f"must be an integer in 0..{MAX_TIME_MS}, got {show(at)}")
        do = raw.get("do", "expect" if "expect" in raw else None)
        if type(do) is not str or do not in known:
            raise ActionError(f"[{i}].do", f"is an unknown action {show(do)}; known: {', '.join(known)}")
        within = raw.get("within_ms", 0)
        if type(within) is not int or not 0 <= within <= MAX_TIME_MS:
            raise ActionError(f"[{i}].within_ms", f"must be an integer in 0..{MAX_TIME_MS}, got {show(within)}")
        node = raw.get("node")
        if node is not None and type(node) is not str:
            raise ActionError(f"[{i}].node", f"must be a node id or a reference ('@LEADER', '$name'), got {show(node)}")
        if isinstance(node, str) and not node.startswith(("@", "$")) and node not in ids:
            raise ActionError(f"[{i}].node", f"must be one of {list(ids)}, got {show(node)}")
        if _depth(raw) > MAX_DEPTH:
            raise ActionError(f"[{i}]", f"nests deeper than {MAX_DEPTH} levels")
        _check_integers(raw, f"[{i}]")
        if do == "partition":
            _check_groups(raw.get("groups"), ids, f"[{i}].groups")
        if do == "expect":
            _check_expect(raw.get("expect"), f"[{i}].expect")
        if do == "let" and (not isinstance(raw.get("let"), dict) or not all(_VAR_NAME.match(k) for k in raw["let"])):
            raise ActionError(f"[{i}].let", "must map names (letters, digits, '_') to values")
        args = {k: v for k, v in raw.items() if k not in ("at_ms", "do", "node", "within_ms", "note")}
        actions.append(Action(at_ms=at, do=do, node=freeze(node), args=freeze(args), within_ms=within,
                              index=i, source=freeze(raw)))
    actions.sort(key=lambda a: a.at_ms)
    return tuple(a.evolve(index=k) for k, a in enumerate(actions))


_VAR_NAME = re.compile(r"^[A-Za-z_]\w{0,63}$")


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            v = v.values()
        elif not isinstance(v, (list, tuple)):
            continue
        deepest = max(deepest, d)
        if d > MAX_DEPTH:
            return d
        stack.extend((x, d + 1) for x in v if isinstance(x, (dict, list, tuple)))
    return deepest


def _check_integers(value: Any, path: str) -> None:
    """Every integer in an action within a Java long (a term, an index, a time): a value no
    Java field holds is a mistake, not a comparison that fails."""
    stack = [(value, path)]
    while stack:
        v, where = stack.pop()
        if isinstance(v, dict):
            stack.extend((x, f"{where}.{k}") for k, x in v.items())
        elif isinstance(v, (list, tuple)):
            stack.extend((x, f"{where}[{k}]") for k, x in enumerate(v))
        elif type(v) is int and not JAVA_LONG_MIN <= v <= JAVA_LONG_MAX:
            raise ActionError(where, f"must be an integer that a Java long holds, got {v}")


def _check_groups(groups: Any, ids: tuple[str, ...], path: str) -> None:
    """A partition's groups: lists of node ids (or references, resolved when the action runs),
    each node in one group at most."""
    if _is_reference(groups):
        return
    if not isinstance(groups, list) or not all(isinstance(g, list) for g in groups):
        raise ActionError(path, f"must be a list of lists of node ids, got {show(groups)}")
    seen: dict[str, int] = {}
    for g, group in enumerate(groups):
        for k, x in enumerate(group):
            if _is_reference(x):
                continue
            if type(x) is not str or x not in ids:
                raise ActionError(f"{path}[{g}][{k}]", f"must be one of {list(ids)}, got {show(x)}")
            if x in seen:
                raise ActionError(f"{path}[{g}][{k}]", f"names {x} again: it is in group {seen[x]} already "
                                                       "(a node is in one group at most)")
            seen[x] = g


def _check_expect(spec: Any, path: str) -> None:
    """The shape of an expectation: one clause or a list of them, each with exactly one
    comparator and either `field` (with `node`) or `count` (an object of field values)."""
    clauses = spec if isinstance(spec, list) else [spec]
    if not clauses:
        raise ActionError(path, "must be a clause or a non-empty list of clauses")
    for k, clause in enumerate(clauses):
        where = f"{path}[{k}]" if isinstance(spec, list) else path
        if not isinstance(clause, dict):
            raise ActionError(where, f"must be an object like {{\"field\": \"role\", \"node\": \"n0\", "
                                     f"\"eq\": \"LEADER\"}}, got {show(clause)}")
        ops = [op for op in clause if op in COMPARATORS]
        if len(ops) != 1:
            raise ActionError(where, f"needs exactly one of {', '.join(COMPARATORS)}")
        unknown = set(clause) - set(COMPARATORS) - {"field", "node", "count", "among"}
        if unknown:
            raise ActionError(where, f"has unknown key(s): {', '.join(sorted(unknown))}")
        if ("field" in clause) == ("count" in clause):
            raise ActionError(where, "needs 'field' (with 'node') or 'count', not both")
        if "field" in clause and type(clause["field"]) is not str:
            raise ActionError(f"{where}.field", f"must name an observable field, got {show(clause['field'])}")
        if "count" in clause and not (isinstance(clause["count"], dict) or _is_reference(clause["count"])):
            raise ActionError(f"{where}.count", f"must be an object of field values, got {show(clause['count'])}")
        if ops[0] in ("ge", "gt", "le", "lt"):
            want = clause[ops[0]]
            if not (type(want) in (int, float) or _is_reference(want)):
                raise ActionError(f"{where}.{ops[0]}", f"must be a number or a reference ('$name', "
                                                       f"{{\"field\": ...}}, {{\"max\": ...}}), got {show(want)}")


def _is_reference(v: Any) -> bool:
    return (isinstance(v, str) and v.startswith(("$", "@"))) or (
        isinstance(v, dict) and (set(v) == {"max"} or ("field" in v and set(v) <= {"field", "node"})))


# --- references ---


_VAR = re.compile(r"^\$([A-Za-z_]\w*)([+-]\d+)?$")
_ROLE = re.compile(r"^@([A-Za-z_]+)(?:\[(\d+)\])?$")


def observed(w: World) -> dict[str, dict]:
    p = protocol(w.cfg.protocol)
    return {node_id: p.observe(w.cfg.proto, n, up) for node_id, n, up in zip(w.cfg.ids, w.nodes, w.alive)}


def resolve(w: World, v: Any, obs: dict | None = None) -> Any:
    """An action's value with every reference to the world replaced by what it names now."""
    if isinstance(v, str):
        m = _VAR.match(v)
        if m:
            if m.group(1) not in w.vars:
                raise ScenarioError(f"${m.group(1)} is not bound by an earlier 'let'")
            base = w.vars[m.group(1)]
            if m.group(2) and not _number(base):
                raise ScenarioError(f"{v}: ${m.group(1)} is {show(base)}, not a number")
            return base + int(m.group(2)) if m.group(2) else base
        m = _ROLE.match(v)
        if m:
            obs = obs if obs is not None else observed(w)
            matches = sorted(i for i, o in obs.items() if o.get("alive") and o.get("role") == m.group(1))
            k = int(m.group(2) or 0)
            if m.group(2) is None and len(matches) != 1:
                raise Unresolved(f"{v} names {len(matches)} nodes at t={w.now} ms, not exactly one")
            if k >= len(matches):
                raise Unresolved(f"{v}: only {len(matches)} live node(s) are {m.group(1)} at t={w.now} ms")
            return matches[k]
        return v
    if isinstance(v, FrozenMap):
        obs = obs if obs is not None else observed(w)
        if "field" in v and set(v) <= {"field", "node"}:
            node = resolve(w, v.get("node"), obs)
            if type(node) is not str or node not in obs:
                raise ScenarioError(f"{show(node)} is not a node")
            if type(v["field"]) is not str or v["field"] not in obs[node]:
                raise ScenarioError(f"nodes have no observable field {show(v['field'])}")
            return obs[node][v["field"]]
        if set(v) == {"max"}:
            if type(v["max"]) is not str:
                raise ScenarioError(f"{{'max': ...}} must name an observable field, got {show(v['max'])}")
            values = [o.get(v["max"]) for o in obs.values() if o.get("alive")]
            if not all(_number(x) for x in values):
                raise Unresolved(f"{{'max': {show(v['max'])}}}: not every live node has a number there")
            return max(values) if values else None
        return {k: resolve(w, x, obs) for k, x in v.items()}
    if isinstance(v, tuple):
        return [resolve(w, x, obs) for x in v]
    return v


def node_index(w: World, action: Action) -> int:
    node = resolve(w, action.node)
    if node not in w.cfg.ids:
        raise ScenarioError(f"action {action.index} ({action.do}) needs 'node', got {node!r}")
    return w.cfg.ids.index(node)


# --- applying actions ---


def apply(w: World, action: Action) -> tuple[World, tuple]:
    """Carry out one scripted action at `w.now`."""
    do = action.do
    if do in ("crash", "os_crash", "disk_loss"):
        i = node_index(w, action)
        if not w.alive[i]:
            raise ScenarioError(f"action {action.index}: {w.cfg.ids[i]} is already down")
        return apply_fault(w, Crash(node=i, os=do != "crash", disk=do == "disk_loss"))
    if do == "restart":
        i = node_index(w, action)
        if w.alive[i]:
            raise ScenarioError(f"action {action.index}: {w.cfg.ids[i]} is already up")
        return apply_fault(w, Restart(node=i))
    if do == "partition":
        groups = resolve(w, action.args.get("groups"))
        try:
            event = Partition(groups=tuple(tuple(w.cfg.ids.index(x) for x in g) for g in groups))
        except (TypeError, ValueError):
            raise ScenarioError(f"action {action.index}: 'groups' must be lists of node ids") from None
        members = [i for g in event.groups for i in g]
        if len(set(members)) != len(members):  # a reference resolved to a node another group names
            raise ScenarioError(f"action {action.index}: 'groups' name a node twice (a node is in one group at most)")
        return apply_fault(w, event)
    if do == "cut":
        src, dst = resolve(w, action.args.get("src")), resolve(w, action.args.get("dst"))
        if src not in w.cfg.ids or dst not in w.cfg.ids:
            raise ScenarioError(f"action {action.index}: 'src' and 'dst' must be node ids")
        return apply_fault(w, CutLink(src=w.cfg.ids.index(src), dst=w.cfg.ids.index(dst)))
    if do == "heal":
        return apply_fault(w, Heal())
    if do == "calm":
        if w.history.calm:
            raise ScenarioError(f"action {action.index}: the quiet tail has begun already")
        return apply_fault(w, Calm())
    if do == "let":
        bindings = action.args.get("let")
        if not isinstance(bindings, FrozenMap):
            raise ScenarioError(f"action {action.index}: 'let' must map names to values")
        vars_ = w.vars
        for name, expr in bindings.items():
            vars_ = vars_.set(name, resolve(w, expr))
        return w.evolve(vars=vars_), ()
    if do == "expect":
        if action.within_ms:
            ok, _ = evaluate(w, action)
            if ok:
                return w, ((-1, Expectation(index=action.index, ok=True, message=describe(action))),)
            return w, ((-1, ExpectPending(index=action.index, deadline_ms=w.now + action.within_ms)),)
        ok, message = evaluate(w, action)
        return w, ((-1, Expectation(index=action.index, ok=ok, message=message)),)
    p = protocol(w.cfg.protocol)
    i = node_index(w, action)
    if not w.alive[i]:
        raise ScenarioError(f"action {action.index} ({do}): {w.cfg.ids[i]} is down")
    args = resolve(w, action.args)
    try:
        w, obs = p.script_action(w, do, i, args)
    except KeyError as e:
        raise ScenarioError(f"action {action.index} ({do}) lacks field {e}") from None
    except (TypeError, ValueError, AssertionError) as e:
        raise ScenarioError(f"action {action.index} ({do}): {e}") from None
    if "expect" in args:
        obs = obs + tuple((-1, _check_reply(action, args["expect"], o)) for _, o in obs if hasattr(o, "reply"))
    return w, obs


def _check_reply(action: Action, expected: dict, obs: Any) -> Expectation:
    if not isinstance(expected, dict):
        raise ScenarioError(f"action {action.index} ({action.do}): 'expect' must map reply fields to values")
    got = {k: getattr(obs.reply, k, None) for k in expected}
    got = {k: v.name if isinstance(v, enum.Enum) and isinstance(expected[k], str) else encode(v)
           for k, v in got.items()}  # an enum field matches its Java name, e.g. "code": "TERM_NOT_READY"
    bad = {k: got.get(k) for k, v in expected.items() if got.get(k) != v}
    if bad:
        return Expectation(index=action.index, ok=False,
                           message=f"{action.do}: expected {expected}, got {({k: got.get(k) for k in expected})}")
    return Expectation(index=action.index, ok=True, message=f"{action.do}: reply {expected}")


# --- expectations ---


def evaluate(w: World, action: Action) -> tuple[bool, str]:
    """Whether the action's `expect` holds in `w`, and a sentence saying what was seen."""
    spec = action.args.get("expect")
    clauses = spec if isinstance(spec, tuple) else (spec,)
    obs = observed(w)
    for clause in clauses:
        try:
            ok, message = _clause(w, clause, obs)
        except Unresolved as e:
            ok, message = False, str(e)
        if not ok:
            return False, f"t={w.now} ms: {message}"
    return True, f"t={w.now} ms: {describe(action)}"


def _clause(w: World, clause: Any, obs: dict) -> tuple[bool, str]:
    if not isinstance(clause, FrozenMap):
        raise ScenarioError("each expectation must be an object")
    ops = [k for k in clause if k in COMPARATORS]
    if len(ops) != 1:
        raise ScenarioError(f"expectation {thaw(clause)} needs exactly one of {', '.join(COMPARATORS)}")
    op = ops[0]
    want = resolve(w, clause[op], obs)
    if "count" in clause:
        match = resolve(w, clause["count"], obs)
        among = resolve(w, clause.get("among"), obs)
        if not isinstance(match, dict) or not (among is None or isinstance(among, list)):
            raise ScenarioError("an expectation's 'count' must be an object and its 'among' a list of node ids")
        nodes = [n for n in obs if among is None or n in among]
        got = sum(1 for n in nodes if obs[n].get("alive") and all(obs[n].get(k) == v for k, v in match.items()))
        what = f"live nodes with {match}" + (f" among {among}" if among else "")
    elif "field" in clause:
        node = resolve(w, clause.get("node"), obs)
        if not isinstance(node, str) or node not in obs:
            raise ScenarioError(f"expectation names unknown node {show(node)}")
        if clause["field"] not in obs[node]:
            raise ScenarioError(f"{node} has no observable field {show(clause['field'])}; it has "
                                f"{', '.join(obs[node])}")
        got = obs[node][clause["field"]]
        what = f"{node}.{clause['field']}"
    else:
        raise ScenarioError(f"expectation {thaw(clause)} needs 'count' or 'field'")
    if op in ORDERINGS and not (_number(got) and _number(want)):
        return False, f"{what} is {show(got)}, which is not comparable ({op}) with {show(want)}"
    ok = COMPARATORS[op](got, want)
    return ok, f"{what} is {_brief(got)}, expected {op} {_brief(want)}"


def describe(action: Action) -> str:
    return f"step {action.index} at {action.at_ms} ms: {thaw(action.args.get('expect'))}"
