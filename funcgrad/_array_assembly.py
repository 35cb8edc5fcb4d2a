"""Building one sharded ``Array`` from per-device pieces, as JAX's functions of the same names:
``make_array_from_callback`` (a callback gives each device's piece),
``make_array_from_single_device_arrays`` (one Array per device) and
``make_array_from_process_local_data`` (this process's part of a global array).

Layer: surface, under ``funcgrad._placement`` (which re-exports these names). Imports numpy, the
kernel's ``Array``, ``xla_bridge.sharded`` and ``funcgrad._shardings``/``_array_placement``.
"""

from __future__ import annotations

import numpy as np

from funcgrad import xla_bridge
from funcgrad._array_placement import _sharded_buffer
from funcgrad._extended_array import ExtendedArray
from funcgrad._layouts import Format, check_default_layout
from funcgrad._shardings import Sharding
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.array import Array
from funcgrad.kernel.core import Tracer
from funcgrad.kernel.errors import UnexpectedTracerError


def _named(sharding, where) -> Sharding:
    # Any concrete Sharding (JAX takes them all): each one lays devices out through its bridge.
    if not isinstance(sharding, Sharding):
        raise TypeError(f"{where}: sharding must be a Sharding (e.g. a NamedSharding), got {sharding!r}")
    return sharding


def _data_of(keys):
    """The raw data of typed PRNG keys (the high-level-type protocol of their abstract value)."""
    (data,) = keys.aval.lower_val(keys)
    return data


def _keys_from_data(example, shape, build):
    """Keys of ``example``'s dtype and ``shape`` from ``build(key_shape)``: their data assembled as
    an array of shape ``(*shape, *key_shape)``."""
    keys_aval = example.dtype.aval_type(shape, example.dtype)
    (data_aval,) = keys_aval.lo_ty()
    return keys_aval.raise_val(build(tuple(data_aval.shape[len(shape) :])))


def make_array_from_callback(shape, sharding, data_callback, dtype=None) -> Array:
    """A sharded Array of ``shape`` whose piece on each of this process's devices is
    ``data_callback(index)`` (``index``: a tuple of slices into the whole array).

    >>> import funcgrad, numpy as np
    >>> from funcgrad.sharding import NamedSharding, P, make_mesh
    >>> s = NamedSharding(make_mesh((1,), ("x",)), P("x"))
    >>> make_array_from_callback((4,), s, lambda idx: np.arange(4.0)[idx]).tolist()
    [0.0, 1.0, 2.0, 3.0]
    """
    shape = tuple(int(n) for n in shape)
    if isinstance(sharding, Format):  # (JAX's: a Format's sharding, its layout the default one)
        check_default_layout(sharding.layout, shape, "make_array_from_callback")
        sharding = sharding.sharding
    s = _named(sharding, "make_array_from_callback")
    s.shard_shape(shape)
    bridge = s._bridge(len(shape))
    sh = xla_bridge.sharded
    me = sh.process_index()
    devs, blocks = [], []
    for d, ix in zip(bridge._fg_devs, sh.indices(bridge, shape)):
        if d.process_index != me:
            continue
        piece = data_callback(ix)
        if isinstance(piece, Tracer):  # (JAX's error and words)
            raise UnexpectedTracerError(
                "jax.make_array_from_callback cannot be called within a traced context."
            )
        if isinstance(piece, ExtendedArray):  # typed PRNG keys: assembled as their data (JAX's)
            return _keys_from_data(
                piece,
                shape,
                lambda k: make_array_from_callback(
                    (*shape, *k), sharding, lambda i: _data_of(data_callback(i[: len(shape)]))
                ),
            )
        # in the mode's dtype, as JAX's device_put of each piece (an int64 NumPy piece is int32
        # in 32-bit mode; sharded 64-bit blocks failed inside PJRT), and a fresh C-ordered array
        # per device: a view the callback returns again for a replica (the same rows of a
        # P('x', None) layout) made jaxlib's transfer fail with "bad_function_call"
        block = np.array(_dt.canonical_value(np.asarray(piece, dtype=dtype)), order="C", copy=True)
        want = tuple(len(range(*sl.indices(n))) for sl, n in zip(ix, shape))
        if block.shape != want:  # (JAX's words first)
            raise ValueError(
                f"Expected shard shape {want} doesn't match the single device array shape {block.shape}. "
                f"make_array_from_callback: the callback gave a {block.shape} piece for index {ix} of an "
                f"array of shape {shape}; it must be {want}"
            )
        devs.append(d)
        blocks.append(block)
    dt = blocks[0].dtype if blocks else _dt.canonical(np.dtype(dtype or np.float64))
    return Array._from_buffer(sh.put_blocks(blocks, devs, shape, dt, bridge))


