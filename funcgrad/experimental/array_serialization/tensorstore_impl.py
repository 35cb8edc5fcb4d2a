"""TensorStore reads and writes of Arrays, shard by shard: ``jax.experimental.array_serialization
.tensorstore_impl``.

Layer: surface. Imports ``tensorstore`` (optional: this module raises ``ImportError`` saying how to
install it), numpy, and funcgrad's public API (Arrays, shardings, ``Format``, ``device_put``,
``make_array_from_single_device_arrays``).

An Array is written into one TensorStore array of its global shape: each of its addressable shards
with ``replica_id == 0`` writes the region ``shard.index`` names, so a replicated Array is written
once. Reading back asks the requested sharding for the region each device holds, reads just that
region (zero-filled where the stored array is smaller than the requested shape) and assembles the
device buffers with ``make_array_from_single_device_arrays``. The on-disk layout is JAX's (zarr3
by default, one chunk per shard, or zarr; optionally inside an OCDBT key-value store), so either
library reads what the other wrote.

>>> import asyncio, tempfile, numpy as np, funcgrad as fg
>>> from funcgrad.experimental.array_serialization import tensorstore_impl as ts_impl
>>> path = tempfile.mkdtemp() + "/x"
>>> x = fg.numpy.arange(6.0).reshape(2, 3)
>>> spec = ts_impl.get_tensorstore_spec(path, ocdbt=False)
>>> _ = asyncio.run(ts_impl.async_serialize(x, spec))
>>> y = asyncio.run(ts_impl.async_deserialize(x.sharding, spec))
>>> np.asarray(y).tolist()
[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import os
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

try:
    import tensorstore as ts
except ImportError as e:  # JAX needs it here too: say which package is missing
    raise ImportError(
        "funcgrad.experimental.array_serialization (jax.experimental.array_serialization) needs "
        "the tensorstore package: pip install tensorstore"
    ) from e

import funcgrad
from funcgrad.experimental.layout import Format
from funcgrad.sharding import Sharding, SingleDeviceSharding

__all__ = [
    "async_deserialize",
    "async_serialize",
    "combine_kvstores",
    "estimate_read_memory_footprint",
    "get_tensorstore_spec",
    "is_tensorstore_spec_leaf",
    "merge_nested_ts_specs",
    "verify_tensorstore_spec",
]

logger = logging.getLogger(__name__)

_TS_ARRAY_DRIVER = "zarr3"
_DEFAULT_BASE_DRIVER = "file"
_PROCESS_DIR_FORMAT = "process_{}"
_FILE_SIZE_TARGET = 2 * 1024**3  # a chunk (one file) of at most ~2 GB, as JAX
_TS_CONTEXT = ts.Context(
    {
        "file_io_concurrency": {"limit": 128},
        "cache_pool": {"total_bytes_limit": 10_000_000_000},
        "cache_pool#remote": {"total_bytes_limit": 10_000_000_000},
        "data_copy_concurrency": {"limit": 128},
    }
)
_TS_CHUNK_LAYOUT = ts.ChunkLayout(chunk=ts.ChunkLayout.Grid(elements=100_000_000))

Future, Transaction = ts.Future, ts.Transaction


class _LimitInFlightBytes:
    """Bounds the host memory that reads in flight hold: a reader waits until its bytes fit (a single
    read larger than the whole budget raises the budget to it, so it cannot wait forever)."""

    def __init__(self, host_memory_bytes_limit: int):
        self._max_bytes = host_memory_bytes_limit
        self._available_bytes = host_memory_bytes_limit
        self._cv = asyncio.Condition(lock=asyncio.Lock())

    async def wait_for_bytes(self, requested_bytes: int) -> None:
        if requested_bytes > self._max_bytes:
            self._available_bytes += requested_bytes - self._max_bytes
            self._max_bytes = requested_bytes
        async with self._cv:
            await self._cv.wait_for(lambda: self._available_bytes >= requested_bytes)
            self._available_bytes -= requested_bytes

    async def release_bytes(self, requested_bytes: int) -> None:
        async with self._cv:
            self._available_bytes += requested_bytes
            self._cv.notify_all()


def is_tensorstore_spec_leaf(leaf: Any) -> bool:
    """Whether ``leaf`` is a TensorStore spec (a dict with a driver or a kvstore) or None."""
    return leaf is None or (isinstance(leaf, dict) and ("driver" in leaf or "kvstore" in leaf))


def _prime_factors(n: int) -> list[int]:
    factors, p = [], 2
    while p * p <= n:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    return factors + ([n] if n > 1 else [])


def _compute_chunk_shape(local_shape: tuple, dtype, file_size_target: int = _FILE_SIZE_TARGET) -> list[int]:
    """A chunk shape that divides the shard shape and is at most ~110% of ``file_size_target``
    bytes: the shard shape, divided by its smallest prime factors one at a time until it fits."""
    chunk = list(local_shape)
    if not chunk or math.prod(chunk) == 0:
        return [max(d, 1) for d in chunk]  # TensorStore needs non-zero chunks
    size = math.prod(chunk) * np.dtype(dtype).itemsize
    factors = [_prime_factors(d) for d in chunk]
    while size > 1.1 * file_size_target:
        candidates = [(f[0], i) for i, f in enumerate(factors) if f]
        if not candidates:
            break
        p, axis = min(candidates)
        factors[axis].pop(0)
        chunk[axis] //= p
        size //= p
    return chunk


def _get_tensorstore_metadata(arr, is_remote: bool = False, file_size_target: int = _FILE_SIZE_TARGET,
                              driver: str = _TS_ARRAY_DRIVER) -> dict[str, Any]:  # fmt: skip
    """The TensorStore metadata of ``arr`` (an Array or a NumPy array): its global shape, dtype and a
    chunk per shard."""
    shape = tuple(arr.shape)
    local = tuple(arr.sharding.shard_shape(shape)) if isinstance(arr, funcgrad.Array) else shape
    dtype = np.dtype(arr.dtype)
    if driver == "zarr3":
        return {
            "codecs": [{"name": "zstd"}] if is_remote else [],
            "shape": shape,
            "data_type": dtype.name,
            "chunk_grid": {
                "name": "regular",
                "configuration": {"chunk_shape": _compute_chunk_shape(local, dtype, file_size_target)},
            },
        }
    if driver == "zarr":  # zarr keeps the dtype in the spec itself, not its metadata
        return {"compressor": {"id": "zstd"}, "shape": shape, "chunks": [max(1, d) for d in local]}
    raise ValueError(f"Unsupported TensorStore driver {driver!r}: use 'zarr3' or 'zarr'")


def merge_nested_ts_specs(dict1: dict, dict2: dict | None) -> dict:
    """``dict1`` updated by ``dict2`` (which wins), the ``kvstore`` entries merged key by key."""
    if dict2 is None:
        return dict1
    kvstore = dict1.get("kvstore", {}) | dict2.get("kvstore", {})
    return dict1 | dict(dict2, kvstore=kvstore)


def _divides(shape, chunk) -> bool:
    return all(s % c == 0 for s, c in zip(shape, chunk))


def verify_tensorstore_spec(spec: dict, arr, path, ocdbt: bool, check_metadata: bool = True) -> None:
    """Raise ``ValueError`` unless ``spec`` writes ``arr`` (its dtype, shape, a chunk dividing its
    shards) to ``path`` (in an OCDBT store when ``ocdbt``)."""
    kvstore = spec.get("kvstore", {})
    if ocdbt and kvstore.get("driver", "") != "ocdbt":
        raise ValueError(f"Expected the ocdbt kvstore driver, got {spec=}")
    if check_metadata:
        if arr is None:
            raise ValueError("verify_tensorstore_spec: an array is needed to check the metadata")
        metadata, zarr3 = spec["metadata"], spec.get("driver", "") == "zarr3"
        if zarr3 and metadata["data_type"] != np.dtype(arr.dtype).name:
            raise ValueError(f"Provided dtype ({metadata['data_type']=}) doesn't match ({arr.dtype=})")
        if "shape" in metadata and tuple(metadata["shape"]) != tuple(arr.shape):
            raise ValueError(f"Provided shape ({metadata['shape']=}) doesn't match ({arr.shape=})")
        local = arr.sharding.shard_shape(arr.shape) if isinstance(arr, funcgrad.Array) else arr.shape
        chunk = metadata["chunk_grid"]["configuration"]["chunk_shape"] if zarr3 else None
        if chunk is not None and not _divides(local, chunk):
            raise ValueError(
                f"Provided chunk shape {chunk} does not divide the local shape of the array {local}"
            )
    found = kvstore["base"]["path"] if ocdbt else kvstore["path"]
    if str(found) != str(path):
        raise ValueError(f"Provided {path=} does not match the spec path: {kvstore}")


def _spec_has_metadata(tree) -> bool:
    return isinstance(tree, dict) and ("metadata" in tree or any(map(_spec_has_metadata, tree.values())))


def _remote_kvstore(path: str) -> dict | None:
    """The kvstore of a ``gs://bucket/path`` or ``s3://bucket/path``, else None."""
    for prefix, driver in (("gs", "gcs"), ("s3", "s3")):
        if path.startswith(f"{prefix}://"):
            m = re.fullmatch(f"^{prefix}://([^/]*)/(.*)$", path, re.DOTALL)
            if m is None:
                raise ValueError(
                    "The ckpt_path should contain the bucket name and the file path inside the "
                    f"bucket. Got: {path}"
                )
            return {"driver": driver, "bucket": m.group(1), "path": m.group(2)}
    return None


