"""``funcgrad.test_util``: JAX's ``check_grads``/``check_jvp``/``check_vjp`` with JAX's signatures,
accepting correct derivatives and rejecting wrong ones where ``jax.test_util`` does."""

from __future__ import annotations

import functools
import inspect

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import test_util


def _wrong_sin(lib, np_mod):
    f = lib.custom_jvp(np_mod.sin)
    f.defjvps(lambda t, ans, x: 1.1 * np_mod.cos(x) * t)  # 10 % off
    return f


@pytest.mark.slow
@pytest.mark.parametrize("name", ["check_grads", "check_jvp", "check_vjp"])
def test_signatures_are_jax(name):
    jtu = pytest.importorskip("jax.test_util")
    ours, theirs = inspect.signature(getattr(test_util, name)), inspect.signature(getattr(jtu, name))
    assert [(p.name, p.default) for p in ours.parameters.values()] == [
        (p.name, p.default) for p in theirs.parameters.values()
    ]


def _verdicts(lib, np_mod, tu):
    x = np.array([0.3, -1.2, 2.0])
    tu.check_grads(lambda v: np_mod.sin(v) * v**2, (x,), order=2)
    tu.check_grads(np_mod.tanh, (x.astype(np.float32),), order=1, modes=["rev"])
    tu.check_jvp(np_mod.exp, functools.partial(lib.jvp, np_mod.exp), (x,))
    tu.check_vjp(np_mod.exp, functools.partial(lib.vjp, np_mod.exp), (x,))
    wrong = _wrong_sin(lib, np_mod)
    checks = [
        lambda: tu.check_grads(wrong, (x,), order=1, modes=["fwd"]),
        lambda: tu.check_grads(wrong, (x,), order=1, modes=["rev"]),
        lambda: tu.check_jvp(wrong, functools.partial(lib.jvp, wrong), (x,)),
        lambda: tu.check_vjp(wrong, functools.partial(lib.vjp, wrong), (x,)),
    ]
    for check in checks:
        with pytest.raises(AssertionError):
            check()


def test_verdicts():
    _verdicts(funcgrad, fnp, test_util)


@pytest.mark.slow
def test_jax_gives_the_same_verdicts():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import jax.test_util as jtu

    _verdicts(jax, jnp, jtu)


def test_test_util_follows_jax_procedure():
    # JAX's procedure (NOTE: [jax.test_util's procedure]): the same tolerance tables, the same
    # random directions, finite differences in the arguments' own dtypes (float32 stays float32),
    # and the same verdict on a float32 check at JAX's tolerance.
    from jax._src import public_test_util as jtu

    assert sorted(test_util.__all__) == ["check_grads", "check_jvp", "check_vjp"]
    assert "test_util" in dir(funcgrad)
    assert test_util.DEFAULT_GRADIENT_TOLERANCE == {
        np.dtype(k): v for k, v in jtu.default_gradient_tolerance.items()
    }
    args = (np.linspace(-1, 1, 5, dtype=np.float32), 0.5, np.ones(2, np.complex64))
    ours = tuple(test_util._random_like(np.random.RandomState(0), a) for a in args)
    theirs = tuple(jtu.rand_like(np.random.RandomState(0), a) for a in args)
    for o, t in zip(ours, theirs):
        assert type(o) is type(t) and np.asarray(o).dtype == np.asarray(t).dtype
        np.testing.assert_array_equal(o, t)
    f = lambda x, y, z: np.tanh(x) * y  # noqa: E731 - NumPy on both sides: the same float32 numbers
    got, want = test_util.numerical_jvp(f, args, ours), jtu.numerical_jvp(f, args, theirs)
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_array_equal(got, want)

    def xent(logits):  # float32 logits: both sides accept the gradient of softmax cross-entropy
        return -(fnp.array([0.2, 0.8, 0.0], np.float32) * funcgrad.nn.log_softmax(logits)).sum()

    test_util.check_grads(xent, (np.array([1.0, -2.0, 0.5], np.float32),), order=1, modes=["rev", "lin"])
