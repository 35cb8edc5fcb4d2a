"""funcgrad.config and the configuration context managers: every flag is honoured or refuses a
value it cannot honour, naming the flag."""

from __future__ import annotations

import logging
import sys

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import config


def test_update_read_values_and_unknown_flags():
    assert config.jax_enable_x64 is True and config.read("jax_enable_x64") is True
    assert config.values["jax_numpy_rank_promotion"] == "allow"
    config.update("jax_numpy_rank_promotion", "warn")
    try:
        assert config.jax_numpy_rank_promotion == "warn"
    finally:
        config.update("jax_numpy_rank_promotion", "allow")
    with pytest.raises(AttributeError, match="unknown flag 'jax_nope'"):
        config.update("jax_nope", 1)
    with pytest.raises(ValueError, match="jax_numpy_rank_promotion must be one of"):
        config.update("jax_numpy_rank_promotion", "sometimes")
    with pytest.raises(TypeError, match="must be a bool"):
        config.update("jax_disable_jit", "yes")


def test_x64_flag_switches_and_restores():
    config.update("jax_enable_x64", True)
    with funcgrad.enable_x64(True):
        assert fnp.ones(2).dtype == np.float64
    with funcgrad.enable_x64(False):  # JAX's 32-bit mode (tests/surface/numpy/test_x32.py)
        assert config.jax_enable_x64 is False and fnp.ones(2).dtype == np.float32
    assert config.jax_enable_x64 is True and fnp.ones(2).dtype == np.float64
    with pytest.raises(TypeError, match="jax_enable_x64 must be a bool"):
        config.update("jax_enable_x64", "no")


def test_disable_jit_runs_python():
    calls = []

    @funcgrad.jit
    def f(x):
        calls.append(type(x).__name__)
        return x * 2

    f(1.0)
    f(2.0)
    assert len(calls) == 1  # traced once, then cached
    with funcgrad.disable_jit():
        assert float(f(3.0)) == 6.0 and float(f(4.0)) == 8.0
    assert len(calls) == 3 and calls[1:] == ["float", "float"]  # concrete values: no tracing
    assert float(f(5.0)) == 10.0 and len(calls) == 3
    config.update("jax_disable_jit", True)
    try:
        f(1.0)
    finally:
        config.update("jax_disable_jit", False)
    assert len(calls) == 4


def test_debug_nans_and_infs_flags():
    config.update("jax_debug_nans", True)
    try:
        with pytest.raises(FloatingPointError, match="nan"):
            fnp.log(-fnp.ones(2))
    finally:
        config.update("jax_debug_nans", False)
    assert np.isnan(np.asarray(fnp.log(-fnp.ones(2)))).all()  # off again
    with funcgrad.debug_infs():
        assert np.isnan(np.asarray(fnp.sqrt(-fnp.ones(2)))).all()  # a NaN is not an Inf
        with pytest.raises(FloatingPointError, match="^invalid value \\(inf\\) encountered in exp$"):
            fnp.exp(fnp.array(1000.0))
    with funcgrad.debug_nans(True):
        with funcgrad.debug_nans(False):
            assert np.isnan(np.asarray(fnp.log(-fnp.ones(1)))).all()
        with pytest.raises(FloatingPointError):
            fnp.log(-fnp.ones(1))


def test_logging_flags(caplog):
    f = funcgrad.jit(lambda x: x + 1)
    with caplog.at_level(logging.WARNING, logger="funcgrad"):
        with funcgrad.log_compiles():
            f(np.ones(3))
        with funcgrad.explain_cache_misses():
            f(np.ones(4))
    text = caplog.text
    assert "Compiling jit(<lambda>) for arguments (f64[3])" in text
    assert "TRACING CACHE MISS of jit(<lambda>)" in text and "(3,)" in text and "(4,)" in text
    # (JAX's api_test test_jit_compilation_time_logging: at DEBUG, tracing, lowering and XLA's
    # compilation, each timed)
    with caplog.at_level(logging.DEBUG, logger="funcgrad"):
        caplog.clear()
        f(np.ones(5))
    text = caplog.text
    for line in (
        "Finished tracing",
        "Compiling jit(<lambda>",
        "Finished XLA compilation of jit(<lambda>) in",
    ):
        assert line in text, text