def get_tensorstore_spec(ckpt_path, ocdbt: bool = True, process_idx: int | None = None, arr=None,
                         driver: str = _TS_ARRAY_DRIVER) -> dict[str, Any]:  # fmt: skip
    """The TensorStore spec that writes an array at ``ckpt_path`` (a local absolute path, or
    ``gs://``/``s3://``): inside an OCDBT store in its parent folder when ``ocdbt``, in a
    ``process_<i>`` subfolder when ``process_idx`` is given, with ``arr``'s metadata when given.

    >>> get_tensorstore_spec("/tmp/ckpt/w", ocdbt=False)
    {'driver': 'zarr3', 'kvstore': {'driver': 'file', 'path': '/tmp/ckpt/w'}}
    """
    path = re.sub(r"^(gs|s3):/", r"\1://", os.path.normpath(str(ckpt_path)))  # normpath ate a '/'
    if process_idx is not None:
        parent, name = os.path.split(path)
        path = os.path.join(parent, _PROCESS_DIR_FORMAT.format(process_idx), name)
    spec: dict[str, Any] = {"driver": driver, "kvstore": {}}
    if ocdbt:  # the parent folder is the store; the array's name its key in it
        full, (path, key) = path, os.path.split(path)
        if re.fullmatch(r"^(gs|s3)://[^/]*", path):
            raise ValueError(
                "Using OCDBT requires the bucket name, the directory name and the array name, "
                f"your path is: {full}"
            )
    base = _remote_kvstore(path) or {"driver": _DEFAULT_BASE_DRIVER, "path": path}
    if ocdbt:
        if base["driver"] == _DEFAULT_BASE_DRIVER and not os.path.isabs(path):
            raise ValueError(f"Checkpoint path should be absolute. Got {path}")
        spec["kvstore"] = {"driver": "ocdbt", "base": base, "path": key}
    else:
        spec["kvstore"] = base
    if arr is not None:
        spec["metadata"] = _get_tensorstore_metadata(arr, driver=str(spec["driver"]))
    return spec


