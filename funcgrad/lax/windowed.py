"""``funcgrad.lax`` windowed reductions: ``reduce_window`` and ``reduce_window_shape_tuple``, with
``jax.lax``'s signatures, over the windowed primitives (``primitives/windowed.py``).

Layer: surface. Imports the kernel (core, tree_util, partial_eval), the primitive catalog,
``funcgrad.numpy._core`` (conversion helpers) and the ``lax`` and ``numpy`` ufunc modules (to
recognise a monoid given as ``lax.add`` / ``lax.max`` / ``lax.min`` or their NumPy spellings).

As in JAX, ``reduce_window(x, init, op, ...)`` with ``op`` addition, maximum or minimum and
``init`` its identity (0, -inf / the smallest integer, +inf / the largest) binds the dedicated
monoid primitive, which has reverse-mode derivatives (sum pooling transposes to a windowed sum,
max pooling to ``select_and_scatter_add``, NOTE: [max pooling derivatives]); any other reducer
(or init value) is traced to a jaxpr and runs as the generic ``reduce_window`` primitive, with
forward-mode derivatives and batching.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.ir import ShapedArray
from funcgrad.kernel.partial_eval import trace_to_jaxpr
from funcgrad.lax import ops as lax_ops
from funcgrad.numpy import ufuncs as fnp_ufuncs
from funcgrad.numpy._core import asarray, aval
from funcgrad.primitives import windowed as wd
from funcgrad.primitives._rules import size_extremum
from funcgrad.primitives.conv import dilate_shape, padtype_to_pads
from funcgrad.primitives.windowed import reduce_window_shape_tuple

__all__ = ["reduce_window", "reduce_window_shape_tuple"]

_SUM = (lax_ops.add, fnp_ufuncs.add)
_MAX = (lax_ops.max, fnp_ufuncs.maximum)
_MIN = (lax_ops.min, fnp_ufuncs.minimum)


def _monoid_primitive(computation, init, dtype):
    """The dedicated primitive when ``computation`` is a known monoid and ``init`` (concrete) its
    identity -- for ``init``'s own dtype, as JAX's ``_get_monoid_window_reducer`` checks it: a
    Python ``-inf`` is max's identity whatever the operand, which then starts from its own."""
    if isinstance(init, core.Tracer):
        return None
    value = np.asarray(init)
    if value.shape != () or value.dtype == object:
        return None
    own = aval(asarray(init)).dtype  # (a Python scalar: the mode's default type, as JAX types it)
    if any(computation is f for f in _SUM) and value == 0:
        if dtype == np.bool_:  # (JAX's type and words)
            raise TypeError("operand to reduce_window_sum must have a number dtype, got bool")
        return wd.reduce_window_sum_p
    if any(computation is f for f in _MAX) and value == wd._identity("ge", own):
        return wd.reduce_window_max_p
    if any(computation is f for f in _MIN) and value == wd._identity("le", own):
        return wd.reduce_window_min_p
    return None


