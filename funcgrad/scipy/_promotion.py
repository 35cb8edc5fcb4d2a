"""``internal_promotion``: a decorator for ``funcgrad.scipy`` functions whose bodies broadcast
arrays of different ranks or mix dtypes implicitly (a real window against complex segments, a
vector of orders against a grid of points).

Layer: surface. Imports funcgrad.numpy's ``_core`` and ``_dtypes`` (the promotion flags, NOTE:
[promotion flags]) and ``funcgrad._config`` (JAX's thread-local contexts that set them).

JAX writes such internals with lax operations, explicit ``broadcast_in_dim`` and explicit casts, so
a user's ``jax_numpy_rank_promotion='raise'`` or ``jax_numpy_dtype_promotion='strict'`` (JAX's own
test defaults) refuses only the user's code, never the library's. The decorated body runs under the
default rules, the user's restored on the way out; under ``'strict'`` the floating (and complex)
array arguments must still share a dtype, as JAX's functions refuse mixed inputs at their entry.
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from funcgrad import _config
from funcgrad.numpy import _core, _dtypes

__all__ = ["internal_promotion"]

_DEFAULT = {"dtype_promotion": "standard", "rank_promotion": "allow"}


def _inexact_array_dtypes(values) -> list:
    dtypes = []
    for v in values:
        dtype = None if isinstance(v, int | float | complex | bool) else getattr(v, "dtype", None)
        if dtype is not None and np.dtype(dtype).kind in "fcV":
            dtypes.append(np.dtype(dtype))
    return dtypes


def internal_promotion(fn=None, *, cast: tuple[str, ...] = ()):
    """``fn`` with implicit rank and dtype promotion allowed inside, whatever the user's setting.
    The arguments named in ``cast`` are left out of the strict-mode check: ``fn`` converts them to
    its data's dtype, as JAX's spectral functions convert a window (``_triage_segments``).

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> f = internal_promotion(lambda a, b: a * b)
    >>> with funcgrad.numpy_rank_promotion("raise"):
    ...     f(fnp.ones((2, 3)), fnp.arange(3.0)).tolist()
    [[0.0, 1.0, 2.0], [0.0, 1.0, 2.0]]
    """

    if fn is None:
        return functools.partial(internal_promotion, cast=cast)
    signature = inspect.signature(fn) if cast else None

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        saved = _dtypes.current_flags()
        if saved == _DEFAULT:
            return fn(*args, **kwargs)
        if saved["dtype_promotion"] == "strict":
            if signature is None:
                checked = [*args, *kwargs.values()]
            else:
                bound = signature.bind_partial(*args, **kwargs).arguments
                checked = [v for k, v in bound.items() if k not in cast]
            dtypes = _inexact_array_dtypes(checked)
            if len(set(dtypes)) > 1:
                _core.promote_args(*(np.zeros((), d) for d in dtypes))  # (TypePromotionError)
        # (this thread's only, as the user's may be)
        with _config.numpy_dtype_promotion("standard"), _config.numpy_rank_promotion("allow"):
            return fn(*args, **kwargs)

    return wrapped
