"""``funcgrad.experimental.pjit``: ``pjit``, the older name of ``jit``, as
``jax.experimental.pjit`` (deprecated in JAX since October 2025; reading it warns as JAX's does).

Layer: surface. Imports ``funcgrad.api`` (``jit``) and the standard library.

>>> import warnings, funcgrad
>>> from funcgrad.experimental import pjit as pjit_module
>>> with warnings.catch_warnings(record=True):
...     warnings.simplefilter("always")
...     pjit_module.pjit is funcgrad.jit
True
"""

import warnings

from funcgrad.api import jit as _jit

__all__: list[str] = []  # ``pjit`` is read through __getattr__ (JAX's deprecation), not exported


def __getattr__(name):
    if name == "pjit":
        warnings.warn(
            "jax.experimental.pjit.pjit has been deprecated. Please use `jax.jit` instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        return _jit  # jit takes pjit's in_shardings/out_shardings/static_argnums/donate_argnums
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
