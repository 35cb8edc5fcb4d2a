"""The roofline rules of funcgrad's primitives (JAX's ``jax.experimental.roofline.rooflines``):
every primitive of ``funcgrad.lax`` counts nothing unless a rule below says otherwise --
elementwise operations one FLOP per result element, ``dot_general`` and convolutions two per
multiply-add, reductions and scans their additions, gathers and scatters the bytes they touch,
collectives the bytes and hops of a ring (or torus) over the mesh axes, callbacks the bytes sent
to and from the host.

Layer: surface. Imports ``funcgrad.lax`` (the primitives) and ``roofline.py``.
"""

from __future__ import annotations

import itertools as it
from collections import defaultdict
from dataclasses import replace

import numpy as np

from funcgrad import lax
from funcgrad.experimental.roofline import roofline
from funcgrad.experimental.roofline.roofline import RooflineResult, RooflineShape
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.ir import ShapedArray

__all__: list[str] = []

_FMA_FLOPS_FACTOR = 2

# Every primitive of the catalog first counts nothing (JAX registers its lax modules so).
for _prim in vars(lax).values():
    if isinstance(_prim, Primitive):
        roofline.register_standard_roofline(_prim)


def _bytes(*shapes: RooflineShape) -> int:
    return sum(s.bytes for s in shapes)


def _per_axis(axes, ici_bytes, latency) -> RooflineResult:
    return RooflineResult(
        ici_bytes={a: int(ici_bytes) for a in axes}, ici_latency={a: int(latency) for a in axes}
    )


def _unary_p_roofline(ctx, *args, **kw) -> RooflineResult:
    (x,) = (RooflineShape.from_aval(aval) for aval in ctx.avals_in)
    out = RooflineShape.from_aval(ctx.avals_out[0])
    return RooflineResult(unfused_flops=x.size, unfused_hbm_bytes=_bytes(x, out))


for _prim in (
    lax.abs_p, lax.acos_p, lax.asin_p, lax.atan_p, lax.cbrt_p, lax.ceil_p, lax.conj_p, lax.cos_p,
    lax.cosh_p, lax.exp_p, lax.expm1_p, lax.floor_p, lax.imag_p, lax.integer_pow_p, lax.is_finite_p,
    lax.log_p, lax.log1p_p, lax.logistic_p, lax.neg_p, lax.not_p, lax.real_p, lax.round_p,
    lax.rsqrt_p, lax.sign_p, lax.sin_p, lax.sinh_p, lax.sqrt_p, lax.square_p, lax.tan_p,
    lax.bessel_i0e_p, lax.bessel_i1e_p, lax.digamma_p, lax.erf_inv_p, lax.erf_p, lax.erfc_p,
    lax.lgamma_p,
):  # fmt: skip
    roofline.register_roofline(_prim)(_unary_p_roofline)


def _binary_p_roofline(ctx, *args, **kw) -> RooflineResult:
    lhs, rhs = (RooflineShape.from_aval(aval) for aval in ctx.avals_in)
    broadcasted = [max(a, b) for a, b in it.zip_longest(lhs.shape, rhs.shape, fillvalue=1)]
    out = RooflineShape.from_aval(ctx.avals_out[0])
    return RooflineResult(
        unfused_flops=int(np.prod(broadcasted)),
        unfused_hbm_bytes=_bytes(lhs, rhs, out),
    )


for _prim in (
    lax.add_p, lax.sub_p, lax.mul_p, lax.div_p, lax.rem_p, lax.and_p, lax.or_p, lax.xor_p, lax.gt_p,
    lax.lt_p, lax.ge_p, lax.le_p, lax.eq_p, lax.ne_p, lax.min_p, lax.max_p,
):  # fmt: skip
    roofline.register_roofline(_prim)(_binary_p_roofline)


def _cumulative_p_roofline(ctx, *args, axis: int, **kw) -> RooflineResult:
    (x,) = (RooflineShape.from_aval(aval) for aval in ctx.avals_in)
    out = RooflineShape.from_aval(ctx.avals_out[0])
    return RooflineResult(
        unfused_flops=x.shape[axis],  # (JAX's count: the values along the one axis)
        unfused_hbm_bytes=_bytes(x, out),
    )


for _prim in (lax.cummax_p, lax.cummin_p, lax.cumprod_p, lax.cumsum_p):
    roofline.register_roofline(_prim)(_cumulative_p_roofline)


