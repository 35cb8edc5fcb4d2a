"""op_db entries: the fft family (primitives/fft.py), each transform over 1 to 3 trailing axes."""

from __future__ import annotations

import numpy as np
from funcgrad.primitives import fft as fft_family
from funcgrad.primitives.fft import FftType
from hypothesis import strategies as st

from op_db._base import COMPLEX, FLOATS, OpInfo, Sample, _arr


def _ref(x, fft_type, fft_lengths):
    axes = tuple(range(x.ndim - len(fft_lengths), x.ndim))
    if fft_type == FftType.FFT:
        return np.fft.fftn(x, axes=axes)
    if fft_type == FftType.IFFT:
        return np.fft.ifftn(x, axes=axes)
    if fft_type == FftType.RFFT:
        return np.fft.rfftn(x, s=fft_lengths, axes=axes)
    return np.fft.irfftn(x, s=fft_lengths, axes=axes)


def _sampler(fft_type, k):
    # ``shape`` is (batch dims..., transformed lengths...): the last k are the fft_lengths.
    def sampler(shape, dtype, rng):
        lengths = tuple(shape[len(shape) - k :])
        operand = list(shape)
        if fft_type == FftType.IRFFT:
            operand[-1] = lengths[-1] // 2 + 1
        return Sample((_arr(rng, tuple(operand), dtype),), {"fft_type": fft_type, "fft_lengths": lengths})

    return sampler


def _shapes_for(k):
    return st.tuples(
        st.lists(st.integers(1, 3), max_size=2).map(tuple),
        st.lists(st.integers(1, 5), min_size=k, max_size=k),
    ).map(lambda pair: (*pair[0], *pair[1]))


_SAMPLES = {1: ((3, 8), (7,)), 2: ((2, 4, 5), (3, 4)), 3: ((2, 3, 4), (2, 2, 3, 5))}

OPS = [
    OpInfo(
        f"fft_{fft_type.name.lower()}_{k}d",
        fft_family.fft_p,
        lambda x, **p: fft_family.fft_p.bind(x, **p),
        _ref,
        _sampler(fft_type, k),
        _shapes_for(k),
        sample_shapes=_SAMPLES[k],
        dtypes=FLOATS if fft_type == FftType.RFFT else COMPLEX,
        linear_argnums=((0,),),
        rtol=1e-10,
        atol=1e-10,
    )  # fmt: skip
    for fft_type in FftType
    for k in (1, 2, 3)
]
