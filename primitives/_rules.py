"""Shared rule helpers for primitive families: elementwise declarations, batching helpers and the
JVP of bilinear primitives.

Layer: primitives. Imports only the funcgrad kernel and numpy.

# NOTE: [elementwise operand contract]
# Elementwise primitives take operands of one dtype. The n-ary ones (``add``, ``mul``, ``max``,
# ``lt``, ``pow``, ... every primitive declared with ``naryop``, as JAX 0.10's ``naryop``) take
# operands of shape ``()`` (a scalar broadcasts; it stays a scalar literal in jaxprs) and operands
# of one rank whose dimensions are equal or 1: a size-1 dimension broadcasts inside the primitive,
# so ``mul f32[2,1] f32[1,3]`` is ``f32[2,3]`` with no ``broadcast_in_dim`` in the jaxpr (JAX's
# ``broadcasting_shape_rule``). Everything that handles these primitives follows from that one
# rule: the abstract evaluation (``broadcast_operand_shapes``), the eager impl (NumPy broadcasts),
# the lowering (``LoweringContext.operands`` broadcasts each operand to the output's shape), a
# tangent or cotangent of an operand's shape (``broadcast_to_shape`` up, ``unbroadcast`` down:
# sums over the stretched dimensions), the batching rule (an unbatched operand gets a size-1
# batch dimension, as JAX's ``broadcast_batcher``) and the sharding rule (a size-1 dimension
# defers to the others). Dtype promotion and rank promotion are the NumPy surface's job, done
# before binding; the rule helpers below (``mul(t, 2.0)``) convert Python scalars to the other
# operand's dtype the same way. ``select_n`` and ``clamp`` keep JAX's stricter rules (equal
# shapes, or a scalar predicate or bound).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.ad import Zero, defjvp, defjvp_zero
from funcgrad.kernel.array import Array
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import ShapedArray

# ----------------------------------------------------------------------------------------------
# Why a primitive's jet is the jet of its JVP rule (``PrimitiveTraits.taylor_from_jvp``): the
# reasons several families share.

JET_OF_SELECTION = (
    "a selection of one operand's series by primal comparisons (its JVP rule is that selection)"
)
JET_OF_SPECIAL_FUNCTION = "a special function whose derivative is another special function of the family"
JET_OF_MATRIX_RULE = "a matrix decomposition or solve: its JVP rule is a few solves and products"
JET_OF_SUBPROGRAM = "carries a sub-program whose JVP rule transforms it (its jet follows that rule)"


# ----------------------------------------------------------------------------------------------
# Operand preparation


def aval_of(x) -> ShapedArray:
    return core.get_aval(x)


def scalar_like(value, like):
    """A 0-d constant of ``like``'s dtype and weak type (how rules write ``2.0`` or ``1``): a
    rule's constant never makes a weak result strong, as in JAX (``grad`` of a weak input is
    weak, eagerly and staged alike)."""
    aval = aval_of(like)
    value = np.asarray(value, dtype=aval.dtype)
    return Array._from_owned(value, True) if aval.weak_type else value


def const_like(x, value):
    """A rule's constant as JAX's ``lax._const`` makes it (JAX writes the constants of several JVP
    rules with it: sqrt's 0.5, atan's 1, erf's 2/sqrt(pi), ...; and psum's axis size for an
    operand a vmap does not batch): a NumPy constant of ``x``'s dtype, strong, so there the
    tangent of a weak array is strong (jvp of sqrt of a weak value under jit), except where JAX
    stages it as a weak literal -- a scalar ``x`` of the mode's default type for its kind
    (float64/complex128/int64, their 32-bit types in 32-bit mode): then weak as ``x``."""
    aval = aval_of(x)
    # (dtypes.kind: bfloat16's NumPy kind is 'V', which names no default type)
    if aval.shape == () and aval.dtype == _dt._default_of(_dt.kind(aval.dtype)):
        return scalar_like(value, x)
    return np.asarray(value, aval.dtype)


def coerce_pair(x, y):
    """Turn a Python scalar operand into a 0-d constant of the other operand's dtype."""
    x_scalar, y_scalar = type(x) in _SCALAR_TYPES, type(y) in _SCALAR_TYPES
    if not (x_scalar or y_scalar):
        return x, y
    if x_scalar and y_scalar:
        # (weak constants of the mode's type, as JAX's ``lax.mul(0.5, 0.5)``: a jet term made of
        # two Python scalars' terms stays weak)
        dtype = _dt.canonical(np.result_type(x, y))
        if dtype == np.bool_:
            return np.asarray(x, dtype), np.asarray(y, dtype)
        return Array._from_owned(np.asarray(x, dtype), True), Array._from_owned(np.asarray(y, dtype), True)
    if x_scalar:
        return scalar_like(x, y), y
    return x, scalar_like(y, x)


