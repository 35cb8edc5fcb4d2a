"""Taylor-mode higher-order differentiation: ``jet`` (as ``jax.experimental.jet``) and
``taylor_derivatives``.

Layer: surface. Imports the kernel (``taylor``, ``ad``, ``core``, ``tree_util``, ``dtypes``), the
surface's argument helpers and ``primitives`` (for the factorial scalings).

``jet(f, primals, series)`` pushes a truncated power series through ``f`` once (the kernel's
``JetTrace``, ``funcgrad/kernel/taylor.py``): the ``K``-th derivative costs ``O(K^2)`` operations,
where ``K`` nested ``grad``/``jvp`` cost ``O(2^K)``. It composes with ``jit``, ``vmap``, ``grad``
and itself, and -- unlike ``jax.experimental.jet`` -- goes through ``cond``, ``scan``,
``while_loop``, ``custom_jvp`` functions (by their JVP rule), ``checkpoint`` and ``jit``.

Conventions are JAX's: with ``factorial_scaled=True`` (the default) term ``k`` (1-based) of a series
is the ``k``-th derivative along the path, ``x(t) = x0 + sum_k x_k t^k / k!``; with
``factorial_scaled=False`` it is the Taylor coefficient ``x_k`` of ``x0 + sum_k x_k t^k``. The kernel
works in Taylor coefficients (NOTE: [Taylor coefficients]); the conversion happens here, once.
A term that is a concrete zero (``0.0``, ``np.zeros(...)``) becomes a symbolic zero (NOTE: [zero
series]), so the common seed ``(v, 0, 0, ...)`` costs only what it must.
"""

from __future__ import annotations

import collections
import functools
import math
import threading
import weakref
from collections.abc import Callable, MutableMapping

import numpy as np

from funcgrad import primitives as _primitives
from funcgrad._api_util import canonicalize, check_array_leaves, flat_fun, to_public
from funcgrad.kernel import ad, core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.taylor import JetTrace, JetTracer, jet_flat
from funcgrad.kernel.tree_util import (
    register_pytree_node,
    tree_flatten,
    tree_structure,
    tree_unflatten,
    treedef_is_leaf,
)
from funcgrad.primitives import elementwise as _ew
from funcgrad.primitives import structure as _st

__all__ = [
    "JetTrace",
    "JetTracer",
    "ZeroSeries",
    "ZeroTerm",
    "call_param_updaters",
    "def_comp",
    "def_deriv",
    "deflinear",
    "defzero",
    "deriv_prop",
    "fact",
    "jet",
    "jet2",
    "jet_rules",
    "linear_prop",
    "register_pytree_node",
    "safe_zip",
    "taylor_derivatives",
    "tree_flatten",
    "tree_structure",
    "tree_unflatten",
    "treedef_is_leaf",
    "unzip2",
    "weakref_lru_cache",
    "zero_prop",
    "zero_series",
    "zero_term",
]
# Re-exported at funcgrad's top level (NOTE: [derived namespaces]).
_REEXPORTED = ("jet", "taylor_derivatives")


class ZeroTerm:
    """The type of ``zero_term``: a term known to be zero (as ``jax.experimental.jet``'s)."""

    def __repr__(self):
        return "zero_term"


class ZeroSeries:
    """The type of ``zero_series``: a whole series known to be zero, in place of an argument's
    terms (as ``jax.experimental.jet``'s)."""

    def __repr__(self):
        return "zero_series"


zero_term = ZeroTerm()
zero_series = ZeroSeries()
# Leaves-free pytrees, as in JAX, so a series holding them can be flattened and rebuilt.
register_pytree_node(ZeroTerm, lambda z: ((), None), lambda _, xs: zero_term)
register_pytree_node(ZeroSeries, lambda z: ((), None), lambda _, xs: zero_series)


def fact(n):
    """``n!`` as a weakly typed float scalar (``jax.experimental.jet.fact``): like a Python float,
    it takes the dtype of the array it scales (``x32 / fact(3)`` stays float32).

    >>> float(fact(5))
    120.0
    """
    return to_public(float(math.factorial(int(n))))


