"""funcgrad.scipy: special functions and stats.norm against SciPy, with derivatives."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as ss
import scipy.stats as sst

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.scipy import special, stats
from funcgrad.testing import check_grads

X = np.linspace(0.2, 2.5, 7)


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, ours, ref, args",
    [
        ("erf", special.erf, ss.erf, (X - 1,)),
        ("erfc", special.erfc, ss.erfc, (X,)),
        ("erfinv", special.erfinv, ss.erfinv, (X / 3,)),
        ("gammaln", special.gammaln, ss.gammaln, (X,)),
        ("digamma", special.digamma, ss.digamma, (X,)),
        ("expit", special.expit, ss.expit, (X - 1,)),
        ("logit", special.logit, ss.logit, (X / 3,)),
        ("xlogy", special.xlogy, ss.xlogy, (X - 1, X)),
        ("xlog1py", special.xlog1py, ss.xlog1py, (X - 1, X)),
        ("logsumexp", special.logsumexp, ss.logsumexp, (X,)),
        ("norm.pdf", stats.norm.pdf, sst.norm.pdf, (X, 0.5, 2.0)),
        ("norm.logpdf", stats.norm.logpdf, sst.norm.logpdf, (X, 0.5, 2.0)),
        ("norm.cdf", stats.norm.cdf, sst.norm.cdf, (X - 1,)),
        ("norm.sf", stats.norm.sf, sst.norm.sf, (X - 1,)),
        ("norm.ppf", stats.norm.ppf, sst.norm.ppf, (X / 3,)),
    ],
)
def test_values_and_gradients(name, ours, ref, args):
    np.testing.assert_allclose(np.asarray(ours(*args)), ref(*args), rtol=1e-10, atol=1e-12)
    diff = [a for a in args if isinstance(a, np.ndarray)]
    fixed = args[len(diff) :]
    check_grads(lambda *xs: ours(*xs, *fixed), diff, order=1)


def test_xlogy_conventions():
    assert float(special.xlogy(0.0, 0.0)) == 0.0
    assert np.isclose(float(funcgrad.grad(lambda x: special.xlogy(x, 2.0))(0.0)), np.log(2.0))
    got = funcgrad.jit(funcgrad.vmap(special.xlogy))(fnp.array([0.0, 1.0]), fnp.array([0.0, 2.0]))
    np.testing.assert_allclose(np.asarray(got), [0.0, np.log(2.0)])
