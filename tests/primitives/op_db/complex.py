"""op_db entries: the complex family (primitives/complex.py): real, imag, conj, complex."""

from __future__ import annotations

import numpy as np
from funcgrad.primitives import complex as cx

from op_db._base import COMPLEX, FLOATS, OpInfo, Sample, _arr, _shapes


def _part(prim, ref):
    def sampler(shape, dtype, rng):
        return Sample((_arr(rng, shape, dtype),), {})

    return OpInfo(prim.name, prim, prim.bind, ref, sampler, _shapes(), dtypes=COMPLEX, linear_argnums=((0,),))


def _complex_sampler(scalar_second):
    def sampler(shape, dtype, rng):
        return Sample((_arr(rng, shape, dtype), _arr(rng, () if scalar_second else shape, dtype)), {})

    return sampler


def _complex_ref(x, y):
    return (x + 1j * y).astype(np.result_type(x, np.complex64))


OPS = [
    _part(cx.real_p, np.real),
    _part(cx.imag_p, np.imag),
    _part(cx.conj_p, np.conj),
    *(
        OpInfo(
            name,
            cx.complex_p,
            cx.complex_p.bind,
            _complex_ref,
            _complex_sampler(scalar),
            _shapes(),
            dtypes=FLOATS,
            linear_argnums=((0,), (1,), (0, 1)),
        )  # fmt: skip
        for name, scalar in (("complex", False), ("complex_scalar_imag", True))
    ),
]
