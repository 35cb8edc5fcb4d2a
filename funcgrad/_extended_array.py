"""The base class of arrays whose dtype is an extended dtype (surface layer, below funcgrad.numpy).

It lives in the kernel (``funcgrad.kernel.extended``, NOTE: [extended dtypes]), with ``EArray``,
the arrays of a library's extended dtype; this module keeps the name for the modules funcgrad.numpy
imports (``_placement`` -> ``_array_assembly``), which test for typed PRNG keys without importing
funcgrad.numpy (a circle when ``funcgrad.sharding`` is the first module loaded).
``funcgrad.numpy._dtypes`` re-exports it.
"""

from __future__ import annotations

from funcgrad.kernel.extended import EArray, ExtendedArray

__all__ = ["EArray", "ExtendedArray"]
