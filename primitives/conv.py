"""conv_general_dilated: XLA's convolution, with its JVP, both transposes and a folding batch rule.

Layer: primitives. Imports the funcgrad kernel, numpy and sibling families (``dot`` for
``Precision``, ``structure``, ``elementwise``). The public functions with JAX's signatures are in
``funcgrad/lax/convolution.py``; the lowering (``stablehlo.convolution``) is in
``xla_bridge/rules/conv.py``.

``conv_general_dilated_p.bind(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
dimension_numbers, feature_group_count, batch_group_count, precision, preferred_element_type)``
has XLA's semantics with every parameter canonical: ``padding`` is explicit ``(lo, hi)`` pairs
(negative values crop), ``dimension_numbers`` a ``ConvDimensionNumbers`` of permutations into
(batch, feature, spatial...) / (out feature, in feature, spatial...) order, ``precision`` ``None``
or a pair of ``Precision`` (``primitives/dot.py``).

# NOTE: [convolution groups]
# With ``feature_group_count = G`` the lhs features split into G groups (group outer) and the rhs
# output features too; output group g sees only lhs feature group g. With ``batch_group_count = G``
# the lhs *batch* splits into G groups (group outer) and output feature group g sees only lhs batch
# group g (the output batch is N / G). These are what the transposes need: the rhs cotangent of a
# feature-grouped convolution is a batch-grouped one and vice versa (JAX's
# ``_conv_general_dilated_transpose_rhs``), and a vmapped batch folds into the feature dimension
# (per-example kernels become G = batch groups), so vmap of a convolution stays one convolution.

The eager impl is an im2col: zero-pad and dilate the input once, take a strided window view
(``window_view``, no copy), copy it once into ``(groups, rows, patch)`` and run one batched matmul
against the kernel as ``(groups, patch, out features)`` -- BLAS for every group at once, never a
Python loop over output pixels. ``window_view``/``dilate_pad`` are shared with the windowed
reductions (``primitives/windowed.py``).
"""

from __future__ import annotations

import threading
from typing import NamedTuple

import numpy as np
from funcgrad.primitives import _sharding_rules
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives._rules import aval_of, bilinear_jvp, bilinear_taylor, checked_impl
from funcgrad.primitives.structure import broadcast_in_dim, reshape, rev, transpose
from numpy.lib.stride_tricks import as_strided

from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.ad import Zero, instantiate, is_undefined_primal
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.ir import ShapedArray

__all__ = [
    "WINDOW_PARAMS",
    "ConvDimensionNumbers",
    "conv_general_dilated",
    "conv_general_dilated_p",
    "conv_general_vjp_lhs_padding",
    "conv_general_vjp_rhs_padding",
    "conv_shape_tuple",
    "dilate_pad",
    "dilate_shape",
    "padtype_to_pads",
    "window_view",
]


class ConvDimensionNumbers(NamedTuple):
    """Where the batch, feature and spatial dimensions of a convolution's operands are.

    ``lhs_spec``: (batch, feature, spatial...); ``rhs_spec``: (out feature, in feature,
    spatial...); ``out_spec``: (batch, feature, spatial...) -- dimension indices, as in JAX.

    >>> ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2)).rhs_spec
    (3, 2, 0, 1)
    """

    lhs_spec: tuple
    rhs_spec: tuple
    out_spec: tuple


# ----------------------------------------------------------------------------------------------
# Shapes and paddings (shared with the windowed reductions and the surface)


def dilate_shape(shape, dilation):
    """Sizes after inserting ``d - 1`` holes between elements (0 stays 0); JAX's rule: every
    dilation positive (its TypeError), a shorter ``dilation`` applies to the last dimensions.

    >>> dilate_shape((2, 3), (2,))
    (2, 5)
    """
    if not all(int(d) > 0 for d in dilation):
        raise TypeError(f"All dilations must be positive, got {dilation}.")
    dilation = (1,) * (len(shape) - len(dilation)) + tuple(dilation)
    return tuple(0 if n == 0 else 1 + d * (n - 1) for n, d in zip(shape, dilation))


