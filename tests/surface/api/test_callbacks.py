"""Host callbacks: pure_callback and debug.callback/print/log, eagerly, under jit (XLA's Python
host callback), grad, vmap and control flow; printed text compared with jax.debug.print's."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from funcgrad.xla_bridge import XlaBridgeError

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import debug, lax

F64 = funcgrad.ShapeDtypeStruct((), np.float64)


def _like(x):
    return funcgrad.ShapeDtypeStruct(np.shape(x), fnp.asarray(x).dtype)


# ----------------------------------------------------------------------------------------------
# pure_callback


def test_pure_callback_eager_and_jit():
    x = np.array([0.0, 0.5, 1.5])
    for f in (lambda x: funcgrad.pure_callback(np.sinc, _like(x), x), None):
        if f is None:
            f = funcgrad.jit(lambda x: funcgrad.pure_callback(np.sinc, _like(x), x))
        np.testing.assert_allclose(np.asarray(f(x)), np.sinc(x), rtol=1e-15)


def test_pure_callback_pytrees_kwargs_and_static_leaves():
    seen = []

    def host(d, scale, *, tag):
        seen.append((type(d["a"]).__name__, tag))
        return {"sum": np.asarray(d["a"]) * scale + np.asarray(d["b"]), "n": np.int32(len(tag))}

    out_type = {
        "sum": funcgrad.ShapeDtypeStruct((2,), np.float64),
        "n": funcgrad.ShapeDtypeStruct((), np.int32),
    }

    @funcgrad.jit
    def f(a, b):
        return funcgrad.pure_callback(host, out_type, {"a": a, "b": b}, 3.0, tag="hello")

    out = f(np.array([1.0, 2.0]), np.array([10.0, 20.0]))
    np.testing.assert_array_equal(np.asarray(out["sum"]), [13.0, 26.0])
    assert int(out["n"]) == 5 and np.asarray(out["n"]).dtype == np.int32
    assert seen == [("Array", "hello")]  # funcgrad Arrays in, strings passed through


@pytest.mark.slow
@pytest.mark.parametrize("method", ["sequential", "sequential_unrolled", "expand_dims", "broadcast_all"])
def test_pure_callback_vmap_methods_match_jax(method):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    shapes = {"funcgrad": [], "jax": []}

    def make(lib, key):
        def host(x, y):
            shapes[key].append((np.shape(x), np.shape(y)))
            return np.asarray(x) + np.asarray(y)

        def f(x, y):
            out = lib.ShapeDtypeStruct(np.broadcast_shapes(np.shape(x), np.shape(y)), np.float64)
            return lib.pure_callback(host, out, x, y, vmap_method=method)

        return f

    x, y = np.arange(4.0), 1.5
    ours = funcgrad.vmap(make(funcgrad, "funcgrad"), in_axes=(0, None))(x, y)
    theirs = jax.vmap(make(jax, "jax"), in_axes=(0, None))(x, y)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    assert shapes["funcgrad"] == shapes["jax"]
    jitted = funcgrad.jit(funcgrad.vmap(make(funcgrad, "funcgrad"), in_axes=(0, None)))(x, y)
    np.testing.assert_array_equal(np.asarray(jitted), np.asarray(theirs))


def test_pure_callback_vmap_needs_a_method_and_nests():
    f = lambda x: funcgrad.pure_callback(np.cumsum, _like(x), x)  # noqa: E731
    with pytest.raises(NotImplementedError, match="vmap_method"):
        funcgrad.vmap(f)(np.ones((2, 3)))
    with pytest.raises(ValueError, match="vmap_method"):
        funcgrad.pure_callback(np.cumsum, F64, 1.0, vmap_method="loop")
    g = lambda x: funcgrad.pure_callback(np.cumsum, _like(x), x, vmap_method="sequential")  # noqa: E731
    x = np.arange(24.0).reshape(2, 3, 4)
    out = funcgrad.jit(funcgrad.vmap(funcgrad.vmap(g), in_axes=1))(x)
    np.testing.assert_array_equal(np.asarray(out), np.cumsum(x, axis=2).transpose(1, 0, 2))


def test_pure_callback_result_checks():
    # Eagerly too, the callback's error (its result check included) is a JaxRuntimeError carrying
    # the callback's own message, as in JAX (which runs an eager callback through XLA).
    from funcgrad.errors import JaxRuntimeError

    words = "Incorrect output dtype for return value #0: Expected: float64, Actual: float32"  # (JAX's)
    with pytest.raises(JaxRuntimeError, match=f"raised RuntimeError: .*{words}"):
        funcgrad.pure_callback(lambda v: np.float32(v), F64, 1.0)
    f32 = funcgrad.ShapeDtypeStruct((), np.float32)
    with funcgrad.enable_x64(False):  # a Python literal at the mode's dtype (JAX's conversion)
        for cb in (funcgrad.pure_callback, funcgrad.experimental.io_callback):
            assert funcgrad.jit(lambda x, cb=cb: cb(lambda v: 42.0, f32, x))(1.0).dtype == np.float32
    # Read back: on a GPU the program runs asynchronously and its error surfaces there.
    with pytest.raises(XlaBridgeError, match="host callback .* raised RuntimeError"):
        np.asarray(funcgrad.jit(lambda x: funcgrad.pure_callback(lambda v: np.ones(2), F64, x))(1.0))
    with pytest.raises(JaxRuntimeError, match="Mismatched number of outputs from callback"):  # (JAX's)
        funcgrad.pure_callback(lambda v: (v, v), F64, 1.0)
    # The result's leaves are taken whatever its structure, as JAX's (python_callback_test's
    # pytree test: [x] given back as [[x]]); a 64-bit declared type in 32-bit mode is JAX's error.
    assert funcgrad.pure_callback(lambda v: {"y": [[v]]}, {"y": [F64]}, 2.0)["y"][0] == 2.0
    with funcgrad.enable_x64(False), pytest.raises(ValueError, match="cannot specify 64-bit types"):
        funcgrad.pure_callback(lambda v: v, F64, 1.0)

    def boom(v):
        raise KeyError("boom")

    with pytest.raises(XlaBridgeError, match="raised KeyError: 'boom'"):
        np.asarray(funcgrad.jit(lambda x: funcgrad.pure_callback(boom, F64, x))(1.0))
    with pytest.raises(JaxRuntimeError, match="raised KeyError: 'boom'") as eager:
        funcgrad.pure_callback(boom, F64, 1.0)
    assert isinstance(eager.value, RuntimeError) and "Traceback" in str(eager.value)
    with pytest.raises(TypeError, match="shape"):
        funcgrad.pure_callback(np.sin, [1.0], 1.0)


def test_pure_callback_is_not_differentiable_but_custom_jvp_works():
    with pytest.raises(ValueError, match="custom_jvp"):
        funcgrad.grad(lambda x: funcgrad.pure_callback(np.sin, F64, x))(1.0)

    @funcgrad.custom_jvp
    def host_sin(x):
        return funcgrad.pure_callback(np.sin, _like(x), x, vmap_method="sequential")

    @host_sin.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        return host_sin(x), funcgrad.pure_callback(np.cos, _like(x), x, vmap_method="sequential") * t

    x = np.array([0.1, 0.7, 2.0])
    g = funcgrad.jit(funcgrad.vmap(funcgrad.grad(host_sin)))(x)
    np.testing.assert_allclose(np.asarray(g), np.cos(x), rtol=1e-15)


def test_unused_pure_callback_is_dropped_and_callbacks_are_not_mixed_up():
    calls = []

    def counted(x):
        calls.append(1)
        return x

    funcgrad.jit(lambda x: (funcgrad.pure_callback(counted, F64, x), x * 2)[1])(1.0)
    assert calls == []  # pure: removed as dead code
    # Two functions whose modules have the same text keep their own callbacks.
    f1 = funcgrad.jit(lambda x: funcgrad.pure_callback(lambda v: v + 1.0, F64, x))
    f2 = funcgrad.jit(lambda x: funcgrad.pure_callback(lambda v: v + 2.0, F64, x))
    assert float(f1(0.0)) == 1.0 and float(f2(0.0)) == 2.0
    assert f1.lower(0.0).as_text() == f2.lower(0.0).as_text()


@pytest.mark.parametrize("how", ["jvp_of_jit", "vmap_of_jit"])
def test_a_dead_pure_callback_is_refused_under_transformations_of_jit_as_jax(how):
    # JAX removes nothing while tracing: jvp/vmap of a jit meet a pure_callback whose result is
    # unused and refuse it (no JVP rule; vmap_method=None), though the compiled call drops it
    # (fuzzer leftover: funcgrad's trace dropped it, so jvp(jit(f)) computed).
    jax = pytest.importorskip("jax")
    calls = []

    def make(lib):
        def f(x):
            lib.pure_callback(lambda v: calls.append(1) or v, lib.ShapeDtypeStruct(x.shape, x.dtype), x)
            return x * 2

        run = {
            "jvp_of_jit": lambda: lib.jvp(lib.jit(f), (np.ones(3),), (np.ones(3),)),
            "vmap_of_jit": lambda: lib.vmap(lib.jit(f))(np.ones((2, 3))),
        }[how]
        return f, run

    errors = []
    for lib in (jax, funcgrad):
        f, run = make(lib)
        with pytest.raises((ValueError, NotImplementedError)) as info:
            run()
        errors.append((type(info.value), str(info.value).split(".")[0]))
        assert float(lib.jit(f)(1.0)) == 2.0
        assert "custom_call" not in lib.jit(f).lower(np.ones(3)).as_text()  # (lowering drops it)
    assert errors[0] == errors[1]
    assert calls == []


# ----------------------------------------------------------------------------------------------
# debug.callback


def test_debug_callback_runs_when_values_exist():
    seen = []

    def f(x):
        debug.callback(lambda v, label: seen.append((label, float(v))), x, "in")
        return x * 2.0

    jf = funcgrad.jit(f)
    jf.lower(1.0)  # tracing and lowering call nothing
    assert seen == []
    jf(1.0)
    jf(2.0)  # each execution calls it (the compiled program is reused)
    assert seen == [("in", 1.0), ("in", 2.0)] and jf.cache_info().misses == 1
    seen.clear()
    assert float(funcgrad.grad(f)(3.0)) == 2.0 and seen == [("in", 3.0)]  # primal values, once
    seen.clear()
    funcgrad.jit(funcgrad.grad(f))(4.0)
    assert seen == [("in", 4.0)]
    seen.clear()
    funcgrad.vmap(f)(np.array([5.0, 6.0]))
    funcgrad.jit(funcgrad.vmap(f))(np.array([7.0, 8.0]))
    assert seen == [("in", 5.0), ("in", 6.0), ("in", 7.0), ("in", 8.0)]


def test_debug_callback_survives_dead_code_elimination_and_control_flow():
    seen = []

    @funcgrad.jit
    def f(x):
        debug.callback(seen.append, x)  # nothing reads it: kept anyway

        def body(i, acc):
            debug.callback(lambda i: seen.append(int(i)), i)
            return acc + i

        return lax.fori_loop(0, 3, body, 0.0) + lax.cond(x > 0, lambda: x, lambda: -x)

    assert float(f(5.0)) == 8.0
    assert [float(v) for v in seen] == [5.0, 0, 1, 2]


def test_debug_callback_forms_and_errors():
    seen = []
    debug.callback(ordered=True)(seen.append, 1.0)
    assert float(seen[0]) == 1.0
    with pytest.raises(TypeError, match="callable"):
        debug.callback(3)
    with pytest.raises(TypeError, match="two-call"):
        debug.callback(None, 1.0)
    # partitioned=True (each device's blocks, tests/surface/spmd/test_debug_sharding.py) on one
    # device is the whole value, as JAX's
    debug.callback(seen.append, 2.0, partitioned=True)
    funcgrad.jit(lambda x: debug.callback(seen.append, x, partitioned=True))(3.0)
    funcgrad.effects_barrier()
    assert [float(v) for v in seen[1:]] == [2.0, 3.0]


# ----------------------------------------------------------------------------------------------
# debug.print / debug.log


_PROGRAM = """
import numpy as np
{imports}
def f(x, n):
    lib.debug.print("x={{x}} n={{n}} {{}}", x * 2, x=x, n=n)
    lib.debug.print("{{:.3f}}", x[0])
    lib.debug.print(ordered=True)("ordered {{}}", x[1])
    return x