@roofline.register_roofline(lax.dot_general_p)
def _dot_general_roofline(ctx, *args, dimension_numbers, **kw) -> RooflineResult:
    lhs, rhs = (RooflineShape.from_aval(aval) for aval in ctx.avals_in)
    out = RooflineShape.from_aval(ctx.avals_out[0])
    (lhs_contract, _), (lhs_batch, _) = dimension_numbers
    flops = (
        _FMA_FLOPS_FACTOR
        * lhs.size
        * rhs.size
        / np.prod([lhs.shape[i] for i in lhs_contract])
        / np.prod([lhs.shape[i] for i in lhs_batch])
    )
    hbm_bytes = 0
    if not ctx.pin_lhs_in_vmem:
        hbm_bytes += lhs.bytes + out.bytes
    if not ctx.pin_rhs_in_vmem:
        hbm_bytes += rhs.bytes
    return RooflineResult(
        flops=int(flops), unfused_flops=int(flops), hbm_bytes=hbm_bytes, unfused_hbm_bytes=hbm_bytes
    )


def _valid_positions_one_dim(
    stride, base_dilation, window_dilation, kernel, size_in, size_out, padding
) -> int:
    """How many (output position, kernel position) pairs of one spatial dimension read an input
    element (not padding, not a hole of the input's dilation)."""
    low, high = padding
    # Two patterns with only N valid pairs among N^2 (JAX's shortcuts, same result as the loop).
    if (
        size_in == size_out == kernel == base_dilation
        and window_dilation == 1
        and max(1, size_in - 1) == stride
        and low == high == 0
    ):
        return size_in
    if (
        size_in == 1
        and kernel == size_out
        and window_dilation == base_dilation == stride == 1
        and low == high == size_out - 1
    ):
        return size_out
    count = 0
    for k in range(kernel):
        if stride == 1 and base_dilation == 1:
            base = low - k * window_dilation
            count += max(min(size_in + base, size_out) - max(0, base), 0)
            continue
        for o in range(size_out):
            undilated = o * stride - low + k * window_dilation
            i = int(undilated / base_dilation)
            if undilated == i * base_dilation and 0 <= i < size_in:
                count += 1
    return count


def _conv_flops(lhs, rhs, out, window_strides, padding, lhs_dilation, rhs_dilation, dnums, batch_group_count):
    positions = 1
    for d, (li, ri, oi) in enumerate(zip(dnums.lhs_spec[2:], dnums.rhs_spec[2:], dnums.out_spec[2:])):
        positions *= _valid_positions_one_dim(
            window_strides[d], lhs_dilation[d], rhs_dilation[d], rhs.shape[ri], lhs.shape[li], out.shape[oi],
            padding[d],
        )  # fmt: skip
    batch = lhs.shape[dnums.lhs_spec[0]]
    factor = rhs.shape[dnums.rhs_spec[1]] * out.shape[dnums.out_spec[1]] * (batch / batch_group_count)
    return int(factor * positions * _FMA_FLOPS_FACTOR)


@roofline.register_roofline(lax.conv_general_dilated_p)
def _conv_general_dilated_roofline(
    ctx,
    *args,
    window_strides,
    padding,
    lhs_dilation,
    rhs_dilation,
    dimension_numbers,
    batch_group_count,
    **kw,
) -> RooflineResult:
    lhs, rhs = (RooflineShape.from_aval(aval) for aval in ctx.avals_in)
    out = RooflineShape.from_aval(ctx.avals_out[0])
    return RooflineResult(
        unfused_flops=_conv_flops(
            lhs,
            rhs,
            out,
            window_strides,
            padding,
            lhs_dilation,
            rhs_dilation,
            dimension_numbers,
            batch_group_count,
        ),
        unfused_hbm_bytes=_bytes(lhs, rhs, out),
    )


def _axes(kw) -> tuple[str, ...]:
    axes = kw.get("axis_name", kw.get("axes"))
    return tuple(axes) if isinstance(axes, tuple | list) else (axes,)


def _mesh_shape(ctx) -> dict:
    if ctx.mesh is None:
        raise ValueError(f"roofline: {ctx.primitive} needs a mesh (roofline(f, mesh, in_specs, out_specs))")
    return dict(ctx.mesh.shape)


