"""Which calls run on several devices, decided without loading jaxlib: ``needs_spmd`` (a jitted
call), ``eager_on_devices`` (an eager primitive), and ``spmd()``, the route they take.

Layer: xla_bridge. Imports the funcgrad kernel (``Array``) and the primitive catalog
(``primitives.sharding``: the meshes a jaxpr holds); ``xla_bridge.spmd`` (which loads jaxlib) is
imported on first use. ``dispatch`` asks these questions on every staged call (NOTE: [SPMD call
route] in xla_bridge/spmd.py).
"""

from __future__ import annotations

from funcgrad.primitives.sharding import meshes_in

from funcgrad.kernel.array import Array
from funcgrad.kernel.hooks import hooks

__all__ = ["context_mesh", "eager_on_devices", "needs_spmd", "spmd"]

_spmd = None


def spmd():
    """``xla_bridge.spmd`` (the route of calls over several devices), imported on first use: it
    loads jaxlib, which ``import funcgrad`` must not (import-time cost, as ``runtime()``)."""
    global _spmd
    if _spmd is None:
        from funcgrad.xla_bridge import spmd as module  # noqa: PLC0415 - import-time cost, see docstring

        _spmd = module
    return _spmd


def context_mesh():
    """The mesh ``set_mesh`` set in this thread, or ``None`` (NOTE: [placement in context] in
    funcgrad/_meshes.py): computations on uncommitted values run on its devices.

    >>> context_mesh() is None
    True
    """
    read = hooks.context_mesh
    return None if read is None else read()


def needs_spmd(closed, args, in_shardings=None, out_shardings=None) -> bool:
    """Whether a call of ``closed`` on ``args`` runs on several devices: shardings were asked
    for, the jaxpr holds a mesh, an argument is a sharded Array (NOTE: [SPMD call route] in
    xla_bridge/spmd.py), or a mesh is set (NOTE: [placement in context])."""
    if context_mesh() is not None:
        return True
    if in_shardings is not None and any(s is not None for s in in_shardings):
        return True
    if out_shardings is not None and any(s is not None for s in out_shardings):
        return True
    if meshes_in(closed):
        return True
    for x in args:
        # A buffer over several devices has a sharding without ``_fg_device`` (sharded.MeshSharding).
        if type(x) is Array and x._buffer is not None and not hasattr(x._buffer._sharding, "_fg_device"):
            return True
    return False


def eager_on_devices(primitive, args, params):
    """An eager primitive with an operand sharded over several devices, or under ``set_mesh``
    (NOTE: [placement in context]), runs there, compiled, and its result stays sharded (as JAX's
    computation follows data); otherwise ``NotImplemented``: the kernel computes on the host."""
    if context_mesh() is not None:
        return hooks.eager_compiled(primitive, args, params)  # jit_call takes the SPMD route
    for x in args:
        if type(x) is Array and x._buffer is not None and not hasattr(x._buffer._sharding, "_fg_device"):
            return hooks.eager_compiled(primitive, args, params)  # jit_call takes the SPMD route
    return NotImplemented
