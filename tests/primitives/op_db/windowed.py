"""op_db entries: the windowed reductions (reduce_window_sum/max/min through ``lax.reduce_window``)
and the pooling-gradient primitives select_and_gather_add / select_and_scatter_add.

Configurations cover 1-D to 3-D operands (NHWC-like pooling windows with unit batch/feature
windows included), strides, 'SAME'/'VALID'/explicit padding, base and window dilation. The
generic ``reduce_window`` primitive carries a jaxpr and is tested in tests/surface/lax/test_windowed.py. The
references loop over window offsets (or over windows) on an explicitly padded and dilated copy.
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives import windowed as wd
from hypothesis import strategies as st

from funcgrad import lax
from op_db._base import F32, F64, FLOATS, I32, OpInfo, Sample, _arr, _distinct

# (operand shape, window, strides, padding, base_dilation, window_dilation)
CONFIGS = (
    ((7,), (3,), (1,), "VALID", (1,), (1,)),
    ((6, 5), (2, 3), (2, 1), "SAME", (1, 1), (1, 1)),
    ((1, 5, 6, 2), (1, 2, 2, 1), (1, 1, 2, 1), "VALID", (1, 1, 1, 1), (1, 1, 1, 1)),
    ((4, 5), (2, 2), (1, 2), ((1, 0), (0, 1)), (2, 1), (1, 1)),
    ((6, 7), (2, 3), (2, 1), ((0, 1), (1, 1)), (1, 1), (2, 2)),
    ((2, 4, 3, 3), (1, 2, 2, 2), (1, 1, 1, 2), "SAME", (1, 1, 1, 1), (1, 1, 1, 1)),
    ((3, 4, 5), (2, 2, 2), (1, 2, 1), ((0, 0), (1, 0), (0, -1)), (1, 1, 1), (1, 2, 1)),
)
# Configurations whose every window overlaps the operand (max/min pooling stays finite).
_FINITE = (CONFIGS[0], CONFIGS[2], CONFIGS[4], CONFIGS[6])
# CONFIGS[4] and CONFIGS[6] without their window dilation: max/min pooling's VJP refuses a window
# dilation, as JAX's transpose of select_and_gather_add does, so the derivative checks of the
# selections use these (their values are checked on every configuration).
_UNDILATED = tuple((*c[:5], (1,) * len(c[0])) for c in (CONFIGS[4], CONFIGS[6]))


def _explicit(config):
    shape, window, strides, padding, base, wdil = config
    if not isinstance(padding, str):
        return padding
    dilated = [(n - 1) * b + 1 for n, b in zip(shape, base)]
    eff = [(w - 1) * d + 1 for w, d in zip(window, wdil)]
    if padding == "VALID":
        return ((0, 0),) * len(shape)
    pads = []
    for n, w, s in zip(dilated, eff, strides):
        total = max((-(-n // s) - 1) * s + w - n, 0)
        pads.append((total // 2, total - total // 2))
    return tuple(pads)


def _params(config):
    _, window, strides, padding, base, wdil = config
    return dict(
        window_dimensions=window,
        window_strides=strides,
        padding=padding,
        base_dilation=base,
        window_dilation=wdil,
    )


def _canonical(config):
    return wd.window_params(len(config[0]), config[1], config[2], _explicit(config), config[4], config[5])


def _padded(x, fill, padding, base_dilation):
    dil = [(n - 1) * b + 1 if n else 0 for n, b in zip(x.shape, base_dilation)]
    out = np.full(dil, fill, x.dtype)
    out[tuple(slice(None, None, b) for b in base_dilation)] = x
    out = np.pad(out, [(max(lo, 0), max(hi, 0)) for lo, hi in padding], constant_values=fill)
    return out[tuple(slice(max(-lo, 0), out.shape[i] - max(-hi, 0)) for i, (lo, hi) in enumerate(padding))]


def _windows_ref(x, fill, window_dimensions, window_strides, padding, base_dilation, window_dilation):
    """A list over window offsets of the strided slice each offset contributes, and the out shape."""
    xp = _padded(x, fill, padding, base_dilation)
    eff = [(w - 1) * d + 1 for w, d in zip(window_dimensions, window_dilation)]
    out = [max((p - e) // s + 1, 0) for p, e, s in zip(xp.shape, eff, window_strides)]
    slices = []
    for k in np.ndindex(*window_dimensions):
        sl = tuple(
            slice(ki * d, ki * d + (n - 1) * s + 1, s)
            for ki, d, n, s in zip(k, window_dilation, out, window_strides)
        )
        slices.append(xp[sl])
    return slices, out


def _monoid_ref(op, fill_of):
    def ref(x, init_value, **params):
        config = (x.shape, params["window_dimensions"], params["window_strides"], params["padding"],
                  params["base_dilation"], params["window_dilation"])  # fmt: skip
        canon = _canonical(config)
        fill = fill_of(x.dtype)
        slices, out = _windows_ref(x, fill, **canon)
        acc = np.full(out, fill, x.dtype)
        for s in slices:
            acc = op(acc, s)
        return acc

    return ref


def _ident(kind):
    return lambda dtype: wd._identity(kind, dtype)


def _monoid_sampler(init_of, gen):
    def sampler(config, dtype, rng):
        # init_value is a static Python scalar (the identity), so every lane shares the params.
        params = dict(init_value=init_of(np.dtype(dtype)), **_params(config))
        return Sample((gen(rng, config[0], dtype),), params)

    return sampler


def _reduce_window_op(computation):
    def op(x, *, init_value, **params):
        return lax.reduce_window(x, init_value, computation, **params)

    return op


def _init(kind):
    def init_of(dtype):
        # (a scalar of the operand's dtype: JAX checks the identity in the init's own type, so a
        # Python int32 minimum is int64's ordinary value in 64-bit mode, and a general reduction)
        return np.dtype(dtype).type(0 if kind == "sum" else wd._identity(kind, dtype))

    return init_of


def _select_ref(x, select, canon):
    """Per window: the padded-operand position (tuple of arrays) of the first selected element."""
    fill = wd._identity(select, x.dtype)
    xp = _padded(x, fill, canon["padding"], canon["base_dilation"])
    slices, out = _windows_ref(x, fill, **canon)
    offsets = list(np.ndindex(*canon["window_dimensions"]))
    best = np.full(out, fill, x.dtype)
    best_k = np.zeros(out, np.int64)
    better = np.greater if select == "ge" else np.less
    for k, s in enumerate(slices):
        take = better(s, best) | (k == 0)
        best = np.where(take, s, best)
        best_k = np.where(take, k, best_k)
    return xp.shape, out, offsets, best_k


def _gather_ref(t, x, *, select, **canon):
    slices, out = _windows_ref(t, 0, **canon)
    _, _, _, best_k = _select_ref(x, select, canon)
    result = np.zeros(out, t.dtype)
    for k, s in enumerate(slices):
        result = np.where(best_k == k, s, result)
    return result


def _scatter_ref(s, x, *, select, window_dimensions, window_strides, padding, window_dilation):
    ones = (1,) * x.ndim
    canon = dict(window_dimensions=window_dimensions, window_strides=window_strides, padding=padding,
                 base_dilation=ones, window_dilation=window_dilation)  # fmt: skip
    padded_shape, out, offsets, best_k = _select_ref(x, select, canon)
    acc = np.zeros(padded_shape, s.dtype)
    for o in np.ndindex(*out):
        off = offsets[best_k[o]]
        pos = tuple(oi * st + ki * d for oi, ki, st, d in zip(o, off, window_strides, window_dilation))
        acc[pos] += s[o]
    return _padded(acc, 0, [(-lo, -hi) for lo, hi in padding], ones)


def _pool_sampler(config, dtype, rng, with_dilation=True):
    canon = _canonical(config)
    x = _distinct(rng, config[0], dtype)
    out = wd.reduce_window_shape_tuple(config[0], *canon.values())
    return canon, x, out


def _gather_sampler(select):
    def sampler(config, dtype, rng):
        canon, x, _ = _pool_sampler(config, dtype, rng)
        return Sample((_arr(rng, config[0], dtype), x), dict(select=select, **canon))

    return sampler


def _scatter_sampler(select):
    def sampler(config, dtype, rng):
        canon = _canonical(config)
        canon["base_dilation"] = (1,) * len(config[0])
        x = _distinct(rng, config[0], dtype)
        out = wd.reduce_window_shape_tuple(config[0], *canon.values())
        del canon["base_dilation"]
        return Sample((_arr(rng, out, dtype), x), dict(select=select, **canon))

    return sampler


def _gather_op(t, x, **params):
    return wd.select_and_gather_add_p.bind(t, x, **params)


def _scatter_op(s, x, **params):
    return wd.select_and_scatter_add_p.bind(s, x, **params)


_GEN = lambda rng, shape, dtype: _arr(rng, shape, dtype)  # noqa: E731
_DISTINCT = _distinct
_GATHER_SAMPLES = (CONFIGS[3], *_UNDILATED)
_SCATTER_SAMPLES = (CONFIGS[1], *_UNDILATED)

# fmt: off
OPS = [
    OpInfo("reduce_window_sum", wd.reduce_window_sum_p, _reduce_window_op(lax.add),
           _monoid_ref(np.add, lambda d: 0),
           _monoid_sampler(_init("sum"), _GEN), st.sampled_from(CONFIGS),
           sample_shapes=(CONFIGS[1], CONFIGS[3], CONFIGS[6]), dtypes=(F64, F32, I32),
           linear_argnums=((0,),)),
    OpInfo("reduce_window_max", wd.reduce_window_max_p, _reduce_window_op(lax.max),
           _monoid_ref(np.maximum, _ident("ge")),
           _monoid_sampler(_init("ge"), _DISTINCT), st.sampled_from(CONFIGS),
           sample_shapes=(CONFIGS[2], *_UNDILATED),
           dtypes=(F64, F32, I32)),
    OpInfo("reduce_window_min", wd.reduce_window_min_p, _reduce_window_op(lax.min),
           _monoid_ref(np.minimum, _ident("le")),
           _monoid_sampler(_init("le"), _DISTINCT), st.sampled_from(CONFIGS),
           sample_shapes=(CONFIGS[2], *_UNDILATED),
           dtypes=(F64, F32, I32)),
    *(OpInfo(f"select_and_gather_add_{sel}", wd.select_and_gather_add_p, _gather_op, _gather_ref,
             _gather_sampler(sel), st.sampled_from(CONFIGS), sample_shapes=_GATHER_SAMPLES,
             dtypes=FLOATS, diff_argnums=(0,), linear_argnums=((0,),))
      for sel in ("ge", "le")),
    *(OpInfo(f"select_and_scatter_add_{sel}", wd.select_and_scatter_add_p, _scatter_op, _scatter_ref,
             _scatter_sampler(sel), st.sampled_from(CONFIGS), sample_shapes=_SCATTER_SAMPLES,
             dtypes=FLOATS, diff_argnums=(0,), linear_argnums=((0,),))
      for sel in ("ge", "le")),
]
# fmt: on
