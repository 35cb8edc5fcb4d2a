"""op_db entries: conv_general_dilated (through ``funcgrad.lax.conv_general_dilated``).

Each configuration is a hashable tuple (the ``shape`` the sampler receives) covering 1-D to 3-D
convolutions, NCHW/NHWC/odd layouts, strides, every padding mode and explicit (also negative)
padding, lhs and rhs dilation, feature groups and batch groups. The reference is written
independently of the impl: dilation and padding by assignment, then a sum over kernel offsets of
strided slices times kernel entries (a loop over offsets and groups, not an im2col).
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives import conv
from hypothesis import strategies as st

from funcgrad import lax
from op_db._base import FLOATS, OpInfo, Sample, _arr

# (lhs shape, rhs shape, strides, padding, lhs_dilation, rhs_dilation, layout, fgc, bgc)
CONFIGS = (
    ((2, 3, 7), (4, 3, 3), (1,), "VALID", (1,), (1,), ("NCH", "OIH", "NCH"), 1, 1),
    ((2, 6, 3), (3, 3, 4), (2,), "SAME", (1,), (2,), ("NHC", "HIO", "NHC"), 1, 1),
    ((1, 5, 6, 2), (3, 2, 2, 4), (2, 1), "SAME_LOWER", (1, 1), (1, 1), ("NHWC", "HWIO", "NHWC"), 1, 1),
    ((2, 2, 5, 4), (3, 2, 3, 2), (1, 2), ((1, 2), (0, -1)), (2, 1), (1, 2), ("NCHW", "OIHW", "NCHW"), 1, 1),
    ((2, 4, 4, 4), (4, 2, 2, 2), (1, 1), "VALID", (1, 1), (1, 1), ("NHWC", "OIHW", "NCHW"), 2, 1),
    ((4, 3, 5), (6, 3, 2), (1,), ((1, 0),), (1,), (1,), ("NCH", "OIH", "NCH"), 1, 2),
    ((1, 2, 3, 4, 3), (2, 2, 2, 2, 2), (1, 2, 1), "SAME", (1, 1, 1), (1, 1, 2), ("NCHWD", "OIHWD", "NCHWD"), 1, 1),  # noqa: E501
    ((3, 6, 5), (6, 1, 3), (2,), ((2, 1),), (1,), (1,), ("NCH", "OIH", "NCH"), 6, 1),
    ((2, 3), (4, 3), (), (), (), (), ("NC", "OI", "NC"), 1, 1),
)  # fmt: skip


def _params(config):
    _, _, strides, padding, lhs_dil, rhs_dil, layout, fgc, bgc = config
    return dict(
        window_strides=strides,
        padding=padding,
        lhs_dilation=lhs_dil,
        rhs_dilation=rhs_dil,
        dimension_numbers=layout,
        feature_group_count=fgc,
        batch_group_count=bgc,
    )


def _sampler(config, dtype, rng):
    lhs_shape, rhs_shape = config[0], config[1]
    return Sample((_arr(rng, lhs_shape, dtype), _arr(rng, rhs_shape, dtype)), _params(config))


def _perm(spec, first, second, spatial_order):
    return [spec.index(first), spec.index(second), *(spec.index(c) for c in spatial_order)]


def _pads(in_sp, k_sp, strides, padding):
    if not isinstance(padding, str):
        return list(padding)
    if padding == "VALID":
        return [(0, 0)] * len(in_sp)
    pads = []
    for n, k, s in zip(in_sp, k_sp, strides):
        out = -(-n // s)
        total = max((out - 1) * s + k - n, 0)
        lo = total // 2 if padding == "SAME" else total - total // 2
        pads.append((lo, total - lo))
    return pads


def conv_ref(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
             feature_group_count, batch_group_count):  # fmt: skip
    lspec, rspec, ospec = dimension_numbers
    spatial = [c for c in rspec if c not in "OI"]
    x = np.transpose(lhs, _perm(lspec, "N", "C", spatial)).astype(np.float64)
    w = np.transpose(rhs, _perm(rspec, "O", "I", spatial)).astype(np.float64)
    nsp = x.ndim - 2
    # lhs dilation by assignment, then padding (negative entries crop)
    dil_sp = [(n - 1) * d + 1 if n else 0 for n, d in zip(x.shape[2:], lhs_dilation)]
    xd = np.zeros(x.shape[:2] + tuple(dil_sp))
    xd[(slice(None), slice(None), *(slice(None, None, d) for d in lhs_dilation))] = x
    k_eff = [(k - 1) * d + 1 for k, d in zip(w.shape[2:], rhs_dilation)]
    pads = _pads(dil_sp, k_eff, window_strides, padding)
    xp = np.pad(xd, [(0, 0), (0, 0), *[(max(lo, 0), max(hi, 0)) for lo, hi in pads]])
    crop = [slice(max(-lo, 0), xp.shape[2 + i] - max(-hi, 0)) for i, (lo, hi) in enumerate(pads)]
    xp = xp[(slice(None), slice(None), *crop)]
    out_sp = [(p - k) // s + 1 for p, k, s in zip(xp.shape[2:], k_eff, window_strides)]
    N, C, O = x.shape[0], x.shape[1], w.shape[0]
    G = max(feature_group_count, batch_group_count)
    out = np.zeros((N // batch_group_count, O, *out_sp))
    for g in range(G):
        o_sl = slice(g * O // G, (g + 1) * O // G)
        if batch_group_count > 1:
            xs = xp[g * (N // G) : (g + 1) * (N // G)]
        else:
            xs = xp[:, g * (C // G) : (g + 1) * (C // G)]
        for k in np.ndindex(*w.shape[2:]):
            window = tuple(
                slice(ki * rd, ki * rd + (n - 1) * s + 1, s)
                for ki, rd, n, s in zip(k, rhs_dilation, out_sp, window_strides)
            )
            patch = xs[(slice(None), slice(None), *window)]  # (N', C', out...)
            out[:, o_sl] += np.einsum("nc...,oc->no...", patch, w[(o_sl, slice(None), *k)])
    del nsp
    oshape_perm = _perm(ospec, "N", "C", spatial)
    return np.transpose(out, np.argsort(oshape_perm)).astype(lhs.dtype)


# fmt: off
OPS = [
    OpInfo("conv_general_dilated", conv.conv_general_dilated_p, lax.conv_general_dilated, conv_ref, _sampler,
           st.sampled_from(CONFIGS), sample_shapes=(CONFIGS[3], CONFIGS[4], CONFIGS[5], CONFIGS[6]),
           dtypes=FLOATS, linear_argnums=((0,), (1,)), rtol=1e-10, atol=1e-10),
]
# fmt: on
