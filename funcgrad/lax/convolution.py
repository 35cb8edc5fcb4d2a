"""``funcgrad.lax`` convolutions: ``jax.lax``'s convolution functions, names and signatures, over the
``conv_general_dilated`` primitive (``primitives/conv.py``).

Layer: surface. Imports the primitive catalog, ``funcgrad.numpy._core`` (conversion helpers) and
``funcgrad.numpy.contractions`` (``einsum``, for the locally connected convolution).

Everything here canonicalises arguments and binds the one primitive: string padding becomes
explicit ``(lo, hi)`` pairs (``padtype_to_pads``), string dimension numbers a
``ConvDimensionNumbers`` (``conv_dimension_numbers``), ``precision`` a pair of ``Precision``.
Shapes, feature/group counts and paddings are checked by the primitive's abstract evaluation
before anything runs (eagerly too), so a mistake raises a ``ValueError`` or ``TypeError`` naming
the argument and the shapes, never an XLA error. Operands of different dtypes are JAX's TypeError
under JAX's dtype rules (32-bit mode, the alias); funcgrad's own 64-bit mode promotes them (NumPy
2's rules, so that float32 images meet the float64 weights its initialisers give).
``preferred_element_type`` follows JAX's rule.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from funcgrad._placement import takes_out_sharding  # out_sharding= (JAX 0.10's explicit sharding)
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.ir import ShapedArray
from funcgrad.numpy._core import asarray, canonicalize_dtype, promote_args
from funcgrad.numpy.contractions import einsum
from funcgrad.primitives import conv as cv
from funcgrad.primitives import structure as st
from funcgrad.primitives.conv import ConvDimensionNumbers, conv_shape_tuple, dilate_shape, padtype_to_pads
from funcgrad.primitives.dot import canonicalize_precision

__all__ = [
    "ConvDimensionNumbers",
    "ConvGeneralDilatedDimensionNumbers",
    "conv",
    "conv_dimension_numbers",
    "conv_general_dilated",
    "conv_general_dilated_local",
    "conv_general_dilated_patches",
    "conv_general_permutations",
    "conv_general_shape_tuple",
    "conv_shape_tuple",
    "conv_transpose",
    "conv_transpose_shape_tuple",
    "conv_with_general_padding",
    "padtype_to_pads",
]

# The accepted spellings of ``dimension_numbers`` (a type alias, as in JAX).
ConvGeneralDilatedDimensionNumbers = tuple[str, str, str] | ConvDimensionNumbers | None


def conv_general_permutations(dimension_numbers):
    """The permutations into canonical (N, C, spatial...), (O, I, spatial...), (N, C, spatial...)
    order of string dimension numbers; spatial dimensions follow their order in the rhs spec.

    >>> conv_general_permutations(("NHWC", "HWIO", "NHWC"))
    ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    """
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    charpairs = (("N", "C"), ("O", "I"), ("N", "C"))
    for i, (a, b) in enumerate(charpairs):
        spec = dimension_numbers[i]
        if not spec.count(a) == spec.count(b) == 1:
            raise TypeError(
                f"convolution dimension_numbers[{i}] must contain the characters '{a}' and '{b}' "
                f"exactly once, got {spec!r}"
            )
        if len(spec) != len(set(spec)):
            raise TypeError(
                f"convolution dimension_numbers[{i}] cannot have duplicate characters, got {spec!r}"
            )
    if not set(lhs_spec) - {"N", "C"} == set(rhs_spec) - {"O", "I"} == set(out_spec) - {"N", "C"}:
        raise TypeError(
            f"convolution dimension_numbers elements must each have the same set of spatial "
            f"characters, got {tuple(dimension_numbers)}"
        )

    def perm(spec, pair):
        spatial = [i for i, c in enumerate(spec) if c not in pair]
        if spec is not rhs_spec:
            spatial = sorted(spatial, key=lambda i: rhs_spec.index(spec[i]))
        return (spec.index(pair[0]), spec.index(pair[1]), *spatial)

    return tuple(perm(s, p) for s, p in zip(dimension_numbers, charpairs))


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
    """``dimension_numbers`` (``None``, a ``ConvDimensionNumbers`` or three strings such as
    ``('NHWC', 'HWIO', 'NHWC')``) as a ``ConvDimensionNumbers``; ``None`` means NCHW/OIHW/NCHW.

    >>> conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), ("NHWC", "HWIO", "NHWC"))
    ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2))
    """
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return ConvDimensionNumbers(*(tuple(int(d) for d in s) for s in dimension_numbers))
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError(
            f"convolution requires lhs and rhs ndim to be equal, got {len(lhs_shape)} and {len(rhs_shape)} "
            f"(shapes {tuple(lhs_shape)} and {tuple(rhs_shape)})"
        )
    if dimension_numbers is None:
        iota = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(iota, iota, iota)
    if not isinstance(dimension_numbers, list | tuple):
        raise TypeError(
            f"convolution dimension_numbers must be a tuple/list of three strings, a "
            f"ConvDimensionNumbers or None, got {type(dimension_numbers).__name__}"
        )
    if len(dimension_numbers) != 3:
        raise TypeError(
            f"convolution dimension_numbers list/tuple must be length 3, got {len(dimension_numbers)}"
        )
    if not all(isinstance(e, str) for e in dimension_numbers):
        if all(isinstance(e, Sequence) for e in dimension_numbers):
            return ConvDimensionNumbers(*(tuple(int(d) for d in s) for s in dimension_numbers))
        raise TypeError(
            "convolution dimension_numbers elements must be strings, got "
            f"{tuple(map(type, dimension_numbers))}"
        )
    for i, e in enumerate(dimension_numbers):
        if len(e) != len(lhs_shape):
            raise TypeError(
                f"convolution dimension_numbers[{i}] must have len equal to the ndim of lhs and rhs, "
                f"got {len(e)} for lhs and rhs shapes {tuple(lhs_shape)} and {tuple(rhs_shape)}"
            )
    return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))


def _spatial(values, n, name, what, error=None):
    """``values`` (None: ones) as ``n`` ints, one per spatial dimension; ``error(values)`` is the
    caller's error for another number of them (by default one naming ``name`` and ``what``)."""
    if values is None:
        return (1,) * n
    values = tuple(int(v) for v in values)
    if len(values) != n:
        if error is not None:
            raise error(values)
        raise ValueError(f"{name}: {what} needs one entry per spatial dimension ({n}), got {values}")
    return values


