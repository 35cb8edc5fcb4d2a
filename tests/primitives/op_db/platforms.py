"""op_db entry: ``platform_index`` (primitives/control_flow.py, NOTE: [platform-dependent conds]).

It has no operands: the entry adds the index it gives on this machine (a CPU) to an array operand,
so the generic checks see it bound eagerly, under ``vmap`` (no batched operand: the index stays
unbatched), compiled (the lowering picks the CPU's place in ``platforms``), and with a zero tangent
under derivatives. ``lax.platform_dependent``'s branches and exports are tested against jax in
tests/surface/lax/ and tests/surface/export/.
"""

from __future__ import annotations

from funcgrad.primitives.control_flow import platform_index_p

from op_db._base import F64, OpInfo, Sample, _arr, _shapes

_PLATFORMS = (("cuda", "rocm"), ("cpu",))  # (this machine's platform is the second group)


def _sampler(shape, dtype, rng):
    return Sample((_arr(rng, shape, dtype),), {})


def _plus_index(x):
    return x + platform_index_p.bind(platforms=_PLATFORMS).astype(x.dtype)


OPS = [
    OpInfo("platform_index", platform_index_p, _plus_index, lambda x: x + 1, _sampler, shapes=_shapes(),
           dtypes=(F64,)),
]  # fmt: skip