def test_debug_log_modules_flag(capfd):
    # logging_test test_debug_logging: jax_debug_log_modules names loggers that log at DEBUG to
    # stderr (a JAX module's name enables funcgrad's logger of jit's tracing); "" turns them off
    f = funcgrad.jit(lambda x: x * 3)
    config.update("jax_debug_log_modules", "jax._src.dispatch")
    try:
        f(np.ones(6))
    finally:
        config.update("jax_debug_log_modules", "")
    f(np.ones(7))
    err = capfd.readouterr().err
    assert err.count("Finished tracing <lambda> for jit") == 1 and "(f64[6])" in err
    assert logging.getLogger("funcgrad").level == logging.NOTSET


def test_enable_checks_no_tracing_no_execution():
    f = funcgrad.jit(lambda x: fnp.sin(x) * 2)
    with funcgrad.enable_checks():
        assert float(f(0.0)) == 0.0
    with funcgrad.no_tracing():
        assert float(f(0.0)) == 0.0  # cached
        with pytest.raises(RuntimeError, match="no_tracing"):
            f(np.ones(3))
    with funcgrad.no_execution():
        with pytest.raises(RuntimeError, match="no_execution"):
            f(0.0)
        assert float(fnp.sin(0.0)) == 0.0  # eager NumPy evaluation still runs
    assert float(f(0.0)) == 0.0


def test_promotion_flags():
    with funcgrad.numpy_rank_promotion("warn"):
        with pytest.warns(UserWarning, match="rank promotion"):
            fnp.ones(3) + fnp.ones((2, 3))
        fnp.ones(3) + 1.0  # scalars are not rank promotion
    with funcgrad.numpy_rank_promotion("raise"):
        with pytest.raises(ValueError, match="jax_numpy_rank_promotion"):
            fnp.ones(3) * fnp.ones((2, 3))
        assert (fnp.ones((1, 3)) + fnp.ones((2, 3))).shape == (2, 3)  # same rank: fine
    with funcgrad.numpy_dtype_promotion("strict"):
        with pytest.raises(funcgrad.dtypes.TypePromotionError, match="float32, int32"):
            fnp.ones(2, np.float32) + fnp.ones(2, np.int32)
        assert (fnp.ones(2, np.float32) + 1.0).dtype == np.float32  # weak scalars still promote
    assert (fnp.ones(2, np.float32) + fnp.ones(2, np.int32)).dtype == np.float64


def test_flags_that_must_be_set_before_first_use():
    fnp.ones(1) + 1  # noqa: B018
    funcgrad.jit(lambda x: x)(1.0)  # the CPU backend has started
    n = funcgrad.device_count("cpu")
    config.update("jax_num_cpu_devices", n)  # the value it has: fine
    with pytest.raises(RuntimeError, match="before the first computation"):
        config.update("jax_num_cpu_devices", n + 1)
    config.update("jax_platforms", funcgrad.default_backend())
    with pytest.raises(ValueError, match="'cpu' or 'cuda'"):
        config.update("jax_platforms", "tpu")


def test_async_dispatch_flag_refuses_a_change_after_start():
    funcgrad.jit(lambda x: x + 1)(1.0)  # the CPU backend has started
    current = funcgrad.config.jax_cpu_enable_async_dispatch
    funcgrad.config.update("jax_cpu_enable_async_dispatch", current)  # the value it has: fine
    with pytest.raises(RuntimeError, match="jax_cpu_enable_async_dispatch must be set before"):
        funcgrad.config.update("jax_cpu_enable_async_dispatch", not current)
    with pytest.raises(TypeError, match="must be a bool"):
        funcgrad.config.update("jax_cpu_enable_async_dispatch", "yes")


