"""``funcgrad.extend.ffi``: JAX's ``jax.extend.ffi``, the names of ``funcgrad.ffi`` (re-exported).

Layer: surface. Imports ``funcgrad.ffi``.

>>> from funcgrad.extend import ffi
>>> ffi.ffi_call is __import__("funcgrad.ffi").ffi.ffi_call
True
"""

from __future__ import annotations

from funcgrad import ffi as _ffi
from funcgrad.ffi import *  # noqa: F403 - the same names, listed once in funcgrad.ffi

__all__ = list(_ffi.__all__)
