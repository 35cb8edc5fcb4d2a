"""``funcgrad.jit``: compiled results equal eager ones, compositions with grad/vmap, the trace
cache, static and donated arguments, device-resident outputs, errors, and the AOT API.
"""

from __future__ import annotations

import functools
import gc
import json
import os
import pathlib
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import xla_bridge
from funcgrad.jitting import RetraceWarning, jit
from funcgrad.kernel import core
from funcgrad.kernel.array import Array

ROOT = str(pathlib.Path(__file__).resolve().parents[3])


def close(a, b, dtype=np.float64):
    tol = dict(rtol=2e-5, atol=1e-6) if np.dtype(dtype) == np.float32 else dict(rtol=1e-10, atol=1e-12)
    for x, y in zip(funcgrad.tree_util.tree_leaves(a), funcgrad.tree_util.tree_leaves(b)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), **tol)


def mlp(params, x):
    (w1, b1), (w2, b2) = params
    h = fnp.tanh(x @ w1 + b1)
    return h @ w2 + b2


def loss(params, x, y):
    return fnp.mean((mlp(params, x) - y) ** 2)


def make_params(rng, dtype):
    def p(*s):
        return rng.standard_normal(s).astype(dtype)

    return ((p(4, 8), p(8)), (p(8, 2), p(2)))


# ----------------------------------------------------------------------------------------------
# Values and compositions


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_jit_equals_eager_and_compositions(dtype, rng):
    params = make_params(rng, dtype)
    x = rng.standard_normal((5, 4)).astype(dtype)
    y = rng.standard_normal((5, 2)).astype(dtype)
    close(jit(loss)(params, x, y), loss(params, x, y), dtype)
    g_eager = funcgrad.grad(loss)(params, x, y)
    close(funcgrad.grad(jit(loss))(params, x, y), g_eager, dtype)
    close(jit(funcgrad.grad(loss))(params, x, y), g_eager, dtype)
    single = lambda p, xi, yi: loss(p, xi[None], yi[None])  # noqa: E731
    per_ex = funcgrad.vmap(funcgrad.grad(single), in_axes=(None, 0, 0))
    close(jit(per_ex)(params, x, y), per_ex(params, x, y), dtype)
    close(funcgrad.vmap(jit(lambda xi: mlp(params, xi)))(x), mlp(params, x), dtype)
    # The gradient's dtype follows the inputs (float32 stays float32).
    assert np.asarray(jit(funcgrad.grad(loss))(params, x, y)[0][0]).dtype == dtype


def test_higher_order_derivatives_through_jit():
    f = lambda x: fnp.sin(x) * x**2  # noqa: E731
    x = 0.7
    d2 = funcgrad.grad(funcgrad.grad(jit(f)))(x)
    expect = -np.sin(x) * x**2 + 4 * x * np.cos(x) + 2 * np.sin(x)
    np.testing.assert_allclose(float(d2), expect, rtol=1e-12)
    np.testing.assert_allclose(float(jit(funcgrad.grad(funcgrad.grad(f)))(x)), expect, rtol=1e-12)
    t = funcgrad.jvp(jit(f), (x,), (1.0,))[1]
    np.testing.assert_allclose(float(t), np.cos(x) * x**2 + 2 * x * np.sin(x), rtol=1e-12)


def test_jit_of_custom_jvp_and_custom_vjp():
    @funcgrad.custom_jvp
    def softplus(x):
        return fnp.log1p(fnp.exp(x))

    @softplus.defjvp
    def softplus_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return softplus(x), t * funcgrad.nn.sigmoid(x) if hasattr(funcgrad, "nn") else t / (1 + fnp.exp(-x))

    @funcgrad.custom_vjp
    def clip_grad(x):
        return x * 2.0

    clip_grad.defvjp(lambda x: (x * 2.0, None), lambda res, g: (fnp.clip(g, -1.0, 1.0),))
    x = np.array([-3.0, 0.5, 4.0])
    close(jit(softplus)(x), np.log1p(np.exp(x)))
    close(jit(funcgrad.grad(lambda v: softplus(v).sum()))(x), 1 / (1 + np.exp(-x)))
    close(funcgrad.grad(jit(lambda v: softplus(v).sum()))(x), 1 / (1 + np.exp(-x)))
    close(jit(clip_grad)(x), 2 * x)
    close(jit(funcgrad.grad(lambda v: (clip_grad(v) * 5.0).sum()))(x), np.ones(3))
    close(funcgrad.grad(jit(lambda v: (clip_grad(v) * 5.0).sum()))(x), np.ones(3))


def test_checkpoint_inside_jit():
    f = funcgrad.checkpoint(lambda x: fnp.sin(fnp.sin(x)))
    g = jit(funcgrad.grad(lambda x: f(x).sum()))
    x = np.linspace(0, 1, 4)
    close(g(x), np.cos(np.sin(x)) * np.cos(x))


def test_pytrees_kwargs_and_methods():
    @jit
    def f(d, *, scale):
        return {"sum": d["a"] + d["b"], "prod": (d["a"] * d["b"] * scale, None)}

    out = f({"a": np.ones(2), "b": np.full(2, 3.0)}, scale=2.0)
    close(out["sum"], [4.0, 4.0])
    close(out["prod"][0], [6.0, 6.0])
    assert out["prod"][1] is None

    class Model:
        def __init__(self, w):
            self.w = w

        @functools.partial(jit, static_argnums=0)
        def apply(self, x):
            return x * 2.0

    assert float(Model(1).apply(3.0)) == 6.0
    assert jit(lambda: ())() == ()