def test_accepted_and_refused_values():
    with funcgrad.default_matmul_precision("highest"):
        assert config.jax_default_matmul_precision == "highest"
        x = np.random.default_rng(0).normal(size=(3, 3)).astype(np.float32)
        np.testing.assert_allclose(np.asarray(funcgrad.jit(fnp.matmul)(x, x)), x @ x, rtol=1e-6)
    with pytest.raises(ValueError, match="jax_default_matmul_precision"):
        config.update("jax_default_matmul_precision", "medium-ish")
    with pytest.raises(ValueError, match="new enum value must be None or in"):  # (JAX's words)
        config.update("jax_transfer_guard", "sometimes")
    with funcgrad.transfer_guard_host_to_device("allow"):
        assert config.jax_transfer_guard_host_to_device == "allow"
    assert config.jax_transfer_guard_host_to_device is None  # (unset, JAX's default)
    with funcgrad.checking_leaks():
        assert config.jax_check_tracer_leaks is True
    with funcgrad.default_device(funcgrad.devices()[0]):
        pass
    with pytest.raises(ValueError, match="threefry2x32"):
        config.update("jax_default_prng_impl", "philox")  # not one of JAX's three generators
    # (the persistent-cache guide's GPU mock: accepted, no effect here, as in JAX on a CPU)
    config.update("jax_mock_gpu_topology", "4x8x1")
    assert config.jax_mock_gpu_topology == "4x8x1" and float(funcgrad.jit(fnp.sin)(0.0)) == 0.0
    config.update("jax_mock_gpu_topology", "")


def test_parse_flags_with_absl(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["prog", "--jax_numpy_rank_promotion=warn", "--other=1"])
    config.parse_flags_with_absl()
    try:
        assert config.jax_numpy_rank_promotion == "warn"
    finally:
        config.update("jax_numpy_rank_promotion", "allow")


@pytest.mark.parametrize("lib", ["funcgrad", "jax"])
def test_make_user_context_keys_the_jit_cache(lib):
    # The same program on funcgrad and on jax (the oracle): the traces each value causes and the
    # results must agree.
    if lib == "jax":
        jax = pytest.importorskip("jax")
        mod = jax
    else:
        mod = funcgrad
    ctx = mod.make_user_context(default_value=1)
    traces = []

    @mod.jit
    def f(x):
        traces.append(ctx.value)
        return x * ctx.value

    results = [float(f(2.0))]
    with ctx(3):
        results.append(float(f(2.0)))
        results.append(float(f(2.0)))  # same value: cached
        with ctx(1):
            results.append(float(f(2.0)))  # the default's program again
    results.append(float(f(2.0)))
    ctx.set_global(5)
    try:
        assert ctx.get_global() == 5 and ctx.value == 5
        results.append(float(f(2.0)))
        import threading

        seen = []
        t = threading.Thread(target=lambda: seen.append(ctx.value))
        with ctx(7):  # a local value is this thread's only
            t.start()
            t.join()
        assert seen == [5]
    finally:
        ctx.set_global(1)
    results.append(float(f(2.0)))
    assert results == [2.0, 6.0, 6.0, 2.0, 2.0, 10.0, 2.0]
    assert traces == [1, 3, 5]


def test_x64_enabled_reads_the_flag_as_jax():
    # jaxopt's test utilities read jax.config.x64_enabled
    jax = pytest.importorskip("jax")
    assert config.x64_enabled is True and jax.config.x64_enabled is jax.config.jax_enable_x64
    with funcgrad.enable_x64(False):
        assert config.x64_enabled is False


def test_private_read_as_jax():
    # jax.config._read(name), which JAX's x64_context_test and some libraries call
    jax = pytest.importorskip("jax")
    assert funcgrad.config._read("jax_enable_x64") is funcgrad.config.jax_enable_x64
    assert funcgrad.config._read("jax_numpy_rank_promotion") == jax.config._read("jax_numpy_rank_promotion")


