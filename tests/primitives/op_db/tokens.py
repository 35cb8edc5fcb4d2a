"""op_db entries: the token primitives (primitives/tokens.py).

A token is no array: each entry makes tokens next to an array operand and returns no array
results, so the generic checks see that binding them (eagerly, under ``vmap``, compiled) works and
that they produce no tangents. Their types, printing, lowering, jit arguments and results and
errors are tested against jax in tests/surface/lax/test_tokens.py.
"""

from __future__ import annotations

from funcgrad.primitives.tokens import after_all_p, create_token_p

from op_db._base import F64, I32, OpInfo, Sample, _arr, _shapes


def _sampler(shape, dtype, rng):
    return Sample((_arr(rng, shape, dtype),), {})


def _create(x):
    create_token_p.bind()
    return []


def _merge(x):
    after_all_p.bind(create_token_p.bind(), create_token_p.bind())
    return []


OPS = [
    OpInfo("create_token", create_token_p, _create, lambda x: [], _sampler, shapes=_shapes(),
           dtypes=(F64, I32), differentiable=False),
    OpInfo("after_all", after_all_p, _merge, lambda x: [], _sampler, shapes=_shapes(),
           dtypes=(F64, I32), differentiable=False),
]  # fmt: skip