async def combine_kvstores(combined_kvstore: dict, kvstores: list[dict], context=_TS_CONTEXT) -> None:
    """Copy every key of ``kvstores`` into ``combined_kvstore``, in one transaction (one process)."""
    combined, opened = await asyncio.gather(
        ts.KvStore.open(combined_kvstore, context=context),
        asyncio.gather(*(ts.KvStore.open(k, context=context) for k in kvstores)),
    )
    txn = ts.Transaction()
    await asyncio.gather(*(k.experimental_copy_range_to(combined.with_transaction(txn)) for k in opened))
    await txn.commit_async()


def _as_array(arr):
    """A NumPy array or an Array; anything else array-like becomes an Array on the default device."""
    return arr if isinstance(arr, (funcgrad.Array, np.ndarray)) else funcgrad.numpy.asarray(arr)


def _shards(arr):
    """(index, replica_id, host data) of each shard this process writes."""
    if isinstance(arr, np.ndarray):
        return [((slice(None),) * arr.ndim, 0, arr)]
    return [(s.index, s.replica_id, np.asarray(s.data)) for s in arr.addressable_shards]


async def async_serialize(arr_inp, tensorstore_spec: dict, commit_future: list | None = None,
                          context=_TS_CONTEXT, chunk_layout=_TS_CHUNK_LAYOUT, primary_host: int | None = None,
                          replica_id: int = 0, transaction: ts.Transaction | None = None):  # fmt: skip
    """Write ``arr_inp`` (an Array or a NumPy array) with ``tensorstore_spec`` (filled in with the
    array's metadata when it has none). With a ``commit_future`` list, the writes' commit futures are
    appended to it and this returns once the data is copied out of the array; without one, once it
    is committed. ``replica_id`` picks which replica of each shard is written."""
    arr_inp = _as_array(arr_inp)
    if funcgrad.process_count() > 1:
        raise NotImplementedError(
            "array_serialization on funcgrad writes from one process; this one is one of "
            f"{funcgrad.process_count()}"
        )
    if not _spec_has_metadata(tensorstore_spec):  # a 'cast' driver keeps it deeper
        tensorstore_spec["metadata"] = _get_tensorstore_metadata(arr_inp, driver=tensorstore_spec["driver"])
    if tensorstore_spec["driver"] == "zarr" and "dtype" not in tensorstore_spec:
        tensorstore_spec["dtype"] = np.dtype(arr_inp.dtype).name
    opts = dict(context=context, chunk_layout=chunk_layout, transaction=transaction)
    if primary_host is None or funcgrad.process_index() == primary_host:
        created = ts.open(ts.Spec(tensorstore_spec), create=True, open=True, **opts)
        if commit_future is not None:
            commit_future.append(created)
        else:
            await created
    # Opening again with assume_metadata does no I/O: it gives the store to write into.
    t = await ts.open(ts.Spec(tensorstore_spec), open=True, assume_metadata=True, **opts)

    async def write(index, data):
        # The host copy is immutable and owned here, so TensorStore may keep it without copying.
        written = t[index].write(data, can_reference_source_data_indefinitely=True)
        if commit_future is not None:
            commit_future.append(written.commit)
            await written.copy
        else:
            await written.commit

    shards = [(index, data) for index, rid, data in _shards(arr_inp) if rid == replica_id]
    return await asyncio.gather(*(write(index, data) for index, data in shards))


