"""``jax.lax``'s accuracy requests for unary functions: ``Tolerance`` and ``AccuracyMode``, taken by
``exp``, ``exp2``, ``expm1``, ``log``, ``log1p``, ``tanh``, ``logistic``, ``sin``, ``cos``, ``tan``,
``sqrt``, ``rsqrt`` and ``cbrt`` (``accuracy=``).

Layer: surface. Imports nothing of funcgrad's.

JAX passes the request to the compiler as the operation's ``result_accuracy``; XLA's CPU backend
has one implementation of each of these functions and computes it whatever the request (jax on a
CPU gives the same values with and without one), so funcgrad checks the request and computes the
function as it always does.
"""

from __future__ import annotations

import enum

__all__ = ["AccuracyMode", "Tolerance"]


class Tolerance:
    """The tolerances a unary function's implementation must meet: at most two of ``atol``,
    ``rtol`` and ``ulps`` (absolute, relative, units in the last place), at least one of them set,
    none negative (JAX's ``lax.Tolerance``).

    >>> t = Tolerance(atol=1e-5)
    >>> t.atol, t.rtol, t.ulps
    (1e-05, 0.0, 0)
    >>> Tolerance()
    Traceback (most recent call last):
    ...
    ValueError: At least one of atol, rtol, or ulps must be set.
    """

    def __init__(self, atol: float = 0.0, rtol: float = 0.0, ulps: int = 0):
        if atol < 0.0 or rtol < 0.0 or ulps < 0:
            raise ValueError("Tolerances must be non-negative.")
        if atol == 0.0 and rtol == 0.0 and ulps == 0:
            raise ValueError("At least one of atol, rtol, or ulps must be set.")
        self.atol = atol
        self.rtol = rtol
        self.ulps = ulps


class AccuracyMode(enum.Enum):
    """Ask for the most accurate implementation (``HIGHEST``) or the default one (``DEFAULT``).

    >>> AccuracyMode.HIGHEST.name
    'HIGHEST'
    """

    HIGHEST = 1
    DEFAULT = 2


def check_accuracy(name: str, accuracy) -> None:
    """Refuse an ``accuracy=`` that is neither None, a ``Tolerance`` nor an ``AccuracyMode``.

    >>> check_accuracy("exp", Tolerance(rtol=1e-3))
    >>> check_accuracy("exp", 1e-3)
    Traceback (most recent call last):
    ...
    TypeError: lax.exp: accuracy must be None, a lax.Tolerance or a lax.AccuracyMode, got float
    """
    if accuracy is not None and not isinstance(accuracy, Tolerance | AccuracyMode):
        raise TypeError(
            f"lax.{name}: accuracy must be None, a lax.Tolerance or a lax.AccuracyMode, "
            f"got {type(accuracy).__name__}"
        )
