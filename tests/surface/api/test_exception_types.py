"""The exception types of traced shapes and sizes and of mixed-dtype lax operands are jax's
(issue 30): a traced dimension is a TypeError, a traced arange bound a ConcretizationTypeError,
a Python float into an integer lax operation a TypeError."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import lax as flax


def _cases(lib, np_mod, lax):
    key = lib.random.key(0) if hasattr(lib.random, "key") else lib.random.PRNGKey(0)
    return {
        "zeros": lambda: lib.jit(lambda n: np_mod.zeros(n))(3),
        "ones tuple": lambda: lib.jit(lambda n: np_mod.ones((n, 2)))(3),
        "reshape": lambda: lib.jit(lambda x, n: x.reshape(n))(np_mod.ones(4), 4),
        "broadcast_to": lambda: lib.jit(lambda x, n: np_mod.broadcast_to(x, (n,)))(1.0, 3),
        "full": lambda: lib.jit(lambda n: np_mod.full((n,), 1.0))(3),
        "eye": lambda: lib.jit(lambda n: np_mod.eye(n))(3),
        "tile": lambda: lib.jit(lambda n: np_mod.tile(np_mod.ones(2), n))(2),
        "arange": lambda: lib.jit(lambda n: np_mod.arange(n))(3),
        "random shape": lambda: lib.jit(lambda n: lib.random.normal(key, (n,)))(3),
        "lax int + float": lambda: lax.add(np_mod.arange(3), 1.0),
        "lax f32 + f64": lambda: lax.add(np_mod.ones(3, np_mod.float32), np_mod.ones(3)),
        "lax i32 + int": lambda: lax.mul(np_mod.ones(3, np_mod.int32), 2),
        "take float indices": lambda: np_mod.take(np_mod.ones(3), np_mod.ones(2)),
        "device_put a string": lambda: lib.device_put(np_mod.ones(2), "cpu"),
        # bad shapes and permutations: jax.numpy's TypeError, jax.lax.reshape's ValueError
        "reshape size": lambda: np_mod.reshape(np_mod.ones(4), (3,)),
        "reshape two -1": lambda: np_mod.reshape(np_mod.ones(4), (-1, -1)),
        "method reshape size": lambda: np_mod.ones(4).reshape(5),
        "lax.reshape size": lambda: lax.reshape(np_mod.ones(4), (3,)),
        "lax.reshape traced": lambda: lib.jit(lambda x, n: lax.reshape(x, (n,)))(np_mod.ones(4), 4),
        "lax.broadcast_in_dim traced": lambda: lib.jit(lambda x, n: lax.broadcast_in_dim(x, (n,), ()))(
            1.0, 2
        ),
        "concatenate shapes": lambda: np_mod.concatenate([np_mod.ones((2, 3)), np_mod.ones((2, 4))]),
        "concatenate ndim": lambda: np_mod.concatenate([np_mod.ones((2, 3)), np_mod.ones(3)]),
        "concatenate 0-d": lambda: np_mod.concatenate([np_mod.ones(()), np_mod.ones(())]),
        "transpose axes length": lambda: np_mod.transpose(np_mod.ones((2, 3)), (0,)),
        "transpose repeated": lambda: np_mod.transpose(np_mod.ones((2, 3)), (0, 0)),
        "method transpose": lambda: np_mod.ones((2, 3)).transpose(1, 1),
        "lax.transpose": lambda: lax.transpose(np_mod.ones((2, 3)), (0,)),
        # a None where a number belongs: jnp.array's ValueError (custom_pytrees.md's MyTree(None))
        "asarray None": lambda: np_mod.asarray(None),
        "array list with None": lambda: np_mod.array([1.0, None]),
    }


@pytest.mark.slow
@pytest.mark.parametrize("name", list(_cases(funcgrad, fnp, flax)))
def test_exception_type_matches_jax(name):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    with pytest.raises(Exception) as theirs:
        _cases(jax, jnp, jax.lax)[name]()
    with pytest.raises(Exception) as ours:
        _cases(funcgrad, fnp, flax)[name]()
    assert type(ours.value).__name__ == type(theirs.value).__name__


def test_a_traced_dimension_names_the_fix():
    with pytest.raises(TypeError, match="static_argnums") as info:
        funcgrad.jit(lambda n: fnp.zeros((n, 2)))(3)
    assert type(info.value) is TypeError
    assert funcgrad.jit(lambda n: fnp.zeros((n, 2)), static_argnums=0)(3).shape == (3, 2)
    assert np.asarray(flax.add(fnp.arange(3), 1)).tolist() == [1, 2, 3]


def _weak_cases(lib, np_mod):
    return {
        "hessian of a Python float": lambda: lib.hessian(np_mod.sin)(1.0),
        "hessian of x**3": lambda: lib.hessian(lambda x: x**3)(2.0),
        "hessian of an array": lambda: lib.hessian(lambda x: (x**3).sum())(np.ones(2)),
        "jacfwd(jacrev)": lambda: lib.jacfwd(lib.jacrev(np_mod.sin))(0.5),
        "grad real": lambda: lib.grad(lambda x: np_mod.real(x * (1 + 2j)))(1.5),
        "grad imag": lambda: lib.grad(lambda x: np_mod.imag(np_mod.exp(1j * x)))(0.3),
        "grad angle": lambda: lib.grad(lambda x: np_mod.angle(x * (1 + 2j)))(1.5),
        "grad abs complex": lambda: lib.grad(lambda x: np_mod.abs(np_mod.exp(1j * x)))(0.3),
        "jit hessian": lambda: lib.jit(lib.hessian(np_mod.sin))(1.0),
    }


@pytest.mark.parametrize("name", list(_weak_cases(funcgrad, fnp)))
def test_weak_type_matches_jax(name):
    # eager results type as staged ones: select_n's result is weak when its cases are, and
    # convert_element_type(weak_type=True) is weak whatever its operand (Primitive.weak_type_of)
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    ours, theirs = _weak_cases(funcgrad, fnp)[name](), _weak_cases(jax, jnp)[name]()
    assert (ours.weak_type, np.dtype(ours.dtype)) == (theirs.weak_type, np.dtype(theirs.dtype))
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-12, atol=1e-15)
