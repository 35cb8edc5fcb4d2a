"""``threefry2x32_p``: the threefry2x32 block cipher as one primitive (JAX's
``jax.extend.random.threefry2x32_p``), for PRNG implementations written against JAX's extension API.

Layer: surface. Imports the kernel (``Primitive``, avals, ``ShapedArray``), funcgrad.random._cipher
(the hash, written with add/xor/shift primitives), funcgrad.interpreters.mlir (``lower_fun``) and
funcgrad.numpy (``broadcast_to``).

``threefry2x32_p.bind(k0, k1, x0, x1)`` takes four ``uint32`` arrays of one rank (the two key
words and the two count words, broadcast along size-1 axes) and returns the two hashed words.
funcgrad's own samplers call the hash directly (NOTE: [rolled threefry rounds]: XLA fuses its
rounds into the consumer of the bits); the primitive gives the same words, eagerly, under ``jit``
(lowered from the same function) and under ``vmap`` (elementwise).

>>> import numpy as np
>>> u = lambda v: np.asarray(v, np.uint32)
>>> [w.tolist() for w in threefry2x32_p.bind(u([0]), u([0]), u([0]), u([0]))]
[[1797259609], [2579123966]]
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.interpreters import batching, mlir
from funcgrad.kernel import core
from funcgrad.kernel.ir import ShapedArray
from funcgrad.random._cipher import _threefry2x32

__all__ = ["threefry2x32_p"]

_U32 = np.dtype(np.uint32)

threefry2x32_p = core.Primitive("threefry2x32", multiple_results=True)


def _shape(avals) -> tuple[int, ...]:
    """JAX's rule for the primitive: ``uint32`` operands of one rank, broadcast along size-1 axes."""
    if any(a.dtype != _U32 for a in avals):
        raise TypeError(f"Arguments to threefry2x32 must have uint32 type, got {tuple(avals)}")
    shapes = [tuple(a.shape) for a in avals]
    if len({len(s) for s in shapes}) != 1:
        raise TypeError(
            "threefry2x32: arrays must have same number of dimensions, got "
            + ", ".join(map(str, shapes))
            + "."
        )
    out = []
    for sizes in zip(*shapes):
        big = {d for d in sizes if d != 1}
        if len(big) > 1:
            raise TypeError(
                f"threefry2x32 got incompatible shapes for broadcasting: {', '.join(map(str, shapes))}."
            )
        out.append(big.pop() if big else 1)
    return tuple(out)


def _abstract_eval(*avals):
    aval = ShapedArray(_shape(avals), _U32)
    return [aval, aval]


def _hash(k0, k1, x0, x1):
    args = (k0, k1, x0, x1)
    shape = _shape([ShapedArray(np.shape(a), a.dtype) for a in args])
    return list(_threefry2x32(*(a if np.shape(a) == shape else fnp.broadcast_to(a, shape) for a in args)))


def _impl(*args):
    return [np.asarray(w) for w in _hash(*(np.asarray(a) for a in args))]


threefry2x32_p.def_impl(_impl)
threefry2x32_p.def_abstract_eval(_abstract_eval)
batching.defbroadcasting(threefry2x32_p)
mlir.register_lowering(threefry2x32_p, mlir.lower_fun(_hash, multiple_results=True))