def _run_serialization(arrays, tensorstore_specs) -> None:
    """Write each of ``arrays`` with its spec, and wait until all are committed."""

    async def run():
        await asyncio.gather(*map(async_serialize, arrays, tensorstore_specs))

    asyncio.run(run())


def estimate_read_memory_footprint(t: ts.TensorStore, domain: ts.IndexDomain | None) -> int:
    """The bytes that reading ``domain`` of ``t`` holds at once: whole chunks, or the domain itself
    for an unchunked driver."""
    domain = t.domain if domain is None else domain
    itemsize = t.dtype.numpy_dtype.itemsize
    template = t.chunk_layout.read_chunk_template
    if not all(template[i].finite for i in range(t.rank)):
        return domain.size * itemsize
    total = itemsize
    for i in range(t.rank):
        size = template.shape[i]
        lower = domain.origin[i] - template.origin[i]
        upper = lower + domain.shape[i]
        total *= -(-upper // size) * size - lower // size * size
    return total


def _sharding_of(in_type):
    """The sharding of what ``async_deserialize`` is asked for (a ``Format``'s layout is the
    default one on funcgrad: only its sharding places the result)."""
    if isinstance(in_type, (Format, funcgrad.ShapeDtypeStruct)):
        return in_type.sharding
    if not isinstance(in_type, Sharding):
        raise TypeError(
            "sharding passed to deserialization should be specified, concrete and an instance of "
            f"`jax.sharding.Sharding`. Got {in_type}"
        )
    return in_type


async def async_deserialize(in_type, tensorstore_spec, global_shape: Sequence[int] | None = None, dtype=None,
                            byte_limiter: _LimitInFlightBytes | None = None, context=_TS_CONTEXT,
                            chunk_layout=_TS_CHUNK_LAYOUT, assume_metadata: bool = False):  # fmt: skip
    """Read the array that ``tensorstore_spec`` names into an Array placed by ``in_type`` (a
    ``Sharding``, a ``Format`` or a ``ShapeDtypeStruct`` with a sharding). ``global_shape`` may be
    larger than the stored shape (the rest is zeros); ``dtype`` casts on the host."""
    sharding = _sharding_of(in_type)
    if isinstance(in_type, funcgrad.ShapeDtypeStruct) and dtype is None:
        dtype = in_type.dtype
    if sharding is None:
        raise TypeError("async_deserialize: the ShapeDtypeStruct has no sharding: give it one")
    t = await ts.open(
        tensorstore_spec,
        open=True,
        assume_metadata=assume_metadata,
        context=context,
        chunk_layout=chunk_layout,
    )
    shape = tuple(t.shape if global_shape is None else global_shape)
    dtype = t.dtype.numpy_dtype if dtype is None else np.dtype(dtype)
    shard_shape = sharding.shard_shape(shape)

    async def read(index, device):
        requested = ts.IndexTransform(input_shape=shape)[index].domain
        stored = t.domain.intersect(requested)
        nbytes = estimate_read_memory_footprint(t, stored)
        if byte_limiter is not None:
            await byte_limiter.wait_for_bytes(nbytes)
        out = np.zeros(shard_shape, dtype=t.dtype.numpy_dtype)
        # Translate the shard's region to start at 0 in `out`, then copy what is stored of it.
        await ts.array(out)[ts.d[:].translate_to[requested.origin]][stored].write(t[stored])
        result = funcgrad.device_put(out.astype(dtype, copy=False), SingleDeviceSharding(device))
        if byte_limiter is not None:
            await byte_limiter.release_bytes(nbytes)
        return result

    index_of = sharding.devices_indices_map(shape)
    devices = [d for d in index_of if d in sharding.addressable_devices]
    buffers = await asyncio.gather(*(read(index_of[d], d) for d in devices))
    canonical = funcgrad.dtypes.canonicalize_dtype(dtype)
    buffers = [b if b.dtype == canonical else b.astype(canonical) for b in buffers]
    return funcgrad.make_array_from_single_device_arrays(shape, sharding, buffers)


def _run_deserialization(
    shardings, tensorstore_specs, global_shapes=None, dtypes=None, concurrent_gb: int = 32
):
    """Read each of ``tensorstore_specs`` into an Array placed by its sharding, holding at most
    ``concurrent_gb`` GB of host memory in reads at once."""
    n = len(tensorstore_specs)
    global_shapes = [None] * n if global_shapes is None else global_shapes
    dtypes = [None] * n if dtypes is None else dtypes

    async def run():
        limiter = _LimitInFlightBytes(concurrent_gb * 10**9)
        reads = map(functools.partial(async_deserialize, byte_limiter=limiter), shardings, tensorstore_specs,
                    global_shapes, dtypes)  # fmt: skip
        return await asyncio.gather(*reads)

    return asyncio.run(run())
