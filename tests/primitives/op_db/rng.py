"""op_db entries: XLA's generators ``rng_bit_generator`` (against ``jax.lax.rng_bit_generator``
as the oracle, imported inside the reference: the library never imports jax) and
``iota_2x32_shape`` (the flat index of every element as two uint32 words, against NumPy's
uint64 arange) and ``rng_uniform`` (random on every call, so its entry checks the property that
holds for every draw: each value lies in ``[a, b)``).
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives import rng

from funcgrad import lax
from funcgrad import numpy as fnp
from op_db._base import F32, F64, I32, OpInfo, Sample, _shapes

U8, U16, U32, U64 = (np.dtype(d) for d in ("uint8", "uint16", "uint32", "uint64"))


def _bits_ref(key, *, shape, dtype, algorithm):
    import jax  # the oracle, in the tests only

    jax.config.update("jax_enable_x64", True)

    out = jax.lax.rng_bit_generator(key, shape, dtype, jax.lax.RandomAlgorithm(algorithm))
    return tuple(np.asarray(o) for o in out)


def _iota_2x32(x):
    # (the operand gives only the shape: the primitive takes none; its 2**32-element use is
    # tested in tests/surface/test_random.py)
    return rng.iota_2x32_shape_p.bind(shape=tuple(x.shape))


def _iota_2x32_ref(x):
    counts = np.arange(x.size, dtype=np.uint64).reshape(x.shape)
    return [(counts >> np.uint64(32)).astype(np.uint32), counts.astype(np.uint32)]


def _in_range(a, b, *, shape):
    x = lax.rng_uniform(a, b, shape)
    return fnp.logical_and(x >= a, x < b)


def _uniform_sample(shape, dtype, rand):
    lo = np.asarray(rand.uniform(-3, 3) if dtype.kind == "f" else rand.integers(-3, 3), dtype)
    return Sample((lo, np.asarray(lo + 4, dtype)), dict(shape=tuple(shape)))


# fmt: off
OPS = [
    *(
        OpInfo(f"rng_bit_generator_{name}", rng.rng_bit_generator_p,
               lambda key, **p: lax.rng_bit_generator(key, **p), _bits_ref,
               lambda shape, dtype, rand, alg=alg: Sample(
                   (rand.integers(0, 2**32, (4,), dtype=np.uint64).astype(np.uint32),),
                   dict(shape=tuple(shape), dtype=dtype, algorithm=alg)),
               _shapes(max_dims=2), sample_shapes=((3, 4), ()), dtypes=(U32, U8, U16, U64),
               differentiable=False, rtol=0, atol=0, vmap_is_loop=False)
        for name, alg in (("default", 0), ("threefry", 1), ("philox", 2))
    ),
    OpInfo("iota_2x32_shape", rng.iota_2x32_shape_p, _iota_2x32, _iota_2x32_ref,
           lambda shape, dtype, rand: Sample((np.zeros(shape, dtype),), {}), _shapes(max_dims=3),
           sample_shapes=((3, 4), ()), dtypes=(F64,), differentiable=False, rtol=0, atol=0),
    OpInfo("rng_uniform", rng.rng_uniform_p, _in_range, lambda a, b, *, shape: np.ones(shape, bool),
           _uniform_sample, _shapes(max_dims=2), sample_shapes=((3, 4), ()), dtypes=(F64, F32, I32),
           differentiable=False),
]
# fmt: on
