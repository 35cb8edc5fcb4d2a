"""``funcgrad.ad`` is JAX 0.10's ``jax.ad``: the four markers of ``f_vjp.with_refs``, with jax's
results for the same calls."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp


def test_ad_markers_as_jax():
    jax = pytest.importorskip("jax")
    assert sorted(n for n in dir(jax.ad) if not n.startswith("_")) == sorted(
        n for n in dir(funcgrad.ad) if not n.startswith("_")
    )

    def run(lib, np_mod):
        _, f_vjp = lib.vjp(lambda x, y: np_mod.sin(x) * y, 0.5, 2.0)
        kept, dropped = f_vjp.with_refs(lib.ad.GradValue(), lib.ad.DontWant())(1.0)
        return float(kept), type(dropped).__name__

    ours, theirs = run(funcgrad, fnp), run(jax, jax.numpy)
    assert ours[1] == theirs[1] == "DidntWant"
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
