"""The products of ``funcgrad.numpy.linalg`` (``multi_dot``) and the Array API functions it
holds that are other ``funcgrad.numpy`` functions under linalg's rules (``matmul``, ``tensordot``,
``vecdot`` with ``precision=``; ``outer``, ``cross``, ``diagonal``, ``trace`` on vectors and
matrices only). ``funcgrad.numpy.linalg`` imports them into its namespace.

Layer: surface. Imports the modules of ``funcgrad.numpy`` (``contractions``, ``lookup``,
``_core``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np  # noqa: F401 - (the examples)

from funcgrad.numpy import contractions
from funcgrad.numpy._core import (
    asarray,
)
from funcgrad.numpy.contractions import cross as _cross
from funcgrad.numpy.contractions import einsum
from funcgrad.numpy.contractions import outer as _outer
from funcgrad.numpy.contractions import trace as _trace
from funcgrad.numpy.lookup import diagonal as _diagonal

# (no __all__: funcgrad.numpy's namespace is the union of its modules' __all__, and these are
# funcgrad.numpy.linalg's, listed there)


def multi_dot(arrays: Sequence, *, precision=None):
    """The product of a chain of matrices in the cheapest order (the first and last may be
    vectors).

    >>> multi_dot([np.ones((2, 3)), np.ones((3, 4)), np.ones(4)]).tolist()
    [12.0, 12.0]
    """
    arrays = [asarray(a) for a in arrays]
    if len(arrays) < 2:
        raise ValueError(f"multi_dot needs at least two arrays, got {len(arrays)}")
    if not (
        arrays[0].ndim in (1, 2) and arrays[-1].ndim in (1, 2) and all(a.ndim == 2 for a in arrays[1:-1])
    ):
        raise ValueError(
            "multi_dot: the arrays must be two-dimensional, except the first and last which may be "
            f"one-dimensional; got shapes {[a.shape for a in arrays]}"
        )
    if any(x.shape[-1] != y.shape[0] for x, y in zip(arrays[:-1], arrays[1:])):
        raise ValueError(f"multi_dot: shapes {[a.shape for a in arrays]} are not aligned for a matrix chain")
    labels = [(i, i + 1) for i in range(len(arrays))]
    if arrays[0].ndim == 1:
        labels[0] = labels[0][1:]
    if arrays[-1].ndim == 1:
        labels[-1] = labels[-1][:1]
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    if len(arrays) + 1 > len(letters):
        out = arrays[0]
        for a in arrays[1:]:
            out = matmul(out, a)
        return out
    spec = ",".join("".join(letters[i] for i in lab) for lab in labels)
    kept = [letters[0]] if arrays[0].ndim == 2 else []
    kept += [letters[len(arrays)]] if arrays[-1].ndim == 2 else []
    return einsum(f"{spec}->{''.join(kept)}", *arrays, optimize="optimal")


def _precision(name, precision):
    """``precision`` is a TPU/GPU knob: float32/float64 products are exact on the CPU."""
    if (
        precision is not None
        and not isinstance(precision, str | tuple | list)
        and not hasattr(precision, "name")
    ):
        raise TypeError(f"{name}: precision must be None, a string or a lax.Precision, got {precision!r}")


def matmul(x1, x2, /, *, precision=None, preferred_element_type=None):
    """Matrix product (``jax.numpy.linalg.matmul``; ``precision`` has no effect on the CPU, whose
    float products are computed in full precision).

    >>> matmul(np.array([[1.0, 2.0]]), np.array([[3.0], [4.0]])).tolist()
    [[11.0]]
    """
    _precision("matmul", precision)
    return contractions.matmul(x1, x2, preferred_element_type=preferred_element_type)


def tensordot(x1, x2, /, *, axes=2, precision=None, preferred_element_type=None):
    """Tensor contraction over ``axes`` (``jax.numpy.linalg.tensordot``).

    >>> tensordot(np.ones((2, 3)), np.ones((3, 4)), axes=1).shape
    (2, 4)
    """
    _precision("tensordot", precision)
    return contractions.tensordot(x1, x2, axes, preferred_element_type=preferred_element_type)


def vecdot(x1, x2, /, *, axis: int = -1, precision=None, preferred_element_type=None):
    """Vector dot product along ``axis`` (conjugating ``x1``), broadcasting the other axes.

    >>> vecdot(np.ones((2, 3)), np.arange(3.0)).tolist()
    [3.0, 3.0]
    """
    _precision("vecdot", precision)
    if preferred_element_type is not None:
        x1, x2 = asarray(x1).astype(preferred_element_type), asarray(x2).astype(preferred_element_type)
    return contractions.vecdot(x1, x2, axis=axis)


def outer(x1, x2, /):
    """Outer product of two vectors (Array API ``linalg.outer``).

    >>> outer(np.array([1, 2]), np.array([3, 4])).tolist()
    [[3, 4], [6, 8]]
    """
    x1, x2 = asarray(x1), asarray(x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(
            f"linalg.outer: the inputs must be one-dimensional, got shapes {x1.shape} and {x2.shape}"
        )
    return _outer(x1, x2)


def cross(x1, x2, /, *, axis: int = -1):
    """Cross product of 3-element vectors along ``axis`` (Array API ``linalg.cross``).

    >>> cross(np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])).tolist()
    [0.0, 0.0, 1.0]
    """
    x1, x2 = asarray(x1), asarray(x2)
    if x1.ndim == 0 or x2.ndim == 0 or x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError(
            f"linalg.cross: both inputs must have size 3 along axis {axis}, "
            f"got shapes {x1.shape} and {x2.shape}"
        )
    return _cross(x1, x2, axis=axis)


def diagonal(x, /, *, offset: int = 0):
    """The diagonals of the matrices in the last two axes (Array API ``linalg.diagonal``).

    >>> diagonal(np.arange(4.0).reshape(2, 2)).tolist()
    [0.0, 3.0]
    """
    x = asarray(x)
    if x.ndim < 2:
        raise ValueError(f"linalg.diagonal: x must be at least two-dimensional, got shape {x.shape}")
    return _diagonal(x, offset, -2, -1)


def trace(x, /, *, offset: int = 0, dtype=None):
    """Trace of the last two axes (Array API ``linalg.trace``).

    >>> trace(np.eye(3)).item()
    3.0
    """
    return _trace(x, offset, -2, -1, dtype)