def make_array_from_single_device_arrays(shape, sharding, arrays, *, dtype=None) -> Array:
    """A sharded Array of ``shape`` from one Array per device of this process (each on its device,
    holding that device's piece); ``dtype`` must be given when this process holds no piece, and
    match the pieces' otherwise (JAX's checks and words).

    >>> import funcgrad, numpy as np
    >>> from funcgrad.sharding import NamedSharding, P, make_mesh
    >>> s = NamedSharding(make_mesh((1,), ("x",)), P("x"))
    >>> pieces = [funcgrad.device_put(np.ones(2), d) for d in s.addressable_devices]
    >>> make_array_from_single_device_arrays((2,), s, pieces).tolist()
    [1.0, 1.0]
    """
    name = "make_array_from_single_device_arrays"
    if not isinstance(arrays, list | tuple):
        raise TypeError(f"jax.{name} `arrays` argument must be a list or tuple, but got {type(arrays)}.")
    arrays = list(arrays)
    if any(isinstance(a, Tracer) for a in arrays):
        raise ValueError(
            f"jax.{name} requires a list of concrete arrays as input, but got types {set(map(type, arrays))}"
        )
    if dtype is None and not arrays:
        raise ValueError(
            f"If the Array has no addressable shards, `dtype` must be provided via the `dtype` argument "
            f"to `jax.{name}`."
        )
    if dtype is not None and arrays and arrays[0].dtype != _dt.canonical(np.dtype(dtype)):
        raise ValueError(
            f"If `dtype` is provided to `jax.{name}`, it must match the dtype of the addressable shards. "
            f"Got dtype={_dt.canonical(np.dtype(dtype))} and shard dtype={arrays[0].dtype}`."
        )
    s = _named(sharding, name)
    shape = tuple(int(n) for n in shape)
    bridge = s._bridge(len(shape))
    sh = xla_bridge.sharded
    if arrays and isinstance(arrays[0], ExtendedArray):  # typed PRNG keys: assembled as their data
        return _keys_from_data(
            arrays[0],
            shape,
            lambda k: make_array_from_single_device_arrays(
                (*shape, *k), sharding, [_data_of(a) for a in arrays]
            ),
        )
    by_device = {}
    for a in arrays:
        if isinstance(a, Array) and _sharded_buffer(a) is not None:  # (JAX's words)
            raise ValueError(
                "When making an array from single-device arrays the input arrays must have one shard "
                f"each. An argument array had {len(a.addressable_shards)} shard(s)."
            )
        if not isinstance(a, Array) or a._buffer is None:
            raise TypeError(
                "make_array_from_single_device_arrays: each array must be an Array on one device "
                "(funcgrad.device_put(piece, device))"
            )
        by_device[a._buffer._sharding._fg_device] = a
    idx = dict(zip(bridge._fg_devs, sh.indices(bridge, shape)))
    me = sh.process_index()
    local = [d for d in bridge._fg_devs if d.process_index == me]
    missing = [d for d in local if d not in by_device]
    if missing:
        raise ValueError(f"make_array_from_single_device_arrays: no array on the devices {missing}")
    blocks = []
    for d in local:
        block = by_device[d]._numpy()
        want = tuple(len(range(*sl.indices(n))) for sl, n in zip(idx[d], shape))
        if block.shape != want:
            raise ValueError(
                f"make_array_from_single_device_arrays: the array on {d} has shape {block.shape}, but its "
                "piece "
                f"of a {shape} array is {want}"
            )
        blocks.append(block)
    return Array._from_buffer(sh.put_blocks(blocks, local, shape, blocks[0].dtype, bridge))


def make_array_from_process_local_data(sharding, local_data, global_shape=None) -> Array:
    """A global sharded Array from this process's part of it (``local_data``: the rows, columns,
    ... its devices hold). Each dimension's global size is inferred from how many distinct pieces
    along it live on this process, unless ``global_shape`` is given. On one process this is
    ``device_put(local_data, sharding)``.

    >>> import funcgrad, numpy as np
    >>> from funcgrad.sharding import NamedSharding, P, make_mesh
    >>> s = NamedSharding(make_mesh((1,), ("x",)), P("x"))
    >>> make_array_from_process_local_data(s, np.arange(3.0)).tolist()
    [0.0, 1.0, 2.0]
    """
    s = _named(sharding, "make_array_from_process_local_data")
    local = np.asarray(local_data)
    ndim = local.ndim
    bridge = s._bridge(ndim)
    sh = xla_bridge.sharded
    me = sh.process_index()
    counts = sh.tile_counts(bridge, ndim)
    probe = sh.indices(bridge, tuple(counts))  # index of each device's tile, one element per tile
    mine = [ix for d, ix in zip(bridge._fg_devs, probe) if d.process_index == me]
    local_tiles = [len({ix[k].start or 0 for ix in mine}) for k in range(ndim)]
    if global_shape is None:
        global_shape = tuple(n * c // lt for n, c, lt in zip(local.shape, counts, local_tiles))
    global_shape = tuple(int(n) for n in global_shape)
    s.shard_shape(global_shape)
    first = [min(ix[k].start or 0 for ix in mine) for k in range(ndim)]
    blocks, devs = [], []
    for d, ix in zip(bridge._fg_devs, sh.indices(bridge, global_shape)):
        if d.process_index != me:
            continue
        block_len = [global_shape[k] // counts[k] for k in range(ndim)]
        start = [(ix[k].start or 0) - first[k] * block_len[k] for k in range(ndim)]
        local_ix = tuple(slice(a, a + n) for a, n in zip(start, block_len))
        # A fresh array per block: a view (of a broadcast, or one block shared by replicas)
        # makes jaxlib's multi-process transfer fail with "bad_function_call".
        blocks.append(np.array(local[local_ix], order="C", copy=True))
        devs.append(d)
    return Array._from_buffer(sh.put_blocks(blocks, devs, global_shape, local.dtype, bridge))