def jet(fun: Callable, primals, series, factorial_scaled: bool = True):
    """Taylor-mode derivatives: ``(fun(*primals), series_out)``.

    ``primals`` is a tuple of arguments (pytrees of arrays); ``series[i]`` is a sequence of ``K``
    terms for ``primals[i]``, each with its structure (or an array holding the ``K`` terms along
    its leading axis; a scalar term of an array primal is that value everywhere). Integer and
    boolean arguments do not vary: their terms are ignored. ``series_out`` has ``fun``'s output structure
    with a list of ``K`` terms at each leaf. With ``x(t)`` the input path described by the series,
    ``series_out`` describes ``fun(x(t))`` (module docstring for the scaling).

    >>> import funcgrad.numpy as fnp
    >>> y, (y1, y2, y3) = jet(fnp.sin, (0.0,), ((1.0, 0.0, 0.0),))
    >>> [round(float(v), 6) for v in (y, y1, y2, y3)]  # sin, cos, -sin, -cos at 0
    [0.0, 1.0, -0.0, -1.0]
    """
    if not isinstance(primals, tuple | list) or not isinstance(series, tuple | list):
        raise TypeError(
            "jet: primals and series must be tuples or lists with one entry per argument, got "
            f"{type(primals).__name__} and {type(series).__name__}; write jet(f, (x,), ((x1, x2),))"
        )
    if len(primals) != len(series):
        raise ValueError(
            f"jet: got {len(primals)} primals but {len(series)} series; give one sequence of terms "
            "per argument (jet(f, (x, y), ((x1, x2), (y1, y2))))"
        )
    series = [_terms_of(terms) for terms in series]
    for i, terms in enumerate(series):
        if terms is zero_series:
            continue
        if not isinstance(terms, tuple | list):
            raise TypeError(
                f"jet: series[{i}] must be a tuple or list of terms, got {type(terms).__name__}; "
                "write jet(f, (x,), ((x1, x2),))"
            )
    orders = {len(terms) for terms in series if terms is not zero_series}
    if len(orders) > 1:
        raise ValueError(
            "jet terms have inconsistent lengths for different arguments: "
            + ", ".join(f"series[{i}] has {len(t)}" for i, t in enumerate(series) if t is not zero_series)
        )
    order = orders.pop() if orders else 0
    series = [
        [tu.tree_map(lambda _: zero_term, x) for _ in range(order)] if terms is zero_series else terms
        for x, terms in zip(primals, series)
    ]
    flat_p, in_tree = tu.tree_flatten(tuple(primals))
    check_array_leaves("jet", flat_p, lambda: _leaf_names(primals), "primal")
    flat_p = canonicalize(flat_p)
    # One list of terms per primal leaf: term k of argument i has argument i's structure.
    flat_s: list[list] = [[] for _ in flat_p]
    start = 0
    for i, (x, terms) in enumerate(zip(primals, series)):
        tree_x = tu.tree_structure(x)
        n = tree_x.num_leaves
        for k, term in enumerate(terms):
            leaves, tree_t = tu.tree_flatten(term, is_leaf=lambda v: v is zero_term)
            if tree_t != tree_x:
                raise ValueError(
                    f"jet: term {k} for argument {i} has structure {tree_t}, but the primal has "
                    f"structure {tree_x}; each term must have its argument's structure"
                )
            for j, leaf in enumerate(leaves):
                flat_s[start + j].append(leaf)
        start += n
    scales = [1.0 / math.factorial(k + 1) if factorial_scaled else 1.0 for k in range(order)]
    names = _leaf_names(primals)
    kernel_series = [
        [_term_in(t, p, c, names[i], k) for k, (t, c) in enumerate(zip(terms, scales))]
        for i, (p, terms) in enumerate(zip(flat_p, flat_s))
    ]
    flat, store = flat_fun(fun, in_tree, transform="jet")
    out_p, out_s = jet_flat(flat, flat_p, kernel_series, order)
    out_tree = store["out_tree"]
    scales_out = [float(math.factorial(k + 1)) if factorial_scaled else 1.0 for k in range(order)]
    primals_out = tu.tree_unflatten(out_tree, [to_public(p) for p in out_p])
    series_out = tu.tree_unflatten(
        out_tree, [[_term_out(t, p, c) for t, c in zip(s, scales_out)] for p, s in zip(out_p, out_s)]
    )
    return primals_out, series_out


def jet2(fun: Callable, primals, series):
    """``jet`` with plain Taylor coefficients (``factorial_scaled=False``), as JAX's ``jet2``.

    >>> import funcgrad.numpy as fnp
    >>> y, (c1, c2) = jet2(fnp.exp, (0.0,), ((1.0, 0.0),))
    >>> float(c1), float(c2)  # exp(t) = 1 + t + t^2/2 + ...
    (1.0, 0.5)
    """
    return jet(fun, primals, series, factorial_scaled=False)