_SCALAR_TYPES = frozenset(_dt.python_scalar_types)


# ----------------------------------------------------------------------------------------------
# Abstract evaluation


# NOTE: [XLA's signed zeros in max and min]
# XLA's max and min order -0.0 below +0.0 (max(-0, +0) is +0 and min(+0, -0) is -0 whatever the
# operands' order), and its reductions and cumulative scans of them start from +-inf; NumPy's
# ``maximum``/``minimum`` return either zero. The eager impls of ``max``/``min``, ``reduce_max``/
# ``reduce_min`` and ``cummax``/``cummin`` mend the zeros with these helpers (real floats only).


def xla_extremum(out, x, y, *, for_max: bool):
    """``out = maximum(x, y)`` (``for_max``) or ``minimum``, with XLA's zero: where both operands
    are zeros, ``x + y`` is max's (-0 only for two -0) and ``-(-x + -y)`` min's."""
    out = np.asarray(out)
    if _dt.is_float(out.dtype):
        both = np.logical_and(np.equal(x, 0), np.equal(y, 0))
        if both.any():
            mended = np.add(x, y) if for_max else np.negative(np.add(np.negative(x), np.negative(y)))
            out = np.where(both, mended, out).astype(out.dtype)
    return out


def complex_extremum(x, y, *, for_max: bool):
    """JAX's complex ``max`` (``for_max``) or ``min`` of NumPy operands: ``x`` where it is the
    larger/smaller in the lexicographic order (real parts, ties broken by the imaginary parts),
    else ``y`` -- a comparison with a NaN part is false, so a NaN propagates only from ``y``
    (NumPy's ``maximum`` propagates any). The lowering's ``complex_select``."""
    x, y = np.broadcast_arrays(np.asarray(x), np.asarray(y))
    cmp = np.greater if for_max else np.less
    with np.errstate(invalid="ignore"):
        pick = np.where(x.real == y.real, cmp(x.imag, y.imag), cmp(x.real, y.real))
    return np.where(pick, x, y)


def complex_extremum_fold(flat, initial, *, for_max: bool):
    """``complex_extremum`` folded along the last axis of ``flat`` from ``initial`` (JAX's complex
    max/min reduction). Without NaN parts the order is total (``0.0 == -0.0`` a tie) and the fold,
    which keeps its accumulator only where it is strictly larger (smaller) than the next element,
    ends on the last element that attains the lexicographic maximum (minimum): found in
    whole-array steps. A NaN part makes a comparison false only where the comparison reaches it
    (the imaginary parts of equal real parts, or a NaN real part), so then the fold runs element
    by element."""
    y = np.concatenate([np.full((*flat.shape[:-1], 1), initial, flat.dtype), flat], axis=-1)
    if np.isnan(y).any():
        acc = y[..., 0]
        for k in range(1, y.shape[-1]):
            acc = complex_extremum(acc, y[..., k], for_max=for_max)
        return acc
    best = np.max if for_max else np.min
    attains = y.real == best(y.real, axis=-1, keepdims=True)
    imag = best(np.where(attains, y.imag, -np.inf if for_max else np.inf), axis=-1, keepdims=True)
    attains &= y.imag == imag
    last = y.shape[-1] - 1 - np.argmax(attains[..., ::-1], -1)
    return np.take_along_axis(y, last[..., None], -1)[..., 0]


