"""``pad`` of funcgrad.numpy, with NumPy's modes.

Layer: surface. Imports ``funcgrad.numpy._core``, ``indexing``, ``reductions``, ``manipulation`` and
the primitive catalog (structure, elementwise families).

Padding is done one axis at a time. ``constant`` is the ``pad`` primitive; the modes that copy
elements (``edge``, ``reflect``, ``symmetric``, ``wrap``) gather from a static index map, computed
by NumPy's own ``pad`` applied to ``arange(n)`` (so the index arithmetic is NumPy's, for any pad
width); ``linear_ramp`` and the statistic modes are arithmetic on the edge slices. All are linear in
the array (the statistic modes apart), hence differentiable.
"""

from __future__ import annotations

import numpy as np

from funcgrad.kernel import core
from funcgrad.numpy import reductions
from funcgrad.numpy._core import asarray, concrete_or_error, constant, constant_like, convert
from funcgrad.numpy.indexing import getitem
from funcgrad.numpy.manipulation import concatenate
from funcgrad.numpy.sorting import median
from funcgrad.numpy.ufuncs import multiply, subtract
from funcgrad.numpy.vectorization import apply_along_axis
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import structure as st

__all__ = [
    "pad",
]

_INDEX_MODES = ("edge", "reflect", "symmetric", "wrap")
_STAT_MODES = {"maximum": reductions.max, "minimum": reductions.min, "mean": reductions.mean}


def _pairs(value, ndim: int, name: str):
    """NumPy's broadcasting of ``pad_width``-like arguments to one ``(before, after)`` per axis."""
    arr = np.asarray(concrete_or_error(value, f"pad's {name}") if value is not None else 0)
    try:
        return np.broadcast_to(arr, (ndim, 2)).tolist()
    except ValueError:
        raise ValueError(f"pad: {name} {value!r} cannot be broadcast to ({ndim}, 2)") from None


def _widths(pad_width, ndim: int):
    widths = _pairs(pad_width, ndim, "pad_width")
    out = []
    for before, after in widths:
        if int(before) != before or int(after) != after:
            raise TypeError("pad: pad_width must be integers")
        if before < 0 or after < 0:
            raise ValueError("index can't contain negative values")
        out.append((int(before), int(after)))
    return out


def _along(x, index, axis):
    return getitem(x, (slice(None),) * axis + (index,))


# The keyword arguments each mode takes (NumPy's table; JAX refuses the others as NumPy does).
_MODE_KWARGS = {
    "constant": {"constant_values"},
    "edge": set(),
    "linear_ramp": {"end_values"},
    "maximum": {"stat_length"},
    "mean": {"stat_length"},
    "median": {"stat_length"},
    "minimum": {"stat_length"},
    "reflect": {"reflect_type"},
    "symmetric": {"reflect_type"},
    "wrap": set(),
    "empty": set(),
}


