"""Where an ``Array`` lives, read from its buffer: ``sharding``, ``devices()``, ``device``,
``addressable_shards`` (``Shard``), ``committed``, ``is_fully_replicated``; and the buffer's own
life: ``delete()``, ``is_deleted()``, ``is_ready()``, ``platform()``, ``on_device_size_in_bytes()``,
``unsafe_buffer_pointer()``, ``traceback``. These are installed on ``Array`` (and, raising a
clear error, on tracers) through ``kernel.register`` when this module is imported.

Layer: surface, under ``funcgrad._placement`` (which moves values between devices and
re-exports ``Shard`` and ``copy_to_host_async``). Imports the kernel (``Array``, registration,
tree_util, core), ``xla_bridge`` (``sharded``, ``runtime``) and ``funcgrad._shardings``.
"""

from __future__ import annotations

import numpy as np

from funcgrad import _layouts, kernel, xla_bridge
from funcgrad._shardings import Sharding, SingleDeviceSharding, from_bridge
from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.array import Array


def _sharded_buffer(x: Array):
    b = x._buffer
    if b is not None and not hasattr(b._sharding, "_fg_device"):
        return b
    return None


def _device_of(x: Array):
    b = x._buffer
    if b is not None:
        return b._sharding._fg_device
    return xla_bridge.default_device()


def _array_only(what):
    def check(x):
        if not isinstance(x, Array):
            raise core.ConcretizationTypeError(
                f"{what} of a traced value: inside a transformation the compiler decides placement; use "
                "funcgrad.lax.with_sharding_constraint to ask for a layout"
            )

    return check


def _no_attribute(x, name: str):
    """JAX's answer to ``.sharding``/``.device`` of a traced value: an ``AttributeError`` (so that
    ``hasattr``/``getattr(x, name, None)`` work, as libraries rely on), pointing at ``typeof``."""
    if not isinstance(x, Array):
        shown = str(core.get_aval(x)).lstrip("~")
        raise AttributeError(
            f"The '{name}' attribute is not available on traced array with shape {shown}. To query "
            "sharding information on tracers, use `funcgrad.typeof(x)`."
        )


def _sharding(x) -> Sharding:
    _no_attribute(x, "sharding")
    b = _sharded_buffer(x)
    if b is not None:
        return from_bridge(b._sharding, x.ndim)
    b = x._buffer
    return SingleDeviceSharding(_device_of(x), memory_kind=None if b is None else b._sharding._fg_kind)


def _devices(x) -> set:
    _array_only(".devices()")(x)
    b = _sharded_buffer(x)
    if b is not None:
        return set(b._sharding._fg_devs)
    return {_device_of(x)}


def _device(x):
    _no_attribute(x, "device")
    b = _sharded_buffer(x)
    if b is not None:
        s = _sharding(x)  # as in JAX: an array on several devices answers with its sharding,
        return next(iter(s.device_set)) if len(s.device_set) == 1 else s  # on one with that device
    return _device_of(x)


class Shard:
    """One device's piece of an Array: ``device``, ``index`` (slices into the whole array),
    ``replica_id`` (0 for the first copy of a replicated piece) and ``data`` (an Array on that
    device)."""

    __slots__ = ("device", "index", "replica_id", "_data")

    def __init__(self, device, index, replica_id, data):
        self.device = device
        self.index = index
        self.replica_id = replica_id
        self._data = data

    @property
    def data(self) -> Array:
        d = self._data
        if callable(d):
            d = self._data = d()
        return d

    def __repr__(self):
        r = self.replica_id
        # (the data as str, as JAX's Shard prints it: data=[0])
        return f"Shard(device={self.device!r}, index={self.index}, replica_id={r}, data={self.data})"


def _replica_ids(indices) -> list[int]:
    seen: dict = {}
    out = []
    for ix in indices:
        key = tuple((s.start, s.stop) for s in ix)
        out.append(seen.get(key, 0))
        seen[key] = seen.get(key, 0) + 1
    return out


