"""``jax._src.core`` under the alias: funcgrad's ``core`` (``ShapedArray``, ``Tracer``, ...), plus
``physical_aval``, which is the aval itself since funcgrad has no extended dtypes with a separate
physical representation (flax's fp8 helpers import these)."""

from funcgrad.core import *  # noqa: F403


def physical_aval(aval):
    """The aval of the buffers that hold a value of ``aval``: ``aval`` itself in funcgrad."""
    return aval