def _strides_error(n, name):
    def error(values) -> ValueError:  # (JAX's words first)
        return ValueError(
            "conv_general_dilated window and window_strides must have the same number of dimensions, "
            f"but got {n} and {len(values)}. ({name}: window_strides needs one entry per spatial dimension)"
        )

    return error


@takes_out_sharding
def conv_general_dilated(
    lhs,
    rhs,
    window_strides: Sequence[int],
    padding,
    lhs_dilation: Sequence[int] | None = None,
    rhs_dilation: Sequence[int] | None = None,
    dimension_numbers: ConvGeneralDilatedDimensionNumbers = None,
    feature_group_count: int = 1,
    batch_group_count: int = 1,
    precision=None,
    preferred_element_type=None,
):
    """General n-dimensional convolution with strides, padding, dilations and groups (XLA's Conv).

    - ``window_strides``: ``n`` ints; ``padding``: ``'SAME'``, ``'SAME_LOWER'``, ``'VALID'`` or
      ``n`` ``(low, high)`` pairs (negative values crop);
    - ``lhs_dilation`` (transposed convolution) and ``rhs_dilation`` (atrous): ``n`` ints or None;
    - ``dimension_numbers``: ``None`` (NCHW, OIHW, NCHW), three strings such as
      ``('NHWC', 'HWIO', 'NHWC')`` or a ``ConvDimensionNumbers``; ``window_strides`` etc. follow
      the order of the spatial characters in the rhs spec;
    - ``feature_group_count`` / ``batch_group_count``: grouped (e.g. depthwise) convolutions;
    - ``precision``: ``None``, a ``Precision``, a string or a pair; ``preferred_element_type``: the
      accumulation and result dtype.

    >>> x = np.arange(5.0).reshape(1, 1, 5)
    >>> conv_general_dilated(x, np.ones((1, 1, 3)), (1,), "SAME").tolist()
    [[[1.0, 3.0, 6.0, 9.0, 7.0]]]
    >>> y = conv_general_dilated(np.ones((2, 8, 8, 3)), np.ones((3, 3, 3, 16)), (2, 2), "SAME",
    ...                          dimension_numbers=("NHWC", "HWIO", "NHWC"))
    >>> y.shape
    (2, 4, 4, 16)
    """
    name = "lax.conv_general_dilated"
    lhs, rhs = asarray(lhs), asarray(rhs)
    if not _dt.jax_rules:
        # funcgrad's 64-bit mode promotes mixed dtypes (NumPy 2's rules, so that a JAX program's
        # float32 images meet the float64 weights its initialisers give here); JAX's rules refuse
        lhs, rhs = promote_args(lhs, rhs)
    if lhs.ndim != rhs.ndim or lhs.ndim < 2:
        raise ValueError(  # (JAX's words first)
            "conv_general_dilated lhs and rhs must have the same number of dimensions, but got "
            f"{lhs.shape} and {rhs.shape}. ({name}: at least 2, batch and feature)"
        )
    dn = conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
    n = lhs.ndim - 2
    window_strides = _spatial(window_strides, n, name, "window_strides", _strides_error(n, name))
    lhs_dilation = _spatial(lhs_dilation, n, name, "lhs_dilation")
    rhs_dilation = _spatial(rhs_dilation, n, name, "rhs_dilation")
    if isinstance(padding, str):
        if any(d != 1 for d in lhs_dilation):
            raise ValueError(
                f"{name}: string padding ({padding!r}) is not defined with lhs_dilation={lhs_dilation}; "
                "give explicit (lo, hi) pairs or use lax.conv_transpose"
            )
        rhs_sp = [rhs.shape[d] for d in dn.rhs_spec[2:]]
        lhs_sp = [lhs.shape[d] for d in dn.lhs_spec[2:]]
        padding = padtype_to_pads(lhs_sp, dilate_shape(rhs_sp, rhs_dilation), window_strides, padding)
    else:
        try:
            padding = tuple((int(lo), int(hi)) for lo, hi in padding)
        except (TypeError, ValueError):
            raise ValueError(  # (JAX's words)
                "padding argument to conv_general_dilated should be a string or a sequence of (low, high) "
                f"pairs, got {padding!r}"
            ) from None
    pet = None if preferred_element_type is None else canonicalize_dtype(preferred_element_type)
    try:
        _check_dtypes(name, lhs.dtype, rhs.dtype, pet)
    except TypeError as e:
        dtype_error = e
    else:
        dtype_error = None
    params = dict(
        window_strides=window_strides,
        padding=padding,
        lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation,
        dimension_numbers=dn,
        feature_group_count=feature_group_count,
        batch_group_count=batch_group_count,
    )
    if dtype_error is not None:
        # JAX's shape rule runs before its dtype rule: operands whose shapes do not fit raise that
        # ValueError first (conv_transpose with the kernel's features swapped and a narrower
        # preferred_element_type: the lax-parameter fuzzer, seed 20010)
        avals = ShapedArray(lhs.shape, lhs.dtype), ShapedArray(rhs.shape, lhs.dtype)
        cv.conv_general_dilated_p.abstract_eval(*avals, **params)
        raise dtype_error
    return cv.conv_general_dilated(
        lhs,
        rhs,
        **params,
        precision=canonicalize_precision(precision, name, algorithms=False),
        preferred_element_type=pet,
    )


