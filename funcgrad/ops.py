"""``funcgrad.ops``: segment reductions (``jax.ops``): ``segment_sum``, ``segment_prod``,
``segment_max``, ``segment_min``.

Layer: surface. Imports funcgrad.numpy.

Each reduces the rows of ``data`` that share a segment id into that segment's row of the output
(scatter-add/mul/max/min into an array of ``num_segments`` rows); ids outside ``[0, num_segments)``
are dropped. Empty segments hold the reduction's identity (0, 1, the dtype's lowest or highest
value). Differentiable in ``data`` (ties of max/min share the derivative, as JAX's scatter rules).

>>> import funcgrad.numpy as fnp
>>> segment_sum(fnp.array([1.0, 2.0, 3.0]), fnp.array([0, 0, 1])).tolist()
[3.0, 3.0]
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.numpy._core import concrete_int, concrete_or_error

__all__ = ["segment_max", "segment_min", "segment_prod", "segment_sum"]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


def _segment(name, method, identity, data, segment_ids, num_segments, indices_are_sorted, unique_indices,
             bucket_size, mode, out_sharding=None):  # fmt: skip
    if out_sharding is not None and method != "add" and getattr(getattr(out_sharding, "spec", out_sharding),
                                                                "unreduced", None):  # fmt: skip
        # (JAX's: only a sum may be left unreduced, each device's segments of its own rows)
        raise NotImplementedError(f"unreduced for {name.removeprefix('segment_')} is not yet supported.")
    if out_sharding is not None and bucket_size is not None:
        raise NotImplementedError(f"ops.{name}: bucket_size with out_sharding (as JAX's)")
    data = fnp.asarray(data)
    segment_ids = fnp.asarray(segment_ids)
    if not fnp.issubdtype(segment_ids.dtype, fnp.integer):
        raise TypeError(f"ops.{name}: segment_ids must be integers, got {segment_ids.dtype}")
    if data.ndim == 0 and segment_ids.ndim == 1:  # (JAX's scatter broadcasts a scalar: one per id)
        data = fnp.broadcast_to(data, segment_ids.shape)
    if segment_ids.ndim != 1 or data.ndim < 1 or segment_ids.shape[0] != data.shape[0]:
        raise ValueError(
            f"ops.{name}: segment_ids must be one-dimensional with one id per row of data; got "
            f"segment_ids of shape {segment_ids.shape} for data of shape {data.shape}"
        )
    if num_segments is None:
        ids = concrete_or_error(segment_ids, f"ops.{name} without num_segments (the output size)")
        num_segments = int(ids.max()) + 1 if ids.size else 0
    num_segments = concrete_int(num_segments, f"ops.{name}: num_segments")
    if mode not in (None, "drop", "fill", "promise_in_bounds", "clip"):
        raise ValueError(
            f"ops.{name}: mode must be None, 'drop', 'clip' or 'promise_in_bounds', got {mode!r}"
        )
    if bucket_size is not None:
        # Reduce each bucket of rows separately, then the buckets: sums of similar magnitude lose
        # less precision.
        bucket_size = concrete_int(bucket_size, f"ops.{name}: bucket_size")
        n = data.shape[0]
        parts = [
            _segment(
                name,
                method,
                identity,
                data[i : i + bucket_size],
                segment_ids[i : i + bucket_size],
                num_segments,
                indices_are_sorted,
                unique_indices,
                None,
                mode,
            )  # fmt: skip
            for i in range(0, n, bucket_size)
        ]
        combine = {"add": fnp.add, "multiply": fnp.multiply, "max": fnp.maximum, "min": fnp.minimum}[method]
        out = parts[0]
        for p in parts[1:]:
            out = combine(out, p)
        return out
    if mode == "clip":
        ids = fnp.clip(segment_ids, 0, max(num_segments - 1, 0))
    else:
        # Negative ids are out of range (dropped), not counted from the end as in NumPy indexing.
        ids = fnp.where(segment_ids < 0, num_segments, segment_ids)
    init = fnp.full((num_segments, *data.shape[1:]), identity(data.dtype), data.dtype)
    at = init.at[ids]
    kwargs = dict(indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)
    if out_sharding is not None:  # (JAX's: the scatter's result laid out so, NOTE: [sharding in types])
        kwargs["out_sharding"] = out_sharding
    return getattr(at, method)(data, mode="clip" if mode == "clip" else "drop", **kwargs)


def _lowest(dtype):
    if np.dtype(dtype) == np.bool_:
        return False
    return -np.inf if fnp.issubdtype(dtype, fnp.inexact) else np.iinfo(dtype).min


def _highest(dtype):
    if np.dtype(dtype) == np.bool_:
        return True
    return np.inf if fnp.issubdtype(dtype, fnp.inexact) else np.iinfo(dtype).max


def segment_sum(data, segment_ids, num_segments=None, indices_are_sorted=False, unique_indices=False,
                bucket_size=None, mode=None, out_sharding=None):  # fmt: skip
    """The sum of the rows of ``data`` in each segment.

    ``num_segments`` fixes the output's first dimension (required under ``jit``; by default
    ``max(segment_ids) + 1``); ``indices_are_sorted``/``unique_indices`` are promises that let the
    scatter skip work; ``bucket_size`` sums buckets of that many rows separately first (precision);
    ``mode="clip"`` clamps out-of-range ids instead of dropping them.

    >>> import funcgrad.numpy as fnp
    >>> segment_sum(fnp.arange(6.0).reshape(3, 2), fnp.array([1, 0, 1]), num_segments=3).tolist()
    [[2.0, 3.0], [4.0, 6.0], [0.0, 0.0]]
    """
    return _segment("segment_sum", "add", lambda d: 0, data, segment_ids, num_segments, indices_are_sorted,
                    unique_indices, bucket_size, mode, out_sharding)  # fmt: skip


def segment_prod(data, segment_ids, num_segments=None, indices_are_sorted=False, unique_indices=False,
                 bucket_size=None, mode=None, out_sharding=None):  # fmt: skip
    """The product of the rows of ``data`` in each segment (1 for an empty segment).

    >>> import funcgrad.numpy as fnp
    >>> segment_prod(fnp.array([2.0, 3.0, 4.0]), fnp.array([0, 0, 2])).tolist()
    [6.0, 1.0, 4.0]
    """
    return _segment("segment_prod", "multiply", lambda d: 1, data, segment_ids, num_segments,
                    indices_are_sorted, unique_indices, bucket_size, mode, out_sharding)  # fmt: skip


def segment_max(data, segment_ids, num_segments=None, indices_are_sorted=False, unique_indices=False,
                bucket_size=None, mode=None, out_sharding=None):  # fmt: skip
    """The maximum of the rows of ``data`` in each segment (``-inf``, or the integer minimum, for an
    empty segment).

    >>> import funcgrad.numpy as fnp
    >>> segment_max(fnp.array([2.0, 5.0, 4.0]), fnp.array([0, 0, 2])).tolist()
    [5.0, -inf, 4.0]
    """
    return _segment("segment_max", "max", _lowest, data, segment_ids, num_segments, indices_are_sorted,
                    unique_indices, bucket_size, mode, out_sharding)  # fmt: skip


def segment_min(data, segment_ids, num_segments=None, indices_are_sorted=False, unique_indices=False,
                bucket_size=None, mode=None, out_sharding=None):  # fmt: skip
    """The minimum of the rows of ``data`` in each segment (``inf``, or the integer maximum, for an
    empty segment).

    >>> import funcgrad.numpy as fnp
    >>> segment_min(fnp.array([2.0, 5.0, 4.0]), fnp.array([0, 0, 2])).tolist()
    [2.0, inf, 4.0]
    """
    return _segment("segment_min", "min", _highest, data, segment_ids, num_segments, indices_are_sorted,
                    unique_indices, bucket_size, mode, out_sharding)  # fmt: skip
