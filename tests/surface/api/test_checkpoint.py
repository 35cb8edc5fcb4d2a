"""Checkpointing as seen by memory_report: fewer residual bytes, identical gradients.

The expected byte counts are derived by hand from what each backward pass needs, so these tests pin
down both the checkpoint/remat and scan(checkpoint=...) trade-offs and the report itself.
"""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad._control_flow import scan
from funcgrad.api import checkpoint, grad, jit, vjp
from funcgrad.introspect import memory_report

L, D, B = 4, 32, 64  # layers, width, batch (float64): activations outweigh the weights
ACT = B * D * 8  # bytes of one activation


def layer(p, x):
    w, b = p
    return fnp.tanh(x @ w + b)


def make_loss(policy):
    lay = layer if policy == "no checkpoint" else checkpoint(layer, policy=policy)

    def loss(params, x):
        for p in params:
            x = lay(p, x)
        return (x**2).sum()

    return loss


@pytest.fixture(scope="module")
def mlp_args():
    rng = np.random.default_rng(0)
    params = [(rng.standard_normal((D, D)) / np.sqrt(D), rng.standard_normal(D)) for _ in range(L)]
    return params, rng.standard_normal((B, D))


def residual_bytes(fun, *args) -> int:
    return sum(np.asarray(r).nbytes for r in vjp(fun, *args)[1].residuals)


W_BYTES, B_BYTES = L * D * D * 8, L * D * 8

# Without checkpointing each layer keeps its input x and tanh' = 1 - tanh^2 (its weight is an
# argument, its bias is not needed); the loss keeps 2x. A checkpointed layer keeps only its inputs
# (weight, bias, x) and recomputes tanh' during the backward pass.
EXPECTED = {
    "no checkpoint": W_BYTES + (2 * L + 1) * ACT,
    None: W_BYTES + B_BYTES + (L + 1) * ACT,
    "nothing_saveable": W_BYTES + B_BYTES + (L + 1) * ACT,
    # tanh' is recomputed from the saved dot (and the bias): JAX's rule, and jax's bytes (181248).
    "dots_saveable": W_BYTES + B_BYTES + (2 * L + 1) * ACT,
    # As without a checkpoint: the bias, not needed by the backward pass, is not kept.
    "everything_saveable": W_BYTES + (2 * L + 1) * ACT,
}


@pytest.mark.parametrize("policy", list(EXPECTED), ids=str)
def test_checkpointed_mlp_keeps_fewer_bytes_and_the_same_gradients(policy, mlp_args):
    loss = make_loss(policy)
    report = memory_report(loss, *mlp_args)
    assert report.total_bytes == residual_bytes(loss, *mlp_args) == EXPECTED[policy]
    g = grad(loss)(*mlp_args)
    g_ref = grad(make_loss("no checkpoint"))(*mlp_args)
    for a, b in zip(g, g_ref):
        np.testing.assert_allclose(np.asarray(a[0]), np.asarray(b[0]), rtol=1e-12, atol=0)
        np.testing.assert_allclose(np.asarray(a[1]), np.asarray(b[1]), rtol=1e-12, atol=0)


def test_checkpointed_rows_are_inputs_not_derivative_values(mlp_args):
    rows = memory_report(make_loss(None), *mlp_args).rows
    # Only layer boundaries are kept: arguments, each checkpoint's output (tanh) and the loss's 2x.
    assert {r.origin for r in rows if r.kind == "computed"} == {"tanh", "mul"}
    plain = memory_report(make_loss("no checkpoint"), *mlp_args).rows
    assert sum(r.origin == "sub" for r in plain) == L  # 1 - tanh^2, one per layer


def test_checkpoint_under_jit_keeps_the_same_bytes(mlp_args):
    loss = jit(make_loss(None))
    assert memory_report(loss, *mlp_args).total_bytes == residual_bytes(loss, *mlp_args)


T = 16  # scan steps


def rnn(w, c0, xs, ck):
    def step(c, x):
        c = fnp.tanh(c @ w + x)
        return c, (c**2).sum()

    c, ys = scan(step, c0, xs, checkpoint=ck)
    return ys.sum() + c.sum()


