"""State variables of symbolic specs: Z3 arrays, or one Z3 scalar per point.

A state variable maps index kinds (node, term, ...) to a value. In a parametric
universe it is a Z3 array, and relations use `Select` / `Store`. When every index kind
is finite (a fixed cluster with bounded terms: bounded model checking, conformance of
concrete steps), a `FiniteArray` holds one scalar per point instead: a read at a
concrete point is a dictionary lookup and a read at a symbolic point a short `If`
chain, which keeps deep BMC queries free of array theory. The operations below accept
either, so a spec's relations are written once.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import z3

# Values known to be constants, by Python identity: the finite domains of a universe
# register theirs, so that indexing with them skips the (slow) z3py inspection.
_KNOWN: dict[int, tuple[z3.ExprRef, int]] = {}


def register_values(values: Sequence[z3.ExprRef]) -> None:
    if len(_KNOWN) > 200_000:
        _KNOWN.clear()  # entries hold their values alive; forget old universes
    for v in values:
        _KNOWN[id(v)] = (v, v.get_id())


def _value_id(e: z3.ExprRef) -> int | None:
    """The AST id of `e` if it is a constant value (number, boolean, enum constant), else None."""
    hit = _KNOWN.get(id(e))
    if hit is not None and hit[0] is e:
        return hit[1]
    if _is_value(e):
        return e.get_id()
    return None


def _is_value(e: z3.ExprRef) -> bool:
    if z3.is_int_value(e) or z3.is_bv_value(e) or z3.is_true(e) or z3.is_false(e):
        return True
    return z3.is_app(e) and e.num_args() == 0 and e.decl().kind() == z3.Z3_OP_DT_CONSTRUCTOR


# z3py's And / If / == check and coerce their arguments on every call; cells are built
# by the hundred thousand in deep BMC queries, so these go to the C API directly.


def fast_and(args: Sequence[z3.BoolRef]) -> z3.BoolRef:
    if not args:
        return z3.BoolVal(True)
    if len(args) == 1:
        return args[0]
    ctx = args[0].ctx
    arr, size = z3.z3._to_ast_array(args)
    return z3.BoolRef(z3.Z3_mk_and(ctx.ref(), size, arr), ctx)


def fast_eq(a: z3.ExprRef, b: z3.ExprRef) -> z3.BoolRef:
    return z3.BoolRef(z3.Z3_mk_eq(a.ctx.ref(), a.as_ast(), b.as_ast()), a.ctx)


def fast_implies(a: z3.BoolRef, b: z3.BoolRef) -> z3.BoolRef:
    return z3.BoolRef(z3.Z3_mk_implies(a.ctx.ref(), a.as_ast(), b.as_ast()), a.ctx)


def fast_if(c: z3.BoolRef, a: z3.ExprRef, b: z3.ExprRef) -> z3.ExprRef:
    return z3.z3._to_expr_ref(z3.Z3_mk_ite(c.ctx.ref(), c.as_ast(), a.as_ast(), b.as_ast()), c.ctx)


_POINTS: dict[int, tuple[Any, list]] = {}  # id(domains) -> (domains, their points)


class FiniteArray:
    """An array over finite domains: `cells` maps each point (as Z3 AST ids, which Z3
    shares between equal terms) to a scalar expression."""

    __slots__ = ("domains", "points", "cells")

    def __init__(self, domains: Sequence[Sequence[z3.ExprRef]], cells: dict[tuple, z3.ExprRef],
                 points: list | None = None) -> None:
        self.domains = domains
        if points is None:
            hit = _POINTS.get(id(domains))
            if hit is not None and hit[0] is domains:
                points = hit[1]
            else:
                points = [(tuple(v.get_id() for v in p), p) for p in itertools.product(*domains)]
                if len(_POINTS) > 10_000:
                    _POINTS.clear()
                _POINTS[id(domains)] = (domains, points)
        self.points = points
        self.cells = cells

    def _new(self, cells: dict) -> FiniteArray:
        return FiniteArray(self.domains, cells, self.points)

    def _dims(self, idx: Sequence[z3.ExprRef]) -> list[tuple[int | None, dict[int, z3.BoolRef] | None]]:
        """Per dimension: the id of a concrete index, or the condition `index == v` for each value v."""
        out = []
        for i, dom in zip(idx, self.domains):
            vid = _value_id(i)
            if vid is not None:
                out.append((vid, None))
            else:
                out.append((None, {v.get_id(): fast_eq(i, v) for v in dom}))
        return out

    def select(self, idx: Sequence[z3.ExprRef]) -> z3.ExprRef:
        dims = self._dims(idx)
        if all(d[0] is not None for d in dims):
            key = tuple(d[0] for d in dims)
            try:
                return self.cells[key]
            except KeyError:
                raise KeyError(f"{[str(i) for i in idx]} is outside the finite universe") from None

        def tree(level: int, prefix: tuple) -> z3.ExprRef:
            # A decision tree over the symbolic dimensions; the last value is the default
            # (the caller keeps symbolic indices within their domains).
            if level == len(dims):
                return self.cells[prefix]
            fixed, conds = dims[level]
            if fixed is not None:
                return tree(level + 1, prefix + (fixed,))
            keys = list(conds)
            expr = tree(level + 1, prefix + (keys[-1],))
            for k in reversed(keys[:-1]):
                expr = fast_if(conds[k], tree(level + 1, prefix + (k,)), expr)
            return expr

        return tree(0, ())

    def store(self, idx: Sequence[z3.ExprRef], value: z3.ExprRef) -> FiniteArray:
        if isinstance(value, int) and not isinstance(value, bool):
            sort = next(iter(self.cells.values())).sort()
            value = z3.BitVecVal(value, sort) if isinstance(sort, z3.BitVecSortRef) else z3.IntVal(value)
        cells = dict(self.cells)
        dims = self._dims(idx)
        if all(d[0] is not None for d in dims):
            key = tuple(d[0] for d in dims)
            if key not in cells:
                raise KeyError(f"{[str(i) for i in idx]} is outside the finite universe")
            cells[key] = value
            return self._new(cells)
        for key, _ in self.points:
            conds = []
            for k, (fixed, eqs) in zip(key, dims):
                if fixed is not None:
                    if fixed != k:
                        break
                else:
                    conds.append(eqs[k])
            else:
                cells[key] = fast_if(fast_and(conds), value, cells[key])
        return self._new(cells)

    def __eq__(self, other: Any) -> z3.BoolRef:  # type: ignore[override]
        if other is self:
            return z3.BoolVal(True)
        mine, theirs = self.cells, other.cells
        return fast_and([fast_eq(mine[k], theirs[k]) for k, _ in self.points if mine[k] is not theirs[k]])

    def __ne__(self, other: Any) -> z3.BoolRef:  # type: ignore[override]
        return z3.Not(self.__eq__(other))

    __hash__ = None  # type: ignore[assignment]


Array = Any  # a z3 ArrayRef or a FiniteArray


def sel(a: Array, *idx: z3.ExprRef) -> z3.ExprRef:
    return a.select(idx) if isinstance(a, FiniteArray) else z3.Select(a, *idx)


_TRUE, _FALSE = z3.BoolVal(True), z3.BoolVal(False)  # shared, so equal cells are the same object


def _val(v: Any) -> z3.ExprRef:
    if isinstance(v, bool):
        return _TRUE if v else _FALSE
    if isinstance(v, int):
        return z3.IntVal(v)
    return v


def store(a: Array, *idx_and_value: z3.ExprRef) -> Array:
    *idx, value = idx_and_value
    if isinstance(value, bool):
        value = _val(value)
    return a.store(idx, value) if isinstance(a, FiniteArray) else z3.Store(a, *idx, value)


def add(a: Array, *idx: z3.ExprRef) -> Array:
    """The set `a` with the tuple `idx` added."""
    return store(a, *idx, z3.BoolVal(True))


def subset(a: Array, b: Array) -> z3.BoolRef:
    if isinstance(a, FiniteArray):
        return fast_and([fast_implies(a.cells[k], b.cells[k]) for k, _ in a.points if a.cells[k] is not b.cells[k]])
    return z3.IsSubset(a, b)


def ite(c: z3.BoolRef, a: Array, b: Array) -> Array:
    if isinstance(a, FiniteArray):
        return a._new({k: a.cells[k] if a.cells[k] is b.cells[k] else fast_if(c, a.cells[k], b.cells[k])
                       for k, _ in a.points})
    return z3.If(c, a, b)


def tabulate(domains: Sequence[Sequence[z3.ExprRef]] | None, sorts: Sequence[z3.SortRef],
             fn: Callable[..., z3.ExprRef]) -> Array:
    """The array whose value at each point is fn(point): a lambda, or a FiniteArray."""
    if domains is not None:
        proto = FiniteArray(domains, {})
        proto.cells = {key: fn(*point) for key, point in proto.points}
        return proto
    xs = [z3.FreshConst(s) for s in sorts]
    return z3.Lambda(xs, fn(*xs))


def literal(domains: Sequence[Sequence[z3.ExprRef]] | None, sorts: Sequence[z3.SortRef], default: Any,
            points: dict[tuple, Any]) -> Array:
    """The array with the given value at each point and `default` elsewhere."""
    default = _val(default)
    if domains is not None:
        arr = FiniteArray(domains, {})
        arr.cells = {key: default for key, _ in arr.points}
        for point, value in points.items():
            key = tuple(v.get_id() for v in point)
            if key not in arr.cells:
                raise KeyError(f"{[str(v) for v in point]} is outside the finite universe")
            arr.cells[key] = _val(value)
        return arr
    if len(sorts) == 1:
        arr = z3.K(sorts[0], default)
    else:
        arr = z3.Lambda([z3.FreshConst(s) for s in sorts], default)
    for point, value in points.items():
        arr = z3.Store(arr, *point, _val(value))
    return arr


def fresh(domains: Sequence[Sequence[z3.ExprRef]] | None, sorts: Sequence[z3.SortRef], value: z3.SortRef,
          name: str) -> Array:
    """An unconstrained array: a Z3 array constant, or one fresh scalar per point."""
    if domains is None:
        return z3.Const(name, z3.ArraySort(*sorts, value))
    arr = FiniteArray(domains, {})
    arr.cells = {key: z3.Const(f"{name}[{i}]", value) for i, (key, _) in enumerate(arr.points)}
    return arr


def cells(a: Array) -> list[z3.ExprRef]:
    return list(a.cells.values()) if isinstance(a, FiniteArray) else []
