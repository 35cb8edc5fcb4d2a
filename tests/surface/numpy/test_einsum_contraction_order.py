"""jnp.einsum's dot_general dimension numbers as JAX's: the contracted labels sorted (XLA sums a
product over several contracted dimensions in the order the dimension numbers give them), against
jax's jaxprs and bits."""

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)  # (the oracle in funcgrad's default 64-bit mode)
jnp = jax.numpy


def _dot_params(jaxpr):
    return [
        (e.params["dimension_numbers"], tuple(v.aval.shape for v in e.invars))
        for e in jaxpr.eqns
        if e.primitive.name == "dot_general"
    ]


@pytest.mark.parametrize(
    "spec, shapes",
    [
        ("bskh,khd->bsd", ((2, 3, 4, 5), (4, 5, 6))),
        ("bkh,hkd->bd", ((2, 4, 5), (5, 4, 6))),
        ("zab,baz->", ((2, 3, 4), (4, 3, 2))),
        ("ij,jk->ik", ((2, 3), (3, 4))),
    ],
)
def test_contracting_dimensions_in_jax_order(spec, shapes):
    ops = [np.ones(s, np.float32) for s in shapes]
    want = _dot_params(jax.make_jaxpr(lambda *xs: jnp.einsum(spec, *xs))(*ops).jaxpr)
    got = _dot_params(funcgrad.make_jaxpr(lambda *xs: fnp.einsum(spec, *xs))(*ops).jaxpr)
    assert [dn[0] for dn, _ in got] == [dn[0] for dn, _ in want]


def test_two_contracted_dimensions_bitwise_as_jax():
    # The attention output projection of JAX's training cookbook: in (k, h) order 245 of 1,048,576
    # bfloat16 results differed from jax's (h, k) product, and its 4-layer loss from the first step.
    rng = np.random.default_rng(0)
    bf16 = jnp.bfloat16
    a = np.asarray(jnp.asarray(rng.standard_normal((16, 128, 8, 128)), bf16))
    w = np.asarray(jnp.asarray(0.05 * rng.standard_normal((8, 128, 512)), bf16))
    want = np.asarray(jax.jit(lambda a, w: jnp.einsum("bskh,khd->bsd", a, w))(a, w))
    got = np.asarray(funcgrad.jit(lambda a, w: fnp.einsum("bskh,khd->bsd", a, w))(a, w))
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