def _note_symbolic_windows(shape, dims, strides, padding, base_dilation, window_dilation) -> None:
    """While a symbolic export traces (its sizes carry their expressions, NOTE: [symbolic
    comparisons at sample sizes] in funcgrad/export/_polymorphic.py): each result size as JAX's
    ``core.stride_dim`` computes it, ``max((d + lo + hi - w) // s + 1, 0)``, so that the export
    writes ``max(- b + 9, 0)`` for a window of ``b`` over 8 elements; the traced sizes record it.
    (Dilated or SAME-padded windows keep the sample's sizes.)"""
    vals = (*shape, *dims, *(strides or ()))
    if not any(getattr(v, "traced", False) for v in vals) or len(dims) != len(shape):
        return
    if base_dilation is not None or window_dilation is not None:
        return
    if isinstance(padding, str):
        if padding != "VALID":
            return
        padding = [(0, 0)] * len(shape)
    for d, w, s, (lo, hi) in zip(shape, dims, strides or (1,) * len(shape), padding):
        size_extremum((d + lo + hi - w) // s + 1, 0, "max")


def reduce_window(
    operand,
    init_value,
    computation: Callable,
    window_dimensions,
    window_strides=None,
    padding="VALID",
    base_dilation=None,
    window_dilation=None,
):
    """Reduce every window of ``operand`` with ``computation`` starting from ``init_value`` (XLA's
    ReduceWindow): pooling, moving sums, cumulative reductions.

    ``operand`` and ``init_value`` may be matching pytrees (a variadic reduction; ``computation``
    then takes and returns such trees); ``window_strides``, ``base_dilation`` and
    ``window_dilation`` default to ones; ``padding`` is ``'VALID'``, ``'SAME'``, ``'SAME_LOWER'``
    or ``(lo, hi)`` pairs, one per dimension.

    >>> from funcgrad import lax
    >>> x = np.arange(10.0)
    >>> reduce_window(x, 1.0, lax.mul, (2,)).tolist()
    [0.0, 2.0, 6.0, 12.0, 20.0, 30.0, 42.0, 56.0, 72.0]
    >>> img = np.arange(16.0).reshape(1, 4, 4, 1)
    >>> reduce_window(img, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")[0, :, :, 0].tolist()
    [[5.0, 7.0], [13.0, 15.0]]
    """
    flat_ops, tree = tu.tree_flatten(operand)
    flat_inits, init_tree = tu.tree_flatten(init_value)
    if tree != init_tree:
        raise ValueError(
            f"lax.reduce_window: operand and init_value must have the same tree structure, got {tree} and "
            f"{init_tree}"
        )
    if not flat_ops:
        raise ValueError("lax.reduce_window: needs at least one operand")
    flat_ops = [asarray(o) for o in flat_ops]
    ndim = flat_ops[0].ndim
    _note_symbolic_windows(
        flat_ops[0].shape, window_dimensions, window_strides, padding, base_dilation, window_dilation
    )
    window_dimensions = tuple(int(d) for d in window_dimensions)
    if isinstance(padding, str):
        # JAX's rule, before any check of the ranks: the window dilated, the operand *not* (its
        # base_dilation is not seen: 'SAME' of a base-dilated operand keeps fewer outputs than
        # the dilated size would), the strides as given (none: an empty list)
        effective = (
            window_dimensions if window_dilation is None else dilate_shape(window_dimensions, window_dilation)
        )
        given = [] if window_strides is None else tuple(int(s) for s in window_strides)
        padding = padtype_to_pads(flat_ops[0].shape, effective, given, padding)
    if len(window_dimensions) != ndim:
        raise TypeError(  # (JAX's words)
            "reduce_window got the wrong number of window_dimensions for operand: got operand shape "
            f"{flat_ops[0].shape} with window_dimensions {window_dimensions}."
        )
    strides = (1,) * ndim if window_strides is None else tuple(int(s) for s in window_strides)
    params = wd.window_params(ndim, window_dimensions, strides, padding, base_dilation, window_dilation)
    if len(flat_ops) == 1:
        prim = _monoid_primitive(computation, flat_inits[0], flat_ops[0].dtype)
        if prim is not None:
            return tu.tree_unflatten(tree, [prim.bind(flat_ops[0], **params)])
    inits = [asarray(i) for i in flat_inits]
    if any(i.dtype != o.dtype for o, i in zip(flat_ops, inits)):
        # (JAX's type and words: a general reduction takes its init values in the operands' dtypes;
        # a Python scalar is the mode's default type there, not converted)
        raise TypeError(
            "reduce_window got inconsistent dtypes for operands and init_values: got operand dtypes "
            f"{[o.dtype for o in flat_ops]} and init_value dtypes {[i.dtype for i in inits]}."
        )
    jaxpr = trace_reducer(
        "lax.reduce_window", computation, tree, [o.dtype for o in flat_ops], "operand", tree_error=_tree_error
    )
    for o in flat_ops[1:]:
        if o.shape != flat_ops[0].shape:
            raise TypeError(
                "lax.reduce_window: operands must have one shape, got "
                + ", ".join(str(aval(x).shape) for x in flat_ops)
            )
    outs = wd.reduce_window_p.bind(*flat_ops, *inits, jaxpr=jaxpr, **params)
    return tu.tree_unflatten(tree, outs)


def _tree_error(tree, out_tree) -> ValueError:  # (reduce_window's: JAX's type and words)
    return ValueError(
        f"reduce_window output must have the same tree structure as the operands {tree} vs. {out_tree}"
    )


def trace_reducer(
    name: str, computation, tree, dtypes, operands: str, require_scalars: bool = False, tree_error=None
):
    """The closed jaxpr of a reduction's ``computation(accumulators, values) -> accumulators`` over
    scalars of ``dtypes`` (pytrees of structure ``tree``): what ``lax.reduce_window`` and
    ``lax.reduce`` carry. It must return ``tree`` and close over no traced value; ``operands``
    ("operand" or "operands") names them in the messages. ``tree_error(tree, out_tree)`` is the
    caller's error for a computation returning another structure (by default a TypeError naming
    ``name``)."""
    possessive = operands + ("'" if operands.endswith("s") else "'s")
    scalars = [ShapedArray((), d) for d in dtypes]
    n = len(scalars)

    def reducer(*args):
        out = computation(tu.tree_unflatten(tree, args[:n]), tu.tree_unflatten(tree, args[n:]))
        leaves, out_tree = tu.tree_flatten(out)
        if out_tree != tree:
            if tree_error is not None:
                raise tree_error(tree, out_tree)
            raise TypeError(
                f"{name}: computation must return the {possessive} tree structure {tree}, got {out_tree}"
            )
        leaves = [asarray(v) for v in leaves]
        if require_scalars:
            for v in leaves:
                if v.shape != ():
                    raise TypeError(f"{name}: computation must return scalars, got shape {v.shape}")
        return [lax_ops.convert_element_type(v, s.dtype) for v, s in zip(leaves, scalars)]

    jaxpr = trace_to_jaxpr(
        reducer, [*scalars, *scalars], description=f"{name.removeprefix('lax.')} computation"
    )
    if any(isinstance(c, core.Tracer) for c in jaxpr.consts):
        raise TypeError(
            f"{name}: the computation closes over a traced value; it must be a function of its two "
            f"arguments only (pass varying values through the {operands} instead)"
        )
    return jaxpr
