"""The base class of arrays whose dtype is an extended dtype (surface layer, below funcgrad.numpy).

It lives in its own module, importing nothing of funcgrad, so that modules funcgrad.numpy imports
(``_placement`` -> ``_array_assembly``) can test for typed PRNG keys without importing
funcgrad.numpy, which would be a circle when ``funcgrad.sharding`` is the first module loaded.
``funcgrad.numpy._dtypes`` re-exports it.
"""

from __future__ import annotations


class ExtendedArray:
    """The base of arrays whose dtype is an extended dtype (JAX's ``dtypes.extended``): the typed
    PRNG keys of funcgrad/random/_keys.py (NOTE: [PRNG implementations]). They are
    ``funcgrad.Array`` instances for ``isinstance``; funcgrad.numpy's structural functions
    (``asarray``, ``reshape``, ``transpose``, ``expand_dims``, ``squeeze``, ``broadcast_to``,
    ``concatenate``, ``stack``, ``where``) hand them to ``_numpy_function(func, args, kwargs)``,
    which applies ``func`` to their data."""

    __slots__ = ()

    def _numpy_function(self, func, args, kwargs):
        raise NotImplementedError
