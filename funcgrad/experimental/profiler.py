"""``funcgrad.experimental.profiler``: ``get_profiled_instructions_proto``, as
``jax.experimental.profiler`` (JAX's GPU performance tips read a profile's per-instruction costs
with it, for XLA's profile-guided latency-hiding scheduler).

Layer: surface. Imports the bridge's profiler half (``xla_bridge.profiling``).
"""

from __future__ import annotations

from funcgrad.xla_bridge import profiling as _profiling

__all__ = ["get_profiled_instructions_proto"]


def get_profiled_instructions_proto(tensorboard_dir: str) -> bytes:
    """The serialized ``ProfiledInstructionsProto`` of the profile in ``tensorboard_dir`` (a run
    folder ``<log_dir>/plugins/profile/<run>/`` that ``funcgrad.profiler.trace`` wrote): empty
    unless the profile is of an NVIDIA GPU, as JAX's; a folder that does not exist is jaxlib's
    ``NOT_FOUND`` error.

    >>> import glob, os, tempfile, funcgrad
    >>> log_dir = tempfile.mkdtemp()
    >>> with funcgrad.profiler.trace(log_dir):
    ...     _ = funcgrad.jit(lambda x: x * 2)(1.0).block_until_ready()
    >>> get_profiled_instructions_proto(glob.glob(os.path.join(log_dir, "plugins/profile/*/"))[0])
    b''
    """
    return _profiling.profiled_instructions_proto(str(tensorboard_dir))


def __dir__():  # the public names only, not this module's imports
    return list(__all__)