def _terms_of(terms):
    """An argument's terms as a list: as JAX's ``jet`` does, an array of terms (``K`` along its
    leading axis, e.g. ``np.stack([x1, x2, x3])``) is the list of its rows."""
    if terms is zero_series or isinstance(terms, tuple | list) or not core.is_array_like(terms):
        return terms
    if np.ndim(terms) == 0:
        return terms  # not a sequence: the error below names it
    return [terms[k] for k in range(np.shape(terms)[0])]


def _leaf_names(primals) -> list[str]:
    return [f"primals{tu.keystr(path)}" for path, _ in tu.tree_leaves_with_path(tuple(primals))]


def _term_in(term, primal, c: float, name: str, k: int):
    """A user's term as the kernel's Taylor coefficient (a concrete zero becomes ``Zero``)."""
    aval = core.get_aval(primal)
    if term is zero_term:
        return ad.Zero(ad.tangent_aval(aval))
    if not core.is_array_like(term):
        raise TypeError(f"jet: term {k} of {name} is a {type(term).__name__}, which is not an array")
    t_aval = core.get_aval(term)
    # A scalar term stands for that value everywhere (as jax's jet broadcasts it): a seed
    # ``(1.0, 0.0)`` for an array primal is the direction of all ones.
    scalar = t_aval.shape == () and aval.shape != ()
    if t_aval.shape != aval.shape and not scalar:
        raise ValueError(
            f"jet: term {k} of {name} has shape {t_aval.shape} but the primal has shape {aval.shape}; "
            "every term must have its primal's shape (or be a scalar)"
        )
    if not _dt.is_inexact(aval.dtype):
        # Integer and boolean inputs do not vary along a path (they have float0 tangents).
        return ad.Zero(ad.tangent_aval(aval))
    value = core.concrete_value(term)
    if value is not None and not np.any(value):
        return ad.Zero(ad.tangent_aval(aval))
    if t_aval.dtype != aval.dtype:
        term = _ew.convert_element_type(term, aval.dtype)
    if scalar:
        term = _st.broadcast_in_dim(term, aval.shape, ())
    return _scaled(term, c)


def _scaled(term, c: float):
    """``term * c``, of the term's type: a weakly typed term (a Python scalar's) stays weak, as in
    jax's jet, where every term of a Python scalar's series is weak."""
    if c == 1.0:
        return term
    out = _ew.mul(term, c)
    aval = core.get_aval(term)
    if getattr(aval, "weak_type", False) and not getattr(core.get_aval(out), "weak_type", False):
        out = _ew.convert_element_type(out, aval.dtype, weak_type=True)
    return out


def _term_out(term, primal, c: float):
    if type(term) is ad.Zero:
        # (zeros of the primal's type, its weak type included, as jax's instantiated zero series)
        aval = core.get_aval(primal)
        zeros = _st.broadcast_in_dim(np.zeros((), aval.dtype), aval.shape, ())
        if getattr(aval, "weak_type", False):
            zeros = _ew.convert_element_type(zeros, aval.dtype, weak_type=True)
        return to_public(zeros)
    return to_public(_scaled(term, c))


def taylor_derivatives(fun: Callable, x, order: int, direction=None):
    """All derivatives of ``fun`` at ``x`` up to ``order``, by one Taylor-mode pass.

    For a scalar ``x``: ``[f(x), f'(x), f''(x), ..., f^(order)(x)]``. For an array ``x``, the
    directional derivatives along ``direction`` (required then):
    ``[f(x), D f(x)[v], D^2 f(x)[v, v], ...]``, the derivatives of ``t -> f(x + t v)`` at 0.
    Each entry has ``fun``'s output structure. Wrap it in ``funcgrad.jit`` (with ``order`` static)
    to compile the ``O(order^2)`` program once per shape and order.

    >>> import funcgrad.numpy as fnp
    >>> [round(float(d), 6) for d in taylor_derivatives(fnp.exp, 0.0, 3)]
    [1.0, 1.0, 1.0, 1.0]
    """
    if not isinstance(order, int) or order < 0:
        raise ValueError(f"taylor_derivatives: order must be a non-negative int, got {order!r}")
    aval = core.get_aval(x)
    if direction is None:
        if aval.shape != ():
            raise ValueError(
                f"taylor_derivatives: x has shape {aval.shape}; give a direction v of that shape for "
                "the directional derivatives along v (or pass a scalar x)"
            )
        direction = np.ones((), aval.dtype if _dt.is_inexact(aval.dtype) else np.float64)
    zero = np.zeros(np.shape(direction), core.get_aval(direction).dtype)
    terms = (direction, *[zero] * (order - 1)) if order else ()
    y, ys = jet(fun, (x,), (terms,))
    leaves, tree = tu.tree_flatten(y)
    series_leaves = tree.flatten_up_to(ys)
    return [y] + [tu.tree_unflatten(tree, [s[k] for s in series_leaves]) for k in range(order)]