def _addressable_shards(x) -> list[Shard]:
    _array_only(".addressable_shards")(x)
    sh = xla_bridge.sharded
    b = _sharded_buffer(x)
    if b is None:
        full = tuple(slice(None) for _ in x.shape)
        return [Shard(_device_of(x), full, 0, x)]
    s = b._sharding
    ids = dict(zip(s._fg_devs, _replica_ids(sh.indices(s, tuple(x.shape)))))
    out = []
    for device, index, arr in sh.shards(b):

        def data(arr=arr, device=device):
            block = np.array(sh.block_numpy(arr))
            return Array._from_buffer(
                xla_bridge.device_put(block, device, weak_type=x.weak_type), x.weak_type
            )

        out.append(Shard(device, index, ids[device], data))
    return out


def _is_fully_replicated(x) -> bool:
    return _sharding(x).is_fully_replicated


def _is_fully_addressable(x) -> bool:
    return _sharding(x).is_fully_addressable


def _committed(x) -> bool:
    """Whether ``x`` was placed on its devices on purpose (``device_put(x, device)``, a sharding)
    or computed from such a value: JAX's ``Array.committed`` (NOTE: [committed arrays] in
    xla_bridge/committed.py). A host value, and a jitted result of uncommitted arguments, is not.

    >>> import funcgrad, numpy as np
    >>> d = funcgrad.devices()[0]
    >>> funcgrad.device_put(np.ones(2)).committed, funcgrad.device_put(np.ones(2), d).committed
    (False, True)
    """
    _array_only(".committed")(x)
    b = x._buffer
    return b is not None and b._committed


def _addressable_data(x, index: int) -> Array:
    _array_only(".addressable_data()")(x)
    return _addressable_shards(x)[index].data


def _copy_to_host_async(x) -> None:
    """Start reading ``x`` back (funcgrad reads synchronously when the host needs the value)."""
    if not isinstance(x, Array):  # (JAX's type and words)
        raise AttributeError(x._unavailable("copy_to_host_async", "method"))


def copy_to_host_async(x):
    """Start reading every Array leaf of the pytree ``x`` back to the host (funcgrad reads
    synchronously when a value is needed, so this only checks the leaves); returns ``x``. As
    JAX's, any leaf's own ``copy_to_host_async`` method is called (an error it raises, an
    AttributeError included, reaches the caller); leaves without one are left alone.

    >>> import funcgrad.numpy as fnp
    >>> copy_to_host_async({"a": fnp.ones(2)})["a"].shape
    (2,)
    """
    for leaf in tu.tree_leaves(x):
        if isinstance(leaf, Array):
            _copy_to_host_async(leaf)
            continue
        try:
            copy = leaf.copy_to_host_async
        except AttributeError:
            continue
        copy()
    return x


# ----------------------------------------------------------------------------------------------
# The buffer itself: deleting it, its size and address (NOTE: [deleting an Array])

# NOTE: [deleting an Array]
# ``x.delete()`` frees ``x``'s memory now: the device buffer is deleted (``ArrayImpl.delete``) and
# the host copy dropped. A host-backed Array has no buffer, so one is made and deleted at once:
# every later use then meets a deleted buffer and raises the error the donation path raises
# (``runtime.deleted_buffer_error``, a RuntimeError), through the same checks (reading the value,
# an eager operation, passing it to a jitted call). ``shape`` and ``dtype`` stay readable, as in
# JAX. A host-backed Array asked for its buffer (``unsafe_buffer_pointer``,
# ``on_device_size_in_bytes``) gets the device copy a jitted call would make and keep (NOTE:
# [argument buffers]), so the pointer stays valid while the Array lives.


def _check_alive(x, what: str) -> None:
    if _is_deleted(x):
        raise xla_bridge.runtime.deleted_buffer_error(x._buffer, f"{what}: ")