@pytest.mark.parametrize(
    "ck, expected",
    [
        # Per step: the carry, tanh' and 2c for the ys; plus w.
        (False, D * D * 8 + 3 * T * ACT),
        # Per step only the carry (and the xs, to recompute each step).
        (True, D * D * 8 + 2 * T * ACT),
        # sqrt(T) = 4 chunk carries, and the xs.
        ("sqrt", D * D * 8 + T * ACT + 4 * ACT),
    ],
    ids=["plain", "checkpoint", "sqrt"],
)
def test_scan_checkpoint_keeps_fewer_bytes_and_the_same_gradients(ck, expected):
    rng = np.random.default_rng(1)
    w = rng.standard_normal((D, D)) / np.sqrt(D)
    c0, xs = rng.standard_normal((B, D)), rng.standard_normal((T, B, D))

    def f(w, c0, xs):
        return rnn(w, c0, xs, ck)

    report = memory_report(f, w, c0, xs)
    assert report.total_bytes == residual_bytes(f, w, c0, xs) == expected
    g = grad(f, argnums=(0, 1))(w, c0, xs)
    g_ref = grad(lambda w, c0, xs: rnn(w, c0, xs, False), argnums=(0, 1))(w, c0, xs)
    for a, b in zip(g, g_ref):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-12)
    if ck is False:
        # The per-step values are attributed to the lines of the scan body.
        inner = [r for r in report.rows if "(in scan)" in r.origin]
        assert inner and all(r.source_info.function == "rnn.<locals>.step" for r in inner)


# ----------------------------------------------------------------------------------------------
# Under jit: XLA must recompute, not merge the recomputation with the forward pass (NOTE: [remat on
# XLA] in xla_bridge/rules/remat.py).


def _deep_mlp(block: int | None):
    def layers_fn(ps, h):
        for w, b in ps:
            h = fnp.tanh(h @ w + b)
        return h

    f = layers_fn if block is None else checkpoint(layers_fn)
    step = block or 1

    def loss(params, x):
        for i in range(0, len(params), step):
            x = f(params[i : i + step], x)
        return (x * x).mean()

    return loss


@pytest.fixture(scope="module")
def deep_args():
    # Activations (1024 x 32 float32) outweigh the weights (32 x 32): the case checkpointing is for.
    rng = np.random.default_rng(2)
    params = [
        ((rng.standard_normal((32, 32)) / 6).astype(np.float32), np.zeros(32, np.float32)) for _ in range(8)
    ]
    return params, rng.standard_normal((1024, 32)).astype(np.float32)


@pytest.mark.slow
def test_checkpoint_under_jit_plans_less_memory_and_keeps_the_gradients(deep_args):
    temp = {}
    for block in (None, 2):
        loss = _deep_mlp(block)
        g = jit(grad(loss))
        temp[block] = g.lower(*deep_args).compile().memory_analysis().temp_size_in_bytes
        for a, b in zip(g(*deep_args), grad(_deep_mlp(None))(*deep_args)):
            np.testing.assert_allclose(np.asarray(a[0]), np.asarray(b[0]), rtol=2e-5, atol=1e-7)
            np.testing.assert_allclose(np.asarray(a[1]), np.asarray(b[1]), rtol=2e-5, atol=1e-7)
    act = 1024 * 32 * 4
    # Without checkpointing XLA keeps every layer's output (7) plus two working cotangents; blocks
    # of two keep one boundary per block (3) and recompute the other layer of a block at a time
    # (when XLA merged the recomputation with the forward pass, checkpointing cost memory instead).
    assert temp[None] >= 9 * act
    assert temp[2] < temp[None] - act


def test_backward_of_a_checkpoint_is_one_call_kept_apart_from_the_forward_pass(deep_args):
    loss = _deep_mlp(2)
    text = jit(grad(loss)).lower(*deep_args).as_text()
    assert text.count('"stablehlo.if"') == len(deep_args[0]) // 2
    # the recomputation reads its inputs through a barrier made by the lowering (NOTE: [remat
    # barrier]); the jaxpr, as JAX's, holds none
    assert text.count("stablehlo.optimization_barrier") == len(deep_args[0]) // 2
    jaxpr = str(funcgrad.make_jaxpr(grad(loss))(*deep_args))
    assert "differentiated=True" in jaxpr and "optimization_barrier" not in jaxpr