HELP_SCRIPT = """
import importlib, json, pkgutil, pydoc
import funcgrad, funcgrad.numpy as fnp
from funcgrad import jitting

def doc():
    return {"doc": funcgrad.jit.__doc__ == jitting.jit.__doc__, "is_fn": funcgrad.jit is jitting.jit,
            "help": "Compile ``fun`` with XLA" in pydoc.render_doc(funcgrad.jit)}

seen = {}
float(funcgrad.grad(fnp.sin)(0.5))
seen["after_grad"] = doc()
for m in pkgutil.walk_packages(funcgrad.__path__, "funcgrad."):
    if m.name != "funcgrad.__main__":
        importlib.import_module(m.name)
seen["after_imports"] = doc()
seen["jit_works"] = float(funcgrad.jit(lambda x: x + 1)(1.0))
print(json.dumps(seen))
"""


@pytest.mark.slow
def test_funcgrad_jit_is_the_function_whatever_ran_before():
    # The module implementing jit is funcgrad.jitting, so no import rebinds ``funcgrad.jit``:
    # help(funcgrad.jit) shows the function's docstring after a grad and after importing every
    # submodule (in a fresh process, so nothing else ran first).
    out = run_py(HELP_SCRIPT)
    want = {"doc": True, "is_fn": True, "help": True}
    assert out["after_grad"] == want and out["after_imports"] == want
    assert out["jit_works"] == 2.0


# ----------------------------------------------------------------------------------------------
# Device-resident outputs


def test_outputs_are_device_arrays_and_chaining_stays_on_device():
    f = jit(lambda x: x * 2.0 + 1.0)
    x = np.arange(4.0)
    y = f(x)
    assert type(y) is Array and y._value is None and y._buffer is not None
    z = f(y)
    assert y._value is None  # fed to the next call as a device buffer, never read back
    assert z.shape == (4,) and z.dtype == np.float64
    close(z, (x * 2 + 1) * 2 + 1)
    # A host-backed Array keeps the buffer made for it (it is immutable).
    a = fnp.asarray(np.ones(3))
    f(a)
    assert a._buffer is not None and a._value is not None


def test_weak_types_survive_jit():
    f = jit(lambda x: x * 2)
    assert f(1.0).weak_type
    assert not f(np.float32(1.0)).weak_type
    assert f(np.float32(1.0)).dtype == np.float32
    # A weak scalar output combines with float32 without promotion.
    assert (np.ones(2, np.float32) + f(1.0)).dtype == np.float32


# ----------------------------------------------------------------------------------------------
# The cache


def test_retrace_only_on_new_shapes_dtypes_and_trees():
    f = jit(lambda x: x + 1)
    f(np.ones(3))
    f(np.zeros(3))
    f(fnp.ones(3))
    assert f.cache_info().misses == 1 and f.cache_info().hits == 2
    f(np.ones(4))
    f(np.ones(3, np.float32))
    f(1.0)
    f(np.float64(1.0))  # strong f64[] differs from the weak Python scalar
    assert f.cache_info().misses == 5
    f(2.0)
    f(np.ones(4))
    assert f.cache_info().misses == 5 and f.cache_info().hits == 4
    g = jit(lambda t: t[0])
    g((np.ones(2), np.ones(2)))
    g([np.ones(2), np.ones(2)])
    assert g.cache_info().misses == 2


def test_top_level_leaves_of_every_kind_hit_the_native_cache():
    # NumPy arrays, scalars, device-backed Arrays and host-backed Arrays, alone or mixed, as the
    # hot path of a call sees them; each combination of types stages once and then hits.
    f = jit(lambda a, b: a * b + 1)
    dev = f(np.ones(3), np.ones(3))  # a device-backed Array
    host = fnp.asarray(np.full(3, 2.0))  # a host-backed Array
    cases = [(np.arange(3.0), np.ones(3)), (dev, np.ones(3)), (dev, dev), (host, dev), (np.ones(3), 2.0)]
    for a, b in cases:
        for _ in range(3):
            close(f(a, b), np.asarray(a) * np.asarray(b) + 1)
    info = f.cache_info()
    assert info.misses == 2  # f64[3] x f64[3] (every Array/NumPy mix) and f64[3] x weak f64[]
    assert info.hits == 3 * len(cases) + 1 - info.misses


def test_general_path_shares_the_cache():
    f = jit(lambda x: x * 3.0)
    f(np.ones(2))
    f._call((np.ones(2),), {})  # the staged route (taken while jax's config is loaded)
    close(f._call((np.ones(2),), {}), [3.0, 3.0])
    assert f.cache_info().misses == 1


def test_retrace_warning_names_the_cause():
    f = jit(lambda x: x.sum())
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for n in range(1, 12):
            f(np.ones(n))
    msgs = [str(x.message) for x in w if issubclass(x.category, RetraceWarning)]
    assert len(msgs) == 1
    assert "traced 9 times" in msgs[0] and "changed shape from (8,) to (9,)" in msgs[0]
    assert "x" in msgs[0]


def test_static_arguments():
    calls = []

    def f(x, n, *, mode="add"):
        calls.append(1)
        return x + n if mode == "add" else x * n

    g = jit(f, static_argnums=1, static_argnames="mode")
    close(g(np.ones(2), 3), [4.0, 4.0])
    close(g(np.ones(2), 3), [4.0, 4.0])
    close(g(np.ones(2), 3, mode="mul"), [3.0, 3.0])
    close(g(np.ones(2), n=5), [6.0, 6.0])  # static by keyword too
    assert len(calls) == 3
    close(g(np.ones(2), 4), [5.0, 5.0])  # a new static value retraces
    assert len(calls) == 4 and g.cache_info().misses == 4
    with pytest.raises(TypeError, match="hashable"):
        g(np.ones(2), [1, 2])
    # Python control flow on a static argument is fine.
    h = jit(lambda x, k: x if k > 0 else -x, static_argnums=(1,))
    close(h(np.ones(2), -1), [-1.0, -1.0])


