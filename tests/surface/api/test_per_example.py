"""Ghost clipping: ``per_example_norms`` and ``clipped_grad_sum`` (funcgrad/per_example.py) equal
the materialised computation -- ``vmap(grad)``, the per-example norms, the clip and the sum -- and a
Python loop of single-example gradients, for an MLP, the DP-SGD CNN, sequence models (dense layers
applied at several positions, both ghost-norm branches), parameters on either side of a matmul, and
models where the transformation must fall back (tied weights, a parameter inside a ``jit`` call).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import tree_util as tu
from funcgrad.kernel import core
from funcgrad.kernel.partial_eval import trace_to_jaxpr
from funcgrad.per_example import _plan
from tests.integration.test_dp_sgd import init_params as cnn_init
from tests.integration.test_dp_sgd import loss as cnn_loss


def _materialised(loss, params, *batch, clip, in_axes=0):
    axes = (None, *((in_axes,) * len(batch) if not isinstance(in_axes, tuple) else in_axes))
    grads = funcgrad.vmap(funcgrad.grad(loss), in_axes=axes)(params, *batch)
    leaves, tree = tu.tree_flatten(grads)
    size = leaves[0].shape[0]
    norms = np.sqrt(sum(np.sum(np.reshape(np.asarray(g), (size, -1)) ** 2, axis=1) for g in leaves))
    scale = 1.0 / np.maximum(norms / clip, 1.0)
    return tu.tree_unflatten(tree, [np.tensordot(scale, np.asarray(g), axes=1) for g in leaves]), norms


def _loop(loss, params, *batch, clip):
    """The reference without any transformation but ``grad``: one example at a time."""
    size = len(batch[0])
    total, norms = None, []
    for i in range(size):
        g = tu.tree_leaves(funcgrad.grad(loss)(params, *(b[i] for b in batch)))
        norm = np.sqrt(sum(np.sum(np.asarray(x) ** 2) for x in g))
        norms.append(norm)
        scaled = [np.asarray(x) / max(norm / clip, 1.0) for x in g]
        total = scaled if total is None else [a + b for a, b in zip(total, scaled)]
    return total, np.array(norms)


def _close(got, want, rtol, atol=0.0):
    for a, b in zip(tu.tree_leaves(got), tu.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def _mlp(dtype, sizes=(6, 8, 8, 3), batch=5, seed=0):
    rng = np.random.default_rng(seed)
    params = [
        (
            (rng.standard_normal((m, n)) / np.sqrt(m)).astype(dtype),
            (0.1 * rng.standard_normal(n)).astype(dtype),
        )
        for m, n in zip(sizes[:-1], sizes[1:])
    ]
    x = rng.standard_normal((batch, sizes[0])).astype(dtype)
    y = np.eye(sizes[-1], dtype=dtype)[rng.integers(0, sizes[-1], batch)]

    def loss(p, xi, yi):
        h = xi
        for w, b in p[:-1]:
            h = fnp.tanh(h @ w + b)
        w, b = p[-1]
        logits = h @ w + b
        return -fnp.sum(yi * funcgrad.nn.log_softmax(logits))

    return params, x, y, loss


@pytest.mark.parametrize("clip", [0.3, 100.0])
def test_mlp_float64_exact(clip):
    params, x, y, loss = _mlp(np.float64)
    got, norms = funcgrad.clipped_grad_sum(loss, clip, return_norms=True)(params, x, y)
    want, want_norms = _loop(loss, params, x, y, clip=clip)
    _close(got, want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.asarray(norms), want_norms, rtol=1e-12)
    np.testing.assert_allclose(
        np.asarray(funcgrad.per_example_norms(loss)(params, x, y)), want_norms, rtol=1e-12
    )


@pytest.mark.slow
def test_mlp_float32_jit_matches_materialised():
    params, x, y, loss = _mlp(np.float32, sizes=(64, 256, 256, 10), batch=32)
    clipped = funcgrad.jit(funcgrad.clipped_grad_sum(loss, 0.5))
    want, _ = _materialised(loss, params, x, y, clip=0.5)
    _close(clipped(params, x, y), want, rtol=2e-4, atol=1e-6)
    # Every dense layer is a ghost-norm site: no parameter falls back to materialising.
    plan = _plan_of(loss, params, x[0], y[0])
    assert plan.fallback == [] and len(plan.sites) == 6


def _plan_of(loss, params, *example):
    flat, tree = tu.tree_flatten(params)
    ex = list(example)
    closed = trace_to_jaxpr(
        lambda *a: [loss(tu.tree_unflatten(tree, a[: len(flat)]), *a[len(flat) :])],
        [core.get_aval(v) for v in (*flat, *ex)],
    )
    return _plan(closed.jaxpr, len(flat))


@pytest.mark.slow
def test_cnn_matches_materialised_and_loop():
    params = cnn_init(funcgrad.random.PRNGKey(1))
    rng = np.random.default_rng(0)
    images = rng.uniform(0, 1, (6, 1, 28, 28, 1)).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 6)][:, None, :]

    def loss(p, image, label):
        return cnn_loss(p, (image, label))

    clipped = funcgrad.jit(funcgrad.clipped_grad_sum(loss, 0.05, return_norms=True))
    got, norms = clipped(params, images, labels)
    want, want_norms = _materialised(loss, params, images, labels, clip=0.05)
    _close(got, want, rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(np.asarray(norms), want_norms, rtol=1e-5)
    loop, loop_norms = _loop(loss, params, images, labels, clip=0.05)
    _close(got, loop, rtol=1e-4, atol=1e-7)
    assert (want_norms > 0.05).all()  # the clip is active for every example


@pytest.mark.parametrize("positions", [2, 9])  # 2: the Gram branch; 9: 81 > 4*3, per-example dW
def test_dense_at_several_positions(positions):
    rng = np.random.default_rng(1)
    w = rng.standard_normal((4, 3))
    v = rng.standard_normal((5, positions))  # the parameter on the left of a matmul
    xs = rng.standard_normal((7, positions, 4))

    def loss(p, x):
        w, v = p
        h = fnp.tanh(x @ w)  # (positions, 3)
        return fnp.sum(fnp.sin(v @ h))

    got, norms = funcgrad.clipped_grad_sum(loss, 0.7, return_norms=True)((w, v), xs)
    want, want_norms = _loop(loss, (w, v), xs, clip=0.7)
    _close(got, want, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(np.asarray(norms), want_norms, rtol=1e-12)


def test_fallback_tied_weights_and_calls():
    rng = np.random.default_rng(2)
    w = rng.standard_normal((4, 4)) / 2
    s = np.array(0.3)
    c = rng.standard_normal(4)
    xs = rng.standard_normal((6, 4))
    inner = funcgrad.jit(lambda h, c: fnp.tanh(h + c))

    def loss(p, x):
        w, s, c = p
        h = fnp.tanh(x @ w)  # w is read twice: tied weights
        h = inner(h @ w.T, c)  # c is read by a jit call
        return fnp.exp(s) * fnp.sum(h**2)  # s: one nonlinear use, still a site

    plan = _plan_of(loss, (w, s, c), xs[0])
    assert sorted(plan.fallback) == [0, 2] and [j for _, _, j in plan.sites] == [1]
    got, norms = funcgrad.clipped_grad_sum(loss, 0.5, return_norms=True)((w, s, c), xs)
    want, want_norms = _loop(loss, (w, s, c), xs, clip=0.5)
    _close(got, want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.asarray(norms), want_norms, rtol=1e-12)


def test_in_axes_shared_argument_and_dict_params():
    rng = np.random.default_rng(3)
    params = {"w": rng.standard_normal((3, 2)), "b": rng.standard_normal(2)}
    xs = rng.standard_normal((3, 4))  # batch on axis 1
    scale = np.array(2.0)  # shared by every example

    def loss(p, x, k):
        return fnp.sum(fnp.tanh(x @ p["w"] + p["b"]) * k)

    got = funcgrad.clipped_grad_sum(loss, 1.0, in_axes=(1, None))(params, xs, scale)
    want, _ = _loop(loss, params, xs.T, np.broadcast_to(scale, (4,)), clip=1.0)
    _close(got, tu.tree_unflatten(tu.tree_structure(params), want), rtol=1e-12)


def test_composes_with_grad_of_the_norms():
    # The transformation is an ordinary function: differentiate the sum of the per-example norms.
    params, x, y, loss = _mlp(np.float64, sizes=(3, 4, 2), batch=3)

    def via_ghost(p):
        return fnp.sum(funcgrad.per_example_norms(loss)(p, x, y))

    def via_vmap(p):
        g = funcgrad.vmap(funcgrad.grad(loss), in_axes=(None, 0, 0))(p, x, y)
        return fnp.sum(
            fnp.sqrt(sum(fnp.sum(fnp.reshape(l, (3, -1)) ** 2, axis=1) for l in tu.tree_leaves(g)))
        )

    _close(funcgrad.grad(via_ghost)(params), funcgrad.grad(via_vmap)(params), rtol=1e-10)


def test_errors():
    w, xs = np.ones((3, 2)), np.ones((4, 3))
    with pytest.raises(TypeError, match="real scalar"):
        funcgrad.per_example_norms(lambda w, x: x @ w)(w, xs)
    with pytest.raises(ValueError, match="l2_clip must be a positive"):
        funcgrad.clipped_grad_sum(lambda w, x: fnp.sum(x @ w), 0.0)
    with pytest.raises(ValueError, match="no batch argument"):
        funcgrad.per_example_norms(lambda w, x: fnp.sum(x @ w), in_axes=None)(w, xs)
    with pytest.raises(ValueError, match="different batch sizes"):
        funcgrad.per_example_norms(lambda w, x, y: fnp.sum(x @ w) + fnp.sum(y))(w, xs, np.ones(5))


@pytest.mark.slow
def test_per_sample_gradient_program_writes_each_weight_gradient_once():
    # NOTE: [cotangent without transpose]: the per-example weight gradient of ``h @ W`` is made in
    # W's layout (one broadcast multiply under jit), never a product followed by a transpose;
    # the values equal jax's vmap(grad) (the oracle) and a loop.
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    params, x, y, loss = _mlp(np.float64)

    def loss_jax(p, xi, yi):
        h = xi
        for w, b in p[:-1]:
            h = jax.numpy.tanh(h @ w + b)
        w, b = p[-1]
        return -jax.numpy.sum(yi * jax.nn.log_softmax(h @ w + b))

    per_example = funcgrad.vmap(funcgrad.grad(loss), in_axes=(None, 0, 0))
    closed = funcgrad.make_jaxpr(per_example)(params, x, y)
    assert not [e for e in closed.eqns if e.primitive.name == "transpose"], closed
    got = funcgrad.jit(per_example)(params, x, y)
    want = jax.vmap(jax.grad(loss_jax), in_axes=(None, 0, 0))(params, x, y)
    _close(got, want, rtol=1e-12, atol=1e-14)
    for i in range(len(x)):
        _close(
            tu.tree_map(lambda g, i=i: g[i], got),
            funcgrad.grad(loss)(params, x[i], y[i]),
            rtol=1e-12,
            atol=1e-14,
        )


def test_integer_parameter_is_an_error():
    with pytest.raises(TypeError, match=r"params\['n'\] has dtype int64"):
        funcgrad.clipped_grad_sum(lambda p, x: fnp.sum(x * p["w"]), 1.0)(
            {"w": np.ones(3), "n": np.array(2)}, np.ones((4, 3))
        )


def test_bfloat16_parameters_are_differentiated():
    # (bfloat16's NumPy kind is 'V': the parameter check read dtype.kind and refused them)
    w = np.linspace(-1, 1, 6).reshape(3, 2).astype(ml_dtypes.bfloat16)
    x = np.arange(12.0).reshape(4, 3).astype(ml_dtypes.bfloat16)

    def loss(w, x):
        return fnp.sum(fnp.tanh(x @ w).astype(np.float32))

    grads = [np.asarray(funcgrad.grad(loss)(w, xi)).astype(np.float32) for xi in x]
    norms = funcgrad.per_example_norms(loss)(w, x)
    np.testing.assert_allclose(np.asarray(norms), [np.linalg.norm(g) for g in grads], rtol=2e-2)
    clipped = funcgrad.clipped_grad_sum(loss, 0.5)(w, x)
    assert clipped.dtype == ml_dtypes.bfloat16
    want = sum(g / max(1.0, np.linalg.norm(g) / 0.5) for g in grads)
    np.testing.assert_allclose(np.asarray(clipped).astype(np.float32), want, rtol=2e-2, atol=1e-2)


def test_unused_and_non_differentiable_parameters():
    # ``t`` is read only by a comparison (a boolean result: no site, the fallback), ``u`` not at
    # all: both get zero gradients, as vmap(grad) gives them.
    rng = np.random.default_rng(4)
    params = {"w": rng.standard_normal(3), "t": np.array(0.1), "u": np.ones(2)}
    xs = rng.standard_normal((5, 3))

    def loss(p, x):
        return fnp.sum(fnp.where(x > p["t"], x * p["w"], 0.0) ** 2)

    got = funcgrad.clipped_grad_sum(loss, 0.5)(params, xs)
    want, _ = _materialised(loss, params, xs, clip=0.5)
    _close(got, want, rtol=1e-12, atol=1e-14)
    assert not np.asarray(got["t"]).any() and not np.asarray(got["u"]).any()
