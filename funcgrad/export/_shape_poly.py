"""Symbolic dimensions of ``funcgrad.export`` (JAX's ``jax.export`` shape polymorphism):
``symbolic_shape``, ``symbolic_args_specs``, ``is_symbolic_dim``, ``SymbolicScope``.

Layer: surface. Imports numpy and funcgrad's kernel pytrees and ``ShapeDtypeStruct``.

A dimension expression (``DimExpr``) is a polynomial with integer coefficients over named
dimension variables (``b``, ``2*b + 1``, ``b*h``), written and printed as JAX writes it, so the
shapes of a serialized ``Exported`` read back the same in both libraries. It supports the
arithmetic shapes need (``+``, ``-``, ``*`` by integers and expressions, comparisons where they
are decided for every value >= 1 of the variables) and ``evaluate(env)`` to a concrete size.

funcgrad traces with concrete shapes: an ``Exported`` with symbolic dimensions from
``jax.export`` (deserialized) is called here with concrete shapes, where jaxlib's shape
refinement specialises its module (NOTE: [embedding an exported module]); funcgrad's own
``export`` fits symbolic result shapes from traces at several sizes (NOTE: [exporting with
symbolic dimensions]).

>>> b, four = symbolic_shape("b, 4")
>>> is_symbolic_dim(b), is_symbolic_dim(four), str(2 * b + 1)
(True, False, '2*b + 1')
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from funcgrad.export import _dim_parser
from funcgrad.jitting import ShapeDtypeStruct
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import errors as _errors
from funcgrad.kernel import tree_util as tu
from funcgrad.tree_util import _structure_error

__all__ = [
    "DimExpr",
    "InconclusiveDimensionOperation",
    "SymbolicScope",
    "UnexpectedDimVar",
    "is_symbolic_dim",
    "symbolic_args_specs",
    "symbolic_shape",
]


class InconclusiveDimensionOperation(_errors.InconclusiveDimensionOperation, ValueError):
    """A comparison of symbolic dimensions that is not decided for every value of the variables
    (JAX's ``jax.export``'s class, a ``jax.core.InconclusiveDimensionOperation``, with its help text)."""

    _help_msg = """
This error arises for comparison operations with shapes that
are non-constant, and the result of the operation cannot be represented as
a boolean value for all values of the symbolic dimensions involved.

Please see https://docs.jax.dev/en/latest/export/shape_poly.html#comparison-of-symbolic-dimensions-is-partially-supported
for more details.
"""

    def __init__(self, message: str):
        super().__init__(f"{message}{self._help_msg}")


class UnexpectedDimVar(Exception):
    """A dimension variable used where the arguments' shapes cannot give its value (a symbolic
    dimension passed as a static argument), as JAX's."""


class SymbolicScope:
    """The scope of dimension variables: expressions combine only within one scope, and the
    scope's ``constraints`` (strings such as ``"b >= 4"``, ``"b <= 64"``) are kept with them.

    >>> scope = SymbolicScope(["b >= 4"])
    >>> (b,) = symbolic_shape("b", scope=scope)
    >>> b.scope is scope, scope.constraints
    (True, ('b >= 4',))
    """

    def __init__(self, constraints_str: Sequence[str] = ()):
        if isinstance(constraints_str, str):  # (JAX's checks and words)
            raise ValueError(
                f"The symbolic constraints should be a sequence of strings. Got {constraints_str!r}"
            )
        for c in constraints_str:
            if not isinstance(c, str):
                raise ValueError(f"SymbolicScope constraint must be a string: got {c!r}")
            if not any(op in c for op in ("==", ">=", "<=")):
                raise ValueError("Constraint parsing error: must contain one of '==' or '>=' or '<='")
        self.constraints = tuple(constraints_str)
        for c in self.constraints:  # (a constraint that no size satisfies: JAX's error at once)
            op = next(op for op in ("==", ">=", "<=") if op in c)
            lhs, rhs = (_parse_dim(t, self, t) for t in c.split(op, 1))
            diff = lhs - rhs if op != "<=" else rhs - lhs
            if not isinstance(diff, DimExpr) and (diff != 0 if op == "==" else diff < 0):
                raise ValueError(f"Unsatisfiable explicit constraint: {c}")

    def __repr__(self):
        return f"SymbolicScope({list(self.constraints)})"