def xla_zero_of_extremum(out, x, seen, *, for_max: bool):
    """A max (``for_max``) or min reduction or scan ``out`` with XLA's zero: where it is a zero,
    +0 for a max that saw a +0 (``seen(zeros)``: whether the operand's ``zeros`` of the other sign,
    a boolean array, reduced or scanned with ``logical_or`` like ``out``, hold one), else -0; -0
    for a min that saw a -0, else +0."""
    out = np.asarray(out)
    zero = np.equal(out, 0)
    if _dt.is_float(out.dtype) and zero.any():
        x = np.asarray(x)
        sign = np.signbit(x)
        seen = seen(np.logical_and(np.equal(x, 0), np.logical_not(sign) if for_max else sign))
        plus = seen if for_max else np.logical_not(seen)
        out = np.where(zero, np.where(plus, 0.0, -0.0), out).astype(out.dtype)
    return out


def checked_impl(abstract_eval: Callable, impl: Callable) -> Callable:
    """``impl`` preceded by ``abstract_eval`` on its operands' avals, so an eager call raises the
    same shape/dtype error (naming the op and the fix) as a traced one, where NumPy would fail with
    an unrelated message or silently broadcast. Used by the structural, indexing and sorting ops
    (a few microseconds; the hot elementwise ops rely on the NumPy surface's checks instead)."""

    def run(*args, **params):
        abstract_eval(*[core.get_aval(a) for a in args], **params)
        return impl(*args, **params)

    run.__name__ = getattr(impl, "__name__", "impl")
    return run


def unop_abstract_eval(name: str, accepted: Callable[[np.dtype], bool] | None, result_dtype=None):
    def abstract_eval(x: ShapedArray, **params) -> ShapedArray:
        if accepted is not None and not accepted(x.dtype):
            raise TypeError(f"{name} does not accept dtype {x.dtype.name}")
        dtype = x.dtype if result_dtype is None else result_dtype
        # (JAX's weak-type rule holds for a bool result too: is_finite of a Python float is weak)
        return ShapedArray(x.shape, dtype, x.weak_type)

    return abstract_eval


def broadcast_operand_shapes(name: str, avals) -> tuple[int, ...]:
    """The result shape of an n-ary elementwise primitive (NOTE: [elementwise operand contract]):
    0-d operands broadcast; the others share one rank, and per dimension their sizes are equal or 1.

    >>> broadcast_operand_shapes("mul", [ShapedArray((2, 1), np.float32), ShapedArray((1, 3), np.float32)])
    (2, 3)
    """
    shapes = [a.shape for a in avals if a.shape != ()]
    if not shapes:
        return ()
    first = shapes[0]
    if all(s == first for s in shapes):
        return first
    if len({len(s) for s in shapes}) != 1:
        raise TypeError(
            f"{name}: arrays must have the same number of dimensions, got "
            + "{"
            + ", ".join(str(r) for r in sorted({len(s) for s in shapes}))
            + "}"
            + ". Broadcast them first (funcgrad.numpy does this for you)."
        )
    out = []
    for sizes in zip(*shapes):
        big = {d for d in sizes if d != 1}
        if len(big) > 1:
            raise TypeError(
                f"{name} got incompatible shapes for broadcasting: "
                + ", ".join(str(tuple(s)) for s in shapes)
                + ". Broadcast them first (funcgrad.numpy does this for you)."
            )
        out.append(big.pop() if big else 1)
    return tuple(out)


def naryop_abstract_eval(name: str, accepted: Callable[[np.dtype], bool] | None, result_dtype=None):
    def abstract_eval(*avals, **params) -> ShapedArray:
        if len(avals) == 2:
            a, b = avals
            if a.dtype == b.dtype and a.shape == b.shape and (accepted is None or accepted(a.dtype)):
                weak = a.weak_type and b.weak_type
                return ShapedArray(a.shape, a.dtype if result_dtype is None else result_dtype, weak)
        dtypes = {a.dtype for a in avals}
        if len(dtypes) > 1:
            raise TypeError(
                f"{name} requires operands of one dtype, got "
                + ", ".join(a.str_short() for a in avals)
                + ". Convert them first (funcgrad.numpy promotes dtypes for you)."
            )
        dtype = avals[0].dtype
        if accepted is not None and not accepted(dtype):
            raise TypeError(f"{name} does not accept dtype {dtype.name}")
        shape = broadcast_operand_shapes(name, avals)
        # (JAX's rule: weak when every operand is, a comparison's bool too: jnp.equal(1, 1.))
        weak = all(a.weak_type for a in avals)
        return ShapedArray(shape, dtype if result_dtype is None else result_dtype, weak)

    return abstract_eval