def test_donation():
    f = jit(lambda x, y: x + y, donate_argnums=0)
    a = f(np.ones(3), np.ones(3))  # a device-backed Array
    b = f(a, np.ones(3))
    close(b, [3.0, 3.0, 3.0])
    assert a._buffer.is_deleted()  # donated for real: XLA reused its buffer
    # Any later use of the donated Array says what happened and how to avoid it.
    uses = [
        lambda: np.asarray(a),
        lambda: a + 1.0,
        lambda: f(a, np.ones(3)),
        lambda: jit(lambda x: x * 2)(a),
    ]
    for use in uses:
        with pytest.raises(xla_bridge.XlaBridgeError, match="donated to an earlier jitted call") as e:
            use()
        assert "output" in str(e.value) and "copy" in str(e.value)
    # Donating a host copy keeps the value usable (NumPy arguments are copied to the device).
    c = f(np.ones(3), np.ones(3))
    f(np.array(c), np.ones(3))
    close(c, [2.0, 2.0, 2.0])
    # A host-backed Array is deleted too, as in JAX: the call consumed its device copy.
    h = fnp.asarray(np.ones(3))
    close(f(h, np.ones(3)), [2.0, 2.0, 2.0])
    assert h.is_deleted()
    with pytest.raises(RuntimeError, match=r"^Array has been deleted with shape=float64\[3\]\."):
        h + 1.0
    assert "tf.aliasing_output" in f.lower(np.ones(3), np.ones(3)).as_text()


@pytest.mark.parametrize(
    "copy", [fnp.copy, lambda x: x.copy(), fnp.array, lambda x: fnp.asarray(x, copy=True)]
)
def test_donating_a_copy_leaves_the_original_alive(copy):
    f = jit(lambda x: x * 2.0, donate_argnums=0)
    a = jit(lambda v: v + 1.0)(np.ones(3))  # device-backed
    c = copy(a)
    assert c is not a
    close(f(c), [4.0, 4.0, 4.0])
    close(a * 1.0, [2.0, 2.0, 2.0])  # the original was not donated
    # jax converts an Array under copy=False when a dtype asks for it (NumPy refuses): the original
    # stays alive and unchanged
    converted = fnp.asarray(a, dtype=np.float32, copy=False)
    assert converted.dtype == np.float32
    close(converted, [2.0, 2.0, 2.0])
    close(a * 1.0, [2.0, 2.0, 2.0])


def test_donation_by_name_and_by_keyword():
    g = jit(lambda x, y: x * y, donate_argnames="y")
    y = jit(lambda v: v + 1.0)(np.ones(3))
    close(g(np.full(3, 2.0), y=y), [4.0, 4.0, 4.0])  # passed by keyword: donated all the same
    assert y._buffer.is_deleted()
    text = g.lower(np.ones(3), y=np.ones(3)).as_text()
    assert "%arg0: tensor<3xf64>," in text and "%arg1: tensor<3xf64> {tf.aliasing_output" in text
    with pytest.raises(ValueError, match="invalid argnames {'z'} in donate_argnames"):
        jit(lambda x, y: x, donate_argnames="z")
    k = jit(lambda x, n: x * n[0], static_argnums=1, donate_argnums=0)
    close(k(np.ones(2), (3, 4)), [3.0, 3.0])  # a static pytree does not shift the donated flags
    with pytest.raises(ValueError, match="static_argnames and donate_argnames cannot intersect"):
        jit(lambda x, y: x, static_argnums=1, donate_argnums=1)


def test_argnums_outside_the_signature_are_refused_at_jit_time():
    with pytest.raises(ValueError, match=r"static_argnums refers to argument 3, but f takes 2"):

        @functools.partial(jit, static_argnums=3)
        def f(x, y):
            return x

    jax = pytest.importorskip("jax")
    for j in (jax.jit, jit):  # (JAX's words first)
        for what in ("static_argnums", "donate_argnums"):
            msg = rf"^Jitted function has {what}=\(5,\), but only accepts 2 positional arguments."
            with pytest.raises(ValueError, match=msg):
                j(lambda x, y=1.0: x, **{what: 5})

    with pytest.raises(ValueError, match="donate_argnums"):
        jit(lambda x: x, donate_argnums=1)
    with pytest.raises(ValueError, match="static_argnums"):
        jit(lambda x, *, n: x, static_argnums=1)  # keyword-only: static_argnames, as the error says
    # Negative numbers count from the end; *args accepts any position, checked at call time.
    g = jit(lambda x, n: x * n, static_argnums=-1)
    close(g(np.ones(2), 3), [3.0, 3.0])
    assert g._static_argnums == (1,)
    h = jit(lambda *a: a[0] * a[2], static_argnums=2)
    close(h(np.ones(2), 0.0, 4), [4.0, 4.0])
    with pytest.raises(ValueError, match="called with 2 positional arguments"):
        h(np.ones(2), 0.0)


def test_backend_and_device_are_honoured_or_refused():
    x = np.arange(3.0)
    cpu = funcgrad.devices("cpu")[0]
    for f in (
        jit(lambda v: v * 2, backend="cpu"),
        jit(lambda v: v * 2, device=cpu),
        jit(backend="cpu")(lambda v: v * 2),
    ):
        close(f(x), 2 * x)
        assert f(x)._buffer._sharding._fg_device is cpu
    with pytest.raises(ValueError, match="jit\\(<lambda>\\): backend='tpu' is not available"):
        jit(lambda v: v, backend="tpu")
    with pytest.raises(TypeError, match="device= must be a Device.*use backend='cpu'"):
        jit(lambda v: v, device="cpu")
    with pytest.raises(TypeError, match="device= must be a Device"):
        jit(lambda v: v, device=0)
    with pytest.raises(ValueError, match="device= or backend=, not both"):
        jit(lambda v: v, device=cpu, backend="cpu")