# ----------------------------------------------------------------------------------------------
# JAX's rule helpers: ``jet_rules`` and the ``def*`` functions that fill it
#
# NOTE: [jet_rules is the catalog's Taylor rules]
# ``jax.experimental.jet.jet_rules`` maps a primitive to ``rule(primals_in, series_in, **params)
# -> (primal_out, series_out)`` with Taylor coefficients (JAX's jet divides by k! on the way in,
# as funcgrad's does) and every zero term instantiated as an array. Here the mapping is a view of
# the primitives' own Taylor rules (``Primitive.taylor``, kernel/taylor.py): setting an entry
# installs the rule, adapted to the kernel's symbolic zeros, and reading one gives the rule in
# JAX's convention. So a rule set with ``def_deriv``/``def_comp``/``deflinear``/``defzero`` is the
# rule ``funcgrad.jet`` uses, under jit, vmap and grad too.


def _instantiate_terms(primal, terms):
    """A series with its ``Zero`` terms as zero arrays of the primal's type (JAX's rules never
    see a symbolic zero)."""
    aval = core.get_aval(primal)
    zero = None
    out = []
    for t in terms:
        if type(t) is ad.Zero or t is zero_term:
            if zero is None:
                zero = _st.broadcast_in_dim(np.zeros((), aval.dtype), aval.shape, ())
            t = zero
        out.append(t)
    return out


def _kernel_series(out, series, order):
    """A JAX rule's output series in the kernel's form (``zero_series``/``zero_term`` to Zero)."""
    if series is zero_series:
        return ad.zero_series(out, order)
    return [ad.Zero.from_primal_value(out) if t is zero_term else t for t in series]


def _adapt_jax_rule(primitive: core.Primitive, rule: Callable) -> Callable:
    def taylor(primals, series, **params):
        order = len(series[0]) if series else 0
        series_in = [_instantiate_terms(p, s) for p, s in zip(primals, series)]
        out, series_out = rule(list(primals), series_in, **params)
        if primitive.multiple_results:
            if series_out is zero_series:
                series_out = [zero_series] * len(out)
            return list(out), [_kernel_series(o, s, order) for o, s in zip(out, series_out)]
        return out, _kernel_series(out, series_out, order)

    taylor.jax_rule = rule
    return taylor


def _jax_view(primitive: core.Primitive, taylor: Callable) -> Callable:
    def rule(primals_in, series_in, **params):
        series_in = [
            [ad.Zero.from_primal_value(p) if t is zero_term else t for t in s]
            for p, s in zip(primals_in, series_in)
        ]
        out, series_out = taylor(list(primals_in), series_in, **params)
        if primitive.multiple_results:
            return out, [_instantiate_terms(o, s) for o, s in zip(out, series_out)]
        return out, _instantiate_terms(out, series_out)

    return rule


class _JetRules(MutableMapping):
    """``jet_rules``: primitive -> Taylor rule in JAX's convention (NOTE: [jet_rules is the
    catalog's Taylor rules]). Every primitive with a Taylor rule is a key.

    >>> from funcgrad.primitives import elementwise as ew
    >>> y, (s1, s2) = jet_rules[ew.exp_p]([0.0], [[1.0, 0.0]])
    >>> float(y), float(s1), float(s2)
    (1.0, 1.0, 0.5)
    """

    def __getitem__(self, primitive):
        taylor = getattr(primitive, "taylor", None)
        if taylor is None:
            raise KeyError(primitive)
        return getattr(taylor, "jax_rule", None) or _jax_view(primitive, taylor)

    def __setitem__(self, primitive, rule):
        if not isinstance(primitive, core.Primitive):
            raise TypeError(f"jet_rules: keys are funcgrad primitives, got {primitive!r}")
        primitive.def_taylor(_adapt_jax_rule(primitive, rule))

    def __delitem__(self, primitive):
        if getattr(primitive, "taylor", None) is None:
            raise KeyError(primitive)
        primitive.taylor = None

    def _known(self):
        return [p for p in _primitives.all_primitives() if p.taylor is not None]

    def __iter__(self):
        return iter(self._known())

    def __len__(self):
        return len(self._known())

    def __contains__(self, primitive):
        return getattr(primitive, "taylor", None) is not None


