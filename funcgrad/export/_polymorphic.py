"""Exporting with symbolic dimensions (``export(jit(f))(ShapeDtypeStruct(symbolic_shape("b, 4"),
...))``): the symbolic shapes of the results, one concrete export per set of sizes a call
brings, and the module for all sizes (``portable_module``).

Layer: surface. Imports numpy, funcgrad's kernel (pytrees, ``ShapedArray``, ``trace_to_jaxpr``),
``ShapeDtypeStruct``, the symbolic dimensions of ``funcgrad.export._shape_poly``, the module merging
of ``_poly_module`` and ``xla_bridge.portable``; ``_exported`` imports it and passes its own
``_export`` in (the concrete exporter).

# NOTE: [exporting with symbolic dimensions]
# funcgrad traces with concrete shapes, so a symbolic export does not trace once with symbolic
# sizes as JAX does. It traces the function (``eval_shape``, no lowering) at a few sets of sizes
# of the dimension variables that satisfy the scope's constraints, and writes each result
# dimension as the polynomial of the variables that fits every trace (degree <= 2, checked on
# more traces than it has coefficients): ``out_avals`` then read as JAX's (``int32[a,2*b]``).
# A trace that fails at some sizes fails the export with its error (a shape that only matches
# for some sizes, as JAX's "incompatible shapes" refusals). Calling the ``Exported`` binds the
# variables from the arguments' sizes and calls the concrete export for those sizes (made once
# per signature), so calls work eagerly and under jit, vmap and grad for any sizes the
# specification allows. Its module (``mlir_module()``, ``serialize()``) is one program for all
# sizes, merged from the lowerings at a few sizes (NOTE: [one module for all sizes]); a program
# whose lowerings do not merge keeps the first sizes' module and refuses to serialize. Artifacts
# exported with symbolic shapes (by JAX or funcgrad) deserialize and run here for any sizes
# (NOTE: [embedding an exported module]).
#
# NOTE: [symbolic comparisons at sample sizes]
# A traced size is a ``SymbolicSize``: the sample's int carrying its dimension expression
# (``x.shape[0] + 1`` is 6 and ``a + 1``). While a symbolic export traces, its comparisons are
# JAX's (``_shape_poly._geq_decision``): ``b >= 1`` is True, ``x.shape[0] + 1 >= x.shape[1]`` and
# ``b >= mod(b, 3)`` raise JAX's ``InconclusiveDimensionOperation`` instead of being decided per
# sample, and ``==`` is True only for equal expressions, so the user's Python takes one branch
# for every size. Orderings the library makes decide symbolically only between two traced sizes
# (a shape rule checking ``limit <= shape[axis]``, as JAX's); its equalities and its orderings
# against a plain number stay the sample's (funcgrad's own bookkeeping, which JAX does not do).
# Outside such a trace a ``SymbolicSize`` is an int.
"""

from __future__ import annotations

import itertools
import os
import sys

import numpy as np

from funcgrad.export._poly_module import NotGeneral, arg_names, generalize
from funcgrad.export._shape_poly import (
    _ATOMS,
    DimExpr,
    InconclusiveDimensionOperation,
    SymbolicScope,
    UnexpectedDimVar,
    _extremum,
    _geq_decision,
    _parse_dim,
    is_symbolic_dim,
)
from funcgrad.jitting import ShapeDtypeStruct
from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.dtypes import canonical
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import ShapedArray
from funcgrad.kernel.partial_eval import trace_to_jaxpr
from funcgrad.kernel.source_info import library_dir
from funcgrad.xla_bridge import portable
from funcgrad.xla_bridge.emitter import aval_type

__all__ = [
    "SymbolicExport",
    "check_constraints",
    "constraint",
    "constraints",
    "is_symbolic_spec",
    "note_computed",
]

_MAX_DEGREE = 2
_LOW, _HIGH = 2, 24  # the sizes the traces draw (small arrays; several values per variable)


_tracing = [0]  # symbolic exports tracing now (NOTE: [symbolic comparisons at sample sizes])
# The expressions the traced sizes took in the trace running now: candidates for result dimensions
# that no polynomial fits (``core.max_dim(b - 5, 0)``, ``(b + 13) % b``).
_computed: list = []
# (NumPy's functions the library calls with traced sizes, np.tri(n, m), are the library's too)
_LIBRARY = (library_dir(), os.path.dirname(np.__file__) + os.sep)