def _own_buffer(x, what: str):
    """``x``'s device buffer; for a host-backed Array, one made from its value and kept."""
    _check_alive(x, what)
    b = x._buffer
    if b is None or b.is_deleted():
        b = x._buffer = xla_bridge.device_put(x._value, _device_of(x), weak_type=x.weak_type, committed=False)
    return b


def _delete(x) -> None:
    """Free ``x``'s memory now (its device buffer and host copy); using it afterwards raises a
    RuntimeError. Deleting twice is allowed (``jax.Array.delete``).

    >>> import funcgrad.numpy as fnp
    >>> x = fnp.arange(3.0)
    >>> x.delete()
    >>> x.is_deleted(), x.shape
    (True, (3,))
    >>> x + 1
    Traceback (most recent call last):
    ...
    funcgrad.xla_bridge.backends.XlaBridgeError: Array has been deleted with shape=float64[3]. ...
    """
    _array_only(".delete()")(x)
    if _is_deleted(x):
        return
    b = x._buffer
    if b is None or b.is_deleted():
        b = x._buffer = xla_bridge.device_put(x._value, _device_of(x), weak_type=x.weak_type, committed=False)
    x._value = None
    b.delete()


def _is_deleted(x) -> bool:
    """Whether ``x`` was deleted (``x.delete()``) or its buffer donated to a jitted call
    (``donate_argnums``), as in JAX (NOTE: [donated arrays] in xla_bridge/execute.py).

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> x = funcgrad.jit(lambda v: v + 1)(fnp.ones(2))
    >>> _ = funcgrad.jit(lambda v: v * 2, donate_argnums=0)(x)
    >>> x.is_deleted()
    True
    """
    _array_only(".is_deleted()")(x)
    return x._value is None and x._buffer.is_deleted()


def _is_ready(x) -> bool:
    """Whether ``x``'s value has been computed (a jitted call may still be running; a host-backed
    Array is always ready).

    >>> import funcgrad.numpy as fnp
    >>> fnp.ones(2).is_ready()
    True
    """
    _array_only(".is_ready()")(x)
    _check_alive(x, ".is_ready()")
    return x._buffer is None or x._buffer.is_ready()


def _platform(x) -> str:
    """The platform of the devices holding ``x`` ("cpu", "cuda", ...).

    >>> import funcgrad.numpy as fnp
    >>> import funcgrad
    >>> fnp.ones(2).platform() == funcgrad.devices()[0].platform
    True
    """
    _array_only(".platform()")(x)
    b = x._buffer
    if b is not None:
        return b.platform()
    return _device_of(x).platform


def _on_device_size_in_bytes(x) -> int:
    """The bytes ``x`` takes on its devices, over all of them (a replicated Array counts once
    per device), as ``jax.Array.on_device_size_in_bytes``.

    >>> import funcgrad.numpy as fnp
    >>> fnp.ones(4, dtype="float32").on_device_size_in_bytes()
    16
    """
    _array_only(".on_device_size_in_bytes()")(x)
    return _own_buffer(x, ".on_device_size_in_bytes()").on_device_size_in_bytes()


def _unsafe_buffer_pointer(x) -> int:
    """The address of ``x``'s device memory (one device only). Valid while ``x`` is alive and not
    deleted; writing through it breaks the immutability that funcgrad relies on.

    >>> import funcgrad.numpy as fnp
    >>> fnp.ones(2).unsafe_buffer_pointer() > 0
    True
    """
    _array_only(".unsafe_buffer_pointer()")(x)
    if _sharded_buffer(x) is not None:
        raise ValueError(
            "unsafe_buffer_pointer() is supported only for arrays on one device; this one is "
            f"sharded over {len(_devices(x))} devices (use x.addressable_shards[i].data)"
        )
    return xla_bridge.sharded.buffer_pointer(_own_buffer(x, ".unsafe_buffer_pointer()"))


