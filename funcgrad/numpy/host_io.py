"""funcgrad.numpy's host-side input and output: files (``save``, ``savez``, ``load``, ``fromfile``),
buffers and iterables (``frombuffer``, ``fromstring``, ``fromiter``, ``from_dlpack``), printing
(``array_repr``, ``array_str``, ``printoptions``, ``get_printoptions``, ``set_printoptions``) and
``iterable``.

Layer: surface. Imports ``funcgrad.numpy._core`` and numpy.

These read or write concrete values on the host, with NumPy: the readers return funcgrad Arrays
(under ``jit`` they run once, at trace time, and their result is a constant of the program; JAX
refuses ``fromfile``/``fromiter`` for that reason, funcgrad documents it instead); the writers and
printers take concrete arrays (a traced value raises funcgrad's concretization error). Printing
follows NumPy's print options, which funcgrad's array printing uses too.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from funcgrad.numpy._core import asarray

__all__ = [
    "array_repr",
    "array_str",
    "from_dlpack",
    "frombuffer",
    "fromfile",
    "fromiter",
    "fromstring",
    "get_printoptions",
    "iterable",
    "load",
    "printoptions",
    "save",
    "savez",
    "set_printoptions",
]

# NumPy's own (they take funcgrad Arrays through ``__array__``), as in jax.numpy.
save = np.save
savez = np.savez
array_repr = np.array_repr
array_str = np.array_str
printoptions = np.printoptions
get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions
iterable = np.iterable


def load(file, *args, **kwargs):
    """An array saved with ``save`` (``.npy``) as a funcgrad Array; an ``.npz`` archive comes back
    as NumPy's lazy ``NpzFile`` (index it, then ``asarray``). As JAX's, a ``bfloat16`` array (which
    NumPy writes as 2-byte void, ``|V2``) comes back as ``bfloat16``.

    >>> import io, ml_dtypes
    >>> buf = io.BytesIO(); save(buf, np.arange(3.0)); _ = buf.seek(0)
    >>> load(buf).tolist()
    [0.0, 1.0, 2.0]
    >>> buf = io.BytesIO(); save(buf, np.ones(2, ml_dtypes.bfloat16)); _ = buf.seek(0)
    >>> load(buf).dtype
    dtype(bfloat16)
    """
    out = np.load(file, *args, **kwargs)
    if not isinstance(out, np.ndarray):
        return out
    if out.dtype == np.dtype("V2"):
        out = out.view(ml_dtypes.bfloat16)
    return asarray(out)


def frombuffer(buffer, dtype=float, count: int = -1, offset: int = 0):
    """A 1-D Array of the bytes of ``buffer`` read as ``dtype`` (a copy).

    >>> frombuffer(b"\\x01\\x02\\x03", dtype=np.uint8).tolist()
    [1, 2, 3]
    """
    return asarray(np.frombuffer(buffer, dtype=dtype, count=count, offset=offset).copy())


def fromstring(string, dtype=float, count: int = -1, *, sep: str):
    """A 1-D Array parsed from text separated by ``sep`` (NumPy's text mode; its binary mode is
    deprecated: use ``frombuffer``).

    >>> fromstring("1, 2, 3", dtype=int, sep=",").tolist()
    [1, 2, 3]
    """
    if sep == "":
        raise ValueError("fromstring: binary mode (sep='') is deprecated in NumPy; use frombuffer")
    return asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def fromfile(file, dtype=float, count: int = -1, sep: str = "", offset: int = 0):
    """A 1-D Array read from a file (binary, or text with ``sep``), read when called.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "x.bin")
    >>> np.arange(4, dtype=np.int32).tofile(path)
    >>> fromfile(path, dtype=np.int32).tolist()
    [0, 1, 2, 3]
    """
    return asarray(np.fromfile(file, dtype=dtype, count=count, sep=sep, offset=offset))


def fromiter(iterable, dtype, count: int = -1):
    """A 1-D Array of the values of ``iterable`` (consumed when called).

    >>> fromiter((i * i for i in range(4)), dtype=int).tolist()
    [0, 1, 4, 9]
    """
    return asarray(np.fromiter(iterable, dtype=dtype, count=count))


def from_dlpack(x, /, *, device=None, copy=None):
    """An Array of the values of any object with ``__dlpack__`` (a NumPy array, a torch tensor, a
    funcgrad Array). funcgrad arrays live on the host: ``device`` must be None or a CPU device;
    the values are copied unless ``copy=False`` (refused: funcgrad arrays own their memory).

    >>> from_dlpack(np.arange(3)).tolist()
    [0, 1, 2]
    """
    if copy is False:
        raise ValueError("from_dlpack: copy=False is not supported (funcgrad arrays own their memory)")
    if device is not None and getattr(device, "platform", "cpu") != "cpu":
        raise ValueError(f"from_dlpack: funcgrad arrays are read on the host; device={device} is not a CPU")
    return asarray(np.array(np.from_dlpack(x), copy=True))