def pad(array, pad_width, mode="constant", **kwargs):
    """Pad ``array`` (NumPy's ``pad``): modes ``constant``, ``edge``, ``reflect``, ``symmetric``,
    ``wrap``, ``linear_ramp``, ``maximum``, ``minimum``, ``mean``, ``median`` and ``empty``.

    >>> pad(np.array([1, 2, 3]), (1, 2)).tolist()
    [0, 1, 2, 3, 0, 0]
    >>> pad(np.array([1, 2, 3]), 2, mode="reflect").tolist()
    [3, 2, 1, 2, 3, 2, 1]
    >>> pad(np.array([[1, 2]]), ((0, 0), (1, 1)), mode="edge").tolist()
    [[1, 1, 2, 2]]
    >>> def ends(v, width, axis, kw):
    ...     return v.at[: width[0]].set(-1).at[v.shape[0] - width[1] :].set(1)
    >>> pad(np.array([5, 6]), 1, ends).tolist()
    [-1, 5, 6, 1]
    """
    x = asarray(array)
    widths = _widths(pad_width, x.ndim)
    if callable(mode):
        # JAX's (and NumPy's) padding function: zeros first, then mode(vector, (before, after),
        # axis, kwargs) -> the padded vector, for every 1-D slice along each axis in turn (vmapped;
        # the function returns its result, functionally, as in JAX).
        for axis, (before, after) in enumerate(widths):
            x = _pad_constant(x, axis, before, after, 0, 0)
        for axis in range(x.ndim):
            x = apply_along_axis(mode, axis, x, widths[axis], axis, kwargs)
        return x
    allowed = _MODE_KWARGS.get(mode)
    if allowed is not None and set(kwargs) - allowed:  # (NumPy's and JAX's error)
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {set(kwargs) - allowed}")
    if mode in ("constant", "empty"):
        values = (
            _pairs(kwargs.get("constant_values", 0), x.ndim, "constant_values")
            if mode == "constant"
            else None
        )
        for axis, (before, after) in enumerate(widths):
            v_before, v_after = (0, 0) if values is None else values[axis]
            x = _pad_constant(x, axis, before, after, v_before, v_after)
        return x
    if x.size == 0 and any(b or a for b, a in widths):
        raise ValueError(f"can't extend empty axes with mode {mode!r}; use mode='constant'")
    if mode in ("reflect", "symmetric"):
        _check_symbolic_reflection(x.shape, pad_width, mode)
    if mode in _INDEX_MODES:
        reflect_type = kwargs.get("reflect_type", "even")
        if reflect_type not in ("even", "odd"):
            raise ValueError(f"pad: reflect_type must be 'even' or 'odd', got {reflect_type!r}")
        if reflect_type == "odd" and mode in ("reflect", "symmetric"):
            for axis, (before, after) in enumerate(widths):
                x = _reflect_odd(_reflect_odd(x, axis, before, mode, True), axis, after, mode, False)
            return x
        for axis, (before, after) in enumerate(widths):
            if before or after:
                index = np.pad(np.arange(x.shape[axis]), (before, after), mode=mode)
                x = _along(x, index, axis)
        return x
    if mode == "linear_ramp":
        ends = _pairs(kwargs.get("end_values", 0), x.ndim, "end_values")
        for axis, (before, after) in enumerate(widths):
            x = _linear_ramp(x, axis, before, after, *ends[axis])
        return x
    if mode in _STAT_MODES or mode == "median":
        lengths = kwargs.get("stat_length")
        lengths = _pairs(lengths, x.ndim, "stat_length") if lengths is not None else None
        for axis, (before, after) in enumerate(widths):
            length = (None, None) if lengths is None else lengths[axis]
            x = _stat_pad(x, axis, before, after, mode, length)
        return x
    raise NotImplementedError(f"Unimplemented padding mode '{mode}' for np.pad.")  # (JAX's type and words)


def _decided(a, op: str, b) -> bool:
    """``a <op> b`` of sizes, decided for every size a symbolic export allows when one is traced."""
    if hasattr(a, "decide"):
        return a.decide(b, op)
    if hasattr(b, "decide"):
        return b.decide(a, {">": "<", ">=": "<="}[op])
    return a > b if op == ">" else a >= b


def _check_symbolic_reflection(shape, pad_width, mode) -> None:
    """JAX's refusal of a reflecting pad whose sizes a symbolic export traces (NOTE: [symbolic
    comparisons at sample sizes] in funcgrad/export/_polymorphic.py) unless every size it allows
    has the axis longer than 1 and at least the padding (one period of reflection), in its words."""
    pairs = pad_width if isinstance(pad_width, list | tuple) and len(pad_width) == len(shape) else None
    if pairs is None or not all(isinstance(p, list | tuple) and len(p) == 2 for p in pairs):
        return
    for i, (n, (before, after)) in enumerate(zip(shape, pairs)):
        if not any(getattr(v, "traced", False) for v in (n, before, after)) or n == 0:
            continue
        if before == 0 and after == 0:
            continue
        for padding, side in ((before, "left"), (after, "right")):
            try:
                offset = 1 if (mode == "reflect" and _decided(n, ">", 1)) else 0
                poly = any(getattr(v, "traced", False) for v in (n, padding))
                ok = not poly or (_decided(n, ">", 1) and _decided(n - offset, ">=", padding))
            except core.InconclusiveDimensionOperation:
                ok = False
            if not ok:
                raise ValueError(  # (JAX's words)
                    "Shape polymorphism is supported for jnp.pad with 'reflect' or 'symmetric' padding "
                    "mode only when it is possible to determine at lowering time that the axis size "
                    f"(= {getattr(n, 'expr', n)}) is larger than 1 and larger or equal than the padding "
                    f"length (= {getattr(padding, 'expr', padding)}). Error while handling {side} padding "
                    f"on axis {i}."
                )


def _reflect_odd(x, axis, width, mode, before):
    """``width`` values reflected oddly onto one side of ``axis`` (NumPy's and JAX's ``reflect_type
    ='odd'``: ``2 * edge - mirrored``), a period at a time as JAX does, each new period's edge the
    last one added, so the values (and NaN/inf arithmetic) are JAX's."""
    n = x.shape[axis]
    offset = 1 if mode == "reflect" and n > 1 else 0
    edge = _edge(x, axis, not before)
    while width > 0:
        chunk = min(width, n - offset)
        width -= chunk
        m = x.shape[axis]
        if before:
            start, stop = offset, offset + chunk
        else:
            stop = m if (mode == "symmetric" or n == 1) else m - 1
            start = m - chunk - offset
        piece = st.rev(st.slice_in_dim(x, start, stop, 1, axis), (axis,))
        piece = subtract(multiply(2, edge), piece)
        if n > 1:
            edge = _edge(piece, axis, not before)
        x = concatenate([piece, x] if before else [x, piece], axis)
    return x


