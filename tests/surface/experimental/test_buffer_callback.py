"""``funcgrad.experimental.buffer_callback`` against jax's: the callback sees the same buffers
(shapes, dtypes, writeability, execution stage), writes results in place, batches by
``vmap_method``, aliases an operand's buffer, runs for its side effect, and refuses what jax's
refuses (funcgrad/experimental/buffer_callback.py, xla_bridge/rules/callbacks.py)."""

import jax
import jax.experimental.buffer_callback as jbc
import numpy as np
import pytest

import funcgrad
import funcgrad.experimental.buffer_callback as fbc

X = np.arange(12, dtype=np.float32).reshape(3, 4)
Y = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)


def _seen(lib, bc):
    seen = {}

    def callback(ctx, out, x, *, scale):
        seen.update(
            stage=str(ctx.stage).rsplit(".", 1)[-1],
            shapes=(x.shape, out["y"].shape),
            dtypes=(str(x.dtype), str(out["y"].dtype)),
            writeable=(x.writeable, out["y"].writeable),
        )
        np.asarray(out["y"])[...] = np.asarray(x) * np.asarray(scale)

    f = bc.buffer_callback(callback, {"y": lib.ShapeDtypeStruct(X.shape, X.dtype)})
    eager = f(X, scale=np.float32(2))["y"]
    jitted = lib.jit(lambda x: f(x, scale=np.float32(3)))(X)["y"]
    return seen, np.asarray(eager), np.asarray(jitted)


def test_callback_as_jax():
    j_seen, j_eager, j_jit = _seen(jax, jbc)
    f_seen, f_eager, f_jit = _seen(funcgrad, fbc)
    assert f_seen == j_seen
    np.testing.assert_array_equal(f_eager, j_eager)
    np.testing.assert_array_equal(f_jit, j_jit)


@pytest.mark.parametrize("method", ["sequential", "expand_dims", "broadcast_all"])
def test_vmap_as_jax(method):
    def callback(ctx, out, x, y):
        np.asarray(out)[...] = np.asarray(x) + np.asarray(y)

    def run(lib, bc):
        f = bc.buffer_callback(callback, lib.ShapeDtypeStruct(X.shape[1:], X.dtype), vmap_method=method)
        return np.asarray(lib.vmap(f, in_axes=(0, None))(X, Y[0]))

    np.testing.assert_array_equal(run(funcgrad, fbc), run(jax, jbc))


def test_aliases_side_effects_and_errors_as_jax():
    pointers = []

    def same_buffer(ctx, out, x):
        pointers.append(np.asarray(x).ctypes.data == np.asarray(out).ctypes.data)

    fbc.buffer_callback(
        same_buffer, funcgrad.ShapeDtypeStruct(X.shape, X.dtype), input_output_aliases={0: 0}
    )(X)
    assert pointers == [True]
    calls = []
    effect = fbc.buffer_callback(
        lambda *a: calls.append(1), funcgrad.ShapeDtypeStruct((), np.float32), has_side_effect=True
    )
    funcgrad.jit(lambda: (effect(), 1.0)[1])()  # (its result unused: still called)
    assert calls == [1]

    def errors(lib, bc):
        out = []
        f = bc.buffer_callback(
            lambda ctx, o, x: None, lib.ShapeDtypeStruct((3,), np.int32), input_output_aliases={0: 0}
        )
        g = bc.buffer_callback(lambda ctx, o, x: 1, lib.ShapeDtypeStruct((3, 4), np.float32))
        h = bc.buffer_callback(lambda ctx, o, x: None, lib.ShapeDtypeStruct((), np.float32))
        for run in (lambda: f(X), lambda: g(X), lambda: lib.jvp(h, (np.float32(1),), (np.float32(1),))):
            try:
                run()
                out.append(None)
            except ValueError as e:
                out.append(("ValueError", str(e)[:40]))
            except (jax.errors.JaxRuntimeError, funcgrad.errors.JaxRuntimeError) as e:
                # (XLA's runtime error around the callback's; funcgrad's names the device first)
                out.append(("JaxRuntimeError", "must not return any values" in str(e)))
        return out

    assert errors(funcgrad, fbc) == errors(jax, jbc)
