"""``jax._src.lax.lax`` under the alias: funcgrad's ``lax`` (``lax.add``, ``lax.mul``,
``lax.full_like``, ...), as JAX's primitives tutorial uses it."""

import funcgrad.lax as _lax
from funcgrad.lax import *  # noqa: F403


def __getattr__(name):
    return getattr(_lax, name)
