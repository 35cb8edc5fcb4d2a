"""op_db entries: structure, indexing (gather/scatter), sorting, reductions and dot_general."""

from __future__ import annotations

import itertools

import numpy as np
from funcgrad.primitives import dot
from funcgrad.primitives import indexing as ix
from funcgrad.primitives import reductions as red
from funcgrad.primitives import sorting as so
from funcgrad.primitives import stacking as sk
from funcgrad.primitives import structure as stc

from op_db._base import (
    ALL3,
    BOOL,
    C128,
    F32,
    F64,
    FLOATS,
    I32,
    OpInfo,
    Sample,
    _arr,
    _comparable,
    _distinct,
    _one,
    _shapes,
)

# ----------------------------------------------------------------------------------------------
# Structure


def _bid_shape(shape):
    return (2, *(3 if s == 1 else s for s in shape))


def _bid_ref(x, shape, broadcast_dimensions):
    return np.broadcast_to(x, shape)  # operand axes are the trailing ones here


def _iota_ref(dtype, shape, dimension):
    ramp = np.arange(shape[dimension], dtype=dtype)
    return np.broadcast_to(ramp.reshape([-1 if d == dimension else 1 for d in range(len(shape))]), shape)


def _concatenate_sampler(shape, dtype, rng):
    operands = tuple(_arr(rng, (*shape[:-1], n), dtype) for n in (shape[-1], 1, 2))
    return Sample(operands, {"dimension": len(shape) - 1})