class DimExpr:
    """A symbolic dimension: ``{monomial: coefficient}``, a monomial being a sorted tuple of
    variable names (``()`` is the constant term)."""

    __slots__ = ("terms", "scope")

    def __init__(self, terms: dict, scope: SymbolicScope):
        self.terms = {m: c for m, c in terms.items() if c != 0}
        self.scope = scope

    # -- construction ------------------------------------------------------------------------

    @staticmethod
    def variable(name: str, scope: SymbolicScope) -> DimExpr:
        return DimExpr({(name,): 1}, scope)

    def _lift(self, other) -> DimExpr:
        if isinstance(other, DimExpr):
            if other.scope is not self.scope:
                raise ValueError(
                    f"Invalid mixing of symbolic scopes: {self} and {other} come from different "
                    "SymbolicScope objects; create both shapes with the same scope= (or in one "
                    "symbolic_shape string)"
                )
            return other
        if isinstance(other, int | np.integer):
            return DimExpr({(): int(other)}, self.scope)
        return NotImplemented

    @staticmethod
    def normalize(terms: dict, scope) -> DimExpr | int:
        e = DimExpr(terms, scope)
        subs = _substitutions(scope)
        if subs and e.terms:
            e = _substitute(e, subs)
        if not e.terms:
            return 0
        if set(e.terms) == {()}:
            return e.terms[()]
        return e

    # -- arithmetic ---------------------------------------------------------------------------

    def __add__(self, other):
        o = self._lift(other)
        if o is NotImplemented:
            return o
        t = dict(self.terms)
        for m, c in o.terms.items():
            t[m] = t.get(m, 0) + c
        return DimExpr.normalize(t, self.scope)

    __radd__ = __add__

    def __neg__(self):
        return DimExpr.normalize({m: -c for m, c in self.terms.items()}, self.scope)

    def __sub__(self, other):
        o = self._lift(other)
        return o if o is NotImplemented else self + (-o if isinstance(o, DimExpr) else -o)

    def __rsub__(self, other):
        return (-self) + other

    def __mul__(self, other):
        o = self._lift(other)
        if o is NotImplemented:
            return o
        t: dict = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in o.terms.items():
                m = tuple(sorted(m1 + m2))
                t[m] = t.get(m, 0) + c1 * c2
        return DimExpr.normalize(t, self.scope)

    __rmul__ = __mul__

    # -- comparison ---------------------------------------------------------------------------

    def _nonneg(self, other) -> bool | None:
        """Whether ``self - other >= 0`` for every value >= 1 of the variables that satisfies the
        scope's constraints (None: undecided). A constraint ``e1 >= e2`` (or a sum of two) is
        subtracted from the difference when the difference alone is undecided."""
        d = self - other
        r = DimExpr._nonneg_alone(d)
        if r is not None or not isinstance(d, DimExpr):
            return r
        known = _constraint_exprs(self.scope)
        sums = known + [a + b for i, a in enumerate(known) for b in known[i:]]
        for c in sums:
            if DimExpr._nonneg_alone(d - c) is True:
                return True
            if DimExpr._nonneg_alone(-d - 1 - c) is True:
                return False
        return None

    @staticmethod
    def _nonneg_alone(d, depth: int = 0) -> bool | None:
        if not isinstance(d, DimExpr):
            return d >= 0
        if any(n in _ATOMS for m in d.terms for n in m):
            return _nonneg_with_operations(d, depth)
        # With every variable >= 1, a polynomial with non-negative coefficients is at least the
        # sum of its coefficients; one with only non-positive non-constant terms, at most that.
        low = sum(d.terms.values())
        if all(c >= 0 for m, c in d.terms.items() if m):
            return True if low >= 0 else None
        if all(c <= 0 for m, c in d.terms.items() if m):
            return False if low < 0 else None
        return None

    def __ge__(self, other):
        return _geq_decision(self, other, lambda: f"'{self}' >= '{other}'")

    def __le__(self, other):
        return _geq_decision(other, self, lambda: f"'{self}' <= '{other}'")

    def __gt__(self, other):
        return not _geq_decision(other, self, lambda: f"'{self}' > '{other}'")

    def __lt__(self, other):
        return not _geq_decision(self, other, lambda: f"'{self}' < '{other}'")

    def __eq__(self, other):
        if isinstance(other, DimExpr):
            return self.scope is other.scope and self.terms == other.terms
        if isinstance(other, int | np.integer):
            return False  # a non-constant expression is not a number
        return NotImplemented

    def __hash__(self):
        return hash(tuple(sorted(self.terms.items())))

    # -- evaluation and printing ------------------------------------------------------------------

    def evaluate(self, env: dict) -> int:
        """The size for the variable values ``env`` (``{"b": 3}``); for expressions of other
        variables, the expression they give (a substitution).

        >>> (b,) = symbolic_shape("b")
        >>> (c,) = symbolic_shape("c")
        >>> (2 * b + 1).evaluate({"b": 3}), (2 * b + 1).evaluate({"b": c - 1})
        (7, 2*c - 1)
        """
        total = 0
        for m, c in self.terms.items():
            v = c
            for name in m:
                v *= _value_of(name, env)
            total += v
        return total

    def variables(self) -> set[str]:
        """The dimension variables the expression depends on (inside operations too)."""
        out: set[str] = set()
        for m in self.terms:
            for name in m:
                if name in _ATOMS:
                    for arg in _ATOMS[name][1]:
                        out |= arg.variables() if isinstance(arg, DimExpr) else set()
                else:
                    out.add(name)
        return out

    def _divmod_atom(self, other, op: str):
        o = other if isinstance(other, DimExpr) else int(other)
        # (a constant divisor of every non-constant coefficient: the constant term alone is divided,
        # as JAX's: (2*a + 1) // 2 is a, and its mod 1)
        if isinstance(o, int) and o != 0 and all(c % o == 0 for m, c in self.terms.items() if m):
            const = self.terms.get((), 0)
            if op == "mod":
                return const % o
            terms = {m: c // o for m, c in self.terms.items() if m}
            terms[()] = const // o
            return DimExpr.normalize(terms, self.scope)
        return _atom(op, (self, o), self.scope)

    def __floordiv__(self, other):
        return self._divmod_atom(other, "floordiv")

    def __rfloordiv__(self, other):
        return _atom("floordiv", (int(other), self), self.scope)

    def __mod__(self, other):
        return self._divmod_atom(other, "mod")

    def __rmod__(self, other):
        return _atom("mod", (int(other), self), self.scope)

    def __pow__(self, power, modulo=None):
        """``self ** power`` for a non-negative integer ``power``, as JAX's (its errors otherwise)."""
        if modulo is not None:
            raise NotImplementedError("__pow__ modulo not implemented")
        if power != int(power):
            raise ValueError(
                f"Symbolic dimension cannot be raised to non-integer powers: '{self}' ** '{power}'"
            )
        if power < 0:
            raise ValueError(f"Symbolic dimension cannot be raised to negative powers: '{self}' ** '{power}'")
        out = 1
        for _ in range(int(power)):
            out = self * out
        return out

    def __divmod__(self, other):
        return self // other, self % other

    def __rdivmod__(self, other):
        return other // self, other % self

    def max(self, other):
        """``max(self, other)``: one of them where the comparison is decided, else JAX's
        ``max(...)`` operation (``core.max_dim``)."""
        return _extremum(self, other, "max")

    def rmax(self, other):
        return _extremum(other, self, "max")

    def min(self, other):
        """``min(self, other)`` (``core.min_dim``), as ``max``."""
        return _extremum(self, other, "min")

    def rmin(self, other):
        return _extremum(other, self, "min")

    def __int__(self):
        raise InconclusiveDimensionOperation(
            f"Symbolic dimension '{self}' used where a concrete integer is needed"
        )

    def __str__(self):
        def mono(m):
            parts = []
            for name in dict.fromkeys(m):
                k = m.count(name)
                parts.append(name if k == 1 else f"{name}^{k}")
            return "*".join(parts)

        monos = sorted((m for m in self.terms if m), key=functools.cmp_to_key(_term_cmp), reverse=True)
        out = []
        for m in monos:
            c = self.terms[m]
            body = mono(m) if abs(c) == 1 else f"{abs(c)}*{mono(m)}"
            out.append(("- " if c < 0 else "+ ") + body)
        const = self.terms.get((), 0)
        if const:
            out.append(("- " if const < 0 else "+ ") + str(abs(const)))
        s = " ".join(out)
        return s[2:] if s.startswith("+ ") else s  # (JAX writes a leading minus as "- b + 5")

    __repr__ = __str__


# Operations that are not polynomials (``floordiv``, ``mod``, ``max``, ``min``), as JAX writes
# them: each distinct application is an opaque factor named by its text (``floordiv(b + 1, 2)``),
# recorded here with its operands so that it evaluates and names its variables.
_ATOMS: dict[str, tuple[str, tuple]] = {}
_OPS = {
    "floordiv": lambda a, b: a // b,
    "mod": lambda a, b: a % b,
    "max": max,
    "min": min,
}


def _geq_decision(e1, e2, describe) -> bool:
    """``e1 >= e2`` for every value of the dimension variables the scope allows, or JAX's
    ``InconclusiveDimensionOperation`` naming the comparison as written (``describe()``).

    >>> a, b = symbolic_shape("a, b")
    >>> a + 1 >= 1, a >= 1, 2 * a + b >= 3
    (True, True, True)
    >>> try:
    ...     a + 1 >= b
    ... except InconclusiveDimensionOperation as e:
    ...     print(str(e).splitlines()[0])
    Symbolic dimension comparison 'a + 1' >= 'b' is inconclusive.
    """
    if isinstance(e1, DimExpr):
        scope, decided = e1.scope, e1._nonneg(e2)
    elif isinstance(e2, DimExpr):
        scope, decided = e2.scope, (-e2)._nonneg(-int(e1))
    else:
        return int(e1) >= int(e2)
    if decided is None:
        constraints = getattr(scope, "constraints", ())
        where = (
            "\nUsing symbolic scope with constraints:\n" + "\n".join(f"  {c}" for c in constraints)
            if constraints
            else ""
        )
        raise InconclusiveDimensionOperation(
            f"Symbolic dimension comparison {describe()} is inconclusive.{where}"
        )
    return decided


def _extremum(e1, e2, op: str):
    """JAX's ``max``/``min`` of two dimensions (``e1`` first in the written operation): the larger
    (smaller) one where ``e1 - e2`` has a known sign, else the operation."""
    e = e1 if isinstance(e1, DimExpr) else e2

    def nonneg(d):
        return d._nonneg(0) if isinstance(d, DimExpr) else d >= 0

    if nonneg(e1 - e2):
        return e1 if op == "max" else e2
    if nonneg(e2 - e1):
        return e2 if op == "max" else e1
    return _atom(op, (e1, e2), e.scope)


# NOTE: [bounds of dimension operations]
# A variable is >= 1; an operation is not: ``mod(b, 4)`` is 0..3, ``floordiv(b, 4)`` may be 0,
# ``max(15 - a, 0)`` is 0..14. An expression holding operations is decided by interval arithmetic
# over its terms, each operation bounded by its operands' bounds; where that is undecided, a
# ``max`` with a positive coefficient (or a ``min`` with a negative one) is replaced by each of its
# operands in turn, as JAX's decision procedure uses ``max(a, b) >= a``.


def _bounds(e) -> tuple[float, float]:
    """Lower and upper bounds of ``e`` for every value >= 1 of the variables."""
    if not isinstance(e, DimExpr):
        return e, e
    lo = hi = 0.0
    for m, c in e.terms.items():
        tlo, thi = float(c), float(c)
        for name in m:
            tlo, thi = _mul_bounds((tlo, thi), _factor_bounds(name))
        lo, hi = lo + tlo, hi + thi
    return lo, hi


def _mul_bounds(x, y):
    prods = [
        a * b for a in x for b in y if not ((a == 0 and abs(b) == np.inf) or (b == 0 and abs(a) == np.inf))
    ]
    prods = prods or [0.0]
    return min(prods), max(prods)


def _rescoped(a, scope):
    # (an operation's operands are recorded once per text: the same text in another scope)
    return DimExpr(a.terms, scope) if isinstance(a, DimExpr) and a.scope is not scope else a


def _factor_bounds(name: str) -> tuple[float, float]:
    if name not in _ATOMS:
        return 1.0, np.inf
    op, (a, b) = _ATOMS[name]
    (alo, ahi), (blo, bhi) = _bounds(a), _bounds(b)
    if op == "max":
        return max(alo, blo), max(ahi, bhi)
    if op == "min":
        return min(alo, blo), min(ahi, bhi)
    if blo == bhi and blo > 0:  # a constant positive divisor
        k = blo
        if op == "mod":
            return 0.0, k - 1
        return np.floor(alo / k) if alo != -np.inf else -np.inf, np.floor(
            ahi / k
        ) if ahi != np.inf else np.inf
    return -np.inf, np.inf


def _nonneg_with_operations(d, depth: int) -> bool | None:
    lo, hi = _bounds(d)
    if lo >= 0:
        return True
    if hi < 0:
        return False
    if depth > 2:
        return None
    for m, c in d.terms.items():
        if len(m) != 1 or m[0] not in _ATOMS:
            continue
        op, args = _ATOMS[m[0]]
        if op not in ("max", "min"):
            continue
        rest = DimExpr.normalize({t: v for t, v in d.terms.items() if t != m}, d.scope)
        below = (op == "max") == (c > 0)  # c*op(a, b) >= c*a and >= c*b
        args = [_rescoped(a, d.scope) for a in args]
        for a in args:
            r = DimExpr._nonneg_alone(rest + c * a, depth + 1)
            if below and r is True:  # d >= rest + c*a >= 0
                return True
            if not below and r is False:  # d <= rest + c*a < 0
                return False
        # c*op(a, b) is one of c*a, c*b: d has a sign where both have it
        signs = {DimExpr._nonneg_alone(rest + c * a, depth + 1) for a in args}
        if len(signs) == 1 and None not in signs:
            return signs.pop()
    return None


def _atom(op: str, args: tuple, scope) -> DimExpr | int:
    if all(not isinstance(a, DimExpr) for a in args):
        return _OPS[op](*args)
    # (JAX's operands are expressions: a negative constant prints as "- 1")
    name = f"{op}({', '.join(str(a) if isinstance(a, DimExpr) or a >= 0 else f'- {-a}' for a in args)})"
    _ATOMS.setdefault(name, (op, args))
    return DimExpr({(name,): 1}, scope)


def _substitutions(scope) -> list:
    """The scope's equality constraints ``lhs == rhs`` whose left side is one term (``a * b``,
    ``4 * a``, ``floordiv(a, b)``): ``(monomial, coefficient, rhs)``, applied to every expression
    of the scope as JAX does (parsed once; none while parsing)."""
    cached = getattr(scope, "_subs", None)
    if cached is not None:
        return cached
    scope._subs = []  # (while the constraints themselves are parsed)
    out = []
    for c in getattr(scope, "constraints", ()) or ():
        if "==" in c:
            lhs, rhs = (_parse_dim(t, scope, c) for t in c.split("==", 1))
            if isinstance(lhs, DimExpr) and len(lhs.terms) == 1 and () not in lhs.terms:
                ((mono, coef),) = lhs.terms.items()
                out.append((mono, coef, rhs))
    scope._subs = out
    return out


def _substitute(e: DimExpr, subs) -> DimExpr:
    """``e`` with each term that contains a substitution's monomial (with a multiple of its
    coefficient) rewritten through its right-hand side."""
    changed, rounds = True, 0
    while changed and rounds < 64:  # (a right side that holds its left side stops here)
        changed, rounds = False, rounds + 1
        for mono, coef, rhs in subs:
            for m, c in list(e.terms.items()):
                rest = list(m)
                if c % coef or not all(rest.count(v) >= mono.count(v) for v in set(mono)):
                    continue
                for v in mono:
                    rest.remove(v)
                terms = dict(e.terms)
                del terms[m]
                rhs_terms = rhs.terms if isinstance(rhs, DimExpr) else {(): rhs}
                for m2, c2 in rhs_terms.items():
                    key = tuple(sorted(tuple(rest) + m2))
                    terms[key] = terms.get(key, 0) + (c // coef) * c2
                e = DimExpr(terms, e.scope)
                changed = True
                break
            if changed:
                break
    return e


def _constraint_exprs(scope) -> list:
    """The scope's constraints as expressions known to be >= 0 (``a >= b`` is ``a - b``; ``==``
    gives both signs), parsed once per scope."""
    cached = getattr(scope, "_exprs", None)
    if cached is not None:
        return cached
    scope._exprs = []  # (while the constraints themselves are parsed: max(a, b) decides with none)
    out: list = []
    for c in getattr(scope, "constraints", ()) or ():
        for op in (">=", "<=", "=="):
            if op in c:
                lhs, rhs = (_parse_dim(t, scope, c) for t in c.split(op, 1))
                diff = lhs - rhs if op != "<=" else rhs - lhs
                out.append(diff)
                if op == "==":
                    out.append(-diff)
                break
    scope._exprs = out
    return out


# JAX prints the terms of an expression largest first in its syntactic order: a term's size
# (1 + exponent * factor size per factor: a variable is 1, an operation 1 + its operands' sizes),
# then its factors in name order (``c + b + a``, ``a*b + c^2 + a + 3``).


def _cmp(x, y) -> int:
    return (x > y) - (x < y)


def _expr_size(e) -> int:
    if not isinstance(e, DimExpr):
        return 1
    return sum(1 + abs(c) * _term_size(m) for m, c in e.terms.items())


def _factor_size(name: str) -> int:
    if name in _ATOMS:
        return 1 + sum(_expr_size(a) for a in _ATOMS[name][1])
    return 1


def _factors(m: tuple) -> list[tuple[str, int]]:
    return sorted((n, m.count(n)) for n in set(m))


def _term_size(m: tuple) -> int:
    return sum(1 + k * _factor_size(n) for n, k in _factors(m))


def _term_cmp(m1: tuple, m2: tuple) -> int:
    if c := _cmp(_term_size(m1), _term_size(m2)):
        return c

    # (JAX's terms keep their factors largest first: a*b^2 is [b^2, a], so it is above a^2*b)
    def desc(m):
        return sorted(_factors(m), key=lambda f: (_factor_size(f[0]), f[0]), reverse=True)

    for (n1, k1), (n2, k2) in zip(desc(m1), desc(m2)):
        if c := _cmp(_factor_size(n1), _factor_size(n2)) or _cmp(n1, n2) or _cmp(k1, k2):
            return c
    return _cmp(len(set(m1)), len(set(m2)))


def _value_of(name: str, env: dict):
    # (``env``'s values are sizes, or expressions of another scope's variables: a substitution)
    if name in _ATOMS:
        op, args = _ATOMS[name]
        vals = [a.evaluate(env) if isinstance(a, DimExpr) else int(a) for a in args]
        if any(isinstance(v, DimExpr) for v in vals):
            return _extremum(*vals, op) if op in ("max", "min") else _OPS[op](*vals)
        return int(_OPS[op](*vals))
    if name not in env:
        raise KeyError(f"no value for the dimension variable {name!r}")
    value = env[name]
    return value if isinstance(value, DimExpr) else int(value)


def is_symbolic_dim(p) -> bool:
    """Whether ``p`` is a symbolic dimension (not an integer).

    >>> is_symbolic_dim(symbolic_shape("n")[0]), is_symbolic_dim(3)
    (True, False)
    """
    return isinstance(p, DimExpr)


def _operation(scope):
    def operation(op: str, e1, e2):
        if op in ("max", "min"):  # (JAX's parser: core.max_dim/min_dim, simplified where decided)
            e = e1 if isinstance(e1, DimExpr) else e2
            if not isinstance(e, DimExpr):
                return max(e1, e2) if op == "max" else min(e1, e2)
            return _extremum(e1, e2, op)
        return _atom(op, (e1, e2), scope)

    return operation


def _parse_dim(text: str, scope: SymbolicScope, where: str):
    """One dimension expression of ``scope`` (a side of the constraint ``where``)."""
    return _dim_parser.parse_dim(
        text.strip(), repr(where), lambda n: DimExpr.variable(n, scope), _operation(scope)
    )


def symbolic_shape(
    shape_spec: str | None,
    *,
    constraints: Sequence[str] = (),
    scope: SymbolicScope | None = None,
    like: Sequence[int | None] | None = None,
) -> tuple:
    """The shape that the string ``shape_spec`` describes, dimensions separated by commas: an
    integer, or an expression of dimension variables (``"b, 4"``, ``"(b, 2*b + 1)"``). ``_`` and
    a trailing ``...`` take the sizes of ``like``. ``constraints`` make a new scope; ``scope``
    joins an existing one (not both).

    >>> symbolic_shape("b, 2*b, 4")
    (b, 2*b, 4)
    >>> symbolic_shape("_, b", like=(3, None))
    (3, b)
    """
    spec_repr = repr(shape_spec)
    if shape_spec is None:
        shape_spec = "..."
    elif not isinstance(shape_spec, str):  # (JAX's words)
        raise ValueError(f"polymorphic shape spec should be None or a string. Found {spec_repr}.")
    if scope is None:
        # (each call its own scope, as JAX's: shapes that share variables come from one string
        # or one scope=)
        scope = SymbolicScope(constraints)
    elif constraints:
        raise ValueError("Cannot specify both a `scope` and `constraints`.")
    return _dim_parser.parse_shape(
        shape_spec, like, spec_repr, lambda n: DimExpr.variable(n, scope), _operation(scope)
    )


def symbolic_args_specs(
    args, shapes_specs, constraints: Sequence[str] = (), scope: SymbolicScope | None = None
):
    """``ShapeDtypeStruct`` stand-ins for ``args`` (a pytree of arrays or shape-and-dtype
    objects) with the shapes ``shapes_specs`` give (one string for all, or a pytree prefix of
    ``args`` with one string or None per array); one scope for all.

    >>> import numpy as np
    >>> symbolic_args_specs((np.ones((3, 4)), np.ones(4)), ("b, 4", None))
    (ShapeDtypeStruct(shape=(b, 4), dtype=float64), ShapeDtypeStruct(shape=(4,), dtype=float64))
    """
    if constraints and scope is not None:
        raise ValueError("symbolic_args_specs: pass constraints= or scope=, not both")
    if scope is None:
        scope = SymbolicScope(constraints)
    leaves, tree = tu.tree_flatten(args)
    if isinstance(args, tuple) and isinstance(shapes_specs, list):  # (JAX's: a list for a tuple)
        shapes_specs = tuple(shapes_specs)
    if isinstance(shapes_specs, str) or shapes_specs is None:
        specs = [shapes_specs] * len(leaves)
    else:
        is_spec = lambda s: s is None or isinstance(s, str)  # noqa: E731 - a string or None
        try:
            specs = tu.broadcast_prefix(shapes_specs, args, is_leaf=is_spec)
        except ValueError as e:  # (JAX's words: the key path of the mismatch)
            raise _structure_error(
                "export.symbolic_args_specs shapes_specs", shapes_specs, is_spec, args, e
            ) from None
    out = []
    for leaf, spec in zip(leaves, specs):
        shape = tuple(np.shape(leaf)) if not hasattr(leaf, "shape") else tuple(leaf.shape)
        dtype = leaf.dtype if hasattr(leaf, "dtype") else np.asarray(leaf).dtype
        if not _dt.x64_enabled:  # (JAX's specs take the dtype an array would have: float32 in x32)
            dtype = _dt.canonical(np.dtype(dtype))
        if spec is None:
            out.append(ShapeDtypeStruct(shape, dtype))
        else:
            out.append(ShapeDtypeStruct(symbolic_shape(spec, scope=scope, like=shape), dtype))
    return tu.tree_unflatten(tree, out)