def _transfer_outcomes(api, np_module, caplog):
    """Which of a few transfers each guard level allows, logs or refuses, under ``api`` (jax or
    funcgrad): explicit (device_put of host data) and implicit (a jitted call of host data,
    jnp.ones's fill, jnp.asarray of a list), nesting of the all-directions and one-direction
    contexts, and what transfers nothing (a jitted call of a device value, constants under jit,
    arange, iscomplexobj, the median of a device value)."""
    dev = api.device_put(np.ones(3, np.float32))
    ident, double = api.jit(lambda x: x), api.jit(lambda x: x * 2)  # (each compiled once)
    constant = api.jit(lambda: np_module.asarray(np.arange(4.0)) + 1)
    cases = {
        "device_put": lambda: api.device_put(np.ones(3, np.float32)),
        "jit_host": lambda: ident(np.ones(2, np.float32)),
        "jit_scalar": lambda: ident(1.0),
        "jit_device": lambda: double(dev),
        "jit_constant": constant,
        "ones": lambda: np_module.ones(2),
        "asarray_list": lambda: np_module.asarray([1.0, 2.0]),
        "arange": lambda: np_module.arange(5),
        "iscomplexobj": lambda: np_module.iscomplexobj(np.arange(3)),
        "median": lambda: np_module.median(dev),
        # operators with a host operand (compiled programs taking it as an argument in JAX), and
        # those that transfer nothing: two device values, a static integer exponent
        "x + 1": lambda: dev + 1,
        "2 * x": lambda: 2.0 * dev,
        "x < np": lambda: dev < np.ones(3, np.float32),
        "x / np.float32": lambda: dev / np.float32(2),
        "x * x": lambda: dev * dev,
        "x ** 2": lambda: dev**2,
        "x ** np.int32": lambda: dev ** np.int32(3),
        "2 ** x": lambda: 2.0**dev,
        # under eager vmap/jvp/grad JAX binds each operator alone (a transfer); under jit not
        "vmap x + 1": lambda: api.vmap(lambda a: a + 1)(dev),
        "vmap x * x": lambda: api.vmap(lambda a: a * a)(dev),
        "jvp x + 1": lambda: api.jvp(lambda a: a + 1, (dev,), (dev,)),
        "grad x * 2": lambda: api.grad(lambda a: (a * 2.0).sum())(dev),
        "jit grad x * 2": lambda: api.jit(api.grad(lambda a: (a * 2.0).sum()))(dev),
    }
    # (under 'disallow' only) indexing's starts and indices, scatter updates, grad's seed, fills,
    # eye's offset and a key's seed are arguments in JAX; whole-axis and strided slices are static
    disallowed = {
        "x[0]": lambda: dev[0],
        "x[1:]": lambda: dev[1:],
        "x[::2] x[:]": lambda: (dev[::2], dev[:], dev[None]),
        "x.at[:].set(x)": lambda: dev.at[:].set(dev),
        "grad sum": lambda: api.grad(lambda a: a.sum())(dev),
        "vmap grad": lambda: api.vmap(api.grad(lambda a: a))(dev),
        "full_like": lambda: np_module.full_like(dev, 2.0),
        "eye": lambda: np_module.eye(2),
        "key(0)": lambda: api.random.key(0),
        "maximum(x, 0)": lambda: np_module.maximum(dev, 0),
    }
    out = {}
    for level in ("allow", "log", "disallow", "log_explicit", "disallow_explicit"):
        for name, fn in {**cases, **(disallowed if level == "disallow" else {})}.items():
            caplog.clear()
            try:
                with api.transfer_guard(level):
                    fn()
                logged = any("host-to-device transfer" in r.getMessage() for r in caplog.records)
                out[level, name] = "logged" if logged else "ok"
            except Exception as e:  # noqa: BLE001 - the outcome compared
                out[level, name] = type(e).__name__ + (
                    ": disallowed" if "Disallowed host-to-device" in str(e) else ""
                )
    with api.transfer_guard_host_to_device("disallow"):  # (test_mixed_nesting of JAX's suite)
        with api.transfer_guard("allow"):
            out["nested allow"] = np_module.ones(1).shape
        try:
            np_module.ones(1)
            out["nested outer"] = "ok"
        except Exception as e:  # noqa: BLE001
            out["nested outer"] = type(e).__name__
    return out