def _traceback(x):
    """Where ``x``'s device buffer was made (jaxlib's ``Traceback``), or None for a host-backed
    Array.

    >>> import funcgrad.numpy as fnp
    >>> print(fnp.ones(2).traceback)
    None
    """
    _array_only(".traceback")(x)
    b = x._buffer
    return None if b is None else b.traceback


def _format(x):
    """``x.format``: its layout and sharding (``funcgrad.experimental.layout.Format``, JAX's).

    >>> import funcgrad.numpy as fnp
    >>> fnp.ones((2, 3)).format.layout
    Layout(major_to_minor=(0, 1), tiling=(), sub_byte_element_size_in_bits=0)
    """
    _no_attribute(x, "format")
    return _layouts.format_of(x)


def _cuda_array_interface(x):
    """``x.__cuda_array_interface__``: JAX's AttributeError for a buffer that is not on a GPU, so
    that ``hasattr(x, "__cuda_array_interface__")`` is False as CuPy/Numba probe it (funcgrad
    exports no GPU buffer this way: ``__dlpack__`` is its exchange).

    >>> import funcgrad.numpy as fnp
    >>> hasattr(fnp.ones(2), "__cuda_array_interface__")
    False
    """
    if not isinstance(x, Array):
        raise AttributeError(f"{type(x).__name__} has no attribute __cuda_array_interface__")
    raise AttributeError("__cuda_array_interface__ is only defined for GPU buffers.")  # (JAX's words)


_host_dlpack, _host_dlpack_device = Array.__dlpack__, Array.__dlpack_device__


def _dlpack_devices(x) -> int:
    b = _sharded_buffer(x)
    return 1 if b is None else len(b._sharding._fg_devs)


def _dlpack(x, *, stream=None, max_version=None, dl_device=None, copy=None):
    """DLPack export of an array on one device; one over several is JAX's BufferError (even
    replicated: DLPack describes one buffer); a traced value has no buffer (JAX's error)."""
    if not isinstance(x, Array):
        head = f"Abstract tracer value encountered where concrete value is expected: {x._error_repr()}"
        raise core.ConcretizationTypeError(x._concretization_message(head, "x.__dlpack__()"))
    n = _dlpack_devices(x)
    if n > 1:  # (JAX's words)
        raise BufferError(
            "to_dlpack can only pack a dlpack tensor from an array on a singular device, but an array "
            f"with a Sharding over {n} devices was provided."
        )
    kwargs = {} if max_version is None else {"max_version": max_version}
    return _host_dlpack(x, stream=stream, dl_device=dl_device, copy=copy, **kwargs)


def _dlpack_device(x):
    if not isinstance(x, Array):  # (JAX's type and words)
        raise AttributeError(f"{type(x).__name__} has no attribute __dlpack_device__")
    if _dlpack_devices(x) > 1:
        raise BufferError("__dlpack__ only supported for unsharded arrays.")  # (JAX's words)
    return _host_dlpack_device(x)


kernel.register(
    array_methods={
        "__dlpack__": _dlpack,
        "__dlpack_device__": _dlpack_device,
        "devices": _devices,
        "addressable_data": _addressable_data,
        "copy_to_host_async": _copy_to_host_async,
        "delete": _delete,
        "is_deleted": _is_deleted,
        "is_ready": _is_ready,
        "platform": _platform,
        "on_device_size_in_bytes": _on_device_size_in_bytes,
        "unsafe_buffer_pointer": _unsafe_buffer_pointer,
    },
    array_properties={
        "sharding": _sharding,
        "device": _device,
        "addressable_shards": _addressable_shards,
        "global_shards": _addressable_shards,
        "is_fully_replicated": _is_fully_replicated,
        "is_fully_addressable": _is_fully_addressable,
        "committed": _committed,
        "traceback": _traceback,
        "format": _format,
        "__cuda_array_interface__": _cuda_array_interface,
    },
)