def _expr(x):
    """The dimension expression of a traced size or a plain integer, else None."""
    if type(x) is SymbolicSize:
        return x.expr
    if isinstance(x, int | np.integer) and not isinstance(x, bool):
        return int(x)
    return None


def _decision(e, o, op: str, symbol: str) -> bool:
    """``e <op> o`` of two dimension expressions (or ints) for every size (JAX's decision)."""
    text = lambda: f"'{e}' {symbol} '{o}'"  # noqa: E731
    if op == "__ge__":
        return _geq_decision(e, o, text)
    if op == "__le__":
        return _geq_decision(o, e, text)
    if op == "__gt__":
        return not _geq_decision(o, e, text)
    return not _geq_decision(e, o, text)


class SymbolicSize(int):
    """A traced size of a symbolic export: the sample's value and its dimension expression
    (NOTE: [symbolic comparisons at sample sizes]).

    >>> from funcgrad.export import symbolic_shape
    >>> a, b = symbolic_shape("a, b")
    >>> n = SymbolicSize(5, a + 1)
    >>> n, n.expr, n * 2  # (outside a symbolic export's trace: an int)
    (5, a + 1, 10)
    """

    def __new__(cls, value, expr):
        self = int.__new__(cls, value)
        self.expr = expr
        if _tracing[0] and isinstance(expr, DimExpr):  # (a candidate result dimension)
            _computed.append(expr)
        return self

    def extremum(self, other, op: str, reverse: bool = False):
        """``max``/``min`` (``op``) of this size and ``other`` (written first when ``reverse``),
        as ``core.max_dim``: carrying ``max(e1, e2)`` while a symbolic export traces."""
        value = max(int(self), int(other)) if op == "max" else min(int(self), int(other))
        o = _expr(other)
        if not _tracing[0] or o is None:
            return value
        e = _extremum(o, self.expr, op) if reverse else _extremum(self.expr, o, op)
        return SymbolicSize(value, e) if isinstance(e, DimExpr) else value

    def _symbolic(self, other, order: bool = True) -> bool:
        # The user's comparisons always; the library's orderings between two traced sizes only.
        # Called from _compare or _equal, each called from a dunder: frame 3 is the comparison's
        # caller.
        if not _tracing[0]:
            return False
        if order and type(other) is SymbolicSize:
            return True
        return not sys._getframe(3).f_code.co_filename.startswith((*_LIBRARY, *hooks.library_dirs))

    def _arith(self, other, op, rop=False):
        value = getattr(int, op)(self, other)
        o = _expr(other)
        if value is NotImplemented or o is None or not _tracing[0]:
            return value
        name = op.replace("__r", "__", 1) if rop else op
        e = getattr(self.expr, name)(o) if not rop else getattr(DimExpr, "__r" + name[2:])(self.expr, o)
        if e is NotImplemented:
            return value
        return SymbolicSize(value, e) if isinstance(e, DimExpr) else value

    def __add__(self, other):
        return self._arith(other, "__add__")

    def __radd__(self, other):
        return self._arith(other, "__radd__", True)

    def __sub__(self, other):
        return self._arith(other, "__sub__")

    def __rsub__(self, other):
        return self._arith(other, "__rsub__", True)

    def __mul__(self, other):
        return self._arith(other, "__mul__")

    def __rmul__(self, other):
        return self._arith(other, "__rmul__", True)

    def __floordiv__(self, other):
        return self._arith(other, "__floordiv__")

    def __mod__(self, other):
        return self._arith(other, "__mod__")

    def __pow__(self, other, modulo=None):
        if (
            not _tracing[0]
            or modulo is not None
            or not isinstance(other, int | float)
            or isinstance(other, bool)
        ):
            return int.__pow__(self, other, modulo)
        e = self.expr**other  # (JAX's errors for a negative or non-integer power)
        return SymbolicSize(int.__pow__(self, int(other)), e) if isinstance(e, DimExpr) else e

    def __neg__(self):
        return SymbolicSize(-int(self), -self.expr) if _tracing[0] else -int(self)

    @property
    def traced(self) -> bool:
        """Whether a symbolic export is tracing now (this size then carries its expression)."""
        return bool(_tracing[0])

    def decide(self, other, op: str) -> bool:
        """``self <op> other`` (``op``: ``">"``, ``">="``, ``"<"``, ``"<="``) decided for every size
        the scope allows, as JAX decides a comparison its library makes on symbolic sizes (JAX's
        ``InconclusiveDimensionOperation`` where it cannot: ``b - 2 > 0``); the sample's outside
        a trace."""
        name = {">": "__gt__", ">=": "__ge__", "<": "__lt__", "<=": "__le__"}[op]
        o = _expr(other)
        if o is None or not _tracing[0]:
            return getattr(int, name)(self, other)
        return _decision(self.expr, o, name, op)

    def _compare(self, other, op: str, symbol: str):
        o = _expr(other)
        if o is None or not self._symbolic(other):
            return getattr(int, op)(self, other)
        return _decision(self.expr, o, op, symbol)

    def __ge__(self, other):
        return self._compare(other, "__ge__", ">=")

    def __gt__(self, other):
        return self._compare(other, "__gt__", ">")

    def __le__(self, other):
        return self._compare(other, "__le__", "<=")

    def __lt__(self, other):
        return self._compare(other, "__lt__", "<")

    def _equal(self, other):
        o = _expr(other)
        if o is None or not self._symbolic(other, order=False):
            return int.__eq__(self, other)
        return self.expr == o if isinstance(o, DimExpr) else False  # (JAX's: equal expressions only)

    def __eq__(self, other):
        return self._equal(other)

    def __ne__(self, other):
        eq = self._equal(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = int.__hash__

    def __reduce__(self):
        return (int, (int(self),))


def note_computed(out_avals, env: dict) -> None:
    """While a symbolic export traces: the result dimensions of an ``Exported`` it calls, in the
    tracing export's variables (``env``: the callee's variables as such expressions), become
    candidates for its own result dimensions (``_computed``)."""
    if not _tracing[0] or not any(isinstance(v, DimExpr) for v in env.values()):
        return
    for a in out_avals:
        for d in a.shape:
            if isinstance(d, DimExpr):
                e = d.evaluate(env)
                if isinstance(e, DimExpr):
                    _computed.append(e)


def is_symbolic_spec(x) -> bool:
    """Whether an argument specification has a symbolic dimension.

    >>> from funcgrad.export import symbolic_shape
    >>> is_symbolic_spec(ShapeDtypeStruct(symbolic_shape("b, 4"), np.float32)), is_symbolic_spec(np.ones(3))
    (True, False)
    """
    return any(is_symbolic_dim(d) for d in getattr(x, "shape", ()) or ())


def _scope_of(avals, name, names):
    scope = where = None
    for i, a in enumerate(avals):
        for d in a.shape:
            if isinstance(d, DimExpr):
                if scope is None:
                    scope, where = d.scope, i
                elif d.scope is not scope:
                    raise ValueError(  # (JAX's words)
                        f"Invalid mixing of symbolic scopes when exporting {name}.\n"
                        f"Expected current (from {names[where]}) scope {scope}\n"
                        f"and found for '{d}' ({names[i]}) scope {d.scope}\n"
                        "See https://docs.jax.dev/en/latest/export/shape_poly.html"
                        "#user-specified-symbolic-constraints."
                    )
    return scope


def constraint(c: str, scope):
    """``(op, lhs, rhs, text)`` of the constraint string ``c``, its sides as written: parsed
    without the scope's equalities, which would rewrite ``max(a, b) == 4`` to ``4 == 4`` and so
    never check it at a call (JAX checks ``max(a, b) - 4``)."""
    del scope
    for op in ("==", ">=", "<="):  # (JAX's order)
        if op in c:
            written = SymbolicScope()
            lhs, rhs = (_parse_dim(s, written, c) for s in c.split(op, 1))
            return op, lhs, rhs, c
    raise ValueError(f"cannot parse the constraint {c!r}")


def constraints(scope) -> list:
    """``constraint`` of each of ``scope``'s constraint strings (none for no scope)."""
    return [constraint(c, scope) for c in getattr(scope, "constraints", ()) or ()]


def check_constraints(scope, env: dict) -> str | None:
    """The first constraint of ``scope`` that the variable values ``env`` break, or None.

    >>> from funcgrad.export import SymbolicScope, symbolic_shape
    >>> scope = SymbolicScope(["b >= 4"])
    >>> check_constraints(scope, {"b": 3}), check_constraints(scope, {"b": 4})
    ('b >= 4', None)
    """
    for op, lhs, rhs, c in constraints(scope):
        try:
            lv, rv = (e.evaluate(env) if isinstance(e, DimExpr) else int(e) for e in (lhs, rhs))
        except KeyError:  # (a variable the arguments do not determine: the module checks it)
            continue
        ok = lv >= rv if op == ">=" else lv <= rv if op == "<=" else lv == rv
        if not ok:
            return c
    return None


def _check_solvable(avals) -> None:
    """Every dimension variable must follow from the arguments' sizes: some dimension is linear
    in it once the variables found before are known (JAX's rule: ``a^2`` alone is refused)."""
    dims = [(i, k, d) for i, a in enumerate(avals) for k, d in enumerate(a.shape) if isinstance(d, DimExpr)]
    known: set = set()
    changed = True
    while changed:
        changed = False
        for _, _, d in dims:
            unknown = d.variables() - known
            if len(unknown) != 1:
                continue
            (v,) = unknown
            if all(m.count(v) <= 1 and v in m or v not in _names(m) for m in d.terms):
                known.add(v)
                changed = True
    missing = set().union(*(d.variables() for _, _, d in dims)) - known
    if missing:
        specs = ", ".join(
            f"args[{i}].shape = ({', '.join(map(str, a.shape))}{',' if len(a.shape) == 1 else ''})"
            for i, a in enumerate(avals)
        )
        left = ", ".join(
            f"'{d}' for dimension size args[{i}].shape[{k}]" for i, k, d in dims if d.variables() & missing
        )
        raise ValueError(
            f"Cannot solve for values of dimension variables {missing}. We can only solve linear "
            f"uni-variate constraints. Using the following polymorphic shapes specifications: {specs}. "
            f"Unprocessed specifications: {left}. Please see https://docs.jax.dev/en/latest/export/"
            "shape_poly.html#dimension-variables-must-be-solvable-from-the-input-shapes for more details."
        )


def _names(m: tuple) -> set:
    """The variables of a monomial, inside operations (``mod(b, 3)``) too."""
    out = set()
    for name in m:
        atom = _ATOMS.get(name)
        if atom is None:
            out.add(name)
        else:
            out |= set().union(*(a.variables() for a in atom[1] if isinstance(a, DimExpr)))
    return out


def _leaf_aval(x) -> ShapedArray:
    """A specification's aval: its (symbolic) shape and dtype, or an array's or scalar's own."""
    if is_symbolic_spec(x) or not core.is_array_like(x):
        # (the dtype canonical for the mode, as JAX's avals: int64 is int32 without x64)
        return ShapedArray(tuple(x.shape), canonical(np.dtype(x.dtype)), bool(getattr(x, "weak_type", False)))
    return core.get_aval(x)


class _NoFit(Exception):
    pass


def _n_monomials(n: int, degree: int) -> int:
    return sum(len(list(itertools.combinations_with_replacement(range(n), k))) for k in range(degree + 1))


def _fit_dim(rows, monomials, envs, sizes, scope):
    """The polynomial over ``monomials`` that gives ``sizes`` at ``envs`` (None if none does)."""
    if len(set(sizes)) == 1:
        return int(sizes[0])
    coef = np.linalg.lstsq(rows, np.array(sizes, np.float64), rcond=None)[0]
    expr = DimExpr.normalize({m: round(c) for m, c in zip(monomials, coef) if round(c)}, scope)
    for env, size in zip(envs, sizes):
        if (expr.evaluate(env) if isinstance(expr, DimExpr) else expr) != size:
            return None
    return expr


def _gives(expr, envs, sizes) -> bool:
    try:
        return all(expr.evaluate(env) == size for env, size in zip(envs, sizes))
    except (ZeroDivisionError, KeyError):
        return False


def _fit_floordiv(variables, envs, sizes, scope):
    """``floordiv(P, k)`` or ``mod(P, k)`` for a linear ``P`` and k in 2..4 that gives ``sizes``
    (strided slices: ``x[::2]`` has ``floordiv(b + 1, 2)`` elements), or None."""
    monomials = [()] + [(v,) for v in variables]
    rows = np.array([[np.prod([env[v] for v in m], dtype=np.float64) for m in monomials] for env in envs])
    for k in (2, 3, 4):
        coef = np.linalg.lstsq(rows, k * np.array(sizes, np.float64), rcond=None)[0]
        base = {m: round(c) for m, c in zip(monomials, coef)}
        for shift in range(-k, k + 1):
            terms = dict(base)
            terms[()] = terms.get((), 0) + shift
            p = DimExpr.normalize({m: c for m, c in terms.items() if c}, scope)
            if not isinstance(p, DimExpr):
                continue
            expr = p // k
            if all(expr.evaluate(env) == size for env, size in zip(envs, sizes)):
                return expr
        for v in variables:  # (a remainder: mod(b + c, k))
            for c in range(k):
                expr = (DimExpr.variable(v, scope) + c) % k
                if isinstance(expr, DimExpr) and all(expr.evaluate(env) == n for env, n in zip(envs, sizes)):
                    return expr
    return None


class SymbolicExport:
    """What a symbolic export keeps: the symbolic ``in_avals``, the fitted ``out_avals`` and
    ``out_tree``, and ``specialize(avals)``, the concrete export for the arguments' sizes."""

    def __init__(self, fun_jit, args, kwargs, concrete_export):
        self.fun_jit = fun_jit
        self.computed: list = []  # the expressions the traced sizes took (_computed)
        static_key, static_kw, dyn_args, dyn_kwargs = fun_jit._split(args, kwargs)
        self._statics = dict(static_key)
        self._static_kw = dict(static_kw)
        self._n_total = len(dyn_args) + len(self._statics)
        leaves, self.in_tree = tu.tree_flatten((dyn_args, dyn_kwargs))
        self.in_avals = tuple(map(_leaf_aval, leaves))
        self.scope = _scope_of(self.in_avals, fun_jit._name, arg_names(self.in_tree))
        self.variables = sorted(set().union(*(d.variables() for a in self.in_avals for d in a.shape
                                                if isinstance(d, DimExpr))))  # fmt: skip
        _check_solvable(self.in_avals)
        for _, lhs, rhs, _ in constraints(self.scope):
            for v in sorted(set().union(*(e.variables() for e in (lhs, rhs) if isinstance(e, DimExpr)))):
                if v not in self.variables:
                    raise UnexpectedDimVar(  # (JAX's words)
                        f"Encountered dimension variable '{v}' that is not appearing in the shapes of the "
                        "function arguments.\nThe following dimension variables are appearing in the shapes "
                        f"of the function arguments: {self.variables}.\nPlease see https://docs.jax.dev/en/"
                        "latest/export/shape_poly.html#dimension-variables-must-be-solvable-from-the-input-"
                        "shapes for more details."
                    )
        self._concrete_export = concrete_export
        self.not_portable = None  # (why there is no module for all sizes, once portable_module ran)
        self.out_tree, self.out_avals, self.first_env = self._fit()

    # -- tracing at concrete sizes ----------------------------------------------------------------

    def _call_args(self, leaves):
        d_args, d_kwargs = tu.tree_unflatten(self.in_tree, list(leaves))
        it = iter(d_args)
        full = tuple(self._statics[i] if i in self._statics else next(it) for i in range(self._n_total))
        return full, {**d_kwargs, **self._static_kw}

    def _concrete_avals(self, env, traced: bool = False):
        def size(d):
            if not isinstance(d, DimExpr):
                return int(d)
            return SymbolicSize(d.evaluate(env), d) if traced else d.evaluate(env)

        return [ShapedArray(tuple(size(d) for d in a.shape), a.dtype, a.weak_type) for a in self.in_avals]

    def _trace(self, env):
        """The flat result avals and the result tree of the function at the sizes ``env``."""
        trees = []

        def flat_fun(*leaves):
            args, kwargs = self._call_args(leaves)
            # (the jitted function's own Python function: its shapes are the jit's, and the
            # jit's cache is not filled with one program per traced size)
            out_leaves, tree = tu.tree_flatten(self.fun_jit._fun(*args, **kwargs))
            trees.append(tree)
            return out_leaves

        avals = self._concrete_avals(env, traced=True)
        names = [f"args[{i}]" for i in range(len(avals))]
        _tracing[0] += 1
        outer = list(_computed)
        _computed.clear()
        try:
            closed = trace_to_jaxpr(flat_fun, avals, names, f"export({self.fun_jit._name})")
        except InconclusiveDimensionOperation:
            raise
        except Exception as e:
            e.add_note(
                f"(funcgrad traced this symbolic export with the dimension variables {env}: the "
                "function must hold for every size the specification allows)"
            )
            raise
        finally:
            _tracing[0] -= 1
            computed = list(dict.fromkeys(_computed))
            _computed[:] = outer
        self.computed.extend(e for e in computed if e not in self.computed)
        return list(closed.out_avals), trees[0]

    def _envs(self, n: int) -> list[dict]:
        """``n`` distinct sets of variable values that satisfy the constraints and give every
        argument dimension a size >= 1."""
        rng = np.random.default_rng(0)
        envs, seen = [], set()
        for _ in range(4000):
            vals = tuple(int(v) for v in rng.integers(_LOW, _HIGH + 1, len(self.variables)))
            if vals in seen:
                continue
            seen.add(vals)
            env = dict(zip(self.variables, vals))
            try:
                sizes = [d.evaluate(env) for a in self.in_avals for d in a.shape if isinstance(d, DimExpr)]
            except (ZeroDivisionError, KeyError):
                continue
            if min(sizes, default=1) < 1 or check_constraints(self.scope, env) is not None:
                continue
            envs.append(env)
            if len(envs) == n:
                return envs
        if not envs:
            raise ValueError(
                f"export: no sizes of the dimension variables {', '.join(self.variables)} satisfy the "
                f"constraints {list(getattr(self.scope, 'constraints', ()))} with every dimension >= 1"
            )
        return envs

    def _fit(self):
        # Degree 1 first (most shapes are linear: n + 2 traces for n variables), degree 2 only
        # for a result dimension that needs it; every fit is checked on two more traces than it
        # has coefficients.
        envs = self._envs(_n_monomials(len(self.variables), _MAX_DEGREE) + 2)
        traces: list = []
        for degree in range(1, _MAX_DEGREE + 1):
            monomials = [
                m
                for k in range(degree + 1)
                for m in itertools.combinations_with_replacement(self.variables, k)
            ]
            while len(traces) < min(len(monomials) + 2, len(envs)):
                traces.append(self._trace(envs[len(traces)]))
            try:
                return self._fit_all(traces, envs[: len(traces)], monomials, last=degree == _MAX_DEGREE)
            except _NoFit:
                continue
        raise AssertionError("unreachable")

    def _computed_fit(self, envs, sizes):
        """An expression the traced sizes took (an operation: max, min, floordiv, mod; a power
        above the fitted degree) that gives ``sizes`` at ``envs`` (a size that is the same at
        every sample is a constant)."""
        if len(set(sizes)) == 1:
            return None
        # (operations first: b - 5 is computed on the way to max(b - 5, 0), and fits at b >= 5)
        ordered = sorted(self.computed, key=lambda e: not any(n in _ATOMS for m in e.terms for n in m))
        return next((e for e in ordered if _gives(e, envs, sizes)), None)

    def _fit_all(self, traces, envs, monomials, last):
        out_leaves, out_tree = traces[0]
        for leaves, tree in traces[1:]:
            if tree != out_tree or len(leaves) != len(out_leaves):
                raise ValueError(
                    f"export({self.fun_jit._name}): the result's structure depends on the sizes of the "
                    f"dimension variables ({out_tree} and {tree}); JAX raises for such functions too"
                )
        rows = np.array([[np.prod([env[v] for v in m], dtype=np.float64) for m in monomials] for env in envs])
        out_avals = []
        for i, leaf in enumerate(out_leaves):
            if len({len(t[0][i].shape) for t in traces}) != 1 or len({t[0][i].dtype for t in traces}) != 1:
                raise ValueError(
                    f"export({self.fun_jit._name}): the rank or dtype of result {i} depends on the "
                    "sizes of the dimension variables"
                )
            dims = []
            for k in range(len(leaf.shape)):
                sizes = [t[0][i].shape[k] for t in traces]
                # (an operation the traced sizes took first, max_dim(b - 5, 0) or (b + 13) % b: at
                # samples b >= 5 a polynomial b - 5 would fit too)
                expr = self._computed_fit(envs, sizes)
                if expr is None:
                    expr = _fit_dim(rows, monomials, envs, sizes, self.scope)
                if expr is None and not last:
                    raise _NoFit
                if expr is None:
                    expr = _fit_floordiv(self.variables, envs, sizes, self.scope)
                if expr is None:
                    raise ValueError(
                        f"export({self.fun_jit._name}): dimension {k} of result {i} is not a polynomial "
                        f"of degree <= {_MAX_DEGREE} in the dimension variables (sizes {sizes} for "
                        f"{envs}); funcgrad writes symbolic result shapes as such polynomials: export "
                        "for concrete sizes instead"
                    )
                dims.append(expr)
            out_avals.append(ShapedArray(tuple(dims), np.dtype(leaf.dtype), bool(leaf.weak_type)))
        return out_tree, tuple(out_avals), envs[0]

    # -- one module for all sizes ------------------------------------------------------------------

    def portable_module(self, targets, checks, multi: bool) -> bytes | None:
        """The serialized module for every size (NOTE: [one module for all sizes]), or None when
        the lowerings at the samples cannot be merged (``self.not_portable`` says why)."""
        self.not_portable = None
        n = len(self.variables)
        # (as many samples as the result shapes' fit: a quadratic fit, checked on two more)
        envs = self._envs(_n_monomials(n, _MAX_DEGREE) + 2)
        fits = []
        for degree in range(1, _MAX_DEGREE + 1):
            monomials = [
                m
                for k in range(degree + 1)
                for m in itertools.combinations_with_replacement(self.variables, k)
            ]
            if len(envs) > len(monomials):
                rows = np.array(
                    [[np.prod([env[v] for v in m], dtype=np.float64) for m in monomials] for env in envs]
                )
                fits.append((rows, monomials))

        def fit(values):
            values = [int(v) for v in values]
            e = self._computed_fit(envs, values)  # (as the result shapes' fit)
            if e is not None:
                return e
            for rows, monomials in fits:
                e = _fit_dim(rows, monomials, envs, values, self.scope)
                if e is not None:
                    return e
            return _fit_floordiv(self.variables, envs, values, self.scope)

        try:
            samples = [self.specialize(self._concrete_avals(env), targets, checks, raw=True) for env in envs]
            texts = [portable.deserialize(s.mlir_module_serialized, debug_info=True) for s in samples]
            names = arg_names(self.in_tree)
            text = generalize(texts, fit, self.in_avals, 1 if multi else 0, constraints(self.scope), names)
            blob = portable.serialize(text)
            # (checked: refined at the last sample's sizes, it has that sample's result types)
            last = samples[-1]
            arg_types = [aval_type(a) for a in self._concrete_avals(envs[-1])]
            want = portable.embeddable(last.mlir_module_serialized, ([None] if multi else []) + arg_types)
            got = portable.embeddable(blob, ([None] if multi else []) + arg_types)
            if got.out_types != want.out_types:
                raise NotGeneral(f"refined result types {got.out_types} are not {want.out_types}")
        except (NotGeneral, ValueError) as e:
            self.not_portable = str(e)
            return None
        return blob

    # -- calling ----------------------------------------------------------------------------------

    def specialize(self, avals, targets, checks, raw: bool = False):
        """The concrete export for arguments of the shapes ``avals`` (``raw``: of the jitted
        function's Python function, which leaves the jit's cache and retrace count alone)."""
        specs = [
            ShapeDtypeStruct(a.shape, w.dtype, weak_type=w.weak_type) for a, w in zip(avals, self.in_avals)
        ]
        args, kwargs = self._call_args(specs)
        return self._concrete_export(self.fun_jit, targets, checks, args, kwargs, raw=raw)