def _zeros_if_one_sized(ctx, axes) -> RooflineResult | None:
    mesh = _mesh_shape(ctx)
    if np.prod([mesh[a] for a in axes]) > 1:
        return None
    return RooflineResult(ici_bytes={a: 0 for a in axes}, ici_latency={a: 0 for a in axes})


def _ring_collective_roofline(
    ctx, *args, axes: tuple[str, ...], is_reduce: bool = True, **kw
) -> RooflineResult:
    zeros = _zeros_if_one_sized(ctx, axes)
    if zeros is not None:
        return zeros
    mesh = _mesh_shape(ctx)
    shard = RooflineShape.total_bytes(ctx.avals_in)
    if is_reduce:
        shard /= np.prod([mesh[a] for a in axes])
    # The slowest axis is the bottleneck; the data is split in phases, one per axis.
    ordered = sorted(axes, key=lambda a: mesh[a], reverse=True)
    shard //= len(ordered)
    ici_bytes = 0
    for a in ordered:
        ici_bytes += shard * (mesh[a] - 1)
        shard *= mesh[a]
    latency = mesh[ordered[0]] * len(ordered)
    return _per_axis(ordered, ici_bytes, latency)


roofline.register_roofline(lax.psum_scatter_p)(
    lambda ctx, *args, **kw: _ring_collective_roofline(ctx, *args, axes=_axes(kw))
)
roofline.register_roofline(lax.all_gather_p)(
    lambda ctx, *args, **kw: _ring_collective_roofline(ctx, *args, axes=_axes(kw), is_reduce=False)
)


def _scalar_collective_roofline(ctx, *args, **kw) -> RooflineResult:
    shapes = [RooflineShape.from_aval(aval) for aval in ctx.avals_in]
    ctx = replace(ctx, avals_in=[ShapedArray((1,), s.dtype) for s in shapes])
    return _ring_collective_roofline(ctx, *args, axes=_axes(kw), is_reduce=False)


roofline.register_roofline(lax.pmin_p)(_scalar_collective_roofline)
roofline.register_roofline(lax.pmax_p)(_scalar_collective_roofline)


@roofline.register_roofline(lax.psum_p)
def _psum_roofline(ctx, *args, **kw) -> RooflineResult:
    ring = _ring_collective_roofline(ctx, *args, axes=_axes(kw))  # a reduce-scatter, then a gather
    return RooflineResult(
        ici_bytes={k: v * 2 for k, v in ring.ici_bytes.items()},
        ici_latency={k: v * 2 for k, v in ring.ici_latency.items()},
    )


@roofline.register_roofline(lax.all_to_all_p)
def _all_to_all_roofline(ctx, *args, **kw) -> RooflineResult:
    axes = _axes(kw)
    zeros = _zeros_if_one_sized(ctx, axes)
    if zeros is not None:
        return zeros
    mesh = _mesh_shape(ctx)
    size = RooflineShape.total_bytes(ctx.avals_in) * np.prod([mesh[a] for a in axes])
    smallest = min(axes, key=lambda a: mesh[a])
    bisection = mesh[smallest] ** (len(axes) - 1)
    if mesh[smallest] > 2:
        bisection *= 2  # (wraparound links)
    ici_bytes = size / 2 / bisection  # half the data crosses the bisection, on average
    latency = sum(mesh[a] / 2 for a in axes)  # the most hops across the mesh
    return RooflineResult(
        ici_bytes={a: int(ici_bytes) for a in axes}, ici_latency={a: int(latency) for a in axes}
    )


@roofline.register_roofline(lax.ppermute_p)
def _ppermute_roofline(ctx, *args, perm, **kw) -> RooflineResult:
    axes = _axes(kw)
    zeros = _zeros_if_one_sized(ctx, axes)
    if zeros is not None:
        return zeros
    mesh = _mesh_shape(ctx)
    dims = [mesh.get(a, 1) for a in axes]
    shard = RooflineShape.total_bytes(ctx.avals_in)
    contention: dict = defaultdict(float)
    latency = 0
    for src, dst in perm:
        if src == dst:
            continue
        src_c = tuple(int(i) for i in np.unravel_index(src, dims))
        dst_c = tuple(int(i) for i in np.unravel_index(dst, dims))
        hops = 0
        for i, size in enumerate(dims):
            if src_c[i] == dst_c[i]:
                continue
            clockwise, counter = (dst_c[i] - src_c[i]) % size, (src_c[i] - dst_c[i]) % size
            step = 1 if clockwise <= counter else -1
            pos = src_c[i]
            while pos != dst_c[i]:  # each link on the way carries the shard once more
                here = src_c[:i] + (pos,) + src_c[i + 1 :]
                nxt = (pos + step) % size
                there = here[:i] + (nxt,) + here[i + 1 :]
                contention[tuple(sorted([here, there]))] += 1
                pos = nxt
            hops += min(clockwise, counter)
        latency = max(latency, hops)
    ici_bytes = shard * max(contention.values(), default=0)
    return RooflineResult(
        ici_bytes={a: int(ici_bytes) for a in axes}, ici_latency={a: int(latency) for a in axes}
    )


