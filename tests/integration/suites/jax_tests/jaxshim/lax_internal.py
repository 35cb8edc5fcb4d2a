"""``jax._src.lax.lax`` for JAX's test files: funcgrad's ``lax`` plus the internal helpers the tests
call (``_convert_element_type``, ``asarray``, ``_const``)."""

import numpy as np

import funcgrad.lax as _lax
import funcgrad.numpy as _jnp
from funcgrad.lax import *  # noqa: F403


def _convert_element_type(operand, new_dtype=None, weak_type=False, sharding=None):
    out = _lax.convert_element_type(
        operand, new_dtype if new_dtype is not None else _jnp.asarray(operand).dtype
    )
    if weak_type:  # a weakly typed result: the value through a Python scalar's promotion
        out = _lax_weak(out)
    if sharding is not None:  # (JAX's conversion to a sharding: jnp.asarray's device=)
        out = _jnp.asarray(out, device=sharding)
    return out


def _lax_weak(x):
    from funcgrad.primitives.elementwise.conversion import convert_element_type

    return convert_element_type(x, x.dtype, weak_type=True)


def asarray(x):
    return _jnp.asarray(x)


def _const(example, val):
    dtype = _jnp.asarray(example).dtype if not isinstance(example, (int, float, complex)) else None
    return np.array(val, dtype) if dtype is not None else val


def remaining(original, *removed_lists):
    """The items of ``original`` in none of ``removed_lists`` (JAX's helper)."""
    removed = set().union(*removed_lists)
    return [i for i in original if i not in removed]


def __getattr__(name):
    return getattr(_lax, name)
