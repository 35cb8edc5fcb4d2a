"""Host <-> device: copying NumPy values onto a device and reading device buffers back.

Layer: xla_bridge (runtime half). May import: stdlib, numpy, jaxlib and its siblings
``backends``, ``executables`` (sub-byte read-back widens on the device), ``dtypes`` and
``dlpack``. Never jax, never funcgrad. ``xla_bridge.runtime`` re-exports the public names.

# NOTE: [host transfers]
``device_put`` copies: it uses ``force_copy=True`` with ``IMMUTABLE_ONLY_DURING_CALL``, so
later writes to the NumPy array never show up on the device. (Zero-copy aliasing happens only
for 64-byte aligned arrays, so "sometimes aliased" would be the alternative.) ``to_numpy`` on
CPU returns a read-only zero-copy view for NumPy-native dtypes, and a copy for ml_dtypes
(bfloat16, float8) which have no buffer-protocol format; that copy goes through DLPack
because ``_single_device_array_to_np_array_did_copy`` imports jax. A buffer on another device
(a GPU) is first copied onto the CPU device (``host_copy``: a device-to-device copy between the
two clients, verified on an H100 not to import jax), then read like a CPU buffer.
"""

from __future__ import annotations

import numpy as np
from jaxlib import _jax
from jaxlib import xla_client as xc

from funcgrad.kernel.ir import ShapedArray

from . import backends
from .backends import (
    DONATED,
    ArrayImpl,
    XlaBridgeError,
    _callback_error,
    _JaxRuntimeError,
    default_device,
    get_backend,
    sharding,
)
from .dlpack import dlpack_to_numpy
from .dtypes import SUB_BYTE_WIDE, SUPPORTED_DTYPES, aval, widening_module
from .executables import compile

__all__ = ["deleted_buffer_error", "device_put", "host_copy", "to_numpy"]

_SUPPORTED = frozenset(SUPPORTED_DTYPES)
_COPY = _jax.HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL
_put = _jax.batched_device_put


def device_put(x, device=None, *, weak_type: bool = False, committed: bool = True, memory_kind=None):
    """Copy a NumPy array or scalar to a device; returns a jaxlib ``ArrayImpl``.

    The data is copied during the call, so later changes to ``x`` are not seen. An
    ``ArrayImpl`` already on ``device`` is returned as is; one on another device goes through
    the host. ``committed``: the buffer's committed flag (JAX's ``Array.committed``, NOTE:
    [committed arrays] in xla_bridge/committed.py); a host value's own transfer for a call is not.
    ``memory_kind``: the device's memory to put it in (``None``: its own; "pinned_host", ...).

    Example:
        >>> buf = device_put(np.arange(3.0)); buf.aval
        float64[3]
        >>> to_numpy(buf)
        array([0., 1., 2.])
    """
    if device is None:
        device = backends._default_dev or default_device()
    if type(x) is ArrayImpl:
        s = x._sharding
        if getattr(s, "_fg_device", None) is device and s._fg_kind == memory_kind:
            return x
        x = to_numpy(x)
    a = np.asarray(x)
    dt = a.dtype
    if dt.byteorder == ">":  # XLA would read big-endian bytes as little-endian
        a = a.astype(dt.newbyteorder("="))
        dt = a.dtype
    if dt not in _SUPPORTED:
        raise TypeError(f"device_put: dtype {dt} is not supported by XLA (value of type {type(x).__name__})")
    try:
        return _put(
            aval(a.shape, dt, weak_type),
            sharding(device, memory_kind),
            [a],
            [device],
            committed,
            True,
            _COPY,
            True,
        )
    except _JaxRuntimeError as e:
        raise XlaBridgeError(
            f"copying a {dt}{list(a.shape)} array to {device} failed: {e}",
            phase="transfer",
            platform=device.platform,
        ) from None


def to_numpy(buf) -> np.ndarray:
    """The value of a device buffer as a NumPy array (blocks until it is computed).

    On CPU, NumPy-native dtypes give a read-only zero-copy view; bfloat16/float8 and non-CPU
    devices give a copy.

    Example:
        >>> to_numpy(device_put(np.float32(2.5)))
        array(2.5, dtype=float32)
    """
    try:
        dt = buf.aval.dtype
        cpu = buf._sharding._fg_cpu
    except AttributeError:
        raise TypeError(
            f"to_numpy expects a device buffer from xla_bridge, got {type(buf).__name__}"
        ) from None
    if cpu and dt.kind != "V":  # kind "V": ml_dtypes, which the buffer protocol lacks
        try:
            # Through the C buffer protocol, not ArrayImpl.__array__, which jax patches globally
            # when it is imported in the same process (then it would call into jax).
            out = np.asarray(memoryview(buf))
        except (BufferError, _JaxRuntimeError):  # e.g. a failed async computation
            out = None
        # A deleted buffer turns into an object array instead of raising.
        if out is not None and out.dtype == dt:
            return out
    return _to_numpy_slow(buf, dt, cpu)


def deleted_buffer_error(buf, what: str = "") -> XlaBridgeError:
    """The error for using a donated (deleted) buffer; ``what`` says where (an argument name)."""
    device = getattr(buf._sharding, "_fg_device", None)
    platform = device.platform if device is not None else None
    # JAX's words first ("Array has been deleted with shape=float32[3]."), then what to do.
    shape = ShapedArray(buf.aval.shape, buf.aval.dtype).str_short(short_dtypes=False)
    return XlaBridgeError(
        f"{what}Array has been deleted with shape={shape}. T{DONATED[1:]}",
        phase="transfer",
        platform=platform,
    )


def host_copy(buf):
    """A copy of a one-device buffer on the CPU device, so the host can read it.

    jaxlib's own read-back of an accelerator buffer (``_single_device_array_to_np_array_did_copy``)
    imports jax (NOTE: [host transfers]); a device-to-device copy onto the CPU client does not.

    Example:
        >>> to_numpy(host_copy(device_put(np.arange(2.0))))
        array([0., 1.])
    """
    cpu = get_backend("cpu").default_device
    (out,) = _jax.batched_copy_array_to_devices_with_sharding(
        [buf], [xc.DeviceList((cpu,))], [sharding(cpu)], [_jax.ArrayCopySemantics.ALWAYS_COPY]
    )
    return out


def _to_numpy_slow(buf, dt, cpu) -> np.ndarray:
    read = getattr(buf._sharding, "_fg_read", None)
    if read is not None:  # a value over several devices: xla_bridge.sharded assembles its shards
        return read(buf)
    platform = buf._sharding._fg_device.platform
    if buf.is_deleted():
        raise deleted_buffer_error(buf)
    try:
        if dt in SUB_BYTE_WIDE:  # no host format: widen on the device, narrow on the host
            wide = SUB_BYTE_WIDE[dt]
            shape = buf.aval.shape
            exe = compile(
                widening_module(shape, dt), [(shape, dt)], [(shape, wide)], device=buf._sharding._fg_device
            )
            return to_numpy(exe([buf])[0]).astype(dt)
        if cpu:
            return dlpack_to_numpy(buf, dt)
        return to_numpy(host_copy(buf))
    except _JaxRuntimeError as e:
        if "Callback error calling callback" in str(e):
            raise _callback_error(str(e), buf._sharding._fg_device) from None
        raise XlaBridgeError(
            f"reading an array back from {platform} failed: {e}\n"
            "Hint: errors raised while a program runs asynchronously surface here.",
            phase="execute",
            platform=platform,
        ) from None