@roofline.register_roofline(lax.reduce_sum_p)
def _reduce_sum_p_roofline(ctx, *args, axes: tuple[int, ...], **kw) -> RooflineResult:
    (x,) = (RooflineShape.from_aval(aval) for aval in ctx.avals_in)
    domain = np.prod([x.shape[i] for i in axes])
    result_size = np.prod([x.shape[i] for i in set(range(len(x.shape))) - set(axes)])
    return RooflineResult(
        unfused_flops=int((domain - 1) * result_size),  # n - 1 additions per result element
        unfused_hbm_bytes=int(x.dtype.itemsize * (x.size + result_size)),  # (the result accumulates)
    )


@roofline.register_roofline(lax.select_n_p)
def _select_n_p_roofline(ctx, *args, **kw) -> RooflineResult:
    (x, *_) = (RooflineShape.from_aval(aval) for aval in ctx.avals_in)
    out = RooflineShape.from_aval(ctx.avals_out[0])
    return RooflineResult(unfused_flops=out.size, unfused_hbm_bytes=_bytes(x, out))


def _gather_flops(mode, indices_size: int, output_size: int) -> int:
    if mode == lax.GatherScatterMode.FILL_OR_DROP:
        # Four elementwise checks of the indices (upper bound, lower bound, and, a reduction per
        # window), then a selection over the output.
        return indices_size * 4 + output_size
    return 0


@roofline.register_roofline(lax.gather_p)
def _gather_roofline(ctx, *args, mode, **kw) -> RooflineResult:
    _, indices = (RooflineShape.from_aval(aval) for aval in ctx.avals_in)
    out = RooflineShape.from_aval(ctx.avals_out[0])
    # A copy the size of the result plus a read of the indices (not the whole operand).
    return RooflineResult(
        unfused_flops=_gather_flops(mode, indices.size, out.size),
        unfused_hbm_bytes=out.dtype.itemsize * out.size * 2 + indices.dtype.itemsize * indices.size,
    )


# The combining operation of each scatter, in FLOPs per update element (JAX counts its
# update_jaxpr's; funcgrad's scatters name their operation instead).
_SCATTER_FLOPS = {
    lax.scatter_p: 0,
    lax.scatter_add_p: 1,
    lax.scatter_mul_p: 1,
    lax.scatter_min_p: 1,
    lax.scatter_max_p: 1,
}


def _scatter_roofline(ctx, *args, **kw) -> RooflineResult:
    _, indices, updates = (RooflineShape.from_aval(aval) for aval in ctx.avals_in[:3])
    return RooflineResult(
        unfused_flops=_SCATTER_FLOPS[ctx.primitive] * updates.size,
        # The operand's, the result's and the updates' elements touched, and the indices.
        unfused_hbm_bytes=3 * updates.dtype.itemsize * updates.size + indices.dtype.itemsize * indices.size,
    )


for _prim in _SCATTER_FLOPS:
    roofline.register_roofline(_prim)(_scatter_roofline)


def _callback_with_output_roofline(ctx, *args, **kw) -> RooflineResult:
    # The bytes sent to the host and back; the callback's own work is not seen.
    return RooflineResult(
        unfused_hbm_bytes=RooflineShape.total_bytes(ctx.avals_in) + RooflineShape.total_bytes(ctx.avals_out)
    )


roofline.register_roofline(lax.pure_callback_p)(_callback_with_output_roofline)
roofline.register_roofline(lax.io_callback_p)(_callback_with_output_roofline)


@roofline.register_roofline(lax.debug_callback_p)
def _debug_callback_roofline(ctx, *args, **kw) -> RooflineResult:
    return RooflineResult(unfused_hbm_bytes=RooflineShape.total_bytes(ctx.avals_in))


del _prim
