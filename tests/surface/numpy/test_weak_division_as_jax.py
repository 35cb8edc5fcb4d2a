"""Division-like functions of weakly typed operands (Python scalars, ``jnp.asarray(7)``) keep the
weak type, as JAX's (jax 0.10.2 is the oracle): floor_divide, remainder, divmod, lcm -- eagerly
and under jit -- with JAX's values; lcm/gcd of floats and a ufunc's reduce over an array of axes
raise JAX's ValueError.
"""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp

jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
import jax.numpy as jnp  # noqa: E402

jax.config.update("jax_enable_x64", True)  # (funcgrad's default mode)

CASES = [
    (name, x, y)
    for name in ("floor_divide", "remainder", "divmod", "lcm", "fmod")
    for x, y in ((7, 2), (-7, 3), (7.5, 2.0), (-7.0, 2.0), (12, 18))
    if not (name == "lcm" and isinstance(x, float))
]


@pytest.mark.parametrize("name,x,y", CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in CASES])
def test_weak_types_as_jax(name, x, y):
    def run(lib, np_, jit):
        f = getattr(np_, name)
        out = (lib.jit(f) if jit else f)(np_.asarray(x), y)
        return out if isinstance(out, tuple) else (out,)

    for jit in (False, True):
        want, got = run(jax, jnp, jit), run(funcgrad, fnp, jit)
        for g, w in zip(got, want):
            assert (g.dtype, g.weak_type) == (w.dtype, w.weak_type)
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_lcm_gcd_of_floats_raise_as_jax():
    for name in ("lcm", "gcd"):
        with pytest.raises(ValueError, match="must be integers"):
            getattr(jnp, name)(1.0, 2)
        with pytest.raises(ValueError, match="must be integers"):
            getattr(fnp, name)(1.0, 2)


def test_ufunc_reduce_with_an_array_axis_raises_as_jax():
    # (jnp.ufunc.reduceat's docstring: reduce(x, indices) is not reduceat)
    x, idx = np.arange(5), np.array([0, 2, 5])
    with pytest.raises(ValueError, match="Non-hashable static arguments"):
        jnp.add.reduce(jnp.asarray(x), jnp.asarray(idx))
    with pytest.raises(ValueError, match="Non-hashable static arguments"):
        fnp.add.reduce(fnp.asarray(x), fnp.asarray(idx))
