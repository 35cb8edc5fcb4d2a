"""``funcgrad.test_util``: JAX's ``jax.test_util`` names -- ``check_grads``, ``check_jvp`` and
``check_vjp`` (central finite differences in float64, JAX's signatures and default tolerances:
float32 2e-3, float64 1e-5, complex64 1e-3, complex128 1e-5, float16 1e-2; ``eps=1e-4``).

Layer: surface. Re-exports ``funcgrad.testing``, where they are implemented and documented next
to funcgrad's own testing helpers (``check_rule``, hypothesis strategies).

>>> import funcgrad, funcgrad.numpy as fnp
>>> check_grads(fnp.tanh, (fnp.array([0.3, -1.0]),), order=2, modes=["fwd", "rev"])
>>> check_jvp(fnp.sin, functools.partial(funcgrad.jvp, fnp.sin), (0.5,))
>>> check_vjp(fnp.sin, functools.partial(funcgrad.vjp, fnp.sin), (0.5,))
"""

from __future__ import annotations

import functools  # noqa: F401 - used by the module's examples

from funcgrad.testing import check_grads, check_jvp, check_vjp

__all__ = ["check_grads", "check_jvp", "check_vjp"]


def __dir__():  # the public names only
    return list(__all__)