def _check_dtypes(name, lhs, rhs, pet) -> None:
    """JAX's dtype rule of a convolution (after its shape checks): operands of one dtype (no
    promotion), and ``preferred_element_type`` as ``lax._validate_preferred_element_type`` allows it
    -- integers to integers of the same signedness or to floats, floats to floats, complex to
    complex, never narrower.

    >>> _check_dtypes("lax.conv_general_dilated", np.dtype("int8"), np.dtype("int8"), np.dtype("uint16"))
    Traceback (most recent call last):
    TypeError: `preferred_element_type` must have the same signedness as the original type.
    """
    if lhs != rhs:
        raise TypeError(f"{name} requires arguments to have the same dtypes, got {lhs}, {rhs}.")
    if pet is None:
        return
    kind, want = _dt.kind(lhs), _dt.kind(pet)
    if not (kind in "iu" and want == "f"):
        if any(kind in group and want not in group for group in ("iu", "f", "c")):
            raise TypeError(
                "Input type is incompatible with `preferred_element_type`. The compatible combinations "
                "of (input_type, preferred_element_type) are (integral, integral), (integral, floating), "
                "(floating, floating), (complex, complex."
            )
        if kind == "i" and want != "i":
            raise TypeError("`preferred_element_type` must have the same signedness as the original type.")
    if np.dtype(pet).itemsize < np.dtype(lhs).itemsize:
        raise TypeError("`preferred_element_type` must not be narrower than the original type.")


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """Convolution in NCHW/OIHW layout without dilation (``conv_general_dilated``'s defaults).

    >>> conv(np.ones((1, 1, 4, 4)), np.ones((2, 1, 3, 3)), (1, 1), "VALID").shape
    (1, 2, 2, 2)
    """
    return conv_general_dilated(
        lhs, rhs, window_strides, padding, precision=precision, preferred_element_type=preferred_element_type
    )