lib.jit(f)(lnp.array([1.0, 2.5]), 3)
f(np.array([1.0, 2.5], np.float32), np.int32(3))
lib.vmap(lambda x: lib.debug.print("v {{}}", x))(lnp.arange(3.0))
lib.grad(lambda x: (lib.debug.print("g {{}}", x), x * x)[1])(2.0)
"""


def _run(imports):
    code = textwrap.dedent(_PROGRAM.format(imports=imports))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.slow
def test_debug_print_text_matches_jax():
    pytest.importorskip("jax")
    ours = _run("import funcgrad as lib, funcgrad.numpy as lnp")
    theirs = _run("import jax as lib, jax.numpy as lnp\nlib.config.update('jax_enable_x64', True)")
    assert ours == theirs
    assert "x=[1.  2.5] n=3 [2. 5.]" in ours and "v 2.0" in ours


def test_debug_print_checks_the_format(capsys):
    with pytest.raises(ValueError, match="f-string"):
        debug.print("x", x=1.0)
    with pytest.raises(ValueError, match="Unused positional arguments to `jax.debug.print`"):
        debug.print("no fields", 1.0)
    with pytest.raises(TypeError, match="format must be a string"):
        debug.print(3)
    debug.print("{} {name}", 1, name="ok")
    assert capsys.readouterr().out == "1 ok\n"


def test_ordered_prints_keep_their_order_under_jit(capsys):
    @funcgrad.jit
    def f(x):
        for i in range(5):
            debug.print("step {} {}", i, x + i, ordered=True)
        return x

    f(0.0)
    assert capsys.readouterr().out.splitlines() == [f"step {i} {float(i)}" for i in range(5)]


def test_debug_log_goes_to_the_logger_as_jax():
    # As JAX's (debugging_primitives_test test_debug_print_with_logging): an INFO record on the
    # logger "jax._src.debugging" of the line that called debug.log, handed to the logger's
    # handlers whatever its level (funcgrad logged on "funcgrad.debug" through the level check).
    jax = pytest.importorskip("jax")
    seen = {}
    for lib in (funcgrad, jax):
        records = []
        handler = logging.Handler()
        handler.emit = records.append
        logger = logging.getLogger("jax._src.debugging")
        logger.addHandler(handler)
        try:
            lib.jit(lambda x, lib=lib: lib.debug.log("loss {}", x) or x)(0.25)
            lib.effects_barrier()
        finally:
            logger.removeHandler(handler)
        seen[lib] = [(r.getMessage(), r.levelno, r.name, os.path.basename(r.pathname)) for r in records]
    assert (
        seen[funcgrad]
        == seen[jax]
        == [("loss 0.25", logging.INFO, "jax._src.debugging", "test_callbacks.py")]
    )


# ----------------------------------------------------------------------------------------------
# io_callback (jax.experimental.io_callback)


def _recorder():
    log = []

    def record(x):
        log.append(np.array(x))
        return np.sin(np.asarray(x, np.float64))

    return log, record


@pytest.mark.parametrize("use_jit", [False, True])
def test_io_callback_runs_each_time_even_when_unused(use_jit):
    from funcgrad.experimental import io_callback

    log, record = _recorder()

    def f(x):
        y = io_callback(record, _like(x), x * 2.0)
        io_callback(record, _like(x), x + 1.0)  # result unused: still runs (a side effect)
        return y + 1.0

    g = funcgrad.jit(f) if use_jit else f
    x = np.array([0.5, 1.5])
    for _ in range(2):
        np.testing.assert_allclose(np.asarray(g(x)), np.sin(2 * x) + 1.0, rtol=1e-15)
    assert len(log) == 4
    # Unordered callbacks may run in any order under jit: compare each run's pair as a set.
    for run in (log[:2], log[2:]):
        got = sorted(tuple(v.tolist()) for v in run)
        assert got == sorted([tuple((2 * x).tolist()), tuple((x + 1.0).tolist())])


def test_io_callback_ordered_keeps_program_order_under_jit():
    from funcgrad.experimental import io_callback

    seen = []

    def note(tag):
        def cb(x):
            seen.append((tag, float(x)))
            return np.asarray(x, np.float64)

        return cb

    def f(x):
        a = io_callback(note("a"), F64, x, ordered=True)
        debug.callback(lambda v: seen.append(("print", float(v))), x, ordered=True)
        b = io_callback(note("b"), F64, a + 1.0, ordered=True)
        return b

    assert float(funcgrad.jit(f)(1.0)) == 2.0
    assert seen == [("a", 1.0), ("print", 1.0), ("b", 2.0)]


def test_io_callback_vmap_calls_each_element_in_turn():
    from funcgrad.experimental import io_callback

    log, record = _recorder()
    xs = np.linspace(0.0, 1.0, 4)
    w = 3.0
    out = funcgrad.jit(funcgrad.vmap(lambda x: io_callback(record, F64, x * w)))(xs)
    np.testing.assert_allclose(np.asarray(out), np.sin(w * xs), rtol=1e-15)
    assert [float(v) for v in log] == [float(v) for v in w * xs]  # one call per element, in order
    with pytest.raises(ValueError, match="Cannot `vmap` ordered IO callback"):  # (JAX's words)
        funcgrad.vmap(lambda x: io_callback(record, F64, x, ordered=True))(xs)


def test_io_callback_is_not_differentiable_but_stop_gradient_operands_are_fine():
    from funcgrad.experimental import io_callback

    _, record = _recorder()
    with pytest.raises(ValueError, match="IO callbacks do not support JVP"):  # (JAX's words)
        funcgrad.grad(lambda x: io_callback(record, F64, x))(1.0)
    g = funcgrad.grad(lambda x: x * io_callback(record, F64, lax.stop_gradient(x)))(2.0)
    assert float(g) == pytest.approx(np.sin(2.0), rel=1e-15)
    text = str(funcgrad.make_jaxpr(lambda x: io_callback(record, F64, x))(1.0))
    assert "io_callback" in text


def test_io_callback_errors_name_the_problem():
    from funcgrad.errors import JaxRuntimeError
    from funcgrad.experimental import io_callback

    with pytest.raises(TypeError, match="must be callable"):
        io_callback(3, F64, 1.0)
    with pytest.raises(TypeError, match="result_shape_dtypes"):
        io_callback(np.sin, object(), 1.0)
    with pytest.raises(NotImplementedError, match="only supports SingleDeviceSharding"):  # (JAX's words)
        io_callback(np.sin, F64, 1.0, sharding=object())
    with pytest.raises(JaxRuntimeError, match="dtype"):  # as in JAX, eagerly too
        io_callback(lambda x: np.float32(x), F64, 1.0)
    with pytest.raises(Exception, match="shape"):
        np.asarray(funcgrad.jit(lambda x: io_callback(lambda v: np.ones(3), F64, x))(1.0))


def test_a_branch_that_only_prints_is_kept_as_in_jax(capsys):
    # A cond whose branches only print has no outputs: its effect keeps it, under jit, in a loop
    # body and in another cond, as JAX's effects do (optax's zoom linesearch reports its failures
    # this way). Compared with jax's printed lines.
    import jax

    def program(lib):
        def step(s):
            lib.lax.cond(s > 0, lambda: lib.debug.print("pos {}", s), lambda: lib.debug.print("neg {}", s))
            return lib.lax.cond(
                s > 1,
                lambda x: (lib.lax.cond(x > 0, lambda: lib.debug.print("in {}", x), lambda: None), x + 1)[1],
                lambda x: x + 1,
                s,
            )

        return lib.jit(lambda s: lib.lax.while_loop(lambda s: s < 3, step, s))

    out = program(funcgrad)(0.0)
    got = capsys.readouterr().out
    want_out = program(jax)(0.0)
    want = capsys.readouterr().out
    assert float(out) == float(want_out) == 3.0
    assert got == want == "neg 0.0\npos 1.0\npos 2.0\nin 2.0\n"


def test_debug_print_under_nested_vmap_prints_in_jax_order(capsys):
    # JAX's debugging_primitives_test tested_debug_print_with_nested_vmap: the batch rule unrolls
    # over its own axis (one call per index), so the innermost vmap's axis is the outer loop.
    def f(x):
        funcgrad.debug.print("hello: {}", x)

    x = fnp.arange(6).reshape((3, 2))
    funcgrad.vmap(funcgrad.vmap(f))(x)
    funcgrad.effects_barrier()
    assert capsys.readouterr().out == "hello: 0\nhello: 2\nhello: 4\nhello: 1\nhello: 3\nhello: 5\n"
    funcgrad.vmap(funcgrad.vmap(f, in_axes=0), in_axes=1)(x)
    funcgrad.effects_barrier()
    assert capsys.readouterr().out == "hello: 0\nhello: 1\nhello: 2\nhello: 3\nhello: 4\nhello: 5\n"


def test_callback_failures_are_logged_and_unbatched_operands_keep_the_mode(caplog):
    # JAX logs a failing callback ("jax.pure_callback failed" and its traceback) before the error
    # propagates (python_callback_test's test_exception_in_callback); under vmap an unbatched
    # Python float reaches the callback at the mode's dtype (float32 in 32-bit mode: strict
    # promotion with a float32 batch then holds, test_vmap_method_expand_dims).
    def fail(x):
        raise RuntimeError("Ooops")

    with caplog.at_level(logging.ERROR), pytest.raises(Exception, match="Ooops"):
        funcgrad.jit(lambda x: funcgrad.pure_callback(fail, F64, x))(0.0)
    assert "jax.pure_callback failed" in caplog.text and "Traceback" in caplog.text
    # under JAX's logger name, which equinox's filter_jit filters out of its runtime errors' logs
    assert {r.name for r in caplog.records} == {"jax._src.callback"}
    out = funcgrad.ShapeDtypeStruct((), np.float32)
    with funcgrad.enable_x64(False), funcgrad.numpy_dtype_promotion("strict"):
        for method, y_shape in (("expand_dims", (1,)), ("broadcast_all", (4,))):

            def cb(x, y, y_shape=y_shape):
                assert np.shape(y) == y_shape and np.asarray(y).dtype == np.float32
                return x + y

            def f(x, y, method=method, cb=cb):
                return funcgrad.pure_callback(cb, out, x, y, vmap_method=method)

            ys = funcgrad.vmap(f, in_axes=(0, None))(fnp.arange(4.0), 1.0)
            np.testing.assert_allclose(np.asarray(ys), np.arange(4.0) + 1)


def test_callbacks_inside_pmap_and_shard_map_over_one_device(capsys):
    # A manual computation whose axes all have size 1 is inlined, as JAX's lowering does: XLA's
    # CPU compiler refused the one-device program's xla.sdy.GlobalToLocalShape custom calls when
    # the body held a host callback (JAX's python_callback_test pmap cases).
    from funcgrad.experimental import io_callback
    from funcgrad.sharding import PartitionSpec as P

    x = fnp.arange(3.0)[None]
    pure = funcgrad.pmap(lambda v: funcgrad.pure_callback(np.sin, _like(v), v) + lax.psum(v, "i"), "i")
    np.testing.assert_allclose(np.asarray(pure(x)), np.sin(np.arange(3.0))[None] + np.arange(3.0))
    io = funcgrad.pmap(lambda v: io_callback(lambda a: a + 1, _like(v), v))
    np.testing.assert_array_equal(np.asarray(io(x)), np.arange(3.0)[None] + 1)
    funcgrad.pmap(lambda v: debug.print("v {} {}", v, lax.axis_index("i")), "i")(x)
    funcgrad.effects_barrier()
    assert capsys.readouterr().out == "v [0. 1. 2.] 0\n"
    mesh = funcgrad.make_mesh((1,), ("i",), axis_types=(funcgrad.sharding.AxisType.Auto,))
    sm = funcgrad.shard_map(
        lambda v: funcgrad.pure_callback(np.cos, _like(v), v) + lax.axis_index("i"),
        mesh=mesh,
        in_specs=P("i"),
        out_specs=P("i"),
    )
    np.testing.assert_allclose(np.asarray(funcgrad.jit(sm)(fnp.arange(4.0))), np.cos(np.arange(4.0)))


def test_callback_sharding_is_a_single_device_as_jax():
    from funcgrad.experimental import io_callback
    from funcgrad.sharding import NamedSharding, SingleDeviceSharding
    from funcgrad.sharding import PartitionSpec as P

    one = SingleDeviceSharding(funcgrad.devices()[0])
    f = funcgrad.jit(lambda v: funcgrad.pure_callback(np.sin, _like(v), v, sharding=one))
    np.testing.assert_allclose(np.asarray(f(fnp.arange(3.0))), np.sin(np.arange(3.0)))
    g = funcgrad.jit(lambda v: io_callback(np.cos, _like(v), v, sharding=one))
    np.testing.assert_allclose(np.asarray(g(fnp.arange(3.0))), np.cos(np.arange(3.0)))
    jaxpr = str(funcgrad.make_jaxpr(lambda v: io_callback(np.cos, _like(v), v))(1.0))
    assert "sharding=None" in jaxpr
    named = NamedSharding(funcgrad.make_mesh((1,), ("x",)), P("x"))
    with pytest.raises(NotImplementedError, match="only supports SingleDeviceSharding, but got"):
        funcgrad.pure_callback(np.sin, F64, 1.0, sharding=named)


def test_io_callback_refusals_as_jax():
    # (JAX's python_callback_test: an IO effect is refused where a transformation would run it
    # where the program does not: transposed, in both branches of a vmapped cond, in a finished
    # lane of a batched while loop, recomputed by checkpoint)
    from funcgrad.experimental import io_callback

    ident = lambda v: io_callback(lambda a: a, _like(v), v)  # noqa: E731
    with pytest.raises(ValueError, match="IO callbacks do not support transpose"):
        funcgrad.linear_transpose(ident, 1.0)(1.0)

    def branches(pred):
        return lax.cond(pred, lambda: io_callback(lambda: None, None), lambda: None)

    with pytest.raises(NotImplementedError, match="IO effect not supported in vmap-of-cond"):
        funcgrad.vmap(branches)(fnp.array([True, False]))

    def loop(i):
        return lax.while_loop(lambda i: i < 5, lambda i: (io_callback(lambda a: None, None, i), i + 1)[1], i)

    with pytest.raises(Exception, match="not supported in while_loop with batched predicate"):
        funcgrad.vmap(loop)(fnp.array([0, 4]))
    seen = []

    @funcgrad.grad
    @funcgrad.checkpoint
    def remat(x, y):
        io_callback(lambda v: seen.append(v), None, y)
        return x

    with pytest.raises(NotImplementedError, match="Effects not supported in partial-eval of `checkpoint`"):
        remat(2.0, 3.0)


def test_ordered_prints_in_cond_while_and_scan_run_in_program_order(capsys):
    # (NOTE: [ordered effects in control flow]: each region took a token chain of its own, and
    # optax's verbose zoom linesearch printed its messages out of order; jax's order is the
    # program's)
    def when(c, msg, **kw):
        lax.cond(c, lambda _: debug.print(msg, **kw, ordered=True), lambda _: None, None)

    def body(carry):
        i, x = carry
        debug.print("iter {i}", i=i, ordered=True)
        when(x > 0, "A")
        lax.cond(x > 100, lambda _: None, lambda _: (when(True, "D"), when(True, "E"))[0], None)
        when(True, "F")
        return i + 1, x * 2.0

    funcgrad.jit(lambda x: lax.while_loop(lambda c: c[0] < 2, body, (0, x)))(1.0)

    def step(c, x):
        when(x > 1, "scan {x}", x=x)
        debug.print("after {x}", x=x, ordered=True)
        return c, x

    funcgrad.jit(lambda xs: lax.scan(step, 0.0, xs))(fnp.arange(3.0))
    funcgrad.effects_barrier()
    expected = ["iter 0", "A", "D", "E", "F", "iter 1", "A", "D", "E", "F"]
    expected += ["after 0.0", "after 1.0", "scan 2.0", "after 2.0"]
    assert capsys.readouterr().out.splitlines() == expected


def test_callbacks_that_run_jitted_programs_inside_a_jitted_program(capsys):
    # NOTE: [synchronous CPU dispatch]: with one CPU device the program runs in the calling thread,
    # and so do its host callbacks; a callback that runs a jitted program of its own (itself with
    # a callback), in a loop of the outer program, must neither deadlock nor see other values.
    from funcgrad.experimental import io_callback

    inner = funcgrad.jit(lambda a: funcgrad.pure_callback(np.sin, _like(a), a) * 2.0)
    seen = []

    def host(v):
        return np.asarray(inner(v))

    def record(v):
        seen.append(np.asarray(inner(v)))
        return np.asarray(v) + 1.0

    @funcgrad.jit
    def f(x):
        y = funcgrad.pure_callback(host, _like(x), x)
        z = io_callback(record, _like(x), y, ordered=True)

        def body(c):
            i, s = c
            debug.print("step {i}", i=i)
            return i + 1, s + funcgrad.pure_callback(host, _like(s), s)

        return lax.while_loop(lambda c: c[0] < 3, body, (0, z))[1]

    x = np.arange(4.0)
    out = f(x)
    funcgrad.effects_barrier()
    want = 2.0 * np.sin(x) + 1.0
    for _ in range(3):
        want = want + 2.0 * np.sin(want)
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6)
    np.testing.assert_allclose(seen, [2.0 * np.sin(2.0 * np.sin(x))], rtol=1e-6)
    assert capsys.readouterr().out == "step 0\nstep 1\nstep 2\n"