def _ceil_div(a, b):
    return -(-a // b)


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
    """Explicit ``(lo, hi)`` pairs for ``'SAME'``, ``'SAME_LOWER'`` or ``'VALID'`` (JAX's rule:
    SAME keeps ``ceil(n / stride)`` outputs, the odd element of padding goes at the end; SAME_LOWER
    puts it at the start).

    >>> padtype_to_pads((5, 6), (3, 3), (2, 2), "SAME")
    [(1, 1), (0, 1)]
    """
    if not isinstance(padding, str):
        return [(int(lo), int(hi)) for lo, hi in padding]
    kind = padding.upper()
    if kind == "VALID":
        return [(0, 0)] * len(in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        raise RuntimeError(
            f"Unrecognized padding type: expected 'VALID', 'SAME', or 'SAME_LOWER', got {padding}."
        )
    # (JAX computes SAME with NumPy arrays: lengths that do not broadcast are NumPy's ValueError,
    # the shape against the strides first, then against the window)
    for a, b in ((len(in_shape), len(window_strides)), (len(in_shape), len(window_shape))):
        if a != b and 1 not in (a, b):
            raise ValueError(f"operands could not be broadcast together with shapes ({a},) ({b},) ")
    pads = []
    for n, w, s in zip(in_shape, window_shape, window_strides):
        n, w, s = int(n), int(w), int(s)  # (Python ints out, as JAX's, also for NumPy shapes in)
        total = max((_ceil_div(n, s) - 1) * s + w - n, 0)
        small, big = total // 2, total - total // 2
        pads.append((small, big) if kind == "SAME" else (big, small))
    return pads


def _out_size(padded, window, stride):
    return 0 if padded < window else (padded - window) // stride + 1


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count=1):
    """Output shape of a convolution of operands in canonical (N, C, spatial...) / (O, I,
    spatial...) order (``jax.lax.conv_shape_tuple``).

    >>> conv_shape_tuple((1, 1, 5, 5), (2, 1, 3, 3), (1, 1), "VALID")
    (1, 2, 3, 3)
    """
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    if len(pads) != len(lhs_shape) - 2:
        raise TypeError(
            f"Wrong number of explicit pads for convolution: expected {len(lhs_shape) - 2}, got {len(pads)}"
        )
    padded = [n + lo + hi for n, (lo, hi) in zip(lhs_shape[2:], pads)]
    if any(p < 0 for p in padded):
        raise ValueError(
            "Negative padding is larger than the size of the corresponding dimension: "
            f"got padding={tuple(pads)} for lhs spatial shape {tuple(lhs_shape[2:])}"
        )
    out_space = tuple(_out_size(p, k, s) for p, k, s in zip(padded, rhs_shape[2:], strides))
    return (lhs_shape[0] // batch_group_count, rhs_shape[0], *out_space)


def conv_general_vjp_lhs_padding(
    in_shape, window_dimensions, window_strides, out_shape, padding, lhs_dilation, rhs_dilation
):
    """Padding of the convolution computing the lhs cotangent (and reduce_window_sum's transpose)."""
    lhs_d = dilate_shape(in_shape, lhs_dilation)
    rhs_d = dilate_shape(window_dimensions, rhs_dilation)
    out_d = dilate_shape(out_shape, window_strides)
    before = [k - lo - 1 for k, (lo, _) in zip(rhs_d, padding)]
    after = [a + k - 1 - o - b for a, k, o, b in zip(lhs_d, rhs_d, out_d, before)]
    return list(zip(before, after))


def conv_general_vjp_rhs_padding(
    in_shape, window_dimensions, window_strides, out_shape, padding, lhs_dilation, rhs_dilation
):
    """Padding of the convolution computing the rhs (kernel) cotangent."""
    if not in_shape:
        return []
    lhs_d = dilate_shape(in_shape, lhs_dilation)
    rhs_d = dilate_shape(window_dimensions, rhs_dilation)
    out_d = dilate_shape(out_shape, window_strides)
    los = [lo for lo, _ in padding]
    his = [o - a + k - lo - 1 for o, a, k, lo in zip(out_d, lhs_d, rhs_d, los)]
    return list(zip(los, his))


# ----------------------------------------------------------------------------------------------
# NumPy windows (shared with primitives/windowed.py)


def dilate_pad(x, fill, padding, dilation):
    """``x`` with ``dilation - 1`` fill values between elements and ``(lo, hi)`` fill values at the
    edges of every dimension (negative values crop): XLA's base dilation plus padding."""
    x = np.asarray(x)
    if all(d == 1 for d in dilation) and all(lo == 0 and hi == 0 for lo, hi in padding):
        return x
    inner = dilate_shape(x.shape, dilation)
    big = [max(lo, 0) + n + max(hi, 0) for n, (lo, hi) in zip(inner, padding)]
    out = np.full(big, fill, dtype=x.dtype)
    place = tuple(slice(max(lo, 0), max(lo, 0) + n, d) for n, (lo, _), d in zip(inner, padding, dilation))
    out[place] = x
    crop = tuple(slice(max(-lo, 0), size - max(-hi, 0)) for size, (lo, hi) in zip(big, padding))
    return out[crop]


def window_view(x, window, strides, dilation):
    """A read-only view of shape ``out + window``: ``view[o..., w...] = x[o * stride + w *
    dilation]`` for every window that fits (no copy)."""
    x = np.asarray(x)
    eff = dilate_shape(window, dilation)
    out = [_out_size(n, e, s) if e > 0 else 0 for n, e, s in zip(x.shape, eff, strides)]
    st = [xs * s for xs, s in zip(x.strides, strides)] + [xs * d for xs, d in zip(x.strides, dilation)]
    return as_strided(x, (*out, *window), st, writeable=False)


# ----------------------------------------------------------------------------------------------
# Abstract evaluation


def _is_int(dtype) -> bool:
    return np.dtype(dtype).kind in "iu"


def _check_preferred(name, dtype, preferred):
    if preferred is None:
        return dtype
    preferred = np.dtype(preferred)
    if dtype == np.bool_:  # (any preferred type: JAX's)
        return preferred
    if _is_int(dtype) != _is_int(preferred) and not (_is_int(dtype) and _dt.is_inexact(preferred)):
        raise TypeError(
            f"{name}: preferred_element_type {preferred.name} is incompatible with inputs of dtype "
            f"{dtype.name} (integer inputs accumulate in an integer or float type, floats in a float)"
        )
    if _dt.is_inexact(dtype) and preferred.itemsize < dtype.itemsize:
        raise TypeError(
            f"{name}: preferred_element_type {preferred.name} must not be narrower than the inputs' "
            f"dtype {dtype.name}"
        )
    return preferred


def _abstract_eval(
    lhs,
    rhs,
    *,
    window_strides,
    padding,
    lhs_dilation,
    rhs_dilation,
    dimension_numbers,
    feature_group_count,
    batch_group_count,
    precision=None,
    preferred_element_type=None,
):
    name = "conv_general_dilated"
    if lhs.dtype != rhs.dtype:
        raise TypeError(
            f"{name} requires lhs and rhs of one dtype, got {lhs.str_short()} and {rhs.str_short()} "
            "(convert one of them first)"
        )
    # (booleans too, as in JAX: XLA's convolution of booleans is an OR of ANDs, or a count in a
    # preferred numeric type, like dot_general's)
    if not (_dt.is_inexact(lhs.dtype) or _is_int(lhs.dtype) or lhs.dtype == np.bool_):
        raise TypeError(f"{name} does not accept dtype {lhs.dtype.name} (use a numeric dtype)")
    if lhs.ndim != rhs.ndim or lhs.ndim < 2:
        raise ValueError(
            f"{name}: lhs and rhs must have the same rank (at least 2: batch and feature), got lhs "
            f"{lhs.str_short()} and rhs {rhs.str_short()}"
        )
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    nsp = lhs.ndim - 2
    for what, spec in (("lhs_spec", lhs_spec), ("rhs_spec", rhs_spec), ("out_spec", out_spec)):
        if sorted(spec) != list(range(lhs.ndim)):
            raise TypeError(
                f"{name}: dimension_numbers.{what}={spec} is not a permutation of {lhs.ndim} dims"
            )
    for what, v in (
        ("window_strides", window_strides),
        ("lhs_dilation", lhs_dilation),
        ("rhs_dilation", rhs_dilation),
        ("padding", padding),
    ):
        if len(v) != nsp:
            raise ValueError(
                f"{name}: {what} needs one entry per spatial dimension ({nsp} for lhs {lhs.str_short()}), "
                f"got {tuple(v)}"
            )
    for what, v in (
        ("window_strides", window_strides),
        ("lhs_dilation", lhs_dilation),
        ("rhs_dilation", rhs_dilation),
    ):
        if any(int(s) < 1 for s in v):
            raise ValueError(f"{name}: {what} must be positive integers, got {tuple(v)}")
    G, B = feature_group_count, batch_group_count
    if G < 1 or B < 1:
        raise ValueError(f"{name}: feature_group_count and batch_group_count must be >= 1, got {G} and {B}")
    if G > 1 and B > 1:
        raise ValueError(
            f"{name}: at most one of feature_group_count ({G}) and batch_group_count ({B}) may be > 1"
        )
    lhs_c, rhs_i, rhs_o = lhs.shape[lhs_spec[1]], rhs.shape[rhs_spec[1]], rhs.shape[rhs_spec[0]]
    if lhs_c % G:
        raise ValueError(
            f"{name}: feature_group_count={G} must divide the lhs feature dimension, but lhs "
            f"{lhs.str_short()} has {lhs_c} features (dimension {lhs_spec[1]})"
        )
    if lhs_c // G != rhs_i:
        raise ValueError(
            f"{name} lhs feature dimension size divided by feature_group_count must equal the rhs input "
            f"feature dimension size, but {lhs_c} // {G} != {rhs_i}. (lhs {lhs.str_short()}, rhs "
            f"{rhs.str_short()}, dimension_numbers {tuple(dimension_numbers)})"
        )
    if rhs_o % G or rhs_o % B:
        raise ValueError(
            f"{name}: the rhs output feature count {rhs_o} (rhs {rhs.str_short()}) must be a multiple of "
            f"feature_group_count={G} and batch_group_count={B}"
        )
    if lhs.shape[lhs_spec[0]] % B:
        raise ValueError(
            f"{name}: batch_group_count={B} must divide the lhs batch size {lhs.shape[lhs_spec[0]]} "
            f"(lhs {lhs.str_short()})"
        )
    lhs_t = dilate_shape([lhs.shape[d] for d in lhs_spec], (1, 1, *lhs_dilation))
    rhs_t = dilate_shape([rhs.shape[d] for d in rhs_spec], (1, 1, *rhs_dilation))
    for i, ((lo, hi), n) in enumerate(zip(padding, lhs_t[2:])):
        padded = n + lo + hi
        if padded < 0:
            raise ValueError(
                f"{name}: padding {tuple(padding)} crops spatial dimension {i} of lhs {lhs.str_short()} "
                f"(size {n} after lhs_dilation) to {padded} elements; padding may crop at most the input"
            )
        # (a window larger than the padded input gives no output positions there, as in JAX)
    out_t = conv_shape_tuple(lhs_t, rhs_t, window_strides, padding, B)
    shape = tuple(out_t[list(out_spec).index(d)] for d in range(len(out_t)))
    dtype = _check_preferred(name, lhs.dtype, preferred_element_type)
    return ShapedArray(shape, dtype, lhs.weak_type and rhs.weak_type and preferred_element_type is None)


# ----------------------------------------------------------------------------------------------
# Eager impl: im2col and one batched matmul over the groups

# The window parameters, in the order the rules unpack them (impl and lowering).
WINDOW_PARAMS = ("window_strides", "padding", "lhs_dilation", "rhs_dilation")


def _impl(lhs, rhs, **p):
    window_strides, padding, lhs_dilation, rhs_dilation = (p[k] for k in WINDOW_PARAMS)
    feature_group_count, batch_group_count = p["feature_group_count"], p["batch_group_count"]
    preferred_element_type = p.get("preferred_element_type")
    lhs_spec, rhs_spec, out_spec = p["dimension_numbers"]
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    dtype = lhs.dtype if preferred_element_type is None else np.dtype(preferred_element_type)
    x = np.transpose(lhs, lhs_spec).astype(dtype, copy=False)  # (N, C, spatial...)
    w = np.transpose(rhs, rhs_spec).astype(dtype, copy=False)  # (O, I, window...)
    nsp = x.ndim - 2
    if any(d > 1 for d in lhs_dilation) and all(s == 1 for s in window_strides) and batch_group_count == 1:
        canonical = _transposed_impl(x, w, padding, lhs_dilation, rhs_dilation, feature_group_count)
        return np.ascontiguousarray(np.transpose(canonical, np.argsort(out_spec)), dtype=dtype)
    N, C, O, ksp = x.shape[0], x.shape[1], w.shape[0], w.shape[2:]
    x = dilate_pad(x, 0, ((0, 0), (0, 0), *padding), (1, 1, *lhs_dilation))
    view = window_view(x, (1, 1, *ksp), (1, 1, *window_strides), (1, 1, *rhs_dilation))
    out_sp = view.shape[2 : 2 + nsp]
    view = view.reshape(*view.shape[:2], *out_sp, *ksp)  # drop the unit windows of N and C
    P = int(np.prod(out_sp, dtype=np.int64))
    G = feature_group_count if feature_group_count > 1 else batch_group_count
    sp_axes = list(range(3, 3 + nsp))
    k_axes = list(range(3 + nsp, 3 + 2 * nsp))
    if batch_group_count > 1:
        # lhs batch = (G, N'): rows are (N', spatial), the patch is (C, window).
        v = view.reshape(G, N // G, C, *out_sp, *ksp).transpose(0, 1, *sp_axes, 2, *k_axes)
        rows = N // G
    else:
        # lhs features = (G, C'): rows are (N, spatial), the patch is (C', window).
        v = view.reshape(N, G, C // G, *out_sp, *ksp).transpose(1, 0, *sp_axes, 2, *k_axes)
        rows = N
    patches = _scratch(0, v.shape, dtype)
    np.copyto(patches, v)  # the one im2col copy, into a reused buffer
    patch = int(np.prod(v.shape[2 + nsp :], dtype=np.int64))  # (explicit: an empty input has no -1)
    patches = patches.reshape(G, rows * P, patch)
    kernel = w.reshape(G, O // G, patch).transpose(0, 2, 1)  # (G, patch, O')
    res = np.matmul(patches, kernel)  # (G, rows * P, O')
    if G > 1 and batch_group_count == 1 and C == G and dtype == np.float64:
        _depthwise_nans(patches, res)
    res = res.reshape(G, rows, *out_sp, O // G)
    if G == 1:
        canonical = np.moveaxis(res[0], -1, 1)  # a view: NHWC-like outputs need no copy below
    else:
        res = np.moveaxis(res, -1, 1).transpose(2, 0, 1, *range(3, 3 + nsp))  # (rows, G, O', spatial)
        canonical = res.reshape(rows, O, *out_sp)
    # (NumPy's matmul of bfloat16 gives float32: the result has the primitive's dtype)
    return np.ascontiguousarray(np.transpose(canonical, np.argsort(out_spec)), dtype=dtype)


# NOTE: [depthwise float64 convolutions]
# XLA's CPU compiler keeps a feature-grouped convolution grouped only for F16/F32; a depthwise one
# (one input feature per group) of another type (float64) becomes one dense convolution whose
# kernel is zero outside each group's block (ConvolutionGroupConverter's filter expansion), so an
# inf or NaN anywhere in a window, in any group's feature, is multiplied by a zero: NaN in every
# other group's output at that position. jax computes it so (``conv_general_dilated_patches`` of an
# inf, a depthwise convolution with an identity kernel, has NaN in every patch feature there).
# funcgrad keeps XLA's native convolution for those under ``jit`` (the patches lowering would not
# mix groups: xla_bridge/rules/conv.py) and the eager impl adds the same NaNs (``_depthwise_nans``).


def _depthwise_nans(patches, res):
    """NaN in ``res`` (G, rows, O') where another group's patch (G, rows, patch) holds an inf or
    NaN (NOTE: [depthwise float64 convolutions])."""
    bad = ~np.isfinite(patches).all(axis=-1)  # (G, rows)
    if bad.any():
        others = (bad.sum(axis=0) - bad) > 0
        res[others] = np.nan


# NOTE: [convolution scratch buffers]
# The im2col patches (and col2im products) are temporaries as large as the output times the
# window: allocating them fresh makes the OS fault in every page on every call (glibc serves
# large blocks with mmap), which costs as much as the arithmetic. A few per-thread buffers, keyed
# by slot, shape and dtype, are reused instead; they never escape an impl.
_SCRATCH = threading.local()
_SCRATCH_SLOTS = 2


def _scratch(slot: int, shape, dtype) -> np.ndarray:
    """An uninitialised buffer of ``shape``/``dtype`` owned by this thread's ``slot``."""
    cache = getattr(_SCRATCH, "buffers", None)
    if cache is None:
        cache = _SCRATCH.buffers = [None] * _SCRATCH_SLOTS
    shape, dtype = tuple(int(d) for d in shape), np.dtype(dtype)
    size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    buf = cache[slot]
    if buf is None or buf.nbytes < size:
        buf = cache[slot] = np.empty(max(size, 1), np.uint8)
    return buf[:size].view(dtype).reshape(shape)


def _transposed_impl(x, w, padding, lhs_dilation, rhs_dilation, groups):
    """A convolution of a dilated input (a transposed convolution: the lhs cotangent of a strided
    one) without the zeros: one matmul of the undilated input with every kernel tap, then each
    tap's products added into its strided slice of the output (col2im, as PyTorch computes a
    convolution's input gradient). Canonical (N, C, spatial) / (O, I, window) operands."""
    N, C, O = x.shape[0], x.shape[1], w.shape[0]
    in_sp, ksp = x.shape[2:], w.shape[2:]
    G = groups
    dil_in = dilate_shape(in_sp, lhs_dilation)
    eff_k = dilate_shape(ksp, rhs_dilation)
    out_sp = [max(n + lo + hi - k + 1, 0) for n, (lo, hi), k in zip(dil_in, padding, eff_k)]
    P, K = int(np.prod(in_sp, dtype=np.int64)), int(np.prod(ksp, dtype=np.int64))
    rows = x.reshape(N, G, C // G, P).transpose(1, 0, 3, 2).reshape(G, N * P, C // G)
    taps = w.reshape(G, O // G, C // G, K).transpose(0, 2, 3, 1).reshape(G, C // G, K * (O // G))
    prod = _scratch(1, (G, N * P, K * (O // G)), x.dtype)
    np.matmul(rows, taps, out=prod)
    prod = prod.reshape(G, N, *in_sp, *ksp, O // G)
    out = np.zeros((G, N, *out_sp, O // G), x.dtype)
    for k in np.ndindex(*ksp):
        src, dst = [], []
        for n, (lo, _), d, r, ki, m in zip(in_sp, padding, lhs_dilation, rhs_dilation, k, out_sp):
            start = lo - ki * r  # input element i lands on output start + i * d
            i_min = max(0, -(start // d))
            i_max = min(n - 1, (m - 1 - start) // d)
            if i_min > i_max:
                break
            src.append(slice(i_min, i_max + 1))
            dst.append(slice(start + i_min * d, start + i_max * d + 1, d))
        else:
            out[(slice(None), slice(None), *dst)] += prod[(slice(None), slice(None), *src, *k)]
    # (G, N, spatial, O') -> (N, G * O', spatial)
    return np.moveaxis(out, -1, 2).transpose(1, 0, 2, *range(3, 3 + len(out_sp))).reshape(N, O, *out_sp)


# ----------------------------------------------------------------------------------------------
# Derivatives: bilinear, two transposes (JAX's rules, NOTE: [convolution groups])


def _spec_transpose(spec):
    return (spec[1], spec[0], *spec[2:])


def _reshape_axis_into(src, dst, x):
    """Merge axis ``src`` into axis ``dst`` (numbered after removing ``src``), ``src`` outer."""
    shape = aval_of(x).shape
    perm = [i for i in range(len(shape)) if i != src]
    perm.insert(dst, src)
    new = [s for i, s in enumerate(shape) if i != src]
    new[dst] *= shape[src]
    return reshape(transpose(x, tuple(perm)), tuple(new))


def _reshape_axis_out_of(src, size1, x):
    """Split axis ``src`` into ``(size1, rest)``."""
    shape = list(aval_of(x).shape)
    shape[src : src + 1] = [size1, shape[src] // size1]
    return reshape(x, tuple(shape))


def _move_group(x, groups, src, dst):
    """Split ``groups`` (outermost) off axis ``src`` and merge them into axis ``dst`` (outer)."""
    return _reshape_axis_into(src, dst, _reshape_axis_out_of(src, groups, x))


def _spatial(lhs_shape, rhs_shape, out_shape, dimension_numbers):
    """The spatial sizes of the input, the kernel and the output."""
    return [
        [shape[d] for d in spec[2:]]
        for shape, spec in zip((lhs_shape, rhs_shape, out_shape), dimension_numbers)
    ]


def _transpose_lhs(g, lhs, rhs, p):
    """The lhs cotangent: ``g`` convolved with the reversed kernel, strides and lhs dilation
    swapped; the group count moves from the kernel's output features to its input features."""
    lhs_spec, rhs_spec, out_spec = dn = p["dimension_numbers"]
    fgc, bgc = p["feature_group_count"], p["batch_group_count"]
    in_sp, k_sp, out_sp = _spatial(lhs.aval.shape, aval_of(rhs).shape, aval_of(g).shape, dn)
    groups = max(fgc, bgc)
    if groups > 1:
        rhs = _move_group(rhs, groups, rhs_spec[0], rhs_spec[1])
    pads = conv_general_vjp_lhs_padding(
        in_sp, k_sp, p["window_strides"], out_sp, p["padding"], p["lhs_dilation"], p["rhs_dilation"]
    )
    kernel = ew.convert_element_type(rev(rhs, rhs_spec[2:]), aval_of(g).dtype)
    with _sharding_rules.contraction_out(_typed_spec(lhs.aval)):  # (JAX: out_sharding=lhs's type)
        out = conv_general_dilated(
            g,
            kernel,
            window_strides=p["lhs_dilation"],
            padding=pads,
            lhs_dilation=p["window_strides"],
            rhs_dilation=p["rhs_dilation"],
            dimension_numbers=ConvDimensionNumbers(out_spec, _spec_transpose(rhs_spec), lhs_spec),
            feature_group_count=groups,
            batch_group_count=1,
            precision=p.get("precision"),
            preferred_element_type=p.get("preferred_element_type"),
        )
    out = ew.convert_element_type(out, lhs.aval.dtype)
    if bgc > 1:
        out = _move_group(out, bgc, lhs_spec[1], lhs_spec[0])
    return out


def _transpose_rhs(g, lhs, rhs, p):
    """The kernel cotangent: the input convolved with ``g`` (batch and feature dims swapped, the
    strides becoming rhs dilation); feature groups become batch groups and vice versa."""
    if int(np.prod(aval_of(g).shape, dtype=np.int64)) == 0:
        return Zero(rhs.aval)  # no output, no contribution (and no degenerate convolution)
    dn = p["dimension_numbers"]
    in_sp, k_sp, out_sp = _spatial(aval_of(lhs).shape, rhs.aval.shape, aval_of(g).shape, dn)
    pads = conv_general_vjp_rhs_padding(
        in_sp, k_sp, p["window_strides"], out_sp, p["padding"], p["lhs_dilation"], p["rhs_dilation"]
    )
    lhs_t, rhs_t, out_t = map(_spec_transpose, dn)
    with _sharding_rules.contraction_out(_typed_spec(rhs.aval)):  # (JAX: out_sharding=rhs's type)
        out = conv_general_dilated(
            ew.convert_element_type(lhs, aval_of(g).dtype),
            g,
            window_strides=p["rhs_dilation"],
            padding=pads,
            lhs_dilation=p["lhs_dilation"],
            rhs_dilation=p["window_strides"],
            dimension_numbers=ConvDimensionNumbers(lhs_t, out_t, rhs_t),
            feature_group_count=p["batch_group_count"],
            batch_group_count=p["feature_group_count"],
            precision=p.get("precision"),
            preferred_element_type=p.get("preferred_element_type"),
        )
    return ew.convert_element_type(out, rhs.aval.dtype)


def _typed_spec(primal_aval):
    """The sharding type a cotangent takes from its primal (NOTE: [sharding in types]): JAX's
    transposes pass ``out_sharding=`` the primal's sharding, so a sharded batch (a contracting
    dimension of the kernel's cotangent) is no ambiguity. None when untyped."""
    if getattr(primal_aval, "_sharding", None) is None:
        return None
    return _sharding_rules.spec_of(primal_aval)


def _transpose(ct, lhs, rhs, **params):
    outs = [None, None]
    for i, (operand, rule) in enumerate(((lhs, _transpose_lhs), (rhs, _transpose_rhs))):
        if is_undefined_primal(operand):
            outs[i] = Zero(operand.aval) if type(ct) is Zero else rule(instantiate(ct), lhs, rhs, params)
    return outs


# ----------------------------------------------------------------------------------------------
# Batching: fold the vmapped axis into the batch, feature or group dimension (JAX's rule)


def _fold_inside_groups(x, bdim, dim, groups):
    """Fold the vmapped axis ``bdim`` into axis ``dim`` (numbered without it) as
    ``(groups, vmap, rest)``: the groups stay outermost, as the group counts require."""
    x = _reshape_axis_out_of(dim + int(bdim <= dim), groups, x)
    x = _reshape_axis_into(bdim + int(dim < bdim), dim + 1, x)
    return _reshape_axis_into(dim, dim, x)


def _batch(axis_size, vals, dims, *, dimension_numbers, feature_group_count, batch_group_count, **params):
    lhs, rhs = vals
    lhs_bdim, rhs_bdim = dims
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    dn = dimension_numbers
    bind = conv_general_dilated_p.bind
    if axis_size == 0:
        # Reshapes cannot fold a size-0 axis; the answer is an empty array.
        la, ra = aval_of(lhs), aval_of(rhs)
        ls = [s for i, s in enumerate(la.shape) if i != lhs_bdim]
        rs = [s for i, s in enumerate(ra.shape) if i != rhs_bdim]
        out = _abstract_eval(
            ShapedArray(ls, la.dtype),
            ShapedArray(rs, ra.dtype),
            dimension_numbers=dn,
            feature_group_count=feature_group_count,
            batch_group_count=batch_group_count,
            **params,
        )
        return broadcast_in_dim(np.zeros((), out.dtype), (0, *out.shape), ()), 0
    fgc, bgc = feature_group_count, batch_group_count
    if lhs_bdim is not None and rhs_bdim is not None:
        if bgc > 1:
            new_lhs = _reshape_axis_into(lhs_bdim, lhs_spec[0], lhs)
            bgc *= axis_size
        else:
            new_lhs = _reshape_axis_into(lhs_bdim, lhs_spec[1], lhs)
            fgc *= axis_size
        new_rhs = _reshape_axis_into(rhs_bdim, rhs_spec[0], rhs)
        out = bind(
            new_lhs, new_rhs, dimension_numbers=dn, feature_group_count=fgc, batch_group_count=bgc, **params
        )
        return _reshape_axis_out_of(out_spec[1], axis_size, out), out_spec[1]
    if lhs_bdim is not None:
        if bgc == 1:
            new_lhs = _reshape_axis_into(lhs_bdim, lhs_spec[0], lhs)
        else:
            # Keep the batch groups outermost: (groups, vmap, per-group batch).
            new_lhs = _fold_inside_groups(lhs, lhs_bdim, lhs_spec[0], bgc)
        out = bind(
            new_lhs, rhs, dimension_numbers=dn, feature_group_count=fgc, batch_group_count=bgc, **params
        )
        return _reshape_axis_out_of(out_spec[0], axis_size, out), out_spec[0]
    if fgc == 1 and bgc == 1:
        new_rhs = _reshape_axis_into(rhs_bdim, rhs_spec[0], rhs)
        out = bind(
            lhs, new_rhs, dimension_numbers=dn, feature_group_count=fgc, batch_group_count=bgc, **params
        )
        return _reshape_axis_out_of(out_spec[1], axis_size, out), out_spec[1]
    # Groups stay outermost in the kernel's output features: (groups, vmap, per-group features).
    groups = fgc if fgc > 1 else bgc
    new_rhs = _fold_inside_groups(rhs, rhs_bdim, rhs_spec[0], groups)
    out = bind(lhs, new_rhs, dimension_numbers=dn, feature_group_count=fgc, batch_group_count=bgc, **params)
    out = _reshape_axis_out_of(out_spec[1], groups, out)
    out = _reshape_axis_out_of(out_spec[1] + 1, axis_size, out)
    return _reshape_axis_into(out_spec[1], out_spec[1] + 1, out), out_spec[1]


conv_general_dilated_p = Primitive("conv_general_dilated")
conv_general_dilated_p.def_traits(
    contraction=True, may_produce_nan=True
)  # checkpoint's dots_saveable keeps convolutions, as JAX's does
# Checked: an eager call raises the same shape errors as a traced one, before NumPy runs.
conv_general_dilated_p.def_impl(checked_impl(_abstract_eval, _impl))
# An eager floating convolution runs compiled alone, as jax's (NOTE: [eager products are XLA's]):
# XLA's convolution is faster than the im2col at every size measured (CPU per call, one process:
# [1,1,6]*[1,1,3] 169 -> 98 us, [8,3,32,32]*[16,3,3,3] 2.6 -> 0.45 ms, [32,16,28,28]*[32,16,3,3]
# 27 -> 3.2 ms, [64,64,56,56]*[64,64,3,3] 649 -> 186 ms), and its sums do not depend on the
# output position, so a circular convolution equals the rolled one as in jax (equinox's
# test_conv_circular failed for about 1% of its random seeds on the im2col's BLAS rounding). The
# NumPy impl stays the host step of eager grad's cached programs and of integer convolutions.
conv_general_dilated_p.def_traits(compiled_eagerly=lambda args, params: True)
conv_general_dilated_p.def_abstract_eval(_abstract_eval)
conv_general_dilated_p.def_jvp(bilinear_jvp(conv_general_dilated_p))
conv_general_dilated_p.def_transpose(_transpose)
conv_general_dilated_p.def_batch(_batch)
conv_general_dilated_p.def_traits(linear=True)  # bilinear: linear in each operand separately
conv_general_dilated_p.def_traits(sparse="conv_general_dilated")
conv_general_dilated_p.def_taylor(bilinear_taylor(conv_general_dilated_p))


def conv_general_dilated(
    lhs,
    rhs,
    *,
    window_strides,
    padding,
    lhs_dilation,
    rhs_dilation,
    dimension_numbers,
    feature_group_count=1,
    batch_group_count=1,
    precision=None,
    preferred_element_type=None,
):
    """Bind the primitive with canonical parameters (explicit padding, ``ConvDimensionNumbers``).

    >>> import numpy as np
    >>> dn = ConvDimensionNumbers((0, 1, 2), (0, 1, 2), (0, 1, 2))
    >>> y = conv_general_dilated(np.ones((1, 1, 5)), np.ones((1, 1, 3)), window_strides=(1,),
    ...     padding=((0, 0),), lhs_dilation=(1,), rhs_dilation=(1,), dimension_numbers=dn)
    >>> np.asarray(y).tolist()
    [[[3.0, 3.0, 3.0]]]
    """
    return conv_general_dilated_p.bind(
        lhs,
        rhs,
        window_strides=tuple(int(s) for s in window_strides),
        padding=tuple((int(lo), int(hi)) for lo, hi in padding),
        lhs_dilation=tuple(int(d) for d in lhs_dilation),
        rhs_dilation=tuple(int(d) for d in rhs_dilation),
        dimension_numbers=ConvDimensionNumbers(*(tuple(int(d) for d in s) for s in dimension_numbers)),
        feature_group_count=int(feature_group_count),
        batch_group_count=int(batch_group_count),
        precision=precision,
        preferred_element_type=None if preferred_element_type is None else np.dtype(preferred_element_type),
    )
