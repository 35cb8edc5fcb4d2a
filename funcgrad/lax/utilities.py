"""``jax.lax``'s value utilities: ``empty``, ``dtype``, ``optimization_barrier``, ``dce_sink``,
``reduce_precision``, ``shape_as_value`` and the tokens ``create_token``/``after_all``.

Layer: surface. Imports the kernel's tree utilities, the primitive catalog (``primitives.placement``'s
barrier, ``primitives.bitcast``'s ``reduce_precision``) and ``funcgrad.numpy``'s core.

``optimization_barrier`` is the primitive checkpoint uses to keep XLA from merging a recomputation
with the forward pass (``stablehlo.optimization_barrier``); ``reduce_precision`` rounds to a
narrower float format bit for bit as XLA does, eagerly too. ``create_token`` and ``after_all``
make and merge XLA tokens (``primitives.tokens``; NOTE: [tokens] in funcgrad/kernel/ir.py).
"""

from __future__ import annotations

import numpy as np

from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import tree_util as tu
from funcgrad.numpy._core import asarray
from funcgrad.numpy._dtypes import canonicalize_dtype, dtype_and_weak
from funcgrad.primitives.bitcast import reduce_precision_p
from funcgrad.primitives.placement import dce_sink_p, optimization_barrier_p
from funcgrad.primitives.structure import broadcast_in_dim
from funcgrad.primitives.tokens import after_all, create_token

__all__ = [
    "after_all",
    "create_token",
    "dce_sink",
    "dtype",
    "empty",
    "optimization_barrier",
    "reduce_precision",
    "shape_as_value",
]


def empty(shape, dtype, *, out_sharding=None):
    """An array of ``shape`` and ``dtype`` whose values are unspecified (zeros here: funcgrad's
    arrays are immutable values, and XLA's CPU backend makes no uninitialised buffers).

    >>> empty((2,), np.float32).shape
    (2,)
    """
    if out_sharding is not None:
        raise TypeError(
            "lax.empty: out_sharding is not taken here; place the result with "
            "funcgrad.device_put(x, sharding) or build it inside a jit with out_shardings="
        )
    shape = (int(shape),) if isinstance(shape, int | np.integer) else tuple(int(s) for s in shape)
    return broadcast_in_dim(asarray(0, canonicalize_dtype(dtype)), shape, ())


def dtype(x, *, canonicalize: bool = False) -> np.dtype:
    """The dtype of a value or a type: Python scalars and types get funcgrad's default dtypes
    (``float`` is float64), NumPy values and dtypes keep theirs (canonicalised on request).

    >>> dtype(1.0), dtype(np.float32(1)), dtype(int)
    (dtype('float64'), dtype('float32'), dtype('int64'))
    """
    if isinstance(x, type) and x in (bool, int, float, complex):
        out = canonicalize_dtype(
            {bool: np.bool_, int: np.int64, float: np.float64, complex: np.complex128}[x]
        )
    elif isinstance(x, np.dtype | type) or isinstance(x, str):
        out = _dt.canonical(np.dtype(x))
    else:
        out = dtype_and_weak(x)[0]
    return canonicalize_dtype(out) if canonicalize else out


def dce_sink(val, *, prevent_mlir_dce: bool = False) -> None:
    """Mark every array of the pytree ``val`` used, so that dead-code elimination keeps the work
    computing it (JAX's ``lax.dce_sink``; ``prevent_mlir_dce=True`` also keeps it in the compiled
    program). Returns None.

    >>> import funcgrad
    >>> def f(x):
    ...     dce_sink({"a": x + 1.0})
    ...     return x
    >>> print(funcgrad.make_jaxpr(f)(1.0))
    { lambda ; a:f64[]. let
        b:f64[] = add a 1.0:f64[]
        dce_sink[prevent_mlir_dce=False] b
      in (a,) }
    """
    for leaf in tu.tree_leaves(val):
        dce_sink_p.bind(asarray(leaf), prevent_mlir_dce=bool(prevent_mlir_dce))


def optimization_barrier(operand, /):
    """The identity on a pytree of arrays, which XLA may not optimise across: the values cannot
    be computed earlier or later than the barrier, or merged with equal values on its other side.
    Differentiable (the tangents pass through a barrier too) and batchable.

    >>> [float(v) for v in optimization_barrier((np.float64(1.0), np.float64(2.0)))]
    [1.0, 2.0]
    """
    leaves, tree = tu.tree_flatten(operand)
    return tu.tree_unflatten(tree, optimization_barrier_p.bind(*map(asarray, leaves)))


def reduce_precision(operand, exponent_bits: int, mantissa_bits: int):
    """``operand`` rounded to the float format with ``exponent_bits`` and ``mantissa_bits`` (round
    to nearest even; values beyond the format's range become infinities, below it signed zeros;
    NaN stays NaN), in ``operand``'s own dtype. Its derivative passes the cotangent through the
    same rounding, as in JAX.

    >>> reduce_precision(np.array([1.0 + 2.0**-10, 70000.0], np.float32), 5, 10).tolist()  # float16's format
    [1.0009765625, inf]
    """
    for name, value in (("exponent_bits", exponent_bits), ("mantissa_bits", mantissa_bits)):
        if not isinstance(value, int | np.integer):
            raise TypeError(f"lax.reduce_precision: {name} must be a Python int, got {value!r}")
    x = asarray(operand)
    return reduce_precision_p.bind(x, exponent_bits=int(exponent_bits), mantissa_bits=int(mantissa_bits))


def shape_as_value(shape):
    """``shape`` as a 1-D integer array (JAX's ``lax.shape_as_value``): int32, or int64 where a
    dimension exceeds int32; an empty shape gives an empty int32 Array. funcgrad traces with
    concrete shapes, so the result is a constant of the trace: under ``funcgrad.export``'s
    symbolic shapes (fitted from traces at several sizes) a value computed from it is not
    symbolic, where JAX's would be computed from the dimension variables.

    >>> shape_as_value((2, 3))
    array([2, 3], dtype=int32)
    >>> shape_as_value(()).shape
    (0,)
    """
    dims = tuple(int(d) for d in shape)
    dtype = np.int64 if any(d > np.iinfo(np.int32).max for d in dims) else np.int32
    if not dims:  # (JAX's is a device Array here, a NumPy array otherwise)
        return asarray(np.zeros((0,), dtype))
    return np.asarray(dims, dtype=dtype)