def conv_with_general_padding(
    lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, precision=None, preferred_element_type=None
):
    """Convolution in NCHW/OIHW layout with explicit padding and dilations.

    >>> conv_with_general_padding(np.ones((1, 1, 4)), np.ones((1, 1, 2)), (1,), [(1, 1)], (1,), (2,)).shape
    (1, 1, 4)
    """
    return conv_general_dilated(
        lhs,
        rhs,
        window_strides,
        padding,
        lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )


def _conv_transpose_padding(k, s, padding):
    """(before, after) padding of one dimension of a transposed convolution (JAX's rule)."""
    if padding == "SAME":
        pad_len = k + s - 2
        pad_a = k - 1 if s > k - 1 else int(np.ceil(pad_len / 2))
    elif padding == "VALID":
        pad_len = k + s - 2 + max(k - s, 0)
        pad_a = k - 1
    elif isinstance(padding, tuple):
        pads = tuple(k - p - 1 for p in padding)
        pad_a, pad_len = pads[0], sum(pads)
    else:
        raise ValueError(
            f"conv_transpose: padding must be 'SAME', 'VALID' or (lo, hi) pairs, got {padding!r}"
        )
    return pad_a, pad_len - pad_a


def _default_transpose_layout(ndim):
    layouts = {
        2: ("NC", "IO", "NC"),
        3: ("NHC", "HIO", "NHC"),
        4: ("NHWC", "HWIO", "NHWC"),
        5: ("NHWDC", "HWDIO", "NHWDC"),
    }
    if ndim not in layouts:
        raise ValueError(
            f"conv_transpose: no default dimension_numbers for rank-{ndim} operands; pass dimension_numbers"
        )
    return layouts[ndim]


