"""Reading a CPU device buffer back through DLPack, for dtypes the buffer protocol lacks.

Layer: xla_bridge (runtime half). Imports stdlib (ctypes), numpy and jaxlib's ``_jax``; never jax
(``_single_device_array_to_np_array_did_copy`` would import it) and nothing of funcgrad.

bfloat16 and the float8 types of ml_dtypes have no buffer-protocol format, so ``np.asarray`` of
such a buffer fails. jaxlib exports any buffer as a DLPack capsule; the capsule's pointer is a
``DLManagedTensor``, which starts with its ``DLTensor``: data pointer, shape, strides, byte
offset. ``dlpack_to_numpy`` reads those with ctypes and copies the bytes out (``runtime.to_numpy``
calls it).
"""

from __future__ import annotations

import ctypes

import numpy as np
from jaxlib import _jax

__all__ = ["dlpack_to_numpy"]


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_DL_CPU = 1  # DLDeviceType kDLCPU

_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def dlpack_to_numpy(buf, dt) -> np.ndarray:
    """A NumPy copy (of dtype ``dt``) of the CPU buffer ``buf``.

    >>> import ml_dtypes
    >>> from funcgrad import xla_bridge as xb
    >>> x = xb.device_put(np.array([1.5, 2.5], ml_dtypes.bfloat16), xb.devices("cpu")[0])
    >>> dlpack_to_numpy(x, np.dtype(ml_dtypes.bfloat16))
    array([1.5, 2.5], dtype=bfloat16)
    """
    # The capsule holds a reference to the buffer until it is garbage: read, copy, then drop.
    capsule = _jax.buffer_to_dlpack_managed_tensor(buf)
    t = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    if t.device.device_type != _DL_CPU:
        # A GPU pointer read from the host would crash the process.
        kind = t.device.device_type
        raise ValueError(f"dlpack_to_numpy reads CPU buffers; this one is on DLPack device type {kind}")
    shape = tuple(t.shape[i] for i in range(t.ndim))
    n = int(np.prod(shape, dtype=np.int64))
    if n == 0:
        return np.empty(shape, dt)
    # DLPack strides count elements; NULL strides mean row-major.
    strides = tuple(t.strides[i] for i in range(t.ndim)) if t.strides else None
    span = 1 + sum((s - 1) * st for s, st in zip(shape, strides)) if strides else n
    raw = np.frombuffer(
        (ctypes.c_char * (span * dt.itemsize)).from_address(t.data + t.byte_offset),
        # Unsigned ints of the same size: as_strided can't handle ml_dtypes, view at the end.
        dtype=np.dtype(f"u{dt.itemsize}"),
    )
    if strides is None or np.empty(shape, np.int8).strides == tuple(strides):
        view = raw[:n].reshape(shape)
    else:
        view = np.lib.stride_tricks.as_strided(raw, shape, tuple(st * dt.itemsize for st in strides))
    out = np.array(view, copy=True).view(dt)
    del capsule
    return out
