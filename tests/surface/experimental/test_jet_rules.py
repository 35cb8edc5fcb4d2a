"""funcgrad.experimental.jet's rule helpers against jax.experimental.jet's: jet_rules as a view of
the primitives' Taylor rules, def_deriv/def_comp/deflinear/defzero on new primitives, and the
utilities the module exposes."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from funcgrad.primitives import elementwise as ew

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.experimental import jet as fj
from funcgrad.kernel.core import Primitive

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
from jax.experimental import jet as jj  # noqa: E402

X = 0.7
SERIES = [1.3, -0.4, 0.25]


def _unary(name, impl):
    p = Primitive(name)
    p.def_impl(impl)
    p.def_abstract_eval(lambda a: a)
    return p


def test_jet_rules_reads_the_catalog_rules_in_jaxs_convention():
    for ours, theirs in ((ew.exp_p, jax.lax.exp_p), (ew.sin_p, jax.lax.sin_p), (ew.log_p, jax.lax.log_p)):
        assert ours in fj.jet_rules
        y, s = fj.jet_rules[ours]([X], [SERIES])
        jy, js = jj.jet_rules[theirs]([X], [[np.float64(t) for t in SERIES]])
        np.testing.assert_allclose(y, jy)
        np.testing.assert_allclose(np.array(s, dtype=float), np.array(js, dtype=float), rtol=1e-12)
    # a symbolic-zero input term reaches a JAX-style rule as a zero array
    _, s = fj.jet_rules[ew.exp_p]([0.0], [[fj.zero_term, 1.0]])
    np.testing.assert_allclose([float(t) for t in s], [0.0, 1.0])


def test_def_deriv_and_def_comp_define_the_rule_jet_uses():
    my_exp = _unary("test_my_exp", np.exp)
    fj.def_deriv(my_exp, fnp.exp)
    my_cube = _unary("test_my_cube", lambda x: np.asarray(x) ** 3)
    fj.def_comp(my_cube, lambda x: x * x * x)
    for prim, jfun in ((my_exp, jax.numpy.exp), (my_cube, lambda x: x**3)):
        y, s = fj.jet(prim.bind, (X,), (SERIES,))
        jy, js = jj.jet(jfun, (X,), (SERIES,))
        np.testing.assert_allclose(y, jy)
        np.testing.assert_allclose(np.array(s, float), np.array(js, float), rtol=1e-12)
        # the rule is the primitive's Taylor rule: funcgrad.taylor_derivatives uses it too
        ds = funcgrad.taylor_derivatives(prim.bind, X, 2)
        _, jd = jj.jet(jfun, (X,), ((1.0, 0.0),))
        np.testing.assert_allclose([float(d) for d in ds[1:]], np.array(jd, float), rtol=1e-12)


def test_deflinear_and_defzero():
    twice = _unary("test_twice", lambda x: 2.0 * np.asarray(x))
    fj.deflinear(twice)
    step = _unary("test_step", np.floor)
    fj.defzero(step)
    _, s = fj.jet(lambda x: twice.bind(x) * x, (X,), (SERIES,))
    _, js = jj.jet(lambda x: 2.0 * x * x, (X,), (SERIES,))
    np.testing.assert_allclose(np.array(s, float), np.array(js, float), rtol=1e-12)
    y, s = fj.jet(step.bind, (X,), (SERIES,))
    assert float(y) == 0.0 and [float(t) for t in s] == [0.0, 0.0, 0.0]
    y, s = fj.zero_prop(step, [2.5], [[1.0]])
    assert float(y) == 2.0 and s is fj.zero_series
    del fj.jet_rules[step]
    assert step not in fj.jet_rules


def test_a_jax_style_rule_set_by_hand():
    # the rule of x -> x^2 written as a JAX user would: Cauchy product of instantiated terms
    sq = _unary("test_sq", np.square)

    def rule(primals_in, series_in):
        (x,), (s,) = primals_in, series_in
        u = [x, *s]
        out = [sum(u[j] * u[k - j] for j in range(k + 1)) for k in range(len(u))]
        return out[0], out[1:]

    fj.jet_rules[sq] = rule
    assert fj.jet_rules[sq] is rule
    _, s = fj.jet(sq.bind, (X,), (SERIES,))
    _, js = jj.jet(lambda x: x * x, (X,), (SERIES,))
    np.testing.assert_allclose(np.array(s, float), np.array(js, float), rtol=1e-12)
    with pytest.raises(TypeError, match="funcgrad primitives"):
        fj.jet_rules["sq"] = rule


def test_names_and_utilities_as_jax():
    assert issubclass(fj.JetTracer, funcgrad.kernel.core.Tracer)
    assert issubclass(fj.JetTrace, funcgrad.kernel.core.Trace)
    assert isinstance(fj.zero_term, fj.ZeroTerm) and isinstance(fj.zero_series, fj.ZeroSeries)
    assert (
        fj.tree_flatten([fj.zero_term, 1.0])[0] == jax.tree_util.tree_flatten([jj.zero_term, 1.0])[0] == [1.0]
    )
    assert fj.treedef_is_leaf(fj.tree_structure(1.0)) and not fj.treedef_is_leaf(fj.tree_structure((1.0,)))
    assert fj.unzip2([(1, "a"), (2, "b")]) == jj.unzip2([(1, "a"), (2, "b")])
    assert fj.safe_zip([1, 2], [3, 4]) == list(jj.safe_zip([1, 2], [3, 4]))
    assert isinstance(fj.call_param_updaters, dict)
    assert float(fj.fact(4)) == 24.0 and abs(float(jj.fact(4)) - 24.0) < 1e-12


def test_weakref_lru_cache():
    class Key:
        pass

    calls = []
    cached = fj.weakref_lru_cache(lambda k, n: calls.append(n) or n + 1, maxsize=2)
    a, b = Key(), Key()
    assert cached(a, 1) == 2 and cached(a, 1) == 2 and len(calls) == 1
    cached(b, 1)
    cached(a, 2)  # evicts the oldest entry (a, 1)
    cached(a, 1)
    assert len(calls) == 4
    del a
    gc.collect()
    assert cached.cache_info().currsize == 0  # (b, 1) was evicted; a's entries died with it
    cached.cache_clear()
    assert cached.cache_info().currsize == 0