DEVICES_SCRIPT = """
import json, numpy as np
import funcgrad, funcgrad.numpy as fnp
d0, d1 = funcgrad.devices()
where = lambda a: a._buffer._sharding._fg_device.id
f = funcgrad.jit(lambda x: fnp.sin(x) * 2.0, device=d1)
x = np.linspace(0.0, 1.0, 3)
y = f(x)
out = {"call": [where(y), where(f(x))],
       "chained": where(funcgrad.jit(lambda v: v + 1)(y)),
       "aot": where(f.lower(x).compile()(x)),
       "static": where(funcgrad.jit(lambda v, n: v * n, static_argnums=1, device=d1)(x, 3)),
       "donated": where(funcgrad.jit(lambda v: v * 2, device=d1, donate_argnums=0)(x)),
       "vmap": where(funcgrad.vmap(f)(np.ones((2, 3)))),
       "grad_ok": bool(np.allclose(funcgrad.grad(lambda v: f(v).sum())(x), 2 * np.cos(x))),
       "jaxpr": "device=cpu:1" in str(funcgrad.make_jaxpr(f)(x))}
print(json.dumps(out))
"""


@pytest.mark.slow
def test_device_places_the_computation():
    out = run_py(DEVICES_SCRIPT, {"FUNCGRAD_NUM_CPU_DEVICES": "2"})
    assert out["call"] == [1, 1] and out["aot"] == 1 and out["static"] == 1 and out["donated"] == 1
    assert out["vmap"] == 1 and out["grad_ok"] and out["jaxpr"]
    # jit(device=)'s results are committed there, so a function without a device follows them (as
    # jax 0.10.2: NOTE: [committed arrays] in xla_bridge/committed.py)
    assert out["chained"] == 1


def test_keep_unused_and_inline_are_honoured():
    f = jit(lambda x, unused: x * 2, keep_unused=True)
    text = f.lower(np.ones(2), np.ones(3)).as_text()
    assert "%arg1: tensor<3xf64>" in text  # the unused input stays a parameter
    close(f(np.ones(2), np.ones(3)), [2.0, 2.0])
    close(jit(lambda x, unused: x * 2)(np.ones(2), np.ones(3)), [2.0, 2.0])  # kept with False too
    inner = jit(lambda x: fnp.sin(x), inline=True)
    outer = jit(lambda x: inner(x) + 1.0)
    assert "call @" not in outer.lower(0.5).as_text()  # (inlined into the trace, as JAX's)
    assert "call @" in jit(lambda x: jit(fnp.sin)(x) + 1.0).lower(0.5).as_text()  # (not inlined)
    close(outer(0.5), np.sin(0.5) + 1.0)
    with pytest.raises(TypeError, match="unsupported options"):
        jit(lambda x: x, abstracted_axes=())


def test_lowered_text_dialects():
    lowered = jit(lambda x: fnp.sin(x) * 2.0).lower(np.ones(3))
    assert lowered.as_text() == lowered.as_text("stablehlo")
    assert "stablehlo.sine" in lowered.as_text() and "loc(" not in lowered.as_text()
    # debug_info: the operations' locations (NOTE: [operation locations]), as JAX's
    assert 'loc("x")' in lowered.as_text(debug_info=True)
    assert 'loc("jit(<lambda>)/sin")' in lowered.as_text(debug_info=True)
    assert 'loc("-"' not in lowered.as_text(debug_info=True)  # (no positions in funcgrad's own text)
    hlo = lowered.as_text("hlo")
    assert hlo.startswith("HloModule") and "sine(" in hlo
    assert 'op_name="jit(<lambda>)/sin"' in lowered.as_text("hlo", debug_info=True)
    # compiler_ir gives the compiler's objects, as JAX's: an MLIR module and an XlaComputation.
    assert "stablehlo.sine" in str(lowered.compiler_ir()) and "stablehlo.sine" in str(
        lowered.compiler_ir("stablehlo")
    )
    assert lowered.compiler_ir("hlo").as_hlo_text() == hlo
    for bad in (lowered.as_text, lowered.compiler_ir):
        with pytest.raises(ValueError, match="unknown dialect: 'mhlo'"):
            bad("mhlo")


_DONATION_CASES = {
    "same type": (lambda x, y: x + y, (0, 1)),  # x aliased to the output; y not usable
    "by element count": (lambda x, y: (x > y).astype(np.int32), (0,)),  # XLA may reuse it
    "reduction": (lambda x, y: (x * y).sum(), (0, 1)),  # no output can: both stay alive
    "identity": (lambda x, y: (x, y), (1,)),
}


@pytest.mark.parametrize("case", sorted(_DONATION_CASES))
def test_donated_arguments_are_deleted_as_in_jax(case):
    # Which donated arguments a call deletes, and JAX's warning for those it cannot use: host-backed
    # (fresh) and device-backed (jit output) Arrays alike; NumPy arguments are never deleted.
    import jax
    import jax.numpy as jnp

    fun, donate = _DONATION_CASES[case]

    def outcome(jit_, make):
        args = [make(np.arange(3.0, dtype=np.float32)), make(np.ones(3, np.float32))]
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = jit_(fun, donate_argnums=donate)(*args)
        return [a.is_deleted() for a in args], [str(m.message).split(":")[0] for m in w], out

    for make_j, make_f in [(jnp.asarray, fnp.asarray), (jax.jit(lambda v: v), jit(lambda v: v))]:
        want, want_warn, want_out = outcome(jax.jit, make_j)
        got, got_warn, got_out = outcome(jit, make_f)
        assert got == want and got_warn == want_warn, case
        for g, w in zip(funcgrad.tree_util.tree_leaves(got_out), jax.tree_util.tree_leaves(want_out)):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    arg = np.ones(3, np.float32)
    jit(fun, donate_argnums=donate)(arg, np.ones(3, np.float32))
    close(arg, np.ones(3))  # a NumPy argument is copied to the device: never deleted


