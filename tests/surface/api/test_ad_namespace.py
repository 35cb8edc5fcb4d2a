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


def test_the_alias_private_api_module_holds_the_markers_as_jax():
    # api_test's test_vjp3_dont_want reads them from ``jax._src.api`` (as JAX's module holds them)
    jax = pytest.importorskip("jax")
    import importlib.util
    import pathlib

    # (loaded from its file: importing funcgrad.as_jax would install the alias, refused with jax loaded)
    path = pathlib.Path(funcgrad.__file__).parent / "as_jax" / "_jax" / "_src" / "api.py"
    spec = importlib.util.spec_from_file_location("_alias_src_api", path)
    alias_api = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(alias_api)
    for name in ("GradRef", "GradValue", "DontWant", "DidntWant"):
        assert getattr(alias_api, name) is getattr(funcgrad.ad, name)
        assert getattr(jax._src.api, name) is getattr(jax.ad, name)
    _, f_vjp = funcgrad.vjp(lambda x, y: x + y, fnp.arange(3.0), fnp.arange(3.0))
    ref = funcgrad.new_ref(fnp.zeros(3))
    out1, out2 = f_vjp.with_refs(ref, funcgrad.ad.DontWant())(fnp.ones(3))
    assert isinstance(out1, alias_api.GradRef) and isinstance(out2, alias_api.DidntWant)
    np.testing.assert_array_equal(ref[...], np.ones(3))
