"""Reductions: reduce_sum, reduce_max, reduce_min, reduce_prod, reduce_and, reduce_or, argmax, argmin,
and the generic ``reduce`` (XLA's Reduce with any reducer, carried as a jaxpr).

Layer: primitives. Imports the funcgrad kernel, numpy and sibling families.

Gradient conventions (as JAX documents): at ties, ``reduce_max``/``reduce_min`` share the
cotangent equally among the tied elements; ``reduce_prod`` is exact with zeros in the input (JAX's
JVP: a pairwise tree of products differentiated by the product rule, never dividing by ``x``), at
every order. ``argmax``/``argmin`` return the first maximal/minimal index, and NaN counts as the
extreme value (the first NaN wins), like NumPy and JAX.

# NOTE: [generic reduce]
# ``reduce_p`` carries its reducer as a closed jaxpr of ``2n`` scalars ``(acc..., x...) -> n``
# values (``lax.reduce`` binds it when the computation is not a monoid primitive it recognises).
# Eager evaluation is XLA's, as JAX's (``apply_primitive``: the primitive compiled alone, through
# the bridge's ``hooks.eager_compiled``): XLA folds the elements into the init values in order, and
# a reduction of at most one element per output (no dimensions, or dimensions of size 1) is the
# operand itself, the init values unused. The JVP is JAX's rule, and gives its primal too (as
# JAX's ``jvp`` of its tree does): the reduced axes are flattened to one leading axis of length N,
# halved into a first half of ceil(N / 2) rows and a second half padded with the init values, the
# halves combined lane by lane (the reducer vectorised by the kernel's vmap), log2 N times
# (``_tree``); run on (primal, tangent) pairs with the reducer's own JVP, out of slices,
# concatenations and the reducer's primitives, so the tangent is linear and transposable and
# ``grad`` works as it does in JAX, whatever the reducer. Only an associative reducer with its
# identity as init gives one answer both ways; another (a non-identity init, ``a * 0.5 + b``)
# gives XLA's fold eagerly and under ``jit``, and the tree's value under a derivative, as in JAX.
# Without a compiler (the primitives layer alone) eager evaluation runs the tree.
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives._rules import (
    JET_OF_SELECTION,
    JET_OF_SUBPROGRAM,
    aval_of,
    checked_impl,
    complex_extremum_fold,
    reduction_batch,
    xla_zero_of_extremum,
)
from funcgrad.primitives.structure import broadcast_in_dim, concatenate, reshape, slice_, transpose

from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.ad import Zero, defjvp_zero, deflinear, instantiate, jvp_flat
from funcgrad.kernel.batching import vmap_flat
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import ClosedJaxpr, ShapedArray


def _reduced_aval(name, x: ShapedArray, axes, dtype=None) -> ShapedArray:
    if any(not 0 <= a < x.ndim for a in axes) or len(set(axes)) != len(axes):
        raise TypeError(f"{name}: axes {axes} out of range for {x.str_short()}")
    shape = tuple(s for i, s in enumerate(x.shape) if i not in axes)
    return ShapedArray(shape, x.dtype if dtype is None else dtype, x.weak_type and dtype is None)


def _batch_reduction(primitive):
    def rule(axis_size, vals, dims, *, axes, **params):
        (x,), (d,) = vals, dims
        new_axes = tuple(a + (a >= d) for a in axes)
        out_dim = d - sum(a < d for a in axes)
        return primitive.bind(x, axes=new_axes, **params), out_dim

    return rule


def keep_dims_shape(in_shape, axes):
    return tuple(1 if i in axes else s for i, s in enumerate(in_shape))


def expand_reduced(y, in_shape, axes):
    """Broadcast a reduced value back to ``in_shape`` (the reduced axes are re-inserted)."""
    kept = tuple(i for i in range(len(in_shape)) if i not in axes)
    return broadcast_in_dim(y, in_shape, kept)


# ----------------------------------------------------------------------------------------------
# reduce_sum


reduce_sum_p = Primitive("reduce_sum")
reduce_sum_p.def_traits(may_produce_nan=True, sparse="reduce_sum")


# (The ufuncs' reduce methods directly: np.sum/np.max add a Python wrapper of about 1.5 us.)
def _reduce_sum_impl(x, *, axes):
    x = np.asarray(x)
    if all(x.shape[a] == 1 for a in axes):
        # A sum over axes of size 1 is XLA's reshape (its simplifier's), so -0.0 stays -0.0 as in
        # jax; NumPy's add.reduce starts from +0.0 (0.0 + -0.0 is +0.0). Eager jacrev(jacrev(f))
        # of a scalar f sums its one-row basis away: its zeros off the diagonal were +0.0.
        return np.reshape(x, [d for i, d in enumerate(x.shape) if i not in axes]).copy()
    if not _dt.x64_enabled and x.ndim > 1 and x.dtype in _WIDER_SUM:
        # In 32-bit mode (NOTE: [x64 mode]), where every float is float32: NumPy sums along a
        # non-contiguous axis one element after another (pairwise only along the contiguous one),
        # so a float32 column sum of n values errs by up to n ulps, while XLA's vectorised
        # reduction stays within a few; accumulating in float64 and rounding once keeps eager
        # results within XLA's error (JAX's docs compare eager and jit at 1e-6). It costs up to
        # 2-3x on such sums, so the default 64-bit mode keeps NumPy's float32 sums.
        wide = _WIDER_SUM[x.dtype]
        leading = _leading_sum(x, axes, wide)
        if leading is not None:
            return leading.astype(x.dtype)
        return np.asarray(np.add.reduce(x, axis=axes, dtype=wide).astype(x.dtype))
    return np.asarray(np.add.reduce(x, axis=axes, dtype=x.dtype))  # (in x's dtype, as XLA)


_WIDER_SUM = {np.dtype(np.float32): np.dtype(np.float64), np.dtype(np.complex64): np.dtype(np.complex128)}
_LEADING_SUM_MIN_SIZE = 4096
_LEADING_SUM_BLOCK = 8192  # elements of a block cast to the wide dtype at once


def _leading_sum(x, axes, wide):
    """The sum of a C-contiguous ``x`` over its leading ``axes`` (``X.mean(0)`` of a tall array), in
    ``wide``, as one BLAS matrix-vector product ``ones(n) @ x.reshape(n, m)``; None for another
    reduction. NumPy's ``add.reduce`` over an outer axis runs its inner loop once per row (of ``m``
    elements): float32[10000, 10] summed over axis 0 took ~600 us in float64, the product ~90 us
    (cast included). Accumulated in float64 (an order BLAS picks) and rounded once to float32, the
    result is the float64 reduction's up to double rounding (the same values in practice)."""
    k = len(axes)
    if not (0 < k < x.ndim and x.size >= _LEADING_SUM_MIN_SIZE and x.flags.c_contiguous):
        return None
    if int(np.prod(x.shape[k:])) > _LEADING_SUM_BLOCK // 16:  # (long rows: NumPy is fast)
        return None
    if tuple(sorted(axes)) != tuple(range(k)):
        return None
    n = int(np.prod(x.shape[:k]))
    flat = x.reshape(n, -1)
    # Cast in blocks of ~64 KiB: one float64 copy of a large x is a fresh mapping of memory whose
    # page faults cost more than the sum (0.8 ms for 800 KB between other eager operations).
    rows = max(1, _LEADING_SUM_BLOCK // flat.shape[1])
    ones = np.ones(min(rows, n), wide)
    total = ones @ flat[:rows].astype(wide)
    for start in range(rows, n, rows):
        block = flat[start : start + rows].astype(wide)
        total += ones[: block.shape[0]] @ block
    return total.reshape(x.shape[k:])


# config jax_allow_f16_reductions (JAX's flag; funcgrad._config_flags sets it and empties the trace
# caches): False refuses a reduce_sum of float16/bfloat16 values over an axis longer than 1, in
# JAX's words, where it is typed (so jnp.sum, which sums half floats in float32, is not refused).
allow_f16_reductions = [True]


def _reduce_sum_aval(x, *, axes):
    if not allow_f16_reductions[0] and x.dtype in _dt.HALF_FLOATS and any(x.shape[a] != 1 for a in axes):
        raise ValueError(
            f"reduce_sum on operand {x.str_short()} is not allowed when jax_allow_f16_reductions=False."
        )
    return _reduced_aval("reduce_sum", x, axes)


reduce_sum_p.def_impl(_reduce_sum_impl)
reduce_sum_p.def_abstract_eval(_reduce_sum_aval)


# As JAX's: broadcast back typed as the operand (``broadcast_in_dim(out_sharding=operand's)``): the
# cotangent of an unreduced sum is reduced, and split back as the operand is (NOTE: [sharding in
# types]; the gradient of ``reduce_sum(out_sharding=P(unreduced=...))`` of a split operand).
def _reduce_sum_transpose(ct, x, *, axes):
    return [hooks.typed_as(expand_reduced(ct, x.aval.shape, axes), x.aval, from_reduced=True)]


deflinear(reduce_sum_p, _reduce_sum_transpose)
reduce_sum_p.def_batch(_batch_reduction(reduce_sum_p))


def reduce_sum(x, axes):
    """Sum ``x`` over ``axes`` (a tuple of non-negative ints)."""
    axes = tuple(sorted(int(a) for a in axes))
    if not axes:
        return x
    return reduce_sum_p.bind(x, axes=axes)


# ----------------------------------------------------------------------------------------------
# reduce_max / reduce_min


def _minmax_jvp(primitive):
    def jvp(primals, tangents, *, axes):
        (x,), (t,) = primals, tangents
        ans = primitive.bind(x, axes=axes)
        if type(t) is Zero:
            return ans, Zero.from_primal_value(ans)
        shape = aval_of(x).shape
        location = ew.convert(ew.eq_p.bind(x, expand_reduced(ans, shape, axes)), aval_of(x).dtype)
        counts = reduce_sum(location, axes)
        if any(shape[a] == 0 for a in axes):
            # An empty reduction has no ties to share: divide by max(count, 1), never 0/0.
            counts = ew.max_p.bind(counts, np.ones((), aval_of(x).dtype))
        # Otherwise a count of 0 means the answer is NaN (equal to no element): the derivative is
        # 0/0 = NaN, as jax's (issue 33).
        return ans, ew.div(reduce_sum(ew.mul(t, location), axes), counts)

    return jvp


def _max_identity(dtype):
    return _dt.extremum_identity(dtype, for_max=True)


def _min_identity(dtype):
    return _dt.extremum_identity(dtype, for_max=False)


def _reduce_impl(np_fn, identity, for_max):
    def impl(x, *, axes):
        x = np.asarray(x)
        if x.size == 0:
            shape = tuple(s for i, s in enumerate(x.shape) if i not in axes)
            return np.full(shape, identity(x.dtype), dtype=x.dtype)
        if x.dtype.kind == "c":  # (JAX's reduction: its complex max/min folded from the identity)
            rest = [i for i in range(x.ndim) if i not in axes]
            flat = np.transpose(x, rest + list(axes)).reshape(*(x.shape[i] for i in rest), -1)
            return complex_extremum_fold(flat, identity(x.dtype), for_max=for_max)
        out = np_fn(x, axis=axes)  # (NOTE: [XLA's signed zeros in max and min])
        return xla_zero_of_extremum(out, x, lambda z: np.logical_or.reduce(z, axis=axes), for_max=for_max)

    return impl


reduce_max_p = Primitive("reduce_max")
reduce_max_p.def_traits(taylor_from_jvp=JET_OF_SELECTION)
reduce_max_p.def_impl(_reduce_impl(np.maximum.reduce, _max_identity, True))
reduce_max_p.def_abstract_eval(lambda x, *, axes: _reduced_aval("reduce_max", x, axes))
reduce_max_p.def_jvp(_minmax_jvp(reduce_max_p))
reduce_max_p.def_batch(_batch_reduction(reduce_max_p))

reduce_min_p = Primitive("reduce_min")
reduce_min_p.def_traits(taylor_from_jvp=JET_OF_SELECTION)
reduce_min_p.def_impl(_reduce_impl(np.minimum.reduce, _min_identity, False))
reduce_min_p.def_abstract_eval(lambda x, *, axes: _reduced_aval("reduce_min", x, axes))
reduce_min_p.def_jvp(_minmax_jvp(reduce_min_p))
reduce_min_p.def_batch(_batch_reduction(reduce_min_p))


def reduce_max(x, axes):
    """Maximum of ``x`` over ``axes``; ties share the gradient equally.

    >>> float(reduce_max(np.array([1.0, 3.0, 2.0]), (0,)))
    3.0
    """
    axes = tuple(sorted(int(a) for a in axes))
    return reduce_max_p.bind(x, axes=axes) if axes else x


def reduce_min(x, axes):
    """Minimum of ``x`` over ``axes``; ties share the gradient equally.

    >>> float(reduce_min(np.array([1.0, 3.0, 2.0]), (0,)))
    1.0
    """
    axes = tuple(sorted(int(a) for a in axes))
    return reduce_min_p.bind(x, axes=axes) if axes else x


# ----------------------------------------------------------------------------------------------
# reduce_prod: JAX's JVP, a pairwise tree of products (exact with zeros, no division)


def _prod_jvp(primals, tangents, *, axes):
    (x,), (t,) = primals, tangents
    if type(t) is Zero:
        ans = reduce_prod_p.bind(x, axes=axes)
        return ans, Zero.from_primal_value(ans)
    # JAX's rule (_reduce_prod_jvp_rule): the reduced axes flattened to one leading axis, halved
    # (the second half padded with a one when odd) and the halves multiplied, log2 N times, under
    # jvp; its primal is the tree's product too. No division, so exact with zeros at every order,
    # and the same products in the same order as JAX's, so inf/NaN mixes (0 * inf, inf - inf in
    # the second derivatives) and low-precision roundings come out as jax's.
    rest = tuple(s for d, s in enumerate(aval_of(x).shape) if d not in axes)

    def tree(a):
        a = _to_leading(a, axes)
        while (count := aval_of(a).shape[0]) > 1:
            half = (count + 1) // 2
            start = (0,) * (1 + len(rest))
            first = slice_(a, start, (half, *rest))
            second = slice_(a, (half,) + start[1:], (count, *rest))
            if count % 2:
                one = broadcast_in_dim(np.ones((), aval_of(a).dtype), (1, *rest), ())
                second = concatenate([second, one], 0)
            a = ew.mul(first, second)
        if aval_of(a).shape[0] == 0:
            return [broadcast_in_dim(np.ones((), aval_of(a).dtype), rest, ())]
        return [reshape(a, rest)]

    (ans,), (t_out,) = jvp_flat(tree, [x], [t])
    return ans, t_out


reduce_prod_p = Primitive("reduce_prod")
reduce_prod_p.def_traits(taylor_from_jvp="its JVP rule is a pairwise tree of products", may_produce_nan=True)
reduce_prod_p.def_impl(lambda x, *, axes: np.asarray(np.prod(x, axis=axes, dtype=np.result_type(x))))
reduce_prod_p.def_abstract_eval(lambda x, *, axes: _reduced_aval("reduce_prod", x, axes))
reduce_prod_p.def_jvp(_prod_jvp)
reduce_prod_p.def_batch(_batch_reduction(reduce_prod_p))
# A sum or product accumulated in float16/bfloat16 (jnp.sum(x, dtype=bfloat16); a cotangent's
# reduction) adds in XLA's vectorised order, each partial result rounded to the half type; NumPy's
# loop adds one element after another, so a bfloat16 sum of 1000 values in [0, 1) stops at 256
# (256 + 0.5 rounds back to 256) where jax's is 506. The eager step runs them compiled, as jax.
reduce_sum_p.def_traits(half_floats_compiled=True)
reduce_prod_p.def_traits(half_floats_compiled=True)


def reduce_prod(x, axes):
    """Product of ``x`` over ``axes``; its derivative is exact when ``x`` has zeros.

    >>> float(reduce_prod(np.array([2.0, 3.0]), (0,)))
    6.0
    """
    axes = tuple(sorted(int(a) for a in axes))
    return reduce_prod_p.bind(x, axes=axes) if axes else x


# ----------------------------------------------------------------------------------------------
# Boolean reductions and arg reductions (not differentiable)


def _bool_reduction(name, np_fn, bitwise):
    """A logical reduction of booleans that is bitwise over integers (``bitwise``: NumPy's ufunc),
    as JAX's ``reduce_and``/``reduce_or``."""
    p = Primitive(name)

    def impl(x, *, axes):
        x = np.asarray(x)
        if x.dtype == np.bool_:
            return np.asarray(np_fn(x, axis=axes))
        ones = ~np.zeros((), x.dtype)  # (and's identity: every bit set, in the operand's dtype)
        return np.asarray(bitwise.reduce(x, axis=axes, initial=ones if bitwise is np.bitwise_and else 0))

    def abstract_eval(x, *, axes):
        if x.dtype != np.bool_ and x.dtype.kind not in "iu":  # (JAX's words)
            raise TypeError(f"logical reduction requires operand dtype bool or int, got {x.dtype}.")
        return _reduced_aval(name, x, axes)

    p.def_impl(impl)

    p.def_abstract_eval(abstract_eval)
    defjvp_zero(p)
    p.def_batch(_batch_reduction(p))
    return p


reduce_and_p = _bool_reduction("reduce_and", np.all, np.bitwise_and)
reduce_or_p = _bool_reduction("reduce_or", np.any, np.bitwise_or)


def _arg_reduction(name, np_fn):
    p = Primitive(name)

    def impl(x, *, axes, index_dtype):
        (axis,) = axes
        return np.asarray(np_fn(x, axis=axis)).astype(index_dtype)

    def abstract_eval(x, *, axes, index_dtype):
        if len(axes) != 1:
            raise TypeError(f"{name} reduces exactly one axis, got axes={axes}")
        if x.shape[axes[0]] == 0:
            raise ValueError(f"{name}: attempt to get {name} of an empty axis (shape {x.shape})")
        return _reduced_aval(name, x, axes, np.dtype(index_dtype))

    p.def_impl(impl)
    p.def_abstract_eval(abstract_eval)
    defjvp_zero(p)
    p.def_batch(_batch_reduction(p))
    return p


argmax_p = _arg_reduction("argmax", np.argmax)
argmin_p = _arg_reduction("argmin", np.argmin)


def _arg(primitive, x, axis, index_dtype):
    ndim = aval_of(x).ndim
    if not -ndim <= int(axis) < ndim:
        raise ValueError(f"{primitive.name}: axis {axis} is out of bounds for an array of rank {ndim}")
    index_dtype = np.dtype(index_dtype)
    if index_dtype.kind not in "iu":
        raise TypeError(f"{primitive.name}: index_dtype must be an integer dtype, got {index_dtype.name}")
    return primitive.bind(x, axes=(int(axis) % ndim,), index_dtype=index_dtype)


def argmax(x, axis: int, index_dtype):
    """Index of the first maximum along ``axis`` (NaN counts as the maximum), as ``lax.argmax``.

    >>> int(argmax(np.array([1.0, 3.0, 3.0]), 0, np.int32))
    1
    """
    return _arg(argmax_p, x, axis, index_dtype)


def argmin(x, axis: int, index_dtype):
    """Index of the first minimum along ``axis`` (NaN counts as the minimum), as ``lax.argmin``.

    >>> int(argmin(np.array([2.0, 1.0, 1.0]), 0, np.int32))
    1
    """
    return _arg(argmin_p, x, axis, index_dtype)


# ----------------------------------------------------------------------------------------------
# reduce: any reducer, as a closed jaxpr (acc..., x...) -> acc...  (NOTE: [generic reduce])


def reducer_operands(name: str, args) -> tuple[tuple, tuple]:
    """The operands and init values of the generic reduction ``name`` (``reduce``,
    ``reduce_window``): as many init values as operands, each a scalar of its operand's dtype, and
    the operands of one shape."""
    n = len(args) // 2
    if len(args) % 2 or n == 0:
        raise TypeError(f"{name} needs as many init values as operands (at least one)")
    operands, inits = args[:n], args[n:]
    for o, i in zip(operands, inits):
        if i.ndim != 0 or i.dtype != o.dtype:
            raise TypeError(
                f"{name}: each init value must be a scalar of its operand's dtype, got init "
                f"{i.str_short()} for operand {o.str_short()}"
            )
    if len({o.shape for o in operands}) != 1:
        raise TypeError(
            f"{name}: operands must have one shape, got " + ", ".join(o.str_short() for o in operands)
        )
    return operands, inits


def _generic_abstract_eval(*args, jaxpr, dimensions):
    operands, _ = reducer_operands("reduce", args)
    outs = [_reduced_aval("reduce", o, dimensions) for o in operands]
    scalars = [ShapedArray((), o.dtype) for o in operands]
    if [(a.shape, a.dtype) for a in jaxpr.out_avals] != [(s.shape, s.dtype) for s in scalars]:
        raise TypeError(
            "reduce: the computation must return one scalar per operand, of the operands' dtypes "
            f"{[str(s.dtype) for s in scalars]}, got {[a.str_short() for a in jaxpr.out_avals]}"
        )
    return [ShapedArray(o.shape, o.dtype, False) for o in outs]


def _lanes(jaxpr: ClosedJaxpr, args):
    """Run the scalar reducer on same-shaped arrays, one lane per element (the kernel's vmap)."""
    shape = aval_of(args[0]).shape
    size = int(np.prod(shape, dtype=np.int64))
    flat = [reshape(a, (size,)) for a in args]
    outs = vmap_flat(
        lambda *a: core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *a),
        size,
        [0] * len(args),
        [0] * (len(args) // 2),
        flat,
    )
    return [reshape(o, shape) for o in outs]


def _to_leading(x, dimensions):
    """``x`` with the reduced ``dimensions`` flattened into one leading axis."""
    shape = aval_of(x).shape
    kept = [d for d in range(len(shape)) if d not in dimensions]
    count = int(np.prod([shape[d] for d in dimensions], dtype=np.int64))
    x = transpose(x, (*dimensions, *kept)) if dimensions else x
    return reshape(x, (count, *(shape[d] for d in kept)))


def _tree(jaxpr: ClosedJaxpr, xs, inits):
    """Reduce the leading axis of every ``xs`` as JAX's reduce JVP does (NOTE: [generic reduce]):
    halves of ceil(N / 2) rows, the second padded with the init values when N is odd, combined
    until one row is left (that row is the result: no init values); N = 0 gives the init values."""
    rest = aval_of(xs[0]).shape[1:]
    start = (0,) * (1 + len(rest))
    while (count := aval_of(xs[0]).shape[0]) > 1:
        half = (count + 1) // 2
        first = [slice_(x, start, (half, *rest)) for x in xs]
        second = [slice_(x, (half,) + start[1:], (count, *rest)) for x in xs]
        if count % 2:
            second = [concatenate([x, broadcast_in_dim(i, (1, *rest), ())], 0) for x, i in zip(second, inits)]
        xs = _lanes(jaxpr, [*first, *second])
    if aval_of(xs[0]).shape[0] == 0:
        return [broadcast_in_dim(i, rest, ()) for i in inits]
    return [reshape(x, rest) for x in xs]


def _generic_impl(*args, jaxpr, dimensions):
    if hooks.eager_compiled is not None:  # XLA's answer, as JAX's eager reduce (NOTE: [generic reduce])
        try:
            return [
                np.asarray(o)
                for o in hooks.eager_compiled(reduce_p, args, {"jaxpr": jaxpr, "dimensions": dimensions})
            ]
        except NotImplementedError:  # a reducer primitive without a lowering: the tree, in NumPy
            pass
    n = len(args) // 2
    operands, inits = [np.asarray(a) for a in args[:n]], [np.asarray(a) for a in args[n:]]
    with np.errstate(all="ignore"):
        outs = _tree(jaxpr, [_to_leading(o, dimensions) for o in operands], inits)
    return [np.asarray(o) for o in outs]


def _generic_jvp(primals, tangents, *, jaxpr, dimensions):
    n = len(primals) // 2
    if any(type(t) is not Zero for t in tangents[n:]):
        raise TypeError(
            "lax.reduce: differentiating with respect to init_values is not supported (as in JAX); "
            "make the init values constants"
        )
    if all(type(t) is Zero for t in tangents[:n]):
        outs = reduce_p.bind(*primals, jaxpr=jaxpr, dimensions=dimensions)
        return outs, [Zero.from_primal_value(o) for o in outs]
    inits = primals[n:]

    def tree(*xs):
        return _tree(jaxpr, [_to_leading(x, dimensions) for x in xs], inits)

    # (the primal is the tree's too, as in JAX: it differs from XLA's fold for a non-identity init)
    return jvp_flat(tree, list(primals[:n]), [instantiate(t) for t in tangents[:n]])


reduce_p = Primitive("reduce", multiple_results=True)
reduce_p.def_traits(jaxpr_params=("jaxpr",), taylor_from_jvp=JET_OF_SUBPROGRAM, may_produce_nan=True)
reduce_p.def_impl(checked_impl(_generic_abstract_eval, _generic_impl))
reduce_p.def_abstract_eval(_generic_abstract_eval)
reduce_p.def_jvp(_generic_jvp)
reduce_p.def_batch(
    reduction_batch(
        reduce_p,
        lambda params: {"dimensions": tuple(d + 1 for d in params["dimensions"])},
        "lax.reduce: init_values must not be batched by vmap (each reduction starts from one "
        "scalar); pass them unbatched, e.g. with in_axes=None",
    )
)


__all__ = [
    "argmax",
    "argmax_p",
    "argmin",
    "argmin_p",
    "keep_dims_shape",
    "reduce_and_p",
    "reduce_max",
    "reduce_min",
    "reduce_max_p",
    "reduce_min_p",
    "reduce_or_p",
    "reduce_p",
    "reduce_prod",
    "reduce_prod_p",
    "reduce_sum",
    "reduce_sum_p",
]