def test_unusable_donation_warns_as_jax():
    # JAX's warning when no output can reuse a donated buffer (equinox's donate="warn" test)
    f = jit(lambda x, y: x + fnp.sum(y), donate_argnums=(0, 1))
    with pytest.warns(UserWarning, match=r"^Some donated buffers were not usable: float64\[10\]\.\n"):
        close(f(np.ones(()), np.ones(10)), 11.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a usable donation (an output of the same type) is quiet
        close(jit(lambda x: 2 * x, donate_argnums=0)(np.ones(3)), 2 * np.ones(3))


def test_lowered_compile_compiler_options():
    lowered = jit(lambda x: 2.0 * x).lower(np.ones(3))
    close(lowered.compile(compiler_options={"xla_cpu_enable_fast_math": True})(np.ones(3)), 2 * np.ones(3))
    # XLA refuses an unknown option or a bad value; as in JAX the error is a JaxRuntimeError.
    with pytest.raises(funcgrad.errors.JaxRuntimeError, match="No such compile option: 'not an option'"):
        lowered.compile(compiler_options={"not an option": "1"})
    with pytest.raises(funcgrad.errors.JaxRuntimeError, match="not a valid bool value"):
        lowered.compile(compiler_options={"xla_cpu_enable_fast_math": "maybe"})
    with pytest.raises(TypeError, match="compiler_options must be a dict"):
        lowered.compile(compiler_options=[("xla_cpu_enable_fast_math", True)])


def test_jit_compiler_options():
    # jit(compiler_options=) as JAX's (api_test's compile-options tests): options reach XLA (an
    # unknown one is XLA's error, also after valid compiles of the same function); the build
    # options' own fields (optimization_level, ..._effort) are set as fields, not parsed by name.
    f = lambda x: fnp.sqrt(x**2) + 1.0  # noqa: E731
    for options in (
        {"xla_embed_ir_in_executable": True, "xla_dump_max_hlo_modules": 200},
        {"exec_time_optimization_effort": 0.0, "optimization_level": 1, "memory_fitting_level": 0},
    ):
        close(jit(f, compiler_options=options)(-2.0), 3.0)
    for bad, words in (({"invalid_key": "v"}, "No such compile option: 'invalid_key'"),
                       ({"exec_time_compilation_effort": 0.0}, "No such compile option")):  # fmt: skip
        with pytest.raises(funcgrad.errors.JaxRuntimeError, match=words):
            jit(f, compiler_options=bad)(1.0)
    lowered = jit(f, compiler_options={"invalid_key": "v"}).lower(1.0)  # (jit's options, then compile's)
    with pytest.raises(funcgrad.errors.JaxRuntimeError, match="invalid_key"):
        lowered.compile()
    # a nested jit's options: JAX's ValueError (pjit_test's test_compiler_options_nested_jit_error;
    # funcgrad dropped them and computed)
    inner = jit(f, compiler_options={"invalid_key": "v"})
    with pytest.raises(ValueError, match="`compiler_options` can only be passed to top-level `jax.jit`"):
        jit(lambda x: inner(x + 2.0))(1.0)


# ----------------------------------------------------------------------------------------------
# AOT API and jaxprs


def test_compiled_runtime_executable_as_jax():
    # api_test's test_jit_lower_compile_executable / ..._compiler_ir: Compiled.runtime_executable()
    # is jaxlib's loaded executable (JAX's type), also for a program that returns its argument
    jax = pytest.importorskip("jax")
    for f in (lambda x: x + 4, lambda x: x):
        mine = jit(f).lower(1.0).compile().runtime_executable()
        theirs = jax.jit(f).lower(1.0).compile().runtime_executable()
        assert type(mine) is type(theirs)
        assert len(mine.hlo_modules()) == len(theirs.hlo_modules()) == 1


def test_lower_compile_trace_and_make_jaxpr():
    f = jit(lambda x, y: fnp.sin(x) * y)
    x, y = np.ones(3, np.float32), np.full(3, 2.0, np.float32)
    lowered = f.lower(x, y)
    text = lowered.as_text()
    assert "stablehlo.sine" in text and "tensor<3xf32>" in text
    compiled = lowered.compile()
    close(compiled(x, y), np.sin(1.0) * 2 * np.ones(3), np.float32)
    assert "sine" in compiled.as_text()
    assert "sin" in str(f.trace(x, y).jaxpr)
    jaxpr_text = str(funcgrad.make_jaxpr(lambda a: f(a, a) + 1)(x))
    assert "jit[" in jaxpr_text and "sin" in jaxpr_text
    assert f.eval_shape(x, y).shape == (3,)


def test_mismatched_inputs_are_rejected_before_xla():
    f = jit(lambda x: x * 2)
    compiled = f.lower(np.ones(3, np.float32)).compile()
    # (JAX's words: "Argument types differ ... Argument 'x' compiled with float32[3] and called with ...")
    with pytest.raises(TypeError, match="compiled with float32\\[3\\] and called with int32\\[3\\]"):
        compiled(np.ones(3, np.int32))
    with pytest.raises(TypeError, match="compiled with float32\\[3\\] and called with float32\\[4\\]"):
        compiled(np.ones(4, np.float32))
    from funcgrad.primitives.call import jit_p

    closed = f.trace(np.ones(3, np.float32)).jaxpr
    with pytest.raises(TypeError, match="compiled with float32\\[3\\] and called with float64\\[3\\]"):
        jit_p.bind(np.ones(3, np.float64), jaxpr=closed, name="f", donated_invars=(False,))


# ----------------------------------------------------------------------------------------------
# Errors


def test_python_control_flow_on_traced_value_names_function_argument_and_fixes():
    def step(x, threshold):
        if x.sum() > threshold:
            return x
        return -x

    with pytest.raises(core.ConcretizationTypeError) as e:
        jit(step)(np.ones(3), 1.0)
    msg = str(e.value)
    assert "jit(step)" in msg and "bool()" in msg
    assert "argument" in msg and "x" in msg
    assert "static_argnums" in msg and "lax.cond" in msg and "where" in msg


def test_concretizing_a_traced_value_raises_clearly():
    with pytest.raises(core.ConcretizationTypeError, match="float\\(\\).*jit\\(to_float\\)"):

        @jit
        def to_float(x):
            return float(x)

        to_float(1.0)
    with pytest.raises(core.ConcretizationTypeError, match="numpy.asarray"):
        jit(lambda x: np.asarray(x) + 1)(np.ones(2))


def test_non_array_arguments_and_outputs():
    with pytest.raises(TypeError, match="static"):
        jit(lambda s: s)("a string")
    with pytest.raises(TypeError, match="not an array"):
        jit(lambda x: "out")(1.0)


# ----------------------------------------------------------------------------------------------
# Fresh processes: persistent compilation cache


def run_py(code: str, env: dict | None = None) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": ROOT, **(env or {})},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


CACHED = """
import json, numpy as np
import funcgrad, funcgrad.numpy as fnp
from funcgrad.xla_bridge import compile_cache
f = funcgrad.jit(lambda x: fnp.tanh(x) @ x.T)
out = np.asarray(f(np.ones((3, 3), np.float32))).tolist()
print(json.dumps({"stats": compile_cache.stats(), "out": out}))
"""


@pytest.mark.slow
def test_persistent_cache_skips_compilation_in_a_second_process(tmp_path):
    env = {"FUNCGRAD_COMPILATION_CACHE_DIR": str(tmp_path)}
    first = run_py(CACHED, env)
    second = run_py(CACHED, env)
    assert first["stats"]["misses"] == 1 and first["stats"]["stores"] == 1
    assert second["stats"]["hits"] == 1 and second["stats"]["misses"] == 0
    assert first["out"] == second["out"]


@pytest.mark.slow
def test_experimental_compilation_cache_module_turns_the_cache_on(tmp_path):
    # jax's older switch: set_cache_dir in the program instead of the environment variable.
    code = CACHED.replace(
        "from funcgrad.xla_bridge import compile_cache\n",
        "from funcgrad.xla_bridge import compile_cache\n"
        "from funcgrad.experimental.compilation_cache import compilation_cache as cc\n"
        f"cc.set_cache_dir({str(tmp_path)!r}); cc.reset_cache()\n",
    )
    env = {"FUNCGRAD_COMPILATION_CACHE_DIR": ""}
    first, second = run_py(code, env), run_py(code, env)
    assert first["stats"]["stores"] == 1 and second["stats"]["hits"] == 1
    assert first["out"] == second["out"] and any(tmp_path.iterdir())


def test_jit_of_the_same_function_shares_its_cache():
    traces = []

    def f(x):
        traces.append(1)
        return x * 2

    for _ in range(3):
        jit(f)(np.ones(2))
    assert len(traces) == 1
    assert jit(f)._cache_size() == 1
    jit(f, static_argnums=())(np.ones(2))
    assert len(traces) == 1
    from funcgrad.jitting import NonHashableStaticArgumentError

    with pytest.raises(ValueError, match="Non-hashable static arguments are not supported"):
        jit(lambda x, s: x, static_argnums=1)(1.0, {"a": 1})
    assert issubclass(NonHashableStaticArgumentError, TypeError)


def test_jit_of_a_callable_without_weak_references_raises_at_its_call_as_jax():
    # api_test's test_jit_of_nonweakreferenceable_function: building jit(c) works, calling (or
    # lowering) it raises the weakref TypeError; grad and make_jaxpr of it compute.
    jax = pytest.importorskip("jax")

    class CallableWithSlots:
        __slots__ = []

        def __call__(self, x):
            return x + 1

    for j in (jax.jit, jit):
        f = j(CallableWithSlots())
        with pytest.raises(TypeError, match="cannot create weak reference"):
            f(3)
        with pytest.raises(TypeError, match="cannot create weak reference"):
            f.lower(3)
        with pytest.raises(TypeError, match="cannot create weak reference"):
            j(np.sin)(1.0)
    assert float(funcgrad.grad(CallableWithSlots())(3.0)) == float(jax.grad(CallableWithSlots())(3.0)) == 1.0
    add_one = jax.jit(functools.partial(jax.numpy.add, 1))
    assert float(jit(functools.partial(fnp.add, 1))(2.0)) == float(add_one(2.0)) == 3.0


def test_deleting_a_jitted_closure_frees_what_it_closed_over():
    # JAX's api_test test_jit_reference_dropping: the shared-instance registry holds the function
    # weakly (NOTE: [jit instances hold their function weakly]); no garbage collection needed.
    import weakref

    x = fnp.ones(1 << 16)
    f = (lambda x: lambda: x * 2)(x)
    g = jit(f)
    x = weakref.ref(x)
    g(), g()
    del f
    assert x() is not None  # g still holds f
    assert float(g()[0]) == 2.0
    traces = []

    def h(y):
        traces.append(1)
        return y + 1

    jit(h)(1.0)  # the jitted object is gone, h lives: a new one shares its traces
    assert float(jit(h)(2.0)) == 3.0 and len(traces) == 1 and jit(h).cache_info().hits >= 1
    del g
    assert x() is None


def test_retrace_explanations_cover_each_key_part():
    from funcgrad._trace_key import _explain

    def key(tree, avals, statics=(), static_kw=()):
        return (tree, avals, statics, static_kw)

    t1, t2 = funcgrad.tree_util.tree_structure((1, 2)), funcgrad.tree_util.tree_structure([1, 2])
    f32, f64 = np.dtype(np.float32), np.dtype(np.float64)
    assert "tree structure" in _explain(key(t1, ()), key(t2, ()), [])
    assert "dtype from float32 to float64" in _explain(
        key(t1, (((3,), f32, False),)), key(t1, (((3,), f64, False),)), ["x"]
    )
    assert "weak type" in _explain(key(t1, (((), f64, False),)), key(t1, (((), f64, True),)), ["x"])
    assert "static argument 1 changed from 2 to 3" in _explain(
        key(t1, (), ((1, 2),)), key(t1, (), ((1, 3),)), []
    )


def test_dispatch_paths_mixed_leaves_and_reading_back():
    import ml_dtypes

    f = jit(lambda t, s: (t[0] * s, t[1] + s))
    a = jit(lambda x: x + 1)(np.ones(2))  # device-backed
    h = fnp.asarray(np.full(2, 3.0))  # host-backed
    for _ in range(2):  # miss, then the cached native entry
        out = f((a, h), 2.0)
        close(out[0], [4.0, 4.0])
        close(out[1], [5.0, 5.0])
    g = jit(lambda x: x.astype(ml_dtypes.bfloat16) * 2)
    r = g(np.array([1.5, 2.5], np.float32))
    assert r.dtype == ml_dtypes.bfloat16 and np.asarray(r).astype(np.float32).tolist() == [3.0, 5.0]


def test_keyword_arguments_hit_the_cache():
    f = jit(lambda x, y=1.0, *, scale: (x + y) * scale, static_argnames="scale")
    x = np.ones(3)
    for _ in range(3):
        close(f(x, y=np.full(3, 2.0), scale=2.0), [6.0, 6.0, 6.0])
    close(f(x, scale=3.0), [6.0, 6.0, 6.0])
    close(f(y=np.zeros(3), x=x, scale=3.0), [3.0, 3.0, 3.0])
    info = f.cache_info()
    assert info.misses == 3 and info.hits == 2


@pytest.mark.parametrize("m,k,n", [(8, 4, 2), (16, 32, 3)])
def test_compiled_cost_analysis_counts_matmul_flops(m, k, n):
    # XLA's estimate of a matmul is the closed form 2mkn, and of an elementwise sine one
    # transcendental per element; bytes accessed covers at least the operands and the output.
    f = jit(lambda a, b: fnp.sin(a @ b))
    a, b = np.ones((m, k), np.float32), np.ones((k, n), np.float32)
    cost = f.lower(a, b).compile().cost_analysis()
    assert cost["flops"] == 2 * m * k * n
    assert cost["transcendentals"] == m * n
    assert cost["bytes accessed"] >= 4 * (m * k + k * n + m * n)
    stats = f.lower(a, b).compile().memory_analysis()
    assert stats.argument_size_in_bytes == 4 * (m * k + k * n)
    assert stats.output_size_in_bytes == 4 * m * n


def test_lowered_cost_analysis_of_an_outer_product_counts_as_jax():
    # The weight cotangent of a dense layer on one example is a dot with no real contraction (K=1);
    # jax's lowered program counts it as a dot, 2 flops per product (flax's summary tables read
    # this), plus one per element for the add of the passthrough cotangent: 2*4*3 + 4*3 = 36.
    def g(w, x, ct_y, ct_w):
        return funcgrad.vjp(lambda w, x: (x @ w, w), w, x)[1]((ct_y, ct_w))

    args = [np.ones(s, np.float32) for s in ((4, 3), (1, 4), (1, 3), (4, 3))]
    lowered = jit(g).lower(*args)
    assert lowered.cost_analysis()["flops"] == 2 * 4 * 3 + 4 * 3 + 2 * 4 * 3  # + x's cotangent dot


def test_jit_of_a_callable_object_keeps_its_own_attributes_apart():
    # functools.update_wrapper copies the wrapped object's __dict__; a callable with attributes
    # named like the dispatcher's (_call, _name, _cache) must not replace them.
    class Scaled:
        def __init__(self):
            self._call, self._name, self._cache, self.factor = "not a method", "x", None, 3.0
            self.__name__ = "scaled"

        def __call__(self, x):
            return x * self.factor

    f = jit(Scaled())
    assert float(f(2.0)) == 6.0 and float(f(np.float64(1.0))) == 3.0
    assert f.factor == 3.0 and f.__name__ == "scaled"
    assert float(jit(fnp.add)(1.0, 2.0)) == 3.0  # fnp.add is a ufunc object with a _call attribute


def test_repr_of_a_jitted_function_as_jax():
    jax = pytest.importorskip("jax")

    def f(x):
        return x

    assert repr(funcgrad.jit(f)) == repr(jax.jit(f)) == f"<PjitFunction of {f!r}>"
    # The type's name too (chex's is_traceable reads str(type(f))).
    assert type(funcgrad.jit(f)).__name__ == type(jax.jit(f)).__name__ == "PjitFunction"


def test_jit_refuses_what_jax_refuses_in_its_words():
    # JAX's api_test test_jit_argnames_validation, test_jit_of_generator, test_jit_masked_array,
    # test_staticmethod_is_not_supported, test_donate_argnames_signature_fail
    def f(a, b, c):
        return a

    def h(a, /, b, c, *args, **kwargs):
        return a

    funcgrad.jit(h, static_argnames=("b", "c", "not_defined"))  # (**kwargs takes any name)
    for fn, names in [(f, ("b", "not_defined")), (h, ("a", "c")), (h, ("args",))]:
        with pytest.raises(ValueError, match="Jitted function has invalid argnames"):
            funcgrad.jit(fn, static_argnames=names)

    def gen(x):
        yield x

    with pytest.raises(TypeError, match="Expected a function, got a generator function"):
        funcgrad.jit(gen)
    with pytest.raises(TypeError, match="staticmethod arguments are not supported"):
        funcgrad.jit(staticmethod(f))
    with pytest.raises(ValueError, match="numpy masked arrays are not supported"):
        funcgrad.jit(lambda x: x)(np.ma.array([1, 2, 3], mask=[True, False, True]))

    class NoSignature:
        @property
        def __signature__(self):
            raise TypeError("no signature")

        def __call__(self, *args):
            return None

    with pytest.raises(ValueError, match="Getting the signature of function.*failed. Pass donate_argnums"):
        funcgrad.jit(NoSignature(), donate_argnames="a")


def test_a_jit_of_a_jitted_function_leaves_the_inner_one_callable():
    """jit(g) of a jitted g copies g's attributes (as functools.wraps); once the outer one is
    gone, g's own cache misses must still find g (the native dispatcher's weak cell)."""
    g = funcgrad.jit(lambda x: x * 2.0)
    assert float(g(np.float64(1.0))) == 2.0
    outer = funcgrad.jit(g)
    assert float(outer(np.ones(2))[0]) == 2.0
    del outer
    gc.collect()
    np.testing.assert_array_equal(np.asarray(g(np.ones((2, 3)))), np.full((2, 3), 2.0))


def test_clear_cache_frees_the_functions_executable_as_jax():
    # (JAX's api_test test_jit_cache_clear: the executable of a cleared jitted function is freed;
    # funcgrad's text-keyed executable cache held it)
    import jax

    def live_after(lib):
        @lib.jit
        def f(x, y):
            return x * 7 + y

        client = lib.devices()[0].client
        gc.collect()
        counts = [len(client.live_executables())]
        f(1, 2).block_until_ready()
        gc.collect()
        counts.append(len(client.live_executables()))
        f.clear_cache()
        gc.collect()
        counts.append(len(client.live_executables()))
        return [c - counts[0] for c in counts]

    gc.freeze()  # (the collections below visit only what the test makes: fast on a big heap)
    try:
        assert live_after(funcgrad) == live_after(jax) == [0, 1, 0]
    finally:
        gc.unfreeze()


def _grads_through_jit_of_unused_input(lib, lnp, x):
    def through(body):
        return lib.grad(lambda x: lnp.sum(lib.jit(body)(x, lnp.cos(x))))(x)

    return [
        through(lambda a, b: a),
        through(lambda a, b: (a, b)[0]),
        through(lambda a, b: a + lnp.sum(b[:0])),
    ]


def test_transpose_of_jit_leaves_unused_inputs_a_symbolic_zero_as_jax():
    # (the lax-parameter fuzzer, seed 18010) a jitted function's transpose gives Zero for an input
    # it makes no linear use of, so the cotangent never meets cos's transpose: 0 * -sin(inf) would
    # be NaN. An input used through an empty slice does meet it (NaN on both sides).
    jax = pytest.importorskip("jax")
    x = np.array([np.inf, 1.0], np.float32)
    ours = _grads_through_jit_of_unused_input(funcgrad, fnp, x)
    theirs = _grads_through_jit_of_unused_input(jax, jax.numpy, x)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    np.testing.assert_array_equal(np.asarray(ours[0]), [1.0, 1.0])


def _roll_in_a_cond_jacobian(lib, lnp):
    def branch(a):
        rolled = lnp.roll(a, 1)
        return lnp.sin(lnp.concatenate([rolled, lnp.zeros(12, a.dtype)])[:12] + 0.1 * lnp.sum(rolled[12:]))

    return lib.jacfwd(lambda a: lib.lax.cond(lnp.sum(a) > 0, branch, branch, a))(np.array([2.5]))


def test_concatenation_of_empty_pieces_in_a_branch_compiles():
    # (the lax-parameter fuzzer, seed 18014) XLA's CPU compiler aborted the process on this
    # program's concatenation of a size-0 piece inside a conditional: the lowering leaves such
    # pieces out
    jax = pytest.importorskip("jax")
    np.testing.assert_allclose(
        np.asarray(_roll_in_a_cond_jacobian(funcgrad, fnp)),
        np.asarray(_roll_in_a_cond_jacobian(jax, jax.numpy)),
        rtol=1e-6,
    )


# NOTE: [strict static keys]: 1, 1.0 and True are one Python key; JAX keys statics by type too.
@pytest.mark.parametrize("by", ["position", "name"])
def test_static_arguments_of_another_type_are_another_entry_as_jax(by):
    import jax
    from jax._src import config as jax_config

    def calls(jit_):
        if by == "position":
            f = jit_(lambda x, s: x * s, static_argnums=1)
            call = lambda s: f(np.arange(3), s)  # noqa: E731
        else:
            f = jit_(lambda x, s: x * s, static_argnames="s")
            call = lambda s: f(np.arange(3), s=s)  # noqa: E731
        # (1,) then (1.0,): JAX compares a container's outer type only, so they share an entry.
        g = jit_(lambda x, s: x * s[0], static_argnums=1)
        outs = [call(s) for s in (1, 1.0, True, 1, 2.0)]
        outs += [g(np.arange(3), s) for s in ((1,), (1.0,))]
        return [(np.asarray(o).dtype, np.asarray(o).tolist()) for o in outs]

    with jax_config.enable_x64(True):
        want = calls(jax.jit)
    assert calls(jit) == want


def test_eager_nanmean_refuses_a_float_axis_after_an_int_axis_as_jax():
    # The functions JAX jits run eagerly through jit's cache (kernel/library_programs.py): a call
    # with axis=1 must not serve axis=1.0, which JAX refuses.
    import jax.numpy as jnp

    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(np.asarray(fnp.nanmean(x, axis=1)), np.asarray(jnp.nanmean(x, axis=1)))
    for lib in (jnp, fnp):
        with pytest.raises(TypeError):
            lib.nanmean(x, axis=1.0)
