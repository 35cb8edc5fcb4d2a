"""Lowering rules of the sorting family (primitives/sorting.py): sort and the cumulative
reductions.

Layer: xla_bridge (compiler half). Imports the primitive catalog, numpy and
``xla_bridge.emitter``.

- ``sort`` is ``stablehlo.sort`` with a lexicographic comparator over the first ``num_keys``
  operands. Floats compare like NumPy: NaN sorts after everything (and ties with NaN), -0.0 ties
  with 0.0, so a stable sort keeps their order.
- ``cumsum``/``cumprod``/``cummax``/``cummin`` are a parallel prefix scan (the recursive
  odd/even associative scan): O(n log n) work and O(log n) depth, built from strided slices,
  pads and selects; for large float64 operands scanned along a short minor axis, JAX's own
  lowering (one ``reduce_window`` with an n-wide window, which XLA's CPU compiler rewrites into a
  blocked scan) is faster and is used instead, and for small operands, whose scan program
  compiles 3-5x slower (NOTE: [two lowerings of cumulative reductions]).
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives import sorting
from funcgrad.xla_bridge.emitter import (
    aval_type,
    i64_array,
    register,
    slice_attrs,
    tensor_type,
    widen_sub_byte,
    xla_dtype,
)
from funcgrad.xla_bridge.rules._complex_order import complex_pick
from funcgrad.xla_bridge.rules.windowed import _reduce_window

from funcgrad.kernel import dtypes as _fdt


@register(sorting.sort_p)
@widen_sub_byte  # XLA fails to sort 2-bit integers beside other operands
def _sort(ctx, *operands, dimension, is_stable, num_keys):
    fb = ctx.fb
    r = fb.region()
    args, pairs = [], []
    for a in ctx.avals_in:
        st = tensor_type((), xla_dtype(a.dtype))
        lhs, rhs = r.fresh(), r.fresh()
        args += [f"{lhs}: {st}", f"{rhs}: {st}"]
        pairs.append((lhs, rhs, xla_dtype(a.dtype)))
    sb = tensor_type((), np.bool_)

    def lt(x, y, dt):
        if dt.kind == "c":
            # Lexicographic, as NumPy sorts complex values: real parts first, then imaginary
            # parts, each with NaN largest (so R + nan j < nan + R j).
            part = np.dtype(np.float32 if dt == np.complex64 else np.float64)
            t_in, t_part = tensor_type((), dt), tensor_type((), part)
            xr, yr, xi, yi = (
                r.emit(f"stablehlo.{f} {v} : ({t_in}) -> {t_part}") for f in ("real", "imag") for v in (x, y)
            )
            real_less, real_greater, imag_less = lt(xr, yr, part), lt(yr, xr, part), lt(xi, yi, part)
            real_tie = r.emit(
                f"stablehlo.and {r.emit(f'stablehlo.not {real_less} : {sb}')}, "
                f"{r.emit(f'stablehlo.not {real_greater} : {sb}')} : {sb}"
            )
            return r.emit(
                f"stablehlo.or {real_less}, {r.emit(f'stablehlo.and {real_tie}, {imag_less} : {sb}')} : {sb}"
            )
        less = r.compare("LT", x, y, dt, ())
        if _fdt.kind(dt) in "fc":
            # NaN is the largest value: x < NaN for every non-NaN x.
            x_num = r.compare("EQ", x, x, dt, ())
            y_nan = r.compare("NE", y, y, dt, ())
            less = r.emit(f"stablehlo.or {less}, {r.emit(f'stablehlo.and {x_num}, {y_nan} : {sb}')} : {sb}")
        return less

    result = None
    for lhs, rhs, dt in reversed(pairs[:num_keys]):
        less = lt(lhs, rhs, dt)
        if result is None:
            result = less
        else:
            greater = lt(rhs, lhs, dt)
            not_less = r.emit(f"stablehlo.not {less} : {sb}")
            not_greater = r.emit(f"stablehlo.not {greater} : {sb}")
            tie = r.emit(f"stablehlo.and {not_less}, {not_greater} : {sb}")
            result = r.emit(f"stablehlo.or {less}, {r.emit(f'stablehlo.and {tie}, {result} : {sb}')} : {sb}")
    r.raw(f'"stablehlo.return"({result}) : ({sb}) -> ()')
    types = [aval_type(a) for a in ctx.avals_in]
    head = f'"stablehlo.sort"({", ".join(operands)}) ({{\n{fb.indent}  ^bb0({", ".join(args)}):\n'
    body = "\n".join(r.lines)
    attrs = f"dimension = {int(dimension)} : i64, is_stable = {'true' if is_stable else 'false'}"
    tail = f"\n{fb.indent}}}) {{{attrs}}} : ({', '.join(types)}) -> ({', '.join(types)})"
    outs = fb.emit(head + body + tail, nres=len(operands))
    return outs if isinstance(outs, list) else [outs]


# ----------------------------------------------------------------------------------------------
# Cumulative reductions: associative scan


class _Aval:
    def __init__(self, shape, dtype):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)


def _slice_axis(fb, x, shape, dtype, axis, start, stop, step):
    n = len(range(start, stop, step))
    out_shape = list(shape)
    out_shape[axis] = n
    starts = [0] * len(shape)
    limits = list(shape)
    strides = [1] * len(shape)
    starts[axis], limits[axis], strides[axis] = start, stop, step
    y = fb.generic(
        "stablehlo.slice",
        [x],
        [tensor_type(shape, dtype)],
        [tensor_type(out_shape, dtype)],
        slice_attrs(starts, limits, strides),
    )
    return y, tuple(out_shape)


def _pad_axis(fb, x, shape, dtype, axis, lo, hi, interior):
    zero = fb.const(0, dtype)
    cfg = [(0, 0, 0)] * len(shape)
    cfg[axis] = (lo, hi, interior)
    out_shape = list(shape)
    n = shape[axis]
    out_shape[axis] = lo + hi + n + max(n - 1, 0) * interior
    los, his, ints = zip(*cfg)
    y = fb.generic(
        "stablehlo.pad",
        [x, zero],
        [tensor_type(shape, dtype), tensor_type((), dtype)],
        [tensor_type(out_shape, dtype)],
        f"edge_padding_high = {i64_array(his)}, edge_padding_low = {i64_array(los)}, "
        f"interior_padding = {i64_array(ints)}",
    )
    return y, tuple(out_shape)


def _combine(fb, op, a, b, shape, dtype):
    # ``op``: a StableHLO binary op, or the direction of a lexicographic complex max/min.
    if op in ("GT", "LT"):
        return complex_pick(fb, op, a, b, _Aval(shape, dtype))
    return fb.emit(f"{op} {a}, {b} : {tensor_type(shape, dtype)}")


def _scan(fb, op, x, shape, dtype, axis):
    """Inclusive prefix scan of ``x`` along ``axis`` with the associative binary ``op``."""
    n = shape[axis]
    if n < 2:
        return x
    t = lambda s: tensor_type(s, dtype)  # noqa: E731
    evens, es = _slice_axis(fb, x, shape, dtype, axis, 0, n - 1, 2)
    odds, _ = _slice_axis(fb, x, shape, dtype, axis, 1, n, 2)
    pairs = _combine(fb, op, evens, odds, es, dtype)
    odd_scan = _scan(fb, op, pairs, es, dtype, axis)  # prefix results at odd positions
    m = es[axis]
    if n % 2 == 0:
        head, hs = _slice_axis(fb, odd_scan, es, dtype, axis, 0, m - 1, 1)
        rest, _ = _slice_axis(fb, x, shape, dtype, axis, 2, n, 2)
    else:
        head, hs = odd_scan, es
        rest, _ = _slice_axis(fb, x, shape, dtype, axis, 2, n, 2)
    first, fs = _slice_axis(fb, x, shape, dtype, axis, 0, 1, 1)
    if hs[axis] > 0:
        even_tail = _combine(fb, op, head, rest, hs, dtype)
        ev_shape = list(hs)
        ev_shape[axis] += 1
        even_scan = fb.generic(
            "stablehlo.concatenate",
            [first, even_tail],
            [t(fs), t(hs)],
            [t(ev_shape)],
            f"dimension = {axis} : i64",
        )
        ev_shape = tuple(ev_shape)
    else:
        even_scan, ev_shape = first, fs
    # Interleave: evens go to positions 0, 2, 4, ...; odds to 1, 3, 5, ...
    ev_pad, _ = _pad_axis(fb, even_scan, ev_shape, dtype, axis, 0, n - (2 * ev_shape[axis] - 1), 1)
    od_pad, _ = _pad_axis(fb, odd_scan, es, dtype, axis, 1, n - 2 * m, 1)
    iota = fb.emit(f"stablehlo.iota dim = {axis} : {tensor_type(shape, np.int32)}")
    two = fb.const(2, np.int32, shape)
    parity = fb.emit(f"stablehlo.remainder {iota}, {two} : {tensor_type(shape, np.int32)}")
    is_even = fb.compare("EQ", parity, fb.const(0, np.int32, shape), np.int32, shape)
    return fb.select(is_even, ev_pad, od_pad, shape, _Aval(shape, dtype))


_IDENTITY = {
    "stablehlo.add": lambda dtype: 0,
    "stablehlo.or": lambda dtype: False,
    "stablehlo.multiply": lambda dtype: 1,
    "stablehlo.and": lambda dtype: True,
    "stablehlo.maximum": lambda dtype: _fdt.extremum_identity(dtype, for_max=True),
    "stablehlo.minimum": lambda dtype: _fdt.extremum_identity(dtype, for_max=False),
}

# NOTE: [two lowerings of cumulative reductions]
# JAX lowers cumsum/cumprod/cummax/cummin to one ``reduce_window`` whose window spans the axis;
# XLA's CPU compiler rewrites that into a blocked scan. funcgrad's default is the parallel prefix
# scan (``_scan``), 1.5-8x faster than the window on 1-D and leading-axis scans, on float32 and
# on small arrays. The window wins on one kind of operand: 64-bit elements (float64, int64)
# summed or multiplied along the minor (last) axis, that axis 32-512 long, the operand past the
# caches (each of the prefix scan's log2(n) passes streams it). CPU time, one thread
# (``python bench/bench_cumulative.py``), window against scan: float64 (16392, 128) 4.5-5.2
# against 6.5-8.0 ms, (16392, 256) 10 against 22-24, (64, 256, 128) 4.2 against 7.0-7.5, int64
# (16392, 128) 3.8-4.5 against 6.3-6.6; even at (4096, 128) (4 MB); slower on axes of 4-16 or
# over 2000 (1.1-2.9x), on float32 at every shape measured, and for cummax/cummin (11.8 against
# 8.0 ms at float64 (16392, 128)). Where the window is used the values are JAX's bits.
# Small operands (at most 4096 elements, any real or boolean dtype, any axis, every op) take the
# window too: there both run in the same few microseconds, but the prefix scan's program (slices,
# pads and selects at every level) compiles 3-5x slower, and a program is compiled on its first
# call. CPU time, one thread, scan against window: compile 0.48 against 0.16 s for a float64
# cumsum of 1000, 0.35 against 0.09 s for a cumprod of (16, 128), 0.30 against 0.08 s for 128
# float32; runs 11.3 against 12.1, 12.2 against 12.8, 10.1 against 11.8 us. Past that the scan
# runs faster: 24 against 41 us at 10,000 float32, 33 against 182 us at (256, 256) along axis 0.
_FORCE = None  # benchmarks: "scan"/"window" force one lowering; None chooses by cost
_WINDOW_MAX_SMALL = 4096  # elements: at most this many, the window (compile time, see the NOTE)
_WINDOW_MIN_BYTES = 6_000_000
_WINDOW_AXIS = (32, 512)


def _use_window(op, shape, dtype, axis) -> bool:
    """Whether the ``reduce_window`` lowering beats the prefix scan for this operand (see the
    NOTE above); complex max/min (lexicographic) have no monoid region and always scan."""
    if op not in _IDENTITY:
        return False
    if _FORCE is not None:
        return _FORCE == "window"
    size = int(np.prod(shape, dtype=np.int64))
    if 0 < size <= _WINDOW_MAX_SMALL and _fdt.kind(dtype) in "biuf":  # (bfloat16 too: JAX's bits)
        return True
    if op not in ("stablehlo.add", "stablehlo.multiply"):  # max/min: 11.8 against 8.0 ms
        return False
    n = shape[axis]
    return (
        axis == len(shape) - 1
        and dtype.itemsize == 8
        and dtype.kind in "fiu"
        and _WINDOW_AXIS[0] <= n <= _WINDOW_AXIS[1]
        and size * 8 >= _WINDOW_MIN_BYTES
    )


def _window_scan(fb, op, x, shape, dtype, axis, reverse=False):
    """Inclusive prefix scan as JAX lowers it: one ``reduce_window`` whose window spans the
    whole axis, padded by n - 1 identities in front (behind for a ``reverse`` scan; XLA's CPU
    compiler rewrites it into a blocked scan)."""
    n = shape[axis]
    init = fb.const(_IDENTITY[op](dtype), dtype)
    t = tensor_type((), dtype)

    def body(r, accs, xs):
        return [r.emit(f"{op} {accs[0]}, {xs[0]} : {t}")]

    rank = len(shape)
    window = [1] * rank
    window[axis] = n
    padding = [(0, 0)] * rank
    padding[axis] = (0, n - 1) if reverse else (n - 1, 0)
    params = dict(
        window_dimensions=window,
        window_strides=[1] * rank,
        padding=padding,
        base_dilation=[1] * rank,
        window_dilation=[1] * rank,
    )
    return _reduce_window(fb, [x], [init], [dtype], shape, shape, body, params)[0]


def _cumulative_rule(op, bool_op):
    def rule(ctx, x, *, axis, reverse):
        fb = ctx.fb
        a = ctx.avals_in[0]
        dtype = xla_dtype(a.dtype)
        shape = tuple(a.shape)
        this_op = bool_op if dtype == np.bool_ else op
        if dtype.kind == "c" and this_op in ("stablehlo.maximum", "stablehlo.minimum"):
            this_op = "GT" if this_op == "stablehlo.maximum" else "LT"  # lexicographic (NumPy's order)
        if _use_window(this_op, shape, dtype, axis):
            # (JAX's: a reverse scan pads after the axis, no reversals, so XLA's blocked scan adds
            # in JAX's order: a reversed forward scan rounded differently, 22 of 51 float16 sums)
            return _window_scan(fb, this_op, x, shape, dtype, axis, reverse)
        rev = f"dimensions = {i64_array([axis])}"
        if reverse:
            x = fb.generic("stablehlo.reverse", [x], [aval_type(a)], [aval_type(a)], rev)
        y = _scan(fb, this_op, x, shape, dtype, axis)
        if reverse:
            y = fb.generic("stablehlo.reverse", [y], [aval_type(a)], [aval_type(a)], rev)
        return y

    return rule


register(sorting.cumsum_p)(_cumulative_rule("stablehlo.add", "stablehlo.or"))
register(sorting.cumprod_p)(_cumulative_rule("stablehlo.multiply", "stablehlo.and"))
register(sorting.cummax_p)(_cumulative_rule("stablehlo.maximum", "stablehlo.or"))
register(sorting.cummin_p)(_cumulative_rule("stablehlo.minimum", "stablehlo.and"))