# ----------------------------------------------------------------------------------------------
# Batching


def move_to_front(x, dim: int | None):
    if dim is None or dim == 0:
        return x
    return hooks.moveaxis(x, dim, 0)


def front_batch(primitive: Primitive, *dim_params: str) -> Callable:
    """The batch rule of a primitive of one operand whose batch dimension can simply go first:
    each parameter named in ``dim_params`` (a dimension, or a tuple of them) moves up by one.

    >>> from funcgrad.primitives.structure import squeeze_p
    >>> front_batch(squeeze_p, "dimensions")(3, [np.ones((1, 3))], [1], dimensions=(0,))[0].shape
    (3,)
    """

    def batch(axis_size, vals, dims, **params):
        for name in dim_params:
            d = params[name]
            params[name] = tuple(i + 1 for i in d) if isinstance(d, tuple) else d + 1
        return primitive.bind(move_to_front(vals[0], dims[0]), **params), 0

    batch.__name__ = f"{primitive.name}_batch"
    return batch


def to_front(x, dim: int | None, axis_size: int):
    """``x`` with its batch dimension first (created by broadcasting if ``x`` is unbatched)."""
    if dim is None:
        return hooks.broadcast_batch(x, axis_size, 0)
    return move_to_front(x, dim)


def reduction_batch(primitive: Primitive, moved: Callable[[dict], dict], refusal: str) -> Callable:
    """The batch rule of a generic reduction (``lax.reduce``, ``lax.reduce_window``: n operands,
    their n scalar initial values, the reducer's ``jaxpr``): the operands' batch dimension goes
    first (``moved(params)``: the parameters that say so); the initial values must be unbatched,
    ``refusal`` (a ValueError) says why otherwise."""

    def batch(axis_size, vals, dims, *, jaxpr, **params):
        n = len(vals) // 2
        if any(d is not None for d in dims[n:]):
            raise ValueError(refusal)
        operands = [to_front(v, d, axis_size) for v, d in zip(vals[:n], dims[:n])]
        return primitive.bind(*operands, *vals[n:], jaxpr=jaxpr, **moved(params)), [0] * n

    batch.__name__ = f"{primitive.name}_batch"
    return batch


def elementwise_batch(primitive: Primitive):
    """Batch rule for n-ary elementwise primitives (JAX's ``broadcast_batcher``): operands batched
    along one dimension, with scalars, bind as they are; otherwise batch dimensions go to the
    front, an unbatched operand gets a size-1 one and a batched scalar trailing size-1 ones, and the
    primitive broadcasts them (NOTE: [elementwise operand contract])."""

    def rule(axis_size, vals, dims, **params):
        first = next(d for d in dims if d is not None)
        shape = aval_of(vals[dims.index(first)]).shape
        if all(d == first and aval_of(v).shape == shape for v, d in zip(vals, dims) if aval_of(v).ndim):
            return primitive.bind(*vals, **params), first
        args = [
            v
            if aval_of(v).ndim == 0
            else (hooks.broadcast_batch(v, 1, 0) if d is None else move_to_front(v, d))
            for v, d in zip(vals, dims)
        ]
        ndim = max(aval_of(v).ndim for v in args)
        args = [v if d is None else expand_trailing(v, ndim) for v, d in zip(args, dims)]
        return primitive.bind(*args, **params), 0

    return rule


def expand_trailing(x, ndim: int):
    """``x`` with trailing size-1 dimensions up to rank ``ndim`` (a batched scalar meeting
    operands of higher rank)."""
    shape = aval_of(x).shape
    if len(shape) == ndim:
        return x
    return hooks.broadcast_in_dim(x, shape + (1,) * (ndim - len(shape)), tuple(range(len(shape))))


# ----------------------------------------------------------------------------------------------
# Declaring elementwise primitives


