"""``funcgrad.scipy.integrate``: ``trapezoid`` (``jax.scipy.integrate``'s one function).

Layer: surface. Imports funcgrad.numpy.

>>> import funcgrad.numpy as fnp
>>> float(trapezoid(fnp.array([0.0, 1.0, 2.0])))
2.0
"""

from __future__ import annotations

import funcgrad.numpy as fnp

__all__ = ["trapezoid"]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


def trapezoid(y, x=None, dx=1.0, axis: int = -1):
    """The integral of ``y`` along ``axis`` by the trapezoidal rule, at sample points ``x`` or with
    spacing ``dx`` (SciPy's ``scipy.integrate.trapezoid``); differentiable in ``y``, ``x`` and ``dx``.

    >>> import funcgrad.numpy as fnp
    >>> float(trapezoid(fnp.array([1.0, 1.0]), x=fnp.array([0.0, 3.0])))
    3.0
    """
    return fnp.trapezoid(y, x, dx=dx, axis=axis)