def test_transfer_guard_as_jax(caplog):
    """NOTE: [transfer guard]: the levels, directions and contexts against jax's outcomes
    (jax logs through absl at WARNING; funcgrad through the "funcgrad" logger)."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    caplog.set_level(logging.WARNING)
    got = _transfer_outcomes(funcgrad, fnp, caplog)
    want = _transfer_outcomes(jax, jnp, caplog)
    # jax's log lines come from C++ (not Python's logging): compare "logged" as allowed there
    assert {k: ("ok" if v == "logged" else v) for k, v in got.items()} == {
        k: ("ok" if v == "logged" else v) for k, v in want.items()
    }
    assert got["log", "jit_host"] == got["log_explicit", "device_put"] == "logged"
    assert got["log", "device_put"] == "ok" and got["disallow", "jit_host"] == "JaxRuntimeError: disallowed"


def test_disable_most_optimizations_flag_as_jax():
    # (flax's imagenet example test sets it at import; XLA then compiles with its backend
    # optimizations off, as JAX's debug options; values unchanged)
    from funcgrad.xla_bridge import executables

    f = lambda x: funcgrad.numpy.sin(x) * 2  # noqa: E731
    before = funcgrad.jit(f)(1.0)
    funcgrad.config.update("jax_disable_most_optimizations", True)
    try:
        assert executables._most_optimizations_disabled[0]
        assert funcgrad.config.jax_disable_most_optimizations is True
        assert float(funcgrad.jit(f)(1.0)) == float(before)
    finally:
        funcgrad.config.update("jax_disable_most_optimizations", False)
    assert not executables._most_optimizations_disabled[0]


def test_allow_f16_reductions_as_jax():
    # api_test's test_disallowed_bf16_reductions: lax.reduce_sum of half floats over an axis longer
    # than 1 refused under the flag (eagerly, under jit and make_jaxpr, in grad's transposes), jnp.sum
    # (float32 inside) and singleton axes not; the jit cache does not keep a trace of the other value
    jax = pytest.importorskip("jax")

    def outcomes(lib, np_mod):
        x = np_mod.ones(3, "bfloat16")
        cases = {
            "eager": lambda: lib.lax.reduce_sum(x, [0]),
            "jit": lambda: lib.jit(lambda v: lib.lax.reduce_sum(v, [0]))(x),
            "float16": lambda: lib.lax.reduce_sum(x.astype("float16"), [0]),
            "int32": lambda: lib.lax.reduce_sum(x.astype("int32"), [0]),
            "singleton": lambda: lib.lax.reduce_sum(np_mod.ones((1, 3), "bfloat16"), [0]),
            "jnp.sum": lambda: np_mod.sum(x),
            "grad": lambda: lib.grad(lambda s: np_mod.broadcast_to(s, (3,)).astype("float32").sum())(x[0]),
        }
        out = {}
        cases["jit"]()  # (traced and cached under the default first)
        with lib.allow_f16_reductions(False):
            assert lib.config.jax_allow_f16_reductions is False
            for name, case in cases.items():
                try:
                    out[name] = np.asarray(case()).astype(np.float32).tolist()
                except ValueError as e:
                    out[name] = str(e)
        out["after"] = float(cases["jit"]())
        return out

    ours, theirs = outcomes(funcgrad, fnp), outcomes(jax, jax.numpy)
    assert ours == theirs
    assert "jax_allow_f16_reductions=False" in ours["jit"] and ours["jnp.sum"] == 3.0
    assert config.jax_allow_f16_reductions is True


def test_config_contexts_are_per_thread():
    # JAX's enable_x64 / numpy_rank_promotion / numpy_dtype_promotion / default_matmul_precision
    # contexts are thread-local (x64_context_test's thread test, whose values these are): two
    # threads inside contexts of different values at the same time each see their own, and one
    # jitted function called from both gives each thread its mode's program (NOTE: [x64 mode per
    # thread]); the process-wide values stay as they were.
    import threading

    f = funcgrad.jit(lambda x: x + fnp.asarray(np.float64(1.5)))
    barrier = threading.Barrier(2, timeout=60)
    seen = {}

    def run(x64, rank, precision):
        with funcgrad.enable_x64(x64), funcgrad.numpy_rank_promotion(rank):
            with funcgrad.default_matmul_precision(precision):
                barrier.wait()  # (both threads inside their contexts from here)
                out = [fnp.asarray(np.int64(0)).dtype, f(1).dtype, f(np.ones(2, np.float32)).dtype]
                out.append([(fnp.ones(2, np.int32) + 1.5).dtype for _ in range(3)])  # (promotion's cache)
                out.append((config.jax_enable_x64, config.read("jax_numpy_rank_promotion")))
                out.append(config.jax_default_matmul_precision)
                try:
                    out.append((fnp.ones(3) + fnp.ones((2, 3))).shape)
                except ValueError:
                    out.append("raised")
                barrier.wait()  # (neither leaves before the other has read)
                seen[x64] = out

    args = ((False, "raise", "highest"), (True, "allow", None))
    threads = [threading.Thread(target=run, args=a) for a in args]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    i32, i64, f32, f64 = (np.dtype(n) for n in ("int32", "int64", "float32", "float64"))
    # (funcgrad's own 64-bit mode promotes int32 with a Python float as NumPy: float64)
    assert seen[False] == [i32, f32, f32, [f32] * 3, (False, "raise"), "highest", "raised"]
    assert seen[True] == [i64, f64, f64, [f64] * 3, (True, "allow"), None, (2, 3)]
    assert (config.jax_enable_x64, config.jax_numpy_rank_promotion) == (True, "allow")
    assert f(1).dtype == f64


def test_contexts_left_by_many_threads_at_once_restore_the_fast_route():
    # Threads entering and leaving different thread-local contexts at once: each exit recomputes
    # which call route jit takes (config._modes_route, under a lock); once all have left, the
    # route is the plain one again and precision's templates are off. (This fails when an exit
    # leaves the route or templates behind; the race the lock closes is too narrow to hit here.)
    import threading

    from funcgrad import jitting
    from funcgrad.numpy import _core as numpy_core

    def churn(i):
        for _ in range(100):
            if i % 2:
                with funcgrad.numpy_rank_promotion("warn"):
                    pass
            else:
                with funcgrad.default_matmul_precision("highest"):
                    pass

    threads = [threading.Thread(target=churn, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not jitting._jit_flags["modes"]
    assert not numpy_core.matmul_precision_set[0]


def test_eager_grad_through_an_x64_context_in_32_bit_mode():
    # x64_context_test's custom_jvp test: grad of a function that enters 64-bit mode inside,
    # called in 32-bit mode: the gradient has the input's dtype, jvp's outputs the inner mode's.
    @funcgrad.custom_jvp
    def f(x):
        return x**2.0

    @f.defjvp
    def f_jvp(xs, ts):
        assert config.x64_enabled  # (the rule runs in the mode of its call)
        return f(xs[0]), ts[0] * fnp.sin(xs[0])

    def g(x):
        with funcgrad.enable_x64():
            return f(fnp.array(x, fnp.float64)) * 2.0

    with funcgrad.enable_x64(False):
        out = [funcgrad.grad(g)(5.0), funcgrad.grad(funcgrad.grad(g))(5.0), *funcgrad.jvp(g, (5.0,), (1.0,))]
    assert [o.dtype for o in out] == [np.float32, np.float32, np.float64, np.float64]
    np.testing.assert_allclose(
        [float(o) for o in out], [2 * np.sin(5.0), 2 * np.cos(5.0), 50.0, 2 * np.sin(5.0)], rtol=1e-6
    )


def test_64_bit_values_of_an_x64_context_keep_their_dtype_in_32_bit_mode():
    # JAX's trivial promotion (lattice_result_type): one dtype, alone or not all weak, is kept
    # uncanonicalised, so a float64 made inside enable_x64 stays float64 through jnp's operators
    # (with a Python float or a float32 it promotes to float32); x64_context_test's custom_vjp
    # test: grad's third order through the block (its bwd multiplies two float64 values)
    @funcgrad.custom_vjp
    def f(x):
        return x**2.0

    f.defvjp(lambda x: (f(x), fnp.sin(x)), lambda res, t: (res * t,))

    def g(x):
        with funcgrad.enable_x64():
            return f(fnp.array(x, fnp.float64))

    with funcgrad.enable_x64(False):
        with funcgrad.enable_x64():
            a = fnp.ones(2, fnp.float64)
        dtypes = [str(v.dtype) for v in (a * a, fnp.sin(a), a - a, a + 1.0, a * fnp.ones(2, fnp.float32))]
        third = funcgrad.grad(funcgrad.grad(funcgrad.grad(g)))(5.0)
    assert dtypes == ["float64"] * 3 + ["float32"] * 2
    assert third.dtype == np.float32 and abs(float(third) + np.sin(5.0)) < 1e-6  # (-sin, as jax)


@pytest.mark.parametrize("lib", ["funcgrad", "jax"])
def test_default_matmul_precision_in_jaxprs_and_trace_keys(lib):
    # api_test test_dot_precision_context_manager / _forces_retrace / test_rank_promotion_forces_retrace:
    # precision=None stands for the context's precision in the staged product, and a jitted function
    # or a cond branch is traced again under another precision or rank promotion (its own thread's
    # value winning over a config.update made inside the context)
    mod = pytest.importorskip("jax") if lib == "jax" else funcgrad
    x = mod.numpy.zeros((2, 2))
    params = []
    for p in (None, "bfloat16", "tensorfloat32", "float32"):
        with mod.default_matmul_precision(p):
            params.append(str(mod.make_jaxpr(mod.numpy.dot)(x, x).jaxpr.eqns[0].params["precision"]))
    assert params == ["None", *[f"(Precision.{n}, Precision.{n})" for n in ("DEFAULT", "HIGH", "HIGHEST")]]
    traces = []

    def g(x):
        traces.append(1)
        return mod.numpy.dot(x, x)

    for f in (mod.jit(g), lambda x: mod.lax.cond(True, g, g, x)):
        del traces[:]
        f(x), f(x)
        with mod.default_matmul_precision("tensorfloat32"):
            f(x)
        with mod.numpy_rank_promotion("warn"):
            f(x)
            assert (
                mod.numpy_rank_promotion.value == "warn" and mod.numpy_rank_promotion.get_global() == "allow"
            )
        f(x)
        assert len(traces) == 3


def test_disable_jit_is_per_thread():
    # JAX's disable_jit is a thread-local context: inside it a jitted function runs its Python
    # on every call in that thread only; another thread meanwhile calls the compiled program
    import threading

    calls = []
    f = funcgrad.jit(lambda x: calls.append(threading.current_thread().name) or x + 1)
    f(1.0)
    barrier = threading.Barrier(2, timeout=60)
    results = {}

    def run(disable):
        with funcgrad.disable_jit(disable):
            barrier.wait()
            results[disable] = [float(f(2.0)), float(f(3.0)), funcgrad.disable_jit.value]
            barrier.wait()

    threads = [threading.Thread(target=run, args=(d,), name=str(d)) for d in (True, False)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {True: [3.0, 4.0, True], False: [3.0, 4.0, False]}
    assert calls.count("True") == 2 and calls.count("False") <= 1  # (at most a trace, never a Python call)
    assert config.jax_disable_jit is False and funcgrad.disable_jit.get_global() is False


def test_flag_context_managers_as_jax():
    # nn_test testSoftmaxGradFlag: jax.softmax_custom_jvp, and the other flags' public contexts
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from jax._src.ad_checkpoint import saved_residuals  # (where nn_test reads it)

    def outcomes(lib, np_mod, saved):
        x = np_mod.array([5.5, 1.3, -4.2, 0.9])
        out = []
        for on in (False, True):
            with lib.softmax_custom_jvp(on):
                res = saved(lib.nn.softmax, x)
                out.append((len(res), sum(a.size for a, _ in res), lib.config.jax_softmax_custom_jvp))
        for name in ("remove_size_one_mesh_axis_from_type", "auto_pcast"):
            with getattr(lib, name)(not getattr(lib.config, f"jax_{name}")):
                out.append(getattr(lib.config, f"jax_{name}"))
            out.append(getattr(lib.config, f"jax_{name}"))
        return out

    mine = outcomes(funcgrad, fnp, funcgrad.ad_checkpoint.saved_residuals)
    assert mine == outcomes(jax, jnp, saved_residuals)
