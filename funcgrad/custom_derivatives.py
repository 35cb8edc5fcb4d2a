"""``funcgrad.custom_derivatives``: user-defined derivative rules (JAX's ``jax.custom_derivatives``
names).

Layer: surface. Re-exports the kernel's ``funcgrad/kernel/custom_derivatives.py``, where they are
defined and documented.

>>> import funcgrad, funcgrad.numpy as fnp
>>> @custom_jvp
... def f(x):
...     return fnp.sin(x)
>>> f.defjvps(lambda t, ans, x: 2.0 * t)
>>> float(funcgrad.grad(f)(0.0))
2.0
"""

from __future__ import annotations

from funcgrad.kernel.custom_derivatives import (
    CustomVJPPrimal,
    SymbolicZero,
    custom_jvp,
    custom_vjp,
    custom_vjp_primal_tree_values,
)

__all__ = ["CustomVJPPrimal", "SymbolicZero", "custom_jvp", "custom_vjp", "custom_vjp_primal_tree_values"]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
