"""``funcgrad.interpreters.xla``: the three names JAX still exports from ``jax.interpreters.xla``.

Layer: surface. Imports ``funcgrad.xla_bridge`` (its compiled single-primitive path and jaxlib's
client class) and the kernel's dtype rules.

- ``apply_primitive(prim, *args, **params)``: ``prim`` compiled alone with XLA and run on
  ``args`` (the bridge's ``eager_compiled``, cached per primitive, parameters and avals);
- ``Backend``: the class of a PJRT client (``funcgrad.extend.backend.get_backend()`` returns one);
- ``canonicalize_dtype_handlers``: for each Python/NumPy value type, the function giving the value
  funcgrad computes with (Python scalars weakly typed at the default precision, NumPy values as
  they are: funcgrad runs with 64-bit types enabled).

>>> from funcgrad.primitives.elementwise import sin_p
>>> float(apply_primitive(sin_p, 0.0))
0.0
"""

from __future__ import annotations

import numpy as np

from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.array import Array
from funcgrad.xla_bridge import backends as _backends
from funcgrad.xla_bridge import execute as _execute

__all__ = ["Backend", "apply_primitive", "canonicalize_dtype_handlers"]

Backend = _backends.xc.Client


def apply_primitive(prim, *args, **params):
    """Compile ``prim`` alone with XLA and apply it to ``args`` (example: the module docstring)."""
    return _execute.eager_compiled(prim, list(args), params)


def _python_scalar(x):
    return np.asarray(x, _dt.python_scalar_dtype(x))


canonicalize_dtype_handlers: dict = {
    **{t: _python_scalar for t in _dt.python_scalar_types},
    np.ndarray: lambda x: x,
    Array: lambda x: x,
    **{t: np.asarray for t in set(np.sctypeDict.values()) if issubclass(t, np.generic)},
}