def unop(
    name: str,
    impl: Callable,
    jvp: Callable | None = None,
    *,
    accepted: Callable[[np.dtype], bool] | None = _dt.is_inexact,
    result_dtype=None,
    uses_answer: bool = False,
    **traits,
) -> Primitive:
    """Declare an elementwise unary primitive in one line.

    ``jvp(t, x)`` (or ``jvp(t, ans, x)`` with ``uses_answer``, as in ``defjvp``) is the tangent;
    ``jvp=None`` marks the primitive as not differentiable; ``traits`` are its facts
    (``Primitive.def_traits``, NOTE: [primitive traits]).

    >>> p = unop("demo_sin", np.sin, lambda t, x: t * np.cos(x), may_produce_nan=True)
    >>> p.traits.may_produce_nan, p.traits.not_differentiable
    (True, False)
    """
    p = Primitive(name)
    p.def_traits(**traits)
    p.def_impl(impl)
    p.def_abstract_eval(unop_abstract_eval(name, accepted, result_dtype))
    if result_dtype is not None:  # eagerly weak as staged (NOTE: [one eager step])
        p.weak_type_rule = lambda params: True
    p.def_batch(lambda axis_size, vals, dims, **params: (p.bind(*vals, **params), dims[0]))
    if jvp is None:
        defjvp_zero(p)
    else:
        defjvp(p, jvp, uses_answer=uses_answer)
    return p


def naryop(
    name: str,
    impl: Callable,
    *jvps: Callable | None,
    accepted: Callable[[np.dtype], bool] | None = None,
    result_dtype=None,
    differentiable: bool = True,
    **traits,
) -> Primitive:
    """Declare an elementwise n-ary primitive; ``jvps`` has one rule per operand; ``traits`` are
    its facts (``Primitive.def_traits``, NOTE: [primitive traits]).

    >>> naryop("demo_max", np.maximum, differentiable=False).traits.not_differentiable
    True
    """
    p = Primitive(name)
    p.def_traits(**traits)
    p.def_impl(impl)
    p.def_abstract_eval(naryop_abstract_eval(name, accepted, result_dtype))
    if result_dtype is not None:  # eagerly weak as staged (NOTE: [one eager step])
        p.weak_type_rule = lambda params: True
    p.def_batch(elementwise_batch(p))
    if differentiable:
        defjvp(p, *jvps)
    else:
        defjvp_zero(p)
    return p


def no_derivative(primitive: Primitive, why: str = "") -> None:
    """Give ``primitive`` JAX's answer for a primitive without a differentiation rule: a nonzero
    tangent raises ``NotImplementedError`` in JAX's words (``why``, funcgrad's reason, after them);
    symbolic-zero tangents pass, since JAX never calls a rule for them. Not ``defjvp_zero``: the
    derivative is refused, not zero (``zeta``, ``nextafter``, ``pmax``, the decompositions JAX does
    not differentiate either, NOTE: [spectral derivatives]).

    >>> from funcgrad.primitives import special
    >>> import funcgrad
    >>> funcgrad.grad(lambda x: special.zeta_p.bind(x, 2.0))(3.0)
    Traceback (most recent call last):
    NotImplementedError: Differentiation rule for 'zeta' not implemented...
    """

    def jvp(primals, tangents, **params):
        if any(type(t) is not Zero for t in tangents):
            reason = f": {why}" if why else ""
            raise NotImplementedError(f"Differentiation rule for '{primitive.name}' not implemented{reason}")
        out = primitive.bind(*primals, **params)
        if primitive.multiple_results:
            return out, [Zero.from_primal_value(o) for o in out]
        return out, Zero.from_primal_value(out)

    primitive.def_jvp(jvp)


def unbroadcast(ct, aval: ShapedArray):
    """A cotangent of an n-ary elementwise primitive's result summed down to one operand's
    ``aval``: over every dimension a 0-d operand broadcast to, or over the size-1 dimensions the
    primitive stretched (NOTE: [elementwise operand contract]).

    >>> from funcgrad.primitives import elementwise as ew  # registers the kernel's array ops
    >>> unbroadcast(np.ones((2, 3), np.float32), ShapedArray((2, 1), np.float32)).shape
    (2, 1)
    """
    shape = aval_of(ct).shape
    if shape == aval.shape:
        return ct
    if aval.shape == ():
        return hooks.sum_to_scalar(ct)
    axes = tuple(i for i, (c, a) in enumerate(zip(shape, aval.shape)) if c != a)
    return hooks.reshape(hooks.reduce_sum(ct, axes), aval.shape)