def conv_transpose(
    lhs,
    rhs,
    strides,
    padding,
    rhs_dilation=None,
    dimension_numbers=None,
    transpose_kernel: bool = False,
    precision=None,
    preferred_element_type=None,
    use_consistent_padding: bool = False,
):
    """Transposed ("fractionally strided") convolution, computed directly as a convolution with
    ``lhs_dilation=strides`` (``jax.lax.conv_transpose``; the default layout is TensorFlow's NHWC/
    HWIO). ``transpose_kernel=True`` flips the kernel's spatial axes and swaps its in/out features,
    giving the gradient of ``conv`` (Keras's ``Conv2DTranspose``). String padding is that of the
    forward convolution; explicit pairs are the transposed convolution's own padding unless
    ``use_consistent_padding`` (then they are the forward's too, as in PyTorch).

    >>> conv_transpose(np.ones((1, 5, 2)), np.ones((3, 2, 4)), (2,), "SAME").shape
    (1, 10, 4)
    """
    lhs, rhs = asarray(lhs), asarray(rhs)
    if not _dt.jax_rules:
        # funcgrad's 64-bit mode promotes mixed dtypes (NumPy 2's rules, so that a JAX program's
        # float32 images meet the float64 weights its initialisers give here); JAX's rules refuse
        lhs, rhs = promote_args(lhs, rhs)
    if lhs.ndim != rhs.ndim or lhs.ndim < 2:
        raise ValueError(
            "lax.conv_transpose: lhs and rhs must have the same rank >= 2, got shapes "
            f"{lhs.shape} and {rhs.shape}"
        )
    if dimension_numbers is None:
        dimension_numbers = _default_transpose_layout(lhs.ndim)
    dn = conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
    k_sdims = [rhs.shape[d] for d in dn.rhs_spec[2:]]
    n = lhs.ndim - 2
    strides = _spatial(strides, n, "lax.conv_transpose", "strides")
    rhs_dilation = _spatial(rhs_dilation, n, "lax.conv_transpose", "rhs_dilation")
    if use_consistent_padding or (isinstance(padding, str) and padding in ("SAME", "VALID")):
        effective = dilate_shape(k_sdims, rhs_dilation)
        per_dim = [padding] * n if isinstance(padding, str) else [tuple(p) for p in padding]
        pads = [_conv_transpose_padding(k, s, p) for k, s, p in zip(effective, strides, per_dim)]
    else:
        pads = padding
    if transpose_kernel:
        rhs = st.rev(rhs, dn.rhs_spec[2:])
        perm = list(range(rhs.ndim))
        perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = dn.rhs_spec[1], dn.rhs_spec[0]
        rhs = st.transpose(rhs, tuple(perm))
    return conv_general_dilated(
        lhs,
        rhs,
        (1,) * n,
        pads,
        strides,
        rhs_dilation,
        dn,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    """Output shape of ``conv_general_dilated`` (no dilation) for operand shapes in the layout of
    ``dimension_numbers``.

    >>> conv_general_shape_tuple((1, 5, 5, 3), (3, 3, 3, 8), (1, 1), "SAME", ("NHWC", "HWIO", "NHWC"))
    (1, 5, 5, 8)
    """
    lhs_perm, rhs_perm, out_perm = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    lhs_t = [lhs_shape[d] for d in lhs_perm]
    rhs_t = [rhs_shape[d] for d in rhs_perm]
    out_t = conv_shape_tuple(lhs_t, rhs_t, window_strides, padding)
    return tuple(int(out_t[list(out_perm).index(d)]) for d in range(len(out_t)))


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    """Output shape of ``conv_transpose`` for operand shapes in the layout of ``dimension_numbers``.

    >>> conv_transpose_shape_tuple((1, 5, 2), (3, 2, 4), (2,), "SAME", ("NHC", "HIO", "NHC"))
    (1, 10, 4)
    """
    lhs_perm, rhs_perm, out_perm = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    lhs_t = [lhs_shape[d] for d in lhs_perm]
    rhs_t = [rhs_shape[d] for d in rhs_perm]
    if isinstance(padding, str):
        padding = [_conv_transpose_padding(k, s, padding) for k, s in zip(rhs_t[2:], window_strides)]
    totals = [int(np.sum(p)) for p in padding]
    unpadded = [(i - 1) * s - k + 2 for i, k, s in zip(lhs_t[2:], rhs_t[2:], window_strides)]
    out_t = (lhs_t[0], rhs_t[0], *(u + p for u, p in zip(unpadded, totals)))
    return tuple(int(out_t[list(out_perm).index(d)]) for d in range(len(out_t)))


def conv_general_dilated_patches(
    lhs,
    filter_shape,
    window_strides,
    padding,
    lhs_dilation=None,
    rhs_dilation=None,
    dimension_numbers=None,
    precision=None,
    preferred_element_type=None,
):
    """The patches a convolution with a kernel of spatial shape ``filter_shape`` sees, flattened
    into the output's feature dimension (ordered ``c`` then the spatial dims of the rhs spec), as
    JAX computes them: a convolution with an identity kernel and one group per input feature.

    >>> conv_general_dilated_patches(np.arange(8.0).reshape(1, 2, 4), (2,), (1,), "VALID").shape
    (1, 4, 3)
    """
    lhs = asarray(lhs)
    filter_shape = tuple(int(k) for k in filter_shape)
    dn = conv_dimension_numbers(lhs.shape, (1, 1, *filter_shape), dimension_numbers)
    size = int(np.prod(filter_shape, dtype=np.int64))
    channels = lhs.shape[dn.lhs_spec[1]]
    eye = np.broadcast_to(np.eye(size, dtype=lhs.dtype), (channels, size, size))
    kernel = eye.reshape(channels * size, 1, *filter_shape)
    kernel = np.moveaxis(kernel, (0, 1), (dn.rhs_spec[0], dn.rhs_spec[1]))
    if precision is not None:
        precision = (
            canonicalize_precision(precision, "lax.conv_general_dilated_patches", algorithms=False)[0],
            "default",
        )
    return conv_general_dilated(
        lhs,
        np.ascontiguousarray(kernel),
        window_strides,
        padding,
        lhs_dilation,
        rhs_dilation,
        dn,
        feature_group_count=channels,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )


def conv_general_dilated_local(
    lhs,
    rhs,
    window_strides,
    padding,
    filter_shape,
    lhs_dilation=None,
    rhs_dilation=None,
    dimension_numbers=None,
    precision=None,
):
    """Unshared ("locally connected") convolution: a separate kernel at every output position.
    ``rhs`` has the output's spatial shape and an input-feature dimension of size
    ``prod(filter_shape) * in_features`` (JAX's layout: the patches of
    ``conv_general_dilated_patches`` contracted position by position).

    >>> conv_general_dilated_local(np.ones((1, 1, 4)), np.ones((2, 2, 3)), (1,), "VALID", (2,)).shape
    (1, 2, 3)
    """
    lhs = asarray(lhs)
    c_precision = canonicalize_precision(precision, "lax.conv_general_dilated_local", algorithms=False)
    patches = conv_general_dilated_patches(
        lhs,
        filter_shape,
        window_strides,
        padding,
        lhs_dilation,
        rhs_dilation,
        dimension_numbers,
        None if c_precision is None else c_precision[0],
    )
    lhs_spec, rhs_spec, out_spec = conv_dimension_numbers(lhs.shape, (1, 1, *filter_shape), dimension_numbers)
    letters = "abcdefghijklmnopqrstuvwxyz"
    spatial = letters[: lhs.ndim - 2]
    lhs_sub = [""] * lhs.ndim
    lhs_sub[out_spec[0]], lhs_sub[out_spec[1]] = "N", "C"
    rhs_sub = [""] * lhs.ndim
    rhs_sub[rhs_spec[0]], rhs_sub[rhs_spec[1]] = "O", "C"
    out_sub = [""] * lhs.ndim
    out_sub[out_spec[0]], out_sub[out_spec[1]] = "N", "O"
    for i, s in enumerate(spatial):
        lhs_sub[out_spec[2 + i]] = s
        rhs_sub[rhs_spec[2 + i]] = s
        out_sub[out_spec[2 + i]] = s
    spec = f"{''.join(lhs_sub)},{''.join(rhs_sub)}->{''.join(out_sub)}"
    return einsum(spec, patches, asarray(rhs), precision=precision)