def test_checkpoint_backward_transforms_again(mlp_args):
    # The differentiated call is itself differentiated, batched and compiled.
    def f(x):
        return checkpoint(lambda z: fnp.sin(fnp.tanh(z) * z))(x).sum()

    x = mlp_args[1][0]
    h = grad(lambda x: grad(f)(x).sum())
    np.testing.assert_allclose(np.asarray(jit(h)(x)), np.asarray(h(x)), rtol=1e-12)
    ref = grad(lambda x: grad(lambda z: fnp.sin(fnp.tanh(z) * z).sum())(x).sum())(x)
    np.testing.assert_allclose(np.asarray(h(x)), np.asarray(ref), rtol=1e-12)
    rows = mlp_args[1][:3]
    batched = funcgrad.vmap(grad(f))(rows)
    np.testing.assert_allclose(np.asarray(jit(funcgrad.vmap(grad(f)))(rows)), np.asarray(batched), rtol=1e-12)
    for r, b in zip(rows, np.asarray(batched)):
        np.testing.assert_allclose(np.asarray(grad(f)(r)), b, rtol=1e-12)


def test_remat_is_the_function_not_a_module():
    assert funcgrad.remat is funcgrad.checkpoint
    g = funcgrad.grad(funcgrad.remat(lambda x: fnp.sin(x) ** 2))(1.0)
    assert float(g) == pytest.approx(np.sin(2.0), rel=1e-15)


def test_grad_of_a_checkpoint_at_a_python_float_is_weak_as_jax():
    # jax.checkpoint's docstring: value_and_grad(checkpoint(g))(2.0) gives two weak float32s
    g = funcgrad.checkpoint(lambda x: fnp.sin(fnp.sin(x)))
    value, grad = funcgrad.value_and_grad(g)(2.0)
    assert value.weak_type and grad.weak_type
    assert float(grad) == pytest.approx(np.cos(np.sin(2.0)) * np.cos(2.0))
    assert not funcgrad.grad(g)(np.float32(2.0)).weak_type


def _saved_but_y(prim, *_, **params):  # (a user's policy: every value but the one named "y")
    return params.get("name") != "y" if prim.name == "name" else True


@pytest.mark.parametrize(
    "policy", ["everything_saveable", "nothing_saveable", "save_any_names_but_these", "but_y"]
)
@pytest.mark.parametrize("use_jit", [False, True])
def test_debug_print_inside_checkpoint_runs_again_as_jaxs(capsys, policy, use_jit):
    # JAX's rule (debugging_primitives_test test_remat_of_debug_print): a print the policy does not
    # save is recomputed in the backward pass and prints again; a saved one prints once.
    jax = pytest.importorskip("jax")
    pytest.importorskip("jax.ad_checkpoint")
    import funcgrad.ad_checkpoint  # noqa: F401 - (both libraries' submodule by attribute below)

    def run(lib):
        def f_(x):
            y = lib.ad_checkpoint.checkpoint_name(x + 1.0, "y")
            z = lib.ad_checkpoint.checkpoint_name(y * 2.0, "z")
            lib.debug.print("y: {}, z: {}", y, z)
            return lib.numpy.exp(z)

        pols = lib.checkpoint_policies
        pol = {
            "everything_saveable": pols.everything_saveable,
            "nothing_saveable": pols.nothing_saveable,
            "save_any_names_but_these": pols.save_any_names_but_these("z"),
            "but_y": _saved_but_y,
        }[policy]
        g = lib.grad(lib.checkpoint(f_, policy=pol))
        out = (lib.jit(g) if use_jit else g)(2.0)
        lib.effects_barrier()
        return float(out), capsys.readouterr().out

    want, got = run(jax), run(funcgrad)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    assert got[1] == want[1]
    assert want[1].count("y: 3.0, z: 6.0") == (1 if policy in ("everything_saveable", "but_y") else 2)


def test_checkpoint_hands_on_numpy_values_canonical_in_32_bit_mode_as_jax():
    # Found by the fuzzer (32-bit: checkpoint of max of a 0-d float64 array was float64): JAX's
    # checkpoint converts 64-bit NumPy inputs to 32 bits when x64 is off, as jit does.
    import jax
    from jax._src import config as jax_config

    x = np.ones(()) * 0.5
    with funcgrad.enable_x64(False):
        got = [funcgrad.checkpoint(f)(x).dtype for f in (lambda x: x, lambda x: funcgrad.numpy.max(x))]
    with jax_config.enable_x64(False):
        want = [jax.checkpoint(f)(x).dtype for f in (lambda x: x, lambda x: jax.numpy.max(x))]
    assert got == want == [np.float32, np.float32]