def _split_sizes(n):
    # three pieces of the last axis, an empty one among them
    return (n // 2, 0, n - n // 2)


def _split_ref(x, sizes, axis):
    return tuple(np.split(x, np.cumsum(sizes)[:-1], axis))


def _stack_sampler(shape, dtype, rng):
    return Sample(tuple(_arr(rng, shape, dtype) for _ in range(3)), {"axis": len(shape)})


def _pad_sampler(shape, dtype, rng):
    return Sample((_arr(rng, shape, dtype), _arr(rng, (), dtype)), {"padding_config": _pad_config(shape)})


def _pad_config(shape):
    return tuple(((d % 3) - 1, 2 - (d % 2), d % 2) for d in range(len(shape)))


def _pad_ref(x, padding_value, padding_config):
    out_shape = [lo + hi + n + max(n - 1, 0) * i for n, (lo, hi, i) in zip(x.shape, padding_config)]
    out = np.full(out_shape, padding_value, x.dtype)
    for idx in np.ndindex(*x.shape):
        target = tuple(lo + k * (i + 1) for k, (lo, _, i) in zip(idx, padding_config))
        if all(0 <= t < n for t, n in zip(target, out_shape)):
            out[target] = x[idx]
    return out


_SLICE_PARAMS = dict(
    start_indices=lambda shape: tuple(s // 3 for s in shape),
    limit_indices=lambda shape: tuple(s - s // 4 for s in shape),
    strides=lambda shape: tuple(2 - d % 2 for d in range(len(shape))),
)


def _slice_ref(x, start_indices, limit_indices, strides):
    return x[tuple(slice(a, b, c) for a, b, c in zip(start_indices, limit_indices, strides))]


def _ds_sampler(update):
    def sampler(shape, dtype, rng):
        sizes = tuple(max(s - 1, 0) for s in shape)
        starts = tuple(np.asarray(rng.integers(-s - 1, s + 2), np.int32) for s in shape)
        x = _arr(rng, shape, dtype)
        if update:
            return Sample((x, _arr(rng, sizes, dtype), *starts), {})
        return Sample((x, *starts), {"slice_sizes": sizes})

    return sampler


def _clamped(starts, shape, sizes):
    starts = [int(i) + n if int(i) < 0 else int(i) for i, n in zip(starts, shape)]
    return tuple(
        slice(min(max(i, 0), n - k), min(max(i, 0), n - k) + k) for i, n, k in zip(starts, shape, sizes)
    )


def _ds_ref(x, *starts, slice_sizes):
    return x[_clamped(starts, x.shape, slice_sizes)]


def _dus_ref(x, update, *starts):
    out = x.copy()
    out[_clamped(starts, x.shape, update.shape)] = update
    return out


# Gather/scatter references: explicit loops over index vectors and window positions (XLA's spec).


def _window_start(operand_shape, index_vector, batch_index, maps, sizes):
    """The clamped start of one window and whether it was in bounds (XLA's definition)."""
    index_map, operand_batching, indices_batching = maps
    start = [0] * len(operand_shape)
    for k, d in enumerate(index_map):
        start[d] = int(index_vector[k])
    for od, idim in zip(operand_batching, indices_batching):
        start[od] = batch_index[idim]
    in_bounds = all(0 <= start[d] <= operand_shape[d] - sizes[d] for d in index_map)
    return [min(max(s, 0), n - k) for s, n, k in zip(start, operand_shape, sizes)], in_bounds


def _gather_ref(operand, indices, *, dimension_numbers, slice_sizes, mode=None, fill_value=None):
    dn, batch_shape = dimension_numbers, indices.shape[:-1]
    maps = (dn.start_index_map, dn.operand_batching_dims, dn.start_indices_batching_dims)
    window_dims = [
        d for d in range(operand.ndim) if d not in dn.collapsed_slice_dims + dn.operand_batching_dims
    ]
    out_rank = len(batch_shape) + len(dn.offset_dims)
    batch_pos = [p for p in range(out_rank) if p not in dn.offset_dims]
    out_shape = [0] * out_rank
    for p, n in [*zip(batch_pos, batch_shape), *zip(dn.offset_dims, [slice_sizes[d] for d in window_dims])]:
        out_shape[p] = n
    out = np.zeros(out_shape, operand.dtype)
    fill = ix.default_fill_value(operand.dtype) if fill_value is None else fill_value
    for b in np.ndindex(*batch_shape):
        start, ok = _window_start(operand.shape, indices[b], b, maps, slice_sizes)
        for w in np.ndindex(*[slice_sizes[d] for d in window_dims]):
            src, target = list(start), [0] * out_rank
            for p, bi in zip(batch_pos, b):
                target[p] = bi
            for p, d, wi in zip(dn.offset_dims, window_dims, w):
                src[d] += wi
                target[p] = wi
            out[tuple(target)] = fill if mode == "fill" and not ok else operand[tuple(src)]
    return out


_COMBINE = {"scatter": lambda a, b: b, "scatter-add": np.add, "scatter-mul": np.multiply,
            "scatter-min": np.minimum, "scatter-max": np.maximum}  # fmt: skip


def _scatter_ref(name):
    def ref(operand, indices, updates, *, dimension_numbers, mode=None, unique_indices=False):
        dn, out = dimension_numbers, operand.copy()
        maps = (dn.scatter_dims_to_operand_dims, dn.operand_batching_dims, dn.scatter_indices_batching_dims)
        window_dims = [
            d for d in range(out.ndim) if d not in dn.inserted_window_dims + dn.operand_batching_dims
        ]
        sizes = [1] * operand.ndim
        for d, u in zip(window_dims, dn.update_window_dims):
            sizes[d] = updates.shape[u]
        scatter_axes = [d for d in range(updates.ndim) if d not in dn.update_window_dims]
        for b in np.ndindex(*indices.shape[:-1]):
            start, ok = _window_start(operand.shape, indices[b], b, maps, sizes)
            if not ok and mode != "clip":
                continue  # out-of-bounds windows are dropped
            for w in np.ndindex(*[sizes[d] for d in window_dims]):
                src, target = [0] * updates.ndim, list(start)
                for a, bi in zip(scatter_axes, b):
                    src[a] = bi
                for u, d, wi in zip(dn.update_window_dims, window_dims, w):
                    src[u] = wi
                    target[d] += wi
                out[tuple(target)] = _COMBINE[name](out[tuple(target)], updates[tuple(src)])
        return out

    return ref


ROWS_G = ix.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
ROWS_S = ix.ScatterDimensionNumbers(
    update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
)
BATCHED_G = ix.GatherDimensionNumbers(
    (1,), (1,), (1,), operand_batching_dims=(0,), start_indices_batching_dims=(0,)
)
BATCHED_S = ix.ScatterDimensionNumbers(
    (1,), (1,), (1,), operand_batching_dims=(0,), scatter_indices_batching_dims=(0,)
)
WINDOW_G = ix.GatherDimensionNumbers(offset_dims=(0, 2), collapsed_slice_dims=(), start_index_map=(1, 0))


def _gather_sampler(kind, mode):
    def sampler(shape, dtype, rng):
        n, m = shape
        k = (n + m) % 4

        def starts(size, window, count):
            # In bounds for the default (promise_in_bounds) mode; beyond both ends otherwise.
            lo, hi = (0, size - window) if mode is None else (-2, size + 1)
            return rng.integers(lo, hi + 1, count)

        if kind == "rows":
            idx = starts(n, 1, (k, 1))
            params = dict(dimension_numbers=ROWS_G, slice_sizes=(1, m))
            x = _arr(rng, (n, m), dtype)
        elif kind == "window":  # windows of up to 2 x 2 at 2-d starts, a 2-d batch of indices
            sizes = (min(n, 2), min(m, 2))
            idx = np.stack([starts(m, sizes[1], (2, k)), starts(n, sizes[0], (2, k))], -1)
            params = dict(dimension_numbers=WINDOW_G, slice_sizes=sizes)
            x = _arr(rng, (n, m), dtype)
        else:  # batching dims: element idx[b] of row b of operand[b]
            idx = starts(m, 1, (n, 1))
            params = dict(dimension_numbers=BATCHED_G, slice_sizes=(1, 1, 3))
            x = _arr(rng, (n, m, 3), dtype)
        if mode is not None:
            params["mode"] = mode
        if mode == "fill":
            params["fill_value"] = -7.0
        return Sample((x, np.asarray(idx, np.int32)), params)

    return sampler


def _scatter_sampler(name, kind, mode, unique=False):
    def sampler(shape, dtype, rng):
        n, m = shape
        k = (n + m) % 4 if not unique else min(n, (n + m) % 4)
        lo, hi = (-1, n) if mode is not None else (0, n - 1)
        idx = rng.permutation(n)[:k, None] if unique else rng.integers(lo, hi + 1, (k, 1))
        params = dict(dimension_numbers=ROWS_S)
        x_shape, u_shape = (n, m), (k, m)
        if kind == "batched":  # one row per batch element (the same one when unique)
            idx = np.full((n, 1), rng.integers(0, m)) if unique else rng.integers(0, m, (n, 1))
            params = dict(dimension_numbers=BATCHED_S)
            x_shape, u_shape = (n, m, 3), (n, 3)
        size = int(np.prod(x_shape))
        values = _distinct(rng, (size + int(np.prod(u_shape)),), dtype)  # no ties among the values
        if name == "scatter-mul":
            values = np.asarray(np.sign(values) * (0.5 + np.abs(values) % 1.0), dtype)
        params.update({"mode": mode} if mode else {}, **({"unique_indices": True} if unique else {}))
        x, u = values[:size].reshape(x_shape), values[size:].reshape(u_shape)
        return Sample((x, np.asarray(idx, np.int32), u), params)

    return sampler


_SCATTERS = {"scatter": (ix.scatter, ix.scatter_p), "scatter-add": (ix.scatter_add, ix.scatter_add_p),
             "scatter-mul": (ix.scatter_mul, ix.scatter_mul_p),
             "scatter-min": (ix.scatter_min, ix.scatter_min_p),
             "scatter-max": (ix.scatter_max, ix.scatter_max_p)}  # fmt: skip
_TWO_D = _shapes(min_dims=2, max_dims=2, min_side=1)
_TWO_D_SAMPLES = ((3, 4), (1, 3))


def _scatter_entries():
    variants = [
        ("rows", None, False),
        ("rows", "clip", False),
        ("batched", None, False),
        ("rows", None, True),
    ]
    for name, (kind, mode, unique) in itertools.product(_SCATTERS, variants):
        if name == "scatter-mul" and not unique and (kind, mode) != ("rows", None):
            continue
        # scatter-mul's updates derivative needs unique indices (as in JAX).
        diff = (0,) if name == "scatter-mul" and not unique else (0, 2)
        linear = {"scatter-add": ((0, 2),), "scatter-mul": ((0,),), "scatter": ((0, 2),) if unique else ()}
        op, prim = _SCATTERS[name]
        entry = f"{name}_{kind}" + (f"_{mode}" if mode else "") + ("_unique" if unique else "")
        dtypes = FLOATS if name == "scatter-mul" else (*ALL3, C128)
        yield OpInfo(entry, prim, op, _scatter_ref(name), _scatter_sampler(name, kind, mode, unique), _TWO_D,
                     sample_shapes=_TWO_D_SAMPLES, dtypes=dtypes,
                     diff_argnums=diff, linear_argnums=linear.get(name, ()))  # fmt: skip


def _sort_sampler(n_operands, num_keys):
    def sampler(shape, dtype, rng):
        keys = _distinct(rng, shape, dtype)
        if num_keys == 2:  # a coarse first key with ties, broken by the second
            keys = np.asarray(rng.integers(0, 2, shape), dtype)
        ops = [keys] + [_distinct(rng, shape, dtype) for _ in range(n_operands - 1)]
        return Sample(tuple(ops), {"dimension": len(shape) - 1, "num_keys": num_keys})

    return sampler


def _sort_ref(*operands, dimension, num_keys):
    perm = np.lexsort(operands[:num_keys][::-1], axis=dimension)
    return [np.take_along_axis(o, perm, dimension) for o in operands]


def _sort_op(*operands, dimension, num_keys):
    return list(so.sort(tuple(operands), dimension, True, num_keys))


def _cum_ref(ufunc):
    def ref(x, axis, reverse):
        flip = (lambda v: np.flip(v, axis)) if reverse else (lambda v: v)
        return flip(ufunc.accumulate(flip(x), axis=axis, dtype=x.dtype))

    return ref


def _reduce_ref(fn, identity=None):
    def ref(x, axes):
        if identity is not None and x.size == 0:
            return np.full(
                tuple(s for i, s in enumerate(x.shape) if i not in axes), identity(x.dtype), x.dtype
            )
        return np.asarray(fn(x, axis=axes)).astype(x.dtype)

    return ref


def _extreme(sign):
    def identity(dtype):
        if dtype.kind == "c":  # the extreme of the lexicographic order, as XLA's complex max/min
            return complex(sign * np.inf, sign * np.inf)
        if dtype.kind == "f":
            return sign * np.inf
        return np.iinfo(dtype).max if sign > 0 else np.iinfo(dtype).min

    return identity


def _reduction(prim, fn, np_fn, axes_of, gen=None, *, name=None, identity=None, dtypes=FLOATS, **kw):
    # Rank >= 1: reducing a 0-d array over no axes is the identity (no equation is bound).
    return OpInfo(name or prim.name, prim, fn, _reduce_ref(np_fn, identity), _one(gen, axes=axes_of),
                  _shapes(min_dims=1), sample_shapes=((3, 4), (2, 0), (5,)), dtypes=dtypes,
                  differentiable=not prim.traits.not_differentiable, **kw)  # fmt: skip


def _all_axes(shape):
    return tuple(range(len(shape)))


def _first_axis(shape):
    return (0,) if shape else ()


DOT_VARIANTS = {  # name: (lhs shape, rhs shape, dimension_numbers) from shape (n, m)
    "matmul": lambda n, m: ((n, m), (m, 2), (((1,), (0,)), ((), ()))),
    "batch_matmul": lambda n, m: ((2, n, m), (2, m, 3), (((2,), (1,)), ((0,), (0,)))),
    "vector_dot": lambda n, m: ((m,), (m,), (((0,), (0,)), ((), ()))),
    "outer": lambda n, m: ((n,), (m,), (((), ()), ((), ()))),
    "two_contractions": lambda n, m: ((n, 2, m), (m, n, 3), (((0, 2), (1, 0)), ((), ()))),
    "batch_in_middle": lambda n, m: ((m, 2, n), (2, n, 3), (((2,), (1,)), ((1,), (0,)))),
}


def _dot_sampler(variant):
    def sampler(shape, dtype, rng):
        ls, rs, dn = DOT_VARIANTS[variant](*shape)
        return Sample((_arr(rng, ls, dtype), _arr(rng, rs, dtype)), {"dimension_numbers": dn})

    return sampler


def _dot_ref(lhs, rhs, dimension_numbers):
    (lc, rc), (lb, rb) = dimension_numbers
    letters = iter("abcdefghijklmnop")
    ls = [next(letters) for _ in range(lhs.ndim)]
    rs = [next(letters) for _ in range(rhs.ndim)]
    for a, b in zip((*lc, *lb), (*rc, *rb)):
        rs[b] = ls[a]
    out = [ls[d] for d in lb] + [ls[d] for d in range(lhs.ndim) if d not in lc + lb]
    out += [rs[d] for d in range(rhs.ndim) if d not in rc + rb]
    return np.einsum(f"{''.join(ls)},{''.join(rs)}->{''.join(out)}", lhs, rhs).astype(lhs.dtype)


def _min1():
    return _shapes(min_dims=1)


_MIN1_SAMPLES = ((3, 4), (5,), (2, 0))


# fmt: off
OPS = [
    OpInfo("broadcast_in_dim", stc.broadcast_in_dim_p, stc.broadcast_in_dim, _bid_ref,
           _one(shape=_bid_shape, broadcast_dimensions=lambda s: tuple(range(1, len(s) + 1))), _shapes(),
           dtypes=(F64, F32, I32, BOOL, C128), linear_argnums=((0,),)),
    OpInfo("reshape", stc.reshape_p, stc.reshape, lambda x, new_sizes: x.reshape(new_sizes),
           _one(new_sizes=lambda s: (*s, 1)), _shapes(), dtypes=(F64, F32, I32, C128),
           linear_argnums=((0,),)),
    OpInfo("transpose", stc.transpose_p, stc.transpose_p.bind,
           lambda x, permutation: x.transpose(permutation),
           _one(permutation=lambda s: tuple(np.roll(np.arange(len(s)), 1).tolist())), _shapes(),
           dtypes=(F64, F32, I32, C128), linear_argnums=((0,),)),
    OpInfo("squeeze", stc.squeeze_p, stc.squeeze, lambda x, dimensions: np.squeeze(x, dimensions),
           _one(lambda rng, s, d: _arr(rng, (1, *s), d), dimensions=lambda s: (0,)), _shapes(),
           linear_argnums=((0,),)),
    OpInfo("iota", stc.iota_p, lambda **p: stc.broadcasted_iota(p["dtype"], p["shape"], p["dimension"]),
           _iota_ref,
           lambda shape, dtype, rng: Sample((), dict(dtype=dtype, shape=shape, dimension=len(shape) - 1)),
           _min1(), sample_shapes=_MIN1_SAMPLES, dtypes=(I32, F64, F32), differentiable=False),
    OpInfo("concatenate", stc.concatenate_p, lambda *xs, dimension: stc.concatenate(xs, dimension),
           lambda *xs, dimension: np.concatenate(xs, dimension), _concatenate_sampler, _min1(),
           sample_shapes=_MIN1_SAMPLES, dtypes=(F64, F32, I32, C128), linear_argnums=((0, 1, 2),)),
    OpInfo("pad", stc.pad_p, stc.pad, _pad_ref, _pad_sampler, _min1(), sample_shapes=_MIN1_SAMPLES,
           dtypes=(F64, F32, I32, C128), linear_argnums=((0, 1),)),
    OpInfo("rev", stc.rev_p, stc.rev, lambda x, dimensions: np.flip(x, dimensions),
           _one(dimensions=lambda s: tuple(sorted({0, len(s) - 1}))), _min1(), sample_shapes=_MIN1_SAMPLES,
           dtypes=(F64, F32, I32, C128), linear_argnums=((0,),)),
    OpInfo("stack", sk.stack_p, lambda *xs, axis: sk.stack(xs, axis), lambda *xs, axis: np.stack(xs, axis),
           _stack_sampler, _shapes(max_dims=2), sample_shapes=((3, 4), (), (2, 0)),
           dtypes=(F64, F32, I32, C128), linear_argnums=((0, 1, 2),)),
    OpInfo("unstack", sk.unstack_p, sk.unstack, lambda x, axis: tuple(np.moveaxis(x, axis, 0)),
           _one(axis=lambda s: len(s) - 1), _shapes(min_dims=1, min_side=1),
           sample_shapes=((3, 4), (5,), (2, 1)), dtypes=(F64, F32, I32, C128), linear_argnums=((0,),)),
    OpInfo("split", sk.split_p, sk.split, _split_ref,
           _one(axis=lambda s: len(s) - 1, sizes=lambda s: _split_sizes(s[-1])), _shapes(min_dims=1),
           sample_shapes=((3, 4), (5,), (2, 0)), dtypes=(F64, F32, I32, C128), linear_argnums=((0,),)),
    OpInfo("slice", stc.slice_p, stc.slice_, _slice_ref, _one(**_SLICE_PARAMS), _min1(),
           sample_shapes=_MIN1_SAMPLES,
           dtypes=(F64, F32, I32, C128), linear_argnums=((0,),)),
    OpInfo("dynamic_slice", ix.dynamic_slice_p,
           lambda x, *starts, slice_sizes: ix.dynamic_slice(x, starts, slice_sizes),
           _ds_ref, _ds_sampler(False), _min1(), sample_shapes=_MIN1_SAMPLES, dtypes=(F64, F32, I32, C128),
           diff_argnums=(0,), linear_argnums=((0,),)),
    OpInfo("dynamic_update_slice", ix.dynamic_update_slice_p,
           lambda x, u, *starts: ix.dynamic_update_slice(x, u, starts), _dus_ref, _ds_sampler(True), _min1(),
           sample_shapes=_MIN1_SAMPLES, dtypes=(F64, F32, I32, C128), diff_argnums=(0, 1),
           linear_argnums=((0, 1),)),
    *(OpInfo(f"gather_{kind}" + (f"_{mode}" if mode else ""), ix.gather_p, ix.gather, _gather_ref,
             _gather_sampler(kind, mode), _TWO_D, sample_shapes=_TWO_D_SAMPLES, dtypes=(F64, F32, I32, C128),
             diff_argnums=(0,), linear_argnums=((0,),))
      for kind, mode in (("rows", None), ("rows", "clip"), ("rows", "fill"), ("window", None),
                         ("window", "fill"), ("batched", None))),
    *_scatter_entries(),
    OpInfo("sort", so.sort_p, _sort_op, _sort_ref, _sort_sampler(1, 1), _min1(), sample_shapes=_MIN1_SAMPLES,
           dtypes=(F64, F32, I32, C128)),
    OpInfo("sort_key_val", so.sort_p, _sort_op, _sort_ref, _sort_sampler(2, 1), _min1(),
           sample_shapes=_MIN1_SAMPLES, dtypes=(F64, F32, I32, C128)),
    OpInfo("sort_two_keys", so.sort_p, _sort_op, _sort_ref, _sort_sampler(3, 2), _min1(),
           sample_shapes=_MIN1_SAMPLES, diff_argnums=(1, 2)),
    *(OpInfo(prim.name + ("_reverse" if reverse else ""), prim, fn, _cum_ref(ufunc),
             _one(gen, axis=lambda s: len(s) - 1, reverse=lambda s, r=reverse: r), _min1(),
             sample_shapes=_MIN1_SAMPLES, dtypes=(F64, F32, I32, C128),
             linear_argnums=((0,),) if prim is so.cumsum_p else ())
      for (prim, fn, ufunc, gen), reverse in itertools.product(
          ((so.cumsum_p, so.cumsum, np.add, None), (so.cumprod_p, so.cumprod, np.multiply, None),
           (so.cummax_p, so.cummax, np.maximum, _distinct), (so.cummin_p, so.cummin, np.minimum, _distinct)),
          (False, True))),
    _reduction(red.reduce_sum_p, red.reduce_sum, np.sum, _first_axis, dtypes=(F64, F32, I32, C128),
               linear_argnums=((0,),)),
    _reduction(red.reduce_sum_p, red.reduce_sum, np.sum, _all_axes, name="reduce_sum_all",
               linear_argnums=((0,),)),
    _reduction(red.reduce_max_p, red.reduce_max, np.max, _first_axis, _distinct, identity=_extreme(-1),
               dtypes=(F64, F32, I32, C128)),
    _reduction(red.reduce_min_p, red.reduce_min, np.min, _all_axes, _distinct, identity=_extreme(1),
               dtypes=(F64, F32, I32, C128)),
    _reduction(red.reduce_prod_p, red.reduce_prod, np.prod, _first_axis, dtypes=(F64, F32, I32, C128)),
    _reduction(red.reduce_prod_p, red.reduce_prod, np.prod, _all_axes, name="reduce_prod_all"),
    _reduction(red.reduce_and_p, red.reduce_and_p.bind, np.all, _first_axis, dtypes=(BOOL,)),
    _reduction(red.reduce_or_p, red.reduce_or_p.bind, np.any, _all_axes, dtypes=(BOOL,)),
    *(OpInfo(p.name, p, lambda x, axis, fn=fn: fn(x, axis, np.int32),
             lambda x, axis, f=f: f(x, axis=axis).astype(np.int32),
             _one(_comparable, axis=lambda s: len(s) - 1),
             _shapes(min_dims=1, min_side=1), sample_shapes=((3, 4), (5,)), dtypes=(F64, F32, I32, C128),
             differentiable=False)
      for p, fn, f in ((red.argmax_p, red.argmax, np.argmax), (red.argmin_p, red.argmin, np.argmin))),
    *(OpInfo(f"dot_general_{variant}", dot.dot_general_p, dot.dot_general, _dot_ref, _dot_sampler(variant),
             _TWO_D, sample_shapes=_TWO_D_SAMPLES, dtypes=(F64, F32, I32, C128), linear_argnums=((0,), (1,)),
             rtol=1e-10)
      for variant in DOT_VARIANTS),
]
# fmt: on