def _pad_constant(x, axis, before, after, v_before, v_after):
    # (JAX's _pad_constant: the padding value takes the array's dtype and weak type, so lax.pad's
    # result is as weak as the array)
    if not before and not after:
        return x
    config = [(0, 0, 0)] * x.ndim
    if v_before == v_after:
        config[axis] = (before, after, 0)
        return st.pad(x, constant_like(v_before, x), config)
    config[axis] = (before, 0, 0)
    x = st.pad(x, constant_like(v_before, x), config)
    config[axis] = (0, after, 0)
    return st.pad(x, constant_like(v_after, x), config)


def _edge(x, axis, last: bool):
    n = x.shape[axis]
    return st.slice_in_dim(x, n - 1, n, 1, axis) if last else st.slice_in_dim(x, 0, 1, 1, axis)


def _ramp(edge, end, width, axis, ndim, reverse):
    """``width`` values from ``end`` toward ``edge`` (exclusive), NumPy's ``linspace`` ramp."""
    dtype = edge.dtype
    # (JAX's linspace computes an integer ramp in its inexact type: float32 up to 32 bits)
    compute = np.dtype(np.float64 if dtype.itemsize == 8 else np.float32) if dtype.kind in "biu" else dtype
    t = np.arange(width, dtype=compute) / width
    if reverse:
        t = t[::-1]
    shape = [1] * ndim
    shape[axis] = width
    # A constant of the edge's full shape (one broadcast, made on the host).
    t = constant(np.broadcast_to(t.reshape(shape), edge.shape), compute)
    edge_f = convert(edge, compute)
    end_f = constant(np.broadcast_to(np.asarray(end, compute), edge.shape), compute)
    if width == 1:  # (JAX's linspace of one point is its start alone: no 0 * edge, NaN at inf)
        ramp = end_f
    else:  # (JAX's linspace: start * (1 - t) + stop * t)
        one = constant(np.ones(edge.shape, compute), compute)
        ramp = ew.add_p.bind(ew.mul_p.bind(end_f, ew.sub_p.bind(one, t)), ew.mul_p.bind(edge_f, t))
    if dtype.kind in "iu":
        ramp = ew.floor_p.bind(ramp)  # NumPy's integer linspace floors
    return convert(ramp, dtype)


def _linear_ramp(x, axis, before, after, end_before, end_after):
    parts = []
    if before:
        edge = _edge(x, axis, False)
        shape = list(x.shape)
        shape[axis] = before
        parts.append(_ramp(_broadcast_edge(edge, shape), end_before, before, axis, x.ndim, False))
    parts.append(x)
    if after:
        edge = _edge(x, axis, True)
        shape = list(x.shape)
        shape[axis] = after
        parts.append(_ramp(_broadcast_edge(edge, shape), end_after, after, axis, x.ndim, True))
    return concatenate(parts, axis) if len(parts) > 1 else x


def _broadcast_edge(edge, shape):
    dims = tuple(range(len(shape)))
    squeezed = [d for d in dims if edge.shape[d] == 1 and shape[d] != 1]
    return st.broadcast_in_dim(
        st.squeeze(edge, tuple(squeezed)), tuple(shape), tuple(d for d in dims if d not in squeezed)
    )


def _stat(x, mode, axis):
    if mode == "median":
        out = median(x, axis=axis, keepdims=True)
    else:
        out = _STAT_MODES[mode](x, axis=axis, keepdims=True)
    if x.dtype.kind in "iu" and out.dtype != x.dtype:
        # NumPy rounds integer means and medians half to even.
        out = convert(ew.round_p.bind(out, rounding_method=1), x.dtype)
    return out


def _stat_pad(x, axis, before, after, mode, lengths):
    if not before and not after:
        return x
    n = x.shape[axis]
    len_before = n if lengths[0] is None else max(1, min(int(lengths[0]), n))
    len_after = n if lengths[1] is None else max(1, min(int(lengths[1]), n))
    parts = []
    if before:
        value = _stat(st.slice_in_dim(x, 0, len_before, 1, axis), mode, axis)
        shape = list(x.shape)
        shape[axis] = before
        parts.append(_broadcast_edge(value, shape))
    parts.append(x)
    if after:
        value = _stat(st.slice_in_dim(x, n - len_after, n, 1, axis), mode, axis)
        shape = list(x.shape)
        shape[axis] = after
        parts.append(_broadcast_edge(value, shape))
    return concatenate(parts, axis)
