"""GradBench eval ``hello``: ``square`` and its derivative ``double`` (benchmark code)."""

import funcgrad
import funcgrad.numpy as jnp
from funcgrad_tool.runs import evaluation, to_float


def _square(x):
    return x * x


_square_jit = funcgrad.jit(_square)
_double_jit = funcgrad.jit(funcgrad.grad(_square))


def _pre(x):
    return (jnp.asarray(x, dtype=jnp.float64),)


@evaluation(pre=_pre, post=to_float)
def square(x):
    return _square_jit(x)


@evaluation(pre=_pre, post=to_float)
def double(x):
    return _double_jit(x)