jet_rules = _JetRules()

# JAX's jet rewrites the parameters of call primitives it traces into (their jaxpr's arity); the
# kernel's call-primitive kit transforms a call's jaxpr itself (taylor.jet_jaxpr), so no entry is
# needed here: the mapping is kept, consulted by nobody, for code that registers into it.
call_param_updaters: dict = {}


def zero_prop(prim, primals_in, series_in, **params):
    """The rule of a primitive whose output does not vary with its inputs: ``(primal, zero_series)``.

    >>> from funcgrad.primitives import elementwise as ew
    >>> zero_prop(ew.sign_p, [2.0], [[1.0]])
    (Array(1., dtype=float64, weak_type=True), zero_series)
    """
    return prim.bind(*primals_in, **params), zero_series


def defzero(prim) -> None:
    """Make ``prim``'s Taylor series zero (a piecewise-constant function: ``floor``, comparisons).

    >>> from funcgrad.kernel.core import Primitive
    >>> p = Primitive("my_step"); _ = p.def_impl(lambda x: np.floor(x)); defzero(p)
    >>> p in jet_rules
    True
    """
    jet_rules[prim] = functools.partial(zero_prop, prim)


def linear_prop(prim, primals_in, series_in, **params):
    """The rule of a linear primitive: applied to the primal and to each term.

    >>> from funcgrad.primitives import elementwise as ew
    >>> linear_prop(ew.neg_p, [1.0], [[2.0, 3.0]])[1]
    [Array(-2., dtype=float64, weak_type=True), Array(-3., dtype=float64, weak_type=True)]
    """
    primal_out = prim.bind(*primals_in, **params)
    series_out = [prim.bind(*terms, **params) for terms in zip(*series_in)]
    if prim.multiple_results:
        series_out = [list(s) for s in safe_zip(*series_out)]
    return primal_out, series_out


def deflinear(prim) -> None:
    """Give the linear primitive ``prim`` the Taylor rule of a linear map (``linear_prop``).

    >>> from funcgrad.kernel.core import Primitive
    >>> p = Primitive("my_double"); _ = p.def_impl(lambda x: 2 * np.asarray(x)); deflinear(p)
    >>> p in jet_rules
    True
    """
    jet_rules[prim] = functools.partial(linear_prop, prim)


def deriv_prop(prim, deriv, primals_in, series_in):
    """The rule of a unary primitive from its derivative ``deriv`` (a function of ``x``): with
    ``y' = deriv(x) x'``, ``y_k = sum_j j c_(k-j) x_j / k`` where ``c`` is the series of ``deriv(x)``.

    >>> import funcgrad.numpy as fnp
    >>> from funcgrad.primitives import elementwise as ew
    >>> y, s = deriv_prop(ew.exp_p, fnp.exp, [0.0], [[1.0, 0.0]])
    >>> [float(t) for t in s]
    [1.0, 0.5]
    """
    (x,), (series,) = primals_in, series_in
    primal_out = prim.bind(x)
    c0, cs = jet2(deriv, (x,), (list(series),))
    c = [c0, *cs]
    u = [x, *series]
    v = [primal_out] + [None] * len(series)
    for k in range(1, len(v)):
        acc = None
        for j in range(1, k + 1):
            term = _ew.mul(_ew.mul(float(j), c[k - j]), u[j])
            acc = term if acc is None else _ew.add(acc, term)
        v[k] = _ew.div(acc, float(k))
    return v[0], v[1:]