def broadcast_to_shape(t, shape: tuple[int, ...]):
    """``t`` (an operand's tangent, of a 0-d shape or one with size-1 dimensions) broadcast to the
    result's ``shape`` (NOTE: [elementwise operand contract])."""
    t_shape = aval_of(t).shape
    if t_shape == shape:
        return t
    if t_shape == ():
        return hooks.broadcast_in_dim(t, shape, ())
    keep = tuple(i for i, (a, b) in enumerate(zip(t_shape, shape)) if a == b)
    return hooks.broadcast_in_dim(hooks.reshape(t, tuple(shape[i] for i in keep)), shape, keep)


def bilinear_jvp(primitive: Primitive) -> Callable:
    """The JVP of a primitive linear in each of its two operands separately (``dot_general``,
    ``conv_general_dilated``): ``f(t_lhs, rhs) + f(lhs, t_rhs)``, skipping symbolic zeros."""

    def jvp(primals, tangents, **params):
        (lhs, rhs), (t_lhs, t_rhs) = primals, tangents
        out = primitive.bind(lhs, rhs, **params)
        total = Zero.from_primal_value(out)
        if total.aval.dtype == _dt.float0:
            # An integer ``preferred_element_type``: integer values have float0 tangents, zeros that
            # never enter arithmetic (NOTE: [float0 tangents are zeros]); JAX's rule makes an int
            # tangent here, which its own loops and calls then reject or drop.
            return out, total
        if type(t_lhs) is not Zero:
            total = primitive.bind(t_lhs, rhs, **params)
        if type(t_rhs) is not Zero:
            term = primitive.bind(lhs, t_rhs, **params)
            total = term if type(total) is Zero else hooks.add_any(total, term)
        return out, total

    return jvp


# ----------------------------------------------------------------------------------------------
# Taylor series (jet) helpers: a series is one list ``[x0, x1, ..., xK]`` (primal first) in which
# ``None`` is a zero term, so Cauchy sums skip products with a zero factor (NOTE: [Taylor
# coefficients] and NOTE: [zero series] in funcgrad/kernel/taylor.py).


def full_series(primal, terms) -> list:
    """``[primal, *terms]`` with each ``Zero`` term as ``None``."""
    return [primal, *(None if type(t) is Zero else t for t in terms)]


def split_series(series: list):
    """``(primal, kernel terms)`` of a full series (``None`` terms as ``Zero``)."""
    y0 = series[0]
    return y0, [Zero.from_primal_value(y0) if t is None else t for t in series[1:]]


def series_add(a, b):
    """``a + b`` of two terms, either of which may be ``None`` (zero)."""
    if a is None:
        return b
    return a if b is None else hooks.add_any(a, b)


def series_total(terms):
    """The sum of ``terms`` (``None`` when all are zero)."""
    out = None
    for t in terms:
        out = series_add(out, t)
    return out


def bilinear_taylor(primitive: Primitive) -> Callable:
    """The Taylor rule of a primitive linear in each of two operands: the Cauchy product
    ``y_k = sum_j f(a_j, b_(k-j))`` (``dot_general``, ``conv_general_dilated``)."""

    def rule(primals, series, **params):
        (a0, b0), (sa, sb) = primals, series
        a, b = full_series(a0, sa), full_series(b0, sb)
        out = [primitive.bind(a0, b0, **params)]
        for k in range(1, len(a)):
            terms = [
                primitive.bind(a[j], b[k - j], **params)
                for j in range(k + 1)
                if a[j] is not None and b[k - j] is not None
            ]
            out.append(series_total(terms))
        return split_series(out)

    return rule


def size_extremum(a, b, op: str):
    """``max``/``min`` (``op``) of two sizes, where one may be a size traced by a symbolic export
    that computes it with its expression (``SymbolicSize.extremum`` in funcgrad/export: a shape
    rule writes ``min(m, n)`` as JAX's ``core.min_dim``, not a comparison of ``m`` and ``n``).

    >>> size_extremum(3, 5, "min"), size_extremum(3, 5, "max")
    (3, 5)
    """
    if hasattr(a, "extremum"):
        return a.extremum(b, op)
    if hasattr(b, "extremum"):
        return b.extremum(a, op, reverse=True)
    return max(a, b) if op == "max" else min(a, b)
