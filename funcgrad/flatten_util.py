"""``funcgrad.flatten_util``: ``ravel_pytree`` (``jax.flatten_util``).

Layer: surface. Imports funcgrad.numpy and funcgrad.tree_util.

>>> import funcgrad.numpy as fnp
>>> flat, unravel = ravel_pytree({"w": fnp.ones((2, 2)), "b": fnp.zeros(2)})
>>> flat.tolist()
[0.0, 0.0, 1.0, 1.0, 1.0, 1.0]
>>> unravel(flat)["w"].shape
(2, 2)
"""

from __future__ import annotations

import warnings

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.tree_util import tree_flatten, tree_unflatten

__all__ = ["ravel_pytree"]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


class _HashablePartial:
    """A partial application that compares and hashes by its function and arguments, so two
    ``unravel`` functions for the same structure are equal (they can be static jit arguments)."""

    def __init__(self, f, *args):
        self.f, self.args = f, args

    def __eq__(self, other):
        if not isinstance(other, _HashablePartial):
            return NotImplemented
        return self.f is other.f and self.args == other.args

    def __hash__(self):
        return hash((self.f, self.args))

    def __call__(self, *args):
        return self.f(*self.args, *args)


def ravel_pytree(pytree):
    """The leaves of ``pytree`` raveled and concatenated into one 1-D array (in their promoted dtype;
    ``float32`` for an empty tree), and the function that rebuilds the tree, with each leaf's shape
    and dtype, from such an array. Differentiable and usable under ``jit``/``vmap``.

    >>> flat, unravel = ravel_pytree((1.0, [2.0, 3.0]))
    >>> unravel(flat * 2)
    (Array(2., dtype=float64), [Array(4., dtype=float64), Array(6., dtype=float64)])
    """
    leaves, treedef = tree_flatten(pytree)
    flat, unravel_list = _ravel_list(leaves)
    return flat, _HashablePartial(_unravel_pytree, treedef, unravel_list)


def _unravel_pytree(treedef, unravel_list, flat):
    return tree_unflatten(treedef, unravel_list(flat))


def _ravel_list(leaves):
    if not leaves:
        return fnp.array([], np.float32), _HashablePartial(_unravel_empty)
    leaves = [fnp.asarray(x) for x in leaves]
    from_dtypes = tuple(x.dtype for x in leaves)
    to_dtype = fnp.result_type(*from_dtypes)
    sizes = [x.size for x in leaves]
    shapes = tuple(x.shape for x in leaves)
    indices = tuple(int(i) for i in np.cumsum(sizes))
    raveled = fnp.concatenate([fnp.ravel(x).astype(to_dtype) for x in leaves])
    return raveled, _HashablePartial(_unravel_list, indices, shapes, from_dtypes, to_dtype)


def _unravel_empty(flat):
    return []


def _unravel_list(indices, shapes, from_dtypes, to_dtype, flat):
    flat = fnp.asarray(flat)
    # Leaves of one dtype: the unravel is dtype-polymorphic (the leaves take the array's dtype),
    # as JAX's; of several, the array must have the raveled dtype.
    if flat.dtype != to_dtype and any(d != to_dtype for d in from_dtypes):
        raise TypeError(  # (JAX's words)
            f"unravel function given array of dtype {flat.dtype}, but expected dtype {to_dtype}"
        )
    if flat.shape != (indices[-1],):
        raise ValueError(f"unravel: expected an array of shape ({indices[-1]},), got {flat.shape}")
    chunks = fnp.split(flat, indices[:-1]) if len(indices) > 1 else [flat]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a complex leaf's real counterpart discards zeros
        return [
            lax.convert_element_type(c.reshape(s), d) if d != to_dtype else c.reshape(s)
            for c, s, d in zip(chunks, shapes, from_dtypes)
        ]
