"""``jax._src.earray`` under the alias: ``EArray``, a concrete array of a library's extended dtype
(its aval and its physical data), funcgrad's ``kernel.extended.EArray`` (NOTE: [extended dtypes]).
flax's fp8 helpers import it to tell whether arrays of their ``fp8_meta32`` dtype can exist
outside ``jit`` (``CAN_USE_EARRAY``)."""

from funcgrad.kernel.extended import EArray

__all__ = ["EArray"]
