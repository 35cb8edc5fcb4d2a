"""Moving a value over several devices to another layout on those devices, without the host.

Layer: xla_bridge (runtime half). Imports jaxlib (a copy between memories), the kernel (``ir``:
the identity program; ``caches``) and the siblings ``sharded`` (shardings, layouts) and ``spmd``
(compiling a program for several devices).

# NOTE: [device-to-device resharding]
# ``device_put``/``reshard`` of an Array that already lives on the target's devices (another
# partition spec, another mesh over the same devices, a replicated copy becoming split) runs a
# program of no equations -- the identity, compiled with the value's layout on its parameter
# and the target's on its result -- so XLA's partitioner moves the shards with collectives
# (all-to-all, all-gather, collective-permute: jax's ``_reshard`` is the same identity
# program). Nothing is read back to the host. The program is cached per (aval, source layout,
# target layout) by ``spmd.compiled``'s cache and the executable cache. Values on other devices
# (a different device set, or the same devices in another order) have no one program that holds
# both ends: ``reshard`` answers ``None`` and the caller copies through the host.
# A value on one device entering a program laid out over that same device (a ``jit`` with
# ``in_shardings``/``out_shardings`` over a one-device mesh, a ``SingleDeviceSharding`` in
# another memory kind) needs no program: ``onto_its_device`` gives the buffer itself in the
# layout's sharding, or a copy made on the device into the layout's memory kind ("pinned_host"),
# as jax's argument sharding does. (It went through the host: a read-back, a copy and a put per
# argument per call; JAX's host-offloading guide's 7168x7168 optax step put 14 arguments so.)
"""

from __future__ import annotations

from jaxlib import _jax

from funcgrad.kernel.caches import register_cache
from funcgrad.kernel.ir import ClosedJaxpr, Jaxpr, ShapedArray, Var

from . import backends, sharded, spmd

__all__ = ["onto_its_device", "reshard"]

_identities: dict = register_cache("xla_bridge.reshard_identities", {})  # NOTE: [caches have an owner]


def _identity(shape, dtype) -> ClosedJaxpr:
    key = (tuple(shape), str(dtype))
    hit = _identities.get(key)
    if hit is None:
        v = Var(ShapedArray(tuple(shape), dtype))
        hit = _identities[key] = ClosedJaxpr(Jaxpr([], [v], [], [v]), [])
    return hit


def reshard(buf, target: sharded.MeshSharding):
    """``buf`` (a sharded jaxlib array) laid out as ``target`` by a compiled program on the
    devices (NOTE: [device-to-device resharding]); ``buf`` itself when its sharding is ``target``;
    ``None`` when the two do not live on one set of devices (copy through the host then).

    >>> import numpy as np
    >>> from funcgrad import xla_bridge
    >>> b = xla_bridge.device_put(np.arange(4.0), xla_bridge.devices()[0])
    >>> reshard(b, b._sharding) is b
    True
    """
    src = buf._sharding
    if src is target:
        return buf
    if type(src) is not sharded.MeshSharding or type(target) is not sharded.MeshSharding:
        return None
    if tuple(src._fg_devs) != tuple(target._fg_devs):
        # Another set of devices, or the same devices in another order (a mesh of reordered
        # devices): the program's parameters and results are numbered in one device order, and
        # XLA refuses a buffer on another device there (and jaxlib then crashed) -- through the host.
        return None
    closed = _identity(buf.aval.shape, buf.aval.dtype)
    mesh = target._fg_mesh if target._fg_mesh is not None else src._fg_mesh
    program = spmd.compiled(closed, "reshard", None, target._fg_devs, mesh, [src], [target])
    (out,) = program.call([buf])
    return out


def onto_its_device(buf, target: sharded.MeshSharding):
    """``buf`` (a jaxlib array on one device) laid out as ``target`` when ``target`` lays out over
    that device alone: the same buffer when the memory kind is the same, else a copy made on the
    device (NOTE: [device-to-device resharding]); ``None`` otherwise.

    >>> import numpy as np
    >>> from funcgrad import xla_bridge
    >>> d = xla_bridge.devices()[0]
    >>> b = xla_bridge.device_put(np.arange(4.0), d)
    >>> onto_its_device(b, sharded.replicated([d])).unsafe_buffer_pointer() == b.unsafe_buffer_pointer()
    True
    >>> from jaxlib import xla_client as xc
    >>> host = sharded.MeshSharding([d], xc.HloSharding.replicate(), memory_kind="pinned_host")
    >>> onto_its_device(b, host).unsafe_buffer_pointer() == b.unsafe_buffer_pointer()  # a copy
    False
    """
    device = getattr(buf._sharding, "_fg_device", None)
    if device is None or type(target) is not sharded.MeshSharding or tuple(target._fg_devs) != (device,):
        return None
    default = device.default_memory().kind  # (None and the default's name are one memory)
    same = (buf._sharding._fg_kind or default) == (target._fg_kind or default)
    semantics = _jax.ArrayCopySemantics.REUSE_INPUT if same else _jax.ArrayCopySemantics.ALWAYS_COPY
    (out,) = _jax.batched_copy_array_to_devices_with_sharding(
        [buf], [target._internal_device_list], [target], [semantics]
    )
    if not same and device.platform == "cpu" and not backends.cpu_async_dispatch():
        # NOTE: [synchronous CPU dispatch]: a program whose input is still being copied runs in a
        # worker thread, and the call would return before its computation ends.
        out.block_until_ready()
    return out
