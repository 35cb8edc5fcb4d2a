"""``threefry2x32_p``: the threefry2x32 block cipher as one primitive (JAX's
``jax.extend.random.threefry2x32_p``), for PRNG implementations written against JAX's extension API.

Layer: surface. Imports the kernel (``Primitive``, avals, ``ShapedArray``), funcgrad.random._cipher
(the hash, written with add/xor/shift primitives), funcgrad.interpreters.mlir (``lower_fun``),
funcgrad.numpy (``broadcast_to``) and the catalog's shape rule of elementwise operands
(``primitives._rules.broadcast_operand_shapes``).

``threefry2x32_p.bind(k0, k1, x0, x1)`` takes four ``uint32`` arrays (the two key words and
the two count words, broadcast as an elementwise primitive's operands: 0-d or along size-1 axes)
and returns the two hashed words. funcgrad's own samplers call the hash directly (NOTE: [rolled
threefry rounds]: XLA fuses its rounds into the consumer of the bits); the primitive gives the same
words, eagerly, under ``jit`` (lowered from the same function) and under ``vmap`` (elementwise).

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
from funcgrad.primitives._rules import broadcast_operand_shapes
from funcgrad.random._cipher import _threefry2x32

__all__ = ["threefry2x32_p"]

_U32 = np.dtype(np.uint32)

threefry2x32_p = core.Primitive("threefry2x32", multiple_results=True)


def _shape(avals) -> tuple[int, ...]:
    """JAX's rule for the primitive: ``uint32`` operands, shaped as an elementwise primitive's (JAX
    calls its ``broadcasting_shape_rule``: 0-d operands broadcast, the others share one rank and
    broadcast along size-1 axes)."""
    if any(a.dtype != _U32 for a in avals):
        raise TypeError(f"Arguments to threefry2x32 must have uint32 type, got {tuple(avals)}")
    return broadcast_operand_shapes("threefry2x32", avals)


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
