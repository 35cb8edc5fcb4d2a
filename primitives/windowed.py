"""Windowed reductions: reduce_window_sum/max/min, the generic reduce_window, and the two pooling
gradient primitives select_and_gather_add / select_and_scatter_add.

Layer: primitives. Imports the funcgrad kernel (core, ad, batching, partial_eval), numpy and the
sibling families ``conv`` (window views, paddings), ``structure`` and ``reductions`` (the generic
reducer's operand checks). The public
``lax.reduce_window`` is in ``funcgrad/lax/windowed.py``; the lowerings (``stablehlo.reduce_window``,
``stablehlo.select_and_scatter``) in ``xla_bridge/rules/windowed.py``.

Every primitive takes the window parameters of XLA's ReduceWindow, canonical: ``window_dimensions``,
``window_strides``, ``padding`` (``(lo, hi)`` pairs), ``base_dilation``, ``window_dilation`` (one
entry per operand dimension). The eager impls pad and dilate once (``conv.dilate_pad``), take a
strided window view (``conv.window_view``, no copy) and reduce over the window axes in NumPy.

# NOTE: [max pooling derivatives]
# As in JAX: the tangent of reduce_window_max/min is ``select_and_gather_add(t, x)``, the tangent
# at the element each window selects (the first maximal one, ``select`` = "ge"; "le" for min) --
# linear in ``t``. Its transpose is ``select_and_scatter_add(ct, x)``, which adds each window's
# cotangent into the selected element, and the transpose of that is select_and_gather_add again,
# so derivatives of every order exist. Base dilation is handled in the transpose by padding the
# operand with the selection's identity. A window dilation has a JVP but no VJP: the transpose of
# select_and_gather_add refuses it, as JAX's does (select_and_scatter_add itself still takes one:
# XLA's select_and_scatter has no window dilation, so that case lowers to a variadic
# reduce_window computing each window's selected index and a scatter-add).

``reduce_window_sum`` is linear; its transpose pads the cotangent and sums windows again (JAX's
rule, through ``conv.conv_general_vjp_lhs_padding``). The generic ``reduce_window_p`` carries its
reducer as a closed jaxpr of ``2n`` scalars ``(acc..., x...) -> n`` values; its JVP reduces
(primal, tangent) pairs with the reducer's JVP, as JAX does, so its primal results depend on the
tangents and linearizing it fails with JAX's 'Linearization failed to produce known values' (reverse
mode needs one of the monoid primitives above, as in JAX).
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives._rules import (
    JET_OF_SELECTION,
    JET_OF_SUBPROGRAM,
    aval_of,
    checked_impl,
    reduction_batch,
    to_front,
)
from funcgrad.primitives.conv import conv_general_vjp_lhs_padding, dilate_pad, dilate_shape, window_view
from funcgrad.primitives.reductions import reducer_operands
from funcgrad.primitives.structure import pad, slice_

from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.ad import Zero, instantiate, is_undefined_primal, jvp_jaxpr, linear_taylor
from funcgrad.kernel.batching import vmap_flat
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.ir import ClosedJaxpr, ShapedArray
from funcgrad.kernel.partial_eval import trace_to_jaxpr

__all__ = [
    "reduce_window_max_p",
    "reduce_window_min_p",
    "reduce_window_p",
    "reduce_window_shape_tuple",
    "reduce_window_sum_p",
    "select_and_gather_add_p",
    "select_and_scatter_add_p",
    "window_params",
]

_WINDOW = ("window_dimensions", "window_strides", "padding", "base_dilation", "window_dilation")


def window_params(
    ndim, window_dimensions, window_strides=None, padding=None, base_dilation=None, window_dilation=None
) -> dict:
    """The canonical window parameters (tuples of ints; defaults: unit strides and dilations, no
    padding); ``padding`` must already be explicit pairs."""
    ones = (1,) * ndim
    return dict(
        window_dimensions=tuple(int(d) for d in window_dimensions),
        window_strides=ones if window_strides is None else tuple(int(s) for s in window_strides),
        padding=((0, 0),) * ndim if padding is None else tuple((int(lo), int(hi)) for lo, hi in padding),
        base_dilation=ones if base_dilation is None else tuple(int(d) for d in base_dilation),
        window_dilation=ones if window_dilation is None else tuple(int(d) for d in window_dilation),
    )


def reduce_window_shape_tuple(
    operand_shape, window_dimensions, window_strides, padding, base_dilation=None, window_dilation=None
):
    """Output shape of a windowed reduction (``jax.lax.reduce_window_shape_tuple``).

    >>> reduce_window_shape_tuple((4, 6), (2, 2), (2, 2), ((0, 0), (1, 1)))
    (2, 4)
    """
    if base_dilation is not None:
        operand_shape = dilate_shape(operand_shape, base_dilation)
    if window_dilation is not None:
        window_dimensions = dilate_shape(window_dimensions, window_dilation)
    out = []
    for n, w, s, (lo, hi) in zip(operand_shape, window_dimensions, window_strides, padding):
        padded = n + lo + hi
        out.append(0 if padded < w else (padded - w) // s + 1)
    return tuple(out)


def _check_window(
    name, x: ShapedArray, window_dimensions, window_strides, padding, base_dilation, window_dilation
):
    if len(window_dimensions) != x.ndim:  # (JAX's words and order first)
        raise TypeError(
            "reduce_window got the wrong number of window_dimensions for operand: got operand shape "
            f"{x.shape} with window_dimensions {tuple(window_dimensions)}."
        )
    for what, v in (
        ("window_strides", window_strides),
        ("base_dilation", base_dilation),
        ("window_dilation", window_dilation),
    ):
        if len(v) != len(window_dimensions):
            raise TypeError(
                f"reduce_window got inconsistent {what} and window_dimensions: got {what} {tuple(v)} "
                f"and window_dimensions {tuple(window_dimensions)}."
            )
    for what, v in zip(_WINDOW, (window_dimensions, window_strides, padding, base_dilation, window_dilation)):
        if len(v) != x.ndim:
            raise TypeError(
                f"{name}: {what} needs one entry per dimension of the operand {x.str_short()}, got {tuple(v)}"
            )
    for what, v in (
        ("window_dimensions", window_dimensions),
        ("window_strides", window_strides),
        ("base_dilation", base_dilation),
        ("window_dilation", window_dilation),
    ):
        if any(int(d) < 1 for d in v):  # (JAX's words)
            raise TypeError(
                f"reduce_window {what} must have every element be strictly positive, got {tuple(v)}."
            )
    dilated = dilate_shape(x.shape, base_dilation)
    for i, (n, (lo, hi)) in enumerate(zip(dilated, padding)):
        if n + lo + hi < 0:
            raise ValueError(
                f"{name}: padding {tuple(padding)} crops dimension {i} of the operand {x.str_short()} "
                f"to a negative size"
            )
    return reduce_window_shape_tuple(
        x.shape, window_dimensions, window_strides, padding, base_dilation, window_dilation
    )


def _identity(kind, dtype):
    """The identity of max ("ge" selects the max) or min ("le") for ``dtype``."""
    return _dt.extremum_identity(dtype, for_max=kind == "ge")


def _windows(x, fill, *, window_dimensions, window_strides, padding, base_dilation, window_dilation):
    """The window view (``out + window``) of ``x`` padded and dilated with ``fill``, and ``out``."""
    x = np.asarray(x)
    xp = dilate_pad(x, np.asarray(fill, x.dtype), padding, base_dilation)
    view = window_view(xp, window_dimensions, window_strides, window_dilation)
    return view, view.shape[: x.ndim]


# Windows with at most this many elements are folded offset by offset (one vectorised pass per
# offset over all windows: pooling); larger ones are copied out and reduced in one NumPy call.
_FOLD_LIMIT = 64


def _offsets(window_dimensions):
    return list(np.ndindex(*window_dimensions))


def _batch_window(primitive):
    """Batch rule of a windowed primitive: a unit window over the vmapped axis (moved to the front)."""

    def rule(axis_size, vals, dims, **params):
        vals = [to_front(v, d, axis_size) for v, d in zip(vals, dims)]
        new = {k: v for k, v in params.items() if k not in _WINDOW}
        for k in _WINDOW:
            if k in params:
                unit = (0, 0) if k == "padding" else 1
                new[k] = (unit, *params[k])
        return primitive.bind(*vals, **new), 0

    return rule


# ----------------------------------------------------------------------------------------------
# reduce_window_sum (linear)


def _sum_abstract_eval(x, **params):
    if x.dtype == np.bool_ or not (_dt.is_inexact(x.dtype) or x.dtype.kind in "iu"):
        raise TypeError(f"reduce_window_sum requires a numeric operand, got {x.str_short()}")
    return ShapedArray(_check_window("reduce_window_sum", x, **params), x.dtype, x.weak_type)


def _fold(view, out, ufunc, np_reduce):
    """Reduce the window axes of a window view: offset by offset for small windows (contiguous
    passes over the outputs), one strided NumPy reduction otherwise."""
    offsets = _offsets(view.shape[len(out) :])
    if len(offsets) > _FOLD_LIMIT:
        return np.asarray(np_reduce(view, tuple(range(len(out), view.ndim))))
    lead = (slice(None),) * len(out)
    acc = np.array(view[lead + offsets[0]])
    for off in offsets[1:]:
        ufunc(acc, view[lead + off], out=acc)
    return acc


def _sum_impl(x, **params):
    view, out = _windows(x, 0, **params)
    if view.size == 0:
        return np.zeros(out, np.asarray(x).dtype)
    return _fold(view, out, np.add, lambda v, axis: v.sum(axis=axis, dtype=v.dtype))


def _sum_transpose(ct, x, *, window_dimensions, window_strides, padding, base_dilation, window_dilation):
    if type(ct) is Zero:
        return [Zero(x.aval)]
    in_shape = x.aval.shape
    ct_shape = aval_of(ct).shape
    pads = conv_general_vjp_lhs_padding(
        in_shape, window_dimensions, window_strides, ct_shape, padding, base_dilation, window_dilation
    )
    config = [(lo, hi, s - 1) for (lo, hi), s in zip(pads, window_strides)]
    padded = pad(ct, np.zeros((), aval_of(ct).dtype), config)
    ones = (1,) * len(in_shape)
    out = reduce_window_sum_p.bind(
        padded,
        window_dimensions=window_dimensions,
        window_strides=base_dilation,
        padding=((0, 0),) * len(in_shape),
        base_dilation=ones,
        window_dilation=window_dilation,
    )
    return [out]


def _linear_window_primitive(name, abstract_eval, impl, transpose):
    """A windowed primitive linear in its first operand (the others, if any, fixed)."""
    p = Primitive(name)
    p.def_impl(checked_impl(abstract_eval, impl))
    p.def_abstract_eval(abstract_eval)
    p.def_jvp(_linear_jvp(p))
    p.def_transpose(transpose)
    p.def_batch(_batch_window(p))
    p.def_traits(linear=True)
    return p


def _linear_jvp(primitive):
    def jvp(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        if type(tangents[0]) is Zero:
            return out, Zero.from_primal_value(out)
        return out, primitive.bind(instantiate(tangents[0]), *primals[1:], **params)

    return jvp


reduce_window_sum_p = _linear_window_primitive(
    "reduce_window_sum", _sum_abstract_eval, _sum_impl, _sum_transpose
)
reduce_window_sum_p.def_traits(may_produce_nan=True)
reduce_window_sum_p.def_taylor(linear_taylor(reduce_window_sum_p))  # (linear in its inexact operands)
# (a float16/bfloat16 window sum adds in XLA's order, each partial result rounded to the half type:
# NumPy's loop, one element after another, stops a bfloat16 sum of 1000 values in [0, 1) at 256)
reduce_window_sum_p.def_traits(half_floats_compiled=True)


# ----------------------------------------------------------------------------------------------
# reduce_window_max / reduce_window_min


def _chooser(kind):
    name = "reduce_window_max" if kind == "ge" else "reduce_window_min"
    np_reduce = np.max if kind == "ge" else np.min
    ufunc = np.maximum if kind == "ge" else np.minimum

    def abstract_eval(x, **params):
        return ShapedArray(_check_window(name, x, **params), x.dtype, x.weak_type)

    def impl(x, **params):
        x = np.asarray(x)
        view, out = _windows(x, _identity(kind, x.dtype), **params)
        if view.size == 0:
            return np.full(out, _identity(kind, x.dtype), x.dtype)
        return _fold(view, out, ufunc, np_reduce)

    def jvp(primals, tangents, **params):
        (x,), (t,) = primals, tangents
        out = p.bind(x, **params)
        if type(t) is Zero or not _dt.is_inexact(aval_of(x).dtype):
            return out, Zero.from_primal_value(out)
        return out, select_and_gather_add_p.bind(t, x, select=kind, **params)

    p = Primitive(name)
    p.def_impl(checked_impl(abstract_eval, impl))
    p.def_abstract_eval(abstract_eval)
    p.def_jvp(jvp)
    p.def_batch(_batch_window(p))
    return p


reduce_window_max_p = _chooser("ge")
reduce_window_max_p.def_traits(taylor_from_jvp=JET_OF_SELECTION)
reduce_window_min_p = _chooser("le")
reduce_window_min_p.def_traits(taylor_from_jvp=JET_OF_SELECTION)


# ----------------------------------------------------------------------------------------------
# select_and_gather_add(t, x): the tangent at each window's selected element (linear in t)


def _check_select(name, select):
    if select not in ("ge", "le"):
        raise TypeError(f"{name}: select must be 'ge' (max) or 'le' (min), got {select!r}")


def _gather_abstract_eval(t, x, *, select, **params):
    _check_select("select_and_gather_add", select)
    if t.shape != x.shape or t.dtype != x.dtype:
        raise TypeError(
            f"select_and_gather_add: tangents {t.str_short()} and operand {x.str_short()} must have one "
            "shape and dtype"
        )
    return ShapedArray(_check_window("select_and_gather_add", x, **params), t.dtype, t.weak_type)


def _selected(x, select, params):
    """Per output window: the flat offset (in window order) of the element ``select`` picks first,
    and the output shape."""
    x = np.asarray(x)
    view, out = _windows(x, _identity(select, x.dtype), **params)
    nd = len(out)
    offsets = _offsets(params["window_dimensions"])
    if len(offsets) > _FOLD_LIMIT:
        flat = view.reshape(*out, -1)
        return (np.argmax(flat, axis=-1) if select == "ge" else np.argmin(flat, axis=-1)), out
    better, keep = (np.greater, np.maximum) if select == "ge" else (np.less, np.minimum)
    best = np.array(view[(slice(None),) * nd + offsets[0]])
    best_k = np.zeros(out, np.uint8)  # at most _FOLD_LIMIT offsets
    take = np.empty(out, np.bool_)
    step = np.empty(out, np.uint8)
    for k, off in enumerate(offsets[1:], 1):
        candidate = view[(slice(None),) * nd + off]
        better(candidate, best, out=take)  # strictly better: ties keep the first, like argmax
        # best_k = take ? k : best_k without a data-dependent branch (masked stores on random masks
        # are ~10x slower): best_k += take * (k - best_k), in wrapping uint8 arithmetic.
        np.subtract(np.uint8(k), best_k, out=step)
        np.multiply(step, take.view(np.uint8), out=step)
        np.add(best_k, step, out=best_k)
        keep(best, candidate, out=best)
    return best_k, out


def _accumulate_where(acc, values, hit, exact):
    """``acc += values`` where ``hit``: a multiply by the 0/1 mask when ``values`` are finite (no
    data-dependent branch), a masked add otherwise (``inf * 0`` would make NaN)."""
    if exact:
        acc += values * hit.astype(values.dtype)
    else:
        np.add(acc, values, out=acc, where=hit)


def _all_finite(x) -> bool:
    return x.dtype.kind not in "fc" or bool(np.isfinite(x).all())


def _gather_impl(t, x, *, select, **params):
    t = np.asarray(t)
    out_shape = reduce_window_shape_tuple(t.shape, *(params[k] for k in _WINDOW))
    if int(np.prod(out_shape, dtype=np.int64)) == 0:
        return np.zeros(out_shape, t.dtype)
    idx, out = _selected(x, select, params)
    tview, _ = _windows(t, 0, **params)
    offsets = _offsets(params["window_dimensions"])
    if len(offsets) > _FOLD_LIMIT:
        flat_t = tview.reshape(*out, -1)
        return np.take_along_axis(flat_t, idx[..., None], axis=-1)[..., 0]
    result = np.zeros(out, t.dtype)
    exact = _all_finite(t)
    for k, off in enumerate(offsets):
        _accumulate_where(result, tview[(slice(None),) * len(out) + off], idx == k, exact)
    return result


def _gather_transpose(
    ct, t, x, *, select, window_dimensions, window_strides, padding, base_dilation, window_dilation
):
    if type(ct) is Zero:
        return [Zero(t.aval), None]
    if is_undefined_primal(x):
        raise TypeError("select_and_gather_add is linear in its tangents only, not in the operand")
    if any(d != 1 for d in window_dilation):  # (JAX's transpose refuses it, in these words)
        raise NotImplementedError(
            "VJP not implemented for select_and_gather (MaxPool) with window dilation, got "
            f"window_dilation={window_dilation}."
        )
    operand = x
    dilated = any(d != 1 for d in base_dilation)
    if dilated:
        fill = np.asarray(_identity(select, aval_of(x).dtype), aval_of(x).dtype)
        operand = pad(operand, fill, [(0, 0, d - 1) for d in base_dilation])
    out = select_and_scatter_add_p.bind(
        instantiate(ct),
        operand,
        select=select,
        window_dimensions=window_dimensions,
        window_strides=window_strides,
        padding=padding,
        window_dilation=window_dilation,
    )
    if dilated:
        out = slice_(out, (0,) * len(base_dilation), aval_of(out).shape, base_dilation)
    return [out, None]


select_and_gather_add_p = _linear_window_primitive(
    "select_and_gather_add", _gather_abstract_eval, _gather_impl, _gather_transpose
)
select_and_gather_add_p.def_traits(taylor_from_jvp=JET_OF_SELECTION)


# ----------------------------------------------------------------------------------------------
# select_and_scatter_add(s, x): add each window's s into the element it selects (linear in s)

_SCATTER_WINDOW = ("window_dimensions", "window_strides", "padding", "window_dilation")


def _scatter_abstract_eval(s, x, *, select, window_dimensions, window_strides, padding, window_dilation):
    _check_select("select_and_scatter_add", select)
    ones = (1,) * x.ndim
    out = _check_window(
        "select_and_scatter_add", x, window_dimensions, window_strides, padding, ones, window_dilation
    )
    if s.shape != out or s.dtype != x.dtype:
        raise TypeError(
            f"select_and_scatter_add: source {s.str_short()} must have the windows' shape {out} and the "
            f"operand's dtype ({x.str_short()})"
        )
    return ShapedArray(x.shape, s.dtype, s.weak_type)


def _scatter_impl(s, x, *, select, window_dimensions, window_strides, padding, window_dilation):
    s, x = np.asarray(s), np.asarray(x)
    ones = (1,) * x.ndim
    params = dict(
        window_dimensions=window_dimensions,
        window_strides=window_strides,
        padding=padding,
        base_dilation=ones,
        window_dilation=window_dilation,
    )
    padded_shape = [n + lo + hi for n, (lo, hi) in zip(x.shape, padding)]
    if s.size == 0:
        return np.zeros(x.shape, s.dtype)
    idx, out = _selected(x, select, params)
    acc = np.zeros(padded_shape, s.dtype)
    exact = _all_finite(s)
    # One pass per window offset: windows sharing an offset hit distinct elements, so a strided
    # in-place add never collides.
    for k, off in enumerate(_offsets(window_dimensions)):
        target = tuple(
            slice(o * d, o * d + (n - 1) * st + 1, st) if n else slice(0, 0)
            for o, d, n, st in zip(off, window_dilation, out, window_strides)
        )
        _accumulate_where(acc[target], s, idx == k, exact)
    # Back to operand coordinates (edge padding dropped; negative padding re-grows with zeros).
    return dilate_pad(acc, 0, [(-lo, -hi) for lo, hi in padding], ones)


def _scatter_transpose(ct, s, x, *, select, window_dimensions, window_strides, padding, window_dilation):
    if type(ct) is Zero:
        return [Zero(s.aval), None]
    if is_undefined_primal(x):
        raise TypeError("select_and_scatter_add is linear in its source only, not in the operand")
    ones = (1,) * len(window_dimensions)
    out = select_and_gather_add_p.bind(
        instantiate(ct),
        x,
        select=select,
        window_dimensions=window_dimensions,
        window_strides=window_strides,
        padding=padding,
        base_dilation=ones,
        window_dilation=window_dilation,
    )
    return [out, None]


select_and_scatter_add_p = _linear_window_primitive(
    "select_and_scatter_add", _scatter_abstract_eval, _scatter_impl, _scatter_transpose
)
select_and_scatter_add_p.def_traits(taylor_from_jvp=JET_OF_SELECTION)


# ----------------------------------------------------------------------------------------------
# reduce_window: any reducer, as a closed jaxpr (acc..., x...) -> acc...


def _generic_abstract_eval(*args, jaxpr, **params):
    inits = args[len(args) // 2 :]
    if not len(args) % 2 and any(i.ndim != 0 for i in inits):  # (JAX's words, before the others)
        raise TypeError(
            "reduce_window expected init_values to be scalars but init_values have shapes "
            f"{[i.shape for i in inits]}."
        )
    operands, _ = reducer_operands("reduce_window", args)
    shape = _check_window("reduce_window", operands[0], **params)
    return [ShapedArray(shape, o.dtype, False) for o in operands]


def _apply(jaxpr: ClosedJaxpr, args, size):
    """Run the scalar reducer on flat arrays of ``size`` lanes (vectorised by the kernel's vmap)."""
    return vmap_flat(
        lambda *a: core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *a),
        size,
        [0] * len(args),
        [0] * (len(args) // 2),
        args,
    )


def _generic_impl(*args, jaxpr, **params):
    n = len(args) // 2
    operands, inits = [np.asarray(a) for a in args[:n]], [np.asarray(a) for a in args[n:]]
    views = [_windows(o, i, **params)[0] for o, i in zip(operands, inits)]
    out = views[0].shape[: operands[0].ndim]
    size = int(np.prod(out, dtype=np.int64))
    accs = [np.full(size, i, o.dtype) for o, i in zip(operands, inits)]
    if size == 0:
        return [a.reshape(out) for a in accs]
    flats = [v.reshape(size, -1) for v in views]
    # As XLA's ReduceWindow (and jit's result): the padding and the holes of base dilation are not
    # elements of a window -- the reducer is applied to the operand's elements only, each window
    # starting from init_value once (a non-identity init_value showed where they were combined).
    real = _windows(np.ones(operands[0].shape, bool), False, **params)[0].reshape(size, -1)
    for k in range(flats[0].shape[1]):  # one vectorised step per window offset
        new = [np.asarray(a) for a in _apply(jaxpr, [*accs, *(f[:, k] for f in flats)], size)]
        m = real[:, k]
        accs = new if m.all() else [np.where(m, a, old) for a, old in zip(new, accs)]
    return [a.reshape(out) for a in accs]


def _generic_jvp(primals, tangents, *, jaxpr, **params):
    n = len(primals) // 2
    if any(type(t) is not Zero for t in tangents[n:]):
        raise TypeError(
            "reduce_window: differentiating with respect to init_value is not supported (as in JAX); "
            "make init_value a constant"
        )
    outs = reduce_window_p.bind(*primals, jaxpr=jaxpr, **params)
    if all(type(t) is Zero for t in tangents[:n]):
        return outs, [Zero.from_primal_value(o) for o in outs]
    jvp, _ = jvp_jaxpr(jaxpr, [True] * (2 * n), True)
    scalar = [ShapedArray((), aval_of(p).dtype) for p in primals[:n]]
    tscalar = [ShapedArray((), aval_of(instantiate(t)).dtype) for t in tangents[:n]]

    def pair_reducer(*args):
        # (acc_p, acc_t, x_p, x_t) -> (acc_p, acc_t): the reducer's JVP on (primal, tangent) pairs.
        ap, at, xp, xt = args[:n], args[n : 2 * n], args[2 * n : 3 * n], args[3 * n :]
        return core.eval_jaxpr(jvp.jaxpr, jvp.consts, *ap, *xp, *at, *xt)

    pair = trace_to_jaxpr(pair_reducer, [*scalar, *tscalar, *scalar, *tscalar])
    zeros = [np.zeros((), a.dtype) for a in tscalar]
    res = reduce_window_p.bind(
        *primals[:n], *map(instantiate, tangents[:n]), *primals[n:], *zeros, jaxpr=pair, **params
    )
    return res[:n], res[n:]


reduce_window_p = Primitive("reduce_window", multiple_results=True)
reduce_window_p.def_traits(jaxpr_params=("jaxpr",), taylor_from_jvp=JET_OF_SUBPROGRAM, may_produce_nan=True)
reduce_window_p.def_impl(checked_impl(_generic_abstract_eval, _generic_impl))
reduce_window_p.def_abstract_eval(_generic_abstract_eval)
reduce_window_p.def_jvp(_generic_jvp)
reduce_window_p.def_batch(
    reduction_batch(
        reduce_window_p,
        # (the batch dimension as one more window dimension: size 1, stride 1, no padding)
        lambda params: {k: ((0, 0) if k == "padding" else 1, *v) for k, v in params.items()},
        "reduce_window: init_value must not be batched by vmap (each window reduction starts from "
        "one scalar); pass it unbatched, e.g. with in_axes=None",
    )
)
