"""dot_general under a dot algorithm (``precision=DotAlgorithmPreset...``): its derivatives carry
the forward's algorithm and ``preferred_element_type`` as JAX's transpose rule does (NOTE: [dot
algorithms] in primitives/dot.py), bit for bit against jax under jit."""

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import lax

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)  # (the oracle in funcgrad's default 64-bit mode)
jnp = jax.numpy

DN = (((1,), (0,)), ((), ()))
# The presets XLA's CPU takes (JAX's lowering refuses the others on CPU).
PRESETS = ["DEFAULT", "F32_F32_F32", "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6", "F64_F64_F64"]


def _operands(dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((8, 16)).astype(np.float32)
    b = rng.standard_normal((16, 4)).astype(np.float32)
    return np.asarray(jnp.asarray(a).astype(dtype)), np.asarray(jnp.asarray(b).astype(dtype))


def _loss(lib_lax, lib_np, preset, pet):
    def f(x, y):
        algorithm = lib_lax.DotAlgorithmPreset[preset]
        out = lib_lax.dot_general(x, y, DN, precision=algorithm, preferred_element_type=pet)
        return lib_np.sum(lib_np.sin(out).astype(lib_np.float32))

    return f


def _assert_bitwise(got, want):
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        g, w = np.atleast_1d(np.asarray(g)), np.atleast_1d(np.asarray(w))
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g.view(np.uint8), w.view(np.uint8))


@pytest.mark.parametrize("pet", [None, "float32"])
@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_value_and_grad_under_an_algorithm_bitwise_as_jax(dtype, preset, pet):
    a, b = _operands(dtype)
    want = jax.jit(jax.value_and_grad(_loss(jax.lax, jnp, preset, pet), (0, 1)))(a, b)
    got = funcgrad.jit(funcgrad.value_and_grad(_loss(lax, fnp, preset, pet), (0, 1)))(a, b)
    _assert_bitwise(got, want)


@pytest.mark.parametrize("dtype, pet", [("float16", "float32"), ("float16", None), ("float64", "float32")])
def test_converted_operands_and_mixed_cotangent_as_jax(dtype, pet):
    # BF16_BF16_F32 on float16/float64 operands rounds them to bfloat16; the backward product takes
    # the float32 cotangent as it is and y rounded to bfloat16 (a mixed product, as jax's).
    a, b = _operands(dtype, seed=1)
    want = jax.jit(jax.value_and_grad(_loss(jax.lax, jnp, "BF16_BF16_F32", pet), (0, 1)))(a, b)
    got = funcgrad.jit(funcgrad.value_and_grad(_loss(lax, fnp, "BF16_BF16_F32", pet), (0, 1)))(a, b)
    _assert_bitwise(got, want)


def test_backward_products_carry_the_algorithm_in_the_jaxpr():
    a, b = _operands("bfloat16")
    f = _loss(lax, fnp, "BF16_BF16_F32", None)
    jaxpr = funcgrad.make_jaxpr(funcgrad.grad(f, (0, 1)))(a, b)
    eqns = [e for e in jaxpr.eqns if e.primitive.name == "dot_general"]
    assert len(eqns) == 3
    assert all(e.params["precision"] == lax.DotAlgorithmPreset.BF16_BF16_F32 for e in eqns)


def test_bfloat16_training_steps_as_jax():
    # Two SGD steps of a bfloat16 layer under BF16_BF16_F32: the second loss depends on the first
    # step's backward products (float32 cotangents rounded to bfloat16 as in jax).
    x, w = _operands("bfloat16", seed=2)

    def step(lib, lib_lax, lib_np):
        def loss(w, x):
            h = lib_lax.dot_general(x, w, DN, precision=lib_lax.DotAlgorithmPreset.BF16_BF16_F32)
            return lib_np.mean(lib_np.tanh(h).astype(lib_np.float32) ** 2)

        @lib.jit
        def update(w, x):
            val, g = lib.value_and_grad(loss)(w, x)
            return val, (w - 0.5 * g).astype(w.dtype)

        return update

    for lib, lib_lax, lib_np in ((jax, jax.lax, jnp), (funcgrad, lax, fnp)):
        update = step(lib, lib_lax, lib_np)
        w1 = w
        losses = []
        for _ in range(3):
            val, w1 = update(w1, x)
            losses.append(np.asarray(val))
        if lib is jax:
            want = losses
        else:
            _assert_bitwise(losses, want)


def test_vmap_of_grad_under_an_algorithm_as_jax():
    a, b = _operands("bfloat16", seed=3)
    bs = np.stack([b, b[::-1]])
    jf, ff = _loss(jax.lax, jnp, "BF16_BF16_F32", "float32"), _loss(lax, fnp, "BF16_BF16_F32", "float32")
    want = jax.jit(jax.vmap(jax.grad(jf, 1), (None, 0)))(a, bs)
    got = funcgrad.jit(funcgrad.vmap(funcgrad.grad(ff, 1), (None, 0)))(a, bs)
    _assert_bitwise(got, want)


def test_bfloat16_attention_as_jax():
    # jax.nn.dot_product_attention's logits are a BF16_BF16_F32 product of the bfloat16 operands:
    # converting them to float32 first summed in another order (22 of 262,144 outputs differed at
    # this size; the gradients of q, k and v in 118, 373 and 80). The output, the loss and v's
    # gradient are now jax's bits; q's and k's still differ in a few last places (39 and 46).
    rng = np.random.default_rng(4)
    q, k, v = (
        np.asarray(jnp.asarray(rng.standard_normal((2, 128, 8, 128)).astype(np.float32)).astype("bfloat16"))
        for _ in range(3)
    )

    def loss(lib):
        def f(q, k, v):
            out = lib.nn.dot_product_attention(q, k, v, is_causal=True)
            return lib.numpy.sum(out.astype(np.float32) ** 2), out

        return f

    (want_loss, want_out), want_grads = jax.jit(jax.value_and_grad(loss(jax), (0, 1, 2), has_aux=True))(
        q, k, v
    )
    (loss_, out), grads = funcgrad.jit(funcgrad.value_and_grad(loss(funcgrad), (0, 1, 2), has_aux=True))(
        q, k, v
    )
    _assert_bitwise((loss_, out, grads[2]), (want_loss, want_out, want_grads[2]))
    for g, w in zip(grads[:2], want_grads[:2]):
        np.testing.assert_allclose(np.float32(g), np.float32(w), rtol=2**-7, atol=1e-3)