def def_deriv(prim, deriv) -> None:
    """Define ``prim``'s Taylor rule from its first derivative (``deriv_prop``).

    >>> import funcgrad.numpy as fnp
    >>> from funcgrad.kernel.core import Primitive
    >>> p = Primitive("my_exp"); _ = p.def_impl(np.exp); _ = p.def_abstract_eval(lambda a: a)
    >>> def_deriv(p, fnp.exp)
    >>> _, (d1, d2) = jet(p.bind, (0.0,), ((1.0, 0.0),))
    >>> float(d1), float(d2)
    (1.0, 1.0)
    """
    jet_rules[prim] = functools.partial(deriv_prop, prim, deriv)


def def_comp(prim, comp, **kwargs) -> None:
    """Define ``prim``'s Taylor rule as the jet of ``comp``, a composition of primitives with rules
    (``def_comp(log1p_p, lambda x: log(1 + x))``). ``kwargs`` are accepted as JAX's ``jet``
    accepts (and ignores) extra keywords.

    >>> import funcgrad.numpy as fnp
    >>> from funcgrad.kernel.core import Primitive
    >>> p = Primitive("my_sq"); _ = p.def_impl(np.square); _ = p.def_abstract_eval(lambda a: a)
    >>> def_comp(p, lambda x: x * x)
    >>> _, (d1, d2) = jet(p.bind, (3.0,), ((1.0, 0.0),))
    >>> float(d1), float(d2)
    (6.0, 2.0)
    """
    del kwargs

    def rule(primals_in, series_in, **params):
        del params  # JAX's jet takes the primitive's parameters as ignored keywords
        return jet2(comp, tuple(primals_in), tuple(series_in))

    jet_rules[prim] = rule


# ----------------------------------------------------------------------------------------------
# The small utilities JAX's jet module exposes under the same names


def safe_zip(*args):
    """``zip`` of sequences of equal length (``ValueError`` otherwise), as a list.

    >>> safe_zip([1, 2], "ab")
    [(1, 'a'), (2, 'b')]
    """
    args = [list(a) for a in args]
    if len({len(a) for a in args}) > 1:
        raise ValueError(f"safe_zip: length mismatch: {[len(a) for a in args]}")
    return list(zip(*args))


def unzip2(xys):
    """Pairs to a pair of tuples: ``unzip2([(1, 'a'), (2, 'b')]) == ((1, 2), ('a', 'b'))``.

    >>> unzip2([(1, "a"), (2, "b")])
    ((1, 2), ('a', 'b'))
    """
    xs, ys = [], []
    for x, y in xys:
        xs.append(x)
        ys.append(y)
    return tuple(xs), tuple(ys)


def weakref_lru_cache(call: Callable, maxsize: int = 2048, trace_context_in_key: bool = True):
    """A least-recently-used cache of ``call(first, *args, **kwargs)`` that holds its first
    argument weakly (an entry dies with it), as JAX's. ``cache_clear()`` and ``cache_info()``.
    ``trace_context_in_key`` is accepted for JAX's signature (funcgrad's caches key on values).

    >>> class Fn:
    ...     pass
    >>> calls = []
    >>> cached = weakref_lru_cache(lambda f, n: calls.append(n) or n * 2)
    >>> f = Fn(); cached(f, 3), cached(f, 3), len(calls)
    (6, 6, 1)
    >>> cached.cache_info().currsize
    1
    """
    del trace_context_in_key
    per_object: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
    order: collections.OrderedDict = collections.OrderedDict()
    lock = threading.Lock()
    stats = {"hits": 0, "misses": 0}

    @functools.wraps(call)
    def wrapper(first, *args, **kwargs):
        key = (args, tuple(sorted(kwargs.items())))
        with lock:
            entries = per_object.get(first)
            if entries is not None and key in entries:
                stats["hits"] += 1
                order.move_to_end((id(first), key))
                return entries[key]
        value = call(first, *args, **kwargs)
        with lock:
            stats["misses"] += 1
            per_object.setdefault(first, {})[key] = value
            order[(id(first), key)] = weakref.ref(first)
            while len(order) > maxsize:
                (_, old_key), ref = order.popitem(last=False)
                obj = ref()
                if obj is not None and obj in per_object:
                    per_object[obj].pop(old_key, None)
        return value

    def cache_info():
        size = sum(len(v) for v in per_object.values())
        return functools._CacheInfo(stats["hits"], stats["misses"], maxsize, size)

    def cache_clear():
        with lock:
            per_object.clear()
            order.clear()

    wrapper.cache_info = cache_info
    wrapper.cache_clear = cache_clear
    return wrapper
