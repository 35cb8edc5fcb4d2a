"""op_db entries: the runtime check (primitives/checks.py).

``check`` has no results; its entry checks that binding it (eagerly, batched, compiled as a
``debug_check``, which compiles to nothing) works and that it produces no tangents. A failing check
and the functionalization error are tested in tests/surface/experimental/test_checkify.py.
"""

from __future__ import annotations

from funcgrad.primitives import elementwise as ew
from funcgrad.primitives.checks import check_p

from funcgrad.kernel import tree_util as tu
from op_db._base import F64, I32, OpInfo, Sample, _arr, _shapes

_TREE = tu.tree_structure(((0,), {}))


def _sampler(shape, dtype, rng):
    return Sample(
        (_arr(rng, shape, dtype),), {"msg": "x: {}", "fmt_tree": _TREE, "debug": True, "batch_ndim": 0}
    )


def _check(x, **p):
    # ``x == x`` (true everywhere: the samples have no NaN) as the predicate, ``x`` as the payload.
    return check_p.bind(ew.eq_p.bind(x, x), x, **p)


OPS = [
    OpInfo("check", check_p, _check, lambda x, **p: [], _sampler, shapes=_shapes(), dtypes=(F64, I32),
           differentiable=False),
]  # fmt: skip
